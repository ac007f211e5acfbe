// Shape and layout primitives. Views (Reshape of a dense input, Transpose,
// Broadcast, Slice, AsStrided) share the input's buffer; the rest copy.
// Their vjp/jvp/vmap rules are in primitives/shape.cpp. A vmap rule sees
// only the (batched) inputs, so a primitive whose output shape or dtype does
// not follow from its inputs and parameters keeps it (Reshape, Broadcast,
// AsStrided, Full, Arange, Pad, View). An Arange built without its length
// and dtype has no vmap rule (it has no inputs, so vmap never needs one).
#pragma once

#include <optional>

#include "ember/primitive.h"

namespace ember {

#define EMBER_SIMPLE_PRIM(NAME)                                                                 \
  const char* name() const override { return #NAME; }                                            \
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;

class Reshape final : public Primitive {
 public:
  Reshape(Stream s, Shape shape) : Primitive(s), shape_(std::move(shape)) {}
  EMBER_SIMPLE_PRIM(Reshape)
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override {
    auto p = dynamic_cast<const Reshape*>(&o);
    return p && p->shape_ == shape_;
  }

 private:
  Shape shape_;  // the output shape
};

class Transpose final : public Primitive {
 public:
  Transpose(Stream s, std::vector<int> axes) : Primitive(s), axes_(std::move(axes)) {}
  EMBER_SIMPLE_PRIM(Transpose)
  EMBER_TRANSFORM_RULES
  bool is_view() const override { return true; }
  bool is_equivalent(const Primitive& o) const override;
  const std::vector<int>& axes() const { return axes_; }
  // a matrix transpose: the last two axes swapped, the others kept
  bool swaps_last_two() const {
    const int n = static_cast<int>(axes_.size());
    if (n < 2) return false;
    for (int d = 0; d + 2 < n; ++d) {
      if (axes_[d] != d) return false;
    }
    return axes_[n - 2] == n - 1 && axes_[n - 1] == n - 2;
  }

 private:
  std::vector<int> axes_;
};

class Broadcast final : public Primitive {
 public:
  Broadcast(Stream s, Shape shape) : Primitive(s), shape_(std::move(shape)) {}
  EMBER_SIMPLE_PRIM(Broadcast)
  EMBER_TRANSFORM_RULES
  bool is_view() const override { return true; }
  bool is_equivalent(const Primitive& o) const override {
    auto p = dynamic_cast<const Broadcast*>(&o);
    return p && p->shape_ == shape_;
  }

 private:
  Shape shape_;  // the output shape
};

class Slice final : public Primitive {
 public:
  Slice(Stream s, Shape start, Shape stop, Shape step)
      : Primitive(s), start_(std::move(start)), stop_(std::move(stop)), step_(std::move(step)) {}
  EMBER_SIMPLE_PRIM(Slice)
  EMBER_TRANSFORM_RULES
  bool is_view() const override { return true; }
  bool is_equivalent(const Primitive& o) const override;
  const Shape& start() const { return start_; }
  const Shape& stop() const { return stop_; }
  const Shape& step() const { return step_; }

 private:
  Shape start_, stop_, step_;
};

class AsStrided final : public Primitive {
 public:
  // Output element j reads element offset + sum_i j_i * strides[i] of the
  // input in row-major order (reads may overlap).
  AsStrided(Stream s, Shape shape, Strides strides, int64_t offset)
      : Primitive(s), shape_(std::move(shape)), strides_(std::move(strides)), offset_(offset) {}
  EMBER_SIMPLE_PRIM(AsStrided)
  EMBER_TRANSFORM_RULES
  bool is_view() const override { return true; }
  bool is_equivalent(const Primitive& o) const override;
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t offset() const { return offset_; }

 private:
  Shape shape_;  // the output shape
  Strides strides_;
  int64_t offset_;
};

// Dense copy (row-major, or column-major when allowed and already so).
class Contiguous final : public Primitive {
 public:
  Contiguous(Stream s, bool allow_col_major) : Primitive(s), allow_col_(allow_col_major) {}
  EMBER_SIMPLE_PRIM(Contiguous)
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  bool allow_col_major() const { return allow_col_; }

 private:
  bool allow_col_;
};

// Materializes input 0 broadcast to the output shape and dtype (full, zeros...).
// `a` is an unevaluated Full of zeros (its fill value an evaluated
// one-element array whose bits are all zero): what zeros_like builds, which
// rules that sum cotangents may skip.
bool known_zeros(const array& a);
// An evaluated one-element array whose bits are all zero (+0, not -0.0).
bool zero_bits(const array& v);

class Full final : public Primitive {
 public:
  Full(Stream s, Shape shape, Dtype dtype) : Primitive(s), shape_(std::move(shape)), dtype_(dtype) {}
  EMBER_SIMPLE_PRIM(Full)
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override {
    auto p = dynamic_cast<const Full*>(&o);
    return p && p->shape_ == shape_ && p->dtype_ == dtype_;
  }

 private:
  Shape shape_;  // the output shape and dtype
  Dtype dtype_;
};

// start + i * step for i < n (no inputs).
class Arange final : public Primitive {
 public:
  Arange(Stream s, double start, double step) : Primitive(s), start_(start), step_(step) {}
  Arange(Stream s, double start, double step, int64_t n, Dtype dtype)
      : Primitive(s), start_(start), step_(step), n_(n), dtype_(dtype) {}
  EMBER_SIMPLE_PRIM(Arange)
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  double start() const { return start_; }
  double step() const { return step_; }

 private:
  double start_, step_;
  std::optional<int64_t> n_;  // the output length and dtype
  Dtype dtype_ = Dtype::float32;
};

class Concatenate final : public Primitive {
 public:
  Concatenate(Stream s, int axis) : Primitive(s), axis_(axis) {}
  EMBER_SIMPLE_PRIM(Concatenate)
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  int axis() const { return axis_; }

 private:
  int axis_;
};

// Constant padding: input 0 placed at `low` inside the output, the rest
// filled with input 1 (a scalar).
class Pad final : public Primitive {
 public:
  Pad(Stream s, Shape low, Shape high) : Primitive(s), low_(std::move(low)), high_(std::move(high)) {}
  EMBER_SIMPLE_PRIM(Pad)
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override;
  // two pads of zeros around blocks side by side along one axis (the
  // slices' cotangents of a split's pieces): one Pad of their Concatenate
  std::optional<array> sum_with(const array& mine, const array& other) const override;
  const Shape& low() const { return low_; }
  const Shape& high() const { return high_; }

 private:
  Shape low_, high_;  // padding before and after the input, per dim
};

// Reinterprets the (dense) bytes of input 0 as the output's dtype. Not
// differentiable (MLX has no derivative either): vjp/jvp raise.
class View final : public Primitive {
 public:
  View(Stream s, Dtype dtype) : Primitive(s), dtype_(dtype) {}
  EMBER_SIMPLE_PRIM(View)
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
  bool is_view() const override { return true; }
  bool is_equivalent(const Primitive& o) const override {
    auto p = dynamic_cast<const View*>(&o);
    return p && p->dtype_ == dtype_;
  }

 private:
  Dtype dtype_;  // the output dtype
};

}  // namespace ember
