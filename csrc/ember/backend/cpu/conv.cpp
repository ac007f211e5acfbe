// ConvGeneral on the CPU: blocked im2col + BLAS for every configuration.
// The output rows (n, output position) are taken in blocks of bounded size,
// split across the pool (OpenBLAS single-threaded inside); for each block the
// column matrix col[r][g][kernel position][c] (zeros where the dilated,
// padded input has no element) is built, then one GEMM per group multiplies
// it with that group's weights:
//   out[rows, g*Og:(g+1)*Og] = col_g[rows, K*Cg] @ w_g[Og, K*Cg]^T.
// Strides, padding (negative included), kernel and input dilation and flip
// only change which input element a column entry reads. float32/float64 go
// through OpenBLAS directly; float16/bfloat16 are converted to float32 while
// the columns are built and the GEMM result is converted back per block.

#include "ember/backend/cpu/isa_unit.h"

#include "ember/backend/cpu/kernel_utils.h"

namespace ember::cpu::EMBER_ISA_NS {

namespace {

constexpr int64_t kBlockElems = int64_t(1) << 18;  // elements of one task's column block

struct Geometry {
  int D = 0;
  int64_t N = 0, C = 0, O = 0, G = 1, Cg = 0, Og = 0;
  int64_t S[3] = {1, 1, 1}, K[3] = {1, 1, 1}, OS[3] = {1, 1, 1};
  int64_t in_d[3] = {1, 1, 1};
  int64_t Kprod = 1, KC = 0, OSprod = 1, rows = 0;
  int64_t in_stride[3] = {0, 0, 0};  // element strides of the dense input's spatial dims
  int64_t in_batch = 0;
};

template <class A>
void gemm(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda, const A* b, int64_t ldb, A* c, int64_t ldc) {
  if constexpr (std::is_same_v<A, float>) {
    scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  } else {
    scipy_cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0, a, lda, b, ldb, 0.0, c, ldc);
  }
}

// Input offsets (elements from x) of output row `row`'s kernel positions,
// offs[kpos] in (k0, k1, k2) order, -1 where the dilated, padded input has no
// element; scratch has room for K[0] + K[1] + K[2] per-dim offsets.
void kernel_offsets(int64_t row, const Geometry& g, const ConvParams& p, int64_t* scratch, int64_t* offs) {
  int64_t* od[3] = {scratch, scratch + g.K[0], scratch + g.K[0] + g.K[1]};
  int64_t n = row / g.OSprod, rem = row % g.OSprod;
  int64_t pos[3] = {0, 0, 0};
  for (int d = g.D - 1; d >= 0; --d) {
    pos[d] = rem % g.OS[d];
    rem /= g.OS[d];
  }
  for (int d = 0; d < g.D; ++d) {
    for (int64_t k = 0; k < g.K[d]; ++k) {
      int64_t kk = p.flip ? g.K[d] - 1 - k : k;
      int64_t q = pos[d] * p.stride[d] + kk * p.kernel_dilation[d] - p.pad_lo[d];
      int64_t id = p.input_dilation[d];
      od[d][k] = (q < 0 || q >= g.in_d[d] || q % id != 0) ? -1 : (q / id) * g.in_stride[d];
    }
  }
  int64_t k1n = g.D > 1 ? g.K[1] : 1, k2n = g.D > 2 ? g.K[2] : 1;
  int64_t kpos = 0;
  for (int64_t k0 = 0; k0 < g.K[0]; ++k0) {
    for (int64_t k1 = 0; k1 < k1n; ++k1) {
      for (int64_t k2 = 0; k2 < k2n; ++k2, ++kpos) {
        int64_t o0 = od[0][k0], o1 = g.D > 1 ? od[1][k1] : 0, o2 = g.D > 2 ? od[2][k2] : 0;
        offs[kpos] = (o0 < 0 || o1 < 0 || o2 < 0) ? -1 : n * g.in_batch + o0 + o1 + o2;
      }
    }
  }
}

// Writes column-matrix row `row` (length G * KC) to dst; offs has room for
// Kprod + K[0] + K[1] + K[2] entries.
template <class T, class A>
void build_row(const T* x, A* dst, int64_t row, const Geometry& g, const ConvParams& p, int64_t* offs) {
  kernel_offsets(row, g, p, offs + g.Kprod, offs);
  for (int64_t kpos = 0; kpos < g.Kprod; ++kpos) {
    for (int64_t gi = 0; gi < g.G; ++gi) {
      A* dd = dst + gi * g.KC + kpos * g.Cg;
      if (offs[kpos] < 0) {
        std::memset(dd, 0, sizeof(A) * g.Cg);
        continue;
      }
      const T* src = x + offs[kpos] + gi * g.Cg;
      if constexpr (std::is_same_v<T, A>) {
        std::memcpy(dd, src, sizeof(A) * g.Cg);
      } else {
        for (int64_t c = 0; c < g.Cg; ++c) dd[c] = static_cast<A>(src[c]);
      }
    }
  }
}

// Grouped convolutions have narrow per-group products (with 4 groups of a
// 32 -> 64 conv, each is rows x 16 x 72): BLAS spends more on packing than
// on arithmetic, and building the column matrix costs more memory traffic
// than the products. This register-blocked kernel reads the inputs in place
// (implicit GEMM): for a tile of output rows it takes, per kernel position,
// a pointer to each row's Cg input channels (a zero run where the input is
// padding), and computes
//   out[r, g*Og + o] = sum_{kpos, c} src[r][kpos][g*goff + c] * wt[g][kpos*Cg + c][o]
// with the weights pre-transposed to wt[g][KC][Ogp] (Og padded with zeros
// to whole vectors). kMR rows x up to 2 vectors of accumulators stay in
// registers; each step loads the weight vectors once for all the rows.
template <class A>
struct SmallGemm {
  static constexpr int kW = 32 / sizeof(A);  // lanes of one vector
  typedef A V __attribute__((vector_size(32)));
  static constexpr int kMR = 6;

  static bool applies(const Geometry& g) { return g.G > 1 && g.Og <= 4 * kW; }
  static int64_t padded(const Geometry& g) { return (g.Og + kW - 1) / kW * kW; }

  // src: MR rows of Kprod pointers each (already offset to the group).
  template <int MR, int NR>
  static void tile(const A* const* src, const Geometry& g, const A* wt, int64_t ogp, A* out, int64_t ncols) {
    V acc[MR][NR];
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) acc[r][j] = V{};
    for (int64_t kp = 0; kp < g.Kprod; ++kp) {
      const A* s[MR];
      for (int r = 0; r < MR; ++r) s[r] = src[r * g.Kprod + kp];
      const A* w = wt + kp * g.Cg * ogp;
      for (int64_t c = 0; c < g.Cg; ++c) {
        V b[NR];
        for (int j = 0; j < NR; ++j) std::memcpy(&b[j], w + c * ogp + j * kW, sizeof(V));
        for (int r = 0; r < MR; ++r) {
          V a = s[r][c] - V{};  // a broadcast (x - +0 is x for every x; x + 0 is not, for -0)
          for (int j = 0; j < NR; ++j) acc[r][j] += a * b[j];
        }
      }
    }
    for (int r = 0; r < MR; ++r) {
      if (ncols == NR * kW) {  // whole vectors: fixed-size stores (a variable memcpy is a slow `rep movs`)
        std::memcpy(out + r * g.O, acc[r], sizeof(acc[r]));
        continue;
      }
      for (int64_t i = 0; i < ncols; ++i) out[r * g.O + i] = acc[r][i / kW][i % kW];
    }
  }

  template <int NR>
  static void columns(int64_t mr, const A* const* src, const Geometry& g, const A* wt, int64_t ogp, A* out,
                      int64_t n) {
    if (mr == kMR) return tile<kMR, NR>(src, g, wt, ogp, out, n);
    for (int64_t r = 0; r < mr; ++r) tile<1, NR>(src + r * g.Kprod, g, wt, ogp, out + r * g.O, n);
  }

  // rows x (G * Og) outputs from ptr (rows x Kprod pointers to group 0;
  // group gi starts goff elements further on).
  static void run(int64_t rows, const A** ptr, int64_t goff, const A* wt, const Geometry& g, int64_t ogp, A* out) {
    std::vector<const A*> src(static_cast<size_t>(kMR * g.Kprod));  // a tile's pointers for one group
    for (int64_t r0 = 0; r0 < rows; r0 += kMR) {
      const int64_t mr = std::min<int64_t>(kMR, rows - r0);
      for (int64_t gi = 0; gi < g.G; ++gi) {
        for (int64_t i = 0; i < mr * g.Kprod; ++i) src[i] = ptr[r0 * g.Kprod + i] + gi * goff;
        const A* const* sp = src.data();
        const A* w = wt + gi * g.KC * ogp;
        for (int64_t o0 = 0; o0 < g.Og; o0 += 2 * kW) {
          A* dst = out + r0 * g.O + gi * g.Og + o0;
          const int64_t n = std::min<int64_t>(2 * kW, g.Og - o0);
          if (n > kW) columns<2>(mr, sp, g, w + o0, ogp, dst, n);
          else columns<1>(mr, sp, g, w + o0, ogp, dst, n);
        }
      }
    }
  }

  // wt[g][k][o] from w[g*Og + o][k], zero-padded to ogp columns.
  static std::vector<A> transpose_weights(const A* w, const Geometry& g, int64_t ogp) {
    std::vector<A> wt(static_cast<size_t>(g.G * g.KC * ogp), A(0));
    for (int64_t gi = 0; gi < g.G; ++gi)
      for (int64_t o = 0; o < g.Og; ++o)
        for (int64_t k = 0; k < g.KC; ++k) wt[(gi * g.KC + k) * ogp + o] = w[(gi * g.Og + o) * g.KC + k];
    return wt;
  }
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
  for (int d = 0; d < g.D; ++d) {
    g.S[d] = xs[d + 1];
    g.K[d] = ws[d + 1];
    g.OS[d] = os[d + 1];
    g.in_d[d] = g.S[d] > 0 ? (g.S[d] - 1) * p.input_dilation[d] + 1 : 0;
    g.Kprod *= g.K[d];
    g.OSprod *= g.OS[d];
  }
  g.KC = g.Kprod * g.Cg;
  g.rows = g.N * g.OSprod;
  int64_t st = g.C;
  for (int d = g.D - 1; d >= 0; --d) {
    g.in_stride[d] = st;
    st *= g.S[d];
  }
  g.in_batch = st;
  return g;
}

array dense(const array& a) {
  if (a.row_contiguous()) return a;
  array d = array::empty_evaluated(a.shape(), a.dtype());
  copy_to_dense(a, d.raw_data());
  return d;
}

template <class T>
void conv_impl(const array& xin, const array& win, array& out, const ConvParams& p) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  Geometry g = make_geometry(xin.shape(), win.shape(), out.shape(), p);
  T* o = out.data<T>();
  if (g.KC == 0) {
    std::memset(static_cast<void*>(o), 0, out.nbytes());
    return;
  }
  array x = dense(xin), w = win;
  std::vector<A> wconv;
  const A* wp;
  if constexpr (std::is_same_v<T, A>) {
    w = dense(win);
    wp = w.data<A>();
  } else {
    std::vector<T> tmp(win.size());
    copy_to_dense(win, tmp.data());
    wconv.resize(win.size());
    for (size_t i = 0; i < tmp.size(); ++i) wconv[i] = static_cast<A>(static_cast<float>(tmp[i]));
    wp = wconv.data();
  }
  const T* xp = x.data<T>();
  const int64_t row_len = g.G * g.KC;
  cpu::SingleThreadedBlas single;

  // pointwise, unstrided, unpadded, one group: the input already is the column matrix
  bool direct = g.Kprod == 1 && g.G == 1;
  for (int d = 0; d < g.D; ++d) {
    direct = direct && p.stride[d] == 1 && p.pad_lo[d] == 0 && p.pad_hi[d] == 0 && p.input_dilation[d] == 1;
  }
  if constexpr (std::is_same_v<T, A>) {
    if (direct) {
      int64_t grain = std::max<int64_t>(64, kBlockElems / std::max<int64_t>(g.C, 1));
      cpu::parallel_for(g.rows, std::min(grain, g.rows), [&](int64_t r0, int64_t r1) {
        gemm<A>(r1 - r0, g.O, g.C, xp + r0 * g.C, g.C, wp, g.C, o + r0 * g.O, g.O);
      });
      return;
    }
  }
  // Narrow groups go through SmallGemm (see there), reading float32/float64
  // inputs in place; the rest through column blocks and BLAS.
  const bool small = SmallGemm<A>::applies(g);
  const int64_t ogp = SmallGemm<A>::padded(g);
  const std::vector<A> wt = small ? SmallGemm<A>::transpose_weights(wp, g, ogp) : std::vector<A>();
  const std::vector<A> zeros(static_cast<size_t>(small ? g.C : 0), A(0));  // what padding reads
  constexpr bool in_place = std::is_same_v<T, A>;
  const int64_t R = std::clamp<int64_t>(kBlockElems / row_len, 16, 1024);
  const int64_t blocks = (g.rows + R - 1) / R;
  cpu::parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    const int64_t rmax = std::min(R, g.rows);
    std::vector<A> col(static_cast<size_t>(small && in_place ? 0 : rmax * row_len));
    std::vector<const A*> ptr(static_cast<size_t>(small ? rmax * g.Kprod : 0));
    std::vector<int64_t> offs(g.Kprod + g.K[0] + g.K[1] + g.K[2]);
    std::vector<A> tmp;
    if constexpr (!in_place) tmp.resize(static_cast<size_t>(R * g.O));
    for (int64_t blk = b0; blk < b1; ++blk) {
      int64_t r0 = blk * R, rb = std::min(R, g.rows - r0);
      A* dst;
      if constexpr (in_place) {
        dst = o + r0 * g.O;
      } else {
        dst = tmp.data();
      }
      if (small && in_place) {
        for (int64_t r = 0; r < rb; ++r) {
          kernel_offsets(r0 + r, g, p, offs.data() + g.Kprod, offs.data());
          for (int64_t kp = 0; kp < g.Kprod; ++kp) {
            ptr[r * g.Kprod + kp] = offs[kp] < 0 ? zeros.data() : reinterpret_cast<const A*>(xp) + offs[kp];
          }
        }
        SmallGemm<A>::run(rb, ptr.data(), g.Cg, wt.data(), g, ogp, dst);
      } else {
        for (int64_t r = 0; r < rb; ++r) build_row<T, A>(xp, col.data() + r * row_len, r0 + r, g, p, offs.data());
        if (small) {
          for (int64_t r = 0; r < rb; ++r) {
            for (int64_t kp = 0; kp < g.Kprod; ++kp) ptr[r * g.Kprod + kp] = col.data() + r * row_len + kp * g.Cg;
          }
          SmallGemm<A>::run(rb, ptr.data(), g.KC, wt.data(), g, ogp, dst);
        } else {
          for (int64_t gi = 0; gi < g.G; ++gi) {
            gemm<A>(rb, g.Og, g.KC, col.data() + gi * g.KC, row_len, wp + gi * g.Og * g.KC, g.KC, dst + gi * g.Og,
                    g.O);
          }
        }
      }
      if constexpr (!in_place) {
        T* ob = o + r0 * g.O;
        for (int64_t i = 0; i < rb * g.O; ++i) ob[i] = cpu::convert<T>(tmp[i]);
      }
    }
  });
}

// dW_g[Og, KC] = sum over row blocks of ct_g[rows, Og]^T @ col_g[rows, KC];
// each task sums its blocks into its own accumulator, then adds it to the
// total under a lock.
template <class T>
void weight_grad_impl(const array& xin, const array& ctin, array& out, const ConvParams& p) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  Geometry g = make_geometry(xin.shape(), out.shape(), ctin.shape(), p);
  T* o = out.data<T>();
  if (g.rows == 0 || g.KC == 0 || g.Og == 0) {
    std::memset(static_cast<void*>(o), 0, out.nbytes());
    return;
  }
  array x = dense(xin), ct = dense(ctin);
  const T* xp = x.data<T>();
  const T* cp = ct.data<T>();
  const int64_t row_len = g.G * g.KC;
  const int64_t R = std::clamp<int64_t>(kBlockElems / row_len, 64, 4096);
  const int64_t blocks = (g.rows + R - 1) / R;
  std::vector<A> total(static_cast<size_t>(out.size()), A(0));
  std::mutex mu;
  cpu::SingleThreadedBlas single;
  cpu::parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<A> col(static_cast<size_t>(std::min(R, g.rows) * row_len));
    std::vector<A> acc(static_cast<size_t>(out.size()), A(0));
    std::vector<int64_t> offs(g.Kprod + g.K[0] + g.K[1] + g.K[2]);
    std::vector<A> cbuf;
    if constexpr (!std::is_same_v<T, A>) cbuf.resize(static_cast<size_t>(R * g.O));
    for (int64_t blk = b0; blk < b1; ++blk) {
      int64_t r0 = blk * R, rb = std::min(R, g.rows - r0);
      for (int64_t r = 0; r < rb; ++r) build_row<T, A>(xp, col.data() + r * row_len, r0 + r, g, p, offs.data());
      const A* cblk;
      if constexpr (std::is_same_v<T, A>) {
        cblk = cp + r0 * g.O;
      } else {
        const T* src = cp + r0 * g.O;
        for (int64_t i = 0; i < rb * g.O; ++i) cbuf[i] = static_cast<A>(static_cast<float>(src[i]));
        cblk = cbuf.data();
      }
      for (int64_t gi = 0; gi < g.G; ++gi) {
        const A* a = cblk + gi * g.Og;
        const A* b = col.data() + gi * g.KC;
        A* c = acc.data() + gi * g.Og * g.KC;
        if constexpr (std::is_same_v<A, float>) {
          scipy_cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, g.Og, g.KC, rb, 1.0f, a, g.O, b, row_len, 1.0f,
                            c, g.KC);
        } else {
          scipy_cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, g.Og, g.KC, rb, 1.0, a, g.O, b, row_len, 1.0,
                            c, g.KC);
        }
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < acc.size(); ++i) total[i] += acc[i];
  });
  for (int64_t i = 0; i < out.size(); ++i) o[i] = cpu::convert<T>(total[i]);
}

}  // namespace

namespace {
// The two conv kernels run on float32/float64 and half types (the op layer
// rejects the rest).
template <class F>
void run_floating(const char* name, array& out, F&& f) {
  out.alloc();
  if (out.size() == 0) return;
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || is_half_v<T>) {
      f(T{});
    } else {
      cpu::unsupported(name, out.dtype());
    }
  });
}
}  // namespace

void conv_eval(const ConvGeneral& prim, const std::vector<array>& inputs, std::vector<array>& outputs) {
  run_floating("ConvGeneral", outputs[0], [&](auto t) {
    conv_impl<decltype(t)>(inputs[0], inputs[1], outputs[0], prim.params());
  });
}

void conv_weight_grad_eval(const ConvWeightGrad& prim, const std::vector<array>& inputs, std::vector<array>& outputs) {
  run_floating("ConvWeightGrad", outputs[0], [&](auto t) {
    weight_grad_impl<decltype(t)>(inputs[0], inputs[1], outputs[0], prim.params());
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
