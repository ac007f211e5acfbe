// .safetensors: an 8-byte little-endian header length, a JSON header
// (tensor -> dtype, shape, data_offsets; optional "__metadata__" of strings)
// and the tensors' bytes, which the offsets must cover exactly.
#include <algorithm>
#include <cstring>

#include "ember/io/reader.h"

namespace ember::io {

using detail::bad;
using detail::Ctx;
using detail::Json;

namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // the specification's bound

struct Code {
  const char* name;
  Dtype dt;
};
const Code kCodes[] = {
    {"BOOL", Dtype::bool_},   {"U8", Dtype::uint8},      {"I8", Dtype::int8},     {"U16", Dtype::uint16},
    {"I16", Dtype::int16},    {"U32", Dtype::uint32},    {"I32", Dtype::int32},   {"U64", Dtype::uint64},
    {"I64", Dtype::int64},    {"F16", Dtype::float16},   {"BF16", Dtype::bfloat16}, {"F32", Dtype::float32},
    {"F64", Dtype::float64},  {"C64", Dtype::complex64},
};

const char* code_of(Dtype dt) {
  for (auto& c : kCodes)
    if (c.dt == dt) return c.name;
  return "";
}

uint64_t to_u64(const Json& v, const Ctx& c, const std::string& t, const char* what) {
  if (v.type != Json::Number) bad(c, t, what, " is not a number");
  const std::string& s = v.num;
  if (s.empty() || s[0] == '-') bad(c, t, what, " is negative");
  uint64_t r = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') bad(c, t, what, " is not an integer (", s, ")");
    if (!detail::mul_ok(r, 10, &r) || !detail::add_ok(r, ch - '0', &r)) bad(c, t, what, " does not fit in 64 bits");
  }
  return r;
}

struct Entry {
  std::string name;
  Dtype dt;
  Shape shape;
  uint64_t begin, end;
};

}  // namespace

Safetensors load_safetensors(const Source& src) {
  Ctx c{"load_safetensors", src.name};
  detail::Reader r(src.data(), src.size, c);
  uint64_t n = r.u64("the header length");
  if (n > kMaxHeader) bad(c, "", "header length ", n, " exceeds the 100 MB limit");
  const uint8_t* hp = r.take(n, "the header");
  std::string_view text(reinterpret_cast<const char*>(hp), n);
  if (!detail::valid_utf8(text)) bad(c, "", "header is not valid UTF-8");
  if (text.empty() || text[0] != '{') bad(c, "", "header does not start with '{'");
  Json top = detail::parse_json(text, c);
  if (top.type != Json::Object) bad(c, "", "header is not a JSON object");
  Safetensors out;
  std::vector<Entry> es;
  for (auto& [key, v] : top.members) {
    if (key == "__metadata__") {
      if (v.type == Json::Null) continue;
      if (v.type != Json::Object) bad(c, "", "__metadata__ is not an object of strings");
      for (auto& [mk, mv] : v.members) {
        if (mv.type != Json::String) bad(c, "", "__metadata__ value of '", mk, "' is not a string");
        out.metadata.emplace_back(mk, mv.str);
      }
      continue;
    }
    if (v.type != Json::Object) bad(c, key, "entry is not an object");
    const Json *dt = nullptr, *sh = nullptr, *off = nullptr;
    for (auto& [f, fv] : v.members) {
      if (f == "dtype") dt = &fv;
      else if (f == "shape") sh = &fv;
      else if (f == "data_offsets") off = &fv;
      else bad(c, key, "unknown field '", f, "' (tensors have dtype, shape and data_offsets)");
    }
    if (!dt || !sh || !off) bad(c, key, "lacks '", !dt ? "dtype" : !sh ? "shape" : "data_offsets", "'");
    Entry e;
    e.name = key;
    if (dt->type != Json::String) bad(c, key, "dtype is not a string");
    bool known = false;
    for (auto& k : kCodes)
      if (dt->str == k.name) e.dt = k.dt, known = true;
    if (!known) bad(c, key, "dtype '", dt->str, "' is not supported");
    if (sh->type != Json::Array) bad(c, key, "shape is not a list");
    if (sh->items.size() > 64) bad(c, key, "shape has more than 64 dimensions");
    for (auto& d : sh->items) {
      uint64_t x = to_u64(d, c, key, "a dimension");
      if (x > uint64_t(INT64_MAX)) bad(c, key, "dimension ", x, " does not fit in int64");
      e.shape.push_back(static_cast<int64_t>(x));
    }
    if (off->type != Json::Array || off->items.size() != 2) bad(c, key, "data_offsets is not a list [begin, end]");
    e.begin = to_u64(off->items[0], c, key, "data_offsets[0]");
    e.end = to_u64(off->items[1], c, key, "data_offsets[1]");
    if (e.end < e.begin) bad(c, key, "data_offsets [", e.begin, ", ", e.end, "] end before they begin");
    uint64_t bytes = detail::checked_bytes(c, key, e.shape, size_of(e.dt));
    if (e.end - e.begin != bytes)
      bad(c, key, "data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin, " bytes but dtype ", dt->str,
          " and shape ", shape_str(e.shape), " need ", bytes);
    es.push_back(std::move(e));
  }
  // the offsets must tile the data buffer exactly: no gap, overlap or trailing bytes
  const uint64_t data_size = r.left();
  std::vector<const Entry*> order;
  for (auto& e : es) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t at = 0;
  const Entry* prev = nullptr;
  for (auto* e : order) {
    if (e->begin < at)
      bad(c, e->name, "data_offsets [", e->begin, ", ", e->end, "] overlap tensor '", prev->name, "'");
    if (e->begin > at)
      bad(c, e->name, "gap of ", e->begin - at, " bytes before data_offsets [", e->begin, ", ", e->end,
          "] (the offsets must cover the data exactly)");
    if (e->end > data_size)
      bad(c, e->name, "truncated: data_offsets [", e->begin, ", ", e->end, "] reach past the ", data_size,
          " bytes of data in the file");
    at = e->end;
    prev = e;
  }
  if (at != data_size)
    bad(c, "", "trailing data: ", data_size - at, " bytes after the last tensor (the offsets must cover the data exactly)");
  const uint64_t base = 8 + n;
  for (auto& e : es)
    out.arrays.emplace_back(e.name, detail::make_array(src, base + e.begin, e.end - e.begin, e.shape, e.dt,
                                                       row_strides(e.shape), false, c.op));
  return out;
}

void save_safetensors(const NamedArrays& arrays, const StringMap& metadata, const Writer& w) {
  std::vector<std::pair<std::string, array>> items;
  for (auto& [k, a] : arrays) {
    if (k == "__metadata__") throw std::invalid_argument("[save_safetensors] '__metadata__' cannot name a tensor");
    items.emplace_back(k, detail::dense(a));
  }
  // widest items first, then by name: every tensor starts aligned to its dtype
  std::stable_sort(items.begin(), items.end(), [](auto& a, auto& b) {
    int ia = a.second.itemsize(), ib = b.second.itemsize();
    return ia != ib ? ia > ib : a.first < b.first;
  });
  std::string h = "{";
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    for (size_t k = 0; k < metadata.size(); ++k)
      h += (k ? "," : "") + detail::json_quote(metadata[k].first) + ":" + detail::json_quote(metadata[k].second);
    h += "}";
  }
  uint64_t off = 0;
  for (auto& [k, a] : items) {
    if (h.size() > 1) h += ",";
    h += detail::json_quote(k) + ":{\"dtype\":\"" + code_of(a.dtype()) + "\",\"shape\":[";
    for (int d = 0; d < a.ndim(); ++d) h += (d ? "," : "") + std::to_string(a.shape(d));
    uint64_t nb = static_cast<uint64_t>(a.nbytes());
    h += "],\"data_offsets\":[" + std::to_string(off) + "," + std::to_string(off + nb) + "]}";
    off += nb;
  }
  h += "}";
  h.append((8 - h.size() % 8) % 8, ' ');
  uint64_t n = h.size();
  w(&n, 8);
  w(h.data(), h.size());
  for (auto& [k, a] : items)
    if (a.nbytes()) w(a.raw_data(), static_cast<size_t>(a.nbytes()));
}

}  // namespace ember::io
