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

#include "ember/ops.h"
#include "ember/primitives/transform.h"

namespace ember {

// Reverse mode: outputs of fun(primals) and the cotangents of the primals
// for the given output cotangents (one per output, of its shape).
std::pair<std::vector<array>, std::vector<array>> vjp(const Fun& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents);
// A derivative rule's graph of ordinary ops (a layer norm's backward, a
// compiled function's), from what it starts from (`from`, the primals or
// outputs it reads, and its `cotangents`) to `results`, with its
// elementwise work and last-axis reductions fused into kernels where that
// pays: the compile layer is linked and can build kernels, the graph is
// eager (not one that compile or export traces, whose pipeline fuses it
// whole) and large. Else `results` as they are. Same values either way.
// Large: an array of `min_size` values or more among them all, where the
// fused kernels have paid for the fusion itself (a walk, code generation
// and a kernel lookup, some 40 us): elementwise graphs from 2^16 values,
// graphs whose reductions make row programs (norms, softmax) from 2^18
// (measured, Intel Xeon, 2026-12-07).
constexpr int64_t kFuseElementwiseMin = int64_t(1) << 16, kFuseRowsMin = int64_t(1) << 18;
std::vector<array> fuse_derivative(const std::vector<array>& from, const std::vector<array>& cotangents,
                                   const std::vector<array>& results, int64_t min_size);
// The compile layer's fuser (compile/fuse.cpp registers it at start-up): the
// graph between `inputs` and `outputs`.
using DerivativeFuser = std::vector<array> (*)(const std::vector<array>& inputs, const std::vector<array>& outputs,
                                               int64_t min_size);
void set_derivative_fuser(DerivativeFuser fuser);

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

// Helpers for vmap rules: every rule lines up its inputs' batch axes with
// these (`axes[i]` is input i's batch axis, -1 where it is unbatched), and
// vmap checks its own inputs with batch_size.
//
// The common size of the batched inputs' batch axes, -1 if none is batched.
// Sizes that disagree raise a ValueError naming `op` (the primitive, or
// "vmap" for vmap's own inputs), the two inputs, their sizes and shapes.
int64_t batch_size(const std::vector<array>& inputs, const std::vector<int>& axes, const char* op);
// Whether any input is batched.
bool any_batched(const std::vector<int>& axes);
// Where axis `axis` of one example lies in an input batched on axis `b`.
int example_axis(int axis, int b);
// `a` with its batch axis moved from `from` to `to`; an unbatched `a`
// (from == -1) is broadcast to B copies along a new axis `to` (B is used
// only then): for ops whose operands must all carry the batch (concatenate,
// pad, searchsorted, lapack, ...).
array batch_axis_to(const array& a, int from, int to, int64_t B, const StreamOrDevice& s = {});
// The same, but an unbatched `a` gets a size-1 axis at `to` that broadcasts
// against the batch: for ops that broadcast their operands (gather's index
// arrays, scatter's updates).
array batch_axis_or_1_to(const array& a, int from, int to, const StreamOrDevice& s = {});

// For vjp rules: x (of a shape that `shape` broadcasts to by NumPy's rules)
// summed over the dims broadcasting added or stretched, back to `shape`, in
// x's dtype (the cotangent of a broadcast input).
array sum_to_shape(const array& x, const Shape& shape, const StreamOrDevice& s = {});

array stop_gradient(const array& a);
// The inputs, computed only after `dependencies` (no derivative flows to them).
std::vector<array> depends(const std::vector<array>& inputs, const std::vector<array>& dependencies);

// fun with its own rules; a rule left empty is derived from fun.
Fun custom_function(Fun fun, std::optional<VjpFun> vjp_fun = {}, std::optional<JvpFun> jvp_fun = {},
                    std::optional<VmapFun> vmap_fun = {});
// fun whose vjp recomputes fun's inside instead of keeping them (less memory).
Fun checkpoint(Fun fun);

}  // namespace ember
