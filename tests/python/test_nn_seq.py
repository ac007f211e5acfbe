"""ember.nn's sequence layers: RNN, GRU, LSTM, MultiHeadAttention, the
transformer layers and stacks, RoPE, SinusoidalPositionalEncoding and
ALiBi.

Forward passes against NumPy references written here (the recurrences as
loops over the time steps, attention as an explicit softmax) in float32 and
float64; derivatives of every layer's parameters and inputs against finite
differences in float64 (``gradcheck.check_grads``); masks, modes,
checkpointing, vmap, initialisation, repr and bad input.

``nn`` is the backend's (``EMBER_TEST_BACKEND=mlx`` runs MLX's).
"""

import importlib
import math

import numpy as np
import pytest

from conftest import IS_MLX, ember_only, mx, raises, to_numpy
from gradcheck import check_grads, check_vmap

nn = importlib.import_module("mlx.nn" if IS_MLX else "ember.nn")
utils = importlib.import_module("mlx.utils" if IS_MLX else "ember.utils")

F32_TOL = dict(rtol=2e-5, atol=2e-5)
F64_TOL = dict(rtol=1e-10, atol=1e-10)
# MLX 0.32.4 runs these layers in float64 but computes exp, sigmoid, sin,
# cos and softmax at float32 accuracy (relative errors near 2e-7), so
# float64 results at float64 accuracy, and the finite-difference checks
# that need them, are Ember's own (ember_only); float32 runs on both.
DTYPES = [("float32", F32_TOL), pytest.param("float64", F64_TOL, marks=ember_only)]
DTYPE_IDS = ["float32", "float64"]


def arr(x, dtype=mx.float32):
    return mx.array(np.asarray(x), dtype=dtype)


def params_np(layer):
    return {k: np.array(v).astype(np.float64) for k, v in utils.tree_flatten(layer.parameters())}


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(to_numpy(got), want, rtol=rtol, atol=atol)


def as_dtype(layer, dtype_name):
    dtype = getattr(mx, dtype_name)
    layer.set_dtype(dtype)
    return dtype


def grad_check_layer(layer, inputs, rng, **fixed):
    """check_grads of (inputs..., trainable params...) -> layer(*inputs,
    **fixed) in float64; an input that is None or not float64 is held
    fixed."""
    layer.set_dtype(mx.float64)
    flat = utils.tree_flatten(layer.trainable_parameters())
    names = [k for k, _ in flat]
    values = [np.array(v).astype(np.float64) for _, v in flat]
    n_in = len(inputs)

    def f(*args):
        layer.update(utils.tree_unflatten(list(zip(names, args[n_in:]))))
        return layer(*args[:n_in], **fixed)

    check_grads(f, list(inputs) + values, rng=rng, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------
# NumPy references
# --------------------------------------------------------------------------

def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_rnn(x, p, h=None, act=np.tanh):
    """Elman recurrence, one step at a time; no state is a zero state."""
    H = p["Whh"].shape[0]
    h = np.zeros(x.shape[:-2] + (H,)) if h is None else np.broadcast_to(h, x.shape[:-2] + (H,))
    out = []
    for t in range(x.shape[-2]):
        h = act(x[..., t, :] @ p["Wxh"].T + h @ p["Whh"].T + p.get("bias", 0))
        out.append(h)
    return np.stack(out, axis=-2)


def np_gru(x, p, h=None):
    H = p["Wh"].shape[1]
    Wxr, Wxz, Wxn = np.split(p["Wx"], 3)
    Whr, Whz, Whn = np.split(p["Wh"], 3)
    br, bz, bn = np.split(p["b"], 3) if "b" in p else (0, 0, 0)
    bhn = p.get("bhn", 0)
    h = np.zeros(x.shape[:-2] + (H,)) if h is None else np.broadcast_to(h, x.shape[:-2] + (H,))
    out = []
    for t in range(x.shape[-2]):
        xt = x[..., t, :]
        r = np_sigmoid(xt @ Wxr.T + br + h @ Whr.T)
        z = np_sigmoid(xt @ Wxz.T + bz + h @ Whz.T)
        n = np.tanh(xt @ Wxn.T + bn + r * (h @ Whn.T + bhn))
        h = (1 - z) * n + z * h
        out.append(h)
    return np.stack(out, axis=-2)


def np_lstm(x, p, h=None, c=None):
    H = p["Wh"].shape[1]
    Ws = np.split(p["Wx"], 4)
    Us = np.split(p["Wh"], 4)
    bs = np.split(p["bias"], 4) if "bias" in p else [0] * 4
    shape = x.shape[:-2] + (H,)
    h = np.zeros(shape) if h is None else np.broadcast_to(h, shape)
    c = np.zeros(shape) if c is None else np.broadcast_to(c, shape)
    hs, cs = [], []
    for t in range(x.shape[-2]):
        xt = x[..., t, :]
        i, f, g, o = (xt @ W.T + h @ U.T + b for W, U, b in zip(Ws, Us, bs))
        c = np_sigmoid(f) * c + np_sigmoid(i) * np.tanh(g)
        h = np_sigmoid(o) * np.tanh(c)
        hs.append(h)
        cs.append(c)
    return np.stack(hs, axis=-2), np.stack(cs, axis=-2)


def np_linear(x, p, name):
    y = x @ p[name + ".weight"].T
    return y + p[name + ".bias"] if name + ".bias" in p else y


def np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_mha(p, prefix, q, k, v, heads, mask=None):
    """Multi-head attention with an explicit softmax: the projections of
    ``prefix`` (``'query_proj'`` ... under it), heads split from the
    features, a boolean, additive or ``'causal'`` mask."""
    Q, K, V = (np_linear(a, p, prefix + n) for a, n in
               [(q, "query_proj"), (k, "key_proj"), (v, "value_proj")])

    def split(a):
        b, n, f = a.shape
        return a.reshape(b, n, heads, f // heads).transpose(0, 2, 1, 3)

    Q, K, V = split(Q), split(K), split(V)
    s = Q @ K.transpose(0, 1, 3, 2) / math.sqrt(Q.shape[-1])
    if isinstance(mask, str):
        L, S = s.shape[-2:]
        mask = np.arange(S)[None, :] <= np.arange(L)[:, None] + (S - L)
    if mask is not None and mask.dtype == bool:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    o = np_softmax(s) @ V
    b, _, n, _ = o.shape
    return np_linear(o.transpose(0, 2, 1, 3).reshape(b, n, -1), p, prefix + "out_proj")


def np_layer_norm(x, p, name, eps=1e-5):
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    return y * p[name + ".weight"] + p[name + ".bias"]


def np_relu(x):
    return np.maximum(x, 0)


def np_encoder_layer(p, pre, x, mask, heads, norm_first, act=np_relu):
    def mlp(y):
        return np_linear(act(np_linear(y, p, pre + "linear1")), p, pre + "linear2")

    if norm_first:
        y = np_layer_norm(x, p, pre + "ln1")
        x = x + np_mha(p, pre + "attention.", y, y, y, heads, mask)
        return x + mlp(np_layer_norm(x, p, pre + "ln2"))
    x = np_layer_norm(x + np_mha(p, pre + "attention.", x, x, x, heads, mask), p, pre + "ln1")
    return np_layer_norm(x + mlp(x), p, pre + "ln2")


def np_decoder_layer(p, pre, x, mem, x_mask, mem_mask, heads, norm_first, act=np_relu):
    def mlp(y):
        return np_linear(act(np_linear(y, p, pre + "linear1")), p, pre + "linear2")

    if norm_first:
        y = np_layer_norm(x, p, pre + "ln1")
        x = x + np_mha(p, pre + "self_attention.", y, y, y, heads, x_mask)
        y = np_layer_norm(x, p, pre + "ln2")
        x = x + np_mha(p, pre + "cross_attention.", y, mem, mem, heads, mem_mask)
        return x + mlp(np_layer_norm(x, p, pre + "ln3"))
    x = np_layer_norm(x + np_mha(p, pre + "self_attention.", x, x, x, heads, x_mask), p, pre + "ln1")
    x = np_layer_norm(x + np_mha(p, pre + "cross_attention.", x, mem, mem, heads, mem_mask), p, pre + "ln2")
    return np_layer_norm(x + mlp(x), p, pre + "ln3")


def np_transformer(p, src, tgt, src_mask, tgt_mask, mem_mask, heads, n_enc, n_dec, norm_first):
    x = src
    for i in range(n_enc):
        x = np_encoder_layer(p, f"encoder.layers.{i}.", x, src_mask, heads, norm_first)
    mem = np_layer_norm(x, p, "encoder.ln")
    y = tgt
    for i in range(n_dec):
        y = np_decoder_layer(p, f"decoder.layers.{i}.", y, mem, tgt_mask, mem_mask, heads, norm_first)
    return np_layer_norm(y, p, "decoder.ln")


def np_rope(x, dims, traditional, base, scale, offset):
    x = np.asarray(x, np.float64)
    y = x.copy()
    half = dims // 2
    pos = (offset + np.arange(x.shape[-2]))[:, None] * scale
    ang = pos * base ** (-2.0 * np.arange(half) / dims)[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    if traditional:
        a, b = x[..., 0:dims:2], x[..., 1:dims:2]
        y[..., 0:dims:2] = a * cos - b * sin
        y[..., 1:dims:2] = a * sin + b * cos
    else:
        a, b = x[..., :half], x[..., half:dims]
        y[..., :half] = a * cos - b * sin
        y[..., half:dims] = a * sin + b * cos
    return y


def np_sinusoidal(x, dims, min_freq=1e-4, max_freq=1.0, scale=None, cos_first=False, full_turns=False):
    half = dims // 2
    # geometric from max_freq (first) down to min_freq (last)
    freqs = np.array([max_freq]) if half == 1 else np.geomspace(max_freq, min_freq, half)
    if full_turns:
        freqs = freqs * 2 * np.pi
    y = np.asarray(x, np.float64)[..., None] * freqs
    parts = [np.cos(y), np.sin(y)] if cos_first else [np.sin(y), np.cos(y)]
    return np.concatenate(parts, -1) * (math.sqrt(2 / dims) if scale is None else scale)


def np_alibi_slopes(n):
    def pow2(m):
        return [2.0 ** (-8.0 * (i + 1) / m) for i in range(m)]

    if n & (n - 1) == 0:
        return np.array(pow2(n))
    below = 1 << (n.bit_length() - 1)
    return np.array(pow2(below) + pow2(2 * below)[::2][:n - below])


def np_alibi(scores, offset=0, mask=None):
    _, heads, L, S = scores.shape
    i = offset + np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    bias = -np_alibi_slopes(heads)[:, None, None] * np.abs(i - j)
    return scores + bias[None] + (0 if mask is None else mask)


# --------------------------------------------------------------------------
# RNN, GRU, LSTM: parameters, init, forward
# --------------------------------------------------------------------------

def test_recurrent_parameters():
    shapes = {k: v.shape for k, v in utils.tree_flatten(nn.RNN(3, 5).parameters())}
    assert shapes == {"Wxh": (5, 3), "Whh": (5, 5), "bias": (5,)}
    shapes = {k: v.shape for k, v in utils.tree_flatten(nn.GRU(3, 5).parameters())}
    assert shapes == {"Wx": (15, 3), "Wh": (15, 5), "b": (15,), "bhn": (5,)}
    shapes = {k: v.shape for k, v in utils.tree_flatten(nn.LSTM(3, 5).parameters())}
    assert shapes == {"Wx": (20, 3), "Wh": (20, 5), "bias": (20,)}
    assert sorted(nn.RNN(3, 5, bias=False).parameters()) == ["Whh", "Wxh"]
    assert sorted(nn.GRU(3, 5, bias=False).parameters()) == ["Wh", "Wx"]
    assert sorted(nn.LSTM(3, 5, bias=False).parameters()) == ["Wh", "Wx"]
    assert nn.RNN(3, 5, bias=False).bias is None
    assert nn.GRU(3, 5, bias=False).b is None and nn.GRU(3, 5, bias=False).bhn is None
    assert nn.RNN(3, 5).hidden_size == 5 and nn.LSTM(3, 5).hidden_size == 5
    assert nn.RNN(3, 5).nonlinearity is nn.tanh


def test_recurrent_init_distribution():
    """Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
    def check_uniform(a, bound):
        a = np.array(a)
        # bounds 5 standard errors wide for the sample's size (a uniform's
        # sample std has relative standard error sqrt(0.2 / n))
        assert np.abs(a).max() <= bound and np.abs(a).max() > (1 - 10 / a.size) * bound
        sd = bound / math.sqrt(3)
        assert abs(a.mean()) < 5 * sd / math.sqrt(a.size)
        assert abs(a.std() - sd) < 5 * math.sqrt(0.2 / a.size) * sd

    mx.random.seed(3)
    for layer in [nn.RNN(40, 64), nn.GRU(40, 64), nn.LSTM(40, 64)]:
        for name, p in utils.tree_flatten(layer.parameters()):
            assert p.dtype == mx.float32, name
            check_uniform(p, 1 / 8)


@pytest.mark.parametrize("dtype,tol", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_state", [False, True])
def test_rnn_forward(dtype, tol, batched, bias, with_state, rng):
    layer = nn.RNN(3, 4, bias=bias)
    dt = as_dtype(layer, dtype)
    p = params_np(layer)
    shape = (2, 5, 3) if batched else (5, 3)
    x = rng.standard_normal(shape)
    h = rng.standard_normal(shape[:-2] + (4,)) if with_state else None
    y = layer(arr(x, dt), None if h is None else arr(h, dt))
    assert y.shape == shape[:-1] + (4,) and y.dtype == dt
    close(y, np_rnn(x, p, h), **tol)


def test_rnn_nonlinearity(rng):
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    layer = nn.RNN(3, 4, nonlinearity=nn.relu)
    assert layer.nonlinearity is nn.relu
    close(layer(arr(x)), np_rnn(x, params_np(layer), act=np_relu), **F32_TOL)

    def sq(v):
        return v * v * 0.5

    layer = nn.RNN(3, 4, nonlinearity=sq)
    close(layer(arr(x)), np_rnn(x, params_np(layer), act=lambda v: v * v * 0.5), **F32_TOL)
    with raises(ValueError, "must be callable"):
        nn.RNN(3, 4, nonlinearity=3)


@ember_only
def test_rnn_nonlinearity_module(rng):
    """A module as the nonlinearity is used (MLX 0.32.4 tests
    ``nonlinearity or tanh``, and a module without parameters is an empty,
    false dict: MLX silently uses tanh for ``nn.ReLU()``)."""
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    layer = nn.RNN(3, 4, nonlinearity=nn.ReLU())
    assert isinstance(layer.nonlinearity, nn.ReLU)
    close(layer(arr(x)), np_rnn(x, params_np(layer), act=np_relu), **F32_TOL)


@pytest.mark.parametrize("dtype,tol", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_state", [False, True])
def test_gru_forward(dtype, tol, batched, bias, with_state, rng):
    layer = nn.GRU(3, 4, bias=bias)
    dt = as_dtype(layer, dtype)
    p = params_np(layer)
    shape = (2, 6, 3) if batched else (6, 3)
    x = rng.standard_normal(shape)
    h = rng.standard_normal(shape[:-2] + (4,)) if with_state else None
    y = layer(arr(x, dt), None if h is None else arr(h, dt))
    assert y.shape == shape[:-1] + (4,) and y.dtype == dt
    close(y, np_gru(x, p, h), **tol)


@pytest.mark.parametrize("dtype,tol", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("state", ["none", "hidden", "cell", "both"])
def test_lstm_forward(dtype, tol, batched, bias, state, rng):
    layer = nn.LSTM(3, 4, bias=bias)
    dt = as_dtype(layer, dtype)
    p = params_np(layer)
    shape = (2, 5, 3) if batched else (5, 3)
    x = rng.standard_normal(shape)
    hshape = shape[:-2] + (4,)
    h = rng.standard_normal(hshape) if state in ("hidden", "both") else None
    c = rng.standard_normal(hshape) if state in ("cell", "both") else None
    out = layer(arr(x, dt), None if h is None else arr(h, dt), None if c is None else arr(c, dt))
    assert isinstance(out, tuple) and len(out) == 2
    hs, cs = out
    want_h, want_c = np_lstm(x, p, h, c)
    for got in (hs, cs):
        assert got.shape == shape[:-1] + (4,) and got.dtype == dt
    close(hs, want_h, **tol)
    close(cs, want_c, **tol)


def test_recurrent_extra_batch_axes(rng):
    """Leading axes beyond one batch axis are batch axes too."""
    x = rng.standard_normal((2, 3, 4, 3)).astype(np.float32)
    rnn, gru, lstm = nn.RNN(3, 2), nn.GRU(3, 2), nn.LSTM(3, 2)
    close(rnn(arr(x)), np_rnn(x, params_np(rnn)), **F32_TOL)
    close(gru(arr(x)), np_gru(x, params_np(gru)), **F32_TOL)
    close(lstm(arr(x))[1], np_lstm(x, params_np(lstm))[1], **F32_TOL)


def test_recurrent_batched_equals_unbatched(rng):
    """A batched call is the unbatched calls stacked."""
    x = rng.standard_normal((3, 4, 2)).astype(np.float32)
    h = rng.standard_normal((3, 5)).astype(np.float32)
    for layer in [nn.RNN(2, 5), nn.GRU(2, 5), nn.LSTM(2, 5)]:
        out = layer(arr(x), arr(h))
        out = out[0] if isinstance(out, tuple) else out
        for i in range(3):
            one = layer(arr(x[i]), arr(h[i]))
            one = one[0] if isinstance(one, tuple) else one
            close(out[i], to_numpy(one), rtol=1e-6, atol=1e-6)


def _f64_exact(make):
    """A layer whose float64 math MLX computes at float32 accuracy."""
    return pytest.param(make, marks=ember_only)


@pytest.mark.parametrize("make", [lambda: nn.RNN(3, 4), lambda: nn.RNN(3, 4, bias=False),
                                  lambda: nn.RNN(3, 4, nonlinearity=nn.relu), _f64_exact(lambda: nn.GRU(3, 4)),
                                  _f64_exact(lambda: nn.GRU(3, 4, bias=False)), _f64_exact(lambda: nn.LSTM(3, 4)),
                                  _f64_exact(lambda: nn.LSTM(3, 4, bias=False))],
                         ids=["rnn", "rnn-nobias", "rnn-relu", "gru", "gru-nobias", "lstm", "lstm-nobias"])
@pytest.mark.parametrize("batched", [True, False])
def test_recurrent_grads(make, batched, rng):
    layer = make()
    shape = (2, 3, 3) if batched else (3, 3)
    x = rng.standard_normal(shape)
    states = [rng.standard_normal(shape[:-2] + (4,)) for _ in range(2 if isinstance(layer, nn.LSTM) else 1)]
    # without an initial state: the input and the parameters
    grad_check_layer(layer, [x], rng)
    # with one: its derivative too
    grad_check_layer(layer, [x] + states, rng)
    if isinstance(layer, nn.LSTM):
        grad_check_layer(layer, [x, None, states[1]], rng)


def test_rnn_vmap(rng):
    """vmap over the batch of an unbatched call equals the Python loop,
    and the batched call."""
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    h = rng.standard_normal((4, 6)).astype(np.float32)
    for layer in [nn.RNN(3, 6), nn.GRU(3, 6), nn.LSTM(3, 6)]:
        check_vmap(lambda a: layer(a), [x])
        check_vmap(lambda a, s: layer(a, s), [x, h])
        # the sequence axis mapped: each step alone is a one-step sequence
        check_vmap(lambda a: layer(a[None]), [x], in_axes=1, out_axes=1)
        batched = layer(arr(x), arr(h))
        mapped = mx.vmap(lambda a, s: layer(a, s))(arr(x), arr(h))
        for b, m in zip(batched if isinstance(batched, tuple) else [batched],
                        mapped if isinstance(mapped, tuple) else [mapped]):
            close(m, to_numpy(b), rtol=1e-6, atol=1e-6)


@ember_only
def test_rnn_vmap_shared_state(rng):
    """An initial state shared by the mapped batch (in_axes None). MLX
    0.32.4 raises from addmm's vmap rule here ("input c must broadcast to
    the output shape": the step's input is batched, the state is not)."""
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    h = rng.standard_normal((6,)).astype(np.float32)
    for layer in [nn.RNN(3, 6), nn.GRU(3, 6), nn.LSTM(3, 6)]:
        check_vmap(lambda a, s: layer(a, s), [x, h], in_axes=(0, None))


def test_recurrent_bad_input():
    cases = [
        (lambda: nn.RNN(3, 4)(mx.zeros((2, 5, 4))), r"\[RNN\].*\(2, 5, 4\)"),
        (lambda: nn.GRU(3, 4)(mx.zeros((5, 2))), r"\[GRU\].*\(5, 2\)"),
        (lambda: nn.LSTM(3, 4)(mx.zeros((2, 5, 4))), r"\[LSTM\].*\(2, 5, 4\)"),
        (lambda: nn.RNN(3, 4)(mx.zeros((2, 5, 3)), mx.zeros((2, 5))), r"\[RNN\].*hidden.*\(2, 5\)"),
        (lambda: nn.GRU(3, 4)(mx.zeros((2, 5, 3)), mx.zeros((2, 3))), r"\[GRU\].*hidden.*\(2, 3\)"),
        (lambda: nn.LSTM(3, 4)(mx.zeros((2, 5, 3)), mx.zeros((2, 4)), mx.zeros((2, 3))),
         r"\[LSTM\].*cell.*\(2, 3\)"),
        (lambda: nn.LSTM(3, 4)(mx.zeros((2, 5, 3)), mx.zeros((2, 3))), r"\[LSTM\].*hidden.*\(2, 3\)"),
        (lambda: nn.RNN(3, 4)(mx.zeros((2, 0, 3))), r"\[RNN\].*at least one step.*\(2, 0, 3\)"),
        (lambda: nn.LSTM(3, 4)(mx.zeros((0, 3))), r"\[LSTM\].*at least one step.*\(0, 3\)"),
    ]
    for call, msg in cases:
        with raises(ValueError, msg):
            call()


@ember_only
def test_recurrent_bad_rank():
    """A single step without a sequence axis is a ValueError naming the
    layer (MLX 0.32.4: an IndexError from Python's tuple indexing)."""
    for layer, name in [(nn.RNN(3, 4), "RNN"), (nn.GRU(3, 4), "GRU"), (nn.LSTM(3, 4), "LSTM")]:
        with raises(ValueError, rf"\[{name}\].*\(N, L, 3\) or \(L, 3\).*\(3,\)"):
            layer(mx.zeros((3,)))
        with raises(ValueError, rf"\[{name}\].*\(\)"):
            layer(mx.array(1.0))


@ember_only
def test_recurrent_state_broadcast(rng):
    """An initial state broadcasts to the batch in every layer (MLX 0.32.4
    accepts it in GRU but raises from addmm in RNN and LSTM)."""
    x = rng.standard_normal((3, 4, 2)).astype(np.float32)
    h = rng.standard_normal((5,)).astype(np.float32)
    rnn, gru, lstm = nn.RNN(2, 5), nn.GRU(2, 5), nn.LSTM(2, 5)
    close(rnn(arr(x), arr(h)), np_rnn(x, params_np(rnn), h), **F32_TOL)
    close(gru(arr(x), arr(h)), np_gru(x, params_np(gru), h), **F32_TOL)
    close(lstm(arr(x), arr(h), arr(h))[0], np_lstm(x, params_np(lstm), h, h)[0], **F32_TOL)
    with raises(ValueError, r"\[RNN\].*hidden.*\(3, 5\).*\(2, 5\)"):
        rnn(arr(x), mx.zeros((2, 5)))


# --------------------------------------------------------------------------
# MultiHeadAttention
# --------------------------------------------------------------------------

def test_mha_parameters():
    m = nn.MultiHeadAttention(8, 2, query_input_dims=3, key_input_dims=5, value_dims=4, value_output_dims=6,
                              bias=True)
    shapes = {k: v.shape for k, v in utils.tree_flatten(m.parameters())}
    assert shapes == {"query_proj.weight": (8, 3), "query_proj.bias": (8,), "key_proj.weight": (8, 5),
                      "key_proj.bias": (8,), "value_proj.weight": (4, 5), "value_proj.bias": (4,),
                      "out_proj.weight": (6, 4), "out_proj.bias": (6,)}
    shapes = {k: v.shape for k, v in utils.tree_flatten(nn.MultiHeadAttention(6, 3).parameters())}
    assert shapes == {f"{n}.weight": (6, 6) for n in ["query_proj", "key_proj", "value_proj", "out_proj"]}
    assert nn.MultiHeadAttention(6, 3).num_heads == 3
    with raises(ValueError, r"divisible by the number of heads \(8 % 3\)", mlx_msg=True):
        nn.MultiHeadAttention(8, 3)


MHA_CONFIGS = [
    dict(dims=8, num_heads=2),
    dict(dims=8, num_heads=4, bias=True),
    dict(dims=6, num_heads=3, query_input_dims=5, key_input_dims=4, value_input_dims=7, value_dims=9,
         value_output_dims=2),
    dict(dims=4, num_heads=1, key_input_dims=3, bias=True),  # values take key_input_dims
]


@pytest.mark.parametrize("dtype,tol", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("cfg", MHA_CONFIGS, ids=["plain", "bias", "dims", "value-default"])
def test_mha_forward(cfg, dtype, tol, rng):
    m = nn.MultiHeadAttention(**cfg)
    dt = as_dtype(m, dtype)
    p = params_np(m)
    qd = cfg.get("query_input_dims") or cfg["dims"]
    kd = cfg.get("key_input_dims") or cfg["dims"]
    vd = cfg.get("value_input_dims") or kd
    q, k, v = rng.standard_normal((2, 5, qd)), rng.standard_normal((2, 7, kd)), rng.standard_normal((2, 7, vd))
    y = m(arr(q, dt), arr(k, dt), arr(v, dt))
    out_dims = cfg.get("value_output_dims") or cfg["dims"]
    assert y.shape == (2, 5, out_dims) and y.dtype == dt
    close(y, np_mha(p, "", q, k, v, cfg["num_heads"]), **tol)


MASKS = ["additive-2d", "additive-4d", "bool-2d", "bool-heads", "causal-str", "causal-mask", "int"]


def make_mask(kind, rng, L, S, heads=2, batch=2):
    """(mx mask or 'causal', its NumPy form)."""
    if kind == "additive-2d":
        m = rng.standard_normal((L, S))
        return m, m
    if kind == "additive-4d":
        m = rng.standard_normal((batch, 1, L, S))
        return m, m
    if kind == "bool-2d":
        m = rng.random((L, S)) < 0.7
        m[:, 0] = True  # every query sees a key
        return m, m
    if kind == "bool-heads":
        m = rng.random((1, heads, L, S)) < 0.6
        m[..., 0] = True
        return m, m
    if kind == "causal-str":
        return "causal", "causal"
    if kind == "int":
        m = rng.integers(-3, 3, (L, S)).astype(np.int32)
        return m, m.astype(np.float64)
    return None, None


@pytest.mark.parametrize("dtype,tol", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("kind", MASKS)
def test_mha_masks(kind, dtype, tol, rng):
    m = nn.MultiHeadAttention(8, 2, bias=True)
    dt = as_dtype(m, dtype)
    p = params_np(m)
    L, S = (6, 6) if kind.startswith("causal") else (4, 6)
    q, kv = rng.standard_normal((2, L, 8)), rng.standard_normal((2, S, 8))
    if kind == "causal-mask":
        mask = nn.MultiHeadAttention.create_additive_causal_mask(L, dt)
        ref = np.where(np.arange(L)[:, None] < np.arange(L)[None, :], -np.inf, 0.0)
    else:
        mask_np, ref = make_mask(kind, rng, L, S)
        if isinstance(mask_np, str):
            mask = mask_np
        elif mask_np.dtype == bool or mask_np.dtype == np.int32:
            mask = mx.array(mask_np)
        else:
            mask = arr(mask_np, dt)
    y = m(arr(q, dt), arr(kv, dt), arr(kv, dt), mask=mask)
    assert y.shape == (2, L, 8) and y.dtype == dt
    close(y, np_mha(p, "", q, kv, kv, 2, ref), **tol)


def test_mha_causal_forms_agree(rng):
    """'causal', the additive causal mask and the boolean lower triangle
    give the same attention."""
    m = nn.MultiHeadAttention(8, 4)
    x = arr(rng.standard_normal((2, 5, 8)))
    a = m(x, x, x, mask="causal")
    b = m(x, x, x, mask=nn.MultiHeadAttention.create_additive_causal_mask(5))
    c = m(x, x, x, mask=mx.array(np.tril(np.ones((5, 5), bool))))
    close(a, to_numpy(b), rtol=1e-5, atol=1e-6)
    close(a, to_numpy(c), rtol=1e-5, atol=1e-6)
    # the first position sees only itself: changing later ones leaves it
    x2 = np.array(x)
    x2[:, 1:] += 1.0
    close(m(arr(x2), arr(x2), arr(x2), mask="causal")[:, 0], to_numpy(a[:, 0]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("n", [0, 1, 4])
def test_create_additive_causal_mask(dtype, n):
    dt = getattr(mx, dtype)
    mask = nn.MultiHeadAttention.create_additive_causal_mask(n, dt)
    assert mask.shape == (n, n) and mask.dtype == dt
    lowest = float(mx.finfo(dt).min)
    want = np.where(np.arange(n)[:, None] < np.arange(n)[None, :], lowest, 0.0)
    np.testing.assert_array_equal(to_numpy(mask).astype(np.float64), want)
    assert nn.MultiHeadAttention.create_additive_causal_mask(3).dtype == mx.float32
    with raises(ValueError, "not inexact"):
        nn.MultiHeadAttention.create_additive_causal_mask(3, mx.int32)


@ember_only  # softmax: see DTYPES
@pytest.mark.parametrize("cfg", MHA_CONFIGS, ids=["plain", "bias", "dims", "value-default"])
def test_mha_grads(cfg, rng):
    m = nn.MultiHeadAttention(**cfg)
    qd = cfg.get("query_input_dims") or cfg["dims"]
    kd = cfg.get("key_input_dims") or cfg["dims"]
    vd = cfg.get("value_input_dims") or kd
    q, k, v = rng.standard_normal((2, 3, qd)), rng.standard_normal((2, 4, kd)), rng.standard_normal((2, 4, vd))
    grad_check_layer(m, [q, k, v], rng)
    mask = mx.array(rng.standard_normal((3, 4)), dtype=mx.float64)
    grad_check_layer(m, [q, k, v], rng, mask=mask)
    grad_check_layer(m, [q, k, v], rng, mask=mx.array(np.tril(np.ones((3, 4), bool))))


def test_mha_bad_input():
    m = nn.MultiHeadAttention(8, 2, key_input_dims=6)
    cases = [
        ((mx.zeros((5, 8)), mx.zeros((6, 6)), mx.zeros((6, 6))), r"\(5, 8\), \(6, 6\), \(6, 6\)"),
        ((mx.zeros((2, 5, 7)), mx.zeros((2, 6, 6)), mx.zeros((2, 6, 6))), r"\(2, 5, 7\)"),
        ((mx.zeros((2, 5, 8)), mx.zeros((2, 6, 8)), mx.zeros((2, 6, 6))), r"\(2, 6, 8\)"),
        ((mx.zeros((2, 5, 8)), mx.zeros((2, 6, 6)), mx.zeros((2, 7, 6))), r"\(2, 6, 6\), \(2, 7, 6\)"),
        ((mx.zeros((2, 5, 8)), mx.zeros((3, 6, 6)), mx.zeros((3, 6, 6))), r"\(2, 5, 8\), \(3, 6, 6\)"),
        ((mx.zeros((1, 2, 5, 8)), mx.zeros((1, 2, 6, 6)), mx.zeros((1, 2, 6, 6))), r"\(1, 2, 5, 8\)"),
    ]
    for args, shapes in cases:
        with raises(ValueError, r"\[MultiHeadAttention\].*" + shapes):
            m(*args)
    x = mx.zeros((2, 5, 8))
    with raises(ValueError, r"\[MultiHeadAttention\].*mask.*\(5, 7\).*\(2, 2, 5, 5\)"):
        nn.MultiHeadAttention(8, 2)(x, x, x, mask=mx.zeros((5, 7)))
    with raises(ValueError, "Mask type must promote", mlx_msg=True):
        nn.MultiHeadAttention(8, 2)(x, x, x, mask=mx.zeros((5, 5), dtype=mx.float64))
    with raises(ValueError, r"value dimensions.*\(5 % 2\)"):
        nn.MultiHeadAttention(8, 2, value_dims=5)(x, x, x)


# --------------------------------------------------------------------------
# Transformer layers and stacks
# --------------------------------------------------------------------------

def perturb_norms(layer, rng):
    """LayerNorm weights and biases away from ones and zeros, so the test
    sees them."""
    def bump(path, p):
        if ".ln" in "." + path or path.startswith("ln"):
            return p + mx.array(rng.uniform(-0.5, 0.5, p.shape).astype(np.float32), dtype=p.dtype)
        return p

    flat = utils.tree_flatten(layer.parameters())
    layer.update(utils.tree_unflatten([(k, bump(k, v)) for k, v in flat]))


def test_transformer_layer_parameters():
    enc = nn.TransformerEncoderLayer(8, 2)
    shapes = {k: v.shape for k, v in utils.tree_flatten(enc.parameters())}
    assert shapes == {**{f"attention.{n}.weight": (8, 8) for n in ["query_proj", "key_proj", "value_proj",
                                                                      "out_proj"]},
                      "ln1.weight": (8,), "ln1.bias": (8,), "ln2.weight": (8,), "ln2.bias": (8,),
                      "linear1.weight": (32, 8), "linear1.bias": (32,), "linear2.weight": (8, 32),
                      "linear2.bias": (8,)}
    dec = nn.TransformerDecoderLayer(8, 2, mlp_dims=12)
    keys = {k for k, _ in utils.tree_flatten(dec.parameters())}
    assert {k.split(".")[0] for k in keys} == {"self_attention", "cross_attention", "ln1", "ln2", "ln3",
                                                "linear1", "linear2"}
    assert dec.linear1.weight.shape == (12, 8)
    assert enc.norm_first is True and enc.activation is nn.relu
    stack = nn.TransformerEncoder(3, 8, 2)
    assert len(stack.layers) == 3 and stack.checkpoint is False
    assert {k.split(".")[0] for k, _ in utils.tree_flatten(stack.parameters())} == {"layers", "ln"}
    t = nn.Transformer(8, 2, 2, 3)
    assert len(t.encoder.layers) == 2 and len(t.decoder.layers) == 3
    assert isinstance(t.encoder, nn.TransformerEncoder) and isinstance(t.decoder, nn.TransformerDecoder)
    assert t.encoder.layers[0].dropout1.training
    d = nn.Transformer()
    assert len(d.encoder.layers) == 6 and d.encoder.layers[0].linear1.weight.shape == (2048, 512)
    assert d.encoder.layers[0].attention.num_heads == 8


@pytest.mark.parametrize("dtype,tol", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("norm_first", [True, False])
def test_encoder_layer_forward(norm_first, dtype, tol, rng):
    layer = nn.TransformerEncoderLayer(8, 2, mlp_dims=12, norm_first=norm_first)
    perturb_norms(layer, rng)
    dt = as_dtype(layer, dtype)
    p = params_np(layer)
    x = rng.standard_normal((2, 5, 8))
    mask_np = rng.standard_normal((5, 5))
    y = layer(arr(x, dt), arr(mask_np, dt))
    assert y.shape == (2, 5, 8) and y.dtype == dt
    close(y, np_encoder_layer(p, "", x, mask_np, 2, norm_first), **tol)
    close(layer(arr(x, dt), None), np_encoder_layer(p, "", x, None, 2, norm_first), **tol)


@pytest.mark.parametrize("dtype,tol", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_layer_forward(norm_first, dtype, tol, rng):
    layer = nn.TransformerDecoderLayer(8, 4, norm_first=norm_first)
    perturb_norms(layer, rng)
    dt = as_dtype(layer, dtype)
    p = params_np(layer)
    x, mem = rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 6, 8))
    mem_mask = rng.random((4, 6)) < 0.7
    mem_mask[:, 0] = True
    y = layer(arr(x, dt), arr(mem, dt), "causal", mx.array(mem_mask))
    assert y.shape == (2, 4, 8) and y.dtype == dt
    close(y, np_decoder_layer(p, "", x, mem, "causal", mem_mask, 4, norm_first), **tol)


def test_layer_activation(rng):
    """The activation argument replaces relu in the MLP."""
    layer = nn.TransformerEncoderLayer(4, 2, activation=nn.gelu)
    assert layer.activation is nn.gelu
    p = params_np(layer)
    x = rng.standard_normal((1, 3, 4)).astype(np.float32)

    def np_gelu(v):
        from math import erf
        return v * 0.5 * (1 + np.vectorize(erf)(v / math.sqrt(2)))

    close(layer(arr(x), None), np_encoder_layer(p, "", x, None, 2, True, act=np_gelu), **F32_TOL)


@pytest.mark.parametrize("dtype,tol", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_forward(norm_first, dtype, tol, rng):
    t = nn.Transformer(dims=8, num_heads=2, num_encoder_layers=2, num_decoder_layers=1, mlp_dims=16,
                       norm_first=norm_first)
    perturb_norms(t, rng)
    dt = as_dtype(t, dtype)
    p = params_np(t)
    src, tgt = rng.standard_normal((2, 6, 8)), rng.standard_normal((2, 4, 8))
    src_mask = rng.standard_normal((6, 6))
    y = t(arr(src, dt), arr(tgt, dt), arr(src_mask, dt), nn.MultiHeadAttention.create_additive_causal_mask(4, dt),
          None)
    assert y.shape == (2, 4, 8) and y.dtype == dt
    tgt_mask = np.where(np.arange(4)[:, None] < np.arange(4)[None, :], -np.inf, 0.0)
    close(y, np_transformer(p, src, tgt, src_mask, tgt_mask, None, 2, 2, 1, norm_first), **tol)
    # the stacks alone
    mem = t.encoder(arr(src, dt), None)
    assert mem.shape == (2, 6, 8) and mem.dtype == dt
    y2 = t.decoder(arr(tgt, dt), mem, None, None)
    close(y2, np_transformer(p, src, tgt, None, None, None, 2, 2, 1, norm_first), **tol)


FLOAT64_LAYERS = {
    "RNN": (lambda: nn.RNN(3, 4), lambda m, x: m(x), lambda p, x: np_rnn(x, p)),
    "GRU": (lambda: nn.GRU(3, 4), lambda m, x: m(x), lambda p, x: np_gru(x, p)),
    "LSTM": (lambda: nn.LSTM(3, 4), lambda m, x: m(x)[1], lambda p, x: np_lstm(x, p)[1]),
    "MultiHeadAttention": (lambda: nn.MultiHeadAttention(3, 1, bias=True), lambda m, x: m(x, x, x, mask="causal"),
                           lambda p, x: np_mha(p, "", x, x, x, 1, "causal")),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(3, 1), lambda m, x: m(x, None),
                                lambda p, x: np_encoder_layer(p, "", x, None, 1, True)),
    "RoPE": (lambda: nn.RoPE(2), lambda m, x: m(x[None], offset=1)[0],
             lambda p, x: np_rope(x[None], 2, False, 10000.0, 1.0, 1)[0]),
    "SinusoidalPositionalEncoding": (lambda: nn.SinusoidalPositionalEncoding(4), lambda m, x: m(x),
                                     lambda p, x: np_sinusoidal(x, 4)),
    "ALiBi": (lambda: nn.ALiBi(), lambda m, x: m(x[None]), lambda p, x: np_alibi(x[None])),
}


@pytest.mark.parametrize("name", list(FLOAT64_LAYERS))
def test_float64_flows_through(name, rng):
    """float64 parameters and inputs give float64 results (on MLX too, at
    its float32-accurate exp: values only to 1e-6 here; DTYPES holds
    Ember's float64 accuracy)."""
    make, call, ref = FLOAT64_LAYERS[name]
    layer = make()
    layer.set_dtype(mx.float64)
    x = rng.standard_normal((2, 5, 3))
    y = call(layer, arr(x, mx.float64))
    assert y.dtype == mx.float64
    close(y, ref(params_np(layer), x), rtol=1e-6, atol=1e-6)


def test_transformer_shapes():
    t = nn.Transformer(dims=16, num_heads=4, num_encoder_layers=1, num_decoder_layers=2)
    for b, s, l in [(1, 1, 1), (3, 7, 2), (2, 2, 9)]:
        y = t(mx.zeros((b, s, 16)), mx.ones((b, l, 16)), None, "causal", None)
        assert y.shape == (b, l, 16) and y.dtype == mx.float32
    with raises(ValueError, r"\[MultiHeadAttention\].*\(7, 16\)"):
        t(mx.zeros((7, 16)), mx.zeros((7, 16)), None, None, None)


def test_transformer_custom_parts(rng):
    class Enc(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def __call__(self, x, mask):
            return self.proj(x) * 2

    class Dec(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = mx.array(3.0)

        def __call__(self, x, memory, x_mask, memory_mask):
            return x + memory.mean(axis=1, keepdims=True) * self.scale

    enc, dec = Enc(), Dec()
    t = nn.Transformer(dims=8, num_heads=2, custom_encoder=enc, custom_decoder=dec)
    assert t.encoder is enc and t.decoder is dec
    assert {k for k, _ in utils.tree_flatten(t.parameters())} == {"encoder.proj.weight", "encoder.proj.bias",
                                                                   "decoder.scale"}
    src, tgt = rng.standard_normal((2, 3, 8)), rng.standard_normal((2, 5, 8))
    p = params_np(enc)
    mem = (src @ p["proj.weight"].T + p["proj.bias"]) * 2
    close(t(arr(src), arr(tgt), None, None, None), tgt + mem.mean(1, keepdims=True) * 3, **F32_TOL)
    # only one replaced: the other is built
    t2 = nn.Transformer(dims=8, num_heads=2, num_decoder_layers=2, custom_encoder=enc)
    assert t2.encoder is enc and isinstance(t2.decoder, nn.TransformerDecoder) and len(t2.decoder.layers) == 2


def test_transformer_dropout_modes(rng):
    """Dropout acts in training mode only; in evaluation mode the model is
    the same function as one without dropout."""
    t = nn.Transformer(dims=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, dropout=0.5)
    ref = nn.Transformer(dims=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, dropout=0.0)
    ref.update(t.parameters())
    assert t.encoder.layers[0].dropout1.training
    src, tgt = arr(rng.standard_normal((2, 5, 8))), arr(rng.standard_normal((2, 4, 8)))
    a = to_numpy(t(src, tgt, None, None, None))
    b = to_numpy(t(src, tgt, None, None, None))
    want = to_numpy(ref(src, tgt, None, None, None))
    assert not np.allclose(a, b) and not np.allclose(a, want)
    t.eval()
    assert not t.training and not t.decoder.layers[0].dropout3.training
    close(t(src, tgt, None, None, None), want, rtol=1e-6, atol=1e-6)
    close(t(src, tgt, None, None, None), want, rtol=1e-6, atol=1e-6)
    t.train()
    assert not np.allclose(to_numpy(t(src, tgt, None, None, None)), want)


def _transformer_loss(t, src, tgt):
    def loss():
        return (t(src, tgt, None, "causal", None) ** 2).mean()
    return nn.value_and_grad(t, loss)()


def test_transformer_checkpoint_gradients(rng):
    """checkpoint=True gives the same value and gradients; the layers are
    recomputed in the backward pass (the activation runs again)."""
    calls = {"n": 0}

    def counted_relu(x):
        calls["n"] += 1
        return nn.relu(x)

    kw = dict(dims=8, num_heads=2, num_encoder_layers=2, num_decoder_layers=2, mlp_dims=16,
              activation=counted_relu)
    plain = nn.Transformer(**kw)
    ck = nn.Transformer(checkpoint=True, **kw)
    assert ck.encoder.checkpoint and ck.decoder.checkpoint and not plain.encoder.checkpoint
    ck.update(plain.parameters())
    src, tgt = arr(rng.standard_normal((2, 5, 8))), arr(rng.standard_normal((2, 3, 8)))
    calls["n"] = 0
    v1, g1 = _transformer_loss(plain, src, tgt)
    mx.eval(v1, g1)
    plain_calls = calls["n"]
    calls["n"] = 0
    v2, g2 = _transformer_loss(ck, src, tgt)
    mx.eval(v2, g2)
    assert calls["n"] > plain_calls == 4
    close(v2, to_numpy(v1), rtol=1e-6, atol=1e-7)
    f1, f2 = dict(utils.tree_flatten(g1)), dict(utils.tree_flatten(g2))
    assert f1.keys() == f2.keys() and len(f1) > 0
    for k in f1:
        close(f2[k], to_numpy(f1[k]), rtol=1e-5, atol=1e-6)
    # the checkpointed model's parameters are its own arrays again afterwards
    for k, v in utils.tree_flatten(ck.parameters()):
        assert isinstance(v, mx.array)
    close(ck(src, tgt, None, None, None), to_numpy(plain(src, tgt, None, None, None)), rtol=1e-6, atol=1e-6)


@ember_only  # see DTYPES
def test_transformer_grads(rng):
    """Finite differences through a whole (small) transformer, float64,
    both normalisation orders."""
    for norm_first in (True, False):
        t = nn.Transformer(dims=4, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, mlp_dims=6,
                           norm_first=norm_first)
        src, tgt = rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 2, 4))
        grad_check_layer(t, [src, tgt, None, "causal", None], rng)


@ember_only  # see DTYPES
@pytest.mark.parametrize("norm_first", [True, False])
def test_layer_grads(norm_first, rng):
    enc = nn.TransformerEncoderLayer(4, 2, mlp_dims=6, norm_first=norm_first)
    perturb_norms(enc, rng)
    grad_check_layer(enc, [rng.standard_normal((2, 3, 4)), None], rng)
    dec = nn.TransformerDecoderLayer(4, 2, mlp_dims=6, norm_first=norm_first)
    perturb_norms(dec, rng)
    mem_mask = mx.array(rng.standard_normal((3, 2)), dtype=mx.float64)
    grad_check_layer(dec, [rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 2, 4)), "causal", mem_mask],
                     rng)


# --------------------------------------------------------------------------
# RoPE, SinusoidalPositionalEncoding, ALiBi
# --------------------------------------------------------------------------

ROPE_CASES = [
    dict(dims=8),
    dict(dims=8, traditional=True),
    dict(dims=4, base=500.0, scale=0.5),
    dict(dims=6, traditional=True, scale=2.0),
]


@pytest.mark.parametrize("dtype,tol", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("kw", ROPE_CASES, ids=["default", "traditional", "partial", "partial-traditional"])
@pytest.mark.parametrize("offset", [0, 3])
def test_rope(kw, offset, dtype, tol, rng):
    rope = nn.RoPE(**kw)
    dt = getattr(mx, dtype)
    x = rng.standard_normal((2, 3, 5, 8))
    y = rope(arr(x, dt), offset=offset)
    assert y.shape == x.shape and y.dtype == dt
    want = np_rope(x, kw["dims"], kw.get("traditional", False), kw.get("base", 10000.0), kw.get("scale", 1.0),
                   offset)
    close(y, want, **tol)
    if offset:
        close(rope(arr(x, dt), offset=mx.array(offset)), want, **tol)
    assert rope.parameters() == {}


def test_rope_defaults_and_grads(rng):
    rope = nn.RoPE(4)
    assert (rope.dims, rope.traditional, rope.base, rope.scale) == (4, False, 10000, 1.0)
    x = rng.standard_normal((1, 4, 6))
    check_grads(lambda a: rope(a, offset=2), [x], rng=rng)
    check_grads(lambda a: nn.RoPE(6, traditional=True)(a), [x], rng=rng)
    with raises(ValueError, "at least 3 dimensions", mlx_msg=True):
        rope(mx.zeros((4, 6)))


@pytest.mark.parametrize("kw", [dict(dims=8), dict(dims=6, cos_first=True), dict(dims=2),
                                dict(dims=10, min_freq=0.01, max_freq=3.0, scale=1.5, full_turns=True),
                                dict(dims=4, scale=1.0)],
                         ids=["default", "cos-first", "two", "options", "unit-scale"])
def test_sinusoidal(kw, rng):
    pe = nn.SinusoidalPositionalEncoding(**kw)
    assert pe.parameters() == {}
    x = np.arange(12).reshape(3, 4)
    y = pe(mx.array(x))
    assert y.shape == (3, 4, kw["dims"]) and y.dtype == mx.float32
    close(y, np_sinusoidal(x, **kw), rtol=1e-5, atol=2e-5)


@ember_only  # float64 sin and cos: see DTYPES
@pytest.mark.parametrize("kw", [dict(dims=8), dict(dims=6, cos_first=True),
                                dict(dims=10, min_freq=0.01, max_freq=3.0, scale=1.5, full_turns=True)],
                         ids=["default", "cos-first", "options"])
def test_sinusoidal_float64(kw, rng):
    pe = nn.SinusoidalPositionalEncoding(**kw)
    xf = rng.uniform(0, 20, (5,))
    y64 = pe(arr(xf, mx.float64))
    assert y64.dtype == mx.float64
    # the frequencies are float32 (as MLX's), so compare at float32 accuracy
    close(y64, np_sinusoidal(xf, **kw), rtol=1e-5, atol=2e-5)
    check_grads(lambda a: pe(a), [xf], rng=rng)


def test_sinusoidal_errors():
    for dims in (0, -2, 5):
        with raises(ValueError, rf"\[SinusoidalPositionalEncoding\] dims must be positive and even.*{dims}",
                    mlx_msg=True):
            nn.SinusoidalPositionalEncoding(dims)


@pytest.mark.parametrize("heads", [1, 2, 3, 4, 6, 8, 12])
def test_alibi_slopes(heads):
    s = nn.ALiBi.create_alibi_slope(heads)
    assert s.shape == (heads, 1, 1) and s.dtype == mx.float32
    close(s.reshape(-1), np_alibi_slopes(heads), rtol=1e-6, atol=0)
    assert nn.ALiBi.create_alibi_slope(heads, dtype=mx.float16).dtype == mx.float16


@pytest.mark.parametrize("dtype,tol", [("float16", dict(rtol=2e-3, atol=2e-3))] + DTYPES,
                         ids=["float16"] + DTYPE_IDS)
@pytest.mark.parametrize("offset", [0, 2])
@pytest.mark.parametrize("with_mask", [False, True])
def test_alibi(dtype, tol, offset, with_mask, rng):
    dt = getattr(mx, dtype)
    alibi = nn.ALiBi()
    assert alibi.parameters() == {}
    scores = rng.standard_normal((2, 3, 4, 6))
    mask = rng.standard_normal((4, 6)) if with_mask else None
    y = alibi(arr(scores, dt), offset=offset, mask=None if mask is None else arr(mask, dt))
    assert y.shape == scores.shape and y.dtype == dt
    close(y, np_alibi(to_numpy(arr(scores, dt)).astype(np.float64), offset,
                      None if mask is None else to_numpy(arr(mask, dt)).astype(np.float64)), **tol)


def test_alibi_matrix(rng):
    m = nn.ALiBi.create_alibi_matrix(5, 7, 4, offset=2)
    assert m.shape == (1, 4, 3, 7) and m.dtype == mx.float32
    close(m, np_alibi(np.zeros((1, 4, 3, 7)), offset=2), rtol=1e-6, atol=1e-6)
    assert nn.ALiBi.create_alibi_matrix(3, 3, 2, dtype=mx.float64).dtype == mx.float64
    x = rng.standard_normal((1, 2, 3, 5))
    check_grads(lambda a: nn.ALiBi()(a, offset=1), [x], rng=rng)
    with raises(ValueError):  # MLX: its broadcast fails
        nn.ALiBi()(mx.zeros((3, 4, 5)))


@ember_only
def test_alibi_bad_rank_message():
    with raises(ValueError, r"\[ALiBi\].*\(B, num_heads, L, S\).*\(3, 4, 5\)"):
        nn.ALiBi()(mx.zeros((3, 4, 5)))


# --------------------------------------------------------------------------
# repr
# --------------------------------------------------------------------------

def test_repr():
    assert repr(nn.RNN(3, 4)) == f"RNN(input_dims=3, hidden_size=4, nonlinearity={nn.tanh}, bias=True)"
    assert repr(nn.RNN(3, 4, bias=False, nonlinearity=nn.relu)) == \
        f"RNN(input_dims=3, hidden_size=4, nonlinearity={nn.relu}, bias=False)"
    assert repr(nn.GRU(3, 4)) == "GRU(input_dims=3, hidden_size=4, bias=True)"
    assert repr(nn.GRU(3, 4, bias=False)) == "GRU(input_dims=3, hidden_size=4, bias=False)"
    assert repr(nn.LSTM(5, 2)) == "LSTM(input_dims=5, hidden_size=2, bias=True)"
    assert repr(nn.RoPE(4)) == "RoPE(4, traditional=False)"
    assert repr(nn.RoPE(8, traditional=True, base=5.0)) == "RoPE(8, traditional=True)"
    assert repr(nn.SinusoidalPositionalEncoding(4)) == "SinusoidalPositionalEncoding()"
    assert repr(nn.ALiBi()) == "ALiBi()"
    lin = "Linear(input_dims=8, output_dims=8, bias=False)"
    assert repr(nn.MultiHeadAttention(8, 2)) == (
        "MultiHeadAttention(\n" + "".join(f"  ({n}): {lin}\n" for n in
                                          ["query_proj", "key_proj", "value_proj", "out_proj"]) + ")")
    enc = repr(nn.TransformerEncoderLayer(8, 2))
    assert enc.startswith("TransformerEncoderLayer(\n  (attention): MultiHeadAttention(\n")
    assert enc.endswith("  (ln1): LayerNorm(8, eps=1e-05, affine=True)\n"
                        "  (ln2): LayerNorm(8, eps=1e-05, affine=True)\n"
                        "  (linear1): Linear(input_dims=8, output_dims=32, bias=True)\n"
                        "  (linear2): Linear(input_dims=32, output_dims=8, bias=True)\n"
                        "  (dropout1): Dropout(p=0.0)\n"
                        "  (dropout2): Dropout(p=0.0)\n)")
    t = repr(nn.Transformer(8, 2, 1, 1))
    assert t.startswith("Transformer(\n  (encoder): TransformerEncoder(\n    (layers.0): TransformerEncoderLayer(\n")
    assert "  (decoder): TransformerDecoder(\n    (layers.0): TransformerDecoderLayer(\n" in t
    assert t.endswith("      (dropout3): Dropout(p=0.0)\n    )\n    (ln): LayerNorm(8, eps=1e-05, affine=True)\n  )\n)")
