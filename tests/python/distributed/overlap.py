"""Run on 2 ranks by test_distributed_mpi.py: collectives evaluated beside
independent compute. eval hands a collective to its communication thread
when other nodes are ready to run meanwhile, and runs it on the calling
thread when nothing could overlap it (core._eval_stats counts both);
results, the order of collectives across ranks and errors from either
thread are checked. Prints "OK <rank>" at the end; any failure raises."""
import numpy as np

import ember.core as mx

D = mx.distributed
g = D.init()
r, n = g.rank(), g.size()
assert n == 2, n


def stats():
    st = mx._eval_stats()
    return st["comm_offloaded"], st["comm_inline"]


def delta(before):
    now = stats()
    return now[0] - before[0], now[1] - before[1]


rng = np.random.default_rng(7)
a_np = rng.standard_normal((96, 96)).astype(np.float32) / 10
xs = [np.random.default_rng(100 + k).standard_normal((257,)).astype(np.float32) for k in range(n)]


def matmul_chain(a, k=6):
    y = a
    for _ in range(k):
        y = mx.tanh(y @ a)
    return y


def np_chain(a, k=6):
    y = a
    for _ in range(k):
        y = np.tanh(y @ a)
    return y


# ---- nothing to overlap: the collective runs on the evaluating thread ------
b = stats()
s = D.all_sum(mx.array(xs[r]))
mx.eval(s)
np.testing.assert_allclose(np.array(s), xs[0] + xs[1], rtol=1e-6)
assert delta(b) == (0, 1), delta(b)
b = stats()
mx.eval(D.all_sum(mx.array(xs[r]) * 2) + 1)  # upstream and downstream compute only
assert delta(b) == (0, 1), delta(b)
b = stats()
up = mx.array(xs[r]) * 2
tail = mx.exp(D.all_sum(up)) - D.all_sum(mx.array(xs[r]))[0]  # two collectives: the scheduler decides
ref = np.exp(2 * (xs[0] + xs[1])) - (xs[0] + xs[1])[0]
np.testing.assert_allclose(np.array(tail), ref, rtol=1e-5)
assert sum(delta(b)) == 2, delta(b)

# ---- beside compute that depends on the collective's input but not on it: overlapped
b = stats()
up = mx.array(xs[r]) * 2
s, side = D.all_sum(up), matmul_chain(mx.array(a_np) + up[0])
mx.eval(s, side)
assert delta(b) == (1, 0), delta(b)
np.testing.assert_allclose(np.array(s), 2 * (xs[0] + xs[1]), rtol=1e-6)
np.testing.assert_allclose(np.array(side), np_chain(a_np + 2 * xs[r][0]), rtol=2e-4, atol=1e-5)

# ---- independent compute: the collective goes to the communication thread --
b = stats()
a = mx.array(a_np)
s = D.all_sum(mx.array(xs[r]))
c = matmul_chain(a)
mx.eval(s, c)
assert delta(b) == (1, 0), delta(b)
np.testing.assert_allclose(np.array(s), xs[0] + xs[1], rtol=1e-6)
np.testing.assert_allclose(np.array(c), np_chain(a_np), rtol=2e-4, atol=1e-5)

# ---- buckets, as average_gradients: each bucket's sum beside the next bucket's
# compute, consumers of the sums waiting for them, several collectives in order
b = stats()
buckets = [mx.array(rng.standard_normal((64, 64)).astype(np.float32) + r) for _ in range(4)]
outs, refs = [], []
prev = None
for k, w in enumerate(buckets):
    h = matmul_chain(w, 3)  # the "backward" of this bucket
    tot = D.all_sum(h)
    gat = D.all_gather(h[:2])
    outs += [tot * 0.5, gat, h]
    prev = tot if prev is None else prev + D.all_max(tot)
outs.append(prev)
mx.eval(*outs)
off, inl = delta(b)
assert off + inl == 11 and off >= 1, (off, inl)
# every rank computes every rank's buckets to check
rng_b = np.random.default_rng(7)
rng_b.standard_normal((96, 96))
bk = [rng_b.standard_normal((64, 64)).astype(np.float32) for _ in range(4)]
hs = [[np_chain(w + k, 3) for w in bk] for k in range(n)]
# (float32 chains: Ember's and NumPy's products, summed in different orders,
# each lie about 1.5e-5 from the float64 chain here)
for j in range(4):
    np.testing.assert_allclose(np.array(outs[3 * j]), 0.5 * (hs[0][j] + hs[1][j]), rtol=1e-4, atol=5e-5)
    np.testing.assert_allclose(np.array(outs[3 * j + 1]), np.concatenate([hs[0][j][:2], hs[1][j][:2]]),
                               rtol=1e-4, atol=5e-5)
    np.testing.assert_allclose(np.array(outs[3 * j + 2]), hs[r][j], rtol=1e-4, atol=5e-5)
tot_ref = [hs[0][j] + hs[1][j] for j in range(4)]
acc = tot_ref[0]
for j in range(1, 4):
    acc = acc + tot_ref[j]
np.testing.assert_allclose(np.array(outs[-1]), acc, rtol=1e-4, atol=1e-4)

# ---- send / recv beside compute ---------------------------------------------
b = stats()
c = matmul_chain(a)
if r == 0:
    t = D.send(mx.arange(10, dtype=mx.int32) * 3, 1)
else:
    t = D.recv((10,), mx.int32, 0)
mx.eval(t, c)
np.testing.assert_array_equal(np.array(t), np.arange(10) * 3)
assert delta(b) == (1, 0), delta(b)

# ---- an error on the communication thread surfaces with its type ------------
c = matmul_chain(a)
bad = D.all_sum(mx.zeros((3,) if r == 0 else (4,)))
b = stats()
try:
    mx.eval(bad, c)
    raise SystemExit("no error")
except ValueError as e:
    assert "all_sum" in str(e) and "(3,)" in str(e) and "(4,)" in str(e), str(e)
assert delta(b)[0] == 1, delta(b)
mx.eval(c)  # the compute is still fine
np.testing.assert_allclose(np.array(c), np_chain(a_np), rtol=2e-4, atol=1e-5)

# ---- an error on the evaluating thread while a collective is in flight ------
s = D.all_sum(mx.array(xs[r]))
failing = mx.linalg.inv(mx.zeros((4, 4)))  # singular: raises when evaluated
try:
    mx.eval(s, failing)
    raise SystemExit("no error")
except ValueError as e:
    assert "inv" in str(e).lower() or "singular" in str(e).lower(), str(e)
mx.eval(s)  # the sum completed (or runs now) on both ranks
np.testing.assert_allclose(np.array(s), xs[0] + xs[1], rtol=1e-6)

# ---- the group still works, and a gradient through a collective beside compute
def loss(w):
    return (D.all_sum(w * w).sum() + (matmul_chain(mx.array(a_np), 2) * w[0]).sum())


w0 = mx.array(xs[r][:8].astype(np.float32))
gw = mx.grad(loss)(w0)
mx.eval(gw)
ref = 2 * xs[r][:8].copy()
ref[0] += np_chain(a_np, 2).sum()
np.testing.assert_allclose(np.array(gw), ref, rtol=1e-4, atol=1e-4)
print("OK", r, flush=True)
