// ember.core: the extension module.
#include "bindings.h"
#include "docstrings.h"
#include "ember/version.h"

namespace ember::py_bind {
void init_distributed(py::module_& m);  // distributed.cpp
void init_compile(py::module_& m);  // compile.cpp
void init_quantized(py::module_& m);  // quantized.cpp
}  // namespace ember::py_bind

PYBIND11_MODULE(core, m) {
  m.doc() = "Ember core: lazily evaluated arrays, ops, devices and memory.";
  // the version compiled in (pyproject.toml's, through CMake's EMBER_VERSION)
  m.attr("__version__") = ember::version();
  // Engine errors -> Python: invalid_argument is ValueError and out_of_range
  // IndexError (pybind11's defaults); ember::type_error is TypeError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ember::type_error& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    }
  });
  ember::py_bind::init_device(m);
  ember::py_bind::init_array(m);
  ember::py_bind::init_ops(m);
  ember::py_bind::init_indexing(m);
  ember::py_bind::init_ops_contract(m);
  ember::py_bind::init_ops_sort(m);
  ember::py_bind::init_transforms(m);
  ember::py_bind::init_ops_conv(m);
  ember::py_bind::init_fft(m);
  ember::py_bind::init_random(m);
  ember::py_bind::init_linalg(m);
  ember::py_bind::init_fast(m);
  ember::py_bind::init_io(m);
  ember::py_bind::init_distributed(m);
  ember::py_bind::init_fuse(m);
  ember::py_bind::init_compile(m);
  ember::py_bind::init_quantized(m);
  // ArrayLike: the protocol of objects that convert themselves with __mlx_array__()
  m.attr("ArrayLike") = py::module_::import("builtins").attr("type")(
      "ArrayLike", py::make_tuple(),
      py::dict("__doc__"_a = "Objects with an __mlx_array__() method returning an array are accepted wherever an "
                             "array is.",
               "__module__"_a = "ember.core"));
  // Last: the docstrings of everything bound above (docstrings.cpp).
  ember::py_bind::install_docstrings(m);
}
