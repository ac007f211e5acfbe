"""Transform rules of the indexing, sorting and scan primitives.

Gather / Scatter (every kind, with windows from basic indexing), Sorting,
Scan, SearchSorted and Unique: jvp and vjp against central differences
(``gradcheck.check_grads``, float64), second order where the op is smooth,
vmap against a Python loop (``gradcheck.check_vmap``) with the batch on
any operand, and the targeted cases a table cannot express: repeated
indices (assign: only the surviving write gets a cotangent), zeros in
cumprod and scatter-multiply, ties-free max/min scans, huge spreads in
logcumsumexp, dtypes and shapes of cotangents, complex conventions.
"""

import numpy as np
import pytest

from conftest import mx
from gradcheck import check_grads, check_vmap

pytestmark = pytest.mark.ember_only


RNG = np.random.default_rng(1234)


def rnd(*shape):
    return RNG.standard_normal(shape)


def distinct(*shape):
    """Values far from ties (max/min/sort stay differentiable)."""
    n = int(np.prod(shape))
    return RNG.permutation(np.linspace(-3, 3, n) + RNG.uniform(0, 0.01, n)).reshape(shape)


def f64(x):
    return mx.array(np.asarray(x, np.float64), dtype=mx.float64)


def idx(*v, dtype=np.int32):
    return np.array(v, dtype=dtype)


def vjp1(fun, args, ct):
    """vjp of fun (all args) at args with cotangent ct, as numpy."""
    _, g = mx.vjp(fun, [f64(a) for a in args], [f64(ct)])
    return [np.array(x) for x in g]


# --------------------------------------------------------------------------
# Gather
# --------------------------------------------------------------------------

@pytest.mark.parametrize("order", [1, 2])
def test_gather_forms(order):
    x = rnd(5, 4)
    i = idx(3, 0, 3, -1, 3)  # repeated and negative: the cotangents accumulate
    j = np.array([[0, 2], [3, 3]], np.int64)
    check_grads(lambda a, i: mx.take(a, i, axis=0) ** 2, [x, i], order=order)
    check_grads(lambda a, i: mx.take(a, i) * a[0, 0], [x, j], order=order)
    check_grads(lambda a, i, j: a[i[:2], j[0]], [x, i, j], order=order)
    check_grads(lambda a, j: mx.take_along_axis(a, j.astype(mx.uint32), axis=1) ** 3,
                [x[:2], j], order=order)
    check_grads(lambda a: a[mx.array([1, 1, 2]), 1:3], [x], order=order)
    check_grads(lambda a: a[::-1, mx.array([[0], [3]])], [x], order=order)


def test_gather_vjp_accumulates_repeats():
    x = np.arange(4.0)
    (g,) = vjp1(lambda a: a[mx.array([1, 1, 3, 1])], [x], np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(g, [0.0, 7.0, 0.0, 3.0])


def test_gather_dynamic_slices_diagonals():
    x = rnd(4, 5)
    check_grads(lambda a: mx.slice(a, mx.array([1, 2]), (0, 1), (2, 3)), [x])
    check_grads(lambda a: mx.diagonal(a, 1), [x])
    check_grads(lambda a: mx.diag(a, -1), [x])
    check_grads(lambda a: mx.diag(a[0], 2), [x])
    check_grads(lambda a: mx.trace(a, -1) * mx.trace(a), [x], order=2)
    check_grads(lambda a, b: mx.einsum("ii,ij->j", a, b), [rnd(3, 3), rnd(3, 2)], order=2)
    check_grads(lambda a, b: mx.tensordot(a, b, axes=([0], [1])), [rnd(3, 2), rnd(4, 3)])


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 0), (-1, 1), (None, -1)])
def test_gather_vmap(in_axes):
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    i = RNG.integers(-4, 4, (3, 2, 3)).astype(np.int32)
    xs = [x if in_axes[0] is not None else x[0], i if in_axes[1] is not None else i[0]]
    if in_axes[0] is not None:
        xs[0] = np.moveaxis(x, 0, in_axes[0])
    if in_axes[1] is not None:
        xs[1] = np.moveaxis(i, 0, in_axes[1])
    check_vmap(lambda a, j: mx.take(a, j, axis=0), xs, in_axes=in_axes)
    check_vmap(lambda a, j: a[1:, j], xs, in_axes=in_axes, out_axes=-1)
    check_vmap(lambda a, j: a[j, j] * a[None, 0, j], xs, in_axes=in_axes)


def test_gather_vmap_keeps_index_dtypes_and_ints():
    x = RNG.integers(-9, 9, (3, 6)).astype(np.int16)
    i = RNG.integers(0, 6, (3, 4)).astype(np.uint8)
    check_vmap(lambda a, j: mx.take(a, j), [x, i])
    check_vmap(lambda a, j: mx.take_along_axis(a, j, axis=0), [x, i])
    b = RNG.integers(0, 2, (3, 6)).astype(bool)
    check_vmap(lambda a, j: a[j], [b, i])


# --------------------------------------------------------------------------
# Scatter
# --------------------------------------------------------------------------

def _set(a, i, v):
    a = a + 0  # setitem on a copy, inside the differentiated function
    a[i] = v
    return a


@pytest.mark.parametrize("order", [1, 2])
def test_scatter_assign(order):
    x, v = rnd(6, 3), rnd(4, 3)
    i = idx(4, 0, 4, 2)  # position 4 written twice: the second write wins
    check_grads(lambda a, v, i: _set(a, i, v) * a, [x, v, i], order=order)
    check_grads(lambda a, v: mx.put_along_axis(a, mx.array([[2], [0]]), v, axis=1),
                [x[:2], v[:2, :1]], order=order)
    check_grads(lambda a, v: mx.slice_update(a, v, mx.array([1]), (0,)), [x, v[:2]], order=order)


def test_scatter_assign_repeated_index_only_last_write():
    x, v = np.zeros(3), np.array([1.0, 2.0, 3.0])
    gx, gv = vjp1(lambda a, v: _set(a, mx.array([1, 1, 1]), v), [x, v], np.array([5.0, 6.0, 7.0]))
    np.testing.assert_array_equal(gx, [5.0, 0.0, 7.0])
    # MLX gives every write 6.0; only the last one reaches the output
    np.testing.assert_array_equal(gv, [0.0, 0.0, 6.0])
    _, (tan,) = mx.jvp(lambda v: _set(f64(x), mx.array([1, 1, 1]), v), [f64(v)], [f64([1.0, 10.0, 100.0])])
    np.testing.assert_array_equal(np.array(tan), [0.0, 100.0, 0.0])


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("method", ["add", "subtract", "multiply", "divide"])
def test_scatter_at(method, order):
    x, v = rnd(5, 3) + 3, rnd(4, 3) + 3
    i = idx(1, 3, 1, 1)
    check_grads(lambda a, v, i: getattr(a.at[i], method)(v), [x, v, i], order=order)
    check_grads(lambda a, v: getattr(a.at[1:4, ::2], method)(v[:3, :2]), [x, v], order=order)


@pytest.mark.parametrize("method", ["maximum", "minimum"])
def test_scatter_max_min(method):
    x, v = distinct(5, 3), distinct(4, 3) * 0.9
    i = idx(1, 3, 1, 0)
    check_grads(lambda a, v, i: getattr(a.at[i], method)(v), [x, v, i])
    check_grads(lambda a, v: getattr(a.at[2, ::-1], method)(v[0]), [x, v])


def test_scatter_prod_with_zeros():
    """out = a * prod(updates at each position): exact derivatives even with
    zero updates (one or two at the same position) and zero targets."""
    x = np.array([2.0, 0.0, 3.0, -1.5])
    v = np.array([0.0, 4.0, 0.5, 0.0, 0.0, 2.0, 1.5])
    i = idx(0, 0, 1, 2, 2, 3, 3)
    f = lambda a, v: a.at[mx.array(i)].multiply(v)  # noqa: E731
    ct = np.array([1.0, -2.0, 0.5, 3.0])
    gx, gv = vjp1(f, [x, v], ct)
    np.testing.assert_allclose(gx, ct * np.array([0.0, 0.5, 0.0, 3.0]))
    # d/dv_k: a[pos] times the other updates at pos
    want = [ct[0] * 2.0 * 4.0, ct[0] * 2.0 * 0.0, ct[1] * 0.0, ct[2] * 3.0 * 0.0, ct[2] * 3.0 * 0.0,
            ct[3] * -1.5 * 1.5, ct[3] * -1.5 * 2.0]
    np.testing.assert_allclose(gv, want)
    assert np.all(np.isfinite(gv)) and np.all(np.isfinite(gx))
    check_grads(f, [x, v], order=2)


@pytest.mark.parametrize("in_axes", [(0, None, None), (None, 0, None), (None, None, 0), (0, 0, 0),
                                     (1, None, 0), (None, 1, -1), (-1, 0, None)])
@pytest.mark.parametrize("method", ["set", "add", "multiply", "maximum"])
def test_scatter_vmap(in_axes, method):
    b = 3
    x = RNG.standard_normal((b, 5, 4)).astype(np.float32)
    i = RNG.integers(-4, 4, (b, 3)).astype(np.int32)  # valid for both indexed dims
    v = RNG.standard_normal((b, 3, 4)).astype(np.float32)
    args = []
    for a, ax in zip((x, i, v), in_axes):
        args.append(a[0] if ax is None else np.moveaxis(a, 0, ax))

    def f(a, j, u):
        if method == "set":
            return _set(a, j, u)
        return getattr(a.at[j], method)(u)

    check_vmap(f, args, in_axes=in_axes)

    # a window from basic indexing around the indexed dim
    def g(a, j, u):
        return getattr(a.at[1:, j], "add" if method == "set" else method)(u.T)

    check_vmap(g, args, in_axes=in_axes, out_axes=-1)


def test_scatter_vmap_windows_and_ints():
    x = RNG.integers(-9, 9, (3, 4, 6)).astype(np.int32)
    u = RNG.integers(-9, 9, (3, 2)).astype(np.int32)
    check_vmap(lambda a, u: a.at[1, ::3].add(u), [x, u])
    check_vmap(lambda a, u: _set(a, (slice(None, None, 2), 2), u[0]), [x, u], in_axes=(0, None))
    check_vmap(lambda a, u: mx.slice_update(a, u[None], mx.array([2, 3]), (0, 1)), [x.transpose(1, 0, 2), u], in_axes=(1, 0))
    check_vmap(lambda a: mx.diag(a[0]), [x.astype(np.float32)])


def test_scatter_vmap_of_grad():
    """grad inside vmap: the vjp's scatter-add and its surviving-write mask
    batched with batched indices."""
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    i = np.array([[0, 0, 1], [4, 2, 4], [3, 3, 3]], np.int32)
    v = RNG.standard_normal((3, 3)).astype(np.float32)
    grad = mx.grad(lambda a, u, j: mx.sum(_set(a, j, u) * mx.arange(5)), argnums=(0, 1))
    got = mx.vmap(grad, in_axes=(0, 0, 0))(mx.array(x), mx.array(v), mx.array(i))
    for k in range(3):
        want = grad(mx.array(x[k]), mx.array(v[k]), mx.array(i[k]))
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.array(g[k]), np.array(w), rtol=1e-6)


# --------------------------------------------------------------------------
# Sorting
# --------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_sort_family_grads(axis):
    x = distinct(4, 5)
    check_grads(lambda a: mx.sort(a, axis=axis) * mx.arange(20 if axis is None else 4 if axis == 0 else 5).reshape(
        (-1,) if axis is None else (4, 1) if axis == 0 else (5,)), [x])
    check_grads(lambda a: mx.topk(a, 2, axis=axis), [x])
    check_grads(lambda a: mx.partition(a, 1, axis=axis), [x])
    check_grads(lambda a: mx.median(a, axis=axis), [x])


def test_sort_grad_goes_through_the_permutation():
    x = np.array([3.0, -1.0, 2.0, 0.5])
    (g,) = vjp1(lambda a: mx.sort(a), [x], np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(g, [4.0, 1.0, 3.0, 2.0])
    (g,) = vjp1(lambda a: mx.topk(a, 2), [x], np.array([10.0, 20.0]))
    np.testing.assert_array_equal(g, [20.0, 0.0, 10.0, 0.0])


def test_integer_outputs_have_zero_gradients():
    x = distinct(6)
    g = mx.grad(lambda a: mx.sum(mx.argsort(a).astype(mx.float32) * a))(mx.array(x, dtype=mx.float32))
    np.testing.assert_allclose(np.array(g), np.argsort(x).astype(np.float32))
    g = mx.grad(lambda a: mx.sum(mx.take_along_axis(a, mx.argpartition(a, 2), axis=0)[:3]))(f64(x))
    want = np.zeros(6)
    want[np.argsort(x)[:3]] = 1
    np.testing.assert_array_equal(np.array(g), want)


@pytest.mark.parametrize("in_axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_sorting_vmap(in_axis, dtype):
    x = RNG.integers(-20, 20, (3, 4, 5)).astype(dtype)
    for f in (lambda a: mx.sort(a, axis=0), lambda a: mx.argsort(a), lambda a: mx.topk(a, 3, axis=0),
              lambda a: mx.partition(a, 2), lambda a: mx.argpartition(a, 1, axis=0),
              lambda a: mx.sort(a, axis=None)):
        check_vmap(f, [np.moveaxis(x, 0, in_axis)], in_axes=in_axis)


# --------------------------------------------------------------------------
# Scans
# --------------------------------------------------------------------------

SCAN_FLAGS = [dict(), dict(reverse=True), dict(inclusive=False), dict(reverse=True, inclusive=False)]


@pytest.mark.parametrize("flags", SCAN_FLAGS)
@pytest.mark.parametrize("axis", [0, 1, None])
def test_scan_grads(flags, axis):
    x = rnd(3, 4)
    check_grads(lambda a: mx.cumsum(a, axis=axis, **flags), [x], order=2)
    check_grads(lambda a: mx.cumprod(a, axis=axis, **flags), [x], order=2)
    # an exclusive scan starts at -inf (no finite differences there): exp of it
    post = mx.exp if flags.get("inclusive") is False else (lambda y: y)
    check_grads(lambda a: post(mx.logcumsumexp(a, axis=axis, **flags)), [x * 3], order=2)
    d = distinct(3, 4)
    fin = lambda y: mx.where(mx.isinf(y), 0.0, y) ** 2  # noqa: E731  (exclusive scans start at -+inf)
    check_grads(lambda a: fin(mx.cummax(a, axis=axis, **flags)), [d])
    check_grads(lambda a: fin(mx.cummin(a, axis=axis, **flags)), [d])


@pytest.mark.parametrize("flags", SCAN_FLAGS)
def test_cumprod_zeros_exact(flags):
    """Exact derivatives with one or several zeros (every position's
    derivative is a product of the others, computed by brute force)."""
    rev, incl = flags.get("reverse", False), flags.get("inclusive", True)
    for x in (np.array([2.0, 0.0, 3.0, 0.5, -1.0]), np.array([0.0, 1.5, 0.0, 2.0, 3.0]),
              np.array([1.5, 2.0, -1.0, 4.0, 0.0])):
        n = len(x)
        jac = np.zeros((n, n))
        for j in range(n):
            ks = [k for k in range(n) if (k >= j if rev else k <= j) and (incl or k != j)]
            for k in ks:
                jac[j, k] = np.prod([x[m] for m in ks if m != k])
        ct = RNG.standard_normal(n)
        (g,) = vjp1(lambda a: mx.cumprod(a, **flags), [x], ct)
        np.testing.assert_allclose(g, ct @ jac, rtol=1e-12, atol=1e-12)
        t = RNG.standard_normal(n)
        _, (tan,) = mx.jvp(lambda a: mx.cumprod(a, **flags), [f64(x)], [f64(t)])
        np.testing.assert_allclose(np.array(tan), jac @ t, rtol=1e-12, atol=1e-12)
        # second derivatives are exact with one zero along the scan
        check_grads(lambda a: mx.cumprod(a, **flags), [x], order=2 if np.sum(x == 0) <= 1 else 1)


def test_cummax_ties_and_nan_stay_finite():
    x = np.array([1.0, 3.0, 3.0, 2.0, 5.0])
    (g,) = vjp1(lambda a: mx.cummax(a), [x], np.ones(5))
    # each output's cotangent goes to one element holding the running max
    np.testing.assert_array_equal(g.sum(), 5.0)
    np.testing.assert_array_equal(g[[0, 3, 4]], [1.0, 0.0, 1.0])
    (g,) = vjp1(lambda a: mx.cummin(a, reverse=True, inclusive=False), [x], np.ones(5))
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 3.0, 1.0])  # y = [2, 2, 2, 5, inf]
    (g,) = vjp1(lambda a: mx.cummax(a), [np.array([1.0, np.nan, 2.0])], np.ones(3))
    np.testing.assert_array_equal(g, [1.0, 2.0, 0.0])


def test_logcumsumexp_huge_spread():
    """Weights computed in log space: no overflow for values far apart
    (masking with -1e9 and float32)."""
    x = np.array([-1e9, 0.0, 80.0, -200.0, 90.0], np.float32)
    ct = np.array([1.0, -2.0, 0.5, 3.0, -1.0], np.float32)
    y64 = np.logaddexp.accumulate(x.astype(np.float64))
    want = np.array([sum(ct[j] * np.exp(float(x[k]) - y64[j]) for j in range(k, 5)) for k in range(5)])
    _, (g,) = mx.vjp(lambda a: mx.logcumsumexp(a), [mx.array(x)], [mx.array(ct)])
    assert g.dtype == mx.float32
    np.testing.assert_allclose(np.array(g), want, rtol=1e-5, atol=1e-6)
    t = np.array([1.0, 2.0, -1.0, 0.0, 0.5], np.float32)
    _, (tan,) = mx.jvp(lambda a: mx.logcumsumexp(a), [mx.array(x)], [mx.array(t)])
    want_t = np.array([sum(t[k] * np.exp(float(x[k]) - y64[j]) for k in range(j + 1)) for j in range(5)])
    np.testing.assert_allclose(np.array(tan), want_t, rtol=1e-5, atol=1e-6)
    # exclusive: the empty first set has no derivative (y = -inf there)
    _, (g,) = mx.vjp(lambda a: mx.logcumsumexp(a, inclusive=False), [mx.array(x)], [mx.array(ct)])
    assert np.all(np.isfinite(np.array(g)))


@pytest.mark.parametrize("in_axis", [0, 1, -1])
def test_scan_vmap(in_axis):
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    xi = RNG.integers(-3, 4, (3, 4, 5)).astype(np.int32)
    for flags in SCAN_FLAGS:
        for f in (mx.cumsum, mx.cumprod, mx.cummax, mx.cummin, mx.logcumsumexp):
            check_vmap(lambda a: f(a, axis=0, **flags), [np.moveaxis(x, 0, in_axis)], in_axes=in_axis,
                       rtol=1e-5)
            if f is not mx.logcumsumexp:  # integer scans keep their dtype
                check_vmap(lambda a: f(a, axis=-1, **flags), [np.moveaxis(xi, 0, in_axis)], in_axes=in_axis)
        check_vmap(lambda a: mx.cumsum(a, **flags), [np.moveaxis(x, 0, in_axis)], in_axes=in_axis, rtol=1e-5)


# --------------------------------------------------------------------------
# dtypes, shapes, complex
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float32, mx.complex64])
def test_cotangent_dtypes_and_shapes(dtype):
    x = mx.array(RNG.uniform(0.5, 1.5, (3, 4))).astype(dtype)
    v = mx.array(RNG.uniform(0.5, 1.5, (2, 4))).astype(dtype)
    i = mx.array([2, 0])
    funs = [lambda a, u: a[i] * u, lambda a, u: a.at[i].add(u), lambda a, u: _set(a, i, u),
            lambda a, u: a.at[i].multiply(u), lambda a, u: mx.cumprod(a, axis=0)[:2] * u,
            lambda a, u: mx.cumsum(a, axis=1, reverse=True)[1:] * u,
            lambda a, u: mx.logcumsumexp(a, axis=0)[:2] * u]
    if dtype != mx.complex64:
        funs += [lambda a, u: mx.sort(a, axis=0)[1:] * u, lambda a, u: mx.cummax(a, axis=0)[1:] * u,
                 lambda a, u: a.at[i].maximum(u)]
    for f in funs:
        out = f(x, v)
        _, (gx, gv) = mx.vjp(f, [x, v], [mx.ones(out.shape, dtype=out.dtype)])
        assert (gx.dtype, gx.shape, gv.dtype, gv.shape) == (dtype, x.shape, dtype, v.shape)
        _, (t,) = mx.jvp(f, [x, v], [mx.ones_like(x), mx.ones_like(v)])
        assert (t.dtype, t.shape) == (out.dtype, out.shape)


def test_empty_and_zero_d():
    e = f64(np.zeros((0, 3)))
    for f in (lambda a: mx.take(a, mx.array([], dtype=mx.int32), axis=0), lambda a: mx.sort(a, axis=0),
              lambda a: mx.cumprod(a, axis=0), lambda a: mx.cummax(a, axis=0), lambda a: mx.logcumsumexp(a, axis=0),
              lambda a: a.at[mx.array([], dtype=mx.int32)].add(mx.zeros((0, 3), dtype=mx.float64))):
        out = f(e)
        _, (g,) = mx.vjp(f, [e], [mx.zeros(out.shape, dtype=out.dtype)])
        assert g.shape == (0, 3)
    s = f64(2.5)
    for f in (lambda a: mx.cumprod(a), lambda a: mx.sort(a, axis=None), lambda a: mx.take(a, mx.array([0, 0]))):
        out = f(s)
        _, (g,) = mx.vjp(f, [s], [mx.ones(out.shape, dtype=out.dtype)])
        assert g.shape == () and float(g) == pytest.approx(float(np.ones(out.shape).sum()) if out.size != 1
                                                           else 1.0)


def test_complex_holomorphic_convention():
    """vjp of a holomorphic f is ct * conj(f'(x)) (MLX/JAX)."""
    x = np.array([1 + 2j, -0.5 + 1j, 2 - 1j], np.complex64)
    ct = np.array([1 - 1j, 2 + 0.5j, -1j], np.complex64)
    d = np.array([[1, 0, 0], [x[1], x[0], 0], [x[1] * x[2], x[0] * x[2], x[0] * x[1]]])  # dy_j / dx_k
    _, (g,) = mx.vjp(lambda a: mx.cumprod(a), [mx.array(x)], [mx.array(ct)])
    np.testing.assert_allclose(np.array(g), ct @ np.conj(d), rtol=1e-5)
    u = np.array([2 + 1j, -1j], np.complex64)
    _, (gx, gu) = mx.vjp(lambda a, u: a.at[mx.array([1, 1])].multiply(u), [mx.array(x), mx.array(u)],
                         [mx.array(ct)])
    np.testing.assert_allclose(np.array(gx), ct * np.conj([1, u[0] * u[1], 1]), rtol=1e-5)
    np.testing.assert_allclose(np.array(gu), ct[1] * np.conj([x[1] * u[1], x[1] * u[0]]), rtol=1e-5)


# --------------------------------------------------------------------------
# SearchSorted, Unique
# --------------------------------------------------------------------------

@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (0, 1), (None, -1)])
def test_searchsorted_vmap(side, in_axes):
    s = np.sort(RNG.integers(-4, 4, (3, 7)).astype(np.float32), axis=1)
    s[1, -2:] = np.nan  # NaN sorts last
    v = RNG.integers(-5, 5, (3, 2, 4)).astype(np.float32)
    v[2, 0, 0] = np.nan
    args = [s if in_axes[0] is not None else s[1],
            np.moveaxis(v, 0, in_axes[1]) if in_axes[1] is not None else v[0]]
    check_vmap(lambda a, b: mx.searchsorted(a, b, side=side), args, in_axes=in_axes)


@pytest.mark.parametrize("fill", [None, -7.0])
@pytest.mark.parametrize("size", [0, 2, 4, 9])
def test_unique_vmap(size, fill):
    x = RNG.integers(0, 4, (3, 6)).astype(np.float32)
    x[2, :] = 1.0
    x[1, 3] = np.nan
    x[1, 5] = np.nan
    x[0, 0] = -0.0

    def f(a):
        fv = None if fill is None else mx.array(fill)
        return mx.unique(a, size=size, return_index=True, return_inverse=True, return_counts=True,
                         fill_value=fv)

    check_vmap(f, [x])
    check_vmap(f, [np.nan_to_num(x.T, nan=7.0).astype(np.int32)], in_axes=1, out_axes=-1)
    if fill is not None:
        check_vmap(lambda a, fv: mx.unique(a, size=size, fill_value=fv), [x[0], np.array([1.0, 2.0, 3.0], np.float32)],
                   in_axes=(None, 0))
    check_vmap(lambda a: mx.unique(a, size=size, fill_value=mx.array(5.0)), [np.zeros((3, 0), np.float32)])


def test_unique_grads():
    # finite differences split ties (the output structure changes): distinct values there
    d = distinct(4)
    check_grads(lambda a: mx.unique(a, size=6) * mx.arange(1, 7), [d])
    check_grads(lambda a, fv: mx.unique(a, size=6, fill_value=fv), [d, np.array([0.5])])
    check_grads(lambda a: mx.unique(a, size=2), [d])
    x = np.array([2.0, -1.0, 2.0, 3.0, -1.0])
    (g, gf) = vjp1(lambda a, fv: mx.unique(a, size=4, fill_value=fv), [x, np.array([9.0])],
                   np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(g, [2.0, 1.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(gf, [4.0])
    (g,) = vjp1(lambda a: mx.unique(a, size=4), [x], np.array([1.0, 2.0, 3.0, 4.0]))
    # the first occurrence of each value; the padded slot repeats the first unique value
    np.testing.assert_array_equal(g, [2.0, 1.0 + 4.0, 0.0, 3.0, 0.0])
