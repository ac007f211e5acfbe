// The fused primitives behind `mx.fast` (ops/fast.h): RMS and layer
// normalisation over the last axis, rotary position embeddings and scaled
// dot-product attention, cross entropy over class indices and the gated
// delta rule. Each runs as one kernel (backend/cpu/fast.cpp); their rules
// (primitives/fast.cpp) are written with ops.
#pragma once

#include "ember/primitive.h"

namespace ember {

// inputs: x, then weight (1-D, x's last dim) when has_weight; all of the
// output dtype. Accumulates in float32 for half types.
class RMSNorm final : public Primitive {
 public:
  RMSNorm(Stream s, double eps, bool has_weight) : Primitive(s), eps_(eps), has_weight_(has_weight) {}
  const char* name() const override { return "RMSNorm"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  double eps() const { return eps_; }
  bool has_weight() const { return has_weight_; }

 private:
  double eps_;
  bool has_weight_;
};

// inputs: x, then weight when has_weight, then bias when has_bias.
class LayerNorm final : public Primitive {
 public:
  LayerNorm(Stream s, double eps, bool has_weight, bool has_bias)
      : Primitive(s), eps_(eps), has_weight_(has_weight), has_bias_(has_bias) {}
  const char* name() const override { return "LayerNorm"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  double eps() const { return eps_; }
  bool has_weight() const { return has_weight_; }
  bool has_bias() const { return has_bias_; }

 private:
  double eps_;
  bool has_weight_, has_bias_;
};

// inputs: x (..., L, D) with ndim >= 3, offset (an integer scalar, or a
// vector over x's first axis), then freqs (dims/2, float32) when has_freqs.
// Position of row l: (offset + l) * scale; angle i: position / freqs[i], or
// position * base^(-2i/dims) without freqs. The first `dims` features are
// rotated in pairs (i, i + dims/2), or (2i, 2i+1) when traditional.
class RoPE final : public Primitive {
 public:
  RoPE(Stream s, int dims, bool traditional, double base, double scale, bool has_freqs)
      : Primitive(s), dims_(dims), traditional_(traditional), base_(base), scale_(scale), has_freqs_(has_freqs) {}
  const char* name() const override { return "RoPE"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  int dims() const { return dims_; }
  bool traditional() const { return traditional_; }
  double base() const { return base_; }
  double scale() const { return scale_; }
  bool has_freqs() const { return has_freqs_; }

 private:
  int dims_;
  bool traditional_;
  double base_, scale_;
  bool has_freqs_;
};

// inputs: q (B, Hq, L, D), k (B, Hk, S, D), v (B, Hk, S, Dv) of the output
// dtype (Hq a multiple of Hk), then the mask broadcast to (B, Hq, L, S)
// (bool: keep where true; otherwise added to the scores) when mask is
// Bool/Additive, then sinks (Hq,) when has_sinks. Causal: query l sees the
// keys j <= l + S - L. Computed block by block with an online softmax.
class ScaledDotProductAttention final : public Primitive {
 public:
  enum MaskKind { None, Causal, Bool, Additive };
  ScaledDotProductAttention(Stream s, double scale, MaskKind mask, bool has_sinks)
      : Primitive(s), scale_(scale), mask_(mask), has_sinks_(has_sinks) {}
  const char* name() const override { return "ScaledDotProductAttention"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  double scale() const { return scale_; }
  MaskKind mask() const { return mask_; }
  bool has_sinks() const { return has_sinks_; }

 private:
  double scale_;
  MaskKind mask_;
  bool has_sinks_;
};

// inputs: logits (..., C) of a float type, targets (...) int64 class indices
// (negative ones count from the end). Output: logsumexp(logits, -1) -
// logits[target] in float32 (float64 for float64 logits), accumulated in
// float32 for half types. A target outside [-C, C) raises at eval.
class CrossEntropy final : public Primitive {
 public:
  explicit CrossEntropy(Stream s) : Primitive(s) {}
  const char* name() const override { return "CrossEntropy"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
};

// The gated delta rule, one recurrent step per time step t for each batch
// element b and value head h (key head h / (Hv / Hk)):
//   S = S * g_t;  S += beta_t (v_t - S k_t) k_t^T;  y_t = S q_t
// with the state S (Dv, Dk). inputs: q, k (B, T, Hk, Dk), v (B, T, Hv, Dv),
// g (B, T, Hv) or (B, T, Hv, Dk) (a gate per key feature when vector_gate),
// beta (B, T, Hv), the initial state (B, Hv, Dv, Dk), then the mask (B, T)
// (uint8 0/1; 0: the step leaves S as it is and y_t = 0) when has_mask; all
// but the mask of the state's dtype. Outputs: y (B, T, Hv, Dv) of the state's
// dtype (the op casts it) and the final state.
class GatedDeltaUpdate final : public Primitive {
 public:
  GatedDeltaUpdate(Stream s, bool vector_gate, bool has_mask)
      : Primitive(s), vector_gate_(vector_gate), has_mask_(has_mask) {}
  const char* name() const override { return "GatedDeltaUpdate"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  bool vector_gate() const { return vector_gate_; }
  bool has_mask() const { return has_mask_; }

 private:
  bool vector_gate_, has_mask_;
};

}  // namespace ember
