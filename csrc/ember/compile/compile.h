// compile: trace a function once on placeholder inputs, simplify the traced
// graph, and replay it on every call (ember.core.compile builds on this).
//
//   array p = compiler::placeholder({4}, Dtype::float32);      // a traced input
//   std::vector<array> outs;
//   { TraceScope scope; outs = fun({p}); }                       // trace
//   auto tape = compiler::compile_graph({p}, outs);              // simplify, fuse, record
//   auto real = compiler::replay(*tape, {x});                    // each call: new nodes on x
//
// The pipeline: the traced graph between the placeholders and the outputs ->
// a tape (topological order; captured arrays that depend on no placeholder
// become constants) -> simplify (passes.cpp: constant and scalar merging,
// common-subexpression elimination through Primitive::is_equivalent, removal
// of no-op views; decisions from primitive traits) -> the graph rebuilt on
// the placeholders -> run_fusion (fusion_hook.cpp) -> the final tape.
// Replay makes nodes with the recorded primitives (shared, not copied) and,
// unless the tape is shapeless, the recorded output shapes and dtypes; so a
// replayed graph is an ordinary graph that every transform (grad, vmap, jvp,
// an outer compile) rewrites like any other. Every walk is iterative and
// linear in the graph (10^6 nodes do not touch the stack).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/array.h"
#include "ember/primitive.h"

namespace ember {

// Compile's node builder that reuses an existing primitive: the one way to
// build nodes is make_nodes<P>, which makes a fresh P; this explicit
// specialization for the tag ReusePrimitive hands array's node constructor
// the given primitive instead (array befriends every specialization of
// make_nodes), so that a replay shares the recorded primitive between the
// traced node and every replayed one and export's unfusing rebuilds a step
// with its own primitive. Defined in trace.cpp.
namespace compiler {
struct ReusePrimitive;
}
template <>
std::vector<array> make_nodes<compiler::ReusePrimitive, const std::shared_ptr<Primitive>&>(
    std::vector<Shape> shapes, std::vector<Dtype> dtypes, std::vector<array> inputs,
    const std::shared_ptr<Primitive>& prim);

}  // namespace ember

namespace ember::compiler {

// A traced input: an array of this shape and dtype without a value (marked
// a tracer). Evaluating anything that depends on it raises ValueError
// ("[compile] Attempting to evaluate ... inside a compiled function").
array placeholder(const Shape& shape, Dtype dtype);
bool is_placeholder(const array& a);

// While alive, this thread traces a function for compile or export (a
// TraceScope too): the graph it builds is on placeholders and compile's
// pipeline fuses it whole, so a rule that fuses a piece of an eager graph
// (Compiled's vjp) leaves it to that pipeline.
class FunctionTrace {
 public:
  FunctionTrace();
  ~FunctionTrace();
  FunctionTrace(const FunctionTrace&) = delete;
  FunctionTrace& operator=(const FunctionTrace&) = delete;

 private:
  TraceScope scope_;
};
// Whether this thread is inside a FunctionTrace.
bool tracing_function();
// compile's switch (disable_compile / enable_compile, EMBER_DISABLE_COMPILE),
// as the engine sees it: off, derivative rules leave their graphs unfused.
void set_compile_enabled(bool on);
bool compile_enabled();

// One node of the tape: its inputs and outputs are value ids (values 0..n_inputs-1
// are the inputs, then the constants, then each step's outputs in order).
struct Step {
  std::shared_ptr<Primitive> prim;
  std::vector<int> inputs;
  std::vector<Shape> shapes;  // traced output shapes
  std::vector<Dtype> dtypes;
  int first_out = 0;  // value id of output 0
};

struct Tape {
  std::vector<Shape> in_shapes;
  std::vector<Dtype> in_dtypes;
  std::vector<array> constants;  // captured arrays (values n_inputs ..)
  std::vector<Step> steps;       // topological order
  std::vector<int> outputs;      // value id of each output
  int n_values = 0;
  bool shapeless = false;
  int n_inputs() const { return static_cast<int>(in_shapes.size()); }
  int n_constants() const { return static_cast<int>(constants.size()); }
  // shape and dtype of a value id
  Shape value_shape(int v) const;
  Dtype value_dtype(int v) const;
  const Step& step_of(int v) const;  // the step whose outputs hold step value v
};

// The tape of the graph between `inputs` (placeholders) and `outputs`, as
// traced (no pass). Arrays the outputs depend on but that depend on no input
// are constants.
std::shared_ptr<Tape> record(const std::vector<array>& inputs, const std::vector<array>& outputs);
// The simplification passes (passes.cpp), in place: constants merged (one
// value per distinct captured array; equal small constants, scalars
// included, merged), common subexpressions merged, no-op views removed, and
// steps nothing uses dropped.
struct PassStats {
  int64_t steps_before = 0, steps_after = 0, constants_before = 0, constants_after = 0;
};
PassStats simplify(Tape& tape);
// The fusion pass's hook (fusion_hook.cpp): the graph between the
// placeholders `inputs` and `outputs`, rewritten; returns the new outputs,
// and whether anything was rewritten (in place, outputs kept, or not).
std::vector<array> run_fusion(const std::vector<array>& inputs, const std::vector<array>& outputs, bool* rewrote);
// record -> simplify -> rebuild on the placeholders -> run_fusion -> record.
std::shared_ptr<Tape> compile_graph(const std::vector<array>& inputs, const std::vector<array>& outputs,
                                    bool shapeless, bool passes = true, PassStats* stats = nullptr);

// The tape's outputs computed from `inputs` (their shapes and dtypes those
// of the traced inputs; for a shapeless tape only the dtypes and ranks must
// match, and the shapes are recomputed node by node: elementwise ops
// broadcast, reductions keep their axes, softmax keeps its shape, matmul
// takes (..., M, K) x (..., K, N), transposes permute, broadcasts and
// reshapes that only add or drop size-1 dims follow their input; any other
// primitive whose input shapes changed raises ValueError naming it).
std::vector<array> replay(const Tape& tape, const std::vector<array>& inputs);

// One line per step, in the spirit of a jaxpr:
//   { lambda ; a:f32[4] b:f32[4]. let
//       c:f32[4] = Multiply a b
//     in (c) }
std::string as_text(const Tape& tape);
// Work of one call: floating-point operations (one per output element of an
// elementwise op or reduction input element, 2*M*N*K for a matmul) and
// bytes accessed (each step's inputs read and outputs written).
struct Cost {
  double flops = 0, bytes_accessed = 0;
};
Cost cost_analysis(const Tape& tape);

// The unevaluated graph behind `outputs` in Graphviz's DOT language: a box
// per node (its primitive's name), an ellipse per array (its name from
// `names`, else a letter code; shape and dtype), arrays without a node
// (inputs, computed values) at the top and the outputs at the bottom.
std::string to_dot(const std::vector<array>& outputs, const std::vector<std::pair<array, std::string>>& names);

}  // namespace ember::compiler
