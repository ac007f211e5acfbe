"""Run on 2 ranks by test_distributed_mpi.py: ember.parallel.pmap spread over
the ranks gives what vmap gives on one process (collectives on the axis name,
axis_index, derivatives), and data-parallel training through pmap + psum
matches one process on the whole batch."""
import numpy as np

import ember.core as mx
from ember import parallel as P

D = mx.distributed
g = D.init()
r, n = g.rank(), g.size()


def f64(a):
    return mx.array(a, dtype=mx.float64)


X = np.random.default_rng(0).standard_normal((4 * n, 3))  # the same on every rank


def f(v, c):
    return (P.psum(v, "b"), P.pmean(v * c, "b"), P.pmax(v, "b"), P.pmin(v, "b"), P.axis_index("b"),
            P.all_gather(v, "b"), v - P.pmean(v, "b"))


for in_axes, xin in ((0, X), (1, X.T)):
    got = P.pmap(f, in_axes=(in_axes, None), axis_name="b")(f64(xin), f64(3.0))
    ref = P.vmap(f, in_axes=(in_axes, None), axis_name="b")(f64(xin), f64(3.0))
    for k, (a, b) in enumerate(zip(got, ref)):
        assert a.shape == b.shape and a.dtype == b.dtype, (k, a.shape, b.shape)
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-12, atol=1e-12, err_msg=str(k))
np.testing.assert_array_equal(np.array(P.pmap(lambda v: P.axis_index("b"), axis_name="b")(f64(X))), np.arange(4 * n))
# out_axes and float32
got = P.pmap(lambda v: v * 2 - P.psum(v, "b"), in_axes=0, out_axes=1, axis_name="b")(mx.array(X.astype(np.float32)))
np.testing.assert_allclose(np.array(got), (X * 2 - X.sum(0)).T, rtol=1e-5, atol=1e-5)

# derivatives through pmap: inside (grad of each example's loss, summed) and outside
w = f64(np.random.default_rng(1).standard_normal(3))
loss = lambda w, x: mx.sum(mx.sin(x * w - P.pmean(x, "b")) ** 2)
inside = P.pmap(lambda w, x: P.psum(mx.grad(loss)(w, x), "b"), in_axes=(None, 0), axis_name="b")(w, f64(X))
ref = P.vmap(lambda w, x: P.psum(mx.grad(loss)(w, x), "b"), in_axes=(None, 0), axis_name="b")(w, f64(X))
np.testing.assert_allclose(np.array(inside), np.array(ref), rtol=1e-12, atol=1e-12)
ex = lambda w, x: mx.sin(x * w) * P.pmax(x, "b") + P.all_gather(x, "b")[1] * P.psum(x * w, "b")
fm = lambda w, xs: mx.sum(P.pmap(ex, in_axes=(None, 0), axis_name="b")(w, xs) ** 2)
fv = lambda w, xs: mx.sum(P.vmap(ex, in_axes=(None, 0), axis_name="b")(w, xs) ** 2)
for argnum in (0, 1):
    np.testing.assert_allclose(np.array(mx.grad(fm, argnum)(w, f64(X))), np.array(mx.grad(fv, argnum)(w, f64(X))),
                               rtol=1e-10, atol=1e-12, err_msg=str(argnum))
_, (tm,) = mx.jvp(lambda xs: [P.pmap(ex, in_axes=(None, 0), axis_name="b")(w, xs)], [f64(X)], [f64(X * 0.5)])
_, (tv,) = mx.jvp(lambda xs: [P.vmap(ex, in_axes=(None, 0), axis_name="b")(w, xs)], [f64(X)], [f64(X * 0.5)])
np.testing.assert_allclose(np.array(tm), np.array(tv), rtol=1e-10, atol=1e-12)

# data-parallel training in three lines, against one process on the whole batch
Y = np.random.default_rng(2).standard_normal((4 * n,))
mse = lambda w, x, y: (mx.sum(x * w) - y) ** 2 / (4 * n)
grads = P.pmap(lambda w, x, y: P.psum(mx.grad(mse)(w, x, y), "b"), in_axes=(None, 0, 0), axis_name="b")
wp = wr = f64(np.zeros(3))
for _ in range(5):
    wp = wp - 0.1 * grads(wp, f64(X), f64(Y))[0]
    wr = wr - 0.1 * mx.grad(lambda w: mx.sum((f64(X) @ w - f64(Y)) ** 2) / (4 * n))(wr)
np.testing.assert_allclose(np.array(wp), np.array(wr), rtol=1e-10, atol=1e-12)

try:
    P.pmap(lambda v: v, axis_name="b")(f64(np.ones((2 * n + 1, 2))))
    raise AssertionError("no error")
except ValueError as err:
    assert "cannot be split over the %d processes" % n in str(err), str(err)

print("OK", r, flush=True)
