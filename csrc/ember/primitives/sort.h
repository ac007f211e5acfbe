// Sorting, selection and scan primitives. Each works along one axis of its
// input (the op layer flattens first for axis=None); kernels live in
// backend/cpu/sort.cpp, the transform rules in primitives/sort.cpp.
//
// Ordering everywhere is NumPy's: NaN sorts last, -0 == 0, complex numbers
// lexicographically with NaN classes last ([R+Rj, R+nanj, nan+Rj, nan+nanj]).
// Sort and ArgSort are stable. Partition/ArgPartition are deterministic:
// elements before the kth sorted value keep their input order, then the
// elements equal to it, then the larger ones (a valid partition).
#pragma once

#include "ember/primitive.h"

namespace ember {

class Sorting final : public Primitive {
 public:
  // Sort: sorted values; ArgSort: stable uint32 indices; Partition /
  // ArgPartition at `param` = kth (non-negative); TopK: the `param` largest
  // values in ascending order (output axis of size param).
  enum Kind { Sort, ArgSort, Partition, ArgPartition, TopK };
  Sorting(Stream s, Kind k, int axis, int64_t param = 0) : Primitive(s), kind_(k), axis_(axis), param_(param) {}
  const char* name() const override;  // "Sort", "ArgSort", ...
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;
  EMBER_TRANSFORM_RULES
  Kind kind() const { return kind_; }
  int axis() const { return axis_; }
  int64_t param() const { return param_; }

 private:
  Kind kind_;
  int axis_;
  int64_t param_;
};

// Cumulative sum / product / max / min / log-sum-exp along an axis. Input and
// output have the same dtype (the op layer casts first); half types
// accumulate in float32, float32 sums and products in float64.
class Scan final : public Primitive {
 public:
  enum Kind { Sum, Prod, Max, Min, LogAddExp };
  Scan(Stream s, Kind k, int axis, bool reverse, bool inclusive)
      : Primitive(s), kind_(k), axis_(axis), reverse_(reverse), inclusive_(inclusive) {}
  const char* name() const override;
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;
  EMBER_TRANSFORM_RULES
  Kind kind() const { return kind_; }
  int axis() const { return axis_; }
  bool reverse() const { return reverse_; }
  bool inclusive() const { return inclusive_; }

 private:
  Kind kind_;
  int axis_;
  bool reverse_, inclusive_;
};

// Insertion points of inputs[1] (any shape) in the sorted 1-D inputs[0]
// (same dtype); uint32 output of inputs[1]'s shape.
class SearchSorted final : public Primitive {
 public:
  SearchSorted(Stream s, bool right) : Primitive(s), right_(right) {}
  const char* name() const override { return "SearchSorted"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
  bool right() const { return right_; }

 private:
  bool right_;
};

// Sorted unique values of the 1-D inputs[0] with a static output size.
// Outputs: values (size, input dtype), index of first occurrence (size,
// uint32), inverse (input size, uint32), counts (size, int32). inputs[1],
// when present, is the one-element fill value (input dtype); otherwise the
// first unique value fills. NaNs never compare equal (each is its own value).
class Unique final : public Primitive {
 public:
  Unique(Stream s, int64_t size) : Primitive(s), size_(size) {}
  const char* name() const override { return "Unique"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;
  EMBER_TRANSFORM_RULES

 private:
  int64_t size_;
};

}  // namespace ember
