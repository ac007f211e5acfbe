// Reductions over a set of axes (kept as size-1 dims in the output; the op
// layer squeezes them when keepdims is false), arg-reductions and softmax.
// Kernels are in backend/cpu/reduce.cpp, transform rules in
// primitives/reduce.cpp.
#pragma once

#include "ember/primitive.h"

namespace ember {

class Reduce final : public Primitive {
 public:
  enum Kind { Sum, Prod, Max, Min, And, Or };
  Reduce(Stream s, Kind k, std::vector<int> axes) : Primitive(s), kind_(k), axes_(std::move(axes)) {}
  const char* name() const override;
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  Kind kind() const { return kind_; }
  const std::vector<int>& axes() const { return axes_; }

 private:
  Kind kind_;
  std::vector<int> axes_;
};

class ArgReduce final : public Primitive {
 public:
  enum Kind { ArgMax, ArgMin };
  ArgReduce(Stream s, Kind k, int axis) : Primitive(s), kind_(k), axis_(axis) {}
  const char* name() const override { return kind_ == ArgMax ? "ArgMax" : "ArgMin"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  Kind kind() const { return kind_; }
  int axis() const { return axis_; }

 private:
  Kind kind_;
  int axis_;
};

// Softmax over the last axis (the op layer moves the axis there).
class Softmax final : public Primitive {
 public:
  Softmax(Stream s, bool precise) : Primitive(s), precise_(precise) {}
  const char* name() const override { return "Softmax"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  bool precise() const { return precise_; }

 private:
  bool precise_;
};

}  // namespace ember
