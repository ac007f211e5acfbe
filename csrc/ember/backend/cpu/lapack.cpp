// LAPACK kernels of the Lapack primitive: each matrix of the batch is copied
// to a dense row-major scratch buffer, factored in place by LAPACKE (row-major
// layout) and written to the dense outputs. The batch is split across the
// thread pool; a failure (singular matrix, no convergence) is recorded per
// matrix and raised after the batch as a ValueError naming the op. Shapes
// were validated by the op layer, so LAPACK never sees an invalid argument.
#include <complex>
// complex LAPACKE arguments as std::complex (same layout as LAPACK's)
#define LAPACK_COMPLEX_CUSTOM
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/threadpool.h"
#include "ember/primitives/lapack.h"

namespace ember {

namespace {

constexpr int RM = LAPACK_ROW_MAJOR;
using li = lapack_int;

// float / double overloads of the LAPACKE drivers used here.
li getrf(li m, li n, float* a, li* p) { return scipy_LAPACKE_sgetrf(RM, m, n, a, std::max<li>(n, 1), p); }
li getrf(li m, li n, double* a, li* p) { return scipy_LAPACKE_dgetrf(RM, m, n, a, std::max<li>(n, 1), p); }
li gesv(li n, li k, float* a, li* p, float* b) {
  return scipy_LAPACKE_sgesv(RM, n, k, a, std::max<li>(n, 1), p, b, std::max<li>(k, 1));
}
li gesv(li n, li k, double* a, li* p, double* b) {
  return scipy_LAPACKE_dgesv(RM, n, k, a, std::max<li>(n, 1), p, b, std::max<li>(k, 1));
}
li trtrs(char u, li n, li k, const float* a, float* b) {
  return scipy_LAPACKE_strtrs(RM, u, 'N', 'N', n, k, a, std::max<li>(n, 1), b, std::max<li>(k, 1));
}
li trtrs(char u, li n, li k, const double* a, double* b) {
  return scipy_LAPACKE_dtrtrs(RM, u, 'N', 'N', n, k, a, std::max<li>(n, 1), b, std::max<li>(k, 1));
}
li geqrf(li m, li n, float* a, float* tau) { return scipy_LAPACKE_sgeqrf(RM, m, n, a, std::max<li>(n, 1), tau); }
li geqrf(li m, li n, double* a, double* tau) { return scipy_LAPACKE_dgeqrf(RM, m, n, a, std::max<li>(n, 1), tau); }
li orgqr(li m, li n, li k, float* a, li lda, const float* tau) {
  return scipy_LAPACKE_sorgqr(RM, m, n, k, a, lda, tau);
}
li orgqr(li m, li n, li k, double* a, li lda, const double* tau) {
  return scipy_LAPACKE_dorgqr(RM, m, n, k, a, lda, tau);
}
// SVD of the row-major m x n A through LAPACK column-major on A^T (n x m):
// A^T = U' S V'^T, so A's row-major Vt is U' and its U is V'^T as stored.
li gesdd(char job, li m, li n, float* a, float* s, float* u, float* vt) {
  return scipy_LAPACKE_sgesdd(LAPACK_COL_MAJOR, job, n, m, a, std::max<li>(n, 1), s, vt, std::max<li>(n, 1), u,
                              std::max<li>(m, 1));
}
li gesdd(char job, li m, li n, double* a, double* s, double* u, double* vt) {
  return scipy_LAPACKE_dgesdd(LAPACK_COL_MAJOR, job, n, m, a, std::max<li>(n, 1), s, vt, std::max<li>(n, 1), u,
                              std::max<li>(m, 1));
}
li syevd(char job, char u, li n, float* a, float* w) {
  return scipy_LAPACKE_ssyevd(RM, job, u, n, a, std::max<li>(n, 1), w);
}
li syevd(char job, char u, li n, double* a, double* w) {
  return scipy_LAPACKE_dsyevd(RM, job, u, n, a, std::max<li>(n, 1), w);
}
li geev(char jv, li n, float* a, float* wr, float* wi, float* vr) {
  float dummy = 0;
  return scipy_LAPACKE_sgeev(RM, 'N', jv, n, a, std::max<li>(n, 1), wr, wi, &dummy, 1, vr, std::max<li>(n, 1));
}
li geev(char jv, li n, double* a, double* wr, double* wi, double* vr) {
  double dummy = 0;
  return scipy_LAPACKE_dgeev(RM, 'N', jv, n, a, std::max<li>(n, 1), wr, wi, &dummy, 1, vr, std::max<li>(n, 1));
}

// Column-major calls on the row-major buffer, which LAPACK then sees as the
// transpose: no LAPACKE transposition or scratch allocation (what dominates
// small matrices). Used where the transpose gives the answer directly:
// det(A^T) = det(A); inv(A^T) stored column-major is inv(A) row-major; the
// lower triangle row-major is the upper one column-major (Cholesky factor
// and triangular inverse with the triangle flipped).
constexpr int CM = LAPACK_COL_MAJOR;
li getrf_t(li n, float* a, li* p) { return scipy_LAPACKE_sgetrf(CM, n, n, a, std::max<li>(n, 1), p); }
li getrf_t(li n, double* a, li* p) { return scipy_LAPACKE_dgetrf(CM, n, n, a, std::max<li>(n, 1), p); }
li gesv_t(li n, float* a, li* p, float* b) {
  return scipy_LAPACKE_sgesv(CM, n, n, a, std::max<li>(n, 1), p, b, std::max<li>(n, 1));
}
li gesv_t(li n, double* a, li* p, double* b) {
  return scipy_LAPACKE_dgesv(CM, n, n, a, std::max<li>(n, 1), p, b, std::max<li>(n, 1));
}
li potrf_t(char u, li n, float* a) { return scipy_LAPACKE_spotrf(CM, u, n, a, std::max<li>(n, 1)); }
li potrf_t(char u, li n, double* a) { return scipy_LAPACKE_dpotrf(CM, u, n, a, std::max<li>(n, 1)); }
li trtri_t(char u, li n, float* a) { return scipy_LAPACKE_strtri(CM, u, 'N', n, a, std::max<li>(n, 1)); }
li trtri_t(char u, li n, double* a) { return scipy_LAPACKE_dtrtri(CM, u, 'N', n, a, std::max<li>(n, 1)); }

// Zeroes the triangle of the row-major n x n matrix that `upper` does not keep.
template <class T>
void keep_triangle(T* a, int64_t n, bool upper) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (upper ? j < i : j > i) a[i * n + j] = T(0);
}

const char* op_name(Lapack::Kind k) {
  switch (k) {
    case Lapack::Inv: return "linalg::inv";
    case Lapack::TriInv: return "linalg::tri_inv";
    case Lapack::Solve: return "linalg::solve";
    case Lapack::SolveTri: return "linalg::solve_triangular";
    case Lapack::Cholesky: return "linalg::cholesky";
    case Lapack::QR: return "linalg::qr";
    case Lapack::SVD:
    case Lapack::SVDVals: return "linalg::svd";
    case Lapack::Eigh:
    case Lapack::EigvalsH: return "linalg::eigh";
    default: return "linalg::eig";
  }
}

// info < 0 can only mean a NaN input here (LAPACKE checks for NaN before
// calling LAPACK; every other argument was validated by the op layer).
[[noreturn]] void raise_failure(Lapack::Kind k, int64_t info) {
  if (info < 0) throw std::invalid_argument(std::string("[") + op_name(k) + "] The input contains NaN.");
  switch (k) {
    case Lapack::Inv: throw std::invalid_argument("[linalg::inv] Matrix is singular.");
    case Lapack::TriInv: throw std::invalid_argument("[linalg::tri_inv] Matrix is singular.");
    case Lapack::Solve: throw std::invalid_argument("[linalg::solve] Matrix is singular.");
    case Lapack::SolveTri: throw std::invalid_argument("[linalg::solve_triangular] Matrix is singular.");
    case Lapack::Cholesky:
      throw std::invalid_argument("[linalg::cholesky] Matrix is not positive definite (leading minor of order " +
                                  std::to_string(info) + ").");
    case Lapack::SVD:
    case Lapack::SVDVals: throw std::invalid_argument("[linalg::svd] The SVD did not converge.");
    case Lapack::Eigh:
    case Lapack::EigvalsH: throw std::invalid_argument("[linalg::eigh] The eigensolver did not converge.");
    default: throw std::invalid_argument("[linalg::eig] The eigensolver did not converge.");
  }
}

template <class T>
void run(Lapack::Kind kind, bool upper, const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  const int64_t m = a.shape(-2), n = a.shape(-1), K = std::min(m, n);
  const int64_t batch = m * n == 0 ? [&] {
    int64_t b = 1;
    for (int i = 0; i + 2 < a.ndim(); ++i) b *= a.shape(i);
    return b;
  }()
                                   : a.size() / (m * n);
  for (auto& o : outputs) o.alloc();
  if (batch == 0) return;
  // dense row-major copies of the inputs (LAPACK works in place on them)
  std::vector<T> A(static_cast<size_t>(a.size()));
  if (a.size()) cpu::copy_to_dense(a, A.data());
  std::vector<T> B;
  int64_t k = 0;
  if (kind == Lapack::Solve || kind == Lapack::SolveTri) {
    k = inputs[1].shape(-1);
    B.resize(static_cast<size_t>(inputs[1].size()));
    if (!B.empty()) cpu::copy_to_dense(inputs[1], B.data());
  }
  const char uplo = upper ? 'U' : 'L';
  std::atomic<int64_t> failed{-1};
  std::atomic<int64_t> fail_info{0};
  auto record = [&](li info) {
    if (info != 0) {
      int64_t expect = -1;
      failed.compare_exchange_strong(expect, 1);
      fail_info.store(info);
    }
  };
  const int64_t work = std::max<int64_t>(1, m * n * std::max(m, n));
  const int64_t grain = std::max<int64_t>(1, 200000 / work);
  cpu::parallel_for(batch, grain, [&](int64_t lo, int64_t hi) {
    std::vector<li> piv(static_cast<size_t>(std::max<int64_t>(K, 1)));
    std::vector<T> scratch;
    for (int64_t b = lo; b < hi; ++b) {
      T* x = A.data() + b * m * n;
      switch (kind) {
        case Lapack::Inv: {
          T* o = outputs[0].data<T>() + b * n * n;
          if (n == 0) break;
          // solve A X = I (as NumPy): more accurate than getri's in-place inverse
          for (int64_t i = 0; i < n * n; ++i) o[i] = T(i % (n + 1) == 0);
          record(gesv_t(n, x, piv.data(), o));
          break;
        }
        case Lapack::TriInv:
        case Lapack::Cholesky: {
          T* o = outputs[0].data<T>() + b * n * n;
          if (n == 0) break;
          keep_triangle(x, n, upper);
          const char flipped = upper ? 'L' : 'U';
          record(kind == Lapack::TriInv ? trtri_t(flipped, n, x) : potrf_t(flipped, n, x));
          keep_triangle(x, n, upper);
          std::memcpy(o, x, sizeof(T) * n * n);
          break;
        }
        case Lapack::Det:
        case Lapack::SlogDet: {
          li info = n ? getrf_t(n, x, piv.data()) : 0;
          double sign = 1, logabs = 0;
          T det = 1;
          if (info < 0) {  // NaN input: NaN results, as NumPy
            sign = logabs = NAN;
            det = static_cast<T>(NAN);
          } else if (info > 0) {
            sign = 0;
            logabs = -INFINITY;
            det = 0;
          } else {
            for (int64_t i = 0; i < n; ++i) {
              T d = x[i * n + i];
              det *= d;
              if (piv[i] != i + 1) sign = -sign, det = -det;
              if (d < 0) sign = -sign;
              logabs += std::log(std::abs(static_cast<double>(d)));
            }
          }
          if (kind == Lapack::Det) {
            outputs[0].data<T>()[b] = det;
          } else {
            outputs[0].data<T>()[b] = static_cast<T>(sign);
            outputs[1].data<T>()[b] = static_cast<T>(logabs);
          }
          break;
        }
        case Lapack::Solve:
        case Lapack::SolveTri: {
          T* rhs = B.data() + b * n * k;
          if (n == 0 || k == 0) break;
          if (kind == Lapack::Solve) {
            record(gesv(n, k, x, piv.data(), rhs));
          } else {
            // trtrs reports an exactly zero diagonal; check it first (it is
            // the only singular case of a triangular matrix)
            li info = 0;
            for (int64_t i = 0; i < n && !info; ++i)
              if (x[i * n + i] == T(0)) info = static_cast<li>(i + 1);
            record(info ? info : trtrs(uplo, n, k, x, rhs));
          }
          std::memcpy(outputs[0].data<T>() + b * n * k, rhs, sizeof(T) * n * k);
          break;
        }
        case Lapack::QR: {
          T* q = outputs[0].data<T>() + b * m * K;
          T* r = outputs[1].data<T>() + b * K * n;
          if (K == 0) break;
          scratch.resize(static_cast<size_t>(K));
          record(geqrf(m, n, x, scratch.data()));
          for (int64_t i = 0; i < K; ++i)
            for (int64_t j = 0; j < n; ++j) r[i * n + j] = j >= i ? x[i * n + j] : T(0);
          // Q from the first K columns of the reflectors (row-major lda = n)
          std::vector<T> qk(static_cast<size_t>(m * K));
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < K; ++j) qk[i * K + j] = x[i * n + j];
          record(orgqr(m, K, K, qk.data(), K, scratch.data()));
          std::memcpy(q, qk.data(), sizeof(T) * m * K);
          break;
        }
        case Lapack::SVD:
        case Lapack::SVDVals: {
          bool uv = kind == Lapack::SVD;
          T* s = outputs[uv ? 1 : 0].data<T>() + b * K;
          T* u = uv ? outputs[0].data<T>() + b * m * m : nullptr;
          T* vt = uv ? outputs[2].data<T>() + b * n * n : nullptr;
          if (K == 0) {
            // an empty matrix: U and V are identities
            if (uv) {
              for (int64_t i = 0; i < m * m; ++i) u[i] = T(i % (m + 1) == 0);
              for (int64_t i = 0; i < n * n; ++i) vt[i] = T(i % (n + 1) == 0);
            }
            break;
          }
          T du = 0, dv = 0;
          record(gesdd(uv ? 'A' : 'N', m, n, x, s, uv ? u : &du, uv ? vt : &dv));
          break;
        }
        case Lapack::Eigh:
        case Lapack::EigvalsH: {
          bool vec = kind == Lapack::Eigh;
          T* w = outputs[0].data<T>() + b * n;
          if (n == 0) break;
          record(syevd(vec ? 'V' : 'N', uplo, n, x, w));
          if (vec) std::memcpy(outputs[1].data<T>() + b * n * n, x, sizeof(T) * n * n);
          break;
        }
        case Lapack::Eig:
        case Lapack::Eigvals: {
          bool vec = kind == Lapack::Eig;
          using C = std::complex<float>;
          C* w = outputs[0].data<C>() + b * n;
          if (n == 0) break;
          scratch.assign(static_cast<size_t>(2 * n + (vec ? n * n : 1)), T(0));
          T *wr = scratch.data(), *wi = wr + n, *vr = wi + n;
          record(geev(vec ? 'V' : 'N', n, x, wr, wi, vr));
          for (int64_t i = 0; i < n; ++i) w[i] = C(static_cast<float>(wr[i]), static_cast<float>(wi[i]));
          if (vec) {
            // a complex pair (wi[j] > 0) stores v_j = vr[:,j] + i vr[:,j+1], v_{j+1} its conjugate
            C* v = outputs[1].data<C>() + b * n * n;
            for (int64_t j = 0; j < n; ++j) {
              if (wi[j] != T(0) && j + 1 < n) {
                for (int64_t i = 0; i < n; ++i) {
                  float re = static_cast<float>(vr[i * n + j]), im = static_cast<float>(vr[i * n + j + 1]);
                  v[i * n + j] = C(re, im);
                  v[i * n + j + 1] = C(re, -im);
                }
                ++j;
              } else {
                for (int64_t i = 0; i < n; ++i) v[i * n + j] = C(static_cast<float>(vr[i * n + j]), 0.f);
              }
            }
          }
          break;
        }
        case Lapack::LUFactor:
        case Lapack::LU: {
          if (K == 0) break;
          // info > 0 (singular U) is a valid factorization; info < 0 (NaN
          // input) leaves the NaNs in place with no row swaps
          if (getrf(m, n, x, piv.data()) < 0)
            for (int64_t i = 0; i < K; ++i) piv[i] = static_cast<li>(i + 1);
          if (kind == Lapack::LUFactor) {
            std::memcpy(outputs[0].data<T>() + b * m * n, x, sizeof(T) * m * n);
            uint32_t* p = outputs[1].data<uint32_t>() + b * K;
            for (int64_t i = 0; i < K; ++i) p[i] = static_cast<uint32_t>(piv[i] - 1);
          } else {
            // perm: the rows of A in the order of L @ U; P is its inverse
            std::vector<int64_t> perm(static_cast<size_t>(m));
            std::iota(perm.begin(), perm.end(), 0);
            for (int64_t i = 0; i < K; ++i) std::swap(perm[i], perm[piv[i] - 1]);
            uint32_t* p = outputs[0].data<uint32_t>() + b * m;
            for (int64_t i = 0; i < m; ++i) p[perm[i]] = static_cast<uint32_t>(i);
            T* l = outputs[1].data<T>() + b * m * K;
            T* u = outputs[2].data<T>() + b * K * n;
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < K; ++j) l[i * K + j] = j < i ? x[i * n + j] : T(j == i);
            for (int64_t i = 0; i < K; ++i)
              for (int64_t j = 0; j < n; ++j) u[i * n + j] = j >= i ? x[i * n + j] : T(0);
          }
          break;
        }
      }
    }
  });
  // empty LU/LUFactor/LU outputs with K == 0 still need their P (identity)
  if ((kind == Lapack::LU) && K == 0) {
    uint32_t* p = outputs[0].data<uint32_t>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < m; ++i) p[b * m + i] = static_cast<uint32_t>(i);
  }
  if (failed.load() >= 0) raise_failure(kind, fail_info.load());
}

// complex64 inputs: SVD / SVDVals / Eigh / EigvalsH / Eig / Eigvals (the op
// layer admits complex64 to no other kind); singular and eigenvalues of
// Hermitian matrices are float32.
void run_complex(Lapack::Kind kind, bool upper, const array& a, std::vector<array>& outputs) {
  using C = std::complex<float>;
  const int64_t m = a.shape(-2), n = a.shape(-1), K = std::min(m, n);
  int64_t batch = 1;
  for (int i = 0; i + 2 < a.ndim(); ++i) batch *= a.shape(i);
  for (auto& o : outputs) o.alloc();
  if (batch == 0) return;
  std::vector<C> A(static_cast<size_t>(a.size()));
  if (a.size()) cpu::copy_to_dense(a, A.data());
  std::atomic<int64_t> fail_info{0};
  const int64_t work = std::max<int64_t>(1, m * n * std::max(m, n));
  cpu::parallel_for(batch, std::max<int64_t>(1, 50000 / work), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      C* x = A.data() + b * m * n;
      li info = 0;
      switch (kind) {
        case Lapack::SVD:
        case Lapack::SVDVals: {
          bool uv = kind == Lapack::SVD;
          float* s = outputs[uv ? 1 : 0].data<float>() + b * K;
          C* u = uv ? outputs[0].data<C>() + b * m * m : nullptr;
          C* vt = uv ? outputs[2].data<C>() + b * n * n : nullptr;
          if (K == 0) {
            if (uv) {
              for (int64_t i = 0; i < m * m; ++i) u[i] = C(i % (m + 1) == 0 ? 1.f : 0.f);
              for (int64_t i = 0; i < n * n; ++i) vt[i] = C(i % (n + 1) == 0 ? 1.f : 0.f);
            }
            break;
          }
          C du, dv;
          info = scipy_LAPACKE_cgesdd(RM, uv ? 'A' : 'N', m, n, x, std::max<li>(n, 1), s, uv ? u : &du,
                                      std::max<li>(m, 1), uv ? vt : &dv, std::max<li>(n, 1));
          break;
        }
        case Lapack::Eigh:
        case Lapack::EigvalsH: {
          bool vec = kind == Lapack::Eigh;
          if (n == 0) break;
          info = scipy_LAPACKE_cheevd(RM, vec ? 'V' : 'N', upper ? 'U' : 'L', n, x, std::max<li>(n, 1),
                                      outputs[0].data<float>() + b * n);
          if (vec) std::memcpy(outputs[1].data<C>() + b * n * n, x, sizeof(C) * n * n);
          break;
        }
        default: {  // Eig, Eigvals
          bool vec = kind == Lapack::Eig;
          if (n == 0) break;
          C dummy;
          info = scipy_LAPACKE_cgeev(RM, 'N', vec ? 'V' : 'N', n, x, std::max<li>(n, 1),
                                     outputs[0].data<C>() + b * n, &dummy, 1,
                                     vec ? outputs[1].data<C>() + b * n * n : &dummy, std::max<li>(n, 1));
          break;
        }
      }
      if (info != 0) fail_info.store(info);
    }
  });
  if (fail_info.load() != 0) raise_failure(kind, fail_info.load());
}

}  // namespace

void Lapack::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (inputs[0].dtype() == Dtype::complex64)
    run_complex(kind_, upper_, inputs[0], outputs);
  else if (inputs[0].dtype() == Dtype::float64)
    run<double>(kind_, upper_, inputs, outputs);
  else
    run<float>(kind_, upper_, inputs, outputs);
}

}  // namespace ember
