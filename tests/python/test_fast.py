"""mx.fast: rms_norm, layer_norm, rope, scaled_dot_product_attention.

Each against its op composition in NumPy (float64), for float32, float16
and bfloat16, with broadcast weights and non-contiguous inputs; derivatives
against finite differences in float64; vmap against a Python loop; the
error paths with their types and messages (messages checked on Ember, where
they follow MLX's wording they hold for MLX too).
"""

import numpy as np
import pytest

from conftest import IS_MLX, ember_only, mx, to_numpy
from gradcheck import check_grads, check_vmap

F = mx.fast
DTYPES = ["float32", "float16", "bfloat16"]
TOL = {"float32": 2e-5, "float16": 4e-3, "bfloat16": 3e-2, "float64": 1e-12}


def arr(x, dt):
    return mx.array(np.asarray(x, np.float32)).astype(getattr(mx, dt))


def back(a):
    return to_numpy(a).astype(np.float64)


def close(a, ref, dt, scale=1.0):
    tol = TOL[dt] * scale
    np.testing.assert_allclose(back(a), ref, rtol=tol, atol=tol)


def raises(exc, frag, f):
    with pytest.raises(exc) as e:
        f()
    if not IS_MLX:
        assert frag in str(e.value), str(e.value)


# ---- references -------------------------------------------------------------

def rms_ref(x, w, eps):
    y = x / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps)
    return y * w if w is not None else y


def ln_ref(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    y = (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def rope_ref(x, dims, trad, base, scale, offset, freqs=None):
    L = x.shape[-2]
    h = dims // 2
    inv = 1.0 / np.asarray(freqs, np.float64) if freqs is not None else base ** (-np.arange(0, dims, 2) / dims)
    off = np.asarray(offset, np.float64)
    if off.ndim == 1:
        off = off.reshape((-1,) + (1,) * (x.ndim - 2))
    pos = (off + np.arange(L)) * scale
    th = pos[..., None] * inv
    c, s = np.cos(th), np.sin(th)
    out = x.copy()
    if trad:
        a, b = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2] = a * c - b * s
        out[..., 1:dims:2] = a * s + b * c
    else:
        a, b = x[..., :h], x[..., h:dims]
        out[..., :h] = a * c - b * s
        out[..., h:dims] = a * s + b * c
    return out


def sdpa_ref(q, k, v, scale, mask=None, sinks=None):
    B, Hq, L, D = q.shape
    Hk, S = k.shape[1], k.shape[2]
    g = Hq // Hk
    k = np.repeat(k, g, axis=1)
    v = np.repeat(v, g, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    if isinstance(mask, str):
        keep = np.arange(L)[:, None] + S - L >= np.arange(S)[None]
        s = np.where(keep, s, -np.inf)
    elif mask is not None and mask.dtype == bool:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    if sinks is not None:
        s = np.concatenate([np.broadcast_to(sinks.reshape(1, Hq, 1, 1), (B, Hq, L, 1)), s], -1)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    if sinks is not None:
        p = p[..., 1:]
    return p @ v


rng = np.random.default_rng(0)


def rnd(*shape):
    return rng.standard_normal(shape)


# ---- rms_norm / layer_norm ----------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (3, 33), (2, 5, 64), (4, 1000)])
def test_rms_norm(dt, shape):
    x, w = rnd(*shape), rnd(shape[-1])
    xm, wm = arr(x, dt), arr(w, dt)
    xn, wn = back(xm), back(wm)
    out = F.rms_norm(xm, wm, 1e-5)
    assert out.dtype == getattr(mx, dt) and out.shape == shape
    close(out, rms_ref(xn, wn, 1e-5), dt, 2)
    close(F.rms_norm(xm, None, 1e-5), rms_ref(xn, None, 1e-5), dt, 2)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (3, 33), (2, 5, 64), (4, 1000)])
def test_layer_norm(dt, shape):
    x, w, b = rnd(*shape) + 3, rnd(shape[-1]), rnd(shape[-1])
    xm, wm, bm = arr(x, dt), arr(w, dt), arr(b, dt)
    xn, wn, bn = back(xm), back(wm), back(bm)
    close(F.layer_norm(xm, wm, bm, 1e-5), ln_ref(xn, wn, bn, 1e-5), dt, 4)
    close(F.layer_norm(xm, None, bm, 1e-5), ln_ref(xn, None, bn, 1e-5), dt, 4)
    close(F.layer_norm(xm, wm, None, 1e-5), ln_ref(xn, wn, None, 1e-5), dt, 4)
    close(F.layer_norm(xm, None, None, 1e-5), ln_ref(xn, None, None, 1e-5), dt, 4)


def test_norm_dtypes_and_layouts():
    x = rnd(6, 16)
    xh = mx.array(x.astype(np.float32)).astype(mx.float16)
    w32 = mx.array(np.ones(16, np.float32))
    assert F.rms_norm(xh, w32, 1e-5).dtype == mx.float32
    assert F.rms_norm(xh, None, 1e-5).dtype == mx.float16
    assert F.layer_norm(xh, w32, None, 1e-5).dtype == mx.float32
    assert F.layer_norm(xh, None, w32, 1e-5).dtype == mx.float16  # the bias does not promote (MLX)
    # non-contiguous: transposed and strided
    xt = mx.array(x.astype(np.float32)).T
    close(F.rms_norm(xt, None, 1e-6), rms_ref(x.T, None, 1e-6), "float32", 2)
    xs = mx.array(x.astype(np.float32))[::2, ::-1]
    close(F.layer_norm(xs, None, None, 1e-6), ln_ref(x[::2, ::-1], None, None, 1e-6), "float32", 4)


def test_norm_matches_op_composition():
    x = mx.array(rnd(4, 128).astype(np.float32))
    w = mx.array(rnd(128).astype(np.float32))
    comp = x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(np.array(F.rms_norm(x, w, 1e-5)), np.array(comp), rtol=1e-5, atol=1e-5)


# MLX's jvp of its fast primitives in float64 misses the finite differences
# (its rules run through float32), so the derivative checks are Ember's.
@ember_only
def test_norm_grads():
    x, w, b = rnd(3, 6), rnd(6), rnd(6)
    check_grads(lambda x, w: F.rms_norm(x, w, 1e-3), [x, w])
    check_grads(lambda x: F.rms_norm(x, None, 1e-3), [x])
    check_grads(lambda x, w, b: F.layer_norm(x, w, b, 1e-3), [x, w, b])
    check_grads(lambda x, b: F.layer_norm(x, None, b, 1e-3), [x, b])
    check_grads(lambda x: F.layer_norm(x, None, None, 1e-3), [x], order=2)


def test_norm_vmap():
    x, w, b = rnd(4, 3, 6), rnd(4, 6), rnd(6)
    check_vmap(lambda x, w: F.rms_norm(x, w, 1e-5), [x, w], in_axes=(0, 0), rtol=1e-5, atol=1e-5)
    check_vmap(lambda x, w: F.rms_norm(x, w, 1e-5), [x, b], in_axes=(1, None), rtol=1e-5, atol=1e-5)
    check_vmap(lambda x, w, b: F.layer_norm(x, w, b, 1e-5), [x, w, b], in_axes=(0, 0, None), rtol=1e-5, atol=1e-5)


def test_norm_errors():
    x = mx.ones((2, 4))
    raises(ValueError, "[rms_norm] (*weight) must have the same size as the last dimension of x but has 3",
           lambda: F.rms_norm(x, mx.ones((3,)), 1e-5))
    raises(ValueError, "[rms_norm] (*weight) must have 1 dimension but has 2", lambda: F.rms_norm(x, mx.ones((2, 4)), 1e-5))
    raises(ValueError, "[layer_norm] bias must have the same size", lambda: F.layer_norm(x, None, mx.ones((3,)), 1e-5))
    raises(ValueError, "[layer_norm] weight must have 1 dimension but has 0", lambda: F.layer_norm(x, mx.array(1.0), None, 1e-5))
    raises(ValueError, "[rms_norm] Input must have at least 1 dimension", lambda: F.rms_norm(mx.array(1.0), None, 1e-5))
    raises(ValueError, "[rms_norm] Received unsupported type int32", lambda: F.rms_norm(mx.ones((2, 4), dtype=mx.int32), None, 1e-5))


# ---- rope ---------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("trad", [False, True])
@pytest.mark.parametrize("dims", [8, 16])
def test_rope(dt, trad, dims):
    x = rnd(2, 3, 10, 16)
    xm = arr(x, dt)
    xn = back(xm)
    out = F.rope(xm, dims, traditional=trad, base=10000.0, scale=0.5, offset=3)
    assert out.dtype == getattr(mx, dt) and out.shape == x.shape
    close(out, rope_ref(xn, dims, trad, 10000.0, 0.5, 3), dt, 10)


def test_rope_offsets_freqs_layouts():
    x = rnd(2, 3, 10, 16)
    xm = mx.array(x.astype(np.float32))
    close(F.rope(xm, 16, traditional=False, base=500.0, scale=1.0, offset=mx.array(7)),
          rope_ref(x, 16, False, 500.0, 1.0, 7), "float32", 10)
    close(F.rope(xm, 16, traditional=True, base=500.0, scale=1.0, offset=mx.array([2, 9])),
          rope_ref(x, 16, True, 500.0, 1.0, np.array([2, 9])), "float32", 10)
    fr = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    close(F.rope(xm, 12, traditional=False, base=None, scale=1.0, offset=1, freqs=mx.array(fr.astype(np.float32))),
          rope_ref(x, 12, False, None, 1.0, 1, fr), "float32", 10)
    xt = mx.swapaxes(xm, 0, 1)  # non-contiguous
    close(F.rope(xt, 16, traditional=False, base=10000.0, scale=1.0, offset=0),
          rope_ref(np.swapaxes(x, 0, 1), 16, False, 10000.0, 1.0, 0), "float32", 10)


def test_rope_grads_vmap():
    x = rnd(2, 4, 8)
    check_grads(lambda x: F.rope(x, 6, traditional=False, base=100.0, scale=1.0, offset=2), [x], order=2)
    check_grads(lambda x: F.rope(x, 8, traditional=True, base=100.0, scale=0.5, offset=mx.array([1, 3])), [x])
    fr = np.array([1.0, 3.0, 5.0, 7.0])
    check_grads(lambda x: F.rope(x, 8, traditional=False, base=None, scale=1.0, offset=0,
                                 freqs=mx.array(fr.astype(np.float32))), [x])
    xb = rnd(3, 2, 4, 8)
    check_vmap(lambda x: F.rope(x, 8, traditional=False, base=100.0, scale=1.0, offset=1), [xb],
               rtol=1e-5, atol=1e-5)
    check_vmap(lambda x: F.rope(x, 8, traditional=True, base=100.0, scale=1.0, offset=mx.array([0, 5])),
               [np.swapaxes(xb, 0, 1)],
               in_axes=1, rtol=1e-5, atol=1e-5)


def test_rope_freqs_grad():
    x = mx.array(rnd(1, 4, 8).astype(np.float32))
    fr0 = np.array([1.0, 2.0, 4.0, 8.0])
    f = lambda fr: F.rope(x, 8, traditional=False, base=None, scale=1.0, offset=2, freqs=fr).sum()
    g = np.array(mx.grad(f)(mx.array(fr0.astype(np.float32))))
    eps = 1e-3
    fd = [(float(f(mx.array((fr0 + eps * e).astype(np.float32)))) - float(f(mx.array((fr0 - eps * e).astype(np.float32))))) / (2 * eps)
          for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=2e-2, atol=2e-2)


def test_rope_errors():
    a = mx.ones((2, 3, 8, 16))
    kw = dict(traditional=False, base=10000.0, scale=1.0, offset=0)
    raises(ValueError, "[rope] Input must have at least 3 dimensions", lambda: F.rope(mx.ones((8, 16)), 16, **kw))
    raises(ValueError, "[rope] dims must be even but got 7", lambda: F.rope(a, 7, **kw))
    raises(ValueError, "[rope] dims must not exceed", lambda: F.rope(a, 32, **kw))
    raises(ValueError, "[rope] Only one of base or freqs", lambda: F.rope(a, 16, **kw, freqs=mx.ones((8,))))
    kw["base"] = None
    raises(ValueError, "[rope] Neither base nor freqs", lambda: F.rope(a, 16, **kw))
    raises(ValueError, "[rope] freqs must be one dimensional with size 8 but got shape (4)",
           lambda: F.rope(a, 16, **kw, freqs=mx.ones((4,))))
    kw["base"] = 10.0
    kw["offset"] = mx.array([1, 2, 3])
    raises(ValueError, "[rope] offset must be a scalar or vector with 2 elements", lambda: F.rope(a, 16, **kw))
    kw["offset"] = mx.array(1.0)
    raises(ValueError, "[rope] offset must be an integer", lambda: F.rope(a, 16, **kw))


# ---- scaled_dot_product_attention -------------------------------------------

SDPA_CASES = [
    # B, Hq, Hk, L, S, D, Dv, mask
    (1, 4, 4, 5, 7, 16, 16, None),
    (2, 8, 2, 5, 7, 16, 32, None),
    (1, 4, 2, 40, 300, 8, 8, "causal"),
    (1, 4, 1, 1, 520, 64, 64, None),     # decode against a long cache
    (1, 2, 2, 130, 130, 32, 32, "causal"),  # prefill, several blocks
    (2, 4, 2, 6, 9, 8, 8, "additive"),
    (2, 4, 2, 6, 9, 8, 8, "bool"),
]


def make_mask(kind, B, Hq, L, S):
    if kind == "additive":
        return rnd(1, Hq, L, S)
    if kind == "bool":
        m = rng.random((B, 1, L, S)) > 0.3
        m[..., 0] = True
        return m
    return kind


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", SDPA_CASES, ids=lambda c: "-".join(map(str, c)))
def test_sdpa(dt, case):
    B, Hq, Hk, L, S, D, Dv, mk = case
    q, k, v = arr(rnd(B, Hq, L, D), dt), arr(rnd(B, Hk, S, D), dt), arr(rnd(B, Hk, S, Dv), dt)
    mask = make_mask(mk, B, Hq, L, S)
    mm = mask
    if isinstance(mask, np.ndarray):
        mm = mx.array(mask) if mask.dtype == bool else arr(mask, dt)
        mask = mask if mask.dtype == bool else back(mm)
    scale = D ** -0.5
    out = F.scaled_dot_product_attention(q, k, v, scale=scale, mask=mm)
    assert out.shape == (B, Hq, L, Dv) and out.dtype == getattr(mx, dt)
    close(out, sdpa_ref(back(q), back(k), back(v), scale, mask), dt, 4)


def test_sdpa_sinks_layouts_mixed():
    q, k, v = rnd(2, 4, 5, 8), rnd(2, 2, 7, 8), rnd(2, 2, 7, 8)
    sk = rnd(4)
    f32 = lambda a: mx.array(a.astype(np.float32))
    out = F.scaled_dot_product_attention(f32(q), f32(k), f32(v), scale=0.3, sinks=f32(sk))
    close(out, sdpa_ref(q, k, v, 0.3, None, sk), "float32", 4)
    out = F.scaled_dot_product_attention(f32(q), f32(k), f32(v), scale=0.3, mask="causal", sinks=f32(sk))
    close(out, sdpa_ref(q, k, v, 0.3, "causal", sk), "float32", 4)
    # non-contiguous q, k, v: (B, L, H, D) transposed to (B, H, L, D)
    qt, kt, vt = [mx.swapaxes(f32(np.swapaxes(a, 1, 2)), 1, 2) for a in (q, k, v)]
    close(F.scaled_dot_product_attention(qt, kt, vt, scale=0.3), sdpa_ref(q, k, v, 0.3), "float32", 4)
    # mixed dtypes promote
    out = F.scaled_dot_product_attention(f32(q).astype(mx.float16), f32(k), f32(v), scale=0.3)
    assert out.dtype == mx.float32


def test_sdpa_matches_op_composition():
    q, k, v = [mx.array(rnd(1, 2, 6, 8).astype(np.float32)) for _ in range(3)]
    s = mx.softmax(0.5 * (q @ mx.swapaxes(k, -1, -2)), axis=-1)
    np.testing.assert_allclose(np.array(F.scaled_dot_product_attention(q, k, v, scale=0.5)), np.array(s @ v),
                               rtol=1e-5, atol=1e-5)


@ember_only
def test_sdpa_grads():
    q, k, v = rnd(1, 4, 3, 4), rnd(1, 2, 5, 4), rnd(1, 2, 5, 3)
    f = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.7)
    check_grads(f, [q, k, v])
    check_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.7, mask="causal"), [q, k, v])
    m = rnd(3, 5)
    check_grads(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, scale=0.7, mask=m), [q, k, v, m])
    sk = rnd(4)
    check_grads(lambda q, k, v, s: F.scaled_dot_product_attention(q, k, v, scale=0.7, sinks=s), [q, k, v, sk])
    bm = mx.array(rng.random((1, 1, 3, 5)) > 0.4) | mx.array(np.eye(3, 5, dtype=bool))
    check_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.7, mask=bm), [q, k, v])


def test_sdpa_vmap():
    q, k, v = rnd(3, 1, 4, 3, 4), rnd(3, 1, 2, 5, 4), rnd(1, 2, 5, 4)
    check_vmap(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.5, mask="causal"), [q, k, v],
               in_axes=(0, 0, None), rtol=1e-5, atol=1e-5)
    m = rnd(3, 5, 3)
    check_vmap(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, scale=0.5, mask=m), [q[0], k[0], v, m],
               in_axes=(None, None, None, 2), rtol=1e-5, atol=1e-5)


def test_sdpa_errors():
    q, k, v = mx.ones((1, 8, 5, 16)), mx.ones((1, 2, 7, 16)), mx.ones((1, 2, 7, 32))
    S = lambda *a, **kw: F.scaled_dot_product_attention(*a, scale=0.25, **kw)
    op = "[scaled_dot_product_attention]"
    raises(ValueError, f"{op} input with shape (8,5,16) expected to be rank 4", lambda: S(q[0], k[0], v[0]))
    raises(ValueError, f"{op} n_heads must be a multiple of n_kv_heads, found n_heads 3 for n_kv_heads 2",
           lambda: S(mx.ones((1, 3, 5, 16)), k, v))
    raises(ValueError, f"{op} keys, values expected to have matching n_kv_heads", lambda: S(q, k, mx.ones((1, 4, 7, 32))))
    raises(ValueError, f"{op} query, keys expected to have matching last dimension",
           lambda: S(q, mx.ones((1, 2, 7, 8)), v))
    raises(ValueError, f"{op} mismatching batch dimension for input with shape (2,2,7,16)",
           lambda: S(q, mx.ones((2, 2, 7, 16)), mx.ones((2, 2, 7, 32))))
    raises(ValueError, f"{op} invalid mask option 'foo'", lambda: S(q, k, v, mask="foo"))
    raises(ValueError, "(5,6)", lambda: S(q, k, v, mask=mx.zeros((5, 6))))
    raises(ValueError, f"{op} the mask with shape (1,1,1,5,7) expected to have at most rank 4",
           lambda: S(q, k, v, mask=mx.zeros((1, 1, 1, 5, 7))))
    h = lambda a: a.astype(mx.float16)
    raises(ValueError, f"{op} Mask type must promote to output type float16",
           lambda: S(h(q), h(k), h(v), mask=mx.zeros((5, 7))))
    raises(ValueError, f"{op} Received invalid shape for sinks (2)", lambda: S(q, k, v, sinks=mx.zeros((2,))))
    raises(ValueError, f"{op} Received unsupported type int32",
           lambda: S(q.astype(mx.int32), k.astype(mx.int32), v.astype(mx.int32)))
