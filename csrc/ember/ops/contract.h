// Contractions and composite array ops: einsum/einsum_path, tensordot, inner,
// outer, kron, vecdot, matrix_transpose, permute_dims, unstack, window
// functions, diff, flip, roll.
#pragma once

#include <string>
#include <utility>

#include "ember/ops.h"

namespace ember {

#define EMBER_S const StreamOrDevice& s = {}

// ---- einsum ----
// Einstein summation over `operands` (MLX/NumPy subscripts: letters, one
// `...` per term, implicit output when there is no `->`, repeated letters
// inside a term take diagonals, size-1 dims broadcast). Operands are
// contracted pairwise in the order einsum_path reports; every pairwise
// contraction is one (batched) matmul.
array einsum(const std::string& subscripts, const std::vector<array>& operands, EMBER_S);
// The contraction order MLX's einsum uses (greedy: largest size reduction
// first, then fewest flops) and a summary of its cost.
std::pair<std::vector<std::vector<int>>, std::string> einsum_path(const std::string& subscripts,
                                                                  const std::vector<array>& operands);

// ---- products ----
// Sum over the last `axes` dims of a and the first `axes` dims of b.
array tensordot(const array& a, const array& b, int axes = 2, EMBER_S);
// Sum over a's `axes_a` paired with b's `axes_b`.
array tensordot(const array& a, const array& b, const Axes& axes_a, const Axes& axes_b, EMBER_S);
array inner(const array& a, const array& b, EMBER_S);
array outer(const array& a, const array& b, EMBER_S);
array kron(const array& a, const array& b, EMBER_S);
// sum(conj(a) * b) along `axis` (taken in each operand), other dims broadcast.
array vecdot(const array& a, const array& b, int axis = -1, EMBER_S);

// ---- layout ----
array matrix_transpose(const array& a, EMBER_S);
array permute_dims(const array& a, std::optional<Axes> axes = {}, EMBER_S);
std::vector<array> unstack(const array& a, int axis = 0, EMBER_S);
// Reverses the given axes (all when not given): a negative-stride view.
array flip(const array& a, std::optional<Axes> axes = {}, EMBER_S);
// n-th discrete difference along `axis`.
array diff(const array& a, int n = 1, int axis = -1, EMBER_S);
// roll of the flattened array, restored to a's shape
array roll(const array& a, int64_t shift, EMBER_S);
array roll(const array& a, int64_t shift, int axis, EMBER_S);
// axes[i] rolled by shift[i] (shift may be longer; extra values are ignored,
// repeated axes add up)
array roll(const array& a, const Shape& shift, const Axes& axes, EMBER_S);

// ---- window functions (float32, M < 1 gives an empty window) ----
array bartlett(int64_t M, EMBER_S);
array blackman(int64_t M, EMBER_S);
array hamming(int64_t M, EMBER_S);
array hanning(int64_t M, EMBER_S);

#undef EMBER_S

}  // namespace ember
