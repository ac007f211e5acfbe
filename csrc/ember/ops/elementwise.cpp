// Elementwise ops: dtype rules (MLX's promotion), broadcasting, and the
// node for the matching Unary/Binary primitive. Kernels broadcast through
// strides, so no broadcast node is inserted.
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
  return array(a.shape(), dtype, std::make_shared<AsType>(to_stream(s), dtype), {a});
}

namespace {

template <class Op>
array unary(const array& a, Dtype out_dtype, const StreamOrDevice& s) {
  return array(a.shape(), out_dtype, std::make_shared<Unary<Op>>(to_stream(s)), {a});
}

// Float ops: integers and bool compute in float32.
template <class Op>
array float_unary(const array& a, const StreamOrDevice& s) {
  Dtype t = to_inexact(a.dtype());
  return unary<Op>(astype(a, t, s), t, s);
}

template <class Op>
array real_float_unary(const array& a, const StreamOrDevice& s, const char* name) {
  if (is_complex(a.dtype())) fail(name, "Not supported for complex64 inputs.");
  return float_unary<Op>(a, s);
}

template <class Op>
array binary(array a, array b, Dtype compute, Dtype out, const StreamOrDevice& s, const char* name) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  a = astype(a, compute, s);
  b = astype(b, compute, s);
  return array(std::move(shape), out, std::make_shared<Binary<Op>>(to_stream(s)), {a, b});
}

template <class Op>
array arith(const array& a, const array& b, const StreamOrDevice& s, const char* name) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  return binary<Op>(a, b, t, t, s, name);
}

template <class Op>
array compare(const array& a, const array& b, const StreamOrDevice& s, const char* name) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  return binary<Op>(a, b, t, Dtype::bool_, s, name);
}

template <class Op>
array float_binary(const array& a, const array& b, const StreamOrDevice& s, const char* name) {
  Dtype t = to_inexact(promote_types(a.dtype(), b.dtype()));
  return binary<Op>(a, b, t, t, s, name);
}

template <class Op>
array bitwise(const array& a, const array& b, const StreamOrDevice& s, const char* name) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (is_inexact(t)) {
    fail(name, "Bitwise operations are only allowed on integer and boolean types; got ", dtype_name(a.dtype()),
         " and ", dtype_name(b.dtype()), ".");
  }
  return binary<Op>(a, b, t, t, s, name);
}

array scalar_like(double v, Dtype t) { return array(v, t); }

}  // namespace

array abs(const array& a, const StreamOrDevice& s) {
  if (a.dtype() == Dtype::bool_ || is_unsigned(a.dtype())) return a;
  return unary<op::Abs>(a, is_complex(a.dtype()) ? Dtype::float32 : a.dtype(), s);
}
array negative(const array& a, const StreamOrDevice& s) {
  if (a.dtype() == Dtype::bool_) fail("negative", "The negative of a boolean array is not supported.");
  return unary<op::Negative>(a, a.dtype(), s);
}
array sign(const array& a, const StreamOrDevice& s) {
  if (a.dtype() == Dtype::bool_) return a;
  return unary<op::Sign>(a, a.dtype(), s);
}
array square(const array& a, const StreamOrDevice& s) { return unary<op::Square>(a, a.dtype(), s); }
array sqrt(const array& a, const StreamOrDevice& s) { return float_unary<op::Sqrt>(a, s); }
array rsqrt(const array& a, const StreamOrDevice& s) { return float_unary<op::Rsqrt>(a, s); }
array reciprocal(const array& a, const StreamOrDevice& s) {
  Dtype t = to_inexact(a.dtype());
  return divide(scalar_like(1.0, t), astype(a, t, s), s);
}
array exp(const array& a, const StreamOrDevice& s) { return float_unary<op::Exp>(a, s); }
array log(const array& a, const StreamOrDevice& s) { return float_unary<op::Log>(a, s); }
array log10(const array& a, const StreamOrDevice& s) { return float_unary<op::Log10>(a, s); }
array sin(const array& a, const StreamOrDevice& s) { return float_unary<op::Sin>(a, s); }
array cos(const array& a, const StreamOrDevice& s) { return float_unary<op::Cos>(a, s); }
array tan(const array& a, const StreamOrDevice& s) { return float_unary<op::Tan>(a, s); }
array sinh(const array& a, const StreamOrDevice& s) { return float_unary<op::Sinh>(a, s); }
array cosh(const array& a, const StreamOrDevice& s) { return float_unary<op::Cosh>(a, s); }
array tanh(const array& a, const StreamOrDevice& s) { return float_unary<op::Tanh>(a, s); }
array arcsin(const array& a, const StreamOrDevice& s) { return float_unary<op::ArcSin>(a, s); }
array arccos(const array& a, const StreamOrDevice& s) { return float_unary<op::ArcCos>(a, s); }
array arctan(const array& a, const StreamOrDevice& s) { return float_unary<op::ArcTan>(a, s); }
array arcsinh(const array& a, const StreamOrDevice& s) { return float_unary<op::ArcSinh>(a, s); }
array arccosh(const array& a, const StreamOrDevice& s) { return float_unary<op::ArcCosh>(a, s); }
array arctanh(const array& a, const StreamOrDevice& s) { return float_unary<op::ArcTanh>(a, s); }
array expm1(const array& a, const StreamOrDevice& s) { return real_float_unary<op::Expm1>(a, s, "expm1"); }
array log2(const array& a, const StreamOrDevice& s) { return float_unary<op::Log2>(a, s); }
array log1p(const array& a, const StreamOrDevice& s) { return float_unary<op::Log1p>(a, s); }
array sigmoid(const array& a, const StreamOrDevice& s) { return real_float_unary<op::Sigmoid>(a, s, "sigmoid"); }
array erf(const array& a, const StreamOrDevice& s) { return real_float_unary<op::Erf>(a, s, "erf"); }
array erfinv(const array& a, const StreamOrDevice& s) { return real_float_unary<op::ErfInv>(a, s, "erfinv"); }

#define EMBER_ROUNDING(fn, Op)                                                  \
  array fn(const array& a, const StreamOrDevice& s) {                          \
    if (!is_inexact(a.dtype())) return a;                                      \
    if (is_complex(a.dtype())) fail(#fn, "Not supported for complex64 inputs."); \
    return unary<Op>(a, a.dtype(), s);                                         \
  }
EMBER_ROUNDING(floor, op::Floor)
EMBER_ROUNDING(ceil, op::Ceil)
#undef EMBER_ROUNDING

array trunc(const array& a, const StreamOrDevice& s) {
  if (!is_inexact(a.dtype())) return a;
  if (is_complex(a.dtype())) fail("trunc", "Not supported for complex64 inputs.");
  return where(less(a, scalar_like(0, a.dtype()), s), ceil(a, s), floor(a, s), s);
}

array round(const array& a, int decimals, const StreamOrDevice& s) {
  if (!is_inexact(a.dtype())) {
    if (decimals >= 0) return a;
    array f = astype(a, Dtype::float64, s);
    array scale = scalar_like(std::pow(10.0, -decimals), Dtype::float64);
    return astype(multiply(unary<op::Round>(divide(f, scale, s), Dtype::float64, s), scale, s), a.dtype(), s);
  }
  if (decimals == 0) return unary<op::Round>(a, a.dtype(), s);
  array scale = scalar_like(std::pow(10.0, decimals), a.dtype());
  return divide(unary<op::Round>(multiply(a, scale, s), a.dtype(), s), scale, s);
}

array logical_not(const array& a, const StreamOrDevice& s) { return unary<op::LogicalNot>(a, Dtype::bool_, s); }
array bitwise_invert(const array& a, const StreamOrDevice& s) {
  if (is_inexact(a.dtype())) {
    fail("bitwise_invert", "Bitwise inversion is only allowed on integer and boolean types; got ",
         dtype_name(a.dtype()), ".");
  }
  return unary<op::BitwiseInvert>(a, a.dtype(), s);
}

#define EMBER_PREDICATE(fn, Op, IF_EXACT)                                               \
  array fn(const array& a, const StreamOrDevice& s) {                                   \
    if (!is_inexact(a.dtype())) return full(a.shape(), array(IF_EXACT, Dtype::bool_), {}, s); \
    return unary<Op>(a, Dtype::bool_, s);                                               \
  }
EMBER_PREDICATE(isnan, op::IsNaN, false)
EMBER_PREDICATE(isinf, op::IsInf, false)
#undef EMBER_PREDICATE
#define EMBER_REAL_PREDICATE(fn, Op)                                                   \
  array fn(const array& a, const StreamOrDevice& s) {                                  \
    if (!is_inexact(a.dtype())) return full(a.shape(), array(false, Dtype::bool_), {}, s); \
    if (is_complex(a.dtype())) fail(#fn, "Not supported for complex64 inputs.");       \
    return unary<Op>(a, Dtype::bool_, s);                                              \
  }
EMBER_REAL_PREDICATE(isposinf, op::IsPosInf)
EMBER_REAL_PREDICATE(isneginf, op::IsNegInf)
#undef EMBER_REAL_PREDICATE

array isfinite(const array& a, const StreamOrDevice& s) {
  if (!is_inexact(a.dtype())) return full(a.shape(), array(true, Dtype::bool_), {}, s);
  return logical_not(logical_or(isnan(a, s), isinf(a, s), s), s);
}

array real(const array& a, const StreamOrDevice& s) {
  if (!is_complex(a.dtype())) return a;
  return unary<op::Real>(a, Dtype::float32, s);
}
array imag(const array& a, const StreamOrDevice& s) {
  if (!is_complex(a.dtype())) return zeros_like(a, {}, s);
  return unary<op::Imag>(a, Dtype::float32, s);
}
array conjugate(const array& a, const StreamOrDevice& s) {
  if (!is_complex(a.dtype())) return a;
  return unary<op::Conjugate>(a, a.dtype(), s);
}
array degrees(const array& a, const StreamOrDevice& s) {
  Dtype t = to_inexact(a.dtype());
  return multiply(astype(a, t, s), scalar_like(180.0 / M_PI, t), s);
}
array radians(const array& a, const StreamOrDevice& s) {
  Dtype t = to_inexact(a.dtype());
  return multiply(astype(a, t, s), scalar_like(M_PI / 180.0, t), s);
}

// ---- binary ----
array add(const array& a, const array& b, const StreamOrDevice& s) { return arith<op::Add>(a, b, s, "add"); }
array subtract(const array& a, const array& b, const StreamOrDevice& s) {
  return arith<op::Subtract>(a, b, s, "subtract");  // bool - bool is xor, as MLX
}
array multiply(const array& a, const array& b, const StreamOrDevice& s) {
  return arith<op::Multiply>(a, b, s, "multiply");
}
array divide(const array& a, const array& b, const StreamOrDevice& s) {
  return float_binary<op::Divide>(a, b, s, "divide");
}
array remainder(const array& a, const array& b, const StreamOrDevice& s) {
  if (is_complex(promote_types(a.dtype(), b.dtype()))) fail("remainder", "Not supported for complex64 inputs.");
  return arith<op::Remainder>(a, b, s, "remainder");
}
array floor_divide(const array& a, const array& b, const StreamOrDevice& s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (is_complex(t)) fail("floor_divide", "Not supported for complex64 inputs.");
  return binary<op::FloorDivide>(a, b, t, t, s, "floor_divide");
}
std::vector<array> divmod(const array& a, const array& b, const StreamOrDevice& s) {
  if (is_complex(promote_types(a.dtype(), b.dtype()))) fail("divmod", "Not supported for complex64 inputs.");
  return {floor_divide(a, b, s), remainder(a, b, s)};
}
array power(const array& a, const array& b, const StreamOrDevice& s) {
  return arith<op::Power>(a, b, s, "power");
}
array maximum(const array& a, const array& b, const StreamOrDevice& s) {
  return arith<op::Maximum>(a, b, s, "maximum");
}
array minimum(const array& a, const array& b, const StreamOrDevice& s) {
  return arith<op::Minimum>(a, b, s, "minimum");
}
array equal(const array& a, const array& b, const StreamOrDevice& s) { return compare<op::Equal>(a, b, s, "equal"); }
array not_equal(const array& a, const array& b, const StreamOrDevice& s) {
  return compare<op::NotEqual>(a, b, s, "not_equal");
}
#define EMBER_ORDERED(fn, Op)                                         \
  array fn(const array& a, const array& b, const StreamOrDevice& s) { \
    return compare<Op>(a, b, s, #fn);                                 \
  }
EMBER_ORDERED(less, op::Less)
EMBER_ORDERED(less_equal, op::LessEqual)
EMBER_ORDERED(greater, op::Greater)
EMBER_ORDERED(greater_equal, op::GreaterEqual)
#undef EMBER_ORDERED
namespace {
template <class Op>
array logical(const array& a, const array& b, const StreamOrDevice& s, const char* name) {
  return binary<Op>(astype(a, Dtype::bool_, s), astype(b, Dtype::bool_, s), Dtype::bool_, Dtype::bool_, s, name);
}
}  // namespace
array logical_and(const array& a, const array& b, const StreamOrDevice& s) {
  return logical<op::LogicalAnd>(a, b, s, "logical_and");
}
array logical_or(const array& a, const array& b, const StreamOrDevice& s) {
  return logical<op::LogicalOr>(a, b, s, "logical_or");
}
array logical_xor(const array& a, const array& b, const StreamOrDevice& s) {
  return logical<op::NotEqual>(a, b, s, "logical_xor");
}
array bitwise_and(const array& a, const array& b, const StreamOrDevice& s) {
  return bitwise<op::BitwiseAnd>(a, b, s, "bitwise_and");
}
array bitwise_or(const array& a, const array& b, const StreamOrDevice& s) {
  return bitwise<op::BitwiseOr>(a, b, s, "bitwise_or");
}
array bitwise_xor(const array& a, const array& b, const StreamOrDevice& s) {
  return bitwise<op::BitwiseXor>(a, b, s, "bitwise_xor");
}
// Shifts treat booleans as uint8 (as MLX).
array left_shift(const array& a, const array& b, const StreamOrDevice& s) {
  auto u8 = [&](const array& x) { return x.dtype() == Dtype::bool_ ? astype(x, Dtype::uint8, s) : x; };
  return bitwise<op::LeftShift>(u8(a), u8(b), s, "left_shift");
}
array right_shift(const array& a, const array& b, const StreamOrDevice& s) {
  auto u8 = [&](const array& x) { return x.dtype() == Dtype::bool_ ? astype(x, Dtype::uint8, s) : x; };
  return bitwise<op::RightShift>(u8(a), u8(b), s, "right_shift");
}
array arctan2(const array& a, const array& b, const StreamOrDevice& s) {
  if (is_complex(promote_types(a.dtype(), b.dtype()))) fail("arctan2", "Not supported for complex64 inputs.");
  return float_binary<op::ArcTan2>(a, b, s, "arctan2");
}
array logaddexp(const array& a, const array& b, const StreamOrDevice& s) {
  if (is_complex(promote_types(a.dtype(), b.dtype()))) fail("logaddexp", "Not supported for complex64 inputs.");
  return float_binary<op::LogAddExp>(a, b, s, "logaddexp");
}

array where(const array& cond, const array& x, const array& y, const StreamOrDevice& s) {
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), x.shape(), "where"), y.shape(), "where");
  Dtype t = promote_types(x.dtype(), y.dtype());
  return array(std::move(shape), t, std::make_shared<Select>(to_stream(s)),
               {astype(cond, Dtype::bool_, s), astype(x, t, s), astype(y, t, s)});
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
  array eq = equal_nan ? binary<op::NaNEqual>(a, b, t, Dtype::bool_, s, "array_equal") : equal(a, b, s);
  return all(eq, {}, false, s);
}

array nan_to_num(const array& a, double nan, std::optional<double> posinf, std::optional<double> neginf,
                 const StreamOrDevice& s) {
  Dtype t = a.dtype();
  if (!is_floating(t)) {
    if (is_complex(t)) fail("nan_to_num", "Not supported for complex64 inputs.");
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
