"""Derivative rules whose graphs are fused into kernels when evaluated
eagerly on large arrays (transforms.h's fuse_derivative: from 2^18 values
for the norms and softmax, whose graphs make row programs, from 2^16 for
elementwise ones and attention): layer norm, RMS norm, softmax, attention and a compiled
function's backward. Each against a float64 NumPy reference at a size that
fuses, with the fused graph checked to hold Compiled nodes, and with
compile switched off (the graph then stays unfused, same values)."""
import io
import math

import numpy as np
import pytest

from conftest import ember_only, mx

pytestmark = ember_only

ROWS, D = 1024, 256  # 2^18 values: fused


def _dot(*arrays):
    buf = io.StringIO()
    mx.export_to_dot(buf, *arrays)
    return buf.getvalue()


def _np(a):
    return np.array(a).astype(np.float64)


@pytest.fixture(params=["fused", "compile off"])
def mode(request):
    if request.param == "compile off":
        mx.disable_compile()
        yield request.param
        mx.enable_compile()
    else:
        yield request.param


def _check_graph(mode, *grads):
    text = _dot(*grads)
    if mode == "fused":
        assert "Compiled[" in text, text
    else:
        assert "Compiled[" not in text, text


def _layer_norm_ref(x, w, b, g, eps):
    m = x.mean(-1, keepdims=True)
    xc = x - m
    r = 1 / np.sqrt((xc * xc).mean(-1, keepdims=True) + eps)
    xhat = xc * r
    gw = g * w if w is not None else g
    dx = r * (gw - gw.mean(-1, keepdims=True) - xhat * (gw * xhat).mean(-1, keepdims=True))
    return dx, (g * xhat).reshape(-1, x.shape[-1]).sum(0), g.reshape(-1, x.shape[-1]).sum(0)


@pytest.mark.parametrize("affine", ["weight and bias", "weight", "none"])
def test_layer_norm_vjp(mode, affine):
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((4, ROWS // 4, D)).astype(np.float32) * 3 + 1
    g0 = rng.standard_normal(x0.shape).astype(np.float32)
    w0 = rng.standard_normal(D).astype(np.float32)
    b0 = rng.standard_normal(D).astype(np.float32)
    x, g, w, b = (mx.array(a) for a in (x0, g0, w0, b0))
    use_w, use_b = affine != "none", affine == "weight and bias"
    args = [x] + ([w] if use_w else []) + ([b] if use_b else [])

    def f(*a):
        return mx.fast.layer_norm(a[0], a[1] if use_w else None, a[2] if use_b else None, 1e-5)
    _, grads = mx.vjp(f, args, [g])
    _check_graph(mode, *grads)
    dx, dw, db = _layer_norm_ref(*(_np(a) for a in (x0, w0, b0, g0)), 1e-5) if use_w else \
        _layer_norm_ref(_np(x0), None, None, _np(g0), 1e-5)
    np.testing.assert_allclose(_np(grads[0]), dx, rtol=1e-4, atol=1e-4)
    if use_w:
        np.testing.assert_allclose(_np(grads[1]), dw, rtol=1e-4, atol=2e-3)
    if use_b:
        np.testing.assert_allclose(_np(grads[2]), db, rtol=1e-4, atol=2e-3)


def test_rms_norm_vjp(mode):
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((ROWS, D)).astype(np.float32)
    g0 = rng.standard_normal(x0.shape).astype(np.float32)
    w0 = rng.standard_normal(D).astype(np.float32)
    x, g, w = mx.array(x0), mx.array(g0), mx.array(w0)
    _, (dx, dw) = mx.vjp(lambda x, w: mx.fast.rms_norm(x, w, 1e-6), [x, w], [g])
    _check_graph(mode, dx, dw)
    X, G, W = _np(x0), _np(g0), _np(w0)
    r = 1 / np.sqrt((X * X).mean(-1, keepdims=True) + 1e-6)
    want_dx = G * W * r - X * (G * W * X).mean(-1, keepdims=True) * r ** 3
    np.testing.assert_allclose(_np(dx), want_dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(dw), (G * X * r).sum(0), rtol=1e-4, atol=2e-3)


def test_softmax_vjp(mode):
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((ROWS, D)).astype(np.float32) * 4
    g0 = rng.standard_normal(x0.shape).astype(np.float32)
    _, (dx,) = mx.vjp(lambda x: mx.softmax(x, axis=-1), [mx.array(x0)], [mx.array(g0)])
    _check_graph(mode, dx)
    X, G = _np(x0), _np(g0)
    p = np.exp(X - X.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(_np(dx), p * (G - (G * p).sum(-1, keepdims=True)), rtol=1e-4, atol=1e-6)


def test_attention_vjp(mode):
    rng = np.random.default_rng(4)
    B, H, L, Dh = 4, 4, 128, 32  # q, k, v: 2^16 values (fused)
    q0, k0, v0, g0 = (rng.standard_normal((B, H, L, Dh)).astype(np.float32) for _ in range(4))
    scale = 1 / math.sqrt(Dh)

    def f(q, k, v):
        return mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask="causal")
    _, (dq, dk, dv) = mx.vjp(f, [mx.array(a) for a in (q0, k0, v0)], [mx.array(g0)])
    _check_graph(mode, dq, dk, dv)
    Q, K, V, G = (_np(a) for a in (q0, k0, v0, g0))
    s = Q @ K.swapaxes(-1, -2) * scale
    s = np.where(np.tril(np.ones((L, L), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dp = G @ V.swapaxes(-1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    np.testing.assert_allclose(_np(dv), p.swapaxes(-1, -2) @ G, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(dq), ds @ K * scale, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(dk), ds.swapaxes(-1, -2) @ Q * scale, rtol=1e-4, atol=1e-4)


def test_compiled_function_vjp(mode):
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((ROWS, D)).astype(np.float32)
    g0 = rng.standard_normal(x0.shape).astype(np.float32)
    f = mx.compile(lambda x: mx.tanh(x * 2) * mx.exp(-x * x))
    _, (dx,) = mx.vjp(f, [mx.array(x0)], [mx.array(g0)])
    _check_graph(mode, dx)
    X, G = _np(x0), _np(g0)
    t = np.tanh(2 * X)
    want = G * (2 * (1 - t * t) * np.exp(-X * X) - 2 * X * t * np.exp(-X * X))
    np.testing.assert_allclose(_np(dx), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(8, 16), (512, 256)])
def test_small_derivatives_stay_unfused(shape):
    # below the sizes where fused kernels pay for the fusion
    x = mx.array(np.random.default_rng(6).standard_normal(shape).astype(np.float32))
    _, (dx,) = mx.vjp(lambda x: mx.fast.layer_norm(x, None, None, 1e-5), [x], [mx.ones_like(x)])
    assert "Compiled[" not in _dot(dx)
    _, (dx,) = mx.vjp(lambda x: mx.softmax(x, axis=-1), [x], [mx.ones_like(x)])
    assert "Compiled[" not in _dot(dx)


def test_second_order_through_a_fused_rule():
    # the fused backward is itself differentiable (Compiled's rules): the
    # Hessian-vector product of a softmax cross-term against finite differences
    rng = np.random.default_rng(7)
    x0 = rng.standard_normal((ROWS, D))
    c0 = rng.standard_normal((ROWS, D))
    c = mx.array(c0)

    def loss(x):
        return mx.sum(mx.softmax(x, axis=-1) * c)
    x = mx.array(x0.astype(np.float32))
    hv = mx.jvp(mx.grad(loss), [x], [mx.ones_like(x)])[1][0]
    eps = 1e-2

    def grad_at(a):
        return _np(mx.grad(loss)(mx.array(a.astype(np.float32))))
    fd = (grad_at(x0 + eps) - grad_at(x0 - eps)) / (2 * eps)
    np.testing.assert_allclose(_np(hv), fd, rtol=1e-2, atol=2e-3)
