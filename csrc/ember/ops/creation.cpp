// Creation ops: constants are small evaluated scalars materialized by Full;
// ranges by Arange; triangles, identities and window functions composed
// from ranges.
#include <cmath>

#include "ember/ops/common.h"
#include "ember/primitives/shape.h"

namespace ember {

using detail::fail;

array full(const Shape& shape, const array& vals, std::optional<Dtype> dtype, const StreamOrDevice& s) {
  checked_size(shape, "full");
  Dtype t = dtype.value_or(vals.dtype());
  Shape out = broadcast_shapes(vals.shape(), shape, "full");
  if (out != shape) {
    fail("full", "Cannot broadcast values of shape ", shape_str(vals.shape()), " to shape ", shape_str(shape), ".");
  }
  return make_node<Full>(shape, t, {vals}, to_stream(s), shape, t);
}

array zeros(const Shape& shape, Dtype dtype, const StreamOrDevice& s) {
  checked_size(shape, "zeros");
  return full(shape, array(0, dtype), dtype, s);
}
array ones(const Shape& shape, Dtype dtype, const StreamOrDevice& s) {
  checked_size(shape, "ones");
  return full(shape, array(1, dtype), dtype, s); }
array zeros_like(const array& a, std::optional<Dtype> dtype, const StreamOrDevice& s) {
  return zeros(a.shape(), dtype.value_or(a.dtype()), s);
}
array ones_like(const array& a, std::optional<Dtype> dtype, const StreamOrDevice& s) {
  return ones(a.shape(), dtype.value_or(a.dtype()), s);
}

array arange(double start, double stop, double step, Dtype dtype, const StreamOrDevice& s) {
  if (step == 0) fail("arange", "Cannot compute length with step = 0.");
  if (!std::isfinite(start) || !std::isfinite(stop) || std::isnan(step)) {
    fail("arange", "Start, stop and step must be finite; got ", start, ", ", stop, ", ", step, ".");
  }
  if (dtype == Dtype::bool_) fail("arange", "bool is not a supported dtype for arange.");
  // an infinite step: [start] when it points from start towards stop, else
  // empty (NumPy's and MLX's answer)
  double len = std::isinf(step) ? ((step > 0 ? start < stop : start > stop) ? 1.0 : 0.0)
                                : std::ceil((stop - start) / step);
  if (len > 9.2e18) fail("arange", "Maximum size exceeded.");
  int64_t n = len > 0 ? static_cast<int64_t>(len) : 0;
  if (static_cast<double>(n) * size_of(dtype) > static_cast<double>(allocator::memory_limit())) {
    fail("arange", "Maximum size exceeded: ", n, " elements of ", dtype_name(dtype), " exceed the memory limit.");
  }
  // at most one element: the step is never used (an infinite one would give 0 * inf)
  return make_node<Arange>(Shape{n}, dtype, {}, to_stream(s), start, std::isinf(step) ? 1.0 : step, n, dtype);
}

array linspace(double start, double stop, int64_t num, bool endpoint, Dtype dtype, const StreamOrDevice& s) {
  if (num < 0) fail("linspace", "Number of samples, ", num, ", must be non-negative.");
  int64_t div = endpoint ? num - 1 : num;
  double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0.0;
  array idx = make_node<Arange>(Shape{num}, Dtype::float64, {}, to_stream(s), 0.0, 1.0, num, Dtype::float64);
  array vals = add(multiply(idx, array(step, Dtype::float64), s), array(start, Dtype::float64), s);
  if (endpoint && num > 1) {
    // the last sample is exactly `stop`, as NumPy
    vals = where(equal(idx, array(static_cast<double>(num - 1), Dtype::float64), s), array(stop, Dtype::float64),
                 vals, s);
  }
  if (is_integral(dtype)) vals = floor(vals, s);
  return astype(vals, dtype, s);
}

array tri(int64_t n, int64_t m, int64_t k, Dtype dtype, const StreamOrDevice& s) {
  if (n < 0 || m < 0) fail("tri", "Dimensions must be non-negative; got n=", n, ", m=", m, ".");
  array rows = reshape(arange(0, static_cast<double>(n), 1, Dtype::int64, s), {n, 1}, s);
  array cols = reshape(arange(0, static_cast<double>(m), 1, Dtype::int64, s), {1, m}, s);
  return astype(greater_equal(add(rows, array(k, Dtype::int64), s), cols, s), dtype, s);
}

array eye(int64_t n, int64_t m, int64_t k, Dtype dtype, const StreamOrDevice& s) {
  if (n < 0 || m < 0) fail("eye", "Dimensions must be non-negative; got n=", n, ", m=", m, ".");
  array rows = reshape(arange(0, static_cast<double>(n), 1, Dtype::int64, s), {n, 1}, s);
  array cols = reshape(arange(0, static_cast<double>(m), 1, Dtype::int64, s), {1, m}, s);
  return astype(equal(add(rows, array(k, Dtype::int64), s), cols, s), dtype, s);
}

namespace {
array tri_mask(const array& x, int64_t k, bool lower, const char* name, const StreamOrDevice& s) {
  if (x.ndim() < 2) fail(name, "Array must have at least 2 dimensions; got shape ", shape_str(x.shape()), ".");
  int64_t n = x.shape(-2), m = x.shape(-1);
  array mask = lower ? tri(n, m, k, Dtype::bool_, s) : logical_not(tri(n, m, k - 1, Dtype::bool_, s), s);
  return where(mask, x, zeros({}, x.dtype(), s), s);
}
}  // namespace

array tril(const array& x, int64_t k, const StreamOrDevice& s) { return tri_mask(x, k, true, "tril", s); }
array triu(const array& x, int64_t k, const StreamOrDevice& s) { return tri_mask(x, k, false, "triu", s); }

// ===========================================================================
// window functions: float64 cosines rounded once to float32
// ===========================================================================

namespace {
constexpr double kPi = 3.14159265358979323846;

// sum_k coef[k] * cos(2 pi k n / (M - 1)) for n = 0..M-1, in float64, as float32
array cosine_window(int64_t M, std::initializer_list<double> coef, const StreamOrDevice& s) {
  if (M < 1) return zeros({0}, Dtype::float32, s);
  if (M == 1) return ones({1}, Dtype::float32, s);
  auto scalar = [](double v) { return array(v, Dtype::float64); };
  array phase = multiply(arange(0.0, static_cast<double>(M), 1.0, Dtype::float64, s),
                         scalar(2.0 * kPi / static_cast<double>(M - 1)), s);
  array w = zeros({M}, Dtype::float64, s);
  double k = 0;
  for (double c : coef) {
    w = add(w, k == 0 ? scalar(c) : multiply(cos(multiply(phase, scalar(k), s), s), scalar(c), s), s);
    k += 1;
  }
  return astype(w, Dtype::float32, s);
}
}  // namespace

array bartlett(int64_t M, const StreamOrDevice& s) {
  if (M < 1) return zeros({0}, Dtype::float32, s);
  if (M == 1) return ones({1}, Dtype::float32, s);
  // 1 - |2n - (M - 1)| / (M - 1)
  double m1 = static_cast<double>(M - 1);
  array n = arange(0.0, static_cast<double>(M), 1.0, Dtype::float64, s);
  array d = abs(subtract(multiply(n, array(2.0, Dtype::float64), s), array(m1, Dtype::float64), s), s);
  array w = subtract(array(1.0, Dtype::float64), divide(d, array(m1, Dtype::float64), s), s);
  return astype(w, Dtype::float32, s);
}

array blackman(int64_t M, const StreamOrDevice& s) { return cosine_window(M, {0.42, -0.5, 0.08}, s); }
array hamming(int64_t M, const StreamOrDevice& s) { return cosine_window(M, {0.54, -0.46}, s); }
array hanning(int64_t M, const StreamOrDevice& s) { return cosine_window(M, {0.5, -0.5}, s); }

}  // namespace ember
