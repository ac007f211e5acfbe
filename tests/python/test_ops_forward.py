"""Forward checks of every engine op against NumPy, driven by op_table.

For each op x dtype x layout, every sample input of the op is run with its
array arguments in that memory layout (contiguous, transposed, negative
strides, step-2 slices, stride-0 broadcasts, strided numpy views)
and compared with the NumPy reference at the output dtype's tolerance.  The
inputs are checked to be unchanged afterwards.  Error inputs are checked for
their exception type and (on Ember) a message naming the op.

The second half holds op-specific semantics that do not fit a table row:
integer division by zero, Python sign rules, round-half-even, MLX's dtype
rules for creation ops, precision of long reductions, ...
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import (DATA_DTYPES, EMBER_ONLY_LAYOUTS, INTS, IS_MLX,
                      LAYOUTS, SINTS, UINTS, assert_close, assert_equal,
                      dtype_name, ember_only, mx, mx_dtype, raises, run_python,
                      to_mx, to_numpy, tolerance)
from op_table import OPS, OPS_BY_NAME, Fixed


# --------------------------------------------------------------------------
# the table-driven forward test
# --------------------------------------------------------------------------

# rows that serve the transform suite only (OpInfo.forward is False)
FORWARD_OPS = [op for op in OPS if op.forward]


def _forward_params():
    for op in FORWARD_OPS:
        layouts = LAYOUTS if op.layouts else ["contiguous"]
        for d in op.dtypes:
            for lay in layouts:
                if lay != "contiguous" and d not in DATA_DTYPES:
                    # strided paths: one dtype per (size, kind) is enough
                    continue
                mlx_ok = (lay not in EMBER_ONLY_LAYOUTS
                          and d not in op.mlx_wrong_dtypes
                          and (op.mlx_layouts is None
                               or lay in op.mlx_layouts))
                marks = [] if mlx_ok else [ember_only]
                yield pytest.param(op, d, lay, id=f"{op.name}-{d}-{lay}",
                                   marks=marks)


def _convert(obj, name, layout):
    """numpy sample argument -> (mx argument, numpy values it holds).
    Lists and tuples are converted element by element (shapes and other
    plain values pass through unchanged)."""
    if isinstance(obj, Fixed):
        return to_mx(obj.value, obj.dtype, layout)
    if isinstance(obj, np.ndarray):
        return to_mx(obj, name, layout)
    if isinstance(obj, (list, tuple)):
        pairs = [_convert(o, name, layout) for o in obj]
        kind = type(obj)
        return kind(p[0] for p in pairs), kind(p[1] for p in pairs)
    return obj, obj


def _compute(v, op):
    """Values in the precision the reference computes in."""
    if isinstance(v, (list, tuple)):
        return type(v)(_compute(o, op) for o in v)
    if not isinstance(v, np.ndarray):
        return v
    if v.dtype.kind == "f":
        return v.astype(np.float64)
    if v.dtype.kind == "c":
        return v.astype(np.complex128)
    if op.compute_float and v.dtype.kind in "biu":
        return v.astype(np.float64)
    return v


def _flatten_arrays(obj):
    if isinstance(obj, mx.array):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [a for o in obj for a in _flatten_arrays(o)]
    return []


def _flatten_values(obj):
    """numpy values in the same order as _flatten_arrays of the converted
    arguments (``_convert`` turns each ndarray into exactly one array)."""
    if isinstance(obj, (np.ndarray, Fixed)):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [a for o in obj for a in _flatten_values(o)]
    return []


def _layout_is_noop(sample):
    arrays = [v.value if isinstance(v, Fixed) else v
              for v in _flatten_values(
                  (list(sample.args), list(sample.kwargs.values())))]
    return all(a.ndim == 0 or a.size == 0 for a in arrays)


def _has_empty(sample):
    vals = list(sample.args) + list(sample.kwargs.values())
    return any(isinstance(v, np.ndarray) and v.size == 0 for v in vals)


def _tolerances(op, out):
    rtol, atol = tolerance(out, op.transcendental)
    if IS_MLX and op.mlx_f64_is_f32 and out == "float64":
        # MLX evaluates this op in float32 precision; Ember must not.
        rtol, atol = tolerance("float32", True)
    return rtol, atol


@pytest.mark.parametrize("op,dtype,layout", list(_forward_params()))
def test_forward(op, dtype, layout, rng):
    samples = op.sample_inputs(dtype, rng)
    assert samples, "no samples"
    for sample in samples:
        if layout != "contiguous" and _layout_is_noop(sample):
            continue  # 0-d / empty inputs: same as the contiguous case
        if IS_MLX and op.family == "reduction" and _has_empty(sample):
            # MLX 0.32's CPU reduce can spin for minutes (or hang) on a
            # zero-size input in some layouts; Ember must handle these.
            continue
        margs, vargs = _convert(tuple(sample.args), dtype, layout)
        mkw, vkw = {}, {}
        for k, v in sample.kwargs.items():
            mkw[k], vkw[k] = _convert(v, dtype, layout)
        msg = f"{op.name}[{dtype}, {layout}] {sample.desc}"

        # inputs are passed unevaluated (layout ops still lazy); one eval
        # of the result and the inputs together keeps the suite fast
        result = op.op(*margs, **mkw)
        mx.eval(result, margs, mkw)

        ref_kw = dict(vkw)
        if op.ref_gets_dtype:
            ref_kw["_name"] = dtype
        with np.errstate(all="ignore"):
            expected = op.ref(*_compute(vargs, op),
                              **{k: _compute(v, op)
                                 for k, v in ref_kw.items()})

        out = sample.out_dtype or op.out_dtype(dtype)
        rtol, atol = _tolerances(op, out)
        if op.multi_output is True or (
                op.multi_output == "maybe" and isinstance(expected, list)):
            assert isinstance(result, (list, tuple)), msg
            assert len(result) == len(expected), msg
            for i, (r, e) in enumerate(zip(result, expected)):
                assert_close(r, e, dtype=out, rtol=rtol, atol=atol,
                             msg=f"{msg} output {i}")
        else:
            assert_close(result, expected, dtype=out, rtol=rtol, atol=atol,
                         msg=msg)

        # the op must not have written into its inputs (buffer donation
        # is only allowed for inputs nobody else holds)
        for a, v in zip(_flatten_arrays((margs, list(mkw.values()))),
                        _flatten_values((vargs, list(vkw.values())))):
            got = to_numpy(a)
            if not np.array_equal(got, v, equal_nan=got.dtype.kind in "fc"):
                np.testing.assert_array_equal(
                    got, v, err_msg=f"{msg}: an input was modified")


# --------------------------------------------------------------------------
# error inputs
# --------------------------------------------------------------------------

def _error_params():
    for op in FORWARD_OPS:
        for i, e in enumerate(op.error_inputs()):
            marks = [ember_only] if e.ember_only else []
            yield pytest.param(op, e, id=f"{op.name}-{i}-{e.desc}",
                               marks=marks)


@pytest.mark.parametrize("op,err", list(_error_params()))
def test_error_inputs(op, err):
    args, kwargs = err.build()
    with raises(err.exc, err.match, mlx_msg=err.mlx_msg):
        mx.eval(op.op(*args, **kwargs))


def test_every_op_has_error_or_is_total():
    """Ops with failure modes must list them (guards against a row that
    silently drops its error inputs)."""
    total = {"abs", "positive", "sign", "square", "sqrt", "rsqrt",
             "reciprocal", "exp", "log", "log2", "log10", "log1p", "sin",
             "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
             "tanh", "arcsinh", "arccosh", "arctanh", "degrees", "radians",
             "isnan", "isinf", "isfinite", "isneginf", "isposinf",
             "logical_not", "conj", "real", "imag", "round", "array_equal",
             "nan_to_num", "contiguous", "zeros_like", "ones_like",
             "full_like", "identity", "tri", "astype", "atleast_1d",
             "atleast_2d", "atleast_3d"}
    missing = [op.name for op in FORWARD_OPS
               if op.name not in total and not op.error_inputs()]
    assert not missing, missing


# --------------------------------------------------------------------------
# aliases and table coverage
# --------------------------------------------------------------------------

ALIAS_PAIRS = [(a, op.name) for op in OPS for a in op.aliases]


@pytest.mark.parametrize("alias,name", ALIAS_PAIRS,
                         ids=[f"{a}={n}" for a, n in ALIAS_PAIRS])
def test_alias_matches(alias, name):
    op = OPS_BY_NAME[name]
    x = mx.array([0.25, 0.5, 0.75]) if "float32" in op.dtypes else \
        mx.array([1, 2, 3])
    f, g = getattr(mx, alias), getattr(mx, name)
    args = (x, x) if OPS_BY_NAME[name].family == "binary" else (x,)
    assert_equal(f(*args), to_numpy(g(*args)))


def test_table_covers_engine_ops():
    names = {op.name for op in OPS} | {a for op in OPS for a in op.aliases}
    expected = """abs negative positive sign square sqrt rsqrt reciprocal exp
    expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh
    arcsinh arccosh arctanh erf erfinv sigmoid floor ceil trunc round degrees
    radians isnan isinf isfinite isneginf isposinf logical_not bitwise_invert
    conj conjugate real imag add subtract multiply divide floor_divide
    remainder divmod power pow maximum minimum arctan2 atan2 logaddexp equal
    not_equal less less_equal greater greater_equal logical_and logical_or
    logical_xor bitwise_and bitwise_or bitwise_xor left_shift right_shift
    bitwise_left_shift bitwise_right_shift where clip isclose allclose
    array_equal nan_to_num sum prod max min mean var std logsumexp all any
    argmax argmin softmax reshape flatten unflatten squeeze expand_dims
    transpose swapaxes moveaxis broadcast_to broadcast_arrays concatenate
    concat stack split repeat tile pad atleast_1d atleast_2d atleast_3d
    as_strided contiguous tril triu zeros_like ones_like full_like meshgrid
    zeros ones full arange linspace eye identity tri astype view asin acos
    atan asinh acosh atanh""".split()
    assert not set(expected) - names, sorted(set(expected) - names)


def test_table_covers_array_language_ops():
    """Every function of MLX's ``ops`` area has a table row."""
    names = {op.name for op in OPS} | {a for op in OPS for a in op.aliases}
    expected = """argpartition argsort bartlett blackman count_nonzero cummax
    cummin cumprod cumsum cumulative_prod cumulative_sum diag diagonal diff
    einsum flip hamming hanning inner kron logcumsumexp matrix_transpose
    median minmax outer partition permute_dims put_along_axis roll
    searchsorted slice slice_update sort take take_along_axis tensordot topk
    trace unique unstack vecdot""".split()
    assert not set(expected) - names, sorted(set(expected) - names)


# --------------------------------------------------------------------------
# integer division semantics (Python / NumPy signs, division by zero)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", SINTS + ["float32", "float64"])
def test_floor_divide_remainder_signs(dtype):
    a = np.array([7, -7, 7, -7, 6, -6, 0], dtype=np.float64)
    b = np.array([2, 2, -2, -2, 3, 3, -3], dtype=np.float64)
    ma, _ = to_mx(a, dtype)
    mb, _ = to_mx(b, dtype)
    assert_equal(mx.floor_divide(ma, mb), np.floor_divide(a, b), dtype=dtype)
    assert_equal(mx.remainder(ma, mb), np.remainder(a, b), dtype=dtype)
    assert_equal(ma // mb, np.floor_divide(a, b), dtype=dtype)
    assert_equal(ma % mb, np.remainder(a, b), dtype=dtype)
    q, r = mx.divmod(ma, mb)
    assert_equal(q, np.floor_divide(a, b), dtype=dtype)
    assert_equal(r, np.remainder(a, b), dtype=dtype)


def test_float_remainder_fractional_and_inf():
    a = mx.array([7.5, -7.5, 7.5, -7.5, 1.0])
    b = mx.array([2.0, 2.0, -2.0, -2.0, np.inf])
    assert_close(mx.remainder(a, b), [1.5, 0.5, -0.5, -1.5, 1.0],
                 dtype="float32")
    assert_close(mx.remainder(mx.array([-1.0]), mx.array([np.inf])),
                 [np.inf], dtype="float32")


@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=20),
       st.lists(st.integers(-50, 50).filter(lambda v: v != 0), min_size=1,
                max_size=20))
@settings(max_examples=40, deadline=None)
def test_floor_divide_matches_python(xs, ys):
    n = min(len(xs), len(ys))
    xs, ys = xs[:n], ys[:n]
    q = mx.floor_divide(mx.array(xs), mx.array(ys)).tolist()
    r = mx.remainder(mx.array(xs), mx.array(ys)).tolist()
    assert q == [x // y for x, y in zip(xs, ys)]
    assert r == [x % y for x, y in zip(xs, ys)]


@pytest.mark.parametrize("dtype", INTS)
def test_integer_division_by_zero_is_mlx_defined(dtype):
    """MLX: x // 0 == 0 and x % 0 == x for every integer dtype (no trap)."""
    vals = [0, 1, 5, 100] if dtype in UINTS else [-100, -5, 0, 1, 5, 100]
    a = mx.array(vals, dtype=mx_dtype(dtype))
    z = mx.zeros_like(a)
    assert_equal(mx.floor_divide(a, z), np.zeros(len(vals)), dtype=dtype)
    assert_equal(mx.remainder(a, z), np.array(vals), dtype=dtype)
    assert_equal(a // 0, np.zeros(len(vals)), dtype=dtype)
    assert_equal(a % 0, np.array(vals), dtype=dtype)


@ember_only
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64"])
def test_integer_divmod_by_zero_does_not_trap(dtype):
    """MLX's divmod dies with SIGFPE on an integer zero divisor (floor_divide
    and remainder do not); Ember's divmod agrees with them: (0, x)."""
    p = run_python(f"""
        import ember.core as mx
        a = mx.array([0, 1, 5, 100], dtype=mx.{dtype})
        q, r = mx.divmod(a, mx.zeros_like(a))
        print(q.tolist(), r.tolist())
    """, timeout=120)
    assert p.stdout.split("\n")[0] == "[0, 0, 0, 0] [0, 1, 5, 100]"


def test_float_division_by_zero():
    a = mx.array([1.0, -1.0, 0.0])
    r = to_numpy(a / 0.0)
    assert r[0] == np.inf and r[1] == -np.inf and np.isnan(r[2])
    r = to_numpy(mx.divide(mx.array([7, -7, 0]), mx.array([0, 0, 0])))
    assert r.dtype == np.float32
    assert r[0] == np.inf and r[1] == -np.inf and np.isnan(r[2])
    r = to_numpy(mx.floor_divide(mx.array([7.0, -7.0]), 0.0))
    assert r[0] == np.inf and r[1] == -np.inf
    assert np.isnan(to_numpy(mx.remainder(mx.array([7.0, -7.0]), 0.0))).all()


def test_int8_min_floor_divide_minus_one_wraps():
    a = mx.array([-128], dtype=mx.int8)
    b = mx.array([-1], dtype=mx.int8)
    assert_equal(mx.floor_divide(a, b), [-128], dtype="int8")
    assert_equal(mx.remainder(a, b), [0], dtype="int8")


@ember_only
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_min_floor_divide_minus_one_does_not_trap(dtype):
    """MLX dies with SIGFPE on INT32_MIN // -1; Ember wraps like NumPy."""
    p = run_python(f"""
        import ember.core as mx
        info = mx.iinfo(mx.{dtype})
        a = mx.array([info.min, info.min, 7], dtype=mx.{dtype})
        b = mx.array([-1, 1, -1], dtype=mx.{dtype})
        print(mx.floor_divide(a, b).tolist(), mx.remainder(a, b).tolist())
    """, timeout=120)
    lo = int(np.iinfo(getattr(np, dtype)).min)
    assert p.stdout.split("\n")[0] == f"{[lo, lo, -7]} {[0, 0, 0]}"


# --------------------------------------------------------------------------
# rounding, power, shifts, bool arithmetic
# --------------------------------------------------------------------------

def test_round_half_to_even_and_decimals():
    x = mx.array([0.5, 1.5, 2.5, -0.5, -1.5, 3.5])
    assert_equal(mx.round(x), [0.0, 2.0, 2.0, -0.0, -2.0, 4.0],
                 dtype="float32")
    assert_close(mx.round(mx.array([1.2345, 12.5]), 1), [1.2, 12.5],
                 dtype="float32")
    assert_close(mx.round(mx.array([125.0, 25.0, 35.0, 150.0]), -1),
                 [120.0, 20.0, 40.0, 150.0], dtype="float32")
    assert_equal(mx.round(mx.array([123, 125, 135, -125]), -1),
                 [120, 120, 140, -120], dtype="int32")
    assert_equal(mx.round(mx.array([123, 125]), 2), [123, 125],
                 dtype="int32")
    assert_equal(mx.array([1.25, 2.5]).round(), [1.0, 2.0], dtype="float32")


def test_integer_power_negative_exponent_is_zero():
    """MLX: integer ** negative integer gives 0 (NumPy raises)."""
    r = mx.power(mx.array([2, 3, 5]), mx.array([-1, -2, -1]))
    assert_equal(r, [0, 0, 0], dtype="int32")
    assert_equal(mx.array([2]) ** -1, [0], dtype="int32")


def test_power_zero_to_zero_is_one():
    assert_equal(mx.power(mx.array([0, 0.0][:1]), 0), [1], dtype="int32")
    assert_equal(mx.power(mx.array([0.0]), mx.array([0.0])), [1.0],
                 dtype="float32")


def test_bool_arithmetic_is_logical():
    t, f = mx.array([True, True, False, False]), mx.array([True, False,
                                                           True, False])
    assert_equal(t + f, [True, True, True, False], dtype="bool")
    assert_equal(t * f, [True, False, False, False], dtype="bool")
    assert_equal(t - f, [False, True, True, False], dtype="bool")
    assert_equal(mx.square(t), [True, True, False, False], dtype="bool")
    assert_equal(mx.left_shift(mx.array([True]), mx.array([True])), [2],
                 dtype="uint8")


def test_unsigned_wraparound():
    assert_equal(mx.array([250], mx.uint8) + mx.array([10], mx.uint8), [4],
                 dtype="uint8")
    assert_equal(-mx.array([2], mx.uint8), [254], dtype="uint8")
    assert_equal(1 - mx.array([2], mx.uint8), [255], dtype="uint8")
    assert_equal(mx.array([100], mx.int8) * mx.array([3], mx.int8), [44],
                 dtype="int8")


def test_sign_of_nan_is_zero_like_mlx():
    r = to_numpy(mx.sign(mx.array([-3.0, 0.0, -0.0, np.nan, 2.0])))
    np.testing.assert_array_equal(r, [-1.0, 0.0, 0.0, 0.0, 1.0])


def test_denormal_results_flush_or_are_tiny():
    """exp(-100) is a float32 denormal; MLX flushes it to zero.  Either
    answer is accepted, anything else is wrong."""
    r = float(to_numpy(mx.exp(mx.array(-100.0))))
    assert r == 0.0 or abs(r - 3.720076e-44) < 1e-45


def test_maximum_minimum_propagate_nan():
    a = mx.array([np.nan, 1.0, 2.0])
    b = mx.array([1.0, np.nan, 1.0])
    r = to_numpy(mx.maximum(a, b))
    assert np.isnan(r[0]) and np.isnan(r[1]) and r[2] == 2.0
    r = to_numpy(mx.minimum(a, b))
    assert np.isnan(r[0]) and np.isnan(r[1]) and r[2] == 1.0
    assert np.isnan(to_numpy(mx.max(a))) and np.isnan(to_numpy(mx.min(a)))


def test_complex_comparisons_are_lexicographic():
    a = mx.array([1 + 2j, 1 + 1j, 0 + 5j])
    b = mx.array([1 + 1j, 1 + 2j, 1 + 0j])
    assert_equal(mx.less(a, b), [False, True, True], dtype="bool")
    assert_equal(mx.maximum(a, b), [1 + 2j, 1 + 2j, 1 + 0j],
                 dtype="complex64")
    assert_equal(mx.argmax(mx.array([1 + 1j, 1 + 3j, 0 + 5j])), 1,
                 dtype="uint32")


def test_weak_scalar_overflow_raises():
    with raises(ValueError, "int8|overflow", mlx_msg=True):
        mx.array([1], mx.int8) + 300
    with raises(ValueError, "uint8|overflow", mlx_msg=True):
        mx.array([1], mx.uint8) + (-1)
    with raises(ValueError, "int32|overflow", mlx_msg=True):
        mx.array([1], mx.int32) + 2 ** 40


@pytest.mark.parametrize("value", [2 ** 63, 2 ** 64, -2 ** 63 - 1])
@ember_only
def test_out_of_range_python_int_raises_cleanly(value):
    """MLX raises RuntimeError('std::bad_cast'); Ember a clear error."""
    with pytest.raises((OverflowError, ValueError)):
        mx.array([1], mx.int64) + value
    with pytest.raises((OverflowError, ValueError)):
        mx.array(value)


# --------------------------------------------------------------------------
# reductions: precision and special cases
# --------------------------------------------------------------------------

@ember_only
def test_float32_sum_of_2_25_ones_is_exact():
    """MLX accumulates sequentially and returns 2**24; Ember sums pairwise
    / in blocks so the answer is exact."""
    n = 2 ** 25
    assert mx.sum(mx.ones(n)).item() == float(n)
    assert mx.sum(mx.ones((2 ** 12, 2 ** 13))).item() == float(n)
    assert mx.mean(mx.ones(n)).item() == 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 64, 100, 5000])
def test_max_min_runs_propagate_nan_anywhere(dtype, n):
    """Long runs take a vectorized path with a separate NaN mask: a NaN in
    any lane, block or tail position must reach the result, and -inf/+inf
    runs must not be confused with the initial values."""
    rng = np.random.default_rng(n)
    base = rng.standard_normal((3, n)).astype(dtype)
    for pos in sorted({0, n // 2, n - 1}):
        x = base.copy()
        x[1, pos] = np.nan
        for fn, ref in [(mx.max, np.max), (mx.min, np.min)]:
            got = to_numpy(fn(mx.array(x, dtype=getattr(mx, dtype)), axis=1))
            np.testing.assert_array_equal(got, ref(x, axis=1))
            assert np.isnan(fn(mx.array(x, dtype=getattr(mx, dtype))).item())
            np.testing.assert_array_equal(to_numpy(mx.softmax(mx.array(x, dtype=getattr(mx, dtype)), axis=1))[1], np.full(n, np.nan, dtype))
    for v in [-np.inf, np.inf]:
        x = np.full(n, v, dtype)
        assert mx.max(mx.array(x, dtype=getattr(mx, dtype))).item() == v and mx.min(mx.array(x, dtype=getattr(mx, dtype))).item() == v


def test_empty_reductions():
    e = mx.zeros((0, 3))
    assert_equal(mx.sum(e), 0.0, dtype="float32")
    assert_equal(mx.sum(e, axis=0), [0.0] * 3, dtype="float32")
    assert_equal(mx.prod(e, axis=0), [1.0] * 3, dtype="float32")
    assert_equal(mx.all(e), True, dtype="bool")
    assert_equal(mx.any(e), False, dtype="bool")
    assert np.isnan(to_numpy(mx.mean(e)))
    assert np.isnan(to_numpy(mx.var(e, axis=0))).all()
    assert mx.sum(e, axis=1).shape == (0,)


def test_integer_sum_overflow_wraps_in_accumulator_dtype():
    assert_equal(mx.sum(mx.array([2 ** 31 - 1, 1], mx.int32)), -2 ** 31,
                 dtype="int32")
    assert_equal(mx.prod(mx.array([100, 100], mx.int8)), 10000,
                 dtype="int32")
    assert_equal(mx.sum(mx.array([200, 200], mx.uint8)), 400,
                 dtype="uint32")


def test_var_ddof_at_least_n_is_inf():
    x = mx.array([1.0, 2.0, 3.0])
    assert to_numpy(mx.var(x, ddof=3)) == np.inf
    assert to_numpy(mx.var(x, ddof=5)) == np.inf
    assert to_numpy(mx.std(x, ddof=4)) == np.inf
    assert_close(mx.var(x, ddof=1), 1.0, dtype="float32")


def test_logsumexp_stability():
    x = mx.array([1000.0, 1000.0])
    assert_close(mx.logsumexp(x), 1000.0 + np.log(2.0), dtype="float32")
    assert to_numpy(mx.logsumexp(mx.array([-np.inf, -np.inf]))) == -np.inf
    assert to_numpy(mx.logsumexp(mx.array([np.inf, 1.0]))) == np.inf


def test_softmax_precise_float16():
    x = mx.array([1.0, 2.0], mx.float16)
    r = mx.softmax(x, precise=True)
    assert dtype_name(r.dtype) == "float16"
    assert_close(r, [0.26894142, 0.73105858], dtype="float16")


# --------------------------------------------------------------------------
# creation: MLX's dtype rules
# --------------------------------------------------------------------------

def test_creation_default_dtypes():
    assert dtype_name(mx.zeros((2,)).dtype) == "float32"
    assert dtype_name(mx.ones(3).dtype) == "float32"
    assert dtype_name(mx.eye(2).dtype) == "float32"
    assert dtype_name(mx.identity(2).dtype) == "float32"
    assert dtype_name(mx.tri(2).dtype) == "float32"
    assert dtype_name(mx.linspace(0, 1, 3).dtype) == "float32"
    assert dtype_name(mx.arange(3).dtype) == "int32"
    assert dtype_name(mx.arange(3.0).dtype) == "float32"
    assert dtype_name(mx.arange(0, 5, 1.0).dtype) == "float32"
    assert dtype_name(mx.arange(2 ** 31, 2 ** 31 + 2).dtype) == "int64"
    assert dtype_name(mx.full((2,), 3).dtype) == "int32"
    assert dtype_name(mx.full((2,), 3.5).dtype) == "float32"
    assert dtype_name(mx.full((2,), True).dtype) == "bool"
    assert dtype_name(mx.full((2,), 1j).dtype) == "complex64"
    assert dtype_name(mx.zeros_like(mx.array([1, 2])).dtype) == "int32"
    assert dtype_name(mx.full_like(mx.array([1, 2]), 2.7).dtype) == "int32"
    assert dtype_name(mx.empty((2,)).dtype) == "float32"
    assert mx.empty_like(mx.array([1, 2], mx.int8)).shape == (2,)
    assert dtype_name(mx.empty_like(mx.array([1], mx.int8)).dtype) == "int8"


def test_full_with_dtype():
    assert_equal(mx.full((2,), 3, dtype=mx.float16), [3, 3],
                 dtype="float16")
    assert_equal(mx.full((2,), True, dtype=mx.float32), [1, 1],
                 dtype="float32")
    assert_equal(mx.full((2,), 2.5, mx.bfloat16), [2.5, 2.5],
                 dtype="bfloat16")


@ember_only
def test_full_dtype_is_the_output_dtype():
    """MLX's docs say ``dtype`` is the output dtype, but MLX 0.32 only uses
    it as a hint for converting a Python scalar: full((2,), 3.5,
    dtype=int32) is float32 [3.5, 3.5] and full((2,), 3, dtype=bool) is
    int32.  Ember follows the documentation."""
    assert_equal(mx.full((2,), 3.5, dtype=mx.int32), [3, 3], dtype="int32")
    assert_equal(mx.full((2,), 3, mx.bool_), [True, True], dtype="bool")
    assert_equal(mx.full((2,), mx.array(2.5), dtype=mx.int8), [2, 2],
                 dtype="int8")


def test_arange_semantics():
    assert_equal(mx.arange(0, 1, 0.25), [0, 0.25, 0.5, 0.75],
                 dtype="float32")
    assert mx.arange(0, 1, 0.1).shape == (10,)
    assert_close(mx.arange(1, 0, -0.3), [1.0, 0.7, 0.4, 0.1],
                 dtype="float32")
    assert_equal(mx.arange(stop=4), [0, 1, 2, 3], dtype="int32")
    assert_equal(mx.arange(0, 10, step=3), [0, 3, 6, 9], dtype="int32")
    assert_equal(mx.arange(10, step=3), [0, 3, 6, 9], dtype="int32")
    assert_equal(mx.arange(start=1, stop=4), [1, 2, 3], dtype="int32")
    # float arguments with an integer dtype: the length comes from the
    # float range, values from start + i*trunc-step like NumPy
    assert_equal(mx.arange(0.5, 3.7, dtype=mx.int32), [0, 1, 2, 3],
                 dtype="int32")
    assert_equal(mx.arange(0, 1, 0.3, dtype=mx.int32), [0, 0, 0, 0],
                 dtype="int32")
    # values are computed in the wide type, then wrap into the dtype
    assert_equal(mx.arange(250, 260, dtype=mx.uint8),
                 [250, 251, 252, 253, 254, 255, 0, 1, 2, 3], dtype="uint8")
    assert_close(mx.arange(0, 1, 0.1, dtype=mx.float64),
                 [i * 0.1 for i in range(10)], dtype="float64")


def test_linspace_integer_truncates():
    assert_equal(mx.linspace(0, 10, 5, dtype=mx.int32), [0, 2, 5, 7, 10],
                 dtype="int32")
    assert mx.linspace(0, 1).shape == (50,)


def test_meshgrid_returns_tuple_and_split_returns_list():
    g = mx.meshgrid(mx.arange(3), mx.arange(4))
    assert isinstance(g, tuple) and len(g) == 2
    assert isinstance(mx.split(mx.arange(4), 2), list)
    assert isinstance(mx.broadcast_arrays(mx.array(1), mx.zeros((2,))), list)
    assert isinstance(mx.atleast_1d(mx.array(1), mx.array(2)), list)
    assert isinstance(mx.divmod(mx.array([3]), mx.array([2])), list)


def test_broadcast_shapes():
    assert mx.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert mx.broadcast_shapes((2, 1), (0,)) == (2, 0)
    assert mx.broadcast_shapes((5,)) == (5,)
    with raises(ValueError, "broadcast", mlx_msg=True):
        mx.broadcast_shapes((2,), (3,))
    with raises(ValueError, "broadcast_shapes", mlx_msg=True):
        mx.broadcast_shapes()


@given(st.lists(st.integers(1, 4), min_size=0, max_size=4),
       st.lists(st.booleans(), min_size=4, max_size=4),
       st.integers(0, 3))
@settings(max_examples=60, deadline=None)
def test_broadcast_shapes_matches_numpy(shape, ones, drop):
    other = [1 if o else s for s, o in zip(shape, ones)][drop:]
    expect = np.broadcast_shapes(tuple(shape), tuple(other))
    assert mx.broadcast_shapes(tuple(shape), tuple(other)) == expect
    a = mx.zeros(tuple(shape))
    b = mx.ones(tuple(other))
    assert (a + b).shape == expect


# --------------------------------------------------------------------------
# casting details
# --------------------------------------------------------------------------

def test_astype_truncates_and_wraps():
    x = mx.array([1.7, -1.7, 2.5, -2.5])
    assert_equal(x.astype(mx.int32), [1, -1, 2, -2], dtype="int32")
    assert_equal(mx.array([-1, 256, 257]).astype(mx.uint8), [255, 0, 1],
                 dtype="uint8")
    assert_equal(mx.array([0.0, -0.0, 0.1, np.nan]).astype(mx.bool_),
                 [False, False, True, True], dtype="bool")
    assert_equal(mx.array([1 + 2j, 0 + 1j, 0j]).astype(mx.float32),
                 [1.0, 0.0, 0.0], dtype="float32")
    assert_equal(mx.array([0 + 1j, 0j]).astype(mx.bool_), [True, False],
                 dtype="bool")
    assert_equal(mx.array([70000]).astype(mx.float16), [np.inf],
                 dtype="float16")
    # round to nearest even when narrowing
    assert_equal(mx.array([1.00390625, 1.01171875]).astype(mx.bfloat16),
                 [1.0, 1.015625], dtype="bfloat16")
    assert_equal(mx.array([1.00048828125, 1.00146484375]).astype(
        mx.float16), [1.0, 1.001953125], dtype="float16")


def test_view_reinterprets_bits():
    assert_equal(mx.view(mx.array([1.0]), mx.int32), [1065353216],
                 dtype="int32")
    assert mx.view(mx.array([1.0, 2.0]), mx.uint8).shape == (8,)
    assert_equal(mx.view(mx.array([1, 0, 0, 0] * 2, mx.uint8), mx.int32),
                 [1, 1], dtype="int32")
    assert_equal(mx.view(1.0, mx.int32), 1065353216, dtype="int32")
    assert_equal(mx.array([1.0]).view(mx.int32), [1065353216],
                 dtype="int32")
    t = mx.arange(6, dtype=mx.int32).reshape(2, 3).T
    assert_equal(mx.view(t, mx.int16),
                 [[0, 0, 3, 0], [1, 0, 4, 0], [2, 0, 5, 0]], dtype="int16")
    assert mx.view(mx.ones((2, 4), mx.int16), mx.float32).shape == (2, 2)
