// Argument types of the bindings and their pybind11 type casters, so that a
// binding is a plain function of the values it needs:
// - ArrayLike: anything to_array converts (arrays, Python and NumPy scalars,
//   nested lists/tuples, NumPy arrays, __mlx_array__, __array__, __dlpack__,
//   the buffer protocol). A Python or NumPy scalar stays unconverted until it
//   is used, so that binary ops can give it the other operand's dtype
//   (MLX's weak typing: promote()).
// - StreamOrDevice: None, a Stream, a ThreadLocalStream, a Device or a
//   DeviceType (to_stream_arg); kStream is the `stream=None` keyword.
// - AxesArg (`axis`/`axes`: None, an int or a sequence of ints) and ShapeArg
//   (an int or a sequence of ints). Anything else is pybind11's TypeError
//   naming the function and the accepted types. (Dtypes: std::optional<Dtype>.)
// Included at the end of bindings.h.
#pragma once

#include "bindings.h"

namespace ember::py_bind {

class ArrayLike {
 public:
  ArrayLike() = default;
  ArrayLike(array a) : value_(std::move(a)) {}  // NOLINT: arrays are array-likes
  // The argument as passed: converted with to_array unless it is a scalar.
  static ArrayLike from(py::handle v);
  bool is_scalar() const { return static_cast<bool>(scalar_); }
  // The array; a scalar converts on its own (Python int -> int32 or int64,
  // float -> float32, NumPy scalars keep their dtype).
  const array& get() const;
  operator const array&() const { return get(); }  // NOLINT: passes to the engine's ops
  // This operand next to an array of dtype `other`: a scalar is weakly typed
  // (scalar_to_array), an array is itself.
  array next_to(Dtype other) const;

 private:
  py::object scalar_;
  mutable std::optional<array> value_;
};

// Both operands of a binary op: a scalar next to an array takes the array's
// dtype (x + 1 keeps x's dtype); two scalars or two arrays convert alone.
std::pair<array, array> promote(const ArrayLike& a, const ArrayLike& b);

// An optional array argument; optional scalar operands next to `other`.
inline std::optional<array> opt(const std::optional<ArrayLike>& v) {
  return v ? std::optional<array>(v->get()) : std::nullopt;
}
inline std::optional<array> opt_next_to(const std::optional<ArrayLike>& v, const array& other) {
  return v ? std::optional<array>(v->next_to(other.dtype())) : std::nullopt;
}
// The arrays of a list argument or of *args.
std::vector<array> array_list(const std::vector<ArrayLike>& v);
std::vector<array> array_list(const py::args& args);

// Whether an array operator takes v as its other operand: what ArrayLike
// converts, except lists, tuples and strings (MLX's operators refuse them).
bool is_operand(py::handle v);

struct AxesArg {
  std::optional<Axes> value;  // None: every axis
  operator const std::optional<Axes>&() const { return value; }  // NOLINT
  const Axes& required(const char* op) const;  // TypeError naming op when None
};

struct ShapeArg {
  Shape value;
  operator const Shape&() const { return value; }  // NOLINT
};

inline std::optional<Shape> opt(const std::optional<ShapeArg>& v) {
  return v ? std::optional<Shape>(v->value) : std::nullopt;
}

// Several results as a tuple (single: one result alone, not in a tuple).
inline py::object as_tuple(const std::vector<array>& v, bool single = false) {
  if (single && v.size() == 1) return py::cast(v[0]);
  return py::tuple(py::cast(v));
}

// The keyword every op ends with.
inline const py::arg_v kStream = py::arg("stream") = py::none();

}  // namespace ember::py_bind

namespace pybind11::detail {

template <>
struct type_caster<ember::py_bind::ArrayLike> {
  PYBIND11_TYPE_CASTER(ember::py_bind::ArrayLike, const_name("array | scalar"));
  bool load(handle src, bool convert) {
    // without conversions (an overload set's first pass) only arrays match
    if (!convert && !ember::py_bind::is_array(src)) return false;
    value = ember::py_bind::ArrayLike::from(src);  // conversion errors propagate with their own message
    return true;
  }
  static handle cast(const ember::py_bind::ArrayLike& a, return_value_policy, handle parent) {
    return make_caster<ember::array>::cast(a.get(), return_value_policy::copy, parent);
  }
};

template <>
struct type_caster<ember::py_bind::AxesArg> {
  PYBIND11_TYPE_CASTER(ember::py_bind::AxesArg, const_name("int | Sequence[int] | None"));
  bool load(handle src, bool) { return ember::py_bind::load_axes(src, value.value); }
  static handle cast(const ember::py_bind::AxesArg& a, return_value_policy p, handle parent) {
    return make_caster<std::optional<ember::Axes>>::cast(a.value, p, parent);
  }
};

template <>
struct type_caster<ember::py_bind::ShapeArg> {
  PYBIND11_TYPE_CASTER(ember::py_bind::ShapeArg, const_name("int | Sequence[int]"));
  bool load(handle src, bool) { return ember::py_bind::load_shape(src, value.value); }
  static handle cast(const ember::py_bind::ShapeArg& a, return_value_policy p, handle parent) {
    return make_caster<ember::Shape>::cast(a.value, p, parent);
  }
};

template <>
struct type_caster<ember::StreamOrDevice> {
  PYBIND11_TYPE_CASTER(ember::StreamOrDevice, const_name("Stream | Device | None"));
  bool load(handle src, bool) {
    value = ember::py_bind::to_stream_arg(src);  // a wrong kind raises TypeError naming the accepted ones
    return true;
  }
  static handle cast(const ember::StreamOrDevice& s, return_value_policy, handle parent) {
    if (auto* st = std::get_if<ember::Stream>(&s)) return make_caster<ember::Stream>::cast(*st, return_value_policy::copy, parent);
    if (auto* d = std::get_if<ember::Device>(&s)) return make_caster<ember::Device>::cast(*d, return_value_policy::copy, parent);
    return none().release();
  }
};

}  // namespace pybind11::detail
