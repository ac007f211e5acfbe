// Sorting, selection, order statistics and scans: validate, apply MLX's
// dtype rules, build the Sorting / Scan / SearchSorted / Unique nodes (or
// compose public ops: median, minmax, count_nonzero).
#include <limits>

#include "ember/ops/common.h"
#include "ember/primitives/sort.h"

namespace ember {

using detail::fail;

namespace {

// The array and axis an axis-wise op works on: None flattens.
std::pair<array, int> along(const array& a, std::optional<int> axis, const char* op, const StreamOrDevice& s) {
  if (!axis) return {reshape(a, {a.size()}, s), 0};
  return {a, normalize_axis(*axis, a.ndim(), op)};
}

// Index outputs are uint32 (as MLX): an axis longer than that cannot be indexed.
void check_index_range(int64_t n, const char* op) {
  if (n > static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) {
    fail(op, "Axis of size ", n, " is too large for uint32 indices.");
  }
}

std::string axis_str(std::optional<int> axis) { return axis ? std::to_string(*axis) : std::string("None"); }

array sorting(const array& a, std::optional<int> axis, Sorting::Kind kind, const char* op, const StreamOrDevice& s) {
  auto [x, ax] = along(a, axis, op, s);
  bool indices = kind == Sorting::ArgSort;
  if (indices) check_index_range(x.shape(ax), op);
  return make_node<Sorting>(x.shape(), indices ? Dtype::uint32 : x.dtype(), {x}, to_stream(s), kind, ax);
}

array partition_impl(const array& a, int kth, std::optional<int> axis, bool indices, const StreamOrDevice& s) {
  const char* op = indices ? "argpartition" : "partition";
  auto [x, ax] = along(a, axis, op, s);
  int64_t n = x.shape(ax);
  if (kth < -n || kth >= n) {
    fail(op, "Received invalid kth ", kth, " along axis ", axis_str(axis), " for array with shape ",
         shape_str(x.shape()), ".");
  }
  if (indices) check_index_range(n, op);
  int64_t k = kth < 0 ? kth + n : kth;
  auto kind = indices ? Sorting::ArgPartition : Sorting::Partition;
  return make_node<Sorting>(x.shape(), indices ? Dtype::uint32 : x.dtype(), {x}, to_stream(s), kind, ax, k);
}

}  // namespace

array sort(const array& a, std::optional<int> axis, const StreamOrDevice& s) {
  return sorting(a, axis, Sorting::Sort, "sort", s);
}

array argsort(const array& a, std::optional<int> axis, const StreamOrDevice& s) {
  return sorting(a, axis, Sorting::ArgSort, "argsort", s);
}

array partition(const array& a, int kth, std::optional<int> axis, const StreamOrDevice& s) {
  return partition_impl(a, kth, axis, false, s);
}

array argpartition(const array& a, int kth, std::optional<int> axis, const StreamOrDevice& s) {
  return partition_impl(a, kth, axis, true, s);
}

array topk(const array& a, int k, std::optional<int> axis, const StreamOrDevice& s) {
  auto [x, ax] = along(a, axis, "topk", s);
  int64_t n = x.shape(ax);
  if (k < 0 || k > n) {
    fail("topk", "Received invalid k=", k, " along axis ", axis_str(axis), " for array with shape ",
         shape_str(x.shape()), ".");
  }
  Shape shape = x.shape();
  shape[ax] = k;
  return make_node<Sorting>(shape, x.dtype(), {x}, to_stream(s), Sorting::TopK, ax, k);
}

array searchsorted(const array& sorted, const array& values, const std::string& side, const StreamOrDevice& s) {
  if (side != "left" && side != "right") {
    fail("searchsorted", "Invalid side '", side, "'. Expected 'left' or 'right'.");
  }
  if (sorted.ndim() != 1) {
    fail("searchsorted", "The sorted sequence must be 1-D but has ", sorted.ndim(), " dimensions.");
  }
  check_index_range(sorted.size(), "searchsorted");
  Dtype t = promote_types(sorted.dtype(), values.dtype());
  return make_node<SearchSorted>(values.shape(), Dtype::uint32, {astype(sorted, t, s), astype(values, t, s)},
                                 to_stream(s), side == "right");
}

std::vector<array> unique(const array& a, int64_t size, bool return_index, bool return_inverse, bool return_counts,
                          const std::optional<array>& fill_value, const StreamOrDevice& s) {
  if (size < 0) fail("unique", "Received negative size ", size, ".");
  if (a.size() == 0 && size > 0 && !fill_value) {
    fail("unique", "A fill value is required for an empty input with a non-zero size.");
  }
  check_index_range(a.size(), "unique");
  if (size > std::numeric_limits<int32_t>::max()) fail("unique", "Received size ", size, " that is too large.");
  std::vector<array> inputs{reshape(a, {a.size()}, s)};
  if (fill_value) {
    if (fill_value->size() != 1) {
      fail("unique", "Fill value must have one element, but got shape ", shape_str(fill_value->shape()), ".");
    }
    inputs.push_back(reshape(astype(*fill_value, a.dtype(), s), {1}, s));
  }
  auto outs = make_nodes<Unique>({{size}, {size}, {a.size()}, {size}},
                                 {a.dtype(), Dtype::uint32, Dtype::uint32, Dtype::int32}, std::move(inputs),
                                 to_stream(s), size);
  std::vector<array> result{outs[0]};
  if (return_index) result.push_back(outs[1]);
  if (return_inverse) result.push_back(reshape(outs[2], a.shape(), s));
  if (return_counts) result.push_back(outs[3]);
  return result;
}

// ---- order statistics and counting reductions ----

array median(const array& a, std::optional<Axes> axes, bool keepdims, const StreamOrDevice& s) {
  Axes ax = detail::reduce_axes(axes, a.ndim(), "median");
  const Dtype out_t = is_inexact(a.dtype()) ? a.dtype() : Dtype::float32;
  if (ax.empty()) return astype(a, out_t, s);  // nothing reduced (0-d input or axis=())
  int64_t n = 1;
  for (int i : ax) n *= a.shape(i);
  if (n == 0) fail("median", "Cannot take median along empty axis.");

  // Reduced axes last, merged into one: x has shape kept + [n].
  Axes perm;
  Shape kept;
  for (int i = 0, j = 0; i < a.ndim(); ++i) {
    if (j < static_cast<int>(ax.size()) && ax[j] == i) {
      ++j;
      continue;
    }
    perm.push_back(i);
    kept.push_back(a.shape(i));
  }
  perm.insert(perm.end(), ax.begin(), ax.end());
  Shape flat = kept;
  flat.push_back(n);
  array x = reshape(transpose(a, perm, s), flat, s);
  const int last = static_cast<int>(flat.size()) - 1;

  // The middle element (and, for even n, the largest one below it).
  const int64_t k = n / 2;
  array p = make_node<Sorting>(flat, x.dtype(), {x}, to_stream(s), Sorting::Partition, last, k);
  auto take = [&](int64_t b, int64_t e) {
    Shape st(flat.size(), 0), sp = flat, stp(flat.size(), 1);
    st[last] = b;
    sp[last] = e;
    return slice(p, st, sp, stp, s);
  };
  // Half types average in float32 (no overflow of lo + hi).
  const Dtype calc = (out_t == Dtype::float16 || out_t == Dtype::bfloat16) ? Dtype::float32 : out_t;
  array med = astype(take(k, k + 1), calc, s);
  if (n % 2 == 0) {
    array lo = astype(max(take(0, k), Axes{last}, true, s), calc, s);
    med = multiply(add(lo, med, s), array(0.5, calc), s);
  }
  med = astype(med, out_t, s);
  if (is_inexact(a.dtype())) {
    // NaN anywhere in the reduced set gives NaN (NumPy; MLX too).
    array has_nan = any(isnan(x, s), Axes{last}, true, s);
    med = where(has_nan, array(std::numeric_limits<double>::quiet_NaN(), out_t), med, s);
  }
  if (keepdims) return reshape(med, detail::keep_shape(a.shape(), ax), s);
  return reshape(med, kept, s);
}

std::pair<array, array> minmax(const array& a, std::optional<Axes> axes, bool keepdims, const StreamOrDevice& s) {
  Axes ax = detail::reduce_axes(axes, a.ndim(), "minmax");
  for (int i : ax) {
    if (a.shape(i) == 0) fail("minmax", "Cannot reduce over axis ", i, " with size 0 of an array with shape ",
                              shape_str(a.shape()), ".");
  }
  return {min(a, axes, keepdims, s), max(a, axes, keepdims, s)};
}

array count_nonzero(const array& a, std::optional<Axes> axes, bool keepdims, const StreamOrDevice& s) {
  Axes ax = detail::reduce_axes(axes, a.ndim(), "count_nonzero");
  array nz = astype(a, Dtype::bool_, s);  // complex: either part nonzero; NaN counts
  if (ax.empty()) return astype(nz, Dtype::int32, s);
  return sum(nz, ax, keepdims, s);  // bool sums are int32
}

// ---- scans ----

namespace {

array scan(const array& a, std::optional<int> axis, bool reverse, bool inclusive, Scan::Kind kind, Dtype t,
           const char* op, const StreamOrDevice& s) {
  if (axis) normalize_axis(*axis, a.ndim(), op);  // validate before any cast
  array x = a.dtype() == t ? a : astype(a, t, s);
  auto [y, ax] = along(x, axis, op, s);
  return make_node<Scan>(y.shape(), t, {y}, to_stream(s), kind, ax, reverse, inclusive);
}

}  // namespace

array cumsum(const array& a, std::optional<int> axis, bool reverse, bool inclusive, std::optional<Dtype> dtype,
             const StreamOrDevice& s) {
  if (axis) normalize_axis(*axis, a.ndim(), "cumsum");
  // dtype= casts first (a float input becomes 0/1 for bool, truncated for ints)
  array x = dtype && *dtype != a.dtype() ? astype(a, *dtype, s) : a;
  Dtype t = x.dtype() == Dtype::bool_ ? Dtype::int32 : x.dtype();  // MLX: bool sums count in int32
  return scan(x, axis, reverse, inclusive, Scan::Sum, t, "cumsum", s);
}

array cumprod(const array& a, std::optional<int> axis, bool reverse, bool inclusive, std::optional<Dtype> dtype,
              const StreamOrDevice& s) {
  return scan(a, axis, reverse, inclusive, Scan::Prod, dtype.value_or(a.dtype()), "cumprod", s);
}

array cummax(const array& a, std::optional<int> axis, bool reverse, bool inclusive, const StreamOrDevice& s) {
  return scan(a, axis, reverse, inclusive, Scan::Max, a.dtype(), "cummax", s);
}

array cummin(const array& a, std::optional<int> axis, bool reverse, bool inclusive, const StreamOrDevice& s) {
  return scan(a, axis, reverse, inclusive, Scan::Min, a.dtype(), "cummin", s);
}

array logcumsumexp(const array& a, std::optional<int> axis, bool reverse, bool inclusive, const StreamOrDevice& s) {
  return scan(a, axis, reverse, inclusive, Scan::LogAddExp, to_inexact(a.dtype()), "logcumsumexp", s);
}

}  // namespace ember
