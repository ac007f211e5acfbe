// The array class, dtypes and dtype categories.
#include <pybind11/operators.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "bindings.h"
#include "foreign.h"
#include "ember/primitive.h"

namespace ember::py_bind {

namespace {

struct ArrayIterator {
  array a;
  int64_t i = 0;
};

using BinaryFn = array (*)(const array&, const array&, const StreamOrDevice&);

// self OP other (reflected: other OP self). The other operand is an array, a
// scalar or any array-like (NumPy arrays, buffers, DLPack, __array__); as in
// MLX anything else (a str, a list, a dict) is a ValueError naming the
// operation, None is a TypeError, and so is anything but an array-like for @.
[[noreturn]] void bad_operand(py::handle other, const char* what, bool inplace) {
  std::string msg = std::string("Cannot perform ") + (inplace ? "inplace " : "") + what +
                    " on an ember.core.array and " + py::str(py::type::handle_of(other).attr("__name__")).cast<std::string>();
  if (other.is_none() || std::string(what) == "matrix multiplication") throw py::type_error(msg);
  throw std::invalid_argument(msg);
}

// `extension`: a reflected operator MLX lacks (a list @ array, True & array),
// Ember's own, where a list or tuple on the left converts.
py::object binop(const array& self, py::handle other, BinaryFn fn, const char* what, bool reflected = false,
                 bool inplace = false, bool extension = false) {
  bool sequence = py::isinstance<py::list>(other) || py::isinstance<py::tuple>(other);
  if (!is_operand(other) && !(extension && sequence)) bad_operand(other, what, inplace);
  ArrayLike a(self), b = ArrayLike::from(other);
  auto [x, y] = reflected ? promote(b, a) : promote(a, b);
  return py::cast(fn(x, y, {}));
}

// In-place operators rebind the Python object to the result (other handles to
// the old value keep it), like MLX.
py::object ibinop(py::object self, py::handle b, BinaryFn fn, const char* what) {
  array& a = self.cast<array&>();
  if (fn == &divide && !is_inexact(a.dtype())) {
    throw std::invalid_argument("[divide] In-place true division of a " + std::string(dtype_name(a.dtype())) +
                                " array would change its dtype; use a / b.");
  }
  py::object r = binop(a, b, fn, what, false, true);
  a.overwrite_descriptor(r.cast<array>());
  return self;
}

const char* buffer_format(Dtype t) {
  switch (t) {
    case Dtype::bool_: return "?";
    case Dtype::uint8: return "B";
    case Dtype::uint16: return "H";
    case Dtype::uint32: return "I";
    case Dtype::uint64: return "Q";
    case Dtype::int8: return "b";
    case Dtype::int16: return "h";
    case Dtype::int32: return "i";
    case Dtype::int64: return "q";
    case Dtype::float16: return "e";
    case Dtype::float32: return "f";
    case Dtype::float64: return "d";
    case Dtype::complex64: return "Zf";
    case Dtype::bfloat16: return nullptr;
  }
  return nullptr;
}

// Buffer protocol: the exported memory is owned by a capsule holding its own
// handle to the data (so the Ember buffer, or the borrowed owner behind it,
// stays valid whatever happens to the Python array). The array's strides are
// exported as they are (as MLX) to consumers that take strides; others get
// a dense copy. Read-only borrowed memory is exported read-only.
struct Export {
  array a;
  std::vector<Py_ssize_t> shape, strides;
};

int array_getbuffer(PyObject* obj, Py_buffer* view, int flags) {
  try {
    py::handle h(obj);
    array a = h.cast<array>();
    const char* fmt = buffer_format(a.dtype());
    if (!fmt) {
      PyErr_SetString(PyExc_BufferError, "'bfloat16' is not a valid PEP 3118 buffer format string");
      view->obj = nullptr;
      return -1;
    }
    eval_nogil({a});
    // consumers asking for contiguous memory (or no strides) get it; the
    // PyBUF_*_CONTIGUOUS requests include PyBUF_STRIDES
    const int contig = flags & (PyBUF_C_CONTIGUOUS | PyBUF_F_CONTIGUOUS | PyBUF_ANY_CONTIGUOUS) & ~PyBUF_STRIDES;
    const bool strided = (flags & PyBUF_STRIDES) == PyBUF_STRIDES && contig == 0;
    if (!a.row_contiguous() && !strided) {
      a = contiguous(a);
      eval_nogil({a});
    }
    if (contig == (PyBUF_F_CONTIGUOUS & ~PyBUF_STRIDES)) {
      // a dense row-major array is column-major too only with one dim above 1
      int big = 0;
      for (auto d : a.shape()) big += d > 1;
      if (big > 1) {
        PyErr_SetString(PyExc_BufferError, "Ember arrays export row-major (C-contiguous) or strided buffers.");
        view->obj = nullptr;
        return -1;
      }
    }
    const bool readonly = a.buffer() && a.buffer()->readonly();
    if (readonly && (flags & PyBUF_WRITABLE)) {
      PyErr_SetString(PyExc_BufferError, "The array's memory is read-only.");
      view->obj = nullptr;
      return -1;
    }
    auto* ex = new Export{a, {}, {}};
    for (int i = 0; i < a.ndim(); ++i) {
      ex->shape.push_back(a.shape()[i]);
      ex->strides.push_back(a.strides()[i] * a.itemsize());
    }
    PyObject* cap = PyCapsule_New(ex, nullptr, [](PyObject* c) { delete static_cast<Export*>(PyCapsule_GetPointer(c, nullptr)); });
    if (!cap) {
      delete ex;
      return -1;
    }
    view->obj = cap;  // released by PyBuffer_Release
    view->buf = a.size() ? a.raw_data() : nullptr;
    view->len = a.nbytes();
    view->readonly = readonly ? 1 : 0;
    view->itemsize = a.itemsize();
    view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(fmt) : nullptr;
    view->ndim = a.ndim();
    view->shape = (flags & PyBUF_ND) ? ex->shape.data() : nullptr;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? ex->strides.data() : nullptr;
    view->suboffsets = nullptr;
    view->internal = nullptr;
    return 0;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
    view->obj = nullptr;
    return -1;
  }
}

py::array to_numpy(const array& in, py::handle dtype, py::handle copy) {
  array a = in;
  if (a.dtype() == Dtype::bfloat16) {
    throw std::invalid_argument("'bfloat16' is not a valid PEP 3118 buffer format string");
  }
  eval_nogil({a});
  std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end()), strides;
  for (auto s : a.strides()) strides.push_back(s * a.itemsize());
  auto* keep = new array(a);
  py::capsule owner(keep, [](void* p) { delete static_cast<array*>(p); });
  py::dtype dt(buffer_format(a.dtype()) == std::string("Zf") ? std::string("complex64")
                                                             : std::string(buffer_format(a.dtype())));
  py::array out(dt, shape, strides, a.size() ? a.raw_data() : nullptr, owner);
  if (a.buffer() && a.buffer()->readonly()) out.attr("setflags")("write"_a = false);
  // NumPy's protocol: copy=True always copies, copy=False never does
  const bool always = !copy.is_none() && copy.cast<bool>(), never = !copy.is_none() && !copy.cast<bool>();
  if (!dtype.is_none()) {
    py::object r = out.attr("astype")(dtype, "copy"_a = always);
    if (never && !r.is(out)) {
      throw std::invalid_argument("[__array__] Unable to avoid copy while converting to the requested dtype.");
    }
    return r;
  }
  if (always) return out.attr("copy")();
  return out;
}

}  // namespace

void init_array(py::module_& m) {
  // ---- dtypes ----
  py::class_<Dtype>(m, "Dtype", "An element type of arrays.")
      .def_property_readonly("size", [](Dtype t) { return size_of(t); }, "Size of one element in bytes.")
      .def("__repr__", [](Dtype t) { return std::string("ember.core.") + dtype_name(t); })
      .def("__eq__", [](Dtype a, py::handle b) { return py::isinstance<Dtype>(b) && b.cast<Dtype>() == a; })
      .def("__hash__", [](Dtype t) { return static_cast<int>(t); });
  const Dtype kAllDtypes[] = {Dtype::bool_,   Dtype::uint8,   Dtype::uint16,  Dtype::uint32,  Dtype::uint64,
                       Dtype::int8,    Dtype::int16,   Dtype::int32,   Dtype::int64,   Dtype::float16,
                       Dtype::float32, Dtype::float64, Dtype::bfloat16, Dtype::complex64};
  for (Dtype t : kAllDtypes) {
    std::string n = dtype_name(t);
    m.attr(n == "bool" ? "bool_" : n.c_str()) = t;
  }
  py::enum_<DtypeCategory>(m, "DtypeCategory")
      .value("complexfloating", DtypeCategory::complexfloating)
      .value("floating", DtypeCategory::floating)
      .value("inexact", DtypeCategory::inexact)
      .value("signedinteger", DtypeCategory::signedinteger)
      .value("unsignedinteger", DtypeCategory::unsignedinteger)
      .value("integer", DtypeCategory::integer)
      .value("number", DtypeCategory::number)
      .value("generic", DtypeCategory::generic)
      .export_values();

  m.def(
      "issubdtype",
      [](py::handle a, py::handle b) {
        if (py::isinstance<Dtype>(a)) {
          if (py::isinstance<Dtype>(b)) return a.cast<Dtype>() == b.cast<Dtype>();
          return issubdtype(a.cast<Dtype>(), b.cast<DtypeCategory>());
        }
        if (py::isinstance<Dtype>(b)) return false;
        return issubdtype(a.cast<DtypeCategory>(), b.cast<DtypeCategory>());
      },
      "arg1"_a, "arg2"_a, "Whether arg1 is a sub-type of arg2 (dtypes or categories).");

  py::class_<array> cls(m, "array", py::buffer_protocol(), "An N-dimensional array, evaluated lazily.");
  // our own getbuffer (see Export above)
  {
    auto* type = reinterpret_cast<PyHeapTypeObject*>(cls.ptr());
    type->as_buffer.bf_getbuffer = array_getbuffer;
    type->as_buffer.bf_releasebuffer = nullptr;
  }
  py::class_<ArrayIterator>(m, "ArrayIterator")
      .def("__iter__", [](ArrayIterator& it) -> ArrayIterator& { return it; }, py::return_value_policy::reference)
      .def("__next__", [](ArrayIterator& it) {
        if (it.i >= it.a.shape()[0]) throw py::stop_iteration();
        return index_get(it.a, py::int_(it.i++));
      });

  cls.def(py::init([](py::handle val, std::optional<Dtype> dtype) { return to_array(val, dtype); }), "val"_a,
          "dtype"_a = py::none())
      .def_property_readonly("shape", [](const array& a) { return py::tuple(py::cast(a.shape())); })
      .def_property_readonly("ndim", &array::ndim)
      .def_property_readonly("size", &array::size)
      .def_property_readonly("dtype", &array::dtype)
      .def_property_readonly("itemsize", &array::itemsize)
      .def_property_readonly("nbytes", &array::nbytes)
      .def_property_readonly("T", [](const array& a) { return transpose(a); })
      .def_property_readonly("mT", [](const array& a) {
        if (a.ndim() < 2) throw std::invalid_argument("[mT] Matrix transpose needs at least 2 dimensions.");
        return swapaxes(a, -1, -2);
      })
      .def_property_readonly("real", [](const array& a) { return real(a); })
      .def_property_readonly("imag", [](const array& a) { return imag(a); })
      .def("item", &to_scalar)
      .def("tolist", &to_list)
      .def("astype", [](const array& a, Dtype t, StreamOrDevice s) { return astype(a, t, s); }, "dtype"_a,
           kStream)
      .def("view", [](const array& a, Dtype t, StreamOrDevice s) { return view(a, t, s); }, "dtype"_a,
           kStream)
      .def("__repr__", &array_repr)
      .def("__str__", &array_repr)
      .def("__len__", [](const array& a) {
        if (a.ndim() == 0) throw py::type_error("len() of unsized object");
        return a.shape()[0];
      })
      .def("__iter__", [](const array& a) {
        if (a.ndim() == 0) throw py::type_error("iteration over a 0-d array");
        return ArrayIterator{a, 0};
      })
      .def("__bool__", [](const array& a) {
        if (a.size() != 1) {
          throw std::invalid_argument("[bool] The truth value of an array with " + std::to_string(a.size()) +
                                      " elements is ambiguous; only length-1 arrays convert to a scalar.");
        }
        return to_scalar(astype(a, Dtype::bool_)).cast<bool>();
      })
      .def("__int__", [](const array& a) {
        if (a.size() != 1) throw std::invalid_argument("[int] Only length-1 arrays can be converted to a Python scalar.");
        // floats convert as Python's int(float) does (exact; NaN and infinity raise), as in MLX and NumPy
        if (is_floating(a.dtype())) return py::int_(to_scalar(astype(a, Dtype::float64)));
        return py::int_(to_scalar(astype(a, Dtype::int64)));
      })
      .def("__float__", [](const array& a) {
        if (a.size() != 1) throw std::invalid_argument("[float] Only length-1 arrays can be converted to a Python scalar.");
        return py::float_(to_scalar(astype(a, Dtype::float64)));
      })
      .def("__complex__", [](const array& a) { return to_scalar(astype(a, Dtype::complex64)); })
      .def("__format__", [](const array& a, const std::string& spec) -> py::object {
        // 0-d arrays format as their scalar; others only as their repr
        if (a.ndim() == 0) return py::str(py::module_::import("builtins").attr("format")(to_scalar(a), spec));
        if (spec.empty()) return py::str(array_repr(a));
        throw py::type_error("unsupported format string passed to ember.core.array.__format__");
        return py::str(py::module_::import("builtins").attr("format")(to_scalar(a), spec));
      })
      .def("__index__", [](const array& a) {
        if (!is_integral(a.dtype()) || a.ndim() != 0) {
          throw py::type_error("Only 0-d integer arrays can be used as an index.");
        }
        return py::int_(to_scalar(a));
      })
      .def("__hash__", [](const array& a) { return static_cast<py::ssize_t>(a.id()); })
      .def("__copy__", [](const array& a) { return array(a); })
      .def("__deepcopy__", [](const array& a, py::handle) { return array(a); }, "memo"_a)
      .def("__array__", &to_numpy, "dtype"_a = py::none(), "copy"_a = py::none())
      .def("__dlpack__", [](const array& a, py::kwargs kwargs) { return to_dlpack(a, kwargs); })
      // the Python array API: the namespace is the module itself (as MLX)
      .def(
          "__array_namespace__",
          [](const array&, py::object api_version) -> py::object {
            if (!api_version.is_none()) {
              throw std::invalid_argument("[__array_namespace__] Explicitly specifying api_version is not supported.");
            }
            return py::module_::import("ember.core");
          },
          "api_version"_a = py::none())
      .def("__dlpack_device__", [](const array&) { return py::make_tuple(1, 0); })
      .def(py::pickle(
          [](const array& a) {
            array d = contiguous(a);
            eval_nogil({d});
            return py::make_tuple(py::bytes(static_cast<const char*>(d.raw_data()), d.nbytes()),
                                  py::cast(a.shape()), static_cast<int>(a.dtype()));
          },
          [](py::tuple st) {
            auto bytes = st[0].cast<std::string>();
            auto shape = st[1].cast<Shape>();
            int code = st[2].cast<int>();
            if (code < 0 || code >= kNumDtypes) throw std::invalid_argument("[array] Invalid pickled dtype.");
            Dtype t = static_cast<Dtype>(code);
            if (static_cast<int64_t>(bytes.size()) != checked_size(shape, "array") * size_of(t)) {
              throw std::invalid_argument("[array] Pickled data does not match its shape.");
            }
            return array(bytes.data(), shape, t);
          }));

  // operators
#define EMBER_BINOP(py_name, fn, what) \
  cls.def(py_name, [](const array& a, py::handle b) { return binop(a, b, &fn, what); });
#define EMBER_RBINOP(py_name, fn, what, ext) \
  cls.def(py_name, [](const array& a, py::handle b) { return binop(a, b, &fn, what, true, false, ext); });
#define EMBER_IBINOP(py_name, fn, what) \
  cls.def(py_name, [](py::object a, py::handle b) { return ibinop(a, b, &fn, what); });
// ext: the reflected form is one MLX lacks (binop's `extension`)
#define EMBER_ALL_BINOPS(name, fn, what, ext)  \
  EMBER_BINOP("__" name "__", fn, what)        \
  EMBER_RBINOP("__r" name "__", fn, what, ext) \
  EMBER_IBINOP("__i" name "__", fn, what)
  EMBER_ALL_BINOPS("add", add, "addition", false)
  EMBER_ALL_BINOPS("sub", subtract, "subtraction", false)
  EMBER_ALL_BINOPS("mul", multiply, "multiplication", false)
  EMBER_ALL_BINOPS("truediv", divide, "division", false)
  EMBER_ALL_BINOPS("floordiv", floor_divide, "floor division", false)
  EMBER_ALL_BINOPS("mod", remainder, "modulus", false)
  EMBER_ALL_BINOPS("pow", power, "power", false)
  EMBER_ALL_BINOPS("and", bitwise_and, "bitwise and", true)
  EMBER_ALL_BINOPS("or", bitwise_or, "bitwise or", false)
  EMBER_ALL_BINOPS("xor", bitwise_xor, "bitwise xor", true)
  EMBER_ALL_BINOPS("lshift", left_shift, "left shift", true)
  EMBER_ALL_BINOPS("rshift", right_shift, "right shift", true)
  EMBER_ALL_BINOPS("matmul", matmul, "matrix multiplication", true)
#undef EMBER_ALL_BINOPS
  // == and != with anything that is not an array or scalar compare unequal,
  // and None is a TypeError (as MLX)
  cls.def("__eq__", [](const array& a, py::handle b) -> py::object {
    if (!b.is_none() && !is_operand(b)) return py::bool_(false);
    return binop(a, b, &equal, "equality");
  });
  cls.def("__ne__", [](const array& a, py::handle b) -> py::object {
    if (!b.is_none() && !is_operand(b)) return py::bool_(true);
    return binop(a, b, &not_equal, "inequality");
  });
  EMBER_BINOP("__lt__", less, "less than")
  EMBER_BINOP("__le__", less_equal, "less than or equal")
  EMBER_BINOP("__gt__", greater, "greater than")
  EMBER_BINOP("__ge__", greater_equal, "greater than or equal")
#undef EMBER_BINOP
#undef EMBER_RBINOP
#undef EMBER_IBINOP
  cls.def("__divmod__", [](const ArrayLike& a, const ArrayLike& b) {
    auto [x, y] = promote(a, b);
    auto r = divmod(x, y);
    return py::make_tuple(r[0], r[1]);
  });
  cls.def("__rdivmod__", [](const ArrayLike& a, const ArrayLike& b) {
    auto [x, y] = promote(b, a);
    auto r = divmod(x, y);
    return py::make_tuple(r[0], r[1]);
  });
  cls.def("__neg__", [](const array& a) { return negative(a); });
  cls.def("__pos__", [](const array& a) { return a; });
  cls.def("__abs__", [](const array& a) { return abs(a); });
  cls.def("__invert__", [](const array& a) {
    if (a.dtype() == Dtype::bool_) return logical_not(a);
    return bitwise_invert(a);
  });

  // method forms of ops
#define EMBER_UNARY_METHOD(name, fn) \
  cls.def(name, [](const array& a, StreamOrDevice s) { return fn(a, s); }, py::kw_only(), kStream);
  EMBER_UNARY_METHOD("abs", abs)
  EMBER_UNARY_METHOD("conj", conjugate)
  EMBER_UNARY_METHOD("cos", cos)
  EMBER_UNARY_METHOD("exp", exp)
  EMBER_UNARY_METHOD("log", log)
  EMBER_UNARY_METHOD("log10", log10)
  EMBER_UNARY_METHOD("log1p", log1p)
  EMBER_UNARY_METHOD("log2", log2)
  EMBER_UNARY_METHOD("reciprocal", reciprocal)
  EMBER_UNARY_METHOD("rsqrt", rsqrt)
  EMBER_UNARY_METHOD("sin", sin)
  EMBER_UNARY_METHOD("sqrt", sqrt)
  EMBER_UNARY_METHOD("square", square)
#undef EMBER_UNARY_METHOD
  cls.def("reshape", [](const array& a, py::args shape, StreamOrDevice s) {
        // one sequence or the dims themselves; a dim beyond int32 is MLX's OverflowError
        Shape sh = shape.size() == 1 && !py::isinstance<py::int_>(shape[0]) ? to_shape(shape[0], "reshape")
                                                                            : to_shape(shape, "reshape");
        return reshape(a, sh, s);
      }, py::kw_only(), kStream);
  cls.def("transpose", [](const array& a, py::args axes, StreamOrDevice s) {
        std::optional<Axes> ax;
        if (axes.size() == 1 && !py::isinstance<py::int_>(axes[0])) ax = to_axes(axes[0], "transpose");
        else if (axes.size() > 0) ax = axes.cast<Axes>();
        return transpose(a, ax, s);
      }, py::kw_only(), kStream);
  cls.def("flatten", [](const array& a, int start, int end, StreamOrDevice s) {
        return flatten(a, start, end, s);
      }, "start_axis"_a = 0, "end_axis"_a = -1, py::kw_only(), kStream);
  cls.def("squeeze", [](const array& a, const AxesArg& axis, StreamOrDevice s) {
        return squeeze(a, axis, s);
      }, "axis"_a = py::none(), py::kw_only(), kStream);
  cls.def("swapaxes", [](const array& a, int x, int y, StreamOrDevice s) { return swapaxes(a, x, y, s); },
          "axis1"_a, "axis2"_a, py::kw_only(), kStream);
  cls.def("moveaxis", [](const array& a, int x, int y, StreamOrDevice s) { return moveaxis(a, x, y, s); },
          "source"_a, "destination"_a, py::kw_only(), kStream);
  cls.def("round", [](const array& a, int d, StreamOrDevice s) { return round(a, d, s); },
          "decimals"_a = 0, py::kw_only(), kStream);
  cls.def("split", [](const array& a, py::handle ios, int axis, StreamOrDevice s) {
        auto parts = py::isinstance<py::int_>(ios) ? split(a, ios.cast<int64_t>(), axis, s)
                                                   : split(a, ios.cast<Shape>(), axis, s);
        return parts;
      }, "indices_or_sections"_a, "axis"_a = 0, py::kw_only(), kStream);

  m.def("asarray", [](py::handle a, std::optional<Dtype> dtype, std::optional<bool> copy) {
        return asarray(a, dtype, copy);
      }, "a"_a, "dtype"_a = py::none(), py::kw_only(), "copy"_a = py::none(),
        "Converts the input to an array. copy=None or True copies NumPy, buffer-protocol and DLPack inputs (as "
        "MLX on the CPU); copy=False shares their memory (the array keeps its owner alive) or raises ValueError "
        "where that needs a copy.");
  m.def("from_dlpack", [](py::handle x, std::optional<bool> copy) { return from_dlpack(x, copy); }, "x"_a,
        py::pos_only(), py::kw_only(), "copy"_a = py::none(),
        "Imports a DLPack tensor: copied unless copy=False, which shares its memory (with its strides) or "
        "raises ValueError where that needs a copy (float64 is narrowed to float32, as MLX).");

}

}  // namespace ember::py_bind
