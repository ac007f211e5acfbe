// ember::linalg ops: validate (errors name the op as MLX does), cast,
// broadcast, then build a Lapack node (primitives/lapack.h) or compose public
// ops (norm, cross, pinv, cholesky_inv, ...).
#include "ember/ops/lapack.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ember/ops/common.h"
#include "ember/primitives/lapack.h"

namespace ember::linalg {

using detail::fail;

namespace {

using K = Lapack::Kind;


void check_matrix(const char* op, const array& a) {
  if (a.ndim() < 2)
    fail(op, "Arrays must have >= 2 dimensions. Received array with ", a.ndim(), " dimensions.");
  // LAPACK's indices are 32-bit
  if (a.shape(-1) > INT32_MAX || a.shape(-2) > INT32_MAX)
    fail(op, "Matrix dimensions must be below 2^31; received shape ", shape_str(a.shape()), ".");
}
void check_square(const char* op, const array& a) {
  if (a.shape(-1) != a.shape(-2))
    fail(op, "Only defined for square matrices; received shape ", shape_str(a.shape()), ".");
}
// LAPACK ops: float32 / float64, and complex64 where MLX accepts it.
void check_float(const char* op, const array& a, bool allow_complex = false) {
  if (a.dtype() == Dtype::float32 || a.dtype() == Dtype::float64) return;
  if (allow_complex && a.dtype() == Dtype::complex64) return;
  fail(op, "Arrays must have type float32 or float64", allow_complex ? " or complex64" : "",
       ". Received array with type ", dtype_name(a.dtype()), ".");
}
void check_lapack(const char* op, const array& a, bool square, bool allow_complex = false) {
  check_float(op, a, allow_complex);
  check_matrix(op, a);
  if (square) check_square(op, a);
}
bool upper_from_uplo(const char* op, const std::string& uplo) {
  if (uplo != "L" && uplo != "U") fail(op, "UPLO must be 'L' or 'U'; got '", uplo, "'.");
  return uplo == "U";
}
// det/slogdet: integers and bool compute in float32, half types in float32 and cast back
std::pair<array, Dtype> det_input(const char* op, const array& a, Stream s) {
  if (is_complex(a.dtype())) fail(op, "Complex inputs are not supported.");
  check_matrix(op, a);
  check_square(op, a);
  Dtype out = is_floating(a.dtype()) ? a.dtype() : Dtype::float32;
  Dtype work = out == Dtype::float64 ? Dtype::float64 : Dtype::float32;
  return {astype(a, work, s), out};
}
// shape of the leading (batch) axes
Shape lead_of(const array& a) { return Shape(a.shape().begin(), a.shape().end() - 2); }
Shape broadcast_lead(const char* op, const array& a, const array& b) {
  Shape x = lead_of(a), y = lead_of(b);
  size_t n = std::max(x.size(), y.size());
  Shape r(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t u = i < n - x.size() ? 1 : x[i - (n - x.size())];
    int64_t v = i < n - y.size() ? 1 : y[i - (n - y.size())];
    if (u != v && u != 1 && v != 1)
      fail(op, "Batch shapes of ", shape_str(a.shape()), " and ", shape_str(b.shape()), " do not broadcast.");
    r[i] = u == 1 ? v : u;
  }
  return r;
}
Shape with_tail(Shape lead, int64_t r, int64_t c) {
  lead.push_back(r);
  lead.push_back(c);
  return lead;
}

// Shared by solve and solve_triangular: b is a vector (n) or matrices (..., n, k).
array solve_impl(const char* op, K kind, bool upper, const array& a, const array& b, Stream s) {
  check_matrix(op, a);
  check_square(op, a);
  if (b.ndim() < 1) fail(op, "The second input must have >= 1 dimensions; received a scalar.");
  // as MLX: the matrix must be float32/float64; b promotes with it (an
  // integer or half b is solved in a's type), unless that gives a complex
  auto ok = [](Dtype d) { return d == Dtype::float32 || d == Dtype::float64; };
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (!ok(a.dtype()) || !ok(t))
    fail(op, "Arrays must have type float32 or float64. Received arrays with types ", dtype_name(a.dtype()), " and ",
         dtype_name(b.dtype()), ".");
  bool vec = b.ndim() == 1;
  int64_t n = a.shape(-1);
  if ((vec ? b.shape(0) : b.shape(-2)) != n)
    fail(op, "Last dimension of first input with shape ", shape_str(a.shape()),
         " must match second to last dimension of second input with shape ", shape_str(b.shape()), ".");
  array bm = vec ? expand_dims(b, {-1}, s) : b;
  if (bm.shape(-1) > INT32_MAX) fail(op, "Too many right-hand sides: shape ", shape_str(b.shape()), ".");
  Shape lead = broadcast_lead(op, a, bm);
  array A = broadcast_to(astype(a, t, s), with_tail(lead, n, n), s);
  array B = broadcast_to(astype(bm, t, s), with_tail(lead, n, bm.shape(-1)), s);
  array x = lapack_node(kind, upper, {A, B}, s)[0];
  return vec ? squeeze(x, Axes{-1}, s) : x;
}

}  // namespace

// ---- inverses and solves ----

array inv(const array& a, const StreamOrDevice& sd) {
  check_lapack("linalg::inv", a, true);
  return lapack_node(K::Inv, false, {a}, to_stream(sd))[0];
}

array tri_inv(const array& a, bool upper, const StreamOrDevice& sd) {
  check_lapack("linalg::tri_inv", a, true);
  return lapack_node(K::TriInv, upper, {a}, to_stream(sd))[0];
}

array solve(const array& a, const array& b, const StreamOrDevice& sd) {
  return solve_impl("linalg::solve", K::Solve, false, a, b, to_stream(sd));
}

array solve_triangular(const array& a, const array& b, bool upper, const StreamOrDevice& sd) {
  return solve_impl("linalg::solve_triangular", K::SolveTri, upper, a, b, to_stream(sd));
}

array cholesky(const array& a, bool upper, const StreamOrDevice& sd) {
  check_lapack("linalg::cholesky", a, true);
  return lapack_node(K::Cholesky, upper, {a}, to_stream(sd))[0];
}

array cholesky_inv(const array& a, bool upper, const StreamOrDevice& sd) {
  check_lapack("linalg::cholesky_inv", a, true);
  Stream s = to_stream(sd);
  array Li = tri_inv(a, upper, s);
  // A = L L^T -> A^-1 = L^-T L^-1 ; A = U^T U -> A^-1 = U^-1 U^-T
  return upper ? matmul(Li, matrix_transpose(Li, s), s) : matmul(matrix_transpose(Li, s), Li, s);
}

array pinv(const array& a, const StreamOrDevice& sd) {
  check_lapack("linalg::pinv", a, false);
  Stream s = to_stream(sd);
  int64_t m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  Shape out_shape = with_tail(lead_of(a), n, m);
  if (k == 0) return zeros(out_shape, a.dtype(), s);
  auto usv = svd(a, true, s);
  Shape st(a.ndim(), 0), step(a.ndim(), 1);
  Shape u_stop = usv[0].shape(), v_stop = usv[2].shape();
  u_stop.back() = k;
  v_stop[a.ndim() - 2] = k;
  array Uk = slice(usv[0], st, u_stop, step, s), Vtk = slice(usv[2], st, v_stop, step, s), S = usv[1];
  double eps = a.dtype() == Dtype::float64 ? std::numeric_limits<double>::epsilon()
                                           : std::numeric_limits<float>::epsilon();
  array cutoff = multiply(max(S, Axes{-1}, true, s), array(eps * static_cast<double>(std::max(m, n)), a.dtype()), s);
  array keep = greater(S, cutoff, s);
  array Sinv = where(keep, reciprocal(where(keep, S, ones({}, a.dtype(), s), s), s), zeros({}, a.dtype(), s), s);
  return matmul(matrix_transpose(Vtk, s), multiply(expand_dims(Sinv, {-1}, s), matrix_transpose(Uk, s), s), s);
}

// ---- factorizations ----

std::pair<array, array> qr(const array& a, const StreamOrDevice& sd) {
  check_lapack("linalg::qr", a, false);
  auto o = lapack_node(K::QR, false, {a}, to_stream(sd));
  return {o[0], o[1]};
}

std::vector<array> svd(const array& a, bool compute_uv, const StreamOrDevice& sd) {
  check_lapack("linalg::svd", a, false, true);
  return lapack_node(compute_uv ? K::SVD : K::SVDVals, false, {a}, to_stream(sd));
}

std::pair<array, array> eig(const array& a, const StreamOrDevice& sd) {
  check_lapack("linalg::eig", a, true, true);
  auto o = lapack_node(K::Eig, false, {a}, to_stream(sd));
  return {o[0], o[1]};
}

array eigvals(const array& a, const StreamOrDevice& sd) {
  check_lapack("linalg::eigvals", a, true, true);
  return lapack_node(K::Eigvals, false, {a}, to_stream(sd))[0];
}

std::pair<array, array> eigh(const array& a, const std::string& uplo, const StreamOrDevice& sd) {
  check_lapack("linalg::eigh", a, true, true);
  auto o = lapack_node(K::Eigh, upper_from_uplo("linalg::eigh", uplo), {a}, to_stream(sd));
  return {o[0], o[1]};
}

array eigvalsh(const array& a, const std::string& uplo, const StreamOrDevice& sd) {
  check_lapack("linalg::eigvalsh", a, true, true);
  return lapack_node(K::EigvalsH, upper_from_uplo("linalg::eigvalsh", uplo), {a}, to_stream(sd))[0];
}

std::vector<array> lu(const array& a, const StreamOrDevice& sd) {
  check_lapack("linalg::lu", a, false);
  return lapack_node(K::LU, false, {a}, to_stream(sd));
}

std::pair<array, array> lu_factor(const array& a, const StreamOrDevice& sd) {
  check_lapack("linalg::lu_factor", a, false);
  auto o = lapack_node(K::LUFactor, false, {a}, to_stream(sd));
  return {o[0], o[1]};
}

array det(const array& a, const StreamOrDevice& sd) {
  Stream s = to_stream(sd);
  auto [x, out] = det_input("linalg::det", a, s);
  return astype(lapack_node(K::Det, false, {x}, s)[0], out, s);
}

std::pair<array, array> slogdet(const array& a, const StreamOrDevice& sd) {
  Stream s = to_stream(sd);
  auto [x, out] = det_input("linalg::slogdet", a, s);
  auto o = lapack_node(K::SlogDet, false, {x}, s);
  return {astype(o[0], out, s), astype(o[1], out, s)};
}

// ---- cross product ----

array cross(const array& a, const array& b, int axis, const StreamOrDevice& sd) {
  const char* op = "linalg::cross";
  Stream s = to_stream(sd);
  if (a.ndim() < 1 || b.ndim() < 1) fail(op, "Inputs must have >= 1 dimensions; received scalars.");
  int ax_a = normalize_axis(axis, a.ndim(), op), ax_b = normalize_axis(axis, b.ndim(), op);
  int64_t na = a.shape(ax_a), nb = b.shape(ax_b);
  if ((na != 2 && na != 3) || (nb != 2 && nb != 3))
    fail(op, "The input arrays must have size 2 or 3 along the axis; got shapes ", shape_str(a.shape()), " and ",
         shape_str(b.shape()), " with axis ", axis, ".");
  Dtype t = promote_types(a.dtype(), b.dtype());
  // move the axis last, pad 2-vectors with a zero third component
  auto prep = [&](const array& x, int ax) {
    array y = moveaxis(astype(x, t, s), ax, -1, s);
    if (y.shape(-1) == 2) {
      std::vector<std::pair<int64_t, int64_t>> w(y.ndim(), {0, 0});
      w.back() = {0, 1};
      y = pad(y, w, "constant", zeros({}, t, s), s);
    }
    return y;
  };
  array x = prep(a, ax_a), y = prep(b, ax_b);
  auto xs = split(x, 3, -1, s), ys = split(y, 3, -1, s);
  array c0 = subtract(multiply(xs[1], ys[2], s), multiply(xs[2], ys[1], s), s);
  array c1 = subtract(multiply(xs[2], ys[0], s), multiply(xs[0], ys[2], s), s);
  array c2 = subtract(multiply(xs[0], ys[1], s), multiply(xs[1], ys[0], s), s);
  array c = concatenate({c0, c1, c2}, -1, s);
  return moveaxis(c, -1, axis < 0 ? axis : std::min<int>(axis, c.ndim() - 1), s);
}

// ---- norms ----

namespace {

array vector_norm(const array& x, const std::optional<double>& ord, int ax, Stream s) {
  // x: real magnitudes (abs already taken)
  Axes axes{ax};
  if (!ord || *ord == 2.0) return sqrt(sum(multiply(x, x, s), axes, false, s), s);
  double p = *ord;
  if (std::isinf(p)) return p > 0 ? max(x, axes, false, s) : min(x, axes, false, s);
  if (p == 0) return astype(sum(not_equal(x, zeros({}, x.dtype(), s), s), axes, false, s), x.dtype(), s);
  if (p == 1) return sum(x, axes, false, s);
  array pw = array(p, x.dtype());
  return power(sum(power(x, pw, s), axes, false, s), reciprocal(pw, s), s);
}

array singular_values(const array& x, int r, int c, Stream s) {
  array y = moveaxis(moveaxis(x, r, -1, s), c > r ? c - 1 : c, -1, s);  // (..., cols, rows) order irrelevant
  if (is_complex(y.dtype())) return svd(y, false, s)[0];  // float32
  Dtype t = y.dtype() == Dtype::float64 ? Dtype::float64 : Dtype::float32;
  return astype(svd(astype(y, t, s), false, s)[0], x.dtype(), s);
}

}  // namespace

array norm(const array& a, const NormOrd& ord, std::optional<Axes> axis, bool keepdims, const StreamOrDevice& sd) {
  const char* op = "linalg::norm";
  Stream s = to_stream(sd);
  Dtype real_t = is_floating(a.dtype()) ? a.dtype() : Dtype::float32;
  array x = is_complex(a.dtype()) ? abs(a, s) : abs(astype(a, real_t, s), s);
  if (!axis && !ord) {
    array r = sqrt(sum(multiply(x, x, s), std::nullopt, false, s), s);
    return keepdims ? reshape(r, Shape(a.ndim(), 1), s) : r;
  }
  Axes ax;
  if (axis) {
    for (int v : *axis) ax.push_back(normalize_axis(v, a.ndim(), op));
  } else {
    if (a.ndim() > 2 || a.ndim() < 1) fail(op, "Received too many axes for norm.");
    for (int i = 0; i < a.ndim(); ++i) ax.push_back(i);
  }
  if (ax.empty() || ax.size() > 2) fail(op, "Received too many axes for norm.");
  if (ax.size() == 2 && ax[0] == ax[1]) fail(op, "Duplicate axes given ", ax[0], ".");
  array r;
  if (ax.size() == 1) {
    std::optional<double> p;
    if (ord) {
      if (std::holds_alternative<std::string>(*ord))
        fail(op, "Norm '", std::get<std::string>(*ord), "' only supported for matrices, but received 1 axis/axes.");
      p = std::get<double>(*ord);
    }
    r = vector_norm(x, p, ax[0], s);
  } else {
    int rr = ax[0], cc = ax[1];
    Axes both{rr, cc};
    if (!ord || (std::holds_alternative<std::string>(*ord) && std::get<std::string>(*ord) == "fro")) {
      r = sqrt(sum(multiply(x, x, s), both, false, s), s);
    } else if (std::holds_alternative<std::string>(*ord)) {
      const std::string& o = std::get<std::string>(*ord);
      if (o != "nuc") fail(op, "Invalid ord value '", o, "' for matrix norm.");
      r = sum(singular_values(is_complex(a.dtype()) ? a : astype(a, real_t, s), rr, cc, s), Axes{-1}, false, s);
    } else {
      double p = std::get<double>(*ord);
      int c2 = cc > rr ? cc - 1 : cc, r2 = rr > cc ? rr - 1 : rr;
      if (p == 2 || p == -2) {
        array sv = singular_values(is_complex(a.dtype()) ? a : astype(a, real_t, s), rr, cc, s);
        r = p > 0 ? max(sv, Axes{-1}, false, s) : min(sv, Axes{-1}, false, s);
      } else if (p == 1 || p == -1) {
        array colsum = sum(x, Axes{rr}, false, s);
        r = p > 0 ? max(colsum, Axes{c2}, false, s) : min(colsum, Axes{c2}, false, s);
      } else if (std::isinf(p)) {
        array rowsum = sum(x, Axes{cc}, false, s);
        r = p > 0 ? max(rowsum, Axes{r2}, false, s) : min(rowsum, Axes{r2}, false, s);
      } else {
        fail(op, "Invalid ord value ", p, " for matrix norm.");
      }
    }
  }
  if (keepdims) {
    Axes sorted = ax;
    std::sort(sorted.begin(), sorted.end());
    r = expand_dims(r, sorted, s);
  }
  return r;
}

}  // namespace ember::linalg
