// Bindings of ember/ops/sort.h with MLX's argument names, and the array
// methods cumsum / cumprod / cummax / cummin / logcumsumexp.
#include "bindings.h"

namespace ember::py_bind {

namespace {


using ScanFn = array (*)(const array&, std::optional<int>, bool, bool, const StreamOrDevice&);
array cummax_fn(const array& a, std::optional<int> axis, bool rev, bool inc, const StreamOrDevice& s) {
  return cummax(a, axis, rev, inc, s);
}
array cummin_fn(const array& a, std::optional<int> axis, bool rev, bool inc, const StreamOrDevice& s) {
  return cummin(a, axis, rev, inc, s);
}
array logcumsumexp_fn(const array& a, std::optional<int> axis, bool rev, bool inc, const StreamOrDevice& s) {
  return logcumsumexp(a, axis, rev, inc, s);
}
array cumsum_fn(const array& a, std::optional<int> axis, bool rev, bool inc, const StreamOrDevice& s) {
  return cumsum(a, axis, rev, inc, std::nullopt, s);
}
array cumprod_fn(const array& a, std::optional<int> axis, bool rev, bool inc, const StreamOrDevice& s) {
  return cumprod(a, axis, rev, inc, std::nullopt, s);
}
}  // namespace

void init_ops_sort(py::module_& m) {
  // ---- sorting and selection ----
  m.def("sort", [](const ArrayLike& a, std::optional<int> axis, StreamOrDevice s) {
        return sort(a, axis, s);
      }, "a"_a, py::pos_only(), "axis"_a = -1, py::kw_only(), kStream,
      "Sorted copy of the array along an axis (None: the flattened array); NaN sorts last.");
  m.def("argsort", [](const ArrayLike& a, std::optional<int> axis, StreamOrDevice s) {
        return argsort(a, axis, s);
      }, "a"_a, py::pos_only(), "axis"_a = -1, py::kw_only(), kStream,
      "Indices (uint32) that sort the array along an axis; ties keep their order (stable).");
  m.def("partition", [](const ArrayLike& a, int kth, std::optional<int> axis, StreamOrDevice s) {
        return partition(a, kth, axis, s);
      }, "a"_a, py::pos_only(), "kth"_a, "axis"_a = -1, py::kw_only(), kStream,
      "Copy with the kth element in its sorted place, smaller ones before it and larger ones after.");
  m.def("argpartition", [](const ArrayLike& a, int kth, std::optional<int> axis, StreamOrDevice s) {
        return argpartition(a, kth, axis, s);
      }, "a"_a, py::pos_only(), "kth"_a, "axis"_a = -1, py::kw_only(), kStream,
      "Indices (uint32) that partition the array around its kth element.");
  m.def("topk", [](const ArrayLike& a, int k, std::optional<int> axis, StreamOrDevice s) {
        return topk(a, k, axis, s);
      }, "a"_a, py::pos_only(), "k"_a, "axis"_a = -1, py::kw_only(), kStream,
      "The k largest elements along an axis (None: the flattened array), in ascending order.");
  m.def("searchsorted", [](const ArrayLike& sorted, const ArrayLike& values, const std::string& side,
                           StreamOrDevice s) {
        auto [a, v] = promote(sorted, values);
        return searchsorted(a, v, side, s);
      }, "sorted_sequence"_a, "values"_a, py::pos_only(), "side"_a = "left", py::kw_only(), kStream,
      "Indices (uint32) where `values` would be inserted to keep the 1-D `sorted_sequence` sorted.");
  m.def("unique", [](const ArrayLike& a, int64_t size, bool return_index, bool return_inverse, bool return_counts,
                     const std::optional<ArrayLike>& fill_value, StreamOrDevice s) {
        const array& x = a;
        return as_tuple(unique(x, size, return_index, return_inverse, return_counts, opt_next_to(fill_value, x), s),
                        /*single=*/true);
      }, "a"_a, py::pos_only(), "size"_a, "return_index"_a = false, "return_inverse"_a = false,
      "return_counts"_a = false, "fill_value"_a = py::none(), py::kw_only(), kStream,
      "Sorted unique elements of the flattened array, padded with fill_value or truncated to `size`; "
      "optionally with the first-occurrence index, the inverse and the counts.");

  // ---- order statistics and counting reductions ----
  m.def("median", [](const ArrayLike& a, const AxesArg& axis, bool keepdims, StreamOrDevice s) {
        return median(a, axis, keepdims, s);
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), "keepdims"_a = false, py::kw_only(), kStream,
      "Median over the given axes (None: all); NaN if the reduced values hold one.");
  m.def("minmax", [](const ArrayLike& a, const AxesArg& axis, bool keepdims, StreamOrDevice s) {
        return minmax(a, axis, keepdims, s);
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), "keepdims"_a = false, py::kw_only(), kStream,
      "(min, max) over the given axes.");
  // MLX documents axis as keyword-only but accepts it positionally.
  m.def("count_nonzero", [](const ArrayLike& a, const AxesArg& axis, bool keepdims, StreamOrDevice s) {
        return count_nonzero(a, axis, keepdims, s);
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), py::kw_only(), "keepdims"_a = false, kStream,
      "Number of non-zero elements (int32) over the given axes.");

  // ---- scans ----
  m.def("cumsum", [](const ArrayLike& a, std::optional<int> axis, bool reverse, bool inclusive, std::optional<Dtype> dtype,
                     StreamOrDevice s) {
        return cumsum(a, axis, reverse, inclusive, dtype, s);
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), py::kw_only(), "reverse"_a = false, "inclusive"_a = true,
      "dtype"_a = py::none(), kStream,
      "Cumulative sum along an axis (None: the flattened array); bool counts in int32.");
  m.def("cumprod", [](const ArrayLike& a, std::optional<int> axis, bool reverse, bool inclusive, std::optional<Dtype> dtype,
                      StreamOrDevice s) {
        return cumprod(a, axis, reverse, inclusive, dtype, s);
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), py::kw_only(), "reverse"_a = false, "inclusive"_a = true,
      "dtype"_a = py::none(), kStream, "Cumulative product along an axis (None: the flattened array).");
  // MLX's cumulative_sum / cumulative_prod are the same functions.
  m.attr("cumulative_sum") = m.attr("cumsum");
  m.attr("cumulative_prod") = m.attr("cumprod");
  m.def("cummax", [](const ArrayLike& a, std::optional<int> axis, bool reverse, bool inclusive, StreamOrDevice s) {
        return cummax(a, axis, reverse, inclusive, s);
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), py::kw_only(), "reverse"_a = false, "inclusive"_a = true,
      kStream, "Cumulative maximum along an axis (None: the flattened array); NaN propagates.");
  m.def("cummin", [](const ArrayLike& a, std::optional<int> axis, bool reverse, bool inclusive, StreamOrDevice s) {
        return cummin(a, axis, reverse, inclusive, s);
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), py::kw_only(), "reverse"_a = false, "inclusive"_a = true,
      kStream, "Cumulative minimum along an axis (None: the flattened array); NaN propagates.");
  m.def("logcumsumexp", [](const ArrayLike& a, std::optional<int> axis, bool reverse, bool inclusive, StreamOrDevice s) {
        return logcumsumexp(a, axis, reverse, inclusive, s);
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), py::kw_only(), "reverse"_a = false, "inclusive"_a = true,
      kStream, "Cumulative log(sum(exp)) along an axis (None: the flattened array).");

  // ---- array methods (MLX's: no dtype argument) ----
  py::object cls = py::type::of<array>();
  auto method = [&](const char* name, ScanFn fn, const char* doc) {
    cls.attr(name) = py::cpp_function(
        [fn](const array& self, std::optional<int> axis, bool reverse, bool inclusive, StreamOrDevice s) {
          return fn(self, axis, reverse, inclusive, s);
        },
        py::name(name), py::is_method(cls), py::sibling(py::getattr(cls, name, py::none())), "axis"_a = py::none(),
        py::kw_only(), "reverse"_a = false, "inclusive"_a = true, kStream, doc);
  };
  method("cumsum", cumsum_fn, "See :func:`cumsum`.");
  method("cumprod", cumprod_fn, "See :func:`cumprod`.");
  method("cummax", cummax_fn, "See :func:`cummax`.");
  method("cummin", cummin_fn, "See :func:`cummin`.");
  method("logcumsumexp", logcumsumexp_fn, "See :func:`logcumsumexp`.");
}

}  // namespace ember::py_bind
