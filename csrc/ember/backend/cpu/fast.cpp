// Kernels of the fused primitives (primitives/fast.h): RMSNorm, LayerNorm,
// RoPE, ScaledDotProductAttention, CrossEntropy and GatedDeltaUpdate,
// compiled once per ISA level.
//
// Half types compute in float32, float64 in float64. Sums over a row run in
// 16 fixed lanes (then a fixed tree), so every level gives the same bits;
// attention's products are fused multiply-adds per output lane in
// sequential order (no sum across lanes), so the vector width does not
// change them either: AVX2 and AVX-512 agree bit for bit, and the baseline
// (no FMA, and its own exp) is within rounding of them. The rows
// (norms, rope, cross entropy), the query blocks (attention) or the
// (batch, head) pairs (gated delta rule) are spread over the pool.
#include <cstring>
#include <type_traits>

#include "ember/backend/cpu/isa_unit.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/backend/cpu/simd_math.h"
#include "ember/backend/cpu/vec.h"

namespace ember::cpu::EMBER_ISA_NS {
namespace {

// `a`'s elements in row-major order: its own data when dense, else a copy.
template <class T>
const T* dense(const array& a, std::vector<T>& scratch) {
  if (a.row_contiguous()) return a.data<const T>();
  scratch.resize(static_cast<size_t>(a.size()));
  copy_to_dense(a, scratch.data());
  return scratch.data();
}

// n values of x as C (a view when T is C, else converted into buf)
template <class T, class C>
const C* as_compute(const T* x, int64_t n, C* buf) {
  if constexpr (std::is_same_v<T, C>) {
    return x;
  } else {
    for (int64_t k = 0; k < n; ++k) buf[k] = convert<C>(x[k]);
    return buf;
  }
}

// sum over k of x[k] (Mode 0), x[k]^2 (1) or (x[k] - m)^2 (2) in 16 fixed
// lanes, then a fixed tree, then the tail
template <int Mode, class C>
C lane_sum(const C* x, int64_t n, C m = C(0)) {
  using V16 = VecN<C, 16>;
  V16 acc = V16{};
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    V16 v;
    std::memcpy(&v, x + k, sizeof v);
    if constexpr (Mode == 1) v = v * v;
    if constexpr (Mode == 2) v = (v - m) * (v - m);
    acc = acc + v;
  }
  C l[16];
  std::memcpy(l, &acc, sizeof l);
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) l[i] = l[i] + l[i + w];
  C s = l[0];
  for (; k < n; ++k) {
    C v = x[k];
    if constexpr (Mode == 1) v = v * v;
    if constexpr (Mode == 2) v = (v - m) * (v - m);
    s = s + v;
  }
  return s;
}

int64_t row_grain(int64_t n) { return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)); }

// ---- RMSNorm, LayerNorm ---------------------------------------------------------

template <class T>
void norm_rows(const std::vector<array>& inputs, array& out, double eps, bool rms, bool has_w, bool has_b) {
  using C = compute_t<T>;
  const array& in = inputs[0];
  const int64_t n = in.ndim() ? in.shape().back() : 1;
  const int64_t rows = n ? in.size() / n : 0;
  std::vector<T> xs, ws, bs;
  const T* x = dense<T>(in, xs);
  const T* w = has_w ? dense<T>(inputs[1], ws) : nullptr;
  const T* bias = has_b ? dense<T>(inputs[has_w ? 2 : 1], bs) : nullptr;
  T* o = out.data<T>();
  std::vector<C> wc(w ? n : 0), bc(bias ? n : 0);
  for (int64_t k = 0; k < static_cast<int64_t>(wc.size()); ++k) wc[k] = convert<C>(w[k]);
  for (int64_t k = 0; k < static_cast<int64_t>(bc.size()); ++k) bc[k] = convert<C>(bias[k]);
  const C ce = static_cast<C>(eps), cn = static_cast<C>(n);
  parallel_for(rows, row_grain(n), [&](int64_t b, int64_t e) {
    std::vector<C> buf(std::is_same_v<T, C> ? 0 : n);
    for (int64_t r = b; r < e; ++r) {
      const C* xr = as_compute<T, C>(x + r * n, n, buf.data());
      T* orow = o + r * n;
      if (rms) {
        const C ss = lane_sum<1>(xr, n);
        const C inv = C(1) / std::sqrt(ss / cn + ce);
        if (w) {
          for (int64_t k = 0; k < n; ++k) orow[k] = convert<T>(xr[k] * inv * wc[k]);
        } else {
          for (int64_t k = 0; k < n; ++k) orow[k] = convert<T>(xr[k] * inv);
        }
      } else {
        const C mean = lane_sum<0>(xr, n) / cn;
        const C var = lane_sum<2>(xr, n, mean) / cn;
        const C inv = C(1) / std::sqrt(var + ce);
        if (w && bias) {
          for (int64_t k = 0; k < n; ++k) orow[k] = convert<T>((xr[k] - mean) * inv * wc[k] + bc[k]);
        } else if (w) {
          for (int64_t k = 0; k < n; ++k) orow[k] = convert<T>((xr[k] - mean) * inv * wc[k]);
        } else if (bias) {
          for (int64_t k = 0; k < n; ++k) orow[k] = convert<T>((xr[k] - mean) * inv + bc[k]);
        } else {
          for (int64_t k = 0; k < n; ++k) orow[k] = convert<T>((xr[k] - mean) * inv);
        }
      }
    }
  });
}

// ---- RoPE -------------------------------------------------------------------------

template <class T>
void rope_rows(const RoPE& p, const std::vector<array>& inputs, array& out) {
  using C = compute_t<T>;
  const array& in = inputs[0];
  const int nd = in.ndim();
  const int64_t D = in.shape(nd - 1), L = in.shape(nd - 2), B0 = in.shape(0);
  const int64_t rows = in.size() / D;
  const int64_t h = p.dims() / 2;
  std::vector<T> xs;
  const T* x = dense<T>(in, xs);
  std::vector<int64_t> offs_s;  // int64 (the op's cast), one or B0 values
  const int64_t* offs = dense<int64_t>(inputs[1], offs_s);
  std::vector<double> inv(static_cast<size_t>(h));
  if (p.has_freqs()) {
    std::vector<float> fs;
    const float* f = dense<float>(inputs[2], fs);
    for (int64_t i = 0; i < h; ++i) inv[i] = 1.0 / static_cast<double>(f[i]);
  } else {
    for (int64_t i = 0; i < h; ++i) inv[i] = std::pow(p.base(), -2.0 * static_cast<double>(i) / p.dims());
  }
  // cos/sin of every (offset, row position, pair)
  const int64_t nb = inputs[1].size();
  std::vector<C> cs(static_cast<size_t>(nb * L * h * 2));
  parallel_for(nb * L, row_grain(h * 8), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const double pos = static_cast<double>(offs[t / L] + t % L) * p.scale();
      C* c = cs.data() + t * h * 2;
      for (int64_t i = 0; i < h; ++i) {
        const double th = pos * inv[i];
        c[i] = static_cast<C>(std::cos(th));
        c[h + i] = static_cast<C>(std::sin(th));
      }
    }
  });
  T* o = out.data<T>();
  const int64_t per_b = rows / B0;
  const bool trad = p.traditional();
  parallel_for(rows, row_grain(D), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * D;
      T* orow = o + r * D;
      const int64_t tb = nb == 1 ? 0 : r / per_b;
      const C* c = cs.data() + (tb * L + r % L) * h * 2;
      const C* s = c + h;
      const int64_t st = trad ? 2 : 1, sh = trad ? 1 : h;
      for (int64_t i = 0; i < h; ++i) {
        const C a = convert<C>(xr[i * st]), bb = convert<C>(xr[i * st + sh]);
        orow[i * st] = convert<T>(a * c[i] - bb * s[i]);
        orow[i * st + sh] = convert<T>(a * s[i] + bb * c[i]);
      }
      for (int64_t k = 2 * h; k < D; ++k) orow[k] = xr[k];
    }
  });
}

// ---- Scaled dot-product attention -------------------------------------------------
// A task is one (batch, kv head, block of up to kBq query rows), the rows
// being the (query head of the group, position) pairs that share the kv
// head. Keys go kBk at a time: scores (rows x keys, from q scaled and k
// transposed), mask, online softmax (running max and sum per row), then
// acc += p v. Causal blocks past the last visible key are skipped.

constexpr int64_t kBq = 32, kBk = 128;
// rows of a register tile: 8 where the level has 32 vector registers
// (AVX-512: 8 x 2 accumulators), 4 where it has 16
#if EMBER_ISA_HAS_AVX512
constexpr int kTr = 8;
#else
constexpr int kTr = 4;
#endif

// Sc[r][0:NV W] = sum over d of Q[r][d] KT[d][0:NV W] for the tile's R rows
// (Q rows D apart, KT rows kBk apart, Sc rows kBk apart)
template <int NV, int R, class C>
void score_tile(const C* Q, int64_t D, const C* KT, C* Sc) {
  using V = typename Vec<C>::V;
  constexpr int W = Vec<C>::W;
  V a[R][NV];
  for (int r = 0; r < R; ++r)
    for (int n = 0; n < NV; ++n) a[r][n] = V{};
  for (int64_t d = 0; d < D; ++d) {
    V kv[NV];
    for (int n = 0; n < NV; ++n) kv[n] = vload<V>(KT + d * kBk + n * W);
    for (int r = 0; r < R; ++r) {
      const V qv = splat<V>(Q[r * D + d]);
      for (int n = 0; n < NV; ++n) a[r][n] = vfma(qv, kv[n], a[r][n]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int n = 0; n < NV; ++n) vstore(Sc + r * kBk + n * W, a[r][n]);
}

// W values of V's element type at p as the compute type C: float itself, or
// bfloat16 widened exactly (its bits the upper half of a float's)
template <class Vt, class C, class T>
inline Vt vload_as(const T* p) {
  if constexpr (std::is_same_v<T, C>) {
    return vload<Vt>(p);
  } else {
    static_assert(std::is_same_v<T, bfloat16_t> && std::is_same_v<C, float>, "vload_as: float or bfloat16");
    constexpr int W = sizeof(Vt) / sizeof(C);
    using U16 = VecN<uint16_t, W>;
    using U32 = VecN<uint32_t, W>;
    const U32 u = __builtin_convertvector(vload<U16>(p), U32) << 16;
    Vt v;
    std::memcpy(&v, &u, sizeof v);
    return v;
  }
}

// A[r][0:NV W] += sum over the nk keys j of P[r][j] Vb[j][0:NV W] (P rows
// kBk apart, Vb's rows vstride apart: the packed block, or a decoding
// step's cache read in place; A's rows Dp apart)
template <int NV, int R, class C, class T>
void pv_tile(const C* P, int64_t nk, const T* Vb, int64_t vstride, int64_t Dp, C* A) {
  using V = typename Vec<C>::V;
  constexpr int W = Vec<C>::W;
  V a[R][NV];
  for (int r = 0; r < R; ++r)
    for (int n = 0; n < NV; ++n) a[r][n] = vload<V>(A + r * Dp + n * W);
  for (int64_t j = 0; j < nk; ++j) {
    V vv[NV];
    for (int n = 0; n < NV; ++n) vv[n] = vload_as<V, C>(Vb + j * vstride + n * W);
    for (int r = 0; r < R; ++r) {
      const V pr = splat<V>(P[r * kBk + j]);
      for (int n = 0; n < NV; ++n) a[r][n] = vfma(pr, vv[n], a[r][n]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int n = 0; n < NV; ++n) vstore(A + r * Dp + n * W, a[r][n]);
}

// the largest of s[0:n] (NaNs skipped, as std::max skips them)
template <class C, class V, int W>
C row_max(const C* s, int64_t n) {
  C m = std::numeric_limits<C>::lowest();
  int64_t j = 0;
  if (n >= W) {
    V vm = vload<V>(s);
    for (j = W; j + W <= n; j += W) {
      const V x = vload<V>(s + j);
      vm = x > vm ? x : vm;
    }
    C l[W];
    std::memcpy(l, &vm, sizeof l);
    for (int w = 0; w < W; ++w) m = std::max(m, l[w]);
  }
  for (; j < n; ++j) m = std::max(m, s[j]);
  return m;
}

template <class T>
void sdpa_rows(const ScaledDotProductAttention& p, const std::vector<array>& inputs, array& out) {
  using C = compute_t<T>;
  using V = typename Vec<C>::V;
  constexpr int W = Vec<C>::W;
  const array &q = inputs[0], &k = inputs[1], &v = inputs[2];
  const int64_t B = q.shape(0), Hq = q.shape(1), L = q.shape(2), D = q.shape(3);
  const int64_t Hk = k.shape(1), S = k.shape(2), Dv = v.shape(3);
  const int64_t g = Hq / Hk, R = g * L, nblk = (R + kBq - 1) / kBq;
  const int64_t Dp = (Dv + W - 1) / W * W;
  using MK = ScaledDotProductAttention::MaskKind;
  const MK mk = p.mask();
  const array* mask = (mk == MK::Bool || mk == MK::Additive) ? &inputs[3] : nullptr;
  std::vector<T> sinks_s;
  const T* sinks = p.has_sinks() ? dense<T>(inputs[mask ? 4 : 3], sinks_s) : nullptr;
  const T* qd = q.data<const T>();
  const T* kd = k.data<const T>();
  const T* vd = v.data<const T>();
  const auto &qs = q.strides(), &ks = k.strides(), &vs = v.strides();
  T* od = out.data<T>();  // dense (B, Hq, L, Dv)
  const C cscale = static_cast<C>(p.scale());
  const C masked = std::numeric_limits<C>::lowest();
  struct State {
    std::vector<C> Q, KT, Vb, Sc, acc, m, l;
    std::vector<int64_t> hrow, lrow;
  };
  // each thread's scratch, kept between calls (a decoding step's attention
  // is tens of microseconds: allocating and clearing 64 KB of it a call
  // showed); its lanes past a call's keys and features hold zeros or an
  // earlier call's values, which feed only scores and accumulators that
  // are never read (as the packings' padding below)
  auto make = [&]() -> State* {
    thread_local State st;
    auto grow = [](auto& v, size_t n) {
      if (v.size() < n) v.resize(n);
    };
    grow(st.Q, kBq * D);
    grow(st.KT, D * kBk);
    grow(st.Vb, kBk * Dp);
    grow(st.Sc, kBq * kBk);
    grow(st.acc, kBq * Dp);
    grow(st.m, kBq);
    grow(st.l, kBq);
    grow(st.hrow, kBq);
    grow(st.lrow, kBq);
    return &st;
  };
  // values read in place by the accumulation instead of packed (no prepack:
  // each key block is used once): contiguous rows of float or bfloat16,
  // whole vectors (Dv = Dp)
  constexpr bool kInPlaceType = std::is_same_v<T, C> || (std::is_same_v<T, bfloat16_t> && std::is_same_v<C, float>);
  const bool v_in_place = kInPlaceType && nblk == 1 && vs[3] == 1 && Dv == Dp;
  // k transposed and v, a block of kBk keys at a time, in the compute type
  auto pack = [&](int64_t b, int64_t kh, int64_t j0, int64_t nk, C* KT, C* Vb) {
    int64_t j = 0;
#if EMBER_ISA_HAS_AVX512
// GCC 12 warns about the undefined pass-through operand inside its own
// AVX-512 intrinsic headers (a false positive, as in qmm.cpp)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
    if constexpr (std::is_same_v<C, float> && (std::is_same_v<T, float> || std::is_same_v<T, bfloat16_t>)) {
      // 16 keys x 64 bytes of features at a time as 16 x 16 32-bit words,
      // transposed in registers (word q of key t to lane t of r[q]): float
      // keys' features, or bfloat16 keys' feature pairs, each pair then split
      // into its two features widened exactly (a bfloat16's bits are a
      // float's upper half). A third of the instructions of the 8 x 8
      // transpose below, the same values.
      constexpr int64_t F = 64 / sizeof(T);  // features a word row holds
      if (ks[3] == 1 && D % F == 0) {
        const __m512i upper = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
        for (; j + 16 <= nk; j += 16) {
          const T* kr = kd + b * ks[0] + kh * ks[1] + (j0 + j) * ks[2];
          for (int64_t d = 0; d < D; d += F) {
            __m512i r[16];
            for (int t = 0; t < 16; ++t) r[t] = _mm512_loadu_si512(kr + t * ks[2] + d);
            transpose16_epi32(r);
            for (int q = 0; q < 16; ++q) {
              if constexpr (sizeof(T) == 4) {
                _mm512_storeu_si512(KT + (d + q) * kBk + j, r[q]);
              } else {
                _mm512_storeu_ps(KT + (d + 2 * q) * kBk + j, _mm512_castsi512_ps(_mm512_slli_epi32(r[q], 16)));
                _mm512_storeu_ps(KT + (d + 2 * q + 1) * kBk + j, _mm512_castsi512_ps(_mm512_and_si512(r[q], upper)));
              }
            }
          }
        }
      }
    }
#pragma GCC diagnostic pop
#endif
    if constexpr (sizeof(C) == 4) {
      // rows of contiguous keys: 8 keys x 8 features at a time, converted,
      // transposed in registers and stored as 8 rows of KT (a scalar store
      // per value made this packing most of a decoding step's attention)
      using V8 = VecN<C, 8>;
      if (ks[3] == 1 && D % 8 == 0) {
        for (; j + 8 <= nk; j += 8) {
          const T* kr = kd + b * ks[0] + kh * ks[1] + (j0 + j) * ks[2];
          for (int64_t d = 0; d < D; d += 8) {
            V8 r[8];
            for (int t = 0; t < 8; ++t)
              for (int e = 0; e < 8; ++e) r[t][e] = convert<C>(kr[t * ks[2] + d + e]);
            transpose8x8(r);
            for (int t = 0; t < 8; ++t) std::memcpy(KT + (d + t) * kBk + j, &r[t], sizeof(V8));
          }
        }
      }
    }
    for (; j < nk; ++j) {
      const T* kr = kd + b * ks[0] + kh * ks[1] + (j0 + j) * ks[2];
      for (int64_t d = 0; d < D; ++d) KT[d * kBk + j] = convert<C>(kr[d * ks[3]]);
    }
    if (v_in_place) return;  // (nblk == 1: no prepack)
    for (j = 0; j < nk; ++j) {
      const T* vr = vd + b * vs[0] + kh * vs[1] + (j0 + j) * vs[2];
      for (int64_t e = 0; e < Dv; ++e) Vb[j * Dp + e] = convert<C>(vr[e * vs[3]]);
    }
  };
  // several row blocks share a kv head: pack its keys and values once for
  // all of them (B Hk S (D + Dp) values) instead of once per block
  const int64_t nkb = (S + kBk - 1) / kBk;
  const bool prepack = nblk > 1;
  // kept by the calling thread between calls (they only grow), so repeated
  // attention calls neither page-fault nor clear megabytes; the padding
  // lanes they hold (keys past S, features past Dv) feed only scores and
  // accumulators that are never read
  // (the pool's threads reach the caller's buffers through these pointers:
  // a thread_local named inside a task would be the worker's own)
  // Packings beyond 32 MB (long prompts) live only for the call.
  thread_local std::vector<C> kt_keep, v_keep;
  std::vector<C> kt_once, v_once;
  C* KTall = nullptr;
  C* Vall = nullptr;
  if (prepack) {
    const size_t nkt = static_cast<size_t>(B * Hk * nkb * D * kBk), nv = static_cast<size_t>(B * Hk * nkb * kBk * Dp);
    const bool keep = (nkt + nv) * sizeof(C) <= (size_t(32) << 20);
    std::vector<C>& kt = keep ? kt_keep : kt_once;
    std::vector<C>& vv = keep ? v_keep : v_once;
    if (kt.size() < nkt) kt.resize(nkt);
    if (vv.size() < nv) vv.resize(nv);
    KTall = kt.data();
    Vall = vv.data();
    parallel_for(B * Hk * nkb, 1, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t jb = u % nkb, kh = (u / nkb) % Hk, b = u / (nkb * Hk);
        pack(b, kh, jb * kBk, std::min(kBk, S - jb * kBk), KTall + u * D * kBk, Vall + u * kBk * Dp);
      }
    });
  }
  dynamic_for(B * Hk * nblk, make, [&](int64_t task, State* stp) {
    State& st = *stp;
    const int64_t blk = task % nblk, kh = (task / nblk) % Hk, b = task / (nblk * Hk);
    // a block of at most 4 rows (a decoding step's query heads of one kv
    // head) in tiles of 4, not kTr: no padded rows to score and exponentiate
    const int64_t r0 = blk * kBq, nr = std::min(kBq, R - r0), tr = nr <= 4 ? 4 : kTr;
    const int64_t nrt = (nr + tr - 1) / tr * tr;
    C* Q = st.Q.data();
    int64_t lmax = 0;
    for (int64_t i = 0; i < kBq; ++i) {
      if (i < nr) {
        const int64_t h = kh * g + (r0 + i) / L, l = (r0 + i) % L;
        st.hrow[i] = h;
        st.lrow[i] = l;
        lmax = std::max(lmax, l);
        const T* qr = qd + b * qs[0] + h * qs[1] + l * qs[2];
        for (int64_t d = 0; d < D; ++d) Q[i * D + d] = convert<C>(qr[d * qs[3]]) * cscale;
        st.m[i] = sinks ? convert<C>(sinks[h]) : -std::numeric_limits<C>::infinity();
        st.l[i] = sinks ? C(1) : C(0);
      } else if (i < nrt) {
        for (int64_t d = 0; d < D; ++d) Q[i * D + d] = C(0);
        st.m[i] = C(0);
        st.l[i] = C(1);
      }
    }
    std::fill(st.acc.begin(), st.acc.begin() + nrt * Dp, C(0));
    int64_t send = S;
    if (mk == MK::Causal) send = std::min(S, std::max<int64_t>(0, lmax + S - L + 1));
    // a decoding step's cache arrives cold (the step's weights have streamed
    // through the caches since): while a task computes, it prefetches the
    // keys and values of the task its thread likely takes next (tasks go
    // round the threads), a share of them each key block
    const int64_t ahead = task + num_threads();
    const bool pf = !prepack && ks[3] == 1 && vs[3] == 1 && ahead < B * Hk * nblk;
    for (int64_t j0 = 0; j0 < send; j0 += kBk) {
      const int64_t nk = std::min(kBk, send - j0), nkp = (nk + W - 1) / W * W;
      if (pf) {
        const int64_t kh2 = ahead % Hk, b2 = ahead / Hk, nb = (send + kBk - 1) / kBk, bi = j0 / kBk;
        const char* kb = reinterpret_cast<const char*>(kd + b2 * ks[0] + kh2 * ks[1]);
        const char* vb = reinterpret_cast<const char*>(vd + b2 * vs[0] + kh2 * vs[1]);
        const int64_t kr = D * int64_t(sizeof(T)), vr = Dv * int64_t(sizeof(T));
        // (no prepack: one row block a kv head, every task the same send)
        for (int64_t j = bi * send / nb, j1 = (bi + 1) * send / nb; j < j1; ++j) {
          for (int64_t o = 0; o < kr; o += 64) __builtin_prefetch(kb + j * ks[2] * int64_t(sizeof(T)) + o, 0, 2);
          for (int64_t o = 0; o < vr; o += 64) __builtin_prefetch(vb + j * vs[2] * int64_t(sizeof(T)) + o, 0, 2);
        }
      }
      C* KT = st.KT.data();
      C* Vb = st.Vb.data();
      C* Sc = st.Sc.data();
      if (prepack) {
        const int64_t u = (b * Hk + kh) * nkb + j0 / kBk;
        KT = KTall + u * D * kBk;
        Vb = Vall + u * kBk * Dp;
      } else {
        pack(b, kh, j0, nk, KT, Vb);
      }
      // scores: TR rows (4 or kTr) x 2 vectors of keys at a time (fused multiply-adds,
      // d in order per lane), then one vector for an odd tail
      auto scores = [&](auto rows) {
        constexpr int TR = decltype(rows)::value;
        for (int64_t i = 0; i < nrt; i += TR) {
          int64_t j = 0;
          if constexpr (TR == 4 && kTr == 8)  // as the accumulation below
            for (; j + 4 * W <= nkp; j += 4 * W) score_tile<4, TR>(Q + i * D, D, KT + j, Sc + i * kBk + j);
          for (; j + 2 * W <= nkp; j += 2 * W) score_tile<2, TR>(Q + i * D, D, KT + j, Sc + i * kBk + j);
          for (; j < nkp; j += W) score_tile<1, TR>(Q + i * D, D, KT + j, Sc + i * kBk + j);
        }
      };
      if (tr == 4) scores(std::integral_constant<int, 4>{});
      else scores(std::integral_constant<int, kTr>{});
      // mask, online softmax
      for (int64_t i = 0; i < nrt; ++i) {
        C* s = Sc + i * kBk;
        if (i < nr) {
          const int64_t h = st.hrow[i], l = st.lrow[i];
          if (mk == MK::Causal) {
            const int64_t last = l + S - L;  // keys <= last are visible
            for (int64_t j = std::max<int64_t>(0, last + 1 - j0); j < nk; ++j) s[j] = masked;
          } else if (mask) {
            const auto& ms = mask->strides();
            const int64_t base = b * ms[0] + h * ms[1] + l * ms[2];
            if (mk == MK::Bool) {
              const bool* mr = mask->data<const bool>() + base;
              for (int64_t j = 0; j < nk; ++j)
                if (!mr[(j0 + j) * ms[3]]) s[j] = masked;
            } else {
              const T* mr = mask->data<const T>() + base;
              for (int64_t j = 0; j < nk; ++j) s[j] = s[j] + convert<C>(mr[(j0 + j) * ms[3]]);
            }
          }
        }
        const C mb = std::max(st.m[i], row_max<C, V, W>(s, nk));
        const C corr = std::exp(st.m[i] - mb);
        for (int64_t j = 0; j < nk; ++j) s[j] = simd::exp(s[j] - mb);  // vectorised: no reduction in the loop
        const C sum = lane_sum<0>(s, nk);
        st.l[i] = st.l[i] * corr + sum;
        st.m[i] = mb;
        if (corr != C(1)) {
          C* a = st.acc.data() + i * Dp;
          for (int64_t e = 0; e < Dp; ++e) a[e] = a[e] * corr;
        }
      }
      // acc += p v: TR rows x 2 vectors of features at a time, keys in order
      auto accumulate = [&](auto rows) {
        constexpr int TR = decltype(rows)::value;
        for (int64_t i = 0; i < nrt; i += TR) {
          C* a = st.acc.data() + i * Dp;
          // the values' rows: the packed block (Dp apart), or the cache's in place
          auto tiles = [&](const auto* src, int64_t stride) {
            int64_t e = 0;
            // four vectors where the registers hold 4 rows' 16 accumulators
            // (AVX-512): each weight's broadcast serves twice the FMAs
            if constexpr (TR == 4 && kTr == 8)
              for (; e + 4 * W <= Dp; e += 4 * W) pv_tile<4, TR, C>(Sc + i * kBk, nk, src + e, stride, Dp, a + e);
            for (; e + 2 * W <= Dp; e += 2 * W) pv_tile<2, TR, C>(Sc + i * kBk, nk, src + e, stride, Dp, a + e);
            for (; e < Dp; e += W) pv_tile<1, TR, C>(Sc + i * kBk, nk, src + e, stride, Dp, a + e);
          };
          if constexpr (kInPlaceType) {
            if (v_in_place) {
              tiles(vd + b * vs[0] + kh * vs[1] + j0 * vs[2], vs[2]);
              continue;
            }
          }
          tiles(static_cast<const C*>(Vb), Dp);
        }
      };
      if (tr == 4) accumulate(std::integral_constant<int, 4>{});
      else accumulate(std::integral_constant<int, kTr>{});
    }
    for (int64_t i = 0; i < nr; ++i) {
      const C inv = C(1) / st.l[i];
      const C* a = st.acc.data() + i * Dp;
      T* orow = od + ((b * Hq + st.hrow[i]) * L + st.lrow[i]) * Dv;
      for (int64_t e = 0; e < Dv; ++e) orow[e] = convert<T>(a[e] * inv);
    }
  });
}

// ---- CrossEntropy -------------------------------------------------------------------

template <class T>
void cross_entropy_rows(const std::vector<array>& inputs, array& out) {
  using C = compute_t<T>;
  const array& lg = inputs[0];
  const int64_t n = lg.shape().back();
  const int64_t rows = out.size();
  std::vector<T> xs;
  std::vector<int64_t> ts;
  const T* x = dense<T>(lg, xs);
  const int64_t* tg = dense<int64_t>(inputs[1], ts);
  for (int64_t r = 0; r < rows; ++r) {  // every target checked before any work
    if (tg[r] < -n || tg[r] >= n)
      throw std::out_of_range("[cross_entropy] Target " + std::to_string(tg[r]) + " at position " +
                              std::to_string(r) + " is out of bounds for " + std::to_string(n) + " classes.");
  }
  C* o = out.data<C>();
  constexpr int64_t kChunk = 1024;
  parallel_for(rows, row_grain(n), [&](int64_t b, int64_t e) {
    std::vector<C> buf(static_cast<size_t>(std::min(n, kChunk)));
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * n;
      const int64_t t = tg[r] < 0 ? tg[r] + n : tg[r];
      C m = -std::numeric_limits<C>::infinity();
      bool nan = false;
      for (int64_t k = 0; k < n; ++k) {
        const C v = convert<C>(xr[k]);
        nan = nan || v != v;
        m = std::max(m, v);
      }
      C lse;
      if (nan) {
        lse = std::numeric_limits<C>::quiet_NaN();
      } else if (std::isinf(m)) {
        lse = m;  // every logit -inf, or one +inf
      } else {
        C sum = C(0);
        for (int64_t k0 = 0; k0 < n; k0 += kChunk) {
          const int64_t cnt = std::min(kChunk, n - k0);
          for (int64_t k = 0; k < cnt; ++k) buf[k] = simd::exp(convert<C>(xr[k0 + k]) - m);
          sum = sum + lane_sum<0>(buf.data(), cnt);
        }
        lse = m + std::log(sum);
      }
      o[r] = lse - convert<C>(xr[t]);
    }
  });
}

// ---- GatedDeltaUpdate ---------------------------------------------------------------

template <class C>
void gated_delta_rows(const GatedDeltaUpdate& p, const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& qa = inputs[0];
  const int64_t B = qa.shape(0), T = qa.shape(1), Hk = qa.shape(2), Dk = qa.shape(3);
  const int64_t Hv = inputs[2].shape(2), Dv = inputs[2].shape(3);
  std::vector<C> qs, ks, vs, gs, bs, ss;
  std::vector<uint8_t> ms;
  const C* q = dense<C>(inputs[0], qs);
  const C* k = dense<C>(inputs[1], ks);
  const C* v = dense<C>(inputs[2], vs);
  const C* g = dense<C>(inputs[3], gs);
  const C* be = dense<C>(inputs[4], bs);
  const C* s0 = dense<C>(inputs[5], ss);
  const uint8_t* mask = p.has_mask() ? dense<uint8_t>(inputs[6], ms) : nullptr;
  C* y = outputs[0].data<C>();
  C* st = outputs[1].data<C>();
  const int64_t per = Dv * Dk, rep = Hv / Hk;
  const bool vg = p.vector_gate();
  parallel_for(B * Hv, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, T * per)), [&](int64_t u0,
                                                                                                   int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / Hv, h = u % Hv, hk = h / rep;
      C* S = st + u * per;
      std::copy(s0 + u * per, s0 + (u + 1) * per, S);
      for (int64_t t = 0; t < T; ++t) {
        const int64_t bt = b * T + t, vh = bt * Hv + h;
        C* yt = y + vh * Dv;
        if (mask && !mask[bt]) {
          std::fill(yt, yt + Dv, C(0));
          continue;
        }
        const C* qt = q + (bt * Hk + hk) * Dk;
        const C* kt = k + (bt * Hk + hk) * Dk;
        const C* vt = v + vh * Dv;
        const C bet = be[vh];
        for (int64_t d = 0; d < Dv; ++d) {
          C* row = S + d * Dk;
          if (vg) {
            const C* gt = g + vh * Dk;
            for (int64_t j = 0; j < Dk; ++j) row[j] = row[j] * gt[j];
          } else {
            const C gt = g[vh];
            for (int64_t j = 0; j < Dk; ++j) row[j] = row[j] * gt;
          }
          const C delta = (vt[d] - lane_dot(row, kt, Dk)) * bet;
          for (int64_t j = 0; j < Dk; ++j) row[j] = row[j] + kt[j] * delta;
          yt[d] = lane_dot(row, qt, Dk);
        }
      }
    }
  });
}

template <class F>
void float_dispatch(const char* op, Dtype t, F&& f) {
  dispatch_all(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!is_float_v<T>) {
      cpu::unsupported(op, t);
    } else {
      f(tag);
    }
  });
}

}  // namespace

void fast_eval(const Primitive& prim, const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  if (auto p = dynamic_cast<const RMSNorm*>(&prim)) {
    out.alloc();
    if (out.size() == 0) return;
    float_dispatch("RMSNorm", out.dtype(), [&](auto tag) {
      norm_rows<typename decltype(tag)::type>(inputs, out, p->eps(), true, p->has_weight(), false);
    });
  } else if (auto p = dynamic_cast<const LayerNorm*>(&prim)) {
    out.alloc();
    if (out.size() == 0) return;
    float_dispatch("LayerNorm", out.dtype(), [&](auto tag) {
      norm_rows<typename decltype(tag)::type>(inputs, out, p->eps(), false, p->has_weight(), p->has_bias());
    });
  } else if (auto p = dynamic_cast<const RoPE*>(&prim)) {
    out.alloc();
    if (out.size() == 0) return;
    float_dispatch("RoPE", out.dtype(), [&](auto tag) { rope_rows<typename decltype(tag)::type>(*p, inputs, out); });
  } else if (auto p = dynamic_cast<const ScaledDotProductAttention*>(&prim)) {
    out.alloc();
    if (out.size() == 0) return;
    float_dispatch("ScaledDotProductAttention", out.dtype(),
                   [&](auto tag) { sdpa_rows<typename decltype(tag)::type>(*p, inputs, out); });
  } else if (dynamic_cast<const CrossEntropy*>(&prim)) {
    out.alloc();
    if (out.size() == 0) return;
    float_dispatch("CrossEntropy", inputs[0].dtype(),
                   [&](auto tag) { cross_entropy_rows<typename decltype(tag)::type>(inputs, out); });
  } else if (auto p = dynamic_cast<const GatedDeltaUpdate*>(&prim)) {
    out.alloc();
    outputs[1].alloc();
    if (outputs[1].size() == 0) return;
    if (out.dtype() == Dtype::float64) {
      gated_delta_rows<double>(*p, inputs, outputs);
    } else if (out.dtype() == Dtype::float32) {
      gated_delta_rows<float>(*p, inputs, outputs);
    } else {
      cpu::unsupported("GatedDeltaUpdate", out.dtype());
    }
  }
}

}  // namespace ember::cpu::EMBER_ISA_NS

#if EMBER_ISA_BASE_UNIT
namespace ember {

bool RMSNorm::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const RMSNorm*>(&o);
  return p && p->eps_ == eps_ && p->has_weight_ == has_weight_;
}
bool LayerNorm::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const LayerNorm*>(&o);
  return p && p->eps_ == eps_ && p->has_weight_ == has_weight_ && p->has_bias_ == has_bias_;
}
bool RoPE::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const RoPE*>(&o);
  return p && p->dims_ == dims_ && p->traditional_ == traditional_ && p->base_ == base_ && p->scale_ == scale_ &&
         p->has_freqs_ == has_freqs_;
}
bool ScaledDotProductAttention::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const ScaledDotProductAttention*>(&o);
  return p && p->scale_ == scale_ && p->mask_ == mask_ && p->has_sinks_ == has_sinks_;
}
bool CrossEntropy::is_equivalent(const Primitive& o) const { return dynamic_cast<const CrossEntropy*>(&o); }
bool GatedDeltaUpdate::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const GatedDeltaUpdate*>(&o);
  return p && p->vector_gate_ == vector_gate_ && p->has_mask_ == has_mask_;
}

void RMSNorm::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(fast_eval)(*this, inputs, outputs);
}
void LayerNorm::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(fast_eval)(*this, inputs, outputs);
}
void RoPE::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(fast_eval)(*this, inputs, outputs);
}
void ScaledDotProductAttention::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(fast_eval)(*this, inputs, outputs);
}
void CrossEntropy::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(fast_eval)(*this, inputs, outputs);
}
void GatedDeltaUpdate::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(fast_eval)(*this, inputs, outputs);
}

}  // namespace ember
#endif
