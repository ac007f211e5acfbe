// ArrayLike (casters.h): array arguments with MLX's weak typing of scalars.
#include "bindings.h"
#include <limits>
#include <stdexcept>
#include <string>

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

StreamOrDevice to_stream_arg(py::handle s) {
  if (s.is_none()) return std::monostate{};
  if (py::isinstance<Stream>(s)) return s.cast<Stream>();
  if (py::isinstance<ThreadLocalStream>(s)) return resolve(s.cast<ThreadLocalStream>());
  if (py::isinstance<Device>(s)) return s.cast<Device>();
  if (py::isinstance<Device::Type>(s)) return Device{s.cast<Device::Type>(), 0};
  throw type_error("[stream] Expected a Stream, ThreadLocalStream, Device, DeviceType or None.");
}

namespace {
template <class V>
bool load_ints(py::handle v, V& out) {
  using T = typename V::value_type;
  if (PyIndex_Check(v.ptr())) {  // Python and NumPy ints (a NumPy array has __index__ too: falls through)
    py::detail::make_caster<T> one;
    if (one.load(v, true)) {
      out = V{py::detail::cast_op<T>(one)};
      return true;
    }
  }
  py::detail::make_caster<V> seq;
  if (!seq.load(v, true)) return false;
  out = py::detail::cast_op<V&&>(std::move(seq));
  return true;
}
}  // namespace

bool load_axes(py::handle axis, std::optional<Axes>& out) {
  if (axis.is_none()) {
    out.reset();
    return true;
  }
  Axes ax;
  if (!load_ints(axis, ax)) return false;
  out = std::move(ax);
  return true;
}

std::optional<Axes> to_axes(py::handle axis, const char* op) {
  std::optional<Axes> out;
  if (!load_axes(axis, out)) {
    throw type_error(std::string("[") + op + "] Expected None, an int or a sequence of ints for the axes.");
  }
  return out;
}

bool load_int64s(py::handle v, Shape& out) { return load_ints(v, out); }

bool load_shape(py::handle shape, Shape& out) {
  if (!load_ints(shape, out)) return false;
  // MLX's shapes hold 32-bit dims: a dim outside that range is an OverflowError
  for (int64_t d : out) {
    if (d < std::numeric_limits<int32_t>::min() || d > std::numeric_limits<int32_t>::max()) {
      throw std::overflow_error("Shape dimension " + std::to_string(d) +
                                " is outside the supported range [-2147483648, 2147483647].");
    }
  }
  return true;
}

Shape to_shape(py::handle shape, const char* op) {
  Shape out;
  if (!load_shape(shape, out)) {
    throw type_error(std::string("[") + op + "] Expected an int or a sequence of ints for the shape.");
  }
  return out;
}

const Axes& AxesArg::required(const char* op) const {
  if (!value) throw type_error(std::string("[") + op + "] axis must be an int or a sequence of ints, not None.");
  return *value;
}

bool is_operand(py::handle v) {
  if (is_array(v) || is_py_scalar(v)) return true;
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v) || py::isinstance<py::str>(v)) return false;
  return py::isinstance<py::array>(v) || py::hasattr(v, "__mlx_array__") || py::hasattr(v, "__array__") ||
         py::hasattr(v, "__dlpack__") || PyObject_CheckBuffer(v.ptr());
}

}  // namespace ember::py_bind
