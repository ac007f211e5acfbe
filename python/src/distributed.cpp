// The engine side of mx.distributed (csrc/ember/distributed/): private names
// (core._dist_*, core._DistGroup) that python/ember/_distributed.py wraps in
// MLX's public API (argument checks, docstrings, the singleton group).
#include "bindings.h"
#include "casters.h"
#include "ember/distributed/distributed.h"

namespace ember::py_bind {

namespace D = ember::distributed;

void init_distributed(py::module_& m) {
  py::class_<D::Group>(m, "_DistGroup")
      .def("rank", &D::Group::rank)
      .def("size", &D::Group::size)
      .def("split", [](const D::Group& g, int color, int key) {
            py::gil_scoped_release nogil;
            return g.split(color, key);
          }, "color"_a, "key"_a = -1);
  m.def("_dist_set_search_dirs", &D::set_search_dirs);
  m.def("_dist_is_available", &D::is_available);
  m.def("_dist_library", &D::library_path);
  m.def("_dist_load_error", &D::load_error);
  m.def("_dist_launched", &D::launched);
  m.def("_dist_init", [](bool strict) {
    py::gil_scoped_release nogil;
    return D::init(strict);
  });
  m.def("_dist_finalize", &D::finalize);
  m.def("_dist_all_sum", [](const array& x, const D::Group& g, StreamOrDevice s) { return D::all_sum(x, g, s); });
  m.def("_dist_all_max", [](const array& x, const D::Group& g, StreamOrDevice s) { return D::all_max(x, g, s); });
  m.def("_dist_all_min", [](const array& x, const D::Group& g, StreamOrDevice s) { return D::all_min(x, g, s); });
  m.def("_dist_all_gather", [](const array& x, const D::Group& g, StreamOrDevice s) {
    return D::all_gather(x, g, s);
  });
  m.def("_dist_sum_scatter", [](const array& x, const D::Group& g, StreamOrDevice s) {
    return D::sum_scatter(x, g, s);
  });
  m.def("_dist_send", [](const array& x, int dst, const D::Group& g, StreamOrDevice s) {
    return D::send(x, dst, g, s);
  });
  m.def("_dist_recv", [](const ShapeArg& shape, Dtype dtype, int src, const D::Group& g, StreamOrDevice s) {
    return D::recv(shape, dtype, src, g, s);
  });
}

}  // namespace ember::py_bind
