// Matmul: float32/float64/complex64 through OpenBLAS. Operands whose
// matrices are row- or column-major (any leading dimension, any batch
// strides, broadcast included) are passed as they are with the matching
// transpose flag; others are copied once. Work is split across cores by
// Ember's pool (whole products of a batch, or row/column blocks of one
// product) with OpenBLAS single-threaded inside. Integer and bool matmul use
// a plain loop; half types are converted to float32 tile by tile. Compiled
// once per ISA level (backend/cpu/isa.h): the conversions and the integer
// loop vectorize for the level.

#include "ember/backend/cpu/isa_unit.h"

#include "ember/backend/cpu/kernel_utils.h"
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

// Half-precision operands: tiles of kTileK columns of A and rows of B are
// converted to float32 and accumulated by sgemm into a float32 product,
// rounded to the output type once. Memory stays O(M * kTileK + kTileK * N +
// M * N) per product instead of float32 copies of both operands.
constexpr int64_t kTileK = 256;

template <class T>
void half_gemm(const T* a, bool ta, int64_t lda, const T* b, bool tb, int64_t ldb, T* c, int64_t ldc, int64_t M,
               int64_t N, int64_t K) {
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
  // each tile keeps its operand's layout (a transposed operand stays
  // transposed, read along its rows), so every conversion reads memory in
  // order and sgemm takes the transpose flag
  std::vector<float> ta_buf, tb_buf, acc(M * N, 0.0f);
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
                      ta_buf.data(), ta ? M : kb, tb_buf.data(), tb ? kb : N, 1.0f, acc.data(), N);
  }
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) c[i * ldc + j] = T(acc[i * N + j]);
}

// One product C (M x N, leading dim ldc) = op(A) op(B) on the calling thread.
template <class T>
void gemm(const T* a, bool ta, int64_t lda, const T* b, bool tb, int64_t ldb, T* c, int64_t ldc, int64_t M,
          int64_t N, int64_t K) {
  auto fa = ta ? CblasTrans : CblasNoTrans, fb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    scipy_cblas_sgemm(CblasRowMajor, fa, fb, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
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

constexpr int64_t kParallelFlops = int64_t(1) << 21;  // below: one thread

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
  cpu::SingleThreadedBlas single;
  const double flops = 2.0 * M * N * K;
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = A.arr.data<T>();
    const T* pb = B.arr.data<T>();
    T* pc = out.data<T>();
    if (batch > 1) {  // whole products per chunk
      int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kParallelFlops / flops));
      cpu::parallel_for(batch, grain, [&](int64_t b0, int64_t b1) {
        for (int64_t i = b0; i < b1; ++i)
          gemm(pa + A.offsets[i], A.trans, A.ld, pb + B.offsets[i], B.trans, B.ld, pc + i * M * N, N, M, N, K);
      });
      return;
    }
    // one product: split the rows of C (or its columns when there are few rows)
    const T* a = pa + A.offsets[0];
    const T* b = pb + B.offsets[0];
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
