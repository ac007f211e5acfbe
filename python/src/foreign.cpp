// Foreign memory: the one import of memory Ember does not own (NumPy arrays,
// buffer-protocol objects through NumPy, DLPack tensors) and the DLPack
// export. See foreign.h.
#include "foreign.h"

#include "ember/backend/cpu/copy.h"

#include <cstring>
#include <string>

namespace ember::py_bind {

std::function<void()> release_with_gil(std::function<void()> f) {
  return [f = std::move(f)]() {
    if (!Py_IsInitialized()) return;  // interpreter gone: leak rather than touch it
#if PY_VERSION_HEX >= 0x030D0000
    const bool finalizing = Py_IsFinalizing();
#else
    const bool finalizing = _Py_IsFinalizing();
#endif
    // a thread without the GIL cannot take it while the interpreter shuts down
    if (finalizing && !PyGILState_Check()) return;
    py::gil_scoped_acquire gil;
    f();
  };
}

std::function<void()> release_py_object(py::object owner) {
  PyObject* p = owner.release().ptr();
  return release_with_gil([p] { Py_DECREF(p); });
}

namespace {

// Runs a release function once unless it was handed on.
struct ReleaseGuard {
  std::function<void()> f;
  ~ReleaseGuard() {
    if (f) f();
  }
  std::function<void()> take() { return std::exchange(f, nullptr); }
};

int alignment_of(Dtype t) { return t == Dtype::complex64 ? 4 : size_of(t); }  // complex64_t: two floats

[[noreturn]] void no_copy(const char* op, const std::string& why) {
  throw std::invalid_argument(std::string("[") + op + "] Cannot import this memory without a copy: " + why + ".");
}

}  // namespace

array import_view(const ForeignView& v, std::function<void()> release, Dtype target, bool copy, const char* op) {
  ReleaseGuard guard{std::move(release)};
  if (v.shape.size() != v.byte_strides.size()) {
    throw std::invalid_argument(std::string("[") + op + "] The strides do not match the shape.");
  }
  if (v.complex128) {
    // complex128 has no Ember dtype: read it as float64 pairs, narrow them to
    // float32 and view the pairs as complex64 (MLX narrows it too)
    if (!copy) no_copy(op, "complex128 data becomes complex64");
    ForeignView pairs = v;
    pairs.complex128 = false;
    pairs.dtype = Dtype::float64;
    pairs.shape.push_back(2);
    pairs.byte_strides.push_back(8);
    array f = import_view(pairs, guard.take(), Dtype::float32, true, op);
    array c = reshape(view(f, Dtype::complex64), v.shape);
    return target == Dtype::complex64 ? c : astype(c, target);
  }
  const int64_t n = checked_size(v.shape, op);
  const int64_t item = size_of(v.dtype);
  if (n == 0) {
    if (!copy && target != v.dtype) no_copy(op, std::string("the data is not ") + dtype_name(target));
    return array::empty_evaluated(v.shape, target);  // addresses nothing
  }
  if (!v.data) throw std::invalid_argument(std::string("[") + op + "] The data pointer of a non-empty tensor is null.");
  // the bytes the elements occupy: [base + lo, base + hi + item)
  auto [lo, hi] = element_range(v.shape, v.byte_strides, op);
  const uintptr_t base = reinterpret_cast<uintptr_t>(v.data);
  const uintptr_t below = uintptr_t(0) - static_cast<uintptr_t>(lo);  // -lo, lo <= 0
  uintptr_t first = base - below, end = 0;
  if (base < below || __builtin_add_overflow(base, static_cast<uintptr_t>(hi) + static_cast<uintptr_t>(item), &end)) {
    throw std::invalid_argument(std::string("[") + op + "] The strides address memory outside the address space.");
  }
  const int64_t first_el = static_cast<int64_t>(below / static_cast<uintptr_t>(item));  // element 0's offset
  // representable as an Ember array: aligned, strides in whole elements
  bool whole = base % static_cast<uintptr_t>(alignment_of(v.dtype)) == 0;
  Strides es(v.shape.size(), 0);
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (v.byte_strides[i] % item == 0) es[i] = v.byte_strides[i] / item;
    else if (v.shape[i] > 1) whole = false;
  }
  if (!copy) {
    if (!whole) no_copy(op, std::string("it is not aligned to ") + dtype_name(v.dtype) + " elements");
    if (target != v.dtype) {
      no_copy(op, std::string("the data is ") + dtype_name(v.dtype) + ", not " + dtype_name(target));
    }
    auto buf = Buffer::borrowed(reinterpret_cast<void*>(first), end - first, guard.take(), v.readonly);
    return array::from_buffer(std::move(buf), v.shape, v.dtype, es, first_el, op);
  }
  if (whole) {
    // the strided copy kernels read the owner's memory in place
    auto buf = Buffer::borrowed(reinterpret_cast<void*>(first), end - first, guard.take(), v.readonly);
    array src = array::from_buffer(std::move(buf), v.shape, v.dtype, es, first_el, op);
    if (target != v.dtype) {
      array out = astype(src, target);
      eval_nogil({out});
      return out;
    }
    array out = array::empty_evaluated(v.shape, target);
    py::gil_scoped_release nogil;
    cpu::copy_to_dense(src, out.raw_data());
    return out;
  }
  // misaligned or strides between elements: byte copies, element by element
  array out = array::empty_evaluated(v.shape, v.dtype);
  {
    py::gil_scoped_release nogil;
    const int nd = static_cast<int>(v.shape.size());
    std::vector<int64_t> idx(nd, 0);
    char* dst = out.data<char>();
    int64_t off = 0;
    for (int64_t k = 0; k < n; ++k) {
      std::memcpy(dst + k * item, v.data + off, static_cast<size_t>(item));
      for (int d = nd - 1; d >= 0; --d) {
        if (++idx[d] < v.shape[d]) {
          off += v.byte_strides[d];
          break;
        }
        off -= (v.shape[d] - 1) * v.byte_strides[d];
        idx[d] = 0;
      }
    }
  }
  return target == v.dtype ? out : astype(out, target);
}

// ---------------- DLPack ----------------
namespace {

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  uint64_t flags;
  DLTensor dl_tensor;
};
constexpr uint64_t kDLReadOnly = 1, kDLIsCopied = 2;
constexpr int32_t kDLCPU = 1;
constexpr int kMaxDims = 64;

// What an exported tensor owns: the array (its buffer, or the borrowed
// owner behind it) and the shape/strides the tensor points at.
struct DLContext {
  array a;
  Shape shape;
  Strides strides;
};

DLDataType dl_dtype(Dtype t) {
  uint8_t bits = static_cast<uint8_t>(size_of(t) * 8);
  if (t == Dtype::bool_) return {6, 8, 1};
  if (is_signed_int(t)) return {0, bits, 1};
  if (is_unsigned(t)) return {1, bits, 1};
  if (t == Dtype::bfloat16) return {4, 16, 1};
  if (is_complex(t)) return {5, 64, 1};
  return {2, bits, 1};
}

// The Ember dtype of a DLPack dtype (complex128: complex64 with the flag).
Dtype from_dl_dtype(DLDataType d, bool& complex128) {
  complex128 = false;
  if (d.lanes != 1) {
    throw type_error("[from_dlpack] Vector dtypes (lanes " + std::to_string(d.lanes) + ") are not supported.");
  }
  switch (d.code) {
    case 0:  // int
      if (d.bits == 8) return Dtype::int8;
      if (d.bits == 16) return Dtype::int16;
      if (d.bits == 32) return Dtype::int32;
      if (d.bits == 64) return Dtype::int64;
      break;
    case 1:  // uint
      if (d.bits == 8) return Dtype::uint8;
      if (d.bits == 16) return Dtype::uint16;
      if (d.bits == 32) return Dtype::uint32;
      if (d.bits == 64) return Dtype::uint64;
      break;
    case 2:  // float
      if (d.bits == 16) return Dtype::float16;
      if (d.bits == 32) return Dtype::float32;
      if (d.bits == 64) return Dtype::float64;
      break;
    case 4:  // bfloat
      if (d.bits == 16) return Dtype::bfloat16;
      break;
    case 5:  // complex
      if (d.bits == 64) return Dtype::complex64;
      if (d.bits == 128) {
        complex128 = true;
        return Dtype::complex64;
      }
      break;
    case 6:  // bool
      if (d.bits == 8) return Dtype::bool_;
      break;
  }
  throw type_error("[from_dlpack] Unsupported DLPack dtype (code " + std::to_string(d.code) + ", bits " +
                   std::to_string(d.bits) + ").");
}

ForeignView dl_view(const DLTensor& d, bool readonly) {
  if (d.device.device_type != kDLCPU) {
    throw std::invalid_argument("[from_dlpack] Only CPU tensors can be imported (device type " +
                                std::to_string(d.device.device_type) + ").");
  }
  if (d.ndim < 0 || d.ndim > kMaxDims) {
    throw std::invalid_argument("[from_dlpack] Invalid number of dimensions (" + std::to_string(d.ndim) + ").");
  }
  if (d.ndim > 0 && !d.shape) throw std::invalid_argument("[from_dlpack] The tensor has no shape.");
  ForeignView v;
  v.dtype = from_dl_dtype(d.dtype, v.complex128);
  v.readonly = readonly;
  v.shape.assign(d.shape, d.shape + d.ndim);
  checked_size(v.shape, "from_dlpack");
  const int64_t item = v.complex128 ? 16 : size_of(v.dtype);
  Strides el = d.strides ? Strides(d.strides, d.strides + d.ndim) : row_strides(v.shape);
  v.byte_strides.resize(el.size());
  for (size_t i = 0; i < el.size(); ++i) {
    if (__builtin_mul_overflow(el[i], item, &v.byte_strides[i])) {
      throw std::invalid_argument("[from_dlpack] Stride " + std::to_string(el[i]) + " is out of range.");
    }
  }
  v.data = static_cast<char*>(d.data);
  if (v.data) {
    uintptr_t p;
    if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(v.data), d.byte_offset, &p)) {
      throw std::invalid_argument("[from_dlpack] The byte offset is out of range.");
    }
    v.data = reinterpret_cast<char*>(p);
  }
  return v;
}

}  // namespace

array from_dlpack(py::handle obj, std::optional<bool> copy, std::optional<Dtype> dtype) {
  if (!py::hasattr(obj, "__dlpack__")) {
    throw type_error("[from_dlpack] Expected an object with __dlpack__, got " +
                     std::string(py::str(py::type::handle_of(obj).attr("__name__"))) + ".");
  }
  py::object cap;
  try {
    cap = obj.attr("__dlpack__")("max_version"_a = py::make_tuple(1, 1));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;  // a producer without max_version: the unversioned protocol
    cap = obj.attr("__dlpack__")();
  }
  std::function<void()> release;
  const DLTensor* t = nullptr;
  bool readonly = false;
  if (PyCapsule_IsValid(cap.ptr(), "dltensor_versioned")) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap.ptr(), "dltensor_versioned"));
    PyCapsule_SetName(cap.ptr(), "used_dltensor_versioned");  // ours now: its deleter runs once, from us
    release = release_with_gil([m] {
      if (m->deleter) m->deleter(m);
    });
    if (m->version.major != 1) {
      release();
      throw std::invalid_argument("[from_dlpack] DLPack version " + std::to_string(m->version.major) + "." +
                                  std::to_string(m->version.minor) + " is not supported (1.x is).");
    }
    readonly = (m->flags & kDLReadOnly) != 0;
    t = &m->dl_tensor;
  } else if (PyCapsule_IsValid(cap.ptr(), "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
    PyCapsule_SetName(cap.ptr(), "used_dltensor");
    release = release_with_gil([m] {
      if (m->deleter) m->deleter(m);
    });
    t = &m->dl_tensor;
  } else {
    throw type_error("[from_dlpack] __dlpack__() did not return an unused DLPack capsule.");
  }
  ReleaseGuard guard{std::move(release)};
  ForeignView v = dl_view(*t, readonly);
  // MLX narrows float64 producers to float32
  Dtype target = dtype.value_or(v.dtype == Dtype::float64 ? Dtype::float32 : v.dtype);
  return import_view(v, guard.take(), target, copy.value_or(true), "from_dlpack");
}

py::capsule to_dlpack(const array& in, const py::kwargs& kwargs) {
  auto arg = [&](const char* name) -> py::object {
    return kwargs.contains(name) ? py::reinterpret_borrow<py::object>(kwargs[name]) : py::none();
  };
  py::object max_version = arg("max_version"), dl_device = arg("dl_device"), copy_arg = arg("copy");
  if (!dl_device.is_none()) {
    auto dev = dl_device.cast<std::pair<int, int>>();
    if (dev.first != kDLCPU) throw py::buffer_error("[__dlpack__] Ember arrays can only be exported to the CPU.");
  }
  // a versioned tensor for consumers that take one (it can say read-only)
  bool versioned = false;
  if (!max_version.is_none()) {
    auto mv = max_version.cast<py::tuple>();
    versioned = mv.size() > 0 && mv[0].cast<int>() >= 1;
  }
  std::optional<bool> copy;
  if (!copy_arg.is_none()) copy = copy_arg.cast<bool>();
  array a = in;
  eval_nogil({a});
  bool readonly = a.buffer() && a.buffer()->readonly();
  bool copied = false;
  if (copy.value_or(false) || (readonly && !versioned)) {
    // an unversioned consumer cannot be told that the memory is read-only
    if (copy && !*copy) {
      throw py::buffer_error("[__dlpack__] Read-only memory cannot be exported without a copy as unversioned DLPack.");
    }
    array c = array::empty_evaluated(a.shape(), a.dtype());
    if (a.size()) {
      py::gil_scoped_release nogil;
      cpu::copy_to_dense(a, c.raw_data());
    }
    a = c;
    copied = true;
    readonly = false;
  }
  auto* ctx = new DLContext{a, a.shape(), a.strides()};
  DLTensor t{};
  t.data = a.buffer() ? a.buffer()->ptr() : nullptr;
  t.byte_offset = static_cast<uint64_t>(a.offset() * a.itemsize());
  t.device = {kDLCPU, 0};
  t.ndim = a.ndim();
  t.dtype = dl_dtype(a.dtype());
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  if (versioned) {
    auto* mt = new DLManagedTensorVersioned{};
    mt->version = {1, 0};  // what this tensor needs (no 1.1 dtypes): within any 1.x maximum
    mt->dl_tensor = t;
    mt->flags = (readonly ? kDLReadOnly : 0) | (copied ? kDLIsCopied : 0);
    mt->manager_ctx = ctx;
    mt->deleter = [](DLManagedTensorVersioned* self) {
      delete static_cast<DLContext*>(self->manager_ctx);
      delete self;
    };
    return py::capsule(mt, "dltensor_versioned", [](PyObject* cap) {
      // only a capsule that was never consumed still owns the tensor
      if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap, "dltensor_versioned"));
        if (m && m->deleter) m->deleter(m);
      }
    });
  }
  auto* mt = new DLManagedTensor{};
  mt->dl_tensor = t;
  mt->manager_ctx = ctx;
  mt->deleter = [](DLManagedTensor* self) {
    delete static_cast<DLContext*>(self->manager_ctx);
    delete self;
  };
  return py::capsule(mt, "dltensor", [](PyObject* cap) {
    if (PyCapsule_IsValid(cap, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
      if (m && m->deleter) m->deleter(m);
    }
  });
}

array asarray(py::handle v, std::optional<Dtype> dtype, std::optional<bool> copy) {
  if (copy.value_or(true)) return to_array(v, dtype);  // MLX copies every import on the CPU
  // copy=False: share the memory or raise
  auto cannot = [] {
    throw std::invalid_argument("[asarray] Unable to avoid copy while creating an array as requested.");
  };
  if (is_array(v)) {
    const array& a = v.cast<const array&>();
    if (dtype && *dtype != a.dtype()) cannot();
    return a;
  }
  py::module_ np = py::module_::import("numpy");
  if (py::isinstance<py::array>(v)) return from_numpy(py::reinterpret_borrow<py::array>(v), dtype, false, "asarray");
  if (py::hasattr(v, "__mlx_array__")) return asarray(v.attr("__mlx_array__")(), dtype, copy);
  if (PyBytes_Check(v.ptr()) || PyByteArray_Check(v.ptr())) {  // raw bytes are uint8
    return from_numpy(np.attr("frombuffer")(v, "dtype"_a = np.attr("uint8")), dtype, false, "asarray");
  }
  if (py::hasattr(v, "__array__") || PyObject_CheckBuffer(v.ptr())) {
    py::object arr;
    try {
      arr = np.attr("asarray")(v, "copy"_a = false);
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_ValueError)) cannot();
      throw;
    }
    return from_numpy(arr, dtype, false, "asarray");
  }
  if (py::hasattr(v, "__dlpack__")) return from_dlpack(v, false, dtype);
  cannot();
  return {};
}

}  // namespace ember::py_bind
