// Bindings of the ops (ember.core.<op>), with MLX's argument names.
#include <cmath>

#include "bindings.h"
#include "ember/ops/products.h"

namespace ember::py_bind {

namespace {
using SoD = const StreamOrDevice&;

// The dtype of an array or a Dtype argument (result_type, can_cast).
Dtype dtype_of(py::handle v, const char* what) {
  if (py::isinstance<Dtype>(v)) return v.cast<Dtype>();
  if (is_array(v)) return v.cast<const array&>().dtype();
  throw std::invalid_argument(what);
}

py::object one_or_list(std::vector<array> v) {
  if (v.size() == 1) return py::cast(v[0]);
  return py::cast(v);
}
}  // namespace

void init_ops(py::module_& m) {
  // ---- unary and binary: one binding per row of ops/elementwise_table.h ----
#define EMBER_SIG1_PosOnly "a"_a, py::pos_only(), py::kw_only(), kStream
#define EMBER_SIG1_Plain "a"_a, kStream
#define EMBER_SIG1_KwOnly "a"_a, py::kw_only(), kStream
#define EMBER_UNARY_FN(fn) [](const ArrayLike& a, StreamOrDevice s) { return fn(a, s); }
#define EMBER_BIND_UNARY(fn, Prim, In, Sig) m.def(#fn, EMBER_UNARY_FN(fn), EMBER_SIG1_##Sig);
  EMBER_UNARY_FUNCTIONS(EMBER_BIND_UNARY)
  // NumPy's other names, and positive (which has no node)
  m.def("asin", EMBER_UNARY_FN(arcsin), EMBER_SIG1_PosOnly);
  m.def("acos", EMBER_UNARY_FN(arccos), EMBER_SIG1_PosOnly);
  m.def("atan", EMBER_UNARY_FN(arctan), EMBER_SIG1_PosOnly);
  m.def("asinh", EMBER_UNARY_FN(arcsinh), EMBER_SIG1_PosOnly);
  m.def("acosh", EMBER_UNARY_FN(arccosh), EMBER_SIG1_PosOnly);
  m.def("atanh", EMBER_UNARY_FN(arctanh), EMBER_SIG1_PosOnly);
  m.def("conj", EMBER_UNARY_FN(conjugate), EMBER_SIG1_KwOnly);
  m.def("positive", [](const ArrayLike& a, StreamOrDevice) -> array { return a; }, EMBER_SIG1_PosOnly);
#undef EMBER_BIND_UNARY
#undef EMBER_UNARY_FN
#undef EMBER_SIG1_PosOnly
#undef EMBER_SIG1_Plain
#undef EMBER_SIG1_KwOnly
  m.def("round", [](const ArrayLike& a, int decimals, StreamOrDevice s) { return round(a, decimals, s); },
        "a"_a, py::pos_only(), "decimals"_a = 0, kStream);

  // the operands go through promote(): a scalar takes the other operand's dtype
#define EMBER_BINARY_FN(fn) \
  [](const ArrayLike& a, const ArrayLike& b, StreamOrDevice s) { \
    auto [x, y] = promote(a, b); \
    return fn(x, y, s); \
  }
#define EMBER_SIG2_PosOnly "a"_a, "b"_a, py::pos_only(), py::kw_only(), kStream
#define EMBER_SIG2_Plain "a"_a, "b"_a, kStream
#define EMBER_BIND_BINARY(fn, Prim, In, Sig) m.def(#fn, EMBER_BINARY_FN(fn), EMBER_SIG2_##Sig);
  EMBER_BINARY_FUNCTIONS(EMBER_BIND_BINARY)
  m.def("pow", EMBER_BINARY_FN(power), EMBER_SIG2_PosOnly);
  m.def("atan2", EMBER_BINARY_FN(arctan2), EMBER_SIG2_PosOnly);
  m.def("bitwise_left_shift", EMBER_BINARY_FN(left_shift), EMBER_SIG2_Plain);
  m.def("bitwise_right_shift", EMBER_BINARY_FN(right_shift), EMBER_SIG2_Plain);
#undef EMBER_BIND_BINARY
#undef EMBER_SIG2_PosOnly
#undef EMBER_SIG2_Plain
  m.def("matmul", [](const ArrayLike& a, const ArrayLike& b, StreamOrDevice s) {
        return matmul(a, b, s);
      }, "a"_a, "b"_a, py::pos_only(), py::kw_only(), kStream);
  m.def(
      "addmm",
      [](const ArrayLike& c, const ArrayLike& a, const ArrayLike& b, float alpha, float beta, StreamOrDevice s) {
        return addmm(c, a, b, alpha, beta, s);
      },
      "c"_a, "a"_a, "b"_a, py::pos_only(), "alpha"_a = 1.0f, "beta"_a = 1.0f, py::kw_only(), kStream,
      "addmm(c: array, a: array, b: array, /, alpha: float = 1.0, beta: float = 1.0, *, stream: StreamOrDevice = "
      "None) -> array\n\n"
      "alpha * (a @ b) + beta * c, with c broadcast to the product (real floating types). With beta == 0, c is "
      "not read.");
  m.def(
      "gather_mm",
      [](const ArrayLike& a, const ArrayLike& b, const std::optional<ArrayLike>& lhs,
         const std::optional<ArrayLike>& rhs, bool sorted_indices, StreamOrDevice s) {
        return gather_mm(a, b, opt(lhs), opt(rhs), sorted_indices, s);
      },
      "a"_a, "b"_a, py::pos_only(), "lhs_indices"_a = py::none(), "rhs_indices"_a = py::none(), py::kw_only(),
      "sorted_indices"_a = false, kStream,
      "gather_mm(a: array, b: array, /, lhs_indices: array | None = None, rhs_indices: array | None = None, *, "
      "sorted_indices: bool = False, stream: StreamOrDevice = None) -> array\n\n"
      "Matrix products of gathered matrices: out[i...] = A[lhs_indices[i...]] @ B[rhs_indices[i...]], where A "
      "and B are a's and b's matrices over their flattened batch dimensions. The index arrays broadcast "
      "together; a missing one indexes its operand's own batch. Out-of-range indices raise IndexError when "
      "evaluated.");
  m.def(
      "segmented_mm",
      [](const ArrayLike& a, const ArrayLike& b, const ArrayLike& segments, StreamOrDevice s) {
        return segmented_mm(a, b, segments, s);
      },
      "a"_a, "b"_a, py::pos_only(), "segments"_a, py::kw_only(), kStream,
      "segmented_mm(a: array, b: array, /, segments: array, *, stream: StreamOrDevice = None) -> array\n\n"
      "For each [start, end) pair in segments (shape (..., 2)), the product a[:, start:end] @ b[start:end, :]; "
      "the result has shape segments.shape[:-1] + (M, N).");
  m.def(
      "block_masked_mm",
      [](const ArrayLike& a, const ArrayLike& b, int block_size, const std::optional<ArrayLike>& mo,
         const std::optional<ArrayLike>& ml, const std::optional<ArrayLike>& mr, StreamOrDevice s) {
        return block_masked_mm(a, b, block_size, opt(mo), opt(ml), opt(mr), s);
      },
      "a"_a, "b"_a, py::pos_only(), "block_size"_a = 64, "mask_out"_a = py::none(), "mask_lhs"_a = py::none(),
      "mask_rhs"_a = py::none(), py::kw_only(), kStream,
      "block_masked_mm(a: array, b: array, /, block_size: int = 64, mask_out: array | None = None, mask_lhs: array "
      "| None = None, mask_rhs: array | None = None, *, stream: StreamOrDevice = None) -> array\n\n"
      "a @ b with block masks: each mask has one entry per block_size x block_size block (32 or 64) of a "
      "(mask_lhs), b (mask_rhs) or the product (mask_out); a boolean mask keeps or zeroes a block, a numeric one "
      "scales it.");
  m.def(
      "hadamard_transform",
      [](const ArrayLike& a, std::optional<float> scale, StreamOrDevice s) {
        return hadamard_transform(a, scale, s);
      },
      "a"_a, "scale"_a = py::none(), kStream,
      "hadamard_transform(a: array, scale: float | None = None, stream: StreamOrDevice = None) -> array\n\n"
      "The Hadamard transform along the last axis, multiplied by scale (default 1/sqrt(n)). The length n must "
      "be m * 2^k with m in (1, 12, 20, 28): the transform is kron(H_m, H_2^k) with Sylvester's H_2^k and the "
      "same H_m as MLX. Integer and boolean inputs compute in float32.");
  m.def("divmod", EMBER_BINARY_FN(divmod), "a"_a, "b"_a, kStream);
  m.def("where", [](const ArrayLike& c, const ArrayLike& x, const ArrayLike& y, StreamOrDevice s) {
        auto [a, b] = promote(x, y);
        return where(c, a, b, s);
      }, "condition"_a, "x"_a, "y"_a, py::pos_only(), py::kw_only(), kStream);
  m.def("clip", [](const ArrayLike& a, const std::optional<ArrayLike>& lo, const std::optional<ArrayLike>& hi,
                   StreamOrDevice s) {
        const array& x = a;
        return clip(x, opt_next_to(lo, x), opt_next_to(hi, x), s);
      }, "a"_a, py::pos_only(), "a_min"_a, "a_max"_a, py::kw_only(), kStream);
  m.def("isclose", [](const ArrayLike& a, const ArrayLike& b, double rtol, double atol, bool equal_nan,
                      StreamOrDevice s) {
        auto [x, y] = promote(a, b);
        return isclose(x, y, rtol, atol, equal_nan, s);
      }, "a"_a, "b"_a, py::pos_only(), "rtol"_a = 1e-5, "atol"_a = 1e-8, py::kw_only(), "equal_nan"_a = false, kStream);
  m.def("allclose", [](const ArrayLike& a, const ArrayLike& b, double rtol, double atol, bool equal_nan,
                       StreamOrDevice s) {
        auto [x, y] = promote(a, b);
        return allclose(x, y, rtol, atol, equal_nan, s);
      }, "a"_a, "b"_a, py::pos_only(), "rtol"_a = 1e-5, "atol"_a = 1e-8, py::kw_only(), "equal_nan"_a = false, kStream);
  m.def("array_equal", [](const ArrayLike& a, const ArrayLike& b, bool equal_nan, StreamOrDevice s) {
        auto [x, y] = promote(a, b);
        return array_equal(x, y, equal_nan, s);
      }, "a"_a, "b"_a, "equal_nan"_a = false, kStream);
#undef EMBER_BINARY_FN
  m.def("nan_to_num", [](const ArrayLike& a, double nan, std::optional<double> posinf, std::optional<double> neginf,
                         StreamOrDevice s) { return nan_to_num(a, nan, posinf, neginf, s); },
        "a"_a, "nan"_a = 0.0, "posinf"_a = py::none(), "neginf"_a = py::none(), py::kw_only(), kStream);
  m.def("astype", [](const ArrayLike& a, Dtype t, StreamOrDevice s) { return astype(a, t, s); }, "a"_a,
        "dtype"_a, py::pos_only(), py::kw_only(), kStream);
  m.def("view", [](const ArrayLike& a, Dtype t, StreamOrDevice s) { return view(a, t, s); }, "a"_a,
        "dtype"_a, kStream);
  m.def("to_fp8", [](const ArrayLike& x, StreamOrDevice s) { return to_fp8(x, s); }, "x"_a, py::kw_only(),
        kStream);
  m.def("from_fp8", [](const ArrayLike& x, Dtype dtype, StreamOrDevice s) { return from_fp8(x, dtype, s); },
        "x"_a, "dtype"_a = Dtype::bfloat16, py::kw_only(), kStream);

  // ---- reductions: the module functions and the array methods from one list ----
  auto cls = py::reinterpret_borrow<py::class_<array>>(py::type::of<array>());
#define EMBER_REDUCE(name, fn, AxisT)                                                                  \
  m.def(name, [](const ArrayLike& a, AxisT axis, bool keepdims, StreamOrDevice s) {                     \
        return fn(a, axis, keepdims, s);                                                               \
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), "keepdims"_a = false, py::kw_only(), kStream);  \
  cls.def(name, [](const array& a, AxisT axis, bool keepdims, StreamOrDevice s) {                       \
        return fn(a, axis, keepdims, s);                                                               \
      }, "axis"_a = py::none(), "keepdims"_a = false, py::kw_only(), kStream);
#define EMBER_REDUCE_DDOF(name, fn)                                                                    \
  m.def(name, [](const ArrayLike& a, const AxesArg& axis, bool keepdims, int ddof, StreamOrDevice s) {  \
        return fn(a, axis, keepdims, ddof, s);                                                         \
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), "keepdims"_a = false, "ddof"_a = 0,             \
      py::kw_only(), kStream);                                                                        \
  cls.def(name, [](const array& a, const AxesArg& axis, bool keepdims, int ddof, StreamOrDevice s) {    \
        return fn(a, axis, keepdims, ddof, s);                                                         \
      }, "axis"_a = py::none(), "keepdims"_a = false, "ddof"_a = 0, py::kw_only(), kStream);
  EMBER_REDUCE("sum", sum, const AxesArg&)
  EMBER_REDUCE("prod", prod, const AxesArg&)
  EMBER_REDUCE("max", max, const AxesArg&)
  EMBER_REDUCE("min", min, const AxesArg&)
  EMBER_REDUCE("all", all, const AxesArg&)
  EMBER_REDUCE("any", any, const AxesArg&)
  EMBER_REDUCE("mean", mean, const AxesArg&)
  EMBER_REDUCE("logsumexp", logsumexp, const AxesArg&)
  EMBER_REDUCE("argmax", argmax, std::optional<int>)
  EMBER_REDUCE("argmin", argmin, std::optional<int>)
  EMBER_REDUCE_DDOF("var", var)
  EMBER_REDUCE_DDOF("std", ember::std)
#undef EMBER_REDUCE
#undef EMBER_REDUCE_DDOF
  m.def("softmax", [](const ArrayLike& a, const AxesArg& axis, bool precise, StreamOrDevice s) {
        return softmax(a, axis, precise, s);
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), py::kw_only(), "precise"_a = false, kStream);

  // ---- creation ----
  m.def("zeros", [](const ShapeArg& shape, std::optional<Dtype> dtype, StreamOrDevice s) {
        return zeros(shape, dtype.value_or(Dtype::float32), s);
      }, "shape"_a, "dtype"_a = Dtype::float32, py::kw_only(), kStream);
  m.def("ones", [](const ShapeArg& shape, std::optional<Dtype> dtype, StreamOrDevice s) {
        return ones(shape, dtype.value_or(Dtype::float32), s);
      }, "shape"_a, "dtype"_a = Dtype::float32, py::kw_only(), kStream);
  m.def("empty", [](const ShapeArg& shape, std::optional<Dtype> dtype, StreamOrDevice s) {
        return zeros(shape, dtype.value_or(Dtype::float32), s);
      }, "shape"_a, "dtype"_a = Dtype::float32, py::kw_only(), kStream,
      "An array of the given shape (Ember initializes it with zeros).");
  m.def("full", [](const ShapeArg& shape, py::handle vals, std::optional<Dtype> dtype, StreamOrDevice s) {
        return full(shape, to_array(vals, dtype), dtype, s);
      }, "shape"_a, "vals"_a, "dtype"_a = py::none(), py::kw_only(), kStream);
  m.def("zeros_like", [](const ArrayLike& a, std::optional<Dtype> dtype, StreamOrDevice s) {
        return zeros_like(a, dtype, s);
      }, "a"_a, py::pos_only(), "dtype"_a = py::none(), py::kw_only(), kStream);
  m.def("ones_like", [](const ArrayLike& a, std::optional<Dtype> dtype, StreamOrDevice s) {
        return ones_like(a, dtype, s);
      }, "a"_a, py::pos_only(), "dtype"_a = py::none(), py::kw_only(), kStream);
  m.def("empty_like", [](const ArrayLike& a, std::optional<Dtype> dtype, StreamOrDevice s) {
        return zeros_like(a, dtype, s);
      }, "a"_a, py::pos_only(), "dtype"_a = py::none(), py::kw_only(), kStream);
  m.def("full_like", [](const ArrayLike& like, py::handle vals, std::optional<Dtype> dtype, StreamOrDevice s) {
        const array& a = like;
        Dtype t = dtype.value_or(a.dtype());
        return full(a.shape(), to_array(vals, t), t, s);
      }, "a"_a, "vals"_a, "dtype"_a = py::none(), py::kw_only(), kStream);
  m.def("arange", [](py::handle start, py::handle stop, py::handle step, std::optional<Dtype> dtype, StreamOrDevice s) {
        // arange(stop) / arange(start, stop[, step]); ints give int32 unless a float is involved
        py::handle st = start, sp = stop;
        if (st.is_none() && sp.is_none()) throw type_error("[arange] A stop value is required.");
        if (st.is_none()) st = py::int_(0);
        if (sp.is_none()) {
          // MLX: arange(True) takes its dtype from the bool (unsupported)
          if (!dtype && step.is_none() && py::isinstance<py::bool_>(start)) {
            throw std::invalid_argument("[arange] bool is not a supported dtype for arange (stop is a bool).");
          }
          sp = start;
          st = py::int_(0);
        }
        bool is_float = false, big = false;
        for (py::handle v : {st, sp, step}) {
          if (v.is_none()) continue;
          if (!py::isinstance<py::int_>(v) && !py::isinstance<py::float_>(v)) {
            throw type_error("[arange] start, stop and step must be ints or floats.");
          }
          is_float = is_float || py::isinstance<py::float_>(v);
          if (py::isinstance<py::int_>(v) && !py::isinstance<py::bool_>(v)) {
            double d = v.cast<double>();
            big = big || d > 2147483647.0 || d < -2147483648.0;
          }
        }
        double a = st.cast<double>(), b = sp.cast<double>(), c = step.is_none() ? 1.0 : step.cast<double>();
        // ints give int32, or int64 when a bound does not fit int32
        Dtype t = dtype.value_or(is_float ? Dtype::float32 : big ? Dtype::int64 : Dtype::int32);
        return arange(a, b, c, t, s);
      }, "start"_a = py::none(), "stop"_a = py::none(), "step"_a = py::none(), "dtype"_a = py::none(), py::kw_only(),
      kStream);
  m.def("linspace", [](double start, double stop, int64_t num, bool endpoint, std::optional<Dtype> dtype, StreamOrDevice s) {
        return linspace(start, stop, num, endpoint, dtype.value_or(Dtype::float32), s);
      }, "start"_a, "stop"_a, "num"_a = 50, "endpoint"_a = true, "dtype"_a = Dtype::float32, kStream);
  m.def("eye", [](int64_t n, std::optional<int64_t> mm, int64_t k, std::optional<Dtype> dtype, StreamOrDevice s) {
        return eye(n, mm.value_or(n), k, dtype.value_or(Dtype::float32), s);
      }, "n"_a, "m"_a = py::none(), "k"_a = 0, "dtype"_a = Dtype::float32, py::kw_only(), kStream);
  m.def("identity", [](int64_t n, std::optional<Dtype> dtype, StreamOrDevice s) {
        return eye(n, n, 0, dtype.value_or(Dtype::float32), s);
      }, "n"_a, "dtype"_a = Dtype::float32, py::kw_only(), kStream);
  m.def("tri", [](int64_t n, std::optional<int64_t> mm, int64_t k, std::optional<Dtype> dtype, StreamOrDevice s) {
        return tri(n, mm.value_or(n), k, dtype.value_or(Dtype::float32), s);
      }, "n"_a, "m"_a = py::none(), "k"_a = 0, "dtype"_a = Dtype::float32, py::kw_only(), kStream);
  m.def("tril", [](const ArrayLike& x, int64_t k, StreamOrDevice s) { return tril(x, k, s); }, "x"_a,
        "k"_a = 0, py::kw_only(), kStream);
  m.def("triu", [](const ArrayLike& x, int64_t k, StreamOrDevice s) { return triu(x, k, s); }, "x"_a,
        "k"_a = 0, py::kw_only(), kStream);

  // ---- shape ----
  m.def("reshape", [](const ArrayLike& a, const ShapeArg& shape, StreamOrDevice s) {
        return reshape(a, shape, s);
      }, "a"_a, py::pos_only(), "shape"_a, py::kw_only(), kStream);
  m.def("flatten", [](const ArrayLike& a, int st, int en, StreamOrDevice s) {
        return flatten(a, st, en, s);
      }, "a"_a, py::pos_only(), "start_axis"_a = 0, "end_axis"_a = -1, py::kw_only(), kStream);
  m.def("unflatten", [](const ArrayLike& a, int axis, const ShapeArg& shape, StreamOrDevice s) {
        return unflatten(a, axis, shape, s);
      }, "a"_a, py::pos_only(), "axis"_a, "shape"_a, py::kw_only(), kStream);
  m.def("squeeze", [](const ArrayLike& a, const AxesArg& axis, StreamOrDevice s) {
        return squeeze(a, axis, s);
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), py::kw_only(), kStream);
  m.def("expand_dims", [](const ArrayLike& a, const AxesArg& axis, StreamOrDevice s) {
        return expand_dims(a, axis.required("expand_dims"), s);
      }, "a"_a, py::pos_only(), "axis"_a, py::kw_only(), kStream);
  m.def("transpose", [](const ArrayLike& a, const AxesArg& axes, StreamOrDevice s) {
        return transpose(a, axes, s);
      }, "a"_a, py::pos_only(), "axes"_a = py::none(), py::kw_only(), kStream);
  m.def("permute_dims", [](const ArrayLike& a, const AxesArg& axes, StreamOrDevice s) {
        return transpose(a, axes, s);
      }, "a"_a, py::pos_only(), "axes"_a = py::none(), py::kw_only(), kStream);
  m.def("swapaxes", [](const ArrayLike& a, int x, int y, StreamOrDevice s) { return swapaxes(a, x, y, s); },
        "a"_a, py::pos_only(), "axis1"_a, "axis2"_a, py::kw_only(), kStream);
  m.def("moveaxis", [](const ArrayLike& a, int x, int y, StreamOrDevice s) { return moveaxis(a, x, y, s); },
        "a"_a, py::pos_only(), "source"_a, "destination"_a, py::kw_only(), kStream);
  m.def("broadcast_to", [](const ArrayLike& a, const ShapeArg& shape, StreamOrDevice s) {
        return broadcast_to(a, shape, s);
      }, "a"_a, py::pos_only(), "shape"_a, py::kw_only(), kStream);
  {  // *args: the docstring carries MLX's signature
    py::options o;
    o.disable_function_signatures();
  m.def("broadcast_arrays", [](py::args arrays, StreamOrDevice s) {
        return broadcast_arrays(array_list(arrays), s);
      }, kStream, "broadcast_arrays(*arrays: array, stream: StreamOrDevice = None) -> list[array]\n\n"
                  "Broadcasts the arrays against each other.");
  }
  {  // *args: the docstring carries MLX's signature
    py::options o;
    o.disable_function_signatures();
  m.def("broadcast_shapes", [](py::args shapes) {
        if (shapes.size() == 0) throw std::invalid_argument("[broadcast_shapes] No shapes provided.");
        Shape out = to_shape(shapes[0], "broadcast_shapes");
        for (size_t i = 1; i < shapes.size(); ++i) {
          out = broadcast_shapes(out, to_shape(shapes[i], "broadcast_shapes"));
        }
        return py::tuple(py::cast(out));
      }, "broadcast_shapes(*shapes: Sequence[int]) -> tuple[int]\n\nThe shape the given shapes broadcast to.");
  }
  auto concat = [](const std::vector<ArrayLike>& arrays, std::optional<int> axis, StreamOrDevice s) {
    return concatenate(array_list(arrays), axis, s);
  };
  m.def("concatenate", concat, "arrays"_a, "axis"_a = 0, py::kw_only(), kStream);
  m.def("concat", concat, "arrays"_a, "axis"_a = 0, py::kw_only(), kStream);
  m.def("stack", [](const std::vector<ArrayLike>& arrays, int axis, StreamOrDevice s) {
        return stack(array_list(arrays), axis, s);
      }, "arrays"_a, "axis"_a = 0, py::kw_only(), kStream);
  m.def("split", [](const ArrayLike& a, py::handle ios, int axis, StreamOrDevice s) {
        const array& x = a;
        if (py::isinstance<py::int_>(ios)) return split(x, ios.cast<int64_t>(), axis, s);
        return split(x, ios.cast<Shape>(), axis, s);
      }, "a"_a, py::pos_only(), "indices_or_sections"_a, "axis"_a = 0, py::kw_only(), kStream);
  m.def("repeat", [](const ArrayLike& a, int64_t repeats, std::optional<int> axis, StreamOrDevice s) {
        return repeat(a, repeats, axis, s);
      }, "array"_a, "repeats"_a, "axis"_a = py::none(), py::kw_only(), kStream);
  m.def("tile", [](const ArrayLike& a, const ShapeArg& reps, StreamOrDevice s) {
        return tile(a, reps, s);
      }, "a"_a, "reps"_a, py::pos_only(), py::kw_only(), kStream);
  m.def("pad", [](const ArrayLike& a, py::handle pw, const std::string& mode, const ArrayLike& cv,
                  StreamOrDevice s) {
        const array& x = a;
        std::vector<std::pair<int64_t, int64_t>> widths;
        auto pair_of = [](py::handle p) -> std::pair<int64_t, int64_t> {
          if (py::isinstance<py::int_>(p)) return {p.cast<int64_t>(), p.cast<int64_t>()};
          auto v = p.cast<std::vector<int64_t>>();
          if (v.size() == 1) return {v[0], v[0]};
          if (v.size() != 2) throw type_error("[pad] Each pad width must be an int or a (low, high) pair.");  // MLX: TypeError
          return {v[0], v[1]};
        };
        bool nested = !py::isinstance<py::int_>(pw) && py::len(pw) > 0 &&
                      !py::isinstance<py::int_>(py::reinterpret_borrow<py::sequence>(pw)[0]);
        if (nested) {
          for (auto p : pw) widths.push_back(pair_of(p));
          if (widths.size() == 1) widths.assign(x.ndim(), widths[0]);
        } else {
          widths.assign(x.ndim(), pair_of(pw));
        }
        return pad(x, widths, mode, cv.next_to(x.dtype()), s);
      }, "a"_a, "pad_width"_a, "mode"_a = "constant", "constant_values"_a = 0, py::kw_only(), kStream);
  m.def("as_strided", [](const ArrayLike& a, const std::optional<Shape>& shape, const std::optional<Strides>& strides,
                         int64_t offset, StreamOrDevice s) {
        return as_strided(a, shape, strides, offset, s);
      }, "a"_a, py::pos_only(), "shape"_a = py::none(), "strides"_a = py::none(), "offset"_a = 0, py::kw_only(), kStream);
  m.def("contiguous", [](const ArrayLike& a, bool allow_col, StreamOrDevice s) {
        return contiguous(a, allow_col, s);
      }, "a"_a, py::pos_only(), "allow_col_major"_a = false, py::kw_only(), kStream);
  {  // *args: the docstring carries MLX's signature
    py::options o;
    o.disable_function_signatures();
  for (int n = 1; n <= 3; ++n) {
    std::string name = "atleast_" + std::to_string(n) + "d";
    m.def(name.c_str(), [n](py::args arys, StreamOrDevice s) -> py::object {
          std::vector<array> out;
          for (const array& a : array_list(arys)) out.push_back(atleast_nd(a, n, s));
          return one_or_list(out);
        }, kStream, (name + "(*arys: array, stream: StreamOrDevice = None) -> array | list[array]\n\n"
                     "Views the inputs with at least " + std::to_string(n) + " dimensions.").c_str());
  }
  }
  {  // *args: the docstring carries MLX's signature
    py::options o;
    o.disable_function_signatures();
  m.def("meshgrid", [](py::args arrays, bool sparse, const std::string& indexing, StreamOrDevice s) {
        if (indexing != "xy" && indexing != "ij") {
          throw std::invalid_argument("[meshgrid] indexing must be 'xy' or 'ij'; got '" + indexing + "'.");
        }
        std::vector<array> v;
        for (const array& x : array_list(arrays)) v.push_back(reshape(x, {x.size()}));
        int n = static_cast<int>(v.size());
        std::vector<array> out;
        for (int i = 0; i < n; ++i) {
          Shape sh(n, 1);
          int pos = i;
          if (indexing == "xy" && n >= 2 && i < 2) pos = 1 - i;
          sh[pos] = v[i].size();
          out.push_back(reshape(v[i], sh, s));
        }
        if (!sparse) out = broadcast_arrays(out, s);
        return as_tuple(out);
      }, "sparse"_a = false, "indexing"_a = "xy", kStream,
      "meshgrid(*arrays: array, sparse: bool = False, indexing: str = 'xy', stream: StreamOrDevice = None) -> "
      "tuple[array, ...]\n\nCoordinate grids from 1-D coordinate arrays ('xy' or 'ij' indexing).");
  }

  // ---- dtype utilities ----
  {  // *args: the docstring carries MLX's signature
    py::options o;
    o.disable_function_signatures();
  m.def("result_type", [](py::args args) {
        std::optional<Dtype> t;
        for (auto a : args) {
          Dtype d = dtype_of(a, "[result_type] Arguments must be arrays or dtypes.");
          t = t ? promote_types(*t, d) : d;
        }
        if (!t) throw std::invalid_argument("[result_type] At least one array or dtype is required.");
        return *t;
      }, "result_type(*arrays_and_dtypes: array | Dtype) -> Dtype\n\nThe dtype the inputs promote to.");
  }
  m.def("can_cast", [](py::handle from, Dtype to) {
        Dtype f = dtype_of(from, "[can_cast] from_ must be an array or a dtype.");
        return promote_types(f, to) == to;  // MLX: a cast is allowed when promotion keeps `to`
      }, "from_"_a, "to"_a);
  m.def("isdtype", [](Dtype t, py::handle kind) {
        auto check = [&](py::handle k) -> bool {
          if (py::isinstance<Dtype>(k)) return k.cast<Dtype>() == t;
          std::string s = py::str(k);
          if (s == "bool") return t == Dtype::bool_;
          if (s == "signed integer") return is_signed_int(t);
          if (s == "unsigned integer") return is_unsigned(t);
          if (s == "integral") return is_integral(t);
          if (s == "real floating") return is_floating(t);
          if (s == "complex floating") return is_complex(t);
          if (s == "numeric") return t != Dtype::bool_;
          throw std::invalid_argument("[isdtype] Unknown dtype kind '" + s + "'.");
        };
        if (py::isinstance<py::tuple>(kind)) {
          for (auto k : kind) {
            if (check(k)) return true;
          }
          return false;
        }
        return check(kind);
      }, "dtype"_a, "kind"_a);
}

}  // namespace ember::py_bind
