// Private bindings of compile's fusion pass (csrc/ember/compile/fuse.h), for
// tests and benchmarks: compile() itself calls the pass on its traced graph.
#include "bindings.h"
#include "ember/compile/fuse.h"

namespace ember::py_bind {

void init_fuse(py::module_& m) {
  m.def(
      "_fuse",
      [](const std::vector<array>& outputs, const std::vector<array>& inputs) {
        return compile::fuse(inputs, outputs);
      },
      "outputs"_a, "inputs"_a = std::vector<array>{},
      "The lazy graph from `inputs` (leaves, never fused into) to `outputs` with its elementwise chains fused into "
      "generated kernels; returns new outputs computing the same values.");
  m.def(
      "_fuse_stats",
      [] {
        auto s = compile::jit_stats();
        return py::dict("memory_hits"_a = s.memory_hits, "disk_hits"_a = s.disk_hits, "compiles"_a = s.compiles,
                        "failures"_a = s.failures, "compile_seconds"_a = s.compile_seconds, "pch_builds"_a = s.pch_builds,
                        "cache_dir"_a = compile::cache_dir(), "compiler"_a = compile::compiler_available());
      },
      "Counters of the fused-kernel caches: memory and disk hits, compiles, failures, time in the compiler, "
      "precompiled preludes started.");
  m.def("_fuse_wait_pch", &compile::wait_pch,
        "Waits for this process's background builds of the kernels' precompiled prelude and puts them in place.");
  m.def("_fuse_clear_memory_cache", &compile::clear_memory_cache,
        "Forgets the fused kernels loaded in this process (the disk cache stays).");
  m.def(
      "_fuse_node_name",
      [](const array& a) -> py::object {
        if (!a.has_primitive()) return py::none();
        return py::str(a.primitive().name());
      },
      "a"_a, "The name of the primitive computing `a` (None once evaluated or for a constant).");
}

}  // namespace ember::py_bind
