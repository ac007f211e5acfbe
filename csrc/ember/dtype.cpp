#include "ember/dtype.h"

#include <sstream>

namespace ember {

namespace {
constexpr Dtype b = Dtype::bool_, u8 = Dtype::uint8, u16 = Dtype::uint16,
                u32 = Dtype::uint32, u64 = Dtype::uint64, s8 = Dtype::int8,
                s16 = Dtype::int16, s32 = Dtype::int32, s64 = Dtype::int64,
                f16 = Dtype::float16, f32 = Dtype::float32, f64 = Dtype::float64,
                bf = Dtype::bfloat16, c64 = Dtype::complex64;

// Row and column order follow the enum: b u8 u16 u32 u64 s8 s16 s32 s64 f16 f32 f64 bf c64.
constexpr Dtype kPromote[kNumDtypes][kNumDtypes] = {
    {b, u8, u16, u32, u64, s8, s16, s32, s64, f16, f32, f64, bf, c64},
    {u8, u8, u16, u32, u64, s16, s16, s32, s64, f16, f32, f64, bf, c64},
    {u16, u16, u16, u32, u64, s32, s32, s32, s64, f16, f32, f64, bf, c64},
    {u32, u32, u32, u32, u64, s64, s64, s64, s64, f16, f32, f64, bf, c64},
    {u64, u64, u64, u64, u64, f32, f32, f32, f32, f16, f32, f64, bf, c64},
    {s8, s16, s32, s64, f32, s8, s16, s32, s64, f16, f32, f64, bf, c64},
    {s16, s16, s32, s64, f32, s16, s16, s32, s64, f16, f32, f64, bf, c64},
    {s32, s32, s32, s64, f32, s32, s32, s32, s64, f16, f32, f64, bf, c64},
    {s64, s64, s64, s64, f32, s64, s64, s64, s64, f16, f32, f64, bf, c64},
    {f16, f16, f16, f16, f16, f16, f16, f16, f16, f16, f32, f64, f32, c64},
    {f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f64, f32, c64},
    {f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, c64},
    {bf, bf, bf, bf, bf, bf, bf, bf, bf, f32, f32, f64, bf, c64},
    {c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64},
};
constexpr int kSize[kNumDtypes] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8};
constexpr const char* kName[kNumDtypes] = {
    "bool",    "uint8",   "uint16",  "uint32",  "uint64",   "int8",     "int16",
    "int32",   "int64",   "float16", "float32", "float64",  "bfloat16", "complex64"};
int idx(Dtype t) { return static_cast<int>(t); }
}  // namespace

int size_of(Dtype t) { return kSize[idx(t)]; }
const char* dtype_name(Dtype t) { return kName[idx(t)]; }
bool is_floating(Dtype t) {
  return t == f16 || t == f32 || t == f64 || t == bf;
}
bool is_complex(Dtype t) { return t == c64; }
bool is_inexact(Dtype t) { return is_floating(t) || is_complex(t); }
bool is_unsigned(Dtype t) { return t == u8 || t == u16 || t == u32 || t == u64; }
bool is_signed_int(Dtype t) { return t == s8 || t == s16 || t == s32 || t == s64; }
bool is_integral(Dtype t) { return is_unsigned(t) || is_signed_int(t); }
Dtype index_dtype(int64_t n) { return n <= INT32_MAX ? Dtype::int32 : Dtype::int64; }
Dtype promote_types(Dtype a, Dtype c) { return kPromote[idx(a)][idx(c)]; }
Dtype to_inexact(Dtype t) { return is_inexact(t) ? t : f32; }

bool issubdtype(Dtype a, DtypeCategory c) {
  switch (c) {
    case DtypeCategory::complexfloating: return is_complex(a);
    case DtypeCategory::floating: return is_floating(a);
    case DtypeCategory::inexact: return is_inexact(a);
    case DtypeCategory::signedinteger: return is_signed_int(a);
    case DtypeCategory::unsignedinteger: return is_unsigned(a);
    case DtypeCategory::integer: return is_integral(a);
    case DtypeCategory::number: return a != b;
    case DtypeCategory::generic: return true;
  }
  return false;
}

bool issubdtype(DtypeCategory a, DtypeCategory c) {
  if (a == c || c == DtypeCategory::generic) return true;
  using C = DtypeCategory;
  switch (a) {
    case C::complexfloating:
    case C::floating: return c == C::inexact || c == C::number;
    case C::signedinteger:
    case C::unsignedinteger: return c == C::integer || c == C::number;
    case C::inexact:
    case C::integer: return c == C::number;
    default: return false;
  }
}

bool can_cast(Dtype from, Dtype to) {
  if (from == to || from == b) return true;
  if (to == b) return false;
  if (is_complex(to)) return from != f64;  // complex64 holds float32 parts
  if (is_complex(from)) return false;
  if (is_floating(to)) {
    if (is_floating(from)) {
      if (to == f64) return true;
      if (to == f32) return from != f64;
      return false;  // f16 <-> bf16 are not lossless
    }
    // integers: float has enough mantissa for the integer's width
    int mant = to == f64 ? 53 : to == f32 ? 24 : to == f16 ? 11 : 8;
    int bits = size_of(from) * 8 - (is_signed_int(from) ? 1 : 0);
    return bits <= mant;
  }
  if (is_floating(from)) return false;
  if (is_unsigned(from)) {
    return is_unsigned(to) ? size_of(to) >= size_of(from) : size_of(to) > size_of(from);
  }
  return is_signed_int(to) && size_of(to) >= size_of(from);
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) os << ",";
    os << s[i];
  }
  os << ")";
  return os.str();
}

}  // namespace ember
