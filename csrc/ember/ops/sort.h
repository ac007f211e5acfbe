// Sorting, selection and scans: sort, argsort, partition, argpartition, topk,
// searchsorted, unique, median, minmax, count_nonzero, cumsum & co.
//
// Ordering is NumPy's (NaN last, -0 == 0, complex lexicographic). `axis`
// std::nullopt means "the flattened array" wherever MLX accepts None.
#pragma once

#include "ember/ops.h"

namespace ember {

#define EMBER_S const StreamOrDevice& s = {}

// ---- sorting and selection ----
array sort(const array& a, std::optional<int> axis = -1, EMBER_S);
array argsort(const array& a, std::optional<int> axis = -1, EMBER_S);  // uint32, stable
array partition(const array& a, int kth, std::optional<int> axis = -1, EMBER_S);
array argpartition(const array& a, int kth, std::optional<int> axis = -1, EMBER_S);
// The k largest elements along the axis (ascending order).
array topk(const array& a, int k, std::optional<int> axis = -1, EMBER_S);
// Insertion indices (uint32) of `values` in the 1-D `sorted`; side "left"
// or "right".
array searchsorted(const array& sorted, const array& values, const std::string& side = "left", EMBER_S);
// Sorted unique elements of the flattened array, padded with fill_value (or
// the first unique element) / truncated to `size`. Returns {values, index,
// inverse, counts} restricted to the requested ones (values always first).
std::vector<array> unique(const array& a, int64_t size, bool return_index = false, bool return_inverse = false,
                          bool return_counts = false, const std::optional<array>& fill_value = {}, EMBER_S);

// ---- order statistics and counting reductions ----
array median(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, EMBER_S);
std::pair<array, array> minmax(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, EMBER_S);
array count_nonzero(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, EMBER_S);  // int32

// ---- scans (axis nullopt: over the flattened array) ----
array cumsum(const array& a, std::optional<int> axis = {}, bool reverse = false, bool inclusive = true,
             std::optional<Dtype> dtype = {}, EMBER_S);
array cumprod(const array& a, std::optional<int> axis = {}, bool reverse = false, bool inclusive = true,
              std::optional<Dtype> dtype = {}, EMBER_S);
array cummax(const array& a, std::optional<int> axis = {}, bool reverse = false, bool inclusive = true, EMBER_S);
array cummin(const array& a, std::optional<int> axis = {}, bool reverse = false, bool inclusive = true, EMBER_S);
array logcumsumexp(const array& a, std::optional<int> axis = {}, bool reverse = false, bool inclusive = true,
                   EMBER_S);

#undef EMBER_S

}  // namespace ember
