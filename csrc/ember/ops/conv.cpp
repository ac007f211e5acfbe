// Convolution ops: validate with MLX's messages, promote the operands to
// their common floating dtype and build ConvGeneral nodes. Transposed
// convolutions and convolve are conv_general with input dilation, padding
// and a flipped kernel.
#include "ember/ops/conv.h"

#include <algorithm>

#include "ember/ops/common.h"
#include "ember/primitives/conv.h"

namespace ember {

using detail::fail;

namespace {

std::string tuple_str(const ConvDims& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + ")";
}

ConvDims expand(ConvDims v, size_t D) {
  if (v.size() == 1 && D != 1) v.assign(D, v[0]);
  return v;
}

}  // namespace

array conv_general(const array& input, const array& weight, ConvDims stride, ConvDims pad_lo, ConvDims pad_hi,
                   ConvDims kernel_dilation, ConvDims input_dilation, int64_t groups, bool flip,
                   const StreamOrDevice& s) {
  const char* op = "conv";
  if (input.ndim() < 3 || input.ndim() > 5) {
    fail(op, "Only works for inputs with 1-3 spatial dimensions. The inputs must be in the format [N, ..., C_in]. "
             "Got input with shape ", shape_str(input.shape()), ".");
  }
  const size_t D = input.ndim() - 2;
  if (weight.ndim() != input.ndim()) {
    fail(op, "Invalid weight array with ", weight.ndim(), " dimensions for ", D,
         "D convolution. Expected an array with ", D + 2, " dimensions following the format [C_out, ..., C_in].");
  }
  Dtype dt = promote_types(input.dtype(), weight.dtype());
  if (!is_floating(dt)) {
    fail(op, "Invalid input array with type ", dtype_name(dt),
         ". Convolution currently only supports floating point types");
  }
  stride = expand(stride, D);
  pad_lo = expand(pad_lo, D);
  pad_hi = expand(pad_hi, D);
  kernel_dilation = expand(kernel_dilation, D);
  input_dilation = expand(input_dilation, D);
  if (stride.size() != D) fail(op, "Invalid strides ", tuple_str(stride), " for ", D, "D convolution.");
  if (pad_lo.size() != D || pad_hi.size() != D) {
    fail(op, "Invalid padding ", tuple_str(pad_lo), " | ", tuple_str(pad_hi), " for ", D, "D convolution.");
  }
  if (kernel_dilation.size() != D) {
    fail(op, "Invalid kernel dilation ", tuple_str(kernel_dilation), " for ", D, "D convolution.");
  }
  if (input_dilation.size() != D) {
    fail(op, "Invalid input dilation ", tuple_str(input_dilation), " for ", D, "D convolution.");
  }
  auto positive = [](const ConvDims& v) { return std::all_of(v.begin(), v.end(), [](int64_t x) { return x > 0; }); };
  if (!positive(stride)) fail(op, "Stride sizes must be positive. Got strides ", tuple_str(stride), ".");
  if (!positive(kernel_dilation)) {
    fail(op, "Kernel dilation sizes must be positive. Got kernel dilation ", tuple_str(kernel_dilation), ".");
  }
  if (!positive(input_dilation)) {
    fail(op, "Input dilation sizes must be positive. Got input dilation ", tuple_str(input_dilation), ".");
  }
  if (groups <= 0) fail(op, "Groups must be positive. Got ", groups, " groups.");
  int64_t C = input.shape(-1), O = weight.shape(0);
  if (C % groups != 0) {
    fail(op, "The input channels must be divisible by the number of groups. Got input with shape ",
         shape_str(input.shape()), " and ", groups, " groups.");
  }
  if (groups > 1 && O % groups != 0) {
    fail(op, "If groups > 1, the output channels must be divisible by the number of groups. Got ", O,
         " output channels and ", groups, " groups.");
  }
  if (C != weight.shape(-1) * groups) {
    fail(op, "Expect the input channels in the input and weight array to match but got shapes - input: ",
         shape_str(input.shape()), " and weight: ", shape_str(weight.shape()));
  }
  for (size_t d = 0; d < D; ++d) {
    int64_t S = input.shape(d + 1), K = weight.shape(d + 1);
    int64_t in_d = S > 0 ? (S - 1) * input_dilation[d] + 1 : 0;
    int64_t ke = K > 0 ? (K - 1) * kernel_dilation[d] + 1 : 0;
    if (in_d + pad_lo[d] + pad_hi[d] < ke) {
      fail(op, "Spatial dimensions of input after padding cannot be smaller than weight spatial dimensions. Got "
               "error at axis ", d + 1, " for input with shape ", shape_str(input.shape()), ", padding low ",
           tuple_str(pad_lo), ", padding high ", tuple_str(pad_hi), ", and weight of shape ",
           shape_str(weight.shape()), ".");
    }
  }
  ConvParams p{stride, pad_lo, pad_hi, kernel_dilation, input_dilation, groups, flip};
  return conv_node(astype(input, dt, s), astype(weight, dt, s), p, to_stream(s));
}

namespace {

array conv_nd(const array& input, const array& weight, ConvDims stride, ConvDims padding, ConvDims dilation,
              int64_t groups, const StreamOrDevice& s) {
  return conv_general(input, weight, stride, padding, padding, dilation, {1}, groups, false, s);
}

array conv_transpose_nd(const array& input, const array& weight, ConvDims stride, ConvDims padding,
                        ConvDims dilation, ConvDims output_padding, int64_t groups, const StreamOrDevice& s) {
  if (input.ndim() < 3 || weight.ndim() != input.ndim()) {
    // conv_general reports the rank error
    return conv_general(input, weight, stride, padding, padding, dilation, {1}, groups, true, s);
  }
  size_t D = input.ndim() - 2;
  padding = expand(padding, D);
  dilation = expand(dilation, D);
  output_padding = expand(output_padding, D);
  if (padding.size() != D || dilation.size() != D || output_padding.size() != D) {
    fail("conv_transpose", "Invalid padding ", tuple_str(padding), ", dilation ", tuple_str(dilation),
         " or output_padding ", tuple_str(output_padding), " for ", D, "D convolution.");
  }
  ConvDims lo(D), hi(D);
  for (size_t d = 0; d < D; ++d) {
    int64_t span = dilation[d] * (weight.shape(d + 1) - 1);
    lo[d] = span - padding[d];
    hi[d] = span - padding[d] + output_padding[d];
  }
  return conv_general(input, weight, {1}, lo, hi, dilation, stride, groups, true, s);
}

}  // namespace

array conv1d(const array& input, const array& weight, int64_t stride, int64_t padding, int64_t dilation,
             int64_t groups, const StreamOrDevice& s) {
  return conv_nd(input, weight, {stride}, {padding}, {dilation}, groups, s);
}
array conv2d(const array& input, const array& weight, ConvDims stride, ConvDims padding, ConvDims dilation,
             int64_t groups, const StreamOrDevice& s) {
  return conv_nd(input, weight, stride, padding, dilation, groups, s);
}
array conv3d(const array& input, const array& weight, ConvDims stride, ConvDims padding, ConvDims dilation,
             int64_t groups, const StreamOrDevice& s) {
  return conv_nd(input, weight, stride, padding, dilation, groups, s);
}

array conv_transpose1d(const array& input, const array& weight, int64_t stride, int64_t padding, int64_t dilation,
                       int64_t output_padding, int64_t groups, const StreamOrDevice& s) {
  return conv_transpose_nd(input, weight, {stride}, {padding}, {dilation}, {output_padding}, groups, s);
}
array conv_transpose2d(const array& input, const array& weight, ConvDims stride, ConvDims padding,
                       ConvDims dilation, ConvDims output_padding, int64_t groups, const StreamOrDevice& s) {
  return conv_transpose_nd(input, weight, stride, padding, dilation, output_padding, groups, s);
}
array conv_transpose3d(const array& input, const array& weight, ConvDims stride, ConvDims padding,
                       ConvDims dilation, ConvDims output_padding, int64_t groups, const StreamOrDevice& s) {
  return conv_transpose_nd(input, weight, stride, padding, dilation, output_padding, groups, s);
}

array convolve(const array& a, const array& v, const std::string& mode, const StreamOrDevice& s) {
  if (a.ndim() != 1 || v.ndim() != 1) fail("convolve", "Inputs must be 1D.");
  if (mode != "full" && mode != "same" && mode != "valid") fail("convolve", "Invalid mode.");
  if (a.size() == 0 || v.size() == 0) {
    fail("convolve", "Inputs cannot be empty. Got shapes ", shape_str(a.shape()), " and ", shape_str(v.shape()),
         ".");
  }
  array x = a, k = v;
  if (k.size() > x.size()) std::swap(x, k);
  int64_t K = k.size();
  int64_t lo = 0, hi = 0;
  if (mode == "full") {
    lo = hi = K - 1;
  } else if (mode == "same") {
    lo = K / 2;
    hi = K - 1 - K / 2;
  }
  array out = conv_general(reshape(x, {1, x.size(), 1}, s), reshape(k, {1, K, 1}, s), {1}, {lo}, {hi}, {1}, {1},
                           1, true, s);
  return reshape(out, {out.size()}, s);
}

}  // namespace ember
