"""``core.distributed`` on one process (the singleton group) and ``nn.layers.distributed``
(sharded linear layers) against NumPy; ``core.compile``."""
import numpy as np
import pytest

from conftest import ember_only, mx

import gradcheck

if mx.__name__.startswith("mlx"):
    import mlx.nn as nn
    import mlx.nn.layers.distributed as dist
else:
    import ember.nn as nn
    import ember.nn.layers.distributed as dist

D = mx.distributed


def test_singleton_group():
    g = D.init()
    assert isinstance(g, D.Group)
    assert (g.rank(), g.size()) == (0, 1)
    assert D.init(strict=False, backend="any").size() == 1
    with pytest.raises(RuntimeError, match="Cannot split the distributed group further"):
        g.split(0)
    with pytest.raises(TypeError):
        D.Group()


@pytest.mark.parametrize("name", ["all_sum", "all_max", "all_min", "all_gather", "sum_scatter"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bfloat16"])
def test_collectives_on_one_process_return_the_input(name, dtype):
    x = mx.arange(6).reshape(2, 3).astype(getattr(mx, dtype))
    y = getattr(D, name)(x, group=D.init())
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(np.array(y.astype(mx.float32)), np.array(x.astype(mx.float32)))


def test_point_to_point_errors():
    x = mx.ones((2,))
    with pytest.raises(ValueError, match="Cannot send to a singleton group"):
        D.send(x, 0)
    with pytest.raises(ValueError, match="Cannot recv from a singleton group"):
        D.recv((2,), mx.float32, 0)
    with pytest.raises(ValueError, match="Cannot recv from a singleton group"):
        D.recv_like(x, 0)


def test_init_errors():
    with pytest.raises(ValueError, match="only valid values for backend.*'bogus'"):
        D.init(backend="bogus")


@ember_only
def test_no_backend():
    # no ring, NCCL or JACCL backend: MPI is Ember's one (tests/python/test_distributed_mpi.py)
    for backend in ("ring", "nccl", "jaccl"):
        assert D.is_available(backend) is False
    with pytest.raises(RuntimeError, match="Couldn't initialize the 'ring' backend"):
        D.init(strict=True, backend="ring")
    assert D.init(backend="nccl").size() == 1


@pytest.mark.parametrize("sharding, cls", [("all-to-sharded", "AllToShardedLinear"),
                                           ("sharded-to-all", "ShardedToAllLinear")])
@pytest.mark.parametrize("bias", [True, False])
def test_shard_linear_on_one_process_is_the_linear(sharding, cls, bias):
    mx.random.seed(0)
    lin = nn.Linear(6, 4, bias=bias)
    sh = dist.shard_linear(lin, sharding, segments=2)
    assert type(sh).__name__ == cls and isinstance(sh, getattr(nn, cls))
    assert sh.weight.shape == (4, 6) and ("bias" in sh) == bias
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    ref = x @ np.array(lin.weight).T + (np.array(lin.bias) if bias else 0)
    np.testing.assert_allclose(np.array(sh(mx.array(x))), ref, rtol=1e-5, atol=1e-5)
    assert f"input_dims=6, output_dims=4, bias={bias}" in repr(sh)


def test_sharded_layers_constructors():
    for cls in (nn.AllToShardedLinear, nn.ShardedToAllLinear):
        layer = cls(5, 3)
        assert layer.weight.shape == (3, 5) and layer.bias.shape == (3,)
        bound = 5 ** -0.5
        assert np.abs(np.array(layer.weight)).max() <= bound


def test_shard_inplace_keeps_the_parameters_on_one_process():
    mx.random.seed(1)
    lin = nn.Linear(4, 6)
    before = {k: np.array(v) for k, v in lin.parameters().items()}
    dist.shard_inplace(lin, "all-to-sharded", segments=3)
    dist.shard_inplace(lin, lambda path, w: (0, [2, 4]) if path == "weight" else None)
    for k, v in lin.parameters().items():
        np.testing.assert_array_equal(np.array(v), before[k])


def test_shard_errors():
    lin = nn.Linear(4, 6)
    with pytest.raises(ValueError, match="Sharding type sharding='rows' not supported"):
        dist.shard_linear(lin, "rows")
    with pytest.raises(ValueError, match="Sharding type"):
        dist.shard_inplace(lin, "cols")
    with pytest.raises(ValueError, match="sharding function should return"):
        dist.shard_inplace(lin, lambda path, w: "axis")


def test_sharded_linear_gradients_float64():
    mx.random.seed(2)
    layer = dist.shard_linear(nn.Linear(3, 2), "all-to-sharded")
    w, b = np.array(layer.weight).astype(np.float64), np.array(layer.bias).astype(np.float64)
    x = np.random.default_rng(1).standard_normal((4, 3))

    def f(xx, ww, bb):
        layer.weight, layer.bias = ww, bb
        return layer(xx)

    gradcheck.check_grads(f, [x, w, b])
    grad_x = mx.grad(lambda xx: dist.sum_gradients(D.init())(xx).sum())(mx.array(x))
    np.testing.assert_array_equal(np.array(grad_x), np.ones_like(x))


# --------------------------------------------------------------------------
# the quantized sharded layers on the singleton group
# --------------------------------------------------------------------------

QUANT_CLASSES = [("all-to-sharded", "QuantizedAllToShardedLinear"),
                 ("sharded-to-all", "QuantizedShardedToAllLinear")]


def _quantized_linear(inp, out, bias, mode="affine", seed=0):
    mx.random.seed(seed)
    q = nn.QuantizedLinear(inp, out, bias=bias, mode=mode)
    if bias:
        q.bias = mx.random.normal((out,))
    return q


@pytest.mark.parametrize("sharding, cls", QUANT_CLASSES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("mode", ["affine", "mxfp4"])
def test_shard_quantized_linear_on_one_process_is_the_layer(sharding, cls, bias, mode):
    q = _quantized_linear(128, 8, bias, mode)
    sh = dist.shard_linear(q, sharding)
    assert type(sh) is getattr(nn, cls) and type(sh) is getattr(nn.layers, cls)
    assert (sh.group_size, sh.bits, sh.mode) == (q.group_size, q.bits, mode)
    assert sorted(sh.parameters()) == sorted(q.parameters())
    for k, v in q.parameters().items():
        assert sh[k].dtype == v.dtype
        np.testing.assert_array_equal(np.array(sh[k]), np.array(v), err_msg=k)
    x = mx.random.normal((3, 128))
    np.testing.assert_array_equal(np.array(sh(x)), np.array(q(x)))
    assert repr(sh) == (f"{cls}(input_dims=128, output_dims=8, bias={bias}, group_size={q.group_size}, "
                        f"bits={q.bits}, mode={mode})")
    # the class method gives the same layer
    direct = getattr(nn, cls).from_quantized_linear(q, group=D.init())
    np.testing.assert_array_equal(np.array(direct(x)), np.array(q(x)))
    # the gradient of the input is the QuantizedLinear's
    gq = mx.grad(lambda v: mx.sum(mx.sin(q(v))))(x)
    gs = mx.grad(lambda v: mx.sum(mx.sin(sh(v))))(x)
    np.testing.assert_allclose(np.array(gs), np.array(gq), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("sharding, cls", QUANT_CLASSES)
def test_quantized_sharded_layers_constructors(sharding, cls):
    import inspect

    C = getattr(nn, cls)
    params = inspect.signature(C).parameters
    assert list(params) == ["input_dims", "output_dims", "bias", "group_size", "bits", "mode", "group"]
    assert [params[k].default for k in ("bias", "group_size", "bits", "mode", "group")] == [True, 64, 4, "affine", None]
    layer = C(128, 6)
    assert layer.weight.dtype == mx.uint32 and layer.weight.shape == (6, 16)
    assert layer.scales.shape == (6, 2) and layer.biases.shape == (6, 2)
    np.testing.assert_array_equal(np.array(layer.bias), np.zeros(6, np.float32))
    assert layer.group.size() == 1
    # the quantized weight dequantizes within the uniform init's bound
    w = mx.dequantize(layer.weight, layer.scales, layer.biases, group_size=64, bits=4)
    assert np.abs(np.array(w)).max() <= 128 ** -0.5 + 1e-6
    assert repr(layer) == f"{cls}(input_dims=128, output_dims=6, bias=True, group_size=64, bits=4, mode=affine)"
    # frozen, and unfreeze leaves them frozen
    assert not layer.trainable_parameters()
    layer.unfreeze()
    assert not layer.trainable_parameters()
    assert sorted(layer.parameters()) == ["bias", "biases", "scales", "weight"]
    fp = C(64, 4, bias=False, group_size=32, bits=8, mode="mxfp8")
    assert sorted(fp.parameters()) == ["scales", "weight"] and fp.weight.shape == (4, 16)
    assert "input_dims=64, output_dims=4, bias=False, group_size=32, bits=8, mode=mxfp8" in repr(fp)
    x = mx.random.normal((2, 64))
    ref = mx.dequantize(fp.weight, fp.scales, group_size=32, bits=8, mode="mxfp8")
    np.testing.assert_allclose(np.array(fp(x)), np.array(x @ ref.T), rtol=1e-4, atol=1e-4)


def test_quantized_sharded_errors():
    with pytest.raises(ValueError):
        nn.QuantizedAllToShardedLinear(100, 4)  # 100 is not a multiple of the group size
    with pytest.raises(ValueError):
        nn.QuantizedShardedToAllLinear(64, 4, mode="bogus")
    with pytest.raises(AttributeError):
        dist.shard_linear(nn.Embedding(4, 8), "all-to-sharded")
    with pytest.raises(ValueError, match="Sharding type"):
        dist.shard_linear(_quantized_linear(64, 4, True), "by-rows")


def test_shard_inplace_quantized_linear_on_one_process():
    q = _quantized_linear(128, 6, True)
    before = {k: np.array(v) for k, v in q.parameters().items()}
    x = mx.random.normal((2, 128))
    y = np.array(q(x))
    dist.shard_inplace(q, "all-to-sharded", segments=3)
    dist.shard_inplace(q, "sharded-to-all")
    assert sorted(q.parameters()) == sorted(before)
    for k, v in q.parameters().items():
        np.testing.assert_array_equal(np.array(v), before[k], err_msg=k)
    np.testing.assert_array_equal(np.array(q(x)), y)
    assert type(q) is nn.QuantizedLinear and not q.trainable_parameters()


# --------------------------------------------------------------------------
# compile
# --------------------------------------------------------------------------

def test_compile_gives_the_function_results():
    def f(x, y=2.0):
        return mx.sin(x) * y + x

    cf = mx.compile(f)
    sf = mx.compile(f, shapeless=True)
    x = np.linspace(-2, 2, 7).astype(np.float32)
    ref = np.sin(x) * 3.0 + x
    for g in (cf, sf):
        np.testing.assert_allclose(np.array(g(mx.array(x), y=3.0)), ref, rtol=1e-6, atol=1e-6)
    # shapeless: other shapes through the same compiled function
    np.testing.assert_allclose(np.array(sf(mx.ones((2, 3)))), np.sin(1.0) * 2 + 1, rtol=1e-6)
    # composes with the transforms
    g = mx.grad(lambda v: cf(v).sum())(mx.array(x))
    np.testing.assert_allclose(np.array(g), 2 * np.cos(x) + 1, rtol=1e-5, atol=1e-6)


def test_compile_with_state():
    state = [mx.array(1.0)]

    def step(x):
        state[0] = state[0] + x
        return state[0] * 2

    cstep = mx.compile(step, inputs=state, outputs=state)
    for _ in range(3):
        out = cstep(mx.array(1.0))
    assert state[0].item() == 4.0 and out.item() == 8.0


def test_compile_errors():
    with pytest.raises(TypeError):
        mx.compile(3)


def test_compile_traces_the_function_once():
    # Python side effects happen once per trace (MLX's behaviour; test_compile.py has the rest)
    calls = []

    def f(x):
        calls.append(1)
        return x + 1

    cf = mx.compile(f)
    cf(mx.array(1.0)), cf(mx.array(2.0))
    assert len(calls) == 1
    assert cf.__name__ == "f"


def test_compile_runs_the_function_each_call():
    # under disable_compile (MLX's switch) the function runs on every call
    calls = []

    def f(x):
        calls.append(1)
        return x + 1

    cf = mx.compile(f)
    mx.disable_compile()
    try:
        cf(mx.array(1.0)), cf(mx.array(2.0))
    finally:
        mx.enable_compile()
    assert len(calls) == 2
