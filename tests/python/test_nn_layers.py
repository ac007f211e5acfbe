"""ember.nn layers: forward against NumPy references (float32, and half
types where the layer supports them), derivatives of every layer's
parameters and input against finite differences in float64
(``gradcheck.check_grads``), initialisation, modes and bad input.

``nn`` is the backend's (``EMBER_TEST_BACKEND=mlx`` runs MLX's).
"""

import importlib
import io
import itertools
import math

import numpy as np
import pytest

from conftest import IS_MLX, ember_only, mx, raises, to_numpy
from gradcheck import check_grads

nn = importlib.import_module("mlx.nn" if IS_MLX else "ember.nn")
utils = importlib.import_module("mlx.utils" if IS_MLX else "ember.utils")


def arr(x, dtype=mx.float32):
    return mx.array(np.asarray(x), dtype=dtype)


def params_np(layer):
    return {k: np.array(v) for k, v in utils.tree_flatten(layer.parameters())}


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(to_numpy(got), want, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------
# NumPy references
# --------------------------------------------------------------------------

def np_conv(x, w, stride, padding, dilation, groups=1):
    """Channels-last direct convolution: x (N, *S, Ci), w (Co, *K, Ci/g)."""
    nd = x.ndim - 2
    x = np.pad(x, [(0, 0)] + [(p, p) for p in padding] + [(0, 0)])
    ks = w.shape[1:-1]
    out = [(x.shape[1 + i] - dilation[i] * (ks[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    co, cig = w.shape[0], w.shape[-1]
    cog = co // groups
    y = np.zeros((x.shape[0], *out, co))
    for off in itertools.product(*[range(k) for k in ks]):
        sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(off, dilation, stride, out))
        patch = x[(slice(None),) + sl]
        for g in range(groups):
            wg = w[(slice(g * cog, (g + 1) * cog),) + off][..., :]  # (cog, cig)
            y[..., g * cog:(g + 1) * cog] += patch[..., g * cig:(g + 1) * cig] @ wg.T
    return y


def np_conv_transpose(x, w, stride, padding, dilation, output_padding):
    """x (N, *S, Ci), w (Co, *K, Ci): each input pixel scatters x @ w."""
    nd = x.ndim - 2
    ks = w.shape[1:-1]
    full = [(x.shape[1 + i] - 1) * stride[i] + dilation[i] * (ks[i] - 1) + 1 + output_padding[i] for i in range(nd)]
    y = np.zeros((x.shape[0], *full, w.shape[0]))
    for off in itertools.product(*[range(k) for k in ks]):
        sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                   for o, d, s, n in zip(off, dilation, stride, x.shape[1:-1]))
        y[(slice(None),) + sl] += x @ w[(slice(None),) + off].T
    crop = tuple(slice(p, f - p) for p, f in zip(padding, full))
    return y[(slice(None),) + crop]


def np_pool(x, k, s, p, kind):
    nd = x.ndim - 2
    fill = -np.inf if kind == "max" else 0.0
    x = np.pad(x, [(0, 0)] + [(q, q) for q in p] + [(0, 0)], constant_values=fill)
    out = [(x.shape[1 + i] - k[i]) // s[i] + 1 for i in range(nd)]
    wins = []
    for off in itertools.product(*[range(i) for i in k]):
        sl = tuple(slice(o, o + st * (n - 1) + 1, st) for o, st, n in zip(off, s, out))
        wins.append(x[(slice(None),) + sl])
    w = np.stack(wins)
    return w.max(0) if kind == "max" else w.mean(0)


def np_layer_norm(x, w, b, eps):
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


# --------------------------------------------------------------------------
# Gradients: every parameter and the input, float64
# --------------------------------------------------------------------------

def grad_check_layer(layer, *inputs, rng=None):
    """check_grads of (inputs..., params...) -> layer(*inputs) in float64."""
    layer.set_dtype(mx.float64)
    names = [k for k, _ in utils.tree_flatten(layer.trainable_parameters())]
    values = [np.array(v).astype(np.float64) for _, v in utils.tree_flatten(layer.trainable_parameters())]
    n_in = len(inputs)

    def f(*args):
        layer.update(utils.tree_unflatten(list(zip(names, args[n_in:]))))
        return layer(*args[:n_in])

    args = [np.asarray(i, np.float64) if np.asarray(i).dtype.kind == "f" else i for i in inputs] + values
    check_grads(f, args, rng=rng, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------
# Linear, Bilinear, Identity, Embedding, Sequential
# --------------------------------------------------------------------------

def test_linear(rng):
    lin = nn.Linear(4, 3)
    p = params_np(lin)
    assert p["weight"].shape == (3, 4) and p["bias"].shape == (3,)
    x = rng.standard_normal((2, 5, 4)).astype(np.float32)
    close(lin(arr(x)), x @ p["weight"].T + p["bias"])
    nob = nn.Linear(4, 3, bias=False)
    assert list(nob.keys()) == ["weight"]
    close(nob(arr(x)), x @ np.array(nob.weight).T)
    for dt, tol in [(mx.float16, 2e-2), (mx.bfloat16, 1e-1)]:
        lin16 = nn.Linear(4, 3)
        lin16.set_dtype(dt)
        y = lin16(arr(x, dt))
        assert y.dtype == dt
        pw = {k: to_numpy(v) for k, v in utils.tree_flatten(lin16.parameters())}
        close(y, to_numpy(arr(x, dt)) @ pw["weight"].T + pw["bias"], rtol=tol, atol=tol)


def test_init_distributions():
    """Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) for Linear, Bilinear and
    the convolutions (fan_in per group), N(0, 1/dims) for Embedding."""
    def check_uniform(a, bound):
        a = np.array(a)
        assert np.abs(a).max() <= bound and np.abs(a).max() > 0.9 * bound
        sd = bound / math.sqrt(3)  # of U(-bound, bound)
        assert abs(a.mean()) < 5 * sd / math.sqrt(a.size)
        assert abs(a.std() - sd) < 0.1 * sd

    check_uniform(nn.Linear(64, 256).weight, 1 / 8)
    check_uniform(nn.Linear(64, 256).bias, 1 / 8)
    check_uniform(nn.Bilinear(16, 8, 64).weight, 1 / 4)
    check_uniform(nn.Conv2d(8, 64, 3, groups=4).weight, math.sqrt(1 / 18))
    check_uniform(nn.Conv1d(4, 64, 5).weight, math.sqrt(1 / 20))
    check_uniform(nn.ConvTranspose2d(8, 64, 3).weight, math.sqrt(1 / 72))
    assert float(mx.abs(nn.Conv2d(2, 3, 3).bias).max()) == 0
    e = np.array(nn.Embedding(1000, 16).weight)
    assert abs(e.std() - 0.25) < 0.01 and abs(e.mean()) < 0.01
    np.testing.assert_array_equal(np.array(nn.PReLU(3, 0.1).weight), np.full(3, 0.1, np.float32))


def test_bilinear(rng):
    bl = nn.Bilinear(3, 4, 2)
    p = params_np(bl)
    assert p["weight"].shape == (2, 4, 3)
    x1 = rng.standard_normal((5, 3)).astype(np.float32)
    x2 = rng.standard_normal((5, 4)).astype(np.float32)
    want = np.einsum("ni,kji,nj->nk", x1, p["weight"], x2) + p["bias"]
    close(bl(arr(x1), arr(x2)), want)


def test_identity_sequential(rng):
    x = arr(rng.standard_normal((2, 3)))
    assert nn.Identity(3, foo=1)(x) is x
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), lambda v: v * 2, nn.Linear(4, 1))
    ref = seq.layers[3](2 * nn.relu(seq.layers[0](x)))
    close(seq(x), np.array(ref))
    assert [k for k, _ in utils.tree_flatten(seq.parameters())] == \
        ["layers.0.weight", "layers.0.bias", "layers.3.weight", "layers.3.bias"]


def test_embedding(rng):
    emb = nn.Embedding(10, 4)
    w = np.array(emb.weight)
    idx = np.array([[1, 9], [0, 3]], np.int32)
    close(emb(mx.array(idx)), w[idx])
    x = rng.standard_normal((2, 4)).astype(np.float32)
    close(emb.as_linear(arr(x)), x @ w.T)


# --------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------

def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.logaddexp(x, 0)


def _erf(x):
    return np.vectorize(math.erf)(x)


ACTIVATIONS = {
    "relu": (lambda x: np.maximum(x, 0), nn.ReLU),
    "relu6": (lambda x: np.clip(x, 0, 6), nn.ReLU6),
    "relu2": (lambda x: np.maximum(x, 0) ** 2, nn.ReLU2),
    "leaky_relu": (lambda x: np.where(x > 0, x, 0.01 * x), nn.LeakyReLU),
    "elu": (lambda x: np.where(x > 0, x, np.expm1(x)), nn.ELU),
    "celu": (lambda x: np.maximum(x, 0) + np.expm1(np.minimum(x, 0)), nn.CELU),
    "selu": (lambda x: 1.0507 * np.where(x > 0, x, 1.67326 * np.expm1(x)), nn.SELU),
    "silu": (lambda x: x * _sig(x), nn.SiLU),
    "gelu": (lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), nn.GELU),
    "gelu_approx": (lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
                    lambda: nn.GELU("precise")),
    "gelu_fast_approx": (lambda x: x * _sig(1.702 * x), lambda: nn.GELU("fast")),
    "mish": (lambda x: x * np.tanh(_softplus(x)), nn.Mish),
    "hardswish": (lambda x: x * np.clip(x + 3, 0, 6) / 6, nn.Hardswish),
    "hard_tanh": (lambda x: np.clip(x, -1, 1), nn.HardTanh),
    "hard_shrink": (lambda x: np.where(np.abs(x) > 0.5, x, 0), nn.HardShrink),
    "softshrink": (lambda x: np.where(np.abs(x) > 0.5, x - np.sign(x) * 0.5, 0), nn.Softshrink),
    "softsign": (lambda x: x / (1 + np.abs(x)), nn.Softsign),
    "softplus": (_softplus, nn.Softplus),
    "log_sigmoid": (lambda x: -_softplus(-x), nn.LogSigmoid),
    "sigmoid": (_sig, nn.Sigmoid),
    "tanh": (np.tanh, nn.Tanh),
    "softmax": (lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True), nn.Softmax),
    "softmin": (lambda x: np.exp(-x) / np.exp(-x).sum(-1, keepdims=True), nn.Softmin),
    "log_softmax": (lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True)), nn.LogSoftmax),
}
# kinks at 0 (and at the shrink thresholds) are kept away from by the samples
SMOOTH = {"gelu", "gelu_approx", "gelu_fast_approx", "silu", "mish", "softplus", "log_sigmoid", "sigmoid", "tanh",
          "softmax", "softmin", "log_softmax", "softsign", "celu", "elu", "selu"}


def _act_sample(rng, shape=(3, 7)):
    x = rng.uniform(-4, 4, shape)
    x = np.where(np.abs(x) < 0.1, 0.3, x)
    x = np.where(np.abs(np.abs(x) - 0.5) < 0.05, 0.7, x)  # shrink thresholds
    x = np.where(np.abs(np.abs(x - 3) ) < 0.05, 2.5, x)
    x = np.where(np.abs(np.abs(x + 3)) < 0.05, -2.5, x)
    return x


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(name, rng):
    ref, module = ACTIVATIONS[name]
    fn = getattr(nn, name)
    x = _act_sample(rng).astype(np.float32)
    want = ref(x.astype(np.float64))
    close(fn(arr(x)), want, rtol=2e-5, atol=2e-6)
    close(module()(arr(x)), want, rtol=2e-5, atol=2e-6)
    for dt, tol in [(mx.float16, 1e-2), (mx.bfloat16, 5e-2)]:
        xh = arr(x, dt)
        y = fn(xh)
        assert y.dtype == dt, f"{name} keeps {dt}"
        close(y, ref(to_numpy(xh).astype(np.float64)), rtol=tol, atol=tol)


# the activations compiled (shapeless) as MLX compiles them
FUSED = ["relu6", "relu2", "leaky_relu", "log_sigmoid", "elu", "celu", "selu", "silu", "gelu", "gelu_approx",
         "gelu_fast_approx", "mish", "hardswish", "hard_tanh", "hard_shrink", "softshrink", "softsign"]


def _dot(a):
    buf = io.StringIO()
    mx.export_to_dot(buf, a)
    return buf.getvalue()


@ember_only
@pytest.mark.parametrize("name", FUSED)
def test_activation_is_one_kernel_each_way(name, rng):
    # forward one kernel; backward one kernel on 2^16 values and more (the
    # Compiled primitive's vjp), with the values and gradients of the same
    # function applied to small pieces, whose backward stays unfused (that
    # one test_activation_grad checks against finite differences)
    fn = getattr(nn, name)
    x0 = _act_sample(rng, (256, 300)).astype(np.float32)
    c0 = rng.standard_normal((256, 300)).astype(np.float32)
    x, c = arr(x0), arr(c0)
    (y,), (g,) = mx.vjp(fn, [x], [c])
    for what, a in (("forward", y), ("backward", g)):
        text = _dot(a)
        assert text.count("Compiled[") == 1, f"{name} {what}:\n{text}"
    ys, gs = [], []
    for i in range(0, 256, 16):
        (yi,), (gi,) = mx.vjp(fn, [x[i:i + 16]], [c[i:i + 16]])
        assert "Compiled[" not in _dot(gi)
        ys.append(np.array(yi))
        gs.append(np.array(gi))
    close(y, np.concatenate(ys), rtol=1e-6, atol=1e-6)
    close(g, np.concatenate(gs), rtol=1e-6, atol=1e-6)


@ember_only
def test_fused_activations_take_what_the_ops_take(tmp_path):
    # a Python number or a NumPy array goes through the ops as they are;
    # float parameters are static arguments of the compiled function
    assert abs(nn.gelu(1.0).item() - 0.5 * (1 + math.erf(1 / math.sqrt(2)))) < 1e-6
    np.testing.assert_allclose(np.array(nn.silu(np.array([0.0, 2.0], np.float32))), [0.0, 2 / (1 + math.exp(-2))],
                               rtol=1e-6)
    x = arr(np.array([-2.0, -0.5, 1.0], np.float32))
    for slope in (0.1, 0.3):
        close(nn.leaky_relu(x, slope), np.array([-2 * slope, -0.5 * slope, 1.0]), rtol=1e-6, atol=0)
        close(nn.leaky_relu(x, negative_slope=slope), np.array([-2 * slope, -0.5 * slope, 1.0]), rtol=1e-6, atol=0)
    assert nn.gelu.__name__ == "gelu" and "Gaussian error linear unit" in nn.gelu.__doc__
    # a function using them exports and imports (the compiled graph is unfused there)
    path = str(tmp_path / "f.mlxfn")
    mx.export_function(path, lambda a: nn.silu(nn.gelu(a) * 2), x)
    close(mx.import_function(path)(x)[0], np.array(nn.silu(nn.gelu(x) * 2)), rtol=1e-6, atol=1e-7)


@ember_only  # MLX has no float64 for several of these on its CPU path
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_grad(name, rng):
    fn = getattr(nn, name)
    check_grads(fn, [_act_sample(rng, (2, 5))], rng=rng)


def test_activation_extras(rng):
    x = _act_sample(rng).astype(np.float32)
    y = nn.step(arr(x), 0.5)
    assert y.dtype == mx.int32
    np.testing.assert_array_equal(np.array(y), (x > 0.5).astype(np.int32))
    np.testing.assert_array_equal(np.array(nn.Step(1.0)(arr(x))), (x > 1).astype(np.int32))
    close(nn.leaky_relu(arr(x), 0.2), np.where(x > 0, x, 0.2 * x))
    close(nn.elu(arr(x), 2.0), np.where(x > 0, x, 2 * np.expm1(x)), rtol=1e-5, atol=1e-6)
    close(nn.celu(arr(x), 2.0), np.maximum(x, 0) + 2 * np.expm1(np.minimum(x, 0) / 2), rtol=1e-5, atol=1e-6)
    close(nn.hard_tanh(arr(x), -2, 3), np.clip(x, -2, 3))
    close(nn.hard_shrink(arr(x), 1.0), np.where(np.abs(x) > 1, x, 0))
    close(nn.softshrink(arr(x), 1.0), np.where(np.abs(x) > 1, x - np.sign(x), 0))
    close(nn.softmax(arr(x), axis=0), np.exp(x) / np.exp(x).sum(0))
    close(nn.GELU("tanh")(arr(x)), ACTIVATIONS["gelu_approx"][0](x), rtol=1e-5, atol=1e-6)
    with raises(ValueError, "approximation should be in", mlx_msg=True):
        nn.GELU("foo")
    # glu: first half gated by the sigmoid of the second
    g = rng.standard_normal((2, 6)).astype(np.float32)
    close(nn.glu(arr(g)), g[:, :3] * _sig(g[:, 3:]), rtol=1e-5, atol=1e-6)
    close(nn.GLU(0)(arr(g)), g[:1] * _sig(g[1:]), rtol=1e-5, atol=1e-6)
    # prelu: a learned slope per channel
    pr = nn.PReLU(7, 0.1)
    close(pr(arr(x)), np.where(x > 0, x, 0.1 * x))
    close(nn.prelu(arr(x), arr([0.3])), np.where(x > 0, x, 0.3 * x))


@ember_only
def test_glu_prelu_grad(rng):
    check_grads(nn.glu, [rng.standard_normal((2, 6))], rng=rng)
    grad_check_layer(nn.PReLU(5), _act_sample(rng, (3, 5)), rng=rng)


# --------------------------------------------------------------------------
# Convolutions
# --------------------------------------------------------------------------

CONVS = [
    # (layer, spatial shape, kwargs)
    ("Conv1d", (9,), dict(kernel_size=3)),
    ("Conv1d", (9,), dict(kernel_size=2, stride=2, padding=1, dilation=2, groups=2)),
    ("Conv2d", (6, 7), dict(kernel_size=(3, 2), stride=(2, 1), padding=1)),
    ("Conv2d", (6, 6), dict(kernel_size=3, dilation=2, groups=2, bias=False)),
    ("Conv3d", (4, 5, 4), dict(kernel_size=2, stride=(1, 2, 1), padding=(1, 0, 0))),
]


def _tup(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("name,spatial,kw", CONVS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CONVS)])
def test_conv(name, spatial, kw, rng):
    n = len(spatial)
    layer = getattr(nn, name)(4, 6, **kw)
    p = params_np(layer)
    k = _tup(kw["kernel_size"], n)
    groups = kw.get("groups", 1)
    assert p["weight"].shape == (6, *k, 4 // groups)
    assert ("bias" in p) == kw.get("bias", True)
    x = rng.standard_normal((2, *spatial, 4)).astype(np.float32)
    want = np_conv(x.astype(np.float64), p["weight"], _tup(kw.get("stride", 1), n), _tup(kw.get("padding", 0), n),
                   _tup(kw.get("dilation", 1), n), groups) + p.get("bias", 0)
    close(layer(arr(x)), want, rtol=1e-4, atol=1e-5)


@ember_only
@pytest.mark.parametrize("name,spatial,kw", CONVS[:4], ids=[f"{c[0]}-{i}" for i, c in enumerate(CONVS[:4])])
def test_conv_grad(name, spatial, kw, rng):
    layer = getattr(nn, name)(4, 4, **kw)
    grad_check_layer(layer, rng.standard_normal((1, *spatial, 4)), rng=rng)


CONV_T = [
    ("ConvTranspose1d", (5,), dict(kernel_size=3)),
    ("ConvTranspose1d", (5,), dict(kernel_size=3, stride=2, padding=1, dilation=1, output_padding=1)),
    ("ConvTranspose2d", (3, 4), dict(kernel_size=(2, 3), stride=2, padding=(0, 1))),
    ("ConvTranspose3d", (2, 3, 2), dict(kernel_size=2, stride=(1, 2, 1), bias=False)),
]


@pytest.mark.parametrize("name,spatial,kw", CONV_T, ids=[f"{c[0]}-{i}" for i, c in enumerate(CONV_T)])
def test_conv_transpose(name, spatial, kw, rng):
    n = len(spatial)
    layer = getattr(nn, name)(3, 5, **kw)
    p = params_np(layer)
    assert p["weight"].shape == (5, *_tup(kw["kernel_size"], n), 3)
    x = rng.standard_normal((2, *spatial, 3)).astype(np.float32)
    want = np_conv_transpose(x.astype(np.float64), p["weight"], _tup(kw.get("stride", 1), n),
                             _tup(kw.get("padding", 0), n), _tup(kw.get("dilation", 1), n),
                             _tup(kw.get("output_padding", 0), n)) + p.get("bias", 0)
    close(layer(arr(x)), want, rtol=1e-4, atol=1e-5)


@ember_only
def test_conv_transpose_grad(rng):
    grad_check_layer(nn.ConvTranspose1d(2, 3, 3, stride=2, padding=1), rng.standard_normal((1, 4, 2)), rng=rng)
    grad_check_layer(nn.ConvTranspose2d(2, 2, 2, stride=2), rng.standard_normal((1, 2, 3, 2)), rng=rng)


def test_conv_half(rng):
    c = nn.Conv2d(3, 4, 3)
    c.set_dtype(mx.float16)
    x = arr(rng.standard_normal((1, 5, 5, 3)), mx.float16)
    y = c(x)
    assert y.dtype == mx.float16
    p = {k: to_numpy(v).astype(np.float64) for k, v in utils.tree_flatten(c.parameters())}
    want = np_conv(to_numpy(x).astype(np.float64), p["weight"], (1, 1), (0, 0), (1, 1)) + p["bias"]
    close(y, want, rtol=1e-2, atol=1e-2)


# --------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------

POOLS = [
    ("1d", (8,), dict(kernel_size=2)),
    ("1d", (9,), dict(kernel_size=3, stride=2, padding=1)),
    ("2d", (6, 7), dict(kernel_size=(2, 3), stride=(2, 1))),
    ("2d", (5, 5), dict(kernel_size=3, stride=2, padding=1)),
    ("3d", (4, 4, 5), dict(kernel_size=2, stride=(2, 2, 1))),
]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("dim,spatial,kw", POOLS, ids=[f"{p[0]}-{i}" for i, p in enumerate(POOLS)])
def test_pool(kind, dim, spatial, kw, rng):
    n = len(spatial)
    layer = getattr(nn, ("MaxPool" if kind == "max" else "AvgPool") + dim)(**kw)
    k = _tup(kw["kernel_size"], n)
    s = _tup(kw.get("stride", k), n)
    x = rng.standard_normal((2, *spatial, 3)).astype(np.float32)
    want = np_pool(x.astype(np.float64), k, s, _tup(kw.get("padding", 0), n), kind)
    close(layer(arr(x)), want, rtol=1e-5, atol=1e-6)
    y16 = layer(arr(x, mx.float16))
    assert y16.dtype == mx.float16
    close(y16, want, rtol=1e-2, atol=1e-2)


@ember_only
@pytest.mark.parametrize("kind", ["MaxPool2d", "AvgPool2d", "MaxPool1d", "AvgPool3d"])
def test_pool_grad(kind, rng):
    layer = getattr(nn, kind)(2, stride=1, padding=1 if kind.startswith("Avg") else 0)
    spatial = {"1": (5,), "2": (4, 3), "3": (3, 3, 2)}[kind[-2]]
    check_grads(layer, [rng.permutation(np.prod((1, *spatial, 2))).reshape(1, *spatial, 2) / 3.0], rng=rng)


# --------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------

def test_layer_norm(rng):
    x = rng.standard_normal((2, 3, 8)).astype(np.float32) * 3 + 1
    ln = nn.LayerNorm(8)
    ln.update({"weight": arr(rng.standard_normal(8)), "bias": arr(rng.standard_normal(8))})
    p = params_np(ln)
    close(ln(arr(x)), np_layer_norm(x.astype(np.float64), p["weight"], p["bias"], 1e-5), rtol=1e-4, atol=1e-5)
    assert list(nn.LayerNorm(8, bias=False).keys()) == ["weight"]
    assert list(nn.LayerNorm(8, affine=False).keys()) == []
    close(nn.LayerNorm(8, affine=False, eps=0.1)(arr(x)), np_layer_norm(x.astype(np.float64), None, None, 0.1),
          rtol=1e-4, atol=1e-5)
    for dt, tol in [(mx.float16, 1e-2), (mx.bfloat16, 5e-2)]:
        h = nn.LayerNorm(8)
        h.set_dtype(dt)
        y = h(arr(x, dt))
        assert y.dtype == dt
        close(y, np_layer_norm(to_numpy(arr(x, dt)).astype(np.float64), None, None, 1e-5), rtol=tol, atol=tol)


def test_rms_norm(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    rn = nn.RMSNorm(6, eps=1e-3)
    rn.update({"weight": arr(rng.standard_normal(6))})
    w = np.array(rn.weight)
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-3) * w
    close(rn(arr(x)), want, rtol=1e-4, atol=1e-5)
    h = nn.RMSNorm(6)
    h.set_dtype(mx.bfloat16)
    assert h(arr(x, mx.bfloat16)).dtype == mx.bfloat16


@pytest.mark.parametrize("pytorch", [False, True])
def test_group_norm(pytorch, rng):
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float64) * 2
    gn = nn.GroupNorm(3, 6, pytorch_compatible=pytorch)
    gn.update({"weight": arr(rng.standard_normal(6)), "bias": arr(rng.standard_normal(6))})
    p = params_np(gn)
    if pytorch:  # contiguous groups of 2 features
        g = x.reshape(2, 15, 3, 2)
        axes = (1, 3)
    else:  # feature c in group c % 3
        g = x.reshape(2, -1, 3)
        axes = (1,)
    want = ((g - g.mean(axes, keepdims=True)) / np.sqrt(g.var(axes, keepdims=True) + 1e-5)).reshape(x.shape)
    close(gn(arr(x)), want * p["weight"] + p["bias"], rtol=1e-4, atol=1e-5)


def test_instance_norm(rng):
    x = rng.standard_normal((2, 4, 5, 3)).astype(np.float64)
    want = (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-5)
    close(nn.InstanceNorm(3)(arr(x)), want, rtol=1e-4, atol=1e-5)
    inn = nn.InstanceNorm(3, affine=True)
    assert sorted(inn.keys()) == ["bias", "weight"]
    close(inn(arr(x)), want, rtol=1e-4, atol=1e-5)


def test_batch_norm_train_eval(rng):
    x = rng.standard_normal((8, 4, 3)).astype(np.float64) * 2 + 1
    bn = nn.BatchNorm(3, momentum=0.2)
    y = bn(arr(x))
    mean, var = x.mean((0, 1)), x.var((0, 1))
    close(y, (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    n = 32
    close(bn.running_mean, 0.2 * mean, rtol=1e-5, atol=1e-6)
    close(bn.running_var, 0.8 + 0.2 * var * n / (n - 1), rtol=1e-5, atol=1e-6)
    bn.eval()
    rm, rv = np.array(bn.running_mean), np.array(bn.running_var)
    close(bn(arr(x)), (x - rm) / np.sqrt(rv + 1e-5), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.array(bn.running_mean), rm)  # eval leaves the statistics
    # without running statistics the batch's are used in both modes
    free = nn.BatchNorm(3, affine=False, track_running_stats=False).eval()
    assert list(free.keys()) == []
    close(free(arr(x)), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    with raises(ValueError, "more than one value per channel", mlx_msg=True):
        nn.BatchNorm(3)(mx.ones((1, 3)))


@ember_only
def test_norm_grads(rng):
    x = rng.standard_normal((2, 3, 4))
    for layer in [nn.LayerNorm(4), nn.RMSNorm(4), nn.GroupNorm(2, 4), nn.GroupNorm(2, 4, pytorch_compatible=True),
                  nn.InstanceNorm(4, affine=True), nn.BatchNorm(4)]:
        layer.update(utils.tree_map(lambda p: p + arr(rng.uniform(0.1, 0.5, p.shape)), layer.trainable_parameters()))
        grad_check_layer(layer, x, rng=rng)


@ember_only
def test_linear_like_grads(rng):
    grad_check_layer(nn.Linear(3, 2), rng.standard_normal((4, 3)), rng=rng)
    grad_check_layer(nn.Linear(3, 2, bias=False), rng.standard_normal((3,)), rng=rng)
    grad_check_layer(nn.Bilinear(3, 2, 2), rng.standard_normal((4, 3)), rng.standard_normal((4, 2)), rng=rng)
    emb = nn.Embedding(5, 3)
    grad_check_layer(emb, np.array([[0, 4], [2, 2]], np.int32), rng=rng)
    emb.set_dtype(mx.float64)

    def tied(x, w):
        emb.update({"weight": w})
        return emb.as_linear(x)

    check_grads(tied, [rng.standard_normal((2, 3)), rng.standard_normal((5, 3))], rng=rng)


# --------------------------------------------------------------------------
# Dropout
# --------------------------------------------------------------------------

def test_dropout():
    x = mx.ones((200, 50))
    d = nn.Dropout(0.25)
    y = np.array(d(x))
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    d.eval()
    assert d(x) is x
    assert nn.Dropout(0.0)(x) is x
    assert nn.Dropout(0.5)(mx.ones(4, dtype=mx.float16)).dtype == mx.float16
    with raises(ValueError, r"dropout probability 1.0 is not in \[0, 1\)", mlx_msg=True):
        nn.Dropout(1.0)


@pytest.mark.parametrize("cls,shape", [("Dropout2d", (8, 5, 6, 40)), ("Dropout2d", (5, 6, 40)),
                                       ("Dropout3d", (4, 3, 4, 5, 30)), ("Dropout3d", (3, 4, 5, 30))])
def test_channel_dropout(cls, shape):
    y = np.array(getattr(nn, cls)(0.5)(mx.ones(shape)))
    nsp = 2 if cls == "Dropout2d" else 3
    flat = np.moveaxis(y, -1, 0).reshape(shape[-1], *shape[:-nsp - 1], -1)
    per_channel = flat.reshape(-1, flat.shape[-1])
    # a channel of a sample is dropped or kept as a whole
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0.2 < (per_channel[:, 0] == 0).mean() < 0.8
    with raises(ValueError, "Expected", mlx_msg=True):
        getattr(nn, cls)()(mx.ones((2, 3)))


# --------------------------------------------------------------------------
# Upsample
# --------------------------------------------------------------------------

# values MLX 0.32.4 gives for x = arange(5)**2 on one spatial axis
UPSAMPLE_1D = {
    ("nearest", False, 1.5): [0, 1, 1, 4, 9, 9, 16],
    ("nearest", False, 0.6): [0, 1, 9],
    ("nearest", False, 2.0): [0, 0, 1, 1, 4, 4, 9, 9, 16, 16],
    ("linear", False, 2.0): [0, 0.25, 0.75, 1.75, 3.25, 5.25, 7.75, 10.75, 14.25, 16],
    ("linear", False, 0.6): [1 / 3, 4, 13 + 2 / 3],
    ("linear", True, 2.0): [0, 4 / 9, 8 / 9, 2, 10 / 3, 46 / 9, 22 / 3, 88 / 9, 116 / 9, 16],
    ("cubic", False, 2.0): [-0.10546875, 0.12109375, 0.45703125, 1.609375, 2.828125, 5.203125, 7.234375,
                            11.11328125, 14.58984375, 16.73828125],
    ("cubic", False, 1.5): [0, 0.3519, 1.7778, 4, 6.8148, 11.7593, 16],
    ("cubic", True, 0.6): [0, 4, 16],
}


@pytest.mark.parametrize("key", list(UPSAMPLE_1D), ids=[f"{m}-{a}-{s}" for m, a, s in UPSAMPLE_1D])
def test_upsample_1d_values(key):
    mode, ac, s = key
    x = mx.array((np.arange(5.0) ** 2)[None, :, None].astype(np.float32))
    y = nn.Upsample(s, mode=mode, align_corners=ac)(x)
    close(y[0, :, 0], np.array(UPSAMPLE_1D[key]), rtol=1e-4, atol=1e-4)


def _np_linear_1d(v, axis, scale, align):
    n = v.shape[axis]
    m = int(n * scale)
    i = np.arange(m)
    pos = i * (n - 1) / (m - 1) if align else i / scale - ((m - 1) / scale - n + 1) / 2
    lo = np.floor(pos).astype(int)
    t = pos - lo
    a = np.take(v, np.clip(lo, 0, n - 1), axis)
    b = np.take(v, np.clip(lo + 1, 0, n - 1), axis)
    sh = [1] * v.ndim
    sh[axis] = m
    return a * (1 - t).reshape(sh) + b * t.reshape(sh)


@pytest.mark.parametrize("align", [False, True])
def test_upsample_bilinear_2d(align, rng):
    x = rng.standard_normal((2, 3, 4, 2)).astype(np.float32)
    want = _np_linear_1d(_np_linear_1d(x.astype(np.float64), 1, 2.0, align), 2, 1.5, align)
    close(nn.Upsample((2.0, 1.5), mode="linear", align_corners=align)(arr(x)), want, rtol=1e-4, atol=1e-5)
    # the interpolation weights are float32 (as in MLX): half inputs give float32
    y = nn.Upsample(2, mode="linear")(arr(x, mx.bfloat16))
    assert y.dtype == mx.float32 and y.shape == (2, 6, 8, 2)
    assert nn.Upsample(2, mode="cubic")(arr(x, mx.float16)).dtype == mx.float32


def test_upsample_nearest_2d(rng):
    x = rng.standard_normal((1, 2, 3, 2)).astype(np.float32)
    close(nn.Upsample(2)(arr(x)), x.repeat(2, 1).repeat(2, 2))
    y = nn.Upsample((1, 3))(arr(x, mx.float16))
    assert y.dtype == mx.float16
    close(y, to_numpy(arr(x, mx.float16)).repeat(3, 2))


def test_upsample_errors():
    with raises(ValueError, "unsupported upsampling algorithm", mlx_msg=True):
        nn.Upsample(2.0, mode="bad")
    with raises(ValueError, "One scale per spatial dimension", mlx_msg=True):
        nn.Upsample((2, 3))(mx.zeros((1, 4, 3)))
    with raises(ValueError, "at least 3D", mlx_msg=True):
        nn.Upsample(2)(mx.zeros((4, 3)))
    with raises(ValueError, "Antialiasing is not supported for nearest", mlx_msg=True):
        nn.Upsample(2, antialias=True)
    with raises(ValueError, "antialias=True with align_corners=True is not supported", mlx_msg=True):
        nn.Upsample(0.5, mode="linear", antialias=True, align_corners=True)


# values MLX 0.32.4 gives for x = arange(10)**2 with antialias=True
ANTIALIAS_1D = {
    ("linear", 0.5): [1.0, 7.0, 21.0, 43.0, 69.1429],
    ("linear", 0.3): [3.5254, 22.0758, 57.678],
    ("cubic", 0.5): [0.41, 6.1892, 20.25, 42.9189, 71.6192],
    ("cubic", 0.3): [1.8782, 21.0094, 60.5392],
}


@pytest.mark.parametrize("key", list(ANTIALIAS_1D), ids=[f"{m}-{s}" for m, s in ANTIALIAS_1D])
def test_upsample_antialias_values(key):
    mode, s = key
    x = mx.array((np.arange(10.0) ** 2)[None, :, None].astype(np.float32))
    close(nn.Upsample(s, mode=mode, antialias=True)(x)[0, :, 0], np.array(ANTIALIAS_1D[key]), rtol=1e-4, atol=1e-3)


@ember_only
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_upsample_grad(mode, rng):
    check_grads(nn.Upsample((2.0, 1.5), mode=mode), [rng.standard_normal((1, 3, 2, 2))], rng=rng)


# --------------------------------------------------------------------------
# Bad input: errors name the layer and the shapes
# --------------------------------------------------------------------------

BAD = [
    ("Linear", lambda: nn.Linear(2, 3)(mx.zeros((5, 3))), r"\[Linear\].*2 features.*\(5, 3\)"),
    ("Bilinear", lambda: nn.Bilinear(2, 3, 4)(mx.zeros((5, 2)), mx.zeros((5, 2))), r"\[Bilinear\].*\(5, 2\)"),
    ("Conv1d-channels", lambda: nn.Conv1d(3, 4, 3)(mx.zeros((1, 5, 2))), r"\[Conv1d\].*C = 3.*\(1, 5, 2\)"),
    ("Conv2d-rank", lambda: nn.Conv2d(3, 4, 3)(mx.zeros((5, 5, 3))), r"\[Conv2d\].*\(N, H, W, C\).*\(5, 5, 3\)"),
    ("ConvTranspose2d", lambda: nn.ConvTranspose2d(3, 4, 3)(mx.zeros((1, 5, 5, 2))),
     r"\[ConvTranspose2d\].*\(1, 5, 5, 2\)"),
    ("LayerNorm", lambda: nn.LayerNorm(4)(mx.zeros((5, 3))), r"\[LayerNorm\].*4 features.*\(5, 3\)"),
    ("RMSNorm", lambda: nn.RMSNorm(4)(mx.zeros((5, 3))), r"\[RMSNorm\].*\(5, 3\)"),
    ("GroupNorm", lambda: nn.GroupNorm(2, 4)(mx.zeros((5, 3))), r"\[GroupNorm\].*\(5, 3\)"),
    ("BatchNorm", lambda: nn.BatchNorm(4)(mx.zeros((5, 3))), r"\[BatchNorm\].*\(5, 3\)"),
    ("InstanceNorm", lambda: nn.InstanceNorm(4, affine=True)(mx.zeros((2, 5, 3))),
     r"\[InstanceNorm\].*\(2, 5, 3\)"),
    ("MaxPool2d", lambda: nn.MaxPool2d(2)(mx.zeros((5, 4))), r"\[MaxPool2d\].*\(5, 4\)"),
    ("MaxPool1d-kernel", lambda: nn.MaxPool1d(6, stride=1)(mx.zeros((1, 3, 2))), r"\[MaxPool1d\].*larger"),
]


@pytest.mark.parametrize("name,call,msg", BAD, ids=[b[0] for b in BAD])
def test_bad_input(name, call, msg):
    with raises(ValueError, msg):
        call()


def test_norms_without_parameters_take_any_width():
    assert nn.LayerNorm(4, affine=False)(mx.ones((2, 3))).shape == (2, 3)
    assert nn.InstanceNorm(4)(mx.ones((2, 5, 3))).shape == (2, 5, 3)
    assert nn.AvgPool1d(4)(mx.zeros((1, 3, 2))).shape == (1, 0, 2)  # no whole window: empty


def test_groups_must_divide():
    with raises(ValueError, "must be divisible by the number of groups", mlx_msg=True):
        nn.Conv1d(3, 3, 3, groups=2)
