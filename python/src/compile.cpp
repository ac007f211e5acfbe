// compile's engine entry points (ember.core._compile_*): placeholders, the
// trace scope, the tape (record, simplify, replay, text, cost) and the random
// state of a trace. python/ember/_compile.py builds compile, its cache and
// the AOT objects on these; the pytree walks it needs are in trees.cpp.
#include "bindings.h"
#include "ember/compile/compile.h"
#include "ember/compile/export.h"
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
  m.def("_set_compile_enabled", &compiler::set_compile_enabled, "on"_a,
        "compile's switch as the engine sees it (derivative rules fuse their graphs only when on).");
  m.def("_tracing_function", &compiler::tracing_function,
        "Whether this thread traces a function for compile or export.");
  m.def("_compile_trace", [](py::object fun) {
        compiler::FunctionTrace scope;
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
  py::class_<compiler::ExportTrace>(m, "_ExportTrace", "One trace of a function, as export_function writes it.")
      .def_property_readonly("num_nodes", [](const compiler::ExportTrace& t) { return t.tape->steps.size(); })
      .def("as_text", [](const compiler::ExportTrace& t) { return compiler::as_text(*t.tape); },
           "The trace, one line per node.")
      .def("graph", [](const compiler::ExportTrace& tr) {
             // value ids with shapes and dtypes; each step's name, inputs, outputs and parameters
             const Tape& t = *tr.tape;
             auto value = [&](int v) { return py::make_tuple(v, py::tuple(py::cast(t.value_shape(v))), t.value_dtype(v)); };
             py::list inputs, constants, steps, outputs;
             for (int i = 0; i < t.n_inputs(); ++i) inputs.append(value(i));
             for (int i = 0; i < t.n_constants(); ++i) constants.append(py::make_tuple(t.n_inputs() + i, t.constants[i]));
             for (auto& st : t.steps) {
               py::list ins, outs, args;
               for (int v : st.inputs) ins.append(value(v));
               for (size_t j = 0; j < st.shapes.size(); ++j) outs.append(value(st.first_out + static_cast<int>(j)));
               for (auto& a : compiler::export_arguments(*st.prim)) {
                 switch (a.kind) {
                   case compiler::ExportArg::Int: args.append(a.i); break;
                   case compiler::ExportArg::Float: args.append(a.f); break;
                   case compiler::ExportArg::Bool: args.append(a.i != 0); break;
                   case compiler::ExportArg::DtypeArg: args.append(static_cast<Dtype>(a.i)); break;
                   case compiler::ExportArg::Ints: args.append(py::tuple(py::cast(a.ints))); break;
                 }
               }
               steps.append(py::make_tuple(st.prim->name(), ins, outs, args));
             }
             for (int v : t.outputs) outputs.append(value(v));
             return py::dict("n_args"_a = tr.n_args, "kwarg_names"_a = tr.kwarg_names, "inputs"_a = inputs,
                             "constants"_a = constants, "steps"_a = steps, "outputs"_a = outputs);
           }, "The trace as values: inputs, constants, steps (name, inputs, outputs, parameters) and outputs.");
  m.def("_export_trace", &compiler::export_trace, "placeholders"_a, "outputs"_a, "n_args"_a, "kwarg_names"_a,
        "The unfused tape between the placeholders (positional, then keyword inputs by name) and the outputs.");
  m.def("_export_bytes", [](const std::vector<compiler::ExportTrace>& traces, bool shapeless, const std::string& metadata) {
        return py::bytes(compiler::serialize_function(traces, shapeless, metadata));
      }, "traces"_a, "shapeless"_a, "metadata"_a, "The bytes of an export file holding the traces.");
  m.def("_export_write", [](const std::string& path, const py::bytes& data) {
        compiler::write_export_file(path, std::string(data));
      }, "path"_a, "data"_a, "Writes an export file (a temporary file renamed over the path).");
  py::class_<ImportedFunction>(m, "_ImportedFunction", "The traces read from an export file.")
      .def("__call__", [](const ImportedFunction& f, const std::vector<array>& args,
                          const std::map<std::string, array>& kwargs) { return f(args, kwargs); },
           "args"_a, "kwargs"_a, "The outputs of the first trace matching the arguments.")
      .def_readonly("metadata", &ImportedFunction::metadata)
      .def_readonly("shapeless", &ImportedFunction::shapeless)
      .def_property_readonly("num_traces", [](const ImportedFunction& f) { return f.traces.size(); })
      .def("describe", &ImportedFunction::describe, "The traces' signatures, one line each.");
  m.def("_import_file", [](const std::string& path) { return import_function(path); }, "path"_a,
        "Reads and validates an export file.");
  m.def("_import_bytes", [](const py::bytes& data) { return compiler::deserialize_function(std::string(data)); },
        "data"_a, "Reads and validates the bytes of an export file.");
  m.def("_random_push_traced_key", &random::push_traced_key, "key"_a);
  m.def("_random_pop_traced_key", &random::pop_traced_key);
  m.def("_random_set_key", &random::set_global_key, "key"_a);
}

}  // namespace ember::py_bind
