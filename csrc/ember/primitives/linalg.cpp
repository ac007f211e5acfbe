// Transform rules of Matmul (kernel in backend/cpu/matmul.cpp).
//
// The node's operands have equal batch shapes (the op broadcast them), so
// the products below never broadcast and each cotangent already has its
// operand's shape:
//   jvp  ta @ b + a @ tb
//   vjp  ct @ b^H, a^H @ ct    (conjugate transposes: MLX's convention for
//                               complex cotangents, see elementwise.cpp)
// A cotangent is computed in its operand's layout: for an operand whose
// matrices are stored transposed (a Linear's weight, x @ W.T) as the
// transpose of the transposed product, (ct^T conj(a))^T, so that the
// gradient of W comes out row-major, as W is, and the elementwise ops that
// use it (an optimizer's update) read both in order instead of one across
// its rows.
#include "ember/ops.h"
#include "ember/primitives/linalg.h"
#include "ember/primitives/shape.h"
#include "ember/transforms/transforms.h"

namespace ember {

array matmul_node(const array& a, const array& b, Stream s) {
  Shape out = a.shape();
  out.back() = b.shape(-1);
  return make_node<Matmul>(std::move(out), a.dtype(), {a, b}, s);
}

namespace {

array mH(const array& x, Stream s) { return matrix_transpose(conjugate(x, s), s); }

// x with dims [d, d + 1] merged into one / with dim d split in (n, m).
array merge_dims(const array& x, int d, Stream s) {
  Shape sh = x.shape();
  sh[d] *= sh[d + 1];
  sh.erase(sh.begin() + d + 1);
  return reshape(x, sh, s);
}
array split_dim(const array& x, int d, int64_t n, int64_t m, Stream s) {
  Shape sh = x.shape();
  sh[d] = n;
  sh.insert(sh.begin() + d + 1, m);
  return reshape(x, sh, s);
}

// Whether x's matrices are stored transposed (column-major): by its strides
// once evaluated, or as the swap of the last two axes of another array.
bool stored_transposed(const array& x) {
  const int n = x.ndim();
  if (n < 2 || x.shape(-1) < 2 || x.shape(-2) < 2) return false;
  if (x.buffer()) return x.strides()[n - 2] == 1 && x.strides()[n - 1] == x.shape(-2);
  if (!x.has_primitive()) return false;
  const auto* t = dynamic_cast<const Transpose*>(&x.primitive());
  return t && t->swaps_last_two();
}

}  // namespace

std::vector<array> Matmul::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  const array &a = primals[0], &b = primals[1], &ct = cotangents[0];
  Stream s = stream();
  std::vector<array> out;
  for (int arg : argnums) {
    const array& x = arg == 0 ? a : b;
    if (!stored_transposed(x)) {
      out.push_back(arg == 0 ? matmul(ct, mH(b, s), s) : matmul(mH(a, s), ct, s));
    } else {  // (ct b^H)^T = conj(b) ct^T, (a^H ct)^T = ct^T conj(a)
      const array ctT = matrix_transpose(ct, s);
      out.push_back(matrix_transpose(arg == 0 ? matmul(conjugate(b, s), ctT, s) : matmul(ctT, conjugate(a, s), s), s));
    }
  }
  return out;
}

std::vector<array> Matmul::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  const array &a = primals[0], &b = primals[1];
  Stream s = stream();
  array out;
  for (size_t i = 0; i < argnums.size(); ++i) {
    array term = argnums[i] == 0 ? matmul(tangents[i], b, s) : matmul(a, tangents[i], s);
    out = out.valid() ? add(out, term, s) : term;
  }
  return {out};
}

// Both batched: batch axes to the front, one batched product. Only a
// batched: its batch folds into the rows, (..., B, M, K) -> (..., B*M, K),
// one product with the unbatched b and the rows unfolded again; only b
// batched: likewise into the columns, (..., K, B, N) -> (..., K, B*N). The
// unbatched operand is never copied B times.
std::pair<std::vector<array>, std::vector<int>> Matmul::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  const array &a = inputs[0], &b = inputs[1];
  int aa = axes[0], ab = axes[1];
  Stream s = stream();
  if (aa < 0 && ab < 0) return {{matmul_node(a, b, s)}, {-1}};
  if (aa >= 0 && ab >= 0) {
    int64_t B = batch_size(inputs, axes, name());
    return {{matmul_node(batch_axis_to(a, aa, 0, B, s), batch_axis_to(b, ab, 0, B, s), s)}, {0}};
  }
  if (aa >= 0) {
    int d = a.ndim() - 3;  // where the batch goes: just before M
    array x = batch_axis_to(a, aa, d, -1, s);
    array r = matmul_node(merge_dims(x, d, s), b, s);
    return {{split_dim(r, d, x.shape(d), x.shape(d + 1), s)}, {d}};
  }
  int d = b.ndim() - 2;  // just before N
  array y = batch_axis_to(b, ab, d, -1, s);
  array r = matmul_node(a, merge_dims(y, d, s), s);
  return {{split_dim(r, d, y.shape(d), y.shape(d + 1), s)}, {d}};
}

}  // namespace ember
