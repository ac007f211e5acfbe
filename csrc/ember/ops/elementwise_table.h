// The public elementwise functions, one line each. ops.h expands the tables
// for the declarations, ops/elementwise.cpp for the definitions, and the
// Python bindings may expand them for their m.def lines (ops.h includes this
// header).
//
//   X(fn, Prim, In, Sig)
//     fn    the function: array fn(const array& a[, const array& b], stream)
//     Prim  the primitive it builds (op::Prim, primitives/elementwise.h),
//           empty for a composite; the output dtype is the primitive's rule
//     In    how fn treats its inputs before building the node; Custom: fn
//           is written out by hand in ops/elementwise.cpp
//     Sig   MLX's Python signature: PosOnly (a, /, *, stream), Plain
//           (a, stream), KwOnly (a, *, stream)
//
// Unary In rules:
//   Same           the input as it is
//   Float          integers and bool computed in float32 (to_inexact)
//   RealFloat      Float, complex input rejected
//   Rounding       non-float input returned as is, complex rejected
//   Predicate      a non-float input gives all false
//   ComplexOnly    a non-complex input returned as is
// Binary In rules (the inputs promoted to one dtype first):
//   Arith          the promoted dtype
//   RealArith      Arith, complex rejected
//   Float          the promoted dtype made inexact
//   RealFloat      Float, complex rejected
//   Bitwise        integer and bool only
//   Shift          Bitwise, bool computed as uint8
//   Logical        both inputs as bool
#pragma once

// clang-format off
#define EMBER_UNARY_FUNCTIONS(X)                              \
  X(abs,            Abs,           Custom,        PosOnly)    \
  X(negative,       Negative,      Custom,        PosOnly)    \
  X(sign,           Sign,          Custom,        PosOnly)    \
  X(sqrt,           Sqrt,          Float,         PosOnly)    \
  X(rsqrt,          Rsqrt,         Float,         PosOnly)    \
  X(square,         Square,        Same,          PosOnly)    \
  X(reciprocal,     ,              Custom,        PosOnly)    \
  X(exp,            Exp,           Float,         PosOnly)    \
  X(expm1,          Expm1,         RealFloat,     PosOnly)    \
  X(log,            Log,           Float,         PosOnly)    \
  X(log2,           Log2,          Float,         PosOnly)    \
  X(log10,          Log10,         Float,         PosOnly)    \
  X(log1p,          Log1p,         Float,         PosOnly)    \
  X(sin,            Sin,           Float,         PosOnly)    \
  X(cos,            Cos,           Float,         PosOnly)    \
  X(tan,            Tan,           Float,         PosOnly)    \
  X(sinh,           Sinh,          Float,         PosOnly)    \
  X(cosh,           Cosh,          Float,         PosOnly)    \
  X(tanh,           Tanh,          Float,         PosOnly)    \
  X(arcsin,         ArcSin,        Float,         PosOnly)    \
  X(arccos,         ArcCos,        Float,         PosOnly)    \
  X(arctan,         ArcTan,        Float,         PosOnly)    \
  X(arcsinh,        ArcSinh,       Float,         PosOnly)    \
  X(arccosh,        ArcCosh,       Float,         PosOnly)    \
  X(arctanh,        ArcTanh,       Float,         PosOnly)    \
  X(sigmoid,        Sigmoid,       RealFloat,     PosOnly)    \
  X(erf,            Erf,           RealFloat,     PosOnly)    \
  X(erfinv,         ErfInv,        RealFloat,     PosOnly)    \
  X(floor,          Floor,         Rounding,      PosOnly)    \
  X(ceil,           Ceil,          Rounding,      PosOnly)    \
  X(trunc,          ,              Custom,        PosOnly)    \
  X(logical_not,    LogicalNot,    Same,          PosOnly)    \
  X(bitwise_invert, BitwiseInvert, Custom,        Plain)      \
  X(isnan,          IsNaN,         Predicate,     Plain)      \
  X(isinf,          IsInf,         Predicate,     Plain)      \
  X(isposinf,       IsPosInf,      Predicate,     Plain)      \
  X(isneginf,       IsNegInf,      Predicate,     Plain)      \
  X(isfinite,       ,              Custom,        Plain)      \
  X(real,           Real,          ComplexOnly,   PosOnly)    \
  X(imag,           Imag,          Custom,        PosOnly)    \
  X(conjugate,      Conjugate,     ComplexOnly,   KwOnly)     \
  X(degrees,        ,              Custom,        PosOnly)    \
  X(radians,        ,              Custom,        PosOnly)

#define EMBER_BINARY_FUNCTIONS(X)                             \
  X(add,            Add,           Arith,         Plain)      \
  X(subtract,       Subtract,      Arith,         Plain)      \
  X(multiply,       Multiply,      Arith,         Plain)      \
  X(divide,         Divide,        Float,         Plain)      \
  X(remainder,      Remainder,     RealArith,     Plain)      \
  X(floor_divide,   FloorDivide,   RealArith,     Plain)      \
  X(power,          Power,         Arith,         PosOnly)    \
  X(maximum,        Maximum,       Arith,         PosOnly)    \
  X(minimum,        Minimum,       Arith,         PosOnly)    \
  X(equal,          Equal,         Arith,         Plain)      \
  X(not_equal,      NotEqual,      Arith,         Plain)      \
  X(less,           Less,          Arith,         Plain)      \
  X(less_equal,     LessEqual,     Arith,         Plain)      \
  X(greater,        Greater,       Arith,         Plain)      \
  X(greater_equal,  GreaterEqual,  Arith,         Plain)      \
  X(logical_and,    LogicalAnd,    Logical,       PosOnly)    \
  X(logical_or,     LogicalOr,     Logical,       PosOnly)    \
  X(logical_xor,    NotEqual,      Logical,       PosOnly)    \
  X(bitwise_and,    BitwiseAnd,    Bitwise,       Plain)      \
  X(bitwise_or,     BitwiseOr,     Bitwise,       Plain)      \
  X(bitwise_xor,    BitwiseXor,    Bitwise,       Plain)      \
  X(left_shift,     LeftShift,     Shift,         Plain)      \
  X(right_shift,    RightShift,    Shift,         Plain)      \
  X(arctan2,        ArcTan2,       RealFloat,     PosOnly)    \
  X(logaddexp,      LogAddExp,     Float,         PosOnly)
// clang-format on
