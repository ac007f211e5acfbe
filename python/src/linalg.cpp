// The `linalg` submodule (ember/ops/lapack.h) with MLX's argument names.
// LAPACK-backed functions run on the CPU (MLX requires stream=cpu for them;
// Ember accepts any stream argument and runs them on the CPU).
#include "bindings.h"
#include "ember/ops/lapack.h"

namespace ember::py_bind {

namespace {

linalg::NormOrd to_ord(py::handle ord) {
  if (ord.is_none()) return std::nullopt;
  if (py::isinstance<py::str>(ord)) return linalg::NormOrd(ord.cast<std::string>());
  if (py::isinstance<py::bool_>(ord) || !(py::isinstance<py::int_>(ord) || py::isinstance<py::float_>(ord)))
    throw py::type_error("[linalg::norm] ord must be None, a number or a string.");
  return linalg::NormOrd(ord.cast<double>());
}
}  // namespace

void init_linalg(py::module_& parent) {
  auto m = parent.def_submodule("linalg", "Linear algebra: norms, inverses, solves and factorizations (LAPACK).");

  m.def("norm", [](const ArrayLike& a, py::handle ord, const AxesArg& axis, bool keepdims, StreamOrDevice s) {
        return linalg::norm(a, to_ord(ord), axis, keepdims, s);
      }, "a"_a, py::pos_only(), "ord"_a = py::none(), "axis"_a = py::none(), "keepdims"_a = false, py::kw_only(),
      kStream,
      "Matrix or vector norm. With axis=None and ord=None: the 2-norm of the flattened array; otherwise a 1-D "
      "input (or one axis) gives vector norms (ord: None/2, inf, -inf, 0, 1, -1, any p) and a 2-D input (or two "
      "axes) matrix norms (ord: None/'fro', 'nuc', inf, -inf, 1, -1, 2, -2).");
  m.def("inv", [](const ArrayLike& a, StreamOrDevice s) { return linalg::inv(a, s); }, "a"_a,
        py::kw_only(), kStream, "Inverse of each square matrix (last two axes); raises if one is singular.");
  m.def("tri_inv", [](const ArrayLike& a, bool upper, StreamOrDevice s) {
        return linalg::tri_inv(a, upper, s);
      }, "a"_a, "upper"_a = false, py::kw_only(), kStream,
      "Inverse of the lower (or upper) triangle of each square matrix; the other triangle of the result is zero.");
  m.def("pinv", [](const ArrayLike& a, StreamOrDevice s) { return linalg::pinv(a, s); }, "a"_a,
        py::kw_only(), kStream,
        "Moore-Penrose pseudo-inverse through the SVD (singular values below max(M, N) * eps * s_max dropped).");
  m.def("solve", [](const ArrayLike& a, const ArrayLike& b, StreamOrDevice s) {
        return linalg::solve(a, b, s);
      }, "a"_a, "b"_a, py::kw_only(), kStream,
      "Solves a @ x = b for square a; b is a vector (n,) or matrices (..., n, k), batch axes broadcast.");
  m.def("solve_triangular", [](const ArrayLike& a, const ArrayLike& b, bool upper, StreamOrDevice s) {
        return linalg::solve_triangular(a, b, upper, s);
      }, "a"_a, "b"_a, py::kw_only(), "upper"_a = false, kStream,
      "Solves tri(a) @ x = b with the lower (or upper) triangle of a.");
  m.def("cholesky", [](const ArrayLike& a, bool upper, StreamOrDevice s) {
        return linalg::cholesky(a, upper, s);
      }, "a"_a, "upper"_a = false, py::kw_only(), kStream,
      "Cholesky factor L (A = L L^T) or U (A = U^T U) of symmetric positive-definite matrices, read from that "
      "triangle; raises if a matrix is not positive definite.");
  m.def("cholesky_inv", [](const ArrayLike& a, bool upper, StreamOrDevice s) {
        return linalg::cholesky_inv(a, upper, s);
      }, "a"_a, "upper"_a = false, py::kw_only(), kStream,
      "Inverse of A given its Cholesky factor (lower L, or upper U when upper=True).");
  m.def("qr", [](const ArrayLike& a, StreamOrDevice s) {
        return linalg::qr(a, s);
      }, "a"_a, py::kw_only(), kStream, "Reduced QR factorization: Q (M, K) orthonormal, R (K, N) upper, K = min(M, N).");
  m.def("svd", [](const ArrayLike& a, bool compute_uv, StreamOrDevice s) -> py::object {
        auto r = linalg::svd(a, compute_uv, s);
        if (!compute_uv) return py::cast(r[0]);
        return as_tuple(r);
      }, "a"_a, "compute_uv"_a = true, py::kw_only(), kStream,
      "Singular value decomposition A = U diag(S) Vt with full U (M, M) and Vt (N, N), S descending; only S when "
      "compute_uv=False.");
  m.def("eig", [](const ArrayLike& a, StreamOrDevice s) {
        return linalg::eig(a, s);
      }, "a"_a, py::kw_only(), kStream,
      "Eigenvalues and right eigenvectors (columns) of general square matrices, as complex64.");
  m.def("eigvals", [](const ArrayLike& a, StreamOrDevice s) { return linalg::eigvals(a, s); },
        "a"_a, py::kw_only(), kStream, "Eigenvalues of general square matrices, as complex64.");
  m.def("eigh", [](const ArrayLike& a, const std::string& uplo, StreamOrDevice s) {
        return linalg::eigh(a, uplo, s);
      }, "a"_a, "UPLO"_a = "L", py::kw_only(), kStream,
      "Eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric matrices, read from the "
      "lower ('L') or upper ('U') triangle.");
  m.def("eigvalsh", [](const ArrayLike& a, const std::string& uplo, StreamOrDevice s) {
        return linalg::eigvalsh(a, uplo, s);
      }, "a"_a, "UPLO"_a = "L", py::kw_only(), kStream, "Eigenvalues (ascending) of symmetric matrices.");
  m.def("lu", [](const ArrayLike& a, StreamOrDevice s) { return as_tuple(linalg::lu(a, s)); },
        "a"_a, py::kw_only(), kStream,
        "LU factorization with partial pivoting: P (uint32 row indices), L (M, K) unit lower, U (K, N) upper, "
        "with A = L[P] @ U.");
  m.def("lu_factor", [](const ArrayLike& a, StreamOrDevice s) {
        return linalg::lu_factor(a, s);
      }, "a"_a, py::kw_only(), kStream,
      "LAPACK's packed LU factors (L below the diagonal, U on and above) and the 0-based row swaps (uint32).");
  m.def("det", [](const ArrayLike& a, StreamOrDevice s) { return linalg::det(a, s); }, "a"_a,
        py::kw_only(), kStream, "Determinant of each square matrix (integer inputs give float32).");
  m.def("slogdet", [](const ArrayLike& a, StreamOrDevice s) {
        return linalg::slogdet(a, s);
      }, "a"_a, py::kw_only(), kStream,
      "Sign and log of the absolute determinant (sign 0 and -inf for singular matrices).");
  m.def("cross", [](const ArrayLike& a, const ArrayLike& b, int axis, StreamOrDevice s) {
        auto [x, y] = promote(a, b);
        return linalg::cross(x, y, axis, s);
      }, "a"_a, "b"_a, "axis"_a = -1, py::kw_only(), kStream,
      "Cross product of 3-vectors (2-vectors get a zero third component) along an axis, broadcasting.");
}

}  // namespace ember::py_bind
