// Transform rules of the elementwise primitives: Unary<Op>, Binary<Op>,
// Select, AsType and FromFP8 (their kernels are in backend/cpu/).
//
// Derivatives come from two tables, in the manner of JAX's defjvp: for each
// op, UnaryRule<Op> / BinaryRule<Op> give the partial derivatives as
// functions of the inputs and the output y (written with public ops, so the
// rules are differentiable again). One generic jvp (t * d) and one vjp
// (ct * conj(d)) serve every op of a kind:
//
//   Kind::Smooth  d(x, y) / da(a, b, y), db(a, b, y); for a binary op a
//                 partial may be std::nullopt, meaning 1 (add, subtract),
//                 or a boolean mask, meaning 1 where true (maximum, minimum)
//   Kind::Zero    derivative zero almost everywhere (rounding, sign,
//                 comparisons, logic, bits): zero tangents and cotangents
//   Kind::Custom  not holomorphic on complex inputs (abs, sign, real, imag,
//                 conjugate): the entry has its own jvp and vjp
//   Kind::None    no rule yet (the default for an op added to the lists):
//                 vjp and jvp raise naming the primitive; vmap still works
//
// Complex numbers follow MLX's convention (PyTorch's too): the cotangent of a
// complex value is dL/dRe + i dL/dIm, so a holomorphic f pulls a cotangent
// back as ct * conj(f'(x)), while the tangent is pushed forward as t * f'(x).
//
// The op layer does not broadcast a binary primitive's inputs (the kernels
// broadcast through strides), so a vjp sums the cotangent over the broadcast
// dims back to each input's shape, and a jvp broadcasts to the output's.
#include <cmath>
#include <optional>

#include "ember/ops.h"
#include "ember/primitives/elementwise.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace {

enum class Kind { None, Smooth, Zero, Custom };

// A constant of x's dtype (weakly typed, so it never promotes x).
array c(double v, const array& x) { return array(v, x.dtype()); }

// astype's node, built directly (the rules' casts and vmap's rebuild).
array cast(const array& x, Dtype t, Stream s) {
  if (x.dtype() == t) return x;
  return make_node<AsType>(x.shape(), t, {x}, s, t);
}

// ---- unary table ------------------------------------------------------------

template <class Op>
struct UnaryRule {
  static constexpr Kind kind = Kind::None;
};

#define EMBER_UNARY_D(OP, EXPR)                                                   \
  template <>                                                                     \
  struct UnaryRule<op::OP> {                                                      \
    static constexpr Kind kind = Kind::Smooth;                                    \
    static array d([[maybe_unused]] const array& x, [[maybe_unused]] const array& y, \
                   [[maybe_unused]] Stream s) {                                   \
      return EXPR;                                                                \
    }                                                                             \
  };
// clang-format off
EMBER_UNARY_D(Negative, c(-1, x))
EMBER_UNARY_D(Sqrt,     divide(c(0.5, y), y, s))
EMBER_UNARY_D(Rsqrt,    multiply(c(-0.5, x), divide(y, x, s), s))                 // -x^(-3/2) / 2
EMBER_UNARY_D(Square,   multiply(c(2, x), x, s))
EMBER_UNARY_D(Exp,      y)
EMBER_UNARY_D(Expm1,    add(y, c(1, y), s))
EMBER_UNARY_D(Log,      reciprocal(x, s))
EMBER_UNARY_D(Log2,     reciprocal(multiply(x, c(M_LN2, x), s), s))
EMBER_UNARY_D(Log10,    reciprocal(multiply(x, c(M_LN10, x), s), s))
EMBER_UNARY_D(Log1p,    reciprocal(add(x, c(1, x), s), s))
EMBER_UNARY_D(Sin,      cos(x, s))
EMBER_UNARY_D(Cos,      negative(sin(x, s), s))
EMBER_UNARY_D(Tan,      add(c(1, y), square(y, s), s))
EMBER_UNARY_D(Sinh,     cosh(x, s))
EMBER_UNARY_D(Cosh,     sinh(x, s))
EMBER_UNARY_D(Tanh,     subtract(c(1, y), square(y, s), s))
EMBER_UNARY_D(ArcSin,   rsqrt(subtract(c(1, x), square(x, s), s), s))
EMBER_UNARY_D(ArcCos,   negative(rsqrt(subtract(c(1, x), square(x, s), s), s), s))
EMBER_UNARY_D(ArcTan,   reciprocal(add(c(1, x), square(x, s), s), s))
EMBER_UNARY_D(ArcSinh,  rsqrt(add(square(x, s), c(1, x), s), s))
// sqrt(x - 1) sqrt(x + 1) rather than sqrt(x^2 - 1): the right branch for complex x
EMBER_UNARY_D(ArcCosh,  reciprocal(multiply(sqrt(subtract(x, c(1, x), s), s), sqrt(add(x, c(1, x), s), s), s), s))
EMBER_UNARY_D(ArcTanh,  reciprocal(subtract(c(1, x), square(x, s), s), s))
EMBER_UNARY_D(Sigmoid,  multiply(y, subtract(c(1, y), y, s), s))
EMBER_UNARY_D(Erf,      multiply(c(M_2_SQRTPI, x), exp(negative(square(x, s), s), s), s))
EMBER_UNARY_D(ErfInv,   multiply(c(1.0 / M_2_SQRTPI, y), exp(square(y, s), s), s))
// clang-format on
#undef EMBER_UNARY_D

#define EMBER_UNARY_ZERO(OP)                   \
  template <>                                  \
  struct UnaryRule<op::OP> {                   \
    static constexpr Kind kind = Kind::Zero;   \
  };
EMBER_UNARY_ZERO(Floor)
EMBER_UNARY_ZERO(Ceil)
EMBER_UNARY_ZERO(Round)
EMBER_UNARY_ZERO(LogicalNot)
EMBER_UNARY_ZERO(BitwiseInvert)
EMBER_UNARY_ZERO(IsNaN)
EMBER_UNARY_ZERO(IsInf)
EMBER_UNARY_ZERO(IsPosInf)
EMBER_UNARY_ZERO(IsNegInf)
EMBER_UNARY_ZERO(ToFP8)  // a step function; its uint8 output gets no rule call anyway
#undef EMBER_UNARY_ZERO

// |x|: t * sign(x) for real x. For complex z the output is real: the tangent
// is Re(conj(z) t) / |z| and a (real) cotangent pulls back to ct * z / |z|.
// Both give 0 at 0 (sign(0) == 0), as MLX.
template <>
struct UnaryRule<op::Abs> {
  static constexpr Kind kind = Kind::Custom;
  static array jvp(const array& x, const array&, const array& t, Stream s) {
    if (is_complex(x.dtype())) return real(multiply(conjugate(sign(x, s), s), t, s), s);
    return multiply(t, sign(x, s), s);
  }
  static array vjp(const array& x, const array&, const array& ct, Stream s) { return multiply(ct, sign(x, s), s); }
};
// sign(x): zero derivative for real x (MLX). For complex z, u = z / |z| moves
// only along the unit circle: t -> i u Im(conj(u) t) / |z|, a self-adjoint map
// (so the vjp is the same formula), taken as 0 at z == 0.
template <>
struct UnaryRule<op::Sign> {
  static constexpr Kind kind = Kind::Custom;
  static array jvp(const array& x, const array& u, const array& t, Stream s) {
    if (!is_complex(x.dtype())) return zeros_like(x, {}, s);
    array r = abs(x, s);
    array r_safe = where(equal(r, c(0, r), s), c(1, r), r, s);  // u == 0 there anyway
    array iu = multiply(u, array(complex64_t(0, 1), u.dtype()), s);
    return multiply(iu, divide(imag(multiply(conjugate(u, s), t, s), s), r_safe, s), s);
  }
  static array vjp(const array& x, const array& u, const array& ct, Stream s) { return jvp(x, u, ct, s); }
};
// Re z: the real cotangent becomes ct + 0i.
template <>
struct UnaryRule<op::Real> {
  static constexpr Kind kind = Kind::Custom;
  static array jvp(const array&, const array&, const array& t, Stream s) { return real(t, s); }
  static array vjp(const array& x, const array&, const array& ct, Stream s) { return cast(ct, x.dtype(), s); }
};
// Im z: dL/dIm z = ct, so the cotangent is i ct.
template <>
struct UnaryRule<op::Imag> {
  static constexpr Kind kind = Kind::Custom;
  static array jvp(const array&, const array&, const array& t, Stream s) { return imag(t, s); }
  static array vjp(const array& x, const array&, const array& ct, Stream s) {
    return multiply(cast(ct, x.dtype(), s), array(complex64_t(0, 1), x.dtype()), s);
  }
};
template <>
struct UnaryRule<op::Conjugate> {
  static constexpr Kind kind = Kind::Custom;
  static array jvp(const array&, const array&, const array& t, Stream s) { return conjugate(t, s); }
  static array vjp(const array&, const array&, const array& ct, Stream s) { return conjugate(ct, s); }
};

// ---- binary table -----------------------------------------------------------

template <class Op>
struct BinaryRule {
  static constexpr Kind kind = Kind::None;
};

using Partial = std::optional<array>;  // std::nullopt: the partial is 1

#define EMBER_BINARY_D(OP, DA, DB)                                                        \
  template <>                                                                             \
  struct BinaryRule<op::OP> {                                                             \
    static constexpr Kind kind = Kind::Smooth;                                            \
    static Partial da([[maybe_unused]] const array& a, [[maybe_unused]] const array& b,   \
                      [[maybe_unused]] const array& y, [[maybe_unused]] Stream s) {       \
      return DA;                                                                          \
    }                                                                                     \
    static Partial db([[maybe_unused]] const array& a, [[maybe_unused]] const array& b,   \
                      [[maybe_unused]] const array& y, [[maybe_unused]] Stream s) {       \
      return DB;                                                                          \
    }                                                                                     \
  };

// a^b: b a^(b-1), taken as 0 where b == 0 (a^0 == 1 for every a, also 0);
// log(a) a^b, taken as 0 where a^b == 0 (so 0^b has no NaN 0 * log 0), as MLX.
array power_da(const array& a, const array& b, Stream s) {
  array d = multiply(b, power(a, subtract(b, c(1, b), s), s), s);
  return where(equal(b, c(0, b), s), c(0, d), d, s);
}
array power_db(const array& a, const array& y, Stream s) {
  array d = multiply(log(a, s), y, s);
  return where(equal(y, c(0, y), s), c(0, d), d, s);
}
// logaddexp: da = sigmoid(a - b), db = sigmoid(b - a); a == b == +-inf
// (where a - b is NaN) splits evenly like any other tie.
array logaddexp_delta(const array& a, const array& b, Stream s) {
  array inf_tie = logical_and(equal(a, b, s), isinf(a, s), s);
  return where(inf_tie, c(0, a), subtract(a, b, s), s);
}
// sigmoid(d) = 1 / (1 + exp(-d)), written out for complex d (the holomorphic
// partial e^a / (e^a + e^b)), which sigmoid does not take
array logaddexp_weight(const array& d, Stream s) {
  if (!is_complex(d.dtype())) return sigmoid(d, s);
  return reciprocal(add(c(1, d), exp(negative(d, s), s), s), s);
}

// clang-format off
EMBER_BINARY_D(Add,       std::nullopt, std::nullopt)
EMBER_BINARY_D(Subtract,  std::nullopt, c(-1, b))
EMBER_BINARY_D(Multiply,  b, a)
EMBER_BINARY_D(Divide,    reciprocal(b, s), negative(divide(y, b, s), s))
// a - b floor(a / b): MLX's partials (floor's derivative is zero)
EMBER_BINARY_D(Remainder, std::nullopt, negative(floor(divide(a, b, s), s), s))
EMBER_BINARY_D(Power,     power_da(a, b, s), power_db(a, y, s))
// MLX's tie rule: where a == b the whole derivative goes to b.
EMBER_BINARY_D(Maximum,   greater(a, b, s), less_equal(a, b, s))
EMBER_BINARY_D(Minimum,   less(a, b, s), greater_equal(a, b, s))
EMBER_BINARY_D(ArcTan2,   divide(b, add(square(a, s), square(b, s), s), s),
                          negative(divide(a, add(square(a, s), square(b, s), s), s), s))
EMBER_BINARY_D(LogAddExp, logaddexp_weight(logaddexp_delta(a, b, s), s),
                          logaddexp_weight(negative(logaddexp_delta(a, b, s), s), s))
// clang-format on
#undef EMBER_BINARY_D

#define EMBER_BINARY_ZERO(OP)                  \
  template <>                                  \
  struct BinaryRule<op::OP> {                  \
    static constexpr Kind kind = Kind::Zero;   \
  };
EMBER_BINARY_ZERO(FloorDivide)
EMBER_BINARY_ZERO(Equal)
EMBER_BINARY_ZERO(NotEqual)
EMBER_BINARY_ZERO(Less)
EMBER_BINARY_ZERO(LessEqual)
EMBER_BINARY_ZERO(Greater)
EMBER_BINARY_ZERO(GreaterEqual)
EMBER_BINARY_ZERO(LogicalAnd)
EMBER_BINARY_ZERO(LogicalOr)
EMBER_BINARY_ZERO(BitwiseAnd)
EMBER_BINARY_ZERO(BitwiseOr)
EMBER_BINARY_ZERO(BitwiseXor)
EMBER_BINARY_ZERO(LeftShift)
EMBER_BINARY_ZERO(RightShift)
EMBER_BINARY_ZERO(NaNEqual)
#undef EMBER_BINARY_ZERO

// ---- shared helpers -------------------------------------------------------------

// Lines up the inputs of an elementwise primitive under vmap so that plain
// broadcasting pairs example i of every batched input with example i of the
// output. Returns the inputs to use and the output's batch axis (-1: none
// batched). When every batched input has its batch axis at the same place
// and rank, and no unbatched input reaches that axis, nothing moves;
// otherwise batched inputs get their axis at 0 and size-1 dims after it up to
// the output's per-example rank (unbatched ones then broadcast from the right).
std::pair<std::vector<array>, int> align_batch(std::vector<array> in, const std::vector<int>& axes, const char* op,
                                               Stream s) {
  if (batch_size(in, axes, op) < 0) return {std::move(in), -1};
  int first = 0;
  while (axes[first] < 0) ++first;
  const int nd = in[first].ndim(), ax = axes[first];
  bool in_place = true;
  int rank = 0;  // the output's per-example rank
  for (size_t i = 0; i < in.size(); ++i) {
    bool batched = axes[i] >= 0;
    in_place = in_place && (batched ? in[i].ndim() == nd && axes[i] == ax : in[i].ndim() < nd - ax);
    rank = std::max(rank, in[i].ndim() - (batched ? 1 : 0));
  }
  if (in_place) return {std::move(in), ax};
  for (size_t i = 0; i < in.size(); ++i) {
    if (axes[i] < 0) continue;
    array x = batch_axis_to(in[i], axes[i], 0, -1, s);
    if (x.ndim() - 1 < rank) {
      Shape sh = x.shape();
      sh.insert(sh.begin() + 1, rank - (x.ndim() - 1), 1);
      x = reshape(x, sh, s);
    }
    in[i] = x;
  }
  return {std::move(in), 0};
}

}  // namespace

// ---- Unary --------------------------------------------------------------------

template <class Op>
std::vector<array> Unary<Op>::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>& outputs) {
  using R = UnaryRule<Op>;
  const array &x = primals[0], &ct = cotangents[0];
  Stream s = stream();
  if constexpr (R::kind == Kind::Smooth) {
    return {multiply(ct, conjugate(R::d(x, outputs[0], s), s), s)};
  } else if constexpr (R::kind == Kind::Zero) {
    return {zeros_like(x, {}, s)};
  } else if constexpr (R::kind == Kind::Custom) {
    return {R::vjp(x, outputs[0], ct, s)};
  } else {
    no_rule("vjp");
  }
}

template <class Op>
std::vector<array> Unary<Op>::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                  const std::vector<int>&, const std::vector<array>& outputs) {
  using R = UnaryRule<Op>;
  const array &x = primals[0], &t = tangents[0];
  Stream s = stream();
  if constexpr (R::kind == Kind::Smooth) {
    return {multiply(t, R::d(x, outputs[0], s), s)};
  } else if constexpr (R::kind == Kind::Zero) {
    return {zeros_like(outputs[0], {}, s)};
  } else if constexpr (R::kind == Kind::Custom) {
    return {R::jvp(x, outputs[0], t, s)};
  } else {
    no_rule("jvp");
  }
}

template <class Op>
std::pair<std::vector<array>, std::vector<int>> Unary<Op>::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  const array& x = inputs[0];
  array out = make_node<Unary<Op>>(x.shape(), Unary<Op>::out_dtype(x.dtype()), {x}, stream());
  return {{out}, {axes[0]}};
}

// ---- Binary -------------------------------------------------------------------

namespace {
// t * d, or t alone where the partial is 1; a boolean partial (a mask) selects
// t or 0 without converting the mask.
array times(const array& t, const Partial& d, Stream s) {
  if (!d) return t;
  if (d->dtype() == Dtype::bool_) return where(*d, t, c(0, t), s);
  return multiply(t, *d, s);
}
Partial conj(const Partial& d, Stream s) { return d ? Partial(conjugate(*d, s)) : std::nullopt; }
}  // namespace

template <class Op>
std::vector<array> Binary<Op>::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                   const std::vector<int>& argnums, const std::vector<array>& outputs) {
  using R = BinaryRule<Op>;
  const array &a = primals[0], &b = primals[1], &ct = cotangents[0];
  Stream s = stream();
  std::vector<array> out;
  for (int arg : argnums) {
    if constexpr (R::kind == Kind::Smooth) {
      Partial d = arg == 0 ? R::da(a, b, outputs[0], s) : R::db(a, b, outputs[0], s);
      out.push_back(sum_to_shape(times(ct, conj(d, s), s), primals[arg].shape(), s));
    } else if constexpr (R::kind == Kind::Zero) {
      out.push_back(zeros_like(primals[arg], {}, s));
    } else {
      no_rule("vjp");
    }
  }
  return out;
}

template <class Op>
std::vector<array> Binary<Op>::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                   const std::vector<int>& argnums, const std::vector<array>& outputs) {
  using R = BinaryRule<Op>;
  const array &a = primals[0], &b = primals[1], &y = outputs[0];
  Stream s = stream();
  if constexpr (R::kind == Kind::Smooth) {
    array sum_t;
    for (size_t i = 0; i < argnums.size(); ++i) {
      array term = times(tangents[i], argnums[i] == 0 ? R::da(a, b, y, s) : R::db(a, b, y, s), s);
      sum_t = sum_t.valid() ? add(sum_t, term, s) : term;
    }
    return {broadcast_to(sum_t, y.shape(), s)};
  } else if constexpr (R::kind == Kind::Zero) {
    return {zeros_like(y, {}, s)};
  } else {
    no_rule("jvp");
  }
}

template <class Op>
std::pair<std::vector<array>, std::vector<int>> Binary<Op>::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  auto [in, ax] = align_batch(inputs, axes, name(), stream());
  Shape shape = broadcast_shapes(in[0].shape(), in[1].shape(), name());
  array out = make_node<Binary<Op>>(std::move(shape), Binary<Op>::out_dtype(in[0].dtype()), in, stream());
  return {{out}, {ax}};
}

#define EMBER_RULES(CLASS, N)                                                                                 \
  template std::vector<array> CLASS<op::N>::vjp(const std::vector<array>&, const std::vector<array>&,         \
                                                const std::vector<int>&, const std::vector<array>&);          \
  template std::vector<array> CLASS<op::N>::jvp(const std::vector<array>&, const std::vector<array>&,         \
                                                const std::vector<int>&, const std::vector<array>&);          \
  template std::pair<std::vector<array>, std::vector<int>> CLASS<op::N>::vmap(const std::vector<array>&,      \
                                                                             const std::vector<int>&);
#define EMBER_UNARY_RULES(N, OUT) EMBER_RULES(Unary, N)
#define EMBER_BINARY_RULES(N, OUT) EMBER_RULES(Binary, N)
EMBER_UNARY_OPS(EMBER_UNARY_RULES)
EMBER_BINARY_OPS(EMBER_BINARY_RULES)
#undef EMBER_UNARY_RULES
#undef EMBER_BINARY_RULES
#undef EMBER_RULES

// ---- Select: where(cond, x, y) ----------------------------------------------------

std::vector<array> Select::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  const array &cond = primals[0], &ct = cotangents[0];
  Stream s = stream();
  array zero = c(0, ct);
  std::vector<array> out;
  for (int arg : argnums) {
    if (arg == 0) {
      out.push_back(zeros_like(cond, {}, s));  // boolean: never asked by the transforms
    } else {
      array g = arg == 1 ? where(cond, ct, zero, s) : where(cond, zero, ct, s);
      out.push_back(sum_to_shape(g, primals[arg].shape(), s));
    }
  }
  return out;
}

std::vector<array> Select::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>& argnums, const std::vector<array>& outputs) {
  const array &cond = primals[0], &y = outputs[0];
  Stream s = stream();
  std::optional<array> tx, ty;  // tangents of x and y
  for (size_t i = 0; i < argnums.size(); ++i) {
    if (argnums[i] == 1) tx = tangents[i];
    if (argnums[i] == 2) ty = tangents[i];
  }
  if (!tx && !ty) return {zeros_like(y, {}, s)};
  array zero = c(0, y);
  array t = where(cond, tx ? *tx : zero, ty ? *ty : zero, s);
  return {broadcast_to(t, y.shape(), s)};
}

std::pair<std::vector<array>, std::vector<int>> Select::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  auto [in, ax] = align_batch(inputs, axes, name(), stream());
  return {{where(in[0], in[1], in[2], stream())}, {ax}};
}

// ---- AsType -----------------------------------------------------------------------

// Real -> complex: the cotangent's real part; complex -> real: the tangent's.
std::vector<array> AsType::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>&, const std::vector<array>&) {
  const array &x = primals[0], &ct = cotangents[0];
  Stream s = stream();
  array g = is_complex(ct.dtype()) && !is_complex(x.dtype()) ? real(ct, s) : ct;
  return {cast(g, x.dtype(), s)};
}

std::vector<array> AsType::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                               const std::vector<int>&, const std::vector<array>& outputs) {
  const array& t = tangents[0];
  Stream s = stream();
  Dtype out = outputs[0].dtype();
  array g = is_complex(t.dtype()) && !is_complex(out) ? real(t, s) : t;
  return {cast(g, out, s)};
}

std::pair<std::vector<array>, std::vector<int>> AsType::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  return {{cast(inputs[0], dtype_, stream())}, {axes[0]}};
}

// ---- FromFP8 ----------------------------------------------------------------------

// Elementwise: the batched codes decoded in place. (No vjp/jvp: the input is
// uint8, so no derivative is ever asked for.)
std::pair<std::vector<array>, std::vector<int>> FromFP8::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  const array& x = inputs[0];
  return {{make_node<FromFP8>(x.shape(), dtype_, {x}, stream(), dtype_)}, {axes[0]}};
}

}  // namespace ember
