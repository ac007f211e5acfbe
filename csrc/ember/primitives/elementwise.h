// Elementwise primitives. Each op is a tag type (its name); Unary<Tag> /
// Binary<Tag> are the primitive classes; the scalar kernel of each tag is in
// backend/cpu/functors.h and its transform rules in primitives/elementwise.cpp.
// Adding an op: a line in a table below (and, for a public function, in
// ops/elementwise_table.h), a functor, rules (see CONTRIBUTING.md).
#pragma once

#include "ember/primitive.h"

namespace ember {

// The primitives, one line each: X(Name, Out), Out the output dtype rule
// for inputs of dtype `in` (ElementwiseOut below). The op layer casts the
// inputs to the dtype the kernel computes in; the rule gives the rest.
// Expanded for the tags, the kernels' instantiations and the rules'.
// clang-format off
#define EMBER_UNARY_OPS(X)                                                                  \
  X(Abs, Real) X(Negative, Same) X(Sign, Same) X(Sqrt, Same) X(Rsqrt, Same) X(Square, Same)  \
  X(Exp, Same) X(Expm1, Same) X(Log, Same) X(Log2, Same) X(Log10, Same) X(Log1p, Same)     \
  X(Sin, Same) X(Cos, Same) X(Tan, Same) X(Sinh, Same) X(Cosh, Same) X(Tanh, Same)         \
  X(ArcSin, Same) X(ArcCos, Same) X(ArcTan, Same) X(ArcSinh, Same) X(ArcCosh, Same)        \
  X(ArcTanh, Same) X(Sigmoid, Same) X(Erf, Same) X(ErfInv, Same) X(Floor, Same)            \
  X(Ceil, Same) X(Round, Same) X(LogicalNot, Bool) X(BitwiseInvert, Same) X(IsNaN, Bool)   \
  X(IsInf, Bool) X(IsPosInf, Bool) X(IsNegInf, Bool) X(Real, Real) X(Imag, Real)           \
  X(Conjugate, Same) X(ToFP8, UInt8)

#define EMBER_BINARY_OPS(X)                                                                 \
  X(Add, Same) X(Subtract, Same) X(Multiply, Same) X(Divide, Same) X(Remainder, Same)      \
  X(FloorDivide, Same) X(Power, Same) X(Maximum, Same) X(Minimum, Same) X(Equal, Bool)     \
  X(NotEqual, Bool) X(Less, Bool) X(LessEqual, Bool) X(Greater, Bool) X(GreaterEqual, Bool) \
  X(LogicalAnd, Bool) X(LogicalOr, Bool) X(BitwiseAnd, Same) X(BitwiseOr, Same)             \
  X(BitwiseXor, Same) X(LeftShift, Same) X(RightShift, Same) X(ArcTan2, Same)               \
  X(LogAddExp, Same) X(NaNEqual, Bool)
// clang-format on

// Same: the inputs' dtype; Bool: bool; Real: the real type of a complex
// input (complex64 -> float32), a real input's own dtype; UInt8: uint8 (the
// fp8 codes of ToFP8).
enum class ElementwiseOut { Same, Bool, Real, UInt8 };

// The output dtype of an elementwise primitive on inputs of dtype `in`: the
// one rule that the ops and the rules' rebuilt nodes (vmap) both use.
inline Dtype elementwise_out_dtype(ElementwiseOut rule, Dtype in) {
  switch (rule) {
    case ElementwiseOut::Bool: return Dtype::bool_;
    case ElementwiseOut::Real: return is_complex(in) ? Dtype::float32 : in;
    case ElementwiseOut::UInt8: return Dtype::uint8;
    case ElementwiseOut::Same: break;
  }
  return in;
}

namespace op {
#define EMBER_TAG(N, OUT)                                           \
  struct N {                                                        \
    static constexpr const char* name = #N;                         \
    static constexpr ElementwiseOut out = ElementwiseOut::OUT;      \
  };
EMBER_UNARY_OPS(EMBER_TAG)
EMBER_BINARY_OPS(EMBER_TAG)
#undef EMBER_TAG
}  // namespace op

template <class Op>
class Unary final : public Primitive {
 public:
  using Primitive::Primitive;
  // The output dtype for inputs of dtype `in` (the op layer's and vmap's).
  static Dtype out_dtype(Dtype in) { return elementwise_out_dtype(Op::out, in); }
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
  // The output dtype for inputs of dtype `in` (the op layer's and vmap's).
  static Dtype out_dtype(Dtype in) { return elementwise_out_dtype(Op::out, in); }
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

// fp8 codes (uint8 holding e4m3fn values, as Unary<op::ToFP8> writes them)
// decoded to the real floating dtype `dtype` (from_fp8).
class FromFP8 final : public Primitive {
 public:
  FromFP8(Stream s, Dtype dtype) : Primitive(s), dtype_(dtype) {}
  const char* name() const override { return "FromFP8"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  // vjp/jvp: none; the input is integer, so the transforms never ask for one.
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
  bool is_elementwise() const override { return true; }
  bool is_equivalent(const Primitive& o) const override {
    auto p = dynamic_cast<const FromFP8*>(&o);
    return p && p->dtype_ == dtype_;
  }
  Dtype dtype() const { return dtype_; }

 private:
  Dtype dtype_;
};

}  // namespace ember
