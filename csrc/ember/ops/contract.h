// Contractions: einsum/einsum_path, tensordot, inner, outer, kron, vecdot.
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

#undef EMBER_S

}  // namespace ember
