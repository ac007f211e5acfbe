// The engine's transforms over flat lists of arrays (ember.core._vjp & co.),
// plus stop_gradient and depends. python/ember/_transforms.py builds the
// public API (pytrees, argnums, decorators) on these.
#include <memory>

#include "bindings.h"
#include "ember/transforms/transforms.h"

namespace ember::py_bind {

namespace {

// A Python callable kept alive by C++ closures that may be destroyed where
// the GIL is not held (graph nodes die during eval, which releases it).
struct PyRef {
  py::object obj;
  explicit PyRef(py::object o) : obj(std::move(o)) {}
  ~PyRef() {
    if (!Py_IsInitialized()) {
      obj.release();  // interpreter gone: leak rather than touch it
      return;
    }
    py::gil_scoped_acquire gil;
    obj = py::object();
  }
};

std::vector<array> to_list_of_arrays(py::handle r, const char* what) {
  if (!py::isinstance<py::list>(r) && !py::isinstance<py::tuple>(r)) {
    throw type_error(std::string("[") + what + "] Expected a list of arrays, got " +
                     std::string(py::str(py::type::handle_of(r).attr("__name__"))) + ".");
  }
  std::vector<array> out;
  for (auto item : r) {
    if (!is_array(item)) {
      throw type_error(std::string("[") + what + "] Expected arrays, got " +
                       std::string(py::str(py::type::handle_of(item).attr("__name__"))) + ".");
    }
    out.push_back(item.cast<array>());
  }
  return out;
}

Fun wrap_fun(py::object f, const char* what) {
  auto ref = std::make_shared<PyRef>(std::move(f));
  return [ref, what](const std::vector<array>& xs) {
    py::gil_scoped_acquire gil;
    return to_list_of_arrays(ref->obj(py::cast(xs)), what);
  };
}

}  // namespace

void init_transforms(py::module_& m) {
  m.def("_vjp", [](py::object fun, const std::vector<array>& primals, const std::vector<array>& cotangents) {
    return vjp(wrap_fun(std::move(fun), "vjp"), primals, cotangents);
  });
  m.def("_jvp", [](py::object fun, const std::vector<array>& primals, const std::vector<array>& tangents) {
    return jvp(wrap_fun(std::move(fun), "jvp"), primals, tangents);
  });
  m.def("_vmap_trace", [](py::object fun, const std::vector<array>& inputs, const std::vector<int>& in_axes) {
    return vmap_trace(wrap_fun(std::move(fun), "vmap"), inputs, in_axes);
  });
  m.def("_vmap_replace", &vmap_replace);
  m.def("_custom_function", [](py::object fun, py::object vjp_fun, py::object jvp_fun, py::object vmap_fun) {
    std::optional<VjpFun> v;
    std::optional<JvpFun> j;
    std::optional<VmapFun> vm;
    if (!vjp_fun.is_none()) {
      auto ref = std::make_shared<PyRef>(vjp_fun);
      v = [ref](const std::vector<array>& p, const std::vector<array>& c, const std::vector<array>& o) {
        py::gil_scoped_acquire gil;
        return to_list_of_arrays(ref->obj(py::cast(p), py::cast(c), py::cast(o)), "custom_function.vjp");
      };
    }
    if (!jvp_fun.is_none()) {
      auto ref = std::make_shared<PyRef>(jvp_fun);
      j = [ref](const std::vector<array>& p, const std::vector<array>& t, const std::vector<int>& argnums) {
        py::gil_scoped_acquire gil;
        return to_list_of_arrays(ref->obj(py::cast(p), py::cast(t), py::cast(argnums)), "custom_function.jvp");
      };
    }
    if (!vmap_fun.is_none()) {
      auto ref = std::make_shared<PyRef>(vmap_fun);
      vm = [ref](const std::vector<array>& in, const std::vector<int>& axes) {
        py::gil_scoped_acquire gil;
        py::object r = ref->obj(py::cast(in), py::cast(axes));
        auto pair = r.cast<py::tuple>();
        if (pair.size() != 2) throw type_error("[custom_function.vmap] Expected (outputs, axes).");
        return std::make_pair(to_list_of_arrays(pair[0], "custom_function.vmap"), pair[1].cast<std::vector<int>>());
      };
    }
    Fun f = custom_function(wrap_fun(std::move(fun), "custom_function"), v, j, vm);
    return py::cpp_function([f](const std::vector<array>& xs) { return f(xs); });
  });
  m.def("_checkpoint", [](py::object fun) {
    Fun f = checkpoint(wrap_fun(std::move(fun), "checkpoint"));
    return py::cpp_function([f](const std::vector<array>& xs) { return f(xs); });
  });
  m.def(
      "stop_gradient",
      [](const array& a, StreamOrDevice) { return stop_gradient(a); }, "a"_a, py::pos_only(), py::kw_only(),
      kStream,
      "stop_gradient(a: array, /, *, stream: StreamOrDevice = None) -> array\n\n"
      "The identity, with a zero derivative: transforms treat the result as a constant.");
  m.def(
      "depends",
      [](py::object inputs, py::object dependencies) -> py::object {
        bool single = is_array(inputs);
        std::vector<array> ins = single ? std::vector<array>{inputs.cast<array>()}
                                        : to_list_of_arrays(inputs, "depends");
        std::vector<array> deps = is_array(dependencies)
                                      ? std::vector<array>{dependencies.cast<array>()}
                                      : to_list_of_arrays(dependencies, "depends");
        auto r = depends(ins, deps);
        if (single) return py::cast(r[0]);
        return py::cast(r);
      },
      "inputs"_a, "dependencies"_a,
      "depends(inputs: array | Sequence[array], dependencies: array | Sequence[array])\n\n"
      "The inputs, unchanged, but computed only after the dependencies. No derivative flows to the "
      "dependencies.");
}

}  // namespace ember::py_bind
