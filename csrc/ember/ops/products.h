// Matrix products beyond matmul: addmm, gather_mm, segmented_mm,
// block_masked_mm, and the Hadamard transform. Same conventions as ops.h; implemented in
// ops/linalg.cpp.
#pragma once

#include "ember/ops.h"

namespace ember {

#define EMBER_S const StreamOrDevice& s = {}

// alpha * (a @ b) + beta * c (c broadcast to the product; beta == 0: c unread)
array addmm(const array& c, const array& a, const array& b, float alpha = 1.0f, float beta = 1.0f, EMBER_S);
// out[i...] = A[lhs[i...]] @ B[rhs[i...]] with A, B the matrices of a and b
// over their flattened batch dims (default indices: each one's own batch)
array gather_mm(const array& a, const array& b, const std::optional<array>& lhs_indices = {},
                const std::optional<array>& rhs_indices = {}, bool sorted_indices = false, EMBER_S);
// out[j...] = a[:, s:e] @ b[s:e, :] for each [s, e) pair segments[j..., :]
array segmented_mm(const array& a, const array& b, const array& segments, EMBER_S);

// a @ b with block masks (block_size 32 or 64): mask_lhs/mask_rhs/mask_out
// have one entry per block of a, b and the product (boolean: keep or zero;
// numeric: scale), broadcasting over the batch dims.
array block_masked_mm(const array& a, const array& b, int block_size = 64,
                      const std::optional<array>& mask_out = {}, const std::optional<array>& mask_lhs = {},
                      const std::optional<array>& mask_rhs = {}, EMBER_S);
// The Walsh-Hadamard transform along the last axis (a power of 2 long),
// times scale (default 1/sqrt(n)); integers and bools become float32.
array hadamard_transform(const array& a, std::optional<float> scale = {}, EMBER_S);

#undef EMBER_S

}  // namespace ember
