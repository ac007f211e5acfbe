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
    (1, 6, 2, 1, 45, 16, 16, None),      # decode, 3 query heads a kv head (a padded 4-row tile)
    (1, 4, 2, 1, 21, 12, 12, None),      # features not a multiple of 8 (no 8 x 8 key transpose)
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


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("S", [1, 7, 129, 200])
def test_sdpa_decode_over_cache_views(dt, S, level):
    # a decoding step as mlx-lm takes it: one query row per head over the
    # first S rows of a larger cache (rows 64 apart, values read in place for
    # float32 and bfloat16), and the same values through a transposed view
    # (the last axis strided: packed instead)
    B, Hq, Hk, D, cap = 1, 8, 2, 64, 256
    q = arr(rnd(B, Hq, 1, D), dt)
    kc, vc = arr(rnd(B, Hk, cap, D), dt), arr(rnd(B, Hk, cap, D), dt)
    k, v = kc[:, :, :S], vc[:, :, :S]
    vt = mx.swapaxes(arr(np.ascontiguousarray(np.swapaxes(back(vc), 2, 3)), dt), 2, 3)[:, :, :S]
    assert vt.shape == v.shape and vt.dtype == v.dtype
    ref = sdpa_ref(back(q), back(k), back(v), 0.125, None)
    out = F.scaled_dot_product_attention(q, k, v, scale=0.125)
    close(out, ref, dt, 4)
    out_t = F.scaled_dot_product_attention(q, k, vt, scale=0.125)
    assert np.array_equal(np.array(out_t.astype(mx.float32)), np.array(out.astype(mx.float32)))
    # rows of the values 96 apart (features sliced from wider rows)
    vw = arr(rnd(B, Hk, cap, 96), dt)[:, :, :S, 16:80]
    close(F.scaled_dot_product_attention(q, k, vw, scale=0.125), sdpa_ref(back(q), back(k), back(vw), 0.125, None),
          dt, 4)


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
    # keys with strided features, and keys in reverse order (negative strides),
    # on the 8 x 8 transposing path (D = 16, 19 keys: two blocks and a tail)
    q2, k2, v2 = rnd(1, 4, 1, 16), rnd(1, 2, 19, 16), rnd(1, 2, 19, 16)
    for dt in DTYPES:
        kf = mx.swapaxes(arr(np.swapaxes(k2, -1, -2), dt), -1, -2)  # (1, 2, 19, 16), feature stride 19
        close(F.scaled_dot_product_attention(arr(q2, dt), kf, arr(v2, dt), scale=0.25),
              sdpa_ref(back(arr(q2, dt)), back(kf), back(arr(v2, dt)), 0.25), dt, 4)
        kr, vr = arr(k2[:, :, ::-1].copy(), dt)[:, :, ::-1], arr(v2[:, :, ::-1].copy(), dt)[:, :, ::-1]
        close(F.scaled_dot_product_attention(arr(q2, dt), kr, vr, scale=0.25),
              sdpa_ref(back(arr(q2, dt)), back(kr), back(vr), 0.25), dt, 4)
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


# ---- cross_entropy ----------------------------------------------------------------

def ce_ref(x, t):
    m = x.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(-1, keepdims=True)))[..., 0]
    return lse - np.take_along_axis(x, t[..., None] % x.shape[-1], -1)[..., 0]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(10,), (4, 7), (2, 3, 33), (3, 5000)])
def test_cross_entropy(dt, shape):
    x = rnd(*shape) * 3
    t = rng.integers(0, shape[-1], shape[:-1])
    xm = arr(x, dt)
    out = F.cross_entropy(xm, mx.array(t.astype(np.int32)))
    assert out.dtype == mx.float32 and out.shape == shape[:-1]
    # Ember accumulates in float32; MLX's CPU path reduces in the logits' dtype
    close(out, ce_ref(back(xm), t), dt if IS_MLX else "float32", 20)


def test_cross_entropy_targets_layouts_and_special_values():
    x = rnd(6, 9)
    t = rng.integers(0, 9, 6)
    xm = mx.array(x.astype(np.float32))
    for tdt in (np.int8, np.uint8, np.int64, np.uint32):
        close(F.cross_entropy(xm, mx.array(t.astype(tdt))), ce_ref(x, t), "float32", 5)
    # non-contiguous logits and targets: transposed, reversed, strided
    xt = mx.array(x.T.copy().astype(np.float32)).T
    close(F.cross_entropy(xt[::-1], mx.array(t)[::-1]), ce_ref(x[::-1], t[::-1]), "float32", 5)
    close(F.cross_entropy(xm[::2, 1:], mx.array(t % 8)[::2]), ce_ref(x[::2, 1:], t[::2] % 8), "float32", 5)
    # large logits stay finite; -inf logits elsewhere in the row are fine
    big = np.array([[1000.0, 0.0, -1000.0]], np.float32)
    close(F.cross_entropy(mx.array(big), mx.array([1])), np.array([1000.0]), "float32")
    ninf = np.array([[0.0, -np.inf, 0.0]], np.float32)
    close(F.cross_entropy(mx.array(ninf), mx.array([0])), np.array([np.log(2.0)]), "float32")
    assert np.isnan(np.array(F.cross_entropy(mx.array([[0.0, np.nan]]), mx.array([0])))).all()
    # 0-d targets for 1-d logits; empty rows
    close(F.cross_entropy(mx.array(x[0].astype(np.float32)), mx.array(int(t[0]))), ce_ref(x[:1], t[:1])[0], "float32", 5)


@ember_only
def test_cross_entropy_float64_negative_targets_and_bounds():
    x = rnd(5, 6)
    t = np.array([0, -1, 3, -6, 5])
    out = F.cross_entropy(mx.array(x, dtype=mx.float64), mx.array(t))
    assert out.dtype == mx.float64  # MLX narrows float64 logits to float32
    np.testing.assert_allclose(np.array(out), ce_ref(x, t), rtol=1e-12)
    # no rows: an empty result (MLX raises from logsumexp)
    assert F.cross_entropy(mx.zeros((0, 5)), mx.zeros((0,), dtype=mx.int32)).shape == (0,)
    for bad in (6, -7):
        with pytest.raises(IndexError, match=r"\[cross_entropy\] Target .* out of bounds for 6 classes"):
            mx.eval(F.cross_entropy(mx.array(x), mx.array([0, 1, bad, 2, 3])))


def test_cross_entropy_matches_op_composition():
    x = mx.array(rnd(8, 50).astype(np.float32))
    t = mx.array(rng.integers(0, 50, 8))
    comp = mx.logsumexp(x, axis=-1) - mx.take_along_axis(x, t[:, None], axis=-1)[:, 0]
    np.testing.assert_allclose(np.array(F.cross_entropy(x, t)), np.array(comp), rtol=1e-5, atol=1e-5)


@ember_only
def test_cross_entropy_grads():
    x = rnd(4, 7)
    t = rng.integers(-7, 7, 4)
    check_grads(lambda x, t: F.cross_entropy(x, t), [x, t], order=2)
    x3 = rnd(2, 3, 5)
    check_grads(lambda x, t: F.cross_entropy(x, t), [x3, rng.integers(0, 5, (2, 3))])


def test_cross_entropy_grad_float32():
    x = rnd(3, 6).astype(np.float32)
    t = rng.integers(0, 6, 3)
    g = mx.grad(lambda x: F.cross_entropy(x, mx.array(t)).sum())(mx.array(x))
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.array(g), p - np.eye(6)[t], rtol=1e-5, atol=1e-6)
    gh = mx.grad(lambda x: F.cross_entropy(x, mx.array(t)).sum())(mx.array(x).astype(mx.bfloat16))
    assert gh.dtype == mx.bfloat16


def test_cross_entropy_vmap():
    x = rnd(3, 4, 6)
    t = rng.integers(0, 6, (3, 4))
    check_vmap(lambda x, t: F.cross_entropy(x, t), [x, t], in_axes=(0, 0), rtol=1e-5, atol=1e-5)
    check_vmap(lambda x, t: F.cross_entropy(x, t), [x, t[:, 0]], in_axes=(1, None), rtol=1e-5, atol=1e-5)
    check_vmap(lambda x, t: F.cross_entropy(x, t), [x[0], t.T], in_axes=(None, 1), rtol=1e-5, atol=1e-5)


def test_cross_entropy_errors():
    x = mx.zeros((3, 5))
    op = "[cross_entropy]"
    raises(ValueError, f"{op} targets shape (2) does not match logits shape (3,5) with the last axis removed.",
           lambda: F.cross_entropy(x, mx.array([0, 1])))
    raises(ValueError, f"{op} Received unsupported logits type int32.",
           lambda: F.cross_entropy(x.astype(mx.int32), mx.array([0, 1, 2])))
    raises(ValueError, f"{op} targets must be integer class indices but got float32.",
           lambda: F.cross_entropy(x, mx.array([0.0, 1.0, 2.0])))
    raises(ValueError, f"{op} logits must have at least 1 dimension",
           lambda: F.cross_entropy(mx.array(1.0), mx.array(0)))


# ---- gated_delta_update -------------------------------------------------------------

def gdn_ref(q, k, v, g, beta, s0=None, mask=None):
    B, T, Hk, Dk = q.shape
    Hv, Dv = v.shape[2], v.shape[3]
    r = Hv // Hk
    q, k = np.repeat(q, r, 2), np.repeat(k, r, 2)
    s = np.zeros((B, Hv, Dv, Dk)) if s0 is None else s0.astype(np.float64)
    ys = np.zeros((B, T, Hv, Dv))
    for t in range(T):
        gt = g[:, t, :, None, :] if g.ndim == 4 else g[:, t, :, None, None]
        sn = s * gt
        mem = (sn * k[:, t, :, None, :]).sum(-1)
        sn = sn + k[:, t, :, None, :] * ((v[:, t] - mem) * beta[:, t, :, None])[..., None]
        y = (sn * q[:, t, :, None, :]).sum(-1)
        if mask is not None:
            m = mask[:, t].astype(bool)
            sn = np.where(m[:, None, None, None], sn, s)
            y = np.where(m[:, None, None], y, 0.0)
        s = sn
        ys[:, t] = y
    return ys, s


def gdn_args(B=2, T=5, Hk=2, Hv=4, Dk=8, Dv=3, vector_gate=False):
    q, k = rnd(B, T, Hk, Dk) * 0.5, rnd(B, T, Hk, Dk) * 0.5
    v = rnd(B, T, Hv, Dv)
    g = rng.uniform(0.5, 1.0, (B, T, Hv, Dk) if vector_gate else (B, T, Hv))
    beta = rng.uniform(0.1, 0.9, (B, T, Hv))
    s0 = rnd(B, Hv, Dv, Dk) * 0.3
    return q, k, v, g, beta, s0


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("vector_gate", [False, True])
@pytest.mark.parametrize("dims", [(2, 5, 2, 4, 8, 3), (1, 7, 1, 1, 33, 17), (3, 1, 2, 2, 4, 4)])
def test_gated_delta_update(dt, vector_gate, dims):
    B, T, Hk, Hv, Dk, Dv = dims
    a = gdn_args(B, T, Hk, Hv, Dk, Dv, vector_gate)
    am = [arr(x, dt) for x in a[:5]]
    an = [back(x) for x in am]
    y, s = F.gated_delta_update(*am)
    assert y.dtype == getattr(mx, dt) and s.dtype == mx.float32
    assert y.shape == (B, T, Hv, Dv) and s.shape == (B, Hv, Dv, Dk)
    ry, rs = gdn_ref(*an)
    close(y, ry, dt, 20)
    np.testing.assert_allclose(back(s), rs, rtol=1e-4, atol=1e-4)
    s0 = mx.array(a[5].astype(np.float32))
    y, s = F.gated_delta_update(*am, initial_state=s0)
    ry, rs = gdn_ref(*an, back(s0))
    close(y, ry, dt, 20)
    np.testing.assert_allclose(back(s), rs, rtol=1e-4, atol=1e-4)


def test_gated_delta_update_mask_layouts_dtypes():
    q, k, v, g, beta, s0 = gdn_args()
    mask = np.array([[1, 1, 0, 1, 0], [0, 1, 1, 1, 1]], bool)
    f = lambda x: mx.array(x.astype(np.float32))
    y, s = F.gated_delta_update(f(q), f(k), f(v), f(g), f(beta), f(s0), mx.array(mask))
    ry, rs = gdn_ref(q, k, v, g, beta, s0, mask)
    np.testing.assert_allclose(np.array(y), ry, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(s), rs, rtol=1e-4, atol=1e-5)
    assert (np.array(y)[0, 2] == 0).all()
    # a float mask counts nonzero as kept
    y2, _ = F.gated_delta_update(f(q), f(k), f(v), f(g), f(beta), f(s0), mx.array(mask.astype(np.float32)))
    np.testing.assert_array_equal(np.array(y2), np.array(y))
    # non-contiguous inputs: q and v built transposed, k reversed in time
    qt = mx.array(np.ascontiguousarray(q.transpose(3, 2, 1, 0)).astype(np.float32)).transpose(3, 2, 1, 0)
    kr = f(k[:, ::-1].copy())[:, ::-1]
    vt = mx.array(np.ascontiguousarray(v.transpose(1, 0, 2, 3)).astype(np.float32)).transpose(1, 0, 2, 3)
    y3, s3 = F.gated_delta_update(qt, kr, vt, f(g), f(beta), f(s0))
    ry, rs = gdn_ref(q, k, v, g, beta, s0)
    np.testing.assert_allclose(np.array(y3), ry, rtol=1e-4, atol=1e-5)
    # half inputs with a float32 state: y in q's dtype, the state float32
    h = lambda x: f(x).astype(mx.float16)
    y4, s4 = F.gated_delta_update(h(q), h(k), h(v), h(g), h(beta), h(s0))
    assert y4.dtype == mx.float16 and s4.dtype == mx.float32
    y5, _ = F.gated_delta_update(f(q), f(k), h(v), f(g), f(beta))
    assert y5.dtype == mx.float32


def test_gated_delta_update_matches_op_composition():
    q, k, v, g, beta, s0 = [mx.array(x.astype(np.float32)) for x in gdn_args(Hk=1, Hv=1)]
    s = s0
    ys = []
    for t in range(q.shape[1]):
        s = s * g[:, t, :, None, None]
        kt = k[:, t, :, None, :]
        d = (v[:, t] - (s * kt).sum(-1)) * beta[:, t, :, None]
        s = s + kt * d[..., None]
        ys.append((s * q[:, t, :, None, :]).sum(-1))
    y, sf = F.gated_delta_update(q, k, v, g, beta, s0)
    np.testing.assert_allclose(np.array(y), np.array(mx.stack(ys, 1)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(sf), np.array(s), rtol=1e-5, atol=1e-5)


@ember_only
def test_gated_delta_update_float64_and_empty_time():
    a = gdn_args()
    y, s = F.gated_delta_update(*[mx.array(x, dtype=mx.float64) for x in a])
    assert y.dtype == mx.float64 and s.dtype == mx.float64
    ry, rs = gdn_ref(*a)
    np.testing.assert_allclose(np.array(y), ry, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.array(s), rs, rtol=1e-12, atol=1e-12)
    # T = 0: no steps, the state is the initial one (MLX raises from stack)
    e = [x[:, :0] for x in a[:5]]
    y, s = F.gated_delta_update(*[mx.array(x) for x in e], initial_state=mx.array(a[5].astype(np.float32)))
    assert y.shape == (2, 0, 4, 3)
    np.testing.assert_allclose(np.array(s), a[5].astype(np.float32))


@ember_only
def test_gated_delta_update_grads():
    q, k, v, g, beta, s0 = gdn_args(B=1, T=3, Hk=1, Hv=2, Dk=3, Dv=2)
    check_grads(lambda *x: F.gated_delta_update(*x), [q, k, v, g, beta, s0])
    mask = np.array([[1, 0, 1]], bool)
    check_grads(lambda q, k, v, g, b, s, m: F.gated_delta_update(q, k, v, g, b, s, m), [q, k, v, g, beta, s0, mask])
    qv, kv, vv, gv, bv, sv = gdn_args(B=1, T=2, Hk=1, Hv=1, Dk=3, Dv=2, vector_gate=True)
    check_grads(lambda *x: F.gated_delta_update(*x), [qv, kv, vv, gv, bv, sv])


def test_gated_delta_update_vmap():
    q, k, v, g, beta, s0 = gdn_args(B=2, T=3, Hk=1, Hv=2, Dk=4, Dv=3)
    st = lambda x: np.stack([x, x * 0.5 + 0.1, -x])
    fn = lambda *x: F.gated_delta_update(*x)
    check_vmap(fn, [st(q), k, st(v), g, beta, s0], in_axes=(0, None, 0, None, None, None), rtol=1e-5, atol=1e-5)
    check_vmap(fn, [q, k, v, g, st(beta).transpose(1, 0, 2, 3), st(s0)], in_axes=(None, None, None, None, 1, 0),
               rtol=1e-5, atol=1e-5)


@ember_only
def test_gated_delta_update_rank_error():
    q, k, v, g, beta, _ = [mx.array(x.astype(np.float32)) for x in gdn_args()]
    # MLX raises IndexError ("SmallVector out of range") from inside
    raises(ValueError, "[gated_delta_update] q, k and v must have 4 dimensions",
           lambda: F.gated_delta_update(q[0], k[0], v[0], g, beta))


def test_gated_delta_update_errors():
    q, k, v, g, beta, s0 = [mx.array(x.astype(np.float32)) for x in gdn_args(Hk=2, Hv=4)]
    op = "[gated_delta_update]"
    G = F.gated_delta_update
    raises(ValueError, f"{op} k of shape (2,5,2,7)", lambda: G(q, k[..., :7], v, g, beta))
    raises(ValueError, f"{op} v of shape (2,4,4,3)", lambda: G(q, k, v[:, :4], g, beta))
    raises(ValueError, f"{op} the value heads of v (2,5,3,3)", lambda: G(q, k, v[:, :, :3], g[..., :3], beta[..., :3]))
    raises(ValueError, f"{op} g of shape (2,5,2) must have shape (2,5,4) or (2,5,4,8)",
           lambda: G(q, k, v, g[..., :2], beta))
    raises(ValueError, f"{op} beta of shape (2,5,4,1)", lambda: G(q, k, v, g, beta[..., None]))
    raises(ValueError, f"{op} initial_state of shape (2,4,8,3) must have shape (2,4,3,8)",
           lambda: G(q, k, v, g, beta, s0.transpose(0, 1, 3, 2)))
    raises(ValueError, f"{op} mask of shape (2,4) must have shape (2,5)",
           lambda: G(q, k, v, g, beta, mask=mx.ones((2, 4), dtype=mx.bool_)))


# ---- vmap over the per-head and per-pair parameters ---------------------------------

def test_rope_vmap_over_freqs():
    x = rnd(2, 4, 8)
    fr = rng.uniform(1.0, 9.0, (3, 4))
    f = lambda x, fr: F.rope(x, 8, traditional=False, base=None, scale=1.0, offset=1, freqs=fr)
    check_vmap(f, [x, fr], in_axes=(None, 0), rtol=1e-5, atol=1e-5)
    check_vmap(f, [np.stack([x, -x, 2 * x], 1), fr.T], in_axes=(1, 1), rtol=1e-5, atol=1e-5)


def test_sdpa_vmap_over_sinks():
    q, k, v = rnd(1, 4, 3, 4), rnd(1, 2, 5, 4), rnd(1, 2, 5, 3)
    sinks = rnd(3, 4)
    f = lambda q, k, v, sk: F.scaled_dot_product_attention(q, k, v, scale=0.5, sinks=sk)
    check_vmap(f, [q, k, v, sinks], in_axes=(None, None, None, 0), rtol=1e-5, atol=1e-5)
    qb = np.stack([q, 2 * q, -q])
    fc = lambda q, k, v, sk: F.scaled_dot_product_attention(q, k, v, scale=0.5, mask="causal", sinks=sk)
    check_vmap(fc, [qb, k, v, sinks.T], in_axes=(0, None, None, 1), rtol=1e-5, atol=1e-5)
    m = rnd(3, 3, 5)
    fm = lambda q, k, v, m, sk: F.scaled_dot_product_attention(q, k, v, scale=0.5, mask=m, sinks=sk)
    check_vmap(fm, [qb, k, v, m, sinks], in_axes=(0, None, None, 0, 0), rtol=1e-5, atol=1e-5)
