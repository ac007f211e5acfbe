"""Run on 2 ranks by test_distributed_mpi.py: nn.average_gradients, data-
parallel training against one process on the whole batch, tensor-parallel
linear layers (float and quantized) and fully_shard against the unsharded
model."""
import numpy as np

import ember.core as mx
import ember.nn as nn
import ember.optimizers as optim
from ember.utils import tree_flatten

D = mx.distributed
g = D.init()
r, n = g.rank(), g.size()


def f32(a):
    return np.array(a.astype(mx.float32))


# ---- average_gradients: buckets, mixed dtypes, the tree kept --------------------
def grads_of(rank):
    rng = np.random.default_rng(rank)
    return {"a": mx.array(rng.standard_normal((3, 4)).astype(np.float32)),
            "b": [mx.array(rng.integers(-4, 4, (5,)).astype(np.float16)),
                  mx.array(rng.standard_normal((2, 2)).astype(np.float32))],
            "c": mx.array(rng.integers(-4, 4, (7,)).astype(np.float32)).astype(mx.bfloat16),
            "d": (mx.array(rng.standard_normal((1,)).astype(np.float64)),)}


mine = grads_of(r)
everyone = [grads_of(k) for k in range(n)]
for size in (0, 1, 16, 40, 32 * 1024 ** 2):
    avg = nn.average_gradients(mine, all_reduce_size=size)
    assert isinstance(avg["b"], list) and set(avg) == {"a", "b", "c", "d"}
    for (path, got), *refs in zip(tree_flatten(avg), *[tree_flatten(e) for e in everyone]):
        want = np.mean([f32(v) for _, v in refs], axis=0)
        assert got.dtype == refs[0][1].dtype, (path, got.dtype)
        assert got.shape == refs[0][1].shape
        np.testing.assert_allclose(f32(got), want, rtol=1e-6, atol=1e-6, err_msg=f"{path} {size}")
    # communication_stream: a new stream, a device type, the default stream: the same bits
    for st in (mx.new_stream(mx.cpu), mx.cpu, mx.default_stream(mx.cpu)):
        on = nn.average_gradients(mine, all_reduce_size=size, communication_stream=st)
        for (path, a), (_, b) in zip(tree_flatten(on), tree_flatten(avg)):
            assert a.dtype == b.dtype and a.shape == b.shape, (path, st)
            np.testing.assert_array_equal(f32(a), f32(b), err_msg=f"{path} {size} {st}")
for bad, exc, frag in (("cpu", TypeError, "[stream] Expected a Stream"),
                       (mx.gpu, ValueError, "The requested device is not available")):
    for size in (0, 40):
        try:
            nn.average_gradients(mine, all_reduce_size=size, communication_stream=bad)
            raise AssertionError(f"no error for communication_stream={bad!r}")
        except exc as err:
            assert frag in str(err), str(err)

# ---- data-parallel training = one process on the concatenated batch --------------
rng = np.random.default_rng(100)
X = rng.standard_normal((8 * n, 4)).astype(np.float32)
Y = rng.standard_normal((8 * n, 2)).astype(np.float32)


def make_mlp():
    mx.random.seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))


def mse(model, x, y):
    return mx.mean((model(x) - y) ** 2)


par, ref = make_mlp(), make_mlp()
opt_p, opt_r = optim.SGD(learning_rate=0.1, momentum=0.9), optim.SGD(learning_rate=0.1, momentum=0.9)
step_p = nn.value_and_grad(par, mse)
step_r = nn.value_and_grad(ref, mse)
lo, hi = r * 8, (r + 1) * 8
comm_stream = mx.new_stream(mx.cpu)  # the gradients' sums on a stream of their own
for _ in range(5):
    _, gp = step_p(par, mx.array(X[lo:hi]), mx.array(Y[lo:hi]))
    opt_p.update(par, nn.average_gradients(gp, all_reduce_size=64, communication_stream=comm_stream))
    _, gr = step_r(ref, mx.array(X), mx.array(Y))
    opt_r.update(ref, gr)
    mx.eval(par.parameters(), ref.parameters())
for (path, a), (_, b) in zip(tree_flatten(par.parameters()), tree_flatten(ref.parameters())):
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6, err_msg=path)
# and the ranks agree
for _, a in tree_flatten(par.parameters()):
    np.testing.assert_array_equal(np.array(D.all_max(a)), np.array(a))

# ---- tensor parallel: all-to-sharded then sharded-to-all -------------------------
mx.random.seed(1)
full = nn.Sequential(nn.Linear(6, 4 * n), nn.ReLU(), nn.Linear(4 * n, 3))
tp = nn.Sequential(nn.layers.distributed.shard_linear(full.layers[0], "all-to-sharded"), nn.ReLU(),
                   nn.layers.distributed.shard_linear(full.layers[2], "sharded-to-all"))
assert isinstance(tp.layers[0], nn.AllToShardedLinear) and isinstance(tp.layers[2], nn.ShardedToAllLinear)
assert tp.layers[0].weight.shape == (4, 6) and tp.layers[2].weight.shape == (3, 4)
assert "input_dims=6, output_dims=%d" % (4 * n) in repr(tp.layers[0])
x = mx.array(np.random.default_rng(7).standard_normal((5, 6)).astype(np.float32))
np.testing.assert_allclose(np.array(tp(x)), np.array(full(x)), rtol=1e-5, atol=1e-6)
# the gradients of the shards are the shards of the whole model's gradients
_, g_full = nn.value_and_grad(full, lambda m, v: mx.sum(mx.sin(m(v))))(full, x)
_, g_tp = nn.value_and_grad(tp, lambda m, v: mx.sum(mx.sin(m(v))))(tp, x)
w0 = np.array(g_full["layers"][0]["weight"])[4 * r:4 * (r + 1)]
np.testing.assert_allclose(np.array(g_tp["layers"][0]["weight"]), w0, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(np.array(g_tp["layers"][0]["bias"]), np.array(g_full["layers"][0]["bias"])[4 * r:4 * (r + 1)],
                           rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(np.array(g_tp["layers"][2]["weight"]),
                           np.array(g_full["layers"][2]["weight"])[:, 4 * r:4 * (r + 1)], rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(np.array(g_tp["layers"][2]["bias"]), np.array(g_full["layers"][2]["bias"]), rtol=1e-5,
                           atol=1e-6)
gx_full = mx.grad(lambda v: mx.sum(mx.sin(full(v))))(x)
gx_tp = mx.grad(lambda v: mx.sum(mx.sin(tp(v))))(x)
np.testing.assert_allclose(np.array(gx_tp), np.array(gx_full), rtol=1e-5, atol=1e-6)
# shard_inplace of a fused weight (3 segments): each rank holds its part of each
lin = nn.Linear(4, 6 * n)
w = np.array(lin.weight)
nn.layers.distributed.shard_inplace(lin, "all-to-sharded", segments=3)
parts = np.split(w, 3)
np.testing.assert_array_equal(np.array(lin.weight), np.concatenate([np.split(p, n)[r] for p in parts]))

# ---- quantized tensor parallel: the same outputs as the unsharded QuantizedLinear --
# (at float32 tolerances: the matrix-vector kernel's float lanes, since a
# shard's K may take another path than the whole layer's under int8 activations)
mx._set_qmm_int8(0)
QA, QS = nn.QuantizedAllToShardedLinear, nn.QuantizedShardedToAllLinear


def quantized(inp, out, bias, mode, seed):
    mx.random.seed(seed)
    q = nn.QuantizedLinear(inp, out, bias=bias, mode=mode)
    if bias:
        q.bias = mx.random.normal((out,))
    return q


xq = mx.array(np.random.default_rng(8).standard_normal((5, 64)).astype(np.float32))
for mode in ("affine", "mxfp4"):
    for bias in (True, False):
        # hidden/n columns per rank: whole quantization groups (64 for affine, 32 for mxfp4)
        hidden = 64 * n
        q1, q2 = quantized(64, hidden, bias, mode, 3), quantized(hidden, 6, bias, mode, 4)
        s1 = nn.layers.distributed.shard_linear(q1, "all-to-sharded")
        s2 = nn.layers.distributed.shard_linear(q2, "sharded-to-all")
        assert type(s1) is QA and type(s2) is QS, (type(s1), type(s2))
        assert (s1.group_size, s1.bits, s1.mode) == (q1.group_size, q1.bits, mode)
        rows, cols = hidden // n, hidden // n
        # this rank's rows (all-to-sharded) or columns (sharded-to-all) of the codes, scales, biases
        for k, v in q1.parameters().items():
            want = np.array(v)[rows * r:rows * (r + 1)]
            np.testing.assert_array_equal(np.array(s1[k]), want, err_msg=f"{mode} {bias} s1 {k}")
        pack_w, pack_s = q2.weight.shape[1] // n, q2.scales.shape[1] // n
        for k, v in q2.parameters().items():
            if k == "bias":
                want = np.array(v)
            else:
                w = pack_w if k == "weight" else pack_s
                want = np.array(v)[:, w * r:w * (r + 1)]
            np.testing.assert_array_equal(np.array(s2[k]), want, err_msg=f"{mode} {bias} s2 {k}")
        assert repr(s1) == (f"QuantizedAllToShardedLinear(input_dims=64, output_dims={hidden}, bias={bias}, "
                            f"group_size={q1.group_size}, bits=4, mode={mode})"), repr(s1)
        assert repr(s2) == (f"QuantizedShardedToAllLinear(input_dims={hidden}, output_dims=6, bias={bias}, "
                            f"group_size={q2.group_size}, bits=4, mode={mode})"), repr(s2)
        assert not s1.trainable_parameters() and not s2.trainable_parameters()
        # all-to-sharded: exactly this rank's slice of the output
        np.testing.assert_array_equal(np.array(s1(xq)), np.array(q1(xq))[:, rows * r:rows * (r + 1)])
        # sharded-to-all: this rank's slice of the input, the whole output on every rank
        h = nn.relu(q1(xq))
        y2 = s2(h[:, cols * r:cols * (r + 1)])
        np.testing.assert_allclose(np.array(y2), np.array(q2(h)), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(np.array(D.all_max(y2)), np.array(y2))
        # the two together, the classmethods directly, and the input's gradient
        full_q = nn.Sequential(q1, nn.ReLU(), q2)
        tp_q = nn.Sequential(QA.from_quantized_linear(q1), nn.ReLU(), QS.from_quantized_linear(q2, group=g))
        np.testing.assert_allclose(np.array(tp_q(xq)), np.array(full_q(xq)), rtol=1e-5, atol=1e-5)
        gx_full = mx.grad(lambda v: mx.sum(mx.sin(full_q(v))))(xq)
        gx_tp = mx.grad(lambda v: mx.sum(mx.sin(tp_q(v))))(xq)
        np.testing.assert_allclose(np.array(gx_tp), np.array(gx_full), rtol=1e-4, atol=1e-5)
# a fused quantized weight (3 segments): each rank computes its part of each segment
qf = quantized(64, 6 * n, True, "affine", 5)
sf = nn.layers.distributed.shard_linear(qf, "all-to-sharded", segments=3)
parts = np.split(np.array(qf(xq)), 3, axis=1)
np.testing.assert_array_equal(np.array(sf(xq)), np.concatenate([np.split(p, n, axis=1)[r] for p in parts], axis=1))
# shard_inplace of a QuantizedLinear: rows (bias too), then the whole layer is sharded-to-all
qi = quantized(64 * n, 4, True, "affine", 6)
before = {k: np.array(v) for k, v in qi.parameters().items()}
nn.layers.distributed.shard_inplace(qi, "sharded-to-all")
assert type(qi) is nn.QuantizedLinear and qi.weight.shape == (4, 8) and qi.scales.shape == (4, 1)
for k, v in qi.parameters().items():
    want = before[k] if k == "bias" else np.split(before[k], n, axis=1)[r]
    np.testing.assert_array_equal(np.array(v), want, err_msg=k)
qr = quantized(64, 4 * n, True, "affine", 7)
before = {k: np.array(v) for k, v in qr.parameters().items()}
nn.layers.distributed.shard_inplace(qr, "all-to-sharded")
for k, v in qr.parameters().items():
    np.testing.assert_array_equal(np.array(v), np.split(before[k], n, axis=0)[r], err_msg=k)
# constructors: the sharded shapes, and what does not split
a, b = QA(64, 4 * n), QS(64 * n, 4, bias=False)
assert a.weight.shape == (4, 8) and a.bias.shape == (4,) and b.weight.shape == (4, 8) and "bias" not in b
assert "input_dims=64, output_dims=%d," % (4 * n) in repr(a) and "input_dims=%d, output_dims=4," % (64 * n) in repr(b)
for make in (lambda: QA(64, 2 * n + 1), lambda: QS(64 * n + 1, 4), lambda: QS(64, 4),
             lambda: nn.layers.distributed.shard_linear(quantized(64, 4, True, "affine", 8), "sharded-to-all")):
    try:
        make()
        raise AssertionError("no error")
    except ValueError:
        pass

# ---- fully_shard: the same outputs, and training equal to data parallel ---------
fs_model, dp_model = make_mlp(), make_mlp()
fs = nn.fully_shard(fs_model)
assert isinstance(fs, nn.FullyShardedModule) and "num_sharded_params=4" in repr(fs)
assert fs.module.layers[0].weight.shape == (8 // n, 4)
np.testing.assert_allclose(np.array(fs(mx.array(X))), np.array(dp_model(mx.array(X))), rtol=1e-6, atol=1e-6)
opt_f, opt_d = optim.SGD(learning_rate=0.1), optim.SGD(learning_rate=0.1)
for _ in range(3):
    _, gf = nn.value_and_grad(fs, mse)(fs, mx.array(X[lo:hi]), mx.array(Y[lo:hi]))
    opt_f.update(fs, gf)
    _, gd = nn.value_and_grad(dp_model, mse)(dp_model, mx.array(X), mx.array(Y))
    opt_d.update(dp_model, gd)
    mx.eval(fs.parameters(), dp_model.parameters())
for (path, a), (_, b) in zip(tree_flatten(fs.module.parameters()), tree_flatten(dp_model.parameters())):
    k = b.shape[0] // n
    np.testing.assert_allclose(np.array(a), np.array(b)[r * k:(r + 1) * k], rtol=1e-5, atol=1e-6, err_msg=path)
# compute_dtype: gathered in bfloat16 for the call, shards kept in float32
fs16 = nn.fully_shard(make_mlp(), compute_dtype=mx.bfloat16)
y16 = fs16(mx.array(X).astype(mx.bfloat16))
assert y16.dtype == mx.bfloat16 and fs16.module.layers[0].weight.dtype == mx.float32
try:
    nn.FullyShardedModule(nn.Linear(3, 2 * n + 1))
    raise AssertionError("no error")
except ValueError as err:
    assert "divisible" in str(err), str(err)

print("OK", r, flush=True)
