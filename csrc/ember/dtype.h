// Dtypes: the 14 element types, their C++ storage types, categories and the
// promotion table (MLX's rules: Python int -> int32, float -> float32).
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <string>
#include <vector>

#include "ember/half_bits.h"

namespace ember {

// float16 (IEEE binary16) and bfloat16 are 16-bit wrappers converted by
// integer and float32 arithmetic (half_bits.h for float16), so that loops
// over them vectorize at every ISA level and give the same bits on each.
struct float16_t {
  uint16_t bits;
  float16_t() = default;
  float16_t(float f) : bits(half_bits::from_float(f)) {}  // NOLINT: implicit like a built-in float type
  explicit float16_t(double d) : bits(half_bits::from_double(d)) {}
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  explicit float16_t(I i) : float16_t(static_cast<float>(i)) {}
  operator float() const { return half_bits::to_float16_value(bits); }  // NOLINT
};

struct bfloat16_t {
  uint16_t bits;
  bfloat16_t() = default;
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
bool is_floating(Dtype t);         // float16/32/64, bfloat16
bool is_complex(Dtype t);
bool is_inexact(Dtype t);          // floating or complex
bool is_integral(Dtype t);         // signed or unsigned integer (not bool)
bool is_unsigned(Dtype t);
bool is_signed_int(Dtype t);
Dtype promote_types(Dtype a, Dtype b);
// The float type an op computes in for a given input (ints -> float32).
Dtype to_inexact(Dtype t);
// The index dtype for positions below n: int32 if n fits it, else int64.
Dtype index_dtype(int64_t n);
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

// Float -> integer conversions, defined for every input (C++ leaves NaN,
// infinities, out-of-range values and negative -> unsigned undefined, and
// x86's scalar and vector instructions answer them differently). Ember gives
// one answer on every code path, thread split and ISA level — that of x86-64's
// conversion instructions as NumPy's and MLX's array casts use them:
//   * to int8/int16/uint8/uint16/int32: truncate toward zero to int32 — a
//     value whose truncation is not an int32 (and NaN) gives INT32_MIN —
//     then keep the low bits (wrap);
//   * to int64: truncate to int64; not representable or NaN -> INT64_MIN;
//   * to uint32 (uint64): values below 2^31 (2^63) as the signed rule, then
//     wrap (-1.0 -> 4294967295); from 2^31 (2^63) up, 2^31 (2^63) plus the
//     signed rule on x - 2^31 (x - 2^63), wrapped (so 2^32 -> 0, NaN ->
//     2^31). This is the unsigned conversion vectorized casts perform (NumPy's
//     SIMD loops, MLX's astype); C's scalar (uint32_t)x on x86-64 differs for
//     NaN and values outside [-2^31, 2^32).
// float16/bfloat16 go through float32, complex through its real part. The
// forms are branch-free selects, so loops over them vectorize.
template <class F>
inline int32_t cvt_i32(F x) {
  bool ok;
  if constexpr (std::is_same_v<F, float>) ok = (x >= -2147483648.0f) & (x < 2147483648.0f);
  else ok = (x > -2147483649.0) & (x < 2147483648.0);
  const int32_t v = static_cast<int32_t>(ok ? x : F(0));
  return ok ? v : std::numeric_limits<int32_t>::min();
}
template <class F>
inline int64_t cvt_i64(F x) {
  const bool ok = (x >= F(-9223372036854775808.0)) & (x < F(9223372036854775808.0));
  const int64_t v = static_cast<int64_t>(ok ? x : F(0));
  return ok ? v : std::numeric_limits<int64_t>::min();
}
template <class I, class F>
inline I float_to_int(F x) {
  if constexpr (std::is_same_v<I, uint32_t>) {
    const bool hi = x >= F(2147483648.0);
    const uint32_t v = static_cast<uint32_t>(cvt_i32(hi ? x - F(2147483648.0) : x));
    return v ^ (hi ? 0x80000000u : 0u);
  } else if constexpr (std::is_same_v<I, uint64_t>) {
    const bool hi = x >= F(9223372036854775808.0);
    const uint64_t v = static_cast<uint64_t>(cvt_i64(hi ? x - F(9223372036854775808.0) : x));
    return v ^ (hi ? uint64_t(1) << 63 : uint64_t(0));
  } else if constexpr (sizeof(I) == 8) {
    return cvt_i64(x);
  } else {
    return static_cast<I>(cvt_i32(x));  // wraps to the low bits
  }
}

// One value converted between storage types, as every Ember conversion
// (astype, construction from Python values, scalars, kernels) does it.
template <class To, class From>
inline To scalar_cast(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (is_complex_v<From>) {
    if constexpr (is_complex_v<To>) return x;
    else if constexpr (std::is_same_v<To, bool>) return x != From(0);
    else return scalar_cast<To>(x.real());
  } else if constexpr (is_half_v<From>) {
    return scalar_cast<To>(static_cast<float>(x));
  } else if constexpr (is_complex_v<To>) {
    return To(static_cast<float>(x), 0.0f);
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_same_v<To, bfloat16_t>) {
    return To(static_cast<float>(x));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return float_to_int<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace ember
