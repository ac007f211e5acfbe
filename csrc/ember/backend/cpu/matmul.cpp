// Matmul: float32/float64/complex64 through OpenBLAS (operands that are
// row- or column-major are passed with the matching transpose flag, others
// are copied once); integer and bool matmul with a blocked loop.
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/threadpool.h"
#include "ember/primitives/linalg.h"

namespace ember {

namespace {

// A matrix operand of the batch: pointer to batch item b, leading dim and
// whether it is stored transposed. Operands whose last two dims are neither
// row- nor column-major are made dense first.
struct MatView {
  array arr;
  bool trans = false;
  int64_t ld = 0;
  int64_t batch_stride = 0;  // elements
};

MatView prepare(const array& a) {
  int nd = a.ndim();
  int64_t rows = a.shape(-2), cols = a.shape(-1);
  const Strides& st = a.strides();
  // batch dims must be dense: matrix b starts b * rows * cols elements in
  auto batch_ok = [&](const array& x) {
    int64_t expect = rows * cols;
    for (int i = nd - 3; i >= 0; --i) {
      if (x.shape()[i] != 1 && x.strides()[i] != expect) return false;
      expect *= x.shape()[i];
    }
    return true;
  };
  MatView v;
  if ((st[nd - 1] == 1 || cols == 1) && (st[nd - 2] == cols || rows == 1) && batch_ok(a)) {
    v.arr = a;
    v.trans = false;
    v.ld = std::max<int64_t>(cols, 1);
  } else if ((st[nd - 2] == 1 || rows == 1) && (st[nd - 1] == rows || cols == 1) && batch_ok(a)) {
    v.arr = a;
    v.trans = true;
    v.ld = std::max<int64_t>(rows, 1);
  } else {
    array d = array::empty_evaluated(a.shape(), a.dtype());
    copy_to_dense(a, d.raw_data());
    v.arr = d;
    v.ld = std::max<int64_t>(cols, 1);
  }
  v.batch_stride = rows * cols;
  return v;
}

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
  MatView A = prepare(inputs[0]), B = prepare(inputs[1]);
  auto ta = A.trans ? CblasTrans : CblasNoTrans, tb = B.trans ? CblasTrans : CblasNoTrans;
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = A.arr.data<T>();
    const T* pb = B.arr.data<T>();
    T* pc = out.data<T>();
    for (int64_t i = 0; i < batch; ++i) {
      const T* a = pa + i * A.batch_stride;
      const T* b = pb + i * B.batch_stride;
      T* c = pc + i * M * N;
      if constexpr (std::is_same_v<T, float>) {
        scipy_cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, a, A.ld, b, B.ld, 0.0f, c, N);
      } else if constexpr (std::is_same_v<T, double>) {
        scipy_cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, a, A.ld, b, B.ld, 0.0, c, N);
      } else if constexpr (is_complex_v<T>) {
        const T one(1, 0), zero(0, 0);
        scipy_cblas_cgemm(CblasRowMajor, ta, tb, M, N, K, &one, a, A.ld, b, B.ld, &zero, c, N);
      } else if constexpr (is_half_v<T>) {
        cpu::unsupported("Matmul", out.dtype());  // the op computes half types in float32
      } else {
        naive_gemm(a, A.trans, A.ld, b, B.trans, B.ld, c, M, N, K);
      }
    }
  });
}

}  // namespace ember
