// The primitive contract. A primitive is one op of the graph: it knows how to
// compute its outputs on the CPU and carries its own transform rules, so the
// transforms (transforms/) never switch on op type.
//
//   eval_cpu  outputs arrive with shape and dtype set; the kernel gives each
//             storage (out.alloc(), or set_data() with a view of an input).
//   vjp       (primals = all inputs, cotangents = one per output, each of the
//             output's shape and dtype, argnums = the inputs that need one,
//             outputs = the node's outputs) -> one cotangent per argnum, of
//             that input's shape and dtype.
//   jvp       (primals, tangents = one per argnum of that input's shape and
//             dtype, argnums, outputs) -> one tangent per output.
//   vmap      (inputs, axes: each input's batch axis or -1 for none) ->
//             outputs and each output's batch axis (-1: not batched). All
//             batched inputs share one batch size; a rule may move the axis.
//   is_equivalent  same op with the same parameters (for compile's CSE)
//   sum_with  (optional) a cheaper graph for its output plus another array
//             (vjp's accumulation of cotangents)
//
// Rules are written with public ops (ops.h), so they are differentiable too.
// The transforms only ask for derivatives through inexact (floating or
// complex) inputs and outputs: an integer or boolean input never appears in
// argnums, and a node whose outputs are all integer/boolean gets no vjp/jvp
// call (its tangents are zeros). A rule a primitive lacks raises
// "[vjp] Primitive Foo has no vjp rule." (ValueError).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/array.h"

namespace ember {

// Declares a primitive's three transform rules (defined beside the family's
// other rules in primitives/<family>.cpp).
#define EMBER_TRANSFORM_RULES                                                                              \
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,          \
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;     \
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,            \
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;     \
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,                   \
                                                       const std::vector<int>& axes) override;

class Primitive {
 public:
  explicit Primitive(Stream s) : stream_(s) {}
  virtual ~Primitive() = default;
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;

  virtual const char* name() const = 0;
  virtual void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) = 0;

  virtual std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                 const std::vector<int>& argnums, const std::vector<array>& outputs);
  virtual std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                 const std::vector<int>& argnums, const std::vector<array>& outputs);
  virtual std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes);
  virtual bool is_equivalent(const Primitive& /*other*/) const { return false; }
  // mine + other, where `mine` is this primitive's single, unevaluated
  // output, as a graph cheaper than their sum where the primitive knows one
  // (vjp accumulates cotangents with it: Pad joins zero-padded blocks that
  // sit side by side); nullopt: add them
  virtual std::optional<array> sum_with(const array& /*mine*/, const array& /*other*/) const { return std::nullopt; }

  // Traits used by passes (compile's fusion and simplification).
  virtual bool is_elementwise() const { return false; }
  virtual bool is_view() const { return false; }  // output aliases input 0's buffer
  // vjp/jvp treat the outputs as constants (their walks do not enter them)
  virtual bool stops_gradient() const { return false; }
  // Siblings: eval may run nodes whose primitives batch with each other,
  // that read the same first input and nothing else computed in the same
  // evaluation, as one call of the first one's eval_cpu_batch (a decoding
  // step's q, k and v projections of one x: one job, not three ramps).
  // batches() is the cheap test of whether a primitive ever does.
  virtual bool batches() const { return false; }
  virtual bool batches_with(const Primitive& /*other*/) const { return false; }
  // outputs[i] of node i from inputs[i] (every inputs[i][0] the same
  // array); the default runs the nodes' eval_cpu one after another
  virtual void eval_cpu_batch(const std::vector<Primitive*>& prims, const std::vector<const std::vector<array>*>& inputs,
                              std::vector<std::vector<array>>& outputs);

  Stream stream() const { return stream_; }

 protected:
  [[noreturn]] void no_rule(const char* transform) const;

 private:
  Stream stream_;
};

// Building graph nodes: the one way ops, rules and transforms create them.
// make_node<P>(shape, dtype, inputs, args...) creates the primitive
// P(args...) and the node computing one output of that shape and dtype from
// `inputs`; make_nodes<P>(shapes, dtypes, inputs, args...) a node with one
// output per shape. Both go through array's node constructors, which check
// what every node needs: valid inputs, one dtype per output shape and at
// least one output (std::logic_error: a bug in the caller), and the shapes
// as any array's (no negative dim, elements and bytes within 64 bits:
// ValueError). A primitive whose output shapes follow from its parameters
// by a rule of its own has one builder beside its class that computes them
// and calls make_node (conv_node, fft_node, lapack_node, matmul_node).
template <class P, class... Args>
array make_node(Shape shape, Dtype dtype, std::vector<array> inputs, Args&&... args) {
  static_assert(std::is_base_of_v<Primitive, P>, "make_node builds nodes of primitives");
  return array(std::move(shape), dtype, std::make_shared<P>(std::forward<Args>(args)...), std::move(inputs));
}
template <class P, class... Args>
std::vector<array> make_nodes(std::vector<Shape> shapes, std::vector<Dtype> dtypes, std::vector<array> inputs,
                              Args&&... args) {
  static_assert(std::is_base_of_v<Primitive, P>, "make_nodes builds nodes of primitives");
  return array::make_arrays(std::move(shapes), dtypes, std::make_shared<P>(std::forward<Args>(args)...),
                            std::move(inputs));
}

}  // namespace ember
