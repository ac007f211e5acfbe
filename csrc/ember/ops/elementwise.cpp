// Elementwise ops: dtype rules (MLX's promotion), broadcasting, and the
// node for the matching Unary/Binary primitive. Kernels broadcast through
// strides, so no broadcast node is inserted. The functions listed in
// ops/elementwise_table.h are generated from it by their input rule
// (unary_fn / binary_fn); those marked Custom are written out below.
#include <cmath>
#include <limits>

#include "ember/ops/common.h"
#include "ember/primitives/elementwise.h"
#include "ember/primitives/shape.h"

namespace ember {

using detail::fail;

Stream to_stream(const StreamOrDevice& s) {
  if (auto p = std::get_if<Stream>(&s)) return *p;
  if (auto d = std::get_if<Device>(&s)) return default_stream(*d);
  return current_stream();
}

int normalize_axis(int axis, int ndim, const char* op) {
  if (axis < -ndim || axis >= ndim) {
    throw std::out_of_range(detail::msg(op, "Axis ", axis, " is out of bounds for array with ", ndim,
                                        " dimensions."));
  }
  return axis < 0 ? axis + ndim : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      fail(op, "Shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast.");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

array astype(const array& a, Dtype dtype, const StreamOrDevice& s) {
  if (a.dtype() == dtype) return a;
  return make_node<AsType>(a.shape(), dtype, {a}, to_stream(s), dtype);
}

namespace {

// The node of a unary / binary primitive on inputs already of the dtype its
// kernel computes in; the output dtype is the primitive's rule.
template <class Op>
array unary(const array& a, const StreamOrDevice& s) {
  return make_node<Unary<Op>>(a.shape(), Unary<Op>::out_dtype(a.dtype()), {a}, to_stream(s));
}

template <class Op>
array binary(array a, array b, Dtype compute, const StreamOrDevice& s, const char* name) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  a = astype(a, compute, s);
  b = astype(b, compute, s);
  return make_node<Binary<Op>>(std::move(shape), Binary<Op>::out_dtype(compute), {a, b}, to_stream(s));
}

void no_complex(Dtype t, const char* name) {
  if (is_complex(t)) fail(name, "Not supported for complex64 inputs.");
}

// The In rules of ops/elementwise_table.h.
enum class UnaryIn { Same, Float, RealFloat, Rounding, Predicate, ComplexOnly };
enum class BinaryIn { Arith, RealArith, Float, RealFloat, Bitwise, Shift, Logical };

template <class Op, UnaryIn In>
array unary_fn(const array& a, const StreamOrDevice& s, const char* name) {
  const Dtype t = a.dtype();
  constexpr bool real_only = In == UnaryIn::RealFloat || In == UnaryIn::Rounding;
  if constexpr (In == UnaryIn::Rounding) {
    if (!is_inexact(t)) return a;
  }
  if constexpr (In == UnaryIn::Predicate) {
    if (!is_inexact(t)) return full(a.shape(), array(false, Dtype::bool_), {}, s);
  }
  if constexpr (In == UnaryIn::ComplexOnly) {
    if (!is_complex(t)) return a;
  }
  if constexpr (real_only) no_complex(t, name);
  if constexpr (In == UnaryIn::Float || In == UnaryIn::RealFloat) return unary<Op>(astype(a, to_inexact(t), s), s);
  return unary<Op>(a, s);
}

template <class Op, BinaryIn In>
array binary_fn(array a, array b, const StreamOrDevice& s, const char* name) {
  if constexpr (In == BinaryIn::Logical) {
    return binary<Op>(astype(a, Dtype::bool_, s), astype(b, Dtype::bool_, s), Dtype::bool_, s, name);
  }
  if constexpr (In == BinaryIn::Shift) {  // booleans shift as uint8 (as MLX)
    if (a.dtype() == Dtype::bool_) a = astype(a, Dtype::uint8, s);
    if (b.dtype() == Dtype::bool_) b = astype(b, Dtype::uint8, s);
  }
  Dtype t = promote_types(a.dtype(), b.dtype());
  if constexpr (In == BinaryIn::RealArith || In == BinaryIn::RealFloat) no_complex(t, name);
  if constexpr (In == BinaryIn::Float || In == BinaryIn::RealFloat) t = to_inexact(t);
  if constexpr (In == BinaryIn::Bitwise || In == BinaryIn::Shift) {
    if (is_inexact(t)) {
      fail(name, "Bitwise operations are only allowed on integer and boolean types; got ", dtype_name(a.dtype()),
           " and ", dtype_name(b.dtype()), ".");
    }
  }
  return binary<Op>(a, b, t, s, name);
}

array scalar_like(double v, Dtype t) { return array(v, t); }

}  // namespace

// The table's functions; the Custom ones are written out below.
#define EMBER_UNARY_DEF(fn, Prim, In, Sig) EMBER_UNARY_DEF_##In(fn, Prim, In)
#define EMBER_UNARY_DEF_RULE(fn, Prim, In) \
  array fn(const array& a, const StreamOrDevice& s) { return unary_fn<op::Prim, UnaryIn::In>(a, s, #fn); }
#define EMBER_UNARY_DEF_Custom(fn, Prim, In)
#define EMBER_UNARY_DEF_Same EMBER_UNARY_DEF_RULE
#define EMBER_UNARY_DEF_Float EMBER_UNARY_DEF_RULE
#define EMBER_UNARY_DEF_RealFloat EMBER_UNARY_DEF_RULE
#define EMBER_UNARY_DEF_Rounding EMBER_UNARY_DEF_RULE
#define EMBER_UNARY_DEF_Predicate EMBER_UNARY_DEF_RULE
#define EMBER_UNARY_DEF_ComplexOnly EMBER_UNARY_DEF_RULE
EMBER_UNARY_FUNCTIONS(EMBER_UNARY_DEF)
#undef EMBER_UNARY_DEF
#undef EMBER_UNARY_DEF_RULE
#undef EMBER_UNARY_DEF_Custom
#undef EMBER_UNARY_DEF_Same
#undef EMBER_UNARY_DEF_Float
#undef EMBER_UNARY_DEF_RealFloat
#undef EMBER_UNARY_DEF_Rounding
#undef EMBER_UNARY_DEF_Predicate
#undef EMBER_UNARY_DEF_ComplexOnly

#define EMBER_BINARY_DEF(fn, Prim, In, Sig)                           \
  array fn(const array& a, const array& b, const StreamOrDevice& s) { \
    return binary_fn<op::Prim, BinaryIn::In>(a, b, s, #fn);           \
  }
EMBER_BINARY_FUNCTIONS(EMBER_BINARY_DEF)
#undef EMBER_BINARY_DEF

array abs(const array& a, const StreamOrDevice& s) {
  if (a.dtype() == Dtype::bool_ || is_unsigned(a.dtype())) return a;
  return unary<op::Abs>(a, s);
}
array negative(const array& a, const StreamOrDevice& s) {
  if (a.dtype() == Dtype::bool_) fail("negative", "The negative of a boolean array is not supported.");
  return unary<op::Negative>(a, s);
}
array sign(const array& a, const StreamOrDevice& s) {
  if (a.dtype() == Dtype::bool_) return a;
  return unary<op::Sign>(a, s);
}
array reciprocal(const array& a, const StreamOrDevice& s) {
  Dtype t = to_inexact(a.dtype());
  return divide(scalar_like(1.0, t), astype(a, t, s), s);
}

array trunc(const array& a, const StreamOrDevice& s) {
  if (!is_inexact(a.dtype())) return a;
  no_complex(a.dtype(), "trunc");
  return where(less(a, scalar_like(0, a.dtype()), s), ceil(a, s), floor(a, s), s);
}

array round(const array& a, int decimals, const StreamOrDevice& s) {
  if (!is_inexact(a.dtype())) {
    if (decimals >= 0) return a;
    array f = astype(a, Dtype::float64, s);
    array scale = scalar_like(std::pow(10.0, -decimals), Dtype::float64);
    return astype(multiply(unary<op::Round>(divide(f, scale, s), s), scale, s), a.dtype(), s);
  }
  if (decimals == 0) return unary<op::Round>(a, s);
  array scale = scalar_like(std::pow(10.0, decimals), a.dtype());
  return divide(unary<op::Round>(multiply(a, scale, s), s), scale, s);
}

array bitwise_invert(const array& a, const StreamOrDevice& s) {
  if (is_inexact(a.dtype())) {
    fail("bitwise_invert", "Bitwise inversion is only allowed on integer and boolean types; got ",
         dtype_name(a.dtype()), ".");
  }
  return unary<op::BitwiseInvert>(a, s);
}

array isfinite(const array& a, const StreamOrDevice& s) {
  if (!is_inexact(a.dtype())) return full(a.shape(), array(true, Dtype::bool_), {}, s);
  return logical_not(logical_or(isnan(a, s), isinf(a, s), s), s);
}

array imag(const array& a, const StreamOrDevice& s) {
  if (!is_complex(a.dtype())) return zeros_like(a, {}, s);
  return unary<op::Imag>(a, s);
}
array degrees(const array& a, const StreamOrDevice& s) {
  Dtype t = to_inexact(a.dtype());
  return multiply(astype(a, t, s), scalar_like(180.0 / M_PI, t), s);
}
array radians(const array& a, const StreamOrDevice& s) {
  Dtype t = to_inexact(a.dtype());
  return multiply(astype(a, t, s), scalar_like(M_PI / 180.0, t), s);
}

// fp8 (e4m3fn), with MLX's checks and messages.
array to_fp8(const array& x, const StreamOrDevice& s) {
  if (!is_floating(x.dtype())) {
    fail("to_fp8", "Only real floating types are supported but x.dtype() == ", dtype_name(x.dtype()), ".");
  }
  return unary<op::ToFP8>(x, s);
}

array from_fp8(const array& x, Dtype dtype, const StreamOrDevice& s) {
  if (x.dtype() != Dtype::uint8) {
    fail("from_fp8", "Input must have type uint8 but x.dtype() == ", dtype_name(x.dtype()), ".");
  }
  if (!is_floating(dtype)) {
    fail("from_fp8", "Only real floating types are supported but dtype == ", dtype_name(dtype), ".");
  }
  return make_node<FromFP8>(x.shape(), dtype, {x}, to_stream(s), dtype);
}

// ---- binary ----
std::vector<array> divmod(const array& a, const array& b, const StreamOrDevice& s) {
  no_complex(promote_types(a.dtype(), b.dtype()), "divmod");
  return {floor_divide(a, b, s), remainder(a, b, s)};
}

array where(const array& cond, const array& x, const array& y, const StreamOrDevice& s) {
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), x.shape(), "where"), y.shape(), "where");
  Dtype t = promote_types(x.dtype(), y.dtype());
  return make_node<Select>(std::move(shape), t, {astype(cond, Dtype::bool_, s), astype(x, t, s), astype(y, t, s)},
                           to_stream(s));
}

array clip(const array& a, const std::optional<array>& lo, const std::optional<array>& hi,
           const StreamOrDevice& s) {
  if (!lo && !hi) fail("clip", "At most one of a_min and a_max may be None.");
  array out = a;
  if (lo) out = maximum(out, *lo, s);
  if (hi) out = minimum(out, *hi, s);
  return out;
}

array isclose(const array& a, const array& b, double rtol, double atol, bool equal_nan, const StreamOrDevice& s) {
  Dtype t = to_inexact(promote_types(a.dtype(), b.dtype()));
  array x = astype(a, t, s), y = astype(b, t, s);
  Dtype rt = is_complex(t) ? Dtype::float32 : t;
  // |x - y| <= atol + rtol * |y|, infinities equal only to themselves
  array diff = abs(subtract(x, y, s), s);
  array tol = add(array(atol, rt), multiply(array(rtol, rt), abs(y, s), s), s);
  array close = logical_and(less_equal(diff, tol, s), logical_and(isfinite(x, s), isfinite(y, s), s), s);
  close = logical_or(close, equal(x, y, s), s);
  if (equal_nan) close = logical_or(close, logical_and(isnan(x, s), isnan(y, s), s), s);
  return close;
}

array allclose(const array& a, const array& b, double rtol, double atol, bool equal_nan, const StreamOrDevice& s) {
  return all(isclose(a, b, rtol, atol, equal_nan, s), {}, false, s);
}

array array_equal(const array& a, const array& b, bool equal_nan, const StreamOrDevice& s) {
  if (a.shape() != b.shape()) return array(false, Dtype::bool_);
  Dtype t = promote_types(a.dtype(), b.dtype());
  array eq = equal_nan ? binary<op::NaNEqual>(a, b, t, s, "array_equal") : equal(a, b, s);
  return all(eq, {}, false, s);
}

array nan_to_num(const array& a, double nan, std::optional<double> posinf, std::optional<double> neginf,
                 const StreamOrDevice& s) {
  Dtype t = a.dtype();
  if (!is_floating(t)) {
    no_complex(t, "nan_to_num");
    return a;
  }
  double big = t == Dtype::float64    ? std::numeric_limits<double>::max()
               : t == Dtype::float32  ? std::numeric_limits<float>::max()
               : t == Dtype::float16  ? 65504.0
                                      : 3.3895313892515355e38;  // bfloat16
  array out = where(isnan(a, s), array(nan, t), a, s);
  out = where(isposinf(a, s), array(posinf.value_or(big), t), out, s);
  out = where(isneginf(a, s), array(neginf.value_or(-big), t), out, s);
  return out;
}

}  // namespace ember
