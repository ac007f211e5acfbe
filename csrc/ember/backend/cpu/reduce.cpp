// Reductions, arg-reductions and softmax.
//
// Every reduction computes one order of evaluation, fixed by the shape alone:
// the same bits at every ISA level and thread count, and for every layout of
// the input (a transposed, strided, reversed or broadcast view reduces to
// what its dense copy does, so vmap and a loop agree).
//
// * The run of an output is its reduced elements in logical order. It is cut
//   by the pairwise rule split_at() into pieces of at most kBlock elements,
//   whose results combine pairwise back up the same tree. In a piece,
//   element i goes to lane i mod L (L = kLanes: 32 lanes of 4-byte
//   accumulators, 16 of 8-byte ones), each lane folding its elements in order
//   from the identity; the lanes then combine as a tree, lane j with lane
//   j + w for w = L/2, ..., 1. Lanes that hold only the identity may be
//   skipped or added: that changes nothing (a sum's lane is never -0, it
//   starts as 0 + x).
// * Runs along a contiguous (or every-other-element, or any-stride) axis are
//   reduced by vpiece in vectors: L/W vectors of W lanes, halved in registers
//   at the end, for any width W; short rows use the narrowest vector that
//   holds them, loads of a row's tail are masked in registers. Other dtypes
//   go lane by lane through grun, in the same order.
// * A strided reduced axis next to a contiguous kept axis (sum over axis 0,
//   x.T over its last axis) is reduced by vert_piece, vectorized over the
//   kept axis: lane j folds rows j, j + L, ... into one row of accumulators,
//   four rows per pass, and the lanes are visited in bit-reversed order so
//   that their tree builds on a stack of a few rows. Nothing is copied, except
//   for reductions over several axes that do not merge into one.
// * Long runs are spread over the threads at fixed nodes of their pairwise
//   tree (pieces of kPiece elements, or kBlock rows), never at thread
//   boundaries.
// * Float max/min propagate NaN, and any NaN result (of sums and products
//   too) is the canonical quiet NaN.
//
// Softmax takes rows several at a time (about kChunk elements): the row
// maxima, x - max, one exp pass over the chunk, the row sums (the run order
// above), the scaling. A strided row is gathered into the chunk first.
#include "ember/backend/cpu/isa_unit.h"

#include "ember/backend/cpu/functors.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/backend/cpu/small_buffer.h"
#include "ember/backend/cpu/vec.h"

namespace ember::cpu::EMBER_ISA_NS {

namespace {

#define EMBER_RI inline __attribute__((always_inline))

// --------------------------------------------------------------- operations
// apply() takes scalars or vectors of the accumulator type; operands are
// always (earlier, later) or (lower lanes, upper lanes).

template <class A>
struct SumOp {
  static A init() { return A(0); }
  template <class V>
  static EMBER_RI V apply(V a, V b) {
    return a + b;
  }
};
template <class A>
struct ProdOp {
  static A init() { return A(1); }
  template <class V>
  static EMBER_RI V apply(V a, V b) {
    return a * b;
  }
};
template <class A>
struct MaxOp {
  static A init() {
    if constexpr (is_complex_v<A>) return A(-std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity());
    else if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  template <class V>
  static EMBER_RI V apply(V a, V b) {
    if constexpr (is_complex_v<A>) return Fn<op::Maximum>{}(a, b);
    else if constexpr (std::is_floating_point_v<A>) return ((a > b) | (a != a)) ? a : b;  // NaN sticks
    else return a > b ? a : b;
  }
};
template <class A>
struct MinOp {
  static A init() {
    if constexpr (is_complex_v<A>) return A(std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity());
    else if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  template <class V>
  static EMBER_RI V apply(V a, V b) {
    if constexpr (is_complex_v<A>) return Fn<op::Minimum>{}(a, b);
    else if constexpr (std::is_floating_point_v<A>) return ((a < b) | (a != a)) ? a : b;
    else return a < b ? a : b;
  }
};
struct AndOp {
  static bool init() { return true; }
  template <class V>
  static EMBER_RI V apply(V a, V b) {
    return a && b;
  }
};
struct OrOp {
  static bool init() { return false; }
  template <class V>
  static EMBER_RI V apply(V a, V b) {
    return a || b;
  }
};

// The dtype sums and products accumulate into (MLX's rule).
template <class T>
struct SumOut {
  using type = T;
};
#define EMBER_SUM_OUT(T, O) \
  template <>               \
  struct SumOut<T> {        \
    using type = O;         \
  };
EMBER_SUM_OUT(bool, int32_t)
EMBER_SUM_OUT(int8_t, int32_t)
EMBER_SUM_OUT(int16_t, int32_t)
EMBER_SUM_OUT(uint8_t, uint32_t)
EMBER_SUM_OUT(uint16_t, uint32_t)
#undef EMBER_SUM_OUT

// Lanes of the canonical order (see the top of the file).
template <class A>
constexpr int kLanes = sizeof(A) <= 4 ? 32 : 16;
constexpr int64_t kBlock = 4096;         // longest piece reduced in one pass
constexpr int64_t kPiece = 1 << 16;      // pieces of a long run spread over the threads
constexpr int64_t kColChunk = 1024;      // kept elements per task of a vertical reduction (a page of float32)

// Where a run of n > kBlock splits: the first half, rounded up to whole lanes.
template <int L>
EMBER_RI int64_t split_at(int64_t n) {
  return (n / 2 + L - 1) / L * L;
}

// The pairwise tree over a run of n elements: leaf(off, len) gives the
// result of each node of at most thr elements, and the nodes combine with Op
// back up the tree (the left one computed first).
template <class Op, int L, class Leaf>
auto pairwise(int64_t n, int64_t thr, Leaf&& leaf, int64_t off = 0) -> decltype(leaf(off, n)) {
  if (n <= thr) return leaf(off, n);
  const int64_t h = split_at<L>(n);
  const auto a = pairwise<Op, L>(h, thr, leaf, off);
  return Op::apply(a, pairwise<Op, L>(n - h, thr, leaf, off + h));
}

template <class A>
EMBER_RI A canon_nan(A a) {
  if constexpr (std::is_floating_point_v<A>) return a != a ? std::numeric_limits<A>::quiet_NaN() : a;
  else return a;
}

// ------------------------------------------------------------------ vectors
template <class T>
using LaneInt = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
template <class T>
constexpr int kW = EMBER_ISA_VECTOR_BYTES / static_cast<int>(sizeof(T));  // lanes of the level's vectors
template <class T>
constexpr int kX = 16 / static_cast<int>(sizeof(T));  // lanes of a 16-byte vector
// Types the vector kernels take (others go lane by lane through grun).
template <class A, class T>
constexpr bool kVecKernel = std::is_same_v<A, T> && (std::is_same_v<T, float> || std::is_same_v<T, double>);

template <class T, int N, size_t... J>
EMBER_RI VecN<LaneInt<T>, N> lane_index(std::index_sequence<J...>) {
  return VecN<LaneInt<T>, N>{static_cast<LaneInt<T>>(J)...};
}
// v in lanes [0, cnt), id in the others
template <class T, int N>
EMBER_RI VecN<T, N> first_lanes(const VecN<T, N>& v, int cnt, const VecN<T, N>& id) {
  const VecN<LaneInt<T>, N> keep = lane_index<T, N>(std::make_index_sequence<N>{}) < static_cast<LaneInt<T>>(cnt);
  return keep ? v : id;
}
template <int Off, class T, int N, size_t... I>
EMBER_RI VecN<T, static_cast<int>(sizeof...(I))> lanes_from(const VecN<T, N>& v, std::index_sequence<I...>) {
  return __builtin_shufflevector(v, v, (Off + static_cast<int>(I))...);
}
template <class T, int N, size_t... I>
EMBER_RI VecN<T, N> even_lanes(const VecN<T, N>& a, const VecN<T, N>& b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, (2 * static_cast<int>(I))...);
}

// The lane tree of one vector (lane j with lane j + N/2, ...).
template <class Op, class T, int N>
EMBER_RI T hreduce(const VecN<T, N>& v) {
  if constexpr (N > kX<T>) {
    const VecN<T, N / 2> lo = lanes_from<0, T, N>(v, std::make_index_sequence<N / 2>{});
    const VecN<T, N / 2> hi = lanes_from<N / 2, T, N>(v, std::make_index_sequence<N / 2>{});
    return hreduce<Op, T, N / 2>(Op::apply(lo, hi));
  } else if constexpr (N == 4) {
    const VecN<T, 4> h = __builtin_shufflevector(v, v, 2, 3, 2, 3);
    const VecN<T, 4> s = Op::apply(v, h);
    const VecN<T, 4> h2 = __builtin_shufflevector(s, s, 1, 1, 1, 1);
    return Op::apply(s, h2)[0];
  } else {
    static_assert(N == 2, "hreduce: 16-byte vectors hold 2 or 4 lanes");
    const VecN<T, 2> h = __builtin_shufflevector(v, v, 1, 1);
    return Op::apply(v, h)[0];
  }
}

// ------------------------------------------------------------------ loaders
// A run seen as lanes: full<N>(i) is elements i..i+N-1, part<N>(i, c, id)
// the first c of them and id in the other lanes. Loads may read past the run
// up to `limit` (the end of the input's extent), never beyond.
// No software prefetch: the hardware's stream prefetchers keep up with these
// loads, and one prefetch per 64-byte line took load slots (on Zen 4, with
// one per line 4 KB ahead, row sums ran 36-53 GB/s against 60-73 without).

template <class T>
struct Contig {
  const T* x;
  const T* limit;
  EMBER_RI Contig at(int64_t i) const { return {x + i, limit}; }
  template <int N>
  EMBER_RI VecN<T, N> full(int64_t i) const {
    return vload<VecN<T, N>>(x + i);
  }
  template <int N>
  EMBER_RI VecN<T, N> part(int64_t i, int cnt, const VecN<T, N>& id) const {
    const T* p = x + i;
    if (p + N <= limit) return first_lanes<T, N>(vload<VecN<T, N>>(p), cnt, id);
    VecN<T, N> v = id;
    for (int j = 0; j < N; ++j) {
      if (j < cnt) v[j] = p[j];
    }
    return v;
  }
};
// Every other element: two loads, the even lanes picked in registers.
template <class T>
struct Stride2 {
  const T* x;
  const T* limit;
  EMBER_RI Stride2 at(int64_t i) const { return {x + 2 * i, limit}; }
  template <int N>
  EMBER_RI VecN<T, N> full(int64_t i) const {
    const T* p = x + 2 * i;
    if (p + 2 * N <= limit) {
      return even_lanes<T, N>(vload<VecN<T, N>>(p), vload<VecN<T, N>>(p + N), std::make_index_sequence<N>{});
    }
    VecN<T, N> v;
    for (int j = 0; j < N; ++j) v[j] = p[2 * j];
    return v;
  }
  template <int N>
  EMBER_RI VecN<T, N> part(int64_t i, int cnt, const VecN<T, N>& id) const {
    const T* p = x + 2 * i;
    if (p + 2 * N <= limit) {
      return first_lanes<T, N>(
          even_lanes<T, N>(vload<VecN<T, N>>(p), vload<VecN<T, N>>(p + N), std::make_index_sequence<N>{}), cnt, id);
    }
    VecN<T, N> v = id;
    for (int j = 0; j < N; ++j) {
      if (j < cnt) v[j] = p[2 * j];
    }
    return v;
  }
};
template <class T>
struct Strided {
  const T* x;
  int64_t s;
  EMBER_RI Strided at(int64_t i) const { return {x + i * s, s}; }
  template <int N>
  EMBER_RI VecN<T, N> full(int64_t i) const {
    VecN<T, N> v;
    for (int j = 0; j < N; ++j) v[j] = x[(i + j) * s];
    return v;
  }
  template <int N>
  EMBER_RI VecN<T, N> part(int64_t i, int cnt, const VecN<T, N>& id) const {
    VecN<T, N> v = id;
    for (int j = 0; j < N; ++j) {
      if (j < cnt) v[j] = x[(i + j) * s];
    }
    return v;
  }
};

// ------------------------------------------------------------- run kernels

// One piece (n <= kBlock) in vectors of N lanes, up to its last N-lane
// vector (the lane tree above N done).
template <class Op, class T, int N, class Ld>
EMBER_RI VecN<T, N> vfold(const Ld& ld, int64_t n) {
  using V = VecN<T, N>;
  constexpr int L = kLanes<T>, NV = L / N;
  const V id = splat<VecN<T, N>>(Op::init());
  if (n <= N) {  // lanes N.. hold the identity: their levels of the tree change nothing
    const V v = n == N ? ld.template full<N>(0) : ld.template part<N>(0, static_cast<int>(n), id);
    return Op::apply(id, v);
  }
  V acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = id;
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    for (int v = 0; v < NV; ++v) acc[v] = Op::apply(acc[v], ld.template full<N>(i + v * N));
  }
  if (i < n) {
    const int r = static_cast<int>(n - i);
    for (int v = 0; v < NV; ++v) {
      const int c = r - v * N;
      if (c <= 0) break;
      acc[v] = Op::apply(acc[v], c >= N ? ld.template full<N>(i + v * N) : ld.template part<N>(i + v * N, c, id));
    }
  }
  for (int m = NV; m > 1; m /= 2) {
    for (int v = 0; v < m / 2; ++v) acc[v] = Op::apply(acc[v], acc[v + m / 2]);
  }
  return acc[0];
}
template <class Op, class T, int N, class Ld>
EMBER_RI T vpiece(const Ld& ld, int64_t n) {
  return hreduce<Op, T, N>(vfold<Op, T, N>(ld, n));
}

template <class Op, class T, int N, class Ld>
T vrun(const Ld& ld, int64_t n) {
  if (n <= kBlock) return vpiece<Op, T, N>(ld, n);
  return pairwise<Op, kLanes<T>>(n, kBlock, [&](int64_t off, int64_t len) { return vpiece<Op, T, N>(ld.at(off), len); });
}

// Many short rows at once: W rows' last vectors (or, for rows of G < W
// lanes, W / G rows per vector) go through a network that halves every row
// and packs the halves of two vectors into one, until one vector holds the W
// results: lane tree of each row unchanged, ~2 shuffles per row in all.
template <int W, int G, bool Hi>
constexpr int net_lane(int q) {
  const int h = G / 2, per = W / G, row = q / h;
  return (row < per ? 0 : W) + (row % per) * G + q % h + (Hi ? h : 0);
}
template <class T, int W, int G, bool Hi, size_t... Q>
EMBER_RI VecN<T, W> net_pick(const VecN<T, W>& a, const VecN<T, W>& b, std::index_sequence<Q...>) {
  return __builtin_shufflevector(a, b, net_lane<W, G, Hi>(static_cast<int>(Q))...);
}
// v: G vectors of W / G rows each, rows in order -> the W rows' results
template <class Op, class T, int W, int G>
EMBER_RI VecN<T, W> row_network(VecN<T, W>* v) {
  if constexpr (G == 1) {
    return v[0];
  } else {
    for (int i = 0; i < G / 2; ++i) {
      const VecN<T, W> lo = net_pick<T, W, G, false>(v[2 * i], v[2 * i + 1], std::make_index_sequence<W>{});
      const VecN<T, W> hi = net_pick<T, W, G, true>(v[2 * i], v[2 * i + 1], std::make_index_sequence<W>{});
      v[i] = Op::apply(lo, hi);
    }
    return row_network<Op, T, W, G / 2>(v);
  }
}
template <class T, int N, size_t... I>
EMBER_RI VecN<T, 2 * N> concat2(const VecN<T, N>& a, const VecN<T, N>& b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, static_cast<int>(I)...);
}
template <class T, int W>
EMBER_RI VecN<T, W> canon_nan_v(const VecN<T, W>& v) {
  return v != v ? splat<VecN<T, W>>(std::numeric_limits<T>::quiet_NaN()) : v;
}

// The reductions of W rows of n <= kBlock contiguous elements, row r at
// x + r * ks; G = the lanes one row takes (min(P, W), P the lanes of its
// tree, at least 16 bytes' worth).
template <class Op, class T, int W, int G>
EMBER_RI VecN<T, W> group_reduce(const T* x, int64_t ks, int64_t n, const T* limit) {
  VecN<T, W> v[G];
  if constexpr (G == W) {
    for (int r = 0; r < W; ++r) v[r] = vfold<Op, T, W>(Contig<T>{x + r * ks, limit}, n);
  } else {
    constexpr int K = W / G;  // rows per vector
    if (n == G && ks == G) {  // rows back to back, each exactly G lanes
      const VecN<T, W> id = splat<VecN<T, W>>(Op::init());
      for (int i = 0; i < G; ++i) v[i] = Op::apply(id, vload<VecN<T, W>>(x + i * W));
    } else {
      for (int i = 0; i < G; ++i) {
        VecN<T, G> r[K];
        for (int k = 0; k < K; ++k) r[k] = vfold<Op, T, G>(Contig<T>{x + (i * K + k) * ks, limit}, n);
        if constexpr (K == 2) {
          v[i] = concat2<T, G>(r[0], r[1], std::make_index_sequence<2 * G>{});
        } else {
          static_assert(K == 4, "group_reduce: 2 or 4 rows per vector");
          v[i] = concat2<T, 2 * G>(concat2<T, G>(r[0], r[1], std::make_index_sequence<2 * G>{}),
                                   concat2<T, G>(r[2], r[3], std::make_index_sequence<2 * G>{}),
                                   std::make_index_sequence<4 * G>{});
        }
      }
    }
  }
  return row_network<Op, T, W, G>(v);
}
template <class Op, class T, int W, int G>
EMBER_RI void rows_group(const T* x, int64_t ks, int64_t n, const T* limit, T* out) {
  vstore(out, canon_nan_v<T, W>(group_reduce<Op, T, W, G>(x, ks, n, limit)));
}

// Rows [b, e) of n <= kBlock contiguous elements (row o at x + o * ks) into
// out[b, e): W rows at a time, the rest one by one.
template <class Op, class T, int G>
void rows_grouped(const T* x, int64_t ks, int64_t n, const T* limit, int64_t b, int64_t e, T* out) {
  constexpr int W = kW<T>;
  int64_t o = b;
  for (; o + W <= e; o += W) rows_group<Op, T, W, G>(x + o * ks, ks, n, limit, out + o);
  for (; o < e; ++o) out[o] = canon_nan(vpiece<Op, T, G>(Contig<T>{x + o * ks, limit}, n));
}

// The same order lane by lane, for every type (stride s in elements): one
// piece (n <= kBlock) in gpiece, a whole run in grun.
template <class Op, class A, class T>
A gpiece(const T* x, int64_t n, int64_t s) {
  if constexpr (std::is_same_v<T, float16_t>) {
    if (s == 1) {  // widened with F16C first (the same values in the same order)
      alignas(64) float buf[kBlock];
      widen_f16(x, buf, n);
      return gpiece<Op, A>(static_cast<const float*>(buf), n, 1);
    }
  }
  constexpr int L = kLanes<A>;
  A acc[L];
  for (int j = 0; j < L; ++j) acc[j] = Op::init();
  int64_t i = 0;
  if (s == 1) {
    for (; i + L <= n; i += L) {
      for (int j = 0; j < L; ++j) acc[j] = Op::apply(acc[j], convert<A>(x[i + j]));
    }
  } else {
    for (; i + L <= n; i += L) {
      for (int j = 0; j < L; ++j) acc[j] = Op::apply(acc[j], convert<A>(x[(i + j) * s]));
    }
  }
  for (int j = 0; i + j < n; ++j) acc[j] = Op::apply(acc[j], convert<A>(x[(i + j) * s]));
  for (int w = L / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] = Op::apply(acc[j], acc[j + w]);
  }
  return acc[0];
}
template <class Op, class A, class T>
A grun(const T* x, int64_t n, int64_t s) {
  return pairwise<Op, kLanes<A>>(n, kBlock, [&](int64_t off, int64_t len) { return gpiece<Op, A>(x + off * s, len, s); });
}

// Calls f(std::integral_constant<int, N>) with the narrowest vector (16
// bytes at least, the level's width at most) that holds min(n, width) lanes.
template <class T, class F>
EMBER_RI void with_lanes(int64_t n, F&& f) {
  constexpr int W = kW<T>, X = kX<T>;
  if constexpr (W >= 4 * X) {
    if (n > 2 * X) return f(std::integral_constant<int, W>{});
    if (n > X) return f(std::integral_constant<int, 2 * X>{});
    return f(std::integral_constant<int, X>{});
  } else if constexpr (W >= 2 * X) {
    if (n > X) return f(std::integral_constant<int, W>{});
    return f(std::integral_constant<int, X>{});
  } else {
    return f(std::integral_constant<int, X>{});
  }
}

// The pieces of the pairwise tree of a run of n (offsets, lengths), cut where
// a node is at most thr long; pairwise() with the same thr combines their
// results.
template <int L>
void tree_pieces(int64_t n, int64_t off, int64_t thr, std::vector<std::pair<int64_t, int64_t>>& out) {
  if (n <= thr) {
    out.emplace_back(off, n);
    return;
  }
  const int64_t h = split_at<L>(n);
  tree_pieces<L>(h, off, thr, out);
  tree_pieces<L>(n - h, off + h, thr, out);
}

// ------------------------------------------------------------------ threads
constexpr int64_t kStep = 1 << 14;  // elements per work item

// f(b, e) over [0, n) in items of `step` (the last one shorter); parallel
// when n >= 2 * grain. Each task owns a contiguous share of the items and
// takes them in order from its front, so that each core reads one stream
// (items dealt out in turn made every core's stream jump ahead every item,
// and the hardware prefetchers start again there: on Zen 4, row sums of
// 33-64 MB ran at 45-76 GB/s dealt in turn, 54-90 in shares, torch 57-93,
// in alternating runs); a task whose share is done takes items from the
// back of the others', so that a core busy elsewhere is not waited for.
// Each item's result is computed the same way whichever thread takes it.
template <class F>
void parallel_steps(int64_t n, int64_t grain, int64_t step, F&& f) {
  if (n <= 0) return;
  step = std::max<int64_t>(step, 1);
  const int nt = num_threads();
  const int64_t nsteps = (n + step - 1) / step;
  if (nt <= 1 || n < 2 * std::max<int64_t>(grain, 1) || nsteps < 2 || nsteps >= (int64_t(1) << 31)) {
    f(int64_t(0), n);
    return;
  }
  // share t: items [front, back), packed as front << 32 | back
  std::unique_ptr<std::atomic<uint64_t>[]> share(new std::atomic<uint64_t>[nt]);
  for (int t = 0; t < nt; ++t) {
    share[t].store(uint64_t(nsteps * t / nt) << 32 | uint64_t(nsteps * (t + 1) / nt), std::memory_order_relaxed);
  }
  // the next item of share t, from its front or its back; -1 when it is empty
  auto take = [&](int t, bool front) -> int64_t {
    uint64_t cur = share[t].load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t lo = cur >> 32, hi = cur & 0xffffffffu;
      if (lo >= hi) return -1;
      const uint64_t want = front ? (lo + 1) << 32 | hi : lo << 32 | (hi - 1);
      if (share[t].compare_exchange_weak(cur, want, std::memory_order_relaxed)) {
        return static_cast<int64_t>(front ? lo : hi - 1);
      }
    }
  };
  parallel_for(nt, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      for (int64_t i; (i = take(static_cast<int>(t), true)) >= 0;) f(i * step, std::min(n, (i + 1) * step));
      for (int v = 1; v < nt; ++v) {
        const int u = static_cast<int>((t + v) % nt);
        for (int64_t i; (i = take(u, false)) >= 0;) f(i * step, std::min(n, (i + 1) * step));
      }
    }
  });
}

// ------------------------------------------------------------------ layouts
// A walk over dims in row-major order (innermost last): the input offset and,
// where output strides are given, the output offset of each position.
struct Walk {
  std::vector<int64_t> n, s, os;
  // appends a dim (after those pushed before, in logical order), merged
  // into the last one where the two are contiguous; size-1 dims add nothing
  void push(int64_t len, int64_t stride) {
    if (len == 1) return;
    if (!n.empty() && s.back() == stride * len) {
      n.back() *= len;
      s.back() = stride;
    } else {
      n.push_back(len);
      s.push_back(stride);
    }
  }
  int64_t size() const {
    int64_t r = 1;
    for (int64_t v : n) r *= v;
    return r;
  }
};
class Cursor {
 public:
  Cursor(const Walk& w, int64_t pos) : w_(w), idx_(w.n.size(), 0) {
    for (int d = static_cast<int>(w.n.size()) - 1; d >= 0; --d) {
      idx_[d] = pos % w.n[d];
      pos /= w.n[d];
      in_ += idx_[d] * w.s[d];
      if (!w.os.empty()) out_ += idx_[d] * w.os[d];
    }
  }
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  void next() {
    for (int d = static_cast<int>(w_.n.size()) - 1; d >= 0; --d) {
      in_ += w_.s[d];
      if (!w_.os.empty()) out_ += w_.os[d];
      if (++idx_[d] < w_.n[d]) return;
      in_ -= w_.n[d] * w_.s[d];
      if (!w_.os.empty()) out_ -= w_.n[d] * w_.os[d];
      idx_[d] = 0;
    }
  }

 private:
  const Walk& w_;
  std::vector<int64_t> idx_;
  int64_t in_ = 0, out_ = 0;
};

// Runs of n elements at x + (the kept walk's offsets), stride s; red(row, len)
// reduces one run (or one piece of it) in the canonical order.
template <class Op, class A, class O, class T, class F>
void reduce_runs(const T* x, int64_t n, int64_t s, const Walk& kept, int64_t outer, O* out, F&& red) {
  if (n > 2 * kPiece && outer < 4 * num_threads()) {
    // few long runs: every run's tree pieces are tasks
    std::vector<std::pair<int64_t, int64_t>> pcs;
    tree_pieces<kLanes<A>>(n, 0, kPiece, pcs);
    const int64_t np = static_cast<int64_t>(pcs.size());
    std::unique_ptr<A[]> vals(new A[outer * np]);
    parallel_steps(outer * np, 1, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const auto& pc = pcs[t % np];
        vals[t] = red(x + Cursor(kept, t / np).in() + pc.first * s, pc.second);
      }
    });
    for (int64_t o = 0; o < outer; ++o) {
      const A* v = vals.get() + o * np;
      out[o] = convert<O>(canon_nan(pairwise<Op, kLanes<A>>(n, kPiece, [&](int64_t, int64_t) { return *v++; })));
    }
    return;
  }
  const int64_t rn = std::max<int64_t>(n, 1);
  parallel_steps(outer, kParallelGrain / rn, std::max<int64_t>(1, kStep / rn), [&](int64_t b, int64_t e) {
    if (kept.n.size() <= 1) {
      const int64_t ks = kept.n.empty() ? 0 : kept.s[0];
      for (int64_t o = b; o < e; ++o) out[o] = convert<O>(canon_nan(red(x + o * ks, n)));
      return;
    }
    Cursor c(kept, b);
    for (int64_t o = b; o < e; ++o, c.next()) out[o] = convert<O>(canon_nan(red(x + c.in(), n)));
  });
}

template <class Op, class A, class O, class T>
void reduce_rows_path(const T* x, const T* limit, int64_t n, int64_t s, const Walk& kept, int64_t outer, O* out) {
  if (n == 1) {
    // one element an output (the reduced axes have size 1: a grouped
    // attention's sum over its one repeat): the identity folded with it, as
    // every run starts, in one elementwise loop instead of a run per output
    parallel_steps(outer, kParallelGrain, kStep, [&](int64_t b, int64_t e) {
      auto one = [](T v) { return convert<O>(canon_nan(Op::apply(Op::init(), convert<A>(v)))); };
      if (kept.n.size() <= 1) {
        const int64_t ks = kept.n.empty() ? 0 : kept.s[0];
        if (ks == 1) {
          for (int64_t o = b; o < e; ++o) out[o] = one(x[o]);
        } else {
          for (int64_t o = b; o < e; ++o) out[o] = one(x[o * ks]);
        }
        return;
      }
      Cursor c(kept, b);
      for (int64_t o = b; o < e; ++o, c.next()) out[o] = one(x[c.in()]);
    });
    return;
  }
  if constexpr (kVecKernel<A, T>) {
    if (s == 1 && kept.n.size() <= 1 && n <= kBlock && outer >= 2 * kW<T>) {
      // many rows: W at a time through the row network
      const int64_t ks = kept.n.empty() ? 0 : kept.s[0];
      with_lanes<T>(n, [&](auto g) {
        constexpr int G = decltype(g)::value;
        constexpr int W = kW<T>;
        parallel_steps(outer, kParallelGrain / n, std::max<int64_t>(1, kStep / n / W) * W, [&](int64_t b, int64_t e) {
          rows_grouped<Op, T, G>(x, ks, n, limit, b, e, out);
        });
      });
      return;
    }
    if (s == 1) {
      with_lanes<T>(n, [&](auto lanes) {
        constexpr int N = decltype(lanes)::value;
        reduce_runs<Op, A>(x, n, s, kept, outer, out,
                           [&](const T* r, int64_t len) { return vrun<Op, T, N>(Contig<T>{r, limit}, len); });
      });
    } else if (s == 2) {
      reduce_runs<Op, A>(x, n, s, kept, outer, out,
                         [&](const T* r, int64_t len) { return vrun<Op, T, kW<T>>(Stride2<T>{r, limit}, len); });
    } else {
      reduce_runs<Op, A>(x, n, s, kept, outer, out,
                         [&](const T* r, int64_t len) { return vrun<Op, T, kW<T>>(Strided<T>{r, s}, len); });
    }
  } else {
    reduce_runs<Op, A>(x, n, s, kept, outer, out, [&](const T* r, int64_t len) { return grun<Op, A>(r, len, s); });
  }
}

// acc[k] = the fold from the identity of x[r * rs + k] over rows r < cnt
// (cnt >= 1), four rows per pass over acc.
template <class Op, class A, class T>
void lane_fold(const T* __restrict x, int64_t cnt, int64_t rs, int64_t w, A* __restrict acc) {
  const A id = Op::init();
  for (int64_t k = 0; k < w; ++k) acc[k] = Op::apply(id, convert<A>(x[k]));
  int64_t r = 1;
  for (; r + 4 <= cnt; r += 4) {
    const T* a = x + r * rs;
    const T* b = a + rs;
    const T* c = b + rs;
    const T* d = c + rs;
    for (int64_t k = 0; k < w; ++k) {
      A v = Op::apply(acc[k], convert<A>(a[k]));
      v = Op::apply(v, convert<A>(b[k]));
      v = Op::apply(v, convert<A>(c[k]));
      acc[k] = Op::apply(v, convert<A>(d[k]));
    }
  }
  for (; r < cnt; ++r) {
    const T* a = x + r * rs;
    for (int64_t k = 0; k < w; ++k) acc[k] = Op::apply(acc[k], convert<A>(a[k]));
  }
}
template <class Op, class A>
EMBER_RI void combine_into(A* __restrict a, const A* __restrict b, int64_t w) {
  for (int64_t k = 0; k < w; ++k) a[k] = Op::apply(a[k], b[k]);
}

constexpr int kVertStack = 8;  // lane-tree stack slots (log2(32) + 1 needed)

// The canonical order of one piece (n <= kBlock rows) for w columns at once:
// lane j folds rows j, j + L, ... (one pass down the rows, row by row
// contiguous); the lanes are visited in bit-reversed order so that the lane
// tree (lane j with lane j + w, ...) builds on a stack of a few rows.
// res: w values; st: kVertStack * w scratch.
template <class Op, class A, class T>
void vert_piece(const T* x, int64_t n, int64_t rs, int64_t w, A* res, A* st) {
  constexpr int L = kLanes<A>;
  int bits = 0;
  while ((int64_t(1) << bits) < std::min<int64_t>(n, L)) ++bits;  // lanes beyond n hold the identity
  const int P = 1 << bits;
  int depth = 0;
  int size[kVertStack];
  for (int q = 0; q < P; ++q) {
    int j = 0;
    for (int b = 0; b < bits; ++b) j |= ((q >> b) & 1) << (bits - 1 - b);
    A* cur = depth == 0 ? res : st + (depth - 1) * w;
    if (j < n) {
      lane_fold<Op, A>(x + j * rs, (n - j + L - 1) / L, L * rs, w, cur);
    } else {
      for (int64_t k = 0; k < w; ++k) cur[k] = Op::init();
    }
    size[depth++] = 1;
    while (depth >= 2 && size[depth - 1] == size[depth - 2]) {
      A* a = depth == 2 ? res : st + (depth - 3) * w;
      combine_into<Op>(a, st + (depth - 2) * w, w);
      size[depth - 2] *= 2;
      --depth;
    }
  }
}

// Depth of the pairwise split above the pieces of a run of n (the longer
// half first: n / 2 rounds down, so the second half may be the longer).
template <int L>
int split_depth(int64_t n, int64_t thr) {
  int d = 0;
  for (; n > thr; ++d) n = std::max(split_at<L>(n), n - split_at<L>(n));
  return d;
}

// The canonical reduction of n rows (x + r * rs) for w columns into res;
// st: (split_depth + kVertStack) * w scratch.
template <class Op, class A, class T>
void vert_run(const T* x, int64_t n, int64_t rs, int64_t w, A* res, A* st) {
  if (n > kBlock) {
    const int64_t h = split_at<kLanes<A>>(n);
    vert_run<Op, A>(x, h, rs, w, res, st);
    vert_run<Op, A>(x + h * rs, n - h, rs, w, st, st + w);
    combine_into<Op>(res, st, w);
    return;
  }
  vert_piece<Op, A>(x, n, rs, w, res, st);
}

// res = the pairwise tree (thr-long pieces) over the pieces' results vals
// (w each, in order); tmp: split_depth * w.
template <class Op, int L, class A>
void tree_combine_rows(int64_t n, int64_t thr, const A* vals, int64_t w, size_t& k, A* res, A* tmp) {
  if (n <= thr) {
    std::copy(vals + k * w, vals + (k + 1) * w, res);
    ++k;
    return;
  }
  const int64_t h = split_at<L>(n);
  tree_combine_rows<Op, L>(h, thr, vals, w, k, res, tmp);
  tree_combine_rows<Op, L>(n - h, thr, vals, w, k, tmp, tmp + w);
  combine_into<Op>(res, tmp, w);
}

// out[outer offset + k * ocs] = the reduction over r < R of
// x[outer offset + r * rs + k], k < K, vectorized over k.
template <class Op, class A, class O, class T>
void reduce_vertical(const T* x, int64_t R, int64_t rs, int64_t K, const Walk& outerw, O* out, int64_t ocs) {
  constexpr int L = kLanes<A>;
  const int nt = num_threads();
  const int64_t outer = outerw.size();
  int64_t cw = std::min(K, kColChunk);
  if (outer * ((K + cw - 1) / cw) < nt && K > 64) {
    cw = std::max<int64_t>(64, ((K + nt - 1) / nt + 15) / 16 * 16);
    cw = std::min(cw, K);
  }
  const int64_t nc = (K + cw - 1) / cw, ntask = outer * nc;
  struct Task {
    const T* x;
    O* out;
    int64_t w;
  };
  auto task = [&](int64_t t) {
    Cursor c(outerw, t / nc);
    const int64_t k0 = (t % nc) * cw;
    return Task{x + c.in() + k0, out + c.out() + k0 * ocs, std::min(cw, K - k0)};
  };
  auto finish = [&](const Task& tk, const A* res) {
    for (int64_t k = 0; k < tk.w; ++k) tk.out[k * ocs] = convert<O>(canon_nan(res[k]));
  };
  const int depth = split_depth<L>(R, kBlock);
  if (ntask >= nt || R <= 2 * kBlock) {
    parallel_steps(ntask, kParallelGrain / std::max<int64_t>(R * cw, 1), 1, [&](int64_t b, int64_t e) {
      SmallBuffer<A, 16384 / sizeof(A)> buf((depth + kVertStack + 1) * cw);
      for (int64_t t = b; t < e; ++t) {
        const Task tk = task(t);
        vert_run<Op, A>(tk.x, R, rs, tk.w, buf.data, buf.data + cw);
        finish(tk, buf.data);
      }
    });
    return;
  }
  // Too few tasks for the threads (a tall, narrow input): the pieces of the
  // rows' pairwise tree are tasks too; their results combine up the tree.
  std::vector<std::pair<int64_t, int64_t>> pcs;
  tree_pieces<L>(R, 0, kBlock, pcs);
  const int64_t np = static_cast<int64_t>(pcs.size());
  std::unique_ptr<A[]> vals(new A[ntask * np * cw]);
  parallel_steps(ntask * np, 1, 1, [&](int64_t b, int64_t e) {
    SmallBuffer<A, 16384 / sizeof(A)> st(kVertStack * cw);
    for (int64_t t = b; t < e; ++t) {
      const Task tk = task(t / np);
      const auto& pc = pcs[t % np];
      vert_piece<Op, A>(tk.x + pc.first * rs, pc.second, rs, tk.w, vals.get() + t * cw, st.data);
    }
  });
  parallel_steps(ntask, 1, 1, [&](int64_t b, int64_t e) {
    SmallBuffer<A, 16384 / sizeof(A)> buf((depth + 1) * cw);
    for (int64_t t = b; t < e; ++t) {
      const Task tk = task(t);
      size_t k = 0;
      tree_combine_rows<Op, L>(R, kBlock, vals.get() + t * np * cw, cw, k, buf.data, buf.data + cw);
      finish(tk, buf.data);
    }
  });
}

// How a reduction reads its input.
struct ReducePlan {
  enum Kind { Rows, Vertical, Copy } kind = Rows;
  int64_t R = 1;       // reduced elements per output
  int64_t rs = 1;      // their stride (Rows: within the run; Vertical: between rows)
  int64_t off = 0;     // element offset of the first element read, from in.data()
  Walk kept;           // Rows: the outputs' walk (input strides)
  int64_t K = 0;       // Vertical: the contiguous kept axis
  Walk outer;          // Vertical: the other kept dims (input and output strides)
  int64_t ocs = 1;     // Vertical: output stride along K
  int64_t oofs = 0;    // Vertical: output offset of the first element read
  Shape copy_shape;    // Copy: the input viewed kept dims first, reduced dims last
  Strides copy_strides;
};

ReducePlan plan_reduce(const array& in, const std::vector<bool>& red) {
  ReducePlan pl;
  const int nd = in.ndim();
  // Dims of each kind in logical order, merged where contiguous: the run of
  // an output is its elements in logical order, whatever the layout.
  Walk kept, rd;
  for (int d = 0; d < nd; ++d) (red[d] ? rd : kept).push(in.shape()[d], in.strides()[d]);
  const int nk = static_cast<int>(kept.n.size());
  std::vector<int64_t> kos(nk);  // output strides (the output is dense)
  for (int i = nk - 1; i >= 0; --i) kos[i] = i == nk - 1 ? 1 : kos[i + 1] * kept.n[i + 1];
  if (rd.n.size() > 1) {  // several reduced axes that do not merge: copy them last
    pl.kind = ReducePlan::Copy;
    for (int pass = 0; pass < 2; ++pass) {
      for (int d = 0; d < nd; ++d) {
        if (red[d] == (pass == 1)) {
          pl.copy_shape.push_back(in.shape()[d]);
          pl.copy_strides.push_back(in.strides()[d]);
        }
      }
    }
    pl.R = rd.size();
    return pl;
  }
  pl.R = rd.n.empty() ? 1 : rd.n[0];
  pl.rs = rd.n.empty() ? 1 : rd.s[0];
  if (pl.R > 1 && pl.rs != 1) {
    int c = -1;
    for (int i = nk - 1; i >= 0; --i) {
      if (kept.s[i] == 1 || kept.s[i] == -1) {
        c = i;
        break;
      }
    }
    // a contiguous kept axis: vectorize over it (unless it is too short to
    // beat deinterleaving every other element)
    if (c >= 0 && (kept.n[c] >= 16 || pl.rs != 2)) {
      pl.kind = ReducePlan::Vertical;
      pl.K = kept.n[c];
      pl.ocs = kos[c];
      if (kept.s[c] == -1) {  // read the axis in memory order, write it backwards
        pl.off -= pl.K - 1;
        pl.oofs = (pl.K - 1) * pl.ocs;
        pl.ocs = -pl.ocs;
      }
      for (int i = 0; i < nk; ++i) {
        if (i == c) continue;
        pl.outer.n.push_back(kept.n[i]);
        pl.outer.s.push_back(kept.s[i]);
        pl.outer.os.push_back(kos[i]);
      }
      return pl;
    }
  }
  pl.kind = ReducePlan::Rows;
  if (pl.R == 1) pl.rs = 1;
  pl.kept = std::move(kept);
  return pl;
}

}  // namespace

template <class T>
using sum_out_t = typename SumOut<T>::type;

void reduce_eval(const Reduce& p, const std::vector<array>& inputs, std::vector<array>& outputs) {
  const auto kind = p.kind();
  const array& in = inputs[0];
  array& out = outputs[0];
  out.alloc();
  if (out.size() == 0) return;
  const int nd = in.ndim();
  std::vector<bool> red(nd, false);
  for (int a : p.axes()) red[a] = true;
  int64_t R = 1;
  for (int d = 0; d < nd; ++d) {
    if (red[d]) R *= in.shape()[d];
  }
  ReducePlan pl;
  std::shared_ptr<Buffer> tmp;
  const char* base = in.data<const char>();
  int64_t extent = 1;  // elements from base that may be read
  if (R > 0) {
    pl = plan_reduce(in, red);
    if (pl.kind == ReducePlan::Copy) {
      tmp = allocator::malloc(static_cast<size_t>(in.nbytes()));
      cpu::copy_into(in, pl.copy_shape, pl.copy_strides, in.data<char>(), in.dtype(), row_strides(pl.copy_shape),
                     static_cast<char*>(tmp->ptr()));
      base = static_cast<const char*>(tmp->ptr());
      extent = in.size();
      pl.kind = ReducePlan::Rows;
      pl.kept = Walk{{out.size()}, {pl.R}, {}};
    } else {
      for (int d = 0; d < nd; ++d) {
        if (in.strides()[d] > 0) extent += (in.shape()[d] - 1) * in.strides()[d];
      }
    }
  }

  dispatch_all(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* x = reinterpret_cast<const T*>(base);
    auto run = [&](auto op_tag, auto acc_tag, auto out_tag) {
      using Op = typename decltype(op_tag)::type;
      using A = typename decltype(acc_tag)::type;
      using O = typename decltype(out_tag)::type;
      if (static_cast<int>(sizeof(O)) != out.itemsize() || type_to_dtype<O>::value != out.dtype()) {
        cpu::unsupported(p.name(), out.dtype());
      }
      O* o = out.data<O>();
      if (R == 0) {
        for (int64_t i = 0; i < out.size(); ++i) o[i] = cpu::convert<O>(Op::init());
        return;
      }
      if (pl.kind == cpu::ReducePlan::Vertical) {
        cpu::reduce_vertical<Op, A>(x + pl.off, pl.R, pl.rs, pl.K, pl.outer, o + pl.oofs, pl.ocs);
      } else {
        cpu::reduce_rows_path<Op, A>(x + pl.off, x + extent, pl.R, pl.rs, pl.kept, out.size(), o);
      }
    };
    using S = cpu::sum_out_t<T>;
    using SA = compute_t<S>;
    switch (kind) {
      case Reduce::And:
        if constexpr (std::is_same_v<T, bool>) return run(Tag<cpu::AndOp>{}, Tag<bool>{}, Tag<bool>{});
        break;
      case Reduce::Or:
        if constexpr (std::is_same_v<T, bool>) return run(Tag<cpu::OrOp>{}, Tag<bool>{}, Tag<bool>{});
        break;
      case Reduce::Sum:
        return run(Tag<cpu::SumOp<SA>>{}, Tag<SA>{}, Tag<S>{});
      case Reduce::Prod:
        return run(Tag<cpu::ProdOp<SA>>{}, Tag<SA>{}, Tag<S>{});
      case Reduce::Max:
        if constexpr (std::is_same_v<T, bool>) return run(Tag<cpu::OrOp>{}, Tag<bool>{}, Tag<bool>{});
        else return run(Tag<cpu::MaxOp<C>>{}, Tag<C>{}, Tag<T>{});
      case Reduce::Min:
        if constexpr (std::is_same_v<T, bool>) return run(Tag<cpu::AndOp>{}, Tag<bool>{}, Tag<bool>{});
        else return run(Tag<cpu::MinOp<C>>{}, Tag<C>{}, Tag<T>{});
    }
    cpu::unsupported(p.name(), in.dtype());
  });
}

// argmax / argmin of a dense row of real values (len >= 1): the extremum in
// 16 lanes first (max and min are exact in any order, so the loop
// vectorizes), then the first index that holds it; a NaN anywhere makes the
// first NaN the answer (as NumPy), found by a second scan. The same index as
// the compare-and-branch loop below, several times faster on a vocabulary
// of logits.
template <bool IS_MAX, class T, class C>
uint32_t arg_extremum_dense(const T* x, int64_t len) {
  using V = typename Vec<C>::V;
  constexpr int W = Vec<C>::W, L = 16;  // L values a step: one or more vectors
  constexpr int NV = L / W > 0 ? L / W : 1, S = NV * W;
  C buf[S];
  auto step = [&](int64_t j, V* out) {  // values j .. j+S as C, in NV vectors
    if constexpr (std::is_same_v<T, C>) {
      for (int q = 0; q < NV; ++q) out[q] = vload<V>(x + j + q * W);
    } else {
      for (int l = 0; l < S; ++l) buf[l] = static_cast<C>(x[j + l]);
      for (int q = 0; q < NV; ++q) out[q] = vload<V>(buf + q * W);
    }
  };
  using M = decltype(V{} != V{});  // a lane mask: 0 false, -1 true
  V m[NV];
  M nanv[NV];
  for (int q = 0; q < NV; ++q) {
    m[q] = splat<V>(static_cast<C>(x[0]));
    nanv[q] = M{};
  }
  int64_t j = 0;
  for (; j + S <= len; j += S) {
    V v[NV];
    step(j, v);
    for (int q = 0; q < NV; ++q) {
      if constexpr (std::is_floating_point_v<C>) nanv[q] = nanv[q] | (v[q] != v[q]);
      m[q] = IS_MAX ? (m[q] < v[q] ? v[q] : m[q]) : (v[q] < m[q] ? v[q] : m[q]);
    }
  }
  bool nan = false;
  C best = m[0][0];
  for (int q = 0; q < NV; ++q)
    for (int l = 0; l < W; ++l) {
      nan = nan || nanv[q][l];
      best = IS_MAX ? (best < m[q][l] ? m[q][l] : best) : (m[q][l] < best ? m[q][l] : best);
    }
  for (int64_t t = j; t < len; ++t) {
    const C v = static_cast<C>(x[t]);
    if constexpr (std::is_floating_point_v<C>) nan = nan || v != v;
    best = IS_MAX ? (best < v ? v : best) : (v < best ? v : best);
  }
  if constexpr (std::is_floating_point_v<C>) {
    if (nan) {
      for (j = 0; j < len; ++j)
        if (static_cast<C>(x[j]) != static_cast<C>(x[j])) return static_cast<uint32_t>(j);
    }
  }
  // the first index that holds it: S values compared a step, then the step
  const V bv = splat<V>(best);
  for (j = 0; j + S <= len; j += S) {
    V v[NV];
    step(j, v);
    bool hit = false;
    for (int q = 0; q < NV; ++q) {
      const auto e = v[q] == bv;
      for (int l = 0; l < W; ++l) hit = hit || e[l];
    }
    if (hit) break;
  }
  for (; j < len; ++j)
    if (static_cast<C>(x[j]) == best) return static_cast<uint32_t>(j);
  return 0;
}

void arg_reduce_eval(const ArgReduce& p, const std::vector<array>& inputs, std::vector<array>& outputs) {
  const auto kind = p.kind();
  const int axis = p.axis();
  const array& in = inputs[0];
  array& out = outputs[0];  // uint32, shape of `in` with axis size 1
  out.alloc();
  if (out.size() == 0) return;
  int64_t len = in.shape()[axis];
  // iterate outputs with the input's strides; walk the axis for each
  Strides st = in.strides();
  int64_t ax_stride = st[axis];
  st[axis] = 0;
  bool is_max = kind == ArgReduce::ArgMax;
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    {
      cpu::for_each_row<2>(
          out.shape(), {out.strides().data(), st.data()}, {out.data<char>(), in.data<char>()},
          {4, static_cast<int>(sizeof(T))},
          [&](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
            uint32_t* o = reinterpret_cast<uint32_t*>(p[0]);
            const T* x = reinterpret_cast<const T*>(p[1]);
            if constexpr (std::is_arithmetic_v<C> && !std::is_same_v<C, bool>) {
              if (ax_stride == 1 && len >= 64) {
                for (int64_t i = 0; i < n; ++i)
                  o[i * s[0]] = is_max ? arg_extremum_dense<true, T, C>(x + i * s[1], len)
                                       : arg_extremum_dense<false, T, C>(x + i * s[1], len);
                return;
              }
            }
            for (int64_t i = 0; i < n; ++i) {
              const T* col = x + i * s[1];
              C best = static_cast<C>(col[0]);
              uint32_t bi = 0;
              for (int64_t j = 1; j < len; ++j) {
                C v = static_cast<C>(col[j * ax_stride]);
                bool better = is_max ? cpu::lt(best, v) : cpu::lt(v, best);
                // the first NaN wins (complex: either part NaN), as NumPy
                if constexpr (std::is_floating_point_v<C>) better = better || (v != v && best == best);
                else if constexpr (is_complex_v<C>) better = !cpu::c_isnan(best) && (better || cpu::c_isnan(v));
                if (better) {
                  best = v;
                  bi = static_cast<uint32_t>(j);
                }
              }
              o[i * s[0]] = bi;
            }
          },
          std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(len, 1)));
    }
  });
}

namespace {

// exp(x) for x <= 0 or NaN (x - the row maximum), inlined into the loops so
// that they vectorize: float32 is simd::exp without its clamp from above (the
// same bits for every such x).
template <class C>
EMBER_RI C exp_v(C x) {
  if constexpr (std::is_same_v<C, float>) {
    using namespace simd::detail;
    const float xc = sel(mask(x < -104.0f), -104.0f, x);
    int32_t e;
    const float q = expm1_kernel(xc, e);
    return scale2(1.0f + q, e);
  } else {
    return std::exp(x);
  }
}

// The row maximum of softmax: a NaN in the row makes every output NaN (its
// exp is NaN, so is the sum) whatever the maximum, so plain max instructions
// do: a > b ? a : b.
template <class A>
struct RowMaxOp {
  static A init() { return -std::numeric_limits<A>::infinity(); }
  template <class V>
  static EMBER_RI V apply(V a, V b) {
    return a > b ? a : b;
  }
};

// dst[k] = src[k] - m (dst may be src)
template <class C, int N>
EMBER_RI void sub_row(const C* src, C* dst, int64_t n, C m) {
  const VecN<C, N> mv = splat<VecN<C, N>>(m);
  int64_t k = 0;
  for (; k + N <= n; k += N) vstore(dst + k, vload<VecN<C, N>>(src + k) - mv);
  for (; k < n; ++k) dst[k] = src[k] - m;
}
// o[k] = t[k] * sc, stored as T
template <class T, class C, int N>
EMBER_RI void scale_row(const C* t, T* o, int64_t n, C sc) {
  if constexpr (std::is_same_v<T, float16_t>) {  // scaled in pieces on the stack, rounded with F16C
    alignas(64) float buf[kHalfPiece];
    for (int64_t k0 = 0; k0 < n; k0 += kHalfPiece) {
      const int64_t m = std::min(kHalfPiece, n - k0);
      for (int64_t j = 0; j < m; ++j) buf[j] = t[k0 + j] * sc;
      narrow_f16(buf, o + k0, m);
    }
    return;
  }
  int64_t k = 0;
  if constexpr (std::is_same_v<T, C>) {
    const VecN<C, N> sv = splat<VecN<C, N>>(sc);
    for (; k + N <= n; k += N) vstore(o + k, vload<VecN<C, N>>(t + k) * sv);
  }
  for (; k < n; ++k) o[k] = static_cast<T>(t[k] * sc);
}

// W x W transpose in registers (v[r][c] -> v[c][r]): log2(W) stages, each
// swapping blocks of B lanes between rows r and r + B.
template <int W, int B, bool Hi>
constexpr int tr_lane(int q) {
  const int base = q / (2 * B) * 2 * B + q % B + (Hi ? B : 0);
  return (q / B) % 2 ? W + base : base;
}
template <class T, int W, int B, bool Hi, size_t... Q>
EMBER_RI VecN<T, W> tr_pick(const VecN<T, W>& a, const VecN<T, W>& b, std::index_sequence<Q...>) {
  return __builtin_shufflevector(a, b, tr_lane<W, B, Hi>(static_cast<int>(Q))...);
}
template <class T, int W, int B = W / 2>
EMBER_RI void transpose(VecN<T, W>* v) {
  for (int r = 0; r < W; ++r) {
    if (r & B) continue;
    const VecN<T, W> a = v[r], b = v[r + B];
    v[r] = tr_pick<T, W, B, false>(a, b, std::make_index_sequence<W>{});
    v[r + B] = tr_pick<T, W, B, true>(a, b, std::make_index_sequence<W>{});
  }
  if constexpr (B > 1) transpose<T, W, B / 2>(v);
}

// W rows at x, x + 1, ..., x + W - 1 (n elements each, s apart: the rows of
// a transposed matrix) into t (row-major, W x n) through register transposes.
template <class C>
void gather_tiles(const C* x, int64_t s, int64_t n, C* t) {
  constexpr int W = kW<C>;
  int64_t k0 = 0;
  for (; k0 + W <= n; k0 += W) {
    VecN<C, W> v[W];
    for (int q = 0; q < W; ++q) v[q] = vload<VecN<C, W>>(x + (k0 + q) * s);
    transpose<C, W>(v);
    for (int r = 0; r < W; ++r) vstore(t + r * n + k0, v[r]);
  }
  for (; k0 < n; ++k0) {
    for (int r = 0; r < W; ++r) t[r * n + k0] = x[r + k0 * s];
  }
}

template <class C>
void stream_copy(const C* src, C* dst, int64_t cnt) {
  constexpr int W = kW<C>;
  int64_t k = 0;
  for (; k < cnt && reinterpret_cast<uintptr_t>(dst + k) % sizeof(VecN<C, W>) != 0; ++k) dst[k] = src[k];
  for (; k + W <= cnt; k += W) vstream(dst + k, vload<VecN<C, W>>(src + k));
  for (; k < cnt; ++k) dst[k] = src[k];
}
// o[k] = t[k] * sc, the whole vectors of o streamed
template <class C>
void scale_stream_row(const C* t, C* o, int64_t n, C sc) {
  constexpr int W = kW<C>;
  const VecN<C, W> sv = splat<VecN<C, W>>(sc);
  int64_t k = 0;
  for (; k < n && reinterpret_cast<uintptr_t>(o + k) % sizeof(VecN<C, W>) != 0; ++k) o[k] = t[k] * sc;
  for (; k + W <= n; k += W) vstream(o + k, vload<VecN<C, W>>(t + k) * sv);
  for (; k < n; ++k) o[k] = t[k] * sc;
}

// f(k0, k1) over [0, cnt) in 1 KB pieces, each piece's elements of pf (when
// not null) prefetched before it. Softmax's exp pass over rows of 64 or more,
// which computes with no loads from memory, so fetches the next chunk's rows
// ahead of the maxima (which would otherwise wait for them): on Zen 4, rows of
// 64 and 1000 went 20-21 -> 23-24 and 25-26 -> 27-29 GB/s (2 threads),
// 14.5-15.1 -> 17.5-17.9 (1 thread, rows of 1000). Shorter rows, whose exp
// pass runs over the whole chunk, gained nothing from it.
template <class C, class F>
EMBER_RI void with_prefetch(const C* pf, int64_t cnt, F&& f) {
  constexpr int64_t kPiece = 1024 / sizeof(C), kLine = 64 / sizeof(C);
  for (int64_t k0 = 0; k0 < cnt; k0 += kPiece) {
    const int64_t k1 = std::min(cnt, k0 + kPiece);
    if (pf) {
      for (int64_t k = k0; k < k1; k += kLine) __builtin_prefetch(pf + k);
    }
    f(k0, k1);
  }
}

// Softmax of `rows` rows of n elements (row r at x + the walk's offset, its
// elements s apart), into the dense out. Rows go in chunks of about kChunk
// elements: maxima, x - max, one exp pass over the chunk, sums, scaling; the
// maxima and sums of W rows at a time through the row network. Rows that are
// not contiguous are gathered into the chunk first (rows of a transposed
// matrix W at a time through register transposes). G: the lanes of a row's
// vectors (with_lanes). stream: write the output around the caches.
template <class T, class C, int G>
void softmax_rows(const T* x, const T* limit, int64_t n, int64_t s, const Walk& rw, int64_t rows, T* out,
                  bool stream) {
  constexpr int W = kW<C>;
  constexpr int64_t kChunk = 2048;
  constexpr int64_t kPad = 2 * kLanes<C>;
  constexpr bool same = std::is_same_v<T, C>;
  const bool in_place = same && s == 1 && rw.n.size() <= 1;  // rows read where they are
  const bool tiles = same && s != 1 && rw.n.size() == 1 && rw.s[0] == 1 && rows >= W && W * n <= (int64_t(1) << 18);
  // rows per chunk (L1-sized: a multiple of W rows where W rows fit)
  int64_t g = std::max<int64_t>(1, kChunk / n);
  if (g > W) g = g / W * W;
  const int64_t sub = g;  // rows computed at a time
  if (tiles) g = (g + W - 1) / W * W;  // gathered W rows at a time
  const int64_t cap = g * n + kPad;
  const bool fuse = n >= 64;  // long rows: x - max and exp in one pass per row
  const int64_t ks = rw.n.empty() ? 0 : rw.s[0];
  stream = stream && same;
  parallel_steps(rows, kParallelGrain / n, g * std::max<int64_t>(1, kStep / (g * n)), [&](int64_t b, int64_t e) {
    std::unique_ptr<C[]> buf(new C[cap + 2 * g]);
    C* t = buf.get();
    C* mx = t + cap;
    C* sc = mx + g;
    std::fill(t + g * n, t + cap, C(0));
    Cursor cur(rw, b);
    for (int64_t r0 = b; r0 < e; r0 += g) {
      const int64_t gr = std::min(g, e - r0);
      const C* src = t;
      int64_t sks = n;
      const C* slim = t + cap;
      int64_t i = 0;
      if constexpr (same) {
        if (in_place) {
          src = x + r0 * ks;
          sks = ks;
          slim = limit;
          i = gr;
        } else if (tiles) {
          for (; i + W <= gr; i += W) gather_tiles<C>(x + cur.in() + i, s, n, t + i * n);
        }
      }
      for (; i < gr; ++i) {  // gather the rest row by row
        const T* xr = x + cur.in() + (tiles ? i : 0);
        C* ti = t + i * n;
        if (!tiles) cur.next();
        if (s == 1) {
          if constexpr (std::is_same_v<T, float16_t>) widen_f16(xr, ti, n);
          else
            for (int64_t k = 0; k < n; ++k) ti[k] = static_cast<C>(xr[k]);
        } else if (same && s == 2) {
          int64_t k = 0;
          if constexpr (same) {
            for (; k + W <= n && xr + 2 * (k + W) <= limit; k += W) {
              vstore(ti + k, even_lanes<C, W>(vload<VecN<C, W>>(xr + 2 * k), vload<VecN<C, W>>(xr + 2 * k + W),
                                              std::make_index_sequence<W>{}));
            }
          }
          for (; k < n; ++k) ti[k] = static_cast<C>(xr[2 * k]);
        } else {
          for (int64_t k = 0; k < n; ++k) ti[k] = static_cast<C>(xr[k * s]);
        }
      }
      if (tiles) {
        for (int64_t k = 0; k < gr; ++k) cur.next();
      }
      for (int64_t j0 = 0; j0 < gr; j0 += sub) {  // L1-sized pieces of the chunk
        const int64_t j1 = std::min(gr, j0 + sub);
        for (i = j0; i + W <= j1; i += W) vstore(mx + i, group_reduce<RowMaxOp<C>, C, W, G>(src + i * sks, sks, n, slim));
        for (; i < j1; ++i) mx[i] = vpiece<RowMaxOp<C>, C, G>(Contig<C>{src + i * sks, slim}, n);
        // exp(x - max)
        for (i = j0; i < j1; ++i) {
          const C* si = src + i * sks;
          C* ti = t + i * n;
          if (fuse) {
            const C m = mx[i];
            const C* pf = in_place && r0 + i + g < e ? si + g * sks : nullptr;  // this row of the next chunk
            with_prefetch(pf, n, [&](int64_t k0, int64_t k1) {
              for (int64_t k = k0; k < k1; ++k) ti[k] = exp_v(si[k] - m);
            });
          } else {
            sub_row<C, G>(si, ti, n, mx[i]);
          }
        }
        if (!fuse) {
          C* tj = t + j0 * n;
          const int64_t cnt = (j1 - j0) * n;
          int64_t k = 0;
          for (; k < cnt; ++k) tj[k] = exp_v(tj[k]);
        }
        // the sums (the run order), then the scaling
        const VecN<C, W> one = splat<VecN<C, W>>(C(1));
        for (i = j0; i + W <= j1; i += W) {
          vstore(sc + i, one / group_reduce<SumOp<C>, C, W, G>(t + i * n, n, n, t + cap));
        }
        for (; i < j1; ++i) sc[i] = C(1) / vpiece<SumOp<C>, C, G>(Contig<C>{t + i * n, t + cap}, n);
        if constexpr (same) {
          if (stream && n >= 4 * W) {
            for (i = j0; i < j1; ++i) scale_stream_row<C>(t + i * n, out + (r0 + i) * n, n, sc[i]);
            continue;
          }
          if (stream) {
            for (i = j0; i < j1; ++i) scale_row<C, C, G>(t + i * n, t + i * n, n, sc[i]);
            stream_copy<C>(t + j0 * n, out + (r0 + j0) * n, (j1 - j0) * n);
            continue;
          }
        }
        for (i = j0; i < j1; ++i) scale_row<T, C, G>(t + i * n, out + (r0 + i) * n, n, sc[i]);
      }
    }
    if (stream) stream_fence();
  });
}

}  // namespace

void softmax_eval(const Softmax&, const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  cpu::alloc_or_donate(out, inputs);
  if (out.size() == 0) return;
  const int nd = in.ndim();
  const int64_t n = nd ? in.shape().back() : 1;
  const int64_t s = nd && n > 1 ? in.strides().back() : 1;
  cpu::Walk rw;  // the rows: the other dims, merged where contiguous
  for (int d = 0; d + 1 < nd; ++d) rw.push(in.shape()[d], in.strides()[d]);
  const int64_t rows = in.size() / n;
  int64_t extent = 1;
  for (int d = 0; d < nd; ++d) {
    if (in.strides()[d] > 0) extent += (in.shape()[d] - 1) * in.strides()[d];
  }
  // an output far larger than the caches goes around them
  const bool stream = out.nbytes() >= cpu::kStreamBytes;
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!is_float_v<T>) {
      cpu::unsupported("Softmax", in.dtype());
    } else {
      using C = compute_t<T>;
      const T* x = in.data<const T>();
      cpu::with_lanes<C>(n, [&](auto lanes) {
        constexpr int N = decltype(lanes)::value;
        cpu::softmax_rows<T, C, N>(x, x + extent, n, s, rw, rows, out.data<T>(), stream);
      });
    }
  });
}

}  // namespace ember::cpu::EMBER_ISA_NS

#if EMBER_ISA_BASE_UNIT
namespace ember {

const char* Reduce::name() const {
  static const char* names[] = {"Sum", "Prod", "Max", "Min", "All", "Any"};
  return names[kind_];
}

bool Reduce::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Reduce*>(&o);
  return p && p->kind_ == kind_ && p->axes_ == axes_;
}

bool ArgReduce::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const ArgReduce*>(&o);
  return p && p->kind_ == kind_ && p->axis_ == axis_;
}

bool Softmax::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Softmax*>(&o);
  return p && p->precise_ == precise_;
}

void Reduce::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(reduce_eval)(*this, inputs, outputs);
}

void ArgReduce::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(arg_reduce_eval)(*this, inputs, outputs);
}

void Softmax::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(softmax_eval)(*this, inputs, outputs);
}

}  // namespace ember
#endif
