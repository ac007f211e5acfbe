// Samplers built from the RandomBits primitive and public ops (see
// random.h). The uniform and normal transforms of the bits follow MLX's, so
// that values match it for the same key: uniform = bits / (2^32 - 1) in
// float32 mapped onto [low, high); normal = sqrt(2) erfinv(uniform on
// [nextafter(-1, 0), 1)).
#include "ember/random/random.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "ember/ops/common.h"
#include "ember/primitives/random.h"

namespace ember::random {

using detail::fail;
using detail::fail_index;

namespace {

std::mutex g_mutex;
bool g_seeded = false;
uint32_t g_key[2] = {0, 0};

void check_shape(const Shape& shape, const char* op) {
  for (auto d : shape) {
    if (d < 0) fail(op, "Negative dimensions not allowed: shape ", shape_str(shape), ".");
  }
}

void check_key(const array& k, const char* op) {
  if (k.dtype() != Dtype::uint32) {
    fail(op, "Expected key type uint32 but received ", dtype_name(k.dtype()), ".");
  }
  if (k.shape() != Shape{2}) {
    fail(op, "Expected key shape (2) but received ", shape_str(k.shape()), ".");
  }
}

void check_float(Dtype dtype, const char* op) {
  if (!is_floating(dtype)) {
    fail(op, "Can only generate samples of a real floating point type, not ", dtype_name(dtype), ".");
  }
}

// Output shape `shape` must absorb the parameters' broadcast shape `bs`.
void check_broadcast(const Shape& shape, const Shape& bs, const char* op) {
  Shape both = broadcast_shapes(shape, bs, op);
  if (both != shape) {
    fail(op, "Cannot generate random values of shape ", shape_str(shape), " from broadcasted shape ",
         shape_str(bs), ".");
  }
}

array node(const array& key, const Shape& shape, int width, RandomBits::Kind kind, Stream st) {
  Dtype dt = kind != RandomBits::Bits ? Dtype::float32
             : width == 1            ? Dtype::uint8
             : width == 2            ? Dtype::uint16
                                     : Dtype::uint32;
  return make_node<RandomBits>(shape, dt, {key}, st, shape, width, kind);
}

bool is_constant(const array& a, double v) {
  if (a.has_primitive() || a.is_tracer() || a.size() != 1 || a.ndim() != 0) return false;
  return a.item<double>() == v;
}

// The largest value of `dtype` below each element of x (x in dtype).
array prev_float(const array& x, const StreamOrDevice& s) {
  Dtype dt = x.dtype();
  Dtype ut = size_of(dt) == 2 ? Dtype::uint16 : size_of(dt) == 4 ? Dtype::uint32 : Dtype::uint64;
  array b = view(x, ut, s);
  array one(1, ut);
  array down = view(subtract(b, one, s), dt, s);
  array up = view(add(b, one, s), dt, s);
  uint64_t neg_tiny = (uint64_t(1) << (8 * size_of(dt) - 1)) | 1u;  // -smallest subnormal
  array tiny = view(array(neg_tiny, ut), dt, s);
  array zero(0, dt);
  return where(greater(x, zero, s), down, where(less(x, zero, s), up, tiny, s), s);
}

// uniform without the key/shape checks (callers did them).
array uniform_impl(const array& low, const array& high, const Shape& shape, Dtype dtype, const array& k,
                   const StreamOrDevice& s) {
  Stream st = to_stream(s);
  array u = node(k, shape, 4, RandomBits::Uniform, st);
  if (dtype == Dtype::float32 && is_constant(low, 0.0) && is_constant(high, 1.0)) return u;
  Dtype ct = dtype == Dtype::float64 ? Dtype::float64 : Dtype::float32;
  array lo = astype(low, ct, s), hi = astype(high, ct, s);
  if (ct != Dtype::float32) u = astype(u, ct, s);
  array out = astype(add(multiply(subtract(hi, lo, s), u, s), lo, s), dtype, s);
  out = broadcast_to(out, shape, s);
  // Rounding (to the compute or the output dtype) may reach `high`: keep the
  // result inside [low, high) by taking the value just below it.
  array hi_d = astype(hi, dtype, s), lo_d = astype(lo, dtype, s);
  array over = logical_and(greater_equal(out, hi_d, s), less(lo_d, hi_d, s), s);
  return where(over, prev_float(hi_d, s), out, s);
}

array standard_uniform(const Shape& shape, double low, const array& k, const StreamOrDevice& s) {
  return uniform_impl(array(low, Dtype::float32), array(1.0, Dtype::float32), shape, Dtype::float32, k, s);
}

}  // namespace

array key(uint64_t seed) {
  uint32_t v[2] = {static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed & 0xffffffffu)};
  return array(v, Shape{2}, Dtype::uint32);
}

void seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_key[0] = static_cast<uint32_t>(seed >> 32);
  g_key[1] = static_cast<uint32_t>(seed & 0xffffffffu);
  g_seeded = true;
}

namespace {
// the global key seeded from the clock on first use; g_mutex held
void ensure_seeded() {
  if (!g_seeded) {
    uint64_t t = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    g_key[0] = static_cast<uint32_t>(t >> 32);
    g_key[1] = static_cast<uint32_t>(t & 0xffffffffu);
    g_seeded = true;
  }
}
}  // namespace

array global_key() {
  std::lock_guard<std::mutex> lock(g_mutex);
  ensure_seeded();
  return array(g_key, Shape{2}, Dtype::uint32);
}

namespace {
thread_local std::vector<array> t_traced_keys;
}

void set_global_key(const array& k) {
  check_key(k, "random.state");
  k.eval();
  const uint32_t* p = k.data<uint32_t>();
  std::lock_guard<std::mutex> lock(g_mutex);
  g_key[0] = p[0];
  g_key[1] = p[k.strides()[0]];
  g_seeded = true;
}

void push_traced_key(const array& k) {
  check_key(k, "random.state");
  t_traced_keys.push_back(k);
}

array pop_traced_key() {
  if (t_traced_keys.empty()) throw std::logic_error("[random] No traced key to pop.");
  array k = t_traced_keys.back();
  t_traced_keys.pop_back();
  return k;
}

array get_key(const Key& k, const char* op) {
  if (k) {
    check_key(*k, op);
    return *k;
  }
  if (!t_traced_keys.empty()) {
    // split(key) -> [[w0, w1], [w2, w3]]: keep the first row, hand out the second (as the host split below)
    array both = split(t_traced_keys.back(), 2);
    t_traced_keys.back() = reshape(slice(both, {0, 0}, {1, 2}, {1, 1}), {2});
    return reshape(slice(both, {1, 0}, {2, 2}, {1, 1}), {2});
  }
  uint32_t next[2];
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ensure_seeded();
    // split(global) -> [[w0, w1], [w2, w3]]: keep the first, hand out the second.
    auto a = threefry2x32(g_key[0], g_key[1], 0, 2);
    auto b = threefry2x32(g_key[0], g_key[1], 1, 3);
    g_key[0] = a.first;
    g_key[1] = b.first;
    next[0] = a.second;
    next[1] = b.second;
  }
  return array(next, Shape{2}, Dtype::uint32);
}

array split(const array& k, int num, const StreamOrDevice& s) {
  check_key(k, "split");
  if (num < 0) fail("split", "The number of keys must be non-negative, got ", num, ".");
  return node(k, Shape{num, 2}, 4, RandomBits::Bits, to_stream(s));
}

array bits(const Shape& shape, int width, const Key& k, const StreamOrDevice& s) {
  check_shape(shape, "bits");
  if (width != 1 && width != 2 && width != 4) {
    fail("bits", "width must be 1, 2 or 4 bytes, got ", width, ".");
  }
  return node(get_key(k, "bits"), shape, width, RandomBits::Bits, to_stream(s));
}

array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype, const Key& k,
              const StreamOrDevice& s) {
  check_shape(shape, "uniform");
  if (!is_floating(dtype)) fail("uniform", "Can only generate uniform numbers with real floating point type.");
  check_broadcast(shape, broadcast_shapes(low.shape(), high.shape(), "uniform"), "uniform");
  return uniform_impl(low, high, shape, dtype, get_key(k, "uniform"), s);
}

array normal(const Shape& shape, Dtype dtype, const std::optional<array>& loc, const std::optional<array>& scale,
             const Key& k, const StreamOrDevice& s) {
  check_shape(shape, "normal");
  if (!is_floating(dtype) && dtype != Dtype::complex64) {
    fail("normal", "Only floating point and complex64 types are supported, not ", dtype_name(dtype), ".");
  }
  // loc and scale broadcast with the shape (the result takes the broadcast
  // shape, as MLX's); shapes that do not broadcast name this op
  Shape out_shape = shape;
  if (loc) out_shape = broadcast_shapes(out_shape, loc->shape(), "normal");
  if (scale) out_shape = broadcast_shapes(out_shape, scale->shape(), "normal");
  array z;
  if (dtype == Dtype::complex64) {
    // Real and imaginary parts: consecutive pairs of normals, each of
    // variance 1/2 (E|z|^2 = 1).
    Shape pairs = shape;
    pairs.push_back(2);
    z = node(get_key(k, "normal"), pairs, 4, RandomBits::Normal, to_stream(s));
    z = multiply(z, array(std::sqrt(0.5), Dtype::float32), s);
    z = reshape(view(z, Dtype::complex64, s), shape, s);
  } else {
    z = node(get_key(k, "normal"), shape, 4, RandomBits::Normal, to_stream(s));
    if (dtype != Dtype::float32) z = astype(z, dtype, s);
  }
  if (scale) z = multiply(z, *scale, s);
  if (loc) z = add(z, *loc, s);
  if (z.dtype() != dtype) z = astype(z, dtype, s);
  return z;
}

array truncated_normal(const array& lower, const array& upper, const std::optional<Shape>& shape_opt, Dtype dtype,
                       const Key& k, const StreamOrDevice& s) {
  check_float(dtype, "truncated_normal");
  Shape bs = broadcast_shapes(lower.shape(), upper.shape(), "truncated_normal");
  Shape shape = shape_opt ? *shape_opt : bs;
  check_shape(shape, "truncated_normal");
  check_broadcast(shape, bs, "truncated_normal");
  array key_ = get_key(k, "truncated_normal");
  Dtype ct = dtype == Dtype::float64 ? Dtype::float64 : Dtype::float32;
  array lo = astype(lower, ct, s), hi = astype(upper, ct, s);
  array r2(std::sqrt(2.0), ct);
  array a = erf(divide(lo, r2, s), s), b = erf(divide(hi, r2, s), s);
  array u = uniform_impl(a, b, shape, ct, key_, s);
  array out = multiply(erfinv(u, s), r2, s);
  // erfinv may lose the far tails (NaN within ~1e-7 of +-1 in float64): such
  // a sample lies beyond the bound on its side.
  out = where(isnan(out, s), where(less(u, array(0.0, ct), s), lo, hi, s), out, s);
  // min with the upper bound, then max with the lower (as MLX: a lower bound
  // above the upper one gives the lower bound)
  auto bound = [&](const array& v, const array& l, const array& h) { return maximum(minimum(v, h, s), l, s); };
  out = bound(out, lo, hi);
  if (dtype != ct) out = bound(astype(out, dtype, s), astype(lo, dtype, s), astype(hi, dtype, s));
  return out;
}

array randint(const array& low, const array& high, const Shape& shape, Dtype dtype, const Key& k,
              const StreamOrDevice& s) {
  check_shape(shape, "randint");
  if (!is_integral(dtype) && dtype != Dtype::bool_) {
    fail("randint", "randint only accepts integer dtypes and bool.");
  }
  check_broadcast(shape, broadcast_shapes(low.shape(), high.shape(), "randint"), "randint");
  array lo = astype(low, Dtype::float32, s), hi = astype(high, Dtype::float32, s);
  array u = uniform_impl(lo, hi, shape, Dtype::float32, get_key(k, "randint"), s);
  array v = maximum(minimum(floor(u, s), subtract(hi, array(1.0f, Dtype::float32), s), s), lo, s);
  return astype(v, dtype, s);
}

array bernoulli(const array& p, const std::optional<Shape>& shape_opt, const Key& k, const StreamOrDevice& s) {
  Shape shape = shape_opt ? *shape_opt : p.shape();
  check_shape(shape, "bernoulli");
  check_broadcast(shape, p.shape(), "bernoulli");
  if (!is_floating(p.dtype())) {
    fail("bernoulli", "The probability p must be of a real floating point type, not ", dtype_name(p.dtype()),
         ".");
  }
  array u = standard_uniform(shape, 0.0, get_key(k, "bernoulli"), s);
  return less(u, p, s);
}

array gumbel(const Shape& shape, Dtype dtype, const Key& k, const StreamOrDevice& s) {
  check_shape(shape, "gumbel");
  check_float(dtype, "gumbel");
  // Uniform on [smallest normal float32, 1): both logs stay finite.
  array u = standard_uniform(shape, static_cast<double>(std::numeric_limits<float>::min()), get_key(k, "gumbel"), s);
  array g = negative(log(negative(log(u, s), s), s), s);
  return dtype == Dtype::float32 ? g : astype(g, dtype, s);
}

array laplace(const Shape& shape, Dtype dtype, double loc, double scale, const Key& k, const StreamOrDevice& s) {
  check_shape(shape, "laplace");
  check_float(dtype, "laplace");
  array u = standard_uniform(shape, std::nextafter(-1.0f, 0.0f), get_key(k, "laplace"), s);
  array v = multiply(sign(u, s), log1p(negative(abs(u, s), s), s), s);
  if (scale != 1.0) v = multiply(v, array(scale, Dtype::float32), s);
  if (loc != 0.0) v = add(v, array(loc, Dtype::float32), s);
  return dtype == Dtype::float32 ? v : astype(v, dtype, s);
}

array categorical(const array& logits, int axis, const std::optional<Shape>& shape,
                  std::optional<int64_t> num_samples, const Key& k, const StreamOrDevice& s) {
  if (shape && num_samples) fail("categorical", "At most one of shape or num_samples can be specified.");
  if (logits.ndim() == 0) fail_index("categorical", "logits must have at least one dimension, got shape ().");
  int ax = normalize_axis(axis, logits.ndim(), "categorical");
  array L = is_floating(logits.dtype()) ? logits : astype(logits, Dtype::float32, s);
  Shape batch = L.shape();
  int64_t c = batch[ax];
  batch.erase(batch.begin() + ax);
  array key_ = get_key(k, "categorical");
  // The Gumbel noise is laid out like the logits (class axis in place), with
  // the samples on a trailing axis for num_samples.
  Shape noise_shape = L.shape();
  if (num_samples) {
    if (*num_samples < 0) fail("categorical", "num_samples must be non-negative, got ", *num_samples, ".");
    L = expand_dims(L, {-1}, s);
    noise_shape.push_back(*num_samples);
  } else if (shape) {
    check_shape(*shape, "categorical");
    check_broadcast(*shape, batch, "categorical");
    noise_shape = *shape;
    int from_end = logits.ndim() - 1 - ax;
    noise_shape.insert(noise_shape.end() - from_end, c);
  }
  array g = gumbel(noise_shape, Dtype::float32, key_, s);
  const int from_end = ax - logits.ndim() - (num_samples ? 1 : 0);  // the class axis, from the end
  return argmax(add(L, g, s), from_end, false, s);
}

array multivariate_normal(const array& mean, const array& cov, const Shape& shape, Dtype dtype, const Key& k,
                          const StreamOrDevice& s) {
  const char* op = "multivariate_normal";
  if (dtype != Dtype::float32 && dtype != Dtype::float64) {
    fail(op, "dtype must be float32 or float64, got ", dtype_name(dtype), ".");
  }
  check_shape(shape, op);
  if (mean.ndim() < 1) fail(op, "mean must have at least one dimension, got shape ", shape_str(mean.shape()), ".");
  if (cov.ndim() < 2 || cov.shape(-1) != cov.shape(-2) || cov.shape(-1) != mean.shape(-1)) {
    fail(op, "cov must have shape (..., n, n) with n = mean.shape[-1]; got mean ", shape_str(mean.shape()),
         " and cov ", shape_str(cov.shape()), ".");
  }
  Shape mb(mean.shape().begin(), mean.shape().end() - 1), cb(cov.shape().begin(), cov.shape().end() - 2);
  check_broadcast(shape, broadcast_shapes(mb, cb, op), op);
  array key_ = get_key(k, op);
  int64_t n = mean.shape(-1);
  array c = astype(cov, dtype, s);
  array l = make_node<RandomCholesky>(c.shape(), dtype, {c}, to_stream(s));
  Shape zs = shape;
  zs.push_back(n);
  array z = normal(zs, dtype, std::nullopt, std::nullopt, key_, s);
  array lz = squeeze(matmul(l, expand_dims(z, {-1}, s), s), Axes{-1}, s);
  return add(astype(mean, dtype, s), lz, s);
}

array permutation(int64_t n, const Key& k, const StreamOrDevice& s) {
  if (n < 0) fail("permutation", "The length must be non-negative, got ", n, ".");
  return argsort(node(get_key(k, "permutation"), Shape{n}, 4, RandomBits::Bits, to_stream(s)), 0, s);
}

array permutation(const array& x, int axis, const Key& k, const StreamOrDevice& s) {
  if (x.ndim() == 0) fail_index("permutation", "Expected an array with at least one dimension, got shape ().");
  int ax = normalize_axis(axis, x.ndim(), "permutation");
  array perm = permutation(x.shape(ax), k, s);
  return take(x, perm, ax, s);
}

}  // namespace ember::random
