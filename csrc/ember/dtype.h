// Dtypes: the 14 element types, their C++ storage types, categories and the
// promotion table (MLX's rules: Python int -> int32, float -> float32).
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ember {

// float16 storage is the compiler's _Float16 (IEEE binary16, converted with
// F16C where the CPU has it); bfloat16 is a 16-bit wrapper with
// round-to-nearest-even conversion from float.
using float16_t = _Float16;

struct bfloat16_t {
  uint16_t bits;
  bfloat16_t() = default;
  static bfloat16_t from_bits(uint16_t b) {
    bfloat16_t r;
    r.bits = b;
    return r;
  }
  bfloat16_t(float f) {  // NOLINT: implicit like a built-in float type
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
    } else {
      u += 0x7fffu + ((u >> 16) & 1u);
      bits = static_cast<uint16_t>(u >> 16);
    }
  }
  explicit bfloat16_t(double d) : bfloat16_t(static_cast<float>(d)) {}
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  explicit bfloat16_t(I i) : bfloat16_t(static_cast<float>(i)) {}
  operator float() const {  // NOLINT
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

using complex64_t = std::complex<float>;

enum class Dtype : uint8_t {
  bool_,
  uint8,
  uint16,
  uint32,
  uint64,
  int8,
  int16,
  int32,
  int64,
  float16,
  float32,
  float64,
  bfloat16,
  complex64,
};
constexpr int kNumDtypes = 14;

enum class DtypeCategory : uint8_t {
  complexfloating,
  floating,
  inexact,
  signedinteger,
  unsignedinteger,
  integer,
  number,
  generic,
};

int size_of(Dtype t);
const char* dtype_name(Dtype t);   // "float32"
const char* category_name(DtypeCategory c);
bool is_floating(Dtype t);         // float16/32/64, bfloat16
bool is_complex(Dtype t);
bool is_inexact(Dtype t);          // floating or complex
bool is_integral(Dtype t);         // signed or unsigned integer (not bool)
bool is_unsigned(Dtype t);
bool is_signed_int(Dtype t);
Dtype promote_types(Dtype a, Dtype b);
// The float type an op computes in for a given input (ints -> float32).
Dtype to_inexact(Dtype t);
bool issubdtype(Dtype a, DtypeCategory c);
bool issubdtype(DtypeCategory a, DtypeCategory b);
bool can_cast(Dtype from, Dtype to);  // lossless ("safe") cast, NumPy's rule
std::string shape_str(const std::vector<int64_t>& s);

template <class T>
struct type_to_dtype;
#define EMBER_TYPE_DTYPE(T, D) \
  template <>                  \
  struct type_to_dtype<T> {    \
    static constexpr Dtype value = Dtype::D; \
  };
EMBER_TYPE_DTYPE(bool, bool_)
EMBER_TYPE_DTYPE(uint8_t, uint8)
EMBER_TYPE_DTYPE(uint16_t, uint16)
EMBER_TYPE_DTYPE(uint32_t, uint32)
EMBER_TYPE_DTYPE(uint64_t, uint64)
EMBER_TYPE_DTYPE(int8_t, int8)
EMBER_TYPE_DTYPE(int16_t, int16)
EMBER_TYPE_DTYPE(int32_t, int32)
EMBER_TYPE_DTYPE(int64_t, int64)
EMBER_TYPE_DTYPE(float16_t, float16)
EMBER_TYPE_DTYPE(float, float32)
EMBER_TYPE_DTYPE(double, float64)
EMBER_TYPE_DTYPE(bfloat16_t, bfloat16)
EMBER_TYPE_DTYPE(complex64_t, complex64)
#undef EMBER_TYPE_DTYPE

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with T the storage type of `t`. The one dtype switch:
// every kernel dispatches through this (or the narrower variants below).
template <class F>
decltype(auto) dispatch_all(Dtype t, F&& f) {
  switch (t) {
    case Dtype::bool_: return f(Tag<bool>{});
    case Dtype::uint8: return f(Tag<uint8_t>{});
    case Dtype::uint16: return f(Tag<uint16_t>{});
    case Dtype::uint32: return f(Tag<uint32_t>{});
    case Dtype::uint64: return f(Tag<uint64_t>{});
    case Dtype::int8: return f(Tag<int8_t>{});
    case Dtype::int16: return f(Tag<int16_t>{});
    case Dtype::int32: return f(Tag<int32_t>{});
    case Dtype::int64: return f(Tag<int64_t>{});
    case Dtype::float16: return f(Tag<float16_t>{});
    case Dtype::float32: return f(Tag<float>{});
    case Dtype::float64: return f(Tag<double>{});
    case Dtype::bfloat16: return f(Tag<bfloat16_t>{});
    case Dtype::complex64: return f(Tag<complex64_t>{});
  }
  return f(Tag<float>{});
}

template <class T>
constexpr bool is_complex_v = std::is_same_v<T, complex64_t>;
template <class T>
constexpr bool is_half_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;
template <class T>
constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// The type arithmetic runs in: half types compute in float.
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

}  // namespace ember
