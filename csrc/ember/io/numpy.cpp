// .npy and .npz: NumPy's array format (versions 1.0, 2.0, 3.0) and zip
// archives of it (stored or deflated members, zip64).
#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "ember/io/reader.h"

namespace ember::io {

using detail::bad;
using detail::Ctx;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMaxNpyHeader = 10000;  // NumPy's default max_header_size

struct NpyHeader {
  Dtype dtype = Dtype::float32;
  bool swap = false;
  bool fortran = false;
  Shape shape;
  size_t data_offset = 0;
};

// descr -> dtype (and byte order)
void parse_descr(const std::string& d, NpyHeader& h, const Ctx& c) {
  auto unsupported = [&](const char* why) { bad(c, "", "dtype descr '", d, "' ", why); };
  if (d.size() < 2) unsupported("is not a NumPy type string");
  char order = d[0];
  std::string t = d.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') unsupported("has no byte order ('<', '>' or '|')");
  struct Entry {
    const char* code;
    Dtype dt;
  };
  static const Entry table[] = {
      {"b1", Dtype::bool_},   {"u1", Dtype::uint8},    {"u2", Dtype::uint16},  {"u4", Dtype::uint32},
      {"u8", Dtype::uint64},  {"i1", Dtype::int8},     {"i2", Dtype::int16},   {"i4", Dtype::int32},
      {"i8", Dtype::int64},   {"f2", Dtype::float16},  {"f4", Dtype::float32}, {"f8", Dtype::float64},
      {"c8", Dtype::complex64}, {"V2", Dtype::bfloat16},  // bfloat16 as MLX writes it
  };
  for (auto& e : table) {
    if (t == e.code) {
      h.dtype = e.dt;
      int item = size_of(e.dt);
      if (order == '|' && item > 1 && e.dt != Dtype::bfloat16) unsupported("has no byte order but a multi-byte type");
      h.swap = order == '>' && item > 1;
      return;
    }
  }
  if (t == "c16") unsupported("(complex128) is not supported: Ember has no complex128");
  if (t == "O" || t.rfind("O", 0) == 0) unsupported("is an object array: loading it would need pickle, which Ember never runs");
  unsupported("is not a dtype Ember supports");
}

// The header dict, a Python literal: {'descr': str, 'fortran_order': bool,
// 'shape': tuple of ints}, keys in any order, each exactly once.
struct LiteralParser {
  std::string_view s;
  size_t i = 0;
  const Ctx& c;

  [[noreturn]] void err(const char* what) {
    bad(c, "", "header is not a valid NumPy header dict: ", what, " at character ", i);
  }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool eat(char ch) {
    ws();
    if (i < s.size() && s[i] == ch) {
      ++i;
      return true;
    }
    return false;
  }
  std::string str() {
    ws();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) err("expected a string");
    char q = s[i++];
    size_t b = i;
    while (i < s.size() && s[i] != q) {
      if (s[i] == '\\' || s[i] == '\n') err("escapes or newlines in a string");
      ++i;
    }
    if (i >= s.size()) err("unterminated string");
    return std::string(s.substr(b, i++ - b));
  }
  int64_t integer() {
    ws();
    if (i < s.size() && s[i] == '-') err("negative dimension in 'shape'");
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) err("expected an integer");
    uint64_t v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (!detail::mul_ok(v, 10, &v) || !detail::add_ok(v, s[i] - '0', &v) || v > uint64_t(INT64_MAX))
        err("dimension does not fit in 64 bits");
      ++i;
    }
    if (i < s.size() && s[i] == 'L') ++i;  // Python 2 longs
    return static_cast<int64_t>(v);
  }
  Shape tuple() {
    if (!eat('(')) err("'shape' is not a tuple");
    Shape out;
    if (eat(')')) return out;
    while (true) {
      out.push_back(integer());
      if (out.size() > 64) err("more than 64 dimensions");
      if (eat(')')) {
        if (out.size() == 1) err("(n) is an int, not a tuple");
        return out;
      }
      if (!eat(',')) err("expected ',' or ')'");
      if (eat(')')) return out;
    }
  }
  bool boolean() {
    ws();
    if (s.substr(i, 4) == "True") return i += 4, true;
    if (s.substr(i, 5) == "False") return i += 5, false;
    err("'fortran_order' is not True or False");
  }
  NpyHeader parse() {
    NpyHeader h;
    bool seen[3] = {false, false, false};
    if (!eat('{')) err("expected '{'");
    if (!eat('}')) {
      while (true) {
        std::string key = str();
        if (!eat(':')) err("expected ':'");
        int k = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
        if (k < 0) bad(c, "", "header has the key '", key, "'; NumPy headers hold only 'descr', 'fortran_order', 'shape'");
        if (seen[k]) bad(c, "", "header has the key '", key, "' twice");
        seen[k] = true;
        if (k == 0) {
          ws();
          if (i < s.size() && (s[i] == '[' || s[i] == '{')) bad(c, "", "structured dtypes are not supported");
          parse_descr(str(), h, c);
        } else if (k == 1) {
          h.fortran = boolean();
        } else {
          h.shape = tuple();
        }
        if (eat('}')) break;
        if (!eat(',')) err("expected ',' or '}'");
        if (eat('}')) break;
      }
    }
    ws();
    if (i != s.size()) err("characters after the dict");
    for (int k = 0; k < 3; ++k)
      if (!seen[k]) bad(c, "", "header lacks the key '", k == 0 ? "descr" : k == 1 ? "fortran_order" : "shape", "'");
    return h;
  }
};

NpyHeader read_npy_header(const uint8_t* p, size_t n, const Ctx& c) {
  detail::Reader r(p, n, c);
  const uint8_t* m = r.take(6, "the .npy magic string");
  if (std::memcmp(m, kMagic, 6) != 0) bad(c, "", "not a .npy file (no \\x93NUMPY magic string)");
  uint8_t major = r.u8("the format version"), minor = r.u8("the format version");
  if (major < 1 || major > 3 || minor != 0)
    bad(c, "", "unsupported .npy format version ", int(major), ".", int(minor), " (1.0, 2.0 and 3.0 are)");
  uint64_t hlen = major == 1 ? r.u16("the header length") : r.u32("the header length");
  if (hlen > kMaxNpyHeader) bad(c, "", "header of ", hlen, " bytes exceeds NumPy's limit of ", kMaxNpyHeader);
  const uint8_t* hp = r.take(hlen, "the header");
  std::string_view text(reinterpret_cast<const char*>(hp), hlen);
  if (major == 3) {
    if (!detail::valid_utf8(text)) bad(c, "", "version 3.0 header is not valid UTF-8");
  } else {
    for (unsigned char ch : text)
      if (ch >= 0x80) bad(c, "", "version ", int(major), ".0 header is not ASCII (latin-1 text is only in names)");
  }
  if (text.empty() || text.back() != '\n') bad(c, "", "header does not end with a newline");
  LiteralParser lp{text, 0, c};
  NpyHeader h = lp.parse();
  h.data_offset = r.pos();
  return h;
}

array npy_from(const Source& src, const Ctx& c) {
  NpyHeader h = read_npy_header(src.data(), src.size, c);
  uint64_t bytes = detail::checked_bytes(c, "", h.shape, size_of(h.dtype));
  uint64_t have = src.size - h.data_offset;
  if (have < bytes)
    bad(c, "", "truncated: shape ", shape_str(h.shape), " of ", dtype_name(h.dtype), " needs ", bytes,
        " bytes of data, the file has ", have);
  if (have > bytes)
    bad(c, "", "trailing data: ", have - bytes, " bytes after the ", bytes, " bytes of shape ", shape_str(h.shape));
  Strides st = h.fortran ? detail::col_strides(h.shape) : row_strides(h.shape);
  return detail::make_array(src, h.data_offset, bytes, h.shape, h.dtype, st, h.swap, c.op);
}

const char* descr_of(Dtype dt) {
  switch (dt) {
    case Dtype::bool_: return "|b1";
    case Dtype::uint8: return "|u1";
    case Dtype::uint16: return "<u2";
    case Dtype::uint32: return "<u4";
    case Dtype::uint64: return "<u8";
    case Dtype::int8: return "|i1";
    case Dtype::int16: return "<i2";
    case Dtype::int32: return "<i4";
    case Dtype::int64: return "<i8";
    case Dtype::float16: return "<f2";
    case Dtype::float32: return "<f4";
    case Dtype::float64: return "<f8";
    case Dtype::bfloat16: return "<V2";
    case Dtype::complex64: return "<c8";
  }
  return "";
}

// The header block of a C-order .npy for shape/dtype: magic, version, length
// and the dict padded with spaces and a newline to a multiple of 64 bytes.
std::string npy_header(const Shape& shape, Dtype dt) {
  std::string d = std::string("{'descr': '") + descr_of(dt) + "', 'fortran_order': False, 'shape': (";
  for (size_t k = 0; k < shape.size(); ++k) {
    d += std::to_string(shape[k]);
    if (shape.size() == 1) d += ",";
    else if (k + 1 < shape.size()) d += ", ";
  }
  d += "), }";
  size_t total1 = (10 + d.size() + 1 + 63) / 64 * 64;
  bool v1 = total1 - 10 <= 65535;
  size_t pre = v1 ? 10 : 12;
  size_t total = (pre + d.size() + 1 + 63) / 64 * 64;
  d.append(total - pre - d.size() - 1, ' ');
  d += '\n';
  std::string out(kMagic, 6);
  out += static_cast<char>(v1 ? 1 : 2);
  out += '\0';
  uint32_t len = static_cast<uint32_t>(d.size());
  out.append(reinterpret_cast<const char*>(&len), v1 ? 2 : 4);
  return out + d;
}

// ---- zip -------------------------------------------------------------------

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50,
                   kEnd64Sig = 0x06064b50, kLoc64Sig = 0x07064b50;
constexpr uint32_t kMax32 = 0xFFFFFFFFu;

struct Member {
  std::string name;
  uint16_t flags, method;
  uint32_t crc;
  uint64_t csize, usize, local;
  uint64_t data = 0;  // start of the member's data
};

std::vector<Member> read_zip(const Source& src, const Ctx& c) {
  const uint8_t* p = src.data();
  const size_t n = src.size;
  if (n < 22) bad(c, "", "not a zip file: ", n, " bytes is shorter than an end-of-central-directory record");
  // the end record: the last signature whose comment reaches the file's end exactly
  size_t end = SIZE_MAX;
  size_t lowest = n - 22 > 65535 ? n - 22 - 65535 : 0;
  for (size_t k = n - 22 + 1; k-- > lowest;) {
    if (detail::load_le<uint32_t>(p + k) == kEndSig && k + 22 + detail::load_le<uint16_t>(p + k + 20) == n) {
      end = k;
      break;
    }
  }
  if (end == SIZE_MAX) bad(c, "", "not a zip file: no end-of-central-directory record");
  detail::Reader r(p, n, c);
  r.seek(end + 4, "end record");
  uint16_t disk = r.u16("end record"), cd_disk = r.u16("end record");
  uint64_t count_here = r.u16("end record"), count = r.u16("end record");
  uint64_t cd_size = r.u32("end record"), cd_off = r.u32("end record");
  uint64_t cd_limit = end;  // the central directory ends before the end records
  if (count == 0xFFFF || count_here == 0xFFFF || cd_size == kMax32 || cd_off == kMax32) {
    if (end < 20 || detail::load_le<uint32_t>(p + end - 20) != kLoc64Sig)
      bad(c, "", "zip64 end record expected (its locator is missing)");
    r.seek(end - 20 + 4, "zip64 locator");
    uint32_t d64 = r.u32("zip64 locator");
    uint64_t off64 = r.u64("zip64 locator");
    uint32_t ndisks = r.u32("zip64 locator");
    if (d64 != 0 || ndisks > 1) bad(c, "", "multi-disk zip archives are not supported");
    if (off64 > end - 20 || end - 20 - off64 < 56) bad(c, "", "zip64 end record lies outside the file");
    r.seek(off64, "zip64 end record");
    if (r.u32("zip64 end record") != kEnd64Sig) bad(c, "", "zip64 end record has a bad signature");
    r.u64("zip64 end record");
    r.u16("zip64 end record"), r.u16("zip64 end record");
    disk = r.u32("zip64 end record") ? 1 : 0, cd_disk = r.u32("zip64 end record") ? 1 : 0;
    count_here = r.u64("zip64 end record"), count = r.u64("zip64 end record");
    cd_size = r.u64("zip64 end record"), cd_off = r.u64("zip64 end record");
    cd_limit = off64;
  }
  if (disk != 0 || cd_disk != 0 || count_here != count) bad(c, "", "multi-disk zip archives are not supported");
  uint64_t cd_end;
  if (!detail::add_ok(cd_off, cd_size, &cd_end) || cd_end > cd_limit)
    bad(c, "", "central directory (offset ", cd_off, ", ", cd_size, " bytes) lies outside the file");
  if (count > cd_size / 46) bad(c, "", "central directory of ", cd_size, " bytes cannot hold ", count, " entries");
  std::vector<Member> ms;
  std::unordered_set<std::string> names;
  r.seek(cd_off, "central directory");
  detail::Reader cd(p + cd_off, cd_size, c);
  for (uint64_t e = 0; e < count; ++e) {
    if (cd.u32("central directory entry") != kCentralSig) bad(c, "", "central directory entry ", e, " has a bad signature");
    Member m;
    cd.u16("entry"), cd.u16("entry");
    m.flags = cd.u16("entry"), m.method = cd.u16("entry");
    cd.u32("entry");
    m.crc = cd.u32("entry");
    m.csize = cd.u32("entry"), m.usize = cd.u32("entry");
    uint16_t nlen = cd.u16("entry"), xlen = cd.u16("entry"), clen = cd.u16("entry");
    uint16_t mdisk = cd.u16("entry");
    cd.u16("entry"), cd.u32("entry");
    m.local = cd.u32("entry");
    m.name.assign(reinterpret_cast<const char*>(cd.take(nlen, "member name")), nlen);
    const uint8_t* x = cd.take(xlen, "member extra field");
    cd.take(clen, "member comment");
    // zip64 extended information: the 64-bit values of the fields set to 0xFFFFFFFF
    for (size_t k = 0; k + 4 <= xlen;) {
      uint16_t id = detail::load_le<uint16_t>(x + k), len = detail::load_le<uint16_t>(x + k + 2);
      if (k + 4 + len > xlen) bad(c, m.name, "extra field overruns its entry");
      if (id == 1) {
        size_t q = k + 4, qe = q + len;
        auto take64 = [&](uint64_t& v) {
          if (v != kMax32) return;
          if (q + 8 > qe) bad(c, m.name, "zip64 extra field is too short");
          v = detail::load_le<uint64_t>(x + q);
          q += 8;
        };
        take64(m.usize), take64(m.csize), take64(m.local);
      }
      k += 4 + len;
    }
    if (mdisk != 0 && mdisk != 0xFFFF) bad(c, m.name, "multi-disk zip archives are not supported");
    if (m.flags & 1) bad(c, m.name, "member is encrypted");
    if (m.method != 0 && m.method != 8)
      bad(c, m.name, "compression method ", m.method, " is not supported (0 stored, 8 deflate are)");
    if (m.method == 0 && m.csize != m.usize)
      bad(c, m.name, "stored member's sizes differ (", m.csize, " compressed, ", m.usize, " not)");
    // deflate expands at most ~1032:1; a larger claim is a zip bomb
    uint64_t most;
    if (m.method == 8 && (!detail::mul_ok(m.csize, 1032, &most) || m.usize > most + 64))
      bad(c, m.name, "declares ", m.usize, " bytes from ", m.csize, " compressed bytes, beyond deflate's 1032:1");
    if (!names.insert(m.name).second) bad(c, m.name, "member appears twice in the archive");
    // the local header, its name and where the data starts
    detail::Reader lr(p, cd_off, c);
    lr.seek(m.local, "local header");
    if (lr.u32("local header") != kLocalSig) bad(c, m.name, "local header has a bad signature");
    lr.take(22, "local header");
    uint16_t lnlen = lr.u16("local header"), lxlen = lr.u16("local header");
    const uint8_t* lname = lr.take(lnlen, "local name");
    if (lnlen != nlen || std::memcmp(lname, m.name.data(), nlen) != 0)
      bad(c, m.name, "local header names another member");
    lr.take(lxlen, "local extra field");
    m.data = lr.pos();
    lr.need(m.csize, "member data");
    ms.push_back(std::move(m));
  }
  // members may not overlap each other
  std::vector<const Member*> order;
  for (auto& m : ms) order.push_back(&m);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->local < b->local; });
  for (size_t k = 1; k < order.size(); ++k)
    if (order[k - 1]->data + order[k - 1]->csize > order[k]->local)
      bad(c, order[k]->name, "member overlaps '", order[k - 1]->name, "'");
  return ms;
}

void put16(std::string& s, uint16_t v) { s.append(reinterpret_cast<const char*>(&v), 2); }
void put32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void put64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }

}  // namespace

array load_npy(const Source& src) {
  Ctx c{"load_npy", src.name};
  return npy_from(src, c);
}

void save_npy(const array& a, const Writer& w) {
  array d = detail::dense(a);
  std::string h = npy_header(d.shape(), d.dtype());
  w(h.data(), h.size());
  if (d.nbytes()) w(d.raw_data(), static_cast<size_t>(d.nbytes()));
}

NamedArrays load_npz(const Source& src) {
  Ctx c{"load_npz", src.name};
  std::vector<Member> ms = read_zip(src, c);
  NamedArrays out;
  for (auto& m : ms) {
    if (m.name.size() < 4 || m.name.compare(m.name.size() - 4, 4, ".npy") != 0)
      bad(c, m.name, "member is not a .npy file");
    std::string key = m.name.substr(0, m.name.size() - 4);
    Source sub;
    sub.name = src.name + "[" + m.name + "]";
    if (m.method == 0) {
      sub.buf = src.buf;
      sub.offset = src.offset + m.data;
      sub.size = m.usize;
      if (crc32(sub.data(), sub.size) != m.crc) bad(c, m.name, "CRC-32 mismatch: the member is corrupt");
    } else {
      std::string bytes = inflate(src.data() + m.data, m.csize, m.usize, src.name + "[" + m.name + "]");
      if (crc32(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) != m.crc)
        bad(c, m.name, "CRC-32 mismatch: the member is corrupt");
      sub = memory_source(std::move(bytes), sub.name);
    }
    Ctx mc{"load_npz", sub.name};
    out.emplace_back(std::move(key), npy_from(sub, mc));
  }
  return out;
}

void save_npz(const NamedArrays& arrays, bool compressed, const Writer& w) {
  uint64_t pos = 0;
  std::string central;
  auto emit = [&](const void* p, size_t n) {
    w(p, n);
    pos += n;
  };
  for (auto& [key, a] : arrays) {
    array d = detail::dense(a);
    std::string name = key + ".npy";
    if (name.size() > 65535) throw std::invalid_argument("[savez] array name '" + key + "' is longer than zip allows");
    std::string h = npy_header(d.shape(), d.dtype());
    const uint8_t* data = static_cast<const uint8_t*>(d.raw_data());
    const uint64_t nbytes = static_cast<uint64_t>(d.nbytes());
    uint64_t usize = h.size() + nbytes, csize = usize;
    uint32_t crc = crc32(reinterpret_cast<const uint8_t*>(h.data()), h.size());
    if (nbytes) crc = crc32(data, nbytes, crc);
    std::string packed;
    if (compressed) {
      std::string all = h;
      all.append(reinterpret_cast<const char*>(data), nbytes);
      packed = deflate(reinterpret_cast<const uint8_t*>(all.data()), all.size());
      csize = packed.size();
    }
    const uint64_t local = pos;
    const bool z64 = usize >= kMax32 || csize >= kMax32;
    bool utf8 = std::any_of(name.begin(), name.end(), [](char ch) { return static_cast<unsigned char>(ch) >= 0x80; });
    uint16_t flags = utf8 ? 0x0800 : 0, method = compressed ? 8 : 0, ver = z64 || local >= kMax32 ? 45 : 20;
    std::string extra;
    if (z64) {
      put16(extra, 1), put16(extra, 16), put64(extra, usize), put64(extra, csize);
    }
    if (!compressed) {  // pad so that the data (and with it the array) starts 64-byte aligned
      uint64_t start = local + 30 + name.size() + extra.size();
      uint64_t pad = (64 - (start + 4) % 64) % 64;
      put16(extra, 0xD935), put16(extra, static_cast<uint16_t>(pad));
      extra.append(pad, '\0');
    }
    std::string lh;
    put32(lh, kLocalSig), put16(lh, ver), put16(lh, flags), put16(lh, method), put16(lh, 0), put16(lh, 0x21);
    put32(lh, crc), put32(lh, z64 ? kMax32 : static_cast<uint32_t>(csize)), put32(lh, z64 ? kMax32 : static_cast<uint32_t>(usize));
    put16(lh, static_cast<uint16_t>(name.size())), put16(lh, static_cast<uint16_t>(extra.size()));
    lh += name + extra;
    emit(lh.data(), lh.size());
    if (compressed) {
      emit(packed.data(), packed.size());
    } else {
      emit(h.data(), h.size());
      if (nbytes) emit(data, nbytes);
    }
    // its central directory entry
    const bool cz64 = z64 || local >= kMax32;
    std::string cx;
    if (cz64) put16(cx, 1), put16(cx, 24), put64(cx, usize), put64(cx, csize), put64(cx, local);
    put32(central, kCentralSig), put16(central, ver), put16(central, ver), put16(central, flags);
    put16(central, method), put16(central, 0), put16(central, 0x21), put32(central, crc);
    put32(central, cz64 ? kMax32 : static_cast<uint32_t>(csize)), put32(central, cz64 ? kMax32 : static_cast<uint32_t>(usize));
    put16(central, static_cast<uint16_t>(name.size())), put16(central, static_cast<uint16_t>(cx.size()));
    put16(central, 0), put16(central, 0), put16(central, 0), put32(central, 0);
    put32(central, cz64 ? kMax32 : static_cast<uint32_t>(local));
    central += name + cx;
  }
  const uint64_t cd_off = pos, cd_size = central.size(), count = arrays.size();
  emit(central.data(), central.size());
  std::string tail;
  const bool z64 = cd_off >= kMax32 || cd_size >= kMax32 || count >= 0xFFFF;
  if (z64) {
    uint64_t e64 = pos;
    put32(tail, kEnd64Sig), put64(tail, 44), put16(tail, 45), put16(tail, 45), put32(tail, 0), put32(tail, 0);
    put64(tail, count), put64(tail, count), put64(tail, cd_size), put64(tail, cd_off);
    put32(tail, kLoc64Sig), put32(tail, 0), put64(tail, e64), put32(tail, 1);
  }
  put32(tail, kEndSig), put16(tail, 0), put16(tail, 0);
  put16(tail, z64 ? 0xFFFF : static_cast<uint16_t>(count)), put16(tail, z64 ? 0xFFFF : static_cast<uint16_t>(count));
  put32(tail, z64 ? kMax32 : static_cast<uint32_t>(cd_size)), put32(tail, z64 ? kMax32 : static_cast<uint32_t>(cd_off));
  put16(tail, 0);
  emit(tail.data(), tail.size());
}

}  // namespace ember::io
