"""Values where Ember follows MLX 0.32.4 and NumPy (issue 14): float32
sin/cos/tan over the whole float range (every ISA level, half types and the
complex functions built on them), NaN propagation of complex max/min and
their kin, complex isposinf/isneginf and logaddexp, complex addmm.

NumPy is the reference for values. Deliberate differences carry
``ember_only`` (MLX's complex NaN handling is partial, it has no complex
logaddexp derivative); run ``EMBER_TEST_BACKEND=mlx ... -m "not
ember_only"`` to check the rest against MLX."""

import numpy as np
import pytest

import gradcheck
from conftest import ISA_LEVELS, IS_MLX, assert_close, ember_only, mx, round_to, to_numpy
from gradcheck import check_complex

INF = float("inf")
NAN = float("nan")


def cases(params, mlx_differs=()):
    """pytest params (a value or a tuple of values each), ``ember_only``
    where MLX 0.32.4 gives another answer (the ids in ``mlx_differs``)."""
    out = []
    for p in params:
        vals = p if isinstance(p, tuple) else (p,)
        pid = "-".join(map(str, vals))
        out.append(pytest.param(*vals, id=pid, marks=[ember_only] if pid in mlx_differs else []))
    return out


# --------------------------------------------------------------------------
# float32 sin/cos/tan at every magnitude
# --------------------------------------------------------------------------

@pytest.fixture(params=ISA_LEVELS or ["mlx"])
def isa(request):
    """Each ISA level of this CPU in turn on Ember (restored afterwards);
    MLX's one path under MLX."""
    if IS_MLX:
        yield request.param
        return
    before = mx.__config__()["isa"]
    mx._set_cpu_isa(request.param)
    yield request.param
    mx._set_cpu_isa(before)


def _magnitudes():
    """A logarithmic sweep from the smallest denormal to FLT_MAX, random
    mantissas in every binade, the neighbours of the vector path's bound
    (6.5e6) and of 2^k, both signs."""
    rng = np.random.default_rng(20240614)
    sweep = np.logspace(-45, np.log10(3.4028235e38), 6000)
    binades = [np.ldexp(1 + rng.random(12), e) for e in range(-149, 128)]
    edge = np.float32(6.5e6)
    near = [np.nextafter(edge, np.float32(0)), edge, np.nextafter(edge, np.float32(INF)),
            np.float32(2 ** 22 * np.pi / 2), np.float32(3e9), np.float32(3.4028235e38)]
    mags = np.concatenate([sweep, *binades, near]).astype(np.float32)
    mags = mags[np.isfinite(mags) & (mags > 0)]
    return np.concatenate([mags, -mags])


MAGS = _magnitudes()
TRIG = {"sin": np.sin, "cos": np.cos, "tan": np.tan}
# the vector path's bounds (tests/cpp/test_simd_math.cpp); beyond 6.5e6 Ember
# rounds the exact result once (1 ulp, test_trig_far_lanes_within_one_ulp)
TRIG_ULP = {"sin": 2, "cos": 2, "tan": 3}


def _ulp_distance(got, want):
    """|got - want| in float32 ulps (the count of floats between them)."""
    def key(v):
        i = np.asarray(v, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(key(got) - key(want))


def _trig_ref(name, x):
    """NumPy's float64 function of the float32 inputs, rounded to float32."""
    with np.errstate(invalid="ignore", over="ignore"):
        return TRIG[name](np.asarray(x, np.float64)).astype(np.float32)


@pytest.mark.parametrize("name", sorted(TRIG))
def test_trig_over_the_whole_float_range(isa, name):
    got = to_numpy(getattr(mx, name)(mx.array(MAGS)))
    want = _trig_ref(name, MAGS)
    d = _ulp_distance(got, want)
    worst = int(np.argmax(d))
    assert d[worst] <= TRIG_ULP[name], (
        f"{name}({MAGS[worst]!r}) = {got[worst]!r}, NumPy {want[worst]!r} ({d[worst]} ulp)")
    # NumPy's own float32 function agrees too
    d32 = _ulp_distance(got, TRIG[name](MAGS))
    assert d32.max() <= TRIG_ULP[name] + 1


@pytest.mark.parametrize("name", cases(sorted(TRIG), mlx_differs={"sin", "cos"}))
def test_trig_far_lanes_within_one_ulp(isa, name):
    """Lanes beyond the vector path's bound get the exact reduction, rounded
    once (within 1 ulp of NumPy's float64 result rounded; MLX's sin and cos
    are 2 ulp off at times)."""
    far = MAGS[np.abs(MAGS) > 6.5e6]
    got = to_numpy(getattr(mx, name)(mx.array(far)))
    assert _ulp_distance(got, _trig_ref(name, far)).max() <= 1


def test_sin_of_3e9():
    x = mx.array([3e9, -3e9], mx.float32)
    np.testing.assert_allclose(to_numpy(mx.sin(x)), [0.98700488, -0.98700488], rtol=1e-6)
    np.testing.assert_allclose(to_numpy(mx.cos(x)), [-0.16069025, -0.16069025], rtol=1e-6)


@pytest.mark.parametrize("name", sorted(TRIG))
def test_trig_special_values(isa, name):
    x = np.array([INF, -INF, NAN, 0.0, -0.0, 3.4028235e38, -3.4028235e38], np.float32)
    got = to_numpy(getattr(mx, name)(mx.array(x)))
    assert np.isnan(got[:3]).all()
    assert np.isfinite(got[3:]).all()
    assert got[3:5].tolist() == ([1.0, 1.0] if name == "cos" else [0.0, 0.0])


@pytest.mark.parametrize("name", cases(["sin", "tan"], mlx_differs={"sin"}))
def test_trig_keeps_the_sign_of_zero(isa, name):
    """sin(-0.0) = tan(-0.0) = -0.0, as NumPy (MLX's sin gives +0.0)."""
    got = to_numpy(getattr(mx, name)(mx.array(np.array([0.0, -0.0], np.float32))))
    assert np.signbit(got).tolist() == [False, True]


@pytest.mark.parametrize("name", sorted(TRIG))
def test_trig_far_lanes_in_every_layout(isa, name):
    """Far and near lanes mixed in one row (a length not a multiple of the
    kernel's pieces), in a transposed and a negatively strided view, and in
    place over a donated intermediate."""
    rng = np.random.default_rng(7)
    n = 3001
    x = rng.uniform(-10, 10, n).astype(np.float32)
    far_at = rng.choice(n, 40, replace=False)
    x[far_at] = (rng.uniform(1, 3.4, 40) * 10.0 ** rng.integers(7, 38, 40)).astype(np.float32)
    x[far_at[::2]] *= -1
    x[[0, n - 1]] = [INF, 1e30]
    f = getattr(mx, name)
    want = _trig_ref(name, x)
    ok = TRIG_ULP[name]
    # a contiguous row
    assert _ulp_distance(to_numpy(f(mx.array(x))), want).max() <= ok
    # in place: the intermediate is held by the node alone (donated)
    xa = mx.array(x)
    assert _ulp_distance(to_numpy(f(mx.multiply(xa, 1.0))), want).max() <= ok
    # a transposed 2-D view and a negative stride
    m = x[:3000].reshape(60, 50)
    got = to_numpy(f(mx.array(m).T))
    assert _ulp_distance(got, _trig_ref(name, m.T)).max() <= ok
    got = to_numpy(f(mx.array(x)[::-3]))
    assert _ulp_distance(got, want[::-3]).max() <= ok


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(TRIG))
def test_trig_half_types_at_large_arguments(isa, name, dtype):
    """Half types are computed in float32: bfloat16 reaches 3.4e38, float16
    its largest value 65504."""
    top = 38 if dtype == "bfloat16" else 4.8
    x = round_to(np.concatenate([np.logspace(-3, top, 800), -np.logspace(-3, top, 800)]), dtype)
    x = x[np.isfinite(x)]
    got = to_numpy(getattr(mx, name)(mx.array(x).astype(getattr(mx, dtype)))).astype(np.float32)
    want = round_to(TRIG[name](x.astype(np.float64)), dtype).astype(np.float32)
    # one step of the half type (the float32 result rounded once more)
    step = np.abs(want).astype(np.float32) * (2.0 ** -7 if dtype == "bfloat16" else 2.0 ** -10)
    assert np.all(np.abs(got - want) <= step + 1e-7), (
        f"worst at {x[np.argmax(np.abs(got - want) - step)]}")


COMPLEX_TRIG = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "exp": np.exp,
}


@pytest.mark.parametrize("name", sorted(COMPLEX_TRIG))
def test_complex_functions_at_large_arguments(isa, name):
    """The complex functions at a huge real (sin, cos, tan) or imaginary
    (sinh, cosh, tanh, exp) part, the other part moderate."""
    big = np.array([3e9, -1e20, 3.4e38, 1e7, 123456789.0, -6.6e6, 0.5], np.float32)
    small = np.array([0.5, -1.25, 0.0, 2.0, -0.75, 1.0, 0.25], np.float32)
    z = big + 1j * small if name in ("sin", "cos", "tan") else small + 1j * big
    z = z.astype(np.complex64)
    got = to_numpy(getattr(mx, name)(mx.array(z)))
    want = COMPLEX_TRIG[name](z.astype(np.complex128))
    scale = np.abs(want)
    for part in (np.real, np.imag):
        err = np.abs(part(got) - part(want))
        assert np.all(err <= 1e-5 * scale + 1e-30), f"{name}({z}) = {got}, NumPy {want}"


# --------------------------------------------------------------------------
# NaN propagation of complex max/min and their kin (NumPy's rules: a
# complex value is NaN when either part is; the first NaN wins)
# --------------------------------------------------------------------------

def _c(*vals):
    return np.array(vals, np.complex64)


NAN_CASES = {
    "real_nan": _c(1, complex(NAN, 0), 2),
    "imag_nan": _c(1, complex(0, NAN), 2),
    "both_parts": _c(3, complex(NAN, NAN), -1),
    "nan_first": _c(complex(NAN, 1), 5, 6),
    "nan_last": _c(4, -2j, complex(NAN, 0)),
    "two_nans": _c(1, complex(0, NAN), complex(NAN, 0), 2),
    "no_nan": _c(1 + 2j, 1 - 3j, -4j, 1 + 2j),
}
# MLX 0.32.4 propagates a NaN real part but not always a NaN imaginary part
# (ids of the cases where it answers otherwise, per test)


def _assert_same_complex(got, want, msg=""):
    """Equal values; a NaN result where NumPy's is NaN (either part)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, msg
    gn, wn = np.isnan(got), np.isnan(want)
    assert np.array_equal(gn, wn), f"{msg}: NaN at {np.argwhere(gn).ravel()}, NumPy {np.argwhere(wn).ravel()}"
    np.testing.assert_array_equal(got[~gn], want[~wn], err_msg=msg)


@pytest.mark.parametrize("op,case", cases([(op, c) for op in ("max", "min") for c in NAN_CASES],
                                          mlx_differs={"max-imag_nan"}))
def test_complex_max_min_propagate_nan(op, case):
    z = NAN_CASES[case]
    got = to_numpy(getattr(mx, op)(mx.array(z)))
    _assert_same_complex(got, getattr(np, op)(z), f"{op}({z})")


@pytest.mark.parametrize("op,case", cases(
    [(op, c) for op in ("max", "min") for c in NAN_CASES if np.isnan(NAN_CASES[c]).sum() == 1],
    mlx_differs={f"{op}-{c}" for op in ("max", "min") for c in ("imag_nan", "both_parts", "nan_first")}))
def test_complex_max_min_return_the_nan_element(op, case):
    """The NaN element itself, both parts, as NumPy (MLX gives nan+0j at
    times)."""
    z = NAN_CASES[case]
    got = to_numpy(getattr(mx, op)(mx.array(z)))
    nan = z[np.isnan(z)][0]
    assert np.array_equal(np.isnan([got.real, got.imag]), np.isnan([nan.real, nan.imag]))
    assert np.array_equal(np.nan_to_num([got.real, got.imag]), np.nan_to_num([nan.real, nan.imag]))


@pytest.mark.parametrize("op,case", cases([(op, c) for op in ("argmax", "argmin") for c in NAN_CASES],
                                          mlx_differs={"argmax-imag_nan", "argmax-two_nans"}))
def test_complex_argmax_argmin_find_the_first_nan(op, case):
    z = NAN_CASES[case]
    assert to_numpy(getattr(mx, op)(mx.array(z))).item() == getattr(np, op)(z)


def _with_nans(shape, where, seed=0, kind="real"):
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    for idx in where:
        z[idx] = complex(NAN, 0.5) if kind == "real" else complex(0.5, NAN)
    return z


@pytest.mark.parametrize("op,kind", cases([(op, k) for op in ("max", "min", "argmax", "argmin") for k in ("real", "imag")],
                                          mlx_differs={f"{op}-imag" for op in ("max", "min", "argmax", "argmin")}))
def test_complex_reductions_with_nan_on_every_path(op, kind):
    """Long rows (the pieces and trees of the reduction), columns (strided
    and vertical paths), a transposed view and rows without a NaN."""
    z = _with_nans((7, 5000), [(1, 4321), (3, 17), (3, 4000), (5, 0)], kind=kind)
    ref = getattr(np, op)
    for axis in (None, 1, 0):
        got = to_numpy(getattr(mx, op)(mx.array(z), axis=axis))
        want = ref(z, axis=axis)
        if op.startswith("arg"):
            np.testing.assert_array_equal(got, want, err_msg=f"{op} axis={axis}")
        else:
            _assert_same_complex(got, want, f"{op} axis={axis}")
    zt = np.ascontiguousarray(z.T)
    got = to_numpy(getattr(mx, op)(mx.array(zt).T, axis=1))
    want = ref(z, axis=1)
    if op.startswith("arg"):
        np.testing.assert_array_equal(got, want)
    else:
        _assert_same_complex(got, want, f"{op} of a transposed view")


_CUM_MLX_AGREES = {"cummax-nan_first-True", "cummax-nan_last-False", "cummin-imag_nan-False",
                   "cummin-imag_nan-True", "cummin-nan_first-False", "cummin-nan_last-True",
                   "cummin-two_nans-False"}
_CUM = [(op, c, r) for op in ("cummax", "cummin") for c in NAN_CASES for r in (False, True)]


@pytest.mark.parametrize("op,case,reverse", cases(
    _CUM, mlx_differs={"-".join(map(str, p)) for p in _CUM if p[1] != "no_nan"} - _CUM_MLX_AGREES))
def test_complex_cummax_cummin_propagate_nan(op, case, reverse):
    """NumPy's maximum/minimum.accumulate: NaN from the first NaN on (MLX
    0.32.4 lets a NaN go again: its cummax([1, nan, 2]) ends in 2)."""
    z = NAN_CASES[case]
    ufunc = np.maximum if op == "cummax" else np.minimum
    want = ufunc.accumulate(z[::-1])[::-1] if reverse else ufunc.accumulate(z)
    got = to_numpy(getattr(mx, op)(mx.array(z), reverse=reverse))
    _assert_same_complex(got, want, f"{op}({z}, reverse={reverse})")


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_complex_maximum_minimum_propagate_nan(op):
    a = _c(1, complex(NAN, 0), 3, complex(NAN, 1), 2 + 1j)
    b = _c(complex(NAN, 2), 2, 1, complex(NAN, 3), 2 - 1j)
    got = to_numpy(getattr(mx, op)(mx.array(a), mx.array(b)))
    want = getattr(np, op)(a, b)
    _assert_same_complex(got, want, op)
    # the first operand's NaN wins where both are NaN, as in NumPy
    assert got[3].imag == 1 and got[0].imag == 2


@pytest.mark.parametrize("op", cases(["maximum", "minimum"], mlx_differs={"minimum"}))
def test_complex_maximum_minimum_nan_imaginary_part(op):
    a = _c(1, complex(0, NAN), 3, complex(1, NAN))
    b = _c(complex(2, NAN), 2, 1, complex(NAN, 3))
    got = to_numpy(getattr(mx, op)(mx.array(a), mx.array(b)))
    _assert_same_complex(got, getattr(np, op)(a, b), op)
    assert np.isnan(got[3].imag) and got[3].real == 1  # a's NaN, a is first


# --------------------------------------------------------------------------
# complex isposinf / isneginf
# --------------------------------------------------------------------------

SPECIAL_Z = _c(complex(INF, 0), complex(INF, 1), complex(-INF, 0), complex(0, INF),
               complex(INF, NAN), complex(INF, -0.0), complex(NAN, 0), complex(-INF, -0.0),
               complex(-INF, 2), 1, complex(INF, INF), complex(-INF, -INF), complex(0, -INF))


@pytest.mark.parametrize("op,sign", [("isposinf", 1), ("isneginf", -1)])
def test_complex_isposinf_isneginf(op, sign):
    """True exactly where z == sign * inf + 0j (so inf + 1j is not +inf)."""
    got = to_numpy(getattr(mx, op)(mx.array(SPECIAL_Z)))
    want = (SPECIAL_Z.real == sign * INF) & (SPECIAL_Z.imag == 0)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, want)
    assert want.sum() == 2  # +-0 imaginary parts both count


@pytest.mark.parametrize("op", ["isposinf", "isneginf"])
def test_complex_isposinf_derivatives_are_zero(op):
    z = mx.array(SPECIAL_Z)
    _, (ct,) = mx.vjp(getattr(mx, op), [z], [mx.ones(z.shape, dtype=mx.bool_)])
    assert ct.dtype == mx.complex64 and ct.shape == z.shape
    assert not np.any(to_numpy(ct))
    _, (t,) = mx.jvp(getattr(mx, op), [z], [mx.array(np.full(SPECIAL_Z.shape, 1 + 1j, np.complex64))])
    assert t.shape == z.shape and not np.any(to_numpy(t))


# --------------------------------------------------------------------------
# complex logaddexp
# --------------------------------------------------------------------------

def np_logaddexp(a, b):
    """MLX's complex logaddexp in complex128: m + log1p(exp(n - m)) with m the
    larger operand (real part first, then imaginary) and n the other, the
    imaginary part not wrapped; m where n == -inf or m == +inf; NaN where
    either input is NaN."""
    a, b = np.broadcast_arrays(np.asarray(a, np.complex128), np.asarray(b, np.complex128))
    a_big = (a.real > b.real) | ((a.real == b.real) & (a.imag > b.imag))
    m, n = np.where(a_big, a, b), np.where(a_big, b, a)
    with np.errstate(all="ignore"):
        w = np.exp(n - m)
        # log1p(w) without losing a tiny w
        out = m + 0.5 * np.log1p(2 * w.real + np.abs(w) ** 2) + 1j * np.arctan2(w.imag, 1 + w.real)
    out = np.where((n == -INF) | (m == INF), m, out)
    return np.where(np.isnan(a) | np.isnan(b), complex(NAN, NAN), out)


def test_complex_logaddexp_mlx_values():
    got = to_numpy(mx.logaddexp(mx.array([1 + 2j, 3 - 1j]), mx.array([0.5 + 1j, -2 + 0.3j])))
    np.testing.assert_allclose(got, [1.35236 + 1.63301j, 3.00182 - 0.993519j], rtol=1e-5)


LAE_A = [1 + 2j, 3 - 1j, complex(-INF, 0), complex(-INF, 0), complex(INF, 0), complex(-INF, 1),
         complex(INF, 1), 2, 1 + 1j, 100 + 3j, -100 + 2j, 0, complex(1, 1e4), complex(-INF, 0),
         complex(INF, 0), -50 + 1j, 0.25 - 3j, 1 + 1j]
LAE_B = [0.5 + 1j, -2 + 0.3j, 1 + 1j, complex(-INF, 0), 1 + 1j, 1 + 1j, 1 + 1j, 2, 1 - 1j,
         1 + 1j, -100.5 + 2.5j, 0, complex(1.5, -3e4), complex(INF, 0), complex(INF, 0),
         0.5 - 2j, 0.25 + 3j, complex(NAN, 0)]


def test_complex_logaddexp_against_numpy():
    a, b = np.array(LAE_A, np.complex64), np.array(LAE_B, np.complex64)
    want = np_logaddexp(a, b)
    for x, y in ((a, b), (b, a)):  # symmetric
        got = to_numpy(mx.logaddexp(mx.array(x), mx.array(y)))
        assert got.dtype == np.complex64
        assert np.array_equal(np.isnan(got), np.isnan(want))
        fin = ~np.isnan(want)
        np.testing.assert_allclose(got[fin], want[fin], rtol=2e-6, atol=1e-6)


def test_complex_logaddexp_is_the_log_of_the_summed_exponentials():
    rng = np.random.default_rng(3)
    a = (rng.uniform(-5, 5, 200) + 1j * rng.uniform(-3, 3, 200)).astype(np.complex64)
    b = (rng.uniform(-5, 5, 200) + 1j * rng.uniform(-3, 3, 200)).astype(np.complex64)
    got = to_numpy(mx.logaddexp(mx.array(a), mx.array(b))).astype(np.complex128)
    s = np.exp(a.astype(np.complex128)) + np.exp(b.astype(np.complex128))
    np.testing.assert_allclose(np.exp(got), s, rtol=1e-5)
    np.testing.assert_allclose(got, np_logaddexp(a, b), rtol=1e-6, atol=1e-6)
    # far apart: the smaller term survives as log1p of a tiny number
    got = to_numpy(mx.logaddexp(mx.array(_c(0)), mx.array(_c(-40 + 1j))))
    np.testing.assert_allclose(got, np_logaddexp(0, -40 + 1j), rtol=1e-6)
    assert got[0].real > 0 and got[0].imag > 0


def test_complex_logaddexp_dtypes_and_broadcasting():
    """Real and integer operands promote to complex64; shapes broadcast."""
    out = mx.logaddexp(mx.array([1.0, 2.0]), mx.array([1j, 2 + 0j]))
    assert out.dtype == mx.complex64
    np.testing.assert_allclose(to_numpy(out), np_logaddexp([1.0, 2.0], [1j, 2]), rtol=1e-6)
    out = mx.logaddexp(mx.array([[1], [2]]), mx.array(1j))
    assert out.dtype == mx.complex64 and out.shape == (2, 1)
    np.testing.assert_allclose(to_numpy(out), np_logaddexp([[1], [2]], 1j), rtol=1e-6)
    # real logaddexp is unchanged
    assert_close(mx.logaddexp(mx.array([0.0, -INF]), mx.array([0.0, 1.0])), np.logaddexp([0.0, -INF], [0.0, 1.0]),
                 dtype="float32")


def _z(shape, seed, scale=1.0, shift=0.0):
    r = np.random.default_rng(seed)
    return scale * (r.uniform(-1, 1, shape) + 1j * r.uniform(-1, 1, shape)) + shift


@ember_only
@pytest.mark.parametrize("sa,sb", [((2, 3), (2, 3)), ((2, 1), (3,)), ((), (2,))], ids=str)
def test_complex_logaddexp_derivatives(sa, sb):
    """The holomorphic partials e^a / (e^a + e^b), against finite
    differences in complex128 (MLX 0.32.4 raises: its rule calls sigmoid)."""
    a, b = _z(sa, 2, shift=0.5), _z(sb, 3, scale=2.0)
    check_complex(mx.logaddexp, np_logaddexp, [a, b], rtol=1e-3, atol=1e-4)
    # a real operand gets the real part of its cotangent
    x = np.random.default_rng(4).standard_normal(sa)
    check_complex(mx.logaddexp, np_logaddexp, [x, b], rtol=1e-3, atol=1e-4)


@ember_only
def test_complex_logaddexp_derivative_values():
    a, b = mx.array(_c(1 + 2j, complex(-INF, 0), -30)), mx.array(_c(0.5 - 1j, complex(-INF, 0), 2j))
    _, (ga, gb) = mx.vjp(mx.logaddexp, [a, b], [mx.array(_c(1, 1, 1))])
    ea, eb = np.exp(np.array([1 + 2j])), np.exp(np.array([0.5 - 1j]))
    np.testing.assert_allclose(to_numpy(ga)[0], np.conj(ea / (ea + eb))[0], rtol=1e-5)
    np.testing.assert_allclose(to_numpy(ga)[1:], [0.5, 0], atol=1e-6)  # -inf tie splits evenly
    np.testing.assert_allclose(to_numpy(gb)[1:], [0.5, 1], atol=1e-6)
    _, (t,) = mx.jvp(mx.logaddexp, [a, b], [mx.array(_c(1j, 1, 0)), mx.array(_c(0, 1, 1))])
    np.testing.assert_allclose(to_numpy(t), [1j * (ea / (ea + eb))[0], 1, 1], rtol=1e-5, atol=1e-6)


def test_complex_logaddexp_vmap():
    a, b = _z((4, 3), 5), _z((3,), 6)
    gradcheck.check_vmap(mx.logaddexp, [a, b], in_axes=(0, None), rtol=1e-5, atol=1e-6)
    gradcheck.check_vmap(mx.logaddexp, [a, _z((3, 4), 7)], in_axes=(0, 1), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------
# complex addmm
# --------------------------------------------------------------------------

def test_complex_addmm_mlx_value():
    out = mx.addmm(mx.array([[1 + 1j]]), mx.array([[2j]]), mx.array([[1 - 1j]]))
    assert out.dtype == mx.complex64
    assert to_numpy(out).tolist() == [[3 + 3j]]


def _cplx(rng, shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


ADDMM_SHAPES = [  # c, a, b
    ((4, 5), (4, 3), (3, 5)),
    ((5,), (4, 3), (3, 5)),        # c broadcasts over the rows
    ((4, 1), (4, 3), (3, 5)),
    ((), (4, 3), (3, 5)),          # 0-d c
    ((2, 4, 5), (2, 4, 3), (2, 3, 5)),  # batch
    ((4, 5), (2, 4, 3), (3, 5)),   # c and b broadcast over the batch
    ((0, 5), (0, 3), (3, 5)),      # empty
    ((4, 5), (4, 0), (0, 5)),      # empty contraction
    ((1, 6), (1, 7), (7, 6)),      # a row times a matrix (gemv-like)
    ((6, 1), (6, 7), (7, 1)),      # a matrix times a column
]


@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (2.0, 0.5), (-1.5, 0.0), (0.0, 2.0)])
@pytest.mark.parametrize("cs,as_,bs", ADDMM_SHAPES, ids=str)
def test_complex_addmm_against_numpy(cs, as_, bs, alpha, beta):
    rng = np.random.default_rng(11)
    c, a, b = _cplx(rng, cs), _cplx(rng, as_), _cplx(rng, bs)
    got = mx.addmm(mx.array(c), mx.array(a), mx.array(b), alpha=alpha, beta=beta)
    want = alpha * (a.astype(np.complex128) @ b) + beta * c
    assert got.dtype == mx.complex64 and got.shape == want.shape
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-5, atol=1e-5)


def test_complex_addmm_transposed_and_strided_inputs():
    rng = np.random.default_rng(12)
    a, b, c = _cplx(rng, (3, 4)), _cplx(rng, (5, 3)), _cplx(rng, (4, 5))
    # a.T, b.T are column-major views, c[::-1] a negatively strided one
    got = mx.addmm(mx.array(c)[::-1], mx.array(a).T, mx.array(b).T, alpha=0.5, beta=-1.0)
    want = 0.5 * (a.T.astype(np.complex128) @ b.T) - c[::-1]
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-5, atol=1e-5)
    # step-2/3 slices (neither row- nor column-major) and a reversed batch
    big, big2 = _cplx(rng, (8, 9)), _cplx(rng, (6, 10))
    a2, b2 = big[::2, ::3], big2[::2, 1::2]  # (4, 3) and (3, 5)
    got = mx.addmm(mx.array(c), mx.array(big)[::2, ::3], mx.array(big2)[::2, 1::2], beta=2.0)
    np.testing.assert_allclose(to_numpy(got), a2.astype(np.complex128) @ b2 + 2.0 * c, rtol=1e-5, atol=1e-5)
    a3, b3 = _cplx(rng, (3, 4, 3)), _cplx(rng, (3, 3, 5))
    got = mx.addmm(mx.array(c), mx.array(a3)[::-1], mx.array(b3))
    np.testing.assert_allclose(to_numpy(got), a3[::-1].astype(np.complex128) @ b3 + c, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtypes", [("float32", "complex64", "float32"), ("float16", "complex64", "bfloat16"),
                                    ("int32", "complex64", "int32")], ids=str)
def test_complex_addmm_promotes_real_operands(dtypes):
    """MLX: one complex operand makes the product complex64 (integers too)."""
    c, a, b = (mx.array(v).astype(getattr(mx, d)) for v, d in zip(([[1.0]], [[2j]], [[3.0]]), dtypes))
    out = mx.addmm(c, a, b, alpha=2.0, beta=0.5)
    assert out.dtype == mx.complex64
    assert to_numpy(out).tolist() == [[0.5 + 12j]]


def test_addmm_integers_still_rejected():
    with pytest.raises(ValueError, match=r"addmm"):
        mx.addmm(mx.array([[1]]), mx.array([[2]]), mx.array([[3]]))


@ember_only
def test_complex_addmm_beta_zero_does_not_read_c():
    """Ember's addmm skips c when beta == 0 (BLAS's rule), complex too: a NaN
    in c does not reach the result (MLX computes 0 * c)."""
    out = mx.addmm(mx.array([[complex(NAN, 0)]]), mx.array([[1j]]), mx.array([[1 + 0j]]), beta=0.0)
    assert to_numpy(out).tolist() == [[1j]]


@pytest.mark.parametrize("cs,as_,bs", [((2, 4), (2, 3), (3, 4)), ((4,), (2, 3), (3, 4)), ((), (2, 2, 3), (3, 4))],
                         ids=str)
def test_complex_addmm_derivatives(cs, as_, bs):
    """vjp and jvp of every operand against finite differences in complex128
    (MLX's convention for complex cotangents)."""
    c, a, b = _z(cs, 20), _z(as_, 21), _z(bs, 22)
    check_complex(lambda c, a, b: mx.addmm(c, a, b, alpha=0.7, beta=1.3),
                  lambda c, a, b: 0.7 * (a @ b) + 1.3 * c, [c, a, b], rtol=1e-3, atol=1e-4)
    # a real addend of a complex product gets the real part of its cotangent
    x = np.random.default_rng(23).standard_normal(cs)
    check_complex(lambda c, a, b: mx.addmm(c, a, b, alpha=2.0, beta=0.5),
                  lambda c, a, b: 2.0 * (a @ b) + 0.5 * c, [x, a, b], rtol=1e-3, atol=1e-4)


def test_complex_addmm_vmap():
    c, a, b = _z((3, 2, 4), 30), _z((2, 3), 31), _z((3, 3, 4), 32)
    gradcheck.check_vmap(lambda c, a, b: mx.addmm(c, a, b, alpha=2.0, beta=0.5), [c, a, b],
                         in_axes=(0, None, 0), rtol=1e-5, atol=1e-5)
    gradcheck.check_vmap(lambda c, a, b: mx.addmm(c, a, b), [_z((4,), 33), _z((2, 3, 3), 34), b],
                         in_axes=(None, 1, 0), rtol=1e-5, atol=1e-5)
