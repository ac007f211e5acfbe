// ConvGeneral and ConvWeightGrad on the CPU: register-blocked implicit GEMM,
// compiled once per ISA level (backend/cpu/isa.h), so the tiles below are
// sized for the level's vectors and registers.
//
// Every configuration goes through one description of the input: for each
// output row (n, output position) and kernel position, a pointer to the
// row's input channels (a zero run where the dilated, padded input has no
// element). Strides, padding (negative included), kernel and input dilation
// and flip only change those pointers (kernel_offsets). Nothing is copied
// into a column matrix.
//
//   forward   out[r, g*Og + o] = sum_{kpos, c} src[r][kpos][g*Cg + c] * w[g*Og + o, kpos, c]
//             A tile of MR rows x NR vectors of output channels stays in
//             registers; each (kpos, c) step loads NR weight vectors once and
//             broadcasts one input value per row (FMA:load = MR*NR : MR+NR).
//             The weights are packed once per call (or taken from a cache
//             while the same weight array is reused) as
//             [group][column block][kpos][c][NR*W], and the (kpos, c) range
//             is cut into chunks whose weights fit in L1; the output block
//             of a task is accumulated chunk by chunk.
//   depthwise (groups == channels, one output per group) vectorizes over the
//             channels instead: acc[r][c-vector] += x[src(r, kpos)][c] * w[c, kpos].
//   weight    dW[g*Og + o, kpos, c] = sum_r ct[r, g*Og + o] * src[r][kpos][g*Cg + c]:
//   gradient  tiles of MR input channels x NR vectors of output channels,
//             accumulated over a fixed partition of the rows (partial sums
//             added in partition order, so the result does not depend on the
//             thread count), then transposed to (O, *K, Cg).
//
// float16/bfloat16 are converted to float32 first and the result converted
// back; float64 runs the same kernels on double vectors. On AVX-512 CPUs
// with the BF16 extension, a bfloat16 forward conv (and so an input
// gradient) whose groups have an even channel count reads its input as it
// is and multiplies pairs of channels at once (Bf16Dot below).
// On CPUs with AMX-BF16 a bfloat16 forward conv whose groups have 16
// channels or more runs on the tile unit instead (forward_amx below), and
// writes its bfloat16 output itself.

#include "ember/backend/cpu/isa_unit.h"

#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/backend/cpu/vec.h"

namespace ember::cpu::EMBER_ISA_NS {

namespace {

// Tile shapes per level: NR vectors of output channels x MR rows, as many
// accumulators as the registers hold with room for the operands (32 vector
// registers with AVX-512, 16 below it: 6 x 2, and for the forward, which
// fwd_nr lets pick them, 4 x 3 and 3 x 4).
template <class A>
constexpr int max_nr() {
  return EMBER_ISA_HAS_AVX512 ? 4 : 2;
}
template <class A>
constexpr int rows_for(int nr) {
  if (EMBER_ISA_HAS_AVX512) return nr >= 4 ? 6 : 8;
  if (EMBER_ISA_HAS_AVX2) return nr >= 4 ? 3 : nr == 3 ? 4 : nr == 2 ? 6 : 8;
  return nr >= 2 ? 4 : 8;
}
// Vectors of output channels per forward tile, for `vecs` vectors in all and
// output lines of OL pixels. With AVX2 the 6 x 2 tile leaves a line of 32 a
// 2 x 2 tile at its end, whose 4 accumulators wait on the FMA latency; 3 x 4
// tiles end it with a 2 x 4; 3 vectors took two blocks of 2 (1 thread,
// Zen 4: conv3d with 32 outputs 105 -> 110 GFLOP/s, conv2d with 24 outputs
// on lines of 32 73 -> 106, conv2d with 64 outputs unchanged). The choice
// models one (kpos, c) step of an r x nr tile as the most of r * nr FMAs on
// two pipes, 4 cycles of FMA latency, and r + nr loads on two ports, and
// takes the cheapest line of all the blocks of columns (ties to the narrower
// tile, whose weights stay nearer).
template <class A>
int fwd_nr(int64_t vecs, int64_t OL) {
  const int most = static_cast<int>(std::min<int64_t>(max_nr<A>(), std::max<int64_t>(vecs, 1)));
  if (EMBER_ISA_HAS_AVX512 || !EMBER_ISA_HAS_AVX2 || vecs <= 2) return most;
  auto step = [](int64_t r, int64_t nr) { return std::max({r * nr, int64_t(8), r + nr}); };  // half cycles
  int best = most;
  int64_t best_cost = std::numeric_limits<int64_t>::max();
  for (int nr = 2; nr <= 4 && nr <= vecs; ++nr) {
    const int64_t mr = rows_for<A>(nr);
    const int64_t line = OL / mr * step(mr, nr) + (OL % mr ? step(OL % mr, nr) : 0);
    const int64_t cost = (vecs + nr - 1) / nr * line;
    if (cost < best_cost) {
      best_cost = cost;
      best = nr;
    }
  }
  return best;
}
// Whether fwd_tile reuses each pixel across three taps for NR vectors of
// output channels: where the accumulators, 3 * NR weight vectors and the
// broadcast fit in the registers, and the one-broadcast-per-row form would
// load more than once per two FMAs (NR <= 2).
template <class A>
constexpr bool tap_reuse(int nr) {
  if (EMBER_ISA_HAS_AVX512) return nr <= 2;
  return EMBER_ISA_HAS_AVX2 && nr == 1;
}
// Weight bytes of one chunk of the forward reduction: they stream from L2
// (faster than cutting the reduction shorter to stay in L1, which costs
// reloading the accumulators from the output); longer reductions are cut.
constexpr int64_t kChunkBytes = 256 << 10;
// output rows of a forward task (its pointer table and output block)
constexpr int64_t kBlockRows = 256;

// ---------------------------------------------------------------- geometry

struct Geometry {
  int D = 0;
  int64_t N = 0, C = 0, O = 0, G = 1, Cg = 0, Og = 0;
  int64_t K[3] = {1, 1, 1}, OS[3] = {1, 1, 1};
  int64_t in_d[3] = {1, 1, 1};
  int64_t Kprod = 1, KC = 0, OSprod = 1, rows = 0;
  int64_t in_stride[3] = {0, 0, 0};  // element strides of the dense input's spatial dims
  int64_t in_batch = 0;
};

// x (N, *S, C), weight shape (O, *K, Cg), output (N, *OS, O).
Geometry make_geometry(const Shape& xs, const Shape& ws, const Shape& os, const ConvParams& p) {
  Geometry g;
  g.D = static_cast<int>(xs.size()) - 2;
  g.N = xs[0];
  g.C = xs.back();
  g.O = ws[0];
  g.G = p.groups;
  g.Cg = g.C / g.G;
  g.Og = g.O / g.G;
  int64_t S[3] = {1, 1, 1};
  for (int d = 0; d < g.D; ++d) {
    S[d] = xs[d + 1];
    g.K[d] = ws[d + 1];
    g.OS[d] = os[d + 1];
    g.in_d[d] = S[d] > 0 ? (S[d] - 1) * p.input_dilation[d] + 1 : 0;
    g.Kprod *= g.K[d];
    g.OSprod *= g.OS[d];
  }
  g.KC = g.Kprod * g.Cg;
  g.rows = g.N * g.OSprod;
  int64_t st = g.C;
  for (int d = g.D - 1; d >= 0; --d) {
    g.in_stride[d] = st;
    st *= S[d];
  }
  g.in_batch = st;
  return g;
}

// The edge tiles of a line (see Tile): its first, its last
constexpr int kLeadPad = 1, kTrailPad = 2;

// Per spatial dim d, the input offset (elements from the batch item's
// start) that output position pos reads at kernel index k, or -1 where the
// dilated, padded input has no element: table[d][pos * K[d] + k]. Built once
// per call; a row's pointers are then a few table lookups and adds.
struct OffsetTables {
  std::vector<int64_t> t[3];
  // along the last dim: shift[pos] when position pos reads, at every kernel
  // index, the input `step` elements after what pos - 1 read (no padding)
  std::vector<char> shift;
  // run[pos]: how many positions from pos on are shifted (0: pos is not)
  std::vector<int64_t> run;
  int64_t step = 0;
  OffsetTables(const Geometry& g, const ConvParams& p) {
    for (int d = 0; d < g.D; ++d) {
      const int64_t K = g.K[d], id = p.input_dilation[d];
      t[d].resize(static_cast<size_t>(g.OS[d] * K));
      for (int64_t pos = 0; pos < g.OS[d]; ++pos) {
        for (int64_t k = 0; k < K; ++k) {
          const int64_t kk = p.flip ? K - 1 - k : k;
          const int64_t q = pos * p.stride[d] + kk * p.kernel_dilation[d] - p.pad_lo[d];
          t[d][pos * K + k] = (q < 0 || q >= g.in_d[d] || q % id != 0) ? -1 : (q / id) * g.in_stride[d];
        }
      }
    }
    const int L = g.D - 1;
    const int64_t K = g.K[L];
    step = p.input_dilation[L] == 1 ? p.stride[L] * g.in_stride[L] : 0;
    shift.assign(static_cast<size_t>(g.OS[L]), 0);
    for (int64_t pos = 1; pos < g.OS[L] && step; ++pos) {
      bool ok = true;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t a = t[L][(pos - 1) * K + k], b = t[L][pos * K + k];
        ok &= a >= 0 && b >= 0 && b - a == step;
      }
      shift[pos] = ok;
    }
    run.assign(static_cast<size_t>(g.OS[L]) + 1, 0);
    for (int64_t pos = g.OS[L] - 1; pos >= 0; --pos) run[pos] = shift[pos] ? run[pos + 1] + 1 : 0;
  }
  // Whether a line's first tile of mr rows is an edge tile (kLeadPad): a
  // three-tap kernel along the line, taps a pixel apart, whose first
  // position reads the padding at its first tap only, every row after it
  // one step (a pixel) on; and its last (kTrailPad): the last position
  // reads the padding at its last tap only, one step on from the row
  // before, and the rows before it back to the tile's first row one step
  // apart too (the tile's first row: see RowPointers::fill).
  bool lead_edge(const Geometry& g, int64_t mr) const {
    const int L = g.D - 1;
    const int64_t OL = g.OS[L], in = g.in_stride[L];
    const int64_t* tl = t[L].data();
    if (g.K[L] != 3 || OL <= mr || step != in || tl[0] >= 0 || tl[1] < 0 || tl[2] != tl[1] + in) return false;
    for (int64_t k = 0; k < 3; ++k)
      if (tl[3 + k] != (k == 0 ? tl[1] - in : tl[k]) + step) return false;
    return mr < 3 || run[2] >= mr - 2;
  }
  bool trail_edge(const Geometry& g, int64_t mr) const {
    const int L = g.D - 1;
    const int64_t OL = g.OS[L], last = OL - 1;
    const int64_t* tl = t[L].data();
    if (g.K[L] != 3 || OL <= mr || step != g.in_stride[L] || tl[last * 3 + 2] >= 0 || tl[last * 3] < 0 ||
        tl[last * 3 + 1] != tl[last * 3] + step)
      return false;
    for (int64_t k = 0; k < 2; ++k)
      if (tl[(last - 1) * 3 + k] < 0 || tl[last * 3 + k] != tl[(last - 1) * 3 + k] + step) return false;
    return mr < 3 || run[OL - mr + 1] >= mr - 2;
  }
  // the edge tiles of a line in tiles of mr rows (kLeadPad | kTrailPad)
  int edges(const Geometry& g, int64_t mr) const {
    return (lead_edge(g, mr) ? kLeadPad : 0) | (trail_edge(g, mr) ? kTrailPad : 0);
  }
  // lead[(k0, k1)]: the input offset of the leading dims' kernel positions
  // (all but the last dim) for output positions pos[0..D-2], or -1 where
  // one of them reads the padding
  void lead_offsets(const Geometry& g, const int64_t* pos, int64_t* lead) const {
    const int L = g.D - 1;
    if (L == 0) {
      lead[0] = 0;
      return;
    }
    const int64_t* t0 = t[0].data() + pos[0] * g.K[0];
    if (L == 1) {
      for (int64_t k0 = 0; k0 < g.K[0]; ++k0) lead[k0] = t0[k0];
      return;
    }
    const int64_t* t1 = t[1].data() + pos[1] * g.K[1];
    for (int64_t k0 = 0; k0 < g.K[0]; ++k0)
      for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
        lead[k0 * g.K[1] + k1] = (t0[k0] < 0 || t1[k1] < 0) ? -1 : t0[k0] + t1[k1];
  }
  // Output line `line` (all but the last spatial dim fixed, in row-major
  // order): its batch item, returned, and its leading offsets into lead
  int64_t line_start(const Geometry& g, int64_t line, int64_t* lead) const {
    int64_t pos[3] = {0, 0, 0};
    for (int d = g.D - 2; d >= 0; --d) {
      pos[d] = line % g.OS[d];
      line /= g.OS[d];
    }
    lead_offsets(g, pos, lead);
    return line;
  }
};

// A run of output rows that one register tile computes: its rows' pointers
// start at table row `at`; it writes output rows [row, row + rows). In an
// affine tile (full, every row after the first one step further along the
// line than the one before, at every kernel position: the interior of a
// stride-1 line), row r's pointer at a kernel position is row 0's plus
// r * step, or zeros where row 0's is: the kernel then reads row 0's only.
// An edge tile (RowPointers::fill's `edges`) is affine but for the padding
// at a line's ends: its first row's first tap along the line (kLeadPad) or
// its last row's last tap (kTrailPad) reads the padding. Row 0's pointer
// there is where the tap would read without the padding, never read: the
// kernel's three-tap form skips that pixel, as it skips the padding's zero
// pixel at a line's ends, and its runs of taps leave that row out of the
// padded tap's channels.
struct Tile {
  int64_t at, row, rows;
  bool affine = false;
  int edge = 0;  // kLeadPad | kTrailPad
};

// The per-row input pointers of output rows [r0, r0 + n): ptr[i * Kprod +
// kpos] for table row i, kernel positions in (k0, k1, k2) order, each
// pointing at channel 0 of the input pixel the row reads there, or at
// `zeros` where the input has no element. With mr > 1 the rows are cut into
// tiles of mr rows that never cross an output line (so neighbouring kernel
// positions stay contiguous runs), a short tile padded with rows of zeros.
// The offsets of the leading spatial dims are combined once per output
// line; a row then costs one lookup, test and add per kernel position.
template <class A>
struct RowPointers {
  std::vector<const A*> ptr;
  std::vector<int64_t> lead;  // per leading kernel position: offset, or -1
  std::vector<Tile> tiles;
  const OffsetTables& tab;
  // room for max_rows rows cut into tiles of mr
  RowPointers(const Geometry& g, const OffsetTables& t, int64_t max_rows, int64_t mr)
      : ptr(static_cast<size_t>((max_rows + (max_rows / std::max<int64_t>(g.OS[g.D - 1], 1) + 2) * mr) * g.Kprod)),
        lead(static_cast<size_t>(g.Kprod / g.K[g.D - 1])), tab(t) {}

  // edges: the edge tiles (kLeadPad | kTrailPad, see Tile) to make, from
  // OffsetTables::edges
  void fill(const A* x, const A* zeros, int64_t r0, int64_t n, int64_t mr, const Geometry& g, int edges = 0) {
    tiles.clear();
    if (n <= 0) return;
    const int L = g.D - 1;  // the last spatial dim
    const int64_t KL = g.K[L], OL = g.OS[L];
    const bool lead_edge = edges & kLeadPad, trail_edge = edges & kTrailPad;
    int64_t pos[3] = {0, 0, 0};
    int64_t b = r0 / g.OSprod, rem = r0 % g.OSprod;  // the first row's position; then an odometer
    for (int d = L; d >= 0; --d) {
      pos[d] = rem % g.OS[d];
      rem /= g.OS[d];
    }
    line_offsets(pos, g);
    int64_t at = 0;  // next table row
    Tile cur{0, r0, 0};
    bool affine = true;  // the open tile's rows so far
    // A shifted row is `dist` steps on from the table row `anchor`. While
    // the open tile is affine its rows after the first are not written (the
    // kernel reads row 0 only); they are written out as soon as it stops
    // being affine.
    const A* const* anchor = nullptr;
    int64_t dist = 0;
    auto write_shifted = [&](const A** row, const A* const* from, int64_t steps) {
      const int64_t d = steps * tab.step;
      for (int64_t k = 0; k < g.Kprod; ++k) row[k] = from[k] == zeros ? zeros : from[k] + d;
    };
    auto write_deferred = [&] {
      const A** row0 = ptr.data() + cur.at * g.Kprod;
      for (int64_t i = 1; i < cur.rows; ++i) write_shifted(row0 + i * g.Kprod, row0, i);
    };
    auto close = [&] {
      if (affine && cur.rows < mr) write_deferred();
      if (mr > 1) {
        for (int64_t r = cur.rows; r < mr; ++r, ++at) std::fill_n(ptr.data() + at * g.Kprod, g.Kprod, zeros);
      }
      cur.affine = affine && cur.rows == mr && mr > 1;
      tiles.push_back(cur);
      cur = Tile{at, cur.row + cur.rows, 0};
      affine = true;
    };
    bool prev_in_line = false;
    auto next_line = [&] {
      prev_in_line = false;
      pos[L] = 0;
      int d = L - 1;
      for (; d >= 0; --d) {
        if (++pos[d] < g.OS[d]) break;
        pos[d] = 0;
      }
      if (d < 0) ++b;
      line_offsets(pos, g);
    };
    // an edge tile: row 0 only, as the kernel reads it (see Tile)
    auto edge_tile = [&](const A** row, int edge, int64_t& r) {
      if (edge == kLeadPad) {
        const A* base = x + b * g.in_batch;
        const int64_t* tl = tab.t[L].data();  // position 0's taps: the padding, then neighbours
        for (size_t h = 0; h < lead.size(); ++h) {
          const int64_t lo = lead[h];
          if (lo < 0) {
            for (int64_t k = 0; k < KL; ++k) *row++ = zeros;
            continue;
          }
          *row++ = base + lo + tl[1] - g.in_stride[L];
          for (int64_t k = 1; k < KL; ++k) *row++ = base + lo + tl[k];
        }
      } else {
        write_shifted(row, anchor, dist + 1);
      }
      anchor = ptr.data() + at * g.Kprod;
      dist = mr - 1;
      at += mr;
      cur.rows = mr;
      cur.edge = edge;
      r += mr - 1;
      pos[L] += mr;
      prev_in_line = true;
      close();
      if (pos[L] == OL) next_line();
    };
    for (int64_t r = 0; r < n; ++r) {
      const A** row = ptr.data() + at * g.Kprod;
      if (cur.rows == 0 && r + mr <= n) {
        if (lead_edge && pos[L] == 0) {
          edge_tile(row, kLeadPad, r);
          continue;
        }
        if (trail_edge && prev_in_line && pos[L] == OL - mr && tab.shift[pos[L]]) {
          edge_tile(row, kTrailPad, r);
          continue;
        }
      }
      if (mr > 1 && cur.rows == 0 && prev_in_line && tab.run[pos[L]] >= mr && r + mr <= n) {
        // a whole affine tile at once: its first row one step on, the
        // others never written
        write_shifted(row, anchor, dist + 1);
        anchor = row;
        dist = mr - 1;
        at += mr;
        cur.rows = mr;
        r += mr - 1;
        pos[L] += mr;
        close();
        if (pos[L] == OL) next_line();
        continue;
      }
      const bool shifted = prev_in_line && tab.shift[pos[L]];
      if (cur.rows > 0 && !shifted && affine) {
        write_deferred();
        affine = false;
      }
      if (shifted) {
        // the previous row's pointers moved by one step (those of leading
        // positions in the padding stay at zeros: the only zeros here, since
        // every last-dim tap of a shifted row reads the input); one flat,
        // vectorizable pass over the row (deferred in an affine tile)
        ++dist;
        if (!(affine && cur.rows > 0 && mr > 1)) {
          write_shifted(row, anchor, dist);
          anchor = row;
          dist = 0;
        }
      } else {
        anchor = row;
        dist = 0;
        const A* base = x + b * g.in_batch;
        const int64_t* tl = tab.t[L].data() + pos[L] * KL;
        for (size_t h = 0; h < lead.size(); ++h) {
          const int64_t lo = lead[h];
          for (int64_t k = 0; k < KL; ++k) *row++ = (lo < 0 || tl[k] < 0) ? zeros : base + lo + tl[k];
        }
      }
      prev_in_line = true;
      ++at;
      ++cur.rows;
      const bool line_end = ++pos[L] == OL;
      if (cur.rows == mr || (mr > 1 && line_end)) close();
      if (line_end) next_line();
    }
    if (cur.rows > 0) close();
  }

 private:
  void line_offsets(const int64_t* pos, const Geometry& g) { tab.lead_offsets(g, pos, lead.data()); }
};

// ---------------------------------------------------------------- forward

// The forward tiles' arithmetic, a policy D. FmaDot<A>: one input channel a
// step, one FMA per row and weight vector. Bf16Dot (AVX-512 CPUs with its
// BF16 extension): bfloat16 input and weights, two input channels a step,
// VDPBF16PS adding both products of a channel pair to each float32 lane:
// twice the multiply-adds of an FMA for the same instruction. Products of
// bfloat16 values are exact in float32, so this is float32 arithmetic in a
// pairwise order, except that VDPBF16PS reads denormal inputs as zero and
// flushes denormal sums to zero. The packed weights of channel c (a multiple
// of P) hold NR vectors of W output channels, each lane P consecutive input
// channels: vector j at (c * NR + j * P) * W elements.
template <class A>
struct FmaDot {
  using In = A;   // the input and the packed weights
  using Acc = A;  // the accumulators and the output
  using V = typename Vec<A>::V;
  static constexpr int W = Vec<A>::W, P = 1;
  static V bcast(const In* p) { return splat<V>(*p); }
  static V madd(V acc, V a, V b) { return vfma(a, b, acc); }
};

#if EMBER_ISA_HAS_AVX512
struct Bf16Dot {
  using In = bfloat16_t;
  using Acc = float;
  using V = typename Vec<float>::V;
  static constexpr int W = Vec<float>::W, P = 2;
  static V bcast(const In* p) { return splat_pair(p); }  // (x[c], x[c + 1])
  // (only a CPU that has the extension gets here: conv_eval asks)
  static V madd(V acc, V a, V b) { return vdpbf16(acc, a, b); }
};
#endif

// out[r, 0:cols] (+)= sum over kpos in [kp0, kp1), c in [c0, c1) of
// src[r][kpos][goff + c] * w[kpos][c][:] (c0, c1 multiples of D::P), for MR rows (rows >= `rows` point
// at zeros and are not stored). w is one column block's packed weights. Full
// tiles (MR rows, whole vectors) keep everything in registers.
//
// Kernel positions whose inputs follow each other in memory for every row
// of the tile (neighbours along the last spatial dim of a stride-1 conv,
// away from the padding; pixels `cstride` apart) are one run: the inner loop
// then runs over all their channels with one pointer per row (when the
// chunk holds every channel of a pixel), or reuses pixels across taps.
template <class D, int MR, int NR, bool Full, class In = typename D::In, class Acc = typename D::Acc>
void fwd_tile(const In* const* src, const In* zeros, int64_t Kprod, int64_t goff, int64_t cstride, int64_t kp0,
              int64_t kp1, int64_t c0, int64_t c1, const In* w, int64_t w_kstride, Acc* out, int64_t ldo, int64_t rows,
              int64_t cols, bool accumulate, bool stream, bool affine, int64_t step, int edge) {
  using V = typename D::V;
  constexpr int W = D::W, P = D::P;
  V acc[MR][NR];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NR; ++j) {
      if (!accumulate) acc[r][j] = V{};
      else if (Full) acc[r][j] = vload<V>(out + r * ldo + j * W);
      else acc[r][j] = r < rows ? load_cols<V>(out + r * ldo + j * W, cols - j * W) : V{};
    }
  }
  const bool whole_c = c0 == 0 && c1 == cstride;  // channel runs may cross kernel positions
  // channels [cb, e) of a run for rows [first, MR - skip_last): row r's
  // from s[r], the weights from wk
  auto run_part = [&](auto first, auto skip_last, const In* const* s, const In* wk, int64_t cb, int64_t e) {
    for (int64_t c = cb; c < e; c += P) {
      V b[NR];
      for (int j = 0; j < NR; ++j) b[j] = vload<V>(wk + (c * NR + j * P) * W);
      for (int r = decltype(first)::value; r < MR - decltype(skip_last)::value; ++r) {
        const V a = D::bcast(s[r] + c);
        for (int j = 0; j < NR; ++j) acc[r][j] = D::madd(acc[r][j], a, b[j]);
      }
    }
  };
  using I0 = std::integral_constant<int, 0>;
  using I1 = std::integral_constant<int, 1>;
  // channels [c0, e) of a run, every row (run_part would do; this plain
  // loop, and the affine loop's own, measured 1-2% faster for conv1d's and
  // conv2d's 4-vector tiles than run_part and a shared run finder)
  auto run_rows = [&](const In* const* s, const In* wk, int64_t e) {
    for (int64_t c = c0; c < e; c += P) {
      V b[NR];
      for (int j = 0; j < NR; ++j) b[j] = vload<V>(wk + (c * NR + j * P) * W);
      for (int r = 0; r < MR; ++r) {
        const V a = D::bcast(s[r] + c);
        for (int j = 0; j < NR; ++j) acc[r][j] = D::madd(acc[r][j], a, b[j]);
      }
    }
  };
  if constexpr (Full && !tap_reuse<Acc>(NR)) {
    if (affine && edge) {
      // an edge tile (three taps along the line): the affine loop below with runs
      // that end with their kernel row, the first tap without row 0 where
      // that reads the padding, the last without the last row; each row's
      // sums in the order of the plain run
      for (int64_t kp = kp0; kp < kp1;) {
        const In* p = src[kp];
        const int64_t kw = kp % 3, most = std::min(3 - kw, whole_c ? kp1 - kp : 1);
        int64_t n = p == zeros ? 0 : 1;
        while (n > 0 && n < most && src[kp + n] == p + n * cstride) ++n;
        if (n == 0) {
          ++kp;
          continue;
        }
        const In* s[MR];
        for (int r = 0; r < MR; ++r) s[r] = p + goff + r * step;
        const In* wk = w + kp * w_kstride;
        int64_t t0 = 0, t1 = n;  // taps [t0, t1) of the run for every row
        if ((edge & kLeadPad) && kw == 0) run_part(I1{}, I0{}, s, wk, c0, c1), t0 = 1;
        const bool trail = (edge & kTrailPad) && kw + n == 3 && t1 > t0;
        if (trail) --t1;
        if (t1 > t0) run_part(I0{}, I0{}, s, wk, t0 * cstride + c0, (t1 - 1) * cstride + c1);
        if (trail) run_part(I0{}, I1{}, s, wk, t1 * cstride + c0, t1 * cstride + c1);
        kp += n;
      }
      kp0 = kp1;
    } else if (affine) {
      // the loop below for an affine tile, with nothing per kernel
      // position but its run: a tile with few channels a position (conv3d
      // with 16: 48 a run of three taps) spends a tenth of its time there
      for (int64_t kp = kp0; kp < kp1;) {
        const In* p = src[kp];
        if (p == zeros) {
          ++kp;
          continue;
        }
        int64_t n = 1;
        if (whole_c) {
          while (kp + n < kp1 && src[kp + n] == p + n * cstride) ++n;
        }
        const In* s[MR];
        for (int r = 0; r < MR; ++r) s[r] = p + goff + r * step;
        run_rows(s, w + kp * w_kstride, (n - 1) * cstride + c1);
        kp += n;
      }
      kp0 = kp1;  // (the general loop below has nothing left to do)
    }
  }
  for (int64_t kp = kp0; kp < kp1;) {
    // a kernel position where every row reads the padding (a leading
    // kernel index off the input, the same for all the rows of a tile,
    // which never crosses an output line) adds nothing
    // (an affine tile: row 0's pointers tell for every row)
    bool pad = src[kp] == zeros;
    for (int r = 1; r < MR && !affine; ++r) pad &= src[r * Kprod + kp] == zeros;
    if (pad) {
      ++kp;
      continue;
    }
    const In* s[MR];
    for (int r = 0; r < MR; ++r) s[r] = affine ? src[kp] + goff + r * step : src[r * Kprod + kp] + goff;
    const In* wk = w + kp * w_kstride;
    if constexpr (Full && tap_reuse<Acc>(NR)) {
      // Three taps whose pixels the rows share: row r's tap k reads pixel
      // px[r + k] for every r and k (consecutive pixels along the line, the
      // padding's zero pixel at a line's ends included). Each pixel's value
      // then feeds up to three rows' taps: MR + 2 broadcasts serve
      // 3 * MR * NR FMAs, where one broadcast per row serves NR, so narrow
      // tiles (NR <= 2) run FMA-bound, edge tiles too.
      bool shared = kp + 3 <= kp1;
      const In* px[MR + 2];
      if (shared && affine) {
        // row 0's next two taps one and two rows' steps on
        shared = src[kp + 1] == src[kp] + step && src[kp + 2] == src[kp] + 2 * step;
        for (int i = 0; i < MR + 2; ++i) px[i] = s[0] + i * step;
      } else if (shared) {
        for (int r = 0; r < MR; ++r) px[r] = s[r];
        px[MR] = src[(MR - 1) * Kprod + kp + 1] + goff;
        px[MR + 1] = src[(MR - 1) * Kprod + kp + 2] + goff;
        for (int r = 0; r + 1 < MR; ++r) {
          shared &= src[r * Kprod + kp + 1] + goff == px[r + 1];
          shared &= src[r * Kprod + kp + 2] + goff == px[r + 2];
        }
      }
      if (shared) {
        // the line's first and last tiles: their outer pixel is the
        // padding's zero pixel, whose FMAs (2 * NR of 3 * MR * NR a
        // channel) are skipped, as those of a kernel position in the
        // padding are
        auto taps = [&](auto first, auto last) {
          for (int64_t c = c0; c < c1; c += P) {
            V b[3][NR];
            for (int k = 0; k < 3; ++k)
              for (int j = 0; j < NR; ++j) b[k][j] = vload<V>(wk + k * w_kstride + (c * NR + j * P) * W);
            for (int i = first ? 0 : 1; i < (last ? MR + 2 : MR + 1); ++i) {
              const V a = D::bcast(px[i] + c);
              for (int k = 0; k < 3; ++k) {
                const int r = i - k;
                if (r < 0 || r >= MR) continue;
                for (int j = 0; j < NR; ++j) acc[r][j] = D::madd(acc[r][j], a, b[k][j]);
              }
            }
          }
        };
        const In* zpx = zeros + goff;
        const bool first = px[0] != zpx && !(edge & kLeadPad), last = px[MR + 1] != zpx && !(edge & kTrailPad);
        using T = std::true_type;
        using F = std::false_type;
        if (first && last) taps(T{}, T{});
        else if (last) taps(F{}, T{});
        else if (first) taps(T{}, F{});
        else taps(F{}, F{});
        kp += 3;
        continue;
      }
    }
    // positions whose pixels follow each other (cstride apart) in every row
    int64_t n = 1;
    for (; kp + n < kp1; ++n) {
      bool next = src[kp + n] + goff == s[0] + n * cstride;
      for (int r = 1; r < MR && !affine; ++r) next &= src[r * Kprod + kp + n] + goff == s[r] + n * cstride;
      if (!next) break;
    }
    if (!whole_c) n = 1;  // a channel chunk (or a group) is not contiguous across positions
    run_rows(s, wk, (n - 1) * cstride + c1);
    kp += n;
  }
  if (Full && stream) {
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) vstream(out + r * ldo + j * W, acc[r][j]);
    return;
  }
  if (Full) {
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) vstore(out + r * ldo + j * W, acc[r][j]);
    return;
  }
  for (int64_t r = 0; r < std::min<int64_t>(rows, MR); ++r) {
    for (int j = 0; j < NR && j * W < cols; ++j) store_cols(out + r * ldo + j * W, acc[r][j], cols - j * W);
  }
}

// fwd_tile for a tile of `rows` < MR rows (the end of an output line), still
// with everything in registers when its columns are whole vectors.
template <class D, int MR, int NR, class In = typename D::In, class Acc = typename D::Acc>
void fwd_short_tile(const In* const* src, const In* zeros, int64_t Kprod, int64_t goff, int64_t cstride, int64_t kp0,
                    int64_t kp1, int64_t c0, int64_t c1, const In* w, int64_t w_kstride, Acc* out, int64_t ldo,
                    int64_t rows, int64_t cols, bool accumulate, bool stream, bool, int64_t, int) {
  if constexpr (MR > 1) {
    if (rows < MR) {
      return fwd_short_tile<D, MR - 1, NR>(src, zeros, Kprod, goff, cstride, kp0, kp1, c0, c1, w, w_kstride, out,
                                           ldo, rows, cols, accumulate, stream, false, 0, 0);
    }
  }
  // (the table's rows past `rows` hold zeros: not affine)
  fwd_tile<D, MR, NR, true>(src, zeros, Kprod, goff, cstride, kp0, kp1, c0, c1, w, w_kstride, out, ldo, rows, cols,
                            accumulate, stream, false, 0, 0);
}

// The forward kernel's plan: the tile shape for this group width, and the
// packed weights [g][jb][kpos][c / P][NR*W][P] (zero beyond Og). A flipped kernel
// is packed in reverse kernel-position order and run unflipped (reversing
// every spatial index of a row-major kernel reverses its flat index), so
// neighbouring positions stay contiguous runs.
template <class D>
struct ForwardPlan {
  int nr = 1, mr = 1;
  int64_t nrw = 0, blocks = 0;  // columns per block, blocks per group
  bool flipped = false;
  std::shared_ptr<const AlignedScratch<typename D::In>> packed;

  ForwardPlan(const Geometry& g, bool flip) : flipped(flip) {
    constexpr int W = D::W;
    const int64_t vecs = (g.Og + W - 1) / W;
    nr = fwd_nr<typename D::Acc>(vecs, g.OS[std::max(g.D - 1, 0)]);
    mr = rows_for<typename D::Acc>(nr);
    nrw = int64_t(nr) * W;
    blocks = (g.Og + nrw - 1) / nrw;
  }
  int64_t block_size(const Geometry& g) const { return g.KC * nrw; }
};

template <class D, class In = typename D::In>
std::shared_ptr<const AlignedScratch<In>> pack_forward_weights(const In* w, const Geometry& g,
                                                               const ForwardPlan<D>& plan) {
  constexpr int W = D::W, P = D::P;
  auto out = std::make_shared<AlignedScratch<In>>(g.G * plan.blocks * plan.block_size(g));
  for (int64_t gi = 0; gi < g.G; ++gi) {
    for (int64_t o = 0; o < g.Og; ++o) {
      const int64_t jb = o / plan.nrw, jj = o % plan.nrw;
      In* dst = out->data + (gi * plan.blocks + jb) * plan.block_size(g) + jj / W * W * P + jj % W * P;
      const In* row = w + (gi * g.Og + o) * g.KC;
      for (int64_t kp = 0; kp < g.Kprod; ++kp) {
        const In* src = row + (plan.flipped ? g.Kprod - 1 - kp : kp) * g.Cg;
        for (int64_t c = 0; c < g.Cg; ++c) dst[(kp * g.Cg + c - c % P) * plan.nrw + c % P] = src[c];
      }
    }
  }
  return out;
}

#if EMBER_ISA_HAS_AVX512
// ------------------------------------------------------- forward on AMX tiles

// bfloat16 forward convolutions on the AMX tile unit (CPUs with AMX-BF16;
// AmxConv is the policy's name, for the plan and the weight cache). The
// implicit GEMM of forward_blocks with 16 output rows x 16 output channels
// a C tile, two row tiles x two channel tiles a block, and 32 input
// channels of one kernel position a step: an A tile is 16 rows' 32 channels
// there — loaded straight from the input, rows `step` apart, wherever the 16
// rows read pixels one step apart along the line and the chunk is whole,
// else gathered into a 1 KB stage (padding and channels past the group
// width read as zero) — and a B tile 16 channel pairs x 16 output channels
// of the packed weights. Each output's float32 sum runs over (kernel
// position, 32-channel chunk) in order, with the unit's own rounding (as
// matmul's tile path: not VDPBF16PS's bits); a kernel position where every
// row of a row tile reads the padding adds nothing to it, as in fwd_tile.
struct AmxConv {
  using In = bfloat16_t;
  using Acc = float;
};

// packed weights [g][32-channel block jb][kpos][chunk][tile u][pair q][16][2]:
// element (o = 32 jb + 16 u + j, kpos, c = 32 chunk + 2 q + h) at
// ((((gi * blocks + jb) * Kprod + kpos) * cch + chunk) * 2 + u) * 512 + q * 32 + j * 2 + h, zero past Og and Cg
template <>
struct ForwardPlan<AmxConv> {
  int64_t nrw = 32, blocks = 0, cch = 0;  // output channels a block, blocks a group, channel chunks
  bool flipped = false;
  std::shared_ptr<const AlignedScratch<bfloat16_t>> packed;
  ForwardPlan(const Geometry& g, bool flip) : blocks((g.Og + 31) / 32), cch((g.Cg + 31) / 32), flipped(flip) {}
  int64_t block_size(const Geometry& g) const { return g.Kprod * cch * 1024; }
};

std::shared_ptr<const AlignedScratch<bfloat16_t>> pack_forward_weights(const bfloat16_t* w, const Geometry& g,
                                                                       const ForwardPlan<AmxConv>& plan) {
  auto out = std::make_shared<AlignedScratch<bfloat16_t>>(g.G * plan.blocks * plan.block_size(g));
  for (int64_t gi = 0; gi < g.G; ++gi) {
    for (int64_t jb = 0; jb < plan.blocks; ++jb) {
      bfloat16_t* blk = out->data + (gi * plan.blocks + jb) * plan.block_size(g);
      for (int64_t kp = 0; kp < g.Kprod; ++kp) {
        const int64_t kw = plan.flipped ? g.Kprod - 1 - kp : kp;
        for (int64_t ch = 0; ch < plan.cch; ++ch) {
          bfloat16_t* t = blk + (kp * plan.cch + ch) * 1024;
          for (int64_t oo = 0; oo < 32; ++oo) {
            const int64_t o = jb * 32 + oo;
            for (int64_t cc = 0; cc < 32; ++cc) {
              const int64_t c = ch * 32 + cc;
              t[(oo / 16) * 512 + (cc / 2) * 32 + (oo % 16) * 2 + cc % 2] =
                  o < g.Og && c < g.Cg ? w[(gi * g.Og + o) * g.KC + kw * g.Cg + c] : bfloat16_t(0.0f);
            }
          }
        }
      }
    }
  }
  return out;
}
#endif

// Packed weights of recently used weight arrays. An entry is valid while
// the weight array it was made from is alive (a weak reference to its
// descriptor: evaluated arrays are immutable, and a buffer donated to a new
// array outlives its old descriptor only when nobody else held it) and only
// for memory Ember allocated (borrowed memory may change under it).
template <class D, class In = typename D::In>
class PackCache {
 public:
  std::shared_ptr<const AlignedScratch<In>> get(const array& w, const Geometry& g, const ForwardPlan<D>& plan,
                                                const In* wdata) {
    const bool cacheable = w.buffer() && !w.buffer()->is_borrowed();
    if (!cacheable) return pack_forward_weights(wdata, g, plan);
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->desc.expired()) {
        it = entries_.erase(it);
        continue;
      }
      if (it->desc.lock() == w.desc() && it->data == w.buffer()->ptr() && it->offset == w.offset() &&
          it->shape == w.shape() && it->strides == w.strides() && it->G == g.G && it->nrw == plan.nrw &&
          it->flipped == plan.flipped) {
        return it->packed;
      }
      ++it;
    }
    auto packed = pack_forward_weights(wdata, g, plan);
    if (entries_.size() >= kEntries) entries_.erase(entries_.begin());
    entries_.push_back(
        {w.desc(), w.buffer()->ptr(), w.offset(), w.shape(), w.strides(), g.G, plan.nrw, plan.flipped, packed});
    return packed;
  }

 private:
  static constexpr size_t kEntries = 16;
  struct Entry {
    std::weak_ptr<ArrayDesc> desc;
    const void* data;
    int64_t offset;
    Shape shape;
    Strides strides;
    int64_t G, nrw;
    bool flipped;
    std::shared_ptr<const AlignedScratch<In>> packed;
  };
  std::mutex mu_;
  std::vector<Entry> entries_;
};

template <class D>
PackCache<D>& pack_cache() {
  static PackCache<D> c;
  return c;
}

// Output rows of a forward task with tiles of mr rows: whole output lines
// where a line fits (tiles end at line ends anyway: a block cut inside a
// line would add a short tile), else a multiple of the tile height
inline int64_t forward_block_rows(const Geometry& g, int64_t mr) {
  const int64_t OL = g.OS[std::max(g.D - 1, 0)];
  return OL <= kBlockRows ? kBlockRows / OL * OL : std::max<int64_t>(mr, kBlockRows / mr * mr);
}

// A block's state on one thread: its pointer table and, for an output of
// another type than the sums (float16/bfloat16), the block's float32 sums.
template <class In, class Acc>
struct BlockState {
  RowPointers<In> rp;
  std::vector<Acc> sums;
};

// Out: the output's storage type. The sums of an Out other than Acc (a half
// type) go to a block-sized scratch, rounded into out as each block is done,
// while they are still in the caches.
template <class D, int MR, int NR, class Out, class In = typename D::In, class Acc = typename D::Acc>
void forward_blocks(const In* x, const Geometry& g, const ConvParams& p, const ForwardPlan<D>& plan, Out* out) {
  constexpr bool direct = std::is_same_v<Out, Acc>;
  const In* wp = plan.packed->data;
  // (kpos, c) chunks whose weights fit in L1, of balanced sizes
  const int64_t per_c = plan.nrw * static_cast<int64_t>(sizeof(In));
  const int64_t per_kp = std::max<int64_t>(per_c * g.Cg, 1);
  int64_t kp_step, c_step = g.Cg;
  if (per_kp <= kChunkBytes) {
    const int64_t chunks = (g.Kprod * per_kp + kChunkBytes - 1) / kChunkBytes;
    kp_step = (g.Kprod + chunks - 1) / chunks;
    // whole kernel rows where they fit: their positions form contiguous runs
    const int64_t klast = g.K[std::max(g.D - 1, 0)];
    if (kp_step >= klast && kp_step * per_kp > kChunkBytes / 2) kp_step = kp_step / klast * klast;
  } else {
    kp_step = 1;
    const int64_t chunks = (per_kp + kChunkBytes - 1) / kChunkBytes;
    c_step = ((g.Cg + chunks - 1) / chunks + D::P - 1) / D::P * D::P;
  }
  const int64_t block_rows = forward_block_rows(g, MR);
  const int64_t nblocks = (g.rows + block_rows - 1) / block_rows;
  const std::vector<In> zeros(static_cast<size_t>(g.C + 1), In(0));
  const OffsetTables tab(g, p);
  // edge tiles (see Tile) where every tile is full (whole column blocks)
  // and, in the three-tap form, chunks hold whole kernel rows along the line
  const bool edge_ok = g.Og % plan.nrw == 0 && (!tap_reuse<Acc>(NR) || kp_step % g.K[std::max(g.D - 1, 0)] == 0);
  const int edges = edge_ok ? tab.edges(g, MR) : 0;
  // an output far larger than the caches, computed in one chunk, is written
  // around them where every full tile's vectors are whole cache lines
  constexpr int64_t line = 64 / sizeof(Acc);
  const bool stream = direct && kp_step == g.Kprod && c_step == g.Cg && plan.nrw % line == 0 && g.O % line == 0 &&
                      (g.G == 1 || g.Og % line == 0) && reinterpret_cast<uintptr_t>(out) % 64 == 0 &&
                      g.rows * g.O * static_cast<int64_t>(sizeof(Acc)) >= kStreamBytes;
  // one task per block of rows: its pointer table, then every group and column block
  auto block = [&](BlockState<In, Acc>& st, int64_t blk) {
    const int64_t r0 = blk * block_rows, nr = std::min(block_rows, g.rows - r0);
    RowPointers<In>& rp = st.rp;
    rp.fill(x, zeros.data(), r0, nr, MR, g, edges);
    Acc* sums;  // output row r0's sums
    if constexpr (direct) sums = out + r0 * g.O;
    else sums = st.sums.data();
    for (int64_t gi = 0; gi < g.G; ++gi) {
      for (int64_t jb = 0; jb < plan.blocks; ++jb) {
        const int64_t col0 = jb * plan.nrw, cols = std::min(plan.nrw, g.Og - col0);
        const In* wb = wp + (gi * plan.blocks + jb) * plan.block_size(g);
        Acc* ob = sums + gi * g.Og + col0;
        bool first = true;
        for (int64_t kp0 = 0; kp0 < g.Kprod; kp0 += kp_step) {
          const int64_t kp1 = std::min(g.Kprod, kp0 + kp_step);
          for (int64_t c0 = 0; c0 < g.Cg; c0 += c_step) {
            const int64_t c1 = std::min(g.Cg, c0 + c_step);
            const int64_t cstride = g.C;  // from one pixel to the next
            for (const Tile& t : rp.tiles) {
              auto tile = cols < plan.nrw   ? fwd_tile<D, MR, NR, false>
                          : t.rows == MR    ? fwd_tile<D, MR, NR, true>
                                            : fwd_short_tile<D, MR - 1, NR>;
              tile(rp.ptr.data() + t.at * g.Kprod, zeros.data(), g.Kprod, gi * g.Cg, cstride, kp0, kp1, c0, c1,
                   wb, g.Cg * plan.nrw, ob + (t.row - r0) * g.O, g.O, t.rows, cols, !first, stream, t.affine,
                   tab.step, t.edge);
            }
            first = false;
          }
        }
      }
    }
    if constexpr (!direct) {
      Out* o = out + r0 * g.O;
      for (int64_t i = 0; i < nr * g.O; ++i) o[i] = convert<Out>(sums[i]);
    }
  };
  dynamic_for(
      nblocks,
      [&] {
        return BlockState<In, Acc>{RowPointers<In>(g, tab, block_rows, MR),
                                   std::vector<Acc>(direct ? 0 : static_cast<size_t>(block_rows * g.O))};
      },
      [&](int64_t i, BlockState<In, Acc>& st) { block(st, i); },
      [&](BlockState<In, Acc>&) {
        if (stream) stream_fence();
      });
}

// x (the input) and w (the weights) as D::In, out as D::Acc or a half type
// (rounded from D::Acc); with Bf16Dot the group width Cg is even.
template <class D, class Out, class In = typename D::In, class A = typename D::Acc>
void conv_forward(const In* x, const In* w, const array& warr, const Geometry& g, const ConvParams& params,
                  Out* out) {
  ForwardPlan<D> plan(g, params.flip);
  plan.packed = pack_cache<D>().get(warr, g, plan, w);
  ConvParams p = params;  // the packed weights carry the flip
  p.flip = false;
  switch (plan.nr) {
    case 1: return forward_blocks<D, rows_for<A>(1), 1>(x, g, p, plan, out);
    case 2: return forward_blocks<D, rows_for<A>(2), 2>(x, g, p, plan, out);
#if EMBER_ISA_HAS_AVX2
    case 3: return forward_blocks<D, rows_for<A>(3), 3>(x, g, p, plan, out);
    case 4: return forward_blocks<D, rows_for<A>(4), 4>(x, g, p, plan, out);
#endif
    default: break;
  }
}

#if EMBER_ISA_HAS_AVX512
// The AMX forward walks output lines (all but the last spatial dim fixed)
// in row tiles of at most 16 pixels that never cross a line's end, as the
// depthwise path does; no per-row pointer table. Where a tile's A tile comes
// from at kernel position (h, k) (h: the leading dims' position, k: the
// index along the line) follows from two small tables: the line's leading
// offsets (the batch item's input row at h, or padding) and, per k, whether
// the tile's rows read pixels `step` apart (loaded in place), some of them
// (gathered into a stage: padding, a short tile, input dilation) or none (no
// product). The second depends only on where the tile starts along the line,
// so it is made once per call for the tiles that start at multiples of 16.
struct AmxTile {
  int64_t row, rows, ol0;  // output rows [row, row + rows), at positions ol0.. along the line
  const bfloat16_t* base;  // the batch item's input
  const int64_t* lead;     // the line's leading offsets (Kprod / KL of them; -1: padding)
  const int64_t* first;    // per k: row 0's offset (in place), -1 (gathered) or -2 (all padding)
};

// first[k] (AmxTile::first) for a tile of `rows` rows at ol0
inline void amx_first(const int64_t* tl, int64_t KL, int64_t step, int64_t ol0, int64_t rows, int64_t* first) {
  for (int64_t k = 0; k < KL; ++k) {
    const int64_t t0 = tl[ol0 * KL + k];
    bool some = false, direct = rows == 16 && step > 0;
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t t = tl[(ol0 + i) * KL + k];
      some |= t >= 0;
      direct &= t >= 0 && t == t0 + i * step;
    }
    first[k] = direct ? t0 : some ? -1 : -2;
  }
}

// A task's tiles (rows [r0, r0 + n)) and the tables they point into.
struct AmxTiles {
  std::vector<AmxTile> tiles;
  std::vector<int64_t> leads;   // per line of the task
  std::vector<int64_t> firsts;  // per tile that does not start at a multiple of 16 (or is cut short)

  // std_first: the per-call table, (OL + 15) / 16 x KL. Both tables are
  // sized for the task first (at most n tiles, n / OL + 2 lines), so the
  // tiles' pointers into them stay valid.
  void fill(const bfloat16_t* x, const Geometry& g, const OffsetTables& tab, const int64_t* std_first, int64_t r0,
            int64_t n) {
    const int L = g.D - 1;
    const int64_t OL = g.OS[L], KL = g.K[L], nlead = g.Kprod / KL;
    tiles.clear();
    const size_t nl = static_cast<size_t>((n / OL + 2) * nlead), nf = static_cast<size_t>(n * KL);
    if (leads.size() < nl) leads.resize(nl);
    if (firsts.size() < nf) firsts.resize(nf);
    int64_t* lead = nullptr;  // the current line's
    int64_t* free_first = firsts.data();
    int64_t last_line = -1;
    const bfloat16_t* base = nullptr;
    for (int64_t r = r0, end = r0 + n; r < end;) {
      const int64_t line = r / OL, ol0 = r % OL, rows = std::min({int64_t(16), OL - ol0, end - r});
      if (line != last_line) {
        lead = lead ? lead + nlead : leads.data();
        base = x + tab.line_start(g, line, lead) * g.in_batch;
        last_line = line;
      }
      const int64_t* first = std_first + ol0 / 16 * KL;
      if (ol0 % 16 != 0 || rows != std::min<int64_t>(16, OL - ol0)) {
        amx_first(tab.t[L].data(), KL, tab.step, ol0, rows, free_first);
        first = free_first;
        free_first += KL;
      }
      tiles.push_back(AmxTile{r, rows, ol0, base, lead, first});
      r += rows;
    }
  }
};

// The A tile of row tile t at kernel position (h, k), channels [c0, c0 + kn)
// of the group at goff: the address and row stride (bytes) to load it from —
// the input itself, or `stage` (1 KB) filled here (padding, rows past the
// tile and channels past kn read as zeros) — or nullptr where every row
// reads the padding.
inline const bfloat16_t* amx_rows(const AmxTile& t, int64_t h, int64_t k, const int64_t* tl, int64_t KL,
                                  const bfloat16_t* zeros, int64_t goff, int64_t c0, int64_t kn, int64_t step,
                                  uint16_t* stage, int64_t& stride) {
  const int64_t lo = t.lead[h], f = t.first[k];
  if (lo < 0 || f == -2) return nullptr;
  const bfloat16_t* line = t.base + lo;
  if (f >= 0 && kn == 32) {
    stride = step * static_cast<int64_t>(sizeof(bfloat16_t));
    return line + f + goff + c0;
  }
  const __mmask32 m = kn >= 32 ? ~__mmask32(0) : (__mmask32(1) << kn) - 1;
  for (int64_t r = 0; r < 16; ++r) {  // (zeros holds C + 1 values: a chunk of it reads as zeros)
    const int64_t o = r < t.rows ? tl[(t.ol0 + r) * KL + k] : -1;
    const bfloat16_t* p = o < 0 ? zeros : line + o;
    _mm512_storeu_si512(stage + r * 32, _mm512_maskz_loadu_epi16(m, p + goff + c0));
  }
  stride = 64;
  return reinterpret_cast<const bfloat16_t*>(stage);
}

// The rounding of a block's float32 sums to bfloat16 and their stores,
// deferred: a block stores its C tiles into one of two buffers and writes
// the previous block's out after issuing its own tile products, so that the
// vector work overlaps the tile unit's instead of waiting for it.
struct AmxPending {
  const AmxTile* t[2] = {nullptr, nullptr};  // its row tiles (t[1] null: one)
  bfloat16_t* out = nullptr;                 // output channel 0 of its columns, row 0
  int64_t cols = 0;                          // its output channels (1..32)
  const float* sums = nullptr;               // C tile 2 u + v at sums + (2 u + v) * 256
};

// Writes a pending block out: the rows of each row tile, two column tiles
// rounded and packed into one 32-value row where the block has all 32
// output channels (by VCVTNE2PS2BF16 where `cvt`: the tile unit's sums
// have no denormals, so its bits are round_bf16's), else each column
// tile's valid lanes.
__attribute__((always_inline)) inline void amx_write(const AmxPending& b, int64_t ld, bool cvt) {
  using FV = Vec<float>::V;
  for (int u = 0; u < 2 && b.t[u]; ++u) {
    const float* s0 = b.sums + (2 * u) * 256;
    const float* s1 = s0 + 256;
    bfloat16_t* dst = b.out + b.t[u]->row * ld;
    const int64_t rows = b.t[u]->rows;
    if (b.cols == 32 && cvt) {
      for (int64_t r = 0; r < rows; ++r)
        _mm512_storeu_si512(dst + r * ld, cvt_bf16x2(vload<FV>(s0 + r * 16), vload<FV>(s1 + r * 16)));
    } else if (b.cols == 32) {
      for (int64_t r = 0; r < rows; ++r)
        _mm512_storeu_si512(dst + r * ld, round_bf16x2(vload<FV>(s0 + r * 16), vload<FV>(s1 + r * 16)));
    } else {
      for (int64_t r = 0; r < rows; ++r) {
        store_bf16(dst + r * ld, vload<FV>(s0 + r * 16), std::min<int64_t>(16, b.cols));
        if (b.cols > 16) store_bf16(dst + r * ld + 16, vload<FV>(s1 + r * 16), b.cols - 16);
      }
    }
  }
}

// A task's state: its tiles, a stage for gathered A tiles and the sums of
// two blocks (taking turns).
struct AmxTask {
  AmxTiles t;
  AlignedScratch<uint16_t> stage{1024, false};
  AlignedScratch<float> sums{2048, false};
};

// A task's blocks: row tiles two at a time times output channels 32 at a
// time (2 x 2 C tiles), all kernel positions and channel chunks; then the
// float32 sums rounded to bfloat16 into out (rows g.O apart).
__attribute__((target("amx-tile,amx-bf16"))) void amx_conv_task(AmxTask& st, const OffsetTables& tab,
                                                                   const bfloat16_t* zeros, const Geometry& g,
                                                                   const ForwardPlan<AmxConv>& plan, bool cvt,
                                                                   bfloat16_t* out) {
  amx_configure(8, 16, 64);
  const int64_t KL = g.K[g.D - 1], nlead = g.Kprod / KL, step = tab.step, cch = plan.cch;
  const int64_t* tl = tab.t[g.D - 1].data();
  const std::vector<AmxTile>& tiles = st.t.tiles;
  uint16_t* stage = st.stage.data;
  AmxPending pending;
  int turn = 0;
  for (int64_t gi = 0; gi < g.G; ++gi) {
    const int64_t goff = gi * g.Cg;
    for (int64_t jb = 0; jb < plan.blocks; ++jb) {
      const bfloat16_t* wb = plan.packed->data + (gi * plan.blocks + jb) * plan.block_size(g);
      for (size_t i = 0; i < tiles.size(); i += 2) {
        const AmxTile* t0 = &tiles[i];
        const AmxTile* t1 = i + 1 < tiles.size() ? &tiles[i + 1] : nullptr;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t h = 0; h < nlead; ++h) {
          for (int64_t k = 0; k < KL; ++k) {
            const bfloat16_t* wk = wb + (h * KL + k) * cch * 1024;
            for (int64_t ch = 0; ch < cch; ++ch) {
              const int64_t c0 = ch * 32, kn = std::min<int64_t>(32, g.Cg - c0);
              int64_t st0 = 0, st1 = 0;
              const bfloat16_t* a0 = amx_rows(*t0, h, k, tl, KL, zeros, goff, c0, kn, step, stage, st0);
              const bfloat16_t* a1 =
                  t1 ? amx_rows(*t1, h, k, tl, KL, zeros, goff, c0, kn, step, stage + 512, st1) : nullptr;
              if (!a0 && !a1) continue;
              _tile_loadd(6, wk + ch * 1024, 64);
              _tile_loadd(7, wk + ch * 1024 + 512, 64);
              if (a0) {
                _tile_loadd(4, a0, st0);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
              }
              if (a1) {
                _tile_loadd(5, a1, st1);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
              }
            }
          }
        }
        // the previous block's rounding and stores, while the tile unit works
        if (pending.t[0]) amx_write(pending, g.O, cvt);
        // C tile 2 u + v: rows of tile u, output channels 32 jb + 16 v
        float* sums = st.sums.data + turn * 1024;
        turn ^= 1;
        _tile_stored(0, sums, 64);
        _tile_stored(1, sums + 256, 64);
        if (t1) {
          _tile_stored(2, sums + 512, 64);
          _tile_stored(3, sums + 768, 64);
        }
        pending = AmxPending{{t0, t1}, out + gi * g.Og + jb * 32,
                             std::min<int64_t>(32, g.Og - jb * 32), sums};
      }
    }
  }
  if (pending.t[0]) amx_write(pending, g.O, cvt);
  _tile_release();
}

// The forward convolution (forward_blocks' blocks of rows, one task each)
// on the tile unit.
void forward_amx(const bfloat16_t* x, const Geometry& g, const ConvParams& p, const ForwardPlan<AmxConv>& plan,
                 bfloat16_t* out) {
  const int64_t block_rows = forward_block_rows(g, 16);
  const int64_t nblocks = (g.rows + block_rows - 1) / block_rows;
  const std::vector<bfloat16_t> zeros(static_cast<size_t>(g.C + 1), bfloat16_t(0.0f));
  const OffsetTables tab(g, p);
  const int L = g.D - 1;
  const int64_t OL = g.OS[L], KL = g.K[L];
  std::vector<int64_t> std_first(static_cast<size_t>((OL + 15) / 16 * KL));
  for (int64_t i = 0; i * 16 < OL; ++i)
    amx_first(tab.t[L].data(), KL, tab.step, i * 16, std::min<int64_t>(16, OL - i * 16), std_first.data() + i * KL);
  const bool cvt = avx512_bf16_usable();
  dynamic_for(
      nblocks, [&] { return AmxTask{}; },
      [&](int64_t blk, AmxTask& st) {
        const int64_t r0 = blk * block_rows;
        st.t.fill(x, g, tab, std_first.data(), r0, std::min(block_rows, g.rows - r0));
        amx_conv_task(st, tab, zeros.data(), g, plan, cvt, out);
      });
}

void conv_forward_amx(const bfloat16_t* x, const bfloat16_t* w, const array& warr, const Geometry& g,
                      const ConvParams& params, bfloat16_t* out) {
  ForwardPlan<AmxConv> plan(g, params.flip);
  plan.packed = pack_cache<AmxConv>().get(warr, g, plan, w);
  ConvParams p = params;  // the packed weights carry the flip
  p.flip = false;
  forward_amx(x, g, p, plan, out);
}
#endif

// ---------------------------------------------------------------- depthwise

// Depthwise convolutions (groups == channels, one output channel each) do
// 2 * Kprod flops per output element: the per-row pointer tables would cost
// more than the arithmetic. This path walks output lines (all but the last
// spatial dim fixed) instead: per line, the leading kernel positions' input
// rows (`lead`, -1 where padding), then tiles of MR output pixels along the
// line. A tile away from the edges reads pixel r at kernel index k from
// tl[w0][k] + r * stride (affine); edge tiles test each position.
template <class A, int MR, int NR, bool Interior, bool Whole>
void dw_tile(const A* base, const int64_t* lead, int64_t nlead, const int64_t* tl, int64_t KL, int64_t w0,
             int64_t rows, int64_t step, const A* wt, int64_t ldw, int64_t c0, int64_t cols, A* out, int64_t ldo,
             bool stream) {
  using V = typename Vec<A>::V;
  constexpr int W = Vec<A>::W;
  auto load = [&](const A* p, int j) { return Whole ? vload<V>(p + j * W) : load_cols<V>(p + j * W, cols - j * W); };
  V acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) acc[r][j] = V{};
  for (int64_t h = 0; h < nlead; ++h) {
    if (lead[h] < 0) continue;
    const A* row = base + lead[h] + c0;
    for (int64_t k = 0; k < KL; ++k) {
      V b[NR];
      for (int j = 0; j < NR; ++j) b[j] = vload<V>(wt + (h * KL + k) * ldw + c0 + j * W);
      if constexpr (Interior) {
        const A* px = row + tl[w0 * KL + k];
        for (int r = 0; r < MR; ++r)
          for (int j = 0; j < NR; ++j) acc[r][j] = vfma(load(px + r * step, j), b[j], acc[r][j]);
      } else {
        for (int r = 0; r < MR; ++r) {
          const int64_t off = r < rows ? tl[(w0 + r) * KL + k] : -1;
          if (off < 0) continue;
          for (int j = 0; j < NR; ++j) acc[r][j] = vfma(load(row + off, j), b[j], acc[r][j]);
        }
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    if (r >= rows) break;
    for (int j = 0; j < NR; ++j) {
      if (Whole && stream) vstream(out + r * ldo + j * W, acc[r][j]);
      else if (Whole) vstore(out + r * ldo + j * W, acc[r][j]);
      else if (j * W < cols) store_cols(out + r * ldo + j * W, acc[r][j], cols - j * W);
    }
  }
}

// Three taps along the line at unit stride and dilation (the common case).
// The MR outputs of a tile read MR + 2 neighbouring pixels; each is loaded
// once and used by up to three taps (a third of the loads of dw_tile).
// Affine (the line's interior): px[h] is the tile's first pixel in leading
// position h's input row (nullptr: padding), pixels `step` apart. Otherwise
// (a tile at a line's ends, or of `rows` < MR outputs): px[h * (MR + 2) + i]
// is pixel i itself, a zero pixel where it is padding (nullptr: row h is).
// nv whole vectors of channels, one at a time; rows [0, rows) stored.
template <class A, int MR, bool Affine>
void dw_tile3(const A* const* px, int64_t nlead, int64_t step, const A* wt, int64_t ldw, int nv, int64_t rows,
              A* out, int64_t ldo, bool stream, A* held) {
  using V = typename Vec<A>::V;
  constexpr int W = Vec<A>::W;
  // a cache line is P vectors: the first P - 1 wait in `held` and go out
  // with the last, so each line is streamed whole and at once (a line
  // streamed in pieces far apart is written to memory twice)
  constexpr int P = sizeof(V) >= 64 ? 1 : static_cast<int>(64 / sizeof(V));
  stream = stream && nv % P == 0;
  for (int j = 0; j < nv; ++j) {
    V acc[MR];
    for (int r = 0; r < MR; ++r) acc[r] = V{};
    for (int64_t h = 0; h < nlead; ++h) {
      const A* const* ph = Affine ? px + h : px + h * (MR + 2);
      if (ph[0] == nullptr) continue;
      auto pixel = [&](int i) { return Affine ? vload<V>(ph[0] + j * W + i * step) : vload<V>(ph[i] + j * W); };
      const A* wk = wt + h * 3 * ldw + j * W;
      const V k0 = vload<V>(wk), k1 = vload<V>(wk + ldw), k2 = vload<V>(wk + 2 * ldw);
      // a sliding window of three pixels
      V a0 = pixel(0), a1 = pixel(1);
      for (int r = 0; r < MR; ++r) {
        const V a2 = pixel(r + 2);
        acc[r] = vfma(a0, k0, acc[r]);
        acc[r] = vfma(a1, k1, acc[r]);
        acc[r] = vfma(a2, k2, acc[r]);
        a0 = a1;
        a1 = a2;
      }
    }
    if (stream) {
      if (j % P != P - 1) {
        for (int r = 0; r < MR; ++r) vstore(held + ((j % P) * MR + r) * W, acc[r]);
      } else {
        const int j0 = j - (P - 1);
        for (int r = 0; r < rows; ++r) {
          for (int i = 0; i < P - 1; ++i) vstream(out + r * ldo + (j0 + i) * W, vload<V>(held + (i * MR + r) * W));
          vstream(out + r * ldo + j * W, acc[r]);
        }
      }
    } else {
      for (int r = 0; r < rows; ++r) vstore(out + r * ldo + j * W, acc[r]);
    }
  }
}

template <class A>
void conv_depthwise(const A* x, const A* w, const Geometry& g, const ConvParams& params, A* out) {
  // A block of channels is 128 bytes, two cache lines (with 32 float32
  // channels, a whole pixel): a pass along a line that reads every other
  // line of its input defeats the hardware prefetchers (AVX2, 64-byte
  // blocks: half the speed once the input is out of the caches). dw_tile3
  // holds one vector of the block at a time (tiles of 8 pixels with 32
  // registers; with 16, 8 measured 15% slower than 6 in the caches); dw_tile,
  // which holds the block's MR x NE accumulators, goes through it NE vectors
  // at a time.
  constexpr int64_t W = Vec<A>::W;
  constexpr int NR = std::max<int>(2, 128 / static_cast<int>(W * sizeof(A)));
  constexpr int MR = EMBER_ISA_HAS_AVX512 ? 8 : 6, NE = 2;
  const int L = g.D - 1;
  const int64_t KL = g.K[L], OL = g.OS[L], lines = g.rows / std::max<int64_t>(OL, 1);
  const int64_t cpad = (g.C + NE * W - 1) / (NE * W) * (NE * W);
  // wt[kpos][c], zero-padded to whole dw_tile blocks (which load NE vectors)
  // (a flipped kernel in reverse position order, run unflipped: see ForwardPlan)
  AlignedScratch<A> wt(g.Kprod * cpad);
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t k = 0; k < g.Kprod; ++k) wt.data[k * cpad + c] = w[c * g.Kprod + (params.flip ? g.Kprod - 1 - k : k)];
  ConvParams p = params;
  p.flip = false;
  const OffsetTables tab(g, p);
  const int64_t* tl = tab.t[L].data();
  // positions whose every kernel index reads the input, affine in the position
  const int64_t step = p.stride[L] * g.in_stride[L];
  std::vector<char> inner(static_cast<size_t>(OL), 0);
  for (int64_t w0 = 0; w0 < OL; ++w0) {
    bool ok = p.input_dilation[L] == 1;
    for (int64_t k = 0; k < KL && ok; ++k) ok = tl[w0 * KL + k] >= 0 && (w0 == 0 || tl[w0 * KL + k] == tl[(w0 - 1) * KL + k] + step);
    inner[w0] = ok;
  }
  const int64_t nlead = g.Kprod / KL;
  // unit stride and dilation along the line, three taps: dw_tile3
  const bool taps3 = KL == 3 && step == g.C && p.kernel_dilation[L] == 1;
  // one task per 256 KB of output lines: each task's first line reads the
  // input lines above it again (from memory: tasks alternate between the
  // cores), so short tasks read more (64 KB tasks measured 10% slower on the
  // 32x64x64x32 3x3 benchmark shape, a memory-bound convolution)
  const int64_t line_bytes = OL * g.C * static_cast<int64_t>(sizeof(A));
  const int64_t grain = std::max<int64_t>(1, (1 << 18) / std::max<int64_t>(line_bytes, 1));
  // an output far larger than the caches is written around them, where a
  // tile writes whole cache lines (pixels start on a line, NR vectors make
  // whole lines)
  const bool stream = NR * W * sizeof(A) % 64 == 0 &&
                      g.rows * g.O * static_cast<int64_t>(sizeof(A)) >= kStreamBytes &&
                      (g.O * sizeof(A)) % 64 == 0 && reinterpret_cast<uintptr_t>(out) % 64 == 0;
  struct State {
    std::vector<int64_t> lead;
    std::vector<A> held;  // dw_tile3's first vectors of streamed lines
    std::vector<const A*> px;  // dw_tile3's input rows or pixels
    std::vector<A> zeros;      // dw_tile3's padding pixel
  };
  // one task per `grain` output lines
  auto task = [&](State& st, int64_t t) {
    std::vector<int64_t>& lead = st.lead;
    for (int64_t line = t * grain, l1 = std::min(lines, line + grain); line < l1; ++line) {
      // the line's batch item and leading positions
      const A* base = x + tab.line_start(g, line, lead.data()) * g.in_batch;
      A* ol = out + line * OL * g.O;
      for (int64_t c0 = 0; c0 < g.C; c0 += NR * W) {
        const int64_t cols = std::min<int64_t>(NR * W, g.C - c0);
        for (int64_t w0 = 0; w0 < OL; w0 += MR) {
          const int64_t rows = std::min<int64_t>(MR, OL - w0);
          bool interior = rows == MR;
          for (int64_t r = 0; r < rows && interior; ++r) interior = inner[w0 + r] && (r == 0 || inner[w0 + r]);
          if (interior) {
            for (int64_t r = 1; r < MR && interior; ++r) interior = tl[(w0 + r) * KL] == tl[w0 * KL] + r * step;
          }
          if (taps3 && cols % W == 0) {
            const A** px = st.px.data();
            if (interior) {
              for (int64_t h = 0; h < nlead; ++h) px[h] = lead[h] < 0 ? nullptr : base + lead[h] + tl[w0 * 3] + c0;
              dw_tile3<A, MR, true>(px, nlead, step, wt.data + c0, cpad, static_cast<int>(cols / W), MR,
                                    ol + w0 * g.O + c0, g.O, stream, st.held.data());
              continue;
            }
            // pixel i is output i's tap 0, and the last output's taps 1
            // and 2 the two after it (unit stride and dilation); pixels
            // past those feed only outputs past `rows`, never stored
            int64_t off[MR + 2];
            for (int i = 0; i < MR + 2; ++i) {
              off[i] = i < rows ? tl[(w0 + i) * 3] : i < rows + 2 ? tl[(w0 + rows - 1) * 3 + i - rows + 1] : -1;
            }
            for (int64_t h = 0; h < nlead; ++h) {
              const A** ph = px + h * (MR + 2);
              for (int i = 0; i < MR + 2; ++i) {
                ph[i] = lead[h] < 0 ? nullptr : off[i] < 0 ? st.zeros.data() : base + lead[h] + off[i] + c0;
              }
            }
            dw_tile3<A, MR, false>(px, nlead, step, wt.data + c0, cpad, static_cast<int>(cols / W), rows,
                                   ol + w0 * g.O + c0, g.O, stream, st.held.data());
            continue;
          }
          // NE vectors at a time; streamed only where NE vectors are whole lines
          const bool stream_e = stream && NE * W * sizeof(A) % 64 == 0;
          for (int64_t s0 = 0; s0 < cols; s0 += NE * W) {
            const int64_t ce = std::min<int64_t>(NE * W, cols - s0);
            const bool we = ce == NE * W;
            auto tile = interior ? (we ? dw_tile<A, MR, NE, true, true> : dw_tile<A, MR, NE, true, false>)
                                 : (we ? dw_tile<A, MR, NE, false, true> : dw_tile<A, MR, NE, false, false>);
            tile(base, lead.data(), nlead, tl, KL, w0, rows, step, wt.data, cpad, c0 + s0, ce,
                 ol + w0 * g.O + c0 + s0, g.O, stream_e);
          }
        }
      }
    }
  };
  dynamic_for(
      (lines + grain - 1) / grain,
      [&] {
        return State{std::vector<int64_t>(static_cast<size_t>(nlead)), std::vector<A>(MR * NR * W),
                     std::vector<const A*>(static_cast<size_t>(nlead * (MR + 2))), std::vector<A>(NR * W)};
      },
      [&](int64_t i, State& st) { task(st, i); },
      [&](State&) {
        if (stream) stream_fence();
      });
}

// ---------------------------------------------------------------- weight gradient

// dwt[c0 + i][o0 + :cols] += sum_r src[r][kp][coff + i] * ct[r][:cols] for
// i < MR, over `nrows` rows (dwt rows are ldd apart, ct rows ldc apart).
// Compiled on its own: inlined into the partition loop, GCC has been seen
// to keep the accumulators on the stack (a store of each per row, half the
// speed), depending on the code around the call. The loop runs at least
// once (a do-while after the empty case returns): with a `for` loop that
// may run zero times, GCC kept a copy of the accumulators on the stack to
// hand from the loads to the stores, stored and reloaded at every call
// (AVX2, 6 x 2 tile of 64 rows in L1: 102-107 -> 110-113 GFLOP/s on Zen 4).
template <class A, int MR, int NR, bool Whole>
__attribute__((noinline)) void wg_tile(const A* const* src, int64_t Kprod, int64_t kp, int64_t coff, const A* ct,
                                       int64_t ldc, int64_t nrows, A* dwt, int64_t ldd, int64_t cols) {
  using V = typename Vec<A>::V;
  constexpr int W = Vec<A>::W;
  if (nrows <= 0) return;
  V acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j)
      acc[i][j] = Whole ? vload<V>(dwt + i * ldd + j * W) : load_cols<V>(dwt + i * ldd + j * W, cols - j * W);
  int64_t r = 0;
  do {
    const A* cr = ct + r * ldc;
    V b[NR];
    for (int j = 0; j < NR; ++j) b[j] = Whole ? vload<V>(cr + j * W) : load_cols<V>(cr + j * W, cols - j * W);
    const A* s = src[r * Kprod + kp] + coff;
    // one register for the row's pointer: the MR loads below then use
    // constant displacements (GCC would otherwise keep MR offsets live)
    __asm__("" : "+r"(s));
    for (int i = 0; i < MR; ++i) {
      const V a = splat<V>(s[i]);
      for (int j = 0; j < NR; ++j) acc[i][j] = vfma(a, b[j], acc[i][j]);
    }
  } while (++r < nrows);
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      if (Whole) vstore(dwt + i * ldd + j * W, acc[i][j]);
      else if (j * W < cols) store_cols(dwt + i * ldd + j * W, acc[i][j], cols - j * W);
    }
  }
}

template <class A, int MR, int NR>
void wg_rows(int64_t mc, const A* const* src, int64_t Kprod, int64_t kp, int64_t coff, const A* ct, int64_t ldc,
             int64_t nrows, A* dwt, int64_t ldd, int64_t cols) {
  if constexpr (MR > 1) {
    if (mc < MR) return wg_rows<A, MR - 1, NR>(mc, src, Kprod, kp, coff, ct, ldc, nrows, dwt, ldd, cols);
  }
  constexpr int W = Vec<A>::W;
  if (cols >= NR * W) wg_tile<A, MR, NR, true>(src, Kprod, kp, coff, ct, ldc, nrows, dwt, ldd, cols);
  else wg_tile<A, MR, NR, false>(src, Kprod, kp, coff, ct, ldc, nrows, dwt, ldd, cols);
}

// Rows of a weight-gradient block: every pass over the block (one kernel
// position, MR input channels, NR vectors of output channels) loads its
// accumulators from the partition's sums and stores them back, and reads
// the block's cotangent and input rows. With AVX-512 a pass holds 24
// full-width accumulators, as much traffic as ~40 rows of its loop: long
// blocks, whose rows stream from L2 (~384 KB of cotangent and input),
// measured 10% faster than blocks held in L1. AVX2's 12 narrow accumulators
// cost little; there blocks that stay in L1 are faster, counted with their
// rows of the pointer table: a pass reads one of a row's Kprod pointers, a
// line apart for conv3d's 27 (1 thread, Zen 4, at AVX2: conv3d 3x3x3 with
// 16 channels, whose 128-row blocks became 64, +5%; conv2d's 64 rows
// unchanged). Whole output lines where a line fits (a block that starts a
// line starts at its padding).
template <class A>
int64_t wg_block_rows(const Geometry& g) {
  constexpr bool l2 = EMBER_ISA_HAS_AVX512;
  constexpr int64_t budget = l2 ? (384 << 10) : (32 << 10);
  const int64_t per_row = (g.O + g.C) * static_cast<int64_t>(sizeof(A)) +
                          (l2 ? 0 : g.Kprod * static_cast<int64_t>(sizeof(const A*)));
  const int64_t rows = std::clamp<int64_t>(budget / std::max<int64_t>(per_row, 1), 32, 8192);
  const int64_t OL = g.OS[std::max(g.D - 1, 0)];
  return OL <= rows ? rows / OL * OL : rows;
}

template <class A, int NR>
void weight_grad_partition(const A* x, const A* ct, const Geometry& g, const OffsetTables& tab, int64_t r_begin,
                           int64_t r_end, int64_t ogp, A* dwt) {
  constexpr int MR = rows_for<A>(NR);
  constexpr int64_t W = Vec<A>::W;
  const int64_t kRows = wg_block_rows<A>(g);
  const std::vector<A> zeros(static_cast<size_t>(g.C + 1), A(0));
  RowPointers<A> rp(g, tab, kRows, 1);
  for (int64_t r0 = r_begin; r0 < r_end; r0 += kRows) {
    const int64_t nr = std::min(kRows, r_end - r0);
    rp.fill(x, zeros.data(), r0, nr, 1, g);
    for (int64_t gi = 0; gi < g.G; ++gi) {
      for (int64_t kp = 0; kp < g.Kprod; ++kp) {
        // the block's rows from the first to the last that reads the input
        // at kp (rows in the padding add nothing: a padded leading kernel
        // index skips a whole output line)
        int64_t lo = 0, hi = nr;
        while (lo < hi && rp.ptr[lo * g.Kprod + kp] == zeros.data()) ++lo;
        while (hi > lo && rp.ptr[(hi - 1) * g.Kprod + kp] == zeros.data()) --hi;
        if (lo == hi) continue;
        // channel tiles of balanced sizes (32 = 6+6+5+5+5+5, not 6*5+2)
        const int64_t ntiles = (g.Cg + MR - 1) / MR;
        for (int64_t t = 0, c0 = 0; t < ntiles; ++t) {
          const int64_t mc = (g.Cg - c0) / (ntiles - t);
          const int64_t c1 = c0 + mc;
          for (int64_t o0 = 0; o0 < g.Og; o0 += NR * W) {
            const int64_t cols = std::min<int64_t>(NR * W, g.Og - o0);
            A* d = dwt + ((gi * g.Kprod + kp) * g.Cg + c0) * ogp + o0;
            wg_rows<A, MR, NR>(mc, rp.ptr.data() + lo * g.Kprod, g.Kprod, kp, gi * g.Cg + c0,
                               ct + (r0 + lo) * g.O + gi * g.Og + o0, g.O, hi - lo, d, ogp, cols);
          }
          c0 = c1;
        }
      }
    }
  }
}

// dW (O, *K, Cg) from x (N, *S, C) and the cotangent ct (N, *OS, O).
template <class A>
void conv_weight_grad(const A* x, const A* ct, const Geometry& g, const ConvParams& p, A* out) {
  constexpr int64_t W = Vec<A>::W;
  const int64_t ogp = (g.Og + W - 1) / W * W;
  const int64_t per = g.G * g.KC * ogp;
  // A partition of the rows fixed by the shape alone: the partial sums are
  // added in partition order, whatever the number of threads.
  const int64_t parts = std::clamp<int64_t>(g.rows / 4096, 1, 8);
  AlignedScratch<A> acc(parts * per);
  const int nr = static_cast<int>(std::min<int64_t>(max_nr<A>(), (g.Og + W - 1) / W));
  const OffsetTables tab(g, p);
  auto part = [&](int, int64_t q) {
    const int64_t rb = g.rows * q / parts, re = g.rows * (q + 1) / parts;
    A* d = acc.data + q * per;
    switch (nr) {
#if EMBER_ISA_HAS_AVX512
      case 4: weight_grad_partition<A, 4>(x, ct, g, tab, rb, re, ogp, d); break;
      case 3: weight_grad_partition<A, 3>(x, ct, g, tab, rb, re, ogp, d); break;
#endif
      case 2: weight_grad_partition<A, 2>(x, ct, g, tab, rb, re, ogp, d); break;
      default: weight_grad_partition<A, 1>(x, ct, g, tab, rb, re, ogp, d); break;
    }
  };
  dynamic_for(parts, [] { return 0; }, [&](int64_t i, int& st) { part(st, i); });
  for (int64_t q = 1; q < parts; ++q) {
    const A* src = acc.data + q * per;
    for (int64_t i = 0; i < per; ++i) acc.data[i] += src[i];
  }
  // dwt[g][kpos][c][o] -> out[g*Og + o][kpos][c]
  for (int64_t gi = 0; gi < g.G; ++gi)
    for (int64_t o = 0; o < g.Og; ++o)
      for (int64_t k = 0; k < g.KC; ++k) out[(gi * g.Og + o) * g.KC + k] = acc.data[(gi * g.KC + k) * ogp + o];
}

// ---------------------------------------------------------------- entry

array dense(const array& a) {
  if (a.row_contiguous()) return a;
  array d = array::empty_evaluated(a.shape(), a.dtype());
  copy_to_dense(a, d.raw_data());
  return d;
}

// a's elements as A, dense: a itself when it already is, else a converted copy
template <class A>
struct DenseAs {
  array arr;
  std::unique_ptr<AlignedScratch<A>> copy;
  const A* data = nullptr;
  DenseAs(const array& a) {
    if (a.dtype() == type_to_dtype<A>::value) {
      arr = dense(a);
      data = arr.data<A>();
    } else {
      copy = std::make_unique<AlignedScratch<A>>(a.size(), false);
      copy_kernel(a.dtype(), a.shape(), a.strides(), a.data<char>(), type_to_dtype<A>::value,
                  row_strides(a.shape()), reinterpret_cast<char*>(copy->data));
      data = copy->data;
    }
  }
};

// The conv kernels run on float32/float64 and half types (the op layer
// rejects the rest); half types compute in float32. f(A{}, o) writes the
// output through o: an A* (a float32 scratch for a half output, converted
// afterwards), or with HalfOut the output's own pointer, half types too.
template <bool HalfOut = false, class F>
void run_floating(const char* name, array& out, F&& f) {
  out.alloc();
  if (out.size() == 0) return;
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || is_half_v<T>) {
      using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
      if constexpr (std::is_same_v<T, A> || HalfOut) {
        f(A{}, out.data<T>());
      } else {
        AlignedScratch<A> tmp(out.size(), false);
        f(A{}, tmp.data);
        const Strides dense_strides = row_strides(out.shape());  // out is freshly allocated: dense
        copy_kernel(type_to_dtype<A>::value, out.shape(), dense_strides, reinterpret_cast<char*>(tmp.data),
                    out.dtype(), dense_strides, out.data<char>());
      }
    } else {
      unsupported(name, out.dtype());
    }
  });
}

}  // namespace

void conv_eval(const ConvGeneral& prim, const std::vector<array>& inputs, std::vector<array>& outputs) {
  const ConvParams& p = prim.params();
  const Geometry g = make_geometry(inputs[0].shape(), inputs[1].shape(), outputs[0].shape(), p);
#if EMBER_ISA_HAS_AVX512
  // bfloat16 on the AMX tile unit where the CPU has it (groups of at least
  // 16 channels: a step takes 32), rounded to bfloat16 as each tile is done
  if (inputs[0].dtype() == Dtype::bfloat16 && inputs[1].dtype() == Dtype::bfloat16 &&
      outputs[0].dtype() == Dtype::bfloat16 && amx_bf16_usable()) {
    if (g.Cg >= 16 && g.KC > 0 && outputs[0].size() > 0) {  // (so never depthwise)
      outputs[0].alloc();
      DenseAs<bfloat16_t> x(inputs[0]), w(inputs[1]);
      return conv_forward_amx(x.data, w.data, inputs[1], g, p, outputs[0].data<bfloat16_t>());
    }
  }
#endif
  if (g.G == g.C && g.Cg == 1 && g.Og == 1 && g.KC > 0) {  // depthwise
    return run_floating("ConvGeneral", outputs[0], [&](auto tag, auto* o) {
      DenseAs<decltype(tag)> x(inputs[0]), w(inputs[1]);
      conv_depthwise(x.data, w.data, g, p, o);
    });
  }
  // the other kernels round a half output block by block
  run_floating<true>("ConvGeneral", outputs[0], [&](auto tag, auto* o) {
    using A = decltype(tag);
    using Out = std::remove_pointer_t<decltype(o)>;
    if (g.KC == 0) {
      std::fill(o, o + outputs[0].size(), Out(0.0f));
      return;
    }
#if EMBER_ISA_HAS_AVX512
    // bfloat16 by pairs of input channels where the CPU has VDPBF16PS (the
    // tile unit's path, above, writes bfloat16 itself)
    if constexpr (std::is_same_v<A, float>) {
      if (g.Cg % 2 == 0 && inputs[0].dtype() == Dtype::bfloat16 &&
          inputs[1].dtype() == Dtype::bfloat16 && avx512_bf16_usable()) {
        DenseAs<bfloat16_t> x(inputs[0]), w(inputs[1]);
        return conv_forward<Bf16Dot>(x.data, w.data, inputs[1], g, p, o);
      }
    }
#endif
    DenseAs<A> x(inputs[0]), w(inputs[1]);
    conv_forward<FmaDot<A>>(x.data, w.data, inputs[1], g, p, o);
  });
}

void conv_weight_grad_eval(const ConvWeightGrad& prim, const std::vector<array>& inputs,
                           std::vector<array>& outputs) {
  const ConvParams& p = prim.params();
  run_floating("ConvWeightGrad", outputs[0], [&](auto tag, auto* o) {
    using A = decltype(tag);
    const Geometry g = make_geometry(inputs[0].shape(), outputs[0].shape(), inputs[1].shape(), p);
    if (g.rows == 0 || g.KC == 0 || g.Og == 0) {
      std::fill(o, o + outputs[0].size(), A(0));
      return;
    }
    DenseAs<A> x(inputs[0]), ct(inputs[1]);
    conv_weight_grad(x.data, ct.data, g, p, o);
  });
}

}  // namespace ember::cpu::EMBER_ISA_NS

#if EMBER_ISA_BASE_UNIT
namespace ember {
void ConvGeneral::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(conv_eval)(*this, inputs, outputs);
}
void ConvWeightGrad::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(conv_weight_grad_eval)(*this, inputs, outputs);
}
}  // namespace ember
#endif
