// Quantized weights (MLX's layouts): Quantize and Dequantize, and the matrix
// product with a quantized right-hand side, QuantizedMatmul. Ops in
// ops/quantized.cpp, kernels in backend/cpu/quantized.cpp (the product's
// inner loops in backend/cpu/qmm.cpp, per ISA level), rules in
// primitives/quantized.cpp.
//
// Layouts: a matrix (..., R, C) quantized by groups of `group_size`
// consecutive elements of its last axis becomes (..., R, C * bits / 32)
// uint32 codes and (..., R, C / group_size) scales (and biases).
//   affine  w = scale * q + bias, q unsigned of `bits` bits (1-6, 8), packed
//           from the low bits up; 3, 5 and 6 bits pack 8, 8 and 4 codes into
//           3, 5 and 3 bytes (little endian). Scales and biases in the
//           weights' float dtype.
//   mxfp4   fp4 e2m1 codes (8 per word), e8m0 scales (uint8), group 32
//   mxfp8   fp8 e4m3 codes (4 per word), e8m0 scales, group 32
//   nvfp4   fp4 e2m1 codes, e4m3 scales, group 16, optional float32 global
//           scale (the tensor's scale, folded into every group's)
#pragma once

#include "ember/primitive.h"

namespace ember {

enum class QuantMode : uint8_t { Affine, MxFp4, MxFp8, NvFp4 };

// inputs: w (..., R, C) float, then the global scale (nvfp4, when has_global).
// outputs: codes uint32, scales, then biases (affine only).
class Quantize final : public Primitive {
 public:
  Quantize(Stream s, int group_size, int bits, QuantMode mode, bool has_global)
      : Primitive(s), group_size_(group_size), bits_(bits), mode_(mode), has_global_(has_global) {}
  const char* name() const override { return "Quantize"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  int group_size() const { return group_size_; }
  int bits() const { return bits_; }
  QuantMode mode() const { return mode_; }
  bool has_global() const { return has_global_; }

 private:
  int group_size_, bits_;
  QuantMode mode_;
  bool has_global_;
};

// inputs: codes uint32 (..., R, C*bits/32), scales (..., R, C/group_size),
// then biases (affine), then the global scale (nvfp4, when has_global).
// output: (..., R, C) of the primitive's output dtype.
class Dequantize final : public Primitive {
 public:
  Dequantize(Stream s, int group_size, int bits, QuantMode mode, bool has_global, Dtype out)
      : Primitive(s), group_size_(group_size), bits_(bits), mode_(mode), has_global_(has_global), out_(out) {}
  const char* name() const override { return "Dequantize"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  int group_size() const { return group_size_; }
  int bits() const { return bits_; }
  QuantMode mode() const { return mode_; }
  bool has_global() const { return has_global_; }
  Dtype out_dtype() const { return out_; }

 private:
  int group_size_, bits_;
  QuantMode mode_;
  bool has_global_;
  Dtype out_;
};

// out = x @ W^T (transpose) or x @ W, W the dequantized weights.
// inputs: x (..., M, K) float32/float16/bfloat16, codes (..., R, C*bits/32),
// scales, then biases (affine); the batch dims of all inputs are equal (the
// op broadcasts them). The output (..., M, N) has x's dtype.
class QuantizedMatmul final : public Primitive {
 public:
  QuantizedMatmul(Stream s, int group_size, int bits, QuantMode mode, bool transpose)
      : Primitive(s), group_size_(group_size), bits_(bits), mode_(mode), transpose_(transpose) {}
  const char* name() const override { return "QuantizedMatmul"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  bool batches() const override { return true; }
  bool batches_with(const Primitive& o) const override { return is_equivalent(o); }
  void eval_cpu_batch(const std::vector<Primitive*>& prims, const std::vector<const std::vector<array>*>& inputs,
                      std::vector<std::vector<array>>& outputs) override;
  int group_size() const { return group_size_; }
  int bits() const { return bits_; }
  QuantMode mode() const { return mode_; }
  bool transpose() const { return transpose_; }

 private:
  int group_size_, bits_;
  QuantMode mode_;
  bool transpose_;
};

}  // namespace ember
