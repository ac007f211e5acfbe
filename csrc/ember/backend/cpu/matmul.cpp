// Matmul: float32/float64/complex64 through OpenBLAS. Operands whose
// matrices are row- or column-major (any leading dimension, any batch
// strides, broadcast included) are passed as they are with the matching
// transpose flag; others are copied once. An evenly strided batch is one
// *gemm_batch_strided call. Integer and bool matmul use a plain loop.
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/threadpool.h"
#include "ember/primitives/linalg.h"

namespace ember {

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

// The constant step of offsets, or -1 when they are not evenly spaced.
int64_t uniform_step(const std::vector<int64_t>& offs) {
  if (offs.size() < 2) return 0;
  int64_t step = offs[1] - offs[0];
  for (size_t i = 2; i < offs.size(); ++i)
    if (offs[i] - offs[i - 1] != step) return -1;
  return step;
}

// OpenBLAS's own threads cost more than they give on small products (and
// stall badly when the cores are busy): run those on the calling thread.
// (The setting is global to the library; Ember's evaluations, the only
// callers, run one at a time.)
struct BlasThreads {
  int prev = -1;
  explicit BlasThreads(int64_t flops) {
    if (flops < (int64_t(1) << 25)) {
      prev = scipy_openblas_get_num_threads();
      if (prev > 1) scipy_openblas_set_num_threads(1);
      else prev = -1;
    }
  }
  ~BlasThreads() {
    if (prev > 1) scipy_openblas_set_num_threads(prev);
  }
};

template <class T>
void naive_gemm(const T* a, bool ta, int64_t lda, const T* b, bool tb, int64_t ldb, T* c, int64_t M, int64_t N,
                int64_t K) {
  using C = std::conditional_t<std::is_same_v<T, bool>, int32_t, compute_t<T>>;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      C acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        T x = ta ? a[k * lda + i] : a[i * lda + k];
        T y = tb ? b[j * ldb + k] : b[k * ldb + j];
        acc += static_cast<C>(x) * static_cast<C>(y);
      }
      c[i * N + j] = static_cast<T>(acc);
    }
  }
}

// Half-precision operands: tiles of kTileK columns of A and rows of B are
// converted to float32 and accumulated by sgemm into a float32 product,
// rounded to the output type once. Memory stays O(M * kTileK + kTileK * N +
// M * N) per product instead of float32 copies of both operands.
constexpr int64_t kTileK = 256;

template <class T>
void half_gemm(const T* a, bool ta, int64_t lda, const T* b, bool tb, int64_t ldb, T* c, int64_t M, int64_t N,
               int64_t K, std::vector<float>& ta_buf, std::vector<float>& tb_buf, std::vector<float>& acc) {
  acc.assign(M * N, 0.0f);
  for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
    const int64_t kb = std::min(kTileK, K - k0);
    ta_buf.resize(M * kb);
    tb_buf.resize(kb * N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < kb; ++k)
        ta_buf[i * kb + k] = static_cast<float>(ta ? a[(k0 + k) * lda + i] : a[i * lda + k0 + k]);
    for (int64_t k = 0; k < kb; ++k)
      for (int64_t j = 0; j < N; ++j)
        tb_buf[k * N + j] = static_cast<float>(tb ? b[j * ldb + k0 + k] : b[(k0 + k) * ldb + j]);
    scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, kb, 1.0f, ta_buf.data(), kb, tb_buf.data(),
                      N, 1.0f, acc.data(), N);
  }
  for (int64_t i = 0; i < M * N; ++i) c[i] = T(acc[i]);
}

}  // namespace

void Matmul::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
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
  auto ta = A.trans ? CblasTrans : CblasNoTrans, tb = B.trans ? CblasTrans : CblasNoTrans;
  const int64_t sa = uniform_step(A.offsets), sb = uniform_step(B.offsets);
  const bool strided = batch > 1 && sa >= 0 && sb >= 0 && !is_complex(out.dtype());
  BlasThreads threads(2 * M * N * K * (strided ? batch : 1));
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = A.arr.data<T>();
    const T* pb = B.arr.data<T>();
    T* pc = out.data<T>();
    // one call for the whole batch (OpenBLAS splits it across threads); its
    // complex variant gives wrong results in this build, so complex loops
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (strided) {
        if constexpr (std::is_same_v<T, float>) {
          scipy_cblas_sgemm_batch_strided(CblasRowMajor, ta, tb, M, N, K, 1.0f, pa, A.ld, sa, pb, B.ld, sb, 0.0f, pc,
                                          N, M * N, batch);
        } else {
          scipy_cblas_dgemm_batch_strided(CblasRowMajor, ta, tb, M, N, K, 1.0, pa, A.ld, sa, pb, B.ld, sb, 0.0, pc,
                                          N, M * N, batch);
        }
        return;
      }
    }
    std::vector<float> ta_buf, tb_buf, acc;  // half types' float32 tiles
    for (int64_t i = 0; i < batch; ++i) {
      const T* a = pa + A.offsets[i];
      const T* b = pb + B.offsets[i];
      T* c = pc + i * M * N;
      if constexpr (std::is_same_v<T, float>) {
        scipy_cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, a, A.ld, b, B.ld, 0.0f, c, N);
      } else if constexpr (std::is_same_v<T, double>) {
        scipy_cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, a, A.ld, b, B.ld, 0.0, c, N);
      } else if constexpr (is_complex_v<T>) {
        const T one(1, 0), zero(0, 0);
        scipy_cblas_cgemm(CblasRowMajor, ta, tb, M, N, K, &one, a, A.ld, b, B.ld, &zero, c, N);
      } else if constexpr (is_half_v<T>) {
        half_gemm(a, A.trans, A.ld, b, B.trans, B.ld, c, M, N, K, ta_buf, tb_buf, acc);
      } else {
        naive_gemm(a, A.trans, A.ld, b, B.trans, B.ld, c, M, N, K);
      }
    }
  });
}

}  // namespace ember
