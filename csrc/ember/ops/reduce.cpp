// Reductions: axes normalized here; the Reduce primitive keeps reduced dims
// as size 1 and a view drops them when keepdims is false.
#include <algorithm>

#include "ember/ops/common.h"
#include "ember/primitives/reduce.h"
#include "ember/primitives/shape.h"
#include "ember/primitives/transform.h"

namespace ember {

using detail::fail;

namespace detail {

Axes reduce_axes(const std::optional<Axes>& axes, int ndim, const char* op) {
  Axes out;
  if (!axes) {
    for (int i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int a : *axes) {
    if (a < -ndim || a >= ndim) {
      fail_index(op, "Invalid axis ", a, " for array with ", ndim, " dimensions.");
    }
    out.push_back(a < 0 ? a + ndim : a);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) fail(op, "Received duplicate axes.");
  return out;
}

Shape keep_shape(const Shape& s, const Axes& axes) {
  Shape out = s;
  for (int a : axes) out[a] = 1;
  return out;
}

Shape squeeze_shape(const Shape& s, const Axes& axes) {
  Shape out;
  size_t j = 0;
  for (int i = 0; i < static_cast<int>(s.size()); ++i) {
    if (j < axes.size() && axes[j] == i) {
      ++j;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace detail

namespace {

array reduce(const array& a, const std::optional<Axes>& axes, bool keepdims, Reduce::Kind kind, Dtype out_t,
             const char* name, const StreamOrDevice& s) {
  Axes ax = detail::reduce_axes(axes, a.ndim(), name);
  if (ax.empty()) return a;  // nothing to reduce (0-d input or axis=()): MLX returns the input
  Shape kept = detail::keep_shape(a.shape(), ax);
  array out = make_node<Reduce>(kept, out_t, {a}, to_stream(s), kind, ax);
  if (!keepdims && !ax.empty()) out = reshape(out, detail::squeeze_shape(a.shape(), ax), s);
  return out;
}

Dtype sum_dtype(Dtype t) {
  if (t == Dtype::bool_) return Dtype::int32;
  if (is_signed_int(t)) return size_of(t) <= 4 ? Dtype::int32 : Dtype::int64;
  if (is_unsigned(t)) return size_of(t) <= 4 ? Dtype::uint32 : Dtype::uint64;
  return t;
}

}  // namespace

array sum(const array& a, std::optional<Axes> axes, bool keepdims, const StreamOrDevice& s) {
  return reduce(a, axes, keepdims, Reduce::Sum, sum_dtype(a.dtype()), "sum", s);
}
array prod(const array& a, std::optional<Axes> axes, bool keepdims, const StreamOrDevice& s) {
  return reduce(a, axes, keepdims, Reduce::Prod, sum_dtype(a.dtype()), "prod", s);
}
namespace {
// max/min/argmax/argmin have no identity: reducing an empty axis is an error.
void check_nonempty_axes(const array& a, const Axes& ax, const char* name) {
  for (int i : ax) {
    if (a.shape()[i] == 0) fail(name, "Cannot ", name, " reduce over axis ", i, " with size 0.");
  }
}
}  // namespace

array max(const array& a, std::optional<Axes> axes, bool keepdims, const StreamOrDevice& s) {
  check_nonempty_axes(a, detail::reduce_axes(axes, a.ndim(), "max"), "max");
  return reduce(a, axes, keepdims, Reduce::Max, a.dtype(), "max", s);
}
array min(const array& a, std::optional<Axes> axes, bool keepdims, const StreamOrDevice& s) {
  check_nonempty_axes(a, detail::reduce_axes(axes, a.ndim(), "min"), "min");
  return reduce(a, axes, keepdims, Reduce::Min, a.dtype(), "min", s);
}
array all(const array& a, std::optional<Axes> axes, bool keepdims, const StreamOrDevice& s) {
  return reduce(astype(a, Dtype::bool_, s), axes, keepdims, Reduce::And, Dtype::bool_, "all", s);
}
array any(const array& a, std::optional<Axes> axes, bool keepdims, const StreamOrDevice& s) {
  return reduce(astype(a, Dtype::bool_, s), axes, keepdims, Reduce::Or, Dtype::bool_, "any", s);
}

namespace {
int64_t reduced_count(const array& a, const std::optional<Axes>& axes, const char* name) {
  int64_t n = 1;
  for (int ax : detail::reduce_axes(axes, a.ndim(), name)) n *= a.shape()[ax];
  return n;
}
}  // namespace

array mean(const array& a, std::optional<Axes> axes, bool keepdims, const StreamOrDevice& s) {
  Dtype t = to_inexact(a.dtype());
  int64_t n = reduced_count(a, axes, "mean");
  array total = sum(astype(a, t, s), axes, keepdims, s);
  return multiply(total, array(n ? 1.0 / static_cast<double>(n) : std::nan(""), t), s);
}

array var(const array& a, std::optional<Axes> axes, bool keepdims, int ddof, const StreamOrDevice& s) {
  Dtype t = to_inexact(a.dtype());
  int64_t n = reduced_count(a, axes, "var");
  array x = astype(a, t, s);
  array mu = mean(x, axes, true, s);
  array d = subtract(x, mu, s);
  array sq = is_complex(t) ? real(multiply(d, conjugate(d, s), s), s) : square(d, s);
  array ss = sum(sq, axes, keepdims, s);
  double denom = static_cast<double>(n - ddof);
  double scale = denom > 0 ? 1.0 / denom : std::numeric_limits<double>::infinity();
  return multiply(ss, array(scale, ss.dtype()), s);
}

array std(const array& a, std::optional<Axes> axes, bool keepdims, int ddof, const StreamOrDevice& s) {
  detail::reduce_axes(axes, a.ndim(), "std");  // validates with this op's name
  return sqrt(var(a, axes, keepdims, ddof, s), s);
}

array logsumexp(const array& a, std::optional<Axes> axes, bool keepdims, const StreamOrDevice& s) {
  if (a.ndim() == 0 && axes && !axes->empty()) {
    fail("logsumexp", "Cannot reduce over axis ", (*axes)[0], " of a 0-d array.");
  }
  detail::reduce_axes(axes, a.ndim(), "logsumexp");  // validates with this op's name
  if (a.size() == 0) fail("logsumexp", "Cannot reduce an empty array of shape ", shape_str(a.shape()), ".");
  Dtype t = to_inexact(a.dtype());
  array x = astype(a, t, s);
  // The shift m is any constant as far as the value goes (log sum exp(x - m)
  // + m is logsumexp(x) for every m), so it carries no derivative: without
  // the stop, the vjp would also push the cotangent back through max() and
  // the isfinite mask, only for the two paths through m to cancel exactly.
  array m = max(x, axes, true, s);
  m = where(isfinite(m, s), m, array(0.0, t), s);
  m = make_node<StopGradient>(m.shape(), m.dtype(), {m}, to_stream(s));
  array out = add(log(sum(exp(subtract(x, m, s), s), axes, true, s), s), m, s);
  if (!keepdims) out = squeeze(out, detail::reduce_axes(axes, a.ndim(), "logsumexp"), s);
  return out;
}

namespace {
array arg_reduce(const array& a, std::optional<int> axis, bool keepdims, ArgReduce::Kind kind, const char* name,
                 const StreamOrDevice& s) {
  if (!axis) {
    if (a.size() == 0) fail(name, "Cannot ", name, " reduce zero size array.");
    array flat = reshape(a, {a.size()}, s);
    array out = make_node<ArgReduce>(Shape{1}, Dtype::uint32, {flat}, to_stream(s), kind, 0);
    return reshape(out, keepdims ? Shape(a.ndim(), 1) : Shape{}, s);
  }
  int ax = normalize_axis(*axis, a.ndim(), name);
  check_nonempty_axes(a, {ax}, name);
  Shape kept = a.shape();
  kept[ax] = 1;
  array out = make_node<ArgReduce>(kept, Dtype::uint32, {a}, to_stream(s), kind, ax);
  if (!keepdims) out = reshape(out, detail::squeeze_shape(a.shape(), {ax}), s);
  return out;
}
}  // namespace

array argmax(const array& a, std::optional<int> axis, bool keepdims, const StreamOrDevice& s) {
  return arg_reduce(a, axis, keepdims, ArgReduce::ArgMax, "argmax", s);
}
array argmin(const array& a, std::optional<int> axis, bool keepdims, const StreamOrDevice& s) {
  return arg_reduce(a, axis, keepdims, ArgReduce::ArgMin, "argmin", s);
}

array softmax(const array& a, std::optional<Axes> axes, bool precise, const StreamOrDevice& s) {
  Dtype t = to_inexact(a.dtype());
  if (is_complex(t)) fail("softmax", "Not supported for complex64 inputs.");
  if (a.ndim() == 0 && axes && !axes->empty()) {  // MLX: a ValueError, not an axis IndexError
    fail("softmax", "Received non-empty axes (", (*axes)[0], ") for array with 0 dimensions.");
  }
  array x = astype(a, t, s);
  Axes ax = detail::reduce_axes(axes, a.ndim(), "softmax");
  if (a.ndim() == 0) return divide(exp(subtract(x, x, s), s), array(1.0, t), s);
  if (ax.size() == 1) {
    int axis = ax[0];
    bool last = axis == a.ndim() - 1;
    array in = last ? x : swapaxes(x, axis, -1, s);
    array out = make_node<Softmax>(in.shape(), t, {in}, to_stream(s), precise);
    return last ? out : swapaxes(out, axis, -1, s);
  }
  array m = max(x, ax, true, s);
  array e = exp(subtract(x, m, s), s);
  return divide(e, sum(e, ax, true, s), s);
}

}  // namespace ember
