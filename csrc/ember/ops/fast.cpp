// The mx.fast ops (ops/fast.h): MLX's argument checks and messages, the
// output dtype, and one fused node each (two outputs for the gated delta
// rule).
#include "ember/ops/fast.h"

#include <sstream>

#include "ember/ops/common.h"
#include "ember/primitives/fast.h"

namespace ember::fast {

using ember::detail::fail;

namespace {

// MLX's way of printing a shape in messages: (1,8,5,16)
std::string shp(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << ")";
  return os.str();
}

void check_affine(const char* op, const char* what, const array& x, const array& w) {
  if (w.ndim() != 1) fail(op, what, " must have 1 dimension but has ", w.ndim(), " dimensions.");
  if (w.shape(0) != x.shape(-1))
    fail(op, what, " must have the same size as the last dimension of x but has ", w.shape(0), " elements.");
}

Dtype float_out(const char* op, Dtype t) {
  if (!is_floating(t)) fail(op, "Received unsupported type ", dtype_name(t), ".");
  return t;
}

}  // namespace

array rms_norm(const array& x, const std::optional<array>& weight, double eps, const StreamOrDevice& s) {
  const char* op = "rms_norm";
  if (x.ndim() == 0) fail(op, "Input must have at least 1 dimension but got input with 0 dimensions.");
  Dtype t = x.dtype();
  if (weight) {
    check_affine(op, "(*weight)", x, *weight);
    t = promote_types(t, weight->dtype());
  }
  float_out(op, t);
  std::vector<array> in{astype(x, t, s)};
  if (weight) in.push_back(astype(*weight, t, s));
  return make_node<RMSNorm>(x.shape(), t, std::move(in), to_stream(s), eps, weight.has_value());
}

array layer_norm(const array& x, const std::optional<array>& weight, const std::optional<array>& bias, double eps,
                 const StreamOrDevice& s) {
  const char* op = "layer_norm";
  if (x.ndim() == 0) fail(op, "Input must have at least 1 dimension but got input with 0 dimensions.");
  Dtype t = x.dtype();
  if (weight) {
    check_affine(op, "weight", x, *weight);
    t = promote_types(t, weight->dtype());
  }
  if (bias) {
    check_affine(op, "bias", x, *bias);  // does not promote (MLX: only the weight does)
  }
  float_out(op, t);
  std::vector<array> in{astype(x, t, s)};
  if (weight) in.push_back(astype(*weight, t, s));
  if (bias) in.push_back(astype(*bias, t, s));
  return make_node<LayerNorm>(x.shape(), t, std::move(in), to_stream(s), eps, weight.has_value(),
                              bias.has_value());
}

array rope(const array& a, int dims, bool traditional, std::optional<double> base, double scale,
           const array& offset, const std::optional<array>& freqs, const StreamOrDevice& s) {
  const char* op = "rope";
  if (a.ndim() < 3)
    fail(op, "Input must have at least 3 dimensions but got input with ", a.ndim(), " dimensions.");
  if (!is_floating(a.dtype())) fail(op, "Input must be a floating type but got ", dtype_name(a.dtype()), ".");
  if (dims % 2 != 0) fail(op, "dims must be even but got ", dims, ".");
  if (dims <= 0 && a.shape(-1) > 0) fail(op, "dims must be positive but got ", dims, ".");
  if (dims > a.shape(-1))
    fail(op, "dims must not exceed the input's last dimension (", a.shape(-1), ") but got ", dims, ".");
  if (base && freqs) fail(op, "Only one of base or freqs can have a value.");
  if (!base && !freqs) fail(op, "Neither base nor freqs has a value.");
  if (freqs && (freqs->ndim() != 1 || freqs->shape(0) != dims / 2))
    fail(op, "freqs must be one dimensional with size ", dims / 2, " but got shape ", shp(freqs->shape()), ".");
  if (!is_integral(offset.dtype()))
    fail(op, "offset must be an integer but got type ", dtype_name(offset.dtype()), ".");
  if (offset.ndim() > 1 || (offset.ndim() == 1 && offset.shape(0) != a.shape(0)))
    fail(op, "offset must be a scalar or vector with ", a.shape(0), " elements but has shape ", shp(offset.shape()),
         ".");
  std::vector<array> in{a, astype(offset, Dtype::int64, s)};
  if (freqs) in.push_back(astype(*freqs, Dtype::float32, s));
  return make_node<RoPE>(a.shape(), a.dtype(), std::move(in), to_stream(s), dims, traditional, base.value_or(0.0),
                         scale, freqs.has_value());
}

array scaled_dot_product_attention(const array& q, const array& k, const array& v, double scale,
                                   const std::optional<std::string>& mask_mode, const std::optional<array>& mask,
                                   const std::optional<array>& sinks, const StreamOrDevice& s) {
  const char* op = "scaled_dot_product_attention";
  for (const array* x : {&q, &k, &v})
    if (x->ndim() != 4) fail(op, "input with shape ", shp(x->shape()), " expected to be rank 4");
  const Dtype t = float_out(op, promote_types(promote_types(q.dtype(), k.dtype()), v.dtype()));
  const int64_t B = q.shape(0), Hq = q.shape(1), L = q.shape(2), Hk = k.shape(1), S = k.shape(2);
  if (Hk == 0 || Hq % Hk != 0)
    fail(op, "n_heads must be a multiple of n_kv_heads, found n_heads ", Hq, " for n_kv_heads ", Hk, ".");
  if (k.shape(1) != v.shape(1))
    fail(op, "keys, values expected to have matching n_kv_heads; found keys with n_heads ", k.shape(1),
         " for values with n_heads ", v.shape(1), ".");
  if (q.shape(3) != k.shape(3))
    fail(op, "query, keys expected to have matching last dimension; found query shape ", shp(q.shape()),
         " for keys shape ", shp(k.shape()), ".");
  for (const array* x : {&k, &v})
    if (x->shape(0) != B) fail(op, "mismatching batch dimension for input with shape ", shp(x->shape()), ".");
  if (k.shape(2) != v.shape(2))
    fail(op, "keys, values expected to have the same sequence length; found keys shape ", shp(k.shape()),
         " for values shape ", shp(v.shape()), ".");
  using P = ScaledDotProductAttention;
  P::MaskKind kind = P::None;
  std::vector<array> in{astype(q, t, s), astype(k, t, s), astype(v, t, s)};
  if (mask_mode) {
    if (*mask_mode != "causal") fail(op, "invalid mask option '", *mask_mode, "'. Must be 'causal', or an array.");
    kind = P::Causal;
  } else if (mask) {
    if (mask->ndim() > 4)
      fail(op, "the mask with shape ", shp(mask->shape()), " expected to have at most rank 4.");
    const Shape full{B, Hq, L, S};
    for (int d = 1; d <= mask->ndim(); ++d) {
      const int64_t m = mask->shape(-d);
      if (m != 1 && m != full[4 - d])
        fail(op, "the mask with shape ", shp(mask->shape()), " does not broadcast to the scores' shape ",
             shp(full), ".");
    }
    if (mask->dtype() == Dtype::bool_) {
      kind = P::Bool;
      in.push_back(broadcast_to(*mask, full, s));
    } else {
      if (promote_types(mask->dtype(), t) != t)
        fail(op, "Mask type must promote to output type ", dtype_name(t), ".");
      kind = P::Additive;
      in.push_back(broadcast_to(astype(*mask, t, s), full, s));
    }
  }
  if (sinks) {
    if (sinks->ndim() != 1 || sinks->shape(0) != Hq)
      fail(op, "Received invalid shape for sinks ", shp(sinks->shape()), ".");
    in.push_back(astype(*sinks, t, s));
  }
  Shape out_shape{B, Hq, L, v.shape(3)};
  return make_node<P>(out_shape, t, std::move(in), to_stream(s), scale, kind, sinks.has_value());
}

array cross_entropy(const array& logits, const array& targets, const StreamOrDevice& s) {
  const char* op = "cross_entropy";
  if (logits.ndim() == 0)
    fail(op, "logits must have at least 1 dimension but got input with 0 dimensions.");
  if (!is_floating(logits.dtype())) fail(op, "Received unsupported logits type ", dtype_name(logits.dtype()), ".");
  if (!is_integral(targets.dtype()))
    fail(op, "targets must be integer class indices but got ", dtype_name(targets.dtype()), ".");
  Shape rows(logits.shape().begin(), logits.shape().end() - 1);
  if (targets.shape() != rows)
    fail(op, "targets shape ", shp(targets.shape()), " does not match logits shape ", shp(logits.shape()),
         " with the last axis removed.");
  if (logits.shape(-1) == 0 && targets.size() > 0)
    fail(op, "logits of shape ", shp(logits.shape()), " have no classes to take targets from.");
  const Dtype out = logits.dtype() == Dtype::float64 ? Dtype::float64 : Dtype::float32;
  return make_node<CrossEntropy>(rows, out, {logits, astype(targets, Dtype::int64, s)}, to_stream(s));
}

std::vector<array> gated_delta_update(const array& q, const array& k, const array& v, const array& g,
                                      const array& beta, const std::optional<array>& initial_state,
                                      const std::optional<array>& mask, const StreamOrDevice& s) {
  const char* op = "gated_delta_update";
  for (const array* x : {&q, &k, &v})
    if (x->ndim() != 4)
      fail(op, "q, k and v must have 4 dimensions (B, T, H, D) but got an input of shape ", shp(x->shape()), ".");
  if (k.shape() != q.shape())
    fail(op, "k of shape ", shp(k.shape()), " must have the shape of q ", shp(q.shape()), ".");
  const int64_t B = q.shape(0), T = q.shape(1), Hk = q.shape(2), Dk = q.shape(3);
  const int64_t Hv = v.shape(2), Dv = v.shape(3);
  if (v.shape(0) != B || v.shape(1) != T)
    fail(op, "v of shape ", shp(v.shape()), " must have the batch and time sizes of q ", shp(q.shape()), ".");
  if (Hk == 0 || Hv % Hk != 0)
    fail(op, "the value heads of v ", shp(v.shape()), " must be a multiple of the key heads of q ", shp(q.shape()),
         ".");
  const Shape gs{B, T, Hv}, gvs{B, T, Hv, Dk};
  if (g.shape() != gs && g.shape() != gvs)
    fail(op, "g of shape ", shp(g.shape()), " must have shape ", shp(gs), " or ", shp(gvs), ".");
  if (beta.shape() != gs) fail(op, "beta of shape ", shp(beta.shape()), " must have shape ", shp(gs), ".");
  const Shape ss{B, Hv, Dv, Dk};
  if (initial_state && initial_state->shape() != ss)
    fail(op, "initial_state of shape ", shp(initial_state->shape()), " must have shape ", shp(ss), ".");
  if (mask && mask->shape() != Shape{B, T})
    fail(op, "mask of shape ", shp(mask->shape()), " must have shape ", shp(Shape{B, T}), ".");
  Dtype t = Dtype::float32;
  for (const array* x : {&q, &k, &v, &g, &beta}) t = promote_types(t, x->dtype());
  if (initial_state) t = promote_types(t, initial_state->dtype());
  if (!is_floating(t)) fail(op, "Received unsupported type ", dtype_name(t), ".");
  std::vector<array> in;
  for (const array* x : {&q, &k, &v, &g, &beta}) in.push_back(astype(*x, t, s));
  in.push_back(initial_state ? astype(*initial_state, t, s) : zeros(ss, t, s));
  if (mask) in.push_back(astype(astype(*mask, Dtype::bool_, s), Dtype::uint8, s));
  auto outs = make_nodes<GatedDeltaUpdate>({Shape{B, T, Hv, Dv}, ss}, {t, t}, std::move(in), to_stream(s),
                                           g.ndim() == 4, mask.has_value());
  const Dtype yt = is_floating(q.dtype()) ? q.dtype() : t;
  return {astype(outs[0], yt, s), outs[1]};
}

}  // namespace ember::fast
