// Transform rules of the quantization primitives (primitives/quantized.h),
// written with ops. The dequantized weights are linear in the scales and
// biases, so their derivatives are dequantize/quantized_matmul with the
// tangents in place of the scales, and their cotangents the group sums of the
// weights' cotangent (times the codes, for the scales). Quantize has no
// derivative (its outputs are codes and a piecewise-constant fit), as in MLX.
#include "ember/primitives/quantized.h"

#include "ember/ops.h"
#include "ember/ops/quantized.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace {

int pos_of(const std::vector<int>& argnums, int i) {
  for (size_t k = 0; k < argnums.size(); ++k)
    if (argnums[k] == i) return static_cast<int>(k);
  return -1;
}

const char* mode_name(QuantMode m) {
  switch (m) {
    case QuantMode::Affine: return "affine";
    case QuantMode::MxFp4: return "mxfp4";
    case QuantMode::MxFp8: return "mxfp8";
    default: return "nvfp4";
  }
}

// The codes of w as float32 values (scale 1, bias 0), shape (..., R, C).
array codes_of(const array& w, const array& scales, int gs, int bits, Stream s) {
  return dequantize(w, ones(scales.shape(), Dtype::float32, s), zeros(scales.shape(), Dtype::float32, s), gs, bits,
                    "affine", std::nullopt, Dtype::float32, s);
}

// d(scales), d(biases) from the cotangent dw (..., R, C) of the dequantized weights
array group_sum(const array& a, int gs, Stream s) {
  Shape sh = a.shape();
  sh.back() = a.shape(-1) / gs;
  sh.push_back(gs);
  return sum(reshape(a, sh, s), std::vector<int>{-1}, false, s);
}

// The example batch dims of every input made equal in rank (size-1 dims
// inserted after the vmap axis, which all inputs get at 0).
std::vector<array> align_front(const std::vector<array>& in, const std::vector<int>& axes, Stream s) {
  std::vector<array> out;
  int nb = 0;
  for (size_t i = 0; i < in.size(); ++i) nb = std::max(nb, in[i].ndim() - (axes[i] >= 0 ? 1 : 0) - 2);
  for (size_t i = 0; i < in.size(); ++i) {
    array a = batch_axis_or_1_to(in[i], axes[i], 0, s);
    const int r = a.ndim() - 3;
    if (r < nb) {
      Shape sh = a.shape();
      sh.insert(sh.begin() + 1, nb - r, 1);
      a = reshape(a, sh, s);
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace

// ---- Quantize ---------------------------------------------------------------------

std::vector<array> Quantize::vjp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&,
                                 const std::vector<array>&) {
  no_rule("vjp");
}
std::vector<array> Quantize::jvp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&,
                                 const std::vector<array>&) {
  no_rule("jvp");
}
std::pair<std::vector<array>, std::vector<int>> Quantize::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  Stream s = stream();
  if (has_global_ && axes[1] >= 0) detail::fail("quantize", "vmap over the global scale is not supported.");
  int64_t B = batch_size(inputs, axes, name());
  array w = batch_axis_to(inputs[0], axes[0], 0, B, s);
  std::optional<array> g;
  if (has_global_) g = inputs[1];
  auto out = quantize(w, group_size_, bits_, mode_name(mode_), g, s);
  return {out, std::vector<int>(out.size(), 0)};
}

// ---- Dequantize: w = s q + b (times the global scale / 2688) ----------------------

std::vector<array> Dequantize::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                   const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const array& cot = cotangents[0];
  std::vector<array> res;
  for (int a : argnums) {
    const array& p = primals[a];
    if (a == 1) {  // affine scales (the fp modes' are integer codes)
      array q = codes_of(primals[0], primals[1], group_size_, bits_, s);
      res.push_back(astype(group_sum(multiply(astype(cot, Dtype::float32, s), q, s), group_size_, s), p.dtype(), s));
    } else if (a == 2 && mode_ == QuantMode::Affine) {
      res.push_back(astype(group_sum(astype(cot, Dtype::float32, s), group_size_, s), p.dtype(), s));
    } else {  // the global scale: out is proportional to it
      array g = primals[a];
      array d = sum(multiply(astype(cot, Dtype::float32, s), astype(outputs[0], Dtype::float32, s), s), std::nullopt,
                    false, s);
      res.push_back(astype(divide(d, g, s), p.dtype(), s));
    }
  }
  return res;
}

std::vector<array> Dequantize::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                   const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  std::optional<array> res;
  const Dtype t = outputs[0].dtype();
  if (mode_ == QuantMode::Affine) {
    int ks = pos_of(argnums, 1), kb = pos_of(argnums, 2);
    if (ks >= 0 || kb >= 0) {
      array ts = ks >= 0 ? astype(tangents[ks], Dtype::float32, s) : zeros(primals[1].shape(), Dtype::float32, s);
      array tb = kb >= 0 ? astype(tangents[kb], Dtype::float32, s) : zeros(primals[2].shape(), Dtype::float32, s);
      res = dequantize(primals[0], ts, tb, group_size_, bits_, "affine", std::nullopt, t, s);
    }
  }
  if (has_global_) {
    const int gi = mode_ == QuantMode::Affine ? 3 : 2;
    if (int k = pos_of(argnums, gi); k >= 0) {
      array d = astype(multiply(divide(astype(outputs[0], Dtype::float32, s), primals[gi], s),
                                astype(tangents[k], Dtype::float32, s), s), t, s);
      res = res ? add(*res, d, s) : d;
    }
  }
  return {res ? *res : zeros_like(outputs[0], std::nullopt, s)};
}

std::pair<std::vector<array>, std::vector<int>> Dequantize::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  Stream s = stream();
  const size_t nq = mode_ == QuantMode::Affine ? 3 : 2;
  if (has_global_ && axes[nq] >= 0) detail::fail("dequantize", "vmap over the global scale is not supported.");
  int64_t B = batch_size(inputs, axes, name());
  std::vector<array> in;
  for (size_t i = 0; i < nq; ++i) in.push_back(batch_axis_to(inputs[i], axes[i], 0, B, s));
  std::optional<array> b, g;
  if (nq == 3) b = in[2];
  if (has_global_) g = inputs[nq];
  return {{dequantize(in[0], in[1], b, group_size_, bits_, mode_name(mode_), g, out_, s)}, {0}};
}

// ---- QuantizedMatmul: out = x W^T or x W, W = dequantize(w, scales, biases) --------

std::vector<array> QuantizedMatmul::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                        const std::vector<int>& argnums, const std::vector<array>&) {
  Stream s = stream();
  const array& x = primals[0];
  const array& w = primals[1];
  const array& cot = cotangents[0];
  std::optional<array> b;
  if (mode_ == QuantMode::Affine) b = primals[3];
  std::vector<array> res;
  std::optional<array> dw;
  for (int a : argnums) {
    if (a == 0) {
      res.push_back(astype(quantized_matmul(cot, w, primals[2], b, !transpose_, group_size_, bits_,
                                            mode_name(mode_), s), x.dtype(), s));
      continue;
    }
    if (!dw) {  // the cotangent of the dequantized weights (..., R, C), float32
      array xf = astype(x, Dtype::float32, s), cf = astype(cot, Dtype::float32, s);
      if (w.ndim() == 2) {
        xf = reshape(xf, {-1, x.shape(-1)}, s);
        cf = reshape(cf, {-1, cot.shape(-1)}, s);
      }
      dw = transpose_ ? matmul(swapaxes(cf, -1, -2, s), xf, s) : matmul(swapaxes(xf, -1, -2, s), cf, s);
    }
    const array& p = primals[a];
    if (a == 2) {
      array q = codes_of(w, primals[2], group_size_, bits_, s);
      res.push_back(astype(group_sum(multiply(*dw, q, s), group_size_, s), p.dtype(), s));
    } else {
      res.push_back(astype(group_sum(*dw, group_size_, s), p.dtype(), s));
    }
  }
  return res;
}

std::vector<array> QuantizedMatmul::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                        const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const array& x = primals[0];
  std::optional<array> b;
  if (mode_ == QuantMode::Affine) b = primals[3];
  std::optional<array> res;
  if (int k = pos_of(argnums, 0); k >= 0)
    res = quantized_matmul(tangents[k], primals[1], primals[2], b, transpose_, group_size_, bits_, mode_name(mode_),
                           s);
  int ks = pos_of(argnums, 2), kb = pos_of(argnums, 3);
  if (mode_ == QuantMode::Affine && (ks >= 0 || kb >= 0)) {
    array ts = ks >= 0 ? tangents[ks] : zeros_like(primals[2], std::nullopt, s);
    array tb = kb >= 0 ? tangents[kb] : zeros_like(primals[3], std::nullopt, s);
    array d = quantized_matmul(x, primals[1], ts, tb, transpose_, group_size_, bits_, "affine", s);
    res = res ? add(*res, d, s) : d;
  }
  return {astype(res ? *res : zeros_like(outputs[0], std::nullopt, s), outputs[0].dtype(), s)};
}

std::pair<std::vector<array>, std::vector<int>> QuantizedMatmul::vmap(const std::vector<array>& inputs,
                                                                      const std::vector<int>& axes) {
  Stream s = stream();
  batch_size(inputs, axes, name());
  std::optional<array> b;
  bool w_batched = false;
  for (size_t i = 1; i < inputs.size(); ++i) w_batched |= axes[i] >= 0;
  if (!w_batched && inputs[1].ndim() == 2) {
    array x = batch_axis_or_1_to(inputs[0], axes[0], 0, s);
    if (mode_ == QuantMode::Affine) b = inputs[3];
    return {{quantized_matmul(x, inputs[1], inputs[2], b, transpose_, group_size_, bits_, mode_name(mode_), s)}, {0}};
  }
  std::vector<array> in = align_front(inputs, axes, s);
  if (mode_ == QuantMode::Affine) b = in[3];
  return {{quantized_matmul(in[0], in[1], in[2], b, transpose_, group_size_, bits_, mode_name(mode_), s)}, {0}};
}

}  // namespace ember
