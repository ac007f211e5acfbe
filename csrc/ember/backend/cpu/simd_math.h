// simd_math.h — vectorizable transcendental math for the CPU kernels.
//
// What it is: scalar, branch-free, always-inlined implementations of the
// float32 (and some float64) elementary functions, written so that GCC 12
// auto-vectorizes a plain loop over them at -O3 -march=native WITHOUT
// -ffast-math (checked with -fopt-info-vec; Clang untested):
//
//     for (size_t i = 0; i < n; ++i) out[i] = ember::simd::exp(in[i]);
//
// compiles to 8-wide AVX2 code (16-wide with AVX-512, 4-wide SSE) with no
// libm calls. No intrinsics: plain C++17 (bit casts through memcpy, integer
// <-> float conversions, bitwise selects), so it compiles anywhere. Without
// FMA (e.g. a baseline x86-64 build) the code uses separate multiply/add and
// a double-precision argument reduction for sin/cos/tan, with the same
// accuracy bounds; the float64 functions need 64-bit integer vector ops
// (SSE4.2/AVX2) to vectorize.
//
// Functions (namespace ember::simd):
//   float32: exp expm1 log log1p log2 log10 sin cos tan sinh cosh tanh
//            sigmoid erf erfinv atan atan2 asin acos asinh acosh atanh;
//            sin_near cos_near tan_near (|x| <= 6.5e6); scalar: sin_far
//            cos_far tan_far (any |x|, see trig_far)
//   float64: exp log tanh sigmoid sin cos erf (other float64 functions:
//            call std::)
//
// Accuracy (tests/cpp/test_simd_math.cpp; max distance in ulps from the
// correctly rounded result, reference = double (float64: long double) libm;
// "exhaustive" = all 2^32 float32 inputs, measured with FMA):
//   exp 1, expm1 1, log 1, log1p 1, log2 2, log10 2, cosh 1, atan 1,
//   acos 1, erf 1, atan2 1 (random pairs), sin 2, cos 2, tan 3 (|x| <= 6.5e6),
//   tanh 2, sigmoid 2, sinh 2, asin 2, asinh 2, acosh 2, atanh 2
//   — all exhaustive; erfinv 2 (every 3rd input in [0, 1]).
//   float64 (random + sweeps): exp 1, log 1, tanh 1, sigmoid 1, sin 1,
//   cos 1 (|x| <= 1e5), erf 1.
// The promise kernels can rely on: float32 <= 4 ulp, float64 <= 2 ulp.
// Special values follow IEEE/NumPy: NaN -> NaN, +-inf handled, signed zeros
// preserved where libm preserves them, overflow -> inf, underflow -> 0 or
// denormals (exp, sigmoid, erf, ... produce denormals), log(0) = -inf,
// log(x<0) = NaN, erfinv(+-1) = +-inf, NaN outside [-1, 1] for
// asin/acos/atanh/erfinv, acosh(x<1) = NaN, sin/cos/tan(+-inf) = NaN.
//
// sin/cos/tan range: float32 uses Cody-Waite reduction by pi/2 (three float
// parts with FMA, plus a second step fixing the quadrant when float(2/pi)
// rounds it wrong; a two-part double reduction without FMA). The bound holds
// for |x| <= kSinCosAccurateBound = 6.5e6 (every float checked, with and
// without FMA: sin/cos 2 ulp, tan 3 ulp). Beyond 2^22 * pi/2 ~ 6.59e6 the
// reduction is invalid and the result is meaningless but finite and in
// [-1, 1] (tan: finite): callers redo those lanes (trig_far(x)) with
// sin_far/cos_far/tan_far, a scalar exact (Payne-Hanek) reduction valid for
// every float (see the end of the file): 0 ulp from the double libm result
// rounded to float for every positive float (with FMA; beyond the bound
// without), the negative ones mirror them.
// float64 sin/cos: within 1 ulp in random tests up to
// |x| = 1e14 with FMA (~1.6e6 without); beyond, finite and in [-1, 1].
//
// Writing rules (why the code looks the way it does): GCC refuses to
// if-convert `c ? a : b` when the arms are floating-point computations
// (they "may trap" under the default -ftrapping-math) and does not
// vectorize libm calls (sqrt included, because of errno). So every choice is
// a bitwise select on a mask (detail::sel), comparisons only produce masks,
// all branches are computed, and square roots use detail::sqrt_pos. The code
// relies on IEEE semantics: do not compile it with -ffast-math
// (-ffinite-math-only removes the NaN/inf handling, -fassociative-math
// breaks the rounding tricks).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__GNUC__) || defined(__clang__)
#define EMBER_SIMD_INLINE inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define EMBER_SIMD_INLINE __forceinline
#else
#define EMBER_SIMD_INLINE inline
#endif

#if !defined(EMBER_SIMD_FMA)
#if defined(__FMA__) || defined(__aarch64__) || defined(__ARM_FEATURE_FMA) || \
    (defined(_MSC_VER) && defined(__AVX2__))
#define EMBER_SIMD_FMA 1
#else
#define EMBER_SIMD_FMA 0
#endif
#endif

// Each ISA level's kernels get their own copy of these functions, compiled
// for that level (see backend/cpu/isa.h): the inline namespace EMBER_ISA_NS.
#if !defined(EMBER_ISA_NS)
#define EMBER_ISA_NS v2
#endif

namespace ember {
namespace simd {
inline namespace EMBER_ISA_NS {

// |x| up to which sin/cos/tan (float32) meet the 4 ulp bound (exhaustively
// checked, with and without FMA). The reduction breaks down at 2^22 pi/2.
constexpr float kSinCosAccurateBound = 6.5e6f;

namespace detail {

// ---------------------------------------------------------------- bit tools
EMBER_SIMD_INLINE uint32_t as_u(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
EMBER_SIMD_INLINE float as_f(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
EMBER_SIMD_INLINE uint64_t as_u(double x) {
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
EMBER_SIMD_INLINE double as_d(uint64_t u) {
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// all-ones when c, else zero
EMBER_SIMD_INLINE uint32_t mask(bool c) { return 0u - static_cast<uint32_t>(c); }
EMBER_SIMD_INLINE uint64_t mask64(bool c) { return uint64_t(0) - static_cast<uint64_t>(c); }

// m ? a : b, bitwise (vectorizes to and/andn/or or a blend)
EMBER_SIMD_INLINE float sel(uint32_t m, float a, float b) {
  return as_f((as_u(a) & m) | (as_u(b) & ~m));
}
EMBER_SIMD_INLINE double sel(uint64_t m, double a, double b) {
  return as_d((as_u(a) & m) | (as_u(b) & ~m));
}

EMBER_SIMD_INLINE float fabs_(float x) { return as_f(as_u(x) & 0x7fffffffu); }
EMBER_SIMD_INLINE double fabs_(double x) { return as_d(as_u(x) & 0x7fffffffffffffffull); }
// magnitude of a with the sign of s
EMBER_SIMD_INLINE float copysign_(float a, float s) {
  return as_f((as_u(a) & 0x7fffffffu) | (as_u(s) & 0x80000000u));
}
EMBER_SIMD_INLINE double copysign_(double a, double s) {
  return as_d((as_u(a) & 0x7fffffffffffffffull) | (as_u(s) & 0x8000000000000000ull));
}
EMBER_SIMD_INLINE uint32_t signmask(float x) {
  return static_cast<uint32_t>(static_cast<int32_t>(as_u(x)) >> 31);
}
// min(a, b) for a >= 0 (or NaN: gives b) and finite b > 0, compared as
// integers (non-negative floats order as their bits): one unsigned min at
// every level, where a float select takes two ops and a float ternary does
// not vectorize below AVX-512
EMBER_SIMD_INLINE float min_nonneg(float a, float b) {
  const uint32_t x = as_u(a), y = as_u(b);
  return as_f(x < y ? x : y);
}

// a*b + c (fused when the target has FMA)
EMBER_SIMD_INLINE float mad(float a, float b, float c) {
#if EMBER_SIMD_FMA && (defined(__GNUC__) || defined(__clang__))
  return __builtin_fmaf(a, b, c);
#elif EMBER_SIMD_FMA
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}
EMBER_SIMD_INLINE double mad(double a, double b, double c) {
#if EMBER_SIMD_FMA && (defined(__GNUC__) || defined(__clang__))
  return __builtin_fma(a, b, c);
#elif EMBER_SIMD_FMA
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// 2^n for n in [-126, 127] (float), [-1022, 1023] (double)
EMBER_SIMD_INLINE float pow2i(int32_t n) {
  return as_f(static_cast<uint32_t>(n + 127) << 23);
}
EMBER_SIMD_INLINE double pow2i64(int64_t n) {
  return as_d(static_cast<uint64_t>(n + 1023) << 52);
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kInfD = std::numeric_limits<double>::infinity();
constexpr double kNaND = std::numeric_limits<double>::quiet_NaN();

// Round-to-nearest through the 1.5*2^23 shifter: valid for |x| < 2^22.
constexpr float kShifter = 0x1.8p23f;
constexpr double kShifterD = 0x1.8p52;

// ln2 split: hi has 15 significant bits (n * hi exact for |n| < 512)
constexpr float kLn2Hi = 0x1.62e4p-1f;
constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
constexpr float kLn2 = 0x1.62e430p-1f;
constexpr float kLog2e = 0x1.715476p+0f;
constexpr float kLog2eLo = 0x1.4ae0c0p-26f;
constexpr float kLog10_2Hi = 0x1.344p-2f;
constexpr float kLog10_2Lo = 0x1.3509f8p-18f;
constexpr float kLog10e = 0x1.bcb7b2p-2f;
constexpr float kLog10eLo = -0x1.5b235ep-27f;
constexpr float kPio2Hi = 0x1.921fb6p+0f;
constexpr float kPio2Lo = -0x1.777a5cp-25f;
constexpr float kPiHi = 0x1.921fb6p+1f;
constexpr float kPiLo = -0x1.777a5cp-24f;
constexpr float k2OverPi = 0x1.45f306p-1f;

// ------------------------------------------------------------- exp kernel
// x = n*ln2 + r, |r| <= ln2/2 (+tiny); returns expm1(r), sets n. The caller
// clamps x so that |n| < 2^8 (and passes NaN through: q is NaN then).
EMBER_SIMD_INLINE float expm1_kernel(float x, int32_t& n) {
  const float t = mad(x, kLog2e, kShifter);
  n = static_cast<int32_t>(as_u(t) - as_u(kShifter));
  const float nf = t - kShifter;
  float r = mad(-nf, kLn2Hi, x);  // exact (n*kLn2Hi exact, Sterbenz)
  r = mad(-nf, kLn2Lo, r);
  // expm1(r) = r + r^2 P(r), minimax on [-ln2/2, ln2/2], rel. err 2.4e-10
  float p = 0x1.a032dep-13f;
  p = mad(p, r, 0x1.6d73e6p-10f);
  p = mad(p, r, 0x1.11118ap-7f);
  p = mad(p, r, 0x1.5554b0p-5f);
  p = mad(p, r, 0x1.555554p-3f);
  p = mad(p, r, 0x1.0p-1f);
  return mad(r * r, p, r);
}

// (1+q) * 2^n for n in [-151, 129] without intermediate over/underflow
// (one rounding when the result is denormal).
EMBER_SIMD_INLINE float scale2(float v, int32_t n) {
  const int32_t n1 = n >> 1;
  const int32_t n2 = n - n1;
  return (v * pow2i(n1)) * pow2i(n2);
}

// exp(x) for x in [-87, 88] (normal results, no special values): no
// clamping, the exponent goes straight into the bits
EMBER_SIMD_INLINE float exp_normal(float x) {
  int32_t n;
  const float q = expm1_kernel(x, n);
  return as_f(as_u(1.0f + q) + (static_cast<uint32_t>(n) << 23));
}

// ------------------------------------------------------------- log kernel
// log1p(f) for f in [sqrt(1/2)-1, sqrt(2)-1]: f - f^2/2 + f^3 P(f),
// minimax, rel. err 6e-9.
EMBER_SIMD_INLINE float log1p_kernel(float f) {
  float p = -0x1.392f3cp-4f;
  p = mad(p, f, 0x1.05b75ep-3f);
  p = mad(p, f, -0x1.0d9a3ep-3f);
  p = mad(p, f, 0x1.22cf4cp-3f);
  p = mad(p, f, -0x1.546f2ap-3f);
  p = mad(p, f, 0x1.99a060p-3f);
  p = mad(p, f, -0x1.000232p-2f);
  p = mad(p, f, 0x1.555554p-2f);
  p = mad(p, f, -0.5f);
  return mad(f * f, p, f);
}

// Split x > 0 (finite, denormals allowed) as x = m * 2^e, m in
// [sqrt(1/2), sqrt(2)); returns f = m - 1 (exact), sets e.
EMBER_SIMD_INLINE float log_split(float x, int32_t& e) {
  const uint32_t den = mask(x < 0x1p-126f);
  const float xs = sel(den, x * 0x1p23f, x);
  const uint32_t u = as_u(xs) + (0x3f800000u - 0x3f3504f3u);
  e = static_cast<int32_t>(u >> 23) - 127 - static_cast<int32_t>(den & 23u);
  return as_f((u & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
}

// log result fix-ups: NaN/negative -> NaN, 0 -> -inf, +inf -> +inf
EMBER_SIMD_INLINE float log_special(float x, float r) {
  r = sel(mask(x == kInf), kInf, r);
  r = sel(mask(x == 0.0f), -kInf, r);
  r = sel(mask(x < 0.0f) | mask(x != x), kNaN, r);
  return r;
}

// ---------------------------------------------------------------- sqrt
// sqrt(x) for x >= 0 normal (or 0), finite: rsqrt seed + 2 Newton steps +
// a final residual correction; <= 1 ulp (correctly rounded almost always
// with FMA).
EMBER_SIMD_INLINE float sqrt_pos(float x) {
  float y = as_f(0x5f375a86u - (as_u(x) >> 1));
  const float hx = 0.5f * x;
  y = y * mad(-hx * y, y, 1.5f);
  y = y * mad(-hx * y, y, 1.5f);
  const float s = x * y;
  const float res = mad(-s, s, x);
  return mad(0.5f * y, res, s);
}

// ---------------------------------------------------------- sin/cos kernel
// Reduce x by pi/2: returns r in ~[-pi/4, pi/4] and the quadrant q (low 2
// bits meaningful). Bounded: |x| beyond kSinCosAccurateBound, where the
// reduction is invalid, still gives |r| <= 0.8 (callers that redo those
// lanes leave that out).
template <bool Bounded>
EMBER_SIMD_INLINE float trig_reduce(float x, int32_t& q) {
#if EMBER_SIMD_FMA
  const float t = mad(x, k2OverPi, kShifter);
  q = static_cast<int32_t>(as_u(t) - as_u(kShifter));
  const float nf = t - kShifter;
  float r = mad(-nf, 0x1.921fb6p+0f, x);  // exact
  r = mad(-nf, -0x1.777a5cp-25f, r);
  r = mad(-nf, -0x1.ee59dap-50f, r);
  // float(2/pi) is off by 2^-25 relative: for |x| > ~1e5 n can be off by
  // one (|r| up to ~1); a second step brings r back into [-pi/4, pi/4].
  const float t1 = mad(r, k2OverPi, kShifter);
  q += static_cast<int32_t>(as_u(t1) - as_u(kShifter));
  const float n1 = t1 - kShifter;
  r = mad(-n1, 0x1.921fb6p+0f, r);  // exact (Sterbenz)
  r = mad(-n1, -0x1.777a5cp-25f, r);
#else
  const double xd = static_cast<double>(x);
  const double t = xd * 0x1.45f306dc9c883p-1 + kShifterD;
  const double nd = t - kShifterD;
  // quadrant through a float (keeps the integer work 32-bit wide)
  q = static_cast<int32_t>(as_u(static_cast<float>(nd) + kShifter) - as_u(kShifter));
  double rd = xd - nd * 0x1.921fb54400000p+0;  // exact for |n| < 2^22
  rd = rd - nd * 0x1.0b4611a626331p-34;
  float r = static_cast<float>(rd);
#endif
  // Only reached with huge |x| (reduction invalid): keep the result bounded.
  if constexpr (Bounded) r = sel(mask(fabs_(r) > 0.8f), 0.5f, r);
  return r;
}
// sin(r) = r + r^3 S(r^2), |r| <= pi/4, rel. err 3.8e-9
EMBER_SIMD_INLINE float sin_kernel(float r, float r2) {
  float p = -0x1.993f6ep-13f;
  p = mad(p, r2, 0x1.11072ep-7f);
  p = mad(p, r2, -0x1.555546p-3f);
  return mad(r * r2, p, r);
}
// cos(r) = 1 - r^2/2 + r^4 C(r^2), |r| <= pi/4, rel. err 1.2e-10
EMBER_SIMD_INLINE float cos_kernel(float r2) {
  float p = 0x1.99e78ap-16f;
  p = mad(p, r2, -0x1.6c0c26p-10f);
  p = mad(p, r2, 0x1.55554ap-5f);
  p = mad(p, r2, -0.5f);
  return mad(p, r2, 1.0f);
}

// asin(s) = s + s^3 P(s^2), s in [0, 1/2], rel. err 5e-9; z = s^2
EMBER_SIMD_INLINE float asin_kernel(float s, float z) {
  float p = 0x1.5a67d8p-5f;
  p = mad(p, z, 0x1.8b13b8p-6f);
  p = mad(p, z, 0x1.749846p-5f);
  p = mad(p, z, 0x1.3300f2p-4f);
  p = mad(p, z, 0x1.5555ccp-3f);
  return mad(s * z, p, s);
}

// atan(t) = t + t^3 P(t^2), t in [0, 1], rel. err 2.6e-9
EMBER_SIMD_INLINE float atan_kernel(float t) {
  const float z = t * t;
  float p = -0x1.d3b974p-10f;
  p = mad(p, z, 0x1.645a5ep-7f);
  p = mad(p, z, -0x1.fdafb4p-6f);
  p = mad(p, z, 0x1.da4298p-5f);
  p = mad(p, z, -0x1.581016p-4f);
  p = mad(p, z, 0x1.c08e98p-4f);
  p = mad(p, z, -0x1.2420bap-3f);
  p = mad(p, z, 0x1.9991e8p-3f);
  p = mad(p, z, -0x1.55553ep-2f);
  return mad(t * z, p, t);
}

// log1p for x > -1 finite (no special-value handling)
EMBER_SIMD_INLINE float log1p_core(float x) {
  // u = 1 + x exactly as u + c (TwoSum)
  const float u = 1.0f + x;
  const float bb = u - x;
  const float c = (1.0f - bb) + (x - (u - bb));
  int32_t e;
  float f = log_split(u, e);
  const uint32_t e0 = mask(e == 0);
  f = sel(e0, x, f);  // |x| small: use x itself (exact)
  const float corr = sel(e0, 0.0f, c / u);
  const float ef = static_cast<float>(e);
  const float y = log1p_kernel(f) + corr;
  return mad(ef, kLn2Hi, mad(ef, kLn2Lo, y));
}

}  // namespace detail

// ====================================================================
// float32
// ====================================================================

EMBER_SIMD_INLINE float exp(float x) {
  using namespace detail;
  float xc = sel(mask(x > 89.0f), 89.0f, x);
  xc = sel(mask(xc < -104.0f), -104.0f, xc);
  int32_t n;
  const float q = expm1_kernel(xc, n);
  return scale2(1.0f + q, n);
}

EMBER_SIMD_INLINE float expm1(float x) {
  using namespace detail;
  float xc = sel(mask(x > 89.0f), 89.0f, x);
  xc = sel(mask(xc < -18.0f), -18.0f, xc);
  int32_t n;
  const float q = expm1_kernel(xc, n);  // n in [-26, 128]
  // expm1(x) = 2^n q + 2^n - 1 = 2 * (t q + (t - 1/2)), t = 2^(n-1)
  const float t = pow2i(n - 1);
  float r = 2.0f * mad(t, q, t - 0.5f);
  r = sel(mask(fabs_(x) < 0x1p-25f), x, r);  // tiny (and +-0): expm1(x) = x
  return r;
}

EMBER_SIMD_INLINE float log(float x) {
  using namespace detail;
  int32_t e;
  const float f = log_split(x, e);
  const float y = log1p_kernel(f);
  const float ef = static_cast<float>(e);
  return log_special(x, mad(ef, kLn2Hi, mad(ef, kLn2Lo, y)));
}

EMBER_SIMD_INLINE float log2(float x) {
  using namespace detail;
  int32_t e;
  const float f = log_split(x, e);
  const float y = log1p_kernel(f);
  const float ef = static_cast<float>(e);
  return log_special(x, mad(y, kLog2e, mad(y, kLog2eLo, ef)));
}

EMBER_SIMD_INLINE float log10(float x) {
  using namespace detail;
  int32_t e;
  const float f = log_split(x, e);
  const float y = log1p_kernel(f);
  const float ef = static_cast<float>(e);
  const float lo = mad(y, kLog10eLo, ef * kLog10_2Lo);
  return log_special(x, mad(ef, kLog10_2Hi, mad(y, kLog10e, lo)));
}

EMBER_SIMD_INLINE float log1p(float x) {
  using namespace detail;
  float r = log1p_core(x);
  r = sel(mask(x == kInf), kInf, r);
  r = sel(mask(x == -1.0f), -kInf, r);
  r = sel(mask(x < -1.0f) | mask(x != x), kNaN, r);
  r = sel(mask(x == 0.0f), x, r);
  return r;
}

namespace detail {
// sin, cos, tan; Guarded: also right (bounded, NaN for +-inf) beyond
// kSinCosAccurateBound, else right for |x| <= kSinCosAccurateBound and NaN
// only (the public *_near functions).
template <bool Guarded>
EMBER_SIMD_INLINE float sin_impl(float x) {
  int32_t q;
  const float r = trig_reduce<Guarded>(x, q);
  const float r2 = r * r;
  const float s = sin_kernel(r, r2);
  const float c = cos_kernel(r2);
  float res = sel(mask((q & 1) != 0), c, s);
  res = as_f(as_u(res) ^ (static_cast<uint32_t>(q & 2) << 30));
  res = sel(mask(x == 0.0f), x, res);
  if constexpr (Guarded) res = sel(mask(fabs_(x) == kInf), kNaN, res);
  return res;
}
template <bool Guarded>
EMBER_SIMD_INLINE float cos_impl(float x) {
  int32_t q;
  const float r = trig_reduce<Guarded>(x, q);
  const float r2 = r * r;
  const float s = sin_kernel(r, r2);
  const float c = cos_kernel(r2);
  // cos(x) = sin(x + pi/2): quadrant q + 1
  q = q + 1;
  float res = sel(mask((q & 1) != 0), c, s);
  res = as_f(as_u(res) ^ (static_cast<uint32_t>(q & 2) << 30));
  if constexpr (Guarded) res = sel(mask(fabs_(x) == kInf), kNaN, res);
  return res;
}
template <bool Guarded>
EMBER_SIMD_INLINE float tan_impl(float x) {
  int32_t q;
  const float r = trig_reduce<Guarded>(x, q);
  const float z = r * r;
  // tan(r) = r + r^3 T(r^2), |r| <= pi/4, rel. err 1.3e-9
  float p = 0x1.1fb48cp-8f;
  p = mad(p, z, 0x1.058d14p-14f);
  p = mad(p, z, 0x1.63c052p-7f);
  p = mad(p, z, 0x1.5c8f34p-6f);
  p = mad(p, z, 0x1.badef0p-5f);
  p = mad(p, z, 0x1.110d7ep-3f);
  p = mad(p, z, 0x1.555560p-2f);
  const float t = mad(r * z, p, r);
  const uint32_t odd = mask((q & 1) != 0);
  // odd quadrant: -1/t (one division, shared operands)
  float res = sel(odd, -1.0f, t) / sel(odd, t, 1.0f);
  res = sel(mask(x == 0.0f), x, res);
  if constexpr (Guarded) res = sel(mask(fabs_(x) == kInf), kNaN, res);
  return res;
}
}  // namespace detail

EMBER_SIMD_INLINE float sin(float x) { return detail::sin_impl<true>(x); }
EMBER_SIMD_INLINE float cos(float x) { return detail::cos_impl<true>(x); }
EMBER_SIMD_INLINE float tan(float x) { return detail::tan_impl<true>(x); }
// The same for |x| <= kSinCosAccurateBound and NaN only, without the guards
// of larger |x| (two selects fewer): for callers that redo the lanes where
// trig_far(x) holds (infinities included) with sin_far & co.
EMBER_SIMD_INLINE float sin_near(float x) { return detail::sin_impl<false>(x); }
EMBER_SIMD_INLINE float cos_near(float x) { return detail::cos_impl<false>(x); }
EMBER_SIMD_INLINE float tan_near(float x) { return detail::tan_impl<false>(x); }

EMBER_SIMD_INLINE float tanh(float x) {
  using namespace detail;
  float a = fabs_(x);
  a = sel(mask(a > 9.5f), 9.5f, a);  // tanh rounds to 1 beyond 9.01 (NaN stays)
  // em = expm1(2a) for 2a in [0, 19]: expm1's clamps and tiny-input case are
  // not needed (the kernel returns 2a itself where 2a < 2^-25): the same bits
  int32_t n;
  const float q = expm1_kernel(2.0f * a, n);
  const float t = pow2i(n - 1);
  const float em = 2.0f * mad(t, q, t - 0.5f);
  return copysign_(em / (em + 2.0f), x);
}

// 1 / (1 + exp(-x)), accurate for large |x| (denormal results for x < -87)
EMBER_SIMD_INLINE float sigmoid(float x) {
  using namespace detail;
  // e = exp(-|x|) in (0, 1] as exp computes it (n in [-151, 0]), with one
  // clamp instead of two and 2^n (1 + q) formed as ((1 + q) 2^(n+64)) 2^-64:
  // exact where e is normal, one rounding where it is denormal (as scale2)
  float y = -fabs_(x);
  y = sel(mask(y < -104.0f), -104.0f, y);  // NaN stays
  int32_t n;
  const float q = expm1_kernel(y, n);
  const float e = ((1.0f + q) * pow2i(n + 64)) * 0x1p-64f;
  return sel(signmask(x), e, 1.0f) / (1.0f + e);
}

EMBER_SIMD_INLINE float sinh(float x) {
  using namespace detail;
  float a = fabs_(x);
  a = sel(mask(a > 90.0f), 90.0f, a);
  int32_t n;
  const float q = expm1_kernel(a, n);  // n in [0, 130]
  // a < 1: em = expm1(a), sinh = (em + em/(em+1)) / 2
  const float t = pow2i((n < 2 ? n : 2) - 1);
  const float em = 2.0f * mad(t, q, t - 0.5f);
  // a >= 1: c1 = e^a / 2, sinh = c1 - 0.25 / c1
  const float c1 = scale2(1.0f + q, n - 1);
  const uint32_t small = mask(a < 1.0f);
  const float d = sel(small, em, 0.25f) / sel(small, em + 1.0f, c1);
  const float res = sel(small, 0.5f * (em + d), c1 - d);
  return copysign_(res, x);
}

EMBER_SIMD_INLINE float cosh(float x) {
  using namespace detail;
  float a = fabs_(x);
  a = sel(mask(a > 90.0f), 90.0f, a);
  int32_t n;
  const float q = expm1_kernel(a, n);
  const float c1 = scale2(1.0f + q, n - 1);  // e^a / 2
  return c1 + 0.25f / c1;
}

EMBER_SIMD_INLINE float erf(float x) {
  using namespace detail;
  const float a = fabs_(x);
  const uint32_t big = mask(a >= 1.0f);
  // Both branches are evaluated, and neither needs exp: ~30 vector ops.
  // small: erf(a) = a + a P(a^2) on [0, 1], rel. err 2.8e-9 (the final FMA
  // adds a to the small product a P, so the result is rounded once)
  const float a2 = a * a;
  float ps = 0x1.496b98p-14f;
  ps = mad(ps, a2, -0x1.a3f792p-11f);
  ps = mad(ps, a2, 0x1.5405c8p-8f);
  ps = mad(ps, a2, -0x1.b7f910p-6f);
  ps = mad(ps, a2, 0x1.ce2cf8p-4f);
  ps = mad(ps, a2, -0x1.81273ep-2f);
  ps = mad(ps, a2, 0x1.06eba8p-3f);
  // big: erf(a) = 1 - Q(v), v = a - 2.5 (exact) on [1, 4], Q a degree-14
  // minimax fit of erfc (abs. err 1e-8, so 1 - Q is off by < 0.2 ulp before
  // its rounding). erf rounds to 1 beyond 3.92: a is clamped to 4 (NaN lanes
  // take the small branch). Q is split into even and odd halves in v^2:
  // two chains of 7 FMAs instead of one of 14, for the out-of-order core.
  const float ac = min_nonneg(a, 4.0f);
  const float v = ac - 2.5f;
  const float v2 = v * v;
  float qe = -0x1.e11b9cp-21f;
  qe = mad(qe, v2, 0x1.088af0p-16f);
  qe = mad(qe, v2, -0x1.54d08cp-14f);
  qe = mad(qe, v2, -0x1.0f096ep-12f);
  qe = mad(qe, v2, 0x1.6ea776p-9f);
  qe = mad(qe, v2, 0x1.1a8c54p-7f);
  qe = mad(qe, v2, 0x1.64e34cp-8f);
  qe = mad(qe, v2, 0x1.aab87cp-12f);
  float qo = -0x1.11726ep-21f;
  qo = mad(qo, v2, -0x1.28a66ap-16f);
  qo = mad(qo, v2, 0x1.1b8870p-12f);
  qo = mad(qo, v2, -0x1.25a28cp-11f);
  qo = mad(qo, v2, -0x1.906118p-8f);
  qo = mad(qo, v2, -0x1.11ab44p-7f);
  qo = mad(qo, v2, -0x1.1d7feap-9f);
  const float q = mad(qo, v, qe);
  const float res = sel(big, 1.0f - q, mad(a, ps, a));
  return copysign_(res, x);
}

EMBER_SIMD_INLINE float erfinv(float x) {
  using namespace detail;
  const float a = fabs_(x);
#if EMBER_SIMD_FMA
  const float omx2 = mad(-a, a, 1.0f);
#else
  const float omx2 = (1.0f - a) * (1.0f + a);
#endif
  // w = -log(1 - x^2) in [0, 16] for |x| < 1
  int32_t e;
  const float oc = sel(mask(omx2 > 0.0f), omx2, 1.0f);
  const float f = log_split(oc, e);
  const float ef = static_cast<float>(e);
  const float w = -mad(ef, kLn2Hi, mad(ef, kLn2Lo, log1p_kernel(f)));
  // erfinv(x) = x P(w) for w < 5, x Q(sqrt(w) - 3.1613) for w >= 5 (both
  // evaluated, then selected)
  const uint32_t big = mask(w >= 5.0f);
  float pc = -0x1.2e0e86p-27f;
  pc = mad(pc, w, 0x1.daa8b0p-23f);
  pc = mad(pc, w, -0x1.09469ep-19f);
  pc = mad(pc, w, 0x1.0b4f50p-18f);
  pc = mad(pc, w, 0x1.75d726p-15f);
  pc = mad(pc, w, -0x1.0b593ap-13f);
  pc = mad(pc, w, -0x1.31f5fap-9f);
  pc = mad(pc, w, 0x1.7a6d22p-7f);
  pc = mad(pc, w, 0x1.db2a10p-3f);
  pc = mad(pc, w, 0x1.c5bf88p-1f);
  const float v = sqrt_pos(w) - 0x1.94a5fep+1f;
  float pt = 0x1.e54be4p-14f;
  pt = mad(pt, v, -0x1.28eeeep-13f);
  pt = mad(pt, v, -0x1.6ccb1cp-12f);
  pt = mad(pt, v, 0x1.4410d4p-10f);
  pt = mad(pt, v, -0x1.276d1cp-9f);
  pt = mad(pt, v, 0x1.b64260p-9f);
  pt = mad(pt, v, -0x1.396868p-8f);
  pt = mad(pt, v, 0x1.aa0c74p-8f);
  pt = mad(pt, v, 0x1.0113eep+0f);
  pt = mad(pt, v, 0x1.7f54f2p+1f);
  const float p = sel(big, pt, pc);
  float res = a * p;
  res = sel(mask(a == 1.0f), kInf, res);
  res = sel(mask(a > 1.0f) | mask(x != x), kNaN, res);
  return copysign_(res, x);
}

EMBER_SIMD_INLINE float atan(float x) {
  using namespace detail;
  const float a = fabs_(x);
  const uint32_t inv = mask(a > 1.0f);
  const float t = sel(inv, 1.0f / a, a);
  const float p = atan_kernel(t);
  // a > 1: pi/2 - atan(1/a)
  const float res = sel(inv, (kPio2Lo - p) + kPio2Hi, p);
  return copysign_(res, x);
}

EMBER_SIMD_INLINE float atan2(float y, float x) {
  using namespace detail;
  const float ax = fabs_(x), ay = fabs_(y);
  const uint32_t swap = mask(ay > ax);
  const float num = sel(swap, ax, ay);
  const float den = sel(swap, ay, ax);
  float t = num / den;
  t = sel(mask(den == 0.0f), 0.0f, t);              // atan2(+-0, +-0)
  t = sel(mask(num == kInf), 1.0f, t);              // both infinite
  const float p = atan_kernel(t);
  // result = base + sgn * p, base in {0, pi/2, pi}
  const uint32_t xneg = signmask(x);
  const float base_hi = sel(swap, kPio2Hi, sel(xneg, kPiHi, 0.0f));
  const float base_lo = sel(swap, kPio2Lo, sel(xneg, kPiLo, 0.0f));
  // sgn = -1 for (swap && x >= 0) or (!swap && x < 0)
  const uint32_t neg = swap ^ xneg;
  const float sp = as_f(as_u(p) ^ (neg & 0x80000000u));
  float res = (base_lo + sp) + base_hi;
  res = copysign_(res, y);
  res = sel(mask(x != x) | mask(y != y), kNaN, res);
  return res;
}

EMBER_SIMD_INLINE float asin(float x) {
  using namespace detail;
  const float a = fabs_(x);
  const uint32_t big = mask(a > 0.5f);
  const float z = sel(big, 0.5f * (1.0f - a), a * a);
  const float zc = sel(mask(z < 0.0f), 0.0f, z);  // |x| > 1: NaN below
  const float s = sel(big, sqrt_pos(zc), a);
  const float p = asin_kernel(s, zc);
  float res = sel(big, kPio2Hi + (kPio2Lo - 2.0f * p), p);
  res = sel(mask(a > 1.0f) | mask(x != x), kNaN, res);
  return copysign_(res, x);
}

EMBER_SIMD_INLINE float acos(float x) {
  using namespace detail;
  const float a = fabs_(x);
  const uint32_t big = mask(a > 0.5f);
  const float z = sel(big, 0.5f * (1.0f - a), a * a);
  const float zc = sel(mask(z < 0.0f), 0.0f, z);
  const float s = sel(big, sqrt_pos(zc), a);
  const float p = asin_kernel(s, zc);
  const uint32_t xneg = signmask(x);
  // |x| <= 1/2: pi/2 - asin(x); x > 1/2: 2p; x < -1/2: pi - 2p
  const float term = sel(big, as_f(as_u(2.0f * p) ^ (xneg & 0x80000000u)),
                         as_f(as_u(p) ^ (~xneg & 0x80000000u)));
  const float base_hi = sel(big, sel(xneg, kPiHi, 0.0f), kPio2Hi);
  const float base_lo = sel(big, sel(xneg, kPiLo, 0.0f), kPio2Lo);
  float res = (base_lo + term) + base_hi;
  res = sel(mask(a > 1.0f) | mask(x != x), kNaN, res);
  return res;
}

EMBER_SIMD_INLINE float asinh(float x) {
  using namespace detail;
  const float a = fabs_(x);
  const uint32_t big = mask(a > 0x1p26f);
  const float ac = sel(big, 1.0f, a);
  const float a2 = ac * ac;
  // asinh(a) = log1p(a + a^2 / (1 + sqrt(1 + a^2))); huge a: log(a) + ln2
  const float v = sel(big, a, ac + a2 / (1.0f + sqrt_pos(1.0f + a2)));
  float res = log1p_core(v) + sel(big, kLn2, 0.0f);
  res = sel(mask(a == kInf), kInf, res);
  res = sel(mask(a < 0x1p-12f), a, res);  // asinh(a) = a - a^3/6 rounds to a
  return copysign_(res, x);
}

EMBER_SIMD_INLINE float acosh(float x) {
  using namespace detail;
  const uint32_t big = mask(x > 0x1p26f);
  const float xc = sel(big, 1.0f, sel(mask(x < 1.0f), 1.0f, x));
  const float t = xc - 1.0f;
  // acosh(x) = log1p(t + sqrt(t (t + 2))); huge x: log(x) + ln2
  const float v = sel(big, x, t + sqrt_pos(t * (t + 2.0f)));
  float res = log1p_core(v) + sel(big, kLn2, 0.0f);
  res = sel(mask(x == kInf), kInf, res);
  res = sel(mask(x < 1.0f) | mask(x != x), kNaN, res);
  return res;
}

EMBER_SIMD_INLINE float atanh(float x) {
  using namespace detail;
  const float a = fabs_(x);
  // atanh(a) = log1p(2a / (1 - a)) / 2
  const float v = (2.0f * a) / (1.0f - a);
  const float vc = sel(mask(v > 0x1p127f) | mask(v < 0.0f), 1.0f, v);
  float res = 0.5f * log1p_core(vc);
  res = sel(mask(a == 1.0f), kInf, res);
  res = sel(mask(a > 1.0f) | mask(x != x), kNaN, res);
  res = sel(mask(a < 0x1p-12f), a, res);
  return copysign_(res, x);
}

// ====================================================================
// float64 (exp, log, tanh, sigmoid, sin, cos, erf). Integer work stays in
// uint64 bit patterns with logical shifts: AVX2 has no 64-bit arithmetic
// shift nor int64 <-> double conversion.
// ====================================================================

namespace detail {

constexpr double kLn2HiD = 0x1.62e42fefa3800p-1;  // 42 bits: n * hi exact
constexpr double kLn2LoD = 0x1.ef35793c76730p-45;
constexpr double kLog2eD = 0x1.71547652b82fep+0;

// small signed integer (|n| < 2^51) held in an int64 -> double
EMBER_SIMD_INLINE double i64_to_f64(int64_t n) {
  return as_d(as_u(kShifterD) + static_cast<uint64_t>(n)) - kShifterD;
}

// x = n ln2 + r, returns expm1(r) (Taylor to r^13, rel. err < 2e-17);
// the rounding error of r is folded back in
EMBER_SIMD_INLINE double expm1_kernel(double x, int64_t& n, double& rr, double& ww) {
  const double t = mad(x, kLog2eD, kShifterD);
  n = static_cast<int64_t>(as_u(t) - as_u(kShifterD));
  const double nf = t - kShifterD;
  const double rhi = mad(-nf, kLn2HiD, x);  // exact
  const double r = mad(-nf, kLn2LoD, rhi);
  const double c = mad(-nf, kLn2LoD, rhi - r);  // r + c = rhi - n ln2lo
  double p = 0x1.6124613a86d09p-33;
  p = mad(p, r, 0x1.1eed8eff8d898p-29);
  p = mad(p, r, 0x1.ae64567f544e4p-26);
  p = mad(p, r, 0x1.27e4fb7789f5cp-22);
  p = mad(p, r, 0x1.71de3a556c734p-19);
  p = mad(p, r, 0x1.a01a01a01a01ap-16);
  p = mad(p, r, 0x1.a01a01a01a01ap-13);
  p = mad(p, r, 0x1.6c16c16c16c17p-10);
  p = mad(p, r, 0x1.1111111111111p-7);
  p = mad(p, r, 0x1.5555555555555p-5);
  p = mad(p, r, 0x1.5555555555555p-3);
  p = mad(p, r, 0.5);
  const double w = mad(r * r, p, c);  // expm1(r + c) = r + w (+ c (e^r - 1), negligible)
  rr = r;
  ww = w;
  return r + w;
}
EMBER_SIMD_INLINE double expm1_kernel(double x, int64_t& n) {
  double r, w;
  return expm1_kernel(x, n, r, w);
}

// v * 2^n for n in [-1100, 1100] without intermediate over/underflow
EMBER_SIMD_INLINE double scale2(double v, int64_t n) {
  const int64_t n1 = static_cast<int64_t>(static_cast<uint64_t>(n + 4096) >> 1) - 2048;
  const int64_t n2 = n - n1;
  return (v * pow2i64(n1)) * pow2i64(n2);
}

// sin/cos argument reduction by pi/2 (three-part pi/2 with FMA)
EMBER_SIMD_INLINE double trig_reduce(double x, int64_t& q) {
  const double t = mad(x, 0x1.45f306dc9c883p-1, kShifterD);
  q = static_cast<int64_t>(as_u(t) - as_u(kShifterD));
  const double nf = t - kShifterD;
#if EMBER_SIMD_FMA
  double r = mad(-nf, 0x1.921fb54442d18p+0, x);
  r = mad(-nf, 0x1.1a62633145c07p-54, r);
  r = mad(-nf, -0x1.f1976b7ed8fbcp-110, r);
#else
  double r = x - nf * 0x1.921fb54400000p+0;  // exact for |n| < 2^20
  r = r - nf * 0x1.0b4611a600000p-34;
  r = r - nf * 0x1.3198a2e037073p-69;
#endif
  r = sel(mask64(fabs_(r) > 0.8), 0.5, r);  // invalid reduction (huge |x|)
  return r;
}
// sin(r), cos(r) for |r| <= pi/4 (Taylor, rel. err < 1e-19 / 2e-18)
EMBER_SIMD_INLINE double sin_kernel(double r, double z) {
  double p = 0x1.952c77030ad4ap-49;
  p = mad(p, z, -0x1.ae7f3e733b81fp-41);
  p = mad(p, z, 0x1.6124613a86d09p-33);
  p = mad(p, z, -0x1.ae64567f544e4p-26);
  p = mad(p, z, 0x1.71de3a556c734p-19);
  p = mad(p, z, -0x1.a01a01a01a01ap-13);
  p = mad(p, z, 0x1.1111111111111p-7);
  p = mad(p, z, -0x1.5555555555555p-3);
  return mad(r * z, p, r);
}
EMBER_SIMD_INLINE double cos_kernel(double z) {
  double p = 0x1.ae7f3e733b81fp-45;
  p = mad(p, z, -0x1.93974a8c07c9dp-37);
  p = mad(p, z, 0x1.1eed8eff8d898p-29);
  p = mad(p, z, -0x1.27e4fb7789f5cp-22);
  p = mad(p, z, 0x1.a01a01a01a01ap-16);
  p = mad(p, z, -0x1.6c16c16c16c17p-10);
  p = mad(p, z, 0x1.5555555555555p-5);
  // 1 - z/2 + z^2 p, with 1 - z/2 split for accuracy
  const double hz = 0.5 * z;
  const double w = 1.0 - hz;
  return w + (((1.0 - w) - hz) + z * z * p);
}

// num / (a + b) with a + b not rounded first (a >= 0, b > 0): one
// division plus a residual correction, ~0.5 ulp
EMBER_SIMD_INLINE double div_exact_den(double num, double a, double b) {
  const double d = a + b;
  const double bb = d - a;
  const double derr = (a - (d - bb)) + (b - bb);  // TwoSum: a + b = d + derr
  const double inv = 1.0 / d;
  const double y = num * inv;
  const double r = mad(-y, d, num) - y * derr;
  return mad(r, inv, y);
}

}  // namespace detail

EMBER_SIMD_INLINE double exp(double x) {
  using namespace detail;
  double xc = sel(mask64(x > 710.0), 710.0, x);
  xc = sel(mask64(xc < -746.0), -746.0, xc);
  int64_t n;
  const double q = expm1_kernel(xc, n);  // n in [-1077, 1025]
  return scale2(1.0 + q, n);
}

EMBER_SIMD_INLINE double log(double x) {
  using namespace detail;
  const uint64_t den = mask64(x < 0x1p-1022);
  const double xs = sel(den, x * 0x1p54, x);
  const uint64_t u = as_u(xs) + (0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull);
  const int64_t e = static_cast<int64_t>(u >> 52) - 1023 - static_cast<int64_t>(den & 54u);
  const double f = as_d((u & 0x000fffffffffffffull) + 0x3fe6a09e667f3bcdull) - 1.0;
  // log1p(f) = f - (hfsq - s (hfsq + R(s^2))), s = f / (2 + f),
  // R(z) = sum 2 z^k / (2k + 1) (|s| < 0.172: 12 terms)
  const double s = f / (2.0 + f);
  const double z = s * s;
  double p = 0x1.47ae147ae147bp-4;
  p = mad(p, z, 0x1.642c8590b2164p-4);
  p = mad(p, z, 0x1.8618618618618p-4);
  p = mad(p, z, 0x1.af286bca1af28p-4);
  p = mad(p, z, 0x1.e1e1e1e1e1e1ep-4);
  p = mad(p, z, 0x1.1111111111111p-3);
  p = mad(p, z, 0x1.3b13b13b13b14p-3);
  p = mad(p, z, 0x1.745d1745d1746p-3);
  p = mad(p, z, 0x1.c71c71c71c71cp-3);
  p = mad(p, z, 0x1.2492492492492p-2);
  p = mad(p, z, 0x1.999999999999ap-2);
  p = mad(p, z, 0x1.5555555555555p-1);
  const double R = z * p;
  const double hfsq = 0.5 * f * f;
  const double ef = i64_to_f64(e);
  double r = mad(ef, kLn2HiD, f - (hfsq - mad(s, hfsq + R, ef * kLn2LoD)));
  r = sel(mask64(x == kInfD), kInfD, r);
  r = sel(mask64(x == 0.0), -kInfD, r);
  r = sel(mask64(x < 0.0) | mask64(x != x), kNaND, r);
  return r;
}

EMBER_SIMD_INLINE double tanh(double x) {
  using namespace detail;
  double a = fabs_(x);
  a = sel(mask64(a > 22.0), 22.0, a);  // tanh rounds to 1 beyond 19.1
  // tanh(a) = em / (em + 2), em = expm1(2a) = 2 (h + lo) carried exactly
  int64_t n;
  double rr, ww;
  expm1_kernel(2.0 * a, n, rr, ww);  // n in [0, 64]
  const double t = pow2i64(n - 1);
  // em / 2 = t (r + w) + t - 1/2 = h + lo
  const double A = t * rr, B = t - 0.5;  // both exact
  const double S = A + B;
  const double Sb = S - A;
  const double W = mad(t, ww, (A - (S - Sb)) + (B - Sb));
  const double h = S + W;
  const double lo = (S - h) + W;
  const double d = h + 1.0;
  const double db = d - h;
  const double derr = (h - (d - db)) + (1.0 - db) + lo;
  const double inv = 1.0 / d;
  const double y = h * inv;
  const double r = mad(-y, d, h) + (lo - y * derr);
  double res = mad(r, inv, y);
  res = sel(mask64(a < 0x1p-28), a, res);
  return copysign_(res, x);
}

EMBER_SIMD_INLINE double sigmoid(double x) {
  using namespace detail;
  const double e = exp(-fabs_(x));
  const uint64_t neg = mask64(as_u(x) >> 63 != 0);
  return detail::div_exact_den(sel(neg, e, 1.0), e, 1.0);
}

EMBER_SIMD_INLINE double sin(double x) {
  using namespace detail;
  int64_t q;
  const double r = trig_reduce(x, q);
  const double z = r * r;
  double res = sel(mask64((q & 1) != 0), cos_kernel(z), sin_kernel(r, z));
  res = as_d(as_u(res) ^ (static_cast<uint64_t>(q & 2) << 62));
  res = sel(mask64(x == 0.0), x, res);
  res = sel(mask64(fabs_(x) == kInfD), kNaND, res);
  return res;
}

EMBER_SIMD_INLINE double cos(double x) {
  using namespace detail;
  int64_t q;
  const double r = trig_reduce(x, q);
  const double z = r * r;
  q = q + 1;
  double res = sel(mask64((q & 1) != 0), cos_kernel(z), sin_kernel(r, z));
  res = as_d(as_u(res) ^ (static_cast<uint64_t>(q & 2) << 62));
  res = sel(mask64(fabs_(x) == kInfD), kNaND, res);
  return res;
}

EMBER_SIMD_INLINE double erf(double x) {
  using namespace detail;
  const double a = fabs_(x);
  const double ac = sel(mask64(a > 6.0), 6.0, a);  // erf rounds to 1 beyond 5.93
  // |x| <= 1: erf = x + x P(x^2); 1 < |x| <= 6: erfc = exp(-x^2) Q_i(x - c_i)
  // on [1, 1.6], [1.6, 2.4], [2.4, 3.6], [3.6, 6] (Chebyshev fits, abs. err
  // in erf < 1e-17). All five polynomials are evaluated, then selected.
  const uint64_t m1 = mask64(a > 1.0), m2 = mask64(a > 1.6), m3 = mask64(a > 2.4),
                 m4 = mask64(a > 3.6);
  const double a2 = a * a;
  double p0 = -0x1.ac9585a44fe29p-31;
  p0 = mad(p0, a2, 0x1.d76af6ca49787p-27);
  p0 = mad(p0, a2, -0x1.5c131500d3f88p-23);
  p0 = mad(p0, a2, 0x1.b981d78881a5dp-20);
  p0 = mad(p0, a2, -0x1.f4ca838adb73bp-17);
  p0 = mad(p0, a2, 0x1.f9a2be4f731a1p-14);
  p0 = mad(p0, a2, -0x1.c02db0665e53dp-11);
  p0 = mad(p0, a2, 0x1.565bccfa44156p-8);
  p0 = mad(p0, a2, -0x1.b82ce31203772p-6);
  p0 = mad(p0, a2, 0x1.ce2f21a040f66p-4);
  p0 = mad(p0, a2, -0x1.812746b0379c1p-2);
  p0 = mad(p0, a2, 0x1.06eba8214db68p-3);
  const double v1 = ac - 1.3;
  double p1 = -0x1.6e0ecb9371683p-20;
  p1 = mad(p1, v1, 0x1.321997639717cp-18);
  p1 = mad(p1, v1, -0x1.e32b979367eecp-17);
  p1 = mad(p1, v1, 0x1.7c4aa0356578dp-15);
  p1 = mad(p1, v1, -0x1.21c709befa8e0p-13);
  p1 = mad(p1, v1, 0x1.aa1e71b4db271p-12);
  p1 = mad(p1, v1, -0x1.2d7ce38d728ecp-10);
  p1 = mad(p1, v1, 0x1.9906ac0e87e63p-9);
  p1 = mad(p1, v1, -0x1.08d59b9ebde95p-7);
  p1 = mad(p1, v1, 0x1.4586f29224dfap-6);
  p1 = mad(p1, v1, -0x1.791d38887bbaep-5);
  p1 = mad(p1, v1, 0x1.97e3446e86415p-4);
  p1 = mad(p1, v1, -0x1.968b7b47d280cp-3);
  p1 = mad(p1, v1, 0x1.6e39e13d84008p-2);
  const double v2 = ac - 2.0;
  double p2 = -0x1.942591a7654bap-24;
  p2 = mad(p2, v2, 0x1.809ec80cbc048p-22);
  p2 = mad(p2, v2, -0x1.5744f43fd30cdp-20);
  p2 = mad(p2, v2, 0x1.3664a428695c7p-18);
  p2 = mad(p2, v2, -0x1.115d57415cfbcp-16);
  p2 = mad(p2, v2, 0x1.d37c573fe5c35p-15);
  p2 = mad(p2, v2, -0x1.838220c7aa33cp-13);
  p2 = mad(p2, v2, 0x1.369ff9681420ap-11);
  p2 = mad(p2, v2, -0x1.e028e8a5f63a0p-10);
  p2 = mad(p2, v2, 0x1.649072162c376p-8);
  p2 = mad(p2, v2, -0x1.fa9d3ac955ad8p-7);
  p2 = mad(p2, v2, 0x1.5672b9ea13b2bp-5);
  p2 = mad(p2, v2, -0x1.b57034efd3f72p-4);
  p2 = mad(p2, v2, 0x1.058671b52c776p-2);
  const double v3 = ac - 3.0;
  double p3 = -0x1.e2dbb2cca0de7p-29;
  p3 = mad(p3, v3, 0x1.11723cfca9751p-26);
  p3 = mad(p3, v3, -0x1.1d0ad7bc71676p-24);
  p3 = mad(p3, v3, 0x1.3617d1f99008ep-22);
  p3 = mad(p3, v3, -0x1.4b1615b37dc1dp-20);
  p3 = mad(p3, v3, 0x1.5961197b5ec0bp-18);
  p3 = mad(p3, v3, -0x1.60250ccc45395p-16);
  p3 = mad(p3, v3, 0x1.5e738efd15bb6p-14);
  p3 = mad(p3, v3, -0x1.53dec9d3d757dp-12);
  p3 = mad(p3, v3, 0x1.409cc2f11fc6fp-10);
  p3 = mad(p3, v3, -0x1.259061ba84385p-8);
  p3 = mad(p3, v3, 0x1.043fe1a98aa77p-6);
  p3 = mad(p3, v3, -0x1.bd6ae4d14b171p-5);
  p3 = mad(p3, v3, 0x1.6e9827d229d2fp-3);
  const double v4 = ac - 4.8;
  double p4 = -0x1.18c7b6f49a324p-35;
  p4 = mad(p4, v4, 0x1.a3c453b35d8f7p-33);
  p4 = mad(p4, v4, -0x1.09e69aa27a9f5p-30);
  p4 = mad(p4, v4, 0x1.829f87ccc2a71p-28);
  p4 = mad(p4, v4, -0x1.18428244c7cdfp-25);
  p4 = mad(p4, v4, 0x1.8d4bd26517872p-23);
  p4 = mad(p4, v4, -0x1.15b657f8b3c58p-20);
  p4 = mad(p4, v4, 0x1.7ee7168e5773bp-18);
  p4 = mad(p4, v4, -0x1.041e19005e369p-15);
  p4 = mad(p4, v4, 0x1.5c09d2fa70c32p-13);
  p4 = mad(p4, v4, -0x1.ca4a165c489e0p-11);
  p4 = mad(p4, v4, 0x1.28b9ddbf916cbp-8);
  p4 = mad(p4, v4, -0x1.798db6596362fp-6);
  p4 = mad(p4, v4, 0x1.d79c124747156p-4);
  const double p = sel(m4, p4, sel(m3, p3, sel(m2, p2, sel(m1, p1, p0))));
  const double x2 = ac * ac;
#if EMBER_SIMD_FMA
  const double x2lo = mad(ac, ac, -x2);
#else
  const double x2lo = 0.0;
#endif
  double ex = exp(-x2);
  ex = mad(-ex, x2lo, ex);
  const double res = sel(m1, mad(-ex, p, 1.0), mad(a, p, a));
  return copysign_(res, x);
}

// ====================================================================
// float32 sin/cos/tan beyond kSinCosAccurateBound: an exact reduction by
// pi/2 for every float (Payne-Hanek), evaluated in double. Scalar code: the
// kernels run the vectorized functions above on every lane and redo only the
// lanes where trig_far(x) holds (backend/cpu/unary.cpp: a piece of a row is
// looked at again only if its largest |x| passes the bound).
// ====================================================================

namespace detail {

// The bits of 2/pi after the binary point, 32 a word, behind two zero words
// (bit i of the string, counted from 0 at the first word's top, is the
// (i - 63)-th bit of 2/pi, the bits at i < 64 being 0). 256 bits: a float's
// reduction reads at most the bits up to 230 (see trig_reduce_far).
constexpr uint32_t kTwoOverPiBits[10] = {
    0x00000000u, 0x00000000u, 0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u,
    0xF534DDC0u, 0xDB629599u, 0x3C439041u, 0xFE5163ABu, 0xDEBBC561u};

// x finite with |x| >= pi/4 (then x is normal): x = (q + f) pi/2 with the
// integer q (low 2 bits meaningful) and |f| <= 1/2; returns f pi/2 in
// double. With x = M 2^k (M < 2^24 an integer, -24 <= k <= 104) and 2/pi =
// sum_j b_j 2^-j, x 2/pi mod 4 needs only the bits j >= k - 1 (every earlier
// bit adds a multiple of 4): the 96 of them from j = k - 1 on give
// P = M * F mod 2^96 = (x 2/pi mod 4) 2^94, short by less than
// M 2^(k - (k + 94)) < 2^-70 quadrants from the bits left out. A float's
// nearest approach to a multiple of pi/2 leaves |f| >= 2^-29.86 (at
// x = 0x1.f37c8ap+95; every float checked), so f keeps better than 2^-40
// relative accuracy before it is rounded to double.
inline double trig_reduce_far(float x, int32_t& q) {
  using u128 = unsigned __int128;
  const uint32_t u = as_u(x) & 0x7fffffffu;
  const int32_t k = static_cast<int32_t>(u >> 23) - 150;
  const uint64_t m = (u & 0x007fffffu) | 0x00800000u;
  // the 96 bits of 2/pi from bit j = k - 1: string position s = k - 2 + 64
  const int32_t s = k + 62;
  const int32_t w = s >> 5, b = s & 31;
  auto word = [](int32_t i) { return static_cast<u128>(kTwoOverPiBits[i]); };
  u128 win = (word(w) << 96) | (word(w + 1) << 64) | (word(w + 2) << 32) | word(w + 3);
  if (b != 0) win = (win << b) | (word(w + 4) >> (32 - b));
  const u128 f96 = win >> 32;
  const u128 f_lo = static_cast<uint64_t>(f96), f_hi = f96 >> 64;
  const u128 mask96 = (static_cast<u128>(1) << 96) - 1;
  const u128 p = (m * f_lo + ((m * f_hi) << 64)) & mask96;
  // p / 2^94 in [0, 4): quadrant above, fraction below; round to nearest
  int32_t quad = static_cast<int32_t>(p >> 94);
  const u128 frac = p & ((static_cast<u128>(1) << 94) - 1);
  const bool up = (frac >> 93) != 0;
  quad += up;
  // signed fraction (in units of 2^-94) as a double, rounded once: the high
  // part is below 2^54 and its double exact, the low 40 bits likewise
  const u128 mag = up ? (static_cast<u128>(1) << 94) - frac : frac;
  const double hi = static_cast<double>(static_cast<uint64_t>(mag >> 40)) * 0x1p40;
  const double lo = static_cast<double>(static_cast<uint64_t>(mag & ((static_cast<u128>(1) << 40) - 1)));
  double f = (hi + lo) * 0x1p-94;
  f = up ? -f : f;
  double r = f * 0x1.921fb54442d18p+0;
  if (as_u(x) >> 31) {  // x < 0: -x = q pi/2 + r
    r = -r;
    quad = -quad;
  }
  q = quad;
  return r;
}

// r and q for any finite x: the exact reduction, or x itself below pi/4
inline double trig_reduce_any(float x, int32_t& q) {
  if (fabs_(x) < 0x1.921fb6p-1f) {
    q = 0;
    return static_cast<double>(x);
  }
  return trig_reduce_far(x, q);
}

inline double sin_quadrant(double r, int32_t q) {
  const double z = r * r;
  const double v = (q & 1) ? cos_kernel(z) : sin_kernel(r, z);
  return (q & 2) ? -v : v;
}

}  // namespace detail

// Lanes the vectorized sin/cos/tan do not cover: |x| beyond their accurate
// bound (infinities included; NaN is handled on the fast path).
EMBER_SIMD_INLINE bool trig_far(float x) { return detail::fabs_(x) > kSinCosAccurateBound; }

// sin/cos/tan of any float (NaN for inf/NaN) through the exact reduction:
// within 1 ulp (the double result, rounded once), at every ISA level.
inline float sin_far(float x) {
  if (!(detail::fabs_(x) < detail::kInf)) return x - x;
  if (x == 0.0f) return x;
  int32_t q;
  const double r = detail::trig_reduce_any(x, q);
  return static_cast<float>(detail::sin_quadrant(r, q));
}
inline float cos_far(float x) {
  if (!(detail::fabs_(x) < detail::kInf)) return x - x;
  int32_t q;
  const double r = detail::trig_reduce_any(x, q);
  return static_cast<float>(detail::sin_quadrant(r, q + 1));
}
inline float tan_far(float x) {
  if (!(detail::fabs_(x) < detail::kInf)) return x - x;
  if (x == 0.0f) return x;
  int32_t q;
  const double r = detail::trig_reduce_any(x, q);
  const double z = r * r;
  const double s = detail::sin_kernel(r, z), c = detail::cos_kernel(z);
  return static_cast<float>((q & 1) ? -c / s : s / c);
}

}  // namespace EMBER_ISA_NS
}  // namespace simd
}  // namespace ember
