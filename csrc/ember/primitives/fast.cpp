// Transform rules of the fused primitives (primitives/fast.h; kernels in
// backend/cpu/fast.cpp), written with ops (the gated delta rule's vjp and jvp
// differentiate its recurrence unrolled into ops). vmap moves or folds the batch
// axis into the axes the primitive already loops over.
#include "ember/primitives/fast.h"

#include <limits>

#include "ember/ops.h"
#include "ember/ops/fast.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace {

const std::vector<int> kLast{-1};

array scalar(double v, Dtype t) { return array(v, t); }

// where argnum i sits in the argnums (-1: not asked for)
int pos_of(const std::vector<int>& argnums, int i) {
  for (size_t k = 0; k < argnums.size(); ++k)
    if (argnums[k] == i) return static_cast<int>(k);
  return -1;
}

array mean_last(const array& a, Stream s) { return mean(a, kLast, true, s); }

// all axes but the last: a (..., D) summed to (D,)
array sum_rows(const array& a, Stream s) { return sum_to_shape(a, Shape{a.shape(-1)}, s); }

// a batched array with its batch axis at 0 (unbatched: broadcast to B)
array to_front(const array& a, int ax, int64_t B, Stream s) { return batch_axis_to(a, ax, 0, B, s); }

}  // namespace

// ---- RMSNorm: y = x r w, r = 1 / sqrt(mean(x^2) + eps) ---------------------------

std::vector<array> RMSNorm::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  Stream s = stream();
  const array& x = primals[0];
  const array& g = cotangents[0];
  const Dtype t = x.dtype();
  std::vector<array> out;
  for (int a : argnums) {
    // each cotangent from statistics of its own, as LayerNorm's (below)
    array r = rsqrt(add(mean_last(square(x, s), s), scalar(eps_, t), s), s);
    if (a == 0) {
      array gw = has_weight_ ? multiply(g, primals[1], s) : g;
      array c = mean_last(multiply(gw, x, s), s);
      out.push_back(subtract(multiply(gw, r, s), multiply(x, multiply(c, power(r, scalar(3, t), s), s), s), s));
    } else {
      out.push_back(sum_rows(multiply(g, multiply(x, r, s), s), s));
    }
  }
  return fuse_derivative(primals, cotangents, out, kFuseRowsMin);
}

std::vector<array> RMSNorm::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  Stream s = stream();
  const array& x = primals[0];
  const Dtype t = x.dtype();
  array r = rsqrt(add(mean_last(square(x, s), s), scalar(eps_, t), s), s);
  std::optional<array> res;
  if (int k = pos_of(argnums, 0); k >= 0) {
    const array& tx = tangents[k];
    array c = mean_last(multiply(x, tx, s), s);
    array d = subtract(multiply(tx, r, s), multiply(x, multiply(c, power(r, scalar(3, t), s), s), s), s);
    if (has_weight_) d = multiply(d, primals[1], s);
    res = d;
  }
  if (int k = pos_of(argnums, 1); k >= 0) {
    array d = multiply(multiply(x, r, s), tangents[k], s);
    res = res ? add(*res, d, s) : d;
  }
  return {*res};
}

std::pair<std::vector<array>, std::vector<int>> RMSNorm::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  Stream s = stream();
  int64_t B = batch_size(inputs, axes, name());
  array x = to_front(inputs[0], axes[0], B, s);
  if (!has_weight_ || axes[1] < 0) {
    std::optional<array> w;
    if (has_weight_) w = inputs[1];
    return {{fast::rms_norm(x, w, eps_, s)}, {0}};
  }
  Shape ws(x.ndim(), 1);  // (B, 1, ..., D)
  ws[0] = B;
  ws.back() = x.shape(-1);
  array w = reshape(to_front(inputs[1], axes[1], B, s), ws, s);
  return {{multiply(fast::rms_norm(x, std::nullopt, eps_, s), w, s)}, {0}};
}

// ---- LayerNorm: y = xhat w + b, xhat = (x - mean) r, r = 1 / sqrt(var + eps) -------

namespace {
std::pair<array, array> ln_stats(const array& x, double eps, Stream s) {
  array xc = subtract(x, mean_last(x, s), s);
  array r = rsqrt(add(mean_last(square(xc, s), s), scalar(eps, x.dtype()), s), s);
  return {multiply(xc, r, s), r};
}
}  // namespace

std::vector<array> LayerNorm::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                  const std::vector<int>& argnums, const std::vector<array>&) {
  Stream s = stream();
  const array& g = cotangents[0];
  std::vector<array> out;
  for (int a : argnums) {
    // each cotangent from statistics of its own (fresh nodes): where they
    // are shared, the fusion pass cannot take x's into one row program,
    // because the weight's cotangent (a sum over the rows, outside it) also
    // reads them
    if (a == 0) {
      auto [xhat, r] = ln_stats(primals[0], eps_, s);
      array gw = has_weight_ ? multiply(g, primals[1], s) : g;
      array d = subtract(subtract(gw, mean_last(gw, s), s), multiply(xhat, mean_last(multiply(gw, xhat, s), s), s), s);
      out.push_back(multiply(r, d, s));
    } else if (a == 1 && has_weight_) {
      out.push_back(sum_rows(multiply(g, ln_stats(primals[0], eps_, s).first, s), s));
    } else {
      out.push_back(sum_rows(g, s));
    }
  }
  return fuse_derivative(primals, cotangents, out, kFuseRowsMin);
}

std::vector<array> LayerNorm::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                  const std::vector<int>& argnums, const std::vector<array>&) {
  Stream s = stream();
  auto [xhat, r] = ln_stats(primals[0], eps_, s);
  std::optional<array> res;
  auto acc = [&](array d) { res = res ? add(*res, d, s) : d; };
  if (int k = pos_of(argnums, 0); k >= 0) {
    const array& tx = tangents[k];
    array d = multiply(r, subtract(subtract(tx, mean_last(tx, s), s), multiply(xhat, mean_last(multiply(tx, xhat, s), s), s), s), s);
    acc(has_weight_ ? multiply(d, primals[1], s) : d);
  }
  if (has_weight_) {
    if (int k = pos_of(argnums, 1); k >= 0) acc(multiply(xhat, tangents[k], s));
  }
  if (has_bias_) {
    if (int k = pos_of(argnums, has_weight_ ? 2 : 1); k >= 0) acc(broadcast_to(tangents[k], primals[0].shape(), s));
  }
  return {*res};
}

std::pair<std::vector<array>, std::vector<int>> LayerNorm::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  Stream s = stream();
  int64_t B = batch_size(inputs, axes, name());
  array x = to_front(inputs[0], axes[0], B, s);
  const int iw = has_weight_ ? 1 : -1, ib = has_bias_ ? (has_weight_ ? 2 : 1) : -1;
  const bool wb = iw >= 0 && axes[iw] >= 0, bb = ib >= 0 && axes[ib] >= 0;
  std::optional<array> w, b;
  if (iw >= 0 && !wb) w = inputs[iw];
  if (ib >= 0 && !bb) b = inputs[ib];
  if (!wb && !bb) return {{fast::layer_norm(x, w, b, eps_, s)}, {0}};
  Shape ws(x.ndim(), 1);
  ws[0] = B;
  ws.back() = x.shape(-1);
  array y = fast::layer_norm(x, std::nullopt, std::nullopt, eps_, s);
  y = multiply(y, wb ? reshape(to_front(inputs[iw], axes[iw], B, s), ws, s) : (w ? *w : scalar(1, x.dtype())), s);
  if (bb) y = add(y, reshape(to_front(inputs[ib], axes[ib], B, s), ws, s), s);
  else if (b) y = add(y, *b, s);
  return {{y}, {0}};
}

// ---- RoPE -----------------------------------------------------------------------
// A rotation by angles theta = pos / freqs: its transpose is the rotation by
// -theta (scale negated). Through freqs: d out1 = -out2 dtheta,
// d out2 = out1 dtheta on each rotated pair.

namespace {

// positions (offset + l) * scale, shaped to broadcast against (..., L, 1)
array rope_pos(const array& x, const array& offset, double scale, Stream s) {
  const int nd = x.ndim();
  const int64_t L = x.shape(-2);
  array l = arange(0.0, static_cast<double>(L), 1.0, Dtype::float32, s);
  array off = astype(offset, Dtype::float32, s);
  Shape os(nd - 1, 1);
  if (offset.ndim() == 1) os[0] = offset.shape(0);
  array pos = add(reshape(off, os, s), reshape(l, Shape{L}, s), s);  // (B0|1, 1.., L)
  return expand_dims(multiply(pos, scalar(scale, Dtype::float32), s), {-1}, s);
}

// the two halves of the rotated pairs (..., h) each
std::pair<array, array> rope_halves(const array& a, int dims, bool trad, Stream s) {
  const int nd = a.ndim();
  Shape start(nd, 0), stop = a.shape(), step(nd, 1);
  if (trad) {
    step.back() = 2;
    stop.back() = dims;
    array a1 = slice(a, start, stop, step, s);
    start.back() = 1;
    return {a1, slice(a, start, stop, step, s)};
  }
  stop.back() = dims / 2;
  array a1 = slice(a, start, stop, step, s);
  start.back() = dims / 2;
  stop.back() = dims;
  return {a1, slice(a, start, stop, step, s)};
}

}  // namespace

std::vector<array> RoPE::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                             const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  std::vector<array> in{cotangents[0], primals[1]};
  if (has_freqs_) in.push_back(primals[2]);
  std::vector<array> out;
  for (int a : argnums) {
    if (a == 0) {
      out.push_back(make_node<RoPE>(primals[0].shape(), primals[0].dtype(), in, s, dims_, traditional_, base_,
                                    -scale_, has_freqs_));
    } else {  // freqs
      auto [o1, o2] = rope_halves(astype(outputs[0], Dtype::float32, s), dims_, traditional_, s);
      auto [g1, g2] = rope_halves(astype(cotangents[0], Dtype::float32, s), dims_, traditional_, s);
      array dth = subtract(multiply(g2, o1, s), multiply(g1, o2, s), s);
      array dinv = sum_rows(multiply(dth, rope_pos(primals[0], primals[1], scale_, s), s), s);
      const array& f = primals[2];
      out.push_back(negative(divide(dinv, square(f, s), s), s));
    }
  }
  return out;
}

std::vector<array> RoPE::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                             const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  std::optional<array> res;
  if (int k = pos_of(argnums, 0); k >= 0) {
    std::vector<array> in{tangents[k], primals[1]};
    if (has_freqs_) in.push_back(primals[2]);
    res = make_node<RoPE>(primals[0].shape(), primals[0].dtype(), in, s, dims_, traditional_, base_, scale_,
                          has_freqs_);
  }
  if (int k = has_freqs_ ? pos_of(argnums, 2) : -1; k >= 0) {
    const array& f = primals[2];
    array dth = multiply(rope_pos(primals[0], primals[1], scale_, s), negative(divide(tangents[k], square(f, s), s), s), s);
    const Dtype t = primals[0].dtype();
    auto [o1, o2] = rope_halves(astype(outputs[0], Dtype::float32, s), dims_, traditional_, s);
    array t1 = negative(multiply(o2, dth, s), s), t2 = multiply(o1, dth, s);
    array rot;
    if (traditional_) {
      Shape sh = t1.shape();
      sh.back() = dims_;
      rot = reshape(stack({t1, t2}, -1, s), sh, s);
    } else {
      rot = concatenate({t1, t2}, -1, s);
    }
    const int64_t D = primals[0].shape(-1);
    if (D > dims_) {
      Shape zs = rot.shape();
      zs.back() = D - dims_;
      rot = concatenate({rot, zeros(zs, rot.dtype(), s)}, -1, s);
    }
    rot = astype(rot, t, s);
    res = res ? add(*res, rot, s) : rot;
  }
  return {*res};
}

std::pair<std::vector<array>, std::vector<int>> RoPE::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  Stream s = stream();
  int64_t B = batch_size(inputs, axes, name());
  if (has_freqs_ && axes[2] >= 0) {
    // one set of frequencies per batch element: one node per element
    array x = to_front(inputs[0], axes[0], B, s);
    array o = to_front(inputs[1], axes[1], B, s);
    array f = to_front(inputs[2], axes[2], B, s);
    std::vector<array> ys;
    for (int64_t n = 0; n < B; ++n) {
      auto at = [&](const array& a) {
        Shape start(a.ndim(), 0), stop = a.shape(), step(a.ndim(), 1);
        start[0] = n;
        stop[0] = n + 1;
        return squeeze(slice(a, start, stop, step, s), Axes{0}, s);
      };
      ys.push_back(fast::rope(at(x), dims_, traditional_, std::nullopt, scale_, at(o), at(f), s));
    }
    return {{stack(ys, 0, s)}, {0}};
  }
  std::optional<array> f;
  if (has_freqs_) f = inputs[2];
  std::optional<double> base;
  if (!has_freqs_) base = base_;
  array x = to_front(inputs[0], axes[0], B, s);
  const array& off = inputs[1];
  if (off.ndim() == 0 && axes[1] < 0) {  // positions do not depend on the leading axes
    return {{fast::rope(x, dims_, traditional_, base, scale_, off, f, s)}, {0}};
  }
  // fold the batch into the first axis: (B, B0, ...) -> (B B0, ...), one offset per row
  const int64_t B0 = x.shape(1);
  Shape fs(x.shape().begin() + 1, x.shape().end());
  fs[0] = B * B0;
  array o = to_front(off, axes[1], B, s);  // (B,) or (B, B0)
  if (o.ndim() == 1) o = expand_dims(o, {1}, s);
  o = reshape(broadcast_to(o, Shape{B, B0}, s), Shape{B * B0}, s);
  array y = fast::rope(reshape(x, fs, s), dims_, traditional_, base, scale_, o, f, s);
  return {{reshape(y, x.shape(), s)}, {0}};
}

// ---- Scaled dot-product attention -----------------------------------------------
// The rules recompute the probabilities with ops, by kv-head group:
// q (B, Hk, g, L, D) against k (B, Hk, 1, S, D).

namespace {

struct Attn {
  array qg, k5, v5, p;            // p: (B, Hk, g, L, S) without the sink column
  std::optional<array> psink;     // (B, Hk, g, L, 1)
  int64_t B, Hq, Hk, g, L, S, D, Dv;
};

Attn attn_probs(const ScaledDotProductAttention& P, const std::vector<array>& in, Stream s) {
  using MK = ScaledDotProductAttention::MaskKind;
  const array &q = in[0], &k = in[1], &v = in[2];
  Attn a{q, k, v, q, std::nullopt, q.shape(0), q.shape(1), k.shape(1), q.shape(1) / k.shape(1), q.shape(2),
         k.shape(2), q.shape(3), v.shape(3)};
  const Dtype t = q.dtype();
  a.qg = reshape(q, Shape{a.B, a.Hk, a.g, a.L, a.D}, s);
  a.k5 = expand_dims(k, {2}, s);
  a.v5 = expand_dims(v, {2}, s);
  array sc = multiply(matmul(a.qg, swapaxes(a.k5, -1, -2, s), s), scalar(P.scale(), t), s);
  const array lowest = scalar(std::numeric_limits<double>::lowest(), Dtype::float64);
  const array neg = astype(full(Shape{}, lowest, Dtype::float64, s), t, s);
  if (P.mask() == MK::Causal) {
    array rows = reshape(arange(0.0, static_cast<double>(a.L), 1.0, Dtype::int64, s), Shape{a.L, 1}, s);
    array cols = arange(0.0, static_cast<double>(a.S), 1.0, Dtype::int64, s);
    array keep = greater_equal(add(rows, array(static_cast<int64_t>(a.S - a.L), Dtype::int64), s), cols, s);
    sc = where(keep, sc, neg, s);
  } else if (P.mask() == MK::Bool || P.mask() == MK::Additive) {
    array m = reshape(in[3], Shape{a.B, a.Hk, a.g, a.L, a.S}, s);
    sc = P.mask() == MK::Bool ? where(m, sc, neg, s) : add(sc, m, s);
  }
  if (P.has_sinks()) {
    const array& sk = in.back();
    array col = broadcast_to(reshape(sk, Shape{1, a.Hk, a.g, 1, 1}, s), Shape{a.B, a.Hk, a.g, a.L, 1}, s);
    array pf = softmax(concatenate({col, sc}, -1, s), kLast, true, s);
    Shape st(5, 0), sp = pf.shape(), step(5, 1);
    sp.back() = 1;
    a.psink = slice(pf, st, sp, step, s);
    st.back() = 1;
    sp.back() = a.S + 1;
    a.p = slice(pf, st, sp, step, s);
  } else {
    a.p = softmax(sc, kLast, true, s);
  }
  return a;
}

}  // namespace

std::vector<array> ScaledDotProductAttention::vjp(const std::vector<array>& primals,
                                                  const std::vector<array>& cotangents,
                                                  const std::vector<int>& argnums, const std::vector<array>&) {
  Stream s = stream();
  Attn a = attn_probs(*this, primals, s);
  const Dtype t = primals[0].dtype();
  array g5 = reshape(cotangents[0], Shape{a.B, a.Hk, a.g, a.L, a.Dv}, s);
  array dp = matmul(g5, swapaxes(a.v5, -1, -2, s), s);
  array rowdot = sum(multiply(dp, a.p, s), kLast, true, s);
  array ds = multiply(a.p, subtract(dp, rowdot, s), s);
  const array sc = scalar(scale_, t);
  const int imask = (mask_ == Bool || mask_ == Additive) ? 3 : -1;
  std::vector<array> out;
  for (int i : argnums) {
    if (i == 0) {
      out.push_back(reshape(multiply(matmul(ds, a.k5, s), sc, s), primals[0].shape(), s));
    } else if (i == 1) {
      out.push_back(multiply(sum(matmul(swapaxes(ds, -1, -2, s), a.qg, s), std::vector<int>{2}, false, s), sc, s));
    } else if (i == 2) {
      out.push_back(sum(matmul(swapaxes(a.p, -1, -2, s), g5, s), std::vector<int>{2}, false, s));
    } else if (i == imask) {
      out.push_back(reshape(ds, primals[3].shape(), s));
    } else {  // sinks
      array dsk = negative(multiply(*a.psink, rowdot, s), s);  // (B, Hk, g, L, 1)
      out.push_back(reshape(sum(dsk, std::vector<int>{0, 3, 4}, false, s), Shape{a.Hq}, s));
    }
  }
  // (its row program runs over the scores, L / D times the inputs' size)
  return fuse_derivative(primals, cotangents, out, kFuseElementwiseMin);
}

std::vector<array> ScaledDotProductAttention::jvp(const std::vector<array>& primals,
                                                  const std::vector<array>& tangents,
                                                  const std::vector<int>& argnums, const std::vector<array>&) {
  Stream s = stream();
  Attn a = attn_probs(*this, primals, s);
  const Dtype t = primals[0].dtype();
  const array sc = scalar(scale_, t);
  const int imask = (mask_ == Bool || mask_ == Additive) ? 3 : -1;
  const int isink = has_sinks_ ? static_cast<int>(primals.size()) - 1 : -1;
  array dsc = zeros(a.p.shape(), t, s);  // tangent of the scores
  std::optional<array> dsink;
  std::optional<array> dv;
  for (size_t k = 0; k < argnums.size(); ++k) {
    const int i = argnums[k];
    const array& tg = tangents[k];
    if (i == 0) {
      array tq = reshape(tg, a.qg.shape(), s);
      dsc = add(dsc, multiply(matmul(tq, swapaxes(a.k5, -1, -2, s), s), sc, s), s);
    } else if (i == 1) {
      dsc = add(dsc, multiply(matmul(a.qg, swapaxes(expand_dims(tg, {2}, s), -1, -2, s), s), sc, s), s);
    } else if (i == 2) {
      dv = matmul(a.p, expand_dims(tg, {2}, s), s);
    } else if (i == imask) {
      dsc = add(dsc, reshape(tg, a.p.shape(), s), s);
    } else if (i == isink) {
      dsink = reshape(tg, Shape{1, a.Hk, a.g, 1, 1}, s);
    }
  }
  array mean_d = sum(multiply(a.p, dsc, s), kLast, true, s);
  if (a.psink && dsink) mean_d = add(mean_d, multiply(*a.psink, *dsink, s), s);
  array dp = multiply(a.p, subtract(dsc, mean_d, s), s);
  array dout = matmul(dp, a.v5, s);
  if (dv) dout = add(dout, *dv, s);
  return {reshape(dout, Shape{a.B, a.Hq, a.L, a.Dv}, s)};
}

std::pair<std::vector<array>, std::vector<int>> ScaledDotProductAttention::vmap(const std::vector<array>& inputs,
                                                                                const std::vector<int>& axes) {
  Stream s = stream();
  int64_t N = batch_size(inputs, axes, name());
  const int isink = has_sinks_ ? static_cast<int>(inputs.size()) - 1 : -1;
  if (isink >= 0 && axes[isink] >= 0) {
    // sinks per batch element: fold the batch into the heads instead,
    // (N, B, H, ...) -> (B, N H, ...), so that query head n Hq + h keeps kv
    // head n Hk + h / (Hq / Hk) and sink n Hq + h
    auto fold_heads = [&](int i) {
      array x = swapaxes(to_front(inputs[i], axes[i], N, s), 0, 1, s);
      Shape sh(x.shape().begin() + 1, x.shape().end());
      sh[0] = x.shape(0);
      sh[1] *= N;
      return reshape(x, sh, s);
    };
    array q = fold_heads(0), k = fold_heads(1), v = fold_heads(2);
    std::optional<array> mask;
    std::optional<std::string> mode;
    if (mask_ == Causal) mode = "causal";
    if (mask_ == Bool || mask_ == Additive) mask = fold_heads(3);
    array sk = to_front(inputs[isink], axes[isink], N, s);
    sk = reshape(sk, Shape{N * sk.shape(1)}, s);
    array y = fast::scaled_dot_product_attention(q, k, v, scale_, mode, mask, sk, s);
    const int64_t Hq = y.shape(1) / N;
    return {{reshape(y, Shape{y.shape(0), N, Hq, y.shape(2), y.shape(3)}, s)}, {1}};
  }
  // fold the batch into the batch axis: (N, B, ...) -> (N B, ...)
  auto fold = [&](int i) {
    array x = to_front(inputs[i], axes[i], N, s);
    Shape sh(x.shape().begin() + 1, x.shape().end());
    sh[0] *= N;
    return reshape(x, sh, s);
  };
  array q = fold(0), k = fold(1), v = fold(2);
  std::optional<array> mask, sinks;
  std::optional<std::string> mode;
  if (mask_ == Causal) mode = "causal";
  if (mask_ == Bool || mask_ == Additive) mask = fold(3);
  if (isink >= 0) sinks = inputs[isink];
  array y = fast::scaled_dot_product_attention(q, k, v, scale_, mode, mask, sinks, s);
  const int64_t B = y.shape(0) / N;
  return {{reshape(y, Shape{N, B, y.shape(1), y.shape(2), y.shape(3)}, s)}, {0}};
}

// ---- CrossEntropy: l = logsumexp(x) - x[t]; dl/dx = softmax(x) - onehot(t) --------

namespace {
// the class indices wrapped into [0, C), shaped (..., 1)
array ce_index(const array& logits, const array& targets, Stream s) {
  const int64_t C = logits.shape(-1);
  array t = where(less(targets, array(int64_t(0), Dtype::int64), s), add(targets, array(C, Dtype::int64), s),
                  targets, s);
  return expand_dims(t, {-1}, s);
}
}  // namespace

std::vector<array> CrossEntropy::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                     const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const array& x = primals[0];
  const Dtype ct = outputs[0].dtype();
  std::vector<array> out;
  for (int a : argnums) {
    if (a != 0) {
      out.push_back(zeros_like(primals[a]));
      continue;
    }
    array p = softmax(astype(x, ct, s), kLast, false, s);
    array classes = arange(0.0, static_cast<double>(x.shape(-1)), 1.0, Dtype::int64, s);
    array hot = astype(equal(classes, ce_index(x, primals[1], s), s), ct, s);
    array gx = multiply(expand_dims(cotangents[0], {-1}, s), subtract(p, hot, s), s);
    out.push_back(astype(gx, x.dtype(), s));
  }
  return out;
}

std::vector<array> CrossEntropy::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                     const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const Dtype ct = outputs[0].dtype();
  if (pos_of(argnums, 0) < 0) return {zeros_like(outputs[0])};
  const array& x = primals[0];
  array tx = astype(tangents[pos_of(argnums, 0)], ct, s);
  array p = softmax(astype(x, ct, s), kLast, false, s);
  array picked = squeeze(take_along_axis(tx, ce_index(x, primals[1], s), -1, s), Axes{-1}, s);
  return {subtract(sum(multiply(p, tx, s), kLast, false, s), picked, s)};
}

std::pair<std::vector<array>, std::vector<int>> CrossEntropy::vmap(const std::vector<array>& inputs,
                                                                   const std::vector<int>& axes) {
  Stream s = stream();
  int64_t B = batch_size(inputs, axes, name());
  return {{fast::cross_entropy(to_front(inputs[0], axes[0], B, s), to_front(inputs[1], axes[1], B, s), s)}, {0}};
}

// ---- GatedDeltaUpdate: the recurrence written with ops, one step per t -------------

namespace {

// {y, final state} of the rule for q, k, v, g, beta, state (all of one float
// dtype) and the optional uint8 mask, unrolled over T
std::vector<array> gated_delta_ops(const std::vector<array>& in, const std::optional<array>& mask, bool vg,
                                   Stream s) {
  array q = in[0], k = in[1];
  const array &v = in[2], &g = in[3], &beta = in[4];
  array S = in[5];
  const int64_t B = q.shape(0), T = q.shape(1), Hk = q.shape(2), Hv = v.shape(2), Dv = v.shape(3);
  if (Hv != Hk) {
    q = repeat(q, Hv / Hk, 2, s);
    k = repeat(k, Hv / Hk, 2, s);
  }
  std::optional<array> m;
  if (mask) m = astype(*mask, Dtype::bool_, s);
  auto at = [&](const array& a, int64_t t) {  // a[:, t]
    Shape start(a.ndim(), 0), stop = a.shape(), step(a.ndim(), 1);
    start[1] = t;
    stop[1] = t + 1;
    return squeeze(slice(a, start, stop, step, s), Axes{1}, s);
  };
  std::vector<array> ys;
  for (int64_t t = 0; t < T; ++t) {
    array gt = at(g, t);
    gt = vg ? expand_dims(gt, {2}, s) : reshape(gt, Shape{B, Hv, 1, 1}, s);
    array k4 = expand_dims(at(k, t), {2}, s);  // (B, Hv, 1, Dk)
    array Sn = multiply(S, gt, s);
    array mem = sum(multiply(Sn, k4, s), kLast, false, s);  // (B, Hv, Dv)
    array d = multiply(subtract(at(v, t), mem, s), expand_dims(at(beta, t), {-1}, s), s);
    Sn = add(Sn, multiply(k4, expand_dims(d, {-1}, s), s), s);
    array yt = sum(multiply(Sn, expand_dims(at(q, t), {2}, s), s), kLast, false, s);
    if (m) {
      array mt = at(*m, t);
      Sn = where(reshape(mt, Shape{B, 1, 1, 1}, s), Sn, S, s);
      yt = where(reshape(mt, Shape{B, 1, 1}, s), yt, zeros_like(yt, {}, s), s);
    }
    S = Sn;
    ys.push_back(yt);
  }
  array y = T ? stack(ys, 1, s) : zeros(Shape{B, 0, Hv, Dv}, v.dtype(), s);
  return {y, S};
}

}  // namespace

std::vector<array> GatedDeltaUpdate::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                         const std::vector<int>& argnums, const std::vector<array>&) {
  Stream s = stream();
  std::optional<array> mask;
  if (has_mask_) mask = primals[6];
  const bool vg = vector_gate_;
  Fun f = [mask, vg, s](const std::vector<array>& x) { return gated_delta_ops(x, mask, vg, s); };
  auto grads = ember::vjp(f, std::vector<array>(primals.begin(), primals.begin() + 6), cotangents).second;
  std::vector<array> out;
  for (int a : argnums) out.push_back(a < 6 ? grads[a] : zeros_like(primals[a]));
  return out;
}

std::vector<array> GatedDeltaUpdate::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                         const std::vector<int>& argnums, const std::vector<array>&) {
  Stream s = stream();
  std::optional<array> mask;
  if (has_mask_) mask = primals[6];
  const bool vg = vector_gate_;
  std::vector<array> x(primals.begin(), primals.begin() + 6), tx;
  for (int i = 0; i < 6; ++i) {
    const int k = pos_of(argnums, i);
    tx.push_back(k >= 0 ? tangents[k] : zeros_like(x[i]));
  }
  Fun f = [mask, vg, s](const std::vector<array>& a) { return gated_delta_ops(a, mask, vg, s); };
  return ember::jvp(f, x, tx).second;
}

std::pair<std::vector<array>, std::vector<int>> GatedDeltaUpdate::vmap(const std::vector<array>& inputs,
                                                                       const std::vector<int>& axes) {
  Stream s = stream();
  const int64_t N = batch_size(inputs, axes, name());
  auto fold = [&](size_t i) {  // (N, B, ...) -> (N B, ...)
    array x = to_front(inputs[i], axes[i], N, s);
    Shape sh(x.shape().begin() + 1, x.shape().end());
    sh[0] *= N;
    return reshape(x, sh, s);
  };
  std::optional<array> mask;
  if (has_mask_) mask = fold(6);
  auto r = fast::gated_delta_update(fold(0), fold(1), fold(2), fold(3), fold(4), fold(5), mask, s);
  std::vector<array> out;
  for (const array& y : r) {
    Shape sh = y.shape();
    sh[0] /= N;
    sh.insert(sh.begin(), N);
    out.push_back(reshape(y, sh, s));
  }
  return {out, {0, 0}};
}

}  // namespace ember
