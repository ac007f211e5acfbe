// FFT kernel (the FFT primitive of primitives/fft.h).
//
// Every row along the axis is gathered (with its stride) into split
// real/imaginary float32 buffers and transformed there (a contiguous complex
// row whose first stage is radix 8 is read by that stage directly):
//
//   * lengths whose prime factors are all <= kMaxRadix: an iterative Stockham
//     (autosort, decimation in frequency) mixed-radix FFT -- radix 8, 4, 2, 3 and 5
//     butterflies written out, any other small prime through a direct
//     r-point DFT. Stage j splits the current length L = r*m: for every
//     p < m and every one of the s interleaved sub-sequences q,
//       y[q + s(r p + k)] = w_L^(p k) * sum_j x[q + s(p + j m)] w_r^(j k),
//     then s *= r, L = m. The result comes out in natural order, and the
//     inner loop runs over whichever of p or q is longer (contiguous in q);
//   * other lengths: Bluestein's chirp-z algorithm, the DFT as a circular
//     convolution of length M >= 2n - 1 (the smallest 2^a 3^b 5^c) computed
//     with the mixed-radix plan; the chirp exp(-i pi k^2 / n) is evaluated
//     in double with k^2 reduced mod 2n.
//
// Twiddles are computed in double and rounded once (long radix-8 stages
// keep only w^p and derive its powers, see Stage::derived); plans (stages,
// twiddles, chirp and the transformed chirp filter) are cached by length.
// Inverse transforms conjugate on the way in and out. R2C of even length
// packs the real row into a half-length complex one and untangles the
// result (even-length C2R packs the other way); odd lengths transform the
// real row as a complex one, and odd C2R rebuilds the full Hermitian spectrum. Scratch comes from the caching allocator.
// Rows are spread over the thread pool when there are enough of them;
// otherwise each stage of a long transform is split across the threads.
#include "ember/backend/cpu/isa_unit.h"
#include "ember/backend/cpu/vec.h"

namespace ember::cpu::EMBER_ISA_NS {

namespace {

constexpr int kMaxRadix = 32;
constexpr double kPi = 3.14159265358979323846;
constexpr int64_t kParMin = int64_t(1) << 14;  // split one transform across threads from here

struct Stage {
  int r;
  int64_t m, s;                 // sub-length after this stage, interleave before it
  std::vector<float> twr, twi;  // w_L^(p k) at (k - 1) * m + p (only k = 1 when derived)
  // Radix 8 over a long sub-length keeps only w_L^p and derives the other
  // powers in registers (at most three products deep, a few ulp): the full
  // table would be 7/8 of the data's size, streamed from memory beside it.
  bool derived = false;
  std::vector<float> wr, wi;    // w_r^j
};

struct Plan {
  int64_t n = 0;
  std::vector<Stage> stages;
  // Bluestein
  bool bluestein = false;
  int64_t M = 0;
  std::shared_ptr<const Plan> sub;
  std::vector<float> cr, ci;  // chirp exp(-i pi k^2 / n), k < n
  std::vector<float> Br, Bi;  // FFT_M of the conjugate chirp filter, / M
};

std::vector<int> factor(int64_t n) {
  std::vector<int> f;
  while (n % 8 == 0) f.push_back(8), n /= 8;
  while (n % 4 == 0) f.push_back(4), n /= 4;
  while (n % 2 == 0) f.push_back(2), n /= 2;
  for (int p = 3; p <= kMaxRadix && n > 1; p += 2)
    while (n % p == 0) f.push_back(p), n /= p;
  if (n > 1) return {};  // a prime factor too large for a direct butterfly
  return f;
}

bool smooth(int64_t n) {
  for (int p : {2, 3, 5})
    while (n % p == 0) n /= p;
  return n == 1;
}

// Parallel (or not) loop over [0, n).
template <class F>
void pfor(int64_t n, bool par, int64_t grain, const F& f) {
  if (par && n >= 2 * grain) {
    parallel_for(n, grain, [&](int64_t b, int64_t e) { f(b, e); });
  } else {
    f(0, n);
  }
}

// ---- butterflies: a = inputs (r values), writes b = DFT_r(a)
// (T is float, or a vector of floats for the 2/4/8 butterflies)
template <int R, class T = float>
inline void butterfly(const T* ar, const T* ai, T* br, T* bi, const Stage& st) {
  if constexpr (R == 2) {
    br[0] = ar[0] + ar[1], bi[0] = ai[0] + ai[1];
    br[1] = ar[0] - ar[1], bi[1] = ai[0] - ai[1];
  } else if constexpr (R == 4) {
    T t0r = ar[0] + ar[2], t0i = ai[0] + ai[2], t1r = ar[0] - ar[2], t1i = ai[0] - ai[2];
    T t2r = ar[1] + ar[3], t2i = ai[1] + ai[3], t3r = ar[1] - ar[3], t3i = ai[1] - ai[3];
    br[0] = t0r + t2r, bi[0] = t0i + t2i;
    br[2] = t0r - t2r, bi[2] = t0i - t2i;
    br[1] = t1r + t3i, bi[1] = t1i - t3r;
    br[3] = t1r - t3i, bi[3] = t1i + t3r;
  } else if constexpr (R == 8) {
    // two 4-point DFTs (even and odd inputs), combined with w_8^k
    constexpr float h = 0.70710678118654752440f;
    T er[4] = {ar[0], ar[2], ar[4], ar[6]}, ei[4] = {ai[0], ai[2], ai[4], ai[6]};
    T orr[4] = {ar[1], ar[3], ar[5], ar[7]}, oi[4] = {ai[1], ai[3], ai[5], ai[7]};
    T Er[4], Ei[4], Or[4], Oi[4];
    butterfly<4, T>(er, ei, Er, Ei, st);
    butterfly<4, T>(orr, oi, Or, Oi, st);
    // w_8^1 = h (1 - i), w_8^2 = -i, w_8^3 = -h (1 + i)
    T t1r = h * (Or[1] + Oi[1]), t1i = h * (Oi[1] - Or[1]);
    T t2r = Oi[2], t2i = -Or[2];
    T t3r = h * (Oi[3] - Or[3]), t3i = -h * (Or[3] + Oi[3]);
    br[0] = Er[0] + Or[0], bi[0] = Ei[0] + Oi[0];
    br[4] = Er[0] - Or[0], bi[4] = Ei[0] - Oi[0];
    br[1] = Er[1] + t1r, bi[1] = Ei[1] + t1i;
    br[5] = Er[1] - t1r, bi[5] = Ei[1] - t1i;
    br[2] = Er[2] + t2r, bi[2] = Ei[2] + t2i;
    br[6] = Er[2] - t2r, bi[6] = Ei[2] - t2i;
    br[3] = Er[3] + t3r, bi[3] = Ei[3] + t3i;
    br[7] = Er[3] - t3r, bi[7] = Ei[3] - t3i;
  } else if constexpr (R == 3) {
    constexpr float h = 0.86602540378443864676f;
    float sr = ar[1] + ar[2], si = ai[1] + ai[2], dr = ar[1] - ar[2], di = ai[1] - ai[2];
    float mr = ar[0] - 0.5f * sr, mi = ai[0] - 0.5f * si;
    br[0] = ar[0] + sr, bi[0] = ai[0] + si;
    br[1] = mr + h * di, bi[1] = mi - h * dr;
    br[2] = mr - h * di, bi[2] = mi + h * dr;
  } else if constexpr (R == 5) {
    constexpr float c1 = 0.30901699437494742410f, c2 = -0.80901699437494742410f;
    constexpr float s1 = 0.95105651629515357212f, s2 = 0.58778525229247312917f;
    float p1r = ar[1] + ar[4], p1i = ai[1] + ai[4], m1r = ar[1] - ar[4], m1i = ai[1] - ai[4];
    float p2r = ar[2] + ar[3], p2i = ai[2] + ai[3], m2r = ar[2] - ar[3], m2i = ai[2] - ai[3];
    br[0] = ar[0] + p1r + p2r, bi[0] = ai[0] + p1i + p2i;
    float q1r = ar[0] + c1 * p1r + c2 * p2r, q1i = ai[0] + c1 * p1i + c2 * p2i;
    float q2r = ar[0] + c2 * p1r + c1 * p2r, q2i = ai[0] + c2 * p1i + c1 * p2i;
    // -i (s1 m1 + s2 m2) and -i (s2 m1 - s1 m2)
    float u1r = s1 * m1i + s2 * m2i, u1i = -(s1 * m1r + s2 * m2r);
    float u2r = s2 * m1i - s1 * m2i, u2i = -(s2 * m1r - s1 * m2r);
    br[1] = q1r + u1r, bi[1] = q1i + u1i;
    br[4] = q1r - u1r, bi[4] = q1i - u1i;
    br[2] = q2r + u2r, bi[2] = q2i + u2i;
    br[3] = q2r - u2r, bi[3] = q2i - u2i;
  } else {
    const int r = st.r;
    for (int k = 0; k < r; ++k) {
      float sr = 0, si = 0;
      int jk = 0;
      for (int j = 0; j < r; ++j) {
        float wr = st.wr[jk], wi = st.wi[jk];
        sr += ar[j] * wr - ai[j] * wi;
        si += ar[j] * wi + ai[j] * wr;
        jk += k;
        if (jk >= r) jk -= r;
      }
      br[k] = sr, bi[k] = si;
    }
  }
}

constexpr int64_t kDerivedMin = int64_t(1) << 14;  // sub-lengths m that use derived twiddles

using v8f = VecN<float, 8>;

// w^2 .. w^7 from w = (wr[1], wi[1]): at most three products deep.
template <class T>
inline void derive_powers(T* wr, T* wi) {
  auto mul = [&](int c, int a, int b) {
    wr[c] = wr[a] * wr[b] - wi[a] * wi[b];
    wi[c] = wr[a] * wi[b] + wi[a] * wr[b];
  };
  mul(2, 1, 1), mul(4, 2, 2), mul(3, 1, 2), mul(5, 1, 4), mul(6, 2, 4), mul(7, 3, 4);
}

// Where the first stage reads: split real/imaginary rows, or the caller's
// interleaved complex row (conjugated by sg), saving the pass that splits it.
struct SplitSrc {
  const float* xr;
  const float* xi;
  template <class T>
  void load(int64_t i, T& re, T& im) const {
    std::memcpy(&re, xr + i, sizeof(T));
    std::memcpy(&im, xi + i, sizeof(T));
  }
};
struct InterleavedSrc {
  const float* xc;
  float sg;
  template <class T>
  void load(int64_t i, T& re, T& im) const {
    if constexpr (std::is_same_v<T, float>) {
      re = xc[2 * i], im = sg * xc[2 * i + 1];
    } else {
      v8f a, b;
      std::memcpy(&a, xc + 2 * i, sizeof(v8f));
      std::memcpy(&b, xc + 2 * i + 8, sizeof(v8f));
      re = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
      im = sg * __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
    }
  }
};

// The first radix-8 stage (interleave 1) for p in [p0, p1): eight butterflies
// at once, one per vector lane, whose eight outputs each land next to each
// other (y[8p + k]) after a register transpose -- where the plain loop
// vectorizes over p only with one scalar store per output. The last p that
// do not fill a vector go one at a time (T = float).
template <bool kDerived, class T, class Src>
inline void first_stage8_at(const Stage& st, const Src& src, float* __restrict yr, float* __restrict yi, int64_t p) {
  const int64_t m = st.m;
  T ar[8], ai[8], br[8], bi[8], wr[8], wi[8];
  for (int j = 0; j < 8; ++j) src.template load<T>(p + j * m, ar[j], ai[j]);
  butterfly<8, T>(ar, ai, br, bi, st);
  if constexpr (kDerived) {
    std::memcpy(&wr[1], st.twr.data() + p, sizeof(T));
    std::memcpy(&wi[1], st.twi.data() + p, sizeof(T));
    derive_powers(wr, wi);
  } else {
    for (int k = 1; k < 8; ++k) {
      std::memcpy(&wr[k], st.twr.data() + (k - 1) * m + p, sizeof(T));
      std::memcpy(&wi[k], st.twi.data() + (k - 1) * m + p, sizeof(T));
    }
  }
  for (int k = 1; k < 8; ++k) {
    T r = br[k] * wr[k] - bi[k] * wi[k];
    bi[k] = br[k] * wi[k] + bi[k] * wr[k];
    br[k] = r;
  }
  if constexpr (std::is_same_v<T, v8f>) {
    transpose8x8(br);
    transpose8x8(bi);
  }
  std::memcpy(yr + 8 * p, br, sizeof(br));
  std::memcpy(yi + 8 * p, bi, sizeof(bi));
}

template <bool kDerived, class Src>
void first_stage8(const Stage& st, const Src& src, float* __restrict yr, float* __restrict yi, int64_t p0,
                  int64_t p1) {
  int64_t p = p0;
  for (; p + 8 <= p1; p += 8) first_stage8_at<kDerived, v8f>(st, src, yr, yi, p);
  for (; p < p1; ++p) first_stage8_at<kDerived, float>(st, src, yr, yi, p);
}

template <int R, bool kDerived = false>
void run_stage(const Stage& st, const float* __restrict xr, const float* __restrict xi, float* __restrict yr,
               float* __restrict yi, int64_t p0, int64_t p1, int64_t q0, int64_t q1) {
  const int r = R ? R : st.r;
  const int64_t m = st.m, s = st.s;
  const float* twr = st.twr.data();
  const float* twi = st.twi.data();
  float ar[kMaxRadix], ai[kMaxRadix], br[kMaxRadix], bi[kMaxRadix];
  auto one = [&](int64_t p, int64_t q) {
    for (int j = 0; j < r; ++j) {
      ar[j] = xr[q + s * (p + j * m)];
      ai[j] = xi[q + s * (p + j * m)];
    }
    butterfly<R>(ar, ai, br, bi, st);
    const int64_t o = q + s * r * p;
    yr[o] = br[0], yi[o] = bi[0];
    if constexpr (kDerived) {
      float wr[8], wi[8];
      wr[1] = twr[p], wi[1] = twi[p];
      derive_powers(wr, wi);
      for (int k = 1; k < 8; ++k) {
        yr[o + s * k] = br[k] * wr[k] - bi[k] * wi[k];
        yi[o + s * k] = br[k] * wi[k] + bi[k] * wr[k];
      }
    } else {
      for (int k = 1; k < r; ++k) {
        float wr = twr[(k - 1) * m + p], wi = twi[(k - 1) * m + p];
        yr[o + s * k] = br[k] * wr - bi[k] * wi;
        yi[o + s * k] = br[k] * wi + bi[k] * wr;
      }
    }
  };
  if constexpr (R == 8) {
    if (s == 1) return first_stage8<kDerived>(st, SplitSrc{xr, xi}, yr, yi, p0, p1);
  }
  if (s >= 8) {
    for (int64_t p = p0; p < p1; ++p)
#pragma GCC ivdep
      for (int64_t q = q0; q < q1; ++q) one(p, q);
  } else {
    for (int64_t q = q0; q < q1; ++q)
#pragma GCC ivdep
      for (int64_t p = p0; p < p1; ++p) one(p, q);
  }
}

void stage(const Stage& st, const float* xr, const float* xi, float* yr, float* yi, bool par) {
  auto go = [&](int64_t p0, int64_t p1, int64_t q0, int64_t q1) {
    switch (st.r) {
      case 2: run_stage<2>(st, xr, xi, yr, yi, p0, p1, q0, q1); break;
      case 3: run_stage<3>(st, xr, xi, yr, yi, p0, p1, q0, q1); break;
      case 4: run_stage<4>(st, xr, xi, yr, yi, p0, p1, q0, q1); break;
      case 5: run_stage<5>(st, xr, xi, yr, yi, p0, p1, q0, q1); break;
      case 8:
        if (st.derived) run_stage<8, true>(st, xr, xi, yr, yi, p0, p1, q0, q1);
        else run_stage<8>(st, xr, xi, yr, yi, p0, p1, q0, q1);
        break;
      default: run_stage<0>(st, xr, xi, yr, yi, p0, p1, q0, q1); break;
    }
  };
  const int64_t m = st.m, s = st.s;
  if (!par || m * s * st.r < kParMin) {
    go(0, m, 0, s);
  } else if (m >= s) {
    parallel_for(m, std::max<int64_t>(1, 4096 / s), [&](int64_t b, int64_t e) { go(b, e, 0, s); });
  } else {
    parallel_for(s, std::max<int64_t>(8, 4096 / m), [&](int64_t b, int64_t e) { go(0, m, b, e); });
  }
}

// Forward DFT of (ar, ai) using (br, bi) as scratch; returns the buffer pair
// holding the result (0: a, 1: b).
// (from stage `first` on: run_plain_interleaved has done the first itself)
int run_plain(const Plan& P, float* ar, float* ai, float* br, float* bi, bool par, size_t first = 0) {
  int cur = 0;
  for (size_t i = first; i < P.stages.size(); ++i) {
    if (cur == 0) stage(P.stages[i], ar, ai, br, bi, par);
    else stage(P.stages[i], br, bi, ar, ai, par);
    cur ^= 1;
  }
  return cur;
}

// Whether run_plain_interleaved applies: a first stage of radix 8.
bool reads_interleaved(const Plan& P) { return !P.bluestein && !P.stages.empty() && P.stages[0].r == 8; }

// run_plain on the interleaved complex row xc (conjugated by sg), which the
// first stage reads in place of (ar, ai); (ar, ai) then serve as scratch.
int run_plain_interleaved(const Plan& P, const float* xc, float sg, float* ar, float* ai, float* br, float* bi,
                          bool par) {
  const Stage& st0 = P.stages[0];
  const InterleavedSrc src{xc, sg};
  auto first = [&](int64_t b, int64_t e) {
    if (st0.derived) first_stage8<true>(st0, src, ar, ai, b, e);
    else first_stage8<false>(st0, src, ar, ai, b, e);
  };
  if (!par || st0.m * 8 < kParMin) first(0, st0.m);
  else parallel_for(st0.m, 4096, first);
  return run_plain(P, ar, ai, br, bi, par, 1);
}

std::shared_ptr<const Plan> get_plan(int64_t n);

std::shared_ptr<const Plan> make_plan(int64_t n) {
  auto P = std::make_shared<Plan>();
  P->n = n;
  std::vector<int> f = factor(n);
  if (n == 1 || !f.empty()) {
    int64_t L = n, s = 1;
    for (int r : f) {
      Stage st;
      st.r = r;
      st.m = L / r;
      st.s = s;
      st.derived = r == 8 && st.m >= kDerivedMin;
      const int kmax = st.derived ? 1 : r - 1;
      st.twr.resize(kmax * st.m);
      st.twi.resize(kmax * st.m);
      for (int k = 1; k <= kmax; ++k)
        for (int64_t p = 0; p < st.m; ++p) {
          // angle of w_L^(p k), with p k reduced mod L
          double a = -2.0 * kPi * static_cast<double>((p * k) % L) / static_cast<double>(L);
          st.twr[(k - 1) * st.m + p] = static_cast<float>(std::cos(a));
          st.twi[(k - 1) * st.m + p] = static_cast<float>(std::sin(a));
        }
      st.wr.resize(r);
      st.wi.resize(r);
      for (int j = 0; j < r; ++j) {
        double a = -2.0 * kPi * j / r;
        st.wr[j] = static_cast<float>(std::cos(a));
        st.wi[j] = static_cast<float>(std::sin(a));
      }
      P->stages.push_back(std::move(st));
      L /= r;
      s *= r;
    }
    return P;
  }
  // Bluestein
  P->bluestein = true;
  int64_t M = 2 * n - 1;
  while (!smooth(M)) ++M;
  P->M = M;
  P->sub = get_plan(M);
  P->cr.resize(n);
  P->ci.resize(n);
  const unsigned __int128 two_n = 2 * static_cast<unsigned __int128>(n);
  for (int64_t k = 0; k < n; ++k) {
    auto k2 = static_cast<int64_t>((static_cast<unsigned __int128>(k) * k) % two_n);
    double a = -kPi * static_cast<double>(k2) / static_cast<double>(n);
    P->cr[k] = static_cast<float>(std::cos(a));
    P->ci[k] = static_cast<float>(std::sin(a));
  }
  std::vector<float> ar(M, 0.f), ai(M, 0.f), br(M), bi(M);
  // b_k = conj(c_k) for |k| < n, circularly
  for (int64_t k = 0; k < n; ++k) {
    ar[k] = P->cr[k], ai[k] = -P->ci[k];
    if (k > 0) ar[M - k] = P->cr[k], ai[M - k] = -P->ci[k];
  }
  int w = run_plain(*P->sub, ar.data(), ai.data(), br.data(), bi.data(), false);
  std::vector<float>& rr = w ? br : ar;
  std::vector<float>& ri = w ? bi : ai;
  P->Br.resize(M);
  P->Bi.resize(M);
  const float inv = static_cast<float>(1.0 / static_cast<double>(M));
  for (int64_t k = 0; k < M; ++k) P->Br[k] = rr[k] * inv, P->Bi[k] = ri[k] * inv;
  return P;
}

std::shared_ptr<const Plan> get_plan(int64_t n) {
  static std::mutex mu;
  static std::map<int64_t, std::shared_ptr<const Plan>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
  }
  auto P = make_plan(n);  // built outside the lock (Bluestein asks for its sub-plan)
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 256) cache.clear();
  return cache.emplace(n, P).first->second;
}

// e^(-2 pi i k / n) for k <= n/2 (the even-length rfft's post-processing).
std::shared_ptr<const std::vector<float>> real_twiddles(int64_t n) {
  static std::mutex mu;
  static std::map<int64_t, std::shared_ptr<const std::vector<float>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  auto v = std::make_shared<std::vector<float>>(2 * (n / 2 + 1));
  for (int64_t k = 0; k <= n / 2; ++k) {
    double a = -2.0 * kPi * static_cast<double>(k) / static_cast<double>(n);
    (*v)[2 * k] = static_cast<float>(std::cos(a));
    (*v)[2 * k + 1] = static_cast<float>(std::sin(a));
  }
  if (cache.size() > 256) cache.clear();
  return cache.emplace(n, v).first->second;
}

// Forward DFT of the row in (ar, ai) (length n); returns the buffer pair
// holding the result: (ar, ai) or the start of `work` (re at work, im at
// work + n). `work` has room for 4 * max(n, M) floats.
// With xc, the input is read from the interleaved row xc (conjugated by sg)
// instead of (ar, ai); only where reads_interleaved(P).
std::pair<float*, float*> transform(const Plan& P, float* ar, float* ai, float* work, bool par,
                                    const float* xc = nullptr, float sg = 1.f) {
  const int64_t n = P.n;
  if (!P.bluestein) {
    float* br = work;
    float* bi = work + n;
    int w = xc ? run_plain_interleaved(P, xc, sg, ar, ai, br, bi, par) : run_plain(P, ar, ai, br, bi, par);
    if (w) return {br, bi};
    return {ar, ai};
  }
  const int64_t M = P.M;
  float* ur = work;
  float* ui = work + M;
  float* vr = work + 2 * M;
  float* vi = work + 3 * M;
  const float *cr = P.cr.data(), *ci = P.ci.data(), *Br = P.Br.data(), *Bi = P.Bi.data();
  pfor(M, par, kParMin, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      if (k < n) {
        ur[k] = ar[k] * cr[k] - ai[k] * ci[k];
        ui[k] = ar[k] * ci[k] + ai[k] * cr[k];
      } else {
        ur[k] = 0.f, ui[k] = 0.f;
      }
    }
  });
  int w = run_plain(*P.sub, ur, ui, vr, vi, par);
  float* xr = w ? vr : ur;
  float* xi = w ? vi : ui;
  // conj(X * B): the inverse transform as a forward one of the conjugate
  pfor(M, par, kParMin, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      float re = xr[k] * Br[k] - xi[k] * Bi[k];
      float im = xr[k] * Bi[k] + xi[k] * Br[k];
      xr[k] = re, xi[k] = -im;
    }
  });
  float* yr = w ? ur : vr;
  float* yi = w ? ui : vi;
  int w2 = run_plain(*P.sub, xr, xi, yr, yi, par);
  float* zr = w2 ? yr : xr;
  float* zi = w2 ? yi : xi;
  pfor(n, par, kParMin, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      float re = zr[k], im = -zi[k];
      ar[k] = re * cr[k] - im * ci[k];
      ai[k] = re * ci[k] + im * cr[k];
    }
  });
  return {ar, ai};
}

}  // namespace

void fft_eval(const FFT& p, const std::vector<array>& inputs, std::vector<array>& outputs) {
  using Kind = FFT::Kind;
  constexpr Kind C2C = FFT::C2C, R2C = FFT::R2C, C2R = FFT::C2R;
  const array& in = inputs[0];
  array& out = outputs[0];
  out.alloc();
  if (out.size() == 0) return;
  const int ax = p.axis();
  const int nd = in.ndim();
  const int64_t n = p.n();
  const int64_t Lin = in.shape(ax), Lout = out.shape(ax);
  const int64_t is = in.strides()[ax];
  const Strides ostr = row_strides(out.shape());
  const int64_t os = ostr[ax];
  const int64_t rows = out.size() / Lout;
  // the other dims, for row offsets
  std::vector<int64_t> dsize, din, dout;
  for (int d = 0; d < nd; ++d)
    if (d != ax) dsize.push_back(in.shape(d)), din.push_back(in.strides()[d]), dout.push_back(ostr[d]);
  auto offsets = [&](int64_t row, int64_t& io, int64_t& oo) {
    io = 0, oo = 0;
    for (int d = static_cast<int>(dsize.size()) - 1; d >= 0; --d) {
      int64_t i = row % dsize[d];
      row /= dsize[d];
      io += i * din[d], oo += i * dout[d];
    }
  };
  // Even-length real input: the n/2-point complex transform of
  // z_t = x_2t + i x_2t+1, then X_k = E_k + w^k O_k with
  // E_k = (Z_k + conj Z_(h-k)) / 2, O_k = (Z_k - conj Z_(h-k)) / 2i.
  // Even-length C2R runs the same packing backwards: with h = n/2,
  // Z_k = (X_k + conj X_(h-k)) + i w^-k (X_k - conj X_(h-k)) for k < h, whose
  // inverse transform holds x_2t in its real and x_2t+1 in its imaginary part.
  const bool half_real = (p.kind() == R2C || p.kind() == C2R) && n % 2 == 0;
  const int64_t tn = half_real ? n / 2 : n;  // complex transform length
  auto P = cpu::get_plan(tn);
  std::shared_ptr<const std::vector<float>> rtw;
  if (half_real) rtw = cpu::real_twiddles(n);
  const int64_t work_len = 4 * std::max<int64_t>(tn, P->bluestein ? P->M : 0);
  const float scale = static_cast<float>(p.scale());
  const float sg = p.inverse() ? -1.f : 1.f;  // conjugation of input and output
  const Kind kind = p.kind();
  const float* fin = kind == R2C ? in.data<float>() : reinterpret_cast<const float*>(in.data<complex64_t>());
  float* fout = kind == C2R ? out.data<float>() : reinterpret_cast<float*>(out.data<complex64_t>());

  auto do_row = [&](int64_t row, float* mem, bool par) {
    int64_t io, oo;
    offsets(row, io, oo);
    float* ar = mem;
    float* ai = mem + tn;
    float* work = mem + 2 * tn;
    // a contiguous complex row whose plan starts with radix 8 is read by
    // the first stage itself
    const bool fused = kind == C2C && is == 1 && cpu::reads_interleaved(*P);
    if (!fused) cpu::pfor(tn, par, cpu::kParMin, [&](int64_t b, int64_t e) {
      if (half_real && kind == R2C && is == 1) {
        const float* src = fin + io;
        for (int64_t t = b; t < e; ++t) ar[t] = src[2 * t], ai[t] = src[2 * t + 1];
      } else if (half_real && kind == R2C) {
        for (int64_t t = b; t < e; ++t) ar[t] = fin[io + 2 * t * is], ai[t] = fin[io + (2 * t + 1) * is];
      } else if (kind == C2C && is == 1) {
        const float* src = fin + 2 * io;
        for (int64_t t = b; t < e; ++t) ar[t] = src[2 * t], ai[t] = sg * src[2 * t + 1];
      } else if (half_real) {
        const float* w = rtw->data();
        for (int64_t k = b; k < e; ++k) {
          const float* pa = fin + 2 * (io + k * is);
          const float* pb = fin + 2 * (io + (tn - k) * is);
          // the imaginary parts of bins 0 and n/2 are ignored
          float xr = pa[0], xi = k == 0 ? 0.f : pa[1];
          float yr = pb[0], yi = k == 0 ? 0.f : -pb[1];
          float sr = xr + yr, si = xi + yi, dr = xr - yr, di = xi - yi;
          float wr = w[2 * k], wi = -w[2 * k + 1];  // w^-k
          float er = dr * wr - di * wi, ei = dr * wi + di * wr;
          // Z = S + i E, conjugated for the inverse
          ar[k] = sr - ei, ai[k] = -(si + er);
        }
      } else if (kind == R2C) {
        for (int64_t t = b; t < e; ++t) ar[t] = fin[io + t * is], ai[t] = 0.f;
      } else if (kind == C2C) {
        for (int64_t t = b; t < e; ++t) {
          const float* p = fin + 2 * (io + t * is);
          ar[t] = p[0], ai[t] = sg * p[1];
        }
      } else {  // C2R: Hermitian extension of the Lin = n/2+1 given bins, conjugated
        for (int64_t t = b; t < e; ++t) {
          if (t < Lin) {
            const float* p = fin + 2 * (io + t * is);
            ar[t] = p[0], ai[t] = -p[1];
          } else {
            const float* p = fin + 2 * (io + (n - t) * is);
            ar[t] = p[0], ai[t] = p[1];
          }
        }
      }
    });
    {
      auto [rr, ri] = cpu::transform(*P, ar, ai, work, par, fused ? fin + 2 * io : nullptr, sg);
      ar = rr, ai = ri;  // the output pass reads the result where it is
    }
    cpu::pfor(Lout, par, cpu::kParMin, [&](int64_t b, int64_t e) {
      if (half_real && kind == C2R) {
        for (int64_t t = b; t < e; ++t) {
          if (t % 2 == 0) fout[oo + t * os] = ar[t / 2] * scale;
          else fout[oo + t * os] = -ai[t / 2] * scale;
        }
      } else if (half_real) {
        const float* w = rtw->data();
        const float hs = 0.5f * scale;
        auto bin = [&](int64_t k, int64_t k1, int64_t k2, float* p) {
          float zr = ar[k1], zi = ai[k1], cr = ar[k2], ci = -ai[k2];
          float er = zr + cr, ei = zi + ci, dr = zr - cr, di = zi - ci;
          float orr = di, oi = -dr;  // (Z - conj Z') / i, times 2
          float wr = w[2 * k], wi = w[2 * k + 1];
          p[0] = hs * (er + orr * wr - oi * wi);
          p[1] = hs * (ei + orr * wi + oi * wr);
        };
        // bins 0 and n/2 both pair Z_0 with itself; the others Z_k with Z_(h-k)
        const int64_t mb = std::max<int64_t>(b, 1), me = std::min<int64_t>(e, tn);
        if (b == 0) bin(0, 0, 0, fout + 2 * oo);
        if (os == 1) {
          float* dst = fout + 2 * oo;
          for (int64_t k = mb; k < me; ++k) bin(k, k, tn - k, dst + 2 * k);
        } else {
          for (int64_t k = mb; k < me; ++k) bin(k, k, tn - k, fout + 2 * (oo + k * os));
        }
        if (e == tn + 1) bin(tn, 0, 0, fout + 2 * (oo + tn * os));
      } else if (kind == C2R) {
        for (int64_t t = b; t < e; ++t) fout[oo + t * os] = ar[t] * scale;
      } else if (os == 1) {
        float* dst = fout + 2 * oo;
        const float si = sg * scale;
        for (int64_t t = b; t < e; ++t) dst[2 * t] = ar[t] * scale, dst[2 * t + 1] = ai[t] * si;
      } else {
        for (int64_t t = b; t < e; ++t) {
          float* p = fout + 2 * (oo + t * os);
          p[0] = ar[t] * scale, p[1] = sg * ai[t] * scale;
        }
      }
    });
  };

  const size_t mem_len = static_cast<size_t>(2 * tn + work_len);
  const int nt = cpu::num_threads();
  if (rows >= 2 * nt || tn < cpu::kParMin) {
    // rows spread over the threads, each with its own scratch
    const int64_t grain = std::max<int64_t>(1, cpu::kParMin / std::max<int64_t>(tn, 1));
    cpu::parallel_for(rows, grain, [&](int64_t b, int64_t e) {
      auto buf = allocator::malloc(mem_len * sizeof(float));
      float* mem = static_cast<float*>(buf->ptr());
      for (int64_t r = b; r < e; ++r) do_row(r, mem, false);
    });
  } else {
    auto buf = allocator::malloc(mem_len * sizeof(float));
    float* mem = static_cast<float*>(buf->ptr());
    for (int64_t r = 0; r < rows; ++r) do_row(r, mem, true);
  }
}

}  // namespace ember::cpu::EMBER_ISA_NS

#if EMBER_ISA_BASE_UNIT
namespace ember {

bool FFT::is_equivalent(const Primitive& o) const {
  auto* p = dynamic_cast<const FFT*>(&o);
  return p && p->kind_ == kind_ && p->axis_ == axis_ && p->inverse_ == inverse_ && p->n_ == n_ &&
         p->scale_ == scale_;
}

void FFT::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(fft_eval)(*this, inputs, outputs);
}

}  // namespace ember
#endif
