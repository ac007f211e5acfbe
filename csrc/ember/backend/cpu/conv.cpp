// ConvGeneral on the CPU: blocked im2col + BLAS for every configuration.
// The output rows (n, output position) are taken in blocks of bounded size;
// for each block the column matrix col[r][g][kernel position][c] (zeros where
// the dilated, padded input has no element) is built in parallel, then one
// GEMM per group multiplies it with that group's weights:
//   out[rows, g*Og:(g+1)*Og] = col_g[rows, K*Cg] @ w_g[Og, K*Cg]^T.
// Strides, padding (negative included), kernel and input dilation and flip
// only change which input element a column entry reads. float32/float64 go
// through OpenBLAS directly; float16/bfloat16 are converted to float32 while
// the columns are built and the GEMM result is converted back per block.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/threadpool.h"
#include "ember/primitives/conv.h"

namespace ember {

namespace {

constexpr int64_t kColBudget = int64_t(1) << 22;  // elements of one column block

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

// Builds rows [r0, r0 + R) of the column matrix (row length G * KC).
template <class T, class A>
void build_cols(const T* x, A* col, int64_t r0, int64_t R, const Geometry& g, const ConvParams& p) {
  const int64_t row_len = g.G * g.KC;
  int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(row_len, 1));
  cpu::parallel_for(R, grain, [&](int64_t b, int64_t e) {
    // per dim: input offset (elements) of each kernel index, or -1
    std::vector<int64_t> offs(g.K[0] + g.K[1] + g.K[2]);
    int64_t* od[3] = {offs.data(), offs.data() + g.K[0], offs.data() + g.K[0] + g.K[1]};
    for (int64_t r = b; r < e; ++r) {
      int64_t row = r0 + r;
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
          if (q < 0 || q >= g.in_d[d] || q % id != 0) {
            od[d][k] = -1;
          } else {
            od[d][k] = (q / id) * g.in_stride[d];
          }
        }
      }
      for (int d = g.D; d < 3; ++d) od[d] = nullptr;
      const T* xb = x + n * g.in_batch;
      A* dst = col + r * row_len;
      int64_t k0n = g.K[0], k1n = g.D > 1 ? g.K[1] : 1, k2n = g.D > 2 ? g.K[2] : 1;
      int64_t kpos = 0;
      for (int64_t k0 = 0; k0 < k0n; ++k0) {
        for (int64_t k1 = 0; k1 < k1n; ++k1) {
          for (int64_t k2 = 0; k2 < k2n; ++k2, ++kpos) {
            int64_t o0 = od[0][k0];
            int64_t o1 = g.D > 1 ? od[1][k1] : 0;
            int64_t o2 = g.D > 2 ? od[2][k2] : 0;
            bool valid = o0 >= 0 && o1 >= 0 && o2 >= 0;
            for (int64_t gi = 0; gi < g.G; ++gi) {
              A* dd = dst + gi * g.KC + kpos * g.Cg;
              if (!valid) {
                std::memset(dd, 0, sizeof(A) * g.Cg);
                continue;
              }
              const T* src = xb + o0 + o1 + o2 + gi * g.Cg;
              if constexpr (std::is_same_v<T, A>) {
                std::memcpy(dd, src, sizeof(A) * g.Cg);
              } else {
                for (int64_t c = 0; c < g.Cg; ++c) dd[c] = static_cast<A>(src[c]);
              }
            }
          }
        }
      }
    }
  });
}

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
  // dense operands
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

  // pointwise, unstrided, unpadded, one group: the input already is the column matrix
  bool direct = g.Kprod == 1 && g.G == 1;
  for (int d = 0; d < g.D; ++d) {
    direct = direct && p.stride[d] == 1 && p.pad_lo[d] == 0 && p.pad_hi[d] == 0 && p.input_dilation[d] == 1;
  }
  if constexpr (std::is_same_v<T, A>) {
    if (direct) {
      gemm<A>(g.rows, g.O, g.C, xp, g.C, wp, g.C, o, g.O);
      return;
    }
  }

  const int64_t row_len = g.G * g.KC;
  int64_t R = std::max<int64_t>(16, kColBudget / row_len);
  R = std::min(R, g.rows);
  std::vector<A> col(static_cast<size_t>(R * row_len));
  std::vector<A> tmp;
  if constexpr (!std::is_same_v<T, A>) tmp.resize(static_cast<size_t>(R * g.O));
  for (int64_t r0 = 0; r0 < g.rows; r0 += R) {
    int64_t rb = std::min(R, g.rows - r0);
    build_cols<T, A>(xp, col.data(), r0, rb, g, p);
    A* dst;
    if constexpr (std::is_same_v<T, A>) {
      dst = o + r0 * g.O;
    } else {
      dst = tmp.data();
    }
    for (int64_t gi = 0; gi < g.G; ++gi) {
      gemm<A>(rb, g.Og, g.KC, col.data() + gi * g.KC, row_len, wp + gi * g.Og * g.KC, g.KC, dst + gi * g.Og, g.O);
    }
    if constexpr (!std::is_same_v<T, A>) {
      T* ob = o + r0 * g.O;
      const A* src = tmp.data();
      cpu::parallel_for(rb * g.O, 65536, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) ob[i] = cpu::convert<T>(src[i]);
      });
    }
  }
}


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
  int64_t R = std::max<int64_t>(64, kColBudget / row_len);
  R = std::min(R, g.rows);
  std::vector<A> col(static_cast<size_t>(R * row_len));
  std::vector<A> acc, cbuf;
  A* dw;
  if constexpr (std::is_same_v<T, A>) {
    dw = o;
  } else {
    acc.resize(static_cast<size_t>(out.size()));
    cbuf.resize(static_cast<size_t>(R * g.O));
    dw = acc.data();
  }
  for (int64_t r0 = 0; r0 < g.rows; r0 += R) {
    int64_t rb = std::min(R, g.rows - r0);
    build_cols<T, A>(xp, col.data(), r0, rb, g, p);
    const A* cblk;
    if constexpr (std::is_same_v<T, A>) {
      cblk = cp + r0 * g.O;
    } else {
      const T* src = cp + r0 * g.O;
      for (int64_t i = 0; i < rb * g.O; ++i) cbuf[i] = static_cast<A>(static_cast<float>(src[i]));
      cblk = cbuf.data();
    }
    A beta = r0 == 0 ? A(0) : A(1);
    for (int64_t gi = 0; gi < g.G; ++gi) {
      const A* a = cblk + gi * g.Og;
      const A* b = col.data() + gi * g.KC;
      A* c = dw + gi * g.Og * g.KC;
      if constexpr (std::is_same_v<A, float>) {
        scipy_cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, g.Og, g.KC, rb, 1.0f, a, g.O, b, row_len, beta, c,
                          g.KC);
      } else {
        scipy_cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, g.Og, g.KC, rb, 1.0, a, g.O, b, row_len, beta, c,
                          g.KC);
      }
    }
  }
  if constexpr (!std::is_same_v<T, A>) {
    for (int64_t i = 0; i < out.size(); ++i) o[i] = cpu::convert<T>(acc[i]);
  }
}

}  // namespace

void ConvGeneral::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  out.alloc();
  if (out.size() == 0) return;
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || is_half_v<T>) {
      conv_impl<T>(inputs[0], inputs[1], out, p_);
    } else {
      cpu::unsupported("ConvGeneral", out.dtype());
    }
  });
}

void ConvWeightGrad::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  out.alloc();
  if (out.size() == 0) return;
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || is_half_v<T>) {
      weight_grad_impl<T>(inputs[0], inputs[1], out, p_);
    } else {
      cpu::unsupported("ConvWeightGrad", out.dtype());
    }
  });
}

}  // namespace ember
