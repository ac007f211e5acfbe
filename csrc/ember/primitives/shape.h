// Shape and layout primitives. Views (Reshape of a dense input, Transpose,
// Broadcast, Slice, AsStrided) share the input's buffer; the rest copy.
#pragma once

#include "ember/primitive.h"

namespace ember {

#define EMBER_SIMPLE_PRIM(NAME)                                                                 \
  const char* name() const override { return #NAME; }                                            \
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;

class Reshape final : public Primitive {
 public:
  using Primitive::Primitive;
  EMBER_SIMPLE_PRIM(Reshape)
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const Reshape*>(&o); }
};

class Transpose final : public Primitive {
 public:
  Transpose(Stream s, std::vector<int> axes) : Primitive(s), axes_(std::move(axes)) {}
  EMBER_SIMPLE_PRIM(Transpose)
  bool is_view() const override { return true; }
  bool is_equivalent(const Primitive& o) const override;
  const std::vector<int>& axes() const { return axes_; }

 private:
  std::vector<int> axes_;
};

class Broadcast final : public Primitive {
 public:
  using Primitive::Primitive;
  EMBER_SIMPLE_PRIM(Broadcast)
  bool is_view() const override { return true; }
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const Broadcast*>(&o); }
};

class Slice final : public Primitive {
 public:
  Slice(Stream s, Shape start, Shape stop, Shape step)
      : Primitive(s), start_(std::move(start)), stop_(std::move(stop)), step_(std::move(step)) {}
  EMBER_SIMPLE_PRIM(Slice)
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
  AsStrided(Stream s, Strides strides, int64_t offset)
      : Primitive(s), strides_(std::move(strides)), offset_(offset) {}
  EMBER_SIMPLE_PRIM(AsStrided)
  bool is_view() const override { return true; }
  bool is_equivalent(const Primitive& o) const override;

 private:
  Strides strides_;
  int64_t offset_;
};

// Dense copy (row-major, or column-major when allowed and already so).
class Contiguous final : public Primitive {
 public:
  Contiguous(Stream s, bool allow_col_major) : Primitive(s), allow_col_(allow_col_major) {}
  EMBER_SIMPLE_PRIM(Contiguous)
  bool is_equivalent(const Primitive& o) const override;

 private:
  bool allow_col_;
};

// Materializes input 0 broadcast to the output shape and dtype (full, zeros...).
class Full final : public Primitive {
 public:
  using Primitive::Primitive;
  EMBER_SIMPLE_PRIM(Full)
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const Full*>(&o); }
};

class Arange final : public Primitive {
 public:
  Arange(Stream s, double start, double step) : Primitive(s), start_(start), step_(step) {}
  EMBER_SIMPLE_PRIM(Arange)
  bool is_equivalent(const Primitive& o) const override;

 private:
  double start_, step_;
};

class Concatenate final : public Primitive {
 public:
  Concatenate(Stream s, int axis) : Primitive(s), axis_(axis) {}
  EMBER_SIMPLE_PRIM(Concatenate)
  bool is_equivalent(const Primitive& o) const override;
  int axis() const { return axis_; }

 private:
  int axis_;
};

// Constant padding: input 0 placed at `low` inside the output, the rest
// filled with input 1 (a scalar).
class Pad final : public Primitive {
 public:
  Pad(Stream s, Shape low) : Primitive(s), low_(std::move(low)) {}
  EMBER_SIMPLE_PRIM(Pad)
  bool is_equivalent(const Primitive& o) const override;

 private:
  Shape low_;
};

// Reinterprets the (dense) bytes of input 0 as the output's dtype.
class View final : public Primitive {
 public:
  using Primitive::Primitive;
  EMBER_SIMPLE_PRIM(View)
  bool is_view() const override { return true; }
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const View*>(&o); }
};

}  // namespace ember
