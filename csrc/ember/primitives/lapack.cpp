// Transform rules of the Lapack primitive, written with public ops so that
// they compose (grad of grad, vmap of grad). Notation: A the input, mT the
// transpose of the last two axes, Phi(X) the strict lower triangle of X plus
// half its diagonal. Ops that read one triangle of A (cholesky, eigh,
// tri_inv, solve_triangular) only depend on that triangle: a tangent is
// first mapped onto the symmetric (or triangular) matrix the kernel sees, and
// a cotangent lands on that triangle only.
//
//   inv       dX = -X dA X                 Abar = -X^T Xbar X^T
//   det       dd = d tr(A^-1 dA)           Abar = dbar d A^-T
//   slogdet   dl = tr(A^-1 dA)             Abar = lbar A^-T (sign: constant)
//   solve     dX = A^-1 (dB - dA X)        Bbar = A^-T Xbar, Abar = -Bbar X^T
//   cholesky  dL = L Phi(L^-1 dS L^-T)     Abar = Phi(Y + Y^T), Y = L^-T Phi(L^T Lbar) L^-1
//   qr (m>=n) C = Q^T dA R^-1, W = tril(C,-1) - tril(C,-1)^T,
//             dR = (C - W) R, dQ = dA R^-1 - Q (C - W)
//             Abar = (Qbar + Q E) R^-T, N = Rbar R^T - Q^T Qbar, E = triu(N) + tril(N^T,-1)
//   eigh      P = V^T dS V, dw = diag(P), dV = V (F o P), F_ij = 1/(w_j - w_i)
//   svd (distinct values; U, V the thin factors: K = min(M, N) columns)
//             P = U^T dA V, dS = diag(P), F_ij = 1/(s_j^2 - s_i^2),
//             dU = U (F o (P S + S P^T)) + (I - UU^T) dA V S^-1,
//             dV = V (F o (S P + P^T S)) + (I - VV^T) dA^T U S^-1;
//             the columns of the full U (V) past K are any basis of the rest
//             of the space: zero tangents, cotangents ignored (as PyTorch)
#include "ember/primitives/lapack.h"

#include "ember/ops/lapack.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace {

// the formulas' notation for matrix_transpose
array mT(const array& x, Stream s) { return matrix_transpose(x, s); }
array mm(const array& a, const array& b, Stream s) { return matmul(a, b, s); }
array eye_like(int64_t n, Dtype t, Stream s) { return eye(n, n, 0, t, s); }

// strict lower triangle plus half the diagonal
array phi(const array& x, Stream s) {
  int64_t n = x.shape(-1);
  return add(tril(x, -1, s), multiply(x, multiply(eye_like(n, x.dtype(), s), array(0.5, x.dtype()), s), s), s);
}
// the symmetric matrix made from the triangle of t the kernel reads
array sym_from_tri(const array& t, bool upper, Stream s) {
  return upper ? add(triu(t, 0, s), mT(triu(t, 1, s), s), s) : add(tril(t, 0, s), mT(tril(t, -1, s), s), s);
}
// cotangent of a symmetric input (given as Y, any square) placed on the triangle read
array tri_from_sym(const array& y, bool upper, Stream s) {
  array g = phi(add(y, mT(y, s), s), s);
  return upper ? mT(g, s) : g;
}
array tri_part(const array& x, bool upper, Stream s) { return upper ? triu(x, 0, s) : tril(x, 0, s); }
array diag_embed(const array& v, Stream s) {
  return multiply(expand_dims(v, {-1}, s), eye_like(v.shape(-1), v.dtype(), s), s);
}
array diag_part(const array& x, Stream s) { return diagonal(x, 0, -2, -1, s); }
// x[..., :, :k] and x[..., :k, :]
array first_cols(const array& x, int64_t k, Stream s) {
  Shape start(x.ndim(), 0), stop = x.shape(), step(x.ndim(), 1);
  stop.back() = k;
  return slice(x, start, stop, step, s);
}
array first_rows(const array& x, int64_t k, Stream s) {
  Shape start(x.ndim(), 0), stop = x.shape(), step(x.ndim(), 1);
  stop[x.ndim() - 2] = k;
  return slice(x, start, stop, step, s);
}
// the first k columns (rows) of a factor, or the factor when it has k
array thin_cols(const array& x, int64_t k, Stream s) { return x.shape(-1) == k ? x : first_cols(x, k, s); }
array thin_rows(const array& x, int64_t k, Stream s) { return x.shape(-2) == k ? x : first_rows(x, k, s); }
// (I - Q Q^T) X for Q with orthonormal columns: X without its part in Q's span
array off_span(const array& Q, const array& X, Stream s) { return subtract(X, mm(Q, mm(mT(Q, s), X, s), s), s); }
// x (..., n, k) padded with zero columns to (..., n, n)
array pad_cols(const array& x, int64_t n, Stream s) {
  if (x.shape(-1) == n) return x;
  Shape zs = x.shape();
  zs.back() = n - zs.back();
  return concatenate({x, zeros(zs, x.dtype(), s)}, -1, s);
}
// F_ij = 1 / (v_j - v_i) off the diagonal, 0 on it
array gap_inverse(const array& v, Stream s) {
  int64_t n = v.shape(-1);
  array d = subtract(expand_dims(v, {-2}, s), expand_dims(v, {-1}, s), s);
  array on = eye(n, n, 0, Dtype::bool_, s);
  return where(on, zeros({}, v.dtype(), s), reciprocal(where(on, ones({}, v.dtype(), s), d, s), s), s);
}
array trace_of_product(const array& a, const array& b, Stream s) {  // tr(a b) over the last two axes
  return sum(multiply(a, mT(b, s), s), Axes{-2, -1}, false, s);
}
array expand2(const array& x, Stream s) { return expand_dims(x, {-1, -2}, s); }
array ct_or_zeros(const array& ct, const array& like, Stream s) { return ct.valid() ? ct : zeros_like(like, {}, s); }

}  // namespace

const char* Lapack::name() const {
  static const char* names[] = {"Inv",  "TriInv",   "Cholesky", "Det", "SlogDet", "Solve",    "SolveTri", "QR",
                                "SVD",  "SVDVals",  "Eigh",     "EigvalsH", "Eig", "Eigvals", "LUFactor", "LU"};
  return names[kind_];
}

bool Lapack::is_equivalent(const Primitive& o) const {
  auto* p = dynamic_cast<const Lapack*>(&o);
  return p && p->kind_ == kind_ && p->upper_ == upper_;
}

std::vector<array> lapack_node(Lapack::Kind kind, bool upper, const std::vector<array>& inputs, Stream s) {
  const array& a = inputs[0];
  Shape lead(a.shape().begin(), a.shape().end() - 2);
  int64_t m = a.shape(-2), n = a.shape(-1), K = std::min(m, n);
  auto sh = [&](std::initializer_list<int64_t> tail) {
    Shape r = lead;
    r.insert(r.end(), tail.begin(), tail.end());
    return r;
  };
  Dtype t = a.dtype();
  Dtype real_t = t == Dtype::complex64 ? Dtype::float32 : t;  // singular values, Hermitian eigenvalues
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  switch (kind) {
    case Lapack::Inv:
    case Lapack::TriInv:
    case Lapack::Cholesky: shapes = {a.shape()}, dtypes = {t}; break;
    case Lapack::Det: shapes = {lead}, dtypes = {t}; break;
    case Lapack::SlogDet: shapes = {lead, lead}, dtypes = {t, t}; break;
    case Lapack::Solve:
    case Lapack::SolveTri: shapes = {inputs[1].shape()}, dtypes = {t}; break;
    case Lapack::QR: shapes = {sh({m, K}), sh({K, n})}, dtypes = {t, t}; break;
    case Lapack::SVD: shapes = {sh({m, m}), sh({K}), sh({n, n})}, dtypes = {t, real_t, t}; break;
    case Lapack::SVDVals: shapes = {sh({K})}, dtypes = {real_t}; break;
    case Lapack::Eigh: shapes = {sh({n}), sh({n, n})}, dtypes = {real_t, t}; break;
    case Lapack::EigvalsH: shapes = {sh({n})}, dtypes = {real_t}; break;
    case Lapack::Eig: shapes = {sh({n}), sh({n, n})}, dtypes = {Dtype::complex64, Dtype::complex64}; break;
    case Lapack::Eigvals: shapes = {sh({n})}, dtypes = {Dtype::complex64}; break;
    case Lapack::LUFactor: shapes = {sh({m, n}), sh({K})}, dtypes = {t, Dtype::uint32}; break;
    case Lapack::LU: shapes = {sh({m}), sh({m, K}), sh({K, n})}, dtypes = {Dtype::uint32, t, t}; break;
  }
  return make_nodes<Lapack>(std::move(shapes), std::move(dtypes), inputs, s, kind, upper);
}

namespace {
void no_complex_rule(const array& a, const char* name) {
  if (is_complex(a.dtype()))
    detail::fail(name, "Derivatives of complex64 decompositions are not supported; got ", dtype_name(a.dtype()),
                 " input of shape ", shape_str(a.shape()), ".");
}
}  // namespace

std::vector<array> Lapack::vjp(const std::vector<array>& primals, const std::vector<array>& cts,
                               const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const array& A = primals[0];
  no_complex_rule(A, "linalg::vjp");
  auto out = [&](int j) { return outputs[j].valid() ? outputs[j] : lapack_node(kind_, upper_, primals, s)[j]; };
  std::vector<array> res;
  switch (kind_) {
    case Inv:
    case TriInv: {
      array X = out(0);
      array g = negative(mm(mm(mT(X, s), cts[0], s), mT(X, s), s), s);
      return {kind_ == TriInv ? tri_part(g, upper_, s) : g};
    }
    case Det: {
      array d = out(0);
      return {multiply(expand2(multiply(cts[0], d, s), s), mT(linalg::inv(A, s), s), s)};
    }
    case SlogDet:
      return {multiply(expand2(ct_or_zeros(cts[1], out(1), s), s), mT(linalg::inv(A, s), s), s)};
    case Solve:
    case SolveTri: {
      array X = out(0);
      array Bbar = kind_ == Solve ? lapack_node(Solve, false, {mT(A, s), cts[0]}, s)[0]
                                  : lapack_node(SolveTri, !upper_, {mT(A, s), cts[0]}, s)[0];
      for (int i : argnums) {
        if (i == 1) {
          res.push_back(Bbar);
        } else {
          array g = negative(mm(Bbar, mT(X, s), s), s);
          res.push_back(kind_ == SolveTri ? tri_part(g, upper_, s) : g);
        }
      }
      return res;
    }
    case Cholesky: {
      array L = upper_ ? mT(out(0), s) : out(0);
      array Lbar = upper_ ? mT(cts[0], s) : cts[0];
      array Li = linalg::tri_inv(L, false, s);
      array Y = mm(mm(mT(Li, s), phi(mm(mT(L, s), Lbar, s), s), s), Li, s);
      return {tri_from_sym(Y, upper_, s)};
    }
    case QR: {
      if (A.shape(-2) < A.shape(-1))
        detail::fail("linalg::qr", "Derivatives need at least as many rows as columns; got shape ",
                     shape_str(A.shape()), ".");
      array Q = out(0), R = out(1);
      array Qbar = ct_or_zeros(cts[0], Q, s), Rbar = ct_or_zeros(cts[1], R, s);
      array N = subtract(mm(Rbar, mT(R, s), s), mm(mT(Q, s), Qbar, s), s);
      array E = add(triu(N, 0, s), tril(mT(N, s), -1, s), s);
      array Ri = linalg::tri_inv(R, true, s);
      return {mm(add(Qbar, mm(Q, E, s), s), mT(Ri, s), s)};
    }
    case SVD: {
      // the thin factors: columns of U (or V) past K = min(M, N) are any
      // basis of the rest of the space, so their cotangents are ignored
      const int64_t M = A.shape(-2), N = A.shape(-1), K = std::min(M, N);
      array U = thin_cols(out(0), K, s), S = out(1), V = mT(thin_rows(out(2), K, s), s);
      array Ubar = thin_cols(ct_or_zeros(cts[0], out(0), s), K, s), Sbar = ct_or_zeros(cts[1], S, s),
            Vbar = mT(thin_rows(ct_or_zeros(cts[2], out(2), s), K, s), s);
      array F = gap_inverse(square(S, s), s);
      array J = multiply(F, mm(mT(U, s), Ubar, s), s), Kv = multiply(F, mm(mT(V, s), Vbar, s), s);
      array Srow = expand_dims(S, {-2}, s), Scol = expand_dims(S, {-1}, s);
      array inner = add(diag_embed(Sbar, s),
                        add(multiply(add(J, mT(J, s), s), Srow, s), multiply(Scol, add(Kv, mT(Kv, s), s), s), s), s);
      array g = mm(mm(U, inner, s), mT(V, s), s);
      if (M > K) g = add(g, mm(off_span(U, divide(Ubar, Srow, s), s), mT(V, s), s), s);  // (I - UU^T) Ubar S^-1 V^T
      if (N > K) g = add(g, mm(U, mT(off_span(V, divide(Vbar, Srow, s), s), s), s), s);  // U S^-1 Vbar^T (I - VV^T)
      return {g};
    }
    case SVDVals: {
      auto usv = lapack_node(SVD, false, primals, s);
      int64_t K = out(0).shape(-1);
      array Uk = first_cols(usv[0], K, s), Vtk = first_rows(usv[2], K, s);
      return {mm(multiply(Uk, expand_dims(cts[0], {-2}, s), s), Vtk, s)};
    }
    case Eigh:
    case EigvalsH: {
      std::vector<array> wv = kind_ == Eigh ? std::vector<array>{out(0), out(1)} : lapack_node(Eigh, upper_, primals, s);
      array w = wv[0], V = wv[1];
      array inner = diag_embed(ct_or_zeros(cts[0], w, s), s);
      if (kind_ == Eigh && cts.size() > 1 && cts[1].valid())
        inner = add(inner, multiply(gap_inverse(w, s), mm(mT(V, s), cts[1], s), s), s);
      return {tri_from_sym(mm(mm(V, inner, s), mT(V, s), s), upper_, s)};
    }
    default: no_rule("vjp");
  }
}

std::vector<array> Lapack::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const array& A = primals[0];
  no_complex_rule(A, "linalg::jvp");
  auto out = [&](int j) { return outputs[j].valid() ? outputs[j] : lapack_node(kind_, upper_, primals, s)[j]; };
  switch (kind_) {
    case Inv:
    case TriInv: {
      array X = out(0);
      array t = kind_ == TriInv ? tri_part(tangents[0], upper_, s) : tangents[0];
      return {negative(mm(mm(X, t, s), X, s), s)};
    }
    case Det: return {multiply(out(0), trace_of_product(linalg::inv(A, s), tangents[0], s), s)};
    case SlogDet:
      return {zeros_like(out(0), {}, s), trace_of_product(linalg::inv(A, s), tangents[0], s)};
    case Solve:
    case SolveTri: {
      array X = out(0);
      std::optional<array> rhs;
      for (size_t k = 0; k < argnums.size(); ++k) {
        if (argnums[k] == 1) {
          rhs = rhs ? add(*rhs, tangents[k], s) : tangents[k];
        } else {
          array dA = kind_ == SolveTri ? tri_part(tangents[k], upper_, s) : tangents[k];
          array term = negative(mm(dA, X, s), s);
          rhs = rhs ? add(*rhs, term, s) : term;
        }
      }
      return {lapack_node(kind_, upper_, {A, *rhs}, s)[0]};
    }
    case Cholesky: {
      array L = upper_ ? mT(out(0), s) : out(0);
      array Li = linalg::tri_inv(L, false, s);
      array S = sym_from_tri(tangents[0], upper_, s);
      array dL = mm(L, phi(mm(mm(Li, S, s), mT(Li, s), s), s), s);
      return {upper_ ? mT(dL, s) : dL};
    }
    case QR: {
      if (A.shape(-2) < A.shape(-1))
        detail::fail("linalg::qr", "Derivatives need at least as many rows as columns; got shape ",
                     shape_str(A.shape()), ".");
      array Q = out(0), R = out(1), dA = tangents[0];
      array Ri = linalg::tri_inv(R, true, s);
      array dARi = mm(dA, Ri, s);
      array C = mm(mT(Q, s), dARi, s);
      array low = tril(C, -1, s);
      array CW = subtract(C, subtract(low, mT(low, s), s), s);
      return {subtract(dARi, mm(Q, CW, s), s), mm(CW, R, s)};
    }
    case SVD: {
      // thin factors as in the vjp; the columns past K get zero tangents
      const int64_t M = A.shape(-2), N = A.shape(-1), K = std::min(M, N);
      array U = thin_cols(out(0), K, s), S = out(1), V = mT(thin_rows(out(2), K, s), s), dA = tangents[0];
      array P = mm(mm(mT(U, s), dA, s), V, s);
      array F = gap_inverse(square(S, s), s);
      array Srow = expand_dims(S, {-2}, s), Scol = expand_dims(S, {-1}, s);
      array dU = mm(U, multiply(F, add(multiply(P, Srow, s), multiply(Scol, mT(P, s), s), s), s), s);
      array dV = mm(V, multiply(F, add(multiply(Scol, P, s), multiply(mT(P, s), Srow, s), s), s), s);
      if (M > K) dU = add(dU, divide(off_span(U, mm(dA, V, s), s), Srow, s), s);          // (I - UU^T) dA V S^-1
      if (N > K) dV = add(dV, divide(off_span(V, mm(mT(dA, s), U, s), s), Srow, s), s);  // (I - VV^T) dA^T U S^-1
      return {pad_cols(dU, M, s), diag_part(P, s), mT(pad_cols(dV, N, s), s)};
    }
    case SVDVals: {
      auto usv = lapack_node(SVD, false, primals, s);
      int64_t K = out(0).shape(-1);
      array Uk = first_cols(usv[0], K, s), Vk = mT(first_rows(usv[2], K, s), s);
      return {diag_part(mm(mm(mT(Uk, s), tangents[0], s), Vk, s), s)};
    }
    case Eigh:
    case EigvalsH: {
      std::vector<array> wv = kind_ == Eigh ? std::vector<array>{out(0), out(1)} : lapack_node(Eigh, upper_, primals, s);
      array w = wv[0], V = wv[1];
      array P = mm(mm(mT(V, s), sym_from_tri(tangents[0], upper_, s), s), V, s);
      if (kind_ == EigvalsH) return {diag_part(P, s)};
      return {diag_part(P, s), mm(V, multiply(gap_inverse(w, s), P, s), s)};
    }
    default: no_rule("jvp");
  }
}

std::pair<std::vector<array>, std::vector<int>> Lapack::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  Stream s = stream();
  if (!any_batched(axes)) {
    auto outs = lapack_node(kind_, upper_, inputs, s);
    return {outs, std::vector<int>(outs.size(), -1)};
  }
  int64_t B = batch_size(inputs, axes, name());
  std::vector<array> moved;
  for (size_t i = 0; i < inputs.size(); ++i) moved.push_back(batch_axis_to(inputs[i], axes[i], 0, B));
  auto outs = lapack_node(kind_, upper_, moved, s);
  return {outs, std::vector<int>(outs.size(), 0)};
}

}  // namespace ember
