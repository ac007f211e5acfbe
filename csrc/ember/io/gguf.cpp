// .gguf (versions 2 and 3): header, typed key-value metadata, tensor infos,
// aligned tensor data. Plain float and integer tensors are views of the
// file; Q4_0, Q4_1 and Q8_0 become MLX's affine layout (packed uint32
// weights, float16 scales and biases per group of 32).
#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "ember/io/reader.h"

namespace ember::io {

using detail::bad;
using detail::Ctx;

namespace {

constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
constexpr uint64_t kDefaultAlign = 32;

enum VT : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STR = 8, ARR = 9, U64 = 10, I64 = 11, F64 = 12
};
bool value_dtype(uint32_t t, Dtype& dt) {
  switch (t) {
    case U8: dt = Dtype::uint8; return true;
    case I8: dt = Dtype::int8; return true;
    case U16: dt = Dtype::uint16; return true;
    case I16: dt = Dtype::int16; return true;
    case U32: dt = Dtype::uint32; return true;
    case I32: dt = Dtype::int32; return true;
    case F32: dt = Dtype::float32; return true;
    case BOOL: dt = Dtype::bool_; return true;
    case U64: dt = Dtype::uint64; return true;
    case I64: dt = Dtype::int64; return true;
    case F64: dt = Dtype::float64; return true;
    default: return false;
  }
}

// tensor types: (ggml type, dtype of plain types, elements per block, bytes per block)
struct TType {
  uint32_t id;
  const char* name;
  Dtype dt;
  int block, bytes;
  bool quant;
};
const TType kTypes[] = {
    {0, "F32", Dtype::float32, 1, 4, false},   {1, "F16", Dtype::float16, 1, 2, false},
    {2, "Q4_0", Dtype::uint32, 32, 18, true},  {3, "Q4_1", Dtype::uint32, 32, 20, true},
    {8, "Q8_0", Dtype::uint32, 32, 34, true},  {24, "I8", Dtype::int8, 1, 1, false},
    {25, "I16", Dtype::int16, 1, 2, false},    {26, "I32", Dtype::int32, 1, 4, false},
    {27, "I64", Dtype::int64, 1, 8, false},    {28, "F64", Dtype::float64, 1, 8, false},
    {30, "BF16", Dtype::bfloat16, 1, 2, false},
};
const TType* ttype(uint32_t id) {
  for (auto& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

struct GReader {
  detail::Reader r;
  const Ctx& c;
  std::string str(const char* what) {
    uint64_t n = r.u64(what);
    if (n > r.left()) bad(c, "", "truncated: ", what, " of ", n, " bytes at offset ", r.pos(), " runs past the end of the file");
    return std::string(reinterpret_cast<const char*>(r.take(n, what)), n);
  }
};

GgufValue read_value(GReader& g, uint32_t type, const std::string& key) {
  GgufValue v;
  Dtype dt;
  if (type == STR) {
    v.kind = GgufValue::String;
    v.str = g.str("a string value");
    return v;
  }
  if (value_dtype(type, dt)) {
    int item = size_of(dt);
    const uint8_t* p = g.r.take(item, "a metadata value");
    if (dt == Dtype::bool_ && *p > 1) bad(g.c, "", "metadata '", key, "': boolean value ", int(*p), " is not 0 or 1");
    v.arr = detail::copy_array(p, item, {}, dt);
    return v;
  }
  if (type != ARR) bad(g.c, "", "metadata '", key, "': unknown value type ", type);
  uint32_t et = g.r.u32("an array's element type");
  uint64_t count = g.r.u64("an array's length");
  if (et == STR) {
    if (count > g.r.left() / 8) bad(g.c, "", "metadata '", key, "': array of ", count, " strings cannot fit in the file");
    v.kind = GgufValue::Strings;
    for (uint64_t k = 0; k < count; ++k) v.strs.push_back(g.str("a string in an array"));
    return v;
  }
  if (et == ARR) bad(g.c, "", "metadata '", key, "': nested arrays are not supported");
  if (!value_dtype(et, dt)) bad(g.c, "", "metadata '", key, "': unknown array element type ", et);
  uint64_t item = size_of(dt);
  if (count > g.r.left() / item) bad(g.c, "", "metadata '", key, "': array of ", count, " elements cannot fit in the file");
  const uint8_t* p = g.r.take(count * item, "an array");
  if (dt == Dtype::bool_)
    for (uint64_t k = 0; k < count; ++k)
      if (p[k] > 1) bad(g.c, "", "metadata '", key, "': boolean value ", int(p[k]), " is not 0 or 1");
  v.arr = detail::copy_array(p, count * item, {static_cast<int64_t>(count)}, dt);
  return v;
}

struct Info {
  std::string name;
  Shape shape;  // numpy order (GGUF's dims reversed)
  const TType* type;
  uint64_t offset, nbytes;
};

inline float half_to_float(uint16_t h) {
  float16_t f;
  std::memcpy(&f, &h, 2);
  return static_cast<float>(f);
}
inline uint16_t float_to_half(float x) {
  float16_t f = static_cast<float16_t>(x);
  uint16_t h;
  std::memcpy(&h, &f, 2);
  return h;
}

// Q4_0/Q4_1/Q8_0 blocks -> packed weights, scales, biases (MLX's affine form)
void dequant_layout(const Info& t, const uint8_t* p, NamedArrays& out) {
  const int64_t K = t.shape.back();
  const int64_t groups = K / 32;
  uint64_t rows = 1;
  for (size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= static_cast<uint64_t>(t.shape[d]);
  const bool q8 = t.type->id == 8;
  const int64_t words = q8 ? K / 4 : K / 8;
  Shape ws = t.shape, ss = t.shape;
  ws.back() = words;
  ss.back() = groups;
  array w = array::empty_evaluated(ws, Dtype::uint32);
  array s = array::empty_evaluated(ss, Dtype::float16);
  array b = array::empty_evaluated(ss, Dtype::float16);
  uint8_t* wp = static_cast<uint8_t*>(w.raw_data());
  uint16_t* sp = static_cast<uint16_t*>(s.raw_data());
  uint16_t* bp = static_cast<uint16_t*>(b.raw_data());
  const uint64_t nblocks = rows * static_cast<uint64_t>(groups);
  const int bb = t.type->bytes;
  for (uint64_t k = 0; k < nblocks; ++k) {
    const uint8_t* blk = p + k * bb;
    uint16_t d = detail::load_le<uint16_t>(blk);
    sp[k] = d;
    if (t.type->id == 2) {  // Q4_0: x = (q - 8) d
      bp[k] = float_to_half(-8.0f * half_to_float(d));
      const uint8_t* qs = blk + 2;
      uint8_t* o = wp + k * 16;
      for (int j = 0; j < 16; ++j) {
        // element e sits in the low nibble of qs[e] (e < 16) or the high one of qs[e - 16]
        int e0 = 2 * j, e1 = 2 * j + 1;
        uint8_t q0 = e0 < 16 ? qs[e0] & 15 : qs[e0 - 16] >> 4;
        uint8_t q1 = e1 < 16 ? qs[e1] & 15 : qs[e1 - 16] >> 4;
        o[j] = static_cast<uint8_t>(q0 | (q1 << 4));
      }
    } else if (t.type->id == 3) {  // Q4_1: x = q d + m
      bp[k] = detail::load_le<uint16_t>(blk + 2);
      const uint8_t* qs = blk + 4;
      uint8_t* o = wp + k * 16;
      for (int j = 0; j < 16; ++j) {
        int e0 = 2 * j, e1 = 2 * j + 1;
        uint8_t q0 = e0 < 16 ? qs[e0] & 15 : qs[e0 - 16] >> 4;
        uint8_t q1 = e1 < 16 ? qs[e1] & 15 : qs[e1 - 16] >> 4;
        o[j] = static_cast<uint8_t>(q0 | (q1 << 4));
      }
    } else {  // Q8_0: x = q d with q signed; as unsigned u = q + 128, x = u d - 128 d
      bp[k] = float_to_half(-128.0f * half_to_float(d));
      const uint8_t* qs = blk + 2;
      uint8_t* o = wp + k * 32;
      for (int j = 0; j < 32; ++j) o[j] = static_cast<uint8_t>(qs[j] ^ 0x80);
    }
  }
  out.emplace_back(t.name, w);
  out.emplace_back(t.name + ".scales", s);
  out.emplace_back(t.name + ".biases", b);
}

void put_str(std::string& h, const std::string& s) {
  uint64_t n = s.size();
  h.append(reinterpret_cast<const char*>(&n), 8);
  h += s;
}
template <class T>
void put(std::string& h, T v) {
  h.append(reinterpret_cast<const char*>(&v), sizeof v);
}

}  // namespace

Gguf load_gguf(const Source& src) {
  Ctx c{"load_gguf", src.name};
  GReader g{detail::Reader(src.data(), src.size, c), c};
  auto& r = g.r;
  const uint8_t* m = r.take(4, "the GGUF magic");
  if (std::memcmp(m, "GGUF", 4) != 0) bad(c, "", "not a GGUF file (no 'GGUF' magic)");
  uint32_t version = r.u32("the version");
  if (version != 2 && version != 3) bad(c, "", "GGUF version ", version, " is not supported (2 and 3 are)");
  uint64_t nt = r.u64("the tensor count"), nkv = r.u64("the metadata count");
  // each tensor info takes at least 24 bytes, each key-value pair 12 (+1)
  if (nt > r.left() / 24) bad(c, "", "tensor count ", nt, " cannot fit in the file");
  if (nkv > r.left() / 13) bad(c, "", "metadata count ", nkv, " cannot fit in the file");
  Gguf out;
  uint64_t align = kDefaultAlign;
  std::unordered_set<std::string> keys;  // metadata keys, then "\x01" + tensor names
  for (uint64_t k = 0; k < nkv; ++k) {
    std::string key = g.str("a metadata key");
    if (!detail::valid_utf8(key)) bad(c, "", "metadata key ", k, " is not valid UTF-8");
    if (!keys.insert(key).second) bad(c, "", "metadata key '", key, "' appears twice");
    uint32_t type = r.u32("a metadata value type");
    GgufValue v = read_value(g, type, key);
    if (key == "general.alignment") {
      if (type != U32) bad(c, "", "general.alignment is not a uint32");
      uint32_t a = *v.arr.data<uint32_t>();
      if (a == 0 || (a & (a - 1)) != 0) bad(c, "", "general.alignment ", a, " is not a power of two");
      align = a;
    }
    out.metadata.emplace_back(std::move(key), std::move(v));
  }
  std::vector<Info> infos;
  for (uint64_t k = 0; k < nt; ++k) {
    Info t;
    t.name = g.str("a tensor name");
    if (!keys.insert("\x01" + t.name).second) bad(c, t.name, "appears twice");
    uint32_t nd = r.u32("n_dims");
    if (nd > kMaxDims) bad(c, t.name, "n_dims ", nd, " exceeds GGML's limit of ", kMaxDims);
    t.shape.resize(nd);
    for (uint32_t d = 0; d < nd; ++d) {
      uint64_t x = r.u64("a dimension");
      if (x > uint64_t(INT64_MAX)) bad(c, t.name, "dimension ", x, " does not fit in int64");
      t.shape[nd - 1 - d] = static_cast<int64_t>(x);
    }
    uint32_t type = r.u32("a tensor type");
    t.type = ttype(type);
    if (!t.type) bad(c, t.name, "tensor type ", type, " is not supported (F32, F16, BF16, F64, I8-I64, Q4_0, Q4_1, Q8_0 are)");
    t.offset = r.u64("a tensor offset");
    if (t.offset % align != 0) bad(c, t.name, "offset ", t.offset, " is not a multiple of the alignment ", align);
    uint64_t numel;
    detail::checked_bytes(c, t.name, t.shape, 1, &numel);
    if (t.type->block > 1) {
      if (t.shape.empty() || t.shape.back() % t.type->block != 0)
        bad(c, t.name, t.type->name, " needs the first GGUF dimension to be a multiple of ", t.type->block,
            ", shape is ", shape_str(t.shape));
    }
    uint64_t blocks = numel / t.type->block;
    if (!detail::mul_ok(blocks, t.type->bytes, &t.nbytes)) bad(c, t.name, "byte size overflows");
    infos.push_back(std::move(t));
  }
  uint64_t data = (r.pos() + align - 1) / align * align;
  if (nt > 0 && data > src.size) bad(c, "", "truncated: the tensor data would start at ", data, " past the end of the file");
  std::vector<const Info*> order;
  for (auto& t : infos) {
    uint64_t b, e;
    if (!detail::add_ok(data, t.offset, &b) || !detail::add_ok(b, t.nbytes, &e) || e > src.size)
      bad(c, t.name, "truncated: data at offset ", t.offset, " (", t.nbytes, " bytes) reaches past the end of the file");
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < order.size(); ++k)
    if (order[k - 1]->offset + order[k - 1]->nbytes > order[k]->offset)
      bad(c, order[k]->name, "data overlaps tensor '", order[k - 1]->name, "'");
  for (auto& t : infos) {
    if (t.type->quant) {
      dequant_layout(t, src.data() + data + t.offset, out.arrays);
    } else {
      out.arrays.emplace_back(t.name, detail::make_array(src, data + t.offset, t.nbytes, t.shape, t.type->dt,
                                                         row_strides(t.shape), false, c.op));
    }
  }
  return out;
}

void save_gguf(const NamedArrays& arrays, const GgufMetadata& metadata, const Writer& w) {
  auto fail = [](const std::string& m) { throw std::invalid_argument("[save_gguf] " + m); };
  std::string h("GGUF", 4);
  put<uint32_t>(h, 3);
  put<uint64_t>(h, arrays.size());
  put<uint64_t>(h, metadata.size());
  auto value_type = [&](Dtype dt, const std::string& key) -> uint32_t {
    switch (dt) {
      case Dtype::uint8: return U8;
      case Dtype::int8: return I8;
      case Dtype::uint16: return U16;
      case Dtype::int16: return I16;
      case Dtype::uint32: return U32;
      case Dtype::int32: return I32;
      case Dtype::float32: return F32;
      case Dtype::bool_: return BOOL;
      case Dtype::uint64: return U64;
      case Dtype::int64: return I64;
      case Dtype::float64: return F64;
      default: fail("metadata '" + key + "': dtype " + dtype_name(dt) + " has no GGUF value type");
    }
    return 0;
  };
  for (auto& [key, v] : metadata) {
    put_str(h, key);
    if (v.kind == GgufValue::String) {
      put<uint32_t>(h, STR);
      put_str(h, v.str);
    } else if (v.kind == GgufValue::Strings) {
      put<uint32_t>(h, ARR);
      put<uint32_t>(h, STR);
      put<uint64_t>(h, v.strs.size());
      for (auto& s : v.strs) put_str(h, s);
    } else {
      array a = detail::dense(v.arr);
      if (a.ndim() > 1) fail("metadata '" + key + "': arrays must be 0-d or 1-d, got shape " + shape_str(a.shape()));
      uint32_t t = value_type(a.dtype(), key);
      if (a.ndim() == 1) {
        put<uint32_t>(h, ARR);
        put<uint32_t>(h, t);
        put<uint64_t>(h, a.size());
      } else {
        put<uint32_t>(h, t);
      }
      h.append(static_cast<const char*>(a.raw_data()), a.nbytes());
    }
  }
  std::vector<array> ds;
  uint64_t off = 0;
  for (auto& [name, a0] : arrays) {
    array a = detail::dense(a0);
    uint32_t type = 0;
    bool found = false;
    for (auto& t : kTypes)
      if (!t.quant && t.dt == a.dtype()) type = t.id, found = true;
    if (!found) fail("tensor '" + name + "': dtype " + dtype_name(a.dtype()) + " has no GGUF tensor type");
    if (a.ndim() > static_cast<int>(kMaxDims))
      fail("tensor '" + name + "': " + std::to_string(a.ndim()) + " dimensions exceed GGML's limit of 4");
    put_str(h, name);
    put<uint32_t>(h, static_cast<uint32_t>(a.ndim()));
    for (int d = a.ndim() - 1; d >= 0; --d) put<uint64_t>(h, static_cast<uint64_t>(a.shape(d)));
    put<uint32_t>(h, type);
    put<uint64_t>(h, off);
    off += (static_cast<uint64_t>(a.nbytes()) + kDefaultAlign - 1) / kDefaultAlign * kDefaultAlign;
    ds.push_back(a);
  }
  h.append((kDefaultAlign - h.size() % kDefaultAlign) % kDefaultAlign, '\0');
  w(h.data(), h.size());
  static const char zeros[kDefaultAlign] = {0};
  for (auto& a : ds) {
    uint64_t n = static_cast<uint64_t>(a.nbytes());
    if (n) w(a.raw_data(), n);
    w(zeros, (kDefaultAlign - n % kDefaultAlign) % kDefaultAlign);
  }
}

}  // namespace ember::io
