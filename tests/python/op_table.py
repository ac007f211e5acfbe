"""The op table: one OpInfo per engine op.

Each entry says how to call the op, the NumPy reference, the dtypes it
supports, how to generate sample inputs (0-d, empty, broadcast and the usual
shapes; the test driver additionally feeds every array argument in every
memory layout of ``conftest.LAYOUTS``), the error inputs with their
exception type and message fragment, and flags later used by the gradient and
vmap suites (``differentiable``, ``domain``).

Conventions
-----------
* ``SampleInput.args``/``kwargs`` hold numpy arrays for array arguments.  The
  driver converts each to an mx array of the parametrised dtype and layout
  (``Fixed(x, "bool")`` pins an argument's dtype, e.g. a ``where``
  condition).  Everything else (Python scalars, shapes, mx dtypes) is passed
  unchanged to both the op and the reference.
* The reference receives the numpy values in *compute precision*: float16,
  bfloat16 and float32 values as float64, complex64 as complex128; integers
  and bools keep their dtype unless ``compute_float`` (the op maps integers
  to floats, e.g. ``sqrt``), in which case they become float64.  The result
  is rounded to the expected output dtype and compared with that dtype's
  tolerance (``conftest.TOLERANCES``; transcendental ops use
  ``TRANSCENDENTAL_TOLERANCES``).
* ``out_dtype(name)`` is MLX's output dtype for input dtype ``name``; a
  sample may override it (``SampleInput.out_dtype``).
"""

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from conftest import (ALL, BOOL, COMPLEX, DATA_DTYPES, FLOATS, INEXACT, INTS,
                      IS_MLX, ITEMSIZE, NP_CARRIER, SINTS, UINTS, dtype_name,
                      make_values, mx, mx_dtype, round_to)


# --------------------------------------------------------------------------
# data classes
# --------------------------------------------------------------------------

@dataclass
class Fixed:
    """An array argument whose dtype is pinned (not the parametrised one)."""
    value: np.ndarray
    dtype: str


@dataclass
class SampleInput:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    desc: str = ""
    out_dtype: Optional[str] = None  # overrides OpInfo.out_dtype


@dataclass
class ErrorInput:
    """``build()`` returns (args, kwargs) of ready mx objects."""
    build: Callable[[], tuple]
    exc: type
    match: Optional[str]
    desc: str = ""
    mlx_msg: bool = False      # MLX's message also contains ``match``
    ember_only: bool = False   # MLX does not raise here (unsafe/silent)


@dataclass
class OpInfo:
    name: str
    op: Callable
    ref: Callable
    dtypes: list
    sample_inputs: Callable  # (dtype name, rng) -> list[SampleInput]
    out_dtype: Callable = lambda n: n
    error_inputs: Callable = lambda: []
    compute_float: bool = False
    transcendental: bool = False
    # MLX's CPU backend evaluates this op in float32 precision even for
    # float64 inputs (exp(100.) is inf); Ember must be float64-accurate.
    mlx_f64_is_f32: bool = False
    layouts: bool = True         # array inputs exist (layouts apply)
    multi_output: bool = False
    # for the gradient / vmap suites: where sample values are drawn from
    # (and the op is smooth): ``domain`` for argument 0, ``rhs_domain`` for
    # argument 1 of binary ops; ``nonzero_args`` must stay away from 0
    differentiable: bool = True
    domain: Optional[tuple] = None
    rhs_domain: Optional[tuple] = None
    nonzero_args: tuple = ()
    family: str = "other"
    aliases: tuple = ()
    ref_gets_dtype: bool = False     # reference also receives _name=dtype
    # dtypes / layouts where MLX is wrong or raises and Ember must not: the
    # forward test marks those cases ember_only.
    mlx_wrong_dtypes: tuple = ()
    mlx_layouts: Optional[tuple] = None   # None: every layout works on MLX
    # False: the row feeds the transform suite only (``ref`` may be None);
    # the op's values and errors are checked in its family's own file
    # (test_matmul.py, test_conv.py, test_fft.py, test_linalg.py,
    # test_random.py), which have references the table cannot express.
    forward: bool = True


# --------------------------------------------------------------------------
# output dtype rules (MLX 0.32)
# --------------------------------------------------------------------------

def same(n):
    return n


def floating(n):
    """ints and bool -> float32; inexact unchanged."""
    return n if n in INEXACT else "float32"


def boolean(n):
    return "bool"


def real_of(n):
    return "float32" if n == "complex64" else n


def real_floating(n):
    return "float32" if n == "complex64" else floating(n)


def sum_dtype(n):
    """sum/prod accumulate small ints in 32 bits (bool -> int32)."""
    return {"bool": "int32", "int8": "int32", "int16": "int32",
            "uint8": "uint32", "uint16": "uint32"}.get(n, n)


def uint32(n):
    return "uint32"


def shift_dtype(n):
    return "uint8" if n == "bool" else n


# --------------------------------------------------------------------------
# sample helpers
# --------------------------------------------------------------------------

UNARY_SHAPES = [(), (0,), (7,), (3, 5), (2, 3, 4), (1, 4, 1), (2, 0, 3)]
BINARY_SHAPES = [
    ((), ()), ((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)),
    ((), (3,)), ((0, 3), (3,)), ((4, 1), (1, 5)),
]


def _vals(shape, n, rng, domain, int_domain=None, nonzero=False):
    lo, hi = domain
    if n in INTS or n == "bool":
        if int_domain is not None:
            lo, hi = int_domain
        x = make_values(shape, n, rng, lo, hi)
        if nonzero:
            x = np.where(x == 0, np.ones((), x.dtype), x)
        return x
    x = make_values(shape, n, rng, lo, hi)
    if nonzero:
        small = np.abs(x) < 0.25
        x = np.where(small, np.ones((), x.dtype), x)
    return x


def unary_samples(domain=(-5, 5), int_domain=None, nonzero=False,
                  specials=()):
    def gen(n, rng):
        out = []
        for shape in UNARY_SHAPES:
            x = _vals(shape, n, rng, domain, int_domain, nonzero)
            out.append(SampleInput((x,), desc=f"shape={shape}"))
        if n in FLOATS and specials:
            x = round_to(np.array(specials, dtype=np.float64), n)
            out.append(SampleInput((x,), desc="special values"))
        return out
    return gen


def binary_samples(domain=(-5, 5), int_domain=None, rhs_domain=None,
                   rhs_int_domain=None, nonzero_rhs=False, scalars=(),
                   integral_lowp=False):
    """``integral_lowp``: float16/bfloat16 values are whole numbers (for
    floor_divide & co. a quotient rounded to 8 bits could otherwise cross
    an integer, which makes floor() ill-conditioned)."""
    rhs_domain = rhs_domain or domain
    rhs_int_domain = rhs_int_domain or int_domain

    def vals(shape, n, rng, dom, idom, nonzero=False):
        x = _vals(shape, n, rng, dom, idom, nonzero)
        if integral_lowp and n in ("float16", "bfloat16"):
            x = np.round(x)
            if nonzero:
                x = np.where(x == 0, np.ones((), x.dtype), x)
        return x

    def gen(n, rng):
        out = []
        for sa, sb in BINARY_SHAPES:
            a = vals(sa, n, rng, domain, int_domain)
            b = vals(sb, n, rng, rhs_domain, rhs_int_domain, nonzero_rhs)
            out.append(SampleInput((a, b), desc=f"{sa} op {sb}"))
        if n != "bool":
            a = vals((3, 4), n, rng, domain, int_domain)
            b = vals((3, 4), n, rng, rhs_domain, rhs_int_domain, nonzero_rhs)
            for s in scalars:
                if isinstance(s, float) and n not in INEXACT:
                    continue
                if n in UINTS and s < 0:
                    continue
                out.append(SampleInput((a, s), desc=f"array op {s!r}"))
                out.append(SampleInput((s, b), desc=f"{s!r} op array"))
        return out
    return gen


def _bool_via_int(fn):
    """Reference for bool inputs: compute on ints, then cast back to bool."""
    def ref(*args):
        if all(getattr(a, "dtype", None) == np.bool_ for a in args
               if isinstance(a, np.ndarray)):
            ints = [a.astype(np.int64) if isinstance(a, np.ndarray) else a
                    for a in args]
            return fn(*ints) != 0
        return fn(*args)
    return ref


def _erfinv(y):
    """float64 inverse error function (Newton on math.erf)."""
    y = np.asarray(y, dtype=np.float64)
    out = np.empty_like(y)
    for i, v in np.ndenumerate(y):
        if np.isnan(v) or abs(v) > 1:
            out[i] = np.nan
            continue
        if abs(v) == 1:
            out[i] = math.copysign(math.inf, v)
            continue
        # Giles' single-precision approximation as a start, then Newton.
        w = -math.log((1.0 - v) * (1.0 + v))
        if w < 5:
            w -= 2.5
            p = 2.81022636e-08
            for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                      0.00021858087, -0.00125372503, -0.00417768164,
                      0.246640727, 1.50140941):
                p = c + p * w
        else:
            w = math.sqrt(w) - 3
            p = -0.000200214257
            for c in (0.000100950558, 0.00134934322, -0.00367342844,
                      0.00573950773, -0.0076224613, 0.00943887047,
                      1.00167406, 2.83297682):
                p = c + p * w
        x = p * v
        for _ in range(4):
            err = math.erf(x) - v
            x -= err / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
        out[i] = x
    return out


_verf = np.vectorize(math.erf, otypes=[np.float64])


def _sign_ref(x):
    if x.dtype == np.bool_:
        return x.copy()
    if np.iscomplexobj(x):
        mag = np.abs(x)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag))
    if x.dtype.kind == "u":
        return (x > 0).astype(x.dtype)
    # MLX: sign(nan) == 0 (NumPy returns nan)
    return np.where(np.isnan(x), 0, np.sign(x))


def _same_non_float(fn):
    """Rounding functions are the identity on ints and bools."""
    def ref(x, *a, **k):
        if x.dtype.kind in "biu":
            return x.copy()
        return fn(x, *a, **k)
    return ref


def _round_ref(x, decimals=0):
    if x.dtype.kind == "b" and decimals >= 0:
        return x.copy()
    if x.dtype.kind == "b":  # like MLX: round(x / 10**k) * 10**k, as bool
        f = 10 ** (-decimals)
        return np.round(x.astype(np.float64) / f) * f != 0
    if x.dtype.kind in "iu":
        if decimals >= 0:
            return x.copy()
        f = 10 ** (-decimals)
        return (np.round(x.astype(np.float64) / f) * f).astype(x.dtype)
    return np.round(x, decimals)


def _conj_ref(x):
    return np.conj(x) if np.iscomplexobj(x) else x.copy()


def _imag_ref(x):
    return np.imag(x) if np.iscomplexobj(x) else np.zeros_like(x)


def _real_ref(x):
    return np.real(x) if np.iscomplexobj(x) else x.copy()


def _is_ref(fn):
    def ref(x):
        if x.dtype.kind in "biu":  # integers are always finite
            return np.full(x.shape, fn is np.isfinite)
        return fn(x)
    return ref


SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.0)


# --------------------------------------------------------------------------
# error-input helpers
# --------------------------------------------------------------------------

def _e(build, exc, match, desc="", mlx_msg=False, ember_only=False):
    return ErrorInput(build, exc, match, desc, mlx_msg, ember_only)


def _arr(shape=(2, 3), dtype="float32"):
    return mx.zeros(shape, dtype=mx_dtype(dtype))


# --------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------

OPS = []


def add_op(**kw):
    info = OpInfo(**kw)
    OPS.append(info)
    return info


def _mx(name):
    return getattr(mx, name)


def apply_in_domain(row, args):
    """row's op on float arrays, each first mapped into the row's domain for
    that argument (as the table's samples are drawn: (lo, hi), zeros made 1
    where the op needs nonzero values); ops without float dtypes (bitwise,
    shifts) on the floored values as int32. The result (a multi-output op's
    outputs added) cast to the arguments' dtype. The random-chain tests of
    compile and fusion build their chains from it."""
    dtype = args[0].dtype
    xs = []
    for i, a in enumerate(args):
        lo, hi = (row.rhs_domain if i == 1 else row.domain) or (-5, 5)
        v = mx.sigmoid(a) * (hi - lo) + lo
        if i in row.nonzero_args:
            v = mx.where(v == 0, 1.0, v)
        if str(dtype).rsplit(".", 1)[-1] not in row.dtypes:
            v = mx.floor(v).astype(mx.int32)
        xs.append(v)
    r = row.op(*xs)
    if isinstance(r, (list, tuple)):
        r = sum(r[1:], r[0])
    return r if r.dtype == dtype else r.astype(dtype)


def chain_rows():
    """Every unary and binary elementwise row (multi-output ones included):
    what the random-chain tests of compile and fusion draw from, through
    apply_in_domain."""
    return [o for o in OPS if o.family in ("unary", "binary")]


# ---- unary elementwise ----------------------------------------------------

def _unary(name, ref, dtypes=ALL, out=same, domain=(-5, 5), int_domain=None,
           compute_float=False, transcendental=False, nonzero=False,
           differentiable=True, errors=None, mlx_f64_is_f32=False,
           specials=SPECIALS, aliases=(), unsupported=()):
    """``unsupported``: dtypes MLX rejects with ValueError naming the op
    (dtypes merely left out of ``dtypes`` have no NumPy reference)."""

    def error_inputs():
        errs = list(errors() if errors else [])
        for d in unsupported:
            errs.append(_e(lambda d=d: ((_arr((2,), d),), {}), ValueError,
                           name, desc=f"unsupported dtype {d}",
                           mlx_msg=True))
        return errs

    return add_op(
        name=name, op=_mx(name), ref=ref, dtypes=list(dtypes),
        sample_inputs=unary_samples(domain, int_domain, nonzero, specials),
        out_dtype=out, compute_float=compute_float,
        transcendental=transcendental, differentiable=differentiable,
        domain=domain, family="unary", error_inputs=error_inputs,
        mlx_f64_is_f32=mlx_f64_is_f32, aliases=aliases,
        nonzero_args=(0,) if nonzero else ())


NO_COMPLEX = [d for d in ALL if d != "complex64"]
NO_BOOL = [d for d in ALL if d != "bool"]

_unary("abs", np.abs, out=real_of)
_unary("negative", np.negative, dtypes=NO_BOOL, unsupported=("bool",))
_unary("positive", lambda x: x.copy())
_unary("sign", _sign_ref, differentiable=False)
_unary("square", lambda x: x * x)
_unary("sqrt", np.sqrt, out=floating, domain=(0.1, 10), int_domain=(0, 10),
       compute_float=True, specials=(0.0, -0.0, np.inf, np.nan, 1.0, 4.0))
_unary("rsqrt", lambda x: 1 / np.sqrt(x), out=floating, domain=(0.1, 10),
       int_domain=(1, 10), compute_float=True, transcendental=True,
       specials=(np.inf, np.nan, 1.0, 4.0, 0.25))
_unary("reciprocal", lambda x: 1 / x, out=floating, domain=(-4, 4),
       nonzero=True, compute_float=True,
       specials=(np.inf, -np.inf, np.nan, 1.0, -2.0))
_unary("exp", np.exp, out=floating, compute_float=True, transcendental=True,
       mlx_f64_is_f32=True,
       specials=(0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 10.0))
_unary("expm1", np.expm1, dtypes=NO_COMPLEX, unsupported=COMPLEX,
       out=floating, compute_float=True, transcendental=True,
       specials=(0.0, -0.0, np.inf, -np.inf, np.nan, 1e-3, -1e-3))
_unary("log", np.log, out=floating, domain=(0.1, 10), int_domain=(1, 10),
       compute_float=True, transcendental=True,
       specials=(0.0, np.inf, np.nan, 1.0, 2.0, 0.5))
_unary("log2", np.log2, out=floating, domain=(0.1, 10), int_domain=(1, 10),
       compute_float=True, transcendental=True,
       specials=(0.0, np.inf, np.nan, 1.0, 2.0, 0.5))
_unary("log10", np.log10, out=floating, domain=(0.1, 10), int_domain=(1, 10),
       compute_float=True, transcendental=True,
       specials=(0.0, np.inf, np.nan, 1.0, 10.0, 0.5))
_unary("log1p", np.log1p, out=floating, domain=(-0.5, 5), int_domain=(0, 5),
       compute_float=True, transcendental=True,
       specials=(0.0, -0.0, np.inf, np.nan, -1.0, 1e-3))
_unary("sin", np.sin, out=floating, compute_float=True, transcendental=True,
       mlx_f64_is_f32=True, specials=(0.0, -0.0, np.nan, 1.0, -1.0))
_unary("cos", np.cos, out=floating, compute_float=True, transcendental=True,
       mlx_f64_is_f32=True, specials=(0.0, -0.0, np.nan, 1.0, -1.0))
_unary("tan", np.tan, out=floating, domain=(-1.2, 1.2), int_domain=(-1, 1),
       compute_float=True, transcendental=True,
       specials=(0.0, -0.0, np.nan, 1.0, -1.0))
_unary("arcsin", np.arcsin, out=floating, domain=(-0.95, 0.95),
       int_domain=(-1, 1), compute_float=True, transcendental=True,
       specials=(0.0, -0.0, np.nan, 1.0, -1.0, 0.5), aliases=("asin",))
_unary("arccos", np.arccos, out=floating, domain=(-0.95, 0.95),
       int_domain=(-1, 1), compute_float=True, transcendental=True,
       specials=(0.0, np.nan, 1.0, -1.0, 0.5), aliases=("acos",))
_unary("arctan", np.arctan, out=floating, compute_float=True,
       transcendental=True, aliases=("atan",))
_unary("sinh", np.sinh, out=floating, domain=(-3, 3), compute_float=True,
       transcendental=True)
_unary("cosh", np.cosh, out=floating, domain=(-3, 3), compute_float=True,
       transcendental=True)
_unary("tanh", np.tanh, out=floating, compute_float=True, transcendental=True)
_unary("arcsinh", np.arcsinh, out=floating, compute_float=True,
       transcendental=True, aliases=("asinh",))
_unary("arccosh", np.arccosh, out=floating, domain=(1.05, 5),
       int_domain=(1, 5), compute_float=True, transcendental=True,
       specials=(1.0, np.inf, np.nan, 2.0), aliases=("acosh",))
_unary("arctanh", np.arctanh, out=floating, domain=(-0.95, 0.95),
       int_domain=(0, 0), compute_float=True, transcendental=True,
       specials=(0.0, -0.0, np.nan, 0.5, -0.5), aliases=("atanh",))
_unary("erf", _verf, dtypes=NO_COMPLEX, unsupported=COMPLEX, out=floating,
       domain=(-3, 3), compute_float=True, transcendental=True,
       mlx_f64_is_f32=True,
       specials=(0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0))
_unary("erfinv", _erfinv, dtypes=NO_COMPLEX, unsupported=COMPLEX,
       out=floating, domain=(-0.95, 0.95), int_domain=(0, 0),
       compute_float=True, transcendental=True, mlx_f64_is_f32=True,
       specials=(0.0, -0.0, np.nan, 0.5, -0.5))
_unary("sigmoid", lambda x: 1 / (1 + np.exp(-x)), dtypes=NO_COMPLEX,
       unsupported=COMPLEX, out=floating, domain=(-8, 8), compute_float=True,
       transcendental=True, mlx_f64_is_f32=True,
       specials=(0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0))
_unary("floor", _same_non_float(np.floor), dtypes=NO_COMPLEX,
       unsupported=COMPLEX, differentiable=False)
_unary("ceil", _same_non_float(np.ceil), dtypes=NO_COMPLEX,
       unsupported=COMPLEX, differentiable=False)
_unary("trunc", _same_non_float(np.trunc), dtypes=NO_COMPLEX,
       unsupported=COMPLEX, differentiable=False)
_unary("degrees", lambda x: x * (180.0 / np.pi), out=floating,
       compute_float=True)
_unary("radians", lambda x: x * (np.pi / 180.0), out=floating,
       compute_float=True)
_unary("isnan", _is_ref(np.isnan), out=boolean, differentiable=False)
_unary("isinf", _is_ref(np.isinf), out=boolean, differentiable=False)
_unary("isfinite", _is_ref(np.isfinite), out=boolean, differentiable=False)
_unary("isneginf", _is_ref(np.isneginf), dtypes=NO_COMPLEX, out=boolean,
       differentiable=False)
_unary("isposinf", _is_ref(np.isposinf), dtypes=NO_COMPLEX, out=boolean,
       differentiable=False)
_unary("logical_not", np.logical_not, out=boolean, differentiable=False)
_unary("bitwise_invert", np.invert, dtypes=BOOL + INTS, differentiable=False,
       unsupported=INEXACT)
_unary("conj", _conj_ref, aliases=("conjugate",))
_unary("real", _real_ref, out=real_of)
_unary("imag", _imag_ref, out=real_of)


def _round_samples(n, rng):
    out = []
    for shape in [(), (0,), (7,), (3, 4)]:
        x = _vals(shape, n, rng, (-50, 50))
        out.append(SampleInput((x,), desc=f"shape={shape}"))
    x = _vals((3, 4), n, rng, (-50, 50))
    if n not in ("float16", "bfloat16"):  # x * 10**d is not exact there
        for d in (1, 2, -1):
            out.append(SampleInput((x,), {"decimals": d},
                                   desc=f"decimals={d}"))
    if n in FLOATS:
        half = round_to(np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.0]), n)
        out.append(SampleInput((half,), desc="ties to even"))
    if n in SINTS:
        ints = np.array([123, 125, 135, -125, -5, 7], dtype=NP_CARRIER[n]) \
            if n != "int8" else np.array([12, 15, 25, -15, -5, 7], np.int8)
        out.append(SampleInput((ints,), {"decimals": -1},
                               desc="integer ties to even, decimals=-1"))
    return out


add_op(name="round", op=mx.round, ref=_round_ref, dtypes=ALL,
       sample_inputs=_round_samples, out_dtype=same, differentiable=False,
       family="unary", mlx_f64_is_f32=True)  # MLX scales by a float32 10**d


# ---- binary elementwise ---------------------------------------------------

def _binary(name, ref, dtypes=ALL, out=same, domain=(-5, 5), int_domain=None,
            rhs_domain=None, rhs_int_domain=None, nonzero_rhs=False,
            compute_float=False, transcendental=False, differentiable=True,
            scalars=(2,), errors=None, mlx_f64_is_f32=False, aliases=(),
            multi_output=False, unsupported=(), unsupported_exc=ValueError,
            integral_lowp=False):

    def error_inputs():
        d0 = "float32" if "float32" in dtypes else "int32"
        errs = [
            _e(lambda: ((_arr((2,), d0), _arr((3,), d0)), {}), ValueError,
               "broadcast|" + name, "incompatible shapes"),
        ]
        errs += list(errors() if errors else [])
        for d in unsupported:
            errs.append(_e(lambda d=d: ((_arr((2,), d), _arr((2,), d)), {}),
                           unsupported_exc, name,
                           desc=f"unsupported dtype {d}", mlx_msg=True))
        return errs

    return add_op(
        name=name, op=_mx(name), ref=ref, dtypes=list(dtypes),
        sample_inputs=binary_samples(domain, int_domain, rhs_domain,
                                     rhs_int_domain, nonzero_rhs, scalars,
                                     integral_lowp),
        out_dtype=out, compute_float=compute_float,
        transcendental=transcendental, differentiable=differentiable,
        domain=domain, rhs_domain=rhs_domain or domain, family="binary",
        error_inputs=error_inputs, mlx_f64_is_f32=mlx_f64_is_f32,
        aliases=aliases, multi_output=multi_output,
        nonzero_args=(1,) if nonzero_rhs else ())


_binary("add", _bool_via_int(np.add), scalars=(2, 0.5))
_binary("subtract", _bool_via_int(np.subtract), scalars=(2, 0.5))
_binary("multiply", _bool_via_int(np.multiply), scalars=(2, 0.5))
_binary("divide", np.divide, out=floating, nonzero_rhs=True,
        compute_float=True, scalars=(2, 0.5))
_binary("floor_divide", _bool_via_int(np.floor_divide), dtypes=NO_COMPLEX,
        rhs_int_domain=(1, 4), nonzero_rhs=True, scalars=(2, -3),
        differentiable=False, integral_lowp=True)
_binary("remainder", _bool_via_int(np.remainder), dtypes=NO_COMPLEX,
        nonzero_rhs=True, scalars=(3, -3, 2.5), unsupported=COMPLEX,
        integral_lowp=True)
_binary("divmod", lambda a, b: (_bool_via_int(np.floor_divide)(a, b),
                                _bool_via_int(np.remainder)(a, b)),
        dtypes=NO_COMPLEX, nonzero_rhs=True, scalars=(3, -3),
        multi_output=True, differentiable=False, unsupported=COMPLEX,
        integral_lowp=True)
_binary("power", _bool_via_int(np.power), domain=(0.5, 3), int_domain=(0, 3),
        rhs_domain=(-2, 2), rhs_int_domain=(0, 3), transcendental=True,
        scalars=(2, 0.5), aliases=("pow",))
_binary("maximum", _bool_via_int(np.maximum), scalars=(2, 0.5))
_binary("minimum", _bool_via_int(np.minimum), scalars=(2, 0.5))
_binary("arctan2", np.arctan2, dtypes=NO_COMPLEX, out=floating,
        compute_float=True, transcendental=True, scalars=(2, 0.5),
        aliases=("atan2",), unsupported=COMPLEX)
_binary("logaddexp", np.logaddexp, dtypes=NO_COMPLEX, out=floating,
        compute_float=True, transcendental=True, mlx_f64_is_f32=True,
        scalars=(2, 0.5))
for _cmp, _ref in [("equal", np.equal), ("not_equal", np.not_equal),
                   ("less", np.less), ("less_equal", np.less_equal),
                   ("greater", np.greater),
                   ("greater_equal", np.greater_equal)]:
    _binary(_cmp, _ref, out=boolean, differentiable=False, scalars=(2, 0.5),
            int_domain=(-2, 2))
for _lg, _ref in [("logical_and", np.logical_and),
                  ("logical_or", np.logical_or),
                  ("logical_xor", np.logical_xor)]:
    _binary(_lg, _ref, out=boolean, differentiable=False, scalars=(),
            int_domain=(-1, 1), domain=(-1, 1))


# MLX raises RuntimeError from the function form (ValueError from the
# operator form); Ember raises ValueError for both.
_BITWISE_EXC = (RuntimeError, ValueError) if IS_MLX else ValueError


for _bw, _ref in [("bitwise_and", np.bitwise_and),
                  ("bitwise_or", np.bitwise_or),
                  ("bitwise_xor", np.bitwise_xor)]:
    _binary(_bw, _ref, dtypes=BOOL + INTS, differentiable=False,
            domain=(-100, 100), scalars=(6,), unsupported=INEXACT,
            unsupported_exc=_BITWISE_EXC)


def _shift_ref(fn):
    def ref(a, b):
        if isinstance(a, np.ndarray) and a.dtype == np.bool_:
            a = a.astype(np.uint8)
        if isinstance(b, np.ndarray) and b.dtype == np.bool_:
            b = b.astype(np.uint8)
        return fn(a, b)
    return ref


_binary("left_shift", _shift_ref(np.left_shift), dtypes=BOOL + INTS,
        out=shift_dtype, domain=(0, 5), rhs_domain=(0, 4),
        differentiable=False, scalars=(3,),
        unsupported=INEXACT, unsupported_exc=_BITWISE_EXC,
        aliases=("bitwise_left_shift",))
_binary("right_shift", _shift_ref(np.right_shift), dtypes=BOOL + INTS,
        out=shift_dtype, domain=(-100, 100), rhs_domain=(0, 6),
        differentiable=False, scalars=(3,),
        unsupported=INEXACT, unsupported_exc=_BITWISE_EXC,
        aliases=("bitwise_right_shift",))


# ---- where / clip / closeness / nan_to_num ---------------------------------

def _where_samples(n, rng):
    out = []
    for sc, sx, sy in [((3, 4), (3, 4), (3, 4)), ((4,), (3, 4), (3, 1)),
                       ((), (2, 3), (2, 3)), ((0, 3), (3,), ()),
                       ((), (), ())]:
        c = rng.random(sc) < 0.5
        x = _vals(sx, n, rng, (-5, 5))
        y = _vals(sy, n, rng, (-5, 5))
        out.append(SampleInput((Fixed(c, "bool"), x, y),
                               desc=f"cond{sc} x{sx} y{sy}"))
    if n != "bool":
        x = _vals((3, 4), n, rng, (-5, 5))
        c = rng.random((3, 4)) < 0.5
        out.append(SampleInput((Fixed(c, "bool"), x, 1), desc="scalar y"))
    cnum = make_values((3, 4), "int32", rng, -1, 1)
    x = _vals((3, 4), n, rng, (-5, 5))
    y = _vals((3, 4), n, rng, (-5, 5))
    out.append(SampleInput((Fixed(cnum, "int32"), x, y),
                           desc="integer condition"))
    return out


add_op(name="where", op=mx.where, ref=lambda c, x, y: np.where(c, x, y),
       dtypes=ALL, sample_inputs=_where_samples, family="ternary",
       error_inputs=lambda: [
           _e(lambda: ((mx.array([True, False, True]), _arr((2,)), 1), {}),
              ValueError, "broadcast|where", "incompatible shapes")])


def _clip_samples(n, rng):
    out = []
    lo, hi = (1, 3) if n not in FLOATS + COMPLEX else (-1.5, 2.5)
    if n == "bool":
        lo, hi = False, True
    for shape in [(), (0,), (7,), (3, 4)]:
        x = _vals(shape, n, rng, (-5, 5))
        out.append(SampleInput((x, lo, hi), desc=f"shape={shape}"))
    x = _vals((3, 4), n, rng, (-5, 5))
    out.append(SampleInput((x, None, hi), desc="a_min=None"))
    out.append(SampleInput((x, lo, None), desc="a_max=None"))
    if n != "bool":
        amin = _vals((4,), n, rng, (-3, 0))
        amax = _vals((3, 1), n, rng, (1, 4))
        out.append(SampleInput((x, amin, amax), desc="array bounds"))
        out.append(SampleInput((x, hi, lo), desc="a_min > a_max -> a_max"))
    return out


def _clip_ref(x, lo, hi):
    if x.dtype == np.bool_:
        r = x.copy()
        if lo is not None:
            r = r | bool(lo)
        if hi is not None:
            r = r & bool(hi)
        return r
    r = x
    if lo is not None:
        r = np.maximum(r, lo)
    if hi is not None:
        r = np.minimum(r, hi)
    return r


add_op(name="clip", op=mx.clip, ref=_clip_ref, dtypes=NO_COMPLEX,
       sample_inputs=_clip_samples, family="ternary",
       error_inputs=lambda: [
           _e(lambda: ((_arr(), None, None), {}), ValueError, "clip",
              "both bounds None"),
           _e(lambda: ((mx.array([1, 2], mx.int8), 0, 1000), {}),
              ValueError, "overflow|clip|int8", "bound overflows int8",
              mlx_msg=True)])


def _close_samples(n, rng):
    out = []
    a = _vals((3, 4), n, rng, (-5, 5))
    b = a.copy()
    if n in INEXACT:
        flat = b.reshape(-1)
        flat[::3] = flat[::3] * round_to(np.array(1.5), n)
    out.append(SampleInput((a, b), desc="same shape"))
    out.append(SampleInput((a, b[0]), desc="broadcast"))
    out.append(SampleInput((a[:0], b[:0]), desc="empty"))
    out.append(SampleInput((np.asarray(a[0, 0]), np.asarray(b[0, 0])),
                           desc="0-d"))
    if n in ("float32", "float64"):
        x = round_to(np.array([1.0, np.nan, np.inf, -np.inf, 1.0, 0.0]), n)
        y = round_to(np.array([1.0 + 1e-6, np.nan, np.inf, np.inf, 1.1,
                               1e-9]), n)
        out.append(SampleInput((x, y), desc="specials"))
        out.append(SampleInput((x, y), {"equal_nan": True},
                               desc="specials equal_nan"))
        out.append(SampleInput((x, y), {"rtol": 0.2, "atol": 0.0},
                               desc="rtol=0.2"))
        out.append(SampleInput((x, y), {"rtol": 0.0, "atol": 1e-8},
                               desc="atol only"))
    return out


add_op(name="isclose", op=mx.isclose, ref=np.isclose, dtypes=ALL,
       sample_inputs=_close_samples, out_dtype=boolean, family="misc",
       differentiable=False,
       error_inputs=lambda: [_e(lambda: ((_arr((2,)), _arr((3,))), {}),
                                ValueError, "broadcast|isclose", "shapes")])
add_op(name="allclose", op=mx.allclose,
       ref=lambda *a, **k: np.array(np.allclose(*a, **k)), dtypes=ALL,
       sample_inputs=_close_samples, out_dtype=boolean, family="misc",
       differentiable=False,
       error_inputs=lambda: [_e(lambda: ((_arr((2,)), _arr((3,))), {}),
                                ValueError, "broadcast|allclose", "shapes")])


def _array_equal_samples(n, rng):
    a = _vals((3, 4), n, rng, (-5, 5))
    b = a.copy()
    c = a.copy()
    flat = c.reshape(-1)
    flat[5] = (not flat[5]) if n == "bool" else flat[5] + 1
    out = [SampleInput((a, b), desc="equal"),
           SampleInput((a, c), desc="one differs"),
           SampleInput((a, b[0]), desc="different shapes -> False"),
           SampleInput((a[:0], b[:0]), desc="empty"),
           SampleInput((np.asarray(a[0, 0]), np.asarray(b[0, 0])),
                       desc="0-d")]
    if n in ("float32", "float64", "float16"):
        x = round_to(np.array([1.0, np.nan]), n)
        out.append(SampleInput((x, x.copy()), desc="nan"))
        out.append(SampleInput((x, x.copy()), {"equal_nan": True},
                               desc="nan equal_nan"))
    return out


add_op(name="array_equal", op=mx.array_equal,
       ref=lambda a, b, equal_nan=False: np.array(
           np.array_equal(a, b, equal_nan=equal_nan)),
       dtypes=ALL, sample_inputs=_array_equal_samples, out_dtype=boolean,
       family="misc", differentiable=False)


def _nan_to_num_samples(n, rng):
    out = [SampleInput((_vals((3, 4), n, rng, (-5, 5)),), desc="finite")]
    if n in FLOATS:
        x = round_to(np.array([np.nan, np.inf, -np.inf, 1.0, -2.0]), n)
        out.append(SampleInput((x,), desc="defaults"))
        out.append(SampleInput((x,), {"nan": 1.0, "posinf": 2.0,
                                      "neginf": -3.0}, desc="explicit"))
        out.append(SampleInput((x,), {"nan": 5.0}, desc="nan only"))
    return out


def _nan_to_num_ref(x, nan=0.0, posinf=None, neginf=None, _name=None):
    """posinf/neginf default to the finite extremes of the *array's* dtype
    (bfloat16 included)."""
    if x.dtype.kind in "biu":
        return x.copy()
    big = float(mx.finfo(mx_dtype(_name)).max)
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


# MLX 0.32 rejects float64 and complex64 here
add_op(name="nan_to_num", op=mx.nan_to_num, ref=_nan_to_num_ref,
       dtypes=BOOL + INTS + ["float16", "bfloat16", "float32"],
       sample_inputs=_nan_to_num_samples, family="misc", ref_gets_dtype=True)


# ---- reductions ------------------------------------------------------------

REDUCE_CASES = [
    ((), {}), ((), {"axis": ()}),
    ((6,), {}), ((6,), {"axis": 0}), ((6,), {"axis": -1, "keepdims": True}),
    ((3, 4), {}), ((3, 4), {"axis": 0}), ((3, 4), {"axis": 1}),
    ((3, 4), {"axis": -1, "keepdims": True}),
    ((3, 4), {"axis": (0, 1), "keepdims": True}),
    ((2, 3, 4), {"axis": (0, 2)}), ((2, 3, 4), {"axis": [-1, 0]}),
    ((2, 3, 4), {"axis": 1, "keepdims": True}),
    ((2, 3, 4), {"axis": ()}),
    ((0, 3), {"axis": 0}), ((0, 3), {"axis": 1}),
    ((0, 3), {}),
    ((1, 5, 1), {"axis": (0, 2)}),
]


def _reduces_empty(shape, axis):
    """True when a reduction over ``axis`` covers a zero-length axis."""
    if axis is None:
        axes = range(len(shape))
    elif isinstance(axis, int):
        axes = [axis]
    else:
        axes = list(axis)
    return any(shape[a] == 0 for a in axes)


def reduce_samples(domain=(-5, 5), int_domain=None, empty_ok=True,
                   empty_input_ok=True, extra=None, noop_keeps_dtype=False):
    """``empty_ok=False``: skip reductions over a zero-length axis (max,
    min raise); ``empty_input_ok=False``: skip every empty input
    (logsumexp raises for any empty array)."""
    def gen(n, rng):
        out = []
        for shape, kw in REDUCE_CASES:
            ax = kw.get("axis", None)
            if not empty_ok and _reduces_empty(shape, ax):
                continue
            if not empty_input_ok and 0 in shape:
                continue
            x = _vals(shape, n, rng, domain, int_domain)
            reduces_nothing = shape == () or ax == ()
            out.append(SampleInput(
                (x,), dict(kw), desc=f"shape={shape} {kw}",
                # sum/prod over no axis return the input unchanged (bool
                # and int8 keep their dtype)
                out_dtype=n if (reduces_nothing and noop_keeps_dtype)
                else None))
        if extra:
            out += extra(n, rng)
        return out
    return gen


def _np_reduce(fn):
    def ref(x, axis=None, keepdims=False, **kw):
        if isinstance(axis, list):
            axis = tuple(axis)
        if x.dtype == np.bool_ and fn in (np.sum, np.prod):
            x = x.astype(np.int64)
        if x.dtype.kind in "iu" and fn in (np.sum, np.prod):
            x = x.astype(np.int64 if x.dtype.kind == "i" else np.uint64)
        return fn(x, axis=axis, keepdims=keepdims, **kw)
    return ref


def _reduce(name, ref, dtypes=ALL, out=same, domain=(-5, 5), int_domain=None,
            compute_float=False, transcendental=False, empty_ok=True,
            differentiable=True, extra=None, errors=None,
            mlx_f64_is_f32=False, empty_input_ok=True,
            noop_keeps_dtype=False, mlx_wrong_dtypes=()):
    def error_inputs():
        errs = [
            _e(lambda: ((_arr(),), {"axis": 2}), IndexError, name,
               "axis out of range"),
            _e(lambda: ((_arr(),), {"axis": -3}), IndexError, name,
               "negative axis out of range"),
            _e(lambda: ((mx.array(1.0),), {"axis": 0}),
               ValueError if name == "logsumexp" else IndexError, name,
               "axis on a 0-d array"),
            _e(lambda: ((_arr(),), {"axis": (0, -2)}), ValueError, name,
               "duplicate axes"),
        ]
        errs += list(errors() if errors else [])
        return errs

    return add_op(name=name, op=_mx(name), ref=ref, dtypes=list(dtypes),
                  sample_inputs=reduce_samples(
                      domain, int_domain, empty_ok, empty_input_ok, extra,
                      noop_keeps_dtype),
                  out_dtype=out, compute_float=compute_float,
                  transcendental=transcendental, family="reduction",
                  differentiable=differentiable, error_inputs=error_inputs,
                  mlx_f64_is_f32=mlx_f64_is_f32, domain=domain,
                  mlx_wrong_dtypes=mlx_wrong_dtypes)


# sums of positive values: no cancellation, so the per-dtype tolerance holds
_reduce("sum", _np_reduce(np.sum), out=sum_dtype, domain=(0.5, 2),
        int_domain=(-5, 5), noop_keeps_dtype=True)
_reduce("prod", _np_reduce(np.prod), out=sum_dtype, domain=(0.5, 1.5),
        int_domain=(-2, 2), noop_keeps_dtype=True)
_reduce("max", _np_reduce(np.max), empty_ok=False,
        errors=lambda: [_e(lambda: ((mx.zeros((0, 3)),), {"axis": 0}),
                           ValueError, "max", "empty reduction",
                           mlx_msg=True),
                        _e(lambda: ((mx.zeros((0,)),), {}), ValueError, "max",
                           "empty reduction, all axes", mlx_msg=True)])
_reduce("min", _np_reduce(np.min), empty_ok=False,
        errors=lambda: [_e(lambda: ((mx.zeros((0, 3)),), {"axis": 0}),
                           ValueError, "min", "empty reduction",
                           mlx_msg=True)])


def _mean_ref(x, axis=None, keepdims=False):
    if isinstance(axis, list):
        axis = tuple(axis)
    with np.errstate(invalid="ignore", divide="ignore"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of empty
        return np.mean(x, axis=axis, keepdims=keepdims)


_reduce("mean", _mean_ref, out=floating, domain=(0.5, 2), compute_float=True)


def _var_extra(n, rng):
    x = _vals((3, 5), n, rng, (0.5, 2))
    return [SampleInput((x,), {"axis": 1, "ddof": 1}, desc="ddof=1"),
            SampleInput((x,), {"ddof": 2}, desc="ddof=2 all axes"),
            SampleInput((x,), {"axis": 1, "ddof": 5, "keepdims": True},
                        desc="ddof == n -> inf")]


def _var_ref(fn):
    def ref(x, axis=None, keepdims=False, ddof=0):
        if isinstance(axis, list):
            axis = tuple(axis)
        with np.errstate(invalid="ignore", divide="ignore"), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = fn(x, axis=axis, keepdims=keepdims, ddof=ddof)
        return r
    return ref


_reduce("var", _var_ref(np.var), out=real_floating, domain=(0.5, 2),
        compute_float=True, extra=_var_extra)
_reduce("std", _var_ref(np.std), out=real_floating, domain=(0.5, 2),
        compute_float=True, transcendental=True, extra=_var_extra)


def _lse_ref(x, axis=None, keepdims=False):
    if isinstance(axis, list):
        axis = tuple(axis)
    m = np.max(x, axis=axis, keepdims=True) if x.size else 0
    m = np.where(np.isfinite(m), m, 0)  # all -inf (or +inf) rows
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        if axis is None:
            r = r.reshape(())
        else:
            r = np.squeeze(r, axis=axis)
    return r


def _lse_extra(n, rng):
    if n not in ("float32", "float64"):
        return []
    big = round_to(np.array([[1000.0, 1000.0], [-np.inf, -np.inf]]), n)
    return [SampleInput((big,), {"axis": 1}, desc="no overflow / all -inf")]


_reduce("logsumexp", _lse_ref, dtypes=NO_COMPLEX, out=floating,
        compute_float=True, transcendental=True, empty_ok=False,
        empty_input_ok=False, extra=_lse_extra, mlx_f64_is_f32=True,
        # MLX computes x - max in the unsigned input dtype (wraps)
        mlx_wrong_dtypes=BOOL + UINTS,
        errors=lambda: [_e(lambda: ((mx.zeros((0, 3)),), {"axis": 1}),
                           ValueError, "logsumexp", "empty input",
                           mlx_msg=True)])
_reduce("all", _np_reduce(np.all), out=boolean, differentiable=False,
        int_domain=(0, 2), domain=(-1, 1))
_reduce("any", _np_reduce(np.any), out=boolean, differentiable=False,
        int_domain=(-1, 0), domain=(-1, 1))


def _arg_samples(n, rng):
    out = []
    for shape, kw in [((), {}), ((6,), {}), ((6,), {"axis": 0}),
                      ((3, 4), {}), ((3, 4), {"axis": 0}),
                      ((3, 4), {"axis": -1}),
                      ((3, 4), {"axis": 1, "keepdims": True}),
                      ((3, 4), {"keepdims": True}),
                      ((2, 3, 4), {"axis": 1})]:
        x = _vals(shape, n, rng, (-5, 5))
        out.append(SampleInput((x,), dict(kw), desc=f"shape={shape} {kw}"))
    ties = np.array([1, 3, 3, 0, 3], dtype=np.int64)
    out.append(SampleInput((round_to(ties, n),), desc="ties -> first index"))
    return out


def _arg_ref(fn):
    def ref(x, axis=None, keepdims=False):
        r = fn(x, axis=axis, keepdims=keepdims)
        if axis is None and keepdims:
            r = np.reshape(r, (1,) * x.ndim)
        return np.asarray(r).astype(np.uint32)
    return ref


def _arg_errors(name):
    return lambda: [
        _e(lambda: ((_arr(),), {"axis": 2}), IndexError, name,
           "axis out of range"),
        _e(lambda: ((mx.zeros((0, 3)),), {"axis": 0}), ValueError, name,
           "empty reduction", mlx_msg=True),
        _e(lambda: ((mx.zeros((0,)),), {}), ValueError, name,
           "empty array", mlx_msg=True),
        _e(lambda: ((_arr(),), {"axis": (0, 1)}), TypeError, None,
           "tuple axis not accepted"),
    ]


for _a, _fn in [("argmax", np.argmax), ("argmin", np.argmin)]:
    add_op(name=_a, op=_mx(_a), ref=_arg_ref(_fn), dtypes=ALL,
           sample_inputs=_arg_samples, out_dtype=uint32, family="reduction",
           differentiable=False, error_inputs=_arg_errors(_a))


def _softmax_samples(n, rng):
    out = []
    for shape, kw in [((5,), {}), ((3, 4), {"axis": -1}),
                      ((3, 4), {"axis": 0}), ((2, 3, 4), {"axis": (1, 2)}),
                      ((3, 4), {}), ((0, 3), {"axis": -1}), ((), {}),
                      ((3, 4), {"axis": -1, "precise": True})]:
        x = _vals(shape, n, rng, (-5, 5))
        out.append(SampleInput((x,), dict(kw), desc=f"shape={shape} {kw}"))
    if n in ("float32", "float64"):
        big = round_to(np.array([[1000.0, 999.0, -np.inf]]), n)
        out.append(SampleInput((big,), {"axis": -1}, desc="large logits"))
    return out


def _softmax_ref(x, axis=None, precise=False):
    if axis is None:
        axis = tuple(range(x.ndim))
    if x.size == 0:
        return x.copy()
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


# MLX returns integer/bool softmax in the input dtype (all 0 or 1) unless
# the axis is the last one; Ember always returns float32.
add_op(name="softmax", op=mx.softmax, ref=_softmax_ref, dtypes=NO_COMPLEX,
       sample_inputs=_softmax_samples, out_dtype=floating, compute_float=True,
       transcendental=True, family="reduction", mlx_f64_is_f32=True,
       mlx_wrong_dtypes=BOOL + INTS,
       error_inputs=lambda: [_e(lambda: ((_arr(),), {"axis": 2}),
                                IndexError, "softmax", "axis out of range"),
                             _e(lambda: ((mx.array(1.0),), {"axis": 0}),
                                ValueError, "softmax.*0 dimensions", "axis of a 0-d array"),
                             _e(lambda: ((mx.array(1.0),), {"axis": -1}),
                                ValueError, "softmax.*0 dimensions", "axis -1 of a 0-d array")])


# ---- shape ops -------------------------------------------------------------

def _shape_samples(cases):
    """cases: list of (shape, args_after_x, kwargs)."""
    def gen(n, rng):
        out = []
        for shape, rest, kw in cases:
            x = _vals(shape, n, rng, (-50, 50))
            out.append(SampleInput((x,) + tuple(rest), dict(kw),
                                   desc=f"{shape} {rest} {kw}"))
        return out
    return gen


def _shape_op(name, ref, cases, errors=None, multi_output=False):
    return add_op(name=name, op=_mx(name), ref=ref, dtypes=DATA_DTYPES,
                  sample_inputs=_shape_samples(cases), family="shape",
                  error_inputs=errors or (lambda: []),
                  multi_output=multi_output)


_shape_op("reshape", lambda x, s: np.reshape(x, s), [
    ((2, 3, 4), ((6, 4),), {}), ((2, 3, 4), ((-1,),), {}),
    ((2, 3, 4), ((4, -1, 2),), {}), ((), ((1, 1),), {}),
    ((1,), ((),), {}), ((0, 3), ((3, 0),), {}), ((0, 3), ((2, 0, 5),), {}),
    ((6,), ([2, 3],), {}),
], errors=lambda: [
    _e(lambda: ((_arr(), (4, 2)), {}), ValueError, "reshape", "bad size",
       mlx_msg=True),
    _e(lambda: ((_arr(), (-1, -1)), {}), ValueError, "reshape",
       "two -1", mlx_msg=True),
    _e(lambda: ((_arr(), (-1, 4)), {}), ValueError, "reshape",
       "cannot infer", mlx_msg=True),
    _e(lambda: ((_arr(), (-2, 3)), {}), ValueError, "reshape",
       "negative dim", mlx_msg=True),
    _e(lambda: ((mx.zeros((0, 3)), (-1, 0)), {}), ValueError, "reshape",
       "infer from empty", mlx_msg=True),
])


def _flatten_ref(x, start_axis=0, end_axis=-1):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_axis % x.ndim, end_axis % x.ndim
    merged = int(np.prod(x.shape[s:e + 1]))
    return x.reshape(x.shape[:s] + (merged,) + x.shape[e + 1:])


_shape_op("flatten", _flatten_ref, [
    ((2, 3, 4), (), {}), ((2, 3, 4), (1,), {}),
    ((2, 3, 4), (), {"start_axis": 0, "end_axis": 1}),
    ((2, 3, 4), (-2, -1), {}), ((), (), {}), ((2, 0, 3), (), {}),
    ((2, 0, 3), (1, 2), {}), ((5,), (0, 0), {}),
], errors=lambda: [
    _e(lambda: ((mx.zeros((2, 3, 4)), 2, 1), {}), ValueError, "flatten",
       "start > end", mlx_msg=True),
    _e(lambda: ((mx.zeros((2, 3, 4)), 0, 3), {}), (IndexError, ValueError),
       "flatten", "end_axis out of range (MLX silently clamps)",
       ember_only=True),
])


def _unflatten_ref(x, axis, shape):
    axis = axis % x.ndim
    shape = list(shape)
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        shape[shape.index(-1)] = x.shape[axis] // known
    return x.reshape(x.shape[:axis] + tuple(shape) + x.shape[axis + 1:])


_shape_op("unflatten", _unflatten_ref, [
    ((2, 12), (1, (3, 4)), {}), ((2, 12), (1, (3, -1)), {}),
    ((12,), (0, (2, 2, 3)), {}), ((2, 12), (-1, (4, 3)), {}),
    ((6, 2), (0, (6,)), {}), ((0, 4), (1, (2, 2)), {}),
], errors=lambda: [
    _e(lambda: ((mx.zeros((2, 12)), 1, (5, -1)), {}), ValueError,
       "unflatten", "bad size", mlx_msg=True),
    _e(lambda: ((mx.zeros((2, 12)), 1, (-1, -1)), {}), ValueError,
       "unflatten", "two -1", mlx_msg=True),
    _e(lambda: ((mx.zeros((2, 12)), 1, ()), {}), ValueError, "unflatten",
       "empty shape", mlx_msg=True),
    _e(lambda: ((mx.zeros((2, 12)), 2, (3, 4)), {}), IndexError,
       "unflatten", "axis out of range", mlx_msg=True),
])


def _squeeze_ref(x, axis=None):
    if isinstance(axis, list):
        axis = tuple(axis)
    return np.squeeze(x, axis=axis)


_shape_op("squeeze", _squeeze_ref, [
    ((1, 3, 1), (), {}), ((1, 3, 1), (0,), {}), ((1, 3, 1), (-1,), {}),
    ((1, 3, 1), ((0, 2),), {}), ((3,), (), {}), ((), (), {}),
    ((1, 0, 1), (), {}), ((1, 1), ([0, 1],), {}),
], errors=lambda: [
    _e(lambda: ((mx.zeros((2, 3)), 0), {}), ValueError, "squeeze",
       "size != 1", mlx_msg=True),
    _e(lambda: ((mx.zeros((1, 2)), 2), {}), IndexError, "squeeze",
       "axis out of range", mlx_msg=True),
    _e(lambda: ((mx.zeros((1, 2, 1)), (0, 0)), {}), ValueError, "squeeze",
       "duplicate axes", mlx_msg=True),
])


def _expand_ref(x, axis):
    if isinstance(axis, list):
        axis = tuple(axis)
    return np.expand_dims(x, axis)


_shape_op("expand_dims", _expand_ref, [
    ((2, 3), (0,), {}), ((2, 3), (-1,), {}), ((2, 3), ((0, 3),), {}),
    ((), (0,), {}), ((2, 3), (2,), {}), ((0,), ([0, -1],), {}),
], errors=lambda: [
    _e(lambda: ((_arr(), 3), {}), IndexError, "expand_dims",
       "axis out of range", mlx_msg=True),
    _e(lambda: ((_arr(), (0, 0)), {}), ValueError, "expand_dims",
       "duplicate axes", mlx_msg=True),
])


def _transpose_ref(x, axes=None):
    return np.transpose(x, axes)


_shape_op("transpose", _transpose_ref, [
    ((2, 3), (), {}), ((2, 3, 4), ((1, 2, 0),), {}),
    ((2, 3, 4), (), {"axes": [2, 0, 1]}), ((2, 3, 4), ((-1, 0, 1),), {}),
    ((), (), {}), ((3,), (), {}), ((0, 2), (), {}),
], errors=lambda: [
    _e(lambda: ((_arr(), (0,)), {}), ValueError, "transpose",
       "wrong number of axes", mlx_msg=True),
    _e(lambda: ((_arr(), (0, 0)), {}), ValueError, "transpose",
       "repeated axes", mlx_msg=True),
    _e(lambda: ((_arr(), (0, 2)), {}), IndexError, "transpose",
       "axis out of range", mlx_msg=True),
])
_shape_op("swapaxes", np.swapaxes, [
    ((2, 3), (0, 1), {}), ((2, 3, 4), (0, -1), {}), ((2, 3, 4), (1, 1), {}),
    ((0, 3), (0, 1), {}),
], errors=lambda: [
    _e(lambda: ((_arr(), 0, 2), {}), IndexError, "swapaxes",
       "axis out of range", mlx_msg=True)])
_shape_op("moveaxis", np.moveaxis, [
    ((2, 3, 4), (0, 2), {}), ((2, 3, 4), (-1, 0), {}), ((2, 3), (1, 1), {}),
    ((2, 0, 4), (1, 2), {}),
], errors=lambda: [
    _e(lambda: ((_arr(), 0, 2), {}), IndexError, "moveaxis",
       "axis out of range", mlx_msg=True)])
_shape_op("broadcast_to", lambda x, s: np.broadcast_to(x, s).copy(), [
    ((3,), ((2, 3),), {}), ((1, 3), ((4, 3),), {}), ((), ((2, 2),), {}),
    ((2, 1), ((2, 0),), {}), ((3,), ((3,),), {}), ((1,), ([2, 2, 1],), {}),
], errors=lambda: [
    _e(lambda: ((_arr(), (3, 3)), {}), ValueError, "broadcast",
       "incompatible", mlx_msg=True),
    _e(lambda: ((_arr(), (3,)), {}), ValueError, "broadcast_to",
       "fewer dimensions"),
])


def _ba_samples(n, rng):
    out = []
    for shapes in [((2, 1), (3,)), ((), (2, 3)), ((4,),), ((1, 3), (2, 1),
                                                           (2, 3)),
                   ((0, 1), (3,))]:
        xs = tuple(_vals(s, n, rng, (-5, 5)) for s in shapes)
        out.append(SampleInput(xs, desc=f"{shapes}"))
    return out


add_op(name="broadcast_arrays", op=mx.broadcast_arrays,
       ref=lambda *xs: [a.copy() for a in np.broadcast_arrays(*xs)],
       dtypes=DATA_DTYPES, sample_inputs=_ba_samples, family="shape",
       multi_output=True,
       error_inputs=lambda: [_e(lambda: ((_arr((2,)), _arr((3,))), {}),
                                ValueError, "broadcast", "incompatible",
                                mlx_msg=True)])


def _concat_samples(n, rng):
    out = []
    for shapes, kw in [(((2, 3), (2, 3)), {}),
                       (((2, 3), (2, 1)), {"axis": 1}),
                       (((2, 3), (4, 3), (1, 3)), {"axis": 0}),
                       (((2, 3, 2), (2, 3, 1)), {"axis": -1}),
                       (((2, 3), (3, 2)), {"axis": None}),
                       (((0, 3), (2, 3)), {}), (((4,),), {}),
                       (((2, 0), (2, 0)), {"axis": 1})]:
        xs = [_vals(s, n, rng, (-50, 50)) for s in shapes]
        out.append(SampleInput((xs,), kw, desc=f"{shapes} {kw}"))
    return out


def _concat_ref(xs, axis=0):
    if axis is None:
        return np.concatenate([x.reshape(-1) for x in xs])
    return np.concatenate(xs, axis=axis)


def _concat_errors(name):
    # MLX's concat messages say "[concatenate]", which contains "concat"
    return lambda: [
        _e(lambda: (([_arr((2, 3)), _arr((3, 3))],), {"axis": 1}),
           ValueError, name, "shape mismatch", mlx_msg=True),
        _e(lambda: (([_arr((2, 3)), _arr((3,))],), {}), ValueError, name,
           "ndim mismatch", mlx_msg=True),
        _e(lambda: (([],), {}), ValueError, name, "no arrays", mlx_msg=True),
        _e(lambda: (([_arr(), _arr()],), {"axis": 2}), IndexError, name,
           "axis out of range", mlx_msg=True),
        _e(lambda: (([mx.array(1), mx.array(2)],), {}), IndexError, name,
           "0-d inputs", mlx_msg=True),
    ]


for _c in ("concatenate", "concat"):
    add_op(name=_c, op=_mx(_c), ref=_concat_ref, dtypes=DATA_DTYPES,
           sample_inputs=_concat_samples, family="shape",
           error_inputs=_concat_errors(_c))


def _stack_samples(n, rng):
    out = []
    for shapes, kw in [(((2, 3), (2, 3)), {}),
                       (((2, 3), (2, 3)), {"axis": 2}),
                       (((2, 3),) * 3, {"axis": -1}), (((), ()), {}),
                       (((0, 3), (0, 3)), {"axis": 1}), (((4,),), {})]:
        xs = [_vals(s, n, rng, (-50, 50)) for s in shapes]
        out.append(SampleInput((xs,), kw, desc=f"{shapes} {kw}"))
    return out


add_op(name="stack", op=mx.stack,
       ref=lambda xs, axis=0: np.stack(xs, axis=axis), dtypes=DATA_DTYPES,
       sample_inputs=_stack_samples, family="shape",
       error_inputs=lambda: [
           _e(lambda: (([_arr((2, 3)), _arr((3, 2))],), {}), ValueError,
              "stack", "shape mismatch", mlx_msg=True),
           _e(lambda: (([],), {}), ValueError, "stack", "no arrays",
              mlx_msg=True),
           _e(lambda: (([_arr(), _arr()],), {"axis": 3}), IndexError,
              "stack", "axis out of range", mlx_msg=True)])


def _split_ref(x, ios, axis=0):
    return [p.copy() for p in np.split(x, ios, axis=axis)]


_shape_op("split", _split_ref, [
    ((6,), (3,), {}), ((6,), ([1, 4],), {}), ((2, 6), (3,), {"axis": 1}),
    ((6, 2), ([2],), {"axis": -2}), ((6,), ([1, 10],), {}),
    ((6,), ([4, 1],), {}), ((6,), ([-2],), {}), ((0, 4), (2,), {"axis": 1}),
    ((4,), (1,), {}),
], multi_output=True, errors=lambda: [
    _e(lambda: ((mx.arange(6), 4), {}), ValueError, "split",
       "unequal sections"),
    _e(lambda: ((mx.arange(6), 0), {}), ValueError, "split", "zero sections",
       mlx_msg=True),
    _e(lambda: ((_arr(), 3), {"axis": 2}), IndexError, "split",
       "axis out of range", mlx_msg=True),
    _e(lambda: ((mx.array(1.0), 1), {}), IndexError, "split", "0-d input",
       mlx_msg=True),
])


def _repeat_ref(x, repeats, axis=None):
    return np.repeat(x, repeats, axis=axis)


_shape_op("repeat", _repeat_ref, [
    ((2, 3), (2,), {}), ((2, 3), (2,), {"axis": 1}), ((2, 3), (3, 0), {}),
    ((2, 3), (0,), {"axis": 1}), ((), (3,), {}), ((0, 2), (2,), {"axis": 1}),
    ((2, 3), (1,), {"axis": -1}),
], errors=lambda: [
    _e(lambda: ((_arr(), -1), {"axis": 1}), ValueError, "repeat",
       "negative repeats", mlx_msg=True),
    _e(lambda: ((_arr(), 2), {"axis": 2}), IndexError, "repeat",
       "axis out of range", mlx_msg=True),
])
_shape_op("tile", lambda x, r: np.tile(x, r), [
    ((2, 3), (2,), {}), ((2, 3), ((2, 1, 2),), {}), ((2, 3), ((0,),), {}),
    ((), ((2, 2),), {}), ((3,), ([2, 2],), {}), ((0, 3), (2,), {}),
], errors=lambda: [
    _e(lambda: ((_arr(), (-1,)), {}), ValueError, "tile",
       "negative reps")])


def _pad_samples(n, rng):
    out = []
    for shape, pw in [((2, 3), 1), ((2, 3), (1, 2)), ((2, 3), [(1, 2)]),
                      ((2, 3), [(0, 1), (2, 0)]),
                      ((2, 3), [(2, 2), (5, 5)]), ((4,), [(3, 3)]),
                      ((2, 3, 2), 1), ((3,), 0)]:
        x = _vals(shape, n, rng, (-50, 50))
        for mode in ("constant", "edge", "reflect", "symmetric"):
            out.append(SampleInput((x, pw), {"mode": mode},
                                   desc=f"{shape} {pw} {mode}"))
    x = _vals((2, 3), n, rng, (-50, 50))
    cv = True if n == "bool" else 7
    out.append(SampleInput((x, 1), {"constant_values": cv},
                           desc="constant_values"))
    out.append(SampleInput((x, [(1, 1), (0, 2)]),
                           {"constant_values": round_to(np.array(3), n)
                            if n != "bool" else np.array(True)},
                           desc="array constant_values"))
    out.append(SampleInput((_vals((0, 3), n, rng, (-5, 5)), 1),
                           desc="empty input, constant"))
    return out


def _pad_ref(x, pw, mode="constant", constant_values=0):
    if mode == "constant":
        return np.pad(x, pw, mode=mode,
                      constant_values=np.asarray(constant_values).item())
    return np.pad(x, pw, mode=mode)


add_op(name="pad", op=mx.pad, ref=_pad_ref, dtypes=DATA_DTYPES,
       sample_inputs=_pad_samples, family="shape",
       error_inputs=lambda: [
           _e(lambda: ((_arr(), -1), {}), ValueError, "pad",
              "negative width", mlx_msg=True),
           _e(lambda: ((_arr(), 1), {"mode": "wrap"}), ValueError, "pad",
              "unknown mode", mlx_msg=True),
           _e(lambda: ((_arr(), [(1, 1)] * 3), {}), ValueError, "pad",
              "too many widths", mlx_msg=True),
           _e(lambda: ((mx.zeros((0, 3)), 1), {"mode": "edge"}),
              ValueError, "pad", "edge mode on an empty axis (MLX returns "
              "uninitialised zeros)", ember_only=True),
           _e(lambda: ((mx.zeros((0, 3)), 1), {"mode": "reflect"}),
              ValueError, "pad", "reflect mode on an empty axis",
              ember_only=True),
       ])


def _atleast_samples(n, rng):
    out = []
    for shape in [(), (3,), (2, 3), (2, 3, 4), (0,)]:
        out.append(SampleInput((_vals(shape, n, rng, (-5, 5)),),
                               desc=f"{shape}"))
    xs = [_vals(s, n, rng, (-5, 5)) for s in [(), (3,), (2, 3)]]
    out.append(SampleInput(tuple(xs), desc="several arrays -> list"))
    return out


def _atleast_ref(np_fn):
    def ref(*xs):
        r = np_fn(*xs)
        if len(xs) > 1:
            return [a.copy() for a in r]
        return r.copy()
    return ref


# atleast_3d places the new axes like NumPy: (n,) -> (1, n, 1),
# (m, n) -> (m, n, 1)
for _k, _fn in [(1, np.atleast_1d), (2, np.atleast_2d), (3, np.atleast_3d)]:
    add_op(name=f"atleast_{_k}d", op=_mx(f"atleast_{_k}d"),
           ref=_atleast_ref(_fn), dtypes=DATA_DTYPES,
           sample_inputs=_atleast_samples, family="shape",
           multi_output="maybe")


def _as_strided_samples(n, rng):
    x = _vals((10,), n, rng, (-50, 50))
    y = _vals((2, 3), n, rng, (-50, 50))
    return [
        SampleInput((x, (3, 3), (1, 1)), desc="sliding window"),
        SampleInput((x, (2,), (2,)), {"offset": 3}, desc="offset"),
        SampleInput((x, (3,), (-1,)), {"offset": 5}, desc="negative stride"),
        SampleInput((y,), desc="defaults keep shape"),
        SampleInput((y, (6,), (1,)), desc="flat view of logical order"),
        SampleInput((x, (2, 0), (1, 1)), desc="empty result"),
        SampleInput((x, (4, 2), (0, 3)), desc="zero stride"),
    ]


def _as_strided_ref(x, shape=None, strides=None, offset=0):
    flat = np.array(x, order="C").reshape(-1)
    if shape is None:
        return x.copy()
    shape = tuple(shape)
    out = np.empty(shape, dtype=x.dtype)
    for idx in np.ndindex(*shape):
        out[idx] = flat[offset + sum(i * s for i, s in zip(idx, strides))]
    return out


# MLX raises "AsStrided must be used with row contiguous arrays only" for
# strided 1-d inputs; Ember applies as_strided to the logical row-major
# order of any input.
add_op(name="as_strided", op=mx.as_strided, ref=_as_strided_ref,
       dtypes=DATA_DTYPES, sample_inputs=_as_strided_samples, family="shape",
       mlx_layouts=("contiguous", "transposed"),
       error_inputs=lambda: [
           _e(lambda: ((mx.arange(10), (100,), (1,)), {}), ValueError,
              "as_strided", "view past the end of the buffer (MLX reads "
              "out of bounds)", ember_only=True),
           _e(lambda: ((mx.arange(10), (3,), (-1,)), {}), ValueError,
              "as_strided", "view before the start of the buffer",
              ember_only=True),
           _e(lambda: ((mx.arange(10), (2,), (1,)), {"offset": 20}),
              ValueError, "as_strided", "offset past the end",
              ember_only=True),
       ])


def _contig_samples(n, rng):
    x = _vals((3, 4), n, rng, (-50, 50))
    return [SampleInput((x,), desc="default"),
            SampleInput((x,), {"allow_col_major": True},
                        desc="allow_col_major"),
            SampleInput((_vals((), n, rng, (-5, 5)),), desc="0-d"),
            SampleInput((_vals((0, 2), n, rng, (-5, 5)),), desc="empty")]


add_op(name="contiguous", op=mx.contiguous,
       ref=lambda x, allow_col_major=False: x.copy(), dtypes=DATA_DTYPES,
       sample_inputs=_contig_samples, family="shape")


# ---- tril / triu / *_like --------------------------------------------------

def _tri_samples(n, rng):
    out = []
    for shape, k in [((3, 4), 0), ((4, 3), 1), ((4, 4), -1), ((2, 3, 4), 2),
                     ((3, 3), -5), ((3, 3), 5), ((0, 3), 0)]:
        out.append(SampleInput((_vals(shape, n, rng, (-5, 5)),),
                               {"k": k} if k else {}, desc=f"{shape} k={k}"))
    return out


for _t, _fn in [("tril", np.tril), ("triu", np.triu)]:
    add_op(name=_t, op=_mx(_t), ref=_fn, dtypes=DATA_DTYPES,
           sample_inputs=_tri_samples, family="shape",
           error_inputs=lambda _t=_t: [
               _e(lambda: ((mx.zeros((3,)),), {}), ValueError, _t,
                  "1-d input", mlx_msg=True)])


def _like_samples(n, rng):
    out = []
    for shape in [(), (0,), (2, 3)]:
        out.append(SampleInput((_vals(shape, n, rng, (-5, 5)),),
                               desc=f"{shape}"))
    x = _vals((2, 3), n, rng, (-5, 5))
    out.append(SampleInput((x,), {"dtype": mx.float16},
                           desc="dtype=float16", out_dtype="float16"))
    return out


def _like_ref(value):
    def ref(x, dtype=None):
        return np.full(x.shape, value, dtype=np.float64 if dtype else x.dtype)
    return ref


for _name, _value in [("zeros_like", 0), ("ones_like", 1)]:
    add_op(name=_name, op=_mx(_name), ref=_like_ref(_value),
           dtypes=DATA_DTYPES, sample_inputs=_like_samples,
           family="creation", differentiable=False)


def _full_like_samples(n, rng):
    out = []
    v = True if n == "bool" else 3
    for shape in [(), (0,), (2, 3)]:
        out.append(SampleInput((_vals(shape, n, rng, (-5, 5)), v),
                               desc=f"{shape}"))
    x = _vals((2, 3), n, rng, (-5, 5))
    out.append(SampleInput((x, 2.5), {"dtype": mx.float32},
                           desc="dtype=float32", out_dtype="float32"))
    if n in INTS:
        out.append(SampleInput((x, 2.7), desc="float value truncated into "
                               "the integer dtype of the input"))
    return out


def _full_like_ref(x, v, dtype=None):
    return np.full(x.shape, v, dtype=np.float64 if dtype else x.dtype)


add_op(name="full_like", op=mx.full_like, ref=_full_like_ref,
       dtypes=DATA_DTYPES, sample_inputs=_full_like_samples,
       family="creation", differentiable=False)


def _meshgrid_samples(n, rng):
    out = []
    a = _vals((3,), n, rng, (-5, 5))
    b = _vals((4,), n, rng, (-5, 5))
    c = _vals((2,), n, rng, (-5, 5))
    for kw in [{}, {"indexing": "ij"}, {"sparse": True},
               {"sparse": True, "indexing": "ij"}]:
        out.append(SampleInput((a, b), dict(kw), desc=f"2 inputs {kw}"))
        out.append(SampleInput((a, b, c), dict(kw), desc=f"3 inputs {kw}"))
    out.append(SampleInput((a,), desc="1 input"))
    return out


add_op(name="meshgrid", op=mx.meshgrid,
       ref=lambda *xs, **kw: [g.copy() for g in np.meshgrid(*xs, **kw)],
       dtypes=DATA_DTYPES, sample_inputs=_meshgrid_samples, family="creation",
       multi_output=True,
       error_inputs=lambda: [_e(lambda: ((mx.arange(3),),
                                         {"indexing": "foo"}), ValueError,
                                "meshgrid", "bad indexing", mlx_msg=True)])


# ---- creation (no array inputs) ---------------------------------------------

def _creation_op(name, ref, samples, errors=None, dtypes=ALL):
    return add_op(name=name, op=_mx(name), ref=ref, dtypes=dtypes,
                  sample_inputs=samples, family="creation", layouts=False,
                  differentiable=False, error_inputs=errors or (lambda: []))


def _np_dtype_of(d):
    return NP_CARRIER[dtype_name(d)] if d is not None else None


def _zeros_samples(n, rng):
    d = mx_dtype(n)
    return [SampleInput(((2, 3),), {"dtype": d}, desc="tuple shape"),
            SampleInput((4, d), desc="int shape, positional dtype"),
            SampleInput(([2, 2],), {"dtype": d}, desc="list shape"),
            SampleInput(((),), {"dtype": d}, desc="0-d"),
            SampleInput(((0, 3),), {"dtype": d}, desc="empty")]


def _const_ref(value):
    def ref(shape, dtype=None):
        return np.full(shape, value, dtype=_np_dtype_of(dtype) or np.float32)
    return ref


def _shape_errors(name):
    return lambda: [
        _e(lambda: (((-1,),), {}), ValueError, name, "negative dimension"),
        _e(lambda: (((2 ** 40, 2 ** 40),), {}), OverflowError,
           "range", "a dim beyond int32", mlx_msg=True),
    ]


_creation_op("zeros", _const_ref(0), _zeros_samples,
             errors=_shape_errors("zeros"))
_creation_op("ones", _const_ref(1), _zeros_samples,
             errors=_shape_errors("ones"))


def _full_samples(n, rng):
    d = mx_dtype(n)
    v = True if n == "bool" else 3
    out = [SampleInput(((2, 3), v), {"dtype": d}, desc="scalar value"),
           SampleInput((4, v, d), desc="int shape, positional dtype"),
           SampleInput(((), v), {"dtype": d}, desc="0-d"),
           SampleInput(((0, 2), v), {"dtype": d}, desc="empty")]
    row = _vals((3,), n, rng, (-5, 5))
    out.append(SampleInput(((2, 3), row), desc="array value broadcast"))
    return out


def _full_ref(shape, vals, dtype=None):
    if isinstance(vals, np.ndarray):
        return np.broadcast_to(vals, shape).copy()
    return np.full(shape, vals, dtype=_np_dtype_of(dtype))


_creation_op("full", _full_ref, _full_samples, errors=lambda: [
    _e(lambda: (((2, 3), mx.array([1, 2])), {}), ValueError,
       "broadcast|full", "value does not broadcast"),
    _e(lambda: (((-1,), 1.0), {}), ValueError, "full", "negative dimension",
       mlx_msg=True)])


def _arange_samples(n, rng):
    d = mx_dtype(n)
    out = [SampleInput((5,), {"dtype": d}, desc="stop"),
           SampleInput((2, 7), {"dtype": d}, desc="start, stop"),
           SampleInput((1, 10, 3), {"dtype": d}, desc="step"),
           SampleInput((5, 5), {"dtype": d}, desc="empty"),
           SampleInput((7, 2), {"dtype": d}, desc="stop < start -> empty")]
    if n not in UINTS:
        out.append(SampleInput((5, -3, -2), {"dtype": d},
                               desc="negative step"))
    if n in INEXACT:
        out.append(SampleInput((0, 1, 0.25), {"dtype": d},
                               desc="float step"))
        out.append(SampleInput((-1.5, 2.0, 0.5), {"dtype": d},
                               desc="float start/step"))
    return out


def _arange_ref(*args, dtype=None):
    return np.arange(*args, dtype=np.float64).astype(_np_dtype_of(dtype))


def _arange_errors():
    return [
        _e(lambda: ((0, 5, 0), {}), ValueError, "arange", "zero step",
           mlx_msg=True),
        _e(lambda: ((0, float("nan")), {}), ValueError, "arange",
           "nan stop", mlx_msg=True),
        _e(lambda: ((0, float("inf")), {}), ValueError, "arange",
           "inf stop", mlx_msg=True),
        _e(lambda: ((0, 1e30), {}), ValueError, "arange", "too long",
           mlx_msg=True),
        _e(lambda: ((2,), {"dtype": mx.bool_}), ValueError, "arange",
           "bool dtype", mlx_msg=True),
    ]


_creation_op("arange", _arange_ref, _arange_samples, dtypes=NO_BOOL,
             errors=_arange_errors)


def _linspace_samples(n, rng):
    d = mx_dtype(n)
    out = [SampleInput((0, 10, 5), {"dtype": d}, desc="5 points"),
           SampleInput((0, 1, 1), {"dtype": d}, desc="1 point"),
           SampleInput((0, 1, 0), {"dtype": d}, desc="0 points"),
           SampleInput((0, 8, 4), {"endpoint": False, "dtype": d},
                       desc="no endpoint")]
    if n not in UINTS:
        out.append(SampleInput((4, -4, 5), {"dtype": d}, desc="decreasing"))
    return out


def _linspace_ref(start, stop, num=50, endpoint=True, dtype=None):
    r = np.linspace(start, stop, num, endpoint=endpoint, dtype=np.float64)
    npd = _np_dtype_of(dtype)
    if np.dtype(npd).kind in "iu":
        r = np.trunc(r)  # MLX truncates towards zero
    return r.astype(npd)


_creation_op("linspace", _linspace_ref, _linspace_samples, dtypes=NO_BOOL,
             errors=lambda: [_e(lambda: ((0, 1, -1), {}), ValueError,
                                "linspace", "negative num", mlx_msg=True)])


def _eye_samples(n, rng):
    d = mx_dtype(n)
    return [SampleInput((3,), {"dtype": d}, desc="square"),
            SampleInput((3, 4), {"k": 1, "dtype": d}, desc="k=1"),
            SampleInput((4, 3), {"k": -2, "dtype": d}, desc="k=-2"),
            SampleInput((3, 4, 10), {"dtype": d}, desc="k beyond"),
            SampleInput((0,), {"dtype": d}, desc="n=0")]


def _eye_ref(n, m=None, k=0, dtype=None):
    return np.eye(n, m, k=k, dtype=_np_dtype_of(dtype) or np.float32)


_creation_op("eye", _eye_ref, _eye_samples, errors=lambda: [
    _e(lambda: ((-1,), {}), ValueError, "eye", "negative n", mlx_msg=True)])


def _identity_samples(n, rng):
    d = mx_dtype(n)
    return [SampleInput((3,), {"dtype": d}), SampleInput((1, d)),
            SampleInput((0,), {"dtype": d})]


_creation_op("identity",
             lambda n, dtype=None: np.eye(n, dtype=_np_dtype_of(dtype)),
             _identity_samples)


def _tri_make_samples(n, rng):
    d = mx_dtype(n)
    return [SampleInput((3,), {"dtype": d}),
            SampleInput((3, 4, 1), {"dtype": d}),
            SampleInput((4, 3), {"k": -1, "dtype": d}),
            SampleInput((0,), {"dtype": d})]


_creation_op("tri", lambda n, m=None, k=0, dtype=None: np.tri(
    n, m, k=k, dtype=_np_dtype_of(dtype)), _tri_make_samples)


# ---- astype / view ---------------------------------------------------------

def _astype_samples(n, rng):
    out = []
    # values representable everywhere: 0..5 (and some negatives / fractions
    # where the source allows); float -> int truncates towards zero.
    for target in ALL:
        lo = 0 if (target in UINTS or n in UINTS) else -5
        x = _vals((3, 4), n, rng, (lo, 5))
        if n in FLOATS and target in INTS:
            x = np.trunc(x * 2) / 2  # halves: exercises truncation
            x = round_to(x, n)
        out.append(SampleInput((x, mx_dtype(target)),
                               desc=f"-> {target}", out_dtype=target))
    if n in ("int32", "int64", "uint32", "uint64", "int16"):
        x = round_to(np.array([300, 256, 255, 1000]), n)
        out.append(SampleInput((x, mx.uint8), desc="integer wrap -> uint8",
                               out_dtype="uint8"))
    return out


def _astype_ref(x, dtype):
    target = dtype_name(dtype)
    if target == "bool":
        return x != 0
    if np.iscomplexobj(x) and target != "complex64":
        x = np.real(x)
    if target in INTS and x.dtype.kind == "f":
        x = np.trunc(x)
    return round_to(x, target) if target in INTS else x


add_op(name="astype", op=mx.astype, ref=_astype_ref, dtypes=ALL,
       sample_inputs=_astype_samples, family="cast", differentiable=True)


def _view_samples(n, rng):
    out = []
    x = _vals((2, 8), n, rng, (-50, 50))
    for target in ALL:
        if (x.shape[-1] * ITEMSIZE[n]) % ITEMSIZE[target]:
            continue
        if target == "bool" and n not in ("bool",):
            continue  # arbitrary bytes are not valid bools
        out.append(SampleInput((x, mx_dtype(target)), desc=f"-> {target}",
                               out_dtype=target))
    return out


def _view_ref(x, dtype, _name=None):
    """Reinterpret the bytes of ``x`` (values of mx dtype ``_name``)."""
    src, target = _name, dtype_name(dtype)
    if src == "bfloat16":
        raw = (np.array(x, np.float32, order="C").view(np.uint32)
               >> np.uint32(16)).astype(np.uint16)
    else:
        raw = np.array(x.astype(NP_CARRIER[src]), order="C")
    raw = raw.view(np.uint8).reshape(x.shape[:-1] + (-1,))  # 2-d samples
    if target == "bfloat16":
        u16 = raw.view(np.uint16)
        return (u16.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return raw.view(NP_CARRIER[target])


add_op(name="view", op=mx.view, ref=_view_ref, dtypes=ALL,
       sample_inputs=_view_samples, family="cast", differentiable=False,
       ref_gets_dtype=True,
       error_inputs=lambda: [
           _e(lambda: ((mx.array([1, 0, 0], mx.uint8), mx.int32), {}),
              ValueError, "view", "last axis bytes not divisible",
              mlx_msg=True),
           _e(lambda: ((mx.array(1.0), mx.uint8), {}), ValueError, "view",
              "0-d with different itemsize", mlx_msg=True)])


# ---- fp8 (e4m3fn) ------------------------------------------------------------
# The reference works on values, not bits: the codes 0..126 in increasing
# order are the non-negative finite e4m3fn values (4 exponent bits of bias 7,
# 3 mantissa bits, subnormals m * 2^-9), so a value rounds to the nearest of
# them, a tie to the even code (the code's last bit is the mantissa's).
# MLX's saturation: |x| >= 448, infinities and NaN give 448 with x's sign.

def _fp8_magnitudes():
    c = np.arange(127)
    e, m = c >> 3, c & 7
    return np.where(e == 0, m * 2.0 ** -9, (1 + m / 8) * 2.0 ** (e - 7))


FP8_MAGNITUDES = _fp8_magnitudes()   # FP8_MAGNITUDES[c]: value of code c


def fp8_encode_ref(x):
    """uint8 e4m3fn codes of the values ``x`` (any float dtype, exact)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    v = FP8_MAGNITUDES
    hi = np.clip(np.searchsorted(v, a, side="left"), 1, len(v) - 1)
    lo = hi - 1
    with np.errstate(invalid="ignore"):  # NaN, set below
        dlo, dhi = a - v[lo], v[hi] - a
    code = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
    code = np.where(np.isnan(x) | (a >= v[-1]), 126, code)
    return (code | (np.signbit(x) << 7)).astype(np.uint8)


def fp8_decode_ref(codes):
    """float64 values of uint8 e4m3fn codes (NaN for 127 and 255)."""
    c = np.asarray(codes).astype(np.int64)
    mag = np.append(FP8_MAGNITUDES, np.nan)[c & 127]
    return np.where(c & 128, -mag, mag)


FP8_SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, -448.0, 449.0, 464.0, 480.0,
                1e4, 2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10, 1.0625, 1.1875,
                -1.0625, 416.0 + 16.0, 1e-7)


def _to_fp8_samples(n, rng):
    out = []
    for shape in UNARY_SHAPES:
        # magnitudes spread over the whole range, subnormals to saturation
        mag = 2.0 ** rng.uniform(-11, 10, shape)
        x = round_to(np.where(rng.random(shape) < 0.5, -mag, mag), n)
        out.append(SampleInput((x,), desc=f"shape={shape}"))
    out.append(SampleInput((round_to(np.array(FP8_SPECIALS), n),),
                           desc="special values"))
    return out


add_op(name="to_fp8", op=mx.to_fp8, ref=fp8_encode_ref, dtypes=FLOATS,
       sample_inputs=_to_fp8_samples, out_dtype=lambda n: "uint8", family="fp8",
       differentiable=False,
       # MLX 0.32.4 reads a float64 array's bytes as float32 values
       mlx_wrong_dtypes=("float64",),
       error_inputs=lambda: [
           _e(lambda: ((mx.array([1, 2]),), {}), ValueError,
              r"\[to_fp8\] Only real floating types are supported but x\.dtype\(\) == int32",
              "int32 input", mlx_msg=True),
           _e(lambda: ((mx.array([True]),), {}), ValueError,
              r"\[to_fp8\] .*x\.dtype\(\) == bool", "bool input", mlx_msg=True),
           _e(lambda: ((mx.array([1 + 2j]),), {}), ValueError,
              r"\[to_fp8\] .*x\.dtype\(\) == complex64", "complex input", mlx_msg=True)])


def _from_fp8_samples(n, rng):
    out = []
    for target in ("float16", "bfloat16", "float32"):
        for shape in UNARY_SHAPES:
            c = rng.integers(0, 256, shape).astype(np.uint8)
            out.append(SampleInput((c,), {"dtype": mx_dtype(target)},
                                   desc=f"shape={shape} -> {target}", out_dtype=target))
        out.append(SampleInput((np.arange(256, dtype=np.uint8),), {"dtype": mx_dtype(target)},
                               desc=f"every code -> {target}", out_dtype=target))
    out.append(SampleInput((np.arange(256, dtype=np.uint8).reshape(16, 16),),
                           desc="every code, default dtype", out_dtype="bfloat16"))
    return out


add_op(name="from_fp8", op=mx.from_fp8, ref=lambda c, dtype=None: fp8_decode_ref(c),
       dtypes=["uint8"], sample_inputs=_from_fp8_samples, family="fp8",
       differentiable=False,
       error_inputs=lambda: [
           _e(lambda: ((mx.array([1, 2]),), {}), ValueError,
              r"\[from_fp8\] Input must have type uint8 but x\.dtype\(\) == int32",
              "int32 input", mlx_msg=True),
           _e(lambda: ((mx.array([1.0]),), {"dtype": mx.float32}), ValueError,
              r"\[from_fp8\] Input must have type uint8 but x\.dtype\(\) == float32",
              "float32 input", mlx_msg=True),
           _e(lambda: ((mx.array([1], mx.uint8),), {"dtype": mx.int32}), ValueError,
              r"\[from_fp8\] Only real floating types are supported but dtype == int32",
              "int32 dtype", mlx_msg=True),
           _e(lambda: ((mx.array([1], mx.uint8),), {"dtype": mx.complex64}), ValueError,
              r"\[from_fp8\] .*dtype == complex64", "complex64 dtype", mlx_msg=True),
           _e(lambda: ((mx.array([1], mx.uint8),), {"dtype": None}), TypeError, None,
              "dtype None")])


# --------------------------------------------------------------------------
# families kept in their own modules (each registers with add_op on import)
# --------------------------------------------------------------------------

import op_table_index     # noqa: E402,F401  take, gather/scatter, slices, diagonals
import op_table_sort      # noqa: E402,F401  sort, selection, scans
import op_table_contract  # noqa: E402,F401  einsum & contractions, windows, diff/roll
import op_table_transforms  # noqa: E402,F401  matmul & products, conv, fft, linalg, random (transform rows)

# --------------------------------------------------------------------------
# lookup helpers
# --------------------------------------------------------------------------

OPS_BY_NAME = {op.name: op for op in OPS}
