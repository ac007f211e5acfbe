// Accuracy and speed test of csrc/ember/backend/cpu/simd_math.h.
//
//   g++ -O3 -march=native -std=c++17 -I csrc tests/cpp/test_simd_math.cpp -o /tmp/t && /tmp/t
//
// For every function: special values, dense sweeps of the interesting range,
// random bit patterns over all finite floats, random mantissas at every
// exponent (and, for sin/cos/tan, the floats nearest to k*pi/2 up to 1e5),
// compared with the libm result in double (float64 functions: long double)
// rounded to the target type. The error is the distance in ulps between the
// result and the correctly rounded reference (0 = correctly rounded); "frac"
// is the error in ulps of the unrounded reference. Bounds: 4 ulp (float32),
// 2 ulp (float64). Any error above the bound, a NaN where none is expected
// (or the reverse), a wrong infinity or a wrong sign of zero fails the test
// (exit code 1) with the function, input and error printed. sin/cos/tan
// beyond simd::kSinCosAccurateBound must only be finite and in [-1, 1];
// "sin+far" (cos, tan) is what the kernels compute, those lanes redone with
// simd::sin_far & co., checked at every exponent up to FLT_MAX
// (--exhaustive sin+far 1 6.5e6 3.5e38: every float from the bound on;
// measured, with and without FMA: beyond the bound 0 ulp from the double
// libm result rounded to float).
// Then the speed of the vectorized loop against a loop over the std::
// function (float32: 4M elements; float64: 2M), best of 3.
//
// The code path follows the compiler's target (simd_math.h's EMBER_SIMD_FMA:
// fused multiply-adds from -march=x86-64-v3 up); CI builds it at
// -march=x86-64-v2 and -march=x86-64-v3, both with -ffp-contract=off as the
// library is, and passes --expect-fma 0 / 1 so that a build that took the
// other path fails.
//
// Options: --no-bench, --quick (fewer points), --expect-fma 0|1 (exit 2 if
// EMBER_SIMD_FMA differs), --exhaustive NAME STRIDE
// [LO HI] (every STRIDE-th float32 bit pattern, optionally only those of the
// floats in [LO, HI], through NAME; minutes per function, for development),
// --unlimited (with --exhaustive: check sin/cos/tan beyond their bound too).
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ember/backend/cpu/simd_math.h"

namespace simd = ember::simd;

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

uint32_t fbits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float ffrom(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
uint64_t dbits(double x) {
  uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
}
double dfrom(uint64_t u) {
  double x;
  std::memcpy(&x, &u, 8);
  return x;
}
int64_t ord(float x) {
  const uint32_t u = fbits(x);
  return (u & 0x80000000u) ? -static_cast<int64_t>(u & 0x7fffffffu) : static_cast<int64_t>(u);
}
int64_t ord(double x) {
  const uint64_t u = dbits(x);
  return (u >> 63) ? -static_cast<int64_t>(u & 0x7fffffffffffffffull) : static_cast<int64_t>(u);
}
// size of one ulp of type T at the magnitude of v
template <class T>
double ulp_of(double v) {
  constexpr int mant = std::numeric_limits<T>::digits;          // 24 / 53
  constexpr int emin = std::numeric_limits<T>::min_exponent - 1;  // -126 / -1022
  int e = static_cast<int>((dbits(v) >> 52) & 0x7ff) - 1023;      // floor(log2|v|)
  if (e == -1023) {  // double denormal (only reached for double results)
    int ee;
    std::frexp(std::fabs(v), &ee);
    e = ee - 1;
  }
  e = std::max(e, emin) - (mant - 1);
  return e >= -1022 ? dfrom(static_cast<uint64_t>(e + 1023) << 52) : std::ldexp(1.0, e);
}

// ------------------------------------------------------------ references
double ref_sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}
long double ref_sigmoidl(long double x) {
  if (x >= 0) return 1.0L / (1.0L + std::exp(-x));
  const long double e = std::exp(x);
  return e / (1.0L + e);
}
double ref_erfinv(double x) {
  if (std::isnan(x) || x < -1 || x > 1) return NAN;
  if (x == 1) return INFINITY;
  if (x == -1) return -INFINITY;
  if (x == 0) return x;
  const double a = std::fabs(x);
  // starting point (Winitzki), then Newton on erf (or erfc near 1)
  const double ln = std::log((1 - a) * (1 + a));
  const double k = 0.147, t = 2 / (M_PI * k) + ln / 2;
  double y = std::sqrt(std::sqrt(t * t - ln / k) - t);
  for (int i = 0; i < 60; ++i) {
    const double g = (a > 0.5) ? -(std::erfc(y) - (1 - a)) : std::erf(y) - a;
    const double d = g / (1.1283791670955126 * std::exp(-y * y));
    y -= d;
    if (std::fabs(d) <= 1e-17 * y) break;
  }
  return std::copysign(y, x);
}

// ------------------------------------------------------ vectorized loops
#define VEC1(NAME, CALL)                                                     \
  NOINLINE void vec_##NAME(const float* in, float* out, size_t n) {          \
    for (size_t i = 0; i < n; ++i) out[i] = CALL(in[i]);                     \
  }
#define STD1(NAME, CALL)                                                     \
  NOINLINE void std_##NAME(const float* in, float* out, size_t n) {          \
    for (size_t i = 0; i < n; ++i) out[i] = CALL(in[i]);                     \
  }
float std_sigmoidf(float x) { return 1.0f / (1.0f + std::exp(-x)); }

VEC1(exp, simd::exp) STD1(exp, std::exp)
VEC1(expm1, simd::expm1) STD1(expm1, std::expm1)
VEC1(log, simd::log) STD1(log, std::log)
VEC1(log1p, simd::log1p) STD1(log1p, std::log1p)
VEC1(log2, simd::log2) STD1(log2, std::log2)
VEC1(log10, simd::log10) STD1(log10, std::log10)
VEC1(sin, simd::sin) STD1(sin, std::sin)
VEC1(cos, simd::cos) STD1(cos, std::cos)
VEC1(tan, simd::tan) STD1(tan, std::tan)
// sin/cos/tan as the kernels compute them (backend/cpu/unary.cpp): the
// vectorized function without its guards (*_near), lanes beyond its bound
// redone by the exact reduction
#define FULL1(NAME)                                                          \
  NOINLINE void full_##NAME(const float* in, float* out, size_t n) {         \
    for (size_t i = 0; i < n; ++i) out[i] = simd::NAME##_near(in[i]);        \
    for (size_t i = 0; i < n; ++i)                                           \
      if (simd::trig_far(in[i])) out[i] = simd::NAME##_far(in[i]);           \
  }
FULL1(sin) FULL1(cos) FULL1(tan)
VEC1(tanh, simd::tanh) STD1(tanh, std::tanh)
VEC1(sigmoid, simd::sigmoid) STD1(sigmoid, std_sigmoidf)
VEC1(erf, simd::erf) STD1(erf, std::erf)
VEC1(erfinv, simd::erfinv)
VEC1(sinh, simd::sinh) STD1(sinh, std::sinh)
VEC1(cosh, simd::cosh) STD1(cosh, std::cosh)
VEC1(atan, simd::atan) STD1(atan, std::atan)
VEC1(asin, simd::asin) STD1(asin, std::asin)
VEC1(acos, simd::acos) STD1(acos, std::acos)
VEC1(asinh, simd::asinh) STD1(asinh, std::asinh)
VEC1(acosh, simd::acosh) STD1(acosh, std::acosh)
VEC1(atanh, simd::atanh) STD1(atanh, std::atanh)

NOINLINE void vec_atan2(const float* y, const float* x, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = simd::atan2(y[i], x[i]);
}
NOINLINE void std_atan2(const float* y, const float* x, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = std::atan2(y[i], x[i]);
}

// double versions
#ifndef TEST_NO_F64
#define VECD(NAME, CALL)                                                     \
  NOINLINE void vecd_##NAME(const double* in, double* out, size_t n) {       \
    for (size_t i = 0; i < n; ++i) out[i] = CALL(in[i]);                     \
  }                                                                          \
  NOINLINE void stdd_##NAME(const double* in, double* out, size_t n) {       \
    for (size_t i = 0; i < n; ++i) out[i] = REFD_##NAME(in[i]);              \
  }
#define REFD_exp std::exp
#define REFD_log std::log
#define REFD_tanh std::tanh
#define REFD_sigmoid ref_sigmoid
#define REFD_sin std::sin
#define REFD_cos std::cos
#define REFD_erf std::erf
VECD(exp, simd::exp)
VECD(log, simd::log)
VECD(tanh, simd::tanh)
VECD(sigmoid, simd::sigmoid)
VECD(sin, simd::sin)
VECD(cos, simd::cos)
VECD(erf, simd::erf)
#endif

// ------------------------------------------------------------ checking
struct Range {
  double lo, hi;
};

struct Fn {
  const char* name;
  void (*vec)(const float*, float*, size_t);
  void (*std)(const float*, float*, size_t);
  double (*ref)(double);
  double bound;
  std::vector<Range> sweeps;  // dense linear sweeps
  Range bench;                // input range of the timing run
  double check_max;           // |x| beyond which only boundedness is checked (0: none)
  std::vector<float> extra;   // special inputs
};

struct Stats {
  int64_t max_ulp = 0;
  double max_frac = 0;
  float worst_x = 0, worst_y = 0;
  double worst_ref = 0;
  size_t count = 0;
  int failures = 0;
};

bool g_failed = false;

void report_fail(const char* name, const char* what, float x, float y, double ref, double ulps,
                 int& failures, float x2 = 0, bool two = false) {
  if (failures++ < 5) {
    if (two)
      std::printf("FAIL %-8s %s: x=(%a, %a) got %a (%.9g) ref %a (%.17g) err %.2f ulp\n", name, what,
                  x, x2, y, y, ref, ref, ulps);
    else
      std::printf("FAIL %-8s %s: x=%a (%.9g) got %a (%.9g) ref %a (%.17g) err %.2f ulp\n", name,
                  what, x, x, y, y, ref, ref, ulps);
  }
  g_failed = true;
}

// compare one result with its reference; returns the ulp error (integer)
void check_one(const char* name, double bound, float x, float y, double ref, Stats& st,
               float x2 = 0, bool two = false) {
  ++st.count;
  const float rf = static_cast<float>(ref);
  if (std::isnan(rf) || std::isnan(y)) {
    if (!(std::isnan(rf) && std::isnan(y)))
      report_fail(name, "NaN mismatch", x, y, ref, 0, st.failures, x2, two);
    return;
  }
  if (std::isinf(rf) || std::isinf(y)) {
    if (rf != y) report_fail(name, "inf mismatch", x, y, ref, 0, st.failures, x2, two);
    return;
  }
  if (rf == 0 && y == 0 && std::signbit(rf) != std::signbit(y)) {
    report_fail(name, "sign of zero", x, y, ref, 0, st.failures, x2, two);
    return;
  }
  const int64_t d = std::llabs(ord(y) - ord(rf));
  const double frac = std::fabs(static_cast<double>(y) - ref) / ulp_of<float>(ref);
  if (d > st.max_ulp || (d == st.max_ulp && frac > st.max_frac)) {
    st.worst_x = x;
    st.worst_y = y;
    st.worst_ref = ref;
  }
  st.max_ulp = std::max(st.max_ulp, d);
  st.max_frac = std::max(st.max_frac, frac);
  if (d > bound) report_fail(name, "ulp error", x, y, ref, static_cast<double>(d), st.failures, x2, two);
}

std::mt19937_64 g_rng(12345);

std::vector<float> random_finite(size_t n) {
  std::vector<float> v;
  v.reserve(n);
  while (v.size() < n) {
    const uint32_t u = static_cast<uint32_t>(g_rng());
    const float x = ffrom(u);
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

std::vector<float> common_specials() {
  const float dmin = std::numeric_limits<float>::denorm_min();
  const float fmin = std::numeric_limits<float>::min();
  const float fmax = std::numeric_limits<float>::max();
  std::vector<float> v = {0.0f, -0.0f, kInf, -kInf, kNaN, -kNaN, dmin, -dmin, fmin, -fmin,
                          fmax, -fmax, 1.0f, -1.0f, 0.5f, -0.5f, 2.0f, -2.0f, 1e-30f, -1e-30f,
                          1e30f, -1e30f, 0x1p-20f, -0x1p-20f, 0x1p-13f, -0x1p-13f};
  // around powers of two
  for (int e = -149; e <= 127; e += 1) {
    const float p = std::ldexp(1.0f, e);
    for (float s : {1.0f, -1.0f}) {
      v.push_back(s * p);
      v.push_back(std::nextafter(s * p, 0.0f));
      v.push_back(std::nextafter(s * p, s * kInf));
    }
  }
  return v;
}

std::vector<float> sweep(Range r, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(r.lo + (r.hi - r.lo) * (static_cast<double>(i) / (n - 1)));
  return v;
}

Stats run_checks(const Fn& f, const std::vector<float>& xs) {
  Stats st;
  std::vector<float> ys(xs.size());
  f.vec(xs.data(), ys.data(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = xs[i], y = ys[i];
    if (f.check_max > 0 && !(std::fabs(x) <= f.check_max)) {
      // outside the accurate range: must stay finite and bounded (NaN for inf/NaN)
      if (std::isnan(x) || std::isinf(x)) {
        if (!std::isnan(y)) report_fail(f.name, "expected NaN", x, y, NAN, 0, st.failures);
      } else if (!std::isfinite(y) || (std::strcmp(f.name, "tan") != 0 && std::fabs(y) > 1.0f)) {
        report_fail(f.name, "unbounded large-argument result", x, y, NAN, 0, st.failures);
      }
      continue;
    }
    check_one(f.name, f.bound, x, y, f.ref(static_cast<double>(x)), st);
  }
  return st;
}

double time_loop(void (*fn)(const float*, float*, size_t), const std::vector<float>& in,
                 std::vector<float>& out, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn(in.data(), out.data(), in.size());
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / in.size());
  }
  return best;
}
template <class T>
double time_loop2(void (*fn)(const T*, const T*, T*, size_t), const std::vector<T>& a,
                  const std::vector<T>& b, std::vector<T>& out, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn(a.data(), b.data(), out.data(), a.size());
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / a.size());
  }
  return best;
}
double time_loopd(void (*fn)(const double*, double*, size_t), const std::vector<double>& in,
                  std::vector<double>& out, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn(in.data(), out.data(), in.size());
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / in.size());
  }
  return best;
}

double r_exp(double x) { return std::exp(x); }
double r_expm1(double x) { return std::expm1(x); }
double r_log(double x) { return std::log(x); }
double r_log1p(double x) { return std::log1p(x); }
double r_log2(double x) { return std::log2(x); }
double r_log10(double x) { return std::log10(x); }
double r_sin(double x) { return std::sin(x); }
double r_cos(double x) { return std::cos(x); }
double r_tan(double x) { return std::tan(x); }
double r_tanh(double x) { return std::tanh(x); }
double r_erf(double x) { return std::erf(x); }
double r_sinh(double x) { return std::sinh(x); }
double r_cosh(double x) { return std::cosh(x); }
double r_atan(double x) { return std::atan(x); }
double r_asin(double x) { return std::asin(x); }
double r_acos(double x) { return std::acos(x); }
double r_asinh(double x) { return std::asinh(x); }
double r_acosh(double x) { return std::acosh(x); }
double r_atanh(double x) { return std::atanh(x); }

std::vector<Fn> make_table() {
  const double SC = simd::kSinCosAccurateBound;
  std::vector<Fn> t;
  t.push_back({"exp", vec_exp, std_exp, r_exp, 4, {{-104, 89}, {-1, 1}, {-89, -85}, {86, 89}},
               {-10, 10}, 0, {88.72283f, 88.7228394f, 88.72284f, -87.33654f, -87.33655f,
                              -103.972f, -103.9721f, -104.0f, -103.28f}});
  t.push_back({"expm1", vec_expm1, std_expm1, r_expm1, 4, {{-20, 89}, {-1, 1}, {-1e-3, 1e-3}},
               {-10, 10}, 0, {88.72283f, 88.7228394f, 88.72284f, -17.0f, -17.33f, -17.34f}});
  t.push_back({"log", vec_log, std_log, r_log, 4, {{0, 10}, {0.5, 2}, {0.99, 1.01}},
               {0.01, 100}, 0, {}});
  t.push_back({"log1p", vec_log1p, std_log1p, r_log1p, 4,
               {{-1, 1}, {-1, -0.9}, {-1e-3, 1e-3}, {0, 1e4}}, {-0.5, 100}, 0, {}});
  t.push_back({"log2", vec_log2, std_log2, r_log2, 4, {{0, 10}, {0.5, 2}, {0.99, 1.01}},
               {0.01, 100}, 0, {}});
  t.push_back({"log10", vec_log10, std_log10, r_log10, 4, {{0, 10}, {0.5, 2}, {0.99, 1.01}},
               {0.01, 100}, 0, {}});
  t.push_back({"sin", vec_sin, std_sin, r_sin, 4, {{-10, 10}, {-1e5, 1e5}, {-SC, SC}, {-1e-3, 1e-3}},
               {-10, 10}, SC, {}});
  t.push_back({"cos", vec_cos, std_cos, r_cos, 4, {{-10, 10}, {-1e5, 1e5}, {-SC, SC}, {-1e-3, 1e-3}},
               {-10, 10}, SC, {}});
  t.push_back({"tan", vec_tan, std_tan, r_tan, 4, {{-10, 10}, {-1e5, 1e5}, {-SC, SC}, {-1e-3, 1e-3}},
               {-1.5, 1.5}, SC, {}});
  // every float: random patterns and mantissas at every exponent up to FLT_MAX
  const std::vector<Range> far_sweeps = {{-1e9, 1e9}, {-3.4e38, 3.4e38}};
  t.push_back({"sin+far", full_sin, std_sin, r_sin, 4, far_sweeps, {-10, 10}, 0, {3e9f, -3e9f}});
  t.push_back({"cos+far", full_cos, std_cos, r_cos, 4, far_sweeps, {-10, 10}, 0, {3e9f, -3e9f}});
  t.push_back({"tan+far", full_tan, std_tan, r_tan, 4, far_sweeps, {-1.5, 1.5}, 0, {3e9f, -3e9f}});
  t.push_back({"tanh", vec_tanh, std_tanh, r_tanh, 4, {{-10, 10}, {-1, 1}, {-1e-3, 1e-3}},
               {-5, 5}, 0, {9.0f, 9.01f, 9.02f}});
  t.push_back({"sigmoid", vec_sigmoid, std_sigmoid, ref_sigmoid, 4,
               {{-110, 30}, {-10, 10}, {-90, -85}}, {-10, 10}, 0, {}});
  t.push_back({"erf", vec_erf, std_erf, r_erf, 4, {{-5, 5}, {-1.2, 1.2}, {-1e-3, 1e-3}},
               {-3, 3}, 0, {}});
  t.push_back({"erfinv", vec_erfinv, nullptr, ref_erfinv, 4,
               {{-1, 1}, {0.99, 1}, {-1, -0.9999}, {-1e-3, 1e-3}}, {-0.999, 0.999}, 0, {}});
  t.push_back({"sinh", vec_sinh, std_sinh, r_sinh, 4, {{-90, 90}, {-2, 2}, {-1e-3, 1e-3}},
               {-10, 10}, 0, {89.41598f, 89.415985f, 89.41599f, -89.41599f}});
  t.push_back({"cosh", vec_cosh, std_cosh, r_cosh, 4, {{-90, 90}, {-2, 2}}, {-10, 10}, 0,
               {89.41598f, 89.415985f, 89.41599f, -89.41599f}});
  t.push_back({"atan", vec_atan, std_atan, r_atan, 4, {{-100, 100}, {-2, 2}}, {-10, 10}, 0, {}});
  t.push_back({"asin", vec_asin, std_asin, r_asin, 4, {{-1, 1}, {0.999, 1}, {0.45, 0.55}},
               {-1, 1}, 0, {}});
  t.push_back({"acos", vec_acos, std_acos, r_acos, 4, {{-1, 1}, {0.999, 1}, {-1, -0.999}},
               {-1, 1}, 0, {}});
  t.push_back({"asinh", vec_asinh, std_asinh, r_asinh, 4, {{-100, 100}, {-2, 2}, {-1e-3, 1e-3}},
               {-10, 10}, 0, {}});
  t.push_back({"acosh", vec_acosh, std_acosh, r_acosh, 4, {{1, 100}, {1, 1.01}}, {1, 100}, 0, {}});
  t.push_back({"atanh", vec_atanh, std_atanh, r_atanh, 4,
               {{-1, 1}, {0.999, 1}, {-1, -0.999}, {-1e-3, 1e-3}}, {-0.99, 0.99}, 0, {}});
  return t;
}

// inputs nearest to k*pi/2 (hard cases of the trig reduction) and neighbours
std::vector<float> near_pio2_multiples(double xmax) {
  std::vector<float> v;
  const double pio2 = 1.5707963267948966192313216916398;
  for (int64_t k = 1; k * pio2 <= xmax; ++k) {
    float c = static_cast<float>(k * pio2);
    float lo = c, hi = c;
    for (int j = 0; j < 3; ++j) {
      lo = std::nextafter(lo, 0.0f);
      hi = std::nextafter(hi, kInf);
    }
    for (float x = lo; x <= hi; x = std::nextafter(x, kInf)) {
      if (std::fabs(x) > xmax) break;
      v.push_back(x);
      v.push_back(-x);
    }
  }
  return v;
}

struct Row {
  std::string name;
  int64_t ulp;
  double frac;
  double bound;
  double ns_vec, ns_std;
  double worst_x = 0;
};

void print_rows(const std::vector<Row>& rows) {
  std::printf("\n%-12s %8s %8s %6s %10s %10s %8s  %s\n", "function", "max_ulp", "frac", "bound",
              "simd ns/el", "std ns/el", "speedup", "worst input");
  for (const Row& r : rows) {
    if (r.ns_std > 0)
      std::printf("%-12s %8" PRId64 " %8.3f %6.0f %10.3f %10.3f %7.1fx  %.9g\n", r.name.c_str(), r.ulp,
                  r.frac, r.bound, r.ns_vec, r.ns_std, r.ns_std / r.ns_vec, r.worst_x);
    else if (r.ns_vec > 0)
      std::printf("%-12s %8" PRId64 " %8.3f %6.0f %10.3f %10s %8s  %.9g\n", r.name.c_str(), r.ulp, r.frac,
                  r.bound, r.ns_vec, "-", "-", r.worst_x);
    else
      std::printf("%-12s %8" PRId64 " %8.3f %6.0f %10s %10s %8s  %.9g\n", r.name.c_str(), r.ulp, r.frac,
                  r.bound, "", "", "", r.worst_x);
  }
}

// -------------------------------------------------------------- double
struct FnD {
  const char* name;
  void (*vec)(const double*, double*, size_t);
  void (*std)(const double*, double*, size_t);
  long double (*ref)(long double);
  double bound;
  std::vector<Range> sweeps;
  Range bench;
  double check_max;
};
long double rl_exp(long double x) { return std::exp(x); }
long double rl_log(long double x) { return std::log(x); }
long double rl_tanh(long double x) { return std::tanh(x); }
long double rl_sin(long double x) { return std::sin(x); }
long double rl_cos(long double x) { return std::cos(x); }
long double rl_erf(long double x) { return std::erf(x); }

std::vector<double> random_finite_d(size_t n) {
  std::vector<double> v;
  v.reserve(n);
  while (v.size() < n) {
    const double x = dfrom(g_rng());
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

void check_one_d(const char* name, double bound, double x, double y, long double ref, Stats& st) {
  ++st.count;
  const double rd = static_cast<double>(ref);
  if (std::isnan(rd) || std::isnan(y)) {
    if (!(std::isnan(rd) && std::isnan(y))) report_fail(name, "NaN mismatch", (float)x, (float)y, rd, 0, st.failures);
    return;
  }
  if (std::isinf(rd) || std::isinf(y)) {
    if (rd != y) {
      if (st.failures++ < 5)
        std::printf("FAIL %-8s inf mismatch: x=%a got %a ref %a\n", name, x, y, rd);
      g_failed = true;
    }
    return;
  }
  if (rd == 0 && y == 0 && std::signbit(rd) != std::signbit(y)) {
    if (st.failures++ < 5) std::printf("FAIL %-8s sign of zero: x=%a got %a\n", name, x, y);
    g_failed = true;
    return;
  }
  const int64_t d = std::llabs(ord(y) - ord(rd));
  const double frac = static_cast<double>(std::fabs(static_cast<long double>(y) - ref) /
                                          static_cast<long double>(ulp_of<double>(rd)));
  if (d > st.max_ulp || (d == st.max_ulp && frac > st.max_frac)) st.worst_x = static_cast<float>(x);
  st.max_ulp = std::max(st.max_ulp, d);
  st.max_frac = std::max(st.max_frac, frac);
  if (d > bound) {
    if (st.failures++ < 5)
      std::printf("FAIL %-8s ulp error: x=%a (%.17g) got %a ref %a err %" PRId64 " ulp\n", name, x,
                  x, y, rd, d);
    g_failed = true;
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool bench = true, quick = false, unlimited = false;
  int expect_fma = -1;
  std::string exhaustive;
  uint32_t stride = 1;
  uint64_t u_lo = 0, u_hi = 0xffffffffull;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-bench") bench = false;
    else if (a == "--unlimited") unlimited = true;  // check sin/cos/tan beyond their bound too
    else if (a == "--quick") quick = true;
    else if (a == "--expect-fma" && i + 1 < argc) expect_fma = std::atoi(argv[++i]);
    else if (a == "--exhaustive" && i + 2 < argc) {
      exhaustive = argv[i + 1];
      stride = static_cast<uint32_t>(std::strtoul(argv[i + 2], nullptr, 10));
      i += 2;
      if (i + 2 < argc && argv[i + 1][0] != '-') {  // optional float range [LO, HI] (LO >= 0)
        u_lo = fbits(std::strtof(argv[i + 1], nullptr));
        u_hi = fbits(std::strtof(argv[i + 2], nullptr));
        i += 2;
      }
    }
  }
  std::printf("simd_math: EMBER_SIMD_FMA=%d (%s)\n", EMBER_SIMD_FMA,
              EMBER_SIMD_FMA ? "fused multiply-adds" : "no FMA: separate multiply and add");
  if (expect_fma >= 0 && expect_fma != EMBER_SIMD_FMA) {
    std::printf("FAILED: expected EMBER_SIMD_FMA=%d\n", expect_fma);
    return 2;
  }
  const auto t_start = std::chrono::steady_clock::now();
  std::vector<Fn> table = make_table();
  if (unlimited)
    for (Fn& f : table) f.check_max = 0;

  if (!exhaustive.empty()) {
    for (const Fn& f : table) {
      if (exhaustive != f.name) continue;
      Stats total;
      std::vector<float> xs;
      xs.reserve(1 << 20);
      uint64_t u = u_lo;
      auto flush = [&]() {
        Stats st = run_checks(f, xs);
        if (st.max_ulp > total.max_ulp || (st.max_ulp == total.max_ulp && st.max_frac > total.max_frac)) {
          total.worst_x = st.worst_x;
          total.worst_y = st.worst_y;
          total.worst_ref = st.worst_ref;
        }
        total.max_ulp = std::max(total.max_ulp, st.max_ulp);
        total.max_frac = std::max(total.max_frac, st.max_frac);
        total.count += st.count;
        total.failures += st.failures;
        xs.clear();
      };
      for (; u <= u_hi; u += stride) {
        xs.push_back(ffrom(static_cast<uint32_t>(u)));
        if (xs.size() == (1u << 20)) flush();
      }
      flush();
      std::printf("%s exhaustive/%u: %zu inputs, max %" PRId64 " ulp (frac %.3f) at x=%a (%.9g) got %a ref %.17g\n",
                  f.name, stride, total.count, total.max_ulp, total.max_frac, total.worst_x,
                  total.worst_x, total.worst_y, total.worst_ref);
      return total.failures ? 1 : 0;
    }
    std::printf("unknown function %s\n", exhaustive.c_str());
    return 2;
  }

  const size_t n_rand = quick ? 200000 : 1000000;
  const size_t n_sweep = quick ? 50000 : 200000;
  const size_t n_bench = size_t(1) << 22;
  std::vector<Row> rows;
  const std::vector<float> rnd = random_finite(n_rand);
  const std::vector<float> specials = common_specials();
  const std::vector<float> pio2k = near_pio2_multiples(1e5);

  for (const Fn& f : table) {
    std::vector<float> xs = specials;
    xs.insert(xs.end(), f.extra.begin(), f.extra.end());
    xs.insert(xs.end(), rnd.begin(), rnd.end());
    for (const Range& r : f.sweeps) {
      const std::vector<float> s = sweep(r, n_sweep);
      xs.insert(xs.end(), s.begin(), s.end());
    }
    // random mantissas at every exponent inside the sweeps (log-uniform)
    for (int e = -149; e <= 127; ++e) {
      for (int j = 0; j < (quick ? 4 : 16); ++j) {
        const float m = std::ldexp(1.0f + static_cast<float>(g_rng() % (1u << 23)) * 0x1p-23f, e);
        xs.push_back(m);
        xs.push_back(-m);
        xs.push_back(1.0f + m);
        xs.push_back(1.0f - m);
        xs.push_back(-1.0f + m);
      }
    }
    if (!std::strcmp(f.name, "sin") || !std::strcmp(f.name, "cos") || !std::strcmp(f.name, "tan"))
      xs.insert(xs.end(), pio2k.begin(), pio2k.end());
    const Stats st = run_checks(f, xs);
    Row row{f.name, st.max_ulp, st.max_frac, f.bound, 0, 0, st.worst_x};
    if (st.failures) std::printf("%s: %d failures\n", f.name, st.failures);
    if (bench) {
      std::vector<float> in(n_bench), out(n_bench);
      std::uniform_real_distribution<float> dist(static_cast<float>(f.bench.lo),
                                                 static_cast<float>(f.bench.hi));
      for (float& v : in) v = dist(g_rng);
      row.ns_vec = time_loop(f.vec, in, out, 3);
      if (f.std) row.ns_std = time_loop(f.std, in, out, 2);
    }
    rows.push_back(row);
  }

  {  // atan2: random pairs, grid, special combinations
    Stats st;
    std::vector<float> ys, xs;
    const std::vector<float> r2 = random_finite(n_rand);
    for (size_t i = 0; i + 1 < r2.size(); i += 2) {
      ys.push_back(r2[i]);
      xs.push_back(r2[i + 1]);
    }
    for (int i = 0; i < 600; ++i)
      for (int j = 0; j < 600; ++j) {
        ys.push_back(-10.0f + 20.0f * i / 599);
        xs.push_back(-10.0f + 20.0f * j / 599);
      }
    const float sp[] = {0.0f, -0.0f, kInf, -kInf, kNaN, 1.0f, -1.0f, 1e-45f, -1e-45f,
                        3e38f, -3e38f, 1e-38f, 2.5f, -7.0f};
    for (float a : sp)
      for (float b : sp) {
        ys.push_back(a);
        xs.push_back(b);
      }
    for (int i = 0; i < 20000; ++i) {  // wide dynamic range ratios
      const float a = std::ldexp(1.0f + (g_rng() % 1000) / 1000.0f, static_cast<int>(g_rng() % 250) - 125);
      const float b = std::ldexp(1.0f + (g_rng() % 1000) / 1000.0f, static_cast<int>(g_rng() % 250) - 125);
      ys.push_back((g_rng() & 1) ? a : -a);
      xs.push_back((g_rng() & 1) ? b : -b);
    }
    std::vector<float> out(xs.size());
    vec_atan2(ys.data(), xs.data(), out.data(), xs.size());
    for (size_t i = 0; i < xs.size(); ++i)
      check_one("atan2", 4, ys[i], out[i], std::atan2(static_cast<double>(ys[i]), static_cast<double>(xs[i])),
                st, xs[i], true);
    if (st.failures) std::printf("atan2: %d failures\n", st.failures);
    Row row{"atan2", st.max_ulp, st.max_frac, 4, 0, 0, st.worst_x};
    if (bench) {
      std::vector<float> a(n_bench), b(n_bench), o(n_bench);
      std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
      for (size_t i = 0; i < n_bench; ++i) {
        a[i] = dist(g_rng);
        b[i] = dist(g_rng);
      }
      row.ns_vec = time_loop2<float>(vec_atan2, a, b, o, 3);
      row.ns_std = time_loop2<float>(std_atan2, a, b, o, 2);
    }
    rows.push_back(row);
  }

  // ------------------------------------------------------------ double
#ifndef TEST_NO_F64
  {
    const std::vector<FnD> dt = {
        {"exp(f64)", vecd_exp, stdd_exp, rl_exp, 2, {{-746, 710}, {-1, 1}}, {-10, 10}, 0},
        {"log(f64)", vecd_log, stdd_log, rl_log, 2, {{0, 10}, {0.5, 2}, {0.999, 1.001}}, {0.01, 100}, 0},
        {"tanh(f64)", vecd_tanh, stdd_tanh, rl_tanh, 2, {{-20, 20}, {-1, 1}, {-1e-3, 1e-3}}, {-5, 5}, 0},
        {"sigmoid(f64)", vecd_sigmoid, stdd_sigmoid, ref_sigmoidl, 2, {{-750, 40}, {-10, 10}}, {-10, 10}, 0},
        {"sin(f64)", vecd_sin, stdd_sin, rl_sin, 2, {{-10, 10}, {-1e5, 1e5}}, {-10, 10}, 1e5},
        {"cos(f64)", vecd_cos, stdd_cos, rl_cos, 2, {{-10, 10}, {-1e5, 1e5}}, {-10, 10}, 1e5},
        {"erf(f64)", vecd_erf, stdd_erf, rl_erf, 2, {{-7, 7}, {-1.2, 1.2}, {-1e-3, 1e-3}}, {-3, 3}, 0},
    };
    const std::vector<double> rnd_d = random_finite_d(quick ? 100000 : 400000);
    for (const FnD& f : dt) {
      std::vector<double> xs = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0,
                                std::numeric_limits<double>::denorm_min(),
                                std::numeric_limits<double>::min(), std::numeric_limits<double>::max(),
                                -std::numeric_limits<double>::max(), 709.782712893384, 709.7827128933841,
                                -708.3964185322641, -745.1332191019411, -745.1332191019412};
      xs.insert(xs.end(), rnd_d.begin(), rnd_d.end());
      for (const Range& r : f.sweeps)
        for (size_t i = 0; i < n_sweep / 2; ++i) xs.push_back(r.lo + (r.hi - r.lo) * (double(i) / (n_sweep / 2 - 1)));
      for (int e = -1074; e <= 1023; e += 3) {
        const double m = std::ldexp(1.0 + (g_rng() >> 12) * 0x1p-52, e);
        xs.push_back(m);
        xs.push_back(-m);
      }
      std::vector<double> ys(xs.size());
      f.vec(xs.data(), ys.data(), xs.size());
      Stats st;
      for (size_t i = 0; i < xs.size(); ++i) {
        const double x = xs[i];
        if (f.check_max > 0 && !(std::fabs(x) <= f.check_max)) {
          if ((std::isnan(x) || std::isinf(x)) ? !std::isnan(ys[i]) : !(std::fabs(ys[i]) <= 1.0)) {
            if (st.failures++ < 5) std::printf("FAIL %s large argument x=%a got %a\n", f.name, x, ys[i]);
            g_failed = true;
          }
          continue;
        }
        check_one_d(f.name, f.bound, x, ys[i], f.ref(static_cast<long double>(x)), st);
      }
      if (st.failures) std::printf("%s: %d failures\n", f.name, st.failures);
      Row row{f.name, st.max_ulp, st.max_frac, f.bound, 0, 0, st.worst_x};
      if (bench) {
        std::vector<double> in(n_bench / 2), out(n_bench / 2);
        std::uniform_real_distribution<double> dist(f.bench.lo, f.bench.hi);
        for (double& v : in) v = dist(g_rng);
        row.ns_vec = time_loopd(f.vec, in, out, 3);
        row.ns_std = time_loopd(f.std, in, out, 2);
      }
      rows.push_back(row);
    }
  }
#endif

  print_rows(rows);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::printf("\n%s (%.1f s)\n", g_failed ? "FAILED" : "all passed", secs);
  return g_failed ? 1 : 0;
}
