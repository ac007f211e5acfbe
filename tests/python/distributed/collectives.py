"""Run on 2+ ranks by test_distributed_mpi.py (python -m ember.launch -n 2):
every collective against NumPy for every dtype, layouts, send/recv, split
groups, disagreements, derivatives against finite differences and vmap
against a loop. Prints "OK <rank>" at the end; any failure raises."""
import numpy as np

import ember.core as mx

D = mx.distributed
g = D.init()
r, n = g.rank(), g.size()
assert n >= 2, n

DTYPES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
          "float16", "float32", "float64", "bfloat16", "complex64"]


def rank_data(rank, dtype, shape=(3, 4), seed=0):
    """The input of `rank` (every rank can compute every rank's input)."""
    rng = np.random.default_rng(seed + 17 * rank)
    if dtype == "bool_":
        return rng.random(shape) < 0.5
    if dtype.startswith(("uint", "int")):
        return rng.integers(0, 50, shape).astype(dtype)
    if dtype == "complex64":
        return (rng.integers(-8, 8, shape) + 1j * rng.integers(-8, 8, shape)).astype(np.complex64)
    # exactly representable in float16/bfloat16, and no ties
    return (rng.permutation(np.prod(shape)).reshape(shape) - 5 + 0.5 * rank).astype(np.float32)


def to_np(a):
    if a.dtype == mx.bfloat16:
        return np.array(a.astype(mx.float32))
    return np.array(a)


def mk(x, dtype):
    return mx.array(x).astype(getattr(mx, dtype)) if dtype == "bfloat16" else mx.array(x.astype(
        np.float16 if dtype == "float16" else x.dtype))


def cplx_key(v):
    return (v.real, v.imag)


def np_reduce(xs, kind, dtype):
    if dtype == "bool_":
        return np.logical_and.reduce(xs) if kind == "min" else np.logical_or.reduce(xs)
    if dtype == "complex64" and kind != "sum":
        out = xs[0].copy()
        for x in xs[1:]:
            better = (x.real > out.real) | ((x.real == out.real) & (x.imag > out.imag))
            if kind == "min":
                better = (x.real < out.real) | ((x.real == out.real) & (x.imag < out.imag))
            out = np.where(better, x, out)
        return out
    if kind == "sum":
        return np.sum(np.stack(xs), axis=0, dtype=xs[0].dtype if dtype not in ("float16", "bfloat16") else np.float32)
    return (np.max if kind == "max" else np.min)(np.stack(xs), axis=0)



def in_dtype(ref, dt):
    """A NumPy reference in dt: float16/bfloat16 references (float32 sums)
    rounded as Ember rounds float32 to them; others as they are."""
    if dt in ("float16", "bfloat16"):
        return to_np(mx.array(ref.astype(np.float32)).astype(getattr(mx, dt)))
    return ref


def refused(call, exc, frag):
    """call() raises exc with frag in its message."""
    try:
        call()
    except exc as err:
        assert frag in str(err), str(err)
    else:
        raise AssertionError(f"no {exc.__name__} ({frag})")

# ---- every collective, every dtype -------------------------------------------
for dt in DTYPES:
    xs = [rank_data(k, dt) for k in range(n)]
    x = mk(xs[r], dt)
    for kind in ("sum", "max", "min"):
        y = getattr(D, "all_" + kind)(x)
        assert y.dtype == x.dtype and y.shape == x.shape, (kind, dt, y.dtype, y.shape)
        ref = in_dtype(np_reduce(xs, kind, dt), dt)
        np.testing.assert_array_equal(to_np(y), ref, err_msg=f"all_{kind} {dt}")
    y = D.all_gather(x)
    assert y.dtype == x.dtype and y.shape == (3 * n, 4)
    np.testing.assert_array_equal(to_np(y), np.concatenate([to_np(mk(v, dt)) for v in xs]), err_msg=dt)
    xs2 = [rank_data(k, dt, (2 * n, 3), seed=5) for k in range(n)]
    y = D.sum_scatter(mk(xs2[r], dt))
    assert y.dtype == x.dtype and y.shape == (2, 3)
    ref = in_dtype(np_reduce(xs2, "sum", dt)[2 * r:2 * r + 2], dt)
    np.testing.assert_array_equal(to_np(y), ref, err_msg=f"sum_scatter {dt}")

# ---- reductions above 16 KB, and every all_gather and sum_scatter on 2 ranks,
# go round the ring of ranks (mpi.cpp's Ring): blocks split unevenly between
# the ranks, in several 256 KB segments for the larger size (every dtype), the
# same bits on every rank
for dt in DTYPES:
    for size in (40001, 600001):
        rng = [np.random.default_rng(size + 7 * k) for k in range(n)]
        if dt == "bool_":
            xs = [g_.random(size) < 0.5 for g_ in rng]
        elif dt == "complex64":
            xs = [(g_.integers(-8, 8, size) + 1j * g_.integers(-8, 8, size)).astype(np.complex64) for g_ in rng]
        else:  # small integers: exact in every float dtype, sums included
            xs = [g_.integers(0 if dt.startswith("u") else -60, 60, size).astype(np.float64 if dt in ("float16", "bfloat16") else dt) for g_ in rng]
        x = mk(xs[r], dt)
        for kind in ("sum", "max", "min"):
            y = getattr(D, "all_" + kind)(x)
            assert y.dtype == x.dtype and y.shape == x.shape, (kind, dt, size)
            np.testing.assert_array_equal(to_np(y), np_reduce(xs, kind, dt), err_msg=f"all_{kind} {dt} {size}")
        y = D.all_gather(x)
        np.testing.assert_array_equal(to_np(y), np.concatenate([to_np(mk(v, dt)) for v in xs]), err_msg=f"all_gather {dt} {size}")
        # rank k's input for sum_scatter: n blocks that differ
        zs = [np.concatenate([(~v if b % 2 else v) if dt == "bool_" else v + b for b in range(n)]) for v in xs]
        y = D.sum_scatter(mk(zs[r], dt))
        np.testing.assert_array_equal(to_np(y), np_reduce(zs, "sum", dt)[r * size:(r + 1) * size],
                                      err_msg=f"sum_scatter {dt} {size}")
def noisy(k, size):
    """Rank k's inexact float32 input, NaN at every 97th element on rank 0."""
    v = np.random.default_rng(size + k).standard_normal(size).astype(np.float32)
    if k == 0:
        v[::97] = np.nan
    return v


for size in (5000, 600001):  # inexact sums and NaN maxima: the same bits on every rank
    for y in (D.all_sum(mx.array(noisy(r, size))), D.all_max(mx.array(noisy(r, size))),
              D.all_min(mx.array(noisy(r, size)))):
        every = np.array(D.all_gather(y.reshape(1, -1)))
        assert (every.view(np.uint32) == every[:1].view(np.uint32)).all(), size
    clean = [np.nan_to_num(noisy(k, size)) for k in range(n)]
    np.testing.assert_allclose(np.array(D.all_sum(mx.array(clean[r]))), np.sum(clean, axis=0), rtol=1e-5, atol=1e-5)

# ---- sums that overflow wrap as NumPy's, small (in the agreement message) and
# large (round the ring; Open MPI's own op for 8- and 16-bit integers saturates)
for dt in ("int8", "uint8", "int16", "uint16", "int32", "uint64"):
    for size in (10, 3000, 30000):
        info = np.iinfo(dt)
        xs = [np.random.default_rng(50 + k).integers(info.max // 2, info.max, size, dtype=dt) for k in range(n)]
        got = np.array(D.all_sum(mx.array(xs[r])))
        np.testing.assert_array_equal(got, np.sum(np.stack(xs), axis=0, dtype=dt), err_msg=f"all_sum {dt} {size}")
        got = np.array(D.sum_scatter(mx.array(np.concatenate([xs[r]] * n))))
        np.testing.assert_array_equal(got, np.sum(np.stack(xs), axis=0, dtype=dt), err_msg=f"sum_scatter {dt} {size}")

# ---- layouts: 0-d, empty, transposed, broadcast, negative strides -------------
x0 = mx.array(float(r + 1))
assert D.all_sum(x0).item() == n * (n + 1) / 2
assert D.all_gather(x0).shape == (n,)
np.testing.assert_array_equal(np.array(D.all_gather(x0)), np.arange(1, n + 1, dtype=np.float32))
e = mx.zeros((0, 3))
assert D.all_sum(e).shape == (0, 3) and D.all_gather(e).shape == (0, 3)
base = [rank_data(k, "float32", (4, 5)) for k in range(n)]
t = mx.array(base[r]).T
np.testing.assert_array_equal(np.array(D.all_sum(t)), sum(b.T for b in base))
np.testing.assert_array_equal(np.array(D.all_gather(t)), np.concatenate([b.T for b in base]))
flip = mx.array(base[r])[::-1, ::2]
np.testing.assert_array_equal(np.array(D.all_max(flip)), np.max([b[::-1, ::2] for b in base], axis=0))
bc = mx.broadcast_to(mx.array([1.0, 2.0]) * (r + 1), (3, 2))
np.testing.assert_array_equal(np.array(D.all_sum(bc)), np.broadcast_to(np.array([1.0, 2.0]) * n * (n + 1) / 2, (3, 2)))
# lazy nodes in a larger graph, evaluated together
z = D.all_sum(mx.exp(mx.array(base[r]))) + 1
np.testing.assert_allclose(np.array(z), sum(np.exp(b) for b in base) + 1, rtol=1e-6)

# ---- send / recv ----------------------------------------------------------------
nxt, prv = (r + 1) % n, (r - 1) % n
msg = mx.arange(6, dtype=mx.int32).reshape(2, 3) + 100 * r
if r % 2 == 0:
    mx.eval(D.send(msg, nxt))
    got = D.recv((2, 3), mx.int32, prv)
else:
    got = D.recv_like(msg, prv)
    mx.eval(got)
    mx.eval(D.send(msg, nxt))
np.testing.assert_array_equal(np.array(got), np.arange(6).reshape(2, 3) + 100 * prv)
# bfloat16 and a transposed send
if r == 0:
    mx.eval(D.send(mx.array(base[0]).astype(mx.bfloat16).T, 1))
elif r == 1:
    got = D.recv((5, 4), mx.bfloat16, 0)
    np.testing.assert_array_equal(to_np(got), base[0].T)
# a mismatch: the receiver raises naming both shapes, the sender completes
if r == 0:
    mx.eval(D.send(mx.ones((3,)), 1))
elif r == 1:
    try:
        mx.eval(D.recv((4,), mx.float32, 0))
        raise AssertionError("no error")
    except ValueError as err:
        s = str(err)
        assert "[recv]" in s and "shape (4,)" in s and "shape (3,)" in s, s
# to itself (as MLX): the send evaluated first, a small message
mine = D.send(msg * 2, r)
mx.eval(mine)
np.testing.assert_array_equal(np.array(D.recv_like(msg, r)), np.array(msg) * 2)
for bad, call in [("Invalid destination", lambda: D.send(msg, n)), ("Invalid source", lambda: D.recv((1,), mx.float32, -1))]:
    refused(call, ValueError, bad)

# ---- disagreements are reported with both ranks' shapes -------------------------
# (the second: messages of 1 and 5 pieces; the group stays usable)
for other in ((3,), (64, 64)):
    try:
        mx.eval(D.all_sum(mx.ones((2, 3)) if r == 0 else mx.ones(other)))
        raise AssertionError("no error")
    except ValueError as err:
        s = str(err)
        assert "[all_sum]" in s and "rank 0 has a float32 array of shape (2, 3)" in s and f"shape {other}" in s, s
    assert D.all_sum(mx.full((64, 64), r)).sum().item() == 4096 * n * (n - 1) // 2
try:
    mx.eval(D.all_gather(mx.ones((2,), dtype=mx.float32 if r == 0 else mx.int32)))
    raise AssertionError("no error")
except ValueError as err:
    assert "int32 array of shape (2,)" in str(err) and "float32 array" in str(err), str(err)
try:
    D.sum_scatter(mx.ones((2 * n + 1, 2)))
    raise AssertionError("no error")
except ValueError as err:
    assert "sum_scatter" in str(err) and "divisible" in str(err)
# the group still works afterwards
assert D.all_sum(mx.array(1)).item() == n

# ---- split groups ---------------------------------------------------------------------
rev = g.split(0, key=n - 1 - r)  # every rank, in reverse order
assert rev.size() == n and rev.rank() == n - 1 - r
np.testing.assert_array_equal(np.array(D.all_gather(mx.array([r]), group=rev)), np.arange(n)[::-1])
halves = g.split(r % 2)
assert halves.size() == len(range(r % 2, n, 2))
assert D.all_sum(mx.array(r), group=halves).item() == sum(range(r % 2, n, 2))
# every collective and send/recv/recv_like on the reversed group (rev rank q is world
# rank n-1-q) and on groups of one, against NumPy, every dtype
q = rev.rank()
order = [n - 1 - k for k in range(n)]  # world ranks by rev rank
solo = g.split(r)
assert solo.size() == 1 and solo.rank() == 0
for dt in DTYPES:
    xs = [rank_data(k, dt, seed=60) for k in range(n)]
    x = mk(xs[r], dt)
    for kind in ("sum", "max", "min"):
        ref = in_dtype(np_reduce(xs, kind, dt), dt)
        y = getattr(D, "all_" + kind)(x, group=rev)
        assert y.dtype == x.dtype and y.shape == x.shape, (kind, dt)
        np.testing.assert_array_equal(to_np(y), ref, err_msg=f"all_{kind} {dt} on rev")
        y = getattr(D, "all_" + kind)(x, group=solo)
        assert y is x
        np.testing.assert_array_equal(to_np(y), to_np(mk(xs[r], dt)), err_msg=f"all_{kind} {dt} on solo")
    np.testing.assert_array_equal(to_np(D.all_gather(x, group=rev)),
                                  np.concatenate([to_np(mk(xs[k], dt)) for k in order]), err_msg=f"all_gather {dt} on rev")
    assert D.all_gather(x, group=solo) is x
    xs2 = [rank_data(k, dt, (2 * n, 3), seed=70) for k in range(n)]
    y = D.sum_scatter(mk(xs2[r], dt), group=rev)
    assert y.dtype == x.dtype and y.shape == (2, 3)
    ref = in_dtype(np_reduce(xs2, "sum", dt)[2 * q:2 * q + 2], dt)  # the block of this rank's rank in rev
    np.testing.assert_array_equal(to_np(y), ref, err_msg=f"sum_scatter {dt} on rev")
    x2 = mk(xs2[r], dt)
    assert D.sum_scatter(x2, group=solo) is x2
    # a ring in rev's ranks: q sends to q+1 and receives from q-1 (world ranks n-1-q-1, n-1-q+1)
    qn, qp = (q + 1) % n, (q - 1) % n
    if q % 2 == 0:
        mx.eval(D.send(x, qn, group=rev))
        got = D.recv(x.shape, x.dtype, qp, group=rev)
    else:
        got = D.recv_like(x, qp, group=rev)
        mx.eval(got)
        mx.eval(D.send(x, qn, group=rev))
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_array_equal(to_np(got), to_np(mk(xs[order[qp]], dt)), err_msg=f"send/recv {dt} on rev")
    # rev's ranks, not the world's: rev rank 0 (world n-1) sends to rev rank n-1 (world 0)
    if q == 0:
        mx.eval(D.send(x, n - 1, group=rev))
    elif q == n - 1:
        np.testing.assert_array_equal(to_np(D.recv_like(x, 0, group=rev)), to_np(mk(xs[n - 1], dt)),
                                      err_msg=f"recv_like {dt} on rev")
# send/recv on a group of one are errors, as on the singleton group; ranks are rev's
for call, frag in [(lambda: D.send(x, 0, group=solo), "Cannot send to a singleton group"),
                   (lambda: D.recv((1,), mx.float32, 0, group=solo), "Cannot recv from a singleton group"),
                   (lambda: D.recv_like(x, 0, group=solo), "Cannot recv from a singleton group"),
                   (lambda: D.send(x, n, group=rev), "Invalid destination"),
                   (lambda: D.recv_like(x, -1, group=rev), "Invalid source")]:
    refused(call, ValueError, frag)
# collectives on rev and on the world group in one eval
xw = mx.array(rank_data(r, "int32", seed=80))
xsw = [rank_data(k, "int32", seed=80) for k in range(n)]
both = [D.all_sum(xw, group=rev), D.all_gather(xw), D.all_max(xw * 2, group=rev), D.all_gather(xw, group=rev)]
mx.eval(*both)
np.testing.assert_array_equal(np.array(both[0]), np.sum(xsw, axis=0))
np.testing.assert_array_equal(np.array(both[1]), np.concatenate(xsw))
np.testing.assert_array_equal(np.array(both[2]), np.max(xsw, axis=0) * 2)
np.testing.assert_array_equal(np.array(both[3]), np.concatenate([xsw[k] for k in order]))

# ---- stream=: whatever names a CPU stream, the same results ------------------------
comm = mx.new_stream(mx.cpu)
STREAMS = {"DeviceType": mx.cpu, "Device": mx.Device(mx.cpu), "default": mx.default_stream(mx.cpu),
           "new": comm, "thread-local": mx.new_thread_local_stream(mx.cpu)}
sx = [rank_data(k, "float32") for k in range(n)]
sz = [rank_data(k, "float32", (2 * n, 3), seed=5) for k in range(n)]
for sname, st in STREAMS.items():
    x = mx.array(sx[r])
    for kind in ("sum", "max", "min"):
        y = getattr(D, "all_" + kind)(x, stream=st)
        np.testing.assert_array_equal(np.array(y), np_reduce(sx, kind, "float32"), err_msg=f"all_{kind} {sname}")
    np.testing.assert_array_equal(np.array(D.all_gather(x, stream=st)), np.concatenate(sx), err_msg=sname)
    np.testing.assert_array_equal(np.array(D.sum_scatter(mx.array(sz[r]), stream=st)),
                                  np.sum(sz, axis=0)[2 * r:2 * r + 2], err_msg=f"sum_scatter {sname}")
    m = mx.arange(6, dtype=mx.int32).reshape(2, 3) + 100 * r
    if r % 2 == 0:
        mx.eval(D.send(m, nxt, stream=st))
        got = D.recv((2, 3), mx.int32, prv, stream=st)
    else:
        got = D.recv_like(m, prv, stream=st)
        mx.eval(got)
        mx.eval(D.send(m, nxt, stream=st))
    np.testing.assert_array_equal(np.array(got), np.arange(6).reshape(2, 3) + 100 * prv, err_msg=f"send/recv {sname}")
# collectives on the new stream beside collectives and compute on the default one, one eval
xa = mx.array(sx[r])
big = mx.array(np.eye(64, dtype=np.float32) * (r + 1))
parts = [D.all_sum(xa, stream=comm), D.all_max(xa), D.all_gather(xa * 2, stream=comm), big @ big]
mx.eval(*parts)
np.testing.assert_array_equal(np.array(parts[0]), np.sum(sx, axis=0))
np.testing.assert_array_equal(np.array(parts[1]), np.max(sx, axis=0))
np.testing.assert_array_equal(np.array(parts[2]), np.concatenate(sx) * 2)
np.testing.assert_array_equal(np.array(parts[3]), np.eye(64) * (r + 1) ** 2)
with mx.stream(comm):  # the default stream set by the context
    np.testing.assert_array_equal(np.array(D.all_sum(xa)), np.sum(sx, axis=0))
# the rules build their nodes on the collective's stream: a gradient through it
for name in ("all_sum", "all_max", "all_min"):
    fn = getattr(D, name)
    want = mx.grad(lambda v: mx.sum(mx.sin(fn(v))))(xa)
    got = mx.grad(lambda v: mx.sum(mx.sin(fn(v, stream=comm))))(xa)
    np.testing.assert_array_equal(np.array(got), np.array(want), err_msg=name)
# a bad stream is refused when the node is built (no message is sent), on every collective
BAD = [("cpu", TypeError, "[stream] Expected a Stream, ThreadLocalStream, Device, DeviceType or None."),
       (mx.gpu, ValueError, "The requested device is not available"),
       (mx.Device(mx.gpu), ValueError, "The requested device is not available")]
CALLS = {"all_sum": lambda st: D.all_sum(xa, stream=st), "all_max": lambda st: D.all_max(xa, stream=st),
         "all_min": lambda st: D.all_min(xa, stream=st), "all_gather": lambda st: D.all_gather(xa, stream=st),
         "sum_scatter": lambda st: D.sum_scatter(mx.array(sz[r]), stream=st),
         "send": lambda st: D.send(xa, nxt, stream=st), "recv": lambda st: D.recv((3, 4), mx.float32, prv, stream=st),
         "recv_like": lambda st: D.recv_like(xa, prv, stream=st)}
for bad, exc, frag in BAD:
    for cname, call in CALLS.items():
        refused(lambda: call(bad), exc, frag)
assert D.all_sum(mx.array(1)).item() == n  # nothing was left half-sent
# on a group of one (solo, above) the collectives return x itself, and refuse the same bad streams
for cname in ("all_sum", "all_max", "all_min", "all_gather", "sum_scatter"):
    assert getattr(D, cname)(xa, group=solo, stream=comm) is xa
    for bad, exc, frag in BAD:
        refused(lambda: getattr(D, cname)(xa, group=solo, stream=bad), exc, frag)

def f64(v):
    return mx.array(v, dtype=mx.float64)


# ---- derivatives against finite differences (float64) --------------------------
def fd_check(loss, x_np, rtol=1e-6, atol=1e-7):
    """loss(x) must be the same on every rank. Compares this rank's gradient
    with central differences taken one rank and element at a time."""
    x = f64(x_np)
    gr = np.array(mx.grad(loss)(x))
    num = np.zeros_like(x_np)
    eps = 1e-6
    for p in range(n):
        for i in range(x_np.size):
            vals = []
            for sgn in (1, -1):
                xp = x_np.copy().reshape(-1)
                if p == r:
                    xp[i] += sgn * eps
                vals.append(loss(f64(xp.reshape(x_np.shape))).item())
            if p == r:
                num.reshape(-1)[i] = (vals[0] - vals[1]) / (2 * eps)
    np.testing.assert_allclose(gr, num, rtol=rtol, atol=atol)


c = np.random.default_rng(3 + r).standard_normal((2, 3))
xv = np.random.default_rng(9 + r).standard_normal((2, 3))
fd_check(lambda x: mx.sum(mx.sin(D.all_sum(x * f64(c)))), xv)
fd_check(lambda x: mx.sum(mx.sin(D.all_max(x))), xv)
fd_check(lambda x: mx.sum(mx.cos(D.all_min(x) * 2)), xv)
fd_check(lambda x: mx.sum(mx.sin(D.all_gather(x)) * mx.arange(2 * n * 3).reshape(2 * n, 3)), xv)
x4 = np.random.default_rng(11 + r).standard_normal((2 * n, 3))
fd_check(lambda x: D.all_sum(mx.sum(mx.sin(D.sum_scatter(x)) * (r + 1))), x4)
# jvp: the tangent of the result against a finite difference of the result
for name in ("all_sum", "all_max", "all_min", "all_gather"):
    f = getattr(D, name)
    tv = np.random.default_rng(21 + r).standard_normal((2, 3))
    (out,), (tan,) = mx.jvp(lambda x: [f(x)], [f64(xv)], [f64(tv)])
    hi, lo = f(f64(xv + 1e-6 * tv)), f(f64(xv - 1e-6 * tv))
    np.testing.assert_allclose(np.array(tan), (np.array(hi) - np.array(lo)) / 2e-6, rtol=1e-6, atol=1e-7,
                               err_msg=name)
(_, ), (tan,) = mx.jvp(lambda x: [D.sum_scatter(x)], [f64(x4)], [f64(x4 * 2)])
np.testing.assert_allclose(np.array(tan), 2 * np.array(D.sum_scatter(f64(x4))), rtol=1e-12)

# ---- vmap against a loop ----------------------------------------------------------
xb = mx.array(np.random.default_rng(30 + r).standard_normal((4, 2, 3)).astype(np.float32))
for name in ("all_sum", "all_max", "all_min", "all_gather"):
    f = getattr(D, name)
    for axis in (0, 1, 2):
        got = mx.vmap(f, in_axes=axis, out_axes=0)(mx.moveaxis(xb, 0, axis))
        ref = mx.stack([f(xb[i]) for i in range(4)])
        np.testing.assert_array_equal(np.array(got), np.array(ref), err_msg=f"{name} axis {axis}")
got = mx.vmap(D.all_gather)(mx.arange(3.0) + r)  # 0-d examples
np.testing.assert_array_equal(np.array(got), np.stack([np.arange(n) + i for i in range(3)]).astype(np.float32))
xs4 = mx.array(np.random.default_rng(40 + r).standard_normal((3, 2 * n, 2)).astype(np.float32))
got = mx.vmap(D.sum_scatter, in_axes=1, out_axes=1)(mx.moveaxis(xs4, 0, 1))
ref = mx.stack([D.sum_scatter(xs4[i]) for i in range(3)], axis=1)
np.testing.assert_array_equal(np.array(got), np.array(ref))

# ---- vmap of send against a loop: ranks 0 and 1 send each other a batch ------------
# (Send's rule sends the batch as one message, in the layout of the batched input:
# the peer receives that shape; the loop sends and receives one message an example)
if r < 2:
    peer, B = 1 - r, 4
    mine_b = np.random.default_rng(50 + r).standard_normal((B, 2, 3)).astype(np.float32)
    theirs_b = np.random.default_rng(50 + peer).standard_normal((B, 2, 3)).astype(np.float32)

    def exchange(send_it, recv_it):
        """Rank 0 sends then receives, rank 1 the other way round; each message
        evaluated alone, in order."""
        if r == 0:
            out = send_it()
            got = recv_it()
        else:
            got = recv_it()
            out = send_it()
        return out, got

    def loop_send(xs, fn):
        outs = []
        for v in xs:
            outs.append(fn(v))
            mx.eval(outs[-1])
        return np.stack([np.array(o) for o in outs])

    def loop_recv(k, shape):
        return np.stack([np.array(D.recv(shape, mx.float32, peer)) for _ in range(k)])

    def vmapped(fn, *xs, **kw):
        out = mx.vmap(fn, **kw)(*xs)
        mx.eval(out)
        return np.array(out)

    body = lambda v: D.send(mx.sin(v) * 2, peer) + 1  # compute before and after the send
    loop_out, loop_got = exchange(lambda: loop_send(mine_b, lambda v: body(mx.array(v))),
                                  lambda: loop_recv(B, (2, 3)))
    np.testing.assert_allclose(loop_got, np.sin(theirs_b) * 2, rtol=1e-6)
    v_out, v_got = exchange(lambda: vmapped(body, mx.array(mine_b)), lambda: np.array(D.recv((B, 2, 3), mx.float32, peer)))
    np.testing.assert_array_equal(v_out, loop_out)
    np.testing.assert_array_equal(v_got, loop_got)
    # the batch on another axis: the message keeps the input's layout; the peer
    # addressed by its rank in the reversed group
    for axis in (1, 2):
        xin = mx.moveaxis(mx.array(mine_b), 0, axis)
        v_out, v_got = exchange(lambda: vmapped(lambda v: D.send(v, n - 1 - peer, group=rev), xin, in_axes=axis,
                                                out_axes=0),
                                lambda: np.array(D.recv(np.moveaxis(theirs_b, 0, axis).shape, mx.float32, n - 1 - peer,
                                                        group=rev)))
        np.testing.assert_array_equal(v_out, mine_b, err_msg=f"send axis {axis}")
        np.testing.assert_array_equal(np.moveaxis(v_got, axis, 0), theirs_b, err_msg=f"recv axis {axis}")
    # vmap of vmap: one (2, B, 3) message
    v_out, v_got = exchange(lambda: vmapped(mx.vmap(lambda v: D.send(v, peer)), mx.array(mine_b.transpose(1, 0, 2))),
                            lambda: np.array(D.recv((2, B, 3), mx.float32, peer)))
    np.testing.assert_array_equal(v_out, mine_b.transpose(1, 0, 2))
    np.testing.assert_array_equal(v_got, theirs_b.transpose(1, 0, 2))
    # a send of an unbatched input inside vmap is one message of the example's shape
    y = mx.array(np.full((3,), r, np.float32))
    v_out, v_got = exchange(lambda: vmapped(lambda v, w: v + D.send(w, peer), mx.array(mine_b[:, 0]), y,
                                            in_axes=(0, None)),
                            lambda: np.array(D.recv((3,), mx.float32, peer)))
    np.testing.assert_array_equal(v_out, mine_b[:, 0] + r)
    np.testing.assert_array_equal(v_got, np.full((3,), peer, np.float32))

print("OK", r, flush=True)
