// Scalar kernels of the elementwise ops: Fn<op::Tag> is called per element
// on the compute type (half types arrive as float). An overload that does not
// exist for a type means the op does not support that dtype (the kernel
// raises; the op layer normally rejects or casts first). Keep them
// branch-free where possible: the loops in unary.cpp / binary.cpp rely on the
// compiler vectorizing them, and float32 transcendental math goes through
// simd_math.h for that reason.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ember/backend/cpu/isa.h"
#include "ember/backend/cpu/simd_math.h"
#include "ember/dtype.h"
#include "ember/primitives/elementwise.h"

namespace ember::cpu {
inline namespace EMBER_ISA_NS {  // one copy per ISA level (backend/cpu/isa.h)

template <class T>
constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
constexpr bool is_real_v = std::is_floating_point_v<T>;  // float, double (compute types)
template <class T>
using if_real = std::enable_if_t<is_real_v<T>, int>;
template <class T>
using if_inexact = std::enable_if_t<is_real_v<T> || is_complex_v<T>, int>;
template <class T>
using if_int = std::enable_if_t<is_int_v<T>, int>;
template <class T>
using if_intbool = std::enable_if_t<std::is_integral_v<T>, int>;
template <class T>
using if_num = std::enable_if_t<!std::is_same_v<T, bool>, int>;

// float32 goes through the vectorizable implementations; double and complex
// through the standard library.
#define EMBER_MATH(NAME, SIMD, STD)                              \
  template <class T>                                            \
  inline T NAME(T x) {                                          \
    if constexpr (std::is_same_v<T, float>) return simd::SIMD(x); \
    else return STD(x);                                         \
  }
EMBER_MATH(m_exp, exp, std::exp)
EMBER_MATH(m_expm1, expm1, std::expm1)
EMBER_MATH(m_log, log, std::log)
EMBER_MATH(m_log1p, log1p, std::log1p)
EMBER_MATH(m_log2, log2, std::log2)
EMBER_MATH(m_log10, log10, std::log10)
EMBER_MATH(m_sin, sin, std::sin)
EMBER_MATH(m_cos, cos, std::cos)
EMBER_MATH(m_tan, tan, std::tan)
EMBER_MATH(m_sinh, sinh, std::sinh)
EMBER_MATH(m_cosh, cosh, std::cosh)
EMBER_MATH(m_tanh, tanh, std::tanh)
EMBER_MATH(m_asin, asin, std::asin)
EMBER_MATH(m_acos, acos, std::acos)
EMBER_MATH(m_atan, atan, std::atan)
EMBER_MATH(m_asinh, asinh, std::asinh)
EMBER_MATH(m_acosh, acosh, std::acosh)
EMBER_MATH(m_atanh, atanh, std::atanh)
EMBER_MATH(m_erf, erf, std::erf)
#undef EMBER_MATH

// float64 erfinv: Winitzki's closed-form estimate (relative error < 2e-3),
// then Halley steps on erf(x) = |y| (written through erfc in the tail, where
// erf(x) rounds to 1). Only libm and double arithmetic: the same bits at every
// ISA level.
inline double erfinv_f64(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1) return std::numeric_limits<double>::infinity();
  if (y == -1) return -std::numeric_limits<double>::infinity();
  if (y == 0) return y;
  const double a = std::fabs(y);
  const double l = std::log((1 - a) * (1 + a));  // ln(1 - y^2)
  const double t = 2 / (3.141592653589793 * 0.147) + l / 2;
  double x = std::sqrt(std::sqrt(t * t - l / 0.147) - t);
  for (int i = 0; i < 3; ++i) {
    const double f = a < 0.5 ? std::erf(x) - a : (1 - a) - std::erfc(x);
    const double d = 1.1283791670955126 * std::exp(-x * x);  // erf'(x)
    x -= f / (d + x * f);
  }
  return y < 0 ? -x : x;
}

// Complex numbers order lexicographically (real part, then imaginary), as MLX.
template <class T>
inline bool lt(T a, T b) {
  if constexpr (is_complex_v<T>) return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  else return a < b;
}
// A complex value is NaN when either part is (NumPy's isnan).
template <class T>
inline bool c_isnan(T z) {
  return z.real() != z.real() || z.imag() != z.imag();
}

template <class Op>
struct Fn;

#define EMBER_FN(OP) \
  template <>        \
  struct Fn<op::OP>

EMBER_FN(Abs) {
  template <class T, if_num<T> = 0>
  auto operator()(T x) const {
    if constexpr (is_complex_v<T>) return std::abs(x);
    else if constexpr (std::is_unsigned_v<T>) return x;
    else if constexpr (is_real_v<T>) return std::fabs(x);
    else return static_cast<T>(x < 0 ? -x : x);
  }
};
EMBER_FN(Negative) {
  template <class T, if_num<T> = 0>
  T operator()(T x) const { return static_cast<T>(-x); }
};
EMBER_FN(Sign) {
  template <class T, if_num<T> = 0>
  T operator()(T x) const {
    if constexpr (is_complex_v<T>) {
      float r = std::abs(x);
      return r == 0 ? T(0) : x / r;
    } else if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(x != 0);
    } else if constexpr (is_real_v<T>) {
      return static_cast<T>((x > 0) - (x < 0));  // NaN -> 0, as MLX
    } else {
      return static_cast<T>((x > 0) - (x < 0));
    }
  }
};
EMBER_FN(Sqrt) {
  template <class T, if_inexact<T> = 0>
  T operator()(T x) const { return std::sqrt(x); }
};
EMBER_FN(Rsqrt) {
  template <class T, if_inexact<T> = 0>
  T operator()(T x) const { return T(1) / std::sqrt(x); }
};
EMBER_FN(Square) {
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return x;
    else return static_cast<T>(x * x);
  }
};
// EXTRA: more members. sin/cos/tan: the float32 vector path (simd_math.h)
// is accurate for |x| <= kSinCosAccurateBound only, so these functors also
// give that bound (far_bound), the vector path without its guards beyond it
// (near_value) and the exact value beyond it (far_value); unary.cpp's loop
// redoes those lanes (half types are computed in float32 and covered too).
#define EMBER_FN_MATH(OP, FN, EXTRA)                    \
  EMBER_FN(OP) {                                        \
    template <class T, if_inexact<T> = 0>               \
    T operator()(T x) const {                           \
      if constexpr (is_complex_v<T>) return std::FN(x); \
      else return m_##FN(x);                            \
    }                                                   \
    EXTRA                                               \
  };
#define EMBER_FAR(FN)                                             \
  static float far_bound() { return simd::kSinCosAccurateBound; } \
  static float near_value(float x) { return simd::FN##_near(x); } \
  static float far_value(float x) { return simd::FN##_far(x); }
EMBER_FN_MATH(Exp, exp, )
EMBER_FN_MATH(Log, log, )
EMBER_FN_MATH(Log10, log10, )
EMBER_FN_MATH(Sin, sin, EMBER_FAR(sin))
EMBER_FN_MATH(Cos, cos, EMBER_FAR(cos))
EMBER_FN_MATH(Tan, tan, EMBER_FAR(tan))
EMBER_FN_MATH(Sinh, sinh, )
EMBER_FN_MATH(Cosh, cosh, )
EMBER_FN_MATH(Tanh, tanh, )
EMBER_FN_MATH(ArcSin, asin, )
EMBER_FN_MATH(ArcCos, acos, )
EMBER_FN_MATH(ArcTan, atan, )
EMBER_FN_MATH(ArcSinh, asinh, )
EMBER_FN_MATH(ArcCosh, acosh, )
EMBER_FN_MATH(ArcTanh, atanh, )
#undef EMBER_FAR
#undef EMBER_FN_MATH
#define EMBER_FN_REAL(OP, EXPR)          \
  EMBER_FN(OP) {                         \
    template <class T, if_real<T> = 0>   \
    T operator()(T x) const { return EXPR; } \
  };
EMBER_FN_REAL(Expm1, m_expm1(x))
EMBER_FN_REAL(Erf, m_erf(x))
EMBER_FN_REAL(Floor, std::floor(x))
EMBER_FN_REAL(Ceil, std::ceil(x))
#undef EMBER_FN_REAL
EMBER_FN(Round) {  // half to even
  template <class T, if_inexact<T> = 0>
  T operator()(T x) const {
    if constexpr (is_complex_v<T>) return T(std::nearbyint(x.real()), std::nearbyint(x.imag()));
    else return std::nearbyint(x);
  }
};
EMBER_FN(Log1p) {
  template <class T, if_inexact<T> = 0>
  T operator()(T x) const {
    if constexpr (is_complex_v<T>) return std::log(T(1) + x);
    else return m_log1p(x);
  }
};
EMBER_FN(Log2) {
  template <class T, if_inexact<T> = 0>
  T operator()(T x) const {
    if constexpr (is_complex_v<T>) return std::log(x) / 0.6931471805599453f;
    else return m_log2(x);
  }
};
EMBER_FN(Sigmoid) {
  template <class T, if_real<T> = 0>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return simd::sigmoid(x);
    else return T(1) / (T(1) + std::exp(-x));
  }
};
EMBER_FN(ErfInv) {
  template <class T, if_real<T> = 0>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return simd::erfinv(x);
    else return erfinv_f64(x);
  }
};
EMBER_FN(LogicalNot) {
  template <class T>
  bool operator()(T x) const { return !(x != T(0)); }
};
EMBER_FN(BitwiseInvert) {
  template <class T, if_intbool<T> = 0>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return !x;
    else return static_cast<T>(~x);
  }
};
EMBER_FN(IsNaN) {
  template <class T, if_inexact<T> = 0>
  bool operator()(T x) const {
    if constexpr (is_complex_v<T>) return std::isnan(x.real()) || std::isnan(x.imag());
    else return x != x;
  }
};
EMBER_FN(IsInf) {
  template <class T, if_inexact<T> = 0>
  bool operator()(T x) const {
    if constexpr (is_complex_v<T>) return std::isinf(x.real()) || std::isinf(x.imag());
    else return std::fabs(x) == std::numeric_limits<T>::infinity();
  }
};
// complex: z == +-inf + 0i, as MLX (inf + 1i is not +inf)
EMBER_FN(IsPosInf) {
  template <class T, if_inexact<T> = 0>
  bool operator()(T x) const { return x == T(std::numeric_limits<float>::infinity()); }
};
EMBER_FN(IsNegInf) {
  template <class T, if_inexact<T> = 0>
  bool operator()(T x) const { return x == T(-std::numeric_limits<float>::infinity()); }
};
EMBER_FN(Real) {
  float operator()(complex64_t x) const { return x.real(); }
};
EMBER_FN(Imag) {
  float operator()(complex64_t x) const { return x.imag(); }
};
EMBER_FN(Conjugate) {
  complex64_t operator()(complex64_t x) const { return std::conj(x); }
};

// fp8 e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; no
// infinities, S.1111.111 is NaN, so the largest finite value is 448
// (S.1111.110). x rounds to the nearest code, ties to even, in one rounding
// from its own type (float64 included). As MLX: |x| >= 448, infinities and
// NaN give +-448 (0x7E with x's sign bit), never the NaN code.
EMBER_FN(ToFP8) {
  template <class T, if_real<T> = 0>
  uint8_t operator()(T x) const {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    constexpr int kBits = 8 * sizeof(T), kMant = std::numeric_limits<T>::digits - 1;
    constexpr U kBias = (U(1) << (kBits - kMant - 2)) - 1;
    constexpr U kMinNormal = (kBias - 6) << kMant;                      // 2^-6
    constexpr U kMax = ((kBias + 8) << kMant) | (U(6) << (kMant - 3));  // 448
    U u;
    std::memcpy(&u, &x, sizeof(T));
    const U sign = u >> (kBits - 1);
    const U a = u & ~(U(1) << (kBits - 1));  // |x|
    // |x| < 2^-6 (subnormal codes, spaced 2^-9): |x| + 2^(kMant-9), whose
    // ulp is 2^-9, rounds |x| to a multiple of 2^-9 (to nearest even); the
    // sum's low bits are that multiple.
    const T magic = static_cast<T>(U(1) << (kMant - 9));
    const T sum = std::fabs(x) + magic;
    U su;
    std::memcpy(&su, &sum, sizeof(T));
    const U sub = su - ((kBias + kMant - 9) << kMant);
    // 2^-6 <= |x| < 448: rebias the exponent and round the mantissa to 3
    // bits, half to even (unsigned wrap-around is intended)
    const U odd = (a >> (kMant - 3)) & 1;
    const U nrm = (a + ((U(7) - kBias) << kMant) + ((U(1) << (kMant - 4)) - 1) + odd) >> (kMant - 3);
    const U r = a >= kMax ? U(0x7E) : a < kMinNormal ? sub : nrm;
    return static_cast<uint8_t>(r | (sign << 7));
  }
};

// The value of fp8 e4m3fn code c as storage type O (exact for every finite
// code and every floating O). NaN codes (0x7F, 0xFF) give MLX's NaN bits:
// float32 0x7FF00000 with the code's sign, float16 0x7D00 with it, bfloat16
// 0x7FC0 (sign dropped); float64 the float32 NaN widened.
template <class O>
inline O fp8_e4m3_decode(uint8_t c) {
  const bool neg = c & 0x80;
  if ((c & 0x7F) == 0x7F) {
    if constexpr (std::is_same_v<O, bfloat16_t>) {
      bfloat16_t r;
      r.bits = 0x7FC0;
      return r;
    } else {
      using U = std::conditional_t<sizeof(O) == 2, uint16_t, std::conditional_t<sizeof(O) == 4, uint32_t, uint64_t>>;
      const U bits = sizeof(O) == 2   ? U(neg ? 0xFD00u : 0x7D00u)
                     : sizeof(O) == 4 ? U(neg ? 0xFFF00000u : 0x7FF00000u)
                                      : U(neg ? 0xFFFE000000000000ull : 0x7FFE000000000000ull);
      O r;
      std::memcpy(&r, &bits, sizeof(O));
      return r;
    }
  }
  const int e = (c >> 3) & 15, m = c & 7;
  const float v = e == 0 ? static_cast<float>(m) * 0x1p-9f : std::ldexp(1.0f + static_cast<float>(m) / 8, e - 7);
  return scalar_cast<O>(neg ? -v : v);
}

// ---- binary ----
#define EMBER_FN2(OP, ENABLE, RET, EXPR)      \
  EMBER_FN(OP) {                              \
    template <class T, ENABLE<T> = 0>         \
    RET operator()(T a, T b) const { return EXPR; } \
  };
template <class T>
using if_any = std::enable_if_t<true || sizeof(T), int>;
EMBER_FN2(Add, if_any, T, static_cast<T>(a + b))
EMBER_FN2(Subtract, if_any, T, static_cast<T>(std::is_same_v<T, bool> ? a != b : a - b))
EMBER_FN2(Multiply, if_any, T, static_cast<T>(a * b))
EMBER_FN2(Equal, if_any, bool, a == b)
EMBER_FN2(NotEqual, if_any, bool, a != b)
EMBER_FN2(Less, if_any, bool, lt(a, b))
EMBER_FN2(LessEqual, if_any, bool, !lt(b, a))
EMBER_FN2(Greater, if_any, bool, lt(b, a))
EMBER_FN2(GreaterEqual, if_any, bool, !lt(a, b))
EMBER_FN2(LogicalAnd, if_any, bool, (a != T(0)) && (b != T(0)))
EMBER_FN2(LogicalOr, if_any, bool, (a != T(0)) || (b != T(0)))
EMBER_FN2(BitwiseAnd, if_intbool, T, static_cast<T>(a & b))
EMBER_FN2(BitwiseOr, if_intbool, T, static_cast<T>(a | b))
EMBER_FN2(BitwiseXor, if_intbool, T, static_cast<T>(a ^ b))
EMBER_FN2(ArcTan2, if_real, T, std::atan2(a, b))
#undef EMBER_FN2

EMBER_FN(Divide) {
  template <class T, if_inexact<T> = 0>
  T operator()(T a, T b) const { return a / b; }
  // integer division (used by floor-divide paths): 0 for b == 0, no INT_MIN/-1 trap
  template <class T, if_int<T> = 0>
  T operator()(T a, T b) const {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
    }
    return static_cast<T>(a / b);
  }
};
EMBER_FN(FloorDivide) {
  bool operator()(bool a, bool b) const { return a && b; }
  template <class T, if_real<T> = 0>
  T operator()(T a, T b) const { return std::floor(a / b); }
  template <class T, if_int<T> = 0>
  T operator()(T a, T b) const {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
      T q = static_cast<T>(a / b);
      return static_cast<T>((a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q);
    } else {
      return static_cast<T>(a / b);
    }
  }
};
EMBER_FN(Remainder) {
  // Python's sign convention: the result has the divisor's sign; x % 0 == x
  // for integers, as MLX.
  bool operator()(bool a, bool b) const { return b ? false : a; }
  template <class T, if_real<T> = 0>
  T operator()(T a, T b) const {
    T r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
  template <class T, if_int<T> = 0>
  T operator()(T a, T b) const {
    if constexpr (std::is_signed_v<T>) {
      if (b == 0) return a;
      if (b == -1) return 0;
      T r = static_cast<T>(a % b);
      return static_cast<T>((r != 0 && ((r < 0) != (b < 0))) ? r + b : r);
    } else {
      return b == 0 ? a : static_cast<T>(a % b);
    }
  }
};
EMBER_FN(Power) {
  bool operator()(bool a, bool b) const { return a || !b; }
  template <class T, if_inexact<T> = 0>
  T operator()(T a, T b) const { return std::pow(a, b); }
  template <class T, if_int<T> = 0>
  T operator()(T a, T b) const {
    if constexpr (std::is_signed_v<T>) {
      if (b < 0) return (a == 1) ? T(1) : (a == -1 ? ((b & 1) ? T(-1) : T(1)) : T(0));
    }
    using U = std::make_unsigned_t<T>;
    U r = 1, base = static_cast<U>(a);
    auto e = static_cast<U>(b);
    while (e) {
      if (e & 1) r = static_cast<U>(r * base);
      base = static_cast<U>(base * base);
      e >>= 1;
    }
    return static_cast<T>(r);
  }
};
// NaN propagates (a complex value is NaN when either part is): a NaN a wins,
// else a NaN b, as NumPy. The reductions and scans rely on it (a is the
// earlier operand there).
EMBER_FN(Maximum) {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (is_real_v<T>) return (a > b || a != a) ? a : b;
    else if constexpr (is_complex_v<T>) return c_isnan(a) ? a : (c_isnan(b) || !lt(b, a)) ? b : a;
    else return lt(b, a) ? a : b;
  }
};
EMBER_FN(Minimum) {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (is_real_v<T>) return (a < b || a != a) ? a : b;
    else if constexpr (is_complex_v<T>) return c_isnan(a) ? a : (c_isnan(b) || !lt(a, b)) ? b : a;
    else return lt(a, b) ? a : b;
  }
};
EMBER_FN(LeftShift) {
  template <class T, if_intbool<T> = 0>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && !b;
    else {
      using U = std::make_unsigned_t<T>;
      bool out = b < 0 || static_cast<uint64_t>(b) >= sizeof(T) * 8;
      return out ? T(0) : static_cast<T>(static_cast<U>(a) << b);
    }
  }
};
EMBER_FN(RightShift) {
  template <class T, if_intbool<T> = 0>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && !b;
    else {
      bool out = b < 0 || static_cast<uint64_t>(b) >= sizeof(T) * 8;
      if (out) return (std::is_signed_v<T> && a < 0) ? T(-1) : T(0);
      return static_cast<T>(a >> b);
    }
  }
};
EMBER_FN(LogAddExp) {
  template <class T, if_real<T> = 0>
  T operator()(T a, T b) const {
    T mx = a > b ? a : b, mn = a > b ? b : a;
    if (a != a || b != b) return a + b;  // NaN
    if (mn == -std::numeric_limits<T>::infinity() || mx == std::numeric_limits<T>::infinity()) return mx;
    return mx + m_log1p(m_exp(mn - mx));
  }
  // complex, MLX's form: m = maximum(a, b), n = minimum(a, b) (lexicographic,
  // NaN propagating); m where n == -inf or m == +inf (as complex values),
  // else m + log1p(exp(n - m)) with Re(n - m) <= 0, the imaginary part not
  // wrapped. In double, log1p(w) = log1p(2 Re w + |w|^2) / 2 + i arg(1 + w)
  // keeps a tiny exp(n - m) (a far smaller n) exact.
  complex64_t operator()(complex64_t a, complex64_t b) const {
    const complex64_t m = Fn<op::Maximum>{}(a, b), n = Fn<op::Minimum>{}(a, b);
    constexpr float inf = std::numeric_limits<float>::infinity();
    if (n == complex64_t(-inf) || m == complex64_t(inf)) return m;
    using D = std::complex<double>;
    const D md(m.real(), m.imag());
    const D w = std::exp(D(n.real(), n.imag()) - md);
    const double re = 0.5 * std::log1p(w.real() * 2.0 + std::norm(w));
    const double im = std::atan2(w.imag(), 1.0 + w.real());
    return complex64_t(static_cast<float>(md.real() + re), static_cast<float>(md.imag() + im));
  }
};
EMBER_FN(NaNEqual) {
  template <class T>
  bool operator()(T a, T b) const {
    if constexpr (is_complex_v<T>) {
      return a == b || (Fn<op::IsNaN>{}(a) && Fn<op::IsNaN>{}(b));
    } else if constexpr (is_real_v<T>) {
      return a == b || (a != a && b != b);
    } else {
      return a == b;
    }
  }
};
#undef EMBER_FN

}  // namespace EMBER_ISA_NS
}  // namespace ember::cpu
