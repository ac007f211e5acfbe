// Transform rules of Reduce, ArgReduce and Softmax (kernels in
// backend/cpu/reduce.cpp).
//
// A Reduce node keeps its reduced dims as size 1, so its cotangent
// broadcasts straight back over the input. Each differentiable kind is linear
// in its input given a weight array w of the input's shape:
//   sum        w = 1
//   prod       w = the product of the other elements of the reduced block
//              (exclusive products, so zeros need no division: MLX's way)
//   max, min   w = 1 / k on the k elements equal to the result (ties share
//              the cotangent equally, as MLX), 0 elsewhere
// so jvp = sum(t * w) over the axes and vjp = ct * conj(w).
#include <optional>

#include "ember/ops.h"
#include "ember/primitives/reduce.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace {

// For every element, the product of the other elements of its reduced block:
// the reduced axes are moved last and flattened into one, and the exclusive
// cumulative products from both ends are multiplied.
array exclusive_products(const array& x, const std::vector<int>& axes, Stream s) {
  if (axes.size() == 1) {
    int ax = axes[0];
    return multiply(cumprod(x, ax, false, false, {}, s), cumprod(x, ax, true, false, {}, s), s);
  }
  std::vector<int> perm;
  Shape flat;
  std::vector<bool> reduced(x.ndim(), false);
  for (int a : axes) reduced[a] = true;
  for (int i = 0; i < x.ndim(); ++i) {
    if (!reduced[i]) {
      perm.push_back(i);
      flat.push_back(x.shape(i));
    }
  }
  int64_t block = 1;
  for (int a : axes) {
    perm.push_back(a);
    block *= x.shape(a);
  }
  flat.push_back(block);
  array xt = transpose(x, perm, s);
  Shape moved = xt.shape();
  array p = exclusive_products(reshape(xt, flat, s), {static_cast<int>(flat.size()) - 1}, s);
  std::vector<int> back(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) back[perm[i]] = static_cast<int>(i);
  return transpose(reshape(p, moved, s), back, s);
}

// 1 / k on the k elements of each block equal to its max/min y (kept dims).
// A NaN result came from the block's NaNs, which then share the derivative.
array extremum_weights(const array& x, const array& y, const std::vector<int>& axes, Stream s) {
  array hit = logical_or(equal(x, y, s), isnan(x, s), s);
  array w = where(hit, array(1.0, x.dtype()), array(0.0, x.dtype()), s);
  return divide(w, sum(w, axes, true, s), s);
}

// The weights w above (Sum: none, the weight is 1).
std::optional<array> reduce_weights(Reduce::Kind kind, const array& x, const array& y,
                                           const std::vector<int>& axes, Stream s) {
  switch (kind) {
    case Reduce::Prod:
      return exclusive_products(x, axes, s);
    case Reduce::Max:
    case Reduce::Min:
      return extremum_weights(x, y, axes, s);
    default:
      return std::nullopt;
  }
}

}  // namespace

std::vector<array> Reduce::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>&, const std::vector<array>& outputs) {
  const array &x = primals[0], &ct = cotangents[0];
  Stream s = stream();
  if (kind_ == And || kind_ == Or) return {zeros_like(x, {}, s)};  // boolean: never asked
  auto w = reduce_weights(kind_, x, outputs[0], axes_, s);
  if (!w) return {broadcast_to(ct, x.shape(), s)};
  return {multiply(ct, conjugate(*w, s), s)};
}

std::vector<array> Reduce::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>&, const std::vector<array>& outputs) {
  const array &x = primals[0], &t = tangents[0];
  Stream s = stream();
  if (kind_ == And || kind_ == Or) return {zeros_like(outputs[0], {}, s)};
  auto w = reduce_weights(kind_, x, outputs[0], axes_, s);
  return {sum(w ? multiply(t, *w, s) : t, axes_, true, s)};
}

std::pair<std::vector<array>, std::vector<int>> Reduce::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  int b = axes[0];
  std::vector<int> ax = axes_;
  for (int& a : ax) a = example_axis(a, b);
  const array& x = inputs[0];
  Stream s = stream();
  // The public reductions give the node's output dtype for its input dtype.
  array out;
  switch (kind_) {
    case Sum: out = sum(x, ax, true, s); break;
    case Prod: out = prod(x, ax, true, s); break;
    case Max: out = max(x, ax, true, s); break;
    case Min: out = min(x, ax, true, s); break;
    case And: out = all(x, ax, true, s); break;
    case Or: out = any(x, ax, true, s); break;
  }
  return {{out}, {b}};
}

// ---- ArgReduce: integer output, so only vmap matters ----------------------------

std::vector<array> ArgReduce::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                  const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0], {}, stream())};
}

std::vector<array> ArgReduce::jvp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&,
                                  const std::vector<array>& outputs) {
  return {zeros_like(outputs[0], {}, stream())};
}

std::pair<std::vector<array>, std::vector<int>> ArgReduce::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  int b = axes[0];
  int ax = example_axis(axis_, b);
  const array& x = inputs[0];
  array out = kind_ == ArgMax ? argmax(x, ax, true, stream()) : argmin(x, ax, true, stream());
  return {{out}, {b}};
}

// ---- Softmax over the last axis ---------------------------------------------------
// With s the output: J t = s * t - s * sum(s * t), a symmetric map, so the
// jvp and the vjp are the same expression.

namespace {
array softmax_pullback(const array& sm, const array& v, Stream s) {
  array sv = multiply(sm, v, s);
  return subtract(sv, multiply(sm, sum(sv, std::vector<int>{-1}, true, s), s), s);
}
}  // namespace

std::vector<array> Softmax::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                const std::vector<int>&, const std::vector<array>& outputs) {
  return fuse_derivative(outputs, cotangents, {softmax_pullback(outputs[0], cotangents[0], stream())}, kFuseRowsMin);
}

std::vector<array> Softmax::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                const std::vector<int>&, const std::vector<array>& outputs) {
  return {softmax_pullback(outputs[0], tangents[0], stream())};
}

std::pair<std::vector<array>, std::vector<int>> Softmax::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  array x = inputs[0];
  int b = axes[0];
  if (b >= 0 && b == x.ndim() - 1) {  // the batch axis is where softmax runs: move it out
    x = batch_axis_to(x, b, 0, -1, stream());
    b = 0;
  }
  return {{softmax(x, std::vector<int>{-1}, precise_, stream())}, {b}};
}

}  // namespace ember
