// Python <-> array conversion and printing.
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <sstream>

#include "bindings.h"
#include "foreign.h"
#include "ember/io/io.h"
#include "ember/primitive.h"

namespace ember::py_bind {

namespace {

Dtype from_numpy_dtype(const py::dtype& dt, const char* op) {
  char kind = dt.kind();
  int size = static_cast<int>(dt.itemsize());
  switch (kind) {
    case 'b': return Dtype::bool_;
    case 'i':
      return size == 1 ? Dtype::int8 : size == 2 ? Dtype::int16 : size == 4 ? Dtype::int32 : Dtype::int64;
    case 'u':
      return size == 1 ? Dtype::uint8 : size == 2 ? Dtype::uint16 : size == 4 ? Dtype::uint32 : Dtype::uint64;
    case 'f':
      if (size == 2) return Dtype::float16;
      if (size == 4) return Dtype::float32;
      if (size == 8) return Dtype::float64;
      break;
    case 'c':
      if (size == 8) return Dtype::complex64;
      if (size == 16) return Dtype::complex64;  // complex128 narrows, as MLX
      break;
    case 'V':
      if (size == 2 && std::string(py::str(dt)).find("bfloat16") != std::string::npos) return Dtype::bfloat16;
      break;
    default:
      break;
  }
  throw type_error(std::string("[") + op + "] Unsupported NumPy dtype " + std::string(py::str(dt)) + ".");
}

}  // namespace

array from_numpy(py::array arr, std::optional<Dtype> dtype, bool copy, const char* op) {
  if (arr.dtype().attr("byteorder").cast<std::string>() == ">") {
    throw type_error(std::string("[") + op +
                     "] Big-endian NumPy arrays are not supported; convert with .astype(dtype.newbyteorder('=')).");
  }
  ForeignView v;
  v.dtype = from_numpy_dtype(arr.dtype(), op);
  v.complex128 = arr.dtype().kind() == 'c' && arr.dtype().itemsize() == 16;
  v.data = static_cast<char*>(const_cast<void*>(arr.data()));
  v.shape.assign(arr.shape(), arr.shape() + arr.ndim());
  v.byte_strides.assign(arr.strides(), arr.strides() + arr.ndim());
  v.readonly = !arr.writeable();
  // MLX narrows NumPy's float64 to float32 unless a dtype is given
  Dtype target = dtype.value_or(v.dtype == Dtype::float64 ? Dtype::float32 : v.dtype);
  return import_view(v, release_py_object(arr), target, copy, op);
}

namespace {

int64_t py_to_int64(py::handle v) {
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow) throw std::overflow_error("Python int too large to convert to an Ember array.");
  return x;
}

Dtype int_default(py::handle v) {
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow) throw std::overflow_error("Python int too large to convert to an Ember array (beyond int64).");
  return (x > INT_MAX || x < INT_MIN) ? Dtype::int64 : Dtype::int32;
}

array int_scalar(py::handle v, Dtype t) {
  if (t == Dtype::uint64) {
    unsigned long long u = PyLong_AsUnsignedLongLong(v.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return array(py_to_int64(v), t);
    }
    return array(static_cast<uint64_t>(u), t);
  }
  int64_t x = py_to_int64(v);
  if (is_integral(t) && size_of(t) < 8) {
    // the value must fit the integer dtype (MLX raises too)
    int64_t lo, hi;
    int bits = size_of(t) * 8;
    if (is_unsigned(t)) {
      lo = 0;
      hi = (int64_t(1) << bits) - 1;
    } else {
      lo = -(int64_t(1) << (bits - 1));
      hi = (int64_t(1) << (bits - 1)) - 1;
    }
    if (x < lo || x > hi) {
      throw std::invalid_argument("Converting " + std::to_string(x) + " to " + dtype_name(t) +
                                  " would result in overflow.");
    }
  }
  return array(x, t);
}

// Nested sequences: find the shape (ragged -> ValueError) and the dtype.
struct ListInfo {
  Shape shape;
  bool has_float = false, has_complex = false, has_int = false, has_bool = false, has_big = false;
  bool has_array = false;  // an array somewhere: the scan stops, the list is stacked
  std::optional<Dtype> array_dtype;
};

std::string type_name(py::handle v) { return py::type::handle_of(v).attr("__name__").cast<std::string>(); }

void scan_list(py::handle v, int depth, ListInfo& info, std::vector<py::handle>& leaves) {
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
    int64_t n = static_cast<int64_t>(seq.size());
    if (static_cast<int>(info.shape.size()) == depth) {
      if (!leaves.empty()) throw std::invalid_argument("[array] Initialization encountered non-uniform length.");
      info.shape.push_back(n);
    } else if (static_cast<int>(info.shape.size()) < depth || info.shape[depth] != n) {
      throw std::invalid_argument("[array] Initialization encountered non-uniform length.");
    }
    for (auto item : seq) {
      scan_list(item, depth + 1, info, leaves);
      if (info.has_array) return;
    }
    return;
  }
  if (is_array(v)) {
    info.has_array = true;
    return;
  }
  if (static_cast<int>(info.shape.size()) != depth) {
    throw std::invalid_argument("[array] Initialization encountered non-uniform length.");
  }
  if (py::isinstance<py::bool_>(v)) {
    info.has_bool = true;
  } else if (py::isinstance<py::int_>(v)) {
    info.has_int = true;
    if (int_default(v) != Dtype::int32) info.has_big = true;
  } else if (py::isinstance<py::float_>(v)) {
    info.has_float = true;
  } else if (PyComplex_Check(v.ptr())) {
    info.has_complex = true;
  } else {  // MLX: ValueError (a str, bytes, None, a NumPy array or scalar, any other object)
    throw std::invalid_argument("[array] Invalid type " + type_name(v) + " received in array initialization.");
  }
  leaves.push_back(v);
}

array from_list(py::handle v, std::optional<Dtype> dtype) {
  ListInfo info;
  std::vector<py::handle> leaves;
  scan_list(v, 0, info, leaves);
  if (info.has_array) {
    // A list holding arrays anywhere (MLX): each element is converted on its
    // own (Python scalars with their default dtypes, sub-lists likewise), the
    // elements must have one shape, and they are stacked in their promoted
    // dtype: [1, mx.array(2.5)] is float32, [mx.array(1, int8), 2] int32.
    py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
    std::vector<array> parts;
    for (auto item : seq) parts.push_back(to_array(item, dtype));
    for (auto& p : parts) {
      if (p.shape() != parts[0].shape()) {
        throw std::invalid_argument("[array] Initialization encountered non-uniform length.");
      }
    }
    return stack(parts, 0);
  }
  Dtype t = info.has_complex ? Dtype::complex64
            : info.has_float ? Dtype::float32
            : info.has_int   ? (info.has_big ? Dtype::int64 : Dtype::int32)
                             : (leaves.empty() ? Dtype::float32 : Dtype::bool_);
  Dtype target = dtype.value_or(t);
  array out = array::empty_evaluated(info.shape, target);
  dispatch_all(target, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    for (size_t i = 0; i < leaves.size(); ++i) {
      py::handle x = leaves[i];
      if constexpr (is_complex_v<T>) {
        Py_complex c = PyComplex_AsCComplex(x.ptr());
        p[i] = T(static_cast<float>(c.real), static_cast<float>(c.imag));
      } else if constexpr (std::is_same_v<T, bool>) {
        p[i] = PyObject_IsTrue(x.ptr()) == 1;
      } else if constexpr (std::is_integral_v<T>) {
        if (PyFloat_Check(x.ptr())) {
          p[i] = scalar_cast<T>(PyFloat_AsDouble(x.ptr()));  // Ember's float -> int rule (dtype.h)
        } else if (PyComplex_Check(x.ptr())) {
          p[i] = scalar_cast<T>(PyComplex_RealAsDouble(x.ptr()));
        } else if (std::is_unsigned_v<T> && sizeof(T) == 8) {
          unsigned long long u = PyLong_AsUnsignedLongLong(x.ptr());
          if (PyErr_Occurred()) {
            PyErr_Clear();
            u = static_cast<unsigned long long>(py_to_int64(x));
          }
          p[i] = static_cast<T>(u);
        } else {
          p[i] = static_cast<T>(py_to_int64(x));
        }
      } else {
        double d = PyComplex_Check(x.ptr()) ? PyComplex_RealAsDouble(x.ptr()) : PyFloat_AsDouble(x.ptr());
        if (PyErr_Occurred()) {
          PyErr_Clear();
          throw type_error("[array] Could not convert list element to a number.");
        }
        if constexpr (std::is_same_v<T, bfloat16_t>) p[i] = T(static_cast<float>(d));
        else p[i] = static_cast<T>(d);
      }
    }
  });
  return out;
}

}  // namespace

// A type check of the object's type chain (PyObject_TypeCheck): pybind11's
// isinstance goes through PyObject_IsInstance's __instancecheck__ lookup,
// ~10% of building `x + 1`, where every operand is tested two or three times.
bool is_array(py::handle v) {
  static PyTypeObject* const type = reinterpret_cast<PyTypeObject*>(py::type::of<array>().ptr());
  return PyObject_TypeCheck(v.ptr(), type);
}

namespace {
// NumPy scalars (np.float32(1), np.int64(2)...) are weakly typed like
// Python scalars, as in MLX.
bool is_numpy_scalar(py::handle v) {
  static PyTypeObject* const generic = [] {
    py::object g = py::module_::import("numpy").attr("generic");
    return reinterpret_cast<PyTypeObject*>(g.release().ptr());
  }();
  return PyObject_TypeCheck(v.ptr(), generic);
}
py::object numpy_scalar_to_python(py::handle v) { return v.attr("item")(); }
}  // namespace

bool is_py_scalar(py::handle v) {
  return py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v) ||
         PyComplex_Check(v.ptr()) || is_numpy_scalar(v);
}

array to_array(py::handle v, std::optional<Dtype> dtype) {
  if (is_array(v)) {
    const array& a = v.cast<const array&>();
    return dtype ? astype(a, *dtype) : a;
  }
  if (py::isinstance<py::bool_>(v)) return array(v.ptr() == Py_True, dtype.value_or(Dtype::bool_));
  if (py::isinstance<py::int_>(v)) {
    Dtype t = dtype.value_or(int_default(v));
    if (is_inexact(t) || t == Dtype::bool_) return array(static_cast<double>(py_to_int64(v)), t);
    return int_scalar(v, t);
  }
  if (py::isinstance<py::float_>(v)) return array(PyFloat_AsDouble(v.ptr()), dtype.value_or(Dtype::float32));
  if (PyComplex_Check(v.ptr())) {
    Py_complex c = PyComplex_AsCComplex(v.ptr());
    return array(complex64_t(static_cast<float>(c.real), static_cast<float>(c.imag)),
                 dtype.value_or(Dtype::complex64));
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) return from_list(v, dtype);
  if (py::isinstance<py::array>(v)) return from_numpy(py::reinterpret_borrow<py::array>(v), dtype);
  if (py::hasattr(v, "__mlx_array__")) {  // the ArrayLike protocol
    py::object r = v.attr("__mlx_array__")();
    if (!is_array(r)) throw type_error("[array] __mlx_array__ must return an array.");
    return to_array(r, dtype);
  }
  if (PyBytes_Check(v.ptr()) || PyByteArray_Check(v.ptr())) {  // raw bytes are uint8
    py::module_ np = py::module_::import("numpy");
    return from_numpy(np.attr("frombuffer")(v, "dtype"_a = np.attr("uint8")), dtype);
  }
  if (py::hasattr(v, "__array__") || PyObject_CheckBuffer(v.ptr())) {
    py::module_ np = py::module_::import("numpy");
    return from_numpy(np.attr("asarray")(v), dtype);
  }
  if (py::hasattr(v, "__dlpack__")) return from_dlpack(v, true, dtype);  // DLPack only: copied, as MLX
  // MLX: None does not match the signature (TypeError); any other object
  // (a str, a dict, ...) is an invalid value (ValueError)
  if (v.is_none()) throw type_error("[array] Cannot convert None to an array.");
  throw std::invalid_argument("[array] Invalid type " + type_name(v) + " received in array initialization.");
}

array scalar_to_array(py::handle v, Dtype other) {
  if (is_numpy_scalar(v)) return scalar_to_array(numpy_scalar_to_python(v), other);
  if (py::isinstance<py::bool_>(v)) return array(v.ptr() == Py_True, Dtype::bool_);
  if (py::isinstance<py::int_>(v)) {
    if (other == Dtype::bool_) return int_scalar(v, int_default(v));
    if (is_inexact(other)) return array(static_cast<double>(py_to_int64(v)), other);
    return int_scalar(v, other);
  }
  if (py::isinstance<py::float_>(v)) {
    return array(PyFloat_AsDouble(v.ptr()), is_inexact(other) ? other : Dtype::float32);
  }
  return to_array(v);
}

void eval_nogil(const std::vector<array>& arrays) {
  py::gil_scoped_release release;
  eval(arrays);
  io::check_mappings();  // a mapped file that shrank under the arrays (io.h)
}

namespace {
template <class T>
py::object scalar_obj(T v) {
  if constexpr (std::is_same_v<T, bool>) return py::bool_(v);
  else if constexpr (is_complex_v<T>) return py::reinterpret_steal<py::object>(PyComplex_FromDoubles(v.real(), v.imag()));
  else if constexpr (std::is_integral_v<T>) return py::int_(v);
  else return py::float_(static_cast<double>(static_cast<compute_t<T>>(v)));
}

// A dense, evaluated copy (or the array itself when already dense).
array dense(const array& a) {
  eval_nogil({a});
  if (a.row_contiguous()) return a;
  array c = contiguous(a);
  eval_nogil({c});
  return c;
}
}  // namespace

py::object to_scalar(const array& a) {
  if (a.size() != 1) {
    throw std::invalid_argument("[item] Only one-element arrays can be converted to Python scalars; got shape " +
                                shape_str(a.shape()) + ".");
  }
  eval_nogil({a});
  return dispatch_all(a.dtype(), [&](auto tag) -> py::object {
    using T = typename decltype(tag)::type;
    return scalar_obj<T>(*a.data<T>());
  });
}

py::object to_list(const array& a) {
  if (a.ndim() == 0) return to_scalar(a);
  array d = dense(a);
  return dispatch_all(d.dtype(), [&](auto tag) -> py::object {
    using T = typename decltype(tag)::type;
    const T* p = d.data<T>();
    int64_t pos = 0;
    // build nested lists without recursion on the C stack beyond ndim levels
    std::function<py::list(int)> build = [&](int dim) {
      py::list l(d.shape()[dim]);
      for (int64_t i = 0; i < d.shape()[dim]; ++i) {
        if (dim == d.ndim() - 1) l[i] = scalar_obj<T>(p[pos++]);
        else l[i] = build(dim + 1);
      }
      return l;
    };
    return build(0);
  });
}

namespace {
int g_precision = -1;

template <class T>
void format_value(std::ostream& os, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "True" : "False");
  } else if constexpr (is_complex_v<T>) {
    format_value(os, v.real());
    if (v.imag() >= 0 || std::isnan(v.imag())) os << "+";
    format_value(os, v.imag());
    os << "j";
  } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
    os << static_cast<int>(v);
  } else if constexpr (std::is_integral_v<T>) {
    os << v;
  } else {
    double x = static_cast<double>(static_cast<compute_t<T>>(v));
    if (std::isnan(x)) os << "nan";
    else if (std::isinf(x)) os << (x > 0 ? "inf" : "-inf");
    else os << x;
  }
}
}  // namespace

int get_print_precision() { return g_precision; }
void set_print_precision(int p) { g_precision = p; }

std::string array_repr(const array& a) {
  array d = dense(a);
  std::ostringstream os;
  // default: 6 significant digits (%g-like); with a precision set, fixed notation (as MLX)
  if (g_precision >= 0) os << std::fixed << std::setprecision(g_precision);
  else os << std::setprecision(6);
  os << "array(";
  dispatch_all(d.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = d.data<T>();
    const int nd = d.ndim();
    if (nd == 0) {
      format_value(os, p[0]);
      return;
    }
    Strides st = row_strides(d.shape());
    std::function<void(int, int64_t)> rec = [&](int dim, int64_t off) {
      os << "[";
      int64_t n = d.shape()[dim];
      bool summarize = n > 6;
      for (int64_t i = 0; i < n; ++i) {
        if (summarize && i == 3) {
          os << "...";
          i = n - 4;
          if (dim == nd - 1) os << ", ";
          else os << ",\n" << std::string(7 + dim, ' ');
          continue;
        }
        if (dim == nd - 1) format_value(os, p[off + i]);
        else rec(dim + 1, off + i * st[dim]);
        if (i + 1 < n) {
          if (dim == nd - 1) os << ", ";
          else os << ",\n" << std::string(7 + dim, ' ');
        }
      }
      os << "]";
    };
    rec(0, 0);
  });
  os << ", dtype=" << dtype_name(d.dtype()) << ")";
  return os.str();
}

}  // namespace ember::py_bind
