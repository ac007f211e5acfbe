// Matmul: float32 on the FMA levels through Ember's own packed kernel
// (below); float64, complex64 and float32 at the baseline through OpenBLAS.
// Operands whose matrices are row- or column-major (any leading dimension,
// any batch strides, broadcast included) are passed as they are with the
// matching transpose flag; others are copied once. Work is split across
// cores by Ember's pool (whole products of a batch; the tiles of one float32
// product; row/column blocks of one OpenBLAS product, OpenBLAS
// single-threaded inside). Integer and bool matmul use a plain loop; half
// types are converted to float32 tile by tile, except bfloat16 on AVX-512
// CPUs with the BF16 extension, whose packed kernel multiplies pairs of k,
// and on CPUs with AMX-BF16, whose tile unit multiplies 32 values of k a step.
// Compiled once per ISA level (backend/cpu/isa.h): the kernel, the
// conversions and the integer loop are the level's.

#include "ember/backend/cpu/isa_unit.h"

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/backend/cpu/vec.h"

namespace ember::cpu::EMBER_ISA_NS {

namespace {

// A matrix operand: its last two dims row-major (ld = row stride, trans
// false) or column-major (trans true) with any leading dimension, and any
// batch strides (0 for broadcast batch dims). Operands laid out otherwise
// (negative or interleaved strides) are made dense first.
struct MatView {
  array arr;
  bool trans = false;
  int64_t ld = 0;
  std::vector<int64_t> offsets;  // element offset of each batch item
};

std::vector<int64_t> batch_offsets(const array& a, int64_t batch) {
  int nb = a.ndim() - 2;
  std::vector<int64_t> offs(batch);
  std::vector<int64_t> idx(std::max(nb, 0), 0);
  int64_t off = 0;
  for (int64_t b = 0; b < batch; ++b) {
    offs[b] = off;
    for (int d = nb - 1; d >= 0; --d) {  // odometer over the batch dims
      off += a.strides()[d];
      if (++idx[d] < a.shape()[d]) break;
      off -= a.strides()[d] * a.shape()[d];
      idx[d] = 0;
    }
  }
  return offs;
}

MatView prepare(const array& a, int64_t batch) {
  int nd = a.ndim();
  int64_t rows = a.shape(-2), cols = a.shape(-1);
  const Strides& st = a.strides();
  MatView v;
  bool batch_ok = true;
  for (int d = 0; d < nd - 2; ++d) batch_ok &= st[d] >= 0;
  if (batch_ok && (cols == 1 || st[nd - 1] == 1) && (rows == 1 || st[nd - 2] >= std::max<int64_t>(cols, 1))) {
    v.arr = a;
    v.ld = rows == 1 ? std::max<int64_t>(cols, 1) : st[nd - 2];
  } else if (batch_ok && (rows == 1 || st[nd - 2] == 1) && (cols == 1 || st[nd - 1] >= std::max<int64_t>(rows, 1))) {
    v.arr = a;
    v.trans = true;
    v.ld = cols == 1 ? std::max<int64_t>(rows, 1) : st[nd - 1];
  } else {
    array d = array::empty_evaluated(a.shape(), a.dtype());
    copy_to_dense(a, d.raw_data());
    v.arr = d;
    v.ld = std::max<int64_t>(cols, 1);
  }
  v.offsets = batch_offsets(v.arr, batch);
  return v;
}

template <class T>
void naive_gemm(const T* a, bool ta, int64_t lda, const T* b, bool tb, int64_t ldb, T* c, int64_t ldc, int64_t M,
                int64_t N, int64_t K) {
  using C = std::conditional_t<std::is_same_v<T, bool>, int32_t, compute_t<T>>;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      C acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        T x = ta ? a[k * lda + i] : a[i * lda + k];
        T y = tb ? b[j * ldb + k] : b[k * ldb + j];
        acc += static_cast<C>(x) * static_cast<C>(y);
      }
      c[i * ldc + j] = static_cast<T>(acc);
    }
  }
}

#if EMBER_ISA_HAS_AVX2
// ---------------------------------------------------------------------------
// float32 products on the FMA levels: Ember's own packed kernel, sized for
// the level Ember runs at (OpenBLAS runs the kernel set it detects or
// OPENBLAS_CORETYPE names, e.g. its AVX2 Haswell set at half the AVX-512
// rate, and blocks a thread's share of a mid-sized product poorly).
//
// Both operands are packed, in K-blocks of at most kKC, into zero-padded
// panels: A as [MR-row panel][k][MR], B as [k][NR] per NR-column panel —
// one layout whatever each operand's transpose flag (the transposing packs
// go through 8x8 register transposes) — or read in place where their rows
// already lie along the tile's (see Sgemm::run). A register tile of MR rows
// x NV vectors (NR = NV * W columns) of C accumulates one K-block; the next
// K-block starts from the stored tile, so every element of C is one fused
// multiply-add chain over k = 0..K-1 in order: the bits depend neither on
// the level (AVX2 or AVX-512), the tile shapes, the blocking nor the thread
// split. The tiles of C are split into tasks (a block of rows x a block of
// columns), each handed to whichever thread asks next; a task packs the
// operands it reads itself, into its thread's buffer, so a packed panel is
// read while still in that core's cache and no thread waits for another's
// packing.
#if EMBER_ISA_HAS_AVX512
constexpr int kMR = 8, kNV = 3;   // 24 accumulators of 32 registers
#else
constexpr int kMR = 6, kNV = 2;   // 12 accumulators of 16 registers
#endif
using FV = typename Vec<float>::V;
constexpr int kW = Vec<float>::W;
constexpr int kNR = kNV * kW;
constexpr int64_t kKC = kNV == 3 ? 128 : 256;  // k per block: a packed B panel of 24 or 16 KB stays in L1
// rows of A per task: at most 256 (a packed block of 128 KB at AVX-512, or
// rows read in place, up to 4 KB apart, whose lines land on a fraction of
// L2's sets). Taller packed blocks (1024 rows: fewer passes over B) were
// 2% faster at 2048^2 but 10-17% slower for 1024-row products, transposed
// or half-precision A (Sapphire Rapids-class VM, 2026-12-06).
constexpr int64_t kMCPanels = 256 / kMR;
constexpr double kPackCost = 8.0;  // packing a value, in multiply-adds (reading one in place: 1)
constexpr int64_t kDirectFmas = int64_t(1) << 22;  // products this small read unpacked operands in place

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Tasks [0, n) to whichever thread asks next (loops.h's dynamic_for), or
// all on this one when not threaded; with `make`, each thread's state
// (f(i, state)) as dynamic_for makes it
template <class Make, class F>
void pool_tasks(int64_t n, bool threaded, Make&& make, F&& f) {
  if (!threaded) {
    auto st = make();
    for (int64_t i = 0; i < n; ++i) f(i, st);
    return;
  }
  dynamic_for(n, make, f);
}
template <class F>
void pool_tasks(int64_t n, bool threaded, F&& f) {
  pool_tasks(n, threaded, no_state, [&](int64_t i, NoState&) { f(i); });
}

// The source lines of a panel that is packed next, prefetched into L2 a
// few at a time from inside the tiles computed before it, so that packing
// reads from L2 instead of memory: B's rows are usually a page or more
// apart, where the hardware prefetchers give up (2048^2 on one thread
// spent a sixth of its time packing B, waiting on L3). Issued in a burst
// instead, the prefetches stalled on the core's line fill buffers.
struct LineWalk {
  static constexpr int kMax = 32;  // lines a tile takes at most (one per 4 k-steps of a 128-step block)
  const char* base = nullptr;      // row r's bytes at base + r * stride, `bytes` of them
  int64_t stride = 0, bytes = 0, r = 0, rows = 0;
  uintptr_t q = 0, end = 0;  // the next line of the current row, and the row's end
  int per_tile = 0;          // lines a tile takes

  // the lines pack_panel(src, along_k, ld, n, kc) reads, over `tiles` tiles
  template <class In>
  void start(const In* src, bool along_k, int64_t ld, int64_t n, int64_t kc, int64_t tiles) {
    base = reinterpret_cast<const char*>(src);
    stride = ld * int64_t(sizeof(In));
    rows = along_k ? n : kc;
    bytes = (along_k ? kc : n) * int64_t(sizeof(In));
    r = 0, q = end = 0;
    per_tile = int(std::min<int64_t>(kMax, ceil_div(rows * (bytes / 64 + 2), std::max<int64_t>(tiles, 1))));
  }
  // the next lines, at most `most` of them, into out; how many
  int take(const char** out, int most) {
    int n = 0;
    while (n < most) {
      if (q >= end) {
        if (r == rows) break;
        const uintptr_t p = reinterpret_cast<uintptr_t>(base + r++ * stride);
        q = p & ~uintptr_t(63), end = p + bytes;
      }
      out[n++] = reinterpret_cast<const char*>(q);
      q += 64;
    }
    return n;
  }
  void finish() {  // what is left, at once
    const char* line[kMax];
    for (int n; (n = take(line, kMax)) > 0;)
      for (int i = 0; i < n; ++i) _mm_prefetch(line[i], _MM_HINT_T1);
  }
};

// C tile (MR x NV vectors at c, row stride ldc) = [C tile if accumulate] +
// A B over kc steps; the first NV vectors of B's rows are read (a narrower
// kernel for the last columns of C). A: packed (ap: kc x MR) or, DirectA,
// read in place (row r's values along k at ap + r * lda); B: packed (bp: kc
// rows of NR) or, DirectB, in place (row k at bp + k * ldb). Either way the
// same chain of FMAs per element, so the same bits. `next` (or null): the
// C tile that the thread computes next (same row stride), prefetched one
// vector every 4 steps, so that its loads do not wait for memory: a large
// C is read and written once per k-block, and its tiles came from L3 or
// DRAM at each tile's start (2048^2 on one thread: 180-190 -> 213 GFLOP/s).
// `lines`: nlines lines prefetched into L2 for the next packing (see
// LineWalk), one every 4 k-steps.
template <int NV, bool DirectA = false, bool DirectB = false>
void micro_tile(int64_t kc, const float* __restrict ap, int64_t lda, const float* __restrict bp, int64_t ldb,
                float* c, int64_t ldc, bool accumulate, const float* next, const char* const* lines, int nlines) {
  FV acc[kMR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < NV; ++j) acc[r][j] = accumulate ? vload<FV>(c + r * ldc + j * kW) : FV{};
  const float* arow[kMR];
#pragma GCC unroll 8
  for (int r = 0; r < kMR; ++r) arow[r] = DirectA ? ap + r * lda : ap + r;
  const int64_t ak = DirectA ? 1 : kMR, bk = DirectB ? ldb : kNR;
  auto step = [&](int64_t k) __attribute__((always_inline)) {
    FV bv[NV];
#pragma GCC unroll 3
    for (int j = 0; j < NV; ++j) bv[j] = vload<FV>(bp + k * bk + j * kW);
#pragma GCC unroll 8
    for (int r = 0; r < kMR; ++r) {
      const FV av = splat<FV>(arow[r][k * ak]);
#pragma GCC unroll 3
      for (int j = 0; j < NV; ++j) acc[r][j] = vfma(av, bv[j], acc[r][j]);
    }
  };
  int64_t k = 0;
  const int nc = next ? kMR * NV : 0;
  if (nc || nlines) {
    for (int q = 0; (q < nc || q < nlines) && k + 4 <= kc; ++q, k += 4) {
      if (q < nc) _mm_prefetch(reinterpret_cast<const char*>(next + (q / NV) * ldc + (q % NV) * kW), _MM_HINT_T0);
      if (q < nlines) _mm_prefetch(lines[q], _MM_HINT_T1);
      step(k);
      step(k + 1);
      step(k + 2);
      step(k + 3);
    }
  }
  for (; k < kc; ++k) step(k);
#pragma GCC unroll 8
  for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < NV; ++j) vstore(c + r * ldc + j * kW, acc[r][j]);
}

// the kernel of a tile whose columns fill nv vectors (1..kNV)
using MicroTile = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, bool,
                           const float*, const char* const*, int);
template <bool DirectA, bool DirectB>
MicroTile micro_for(int64_t nv) {
  if constexpr (kNV == 3)
    return nv >= 3 ? micro_tile<3, DirectA, DirectB> : nv == 2 ? micro_tile<2, DirectA, DirectB> : micro_tile<1, DirectA, DirectB>;
  else return nv >= 2 ? micro_tile<2, DirectA, DirectB> : micro_tile<1, DirectA, DirectB>;
}
inline MicroTile micro_for(int64_t nv, bool direct_a, bool direct_b) {
  if (direct_a) return direct_b ? micro_for<true, true>(nv) : micro_for<true, false>(nv);
  return direct_b ? micro_for<false, true>(nv) : micro_for<false, false>(nv);
}

// 8 values at p widened to float32 (exact): float16 by F16C, bfloat16 by a shift
template <class In>
inline __m256 load8(const In* p) {
  if constexpr (std::is_same_v<In, float>) {
    return _mm256_loadu_ps(p);
  } else if constexpr (std::is_same_v<In, float16_t>) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    static_assert(std::is_same_v<In, bfloat16_t>);
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
}

// dst[i * ldd + r] = src[r * lds + i] for an 8 x 8 block (widened to float32)
template <class In>
inline void transpose8(const In* src, int64_t lds, float* dst, int64_t ldd) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = load8(src + i * lds);
  transpose8x8(r);
  for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + i * ldd, r[i]);
}

// One panel: dst[k * P + q] = X(q, k) for q < n (zero for n <= q < P),
// k < kc, where X(q, k) = src[q * ld + k] (`along_k`: each q's values lie
// along k, the transposing case) or src[k * ld + q]; half-precision values
// widened to float32 here, so a half product packs what it reads as a
// float32 one does, without float32 copies of its operands.
template <int P, class In>
void pack_panel(const In* src, bool along_k, int64_t ld, int64_t n, int64_t kc, float* dst) {
  if (!along_k) {
    if constexpr (std::is_same_v<In, float>) {
      if (n == P) {  // whole rows of P values: vector copies
        for (int64_t k = 0; k < kc; ++k) std::memcpy(dst + k * P, src + k * ld, P * sizeof(float));
        return;
      }
    }
    for (int64_t k = 0; k < kc; ++k) {
      const In* s = src + k * ld;
      float* d = dst + k * P;
      int64_t q = 0;
      if constexpr (!std::is_same_v<In, float>)
        for (; q + 8 <= n; q += 8) _mm256_storeu_ps(d + q, load8(s + q));
      for (; q < n; ++q) d[q] = static_cast<float>(s[q]);
      for (; q < P; ++q) d[q] = 0.0f;
    }
    return;
  }
  int64_t q0 = 0;
  for (; q0 + 8 <= n; q0 += 8) {  // 8 values of q at a time through register transposes
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8) transpose8(src + q0 * ld + k, ld, dst + k * P + q0, P);
    for (; k < kc; ++k)
      for (int q = 0; q < 8; ++q) dst[k * P + q0 + q] = static_cast<float>(src[(q0 + q) * ld + k]);
  }
  for (int64_t q = q0; q < n; ++q)
    for (int64_t k = 0; k < kc; ++k) dst[k * P + q] = static_cast<float>(src[q * ld + k]);
  for (int64_t q = std::max(q0, n); q < P; ++q)
    for (int64_t k = 0; k < kc; ++k) dst[k * P + q] = 0.0f;
}

// A's float32 block when its rows of k lie across the panels (A transposed,
// as in a weight's gradient x^T g): the panels of n values from src, as
// pack_panel packs each (dst[p][k][kMR], zero past n), but a pair of k-rows at a time
// across all the panels, so that every source line is read once, in order,
// and every packed line written whole. Panel by panel, the k-rows' lines,
// usually a multiple of 4 KB apart, fell in one L1 set and came from L2 for
// each panel again (a sixth of a (2048 x 1024)^T (2048 x 256) product).
inline void pack_rows_across(const float* src, int64_t ld, int64_t n, int64_t kc, float* dst) {
  const int64_t panels = ceil_div(n, kMR), whole = n / kMR;
  for (int64_t k = 0; k < kc; k += 2) {
    const float* r0 = src + k * ld;
    const float* r1 = k + 1 < kc ? r0 + ld : nullptr;
    for (int64_t p = 0; p < panels; ++p) {
      float* d = dst + (p * kc + k) * kMR;
      if (p < whole && r1) {
        std::memcpy(d, r0 + p * kMR, kMR * sizeof(float));
        std::memcpy(d + kMR, r1 + p * kMR, kMR * sizeof(float));
        continue;
      }
      for (int64_t h = 0; h < (r1 ? 2 : 1); ++h) {
        const float* r = h ? r1 : r0;
        for (int q = 0; q < kMR; ++q) d[h * kMR + q] = p * kMR + q < n ? r[p * kMR + q] : 0.0f;
      }
    }
  }
}

// This thread's buffer for packed operands, at least n floats (64-byte
// aligned; kept for the thread's next product, so a product allocates nothing)
inline float* pack_buffer(int64_t n) {
  thread_local std::unique_ptr<float[], void (*)(float*)> buf{nullptr, [](float* p) { std::free(p); }};
  thread_local int64_t cap = 0;
  if (n > cap) {
    cap = std::max(n, 2 * cap);
    buf.reset(static_cast<float*>(std::aligned_alloc(64, ((cap * sizeof(float) + 63) / 64) * 64)));
    if (!buf) throw std::bad_alloc();
  }
  return buf.get();
}

// C (M x N, element (i, j) at c[i * rs + j * cs]) = op(A) op(B) (+ C if add), where
// op(A)(i, k) = ta ? a[k * lda + i] : a[i * lda + k], op(B)(k, j) = tb ?
// b[j * ldb + k] : b[k * ldb + j]; operands of float32 or, widened as they
// are packed (never read in place), float16 or bfloat16, into float32 C.
template <class In>
struct Sgemm {
  const In* a;
  bool ta;
  int64_t lda;
  const In* b;
  bool tb;
  int64_t ldb;
  float* c;
  int64_t rs, cs;
  int64_t M, N, K;
  bool add;  // C += op(A) op(B)

  void run(bool threaded) const {
    const int64_t mp = ceil_div(M, kMR), np = ceil_div(N, kNR);
    const int64_t nkb = ceil_div(K, kKC), kc = ceil_div(K, nkb);
    // An operand whose rows lie along the tile's (A along k, B along j) is
    // read in place, unpacked, where every tile reads only its own rows and
    // columns: in a small product (packing would cost as much as the product
    // gains from it), and A also where its rows are at most 4 KB apart (a
    // tile's 8 rows stay on 8 pages, a task's block of rows spread over the
    // cache's sets; rows further apart, a power of two especially, crowd a
    // few sets: packed). At exactly 4 KB, packing was 1-3% faster for 1024^2
    // but 4% slower for (2048 x 1024) (1024 x 256), whose few column panels
    // amortize the packing less (Intel, 2026-12-06): in place.
    // B's rows are read in place only in small products:
    // a tile's k-steps would spread over as many pages as rows.
    const bool small = M * N * K <= kDirectFmas, f32 = std::is_same_v<In, float>;
    const bool direct_a = f32 && !ta && M % kMR == 0 && (small || lda <= 1024);
    const bool direct_b = f32 && small && !tb && N % kW == 0;
    const auto [trows, tcols] = split(mp, np, ceil_div(N, kW), threaded ? num_threads() : 1, !direct_a, !direct_b);
    const int64_t tn = ceil_div(np, tcols);
    const int64_t na = direct_a ? 0 : trows * kMR * kc, nb = direct_b ? 0 : kc * kNR;
    pool_tasks(ceil_div(mp, trows) * tn, threaded, [&](int64_t t) {
      float* pa = pack_buffer(na + nb);
      task((t / tn) * trows, std::min(mp, (t / tn + 1) * trows), (t % tn) * tcols,
           std::min(np, (t % tn + 1) * tcols), kc, direct_a, direct_b, pa, pa + na);
    });
  }

 private:
  // The split of the tiles into tasks (row groups x column groups) with the
  // least estimated time on nt threads: whole rounds of the largest task,
  // each its multiply-adds plus the reading of its operands (pack_a, pack_b:
  // a task packs its rows of A and its columns of B, once per k-block); row
  // groups of at most kMCPanels panels (A's block stays in L2). Tasks that
  // share the threads evenly beat more, smaller ones: each packs its B
  // panels again, so a split finer than the threads costs more than the
  // balance it buys. The first task of a split is the largest; its columns
  // are counted in vectors (nvec of them in all), as the narrower kernels
  // of the last panel compute them: a 256-column product split into 3 + 3
  // panels of 48 gives one thread 144 columns and the other 112, where
  // splitting the rows shares the work evenly.
  static std::pair<int64_t, int64_t> split(int64_t mn, int64_t nn, int64_t nvec, int64_t nt, bool pack_a,
                                           bool pack_b) {
    const int64_t mt_min = ceil_div(mn, kMCPanels);
    std::pair<int64_t, int64_t> best{mn, nn};
    double best_cost = -1;
    for (int64_t mt = mt_min; mt <= std::min(mn, mt_min * 2 * nt); ++mt) {
      for (int64_t ntn = 1; ntn <= std::min(nn, 2 * nt); ++ntn) {
        const int64_t rows = ceil_div(mn, mt), cols = ceil_div(nn, ntn);
        const int64_t ntasks = ceil_div(mn, rows) * ceil_div(nn, cols);
        const double reads = (pack_a ? kPackCost : 1.0) * rows * kMR + (pack_b ? kPackCost : 1.0) * cols * kNR;
        const double cols_real = double(std::min(cols * kNV, nvec) * kW);
        const double cost = double(ceil_div(ntasks, nt)) * (double(rows * kMR) * cols_real + reads);
        if (best_cost < 0 || cost < best_cost) best_cost = cost, best = {rows, cols};
      }
    }
    return best;  // panels per task: rows, columns
  }

  // The tiles of row panels [pm0, pm1) x column panels [pn0, pn1), k-block
  // by k-block: the block's rows of A packed into pa (unless direct_a), then
  // per column panel, its block of B packed into pb (unless direct_b; it
  // stays in L1) and run against every row panel
  void task(int64_t pm0, int64_t pm1, int64_t pn0, int64_t pn1, int64_t kc, bool direct_a, bool direct_b, float* pa,
            float* pb) const {
    alignas(64) float tile[kMR * kNR] = {};
    LineWalk walk;
    for (int64_t k = 0; k < K; k += kc) {
      const int64_t kcb = std::min(kc, K - k);
      const bool acc = add || k > 0;
      if (!direct_a) pack_a(pm0, pm1, k, kcb, pa);
      for (int64_t pn = pn0; pn < pn1; ++pn) {
        const int64_t j0 = pn * kNR, cols = std::min<int64_t>(kNR, N - j0);
        const float* bpan = pb;
        if (!direct_b) pack_panel<kNR>(b_panel(j0, k), tb, ldb, cols, kcb, pb);
        else if constexpr (std::is_same_v<In, float>) bpan = b + k * ldb + j0;
        const MicroTile micro = micro_for(ceil_div(cols, kW), direct_a, direct_b);
        // the B panel packed next (this k-block's next panel, else the next
        // k-block's first), prefetched from inside this panel's tiles
        int64_t nj = j0 + kNR, nk = k;
        if (pn + 1 == pn1) nj = pn0 * kNR, nk = k + kc;
        const bool pre = !direct_b && nk < K;
        if (pre) walk.start(b_panel(nj, nk), tb, ldb, std::min<int64_t>(kNR, N - nj), std::min(kc, K - nk), pm1 - pm0);
        for (int64_t pm = pm0; pm < pm1; ++pm) {
          const char* lines[LineWalk::kMax];
          const int nlines = pre ? walk.take(lines, std::min<int>(walk.per_tile, int(kcb / 4))) : 0;
          const int64_t i0 = pm * kMR, rows = std::min<int64_t>(kMR, M - i0);
          const float* apan = pa + (pm - pm0) * kcb * kMR;
          if constexpr (std::is_same_v<In, float>)
            if (direct_a) apan = a + i0 * lda + k;
          float* ct = c + i0 * rs + j0 * cs;
          if (cs == 1 && rows == kMR && cols % kW == 0) {  // whole vectors of C: in place
            // (the next tile: the next row panel's, else the next column panel's first)
            const float* next = pm + 1 < pm1 ? ct + kMR * rs : pn + 1 < pn1 ? c + pm0 * kMR * rs + j0 + kNR : nullptr;
            micro(kcb, apan, lda, bpan, ldb, ct, rs, acc, next, lines, nlines);
          } else {  // an edge tile, or C stored transposed: through a local tile
            if (acc) tile_copy<true>(ct, tile, rows, cols);
            micro(kcb, apan, lda, bpan, ldb, tile, kNR, acc, nullptr, lines, nlines);
            tile_copy<false>(ct, tile, rows, cols);
          }
        }
        if (pre) walk.finish();
      }
    }
  }

  // A's row panels [pm0, pm1) over the k-block of kcb steps from k into pa
  // (kcb x kMR each): a transposed float32 A across all the panels at once
  // (pack_rows_across), else panel by panel
  void pack_a(int64_t pm0, int64_t pm1, int64_t k, int64_t kcb, float* pa) const {
    if constexpr (std::is_same_v<In, float>)
      if (ta) return pack_rows_across(a_block(pm0 * kMR, k), lda, std::min(M, pm1 * kMR) - pm0 * kMR, kcb, pa);
    for (int64_t pm = pm0; pm < pm1; ++pm) {
      const int64_t i0 = pm * kMR;
      pack_panel<kMR>(a_block(i0, k), !ta, lda, std::min<int64_t>(kMR, M - i0), kcb, pa + (pm - pm0) * kcb * kMR);
    }
  }

  // the source of A's rows from i0, k-block from k
  const In* a_block(int64_t i0, int64_t k) const { return ta ? a + k * lda + i0 : a + i0 * lda + k; }
  // the source of B's panel of columns from j0, k-block from k
  const In* b_panel(int64_t j0, int64_t k) const { return tb ? b + j0 * ldb + k : b + k * ldb + j0; }

  // the valid part of a tile of C into `tile` (Load) or back
  template <bool Load>
  void tile_copy(float* ct, float* tile, int64_t rows, int64_t cols) const {
    if (cs == 1) {  // row by row
      for (int64_t r = 0; r < rows; ++r) {
        if constexpr (Load) std::memcpy(tile + r * kNR, ct + r * rs, cols * sizeof(float));
        else std::memcpy(ct + r * rs, tile + r * kNR, cols * sizeof(float));
      }
      return;
    }
    int64_t j0 = 0;
    if (rs == 1 && kMR == 8 && rows == 8) {  // C stored transposed: whole 8 x 8 blocks by register transposes
      for (; j0 + 8 <= cols; j0 += 8) {
        if constexpr (Load) transpose8(ct + j0 * cs, cs, tile + j0, kNR);
        else transpose8(tile + j0, kNR, ct + j0 * cs, cs);
      }
    }
    for (int64_t j = j0; j < cols; ++j) {
      for (int64_t r = 0; r < rows; ++r) {
        float& x = ct[r * rs + j * cs];
        float& t = tile[r * kNR + j];
        if constexpr (Load) t = x;
        else x = t;
      }
    }
  }
};

// The padded work of a product with M rows and N columns of C (the last
// columns in whole vectors)
inline int64_t padded_work(int64_t M, int64_t N) { return ceil_div(M, kMR) * kMR * ceil_div(N, kW) * kW; }

// One float32 product (see Sgemm); C row-major with leading dimension ldc,
// added to (add) or overwritten. A product with few columns is computed as
// C^T = op(B)^T op(A)^T (its rows fill the wide side of the tile), stored
// transposed.
template <class In>
void sgemm(const In* a, bool ta, int64_t lda, const In* b, bool tb, int64_t ldb, float* c, int64_t ldc,
           int64_t M, int64_t N, int64_t K, bool threaded, bool add = false) {
  if (padded_work(N, M) * 5 < padded_work(M, N) * 4) {
    Sgemm<In>{b, !tb, ldb, a, !ta, lda, c, 1, ldc, N, M, K, add}.run(threaded);
  } else {
    Sgemm<In>{a, ta, lda, b, tb, ldb, c, ldc, 1, M, N, K, add}.run(threaded);
  }
}
#endif  // EMBER_ISA_HAS_AVX2

#if EMBER_ISA_HAS_AVX512
// ---------------------------------------------------------------------------
// bfloat16 products on AVX-512 CPUs with the BF16 extension: both operands
// packed by pairs of k, A as [MR-row panel][k / 2][MR][2] and B as
// [NR-column panel][k / 2][NR][2] (zero-padded: an odd K's last pair ends in
// a zero), and a register tile of MR rows x NV vectors that accumulates with
// VDPBF16PS (vec.h's vdpbf16): one instruction adds a(i, k) b(k, j) +
// a(i, k + 1) b(k + 1, j) to 16 float32 lanes, twice the multiply-adds of an
// FMA. Products of bfloat16 values are exact in float32, so this is float32
// arithmetic summed by pairs of k (denormal inputs read as zero); each
// element's float32 sum is rounded to bfloat16 once.
constexpr int64_t kBRows = 8;  // row panels per task, against one column panel

// word indices of vpermt2w that interleave the first 16 words of two
// registers: (lo[0], hi[0], lo[1], hi[1], ...)
alignas(64) constexpr uint16_t kPairIdx[32] = {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                               8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};

// One panel: pairs of k for the panel's values q < n (P of them, zero for
// n <= q < P), kp < kpairs: dst[(kp * P + q) * 2 + h] = X(q, 2 kp + h), zero
// where 2 kp + h >= K, X(q, k) = src[q * ld + k] (`along_k`) or src[k * ld + q].
template <int P>
void pack_pairs(const bfloat16_t* src, bool along_k, int64_t ld, int64_t n, int64_t K, int64_t kpairs,
                uint16_t* dst) {
  auto x = [&](int64_t q, int64_t k) -> uint16_t {
    return k < K ? (along_k ? src[q * ld + k] : src[k * ld + q]).bits : uint16_t(0);
  };
  if (along_k && K % 2 == 0 && ld % 2 == 0 && reinterpret_cast<uintptr_t>(src) % 4 == 0) {
    // each value's pairs are adjacent 32-bit words: the float32 packing
    // (register transposes) moves them as they are
    pack_panel<P>(reinterpret_cast<const float*>(src), true, ld / 2, n, kpairs, reinterpret_cast<float*>(dst));
    return;
  }
  if (!along_k) {
    // rows 2 kp and 2 kp + 1 interleaved, 16 values at a time
    const __m512i idx = _mm512_load_si512(kPairIdx);
    for (int64_t kp = 0; kp < kpairs; ++kp) {
      const bfloat16_t* r0 = src + 2 * kp * ld;
      uint16_t* d = dst + kp * P * 2;
      int64_t q = 0;
      if (2 * kp + 1 < K) {
        for (; q + 16 <= n; q += 16) {
          const __m512i lo = _mm512_maskz_loadu_epi16(0xffff, r0 + q);  // 16 values, the rest zero
          const __m512i hi = _mm512_maskz_loadu_epi16(0xffff, r0 + ld + q);
          _mm512_storeu_si512(d + 2 * q, _mm512_permutex2var_epi16(lo, idx, hi));
        }
      }
      for (; q < n; ++q) {
        d[2 * q] = x(q, 2 * kp);
        d[2 * q + 1] = x(q, 2 * kp + 1);
      }
      for (; q < P; ++q) d[2 * q] = d[2 * q + 1] = 0;
    }
    return;
  }
  for (int64_t kp = 0; kp < kpairs; ++kp) {
    uint16_t* d = dst + kp * P * 2;
    for (int64_t q = 0; q < P; ++q) {
      d[2 * q] = q < n ? x(q, 2 * kp) : uint16_t(0);
      d[2 * q + 1] = q < n ? x(q, 2 * kp + 1) : uint16_t(0);
    }
  }
}

// C tile (MR x NV vectors) = the packed panels ap (A) and bp (B) over all
// kpairs pairs of k, rounded to bfloat16 at c (row stride ldc); with
// Whole false, the `rows` x `cols` part of it.
template <int NV, bool Whole>
void bf16_tile(int64_t kpairs, const uint16_t* __restrict ap, const uint16_t* __restrict bp, bfloat16_t* c,
               int64_t ldc, int64_t rows, int64_t cols) {
  FV acc[kMR][NV];
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < NV; ++j) acc[r][j] = FV{};
  for (int64_t kp = 0; kp < kpairs; ++kp) {
    FV bv[NV];
    for (int j = 0; j < NV; ++j) bv[j] = vload<FV>(bp + (kp * kNR + j * kW) * 2);
    for (int r = 0; r < kMR; ++r) {
      const FV av = splat_pair(ap + (kp * kMR + r) * 2);
      for (int j = 0; j < NV; ++j) acc[r][j] = vdpbf16(acc[r][j], av, bv[j]);
    }
  }
  if constexpr (Whole) {
    for (int r = 0; r < kMR; ++r)
      for (int j = 0; j < NV; ++j) vstore(c + r * ldc + j * kW, round_bf16(acc[r][j]));
  } else {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t q = 0; q < cols; ++q) c[r * ldc + q] = bfloat16_t(acc[r][q / kW][q % kW]);
  }
}

// ---------------------------------------------------------------------------
// bfloat16 products on the AMX tile unit (CPUs with AMX-BF16, where
// amx_bf16_usable()). TDPBF16PS adds to each float32 element of a 16 x 16 C
// tile the 32 products of a row of a 16 x 32 A tile and a column of a B tile
// (16 pairs of k x 16 columns x 2): exact products summed with the unit's own
// rounding, which is finer than VDPBF16PS's two roundings a pair (so the
// bits differ from bf16_gemm's; denormal inputs read as zero, as there).
// Each element's sum runs over k in steps of 32 from k = 0 inside one C
// tile, so the bits depend neither on the tile it falls in nor on the thread
// split. Both operands are packed once into contiguous 1 KB tiles (rows a
// power-of-two stride apart would share L1 sets; see pack_amx), zero past M,
// N and K. Blocks of 32 x 32 outputs (four C tiles from two A
// and two B tiles); a task runs R x S blocks over R row pairs and S column
// pairs of the packed operands, sized to stay in L2.
constexpr int64_t kAmxK = 32;  // k a tile step

// (GCC 12 takes the intrinsics' deliberately undefined inputs in
// transpose16_epi32 for uninitialized values once inlined here)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The packing of both operands: 32 values q of one side (n <= 32 of them
// real) over all of k, as two tiles of 16 rows x 64 bytes a k step (tile u
// of step ks at dst + ks * 1024 + u * 512 words: q in [16 u, 16 u + 16)),
// zero past n and K; X(q, k) = src[q * ld + k] when `along_k`, else
// src[k * ld + q].
//   Rows (A tiles): row q of a tile holds X(q, k) for its 32 values of k.
//   Pairs (B tiles): row kp holds (X(q, 2 kp), X(q, 2 kp + 1)) for each q.
// The two layouts are each other's 16 x 16 transpose of 32-bit pairs, so
// each packing reads whole 64-byte lines — straight rows, or pairs of rows
// interleaved by vpermt2w — then (when the other layout is wanted) one
// register transpose per tile.
template <bool Pairs>
void pack_amx(const bfloat16_t* src, bool along_k, int64_t ld, int64_t n, int64_t K, int64_t nks, uint16_t* dst) {
  const __m512i lo_idx = _mm512_load_si512(kPairIdx);
  const __m512i hi_idx = _mm512_add_epi16(lo_idx, _mm512_set1_epi16(16));  // words 16..31 of each
  const __mmask32 qm = n >= 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1;
  for (int64_t ks = 0; ks < nks; ++ks) {
    const int64_t k0 = ks * kAmxK, kn = std::min<int64_t>(kAmxK, K - k0);
    uint16_t* d = dst + ks * 1024;
    if (along_k) {  // row q: its 32 values of k (rows past n and values past K: masked, not read)
      const __mmask32 km = kn >= 32 ? ~__mmask32(0) : (__mmask32(1) << kn) - 1;
      for (int u = 0; u < 2; ++u) {
        __m512i r[16];
        for (int q = 0; q < 16; ++q) {
          const int64_t row = 16 * u + q;
          r[q] = _mm512_maskz_loadu_epi16(row < n ? km : 0, src + std::min<int64_t>(row, n - 1) * ld + k0);
        }
        if constexpr (Pairs) transpose16_epi32(r);
        for (int q = 0; q < 16; ++q) _mm512_storeu_si512(d + u * 512 + q * 32, r[q]);
      }
    } else {  // row kp: the pairs of k 2 kp, 2 kp + 1 of each value
      __m512i r0[16], r1[16];
      for (int kp = 0; kp < 16; ++kp) {
        const int64_t k = std::min<int64_t>(k0 + 2 * kp, K - 1);
        const __mmask32 m0 = 2 * kp < kn ? qm : 0, m1 = 2 * kp + 1 < kn ? qm : 0;
        const __m512i lo = _mm512_maskz_loadu_epi16(m0, src + k * ld);
        const __m512i hi = _mm512_maskz_loadu_epi16(m1, src + std::min(k + 1, K - 1) * ld);
        r0[kp] = _mm512_permutex2var_epi16(lo, lo_idx, hi);
        r1[kp] = _mm512_permutex2var_epi16(lo, hi_idx, hi);
      }
      if constexpr (!Pairs) {
        transpose16_epi32(r0);
        transpose16_epi32(r1);
      }
      for (int q = 0; q < 16; ++q) {
        _mm512_storeu_si512(d + q * 32, r0[q]);
        _mm512_storeu_si512(d + 512 + q * 32, r1[q]);
      }
    }
  }
}
#pragma GCC diagnostic pop

// A 32 x 32 block of float32 sums (tmp, rows 32 apart) rounded to bfloat16
// into c (rows ldc apart), its first `rows` x `cols`
void store_bf16_block(const float* tmp, bfloat16_t* c, int64_t ldc, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    store_bf16(c + r * ldc, vload<FV>(tmp + r * 32), std::min<int64_t>(cols, 16));
    if (cols > 16) store_bf16(c + r * ldc + 16, vload<FV>(tmp + r * 32 + 16), cols - 16);
  }
}

// The blocks (row pair r, column pair s) for r in [r0, r1), s in [s0, s1)
// of C (M x N, row-major, leading dim ldc) from the packed operands (tile
// pair r of A at pa + 2 r * tsz, panel pair s of B at pb + 2 s * tsz, tsz =
// nks * 512 words each), k steps [ks0, ks1) of each: the sums start from
// zero when ks0 == 0, else from the float32 blocks in acc (one per block,
// 1024 floats, in r, s order), and go to acc when ks1 < nks, else rounded
// to C (acc: 1024 floats when [ks0, ks1) is all of k)
__attribute__((target("amx-tile,amx-bf16"))) void amx_bf16_blocks(const uint16_t* pa, const uint16_t* pb,
                                                                  int64_t nks, int64_t ks0, int64_t ks1,
                                                                  int64_t r0, int64_t r1, int64_t s0, int64_t s1,
                                                                  bfloat16_t* c, int64_t ldc, int64_t M, int64_t N,
                                                                  float* acc) {
  amx_configure(8, 16, 64);
  const int64_t tsz = nks * 512;
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* a0 = pa + 2 * r * tsz;
    for (int64_t s = s0; s < s1; ++s) {
      const uint16_t* b0 = pb + 2 * s * tsz;
      // the block's float32 sums, C tile (u, t) at blk + 512 u + 16 t (one
      // buffer for all blocks when all of k is one chunk)
      float* blk = ks0 == 0 && ks1 == nks ? acc : acc + ((r - r0) * (s1 - s0) + (s - s0)) * 1024;
      if (ks0 == 0) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
      } else {
        _tile_loadd(0, blk, 128);
        _tile_loadd(1, blk + 16, 128);
        _tile_loadd(2, blk + 512, 128);
        _tile_loadd(3, blk + 528, 128);
      }
      for (int64_t ks = ks0; ks < ks1; ++ks) {
        _tile_loadd(4, a0 + ks * 1024, 64);
        _tile_loadd(6, b0 + ks * 1024, 64);
        _tile_loadd(5, a0 + ks * 1024 + 512, 64);
        _tile_loadd(7, b0 + ks * 1024 + 512, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      _tile_stored(0, blk, 128);
      _tile_stored(1, blk + 16, 128);
      _tile_stored(2, blk + 512, 128);
      _tile_stored(3, blk + 528, 128);
      if (ks1 == nks)
        store_bf16_block(blk, c + r * 32 * ldc + s * 32, ldc, std::min<int64_t>(32, M - r * 32),
                         std::min<int64_t>(32, N - s * 32));
    }
  }
  _tile_release();
}

// C (M x N bfloat16, row-major, leading dim ldc) = op(A) op(B) as bf16_gemm's,
// on the tile unit; blocks spread over the pool when `threaded`
void amx_bf16_gemm(const bfloat16_t* a, bool ta, int64_t lda, const bfloat16_t* b, bool tb, int64_t ldb,
                   bfloat16_t* c, int64_t ldc, int64_t M, int64_t N, int64_t K, bool threaded) {
  // below about 2 x 512^3 multiply-adds, one thread: the other core would
  // read the operands this one packed from its cache, and that costs more
  // than the work it takes over (256^2: 2 threads ran at 0.6x one)
  threaded = threaded && 2.0 * M * N * K >= double(int64_t(1) << 28);
  const int64_t nks = ceil_div(K, kAmxK), tsz = nks * 512;
  const int64_t RB = ceil_div(M, 32), SB = ceil_div(N, 32);  // blocks of C
  AlignedScratch<uint16_t> pa(2 * RB * tsz, false), pb(2 * SB * tsz, false);
  pool_tasks(RB + SB, threaded, [&](int64_t u) {
    if (u < RB) {  // 32 rows of A
      const int64_t i0 = u * 32, n = std::min<int64_t>(M - i0, 32);
      pack_amx<false>(ta ? a + i0 : a + i0 * lda, !ta, lda, n, K, nks, pa.data + u * 2 * tsz);
    } else {  // 32 columns of B
      const int64_t j0 = (u - RB) * 32, n = std::min<int64_t>(N - j0, 32);
      pack_amx<true>(tb ? b + j0 * ldb : b + j0, tb, ldb, n, K, nks, pb.data + (u - RB) * 2 * tsz);
    }
  });
  // A task: R x S blocks, over chunks of kcs k steps: its R + S pairs of
  // operand chunks (2 KB a step each) stay in L2 across the chunk, and each
  // pair, brought from L3 once, serves R or S blocks. Fewer blocks a task
  // where the threads would otherwise lack tasks.
  const int64_t nt = threaded ? num_threads() : 1;
  int64_t R = std::min<int64_t>(8, RB), S = std::min<int64_t>(8, SB);
  while ((R > 1 || S > 1) && ceil_div(RB, R) * ceil_div(SB, S) < 4 * nt) {
    if (R >= S) --R;
    else --S;
  }
  const int64_t kcs = std::min<int64_t>(nks, 32);  // k steps a chunk: 8 x 8 blocks' operands, 1 MB
  const int64_t rt = ceil_div(RB, R), st = ceil_div(SB, S);
  auto make = [&] { return AlignedScratch<float>(nks > kcs ? R * S * 1024 : 1024, false); };
  pool_tasks(rt * st, threaded, make, [&](int64_t t, AlignedScratch<float>& acc) {
    const int64_t r0 = (t / st) * R, s0 = (t % st) * S;
    for (int64_t ks = 0; ks < nks; ks += kcs)
      amx_bf16_blocks(pa.data, pb.data, nks, ks, std::min(nks, ks + kcs), r0, std::min(RB, r0 + R), s0,
                      std::min(SB, s0 + S), c, ldc, M, N, acc.data);
  });
}

// C (M x N bfloat16, row-major, leading dim ldc) = op(A) op(B) for bfloat16
// A and B (op as Sgemm's), each element summed in float32 over all of k
// in registers and rounded once; tiles spread over the pool when `threaded`.
void bf16_gemm(const bfloat16_t* a, bool ta, int64_t lda, const bfloat16_t* b, bool tb, int64_t ldb,
               bfloat16_t* c, int64_t ldc, int64_t M, int64_t N, int64_t K, bool threaded) {
  if (amx_bf16_usable()) return amx_bf16_gemm(a, ta, lda, b, tb, ldb, c, ldc, M, N, K, threaded);
  const int64_t mp = ceil_div(M, kMR), np = ceil_div(N, kNR), kpairs = ceil_div(K, 2);
  const int64_t apan = kpairs * kMR * 2, bpan = kpairs * kNR * 2;  // elements of one packed panel
  AlignedScratch<uint16_t> pa(mp * apan, false), pb(np * bpan, false);
  pool_tasks(mp + np, threaded, [&](int64_t u) {
    if (u < mp) {
      const int64_t i0 = u * kMR;
      pack_pairs<kMR>(ta ? a + i0 : a + i0 * lda, !ta, lda, std::min<int64_t>(kMR, M - i0), K, kpairs,
                      pa.data + u * apan);
    } else {
      const int64_t j0 = (u - mp) * kNR;
      pack_pairs<kNR>(tb ? b + j0 * ldb : b + j0, tb, ldb, std::min<int64_t>(kNR, N - j0), K, kpairs,
                      pb.data + (u - mp) * bpan);
    }
  });
  // tasks: kBRows row panels x one column panel (B's panel from L2 for each)
  const int64_t rg = ceil_div(mp, kBRows);
  pool_tasks(rg * np, threaded, [&](int64_t t) {
    const int64_t pm0 = (t % rg) * kBRows, pm1 = std::min(mp, pm0 + kBRows), pn = t / rg;
    const int64_t j0 = pn * kNR, cols = std::min<int64_t>(kNR, N - j0), nv = ceil_div(cols, kW);
    const uint16_t* bp = pb.data + pn * bpan;
    for (int64_t pm = pm0; pm < pm1; ++pm) {
      const int64_t i0 = pm * kMR, rows = std::min<int64_t>(kMR, M - i0);
      const uint16_t* ap = pa.data + pm * apan;
      bfloat16_t* ct = c + i0 * ldc + j0;
      if (rows == kMR && cols == kNR) bf16_tile<kNV, true>(kpairs, ap, bp, ct, ldc, rows, cols);
      else if (nv >= 3) bf16_tile<3, false>(kpairs, ap, bp, ct, ldc, rows, cols);
      else if (nv == 2) bf16_tile<2, false>(kpairs, ap, bp, ct, ldc, rows, cols);
      else bf16_tile<1, false>(kpairs, ap, bp, ct, ldc, rows, cols);
    }
  });
}

// Whether a bfloat16 product goes through bf16_gemm: the CPU has the BF16
// extension, and the product is not a few rows against a transposed B
// (half_gemm's dot products, which read B once)
inline bool bf16_pairs(bool tb, int64_t M) { return avx512_bf16_usable() && !(tb && M <= 4); }
#endif  // EMBER_ISA_HAS_AVX512

// Half-precision operands: a float32 product rounded to the output type
// once. At the FMA levels sgemm widens the operands as it packs them; at the
// baseline, tiles of kTileK columns of A and rows of B are converted and
// accumulated by OpenBLAS. Memory stays O(M * N) (and O(M * kTileK + kTileK
// * N) for the baseline's tiles) instead of float32 copies of both operands.
constexpr int64_t kTileK = 256;

template <class T>
void half_gemm(const T* a, bool ta, int64_t lda, const T* b, bool tb, int64_t ldb, T* c, int64_t ldc, int64_t M,
               int64_t N, int64_t K) {
#if EMBER_ISA_HAS_AVX512
  if constexpr (std::is_same_v<T, bfloat16_t>) {
    if (bf16_pairs(tb, M)) return bf16_gemm(a, ta, lda, b, tb, ldb, c, ldc, M, N, K, false);
  }
#endif
  if (tb && M <= 4) {
    // a few rows against B^T stored row-major (a Linear's weight while
    // decoding): dot products against B's rows converted a chunk at a time
    // in L1, so B is read once and never written out in float32
    constexpr int64_t kChunk = 1024;
    std::vector<float> xa(M * K), wb(std::min(K, kChunk));
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) xa[i * K + k] = static_cast<float>(ta ? a[k * lda + i] : a[i * lda + k]);
    for (int64_t j = 0; j < N; ++j) {
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
        const int64_t cnt = std::min(kChunk, K - k0);
        const T* br = b + j * ldb + k0;
        for (int64_t k = 0; k < cnt; ++k) wb[k] = static_cast<float>(br[k]);
        for (int64_t i = 0; i < M; ++i) acc[i] = acc[i] + lane_dot(xa.data() + i * K + k0, wb.data(), cnt);
      }
      for (int64_t i = 0; i < M; ++i) c[i * ldc + j] = T(acc[i]);
    }
    return;
  }
#if EMBER_ISA_HAS_AVX2
  // sgemm widens what it packs
  AlignedScratch<float> scratch(M * N, false);
  float* acc = scratch.data;
  sgemm(a, ta, lda, b, tb, ldb, acc, N, M, N, K, false);
#else
  // each tile keeps its operand's layout (a transposed operand stays
  // transposed, read along its rows), so every conversion reads memory in
  // order and cblas takes the transpose flag
  std::vector<float> ta_buf, tb_buf, sums(M * N, 0.0f);
  float* acc = sums.data();
  for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
    const int64_t kb = std::min(kTileK, K - k0);
    ta_buf.resize(M * kb);
    tb_buf.resize(kb * N);
    if (ta) {  // A^T stored (K, M): the tile is (kb, M)
      for (int64_t k = 0; k < kb; ++k)
        for (int64_t i = 0; i < M; ++i) ta_buf[k * M + i] = static_cast<float>(a[(k0 + k) * lda + i]);
    } else {
      for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < kb; ++k) ta_buf[i * kb + k] = static_cast<float>(a[i * lda + k0 + k]);
    }
    if (tb) {  // B^T stored (N, K): the tile is (N, kb)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < kb; ++k) tb_buf[j * kb + k] = static_cast<float>(b[j * ldb + k0 + k]);
    } else {
      for (int64_t k = 0; k < kb; ++k)
        for (int64_t j = 0; j < N; ++j) tb_buf[k * N + j] = static_cast<float>(b[(k0 + k) * ldb + j]);
    }
    scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, kb, 1.0f,
                      ta_buf.data(), ta ? M : kb, tb_buf.data(), tb ? kb : N, 1.0f, acc, N);
  }
#endif
  for (int64_t i = 0; i < M; ++i)  // rounded once, by the copy engine's conversion
    cpu::convert_dense(Dtype::float32, acc + i * N, type_to_dtype<T>::value, c + i * ldc, N);
}


// One product C (M x N, leading dim ldc) = op(A) op(B) on the calling thread.
template <class T>
void gemm(const T* a, bool ta, int64_t lda, const T* b, bool tb, int64_t ldb, T* c, int64_t ldc, int64_t M,
          int64_t N, int64_t K) {
  auto fa = ta ? CblasTrans : CblasNoTrans, fb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
#if EMBER_ISA_HAS_AVX2
    sgemm(a, ta, lda, b, tb, ldb, c, ldc, M, N, K, false);
#else
    scipy_cblas_sgemm(CblasRowMajor, fa, fb, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
#endif
  } else if constexpr (std::is_same_v<T, double>) {
    scipy_cblas_dgemm(CblasRowMajor, fa, fb, M, N, K, 1.0, a, lda, b, ldb, 0.0, c, ldc);
  } else if constexpr (is_complex_v<T>) {
    const T one(1, 0), zero(0, 0);
    scipy_cblas_cgemm(CblasRowMajor, fa, fb, M, N, K, &one, a, lda, b, ldb, &zero, c, ldc);
  } else if constexpr (is_half_v<T>) {
    half_gemm(a, ta, lda, b, tb, ldb, c, ldc, M, N, K);
  } else {
    naive_gemm(a, ta, lda, b, tb, ldb, c, ldc, M, N, K);
  }
}

constexpr int64_t kParallelFlops = int64_t(1) << 21;      // below: one thread
constexpr int64_t kThreadedItemFlops = int64_t(1) << 25;  // batch items this large: each split over the pool

#if EMBER_ISA_HAS_AVX2
// One threaded half-precision product: sgemm over the pool, widening what
// it packs, into a float32 product rounded to the output's dtype once. The
// same FMA chains as half_gemm's, so the same bits; one product over the
// cores instead of row slices that each pack all of B.
template <class T>
void half_gemm_threaded(const T* a, bool ta, int64_t lda, const T* b, bool tb, int64_t ldb, array& out, int64_t M,
                        int64_t N, int64_t K) {
  AlignedScratch<float> fc(M * N, false);
  sgemm(a, ta, lda, b, tb, ldb, fc.data, N, M, N, K, true);
  cpu::convert_dense(Dtype::float32, fc.data, out.dtype(), out.raw_data(), M * N);
}
#endif

}  // namespace

void matmul_eval(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  out.alloc();
  if (out.size() == 0) return;
  const int64_t M = out.shape(-2), N = out.shape(-1), K = inputs[0].shape(-1);
  const int64_t batch = out.size() / (M * N);
  if (K == 0) {
    std::memset(out.raw_data(), 0, out.nbytes());
    return;
  }
  MatView A = prepare(inputs[0], batch), B = prepare(inputs[1], batch);
  // OpenBLAS single-threaded inside Ember's split (blas.h); the own kernel needs no switch
  const Dtype t = out.dtype();
  const bool own_kernel = EMBER_ISA_HAS_AVX2 && (t == Dtype::float32 || t == Dtype::float16 || t == Dtype::bfloat16);
  std::unique_ptr<cpu::SingleThreadedBlas> single;
  if (is_inexact(t) && !own_kernel) single = std::make_unique<cpu::SingleThreadedBlas>();
  const double flops = 2.0 * M * N * K;
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = A.arr.data<T>();
    const T* pb = B.arr.data<T>();
    T* pc = out.data<T>();
#if EMBER_ISA_HAS_AVX2
    if constexpr (std::is_same_v<T, float>) {
      if (batch > 1 && flops >= kThreadedItemFlops) {  // large products one after another, each split
        for (int64_t i = 0; i < batch; ++i)
          sgemm(pa + A.offsets[i], A.trans, A.ld, pb + B.offsets[i], B.trans, B.ld, pc + i * M * N, N, M, N, K, true);
        return;
      }
    }
#endif
    if (batch > 1) {  // whole products per chunk
      int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kParallelFlops / flops));
      cpu::parallel_for(batch, grain, [&](int64_t b0, int64_t b1) {
        for (int64_t i = b0; i < b1; ++i)
          gemm(pa + A.offsets[i], A.trans, A.ld, pb + B.offsets[i], B.trans, B.ld, pc + i * M * N, N, M, N, K);
      });
      return;
    }
    const T* a = pa + A.offsets[0];
    const T* b = pb + B.offsets[0];
#if EMBER_ISA_HAS_AVX2
    if constexpr (std::is_same_v<T, float>) {  // one product: sgemm splits its tiles itself
      sgemm(a, A.trans, A.ld, b, B.trans, B.ld, pc, N, M, N, K, flops >= kParallelFlops);
      return;
    }
#endif
#if EMBER_ISA_HAS_AVX512
    if constexpr (std::is_same_v<T, bfloat16_t>) {  // so does bf16_gemm
      if (bf16_pairs(B.trans, M))
        return bf16_gemm(a, A.trans, A.ld, b, B.trans, B.ld, pc, N, M, N, K, flops >= kParallelFlops);
    }
#endif
#if EMBER_ISA_HAS_AVX2
    if constexpr (is_half_v<T>) {  // one large product: one threaded sgemm
      if (flops >= kParallelFlops && !(B.trans && M <= 4))
        return half_gemm_threaded(a, A.trans, A.ld, b, B.trans, B.ld, out, M, N, K);
    }
#endif
    // one product: split the rows of C (or its columns when there are few rows)
    const bool by_rows = M >= N || M >= 256;
    const int64_t extent = by_rows ? M : N;
    const int64_t grain = flops < kParallelFlops ? extent : std::max<int64_t>(32, extent / 8);
    cpu::parallel_for(extent, grain, [&](int64_t r0, int64_t r1) {
      if (by_rows) {
        const T* a0 = A.trans ? a + r0 : a + r0 * A.ld;
        gemm(a0, A.trans, A.ld, b, B.trans, B.ld, pc + r0 * N, N, r1 - r0, N, K);
      } else {
        const T* b0 = B.trans ? b + r0 * B.ld : b + r0;
        gemm(a, A.trans, A.ld, b0, B.trans, B.ld, pc + r0, N, M, r1 - r0, K);
      }
    });
  });
}

}  // namespace ember::cpu::EMBER_ISA_NS

#if EMBER_ISA_BASE_UNIT
namespace ember {
void Matmul::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(matmul_eval)(inputs, outputs);
}
}  // namespace ember
#endif
