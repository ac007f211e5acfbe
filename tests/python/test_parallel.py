"""``ember.parallel`` on one process: named-axis collectives under vmap
against NumPy, their derivatives against finite differences (float64, JAX's
convention: the gradient of the sum over the examples), nesting, and pmap's
fallback to vmap. The multi-process pmap runs in test_distributed_mpi.py."""
import numpy as np
import pytest

from conftest import ember_only

import ember.core as mx
from ember import parallel as P

pytestmark = ember_only

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3))


def f64(a):
    return mx.array(a, dtype=mx.float64)


@pytest.mark.parametrize("in_axes, out_axes", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_collectives_against_numpy(in_axes, out_axes):
    x = X if in_axes == 0 else X.T

    def f(v):
        return (P.psum(v, "b"), P.pmean(v, "b"), P.pmax(v, "b"), P.pmin(v, "b"), P.axis_index("b"),
                v - P.pmean(v, "b"))

    oaxes = (out_axes,) * 4 + (0, out_axes)
    outs = P.vmap(f, in_axes=in_axes, out_axes=oaxes, axis_name="b")(f64(x))
    refs = (X.sum(0), X.mean(0), X.max(0), X.min(0), None, X - X.mean(0))
    for k, (o, ref) in enumerate(zip(outs, refs)):
        o = np.array(o)
        if k == 4:
            np.testing.assert_array_equal(o, np.arange(4))
            assert outs[4].dtype == mx.int32
            continue
        if ref.ndim == 1:
            ref = np.broadcast_to(ref, X.shape)
        np.testing.assert_allclose(np.moveaxis(o, out_axes, 0), ref, rtol=1e-12)
    g = P.vmap(lambda v: P.all_gather(v, "b"), in_axes=in_axes, axis_name="b")(f64(x))
    assert g.shape == (4, 4, 3)
    np.testing.assert_array_equal(np.array(g), np.broadcast_to(X, (4, 4, 3)))


def test_unbatched_values_and_several_names():
    # a value that does not depend on the example still sums over the axis
    out = P.vmap(lambda v: P.psum(mx.array(2.0), "b") + 0 * v, axis_name="b")(f64(X))
    np.testing.assert_array_equal(np.array(out), np.full((4, 3), 8.0))
    # nested: each name reduces its own axis; a tuple reduces both
    x = RNG.standard_normal((2, 5, 3))
    inner = P.vmap(lambda v: (P.psum(v, "i"), P.psum(v, "j"), P.psum(v, ("i", "j")), P.axis_index("i"),
                              P.axis_index("j")), axis_name="j")
    si, sj, sij, ii, jj = P.vmap(inner, axis_name="i")(f64(x))
    np.testing.assert_allclose(np.array(si), np.broadcast_to(x.sum(0), x.shape), rtol=1e-12)
    np.testing.assert_allclose(np.array(sj), np.broadcast_to(x.sum(1, keepdims=True), x.shape), rtol=1e-12)
    np.testing.assert_allclose(np.array(sij), np.broadcast_to(x.sum((0, 1)), x.shape), rtol=1e-12)
    np.testing.assert_array_equal(np.array(ii), np.repeat(np.arange(2)[:, None], 5, 1))
    np.testing.assert_array_equal(np.array(jj), np.repeat(np.arange(5)[None], 2, 0))
    # an unnamed vmap in between does not reduce over its own axis
    mid = mx.vmap(lambda v: P.psum(v, "i"))
    out = P.vmap(mid, axis_name="i")(f64(x))
    np.testing.assert_allclose(np.array(out), np.broadcast_to(x.sum(0), x.shape), rtol=1e-12)


def _fd_total(g, x, eps=1e-6):
    """d/dx of sum over examples of g's per-example scalar, numerically."""
    total = lambda a: float(np.sum(np.array(P.vmap(g, axis_name="b")(f64(a)))))
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        out[i] = (total(x + d) - total(x - d)) / (2 * eps)
    return out


@pytest.mark.parametrize("name", ["psum", "pmean", "pmax", "pmin", "all_gather", "centre"])
def test_gradients_against_finite_differences(name):
    w = f64(RNG.standard_normal((4, 3)))

    def g(v):
        if name == "all_gather":
            return mx.sum(mx.sin(P.all_gather(v, "b")) * w)
        if name == "centre":
            return mx.sum(mx.sin(v - P.pmean(v, "b")) ** 2)
        return mx.sum(mx.sin(getattr(P, name)(v * v, "b")) * v)

    got = P.vmap(mx.grad(g), axis_name="b")(f64(X))
    np.testing.assert_allclose(np.array(got), _fd_total(g, X), rtol=1e-6, atol=1e-8)
    # jvp of the mapped function against a finite difference of it
    t = RNG.standard_normal(X.shape)
    fm = P.vmap(lambda v: mx.sin(getattr(P, name)(v, "b")) if name not in ("centre",) else v - P.pmean(v, "b"),
                axis_name="b")
    _, (tan,) = mx.jvp(lambda a: [fm(a)], [f64(X)], [f64(t)])
    num = (np.array(fm(f64(X + 1e-6 * t))) - np.array(fm(f64(X - 1e-6 * t)))) / 2e-6
    np.testing.assert_allclose(np.array(tan), num, rtol=1e-5, atol=1e-7)
    # grad outside the map
    gr = mx.grad(lambda a: mx.sum(fm(a) ** 2))(f64(X))
    num = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        d = np.zeros_like(X)
        d[i] = 1e-6
        num[i] = (np.sum(np.array(fm(f64(X + d))) ** 2) - np.sum(np.array(fm(f64(X - d))) ** 2)) / 2e-6
    np.testing.assert_allclose(np.array(gr), num, rtol=1e-5, atol=1e-7)


def test_pmap_on_one_process_is_vmap():
    f = lambda v, c: v * c - P.pmean(v, "b") + P.axis_index("b")
    a = P.pmap(f, in_axes=(0, None), axis_name="b")(f64(X), f64(2.0))
    b = P.vmap(f, in_axes=(0, None), axis_name="b")(f64(X), f64(2.0))
    np.testing.assert_array_equal(np.array(a), np.array(b))
    # data-parallel gradients in three lines
    loss = lambda w, x: mx.sum((x * w - 1.0) ** 2)
    step = P.pmap(lambda w, x: P.psum(mx.grad(loss)(w, x), "b"), in_axes=(None, 0), axis_name="b")
    g = step(f64(np.ones(3)), f64(X))
    ref = np.sum(2 * (X - 1.0) * X, axis=0)
    np.testing.assert_allclose(np.array(g), np.broadcast_to(ref, X.shape), rtol=1e-12)


def test_errors():
    with pytest.raises(NameError, match=r"\[psum\] unbound axis name: 'c'"):
        P.vmap(lambda v: P.psum(v, "c"), axis_name="b")(f64(X))
    with pytest.raises(NameError, match="axis_index"):
        P.axis_index("b")
    with pytest.raises(NameError, match="pmax"):
        mx.vmap(lambda v: P.pmax(v, None))(f64(X))
    # the plain vmap is unchanged
    np.testing.assert_array_equal(np.array(mx.vmap(lambda v: v * 2)(f64(X))), X * 2)
