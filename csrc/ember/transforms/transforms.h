// Function transforms over flat lists of arrays. The Python layer adds
// pytrees, argnums and the decorator forms on top.
//
//   auto f = [](const std::vector<array>& x) { return std::vector<array>{sum(exp(x[0]))}; };
//   auto [outs, grads] = vjp(f, {x}, {array(1.0f, Dtype::float32)});   // grads[0] = exp(x)
//   auto [outs2, tans] = jvp(f, {x}, {ones_like(x)});                   // tans[0] = sum(exp(x))
//   auto g = vmap(f, {0}, {0});                                          // row-wise sums
//
// All walks over the traced graph use explicit stacks, so functions of 10^6
// ops transform without deep recursion.
#pragma once

#include <utility>
#include <vector>

#include "ember/primitives/transform.h"

namespace ember {

// Reverse mode: outputs of fun(primals) and the cotangents of the primals
// for the given output cotangents (one per output, of its shape).
std::pair<std::vector<array>, std::vector<array>> vjp(const Fun& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents);
// Forward mode: outputs and their tangents for the given primal tangents.
std::pair<std::vector<array>, std::vector<array>> jvp(const Fun& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& tangents);

// vmap in two steps (the Python layer needs the outputs' structure between
// them): trace fun on one example of each batched input (axis >= 0; -1 passes
// the input unchanged), then rewrite the traced graph for the whole batch.
std::pair<std::vector<array>, std::vector<array>> vmap_trace(const Fun& fun, const std::vector<array>& inputs,
                                                             const std::vector<int>& in_axes);
std::vector<array> vmap_replace(const std::vector<array>& inputs, const std::vector<array>& traced_inputs,
                                const std::vector<array>& traced_outputs, const std::vector<int>& in_axes,
                                const std::vector<int>& out_axes);
Fun vmap(const Fun& fun, const std::vector<int>& in_axes, const std::vector<int>& out_axes);
// vmap as a rule: the outputs with their batch axes (-1 where unbatched).
std::pair<std::vector<array>, std::vector<int>> vmap_rule(const Fun& fun, const std::vector<array>& inputs,
                                                          const std::vector<int>& in_axes);

// Helpers for vmap rules: the common batch size of the batched inputs
// (ValueError when they disagree), and `a` with its batch axis moved from
// `from` to `to` (from == -1: the unbatched `a` broadcast to B copies).
int64_t batch_size(const std::vector<array>& inputs, const std::vector<int>& axes);
array batch_axis_to(const array& a, int from, int to, int64_t B);

array stop_gradient(const array& a);
// The inputs, computed only after `dependencies` (no derivative flows to them).
std::vector<array> depends(const std::vector<array>& inputs, const std::vector<array>& dependencies);

// fun with its own rules; a rule left empty is derived from fun.
Fun custom_function(Fun fun, std::optional<VjpFun> vjp_fun = {}, std::optional<JvpFun> jvp_fun = {},
                    std::optional<VmapFun> vmap_fun = {});
// fun whose vjp recomputes fun's inside instead of keeping them (less memory).
Fun checkpoint(Fun fun);

}  // namespace ember
