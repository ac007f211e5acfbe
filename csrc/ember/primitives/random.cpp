// Transform rules of the random primitives. The bits depend only on integer
// keys, so their derivatives are zero; vmap over keys hashes every key of
// the batch in one node (batched keys -> batched bits).
#include "ember/primitives/random.h"

#include "ember/ops.h"
#include "ember/ops/lapack.h"
#include "ember/transforms/transforms.h"

namespace ember {

bool RandomBits::is_equivalent(const Primitive& o) const {
  auto* p = dynamic_cast<const RandomBits*>(&o);
  return p && p->shape_ == shape_ && p->width_ == width_ && p->kind_ == kind_;
}

std::vector<array> RandomBits::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                   const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> out;
  for (int i : argnums) out.push_back(zeros_like(primals[i], std::nullopt, stream()));
  return out;
}

std::vector<array> RandomBits::jvp(const std::vector<array>&, const std::vector<array>&,
                                   const std::vector<int>&, const std::vector<array>& outputs) {
  return {zeros_like(outputs[0], std::nullopt, stream())};
}

std::pair<std::vector<array>, std::vector<int>> RandomBits::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  array keys = inputs[0];
  int ax = axes[0];
  if (ax >= 0) keys = batch_axis_to(keys, ax, 0, -1, stream());
  Shape out_shape(keys.shape().begin(), keys.shape().end() - 1);
  out_shape.insert(out_shape.end(), shape_.begin(), shape_.end());
  Dtype dt = kind_ == Bits ? (width_ == 1 ? Dtype::uint8 : width_ == 2 ? Dtype::uint16 : Dtype::uint32)
                           : Dtype::float32;
  array out = make_node<RandomBits>(out_shape, dt, {keys}, stream(), shape_, width_, kind_);
  return {{out}, {ax >= 0 ? 0 : -1}};
}

std::pair<std::vector<array>, std::vector<int>> RandomCholesky::vmap(const std::vector<array>& inputs,
                                                                     const std::vector<int>& axes) {
  // Batched matrices: the batch axis joins the leading batch dims.
  array a = inputs[0];
  int ax = axes[0];
  if (ax >= 0) a = batch_axis_to(a, ax, 0, -1, stream());
  array out = make_node<RandomCholesky>(a.shape(), a.dtype(), {a}, stream());
  return {{out}, {ax >= 0 ? 0 : -1}};
}

namespace {
// Strict lower triangle plus half the diagonal of the last two axes.
array phi(const array& x, Stream s) {
  int64_t n = x.shape(-1);
  array w = add(tri(n, n, -1, x.dtype(), s), multiply(eye(n, n, 0, x.dtype(), s), array(0.5, x.dtype()), s), s);
  return multiply(x, w, s);
}
}  // namespace

std::vector<array> RandomCholesky::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                       const std::vector<int>&, const std::vector<array>& outputs) {
  const Stream s = stream();
  const array& l = outputs[0];
  // Y = L^-1 dA L^-T, with the tangent symmetrized (only symmetric inputs are valid).
  array da = multiply(add(tangents[0], matrix_transpose(tangents[0], s), s), array(0.5, l.dtype()), s);
  array x = linalg::solve_triangular(l, da, false, s);
  array y = matrix_transpose(linalg::solve_triangular(l, matrix_transpose(x, s), false, s), s);
  return {matmul(l, phi(y, s), s)};
}

std::vector<array> RandomCholesky::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                       const std::vector<int>&, const std::vector<array>& outputs) {
  const Stream s = stream();
  const array& l = outputs[0];
  // G = Phi(L^T Lbar); Abar = sym(L^-T G L^-1).
  array g = phi(matmul(matrix_transpose(l, s), tril(cotangents[0], 0, s), s), s);
  array lt = matrix_transpose(l, s);
  array z = linalg::solve_triangular(lt, g, true, s);  // L^-T G
  // (L^-T (L^-T G)^T)^T
  array abar = matrix_transpose(linalg::solve_triangular(lt, matrix_transpose(z, s), true, s), s);
  return {multiply(add(abar, matrix_transpose(abar, s), s), array(0.5, l.dtype()), s)};
}

}  // namespace ember
