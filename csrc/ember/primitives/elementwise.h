// Elementwise primitives. Each op is a tag type (its name); Unary<Tag> /
// Binary<Tag> are the primitive classes; the scalar kernel of each tag is in
// backend/cpu/functors.h and its transform rules in primitives/elementwise.cpp.
// Adding an op: a line in the list below, a functor, a builder in
// ops/elementwise.cpp, a binding, rules (see CONTRIBUTING.md).
#pragma once

#include "ember/primitive.h"

namespace ember {

#define EMBER_UNARY_OPS(X)                                                                      \
  X(Abs) X(Negative) X(Sign) X(Sqrt) X(Rsqrt) X(Square) X(Exp) X(Expm1) X(Log) X(Log2) X(Log10) \
  X(Log1p) X(Sin) X(Cos) X(Tan) X(Sinh) X(Cosh) X(Tanh) X(ArcSin) X(ArcCos) X(ArcTan)          \
  X(ArcSinh) X(ArcCosh) X(ArcTanh) X(Sigmoid) X(Erf) X(ErfInv) X(Floor) X(Ceil) X(Round)       \
  X(LogicalNot) X(BitwiseInvert) X(IsNaN) X(IsInf) X(IsPosInf) X(IsNegInf) X(Real) X(Imag)     \
  X(Conjugate)

#define EMBER_BINARY_OPS(X)                                                                     \
  X(Add) X(Subtract) X(Multiply) X(Divide) X(Remainder) X(FloorDivide) X(Power) X(Maximum)      \
  X(Minimum) X(Equal) X(NotEqual) X(Less) X(LessEqual) X(Greater) X(GreaterEqual) X(LogicalAnd) \
  X(LogicalOr) X(BitwiseAnd) X(BitwiseOr) X(BitwiseXor) X(LeftShift) X(RightShift) X(ArcTan2)  \
  X(LogAddExp) X(NaNEqual)

namespace op {
#define EMBER_TAG(N) \
  struct N {         \
    static constexpr const char* name = #N; \
  };
EMBER_UNARY_OPS(EMBER_TAG)
EMBER_BINARY_OPS(EMBER_TAG)
#undef EMBER_TAG
}  // namespace op

template <class Op>
class Unary final : public Primitive {
 public:
  using Primitive::Primitive;
  const char* name() const override { return Op::name; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_elementwise() const override { return true; }
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const Unary*>(&o); }
};

template <class Op>
class Binary final : public Primitive {
 public:
  using Primitive::Primitive;
  const char* name() const override { return Op::name; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_elementwise() const override { return true; }
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const Binary*>(&o); }
};

// where(cond, x, y)
class Select final : public Primitive {
 public:
  using Primitive::Primitive;
  const char* name() const override { return "Select"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_elementwise() const override { return true; }
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const Select*>(&o); }
};

// Conversion to `dtype` (NumPy's casting: float -> int truncates).
class AsType final : public Primitive {
 public:
  AsType(Stream s, Dtype dtype) : Primitive(s), dtype_(dtype) {}
  const char* name() const override { return "AsType"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  EMBER_TRANSFORM_RULES
  bool is_elementwise() const override { return true; }
  bool is_equivalent(const Primitive& o) const override {
    auto p = dynamic_cast<const AsType*>(&o);
    return p && p->dtype_ == dtype_;
  }
  Dtype dtype() const { return dtype_; }

 private:
  Dtype dtype_;
};

}  // namespace ember
