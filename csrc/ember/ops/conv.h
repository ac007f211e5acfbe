// Convolutions with MLX's layout: input (N, *spatial, C_in), weight
// (C_out, *kernel, C_in / groups), output (N, *spatial_out, C_out); 1 to 3
// spatial dims. Floating dtypes only (the operands are promoted together).
#pragma once

#include "ember/ops.h"

namespace ember {

#define EMBER_S const StreamOrDevice& s = {}

using ConvDims = std::vector<int64_t>;

// Every option: stride, padding low/high (negative crops), kernel dilation,
// input dilation, groups and flip (true convolution instead of correlation).
// A vector of length 1 is broadcast over the spatial dims.
array conv_general(const array& input, const array& weight, ConvDims stride = {1}, ConvDims pad_lo = {0},
                   ConvDims pad_hi = {0}, ConvDims kernel_dilation = {1}, ConvDims input_dilation = {1},
                   int64_t groups = 1, bool flip = false, EMBER_S);
array conv1d(const array& input, const array& weight, int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1,
             int64_t groups = 1, EMBER_S);
array conv2d(const array& input, const array& weight, ConvDims stride = {1, 1}, ConvDims padding = {0, 0},
             ConvDims dilation = {1, 1}, int64_t groups = 1, EMBER_S);
array conv3d(const array& input, const array& weight, ConvDims stride = {1, 1, 1}, ConvDims padding = {0, 0, 0},
             ConvDims dilation = {1, 1, 1}, int64_t groups = 1, EMBER_S);
// Transposed convolutions (the gradient of conv w.r.t. its input); weight
// (C_out, *kernel, C_in / groups).
array conv_transpose1d(const array& input, const array& weight, int64_t stride = 1, int64_t padding = 0,
                       int64_t dilation = 1, int64_t output_padding = 0, int64_t groups = 1, EMBER_S);
array conv_transpose2d(const array& input, const array& weight, ConvDims stride = {1, 1},
                       ConvDims padding = {0, 0}, ConvDims dilation = {1, 1}, ConvDims output_padding = {0, 0},
                       int64_t groups = 1, EMBER_S);
array conv_transpose3d(const array& input, const array& weight, ConvDims stride = {1, 1, 1},
                       ConvDims padding = {0, 0, 0}, ConvDims dilation = {1, 1, 1},
                       ConvDims output_padding = {0, 0, 0}, int64_t groups = 1, EMBER_S);
// 1-D convolution of two vectors, NumPy's modes "full", "same", "valid".
array convolve(const array& a, const array& v, const std::string& mode = "full", EMBER_S);

#undef EMBER_S

}  // namespace ember
