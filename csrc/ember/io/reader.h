// The loaders' shared checked reading: errors that name the file, the tensor
// and the rule; a bounds-checked little-endian cursor over a Source; checked
// 64-bit arithmetic; arrays made as views of the source or as copies.
// Internal to csrc/ember/io/.
#pragma once

#include <cstring>
#include <sstream>
#include <string>
#include <string_view>

#include "ember/io/io.h"

namespace ember::io::detail {

// Where a loader is: the op ("load_npy") and the file, for messages.
struct Ctx {
  const char* op;
  std::string file;
};

// "[op] file: tensor 'name': rule" (ValueError); tensor may be empty.
template <class... Args>
[[noreturn]] void bad(const Ctx& c, const std::string& tensor, Args&&... args) {
  std::ostringstream os;
  os << "[" << c.op << "] " << c.file << ": ";
  if (!tensor.empty()) os << "tensor '" << tensor << "': ";
  (os << ... << args);
  throw std::invalid_argument(os.str());
}

inline bool add_ok(uint64_t a, uint64_t b, uint64_t* r) { return !__builtin_add_overflow(a, b, r); }
inline bool mul_ok(uint64_t a, uint64_t b, uint64_t* r) { return !__builtin_mul_overflow(a, b, r); }

// The element count and byte size of a shape, checked: dims non-negative,
// the product of the non-zero dims and the byte count within 2^63 (so
// strides of any layout fit in int64 as well).
inline uint64_t checked_bytes(const Ctx& c, const std::string& tensor, const Shape& shape, int itemsize,
                              uint64_t* numel = nullptr) {
  uint64_t n = 1, nz = 1;
  for (int64_t d : shape) {
    if (d < 0) bad(c, tensor, "negative dimension in shape ", shape_str(shape));
    if (!mul_ok(nz, d == 0 ? 1 : static_cast<uint64_t>(d), &nz) || nz > (uint64_t(1) << 62))
      bad(c, tensor, "shape ", shape_str(shape), " has more elements than 2^62");
    n *= static_cast<uint64_t>(d);  // <= nz
  }
  uint64_t bytes;
  if (!mul_ok(nz, static_cast<uint64_t>(itemsize), &bytes) || bytes > (uint64_t(1) << 62))
    bad(c, tensor, "shape ", shape_str(shape), " needs more than 2^62 bytes");
  if (numel) *numel = n;
  return n * static_cast<uint64_t>(itemsize);
}

// A bounds-checked little-endian cursor over [data, data + size).
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const Ctx& c) : p_(data), n_(size), c_(c) {}
  size_t pos() const { return pos_; }
  size_t size() const { return n_; }
  size_t left() const { return n_ - pos_; }
  const uint8_t* at(size_t off) const { return p_ + off; }
  void seek(uint64_t off, const char* what) {
    if (off > n_) bad(c_, "", what, " at offset ", off, " lies past the end of the file (", n_, " bytes)");
    pos_ = static_cast<size_t>(off);
  }
  void need(uint64_t k, const char* what) const {
    if (k > left())
      bad(c_, "", "truncated: ", what, " needs ", k, " bytes at offset ", pos_, " but the file has ", left(), " left");
  }
  const uint8_t* take(uint64_t k, const char* what) {
    need(k, what);
    const uint8_t* r = p_ + pos_;
    pos_ += static_cast<size_t>(k);
    return r;
  }
  template <class T>
  T get(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;  // little-endian host (x86-64)
  }
  uint8_t u8(const char* w) { return get<uint8_t>(w); }
  uint16_t u16(const char* w) { return get<uint16_t>(w); }
  uint32_t u32(const char* w) { return get<uint32_t>(w); }
  uint64_t u64(const char* w) { return get<uint64_t>(w); }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const Ctx& c_;
};

template <class T>
inline T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// An array of `shape`/`strides` (elements) whose data starts `byte_off`
// bytes into src: a zero-copy view when the data is aligned for the dtype
// and needs no byte swap, else a copy (byte-swapped where `swap`). The
// caller has checked that the bytes lie inside src.
array make_array(const Source& src, uint64_t byte_off, uint64_t nbytes, const Shape& shape, Dtype dt,
                 const Strides& strides, bool swap, const char* op);
// A copy of `nbytes` bytes as a dense row-major array.
array copy_array(const void* data, uint64_t nbytes, const Shape& shape, Dtype dt);
// The evaluated, row-contiguous form of `a` (evaluating it).
array dense(const array& a);
Strides col_strides(const Shape& shape);

// Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view s);

// A minimal JSON value for the safetensors header.
struct Json {
  enum Type { Null, Bool, Number, String, Array, Object } type = Null;
  bool b = false;
  std::string num;  // the number's text, as written
  std::string str;
  std::vector<Json> items;                          // Array
  std::vector<std::pair<std::string, Json>> members;  // Object, in file order, keys unique
};
// Parses exactly one JSON value (RFC 8259) followed only by spaces; errors
// (ValueError through bad) name `c`. Nesting is bounded.
Json parse_json(std::string_view text, const Ctx& c);
std::string json_quote(std::string_view s);

}  // namespace ember::io::detail
