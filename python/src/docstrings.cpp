// The docstrings of ember.core, in one table: qualified name -> text.
//
// A name is looked up from the module: "take", "linalg.inv", "array.sum"
// (an entry of the class's __dict__), "Stream". One text may serve several
// names (an array method shares its function's text). install_docstrings()
// runs last in module initialisation. For pybind11 functions it keeps
// pybind11's generated signature line(s) and replaces the rest of the doc
// (what the m.def gave); properties, classes and modules get __doc__.
#include "docstrings.h"

#include <Python.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

namespace py = pybind11;

namespace ember::py_bind {
namespace {

struct Entry {
  std::initializer_list<const char*> names;
  const char* text;
};

// The argument every op takes last.
#define EMBER_DOC_STREAM                                                                 \
  "    stream (Stream or Device, optional): where the op runs; a Device means that\n" \
  "        device's default stream. Default: None, the default stream of the\n"       \
  "        default device.\n"

// The array argument of the one-input element-wise ops.
#define EMBER_DOC_ARG_A "    a (array): input array; a scalar or a nested sequence is converted first.\n"

// The layout of a one-input element-wise op: body, Args, Returns, example.
#define EMBER_DOC_UNARY(body, returns, example) \
  body "\n\nArgs:\n" EMBER_DOC_ARG_A EMBER_DOC_STREAM "\nReturns:\n    array: " returns "\n" example

// The layout of a two-input element-wise op.
#define EMBER_DOC_BINARY(body, returns, example)                                             \
  body "\n\nThe operands broadcast against each other and their dtypes promote; a\n"          \
       "Python scalar is weakly typed (it takes the other operand's dtype when\n"            \
       "that dtype can represent it).\n\nArgs:\n"                                            \
       "    a (array): first operand (an array or a scalar).\n"                              \
       "    b (array): second operand (an array or a scalar).\n" EMBER_DOC_STREAM            \
       "\nReturns:\n    array: " returns "\n" example

// The arguments of the reductions.
#define EMBER_DOC_REDUCE_ARGS                                                                \
  "    a (array): input array.\n"                                                            \
  "    axis (int or sequence of int, optional): the axis or axes to reduce;\n"             \
  "        negative values count from the end. Default: None, every axis.\n"               \
  "    keepdims (bool): keep each reduced axis with length 1, so that the\n"               \
  "        result broadcasts against ``a``. Default: False.\n"

// The arguments of the scans.
#define EMBER_DOC_SCAN_ARGS                                                                  \
  "    a (array): input array.\n"                                                            \
  "    axis (int, optional): the axis to scan. Default: None, the flattened array.\n"      \
  "    reverse (bool): scan from the end of the axis towards its start.\n"                 \
  "        Default: False.\n"                                                                \
  "    inclusive (bool): if True, element ``i`` includes ``a[i]``; if False it\n"          \
  "        covers only the elements before it (the first is the identity).\n"              \
  "        Default: True.\n"

// The arguments shared by the one-axis transforms of the fft module.
#define EMBER_DOC_FFT1_ARGS                                                                  \
  "    n (int, optional): the length of the transform along ``axis``; the input\n"         \
  "        is cropped or zero-padded to it. Default: None, the axis' length.\n"            \
  "    axis (int): the axis to transform. Default: -1.\n"                                  \
  "    norm (str): the scaling: ``'backward'`` (none on the forward transform,\n"          \
  "        ``1/n`` on the inverse), ``'ortho'`` (``1/sqrt(n)`` on both) or\n"              \
  "        ``'forward'`` (``1/n`` on the forward transform, none on the inverse).\n"       \
  "        Default: ``'backward'``.\n"

// The arguments shared by the multi-axis transforms of the fft module: s
// (before axes) and norm (after it).
#define EMBER_DOC_FFT_S                                                                      \
  "    s (sequence of int, optional): the length of the transform along each of\n"         \
  "        ``axes`` (crop or zero-pad). Default: None, the axes' lengths.\n"
#define EMBER_DOC_FFT_NORM                                                                   \
  "    norm (str): the scaling, ``'backward'``, ``'ortho'`` or ``'forward'``, as\n"        \
  "        for :func:`fft`. Default: ``'backward'``.\n"

// The key argument of the samplers.
#define EMBER_DOC_KEY                                                                        \
  "    key (array, optional): a PRNG key from :func:`key` or :func:`split`.\n"             \
  "        Default: None, split from the global key (see :func:`seed`).\n"

const Entry kDocs[] = {
    // ---- element-wise: one input ----
    {{"abs", "array.abs"},
     EMBER_DOC_UNARY("Absolute value of each element.\n\n"
                     "For a complex input the result is the modulus, a real float array.",
                     "``|a|`` with the dtype of ``a`` (float32 for complex64).",
                     "\nExample:\n    >>> mx.abs(mx.array([-1.5, 2.0]))\n    array([1.5, 2], dtype=float32)\n")},
    {{"negative"},
     EMBER_DOC_UNARY("Negation of each element (``-a``).\n\n"
                     "Unsigned integers wrap around; a boolean input raises ValueError.",
                     "``-a`` with the dtype of ``a``.", "")},
    {{"positive"},
     EMBER_DOC_UNARY("Unary plus (``+a``): the input itself, element by element.",
                     "an array equal to ``a``, same dtype.", "")},
    {{"sign"},
     EMBER_DOC_UNARY("Sign of each element: -1, 0 or 1.\n\n"
                     "Booleans and unsigned integers give 0 or 1; for a complex input the\n"
                     "result is ``a / |a|`` (0 where ``a`` is 0).",
                     "the signs, with the dtype of ``a``.",
                     "\nExample:\n    >>> mx.sign(mx.array([-2, 0, 3]))\n    array([-1, 0, 1], dtype=int32)\n")},
    {{"square", "array.square"},
     EMBER_DOC_UNARY("Square of each element (``a * a``).", "``a ** 2`` with the dtype of ``a``.",
                     "\nExample:\n    >>> mx.square(mx.array([3]))\n    array([9], dtype=int32)\n")},
    {{"sqrt", "array.sqrt"},
     EMBER_DOC_UNARY("Square root of each element.\n\n"
                     "Integer and boolean inputs are computed in float32; negative real inputs\n"
                     "give NaN.",
                     "``sqrt(a)``, an inexact array.",
                     "\nExample:\n    >>> mx.sqrt(mx.array([4]))\n    array([2], dtype=float32)\n")},
    {{"rsqrt", "array.rsqrt"},
     EMBER_DOC_UNARY("Reciprocal square root of each element, ``1 / sqrt(a)``.\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "``1 / sqrt(a)``, an inexact array.", "")},
    {{"reciprocal", "array.reciprocal"},
     EMBER_DOC_UNARY("Reciprocal of each element, ``1 / a``.\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "``1 / a``, an inexact array.", "")},
    {{"exp", "array.exp"},
     EMBER_DOC_UNARY("Exponential of each element, ``e ** a``.\n\n"
                     "Integer and boolean inputs are computed in float32; complex inputs are\n"
                     "supported.",
                     "``exp(a)``, an inexact array.",
                     "\nExample:\n    >>> mx.exp(mx.array([0.0, 1.0]))\n    array([1, 2.71828], dtype=float32)\n")},
    {{"expm1"},
     EMBER_DOC_UNARY("``exp(a) - 1`` for each element, accurate also where ``a`` is close to 0.\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "``exp(a) - 1``, an inexact array.", "")},
    {{"log", "array.log"},
     EMBER_DOC_UNARY("Natural logarithm of each element.\n\n"
                     "Integer and boolean inputs are computed in float32; 0 gives -inf and a\n"
                     "negative real input NaN.",
                     "``ln(a)``, an inexact array.", "")},
    {{"log2", "array.log2"},
     EMBER_DOC_UNARY("Base-2 logarithm of each element.\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "``log2(a)``, an inexact array.",
                     "\nExample:\n    >>> mx.log2(mx.array([8.0]))\n    array([3], dtype=float32)\n")},
    {{"log10", "array.log10"},
     EMBER_DOC_UNARY("Base-10 logarithm of each element.\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "``log10(a)``, an inexact array.", "")},
    {{"log1p", "array.log1p"},
     EMBER_DOC_UNARY("``log(1 + a)`` for each element, accurate also where ``a`` is close to 0.\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "``log(1 + a)``, an inexact array.", "")},
    {{"sin", "array.sin"},
     EMBER_DOC_UNARY("Sine of each element (in radians).\n\n"
                     "Integer and boolean inputs are computed in float32; complex inputs are\n"
                     "supported.",
                     "``sin(a)``, an inexact array.", "")},
    {{"cos", "array.cos"},
     EMBER_DOC_UNARY("Cosine of each element (in radians).\n\n"
                     "Integer and boolean inputs are computed in float32; complex inputs are\n"
                     "supported.",
                     "``cos(a)``, an inexact array.", "")},
    {{"tan"},
     EMBER_DOC_UNARY("Tangent of each element (in radians).\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "``tan(a)``, an inexact array.", "")},
    {{"arcsin", "asin"},
     EMBER_DOC_UNARY("Inverse sine of each element, in radians in [-pi/2, pi/2].\n\n"
                     "``asin`` is the same function. Integer and boolean inputs are computed in\n"
                     "float32; inputs outside [-1, 1] give NaN.",
                     "``arcsin(a)``, an inexact array.", "")},
    {{"arccos", "acos"},
     EMBER_DOC_UNARY("Inverse cosine of each element, in radians in [0, pi].\n\n"
                     "``acos`` is the same function. Integer and boolean inputs are computed in\n"
                     "float32; inputs outside [-1, 1] give NaN.",
                     "``arccos(a)``, an inexact array.", "")},
    {{"arctan", "atan"},
     EMBER_DOC_UNARY("Inverse tangent of each element, in radians in (-pi/2, pi/2).\n\n"
                     "``atan`` is the same function. Integer and boolean inputs are computed in\n"
                     "float32.",
                     "``arctan(a)``, an inexact array.", "")},
    {{"sinh"},
     EMBER_DOC_UNARY("Hyperbolic sine of each element.\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "``sinh(a)``, an inexact array.", "")},
    {{"cosh"},
     EMBER_DOC_UNARY("Hyperbolic cosine of each element.\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "``cosh(a)``, an inexact array.", "")},
    {{"tanh"},
     EMBER_DOC_UNARY("Hyperbolic tangent of each element.\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "``tanh(a)``, an inexact array with values in [-1, 1].", "")},
    {{"arcsinh", "asinh"},
     EMBER_DOC_UNARY("Inverse hyperbolic sine of each element.\n\n"
                     "``asinh`` is the same function. Integer and boolean inputs are computed in\n"
                     "float32.",
                     "``arcsinh(a)``, an inexact array.", "")},
    {{"arccosh", "acosh"},
     EMBER_DOC_UNARY("Inverse hyperbolic cosine of each element (defined for ``a >= 1``).\n\n"
                     "``acosh`` is the same function. Integer and boolean inputs are computed in\n"
                     "float32; inputs below 1 give NaN.",
                     "``arccosh(a)``, an inexact array.", "")},
    {{"arctanh", "atanh"},
     EMBER_DOC_UNARY("Inverse hyperbolic tangent of each element (defined on (-1, 1)).\n\n"
                     "``atanh`` is the same function. Integer and boolean inputs are computed in\n"
                     "float32; -1 and 1 give -inf and inf.",
                     "``arctanh(a)``, an inexact array.", "")},
    {{"degrees"},
     EMBER_DOC_UNARY("Converts angles from radians to degrees (``a * 180 / pi``).\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "the angles in degrees, an inexact array.",
                     "\nExample:\n    >>> mx.degrees(mx.array([mx.pi]))\n    array([180], dtype=float32)\n")},
    {{"radians"},
     EMBER_DOC_UNARY("Converts angles from degrees to radians (``a * pi / 180``).\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "the angles in radians, an inexact array.", "")},
    {{"sigmoid"},
     EMBER_DOC_UNARY("Logistic sigmoid of each element, ``1 / (1 + exp(-a))``.\n\n"
                     "Integer and boolean inputs are computed in float32.",
                     "the sigmoid, an inexact array with values in [0, 1].",
                     "\nExample:\n    >>> mx.sigmoid(mx.array([0.0]))\n    array([0.5], dtype=float32)\n")},
    {{"erf"},
     EMBER_DOC_UNARY("Gauss error function of each element,\n"
                     "``erf(x) = 2 / sqrt(pi) * integral from 0 to x of exp(-t**2) dt``.\n\n"
                     "Integer and boolean inputs are computed in float32; complex inputs raise.",
                     "``erf(a)``, a real floating array with values in [-1, 1].", "")},
    {{"erfinv"},
     EMBER_DOC_UNARY("Inverse of the error function, element by element: ``erf(erfinv(a)) == a``.\n\n"
                     "Defined on [-1, 1] (-1 and 1 give -inf and inf, values outside NaN).\n"
                     "Integer and boolean inputs are computed in float32.",
                     "``erfinv(a)``, a real floating array.", "")},
    {{"floor"},
     EMBER_DOC_UNARY("Largest integer not above each element.\n\n"
                     "Integer and boolean inputs are returned unchanged in dtype; complex inputs\n"
                     "raise.",
                     "``floor(a)`` with the dtype of ``a``.",
                     "\nExample:\n    >>> mx.floor(mx.array([-1.5, 1.5]))\n    array([-2, 1], dtype=float32)\n")},
    {{"ceil"},
     EMBER_DOC_UNARY("Smallest integer not below each element.\n\n"
                     "Integer and boolean inputs are returned unchanged in dtype; complex inputs\n"
                     "raise.",
                     "``ceil(a)`` with the dtype of ``a``.", "")},
    {{"trunc"},
     EMBER_DOC_UNARY("Rounds each element towards zero (drops the fractional part).\n\n"
                     "Integer inputs keep their dtype (their values are unchanged).",
                     "``trunc(a)`` with the dtype of ``a``.",
                     "\nExample:\n    >>> mx.trunc(mx.array([-1.7, 1.7]))\n    array([-1, 1], dtype=float32)\n")},
    {{"conj", "conjugate", "array.conj"},
     EMBER_DOC_UNARY("Complex conjugate of each element.\n\n"
                     "``conjugate`` is the same function. A real input is returned as it is.",
                     "the conjugate, with the dtype of ``a``.",
                     "\nExample:\n    >>> mx.conj(mx.array([1 + 2j]))\n    array([1-2j], dtype=complex64)\n")},
    {{"real"},
     EMBER_DOC_UNARY("Real part of each element.\n\n"
                     "For a real input this is the input itself.",
                     "the real parts: float32 for complex64, the dtype of ``a`` otherwise.", "")},
    {{"imag"},
     EMBER_DOC_UNARY("Imaginary part of each element.\n\n"
                     "For a real input this is an array of zeros.",
                     "the imaginary parts: float32 for complex64, the dtype of ``a`` otherwise.", "")},
    {{"isnan"},
     EMBER_DOC_UNARY("Tests each element for NaN.\n\n"
                     "Integers and booleans are never NaN; a complex element is NaN when either\n"
                     "part is.",
                     "a boolean array, True where ``a`` is NaN.",
                     "\nExample:\n    >>> mx.isnan(mx.array([1.0, mx.nan]))\n    array([False, True], dtype=bool)\n")},
    {{"isinf"},
     EMBER_DOC_UNARY("Tests each element for positive or negative infinity.",
                     "a boolean array, True where ``a`` is inf or -inf.", "")},
    {{"isposinf"},
     EMBER_DOC_UNARY("Tests each element for positive infinity (a complex element: equal to ``inf + 0j``).",
                     "a boolean array, True where ``a`` is inf.", "")},
    {{"isneginf"},
     EMBER_DOC_UNARY("Tests each element for negative infinity (a complex element: equal to ``-inf + 0j``).",
                     "a boolean array, True where ``a`` is -inf.", "")},
    {{"isfinite"},
     EMBER_DOC_UNARY("Tests each element for being finite (neither infinite nor NaN).",
                     "a boolean array, True where ``a`` is finite.", "")},
    {{"logical_not"},
     EMBER_DOC_UNARY("Logical negation of each element; nonzero values count as True.",
                     "a boolean array, True where ``a`` is zero or False.",
                     "\nExample:\n    >>> mx.logical_not(mx.array([1, 0]))\n    array([False, True], dtype=bool)\n")},
    {{"bitwise_invert"},
     EMBER_DOC_UNARY("Bitwise NOT (``~a``) of each element of an integer or boolean array.\n\n"
                     "For booleans this is the logical negation; floating inputs raise.",
                     "``~a`` with the dtype of ``a``.",
                     "\nExample:\n    >>> mx.bitwise_invert(mx.array([0], dtype=mx.uint8))\n    array([255], dtype=uint8)\n")},

    {{"round", "array.round"}, R"doc(Rounds each element to a given number of decimals.

Halfway cases round to the nearest even value (as NumPy does). Integer
inputs with ``decimals >= 0`` are returned as they are; a negative
``decimals`` rounds to tens, hundreds, and so on.

Args:
    a (array): input array.
    decimals (int): number of decimal places to keep; may be negative.
        Default: 0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the rounded values, with the dtype of ``a``.

Example:
    >>> mx.round(mx.array([0.5, 1.5, 2.5]))
    array([0, 2, 2], dtype=float32)
    >>> mx.round(mx.array([1.25, 2.675]), 1)
    array([1.2, 2.7], dtype=float32)
)doc"},
    {{"clip"}, R"doc(Limits the values of an array to an interval.

Each element below ``a_min`` becomes ``a_min`` and each element above
``a_max`` becomes ``a_max``. The bounds broadcast against ``a``; one of
them (not both) may be None for no limit on that side.

Args:
    a (array): input array.
    a_min (array, scalar or None): the lower bound.
    a_max (array, scalar or None): the upper bound.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the clipped array.

Example:
    >>> mx.clip(mx.array([-2.0, 0.5, 3.0]), 0, 1)
    array([0, 0.5, 1], dtype=float32)
)doc"},
    {{"nan_to_num"}, R"doc(Replaces NaN and infinite values with finite numbers.

Args:
    a (array): input array; integer and boolean arrays are returned as they are.
    nan (float): the value that replaces NaN. Default: 0.
    posinf (float, optional): the value that replaces +inf. Default: None,
        the largest finite value of the dtype.
    neginf (float, optional): the value that replaces -inf. Default: None,
        the lowest finite value of the dtype.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: ``a`` with the replacements, same dtype.

Example:
    >>> mx.nan_to_num(mx.array([mx.nan, mx.inf, -mx.inf]))
    array([0, 3.40282e+38, -3.40282e+38], dtype=float32)
)doc"},

    // ---- element-wise: two inputs ----
    {{"add"},
     EMBER_DOC_BINARY("Element-wise sum ``a + b``.", "the sums, in the promoted dtype.",
                      "\nExample:\n    >>> mx.add(mx.array([1, 2]), 1.5)\n    array([2.5, 3.5], dtype=float32)\n")},
    {{"subtract"},
     EMBER_DOC_BINARY("Element-wise difference ``a - b``.", "the differences, in the promoted dtype.", "")},
    {{"multiply"},
     EMBER_DOC_BINARY("Element-wise product ``a * b``.", "the products, in the promoted dtype.", "")},
    {{"divide"},
     EMBER_DOC_BINARY("Element-wise true division ``a / b``.\n\n"
                      "Integer operands are divided in float32 (the result is always inexact).",
                      "the quotients, an inexact array.",
                      "\nExample:\n    >>> mx.divide(mx.array([1, 2]), 2)\n    array([0.5, 1], dtype=float32)\n")},
    {{"floor_divide"},
     EMBER_DOC_BINARY("Element-wise floor division ``a // b``: the quotient rounded down.\n\n"
                      "For integers this rounds towards minus infinity, as Python does; for\n"
                      "floats it is ``floor(a / b)``.",
                      "the floored quotients, in the promoted dtype.",
                      "\nExample:\n    >>> mx.floor_divide(mx.array([7, -7]), 2)\n    array([3, -4], dtype=int32)\n")},
    {{"remainder"},
     EMBER_DOC_BINARY("Element-wise remainder ``a % b`` of floor division.\n\n"
                      "The result has the sign of ``b`` (as Python's ``%``), so that\n"
                      "``a == b * floor_divide(a, b) + remainder(a, b)``.",
                      "the remainders, in the promoted dtype.",
                      "\nExample:\n    >>> mx.remainder(mx.array([7, -7]), 3)\n    array([1, 2], dtype=int32)\n")},
    {{"divmod"},
     EMBER_DOC_BINARY("Floor quotient and remainder at once: ``(a // b, a % b)``.",
                      "a list ``[quotient, remainder]`` of two arrays.",
                      "\nExample:\n    >>> mx.divmod(mx.array([7]), 2)\n    [array([3], dtype=int32), array([1], dtype=int32)]\n")},
    {{"power", "pow"},
     EMBER_DOC_BINARY("Element-wise power ``a ** b``.\n\n``pow`` is the same function.",
                      "``a`` raised to ``b``, in the promoted dtype.",
                      "\nExample:\n    >>> mx.power(mx.array([2, 3]), 2)\n    array([4, 9], dtype=int32)\n")},
    {{"maximum"},
     EMBER_DOC_BINARY("Element-wise maximum of two arrays; NaN wins over any number.",
                      "the larger of each pair, in the promoted dtype.", "")},
    {{"minimum"},
     EMBER_DOC_BINARY("Element-wise minimum of two arrays; NaN wins over any number.",
                      "the smaller of each pair, in the promoted dtype.", "")},
    {{"arctan2", "atan2"},
     EMBER_DOC_BINARY("Element-wise arc tangent of ``a / b`` that uses the signs of both to pick\n"
                      "the quadrant: the angle, in radians in [-pi, pi], of the point ``(b, a)``.\n\n"
                      "``atan2`` is the same function. Integer inputs are computed in float32.",
                      "the angles, an inexact array.", "")},
    {{"logaddexp"},
     EMBER_DOC_BINARY("Element-wise ``log(exp(a) + exp(b))``, computed without overflow.\n\n"
                      "Integer inputs are computed in float32. For complex inputs the operand that is "
                      "larger (real part first) is factored out and the imaginary part is not wrapped "
                      "into (-pi, pi].",
                      "the log of the summed exponentials, an inexact array.",
                      "\nExample:\n    >>> mx.logaddexp(mx.array([0.0]), mx.array([0.0]))\n    array([0.693147], dtype=float32)\n")},
    {{"equal"},
     EMBER_DOC_BINARY("Element-wise comparison ``a == b``.", "a boolean array.", "")},
    {{"not_equal"},
     EMBER_DOC_BINARY("Element-wise comparison ``a != b``.", "a boolean array.", "")},
    {{"less"},
     EMBER_DOC_BINARY("Element-wise comparison ``a < b``.", "a boolean array.", "")},
    {{"less_equal"},
     EMBER_DOC_BINARY("Element-wise comparison ``a <= b``.", "a boolean array.", "")},
    {{"greater"},
     EMBER_DOC_BINARY("Element-wise comparison ``a > b``.", "a boolean array.",
                      "\nExample:\n    >>> mx.greater(mx.array([1, 5]), 2)\n    array([False, True], dtype=bool)\n")},
    {{"greater_equal"},
     EMBER_DOC_BINARY("Element-wise comparison ``a >= b``.", "a boolean array.", "")},
    {{"logical_and"},
     EMBER_DOC_BINARY("Element-wise logical AND; nonzero values count as True.", "a boolean array.", "")},
    {{"logical_or"},
     EMBER_DOC_BINARY("Element-wise logical OR; nonzero values count as True.", "a boolean array.", "")},
    {{"logical_xor"},
     EMBER_DOC_BINARY("Element-wise logical exclusive OR; nonzero values count as True.",
                      "a boolean array.", "")},
    {{"bitwise_and"},
     EMBER_DOC_BINARY("Element-wise bitwise AND (``a & b``) of integer or boolean arrays.",
                      "the result, in the promoted dtype.", "")},
    {{"bitwise_or"},
     EMBER_DOC_BINARY("Element-wise bitwise OR (``a | b``) of integer or boolean arrays.",
                      "the result, in the promoted dtype.", "")},
    {{"bitwise_xor"},
     EMBER_DOC_BINARY("Element-wise bitwise exclusive OR (``a ^ b``) of integer or boolean arrays.",
                      "the result, in the promoted dtype.", "")},
    {{"left_shift", "bitwise_left_shift"},
     EMBER_DOC_BINARY("Element-wise left shift ``a << b`` of integer arrays.\n\n"
                      "``bitwise_left_shift`` is the same function.",
                      "the shifted values, in the promoted dtype.",
                      "\nExample:\n    >>> mx.left_shift(mx.array([1]), 2)\n    array([4], dtype=int32)\n")},
    {{"right_shift", "bitwise_right_shift"},
     EMBER_DOC_BINARY("Element-wise right shift ``a >> b`` of integer arrays (arithmetic for\n"
                      "signed types: the sign is kept).\n\n"
                      "``bitwise_right_shift`` is the same function.",
                      "the shifted values, in the promoted dtype.", "")},

    {{"isclose"}, R"doc(Element-wise test that two arrays are equal within a tolerance.

``a`` and ``b`` are close where ``|a - b| <= atol + rtol * |b|``; infinities
are close only to the same infinity. The operands broadcast.

Args:
    a (array): first input.
    b (array): second input.
    rtol (float): relative tolerance. Default: 1e-5.
    atol (float): absolute tolerance. Default: 1e-8.
    equal_nan (bool): whether two NaNs count as close. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a boolean array.

Example:
    >>> mx.isclose(mx.array([1.0, 1.1]), mx.array([1.0, 1.0]))
    array([True, False], dtype=bool)
)doc"},
    {{"allclose"}, R"doc(Tests that two arrays are equal within a tolerance everywhere.

The reduction of :func:`isclose` with ``all``: True when
``|a - b| <= atol + rtol * |b|`` holds for every element of the broadcast
operands.

Args:
    a (array): first input.
    b (array): second input.
    rtol (float): relative tolerance. Default: 1e-5.
    atol (float): absolute tolerance. Default: 1e-8.
    equal_nan (bool): whether two NaNs count as equal. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a boolean scalar array.
)doc"},
    {{"array_equal"}, R"doc(Tests that two arrays have the same shape and the same values.

The dtypes need not match (values are compared after promotion); arrays
of different shapes are not equal (no broadcasting).

Args:
    a (array): first input.
    b (array): second input.
    equal_nan (bool): whether NaNs in the same places count as equal.
        Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a boolean scalar array.

Example:
    >>> mx.array_equal(mx.array([1, 2]), mx.array([1.0, 2.0]))
    array(True, dtype=bool)
)doc"},
    {{"where"}, R"doc(Selects element by element from two arrays according to a condition.

The three inputs broadcast against each other; ``x`` and ``y`` promote to
a common dtype.

Args:
    condition (array): where True (nonzero), take from ``x``.
    x (array): values taken where ``condition`` holds.
    y (array): values taken elsewhere.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the selected values.

Example:
    >>> mx.where(mx.array([True, False]), mx.array([1, 2]), 0)
    array([1, 0], dtype=int32)
)doc"},
    // ---- creation and conversion ----
    {{"arange"}, R"doc(Evenly spaced values in a half-open interval ``[start, stop)``.

Called as ``arange(stop)``, ``arange(start, stop)`` or
``arange(start, stop, step)``, like Python's ``range``. The number of
values is ``ceil((stop - start) / step)``; an infinite step gives
``[start]`` when it points from start towards stop, else nothing.

Args:
    start (int or float, optional): the first value. Default: 0.
    stop (int or float): the end of the interval (not included).
    step (int or float, optional): the spacing. Default: 1.
    dtype (Dtype, optional): the element type. Default: None, int32 when
        every bound is an int and float32 otherwise.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a 1-D array of the values.

Example:
    >>> mx.arange(5)
    array([0, 1, 2, 3, 4], dtype=int32)
    >>> mx.arange(1, 2, 0.25)
    array([1, 1.25, 1.5, 1.75], dtype=float32)
)doc"},
    {{"linspace"}, R"doc(``num`` evenly spaced values from ``start`` to ``stop``.

Args:
    start (float): the first value.
    stop (float): the last value (when ``endpoint`` is True).
    num (int): how many values. Default: 50.
    endpoint (bool): whether ``stop`` is the last value; if False the
        values stop one step before it. Default: True.
    dtype (Dtype): the element type. Default: float32.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a 1-D array of ``num`` values.

Example:
    >>> mx.linspace(0, 1, 5)
    array([0, 0.25, 0.5, 0.75, 1], dtype=float32)
)doc"},
    {{"zeros"}, R"doc(An array of the given shape filled with zeros.

Args:
    shape (int or sequence of int): the shape.
    dtype (Dtype): the element type. Default: float32.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the zero array.

Example:
    >>> mx.zeros((2, 2), dtype=mx.int32)
    array([[0, 0],
           [0, 0]], dtype=int32)
)doc"},
    {{"ones"}, R"doc(An array of the given shape filled with ones.

Args:
    shape (int or sequence of int): the shape.
    dtype (Dtype): the element type. Default: float32.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the array of ones.
)doc"},
    {{"empty"}, R"doc(An array of the given shape whose values are not to be relied on.

For MLX compatibility; Ember fills it with zeros, so reading it is safe.

Args:
    shape (int or sequence of int): the shape.
    dtype (Dtype): the element type. Default: float32.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the new array.
)doc"},
    {{"full"}, R"doc(An array of the given shape filled with a value.

``vals`` broadcasts to ``shape``, so it may be a scalar or an array.

Args:
    shape (int or sequence of int): the shape.
    vals (array or scalar): the fill value(s).
    dtype (Dtype, optional): the element type. Default: None, the dtype of
        ``vals`` (int32 for a Python int, float32 for a float, bool for a bool).
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the filled array.

Example:
    >>> mx.full((2, 3), 7)
    array([[7, 7, 7],
           [7, 7, 7]], dtype=int32)
)doc"},
    {{"zeros_like"}, R"doc(Zeros with the shape (and by default the dtype) of an array.

Args:
    a (array): the array whose shape is taken.
    dtype (Dtype, optional): the element type. Default: None, that of ``a``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the zero array.
)doc"},
    {{"ones_like"}, R"doc(Ones with the shape (and by default the dtype) of an array.

Args:
    a (array): the array whose shape is taken.
    dtype (Dtype, optional): the element type. Default: None, that of ``a``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the array of ones.
)doc"},
    {{"empty_like"}, R"doc(An array with the shape (and by default the dtype) of another, values not to be relied on.

Ember fills it with zeros.

Args:
    a (array): the array whose shape is taken.
    dtype (Dtype, optional): the element type. Default: None, that of ``a``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the new array.
)doc"},
    {{"full_like"}, R"doc(An array with the shape of ``a`` filled with a value.

Args:
    a (array): the array whose shape is taken.
    vals (array or scalar): the fill value(s), broadcast to the shape of ``a``.
    dtype (Dtype, optional): the element type. Default: None, the dtype of ``a``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the filled array.
)doc"},
    {{"eye"}, R"doc(A 2-D array with ones on one diagonal and zeros elsewhere.

Args:
    n (int): the number of rows.
    m (int, optional): the number of columns. Default: None, ``n``.
    k (int): which diagonal: 0 is the main one, positive values are above
        it and negative values below. Default: 0.
    dtype (Dtype): the element type. Default: float32.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: an ``n x m`` array.

Example:
    >>> mx.eye(2, 3, k=1)
    array([[0, 1, 0],
           [0, 0, 1]], dtype=float32)
)doc"},
    {{"identity"}, R"doc(The ``n x n`` identity matrix.

Args:
    n (int): the number of rows and columns.
    dtype (Dtype): the element type. Default: float32.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: an ``n x n`` array with ones on the diagonal.
)doc"},
    {{"tri"}, R"doc(A 2-D array with ones on and below a diagonal and zeros above it.

Args:
    n (int): the number of rows.
    m (int, optional): the number of columns. Default: None, ``n``.
    k (int): the diagonal up to which the ones go: 0 is the main
        diagonal, positive values are above it. Default: 0.
    dtype (Dtype): the element type. Default: float32.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: an ``n x m`` lower-triangular array of ones.

Example:
    >>> mx.tri(3, k=-1)
    array([[0, 0, 0],
           [1, 0, 0],
           [1, 1, 0]], dtype=float32)
)doc"},
    {{"tril"}, R"doc(The lower triangle of the last two axes of an array; the rest set to zero.

Args:
    x (array): input with at least two dimensions.
    k (int): the diagonal above which elements are zeroed: 0 is the main
        diagonal, positive values are above it. Default: 0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: an array of the shape and dtype of ``x``.
)doc"},
    {{"triu"}, R"doc(The upper triangle of the last two axes of an array; the rest set to zero.

Args:
    x (array): input with at least two dimensions.
    k (int): the diagonal below which elements are zeroed: 0 is the main
        diagonal, positive values are above it. Default: 0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: an array of the shape and dtype of ``x``.
)doc"},
    {{"meshgrid"}, R"doc(Coordinate grids from 1-D coordinate vectors.

With N inputs of lengths ``n1, ..., nN``, returns N arrays of the same
shape in which the i-th varies along the i-th input's axis. With
``indexing='xy'`` (Cartesian) the first two axes are swapped, so the grid
has shape ``(n2, n1, n3, ...)``; with ``'ij'`` (matrix) it has shape
``(n1, n2, ...)``. Inputs of any shape are flattened first.

Args:
    *arrays (array): the coordinate vectors.
    sparse (bool): if True, each output keeps length 1 on every axis but
        its own (the grids broadcast to the full ones). Default: False.
    indexing (str): ``'xy'`` or ``'ij'``; anything else raises ValueError.
        Default: ``'xy'``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    tuple(array): one grid per input.

Example:
    >>> xs, ys = mx.meshgrid(mx.array([1, 2]), mx.array([3, 4, 5]))
    >>> xs.shape
    (3, 2)
)doc"},
    {{"asarray"}, R"doc(Converts the input to an array.

Accepts what the ``array`` constructor accepts (scalars, nested
sequences, NumPy arrays, objects with ``__array__``, ``__dlpack__`` or the
buffer protocol). For an array input the result shares its data (no copy)
unless a different dtype is asked for.

Args:
    a: the value to convert.
    dtype (Dtype, optional): the element type. Default: None, inferred as
        the ``array`` constructor does.
    copy (bool, optional): accepted for NumPy compatibility. Arrays are
        immutable values, so a copy is never needed and this has no effect.
        Default: None.

Returns:
    array: the converted array.
)doc"},
    {{"from_dlpack"}, R"doc(An array from an object that implements the DLPack protocol.

The object's ``__dlpack__()`` capsule is imported (CPU memory only).

Args:
    x: an object with ``__dlpack__`` and ``__dlpack_device__`` (a NumPy
        array, a torch tensor, ...).
    copy (bool, optional): accepted for compatibility with the array API;
        the import does not depend on it. Default: None.

Returns:
    array: an array with the object's shape, dtype and values.
)doc"},
    {{"astype", "array.astype"}, R"doc(Converts an array to another dtype.

Floats become integers by truncation towards zero. NaN and values out of
range give the answer of x86-64's vector conversions, as NumPy's and MLX's
casts do (the integer minimum, then wrapping to narrower types), on every
code path. Casting to bool gives True for nonzero values; complex to real
keeps the real part.

Args:
    a (array): the input.
    dtype (Dtype): the target element type.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: an array of the same shape with dtype ``dtype``.

Example:
    >>> mx.array([1.7, -1.7]).astype(mx.int32)
    array([1, -1], dtype=int32)
)doc"},
    {{"view", "array.view"}, R"doc(Reinterprets the bytes of an array as another dtype (no conversion).

If the item sizes differ, the last axis is rescaled: viewing ``n`` float32
values as uint8 gives ``4 * n`` values; the last axis' byte length must be
divisible by the new item size.

Args:
    a (array): the input.
    dtype (Dtype): the dtype to read the bytes as.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the reinterpreted array.

Example:
    >>> mx.view(mx.array([1.0]), mx.int32)
    array([1065353216], dtype=int32)
)doc"},
    {{"to_fp8"}, R"doc(Encodes a floating-point array as 8-bit floats (fp8 e4m3), one uint8 code each.

The e4m3fn format has a sign bit, 4 exponent bits (bias 7) and 3 mantissa
bits: normal values from 2^-6 to 448, subnormals down to 2^-9, no
infinities. Each value is rounded once to the nearest code, ties to the
even one. Magnitudes of 448 and more, infinities and NaN become +-448
(code 126 or 254, by the sign bit), as in MLX; the NaN codes 127 and 255
are never produced.

Args:
    x (array): the input, of a real floating dtype (float16, bfloat16,
        float32 or float64); a scalar or a nested sequence is converted first.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the codes, with ``x``'s shape and dtype uint8.

Example:
    >>> mx.to_fp8(mx.array([1.0, 2.5, 1000.0]))
    array([56, 66, 126], dtype=uint8)
)doc"},
    {{"quantize"}, R"doc(Quantizes a matrix by groups of consecutive elements of its last axis.

Modes (MLX's layouts, bit for bit): ``"affine"`` stores each value as an
unsigned code q of ``bits`` bits with one scale and one bias per group
(w ~ scale * q + bias; group sizes 32, 64, 128; bits 1, 2, 3, 4, 5, 6, 8);
``"mxfp4"``/``"mxfp8"`` store fp4 e2m1 / fp8 e4m3 values with one e8m0
(power of two) scale per 32 values; ``"nvfp4"`` stores fp4 values with one
e4m3 scale per 16 values, optionally relative to a global scale. The codes
are packed into uint32 words from the low bits up (3, 5 and 6 bits: 8, 8
and 4 codes in 3, 5 and 3 little-endian bytes).

Args:
    w (array): the matrix, float32, float16 or bfloat16, at least 2-D; its
        last axis a multiple of the group size.
    group_size (int, optional): the group size. Default: 64 (affine), 32
        (mxfp4, mxfp8), 16 (nvfp4).
    bits (int, optional): bits per code. Default: 4 (8 for mxfp8).
    mode (str): ``"affine"``, ``"mxfp4"``, ``"mxfp8"`` or ``"nvfp4"``. Default: ``"affine"``.
    global_scale (array, optional): nvfp4 only: a float scalar, the tensor's
        scale (the group scales are stored relative to it). Default: None.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    tuple(array, ...): ``(w_q, scales, biases)`` for affine (scales and biases
    in ``w``'s dtype), ``(w_q, scales)`` for the fp modes (uint8 scales);
    ``w_q`` is uint32 with last axis ``w.shape[-1] * bits / 32``.

Example:
    >>> w_q, scales, biases = mx.quantize(mx.ones((4, 64)), 64, 4)
    >>> w_q.shape, scales.shape
    ((4, 8), (4, 1))
)doc"},
    {{"dequantize"}, R"doc(Reconstructs a matrix from its quantized form (as ``quantize`` writes it).

Affine: ``scale * q + bias`` per group; the fp modes: the code's value
times the group's scale (times ``global_scale / 2688`` for nvfp4 with a
global scale).

Args:
    w (array): the uint32 codes.
    scales (array): the group scales, one per group of each row.
    biases (array, optional): the group biases (affine only). Default: None.
    group_size (int, optional): the group size (the mode's default if None).
    bits (int, optional): bits per code (the mode's default if None).
    mode (str): the quantization mode. Default: ``"affine"``.
    global_scale (array, optional): nvfp4's global scale. Default: None.
    dtype (Dtype, optional): the output dtype. Default: the scales' dtype
        (affine), bfloat16 (the fp modes).
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the matrix, with last axis ``w.shape[-1] * 32 / bits``.

Example:
    >>> mx.dequantize(*mx.quantize(mx.ones((1, 32)), 32, 4), 32, 4)[0, :3]
    array([1, 1, 1], dtype=float32)
)doc"},
    {{"quantized_matmul"}, R"doc(Multiplies ``x`` by a quantized matrix without materializing it.

Computes ``x @ dequantize(w).T`` (``transpose=True``) or ``x @
dequantize(w)``; the weights are unpacked in registers for a few rows of
``x`` and in cache-sized tiles otherwise, accumulating in float32. Batch
dimensions broadcast.

Args:
    x (array): the input (..., M, K), float32, float16 or bfloat16.
    w (array): the uint32 codes (..., N, K * bits / 32) when ``transpose``,
        else (..., K, N * bits / 32).
    scales (array): the group scales.
    biases (array, optional): the group biases (affine only). Default: None.
    transpose (bool): whether to multiply by the transpose of the dequantized
        matrix. Default: True.
    group_size (int, optional): the group size (the mode's default if None).
    bits (int, optional): bits per code (the mode's default if None).
    mode (str): the quantization mode. Default: ``"affine"``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the product (..., M, N), in the promoted dtype of ``x`` and the
    affine scales and biases (``x``'s dtype for the fp modes).

Example:
    >>> w_q, s, b = mx.quantize(mx.ones((8, 64)))
    >>> mx.quantized_matmul(mx.ones((1, 64)), w_q, s, b).shape
    (1, 8)
)doc"},
    {{"gather_qmm"}, R"doc(Quantized matrix products of gathered batch entries (mixture-of-experts layers).

Entry i of the result is ``quantized_matmul(x[lhs_indices[i]],
w[rhs_indices[i]], ...)``, the indices pointing into the batch dimensions
of ``x`` and ``w`` (flattened) and broadcast together; a missing index array
enumerates its operand's batch.

Args:
    x (array): the inputs (..., M, K).
    w (array): the quantized weights (..., N, K * bits / 32).
    scales (array): the group scales.
    biases (array, optional): the group biases (affine only). Default: None.
    lhs_indices (array, optional): integer indices into ``x``'s batch. Default: None.
    rhs_indices (array, optional): integer indices into ``w``'s batch. Default: None.
    transpose (bool): as in ``quantized_matmul``. Default: True.
    group_size (int, optional): the group size (the mode's default if None).
    bits (int, optional): bits per code (the mode's default if None).
    mode (str): the quantization mode. Default: ``"affine"``.
    global_scale (array, optional): nvfp4's global scale of ``w``. Default: None.
    sorted_indices (bool): whether the indices are sorted (a hint; the result
        does not depend on it). Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the products, shape ``indices.shape + (M, N)``.
)doc"},
    {{"qqmm"}, R"doc(Matrix product with both operands quantized (the fp modes).

``x`` is quantized in ``mode`` (and dequantized), ``w`` too unless it is
given quantized with its ``scales``; the result is ``x_q @ w_q.T`` in
``x``'s dtype. (MLX 0.32's CPU backend raises for every call.)

Args:
    x (array): the left operand (..., M, K).
    w (array): the right operand (N, K) unquantized, or its uint32 codes.
    scales (array, optional): ``w``'s scales when ``w`` is quantized. Default: None.
    group_size (int, optional): the group size (the mode's default if None).
    bits (int, optional): bits per code (the mode's default if None).
    mode (str): ``"nvfp4"``, ``"mxfp4"`` or ``"mxfp8"``. Default: ``"nvfp4"``.
    global_scale_x (array, optional): nvfp4 global scale of ``x``. Default: None.
    global_scale_w (array, optional): nvfp4 global scale of ``w``. Default: None.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the product (..., M, N).
)doc"},
    {{"gather_qqmm"}, R"doc(``qqmm`` of gathered batch entries, the indices as in ``gather_qmm``.

Args:
    x (array): the left operands (..., M, K).
    w (array): the right operands (..., N, K), unquantized or their codes.
    scales (array, optional): ``w``'s scales when ``w`` is quantized. Default: None.
    lhs_indices (array, optional): integer indices into ``x``'s batch. Default: None.
    rhs_indices (array, optional): integer indices into ``w``'s batch. Default: None.
    group_size (int, optional): the group size (the mode's default if None).
    bits (int, optional): bits per code (the mode's default if None).
    mode (str): ``"nvfp4"``, ``"mxfp4"`` or ``"mxfp8"``. Default: ``"nvfp4"``.
    global_scale_x (array, optional): nvfp4 global scale of ``x``. Default: None.
    global_scale_w (array, optional): nvfp4 global scale of ``w``. Default: None.
    sorted_indices (bool): a hint, as in ``gather_qmm``. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the products, shape ``indices.shape + (M, N)``.
)doc"},
    {{"from_fp8"}, R"doc(Decodes 8-bit float codes (fp8 e4m3, as ``to_fp8`` writes them) into a floating-point dtype.

Every finite code's value is exact in each floating dtype; the codes 127
and 255 (S.1111.111) are NaN.

Args:
    x (array): the codes, of dtype uint8.
    dtype (Dtype): the real floating dtype of the result. Default: bfloat16.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the decoded values, with ``x``'s shape and dtype ``dtype``.

Example:
    >>> mx.from_fp8(mx.array([56, 66, 126], mx.uint8), mx.float32)
    array([1, 2.5, 448], dtype=float32)
)doc"},
    {{"as_strided"}, R"doc(A view of an array's elements with an arbitrary shape and strides.

The input's elements are numbered in row-major order (as if it were
contiguous); the result reads element ``offset + sum(i_k * strides[k])``
at index ``(i_0, i_1, ...)``. Every element reached must lie inside the
input, otherwise ValueError (Ember never reads out of bounds). For
sliding windows and overlapping views.

Args:
    a (array): the input.
    shape (sequence of int, optional): the view's shape. Default: None, the
        shape of ``a``.
    strides (sequence of int, optional): the strides in elements (not
        bytes). Default: None, the row-contiguous strides of ``shape``.
    offset (int): the first element read. Default: 0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the strided view.

Example:
    >>> mx.as_strided(mx.arange(6), (2, 2), (1, 1))
    array([[0, 1],
           [1, 2]], dtype=int32)
)doc"},
    {{"contiguous"}, R"doc(A copy of an array laid out contiguously in memory (or the array if it already is).

Args:
    a (array): the input.
    allow_col_major (bool): if True, a column-major (Fortran-ordered)
        array also counts as contiguous. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: an array with the values of ``a`` and a row-contiguous layout
    (or column-major where allowed).
)doc"},
    {{"bartlett"}, R"doc(The Bartlett (triangular) window.

``w[n] = 1 - |2n / (M - 1) - 1|`` for ``n`` in ``[0, M)``: zero at both
ends and one in the middle.

Args:
    M (int): the number of points; 0 gives an empty array and 1 the array ``[1]``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a float32 array of ``M`` values.
)doc"},
    {{"blackman"}, R"doc(The Blackman window.

``w[n] = 0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))``
for ``n`` in ``[0, M)``.

Args:
    M (int): the number of points; 0 gives an empty array and 1 the array ``[1]``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a float32 array of ``M`` values.
)doc"},
    {{"hamming"}, R"doc(The Hamming window.

``w[n] = 0.54 - 0.46 cos(2 pi n / (M - 1))`` for ``n`` in ``[0, M)``.

Args:
    M (int): the number of points; 0 gives an empty array and 1 the array ``[1]``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a float32 array of ``M`` values.
)doc"},
    {{"hanning"}, R"doc(The Hann window.

``w[n] = 0.5 - 0.5 cos(2 pi n / (M - 1))`` for ``n`` in ``[0, M)``: zero at
both ends.

Args:
    M (int): the number of points; 0 gives an empty array and 1 the array ``[1]``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a float32 array of ``M`` values.

Example:
    >>> mx.hanning(4)
    array([0, 0.75, 0.75, 0], dtype=float32)
)doc"},
    // ---- reductions ----
    {{"sum", "array.sum"}, R"doc(Sum of the elements over the given axes.

Booleans and integers narrower than 32 bits are summed in int32 (uint32
for unsigned types). Floating sums give the same bits at every ISA level,
thread count and input layout.

Args:
)doc" EMBER_DOC_REDUCE_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the sums.

Example:
    >>> x = mx.array([[1, 2], [3, 4]])
    >>> mx.sum(x)
    array(10, dtype=int32)
    >>> x.sum(axis=0, keepdims=True)
    array([[4, 6]], dtype=int32)
)doc"},
    {{"prod", "array.prod"}, R"doc(Product of the elements over the given axes.

Booleans and integers narrower than 32 bits are multiplied in int32 (uint32
for unsigned types).

Args:
)doc" EMBER_DOC_REDUCE_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the products.
)doc"},
    {{"mean", "array.mean"}, R"doc(Arithmetic mean of the elements over the given axes.

Integer and boolean inputs are averaged in float32.

Args:
)doc" EMBER_DOC_REDUCE_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the means, an inexact array.

Example:
    >>> mx.mean(mx.array([1, 2]))
    array(1.5, dtype=float32)
)doc"},
    {{"max", "array.max"}, R"doc(Maximum of the elements over the given axes.

NaN propagates (a reduced set holding NaN gives NaN). Reducing an empty
axis raises ValueError.

Args:
)doc" EMBER_DOC_REDUCE_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the maxima, with the dtype of ``a``.
)doc"},
    {{"min", "array.min"}, R"doc(Minimum of the elements over the given axes.

NaN propagates (a reduced set holding NaN gives NaN). Reducing an empty
axis raises ValueError.

Args:
)doc" EMBER_DOC_REDUCE_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the minima, with the dtype of ``a``.
)doc"},
    {{"all", "array.all"}, R"doc(Tests whether every element over the given axes is true (nonzero).

An empty reduction is True.

Args:
)doc" EMBER_DOC_REDUCE_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: a boolean array.
)doc"},
    {{"any", "array.any"}, R"doc(Tests whether any element over the given axes is true (nonzero).

An empty reduction is False.

Args:
)doc" EMBER_DOC_REDUCE_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: a boolean array.
)doc"},
    {{"var", "array.var"}, R"doc(Variance of the elements over the given axes.

The mean squared deviation from the mean, divided by ``N - ddof`` where
``N`` is the number of reduced elements. Integer inputs are computed in
float32.

Args:
)doc" EMBER_DOC_REDUCE_ARGS R"doc(    ddof (int): the "delta degrees of freedom" subtracted from ``N``; 1 gives
        the unbiased sample variance. Default: 0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the variances.

Example:
    >>> mx.var(mx.array([1.0, 2.0, 3.0, 4.0]), ddof=1)
    array(1.66667, dtype=float32)
)doc"},
    {{"std", "array.std"}, R"doc(Standard deviation of the elements over the given axes.

The square root of :func:`var`: the deviations from the mean are divided
by ``N - ddof``. Integer inputs are computed in float32.

Args:
)doc" EMBER_DOC_REDUCE_ARGS R"doc(    ddof (int): the "delta degrees of freedom" subtracted from ``N``.
        Default: 0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the standard deviations.
)doc"},
    {{"logsumexp", "array.logsumexp"}, R"doc(``log(sum(exp(a)))`` over the given axes, computed without overflow.

The maximum is subtracted before the exponentials and added back after,
so large inputs do not overflow. Integer inputs are computed in float32.

Args:
)doc" EMBER_DOC_REDUCE_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the log of the summed exponentials.

Example:
    >>> mx.logsumexp(mx.array([1000.0, 1000.0]))
    array(1000.69, dtype=float32)
)doc"},
    {{"argmax", "array.argmax"}, R"doc(Index of the largest element along an axis.

Where the maximum occurs several times, the first index is returned.

Args:
    a (array): input array.
    axis (int, optional): the axis to reduce. Default: None, the index into
        the flattened array.
    keepdims (bool): keep the reduced axis with length 1. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the indices, uint32.

Example:
    >>> mx.argmax(mx.array([[1, 5], [3, 2]]), axis=1)
    array([1, 0], dtype=uint32)
)doc"},
    {{"argmin", "array.argmin"}, R"doc(Index of the smallest element along an axis.

Where the minimum occurs several times, the first index is returned.

Args:
    a (array): input array.
    axis (int, optional): the axis to reduce. Default: None, the index into
        the flattened array.
    keepdims (bool): keep the reduced axis with length 1. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the indices, uint32.
)doc"},
    {{"median"}, R"doc(Median of the elements over the given axes.

For an even count it is the mean of the two middle values. A reduced set
that holds NaN gives NaN.

Args:
)doc" EMBER_DOC_REDUCE_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the medians, an inexact array.

Example:
    >>> mx.median(mx.array([3.0, 1.0, 2.0, 5.0]))
    array(2.5, dtype=float32)
)doc"},
    {{"count_nonzero"}, R"doc(Number of nonzero (true) elements over the given axes.

Args:
)doc" EMBER_DOC_REDUCE_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the counts, int32.

Example:
    >>> mx.count_nonzero(mx.array([0, 3, 0, 1]))
    array(2, dtype=int32)
)doc"},
    {{"minmax"}, R"doc(Minimum and maximum over the given axes, in one call.

Args:
)doc" EMBER_DOC_REDUCE_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    tuple(array, array): ``(min, max)``, each as :func:`min` and :func:`max`
    would give it.
)doc"},
    {{"softmax"}, R"doc(Softmax over the given axes: ``exp(a) / sum(exp(a))``.

The maximum is subtracted first, so large inputs do not overflow; the
results over the axes sum to 1.

Args:
    a (array): input array.
    axis (int or sequence of int, optional): the axes to normalize over.
        Default: None, every axis.
    precise (bool): for float16 and bfloat16 inputs, accumulate in float32
        (the result keeps the input's dtype). Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the probabilities, an inexact array of the shape of ``a``.

Example:
    >>> mx.softmax(mx.array([0.0, 0.0]))
    array([0.5, 0.5], dtype=float32)
)doc"},

    // ---- scans ----
    {{"cumsum", "cumulative_sum"}, R"doc(Cumulative sum along an axis.

``cumulative_sum`` is the same function. Booleans are counted in int32;
other integers keep their dtype unless ``dtype`` says otherwise.

Args:
)doc" EMBER_DOC_SCAN_ARGS R"doc(    dtype (Dtype, optional): the dtype to accumulate in and return.
        Default: None, as described above.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the running sums, the shape of ``a`` (1-D when ``axis`` is None).

Example:
    >>> mx.cumsum(mx.array([1, 2, 3]))
    array([1, 3, 6], dtype=int32)
    >>> mx.cumsum(mx.array([1, 2, 3]), reverse=True)
    array([6, 5, 3], dtype=int32)
    >>> mx.cumsum(mx.array([1, 2, 3]), inclusive=False)
    array([0, 1, 3], dtype=int32)
)doc"},
    {{"array.cumsum"}, R"doc(Cumulative sum along an axis; the method form of :func:`cumsum`.

Args:
)doc" EMBER_DOC_SCAN_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the running sums (1-D when ``axis`` is None).
)doc"},
    {{"cumprod", "cumulative_prod"}, R"doc(Cumulative product along an axis.

``cumulative_prod`` is the same function. The result keeps the dtype of
``a`` (booleans give a running logical AND) unless ``dtype`` says
otherwise.

Args:
)doc" EMBER_DOC_SCAN_ARGS R"doc(    dtype (Dtype, optional): the dtype to accumulate in and return.
        Default: None, as described above.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the running products (1-D when ``axis`` is None).

Example:
    >>> mx.cumprod(mx.array([1, 2, 3, 4]))
    array([1, 2, 6, 24], dtype=int32)
)doc"},
    {{"array.cumprod"}, R"doc(Cumulative product along an axis; the method form of :func:`cumprod`.

Args:
)doc" EMBER_DOC_SCAN_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the running products (1-D when ``axis`` is None).
)doc"},
    {{"cummax", "array.cummax"}, R"doc(Cumulative maximum along an axis.

Once a NaN is reached, every later element is NaN.

Args:
)doc" EMBER_DOC_SCAN_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the running maxima, with the dtype of ``a``.

Example:
    >>> mx.cummax(mx.array([1, 3, 2, 5]))
    array([1, 3, 3, 5], dtype=int32)
)doc"},
    {{"cummin", "array.cummin"}, R"doc(Cumulative minimum along an axis.

Once a NaN is reached, every later element is NaN.

Args:
)doc" EMBER_DOC_SCAN_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the running minima, with the dtype of ``a``.
)doc"},
    {{"logcumsumexp", "array.logcumsumexp"}, R"doc(Cumulative ``log(sum(exp(a)))`` along an axis, computed without overflow.

Integer inputs are computed in float32.

Args:
)doc" EMBER_DOC_SCAN_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the running log-sum-exps, an inexact array.
)doc"},

    // ---- sorting and selection ----
    {{"sort"}, R"doc(A sorted copy of an array along an axis.

NaN sorts after every number.

Args:
    a (array): input array.
    axis (int, optional): the axis to sort. Default: -1, the last axis;
        None sorts the flattened array.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the sorted values.

Example:
    >>> mx.sort(mx.array([3, 1, 2]))
    array([1, 2, 3], dtype=int32)
)doc"},
    {{"argsort"}, R"doc(Indices that sort an array along an axis.

The sort is stable: equal elements keep their order. NaN sorts after
every number.

Args:
    a (array): input array.
    axis (int, optional): the axis to sort. Default: -1, the last axis;
        None sorts the flattened array.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: uint32 indices such that ``take_along_axis(a, indices, axis)`` is sorted.

Example:
    >>> mx.argsort(mx.array([3, 1, 2]))
    array([1, 2, 0], dtype=uint32)
)doc"},
    {{"partition"}, R"doc(A copy of an array partially sorted around its ``kth`` element.

Along the axis, the element at position ``kth`` is the one a full sort
would put there; every element before it is not greater and every
element after it not smaller, in no particular order.

Args:
    a (array): input array.
    kth (int): the position to place; negative values count from the end.
    axis (int, optional): the axis to partition. Default: -1, the last
        axis; None partitions the flattened array.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the partitioned values.

Example:
    >>> mx.partition(mx.array([3, 1, 2, 0]), 1)[1]
    array(1, dtype=int32)
)doc"},
    {{"argpartition"}, R"doc(Indices that partition an array around its ``kth`` element.

Taking ``a`` at these indices gives what :func:`partition` gives.

Args:
    a (array): input array.
    kth (int): the position to place; negative values count from the end.
    axis (int, optional): the axis to partition. Default: -1, the last
        axis; None partitions the flattened array.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: uint32 indices.
)doc"},
    {{"topk"}, R"doc(The ``k`` largest elements along an axis.

The result is in ascending order along the axis.

Args:
    a (array): input array.
    k (int): how many elements; at most the length of the axis.
    axis (int, optional): the axis to select along. Default: -1, the last
        axis; None selects from the flattened array.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the selected values; the axis has length ``k``.

Example:
    >>> mx.topk(mx.array([3, 1, 2, 0]), 2)
    array([2, 3], dtype=int32)
)doc"},
    {{"searchsorted"}, R"doc(Insertion points that keep a sorted 1-D array sorted.

For each element of ``values``, the index at which inserting it into
``sorted_sequence`` keeps the order.

Args:
    sorted_sequence (array): a 1-D array sorted in ascending order.
    values (array): the values to place; any shape.
    side (str): ``'left'`` gives the first suitable index (before equal
        elements), ``'right'`` the last one (after them). Default: ``'left'``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: uint32 indices with the shape of ``values``.

Example:
    >>> mx.searchsorted(mx.array([1, 2, 3]), mx.array([2]), side="right")
    array([2], dtype=uint32)
)doc"},
    {{"unique"}, R"doc(The sorted unique elements of an array, in an array of fixed size.

The array is flattened. Because array shapes are static, the number of
results is given by ``size``: with more unique elements than that the
result is truncated, with fewer it is padded with ``fill_value``.

Args:
    a (array): input array.
    size (int): the length of every returned array.
    return_index (bool): also return, for each unique element, the index
        of its first occurrence in the flattened ``a``. Default: False.
    return_inverse (bool): also return, for each element of the flattened
        ``a``, the index of its value among the unique elements.
        Default: False.
    return_counts (bool): also return how many times each unique element
        occurs (0 for padding). Default: False.
    fill_value (scalar, optional): the padding value. Default: None, the
        smallest unique element.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array or tuple(array): the unique values alone, or a tuple of the
    values followed by the requested index, inverse and counts, in that
    order.

Example:
    >>> mx.unique(mx.array([3, 1, 3, 2]), 4)
    array([1, 2, 3, 1], dtype=int32)
    >>> mx.unique(mx.array([3, 1, 3, 2]), 2, return_counts=True)
    (array([1, 2], dtype=int32), array([1, 1], dtype=int32))
)doc"},
    // ---- shape manipulation ----
    {{"reshape"}, R"doc(An array with the same elements in a new shape.

The elements are read in row-major order. One dimension may be -1: it is
inferred from the size. A view where the layout allows it, a copy
otherwise.

Args:
    a (array): input array.
    shape (sequence of int): the new shape; its product must equal ``a.size``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the reshaped array.

Example:
    >>> mx.reshape(mx.arange(6), (2, -1)).shape
    (2, 3)
)doc"},
    {{"array.reshape"}, R"doc(The array's elements in a new shape; the method form of :func:`reshape`.

Args:
    *args: the new shape, as separate ints (``a.reshape(2, 3)``) or one
        sequence (``a.reshape((2, 3))``); one dimension may be -1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the reshaped array.
)doc"},
    {{"flatten", "array.flatten"}, R"doc(Merges a range of axes into one.

Axes ``start_axis`` to ``end_axis`` (both included) become one axis
whose length is the product of theirs. A 0-d input gives a 1-d array.

Args:
    a (array): input array.
    start_axis (int): the first axis to merge. Default: 0.
    end_axis (int): the last axis to merge. Default: -1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the flattened array.

Example:
    >>> mx.flatten(mx.zeros((2, 3, 4)), 1).shape
    (2, 12)
)doc"},
    {{"unflatten"}, R"doc(Splits one axis into several: the inverse of :func:`flatten`.

Args:
    a (array): input array.
    axis (int): the axis to split.
    shape (sequence of int): the lengths it splits into; their product must
        equal its length, and one of them may be -1 (inferred).
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the array with ``axis`` replaced by ``shape``.

Example:
    >>> mx.unflatten(mx.zeros((6, 4)), 0, (2, -1)).shape
    (2, 3, 4)
)doc"},
    {{"squeeze", "array.squeeze"}, R"doc(Removes axes of length 1.

Args:
    a (array): input array.
    axis (int or sequence of int, optional): the axes to remove; each must
        have length 1. Default: None, every axis of length 1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a view without those axes.

Example:
    >>> mx.squeeze(mx.zeros((1, 2, 1))).shape
    (2,)
)doc"},
    {{"expand_dims"}, R"doc(Inserts axes of length 1.

Args:
    a (array): input array.
    axis (int or sequence of int): the positions of the new axes in the
        result; negative values count from the end of the result.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a view with the added axes.

Example:
    >>> mx.expand_dims(mx.zeros((2, 3)), (0, 2)).shape
    (1, 2, 1, 3)
)doc"},
    {{"transpose", "permute_dims"}, R"doc(Permutes the axes of an array.

``permute_dims`` is the same function.

Args:
    a (array): input array.
    axes (sequence of int, optional): the new order: axis ``i`` of the
        result is axis ``axes[i]`` of ``a``. Default: None, the reversed order.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a view with permuted axes.

Example:
    >>> mx.transpose(mx.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
)doc"},
    {{"array.transpose"}, R"doc(The array with permuted axes; the method form of :func:`transpose`.

Args:
    *args: the new order of the axes, as separate ints
        (``a.transpose(1, 0, 2)``) or one sequence; none reverses the axes.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a view with permuted axes.
)doc"},
    {{"swapaxes", "array.swapaxes"}, R"doc(Swaps two axes of an array.

Args:
    a (array): input array.
    axis1 (int): the first axis.
    axis2 (int): the second axis.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a view with the two axes exchanged.
)doc"},
    {{"moveaxis", "array.moveaxis"}, R"doc(Moves one axis to another position, keeping the others in order.

Args:
    a (array): input array.
    source (int): the axis to move.
    destination (int): its position in the result.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a view with the axis moved.

Example:
    >>> mx.moveaxis(mx.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
)doc"},
    {{"matrix_transpose"}, R"doc(Swaps the last two axes (transposes each matrix of a batch).

Args:
    a (array): input array with at least two dimensions.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a view with the last two axes exchanged.
)doc"},
    {{"broadcast_to"}, R"doc(Broadcasts an array to a shape.

Dimensions are matched from the end; a dimension of length 1 stretches
to any length and missing leading dimensions are added.

Args:
    a (array): input array.
    shape (sequence of int): the target shape.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a view of ``a`` with shape ``shape`` (no data is copied).

Example:
    >>> mx.broadcast_to(mx.array([1, 2]), (2, 2))
    array([[1, 2],
           [1, 2]], dtype=int32)
)doc"},
    {{"broadcast_arrays"}, R"doc(Broadcasts arrays against each other.

Args:
    *arrays (array): the arrays.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    list(array): views of the inputs, all with the common broadcast shape.
)doc"},
    {{"broadcast_shapes"}, R"doc(The shape that the given shapes broadcast to.

Raises ValueError if they are not compatible.

Args:
    *shapes (sequence of int): the shapes.

Returns:
    tuple(int): the broadcast shape.

Example:
    >>> mx.broadcast_shapes((1, 3), (2, 1))
    (2, 3)
)doc"},
    {{"atleast_1d"}, R"doc(Views the inputs with at least one dimension.

A 0-d array becomes shape ``(1,)``; others are returned as they are.

Args:
    *arys (array): the inputs.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array or list(array): one array for one input, a list for several.
)doc"},
    {{"atleast_2d"}, R"doc(Views the inputs with at least two dimensions.

A 0-d array becomes shape ``(1, 1)`` and a 1-d array of length ``n``
shape ``(1, n)``.

Args:
    *arys (array): the inputs.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array or list(array): one array for one input, a list for several.
)doc"},
    {{"atleast_3d"}, R"doc(Views the inputs with at least three dimensions.

A 0-d array becomes ``(1, 1, 1)``, a 1-d array of length ``n``
``(1, n, 1)`` and a 2-d array ``(m, n)`` ``(m, n, 1)``.

Args:
    *arys (array): the inputs.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array or list(array): one array for one input, a list for several.
)doc"},
    {{"concatenate", "concat"}, R"doc(Joins arrays along an existing axis.

``concat`` is the same function. The arrays must agree in every other
dimension; their dtypes promote.

Args:
    arrays (sequence of array): the arrays to join.
    axis (int, optional): the axis to join along. Default: 0; None flattens
        the inputs first.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the joined array.

Example:
    >>> mx.concatenate([mx.array([1, 2]), mx.array([3])])
    array([1, 2, 3], dtype=int32)
)doc"},
    {{"stack"}, R"doc(Joins arrays of the same shape along a new axis.

Args:
    arrays (sequence of array): the arrays; all must have the same shape.
    axis (int): the position of the new axis in the result. Default: 0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the stacked array, one dimension more than the inputs.

Example:
    >>> mx.stack([mx.zeros((2, 3)), mx.ones((2, 3))], axis=1).shape
    (2, 2, 3)
)doc"},
    {{"unstack"}, R"doc(Splits an array along an axis into the slices at each index: the inverse of :func:`stack`.

Args:
    x (array): input array.
    axis (int): the axis to split along; it is removed from the pieces.
        Default: 0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    tuple(array): ``x.shape[axis]`` arrays.
)doc"},
    {{"split", "array.split"}, R"doc(Splits an array into pieces along an axis.

Args:
    a (array): input array.
    indices_or_sections (int or sequence of int): an int ``n`` splits into
        ``n`` equal pieces (the length must be divisible by ``n``); a sequence
        gives the indices at which the pieces start.
    axis (int): the axis to split. Default: 0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    list(array): the pieces.

Example:
    >>> mx.split(mx.arange(6), [1, 4])
    [array([0], dtype=int32), array([1, 2, 3], dtype=int32), array([4, 5], dtype=int32)]
)doc"},
    {{"tile"}, R"doc(Repeats a whole array along each axis.

If ``reps`` has more entries than ``a`` has dimensions, ``a`` gets leading
axes of length 1; if fewer, ``reps`` gets leading ones.

Args:
    a (array): input array.
    reps (int or sequence of int): how many copies along each axis.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the tiled array.

Example:
    >>> mx.tile(mx.array([1, 2]), 2)
    array([1, 2, 1, 2], dtype=int32)
)doc"},
    {{"repeat"}, R"doc(Repeats each element of an array.

Args:
    array (array): input array.
    repeats (int): how many times each element appears.
    axis (int, optional): the axis along which to repeat. Default: None,
        the flattened array.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the array with repeated elements.

Example:
    >>> mx.repeat(mx.array([1, 2]), 2)
    array([1, 1, 2, 2], dtype=int32)
)doc"},
    {{"pad"}, R"doc(Pads an array at the start and end of each axis.

Args:
    a (array): input array.
    pad_width (int, pair, or sequence of pairs): the widths: one int for
        every side of every axis, one ``(low, high)`` pair for every axis, or
        one pair per axis.
    mode (str): how the new elements are filled: ``'constant'`` (with
        ``constant_values``), ``'edge'`` (the nearest edge element),
        ``'reflect'`` (a mirror image without the edge element) or
        ``'symmetric'`` (a mirror image with it). Default: ``'constant'``.
    constant_values (scalar or array): the fill value for ``'constant'``.
        Default: 0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the padded array.

Example:
    >>> mx.pad(mx.array([1, 2]), 1)
    array([0, 1, 2, 0], dtype=int32)
    >>> mx.pad(mx.array([1, 2]), (1, 2), mode="edge")
    array([1, 1, 2, 2, 2], dtype=int32)
)doc"},
    {{"flip"}, R"doc(Reverses the order of the elements along the given axes.

Args:
    a (array): input array.
    axis (int or sequence of int, optional): the axes to reverse. Default:
        None, every axis.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a view with reversed axes.

Example:
    >>> mx.flip(mx.array([1, 2, 3]))
    array([3, 2, 1], dtype=int32)
)doc"},
    {{"roll"}, R"doc(Shifts elements cyclically along the given axes.

Elements pushed past the end come back at the start.

Args:
    a (array): input array.
    shift (int or sequence of int): the shift of each axis (one int for all).
    axis (int or sequence of int, optional): the axes to roll. Default:
        None, the flattened array (the result keeps the shape of ``a``).
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the rolled array.

Example:
    >>> mx.roll(mx.array([1, 2, 3]), 1)
    array([3, 1, 2], dtype=int32)
)doc"},
    {{"diff"}, R"doc(The n-th discrete difference along an axis.

The first difference is ``a[1:] - a[:-1]`` along the axis; higher ones
apply it ``n`` times, so the axis shrinks by ``n``.

Args:
    a (array): input array.
    n (int): how many times to take the difference; 0 returns ``a``.
        Default: 1.
    axis (int): the axis. Default: -1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the differences.

Example:
    >>> mx.diff(mx.array([1, 4, 9]))
    array([3, 5], dtype=int32)
)doc"},
    {{"diag", "array.diag"}, R"doc(Extracts a diagonal, or builds a diagonal matrix.

For a 2-d input, returns its ``k``-th diagonal; for a 1-d input, returns a
square matrix with the input on its ``k``-th diagonal and zeros
elsewhere.

Args:
    a (array): a 1-d or 2-d array.
    k (int): the diagonal: 0 is the main one, positive values are above it
        and negative values below. Default: 0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the diagonal (1-d) or the diagonal matrix (2-d).

Example:
    >>> mx.diag(mx.array([1, 2]))
    array([[1, 0],
           [0, 2]], dtype=int32)
)doc"},
    {{"diagonal", "array.diagonal"}, R"doc(Diagonals of the planes spanned by two axes.

The two axes are removed and the diagonal becomes the last axis of the
result.

Args:
    a (array): input with at least two dimensions.
    offset (int): which diagonal: positive values are above the main one
        and negative values below. Default: 0.
    axis1 (int): the first axis of the planes. Default: 0.
    axis2 (int): the second axis of the planes. Default: 1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the diagonals.

Example:
    >>> mx.diagonal(mx.arange(6).reshape(2, 3), 1)
    array([1, 5], dtype=int32)
)doc"},
    {{"trace"}, R"doc(Sum along the diagonals of the planes spanned by two axes.

Args:
    a (array): input with at least two dimensions.
    offset (int): which diagonal: positive values are above the main one
        and negative values below. Default: 0.
    axis1 (int): the first axis of the planes. Default: 0.
    axis2 (int): the second axis of the planes. Default: 1.
    dtype (Dtype, optional): the dtype of the sum. Default: None, as
        :func:`sum` chooses it.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the sums, with the two axes removed.

Example:
    >>> mx.trace(mx.arange(6).reshape(2, 3))
    array(4, dtype=int32)
)doc"},

    // ---- indexing ops ----
    {{"take"}, R"doc(Elements of an array at integer indices along an axis.

The dimensions of ``indices`` take the place of the axis in the result.
Negative indices count from the end. Out-of-range indices raise
IndexError when the result is evaluated (Ember never reads out of
bounds).

Args:
    a (array): input array.
    indices (array or int): integer indices, any shape.
    axis (int, optional): the axis to index. Default: None, index the
        flattened array.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the gathered elements.

Example:
    >>> x = mx.arange(6).reshape(2, 3)
    >>> mx.take(x, mx.array([0, 2]), axis=1)
    array([[0, 2],
           [3, 5]], dtype=int32)
    >>> mx.take(x, 4)
    array(4, dtype=int32)
)doc"},
    {{"take_along_axis"}, R"doc(Elements of an array at per-position indices along an axis.

``indices`` has as many dimensions as ``a`` and broadcasts with it on
every other axis; along ``axis`` it picks, position by position, which
element to take (the output of :func:`argsort` or :func:`argpartition`
fits). Out-of-range indices raise IndexError on evaluation.

Args:
    a (array): input array.
    indices (array): integer indices with the rank of ``a``.
    axis (int, optional): the axis to index. Default: -1; None indexes the
        flattened array with 1-d indices.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the selected elements.

Example:
    >>> x = mx.array([[3, 1, 2]])
    >>> mx.take_along_axis(x, mx.argsort(x), axis=1)
    array([[1, 2, 3]], dtype=int32)
)doc"},
    {{"put_along_axis"}, R"doc(A copy of an array with values written at per-position indices along an axis.

The writing counterpart of :func:`take_along_axis`: ``indices`` has the
rank of ``a``, and ``values`` broadcasts to the shape of ``indices``.
Where an index repeats, one of the writes wins. Out-of-range indices
raise IndexError on evaluation.

Args:
    a (array): input array.
    indices (array): integer indices with the rank of ``a``.
    values (array or scalar): the values to write.
    axis (int, optional): the axis to index. Default: None, the flattened
        array.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the updated copy.

Example:
    >>> x = mx.arange(6).reshape(2, 3)
    >>> mx.put_along_axis(x, mx.array([[0], [2]]), mx.array(9), axis=1)
    array([[9, 1, 2],
           [3, 4, 9]], dtype=int32)
)doc"},
    {{"slice"}, R"doc(A window of an array whose start is given by an array (a dynamic slice).

Unlike ``a[i:j]``, the start positions are array values, so they may be
computed (and change under ``vmap`` or between calls) without changing
the graph. Negative starts count from the end; a window that reaches
past the end raises IndexError on evaluation.

Args:
    a (array): input array.
    start_indices (array): integer start positions, one per entry of ``axes``.
    axes (sequence of int): the axes that ``start_indices`` refer to; the
        window starts at 0 on the others.
    slice_size (sequence of int): the window's length along every axis of ``a``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the window, of shape ``slice_size``.

Example:
    >>> x = mx.arange(6).reshape(2, 3)
    >>> mx.slice(x, mx.array([1]), [1], [2, 2])
    array([[1, 2],
           [4, 5]], dtype=int32)
)doc"},
    {{"slice_update"}, R"doc(A copy of an array with a window, at a start given by an array, overwritten.

The writing counterpart of :func:`slice`: the window has the shape of
``update`` and starts at ``start_indices`` along ``axes`` and at 0 along
the other axes. The update's dims line up with the trailing dims of
``a``; a leading dim the update lacks is whole (1 along ``axes``), so an
update of shape (1, 2) at column 1 of a (2, 3) array writes row 0 only.
A window past the end raises IndexError on evaluation.

Args:
    a (array): input array.
    update (array): the values to write.
    start_indices (array): integer start positions, one per entry of ``axes``.
    axes (sequence of int): the axes that ``start_indices`` refer to.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the updated copy.
)doc"},
    // ---- products ----
    {{"matmul"}, R"doc(Matrix product ``a @ b``, with NumPy's rules for batches and vectors.

The last two axes are the matrices and the leading (batch) axes
broadcast. A 1-d first operand is a row vector and a 1-d second operand
a column vector; their added axis is removed from the result. The
dtypes promote (integer products stay integer).

Args:
    a (array): the left operand, at least 1-d.
    b (array): the right operand, at least 1-d.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the products.

Example:
    >>> mx.matmul(mx.ones((5, 2, 3)), mx.ones((3, 4))).shape
    (5, 2, 4)
)doc"},
    {{"addmm"}, R"doc(Scaled matrix product plus a scaled addend: ``alpha * (a @ b) + beta * c``.

``c`` broadcasts to the shape of the product. Real floating types and complex64.
With ``beta == 0``, ``c`` is not read (NaNs in it do not propagate).

Args:
    c (array): the addend.
    a (array): the left matrix operand (batch axes broadcast as in :func:`matmul`).
    b (array): the right matrix operand.
    alpha (float): the factor of the product. Default: 1.0.
    beta (float): the factor of ``c``. Default: 1.0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the result.

Example:
    >>> mx.addmm(mx.ones((2,)), mx.ones((2, 3)), mx.ones((3, 2)), alpha=2.0, beta=0.5)
    array([[6.5, 6.5],
           [6.5, 6.5]], dtype=float32)
)doc"},
    {{"gather_mm"}, R"doc(Matrix products of matrices picked by index from two batches.

With ``A`` and ``B`` the matrices of ``a`` and ``b`` over their flattened
batch axes, ``out[i...] = A[lhs_indices[i...]] @ B[rhs_indices[i...]]``.
The index arrays broadcast together; a missing one indexes its operand's
own (broadcast) batch. Out-of-range indices raise IndexError when the
result is evaluated.

Args:
    a (array): the left operands, shape ``(..., M, K)``.
    b (array): the right operands, shape ``(..., K, N)``.
    lhs_indices (array, optional): integer indices into the batch of ``a``.
        Default: None.
    rhs_indices (array, optional): integer indices into the batch of ``b``.
        Default: None.
    sorted_indices (bool): a hint that the indices are sorted (for MLX
        compatibility; the result does not depend on it). Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the products, shape ``indices.shape + (M, N)``.

Example:
    >>> mx.gather_mm(mx.ones((3, 2, 2)), mx.ones((3, 2, 2)), mx.array([0, 2]), mx.array([1, 1])).shape
    (2, 2, 2)
)doc"},
    {{"segmented_mm"}, R"doc(Matrix products over segments of the contracted axis.

For each ``[start, end)`` pair in ``segments``, the product
``a[..., :, start:end] @ b[..., start:end, :]``. An empty segment gives
zeros.

Args:
    a (array): the left operand, shape ``(M, K)``.
    b (array): the right operand, shape ``(K, N)``.
    segments (array): integer pairs, shape ``(..., 2)``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: shape ``segments.shape[:-1] + (M, N)``.

Example:
    >>> mx.segmented_mm(mx.ones((2, 4)), mx.ones((4, 3)), mx.array([[0, 2], [2, 4]])).shape
    (2, 2, 3)
)doc"},
    {{"block_masked_mm"}, R"doc(Matrix product with block masks on the operands and the output.

Each mask has one entry per ``block_size x block_size`` block of what it
masks: ``mask_lhs`` of ``a``, ``mask_rhs`` of ``b`` and ``mask_out`` of the
product (batch axes broadcast). A boolean mask keeps or zeroes its
blocks; a numeric mask scales them.

Args:
    a (array): the left operand, shape ``(..., M, K)``.
    b (array): the right operand, shape ``(..., K, N)``.
    block_size (int): the side of the blocks, 32 or 64. Default: 64.
    mask_out (array, optional): the output's mask. Default: None.
    mask_lhs (array, optional): the mask of ``a``. Default: None.
    mask_rhs (array, optional): the mask of ``b``. Default: None.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the masked product.
)doc"},
    {{"hadamard_transform"}, R"doc(The Walsh-Hadamard transform along the last axis.

The length ``n`` must be ``m * 2**k`` with ``m`` one of 1, 12, 20 and 28:
the transform is ``kron(H_m, H_2**k)`` with Sylvester's ``H_2**k`` and the
same ``H_m`` as MLX. Integer and boolean inputs are computed in float32.

Args:
    a (array): input array.
    scale (float, optional): the factor applied to the result. Default:
        None, ``1 / sqrt(n)`` (which makes the transform orthonormal).
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the transformed array, shape of ``a``.

Example:
    >>> mx.hadamard_transform(mx.array([1.0, 0.0, 0.0, 0.0]))
    array([0.5, 0.5, 0.5, 0.5], dtype=float32)
)doc"},
    {{"inner"}, R"doc(Inner product: the sum of products over the last axes.

For 1-d inputs the dot product; otherwise the result has shape
``a.shape[:-1] + b.shape[:-1]``.

Args:
    a (array): first input.
    b (array): second input; its last axis has the length of that of ``a``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the inner products.

Example:
    >>> mx.inner(mx.array([1.0, 2.0]), mx.array([3.0, 4.0]))
    array(11, dtype=float32)
)doc"},
    {{"outer"}, R"doc(Outer product of two vectors (inputs are flattened).

``out[i, j] = a[i] * b[j]``.

Args:
    a (array): first input.
    b (array): second input.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: shape ``(a.size, b.size)``.

Example:
    >>> mx.outer(mx.array([1, 2]), mx.array([3, 4]))
    array([[3, 4],
           [6, 8]], dtype=int32)
)doc"},
    {{"kron"}, R"doc(Kronecker product of two arrays.

Each element of ``a`` is replaced by that element times ``b``: for two
matrices, a block matrix of ``b``-shaped blocks.

Args:
    a (array): first input.
    b (array): second input.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the product; each dimension is the product of the inputs' (the
    lower-rank one gets leading axes of length 1).

Example:
    >>> mx.kron(mx.array([1, 2]), mx.array([1, 10]))
    array([1, 10, 2, 20], dtype=int32)
)doc"},
    {{"tensordot"}, R"doc(Tensor dot product: sum of products over chosen axes of two arrays.

Args:
    a (array): first input.
    b (array): second input.
    axes (int or pair of sequences): an int ``n`` contracts the last ``n``
        axes of ``a`` with the first ``n`` of ``b``; a pair ``(axes_a, axes_b)``
        contracts those axes pairwise. Default: 2.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the free axes of ``a`` followed by those of ``b``.

Example:
    >>> mx.tensordot(mx.ones((2, 3)), mx.ones((3, 4)), axes=([1], [0])).shape
    (2, 4)
)doc"},
    {{"vecdot"}, R"doc(Vector dot product along an axis: ``sum(conj(a) * b, axis)``.

The inputs broadcast; complex first operands are conjugated.

Args:
    a (array): first input.
    b (array): second input.
    axis (int): the axis to contract. Default: -1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the dot products, without ``axis``.
)doc"},
    {{"einsum"}, R"doc(Einstein summation over the operands.

``subscripts`` names each operand's axes with letters (``'ij,jk->ik'``);
repeated letters are multiplied together and letters missing from the
output (after ``->``; when it is omitted, the letters used once, in
alphabetical order) are summed. ``...`` stands for broadcast axes. The operands are contracted
pairwise in the order :func:`einsum_path` reports, each contraction a
batched matmul.

Args:
    subscripts (str): the equation.
    *operands (array): the arrays, one per comma-separated term.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the result.

Example:
    >>> mx.einsum("ij,jk->ik", mx.ones((2, 3)), mx.ones((3, 4))).shape
    (2, 4)
    >>> mx.einsum("ii", mx.eye(3))
    array(3, dtype=float32)
)doc"},
    {{"einsum_path"}, R"doc(The contraction order that :func:`einsum` uses, and its cost.

Args:
    subscripts (str): the equation, as for :func:`einsum`.
    *operands (array): the operands (only their shapes matter).

Returns:
    tuple(list, str): the path, a list of tuples of operand positions
    contracted at each step, and a text report of the naive and optimized
    scaling and FLOP counts.

Example:
    >>> mx.einsum_path("ij,jk->ik", mx.ones((2, 3)), mx.ones((3, 4)))[0]
    [(0, 1)]
)doc"},
    {{"convolve"}, R"doc(Discrete linear convolution of two 1-d arrays.

``out[n] = sum_m a[m] * v[n - m]`` (``v`` is flipped, unlike in the
convolution layers).

Args:
    a (array): first 1-d input.
    v (array): second 1-d input.
    mode (str): ``'full'`` gives every overlap (length ``len(a) + len(v) - 1``),
        ``'same'`` the central part of the length of the longer input, and
        ``'valid'`` only the full overlaps. Default: ``'full'``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the convolution, 1-d.

Example:
    >>> mx.convolve(mx.array([1.0, 2.0, 3.0]), mx.array([0.0, 1.0, 0.5]))
    array([0, 1, 2.5, 4, 1.5], dtype=float32)
)doc"},

    // ---- convolution layers (channels last) ----
    {{"conv1d"}, R"doc(1-d convolution (a cross-correlation, as in neural-network layers).

Channels are last: ``input`` is ``(N, L, C_in)`` and ``weight``
``(C_out, K, C_in / groups)``; the output length is
``(L + 2 * padding - dilation * (K - 1) - 1) // stride + 1``.

Args:
    input (array): the input, shape ``(N, L, C_in)``.
    weight (array): the kernels, shape ``(C_out, K, C_in / groups)``.
    stride (int): the step between output positions. Default: 1.
    padding (int): zeros added at both ends. Default: 0.
    dilation (int): the spacing between kernel taps. Default: 1.
    groups (int): splits the channels into that many independent groups;
        ``C_in`` and ``C_out`` must be divisible by it. Default: 1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the output, shape ``(N, L_out, C_out)``.

Example:
    >>> mx.conv1d(mx.ones((1, 5, 2)), mx.ones((4, 3, 2))).shape
    (1, 3, 4)
)doc"},
    {{"conv2d"}, R"doc(2-d convolution (a cross-correlation, as in neural-network layers).

Channels are last: ``input`` is ``(N, H, W, C_in)`` and ``weight``
``(C_out, KH, KW, C_in / groups)``.

Args:
    input (array): the input, shape ``(N, H, W, C_in)``.
    weight (array): the kernels, shape ``(C_out, KH, KW, C_in / groups)``.
    stride (int or pair): the step between output positions. Default: 1.
    padding (int or pair): zeros added at both ends of each spatial axis.
        Default: 0.
    dilation (int or pair): the spacing between kernel taps. Default: 1.
    groups (int): the number of independent channel groups. Default: 1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the output, shape ``(N, H_out, W_out, C_out)``.

Example:
    >>> mx.conv2d(mx.ones((1, 5, 5, 2)), mx.ones((4, 3, 3, 2)), padding=1).shape
    (1, 5, 5, 4)
)doc"},
    {{"conv3d"}, R"doc(3-d convolution (a cross-correlation, as in neural-network layers).

Channels are last: ``input`` is ``(N, D, H, W, C_in)`` and ``weight``
``(C_out, KD, KH, KW, C_in / groups)``.

Args:
    input (array): the input, shape ``(N, D, H, W, C_in)``.
    weight (array): the kernels, shape ``(C_out, KD, KH, KW, C_in / groups)``.
    stride (int or triple): the step between output positions. Default: 1.
    padding (int or triple): zeros added at both ends of each spatial axis.
        Default: 0.
    dilation (int or triple): the spacing between kernel taps. Default: 1.
    groups (int): the number of independent channel groups. Default: 1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the output, shape ``(N, D_out, H_out, W_out, C_out)``.
)doc"},
    {{"conv_general"}, R"doc(General convolution over 1 to 3 spatial axes.

``input`` is ``(N, *spatial, C_in)`` and ``weight``
``(C_out, *kernel, C_in / groups)``. The other convolutions are special
cases of this one.

Args:
    input (array): the input.
    weight (array): the kernels.
    stride (int or sequence): the step between output positions. Default: 1.
    padding (int, sequence, or pair of sequences): zeros added at both
        ends (one value per axis), or ``(low, high)`` sequences for
        asymmetric padding; negative values crop. Default: 0.
    kernel_dilation (int or sequence): the spacing between kernel taps.
        Default: 1.
    input_dilation (int or sequence): the spacing of the input elements
        (``d - 1`` zeros inserted between neighbours, as transposed
        convolutions need). Default: 1.
    groups (int): the number of independent channel groups. Default: 1.
    flip (bool): flip the kernels, computing a convolution instead of a
        cross-correlation. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the output, ``(N, *spatial_out, C_out)``.
)doc"},
    {{"conv_transpose1d"}, R"doc(1-d transposed convolution (the gradient of :func:`conv1d` with respect to its input).

``input`` is ``(N, L, C_in)`` and ``weight`` ``(C_out, K, C_in / groups)``;
the output length is
``(L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1``.

Args:
    input (array): the input, shape ``(N, L, C_in)``.
    weight (array): the kernels, shape ``(C_out, K, C_in / groups)``.
    stride (int): the upsampling step. Default: 1.
    padding (int): the padding of the matching forward convolution.
        Default: 0.
    dilation (int): the spacing between kernel taps. Default: 1.
    output_padding (int): extra length added at the end of the output.
        Default: 0.
    groups (int): the number of independent channel groups. Default: 1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the output, shape ``(N, L_out, C_out)``.

Example:
    >>> mx.conv_transpose1d(mx.ones((1, 5, 2)), mx.ones((4, 3, 2)), stride=2).shape
    (1, 11, 4)
)doc"},
    {{"conv_transpose2d"}, R"doc(2-d transposed convolution (the gradient of :func:`conv2d` with respect to its input).

``input`` is ``(N, H, W, C_in)`` and ``weight``
``(C_out, KH, KW, C_in / groups)``; each spatial output length is
``(L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1``.

Args:
    input (array): the input.
    weight (array): the kernels.
    stride (int or pair): the upsampling step. Default: 1.
    padding (int or pair): the padding of the matching forward
        convolution. Default: 0.
    dilation (int or pair): the spacing between kernel taps. Default: 1.
    output_padding (int or pair): extra length at the end of each spatial
        axis. Default: 0.
    groups (int): the number of independent channel groups. Default: 1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the output, shape ``(N, H_out, W_out, C_out)``.
)doc"},
    {{"conv_transpose3d"}, R"doc(3-d transposed convolution (the gradient of :func:`conv3d` with respect to its input).

``input`` is ``(N, D, H, W, C_in)`` and ``weight``
``(C_out, KD, KH, KW, C_in / groups)``; each spatial output length is
``(L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1``.

Args:
    input (array): the input.
    weight (array): the kernels.
    stride (int or triple): the upsampling step. Default: 1.
    padding (int or triple): the padding of the matching forward
        convolution. Default: 0.
    dilation (int or triple): the spacing between kernel taps. Default: 1.
    output_padding (int or triple): extra length at the end of each
        spatial axis. Default: 0.
    groups (int): the number of independent channel groups. Default: 1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the output, shape ``(N, D_out, H_out, W_out, C_out)``.
)doc"},
    // ---- fast ----
    {{"fast"}, R"doc(Fused kernels: normalisations, rotary embeddings, attention, cross entropy and the gated delta rule.

Each function is one fused node with its own multithreaded kernel; the
results equal the composition of ordinary ops within rounding, and all of
them support grad, jvp and vmap.
)doc"},
    {{"fast.rms_norm"}, R"doc(Root-mean-square normalisation over the last axis.

Computes ``x / sqrt(mean(x ** 2, axis=-1) + eps) * weight``, in float32 for
float16 and bfloat16 inputs. The output dtype promotes ``x`` and ``weight``.

Args:
    x (array): input with at least one dimension.
    weight (array, optional): scale of shape ``(x.shape[-1],)``, or None for
        no scale.
    eps (float): added to the mean square for numerical stability.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the normalised array, shape of ``x``.

Example:
    >>> mx.fast.rms_norm(mx.array([[3.0, 4.0]]), None, 0.0)
    array([[0.848528, 1.13137]], dtype=float32)
)doc"},
    {{"fast.layer_norm"}, R"doc(Layer normalisation over the last axis.

Computes ``(x - mean) / sqrt(var + eps) * weight + bias`` with the mean and
(biased) variance of the last axis, in float32 for half inputs. The output
dtype promotes ``x`` and ``weight`` (the bias takes that dtype, as in MLX).

Args:
    x (array): input with at least one dimension.
    weight (array, optional): scale of shape ``(x.shape[-1],)``, or None.
    bias (array, optional): shift of shape ``(x.shape[-1],)``, or None.
    eps (float): added to the variance for numerical stability.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the normalised array, shape of ``x``.
)doc"},
    {{"fast.rope"}, R"doc(Rotary position embedding.

Row ``l`` of the second-to-last axis has position ``(offset + l) * scale``;
feature pair ``i`` of the first ``dims`` features is rotated by the angle
``position * base ** (-2 i / dims)``, or ``position / freqs[i]``. The pairs
are ``(i, i + dims / 2)``, or ``(2 i, 2 i + 1)`` when ``traditional``; the
features past ``dims`` pass through unchanged.

Args:
    a (array): input of shape ``(..., L, D)`` with at least 3 dimensions.
    dims (int): the number of features to rotate (even, at most ``D``).
    traditional (bool): rotate consecutive pairs instead of the two halves.
    base (float, optional): base of the frequencies; exactly one of ``base``
        and ``freqs`` is given.
    scale (float): multiplies the positions.
    offset (int or array): position of the first row: an integer, or an
        integer array that is a scalar or has one entry per ``a.shape[0]``.
    freqs (array, optional): the ``dims / 2`` wavelengths, instead of
        ``base``. Default: None.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the rotated array, shape and dtype of ``a``.
)doc"},
    {{"fast.scaled_dot_product_attention"}, R"doc(Scaled dot-product attention.

Computes ``softmax(scale * q @ k.T + mask) @ v`` per head without forming the
whole score matrix: keys are taken a block at a time with a running
(online) softmax. ``k`` and ``v`` may have fewer heads than ``q`` (grouped
query attention): query head ``h`` uses key/value head ``h // (Hq // Hk)``.

Args:
    q (array): queries ``(B, Hq, L, D)``.
    k (array): keys ``(B, Hk, S, D)``, ``Hq`` a multiple of ``Hk``.
    v (array): values ``(B, Hk, S, Dv)``.
    scale (float): multiplies the scores, usually ``1 / sqrt(D)``.
    mask (str or array, optional): None; ``"causal"`` (query ``l`` sees the
        keys ``j <= l + S - L``); a boolean array (keep where True); or an
        array added to the scores. Arrays broadcast to ``(B, Hq, L, S)``.
        Default: None.
    sinks (array, optional): one logit per query head ``(Hq,)``, an extra
        key without value that takes part in the softmax. Default: None.
    force_fused (bool): accepted for MLX compatibility; the CPU kernel is
        always fused. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: ``(B, Hq, L, Dv)`` in the promoted dtype of ``q``, ``k``, ``v``.
)doc"},
    {{"fast.cross_entropy"}, R"doc(Cross entropy with class indices as targets.

Computes ``logsumexp(logits, axis=-1) - take_along_axis(logits, targets)``
in one pass over each row, accumulating in float32 (float64 for float64
logits). Negative targets count from the end; a target outside
``[-C, C)`` raises IndexError when the result is evaluated.

Args:
    logits (array): unnormalised scores ``(..., C)`` of a floating type.
    targets (array): integer class indices of shape ``logits.shape[:-1]``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the per-element loss, shape of ``targets``, float32 (float64 for
    float64 logits).

Example:
    >>> mx.fast.cross_entropy(mx.array([[0.0, 0.0]]), mx.array([1]))
    array([0.693147], dtype=float32)
)doc"},
    {{"fast.gated_delta_update"}, R"doc(The gated delta rule (Gated DeltaNet's recurrence).

For each batch element and value head, with the state ``S`` of shape
``(Dv, Dk)`` and key head ``h // (Hv // Hk)``, each time step computes
``S = S * g_t``, ``S = S + beta_t * (v_t - S @ k_t) k_t^T`` and
``y_t = S @ q_t``. A masked-out step leaves ``S`` unchanged and gives
``y_t = 0``. The state is kept in float32 (float64 for float64 inputs).

Args:
    q (array): queries ``(B, T, Hk, Dk)``.
    k (array): keys ``(B, T, Hk, Dk)``.
    v (array): values ``(B, T, Hv, Dv)``, ``Hv`` a multiple of ``Hk``.
    gamma (array): the decay ``(B, T, Hv)``, or ``(B, T, Hv, Dk)`` for a
        decay per key feature.
    beta (array): the update rates ``(B, T, Hv)``.
    initial_state (array, optional): ``(B, Hv, Dv, Dk)``; zeros when None.
        Default: None.
    mask (array, optional): ``(B, T)``; steps where it is False (0) are
        skipped. Default: None.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    list(array): ``[y, state]``: the outputs ``(B, T, Hv, Dv)`` in the dtype
    of ``q`` and the final state ``(B, Hv, Dv, Dk)``.
)doc"},
    // ---- linalg ----
    {{"linalg"}, R"doc(Linear algebra: norms, inverses, linear solves and matrix factorizations.

Every function works on the last two axes and treats leading axes as a
batch. The factorizations call LAPACK (from OpenBLAS) on float32 and
float64 inputs; a matrix that LAPACK rejects (singular, not positive
definite, no convergence) raises ValueError when the result is evaluated.
)doc"},
    {{"linalg.norm"}, R"doc(Vector or matrix norm.

With ``ord`` and ``axis`` both None, the 2-norm of the flattened array
(the Frobenius norm of a matrix). One axis (or a 1-d input with ``axis``
None) gives vector norms; two axes (or a 2-d input) give matrix norms.
``ember.core.matrix_norm`` is the same function.

Vector norms (``ord``): None or 2 is the Euclidean norm, ``inf`` the
largest absolute value, ``-inf`` the smallest, 0 the number of nonzero
elements, and any other number ``p`` gives ``sum(|x| ** p) ** (1 / p)``.

Matrix norms (``ord``): None or ``'fro'`` is the Frobenius norm, ``'nuc'``
the sum of the singular values, ``inf`` / ``-inf`` the largest / smallest
row sum of absolute values, 1 / -1 the largest / smallest column sum, and
2 / -2 the largest / smallest singular value.

Args:
    a (array): input array.
    ord (int, float, str, optional): the kind of norm, as above. Default: None.
    axis (int or pair of int, optional): the vector axis or the two matrix
        axes. Default: None.
    keepdims (bool): keep the reduced axes with length 1. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the norms, a real floating array.

Example:
    >>> mx.linalg.norm(mx.array([3.0, 4.0]))
    array(5, dtype=float32)
)doc"},
    {{"linalg.inv"}, R"doc(Inverse of each square matrix.

A singular matrix raises ValueError when the result is evaluated.

Args:
    a (array): input of shape ``(..., n, n)``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the inverses, shape of ``a``.

Example:
    >>> mx.linalg.inv(mx.array([[4.0, 1.0], [2.0, 3.0]]))
    array([[0.3, -0.1],
           [-0.2, 0.4]], dtype=float32)
)doc"},
    {{"linalg.tri_inv"}, R"doc(Inverse of each triangular matrix.

Only the chosen triangle of ``a`` is read; the other triangle of the
result is zero.

Args:
    a (array): input of shape ``(..., n, n)``.
    upper (bool): use the upper triangle instead of the lower. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the triangular inverses.
)doc"},
    {{"linalg.pinv"}, R"doc(Moore-Penrose pseudo-inverse of each matrix, through the SVD.

Singular values below ``max(M, N) * eps * s_max`` are treated as zero.

Args:
    a (array): input of shape ``(..., M, N)``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the pseudo-inverses, shape ``(..., N, M)``.
)doc"},
    {{"linalg.solve"}, R"doc(Solves the linear systems ``a @ x = b``.

``a`` holds square matrices; ``b`` is a vector of shape ``(n,)`` or
matrices of shape ``(..., n, k)``. Batch axes broadcast. A singular ``a``
raises ValueError when the result is evaluated.

Args:
    a (array): the coefficient matrices, ``(..., n, n)``.
    b (array): the right-hand sides.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the solutions ``x``, shaped like ``b`` (after broadcasting).

Example:
    >>> mx.linalg.solve(mx.array([[4.0, 1.0], [2.0, 3.0]]), mx.array([1.0, 2.0]))
    array([0.1, 0.6], dtype=float32)
)doc"},
    {{"linalg.solve_triangular"}, R"doc(Solves ``t @ x = b`` where ``t`` is the lower (or upper) triangle of ``a``.

Only that triangle of ``a`` is read.

Args:
    a (array): the matrices, ``(..., n, n)``.
    b (array): the right-hand sides, ``(..., n)`` or ``(..., n, k)``.
    upper (bool): use the upper triangle. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the solutions.
)doc"},
    {{"linalg.cholesky"}, R"doc(Cholesky factor of each symmetric positive-definite matrix.

The lower factor ``L`` with ``A = L @ L.T``, or the upper one ``U`` with
``A = U.T @ U``; only that triangle of ``a`` is read. A matrix that is not
positive definite raises ValueError when the result is evaluated.

Args:
    a (array): input of shape ``(..., n, n)``.
    upper (bool): return the upper factor. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the triangular factors (the other triangle is zero).

Example:
    >>> mx.linalg.cholesky(mx.array([[4.0, 2.0], [2.0, 2.0]]))
    array([[2, 0],
           [1, 1]], dtype=float32)
)doc"},
    {{"linalg.cholesky_inv"}, R"doc(Inverse of a symmetric positive-definite matrix from its Cholesky factor.

Given ``L`` (or ``U`` with ``upper=True``) from :func:`cholesky`, returns
the inverse of ``L @ L.T`` (or ``U.T @ U``).

Args:
    a (array): the Cholesky factors, ``(..., n, n)``.
    upper (bool): whether ``a`` holds upper factors. Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the inverses of the original matrices.
)doc"},
    {{"linalg.qr"}, R"doc(Reduced QR factorization of each matrix: ``a = Q @ R``.

Args:
    a (array): input of shape ``(..., M, N)``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    tuple(array, array): ``Q`` of shape ``(..., M, K)`` with orthonormal
    columns and upper-triangular ``R`` of shape ``(..., K, N)``, where
    ``K = min(M, N)``.
)doc"},
    {{"linalg.svd"}, R"doc(Singular value decomposition of each matrix: ``a = U @ diag(S) @ Vt``.

Args:
    a (array): input of shape ``(..., M, N)``.
    compute_uv (bool): also compute the singular vectors. Default: True.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    tuple(array, array, array) or array: ``(U, S, Vt)`` with the full
    ``U`` ``(..., M, M)``, ``S`` ``(..., min(M, N))`` in descending order and
    the full ``Vt`` ``(..., N, N)``; only ``S`` when ``compute_uv`` is False.

Example:
    >>> mx.linalg.svd(mx.array([[3.0, 0.0], [0.0, 4.0]]), compute_uv=False)
    array([4, 3], dtype=float32)
)doc"},
    {{"linalg.eig"}, R"doc(Eigenvalues and right eigenvectors of general square matrices.

Args:
    a (array): input of shape ``(..., n, n)``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    tuple(array, array): the eigenvalues ``(..., n)`` and the eigenvectors
    as the columns of ``(..., n, n)``, both complex64.
)doc"},
    {{"linalg.eigvals"}, R"doc(Eigenvalues of general square matrices.

Args:
    a (array): input of shape ``(..., n, n)``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the eigenvalues, complex64, shape ``(..., n)``.
)doc"},
    {{"linalg.eigh"}, R"doc(Eigenvalues and eigenvectors of symmetric (Hermitian) matrices.

Only one triangle of ``a`` is read.

Args:
    a (array): input of shape ``(..., n, n)``.
    UPLO (str): ``'L'`` reads the lower triangle, ``'U'`` the upper one.
        Default: ``'L'``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    tuple(array, array): the eigenvalues in ascending order ``(..., n)``
    and orthonormal eigenvectors as the columns of ``(..., n, n)``.
)doc"},
    {{"linalg.eigvalsh"}, R"doc(Eigenvalues of symmetric (Hermitian) matrices, in ascending order.

Args:
    a (array): input of shape ``(..., n, n)``.
    UPLO (str): ``'L'`` reads the lower triangle, ``'U'`` the upper one.
        Default: ``'L'``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the eigenvalues, shape ``(..., n)``.

Example:
    >>> mx.linalg.eigvalsh(mx.array([[2.0, 1.0], [1.0, 2.0]]))
    array([1, 3], dtype=float32)
)doc"},
    {{"linalg.lu"}, R"doc(LU factorization with partial pivoting.

Args:
    a (array): input of shape ``(..., M, N)``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    tuple(array, array, array): ``(P, L, U)``: the row permutation ``P`` as
    uint32 indices ``(..., M)``, unit lower-triangular ``L`` ``(..., M, K)`` and
    upper-triangular ``U`` ``(..., K, N)`` with ``K = min(M, N)``, such that
    ``a = L[P] @ U`` (``L`` with its rows taken in the order ``P``).
)doc"},
    {{"linalg.lu_factor"}, R"doc(LU factorization with partial pivoting, in LAPACK's packed form.

Args:
    a (array): input of shape ``(..., M, N)``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    tuple(array, array): the factors packed in one matrix (``L`` below the
    diagonal, its unit diagonal implied, and ``U`` on and above it), and
    the 0-based pivots (uint32): row ``i`` was swapped with row ``pivots[i]``.
)doc"},
    {{"linalg.det"}, R"doc(Determinant of each square matrix.

Integer inputs are computed in float32.

Args:
    a (array): input of shape ``(..., n, n)``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the determinants, shape ``(...)``.

Example:
    >>> mx.linalg.det(mx.array([[4.0, 1.0], [2.0, 3.0]]))
    array(10, dtype=float32)
)doc"},
    {{"linalg.slogdet"}, R"doc(Sign and natural log of the absolute determinant of each square matrix.

More robust than :func:`det` for large matrices, whose determinant
overflows. A singular matrix gives sign 0 and log -inf.

Args:
    a (array): input of shape ``(..., n, n)``.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    tuple(array, array): ``(sign, logabsdet)`` with ``det = sign * exp(logabsdet)``.
)doc"},
    {{"linalg.cross"}, R"doc(Cross product of 3-vectors along an axis.

2-vectors get a zero third component. The inputs broadcast.

Args:
    a (array): first input; the axis has length 2 or 3.
    b (array): second input.
    axis (int): the axis holding the vectors. Default: -1.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the cross products (3 components along ``axis``).

Example:
    >>> mx.linalg.cross(mx.array([1.0, 0.0, 0.0]), mx.array([0.0, 1.0, 0.0]))
    array([0, 0, 1], dtype=float32)
)doc"},
    // ---- fft ----
    {{"fft"}, R"doc(Discrete Fourier transforms, with NumPy's semantics.

Forward transforms return complex64 (real inputs are converted), the
inverse real transforms float32. Each transformed axis may be cropped or
zero-padded to a given length first (``n`` or ``s``).
)doc"},
    {{"fft.fft"}, R"doc(One-dimensional discrete Fourier transform along an axis.

``out[k] = sum_t a[t] * exp(-2j * pi * k * t / n)``.

Args:
    a (array): input array (real inputs are converted to complex).
)doc" EMBER_DOC_FFT1_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the transform, complex64; the axis has length ``n``.

Example:
    >>> mx.fft.fft(mx.array([1.0, 0.0, 0.0, 0.0]))
    array([1+0j, 1+0j, 1+0j, 1+0j], dtype=complex64)
)doc"},
    {{"fft.ifft"}, R"doc(One-dimensional inverse discrete Fourier transform along an axis.

``out[t] = (1/n) * sum_k a[k] * exp(2j * pi * k * t / n)`` with the default
``norm``; ``ifft(fft(a)) == a`` up to rounding.

Args:
    a (array): input array.
)doc" EMBER_DOC_FFT1_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the inverse transform, complex64.
)doc"},
    {{"fft.rfft"}, R"doc(Discrete Fourier transform of a real signal along an axis.

Only the ``n // 2 + 1`` non-negative frequencies are returned (the others
are their complex conjugates). A complex input uses its real part.

Args:
    a (array): input array.
)doc" EMBER_DOC_FFT1_ARGS EMBER_DOC_STREAM R"doc(
Returns:
    array: the half spectrum, complex64; the axis has length ``n // 2 + 1``.
)doc"},
    {{"fft.irfft"}, R"doc(Inverse of :func:`rfft`: the real signal with a given half spectrum.

The input along ``axis`` is cropped or zero-padded to ``n // 2 + 1``
frequency bins.

Args:
    a (array): the half spectrum.
    n (int, optional): the length of the output signal. Default: None,
        ``2 * (m - 1)`` where ``m`` is the input's length along ``axis``.
    axis (int): the axis to transform. Default: -1.
    norm (str): the scaling, as for :func:`fft`. Default: ``'backward'``
        (``1/n`` here).
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the signal, float32; the axis has length ``n``.

Example:
    >>> mx.fft.irfft(mx.fft.rfft(mx.array([1.0, 2.0, 3.0, 4.0])))
    array([1, 2, 3, 4], dtype=float32)
)doc"},
    {{"fft.fft2"}, R"doc(Two-dimensional discrete Fourier transform.

Args:
    a (array): input array.
)doc" EMBER_DOC_FFT_S R"doc(    axes (sequence of int): the two axes to transform. Default: ``[-2, -1]``.
)doc" EMBER_DOC_FFT_NORM EMBER_DOC_STREAM R"doc(
Returns:
    array: the transform, complex64.
)doc"},
    {{"fft.ifft2"}, R"doc(Two-dimensional inverse discrete Fourier transform.

Args:
    a (array): input array.
)doc" EMBER_DOC_FFT_S R"doc(    axes (sequence of int): the two axes to transform. Default: ``[-2, -1]``.
)doc" EMBER_DOC_FFT_NORM EMBER_DOC_STREAM R"doc(
Returns:
    array: the inverse transform, complex64.
)doc"},
    {{"fft.rfft2"}, R"doc(Two-dimensional discrete Fourier transform of a real input.

:func:`rfft` over the last of ``axes`` (which keeps ``n // 2 + 1`` bins),
then :func:`fft` over the other.

Args:
    a (array): input array.
)doc" EMBER_DOC_FFT_S R"doc(    axes (sequence of int): the two axes to transform. Default: ``[-2, -1]``.
)doc" EMBER_DOC_FFT_NORM EMBER_DOC_STREAM R"doc(
Returns:
    array: the transform, complex64.
)doc"},
    {{"fft.irfft2"}, R"doc(Inverse of :func:`rfft2`.

:func:`ifft` over the first of ``axes``, then :func:`irfft` over the last
(default output length ``2 * (m - 1)`` there).

Args:
    a (array): the half spectrum.
)doc" EMBER_DOC_FFT_S R"doc(    axes (sequence of int): the two axes to transform. Default: ``[-2, -1]``.
)doc" EMBER_DOC_FFT_NORM EMBER_DOC_STREAM R"doc(
Returns:
    array: the real result, float32.
)doc"},
    {{"fft.fftn"}, R"doc(N-dimensional discrete Fourier transform.

Args:
    a (array): input array.
)doc" EMBER_DOC_FFT_S R"doc(    axes (sequence of int, optional): the axes to transform. Default: None,
        every axis (``s`` then must be None too: with ``s``, give ``axes``).
)doc" EMBER_DOC_FFT_NORM EMBER_DOC_STREAM R"doc(
Returns:
    array: the transform, complex64.
)doc"},
    {{"fft.ifftn"}, R"doc(N-dimensional inverse discrete Fourier transform.

Args:
    a (array): input array.
)doc" EMBER_DOC_FFT_S R"doc(    axes (sequence of int, optional): the axes to transform. Default: None,
        every axis (``s`` then must be None too: with ``s``, give ``axes``).
)doc" EMBER_DOC_FFT_NORM EMBER_DOC_STREAM R"doc(
Returns:
    array: the inverse transform, complex64.
)doc"},
    {{"fft.rfftn"}, R"doc(N-dimensional discrete Fourier transform of a real input.

:func:`rfft` over the last of ``axes``, then :func:`fft` over the others.

Args:
    a (array): input array.
)doc" EMBER_DOC_FFT_S R"doc(    axes (sequence of int, optional): the axes to transform. Default: None,
        every axis (``s`` then must be None too: with ``s``, give ``axes``).
)doc" EMBER_DOC_FFT_NORM EMBER_DOC_STREAM R"doc(
Returns:
    array: the transform, complex64.
)doc"},
    {{"fft.irfftn"}, R"doc(Inverse of :func:`rfftn`.

:func:`ifft` over all but the last of ``axes``, then :func:`irfft` over the
last (default output length ``2 * (m - 1)`` there).

Args:
    a (array): the half spectrum.
)doc" EMBER_DOC_FFT_S R"doc(    axes (sequence of int, optional): the axes to transform. Default: None,
        every axis (``s`` then must be None too: with ``s``, give ``axes``).
)doc" EMBER_DOC_FFT_NORM EMBER_DOC_STREAM R"doc(
Returns:
    array: the real result, float32.
)doc"},
    {{"fft.fftfreq"}, R"doc(The sample frequencies of an ``n``-point :func:`fft`.

``[0, 1, ..., n//2 - 1, -n//2, ..., -1] / (d * n)`` for even ``n`` (the
positive frequencies first, then the negative ones).

Args:
    n (int): the transform length.
    d (float): the sample spacing. Default: 1.0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: ``n`` frequencies, float32.

Example:
    >>> mx.fft.fftfreq(4)
    array([0, 0.25, -0.5, -0.25], dtype=float32)
)doc"},
    {{"fft.rfftfreq"}, R"doc(The sample frequencies of an ``n``-point :func:`rfft`.

``[0, 1, ..., n // 2] / (d * n)``.

Args:
    n (int): the transform length.
    d (float): the sample spacing. Default: 1.0.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: ``n // 2 + 1`` frequencies, float32.
)doc"},
    {{"fft.fftshift"}, R"doc(Moves the zero-frequency bin to the centre of the spectrum.

Rolls each of ``axes`` by ``n // 2``.

Args:
    a (array): the spectrum.
    axes (sequence of int, optional): the axes to shift. Default: None,
        every axis.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the shifted array.

Example:
    >>> mx.fft.fftshift(mx.arange(5))
    array([3, 4, 0, 1, 2], dtype=int32)
)doc"},
    {{"fft.ifftshift"}, R"doc(Inverse of :func:`fftshift`: rolls each of ``axes`` by ``-(n // 2)``.

Args:
    a (array): the shifted spectrum.
    axes (sequence of int, optional): the axes to shift. Default: None,
        every axis.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the unshifted array.
)doc"},
    {{"fft.stft"}, R"doc(Short-time Fourier transform of the last axis.

The signal is cut into frames of ``n_fft`` samples, ``hop_length`` apart;
each frame is multiplied by ``window`` and transformed.

Args:
    x (array): the signal, shape ``(..., T)``.
    n_fft (int): the frame (and transform) length. Default: 2048.
    hop_length (int, optional): the step between frames. Default: None,
        ``n_fft // 4``.
    win_length (int, optional): the window length when ``window`` is not
        given. Default: None, ``n_fft``.
    window (array, optional): the window, at most ``n_fft`` long and
        centred and zero-padded to it. Default: None, ones of ``win_length``.
    center (bool): pad the signal by ``n_fft // 2`` on both sides first, so
        that frame ``t`` is centred on sample ``t * hop_length``. Default: True.
    pad_mode (str): how ``center`` pads: ``'reflect'``, ``'constant'``
        (zeros) or ``'edge'``. Default: ``'reflect'``.
    norm (str): the scaling of each frame's transform, as for :func:`fft`.
        Default: ``'backward'``.
    onesided (bool, optional): keep only the ``n_fft // 2 + 1``
        non-negative frequencies. Default: None, True for a real signal.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: complex64 of shape ``(..., n_freq, n_frames)``.

Example:
    >>> mx.fft.stft(mx.ones((1000,)), n_fft=256).shape
    (129, 16)
)doc"},
    {{"fft.istft"}, R"doc(Inverse short-time Fourier transform: the signal from its :func:`stft`.

Each frame's inverse transform is multiplied by ``window`` and the frames
are overlap-added, then divided by the overlap-added squared window.

Args:
    stft_matrix (array): the frames' spectra, ``(..., n_freq, n_frames)``.
    n_fft (int, optional): the frame length. Default: None,
        ``2 * (n_freq - 1)`` when ``onesided``, ``n_freq`` otherwise.
    hop_length (int, optional): the step between frames. Default: None,
        ``n_fft // 4``.
    win_length (int, optional): the window length when ``window`` is not
        given. Default: None, ``n_fft``.
    window (array, optional): the window used by the forward transform.
        Default: None, ones of ``win_length``.
    center (bool): whether the forward transform padded by ``n_fft // 2``
        (that padding is dropped). Default: True.
    norm (str): the scaling, as for :func:`fft`. Default: ``'backward'``.
    onesided (bool, optional): whether the spectra hold only the
        non-negative frequencies. Default: None, True.
    length (int, optional): crop or zero-pad the result to this length.
        Default: None.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: the signal, float32, shape ``(..., length)``.
)doc"},
    // ---- random ----
    {{"random"}, R"doc(Random sampling with counter-based PRNG keys.

Keys are uint32 arrays of shape ``(2,)`` and the bits come from
Threefry-2x32 with JAX's and MLX's layout, so a key gives the same samples
on every run, thread count and ISA level. Samplers called without a key
split the global key (set by :func:`seed`); pass keys explicitly (split
with :func:`split`) for reproducible, independent streams.
)doc"},
    {{"random.key"}, R"doc(A PRNG key from an integer seed.

Args:
    seed (int): the seed; the key is ``(seed >> 32, seed & 0xffffffff)``.

Returns:
    array: a uint32 array of shape ``(2,)``.

Example:
    >>> mx.random.key(0)
    array([0, 0], dtype=uint32)
)doc"},
    {{"random.split"}, R"doc(Splits a key into new, independent keys.

Use one of the new keys for sampling and another for further splitting;
never reuse a key for two different purposes.

Args:
    key (array): the key to split.
    num (int): how many keys. Default: 2.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: a uint32 array of shape ``(num, 2)``.

Example:
    >>> k1, k2 = mx.random.split(mx.random.key(0))
)doc"},
    {{"random.seed"}, R"doc(Seeds the global key that samplers use when called without ``key``.

Args:
    seed (int): the seed.

Returns:
    None
)doc"},
    {{"random.bits"}, R"doc(Uniformly random bits, as unsigned integers.

Args:
    shape (sequence of int): the shape. Default: ``[]`` (a scalar).
    width (int): the bytes per element: 1, 2 or 4 for uint8, uint16 or
        uint32. Default: 4.
)doc" EMBER_DOC_KEY EMBER_DOC_STREAM R"doc(
Returns:
    array: the random bits.
)doc"},
    {{"random.uniform"}, R"doc(Samples from the uniform distribution on ``[low, high)``.

``low`` and ``high`` broadcast against ``shape``. A sample never equals
``high``, also after rounding to ``dtype``.

Args:
    low (scalar or array): the lower bound (included). Default: 0.
    high (scalar or array): the upper bound (excluded). Default: 1.
    shape (sequence of int): the shape of the samples. Default: ``[]``.
    dtype (Dtype): a floating dtype. Default: float32.
)doc" EMBER_DOC_KEY EMBER_DOC_STREAM R"doc(
Returns:
    array: the samples.

Example:
    >>> mx.random.uniform(shape=(2, 3), key=mx.random.key(0)).shape
    (2, 3)
)doc"},
    {{"random.normal"}, R"doc(Samples from a normal (Gaussian) distribution.

Args:
    shape (sequence of int): the shape of the samples. Default: ``[]``.
    dtype (Dtype): a floating dtype. Default: float32.
    loc (scalar or array, optional): the mean. Default: None, 0.
    scale (scalar or array, optional): the standard deviation. Default:
        None, 1.
)doc" EMBER_DOC_KEY EMBER_DOC_STREAM R"doc(
Returns:
    array: the samples, ``loc + scale * z`` with ``z`` standard normal.
)doc"},
    {{"random.truncated_normal"}, R"doc(Samples from the standard normal distribution truncated to ``[lower, upper]``.

Args:
    lower (scalar or array): the lower bound.
    upper (scalar or array): the upper bound.
    shape (sequence of int, optional): the shape of the samples. Default:
        None, the broadcast shape of the bounds.
    dtype (Dtype): a floating dtype. Default: float32.
)doc" EMBER_DOC_KEY EMBER_DOC_STREAM R"doc(
Returns:
    array: the samples, each within its bounds.
)doc"},
    {{"random.randint"}, R"doc(Uniformly random integers in ``[low, high)``.

``low`` and ``high`` broadcast against ``shape``.

Args:
    low (scalar or array): the lower bound (included).
    high (scalar or array): the upper bound (excluded).
    shape (sequence of int): the shape of the samples. Default: ``[]``.
    dtype (Dtype): an integer dtype. Default: int32.
)doc" EMBER_DOC_KEY EMBER_DOC_STREAM R"doc(
Returns:
    array: the samples.

Example:
    >>> mx.random.randint(0, 10, (3,), key=mx.random.key(0)).shape
    (3,)
)doc"},
    {{"random.bernoulli"}, R"doc(Boolean samples that are True with probability ``p``.

Args:
    p (float or array): the probability of True, of a real floating
        point type (an integer or boolean ``p`` is a ValueError). Default:
        0.5.
    shape (sequence of int, optional): the shape of the samples; ``p``
        broadcasts to it. Default: None, the shape of ``p``.
)doc" EMBER_DOC_KEY EMBER_DOC_STREAM R"doc(
Returns:
    array: a boolean array.
)doc"},
    {{"random.categorical"}, R"doc(Samples category indices from categorical distributions.

The distributions are given by unnormalized log-probabilities along
``axis``. At most one of ``shape`` and ``num_samples`` may be given.

Args:
    logits (array): the log-probabilities (up to a constant).
    axis (int): the axis of the categories. Default: -1.
    shape (sequence of int, optional): the shape of the samples; it must
        broadcast with the shape of ``logits`` without ``axis``. Default: None.
    num_samples (int, optional): draw that many samples per distribution,
        along a new last axis. Default: None, one sample each.
)doc" EMBER_DOC_KEY EMBER_DOC_STREAM R"doc(
Returns:
    array: uint32 category indices.

Example:
    >>> mx.random.categorical(mx.zeros((2, 3)), num_samples=4, key=mx.random.key(0)).shape
    (2, 4)
)doc"},
    {{"random.gumbel"}, R"doc(Samples from the standard Gumbel distribution.

``-log(-log(u))`` for uniform ``u``; the samples are always finite.

Args:
    shape (sequence of int): the shape of the samples. Default: ``[]``.
    dtype (Dtype): a floating dtype. Default: float32.
)doc" EMBER_DOC_KEY EMBER_DOC_STREAM R"doc(
Returns:
    array: the samples.
)doc"},
    {{"random.laplace"}, R"doc(Samples from the Laplace (double exponential) distribution.

Args:
    shape (sequence of int): the shape of the samples. Default: ``[]``.
    dtype (Dtype): a floating dtype. Default: float32.
    loc (float): the location (mean). Default: 0.0.
    scale (float): the scale. Default: 1.0.
)doc" EMBER_DOC_KEY EMBER_DOC_STREAM R"doc(
Returns:
    array: the samples.
)doc"},
    {{"random.multivariate_normal"}, R"doc(Samples from a multivariate normal distribution.

The samples are ``mean + L @ z`` with ``L`` the Cholesky factor of ``cov``
and ``z`` standard normal. A covariance that is not symmetric positive
semi-definite raises ValueError when the result is evaluated.

Args:
    mean (array): the mean, shape ``(..., n)``.
    cov (array): the covariance matrices, shape ``(..., n, n)``.
    shape (sequence of int): the batch shape of the samples; it broadcasts
        with the batch shapes of ``mean`` and ``cov``. Default: ``[]``.
    dtype (Dtype): float32 or float64. Default: float32.
)doc" EMBER_DOC_KEY EMBER_DOC_STREAM R"doc(
Returns:
    array: samples of shape ``shape + (n,)``.

Example:
    >>> mx.random.multivariate_normal(mx.zeros((2,)), mx.eye(2), (3,), key=mx.random.key(0)).shape
    (3, 2)
)doc"},
    {{"random.permutation"}, R"doc(A random permutation.

Args:
    x (int or array): an int ``n`` permutes ``arange(n)``; an array is
        shuffled along ``axis``.
    axis (int): the axis to shuffle. Default: 0.
)doc" EMBER_DOC_KEY EMBER_DOC_STREAM R"doc(
Returns:
    array: the permuted ``arange(n)`` (uint32) or the shuffled array.
)doc"},
    // ---- evaluation and graph utilities ----
    {{"eval"}, R"doc(Evaluates arrays: computes their values now and waits for them.

Ember is lazy: ops only record a graph, and values are computed when
needed (printing, ``item()``, conversion to NumPy, ...) or when asked
here. The arguments may be arrays or trees of them (lists, tuples, dicts
and nodes registered with ``ember.utils.register_pytree_node``); every
array leaf is evaluated. The GIL is released while computing.

Args:
    *args: arrays or trees of arrays.

Returns:
    None

Example:
    >>> x = mx.ones((2,)) + 1
    >>> mx.eval(x, {"y": [x * 2]})
)doc"},
    {{"async_eval"}, R"doc(Evaluates arrays, for code written for asynchronous evaluation.

Takes what :func:`eval` takes and returns before the work is done: one
worker thread computes the arrays while the caller goes on (typically
building the next step's graph). :func:`eval`, ``item()``, printing and the
other conversions of those arrays wait for them; :func:`synchronize` waits
for every such job. Errors surface at that next evaluation. Inside a
transform, and once a distributed group is initialized (collectives must
run in the same order on every process), it evaluates before returning;
``EMBER_ASYNC_EVAL=0`` makes that the rule everywhere.

Args:
    *args: arrays or trees of arrays.

Returns:
    None
)doc"},
    {{"stop_gradient"}, R"doc(The input unchanged, with a zero derivative.

Transforms (``grad``, ``vjp``, ``jvp``) treat the result as a constant, so
no derivative flows back through it.

Args:
    a (array): the input.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array: an array equal to ``a``.

Example:
    >>> mx.grad(lambda x: (x * mx.stop_gradient(x)).sum())(mx.array([3.0]))
    array([3], dtype=float32)
)doc"},
    {{"depends"}, R"doc(The inputs, unchanged, computed only after some other arrays.

Adds an ordering edge to the graph: evaluating the results first
evaluates ``dependencies``. No derivative flows to the dependencies.

Args:
    inputs (array or sequence of array): the arrays to return.
    dependencies (array or sequence of array): what must be computed first.

Returns:
    array or list(array): arrays equal to ``inputs`` (one array for one
    array, a list for a sequence).
)doc"},

    // ---- devices and streams ----
    {{"Device"}, R"doc(A device that runs ops: a type (``cpu`` or ``gpu``) and an index.

Ember runs everything on the CPU; ``Device(mx.gpu)`` can be named (for
MLX code that does) but is not available.

Args:
    type (DeviceType): the kind of device.
    index (int): which device of that kind. Default: 0.

Example:
    >>> mx.Device(mx.cpu)
    Device(cpu, 0)
)doc"},
    {{"Device.type"}, "The device's kind, a :class:`DeviceType`."},
    {{"Device.index"}, "The device's index among the devices of its kind."},
    {{"DeviceType"}, R"doc(The kinds of device: ``cpu`` and ``gpu``.

The members are also exported as ``ember.core.cpu`` and ``ember.core.gpu``.

Args:
    value (int): the member's number (0 for cpu, 1 for gpu).
)doc"},
    {{"DeviceType.name"}, "The member's name, ``'cpu'`` or ``'gpu'``."},
    {{"DeviceType.value"}, "The member's number."},
    {{"Stream"}, R"doc(A queue of work on a device.

Ops given a stream (or run inside ``with mx.stream(s):``) are recorded on
it. Ember evaluates on the calling thread, so any stream may be used from
any thread. Get streams from :func:`default_stream` and
:func:`new_stream`; they cannot be constructed directly.
)doc"},
    {{"Stream.device"}, "The :class:`Device` the stream runs on."},
    {{"Stream.index"}, "The stream's number on its device (0 for the default stream)."},
    {{"ThreadLocalStream"}, R"doc(A stream that is a different :class:`Stream` in each thread that uses it.

Made by :func:`new_thread_local_stream`; pass it wherever a stream is
accepted.
)doc"},
    {{"ThreadLocalStream.device"}, "The :class:`Device` the streams run on."},
    {{"StreamContext"}, R"doc(The context manager returned by :func:`stream`.

Within ``with mx.stream(s):`` the default stream is ``s``; on exit the
previous default comes back.
)doc"},
    {{"default_device"}, R"doc(The default device: where ops run when no stream or device is given.

Returns:
    Device: the default device (the CPU unless changed with
    :func:`set_default_device`).

Example:
    >>> mx.default_device()
    Device(cpu, 0)
)doc"},
    {{"set_default_device"}, R"doc(Sets the default device.

Args:
    device (Device or DeviceType): the new default; it must be available.

Returns:
    None
)doc"},
    {{"default_stream"}, R"doc(The default stream of a device (in the calling thread).

Args:
    device (Device or DeviceType): the device.

Returns:
    Stream: its default stream.
)doc"},
    {{"set_default_stream"}, R"doc(Makes a stream the default stream of its device (in the calling thread).

Args:
    stream (Stream): the new default stream.

Returns:
    None
)doc"},
    {{"new_stream"}, R"doc(Makes a new stream on a device.

Args:
    device (Device or DeviceType): the device.

Returns:
    Stream: the new stream.
)doc"},
    {{"new_thread_local_stream"}, R"doc(Makes a stream that is a separate :class:`Stream` in each thread that uses it.

Args:
    device (Device or DeviceType): the device.

Returns:
    ThreadLocalStream: the stream.
)doc"},
    {{"new_thread_unsafe_stream"}, R"doc(Makes a stream that may be used from any thread.

Ember evaluates on the calling thread, so every stream may be used from
any thread: this is :func:`new_stream` under MLX's name for such streams.

Args:
    device (Device or DeviceType): the device.

Returns:
    Stream: the new stream.
)doc"},
    {{"stream"}, R"doc(A context manager in which ops run on a given stream by default.

Args:
    s (Stream or Device): the stream, or a device meaning its default stream.

Returns:
    StreamContext: use it in a ``with`` statement.

Example:
    >>> with mx.stream(mx.new_stream(mx.cpu)):
    ...     y = mx.ones((2,)) * 2
)doc"},
    {{"synchronize"}, R"doc(Waits until the work recorded on a stream has finished.

Args:
    stream (Stream or Device, optional): the stream to wait for. Default:
        None, the default stream.

Returns:
    None
)doc"},
    {{"clear_streams"}, R"doc(Forgets the streams made by :func:`new_stream` and its variants.

The devices' default streams stay. For tests and long-running programs
that create many streams.

Returns:
    None
)doc"},
    {{"is_available"}, R"doc(Whether a device can run ops.

Args:
    device (Device or DeviceType): the device; in Ember only the CPU is
        available.

Returns:
    bool: True if the device is available.
)doc"},
    {{"device_count"}, R"doc(The number of devices of a kind.

Args:
    device_type (DeviceType): the kind.

Returns:
    int: 1 for the CPU, 0 for the GPU.
)doc"},
    {{"device_info"}, R"doc(Information about a device.

Args:
    d (Device, optional): the device. Default: None, the default device.

Returns:
    dict: ``device_name``, ``architecture``, ``memory_size`` (bytes of RAM),
    ``num_threads`` (the size of Ember's thread pool) and ``isa`` (the
    kernels' instruction-set level: baseline, avx2 or avx512).
)doc"},
    {{"metal"}, "Apple GPU backend (Metal). Not available in Ember; ``is_available()`` is False."},
    {{"metal.is_available"}, R"doc(Whether the Metal (Apple GPU) backend is available.

Returns:
    bool: always False in Ember, which runs on x86-64 CPUs.
)doc"},
    {{"cuda"}, "NVIDIA GPU backend (CUDA). Not available in Ember; ``is_available()`` is False."},
    {{"cuda.is_available"}, R"doc(Whether the CUDA (NVIDIA GPU) backend is available.

Returns:
    bool: always False in Ember, which runs on x86-64 CPUs.
)doc"},

    // ---- memory ----
    {{"get_active_memory"}, R"doc(Bytes held by live arrays' buffers.

Does not count the allocator's cache (see :func:`get_cache_memory`).

Returns:
    int: the number of bytes.
)doc"},
    {{"get_peak_memory"}, R"doc(The largest value :func:`get_active_memory` reached.

Since the start of the program or the last :func:`reset_peak_memory`.

Returns:
    int: the number of bytes.
)doc"},
    {{"reset_peak_memory"}, R"doc(Resets the peak memory counter to the current active memory.

Returns:
    None
)doc"},
    {{"get_cache_memory"}, R"doc(Bytes of freed buffers that the allocator keeps for reuse.

Returns:
    int: the number of bytes.
)doc"},
    {{"clear_cache"}, R"doc(Returns the allocator's cached buffers to the system.

Returns:
    None
)doc"},
    {{"get_memory_limit"}, R"doc(The memory limit: the active memory above which the allocator empties its cache.

An allocation that would take the active memory above the limit first
returns the cached buffers to the system. It is a guide, not a cap:
allocations beyond it still succeed. The default is 1.5 times the RAM.

Returns:
    int: the limit in bytes.
)doc"},
    {{"set_memory_limit"}, R"doc(Sets the memory limit (see :func:`get_memory_limit`).

Args:
    limit (int): the new limit in bytes; must be non-negative.

Returns:
    int: the previous limit.
)doc"},
    {{"set_cache_limit"}, R"doc(Sets the most bytes the allocator's cache may hold.

Freed buffers beyond the limit are returned to the system; 0 disables
the cache. The default is a quarter of the RAM.

Args:
    limit (int): the new limit in bytes; must be non-negative.

Returns:
    int: the previous limit.
)doc"},
    {{"set_wired_limit"}, R"doc(Sets how many bytes of Ember's buffers may be locked in RAM (with mlock).

Buffers allocated while the locked total stays within the limit are
locked until freed, and never swapped out. 0 (the default) locks nothing.
Raises above the process's RLIMIT_MEMLOCK (unless privileged) or at or
above the physical memory.

Args:
    limit (int): the new limit in bytes.

Returns:
    int: the previous limit.
)doc"},
    {{"get_array_buffer_size"}, R"doc(The total size of the buffers behind evaluated arrays.

Args:
    *args (array): evaluated arrays (ValueError for one that is not).

Returns:
    int: the sum of their buffers' sizes in bytes (a view counts its whole
    buffer).
)doc"},

    // ---- dtypes ----
    {{"Dtype"}, R"doc(An element type of arrays.

The dtypes are module attributes: ``bool_``, ``uint8``, ``uint16``,
``uint32``, ``uint64``, ``int8``, ``int16``, ``int32``, ``int64``,
``float16``, ``bfloat16``, ``float32``, ``float64`` and ``complex64``.
They cannot be constructed.

Example:
    >>> mx.float32.size
    4
)doc"},
    {{"Dtype.size"}, "The size of one element in bytes."},
    {{"DtypeCategory"}, R"doc(Abstract groups of dtypes, for :func:`issubdtype`.

``generic`` contains every dtype; ``number`` the numeric ones; ``integer``
splits into ``signedinteger`` and ``unsignedinteger``; ``inexact`` into
``floating`` and ``complexfloating``. The members are also module
attributes (``mx.floating``, ...).

Args:
    value (int): the member's number.
)doc"},
    {{"DtypeCategory.name"}, "The category's name, e.g. ``'floating'``."},
    {{"DtypeCategory.value"}, "The category's number."},
    {{"issubdtype"}, R"doc(Whether a dtype or category belongs to another.

Args:
    arg1 (Dtype or DtypeCategory): the type to test.
    arg2 (Dtype or DtypeCategory): the dtype or category to test against.

Returns:
    bool: True if ``arg1`` is ``arg2`` or lies under it.

Example:
    >>> mx.issubdtype(mx.float32, mx.floating)
    True
    >>> mx.issubdtype(mx.int8, mx.unsignedinteger)
    False
)doc"},
    {{"isdtype"}, R"doc(Whether a dtype is of a given kind (the array API's test).

Args:
    dtype (Dtype): the dtype to test.
    kind (Dtype, str or tuple): a dtype, one of the kind names ``'bool'``,
        ``'signed integer'``, ``'unsigned integer'``, ``'integral'``,
        ``'real floating'``, ``'complex floating'`` and ``'numeric'``, or a
        tuple of these (any may match).

Returns:
    bool: True if ``dtype`` is of that kind.

Example:
    >>> mx.isdtype(mx.float32, "real floating")
    True
)doc"},
    {{"result_type"}, R"doc(The dtype that arrays and dtypes promote to together.

Args:
    *arrays_and_dtypes (array or Dtype): at least one.

Returns:
    Dtype: the promoted dtype.

Example:
    >>> mx.result_type(mx.int8, mx.float16)
    ember.core.float16
)doc"},
    {{"can_cast"}, R"doc(Whether a dtype can be cast to another without losing its kind of value.

As MLX defines it: true when promoting ``from_`` with ``to`` gives ``to``.

Args:
    from_ (array or Dtype): the source dtype (or an array's).
    to (Dtype): the target dtype.

Returns:
    bool: True if the cast is allowed.

Example:
    >>> mx.can_cast(mx.int8, mx.int32)
    True
)doc"},
    {{"finfo"}, R"doc(Limits of a floating dtype.

Args:
    dtype (Dtype): a floating or complex dtype (complex64 gives float32's
        limits); any other raises ValueError.

Example:
    >>> mx.finfo(mx.float16).max
    65504.0
)doc"},
    {{"finfo.min"}, "The lowest finite value (the negative of ``max``)."},
    {{"finfo.max"}, "The largest finite value."},
    {{"finfo.eps"}, "The difference between 1 and the next larger representable value."},
    {{"finfo.tiny"}, "The smallest positive normal value (the same as ``smallest_normal``)."},
    {{"finfo.smallest_normal"}, "The smallest positive normal value."},
    {{"finfo.dtype"}, "The floating dtype described (float32 for complex64)."},
    {{"finfo.bits"}, "The number of bits of the dtype."},
    {{"iinfo"}, R"doc(Limits of an integer dtype.

Args:
    dtype (Dtype): an integer dtype; any other raises ValueError.

Example:
    >>> mx.iinfo(mx.int8).min
    -128
)doc"},
    {{"iinfo.min"}, "The smallest value."},
    {{"iinfo.max"}, "The largest value."},
    {{"iinfo.dtype"}, "The integer dtype described."},
    {{"iinfo.bits"}, "The number of bits of the dtype."},

    // ---- printing ----
    {{"PrintOptions"}, "The print options in force, as :func:`get_printoptions` returns them."},
    {{"PrintOptions.precision"}, "Digits after the decimal point when printing floats (-1: six significant digits)."},
    {{"get_printoptions"}, R"doc(The options used when printing arrays.

Returns:
    PrintOptions: the current options (``precision``).
)doc"},
    {{"set_printoptions"}, R"doc(Sets the options used when printing arrays.

Args:
    precision (int): the digits after the decimal point for floats; -1
        prints up to six significant digits. Default: -1.

Returns:
    None
)doc"},
    {{"printoptions"}, R"doc(A context manager with print options in force inside it.

Args:
    precision (int): as for :func:`set_printoptions`. Default: -1.

Returns:
    a context manager; the previous options come back on exit.

Example:
    >>> with mx.printoptions(precision=2):
    ...     s = str(mx.array([1 / 3]))
)doc"},
    // ---- the array class ----
    {{"array"}, R"doc(An N-dimensional array: Ember's value type.

Arrays are values computed lazily: an op returns at once with
an array that records how to compute it, and the values are computed
when needed (printing, ``item()``, ``tolist()``, NumPy conversion) or by
:func:`eval`. Operators (``+ - * / // % ** @``, comparisons, bitwise
operators), NumPy-style indexing (``a[1:, ::2]``, integer and boolean
array indices, ``None``, ``...``), indexed updates (``a[idx] = v`` and
``a.at[idx].add(v)``), the buffer protocol, ``__array__``, DLPack and
pickling are supported. ``a[idx] = v`` and the in-place operators
(``a += v``) give this array object a new value, as in MLX: every name
bound to it sees the change, while arrays computed from it earlier keep
the values they were computed from.

Args:
    val: the contents: a Python scalar, a nested sequence of scalars or
        arrays, a NumPy array, or any object with ``__array__``,
        ``__dlpack__``, the buffer protocol or ``__mlx_array__``.
    dtype (Dtype, optional): the element type. Default: None, inferred:
        bool for bools, int32 for Python ints, float32 for Python floats,
        complex64 for complex numbers, and the dtype of a NumPy array except
        float64, which becomes float32 (as in MLX; ask for ``mx.float64``
        to keep it).

Example:
    >>> mx.array([[1, 2], [3, 4]])
    array([[1, 2],
           [3, 4]], dtype=int32)
    >>> mx.array([1, 2], dtype=mx.float32)
    array([1, 2], dtype=float32)
)doc"},
    {{"array.shape"}, "The array's dimensions, a tuple of ints."},
    {{"array.ndim"}, "The number of dimensions."},
    {{"array.size"}, "The number of elements (the product of ``shape``)."},
    {{"array.dtype"}, "The element type, a :class:`Dtype`."},
    {{"array.itemsize"}, "The size of one element in bytes."},
    {{"array.nbytes"}, "The size of the elements in bytes (``size * itemsize``)."},
    {{"array.T"}, "The array with its axes reversed (``transpose(a)``); for a matrix, its transpose."},
    {{"array.mT"}, "The array with its last two axes swapped (``matrix_transpose(a)``); needs at least 2 dimensions."},
    {{"array.real"}, "The real part of each element (see :func:`real`)."},
    {{"array.imag"}, "The imaginary part of each element (see :func:`imag`)."},
    {{"array.at"}, R"doc(Indexed updates that accumulate: ``a.at[idx].add(v)`` and friends.

``a[idx] += v`` adds once per position even where ``idx`` repeats one;
``a.at[idx].add(v)`` adds once per occurrence. ``a.at[idx]`` gives an
:class:`ArrayAt` whose methods ``add``, ``subtract``, ``multiply``,
``divide``, ``maximum`` and ``minimum`` return the updated copy.

Example:
    >>> mx.array([1, 2, 3]).at[mx.array([0, 0])].add(1)
    array([3, 2, 3], dtype=int32)
)doc"},
    {{"array.item"}, R"doc(The value of a one-element array as a Python scalar.

Evaluates the array. Raises ValueError if it has more than one element.
There are no parameters.

Returns:
    bool, int, float or complex: the value.

Example:
    >>> mx.array(2.5).item()
    2.5
)doc"},
    {{"array.tolist"}, R"doc(The array's values as nested Python lists.

Evaluates the array. A 0-d array gives a scalar (as :meth:`item`). There
are no parameters.

Returns:
    list: nested lists of Python scalars, one level per dimension.

Example:
    >>> mx.array([[1, 2]]).tolist()
    [[1, 2]]
)doc"},
    {{"ArrayAt"}, R"doc(The accumulating updates at an index, from ``a.at[idx]``.

Each method returns a copy of the array with ``value`` (broadcast to the
indexed positions and cast to the array's dtype) combined into it at
``idx``, once per occurrence of a position.
)doc"},
    {{"ArrayAt.add"}, R"doc(Adds ``value`` at the index, once per occurrence of each position.

Args:
    value (array or scalar): what to add.

Returns:
    array: the updated copy.
)doc"},
    {{"ArrayAt.subtract"}, R"doc(Subtracts ``value`` at the index, once per occurrence of each position.

Args:
    value (array or scalar): what to subtract.

Returns:
    array: the updated copy.
)doc"},
    {{"ArrayAt.multiply"}, R"doc(Multiplies by ``value`` at the index, once per occurrence of each position.

Args:
    value (array or scalar): the factor.

Returns:
    array: the updated copy.
)doc"},
    {{"ArrayAt.divide"}, R"doc(Divides by ``value`` at the index, once per occurrence of each position.

As in MLX, this multiplies by the reciprocal of ``value`` cast to the
array's dtype.

Args:
    value (array or scalar): the divisor.

Returns:
    array: the updated copy.
)doc"},
    {{"ArrayAt.maximum"}, R"doc(The maximum of the element and ``value`` at the index.

Args:
    value (array or scalar): the values to compare with.

Returns:
    array: the updated copy.
)doc"},
    {{"ArrayAt.minimum"}, R"doc(The minimum of the element and ``value`` at the index.

Args:
    value (array or scalar): the values to compare with.

Returns:
    array: the updated copy.
)doc"},
    {{"ArrayIterator"}, R"doc(The iterator of ``iter(a)``: yields ``a[0]``, ``a[1]``, ... along the first axis.

Iterating a 0-d array raises TypeError.
)doc"},
    {{"ArrayLike"}, R"doc(The protocol of objects that convert themselves to an array.

An object with an ``__mlx_array__()`` method returning an :class:`array` is
accepted wherever an array is.
)doc"},
    // ---- the array's Python protocols and operators ----
    {{"array.__getitem__"}, R"doc(``a[idx]``: NumPy-style indexing.

``idx`` may combine ints, slices, ``None`` (a new axis), ``...``, integer
arrays (gathered, with NumPy's broadcasting and placement of the indexed
axes) and boolean arrays. Basic indices give views. Out-of-range integer
indices raise IndexError (array indices when the result is evaluated).
)doc"},
    {{"array.__setitem__"}, R"doc(``a[idx] = value``: writes ``value`` (broadcast, cast to the dtype of ``a``) at ``idx``.

Takes the indices that ``a[idx]`` takes. The array object gets the new
value; arrays computed from it before keep the old one. Where an index
repeats, one of the writes wins (``a.at[idx]`` accumulates instead).
)doc"},
    {{"array.__len__"}, "``len(a)``: the length of the first axis; TypeError for a 0-d array."},
    {{"array.__iter__"}, "``iter(a)``: iterates over ``a[0]``, ``a[1]``, ... along the first axis; TypeError for a 0-d array."},
    {{"array.__bool__"}, "``bool(a)``: the truth value of a one-element array (evaluates it); ValueError for more elements."},
    {{"array.__int__"}, "``int(a)``: the value of a one-element array as a Python int (evaluates it)."},
    {{"array.__float__"}, "``float(a)``: the value of a one-element array as a Python float (evaluates it)."},
    {{"array.__complex__"}, "``complex(a)``: the value of a one-element array as a Python complex (evaluates it)."},
    {{"array.__index__"}, "``operator.index(a)``: the value of a one-element integer array, for use as a Python index."},
    {{"array.__format__"}, "``format(a, spec)``: a one-element array formats as its Python scalar; with an empty spec, as ``str(a)``."},
    {{"array.__array__"}, R"doc(``numpy.asarray(a)``: the values as a NumPy array (evaluates the array).

Args:
    dtype (numpy dtype, optional): convert to this dtype. Default: None.
    copy (bool, optional): NumPy's copy request. Default: None.
)doc"},
    {{"array.__dlpack__"}, "``a.__dlpack__()``: a DLPack capsule of the evaluated array, for ``np.from_dlpack`` and other consumers."},
    {{"array.__dlpack_device__"}, "``a.__dlpack_device__()``: the DLPack device of the array, ``(1, 0)`` (the CPU)."},
    {{"array.__copy__"}, "``copy.copy(a)``: an array with the same value."},
    {{"array.__deepcopy__"}, "``copy.deepcopy(a)``: an array with the same value."},
    {{"array.__getstate__"}, "Pickling: the array's bytes, dtype and shape."},
    {{"array.__setstate__"}, "Unpickling: restores an array from what ``__getstate__`` gave."},
    {{"array.__add__", "array.__radd__"}, "``a + b``: element-wise sum (see :func:`add`); Python scalars are weakly typed."},
    {{"array.__sub__", "array.__rsub__"}, "``a - b``: element-wise difference (see :func:`subtract`)."},
    {{"array.__mul__", "array.__rmul__"}, "``a * b``: element-wise product (see :func:`multiply`)."},
    {{"array.__truediv__", "array.__rtruediv__"}, "``a / b``: element-wise true division (see :func:`divide`)."},
    {{"array.__floordiv__", "array.__rfloordiv__"}, "``a // b``: element-wise floor division (see :func:`floor_divide`)."},
    {{"array.__mod__", "array.__rmod__"}, "``a % b``: element-wise remainder with the sign of ``b`` (see :func:`remainder`)."},
    {{"array.__divmod__", "array.__rdivmod__"}, "``divmod(a, b)``: ``(a // b, a % b)`` (see :func:`divmod`)."},
    {{"array.__pow__", "array.__rpow__"}, "``a ** b``: element-wise power (see :func:`power`)."},
    {{"array.__matmul__", "array.__rmatmul__"}, "``a @ b``: matrix product (see :func:`matmul`)."},
    {{"array.__and__", "array.__rand__"}, "``a & b``: element-wise bitwise AND (see :func:`bitwise_and`)."},
    {{"array.__or__", "array.__ror__"}, "``a | b``: element-wise bitwise OR (see :func:`bitwise_or`)."},
    {{"array.__xor__", "array.__rxor__"}, "``a ^ b``: element-wise bitwise XOR (see :func:`bitwise_xor`)."},
    {{"array.__lshift__", "array.__rlshift__"}, "``a << b``: element-wise left shift (see :func:`left_shift`)."},
    {{"array.__rshift__", "array.__rrshift__"}, "``a >> b``: element-wise right shift (see :func:`right_shift`)."},
    {{"array.__iadd__", "array.__isub__", "array.__imul__", "array.__itruediv__", "array.__ifloordiv__",
      "array.__imod__", "array.__ipow__", "array.__imatmul__", "array.__iand__", "array.__ior__", "array.__ixor__",
      "array.__ilshift__", "array.__irshift__"},
     "An in-place operator (``a += b`` and the like): the array object gets the operator's result as its new\n"
     "value; arrays computed from it before keep the old one."},
    {{"array.__eq__"}, "``a == b``: element-wise equality (see :func:`equal`); a boolean array."},
    {{"array.__ne__"}, "``a != b``: element-wise inequality (see :func:`not_equal`); a boolean array."},
    {{"array.__lt__"}, "``a < b``: element-wise comparison (see :func:`less`); a boolean array."},
    {{"array.__le__"}, "``a <= b``: element-wise comparison (see :func:`less_equal`); a boolean array."},
    {{"array.__gt__"}, "``a > b``: element-wise comparison (see :func:`greater`); a boolean array."},
    {{"array.__ge__"}, "``a >= b``: element-wise comparison (see :func:`greater_equal`); a boolean array."},
    {{"array.__neg__"}, "``-a``: element-wise negation (see :func:`negative`)."},
    {{"array.__pos__"}, "``+a``: an array with the same value."},
    {{"array.__abs__"}, "``abs(a)``: element-wise absolute value (see :func:`abs`)."},
    {{"array.__invert__"}, "``~a``: element-wise bitwise NOT of an integer or boolean array (see :func:`bitwise_invert`)."},
    // ---- io (python/src/io.cpp) ----
    {{"save"}, R"doc(Saves an array to a ``.npy`` file (NumPy's format, readable by ``numpy.load``).

The array is evaluated first. A path gets ``.npy`` appended unless it ends
with it; it is written to a temporary file in the same folder that then
replaces the target, so a failed save never leaves a half-written file.

Args:
    file (str, pathlib.Path or file object): where to write; a file object
        needs a ``write`` method taking bytes.
    arr (array): the array to save (any dtype; bfloat16 is written as
        ``'<V2'``, as MLX does).

Returns:
    None

Example:
    >>> mx.save("/tmp/ember_doc_a.npy", mx.arange(3))
    >>> mx.load("/tmp/ember_doc_a.npy")
    array([0, 1, 2], dtype=int32)
)doc"},
    {{"savez"}, R"doc(Saves several arrays to an uncompressed ``.npz`` archive (NumPy's format).

Positional arrays are stored as ``arr_0``, ``arr_1``, ...; keyword arrays
under their keyword. Members are stored (not compressed) with their data
aligned to 64 bytes, so :func:`load` maps them without a copy. A path gets
``.npz`` appended unless it ends with it; the file is replaced atomically.

Args:
    file (str, pathlib.Path or file object): where to write.
    *args (array): arrays saved as ``arr_0``, ``arr_1``, ...
    **kwargs (array): arrays saved under their keyword.

Returns:
    None

Example:
    >>> mx.savez("/tmp/ember_doc_z", mx.ones(2), w=mx.zeros(1))
    >>> sorted(mx.load("/tmp/ember_doc_z.npz"))
    ['arr_0', 'w']
)doc"},
    {{"savez_compressed"}, R"doc(Saves several arrays to a deflate-compressed ``.npz`` archive.

As :func:`savez`, but each member is compressed (deflate, RFC 1951, written
by Ember itself; stored blocks where compression does not pay). Loading a
compressed member inflates it into memory.

Args:
    file (str, pathlib.Path or file object): where to write.
    *args (array): arrays saved as ``arr_0``, ``arr_1``, ...
    **kwargs (array): arrays saved under their keyword.

Returns:
    None

Example:
    >>> mx.savez_compressed("/tmp/ember_doc_zc", x=mx.zeros(1000))
    >>> mx.load("/tmp/ember_doc_zc.npz")["x"].shape
    (1000,)
)doc"},
    {{"save_safetensors"}, R"doc(Saves a dict of arrays to a ``.safetensors`` file.

Tensors are laid out widest dtype first, then by name, so every tensor is
aligned to its dtype; the header is padded to a multiple of 8 bytes. A path
gets ``.safetensors`` appended unless it ends with it; the file is replaced
atomically.

Args:
    file (str, pathlib.Path or file object): where to write.
    arrays (dict[str, array]): the tensors by name.
    metadata (dict[str, str], optional): string metadata, stored as the
        header's ``__metadata__``. Default: None.

Returns:
    None

Example:
    >>> mx.save_safetensors("/tmp/ember_doc_s", {"w": mx.ones(2)}, {"v": "1"})
    >>> mx.load("/tmp/ember_doc_s.safetensors", return_metadata=True)[1]
    {'v': '1'}
)doc"},
    {{"save_gguf"}, R"doc(Saves a dict of arrays and metadata to a ``.gguf`` file (version 3).

Tensors of float32, float16, bfloat16, float64 and int8 to int64 are
written with GGML's types and at most 4 dimensions (GGUF stores the
dimensions in reverse order). Metadata values are arrays (0-d: a scalar of
the matching GGUF type, 1-d: a GGUF array), strings or lists of strings. A
path gets ``.gguf`` appended unless it ends with it; the file is replaced
atomically.

Args:
    file (str, pathlib.Path or file object): where to write.
    arrays (dict[str, array]): the tensors by name.
    metadata (dict[str, array | str | list[str]]): the key-value metadata.

Returns:
    None

Example:
    >>> mx.save_gguf("/tmp/ember_doc_g", {"w": mx.ones(2)}, {"name": "x"})
    >>> mx.load("/tmp/ember_doc_g.gguf", return_metadata=True)[1]
    {'name': 'x'}
)doc"},
    {{"load"}, R"doc(Loads arrays from a ``.npy``, ``.npz``, ``.safetensors`` or ``.gguf`` file.

The format comes from the extension unless ``format`` is given. The file is
validated completely (sizes, offsets, dtypes, shapes, CRCs) before any
tensor data is read; a malformed file raises ValueError naming the file,
the tensor and the rule it breaks, a missing or unreadable one OSError.
Files given by path are memory-mapped: ``.npy``, ``.safetensors`` and
stored ``.npz`` tensors are views of the mapping (copied only where their
data is misaligned or big-endian), valid as long as any array uses them;
should the file shrink underneath, the next evaluation raises OSError
naming it (the vanished data reads as zeros) instead of the process dying.
GGUF tensors of type Q4_0, Q4_1 and Q8_0 load as MLX's affine quantized
triple ``name``, ``name.scales``, ``name.biases`` (groups of 32, 4 or 8
bits).

Args:
    file (str, pathlib.Path or file object): the file. A binary file
        object at the start of a regular file is mapped like a path (and
        left at its end), any other is read whole; its ``name``, if any,
        gives the extension.
    format (str, optional): ``"npy"``, ``"npz"``, ``"safetensors"`` or
        ``"gguf"``. Default: None, from the extension.
    return_metadata (bool, optional): also return the metadata
        (safetensors and gguf only). Default: False.
)doc" EMBER_DOC_STREAM R"doc(
Returns:
    array (``.npy``), dict[str, array] (the others), or with
    ``return_metadata`` a tuple of that dict and the metadata dict.

Example:
    >>> mx.save("/tmp/ember_doc_b.npy", mx.array([1.5]))
    >>> mx.load("/tmp/ember_doc_b.npy")
    array([1.5], dtype=float32)
)doc"},
};

#undef EMBER_DOC_STREAM
#undef EMBER_DOC_ARG_A
#undef EMBER_DOC_UNARY
#undef EMBER_DOC_BINARY
#undef EMBER_DOC_REDUCE_ARGS
#undef EMBER_DOC_SCAN_ARGS
#undef EMBER_DOC_FFT1_ARGS
#undef EMBER_DOC_FFT_S
#undef EMBER_DOC_FFT_NORM
#undef EMBER_DOC_KEY

// pybind11's signature lines of a function's doc: the first line, or for an
// overload chain the generic header and every numbered overload line.
std::string signature_lines(const char* name, const char* doc) {
  std::string d = doc ? doc : "";
  std::string generic = std::string(name) + "(*args, **kwargs)\nOverloaded function.\n";
  if (d.rfind(generic, 0) != 0) {
    // One signature line; none where the binding disabled signatures and its
    // doc does not start with one of its own.
    std::string prefix = std::string(name) + "(";
    size_t end = d.find('\n');
    std::string first = d.substr(0, end);
    if (first.rfind(prefix, 0) != 0) return std::string();
    // A binding's own doc may open with the signature written out by hand
    // (with MLX's type names where pybind11 only knows `object`): keep it
    // after pybind11's line.
    if (end != std::string::npos && d.compare(end, 2, "\n\n") == 0) {
      size_t own_end = d.find('\n', end + 2);
      std::string own = d.substr(end + 2, own_end == std::string::npos ? std::string::npos : own_end - end - 2);
      if (own.rfind(prefix, 0) == 0 && own != first) return first + "\n" + own;
    }
    return first;
  }
  std::string out = generic + "\n";
  size_t pos = generic.size();
  int index = 1;
  while (pos < d.size()) {
    size_t end = d.find('\n', pos);
    if (end == std::string::npos) end = d.size();
    std::string line = d.substr(pos, end - pos);
    std::string prefix = std::to_string(index) + ". " + name + "(";
    if (line.rfind(prefix, 0) == 0) {
      out += line + "\n";
      ++index;
    }
    pos = end + 1;
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

void set_cfunction_doc(PyObject* f, const char* text) {
  auto* func = reinterpret_cast<PyCFunctionObject*>(f);
  std::string doc = signature_lines(func->m_ml->ml_name, func->m_ml->ml_doc);
  if (!doc.empty()) doc += "\n\n";
  doc += text;
  // pybind11 owns ml_doc as malloc'd memory (it frees it with std::free).
  char* copy = static_cast<char*>(std::malloc(doc.size() + 1));
  if (!copy) throw std::bad_alloc();
  std::memcpy(copy, doc.c_str(), doc.size() + 1);
  std::free(const_cast<char*>(func->m_ml->ml_doc));
  func->m_ml->ml_doc = copy;
}

py::object resolve(py::module_& m, const std::string& qualified) {
  py::object obj = m;
  size_t start = 0;
  while (true) {
    size_t dot = qualified.find('.', start);
    std::string part = qualified.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    py::object next;
    if (PyType_Check(obj.ptr())) {
      // The raw class attribute (instancemethod, staticmethod, property).
      py::dict d = obj.attr("__dict__");
      if (d.contains(part.c_str())) next = d[part.c_str()];
    } else if (py::hasattr(obj, part.c_str())) {
      next = obj.attr(part.c_str());
    }
    if (!next) {
      throw std::runtime_error("ember.core docstrings: the table names '" + qualified +
                               "', which does not exist");
    }
    obj = next;
    if (dot == std::string::npos) return obj;
    start = dot + 1;
  }
}

void install(py::module_& m, const std::string& name, const char* text) {
  py::object obj = resolve(m, name);
  PyObject* p = obj.ptr();
  if (PyInstanceMethod_Check(p)) {
    p = PyInstanceMethod_GET_FUNCTION(p);
  } else if (py::isinstance(obj, py::module_::import("builtins").attr("staticmethod"))) {
    obj = obj.attr("__func__");
    p = obj.ptr();
  }
  if (PyCFunction_Check(p)) {
    set_cfunction_doc(p, text);
  } else if (PyType_Check(p)) {
    // A class: its __doc__ lives in its own dict (pybind11's metaclass has no
    // __doc__ setter, so setattr cannot be used).
    auto* type = reinterpret_cast<PyTypeObject*>(p);
    if (PyDict_SetItemString(type->tp_dict, "__doc__", py::str(text).ptr()) != 0) throw py::error_already_set();
    PyType_Modified(type);
  } else if (PyModule_Check(p) || PyObject_TypeCheck(p, &PyProperty_Type)) {
    if (PyObject_SetAttrString(p, "__doc__", py::str(text).ptr()) != 0) throw py::error_already_set();
  } else {
    throw std::runtime_error("ember.core docstrings: '" + name + "' is a " +
                             std::string(Py_TYPE(p)->tp_name) + ", which takes no docstring here");
  }
}

}  // namespace

void install_docstrings(py::module_& m) {
  std::vector<std::string> names;
  for (const Entry& e : kDocs) {
    for (const char* name : e.names) {
      install(m, name, e.text);
      names.emplace_back(name);
    }
  }
  m.def(
      "_docstring_names", [names]() { return names; },
      "The qualified names that the docstring table of ember.core documents (for the coverage test).");
}

}  // namespace ember::py_bind
