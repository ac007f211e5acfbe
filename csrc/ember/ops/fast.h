// Fused ops of MLX's mx.fast: RMS and layer normalisation over the last
// axis, rotary position embeddings and scaled dot-product attention. Each
// builds one node of its primitive (primitives/fast.h) after MLX's argument
// checks and dtype rules (the output dtype promotes the array arguments).
#pragma once

#include <optional>
#include <string>

#include "ember/ops.h"

namespace ember::fast {

#define EMBER_S const StreamOrDevice& s = {}

// x / sqrt(mean(x^2, -1) + eps) * weight; weight (D,) or none.
array rms_norm(const array& x, const std::optional<array>& weight, double eps, EMBER_S);
// (x - mean) / sqrt(var + eps) * weight + bias over the last axis.
array layer_norm(const array& x, const std::optional<array>& weight, const std::optional<array>& bias, double eps,
                 EMBER_S);
// Rotary embedding of the first `dims` features of a (..., L, D), ndim >= 3;
// exactly one of base and freqs; offset an integer scalar or a vector over
// a's first axis.
array rope(const array& a, int dims, bool traditional, std::optional<double> base, double scale,
           const array& offset, const std::optional<array>& freqs = {}, EMBER_S);
// softmax(scale * q k^T + mask) v for q (B, Hq, L, D), k (B, Hk, S, D),
// v (B, Hk, S, Dv); mask_mode none or "causal"; mask an array broadcastable to
// (B, Hq, L, S) (bool: keep where true; else added); sinks (Hq,).
array scaled_dot_product_attention(const array& q, const array& k, const array& v, double scale,
                                   const std::optional<std::string>& mask_mode = {}, const std::optional<array>& mask = {},
                                   const std::optional<array>& sinks = {}, EMBER_S);

// logsumexp(logits, -1) - logits[..., targets] for integer class indices
// targets of logits' shape without the last axis; float32 (float64 for
// float64 logits).
array cross_entropy(const array& logits, const array& targets, EMBER_S);
// The gated delta rule (primitives/fast.h: GatedDeltaUpdate) over q, k
// (B, T, Hk, Dk), v (B, T, Hv, Dv), g (B, T, Hv) or (B, T, Hv, Dk), beta
// (B, T, Hv); the state (B, Hv, Dv, Dk) starts at initial_state or zeros;
// mask (B, T) skips steps. Returns {y (B, T, Hv, Dv) in q's dtype, the final
// state in float32 or wider}.
std::vector<array> gated_delta_update(const array& q, const array& k, const array& v, const array& g,
                                      const array& beta, const std::optional<array>& initial_state = {},
                                      const std::optional<array>& mask = {}, EMBER_S);

#undef EMBER_S

}  // namespace ember::fast
