// compile's engine entry points (ember.core._compile_*): placeholders, the
// trace scope, the tape (record, simplify, replay, text, cost) and the random
// state of a trace. python/ember/_compile.py builds compile, its cache and
// the AOT objects on these; the pytree walks it needs are in trees.cpp.
#include "bindings.h"
#include "ember/compile/compile.h"
#include "ember/random/random.h"

namespace ember::py_bind {

void init_compile(py::module_& m) {
  using compiler::Tape;
  py::class_<Tape, std::shared_ptr<Tape>>(m, "_CompileTape", "A traced, simplified graph that compile replays.")
      .def("replay", [](const Tape& t, const std::vector<array>& inputs) { return compiler::replay(t, inputs); },
           "inputs"_a, "The outputs of the graph computed (lazily) from these inputs.")
      .def("as_text", &compiler::as_text, "The graph, one line per node.")
      .def("cost_analysis", [](const Tape& t) {
             auto c = compiler::cost_analysis(t);
             return py::dict("flops"_a = c.flops, "bytes accessed"_a = c.bytes_accessed);
           }, "Floating-point operations and bytes accessed by one call.")
      .def_property_readonly("num_nodes", [](const Tape& t) { return t.steps.size(); })
      .def_property_readonly("num_constants", [](const Tape& t) { return t.constants.size(); })
      .def_property_readonly("num_inputs", [](const Tape& t) { return t.in_shapes.size(); })
      .def_property_readonly("num_outputs", [](const Tape& t) { return t.outputs.size(); })
      .def_property_readonly("shapeless", [](const Tape& t) { return t.shapeless; })
      .def_property_readonly("captures_tracers", [](const Tape& t) {
             // a constant that is an outer transform's traced value: valid for this call only
             for (auto& c : t.constants) {
               if (c.desc()->tracer) return true;
             }
             return false;
           })
      .def_property_readonly("input_shapes", [](const Tape& t) {
             py::list l;
             for (size_t i = 0; i < t.in_shapes.size(); ++i) l.append(py::make_tuple(py::tuple(py::cast(t.in_shapes[i])), t.in_dtypes[i]));
             return l;
           });
  m.def("_compile_placeholder", &compiler::placeholder, "shape"_a, "dtype"_a,
        "A traced input of this shape and dtype, without a value.");
  m.def("_compile_trace", [](py::object fun) {
        TraceScope scope;
        return fun();
      }, "fun"_a, "fun() called while tracing (arrays built from placeholders are tracers).");
  m.def("_compile_graph", [](const std::vector<array>& inputs, const std::vector<array>& outputs, bool shapeless, bool passes) {
        compiler::PassStats st;
        auto tape = compiler::compile_graph(inputs, outputs, shapeless, passes, &st);
        py::dict stats("nodes_before"_a = st.steps_before, "nodes_after"_a = st.steps_after,
                       "constants_before"_a = st.constants_before, "constants_after"_a = st.constants_after);
        return py::make_tuple(tape, stats);
      }, "inputs"_a, "outputs"_a, "shapeless"_a = false, "passes"_a = true,
      "The tape of the traced graph between the placeholders and the outputs, simplified and fused, with the "
      "passes' node counts.");
  m.def("_compile_record", [](const std::vector<array>& inputs, const std::vector<array>& outputs) {
        return compiler::record(inputs, outputs);
      }, "inputs"_a, "outputs"_a, "The tape of the traced graph as traced (no pass).");
  m.def("_graph_dot", [](const std::vector<array>& outputs, const std::vector<std::pair<array, std::string>>& names) {
        return compiler::to_dot(outputs, names);
      }, "outputs"_a, "names"_a, "The unevaluated graph behind the outputs in Graphviz's DOT language.");
  m.def("_random_push_traced_key", &random::push_traced_key, "key"_a);
  m.def("_random_pop_traced_key", &random::pop_traced_key);
  m.def("_random_set_key", &random::set_global_key, "key"_a);
}

}  // namespace ember::py_bind
