// ConvGeneral: the one N-d (1-3 spatial dims) convolution primitive.
// inputs[0] (N, *S, C) and inputs[1] (O, *K, C/groups), both of the output's
// floating dtype; output (N, *OS, O). Per spatial dim d the input is dilated
// by input_dilation[d] (idil-1 zeros between elements), padded by
// pad_lo[d]/pad_hi[d] zeros (negative: cropped), then correlated with the
// kernel dilated by kernel_dilation[d] at stride[d]:
//   out[n, p, o] = sum_{k, c} xp[n, p*stride + k*kdil, g*Cg + c] * w[o, k', c]
// with k' = k (or K-1-k when flip), g = o / (O/groups). The kernel
// (backend/cpu/conv.cpp) builds bounded blocks of im2col rows and calls BLAS
// for every configuration; the rules are in primitives/conv.cpp.
#pragma once

#include "ember/primitive.h"

namespace ember {

struct ConvParams {
  std::vector<int64_t> stride, pad_lo, pad_hi, kernel_dilation, input_dilation;
  int64_t groups = 1;
  bool flip = false;
  bool operator==(const ConvParams& o) const {
    return stride == o.stride && pad_lo == o.pad_lo && pad_hi == o.pad_hi && kernel_dilation == o.kernel_dilation &&
           input_dilation == o.input_dilation && groups == o.groups && flip == o.flip;
  }
};

class ConvGeneral final : public Primitive {
 public:
  ConvGeneral(Stream s, ConvParams p) : Primitive(s), p_(std::move(p)) {}
  const char* name() const override { return "ConvGeneral"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;
  EMBER_TRANSFORM_RULES
  const ConvParams& params() const { return p_; }

 private:
  ConvParams p_;
};

// The weight gradient of ConvGeneral: inputs[0] the input x (N, *S, C),
// inputs[1] the output cotangent (N, *OS, O); output (O, *K, C/groups)
// (K, a parameter, is the weight's kernel shape). Computed from the same
// im2col blocks as the forward pass (dW_g += ct_g^T @ col_g); its rules are
// convolutions again (it is bilinear in x and the cotangent).
// The ConvGeneral node of input (N, *spatial, C) and weight (O, *kernel, C/G):
// output (N, *output spatial, O) in the input's dtype. No user-level checks:
// the ops validate; the rules build convolutions whose padding may crop past
// the kernel extent.
array conv_node(const array& input, const array& weight, const ConvParams& p, Stream s);

class ConvWeightGrad final : public Primitive {
 public:
  ConvWeightGrad(Stream s, ConvParams p, Shape w_shape) : Primitive(s), p_(std::move(p)), w_shape_(std::move(w_shape)) {}
  const char* name() const override { return "ConvWeightGrad"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;
  EMBER_TRANSFORM_RULES
  const ConvParams& params() const { return p_; }

 private:
  ConvParams p_;
  Shape w_shape_;  // the output (weight) shape
};

}  // namespace ember
