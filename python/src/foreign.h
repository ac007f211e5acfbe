// Memory Ember does not own, coming in from Python: DLPack tensors, NumPy
// arrays and buffer-protocol objects. Each is described once (ForeignView)
// and becomes either a borrowed Buffer (Buffer::borrowed: zero-copy, the
// Python owner kept alive exactly as long as an array uses the memory) or,
// as MLX does for every import on the CPU, an Ember-owned copy made at once.
#pragma once

#include <functional>
#include <optional>

#include "bindings.h"

namespace ember::py_bind {

// A release function for memory a Python object lends: runs `f` with the
// GIL taken (the last user of a buffer may let go of it on any thread);
// skipped, leaking, once the interpreter is gone.
std::function<void()> release_with_gil(std::function<void()> f);
// Drops one reference to `owner` (with the GIL) when run.
std::function<void()> release_py_object(py::object owner);

// Foreign memory laid out as a strided array. `data` points at element 0;
// strides are in bytes and may be negative, zero or not multiples of the
// item size (such views are only copied).
struct ForeignView {
  char* data = nullptr;
  Shape shape;
  Strides byte_strides;
  Dtype dtype = Dtype::float32;
  bool complex128 = false;  // elements are pairs of float64 (dtype: complex64)
  bool readonly = false;
};

// The array over `v`: with copy, an evaluated Ember-owned dense copy of
// dtype `target` (made now: the owner may change its memory afterwards);
// without, an array on a borrowed Buffer with v's strides, which takes over
// `release` (ValueError, naming op, where that needs a copy: another dtype,
// misaligned or non-element strides). `release` runs exactly once either way.
array import_view(const ForeignView& v, std::function<void()> release, Dtype target, bool copy, const char* op);

// NumPy arrays (MLX's dtype rules: float64 becomes float32 unless a dtype is
// given, complex128 becomes complex64). copy=false shares the memory.
array from_numpy(py::array arr, std::optional<Dtype> dtype, bool copy = true, const char* op = "array");
// mx.from_dlpack / DLPack import: copies unless copy is false (as MLX's CPU
// build); float64 becomes float32 and complex128 complex64, as in MLX,
// unless a dtype is given.
array from_dlpack(py::handle obj, std::optional<bool> copy, std::optional<Dtype> dtype = {});
// __dlpack__: a capsule keeping the array (hence its buffer or borrowed
// owner) alive until the consumer's deleter runs.
py::capsule to_dlpack(const array& a, const py::kwargs& kwargs);
// mx.asarray: copy None/True as mx.array (MLX copies); copy false shares
// NumPy, buffer-protocol and __array__ memory or raises ValueError.
array asarray(py::handle v, std::optional<Dtype> dtype, std::optional<bool> copy);

}  // namespace ember::py_bind
