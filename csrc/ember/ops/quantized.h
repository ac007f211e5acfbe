// Quantization ops (MLX's mx.quantize & co.; layouts in
// primitives/quantized.h). group_size and bits default per mode (affine 64
// and 4; mxfp4 32 and 4; mxfp8 32 and 8; nvfp4 16 and 4); every argument is
// checked before a node is built (ValueError naming the op and the shapes).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ember/ops.h"

namespace ember {

#define EMBER_S const StreamOrDevice& s = {}

// {codes, scales, biases} (affine) or {codes, scales} (the fp modes).
std::vector<array> quantize(const array& w, std::optional<int> group_size = {}, std::optional<int> bits = {},
                            const std::string& mode = "affine", const std::optional<array>& global_scale = {},
                            EMBER_S);
array dequantize(const array& w, const array& scales, const std::optional<array>& biases = {},
                 std::optional<int> group_size = {}, std::optional<int> bits = {}, const std::string& mode = "affine",
                 const std::optional<array>& global_scale = {}, std::optional<Dtype> dtype = {}, EMBER_S);
// x @ dequantize(w)^T (transpose) or x @ dequantize(w); batch dims broadcast.
array quantized_matmul(const array& x, const array& w, const array& scales, const std::optional<array>& biases = {},
                       bool transpose = true, std::optional<int> group_size = {}, std::optional<int> bits = {},
                       const std::string& mode = "affine", EMBER_S);
// quantized_matmul of x[lhs_indices] and w[rhs_indices] (indices into the
// batch dims, broadcast together), MLX's gather_qmm.
array gather_qmm(const array& x, const array& w, const array& scales, const std::optional<array>& biases = {},
                 const std::optional<array>& lhs_indices = {}, const std::optional<array>& rhs_indices = {},
                 bool transpose = true, std::optional<int> group_size = {}, std::optional<int> bits = {},
                 const std::string& mode = "affine", const std::optional<array>& global_scale = {},
                 bool sorted_indices = false, EMBER_S);
// x quantized (and dequantized) in the mode times w (unquantized when scales
// is none, then quantized too), transposed: the products of two quantized
// operands; the fp modes only.
array qqmm(const array& x, const array& w, const std::optional<array>& scales = {}, std::optional<int> group_size = {},
           std::optional<int> bits = {}, const std::string& mode = "nvfp4",
           const std::optional<array>& global_scale_x = {}, const std::optional<array>& global_scale_w = {}, EMBER_S);
array gather_qqmm(const array& x, const array& w, const std::optional<array>& scales = {},
                  const std::optional<array>& lhs_indices = {}, const std::optional<array>& rhs_indices = {},
                  std::optional<int> group_size = {}, std::optional<int> bits = {}, const std::string& mode = "nvfp4",
                  const std::optional<array>& global_scale_x = {}, const std::optional<array>& global_scale_w = {},
                  bool sorted_indices = false, EMBER_S);

#undef EMBER_S

}  // namespace ember
