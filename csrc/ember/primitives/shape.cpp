// Transform rules of the shape and layout primitives (primitives/shape.h),
// written with public ops so that they differentiate and vmap themselves.
// Their kernels are in backend/cpu/shape.cpp.
//
// The vmap rules move the batch axis to the front (an unbatched operand of
// a multi-input op is broadcast to the batch: batch_axis_to) and
// shift the op's parameters by one dim; every output is batched on axis 0.
#include <algorithm>

#include "ember/ops.h"
#include "ember/primitives/shape.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace {

using VmapResult = std::pair<std::vector<array>, std::vector<int>>;

Shape prepend(int64_t n, const Shape& shape) {
  Shape out{n};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

array zero_scalar(Dtype t) { return array(0, t); }

// The input cotangent of a strided slice: `cot` (the output's) placed at
// start[i] + step[i] * j in zeros of `in_shape`. Built from Slice (to flip
// negative steps), Reshape and Pad (interior zeros for steps > 1, then the
// edges), so its own derivatives stay within this family.
array unslice(const array& cot, const Shape& in_shape, const Shape& start, const Shape& step, Stream s) {
  int nd = cot.ndim();
  if (cot.size() == 0) return zeros(in_shape, cot.dtype(), s);
  // 1. negative steps: reverse those dims; the first element is then the
  // lowest input index.
  Shape first(nd), k(nd);
  bool flip = false;
  Shape fst(nd, 0), fsp(nd), fstep(nd, 1);
  for (int i = 0; i < nd; ++i) {
    int64_t n = cot.shape()[i];
    fsp[i] = n;
    if (step[i] < 0) {
      flip = true;
      first[i] = start[i] + (n - 1) * step[i];
      k[i] = -step[i];
      fst[i] = n - 1;
      fsp[i] = -1;  // through index 0 (the raw slice takes no Python wrap-around)
      fstep[i] = -1;
    } else {
      first[i] = start[i];
      k[i] = step[i];
    }
  }
  array c = flip ? slice(cot, fst, fsp, fstep, s) : cot;
  // 2. steps > 1: each element followed by k-1 zeros, the trailing zeros cut
  bool strided = false;
  for (int i = 0; i < nd; ++i) strided = strided || k[i] > 1;
  if (strided) {
    Shape pairs, spread;
    std::vector<std::pair<int64_t, int64_t>> widths;
    for (int i = 0; i < nd; ++i) {
      int64_t n = c.shape()[i];
      pairs.push_back(n);
      pairs.push_back(1);
      widths.push_back({0, 0});
      widths.push_back({0, k[i] - 1});
      spread.push_back(n * k[i]);
    }
    c = reshape(pad(reshape(c, pairs, s), widths, "constant", zero_scalar(c.dtype()), s), spread, s);
    Shape st(nd, 0), sp(nd), one(nd, 1);
    for (int i = 0; i < nd; ++i) sp[i] = (cot.shape()[i] - 1) * k[i] + 1;
    c = slice(c, st, sp, one, s);
  }
  // 3. the edges
  std::vector<std::pair<int64_t, int64_t>> widths;
  for (int i = 0; i < nd; ++i) widths.push_back({first[i], in_shape[i] - first[i] - c.shape()[i]});
  return pad(c, widths, "constant", zero_scalar(c.dtype()), s);
}

std::vector<std::pair<int64_t, int64_t>> pad_widths(const Shape& low, const Shape& in, const Shape& out) {
  std::vector<std::pair<int64_t, int64_t>> w;
  for (size_t i = 0; i < low.size(); ++i) w.push_back({low[i], out[i] - in[i] - low[i]});
  return w;
}

}  // namespace

// ---- Reshape ----------------------------------------------------------------

std::vector<array> Reshape::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                const std::vector<int>&, const std::vector<array>&) {
  return {reshape(cotangents[0], primals[0].shape(), stream())};
}

std::vector<array> Reshape::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                const std::vector<int>&, const std::vector<array>& outputs) {
  return {reshape(tangents[0], outputs[0].shape(), stream())};
}

VmapResult Reshape::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (axes[0] < 0) return {{reshape(inputs[0], shape_, stream())}, {-1}};
  array x = batch_axis_to(inputs[0], axes[0], 0, -1, stream());
  return {{reshape(x, prepend(x.shape()[0], shape_), stream())}, {0}};
}

// ---- Transpose --------------------------------------------------------------

std::vector<array> Transpose::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  std::vector<int> inv(axes_.size());
  for (size_t i = 0; i < axes_.size(); ++i) inv[axes_[i]] = static_cast<int>(i);
  return {transpose(cotangents[0], inv, stream())};
}

std::vector<array> Transpose::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  return {transpose(tangents[0], axes_, stream())};
}

VmapResult Transpose::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (axes[0] < 0) return {{transpose(inputs[0], axes_, stream())}, {-1}};
  array x = batch_axis_to(inputs[0], axes[0], 0, -1, stream());
  std::vector<int> ax{0};
  for (int a : axes_) ax.push_back(a + 1);
  return {{transpose(x, ax, stream())}, {0}};
}

// ---- Broadcast --------------------------------------------------------------

std::vector<array> Broadcast::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  return {sum_to_shape(cotangents[0], primals[0].shape(), stream())};
}

std::vector<array> Broadcast::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&, const std::vector<array>& outputs) {
  return {broadcast_to(tangents[0], outputs[0].shape(), stream())};
}

VmapResult Broadcast::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (axes[0] < 0) return {{broadcast_to(inputs[0], shape_, stream())}, {-1}};
  array x = batch_axis_to(inputs[0], axes[0], 0, -1, stream());
  // (B, *in) -> (B, 1, ..., 1, *in): the input's dims right-aligned with shape_
  Shape ex(1 + shape_.size() - (x.ndim() - 1), 1);
  ex[0] = x.shape()[0];
  ex.insert(ex.end(), x.shape().begin() + 1, x.shape().end());
  return {{broadcast_to(reshape(x, ex, stream()), prepend(x.shape()[0], shape_), stream())}, {0}};
}

// ---- Slice ------------------------------------------------------------------

std::vector<array> Slice::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                              const std::vector<int>&, const std::vector<array>&) {
  return {unslice(cotangents[0], primals[0].shape(), start_, step_, stream())};
}

std::vector<array> Slice::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                              const std::vector<int>&, const std::vector<array>&) {
  return {slice(tangents[0], start_, stop_, step_, stream())};
}

VmapResult Slice::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (axes[0] < 0) return {{slice(inputs[0], start_, stop_, step_, stream())}, {-1}};
  array x = batch_axis_to(inputs[0], axes[0], 0, -1, stream());
  Shape st = prepend(0, start_), sp = prepend(x.shape()[0], stop_), stp = prepend(1, step_);
  return {{slice(x, st, sp, stp, stream())}, {0}};
}

// ---- AsStrided --------------------------------------------------------------

// The input cotangent: each output element's cotangent added at the flat
// input offset it reads (offset + sum_i j_i * strides_i; reads may repeat).
std::vector<array> AsStrided::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  Stream s = stream();
  const array& x = primals[0];
  const array& cot = cotangents[0];
  if (cot.size() == 0 || x.size() == 0) return {zeros(x.shape(), cot.dtype(), s)};
  Dtype it = index_dtype(x.size());
  int nd = cot.ndim();
  array idx = array(offset_, it);
  for (int i = 0; i < nd; ++i) {
    Shape one(nd, 1);
    one[i] = cot.shape()[i];
    array r = arange(0.0, static_cast<double>(cot.shape()[i]), 1.0, it, s);
    idx = add(idx, multiply(reshape(r, one, s), array(strides_[i], it), s), s);
  }
  idx = broadcast_to(idx, cot.shape(), s);
  array flat = scatter(zeros({x.size()}, cot.dtype(), s), {idx}, cot, {0}, ScatterKind::Add, s);
  return {reshape(flat, x.shape(), s)};
}

std::vector<array> AsStrided::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&, const std::vector<array>& outputs) {
  return {as_strided(tangents[0], outputs[0].shape(), strides_, offset_, stream())};
}

// The batch becomes a leading dim whose stride is the per-item input size
// (as_strided reads its input in row-major order, batch first here).
VmapResult AsStrided::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (axes[0] < 0) return {{as_strided(inputs[0], shape_, strides_, offset_, stream())}, {-1}};
  array x = batch_axis_to(inputs[0], axes[0], 0, -1, stream());
  int64_t per = x.shape()[0] ? x.size() / x.shape()[0] : 0;
  return {{as_strided(x, prepend(x.shape()[0], shape_), prepend(per, strides_), offset_, stream())}, {0}};
}

// ---- Contiguous -------------------------------------------------------------

std::vector<array> Contiguous::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                   const std::vector<int>&, const std::vector<array>&) {
  return {cotangents[0]};
}

std::vector<array> Contiguous::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                   const std::vector<int>&, const std::vector<array>&) {
  return {tangents[0]};
}

VmapResult Contiguous::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  return {{contiguous(inputs[0], allow_col_, stream())}, {axes[0]}};
}

// ---- Full -------------------------------------------------------------------

// Input 0 (the value) is broadcast to the output and cast to its dtype.
std::vector<array> Full::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                             const std::vector<int>&, const std::vector<array>&) {
  const array& v = primals[0];
  return {astype(sum_to_shape(cotangents[0], v.shape(), stream()), v.dtype(), stream())};
}

std::vector<array> Full::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                             const std::vector<int>&, const std::vector<array>& outputs) {
  return {full(outputs[0].shape(), tangents[0], outputs[0].dtype(), stream())};
}

VmapResult Full::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (axes[0] < 0) return {{full(shape_, inputs[0], dtype_, stream())}, {-1}};
  array v = batch_axis_to(inputs[0], axes[0], 0, -1, stream());
  // (B, *v) -> (B, 1, ..., 1, *v), right-aligned with shape_
  Shape ex(1 + shape_.size() - (v.ndim() - 1), 1);
  ex[0] = v.shape()[0];
  ex.insert(ex.end(), v.shape().begin() + 1, v.shape().end());
  return {{full(prepend(v.shape()[0], shape_), reshape(v, ex, stream()), dtype_, stream())}, {0}};
}

// ---- Arange -----------------------------------------------------------------

// No inputs: nothing to differentiate, and never batched.
std::vector<array> Arange::vjp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&,
                               const std::vector<array>&) {
  return {};
}

std::vector<array> Arange::jvp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&,
                               const std::vector<array>& outputs) {
  return {zeros_like(outputs[0], std::nullopt, stream())};
}

VmapResult Arange::vmap(const std::vector<array>&, const std::vector<int>&) {
  if (!n_) no_rule("vmap");
  return {{make_node<Arange>(Shape{*n_}, dtype_, {}, stream(), start_, step_, *n_, dtype_)}, {-1}};
}

// ---- Concatenate ------------------------------------------------------------

std::vector<array> Concatenate::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  const array& cot = cotangents[0];
  std::vector<int64_t> offsets{0};
  for (auto& p : primals) offsets.push_back(offsets.back() + p.shape()[axis_]);
  std::vector<array> out;
  for (int i : argnums) {
    Shape st(cot.ndim(), 0), sp = cot.shape(), step(cot.ndim(), 1);
    st[axis_] = offsets[i];
    sp[axis_] = offsets[i + 1];
    out.push_back(slice(cot, st, sp, step, stream()));
  }
  return out;
}

std::vector<array> Concatenate::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> parts;
  for (size_t i = 0; i < primals.size(); ++i) {
    auto it = std::find(argnums.begin(), argnums.end(), static_cast<int>(i));
    parts.push_back(it != argnums.end() ? tangents[it - argnums.begin()]
                                        : zeros(primals[i].shape(), tangents[0].dtype(), stream()));
  }
  return {parts.size() == 1 ? parts[0] : concatenate(parts, axis_, stream())};
}

VmapResult Concatenate::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (!any_batched(axes)) return {{concatenate(inputs, axis_, stream())}, {-1}};
  int64_t n = batch_size(inputs, axes, name());
  std::vector<array> xs;
  for (size_t i = 0; i < inputs.size(); ++i) xs.push_back(batch_axis_to(inputs[i], axes[i], 0, n, stream()));
  return {{concatenate(xs, axis_ + 1, stream())}, {0}};
}

// ---- Pad --------------------------------------------------------------------

// Input 0 lands at low_ inside the output; input 1 (a 0-d value) fills the
// rest, so its cotangent is the output cotangent summed over the padding.
std::vector<array> Pad::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                            const std::vector<int>& argnums, const std::vector<array>&) {
  Stream s = stream();
  const array& x = primals[0];
  const array& cot = cotangents[0];
  std::vector<array> out;
  for (int i : argnums) {
    if (i == 0) {
      Shape stop(x.ndim()), step(x.ndim(), 1);
      for (int d = 0; d < x.ndim(); ++d) stop[d] = low_[d] + x.shape()[d];
      out.push_back(slice(cot, low_, stop, step, s));
    } else {
      // a 0/1 mask of the padding (exact, unlike sum(cot) - sum(inside))
      array mask = pad(zeros(x.shape(), cot.dtype(), s), pad_widths(low_, x.shape(), cot.shape()), "constant",
                       array(1, cot.dtype()), s);
      out.push_back(reshape(sum(multiply(cot, mask, s), std::nullopt, false, s), primals[1].shape(), s));
    }
  }
  return out;
}

std::vector<array> Pad::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                            const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const array& x = primals[0];
  array tx = zeros(x.shape(), tangents[0].dtype(), s), tv = zeros({}, tangents[0].dtype(), s);
  for (size_t k = 0; k < argnums.size(); ++k) (argnums[k] == 0 ? tx : tv) = tangents[k];
  return {pad(tx, pad_widths(low_, x.shape(), outputs[0].shape()), "constant", tv, s)};
}

VmapResult Pad::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  Stream s = stream();
  std::vector<std::pair<int64_t, int64_t>> w;
  for (size_t i = 0; i < low_.size(); ++i) w.push_back({low_[i], high_[i]});
  if (!any_batched(axes)) return {{pad(inputs[0], w, "constant", inputs[1], s)}, {-1}};
  int64_t n = batch_size(inputs, axes, name());
  array x = batch_axis_to(inputs[0], axes[0], 0, n, s);
  w.insert(w.begin(), {0, 0});
  if (axes[1] < 0) return {{pad(x, w, "constant", inputs[1], s)}, {0}};
  // one fill value per batch item: pick it where a mask of the padding is set
  Shape in_shape(x.shape().begin() + 1, x.shape().end());
  array mask = pad(zeros(prepend(1, in_shape), Dtype::bool_, s), w, "constant", array(true, Dtype::bool_), s);
  array padded = pad(x, w, "constant", zero_scalar(x.dtype()), s);
  Shape vshape(padded.ndim(), 1);
  vshape[0] = n;
  array v = reshape(inputs[1], vshape, s);  // a batch of 0-d values: shape (n,)
  return {{where(mask, v, padded, s)}, {0}};
}

namespace {

// a, unevaluated, as (what it pads, its Pad) where it is a Pad with zeros
std::pair<const array*, const Pad*> zero_padded(const array& a) {
  if (a.is_evaluated() || !a.has_primitive()) return {nullptr, nullptr};
  const Node& n = *a.desc()->node;
  const auto* p = dynamic_cast<const Pad*>(n.prim.get());
  if (!p || n.inputs.size() != 2) return {nullptr, nullptr};
  if (!zero_bits(n.inputs[1])) return {nullptr, nullptr};
  return {&n.inputs[0], p};
}

}  // namespace

bool zero_bits(const array& v) {
  if (!v.is_evaluated() || v.size() != 1 || !v.buffer()) return false;
  const char* b = static_cast<const char*>(v.raw_data());
  for (int i = 0; i < v.itemsize(); ++i)
    if (b[i] != 0) return false;
  return true;
}

bool known_zeros(const array& a) {
  if (a.is_evaluated() || !a.has_primitive()) return false;
  const Node& n = *a.desc()->node;
  return dynamic_cast<const Full*>(n.prim.get()) && n.inputs.size() == 1 && zero_bits(n.inputs[0]);
}

// Two blocks side by side along one axis in zeros (their other dims placed
// alike) sum to one Pad of their concatenation, not two padded arrays and an
// add (a transformer step's q, k and v cotangents: three (B, T, 3 d) arrays
// and two adds before). A Pad of a Concatenate along that axis contributes
// its pieces, so n pieces make one concatenation, the intermediate ones
// never evaluated. No padding left: the concatenation itself.
std::optional<array> Pad::sum_with(const array& mine, const array& other) const {
  auto [xa, pa] = zero_padded(mine);
  auto [xb, pb] = zero_padded(other);
  if (!pa || !pb || mine.shape() != other.shape() || mine.dtype() != other.dtype()) return std::nullopt;
  int axis = -1;
  for (int d = 0; d < mine.ndim(); ++d) {
    if (pa->low()[d] == pb->low()[d] && pa->high()[d] == pb->high()[d]) continue;
    if (axis >= 0) return std::nullopt;  // placed apart along two axes
    axis = d;
  }
  if (axis < 0) return std::nullopt;
  const int64_t la = pa->low()[axis], lb = pb->low()[axis];
  const int64_t ea = la + xa->shape()[axis], eb = lb + xb->shape()[axis];
  if (ea != lb && eb != la) return std::nullopt;  // not adjacent
  auto pieces = [axis](const array& x, std::vector<array>& out) {
    const auto* c = x.is_evaluated() || !x.has_primitive() ? nullptr
                                                            : dynamic_cast<const Concatenate*>(&x.primitive());
    if (c && c->axis() == axis) {
      for (const array& in : x.desc()->node->inputs) out.push_back(in);
    } else {
      out.push_back(x);
    }
  };
  std::vector<array> parts;
  pieces(ea == lb ? *xa : *xb, parts);
  pieces(ea == lb ? *xb : *xa, parts);
  std::vector<std::pair<int64_t, int64_t>> widths;
  for (int d = 0; d < mine.ndim(); ++d) widths.push_back({pa->low()[d], pa->high()[d]});
  widths[axis] = {std::min(la, lb), mine.shape()[axis] - std::max(ea, eb)};
  array joined = concatenate(parts, axis, stream());
  bool whole = true;  // the pieces cover the array: no padding left
  for (auto [lo, hi] : widths) whole = whole && lo == 0 && hi == 0;
  return whole ? joined : pad(joined, widths, "constant", array(0, mine.dtype()), stream());
}

// ---- View -------------------------------------------------------------------

// With the batch first, the dtype change resizes the item's last dim only.
VmapResult View::vmap(const std::vector<array>& inputs, const std::vector<int>& axes) {
  Stream s = stream();
  if (axes[0] < 0) return {{view(inputs[0], dtype_, s)}, {-1}};
  array x = batch_axis_to(inputs[0], axes[0], 0, -1, s);
  if (x.ndim() == 1 && x.itemsize() != size_of(dtype_)) {
    throw std::invalid_argument(std::string("[view] Cannot view a 0-d array of ") + dtype_name(x.dtype()) + " as " +
                                dtype_name(dtype_) + " (different itemsize).");
  }
  return {{view(x, dtype_, s)}, {0}};
}

}  // namespace ember
