// Ember's C++ API in one header: everything a C++ program needs to build,
// transform, compile, save and load arrays, written to read like the Python
// API (`import ember.core as mx`):
//
//   #include <ember/ember.h>
//   using namespace ember;
//
//   array x = from_vector({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});   // mx.array([[1, 2], [3, 4]])
//   array y = exp(x) + 1.0f;                                     // lazy, like Python
//   auto loss = [](const std::vector<array>& p) { return sum(square(p[0])); };
//   auto [value, grads] = value_and_grad(loss)({x});             // mx.value_and_grad(loss)(x)
//   std::vector<float> g = to_vector<float>(grads[0]);           // 2 * x, evaluated
//
// What lives where:
//   - arrays, dtypes, devices and streams: ember/array.h, dtype.h, device.h;
//     eval/async_eval: eval.h;
//   - every op (creation, elementwise, reductions, shapes, indexing, sorting,
//     einsum & co.): ember/ops.h and ember/ops/*.h; linalg in ember::linalg,
//     fft in ember::fft, the fused kernels in ember::fast, conv and the
//     quantized products in ember;
//   - random keys and samplers: ember::random (random/random.h);
//   - the transforms on flat lists of arrays (vjp, jvp, vmap,
//     custom_function, checkpoint, stop_gradient): transforms/transforms.h;
//     grad/value_and_grad, the one-array forms and compile: below;
//   - files: load/save below, and the format-level readers and writers
//     (npy, npz, safetensors, gguf) in ember::io (io/io.h);
//   - import_function/export_function (compile/export.h) where this Ember
//     has them (EMBER_HAS_EXPORT is then 1);
//   - distributed: ember::distributed (distributed/distributed.h).
//
// Errors are C++ exceptions carrying the messages Python shows:
// std::invalid_argument (Python's ValueError), ember::type_error, derived
// from it (TypeError), std::out_of_range (IndexError), ember::io::os_error
// (OSError) and std::runtime_error (RuntimeError). This header and those it
// includes need nothing but the standard library and compile warning-free
// with -Wall -Wextra -pedantic (C++17).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/allocator.h"
#include "ember/array.h"
#include "ember/compile/compile.h"
#include "ember/device.h"
#include "ember/distributed/distributed.h"
#include "ember/dtype.h"
#include "ember/eval.h"
#include "ember/io/io.h"
#include "ember/ops.h"
#include "ember/ops/contract.h"
#include "ember/ops/conv.h"
#include "ember/ops/fast.h"
#include "ember/ops/fft.h"
#include "ember/ops/lapack.h"
#include "ember/ops/products.h"
#include "ember/ops/quantized.h"
#include "ember/ops/sort.h"
#include "ember/random/random.h"
#include "ember/transforms/transforms.h"

#if __has_include("ember/compile/export.h")
#include "ember/compile/export.h"
#define EMBER_HAS_EXPORT 1
#else
#define EMBER_HAS_EXPORT 0
#endif

namespace ember {

// ---- arrays from C++ data ----

// The dtype of a C++ element type (float -> float32, int32_t -> int32, ...).
template <class T>
constexpr Dtype dtype_of() {
  return type_to_dtype<T>::value;
}

namespace api_detail {
// Throws std::invalid_argument naming `op` unless `n` elements fill `shape`.
void check_count(size_t n, const Shape& shape, const char* op);
}  // namespace api_detail

// A copy of `shape`'s worth of dense row-major elements at `data`.
template <class T>
array from_data(const T* data, const Shape& shape) {
  checked_size(shape, "from_data");
  return array(static_cast<const void*>(data), shape, dtype_of<T>());
}

// A copy of the vector's elements: 1-d, or of `shape` (whose size must be
// v.size()). from_vector({1.f, 2.f, 3.f, 4.f}, {2, 2}) is mx.array([[1., 2.], [3., 4.]]).
template <class T>
array from_vector(const std::vector<T>& v, const Shape& shape) {
  static_assert(!std::is_same_v<T, bool>, "from_vector: std::vector<bool> has no contiguous storage; use uint8_t and astype");
  api_detail::check_count(v.size(), shape, "from_vector");
  return array(static_cast<const void*>(v.data()), shape, dtype_of<T>());
}
template <class T>
array from_vector(const std::vector<T>& v) {
  return from_vector(v, Shape{static_cast<int64_t>(v.size())});
}
template <class T>
array from_vector(std::initializer_list<T> v, const Shape& shape) {
  api_detail::check_count(v.size(), shape, "from_vector");
  return array(static_cast<const void*>(v.begin()), shape, dtype_of<T>());
}
template <class T>
array from_vector(std::initializer_list<T> v) {
  return from_vector(v, Shape{static_cast<int64_t>(v.size())});
}

// No copy: an array of `shape` reading the dense row-major elements at
// `data` in place. The caller keeps the memory alive and unchanged until
// `release` runs: once, when the last array (view, graph node) using it lets
// go (or at once if borrow throws). With a const pointer the memory is lent
// read-only. Ember never writes into borrowed memory.
template <class T>
array borrow(T* data, const Shape& shape, std::function<void()> release = {}) {
  int64_t n = checked_size(shape, "borrow");
  auto buf = Buffer::borrowed(const_cast<std::remove_const_t<T>*>(data), static_cast<size_t>(n) * sizeof(T),
                              std::move(release), std::is_const_v<T>);
  return array::from_buffer(std::move(buf), shape, dtype_of<std::remove_const_t<T>>(), row_strides(shape), 0,
                            "borrow");
}

// A 0-d array holding `value` (mx.array(value) with T's dtype).
template <class T>
array scalar(T value) {
  return array(static_cast<const void*>(&value), Shape{}, dtype_of<T>());
}

// ---- operators (Python's x + y, x * 2.0, -x, x < y, ...) ----

namespace api_detail {
// A C++ number next to array `x`, weakly typed as in Python: an integer
// takes x's dtype (int32 next to bool), a floating number x's dtype when x
// is inexact, float32 otherwise.
template <class S>
array weak_scalar(S v, const array& x) {
  static_assert(std::is_arithmetic_v<S>, "array operators take arrays and C++ numbers");
  Dtype t = x.dtype();
  if constexpr (std::is_floating_point_v<S>) {
    if (!is_inexact(t)) t = Dtype::float32;
    return array(static_cast<double>(v), t);
  } else if constexpr (std::is_same_v<S, bool>) {
    return array(v, t);
  } else {
    if (t == Dtype::bool_) t = Dtype::int32;
    if constexpr (std::is_signed_v<S>) {
      return array(static_cast<int64_t>(v), t);
    } else {
      return array(static_cast<uint64_t>(v), t);
    }
  }
}
}  // namespace api_detail

#define EMBER_API_BINARY_OPERATOR(sym, fn)                                      \
  inline array operator sym(const array& a, const array& b) { return fn(a, b); } \
  template <class S, class = std::enable_if_t<std::is_arithmetic_v<S>>>         \
  array operator sym(const array& a, S b) {                                     \
    return fn(a, api_detail::weak_scalar(b, a));                                \
  }                                                                             \
  template <class S, class = std::enable_if_t<std::is_arithmetic_v<S>>>         \
  array operator sym(S a, const array& b) {                                     \
    return fn(api_detail::weak_scalar(a, b), b);                                \
  }
EMBER_API_BINARY_OPERATOR(+, add)
EMBER_API_BINARY_OPERATOR(-, subtract)
EMBER_API_BINARY_OPERATOR(*, multiply)
EMBER_API_BINARY_OPERATOR(/, divide)
EMBER_API_BINARY_OPERATOR(%, remainder)
EMBER_API_BINARY_OPERATOR(==, equal)
EMBER_API_BINARY_OPERATOR(!=, not_equal)
EMBER_API_BINARY_OPERATOR(<, less)
EMBER_API_BINARY_OPERATOR(<=, less_equal)
EMBER_API_BINARY_OPERATOR(>, greater)
EMBER_API_BINARY_OPERATOR(>=, greater_equal)
#undef EMBER_API_BINARY_OPERATOR
inline array operator-(const array& a) { return negative(a); }

// ---- reading arrays back ----

namespace api_detail {
// `a` evaluated, converted to `dtype` and made dense row-major.
array dense_as(const array& a, Dtype dtype);
}  // namespace api_detail

// The elements of `a` (evaluated now) in row-major order, converted to T.
template <class T>
std::vector<T> to_vector(const array& a) {
  array d = api_detail::dense_as(a, dtype_of<T>());
  const T* p = d.data<T>();
  return std::vector<T>(p, p + d.size());
}

// The value of a one-element array (evaluated now), converted to T.
template <class T>
T item(const array& a) {
  if constexpr (std::is_same_v<T, bool>) {
    return a.item<bool>();
  } else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    return a.item<T>();
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    return static_cast<T>(a.item<int64_t>());
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(a.item<uint64_t>());
  } else {
    return static_cast<T>(a.item<double>());
  }
}

// eval(a), eval(a, b, ...): computes the arrays (also eval({a, b}) of eval.h).
inline void eval(const array& a) { eval(std::vector<array>{a}); }
template <class... More>
void eval(const array& a, const array& b, const More&... more) {
  eval(std::vector<array>{a, b, more...});
}

// ---- transforms taking std::functions ----

// A function of several arrays to one (a loss), and of one array to one.
using ScalarFun = std::function<array(const std::vector<array>&)>;
using UnaryFun = std::function<array(const array&)>;
using ValueAndGradFun = std::function<std::pair<array, std::vector<array>>(const std::vector<array>&)>;

// mx.value_and_grad(fun, argnums): the returned function computes fun's
// value (a scalar array) and its gradients with respect to the arguments
// `argnums` (ascending order, as in Python). Errors are ValueErrors: no or
// negative or repeated argnums, an argnum beyond the call's arguments, a
// result that is not a scalar.
ValueAndGradFun value_and_grad(ScalarFun fun, std::vector<int> argnums = {0});
std::function<std::pair<array, array>(const array&)> value_and_grad(UnaryFun fun);
// mx.grad(fun, argnums): the gradients only; with one int, that one gradient
// (so grad(f, 1) and grad(f, {1}) give an array, grad(f, {0, 1}) a list).
// Generic lambdas (auto parameters) fit several of these overloads: wrap
// them in ScalarFun or UnaryFun.
Fun grad(ScalarFun fun, std::vector<int> argnums);
ScalarFun grad(ScalarFun fun, int argnum = 0);
UnaryFun grad(UnaryFun fun);

// One-array forms of the transforms of transforms.h.
std::pair<array, array> vjp(const UnaryFun& fun, const array& primal, const array& cotangent);
std::pair<array, array> jvp(const UnaryFun& fun, const array& primal, const array& tangent);
UnaryFun vmap(UnaryFun fun, int in_axis = 0, int out_axis = 0);

// mx.compile(fun, shapeless=False): fun traced once per kind of call (the
// arguments' dtypes and shapes; with shapeless, their dtypes and ranks),
// simplified and fused, and the traced graph replayed on every call of that
// kind. Keyless random samplers inside fun draw from the global key and
// advance it, as without compile. The returned function is safe to call
// from several threads.
Fun compile(Fun fun, bool shapeless = false);
UnaryFun compile(UnaryFun fun, bool shapeless = false);

// ---- files (mx.load / mx.save & co.) ----

using ArrayMap = std::map<std::string, array>;
using StringMap = std::map<std::string, std::string>;

// mx.save: one array as .npy (the suffix added when `path` lacks it).
void save(const std::string& path, const array& a);
// mx.savez / savez_compressed: named arrays as .npz.
void savez(const std::string& path, const ArrayMap& arrays, bool compressed = false);
// mx.save_safetensors: named arrays and string metadata as .safetensors.
void save_safetensors(const std::string& path, const ArrayMap& arrays, const StringMap& metadata = {});
// mx.load of a .npy file.
array load(const std::string& path);
// mx.load of a .npz file.
ArrayMap load_npz(const std::string& path);
// mx.load(path, return_metadata=True) of a .safetensors file: the arrays
// (views of the mapped file where aligned) and the metadata.
std::pair<ArrayMap, StringMap> load_safetensors(const std::string& path);

}  // namespace ember
