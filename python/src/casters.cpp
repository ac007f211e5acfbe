// ArrayLike (casters.h): array arguments with MLX's weak typing of scalars.
#include "bindings.h"

namespace ember::py_bind {

ArrayLike ArrayLike::from(py::handle v) {
  ArrayLike out;
  if (is_array(v)) {
    out.value_ = v.cast<array>();
  } else if (is_py_scalar(v)) {
    out.scalar_ = py::reinterpret_borrow<py::object>(v);
  } else {
    out.value_ = to_array(v);
  }
  return out;
}

const array& ArrayLike::get() const {
  if (!value_) value_ = to_array(scalar_);
  return *value_;
}

array ArrayLike::next_to(Dtype other) const {
  if (scalar_) return scalar_to_array(scalar_, other);
  return get();
}

std::pair<array, array> promote(const ArrayLike& a, const ArrayLike& b) {
  if (a.is_scalar() && !b.is_scalar()) return {a.next_to(b.get().dtype()), b.get()};
  if (b.is_scalar() && !a.is_scalar()) return {a.get(), b.next_to(a.get().dtype())};
  return {a.get(), b.get()};
}

std::vector<array> array_list(const std::vector<ArrayLike>& v) { return {v.begin(), v.end()}; }

std::vector<array> array_list(const py::args& args) {
  std::vector<array> out;
  for (auto a : args) out.push_back(ArrayLike::from(a));
  return out;
}

bool is_operand(py::handle v) {
  if (is_array(v) || is_py_scalar(v)) return true;
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v) || py::isinstance<py::str>(v)) return false;
  return py::isinstance<py::array>(v) || py::hasattr(v, "__mlx_array__") || py::hasattr(v, "__array__") ||
         py::hasattr(v, "__dlpack__") || PyObject_CheckBuffer(v.ptr());
}

}  // namespace ember::py_bind
