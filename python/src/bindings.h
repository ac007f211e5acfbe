// Shared by the binding files: Python value -> array conversion (with MLX's
// weak typing of Python scalars), stream/axis argument parsing, pytrees; the
// argument types with their type casters are in casters.h (included below).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "ember/ops.h"
#include "ember/eval.h"

namespace py = pybind11;
using namespace pybind11::literals;

namespace ember::py_bind {

// Any Python value MLX accepts as an array: arrays, scalars, nested
// sequences, NumPy arrays (and anything with __array__ or the buffer protocol).
array to_array(py::handle v, std::optional<Dtype> dtype = {});
bool is_array(py::handle v);
bool is_py_scalar(py::handle v);
// A Python scalar converted for an op with an array of dtype `other`
// (weakly typed: int keeps the array's dtype, float keeps inexact dtypes).
array scalar_to_array(py::handle v, Dtype other);
// The argument parsers behind the casters of casters.h (defined in casters.cpp).
StreamOrDevice to_stream_arg(py::handle s);  // a wrong kind: TypeError
// None, an int or a sequence of ints; false for anything else.
bool load_axes(py::handle axis, std::optional<Axes>& out);
std::optional<Axes> to_axes(py::handle axis, const char* op);  // TypeError naming op
// An int or a sequence of ints; false for anything else.
bool load_shape(py::handle shape, Shape& out);  // OverflowError for a dim beyond int32 (MLX)
bool load_int64s(py::handle v, Shape& out);      // an int or ints, any int64 (shifts, ...)
Shape to_shape(py::handle shape, const char* op);  // TypeError naming op
py::object to_scalar(const array& a);  // item()
py::object to_list(const array& a);    // tolist()
std::string array_repr(const array& a);
array index_get(const array& a, py::handle idx);  // a[idx]
int get_print_precision();
void set_print_precision(int p);
// Evaluates with the GIL released.
void eval_nogil(const std::vector<array>& arrays);
// The array leaves of a pytree (trees.cpp: the one walker; lists, tuples,
// dicts, registered nodes; other leaves ignored).
void collect_arrays(py::handle tree, std::vector<array>& out);

void init_array(py::module_& m);
void init_ops(py::module_& m);
void init_indexing(py::module_& m);  // after init_array: adds indexing to the array class
void init_ops_contract(py::module_& m);
void init_ops_sort(py::module_& m);
void init_ops_conv(py::module_& m);
void init_device(py::module_& m);
void init_transforms(py::module_& m);
void init_random(py::module_& m);
void init_fft(py::module_& m);
void init_linalg(py::module_& m);
void init_fast(py::module_& m);
void init_io(py::module_& m);
void init_trees(py::module_& m);
void init_fuse(py::module_& m);

}  // namespace ember::py_bind

#include "casters.h"  // IWYU pragma: export
