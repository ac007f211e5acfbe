"""Quantization: mx.quantize/dequantize against a NumPy model of each format
(MLX 0.32's CPU packing and rounding, bit for bit), quantized_matmul against
dequantize + matmul (every mode, bits, group size, transpose, batched and
odd shapes, each ISA level), its derivatives and vmap, gather_qmm, qqmm, the
errors, and the quantized nn layers (with a tiny mlx-lm Llama)."""

import importlib.util

import numpy as np
import pytest

from conftest import ember_only, mx

pytestmark = ember_only

AFFINE_BITS = [1, 2, 3, 4, 5, 6, 8]
GROUPS = [32, 64, 128]
FP_MODES = ["mxfp4", "mxfp8", "nvfp4"]


@pytest.fixture(autouse=True)
def float_qmv(request):
    """These tests compare with float arithmetic at float32 tolerances: the
    float kernels (the int8-activation paths, Ember's default for affine
    4/8-bit weights, are tested in test_qmm_kernels.py against a bound of
    their own; greedy tokens of a tiny random model, whose
    top logits lie close together, may differ under it). Yields the setting
    it found (the default unless EMBER_QMM_INT8 is set)."""
    before = mx._set_qmm_int8(0)
    yield before
    mx._set_qmm_int8(before)


# --------------------------------------------------------------------------
# the NumPy model of the formats
# --------------------------------------------------------------------------

def f32(a):
    return np.asarray(a, dtype=np.float32)


def pack(q, bits):
    """Codes (..., C) -> MLX's uint32 layout (..., C * bits / 32)."""
    q = np.asarray(q).astype(np.uint64)
    lead, C = q.shape[:-1], q.shape[-1]
    per = 32 // bits if bits in (1, 2, 4, 8) else (4 if bits == 6 else 8)
    word = (q.reshape(*lead, C // per, per) << (np.arange(per, dtype=np.uint64) * np.uint64(bits))).sum(-1)
    if bits in (1, 2, 4, 8):
        return word.astype(np.uint32)
    nbytes = per * bits // 8
    by = np.stack([(word >> np.uint64(8 * i)) & np.uint64(255) for i in range(nbytes)], -1).astype(np.uint8)
    return np.ascontiguousarray(by.reshape(*lead, -1)).view(np.uint32)


def unpack(wq, bits):
    wq = np.asarray(wq)
    lead = wq.shape[:-1]
    C = wq.shape[-1] * 32 // bits
    if bits in (1, 2, 4, 8):
        per = 32 // bits
        w = wq.astype(np.uint64)[..., None] >> (np.arange(per, dtype=np.uint64) * np.uint64(bits))
    else:
        per = 4 if bits == 6 else 8
        nbytes = per * bits // 8
        by = np.ascontiguousarray(wq).view(np.uint8).reshape(*lead, -1, nbytes).astype(np.uint64)
        word = sum(by[..., i] << np.uint64(8 * i) for i in range(nbytes))
        w = word[..., None] >> (np.arange(per, dtype=np.uint64) * np.uint64(bits))
    return (w & np.uint64((1 << bits) - 1)).reshape(*lead, C)


def bf16(x):
    """float32 rounded to bfloat16 (nearest, ties to even), kept as float32."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def ref_affine_quantize(w, gs, bits, bfloat=False):
    dt = w.dtype
    g = f32(w).reshape(*w.shape[:-1], -1, gs)
    nb = np.float32((1 << bits) - 1)
    hi, lo = g.max(-1), g.min(-1)
    if bits == 1:
        scale = np.maximum(hi - lo, np.float32(1e-7))
        bias = lo
    else:
        neg = np.abs(lo) > np.abs(hi)
        scale = np.maximum((hi - lo) / nb, np.float32(1e-7))
        scale = np.where(neg, scale, -scale)
        edge = np.where(neg, lo, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            q0 = np.rint(edge / scale)
            scale = np.where(q0 != 0, edge / q0, scale).astype(np.float32)
        bias = np.where(q0 != 0, edge, np.float32(0)).astype(np.float32)
    q = np.clip(np.rint((g - bias[..., None]) / scale[..., None]), 0, nb).astype(np.uint32)
    if bfloat:
        return pack(q.reshape(w.shape), bits), bf16(scale), bf16(bias)
    return pack(q.reshape(w.shape), bits), scale.astype(dt), bias.astype(dt)


def ref_affine_dequantize(wq, s, b, gs, bits, rnd):
    """MLX's dequantize: s * q rounded to the output dtype, plus b rounded
    again; `rnd` rounds float32 values to that dtype (f32, half, bf16)."""
    q = unpack(wq, bits).astype(np.float32)
    q = q.reshape(*q.shape[:-1], -1, gs)
    out = rnd(rnd(q * f32(s)[..., None]) + f32(b)[..., None])
    return out.reshape(*wq.shape[:-1], -1)


FP4 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def e4m3_values():
    c = np.arange(256)
    e, m = (c >> 3) & 15, c & 7
    v = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e - 7))
    v = np.where((c & 127) == 127, np.nan, v)
    return np.where(c & 128, -v, v).astype(np.float32)


E4M3 = e4m3_values()


def fp4_encode(x):
    a = np.abs(x)
    code = np.select([a <= .25, a <= .75, a <= 1.25, a <= 1.75, a <= 2.5, a <= 3.5, a <= 5], range(7), 7)
    code = np.where(np.isnan(x), 0, code)
    return (code | np.where((x < 0) & (code != 0), 8, 0)).astype(np.uint8)


def e4m3_encode(x):
    """Round to the nearest e4m3 value, ties to the even code; saturating."""
    a = np.where(np.isnan(x), 448, np.minimum(np.abs(x), 448)).astype(np.float64)
    vals = E4M3[:127].astype(np.float64)
    idx = np.clip(np.searchsorted(vals, a), 1, 126)
    lo, hi = vals[idx - 1], vals[idx]
    up = (a - lo > hi - a) | ((a - lo == hi - a) & (idx % 2 == 0))
    code = np.where(up, idx, idx - 1)
    return (code | np.where(np.signbit(x), 128, 0)).astype(np.uint8)


def e8m0_values(c):
    c = np.asarray(c).astype(np.int64)
    return np.where(c == 0, np.float32(2.0 ** -127), np.ldexp(np.float32(1), (c - 127).astype(np.int32))).astype(
        np.float32)


def e8m0_for(amax, emax):
    """The smallest power of two s with amax <= emax * s, as e8m0 (127 for 0)."""
    a = np.asarray(amax, np.float64)
    m, e = np.frexp(a / emax)
    e = np.where(m == 0.5, e - 1, e)
    return np.where(a == 0, 127, np.clip(e + 127, 0, 254)).astype(np.uint8)


def half(x):
    """float32 rounded to float16 (nearest even; inf beyond its range), kept as float32."""
    with np.errstate(over="ignore"):
        return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


def ref_fp_quantize(w, mode, global_scale=None, bfloat=False, dtype=None):
    """MLX composes the fp modes of ops in w's dtype (``dtype``: "bfloat16"
    or "float16" for half weights, given as float32 values; ``bfloat=True``
    is dtype="bfloat16"): nvfp4's amax / 6 and w / scale are rounded to it,
    the global scale's 2688 / g multiplies both in float32; the mx modes
    divide by a power of two."""
    dtype = "bfloat16" if bfloat else dtype
    rnd = bf16 if dtype == "bfloat16" else half if dtype == "float16" else f32
    gs, bits = (16, 4) if mode == "nvfp4" else (32, 8 if mode == "mxfp8" else 4)
    g = f32(w).reshape(*w.shape[:-1], -1, gs)
    amax = np.abs(g).max(-1)
    if mode == "nvfp4":
        sd = rnd(amax / np.float32(6))
        enc = np.float32(1)
        if global_scale is not None:
            enc = np.float32(np.float32(2688) / np.float32(global_scale))
            sd = (sd * enc).astype(np.float32)
        sc = e4m3_encode(sd)
        sv = E4M3[sc]
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.where(sv[..., None] == 0, np.float32(0), rnd(g / sv[..., None]))
        y = (y * enc).astype(np.float32)
    else:
        sc = e8m0_for(amax, 448 if bits == 8 else 6)
        y = rnd(g / e8m0_values(sc)[..., None])
    y = y.reshape(w.shape)
    return pack(fp4_encode(y) if bits == 4 else e4m3_encode(y), bits), sc


def ref_fp_dequantize(wq, sc, mode, global_scale=None):
    gs, bits = (16, 4) if mode == "nvfp4" else (32, 8 if mode == "mxfp8" else 4)
    q = unpack(wq, bits)
    v = FP4[q] if bits == 4 else E4M3[q]
    sv = E4M3[sc] if mode == "nvfp4" else e8m0_values(sc)
    if global_scale is not None:
        sv = (sv * np.float32(np.float32(global_scale) / np.float32(2688))).astype(np.float32)
    return (v.reshape(*q.shape[:-1], -1, gs) * sv[..., None]).reshape(q.shape).astype(np.float32)


def weights(rng, shape, dtype=np.float32, gs=32):
    """Random weights with hard groups: ties, zeros, constants, a few levels,
    one dominant negative value."""
    w = rng.standard_normal(shape).astype(np.float32)
    flat = w.reshape(-1, shape[-1])
    if flat.shape[0] >= 5 and shape[-1] >= gs:
        flat[0, :gs] = np.round(flat[0, :gs] * 4) / 4
        flat[1, :gs] = 0
        flat[2, :gs] = 0.75
        flat[3, :gs] = rng.integers(0, 3, gs)
        flat[4, :gs] = rng.standard_normal(gs) * 1e-3
        flat[4, 0] = -5
    return w.astype(dtype)


def to_np(a):
    return np.array(a.astype(mx.float32)) if a.dtype == mx.bfloat16 else np.array(a)


# --------------------------------------------------------------------------
# quantize / dequantize
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("bits", AFFINE_BITS)
def test_affine_quantize_bit_exact(rng, bits, dtype):
    for gs in GROUPS:
        w = weights(rng, (6, 256), gs=gs)
        wm = mx.array(w).astype(getattr(mx, dtype))
        wn = to_np(wm)
        wq, s, b = mx.quantize(wm, gs, bits)
        assert wq.dtype == mx.uint32 and wq.shape == (6, 256 * bits // 32)
        assert s.dtype == wm.dtype and s.shape == b.shape == (6, 256 // gs)
        rq, rs, rb = ref_affine_quantize(wn, gs, bits, dtype == "bfloat16")
        np.testing.assert_array_equal(np.array(wq), rq)
        np.testing.assert_array_equal(to_np(s), f32(rs))
        np.testing.assert_array_equal(to_np(b), f32(rb))
        d = mx.dequantize(wq, s, b, gs, bits)
        assert d.dtype == wm.dtype
        if dtype != "bfloat16":
            np.testing.assert_array_equal(to_np(d), ref_affine_dequantize(rq, rs, rb, gs, bits, half if wn.dtype == np.float16 else f32))
        # the round trip is within a step and a half (the edge fit may clip
        # the other edge by up to half a step more)
        err = np.abs(to_np(d) - wn).reshape(6, -1, gs).max(-1)
        step = np.abs(to_np(s))
        assert (err <= 1.5 * step + 0.01 * np.abs(wn).reshape(6, -1, gs).max(-1) + 1e-6).all()


@pytest.mark.parametrize("mode", FP_MODES)
def test_fp_quantize_bit_exact(rng, mode):
    for scale in [1.0, 1e-3, 300.0]:
        w = weights(rng, (6, 128)) * np.float32(scale)
        gsc = [None, 3.7, 0.01] if mode == "nvfp4" else [None]
        for g in gsc:
            kw = {} if g is None else dict(global_scale=mx.array(g))
            wq, s = mx.quantize(mx.array(w), mode=mode, **kw)
            assert wq.dtype == mx.uint32 and s.dtype == mx.uint8
            rq, rs = ref_fp_quantize(w, mode, g)
            np.testing.assert_array_equal(np.array(wq), rq)
            np.testing.assert_array_equal(np.array(s), rs)
            d = mx.dequantize(wq, s, mode=mode, dtype=mx.float32, **kw)
            np.testing.assert_array_equal(np.array(d), ref_fp_dequantize(rq, rs, mode, g))
            assert mx.dequantize(wq, s, mode=mode, **kw).dtype == mx.bfloat16  # MLX's default
            # half-precision weights: MLX's arithmetic in their dtype
            for dt, rnd in [("bfloat16", bf16), ("float16", half)]:
                wq, s = mx.quantize(mx.array(w).astype(getattr(mx, dt)), mode=mode, **kw)
                rq, rs = ref_fp_quantize(rnd(w), mode, g, dtype=dt)
                np.testing.assert_array_equal(np.array(wq), rq, err_msg=dt)
                np.testing.assert_array_equal(np.array(s), rs, err_msg=dt)


def test_fp_encodings_edge_values():
    # fp4: ties go to the smaller magnitude, a negative value rounding to 0 gives +0
    t = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.1, -0.75, -5.5, 0.0], np.float32)
    w = np.zeros((1, 32), np.float32)
    w[0, :t.size] = t
    w[0, -1] = 6.0  # scale 1
    wq, s = mx.quantize(mx.array(w), mode="mxfp4")
    assert np.array(s)[0, 0] == 127
    codes = unpack(np.array(wq), 4)[0, :t.size]
    np.testing.assert_array_equal(codes, [0, 1, 2, 3, 4, 5, 6, 0, 9, 15, 0])
    # the e8m0 scale: exactly at 6 * 2^k the smaller power of two
    for amax, code in [(6.0, 127), (6.000001, 128), (3.0, 126), (12.0, 128), (0.0, 127)]:
        w = np.zeros((1, 32), np.float32)
        w[0, 0] = amax
        assert np.array(mx.quantize(mx.array(w), mode="mxfp4")[1])[0, 0] == code, amax
    w = np.zeros((1, 32), np.float32)
    w[0, 0] = 448.0
    assert np.array(mx.quantize(mx.array(w), mode="mxfp8")[1])[0, 0] == 127
    # nvfp4 divides by the e4m3 scale, as MLX: 18.75 / 3.75 is the tie 5
    # (-> 4.0), where 18.75 * (1 / 3.75) is 5.0000005 (-> 6.0)
    w = np.zeros((1, 32), np.float32)
    w[0, :2] = [22.0, 18.75]
    wq, s = mx.quantize(mx.array(w), mode="nvfp4")
    assert E4M3[np.array(s)[0, 0]] == 3.75 and unpack(np.array(wq), 4)[0, 1] == 6
    # ... in w's dtype, then times 2688 / global_scale: 0.5 / 208 rounds up
    # in bfloat16, 0.5 / 208 * 2688 / 3.7 = 1.7514 (-> 2.0; 1.7464 -> 1.5 in float32)
    w[0, :2] = [1.75, 0.5]
    for dt, code in [(mx.bfloat16, 4), (mx.float32, 3)]:
        wq, s = mx.quantize(mx.array(w).astype(dt), mode="nvfp4", global_scale=mx.array(3.7))
        assert E4M3[np.array(s)[0, 0]] == 208 and unpack(np.array(wq), 4)[0, 1] == code, dt


def test_quantize_defaults_and_batch_dims(rng):
    w = rng.standard_normal((2, 3, 128)).astype(np.float32)
    wq, s, b = mx.quantize(mx.array(w))
    assert wq.shape == (2, 3, 16) and s.shape == (2, 3, 2)
    rq, rs, rb = ref_affine_quantize(w, 64, 4)
    np.testing.assert_array_equal(np.array(wq), rq)
    assert [a.shape for a in mx.quantize(mx.array(w), mode="nvfp4")] == [(2, 3, 16), (2, 3, 8)]
    assert [a.shape for a in mx.quantize(mx.array(w), mode="mxfp8")] == [(2, 3, 32), (2, 3, 4)]
    # non-contiguous input
    wt = np.ascontiguousarray(w[0].T[:64].T)
    got = mx.quantize(mx.array(w[0]).T[:64].T, 32, 4)
    np.testing.assert_array_equal(np.array(got[0]), ref_affine_quantize(wt, 32, 4)[0])


def test_non_finite_input_gives_codes():
    w = np.ones((2, 64), np.float32)
    w[0, 3] = np.nan
    w[1, 5] = np.inf
    for mode in ["affine", "mxfp4", "mxfp8", "nvfp4"]:
        q = mx.quantize(mx.array(w), mode=mode)
        mx.eval(q)
        assert np.array(q[0]).shape[0] == 2
    wq, s = mx.quantize(mx.array(w), mode="mxfp4")
    assert (np.array(s)[:, 0] == 255).all()  # a non-finite group: the e8m0 NaN scale


def test_empty():
    wq, s, b = mx.quantize(mx.zeros((0, 64)))
    assert wq.shape == (0, 8) and s.shape == (0, 1)
    assert mx.dequantize(wq, s, b).shape == (0, 64)
    w = mx.quantize(mx.ones((8, 64)))
    out = mx.quantized_matmul(mx.zeros((0, 64)), *w)
    assert out.shape == (0, 8)
    assert mx.quantized_matmul(mx.zeros((2, 0, 64)), *w).shape == (2, 0, 8)


@pytest.mark.parametrize("kw, frag", [
    (dict(group_size=48), "divisible by the quantization group size"),
    (dict(group_size=0), "group size 0 is not supported"),
    (dict(group_size=16), "group size 16 is not supported"),
    (dict(group_size=-32), "group size -32 is not supported"),
    (dict(bits=0), "number of bits 0 is not supported"),
    (dict(bits=7), "number of bits 7 is not supported"),
    (dict(bits=9), "number of bits 9 is not supported"),
    (dict(mode="mxfp4", group_size=64), "mxfp4 quantization requires group size 32"),
    (dict(mode="nvfp4", bits=8), "nvfp4 quantization requires bits to be 4"),
    (dict(mode="foo"), "Invalid quantization mode 'foo'"),
    (dict(global_scale=mx.array(1.0)), "only supported with the nvfp4 mode"),
])
def test_quantize_errors(kw, frag):
    w = mx.ones((4, 64))
    with pytest.raises(ValueError, match=frag):
        mx.eval(mx.quantize(w, **kw))


def test_quantize_input_errors():
    with pytest.raises(ValueError, match=r"\[quantize\].*at least 2 dimension"):
        mx.quantize(mx.ones((64,)))
    with pytest.raises(ValueError, match=r"\[quantize\].*divisible.*\(4,48\)"):
        mx.quantize(mx.ones((4, 48)), 32)
    with pytest.raises(ValueError, match=r"\[quantize\].*int32"):
        mx.quantize(mx.ones((4, 64), mx.int32))


def test_dequantize_and_matmul_errors():
    wq, s, b = mx.quantize(mx.ones((8, 64)))
    x = mx.ones((2, 64))
    cases = [
        (lambda: mx.dequantize(wq, s[:4], b), r"\[dequantize\] The scales must have shape \(8,1\)"),
        (lambda: mx.dequantize(wq, s, b[:, :0]), r"\[dequantize\] The biases must have shape"),
        (lambda: mx.dequantize(wq, s), r"\[dequantize\] The affine mode requires biases"),
        (lambda: mx.dequantize(wq, s, b, group_size=0), "group size 0"),
        (lambda: mx.dequantize(wq[0], s, b), "at least 2 dimensions"),
        (lambda: mx.dequantize(wq.astype(mx.int32), s, b), "must be uint32"),
        (lambda: mx.quantized_matmul(x, wq, s[:7], b), r"\[quantized_matmul\] The scales must have shape \(8,1\)"),
        (lambda: mx.quantized_matmul(x, wq, s, b[:3]), r"\[quantized_matmul\] The biases must have shape"),
        (lambda: mx.quantized_matmul(mx.ones((2, 32)), wq, s, b), r"last dimension of x \(2,32\)"),
        (lambda: mx.quantized_matmul(x, wq, s, b, bits=0), "number of bits 0"),
        (lambda: mx.quantized_matmul(x, wq, s, b, group_size=0), "group size 0"),
        (lambda: mx.quantized_matmul(x.astype(mx.int32), wq, s, b), "x must be float32"),
        (lambda: mx.quantized_matmul(x, wq[0], s, b), "at least 2 dimensions"),
        (lambda: mx.quantized_matmul(x, wq, mx.repeat(s, 2, 1), b, mode="mxfp4"), "Biases can only be used"),
        (lambda: mx.quantized_matmul(x, wq, mx.repeat(s, 2, 1), None, mode="mxfp4"), "must be uint8"),
    ]
    for f, frag in cases:
        with pytest.raises(ValueError, match=frag):
            mx.eval(f())


# --------------------------------------------------------------------------
# quantized_matmul
# --------------------------------------------------------------------------

def float_weights(wq, s, b, gs, bits, mode):
    """The dequantized weights in float32 (the kernel's own precision)."""
    if mode == "affine":
        q = unpack(np.array(wq), bits).astype(np.float64)
        q = q.reshape(*q.shape[:-1], -1, gs)
        return (q * to_np(s).astype(np.float64)[..., None] + to_np(b).astype(np.float64)[..., None]).reshape(
            *q.shape[:-2], -1)
    return ref_fp_dequantize(np.array(wq), np.array(s), mode).astype(np.float64)


def check_qmm(rng, x, w_float, gs, bits, mode, transpose, xdtype=mx.float32, tol=2e-5):
    q = mx.quantize(mx.array(w_float).astype(xdtype), gs, bits, mode=mode)
    wq, s = q[0], q[1]
    b = q[2] if mode == "affine" else None
    W = float_weights(wq, s, b, gs, bits, mode)
    xm = mx.array(x).astype(xdtype)
    out = mx.quantized_matmul(xm, wq, s, b, transpose, gs, bits, mode)
    assert out.dtype == xdtype
    xn = to_np(xm).astype(np.float64)
    Wt = np.swapaxes(W, -1, -2) if transpose else W
    ref = xn @ Wt
    err = np.abs(to_np(out) - ref).max() / (np.abs(ref).max() + 1e-12)
    assert err < tol, (mode, bits, gs, transpose, x.shape, err)


@pytest.mark.parametrize("bits", AFFINE_BITS)
def test_qmm_affine(rng, bits):
    for gs in GROUPS:
        for transpose in [True, False]:
            for M in [1, 3, 5, 20]:
                w = weights(rng, (40, 256) if transpose else (256, 128), gs=gs)
                x = rng.standard_normal((M, 256)).astype(np.float32)
                check_qmm(rng, x, w, gs, bits, "affine", transpose)


@pytest.mark.parametrize("mode", FP_MODES)
def test_qmm_fp(rng, mode):
    for transpose in [True, False]:
        for M in [1, 2, 4, 9, 33]:
            w = weights(rng, (24, 96) if transpose else (96, 64))
            x = rng.standard_normal((M, 96)).astype(np.float32)
            check_qmm(rng, x, w, None, None, mode, transpose)


def test_qmm_odd_shapes_dtypes_and_layouts(rng, level):
    # K not a multiple of the 8-word chunk (tail), N odd, x half types, views
    for K, N in [(96, 7), (160, 33), (32, 1)]:
        w = weights(rng, (N, K))
        for M in [1, 4, 6, 17]:
            x = rng.standard_normal((M, K)).astype(np.float32)
            for bits in [2, 4, 8]:
                check_qmm(rng, x, w, 32, bits, "affine", True)
            check_qmm(rng, x, w, None, None, "nvfp4", True)
    w = weights(rng, (16, 64))
    x = rng.standard_normal((3, 64)).astype(np.float32)
    check_qmm(rng, x, w, 64, 4, "affine", True, mx.float16, tol=2e-3)
    check_qmm(rng, x, w, 64, 4, "affine", True, mx.bfloat16, tol=1e-2)
    wq, s, b = mx.quantize(mx.array(w), 64, 4)
    xt = mx.array(rng.standard_normal((64, 3)).astype(np.float32)).T  # transposed view
    np.testing.assert_allclose(np.array(mx.quantized_matmul(xt, wq, s, b)),
                               np.array(mx.quantized_matmul(mx.array(np.array(xt)), wq, s, b)), rtol=1e-6)
    # promotion: float16 x with float32 scales gives float32 (as MLX)
    assert mx.quantized_matmul(mx.array(x).astype(mx.float16), wq, s, b).dtype == mx.float32
    # 1-d x
    assert mx.quantized_matmul(mx.array(x[0]), wq, s, b).shape == (16,)


def test_qmm_levels_agree(rng):
    w = weights(rng, (64, 256))
    before = mx.__config__()["isa"]
    for bits, mode in [(4, "affine"), (8, "affine"), (3, "affine"), (4, "mxfp4"), (8, "mxfp8")]:
        gs = 64 if mode == "affine" else None
        q = mx.quantize(mx.array(w), gs, bits, mode=mode)
        b = q[2] if mode == "affine" else None
        for M in [1, 3, 40]:
            x = mx.array(rng.standard_normal((M, 256)).astype(np.float32))
            outs = []
            for lv in mx.__config__()["isa_levels"]:
                mx._set_cpu_isa(lv)
                outs.append(np.array(mx.quantized_matmul(x, q[0], q[1], b, True, gs, bits, mode)))
            mx._set_cpu_isa(before)
            for o in outs[1:]:
                if M <= 8:
                    np.testing.assert_array_equal(o, outs[0])  # the lane kernel: same bits on every level
                else:
                    np.testing.assert_allclose(o, outs[0], rtol=1e-5, atol=1e-5)


def test_qmm_batched_broadcast(rng):
    w = weights(rng, (3, 1, 16, 64))
    q = mx.quantize(mx.array(w), 32, 4)
    W = float_weights(*q, 32, 4, "affine")  # (3, 1, 16, 64)
    for xs in [(2, 5, 64), (3, 2, 5, 64), (1, 5, 64)]:
        x = rng.standard_normal(xs).astype(np.float32)
        out = mx.quantized_matmul(mx.array(x), *q, True, 32, 4)
        ref = x.astype(np.float64) @ np.swapaxes(W, -1, -2)
        assert out.shape == ref.shape
        np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-5)
    # 2-d weights, batched x
    q2 = mx.quantize(mx.array(w[0, 0]), 32, 4)
    x = rng.standard_normal((2, 3, 5, 64)).astype(np.float32)
    out = mx.quantized_matmul(mx.array(x), *q2, True, 32, 4)
    np.testing.assert_allclose(np.array(out), x @ float_weights(*q2, 32, 4, "affine").T, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="broadcast"):
        mx.quantized_matmul(mx.ones((2, 5, 64)), *mx.quantize(mx.ones((3, 16, 64)), 32, 4), True, 32, 4)


# --------------------------------------------------------------------------
# derivatives, vmap
# --------------------------------------------------------------------------

def central(f, x, d, h=1.0):
    """Central difference of f at x along d (f is linear in x: exact up to
    rounding, so a large step is best)."""
    return (np.array(f(x + h * d)).astype(np.float64) - np.array(f(x - h * d))) / (2 * h)


def check_vjp_jvp(rng, f, args, cot, grads, n=None):
    """For each of the first n (all) arguments of f (linear in each): the vjp's
    gradient `grads[i]` against a central difference along a random
    direction d (<cot, J d> = <J^T cot, d>, sums in float64), its shape and
    dtype, and the jvp along d against the same difference."""
    for i in range(len(args) if n is None else n):
        p = args[i]
        d = mx.array(rng.standard_normal(p.shape).astype(np.float32))

        def fi(v):
            a = list(args)
            a[i] = v
            return f(*a)
        num = central(fi, p, d)
        lhs = float((np.array(cot).astype(np.float64) * num).sum())
        rhs = float((np.array(grads[i]).astype(np.float64) * np.array(d)).sum())
        assert abs(lhs - rhs) <= 1e-4 * max(1.0, abs(lhs)), (i, lhs, rhs)
        assert grads[i].shape == p.shape and grads[i].dtype == p.dtype
        _, (t,) = mx.jvp(fi, [p], [d])
        np.testing.assert_allclose(np.array(t), num, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("transpose", [True, False])
def test_qmm_vjp_jvp(rng, transpose):
    w = weights(rng, (16, 64) if transpose else (64, 32))
    wq, s, b = mx.quantize(mx.array(w), 32, 4)
    x = mx.array(rng.standard_normal((2, 3, 64)).astype(np.float32))
    f = lambda x, s, b: mx.quantized_matmul(x, wq, s, b, transpose, 32, 4)
    out = f(x, s, b)
    cot = mx.array(rng.standard_normal(out.shape).astype(np.float32))
    _, grads = mx.vjp(lambda x, s, b: f(x, s, b), [x, s, b], [cot])
    check_vjp_jvp(rng, f, [x, s, b], cot, grads)


def test_qmm_grad_fp_mode(rng):
    w = weights(rng, (16, 64))
    wq, s = mx.quantize(mx.array(w), mode="mxfp8")
    x = mx.array(rng.standard_normal((3, 64)).astype(np.float32))
    g = mx.grad(lambda x: (mx.quantized_matmul(x, wq, s, mode="mxfp8") ** 2).sum())(x)
    W = ref_fp_dequantize(np.array(wq), np.array(s), "mxfp8").astype(np.float64)
    ref = 2 * (np.array(x) @ W.T) @ W
    np.testing.assert_allclose(np.array(g), ref, rtol=1e-4, atol=1e-4)


def test_dequantize_vjp(rng):
    w = weights(rng, (4, 64))
    wq, s, b = mx.quantize(mx.array(w), 32, 3)
    cot = mx.array(rng.standard_normal((4, 64)).astype(np.float32))
    _, (gs_, gb) = mx.vjp(lambda s, b: mx.dequantize(wq, s, b, 32, 3), [s, b], [cot])
    q = unpack(np.array(wq), 3).reshape(4, 2, 32)
    c = np.array(cot).reshape(4, 2, 32)
    np.testing.assert_allclose(np.array(gs_), (c * q).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(np.array(gb), c.sum(-1), rtol=1e-5)


def test_vmap(rng):
    ws = [weights(rng, (8, 64)) for _ in range(3)]
    qs = [mx.quantize(mx.array(w), 32, 4) for w in ws]
    W, S, B = (mx.stack([q[i] for q in qs]) for i in range(3))
    xs = mx.array(rng.standard_normal((3, 2, 64)).astype(np.float32))
    f = lambda x, w, s, b: mx.quantized_matmul(x, w, s, b, True, 32, 4)
    got = mx.vmap(f)(xs, W, S, B)
    ref = np.stack([np.array(f(xs[i], W[i], S[i], B[i])) for i in range(3)])
    np.testing.assert_allclose(np.array(got), ref, rtol=1e-6, atol=1e-6)
    got = mx.vmap(f, in_axes=(1, None, None, None))(mx.swapaxes(xs, 0, 1), W[0], S[0], B[0])
    ref = np.stack([np.array(f(xs[i], W[0], S[0], B[0])) for i in range(3)])
    np.testing.assert_allclose(np.array(got), ref, rtol=1e-6, atol=1e-6)
    got = mx.vmap(f, in_axes=(None, 0, 0, 0))(xs[0], W, S, B)
    ref = np.stack([np.array(f(xs[0], W[i], S[i], B[i])) for i in range(3)])
    np.testing.assert_allclose(np.array(got), ref, rtol=1e-6, atol=1e-6)
    # quantize and dequantize under vmap
    wb = mx.array(np.stack(ws))
    qv = mx.vmap(lambda w: mx.quantize(w, 32, 4))(wb)
    for i in range(3):
        np.testing.assert_array_equal(np.array(qv[0][i]), np.array(qs[i][0]))
    dv = mx.vmap(lambda w, s, b: mx.dequantize(w, s, b, 32, 4))(*qv)
    np.testing.assert_array_equal(np.array(dv[1]), np.array(mx.dequantize(*qs[1], 32, 4)))


# --------------------------------------------------------------------------
# gather_qmm, qqmm
# --------------------------------------------------------------------------

def test_gather_qmm(rng):
    E, N, K = 4, 8, 64
    w = weights(rng, (E, N, K))
    q = mx.quantize(mx.array(w), 32, 4)
    W = float_weights(*q, 32, 4, "affine")
    x = rng.standard_normal((5, 1, K)).astype(np.float32)
    idx = np.array([0, 2, 3, 1, 1], np.uint32)
    for sorted_ in [False, True]:
        out = mx.gather_qmm(mx.array(x), *q, rhs_indices=mx.array(idx), transpose=True, group_size=32, bits=4,
                            sorted_indices=sorted_)
        ref = np.stack([x[i] @ W[idx[i]].T for i in range(5)])
        assert out.shape == (5, 1, N)
        np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-5)
    lhs = np.array([[4, 0], [2, 2]], np.uint32)
    rhs = np.array([[1, 3], [0, 1]], np.uint32)
    out = mx.gather_qmm(mx.array(x), *q, lhs_indices=mx.array(lhs), rhs_indices=mx.array(rhs), group_size=32,
                        bits=4)
    ref = np.array([[x[lhs[i, j]] @ W[rhs[i, j]].T for j in range(2)] for i in range(2)])
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="integers"):
        mx.gather_qmm(mx.array(x), *q, rhs_indices=mx.array([0.5]), group_size=32, bits=4)


# gather_qmm against NumPy: dequantize (float64), gather, matmul. The mode
# table samples every affine bits of MLX's kernels and every group size, and
# each fp mode (nvfp4 also with a global scale).
GATHER_MODES = [("affine", 32, 2, None), ("affine", 64, 3, None), ("affine", 128, 4, None),
                ("affine", 64, 8, None), ("affine", 32, 4, None), ("mxfp4", None, None, None),
                ("mxfp8", None, None, None), ("nvfp4", None, None, None), ("nvfp4", None, None, 3.5)]
GATHER_IDS = [f"{m}-{g}-{b}" + ("-global" if s else "") for m, g, b, s in GATHER_MODES]


def gather_setup(rng, mode, gs, bits, gscale, wshape):
    """Quantized weights of shape wshape (float) and their float64 dequantization."""
    w = weights(rng, wshape, gs=gs or 32)
    g = None if gscale is None else mx.array(np.float32(gscale))
    q = list(mx.quantize(mx.array(w), gs, bits, mode=mode, global_scale=g))
    if mode == "affine":
        W = float_weights(q[0], q[1], q[2], gs, bits, mode)
    else:
        q.append(None)
        W = ref_fp_dequantize(np.array(q[0]), np.array(q[1]), mode, gscale).astype(np.float64)
    kw = dict(group_size=gs, bits=bits, mode=mode, global_scale=g)
    return q, W, kw


def gather_ref(x, W, lhs, rhs, transpose):
    """out[i] = x_flat[lhs[i]] @ W_flat[rhs[i]](.T); a missing index array
    enumerates its operand's batch; the index arrays broadcast."""
    xf = np.asarray(x, np.float64).reshape(-1, *x.shape[-2:])
    Wf = W.reshape(-1, *W.shape[-2:])
    lhs = np.arange(len(xf)).reshape(x.shape[:-2]) if lhs is None else np.asarray(lhs)
    rhs = np.arange(len(Wf)).reshape(W.shape[:-2]) if rhs is None else np.asarray(rhs)
    lhs, rhs = np.broadcast_arrays(lhs, rhs)
    N = W.shape[-2] if transpose else W.shape[-1]
    out = np.zeros(lhs.shape + (x.shape[-2], N))
    for i in np.ndindex(lhs.shape):
        Wi = Wf[rhs[i]]
        out[i] = xf[lhs[i]] @ (Wi.T if transpose else Wi)
    return out


def assert_rel(out, ref, tol=2e-5, what=""):
    out = to_np(out)
    assert out.shape == ref.shape, (what, out.shape, ref.shape)
    err = np.abs(out - ref).max(initial=0) / (np.abs(ref).max(initial=0) + 1e-12)
    assert err < tol, (what, err)


@pytest.mark.parametrize("transpose", [True, False], ids=["T", "N"])
@pytest.mark.parametrize("mode, gs, bits, gscale", GATHER_MODES, ids=GATHER_IDS)
def test_gather_qmm_modes_and_indices(rng, mode, gs, bits, gscale, transpose):
    # 4 experts as a (2, 2) batch (the indices point into it flattened); the
    # quantized axis (128) is the contraction axis with transpose, N without
    q, W, kw = gather_setup(rng, mode, gs, bits, gscale, (2, 2, 16, 128))
    K = 128 if transpose else 16
    wq, s, b = q

    def gq(x, **idx):
        return mx.gather_qmm(mx.array(x), wq, s, b, transpose=transpose, **kw, **idx)

    def xs(*shape):
        return rng.standard_normal(shape + (K,)).astype(np.float32)

    u32 = lambda a: mx.array(np.asarray(a, np.uint32))
    cases = [
        # rhs alone: x's batch (3,) enumerated against it
        (xs(3, 2), None, [3, 0, 3]),
        # lhs alone: w's batch (2, 2) enumerated, lhs (2, 2) pointing into x's 5 rows
        (xs(5, 1), [[4, 0], [2, 4]], None),
        # both, with repeats
        (xs(6, 3), [[5, 0, 2], [1, 1, 0]], [[1, 3, 0], [2, 2, 3]]),
        # broadcasting index shapes: (3, 1) with (1, 4) -> (3, 4)
        (xs(3, 2), [[2], [0], [1]], [[0, 1, 2, 3]]),
        # a 2-d x (no batch) against a (2, 3) rhs; signed 64-bit indices
        (xs(2), None, np.array([[3, 1, 2], [0, 0, 3]], np.int64)),
        # x batch (2, 3) flattened, lhs a scalar broadcast against rhs (4,)
        (xs(2, 3, 1), np.uint32(4), [0, 1, 2, 3]),
    ]
    def index(a):  # an int64 array stays int64, anything else is uint32
        return mx.array(a) if isinstance(a, np.ndarray) and a.dtype == np.int64 else u32(a)

    for x, lhs, rhs in cases:
        idx = {k: index(a) for k, a in (("lhs_indices", lhs), ("rhs_indices", rhs)) if a is not None}
        assert_rel(gq(x, **idx), gather_ref(x, W, lhs, rhs, transpose), what=(x.shape, lhs, rhs))
    # sorted indices (as a MoE layer sorts its tokens by expert): the hint
    # changes nothing, bit for bit
    x = xs(6, 1)
    rhs = u32([0, 0, 1, 3, 3, 3])
    a = gq(x, rhs_indices=rhs)
    c = gq(x, rhs_indices=rhs, sorted_indices=True)
    np.testing.assert_array_equal(np.array(c), np.array(a))
    assert_rel(c, gather_ref(x, W, None, [0, 0, 1, 3, 3, 3], transpose))
    lhs = u32([0, 1, 1, 4, 5, 5])
    c = gq(x, lhs_indices=lhs, rhs_indices=rhs, sorted_indices=True)
    np.testing.assert_array_equal(np.array(c), np.array(gq(x, lhs_indices=lhs, rhs_indices=rhs)))


def test_gather_qmm_empty_and_out_of_range(rng):
    q, W, kw = gather_setup(rng, "affine", 32, 4, None, (4, 8, 64))
    x = mx.array(rng.standard_normal((3, 2, 64)).astype(np.float32))
    empty = mx.array(np.zeros((0,), np.uint32))
    for transpose in [True, False]:
        xe = x if transpose else x[..., :8]
        N = 8 if transpose else 64
        out = mx.gather_qmm(xe[:1], *q, rhs_indices=empty, transpose=transpose, **kw)
        assert out.shape == (0, 2, N) and np.array(out).shape == (0, 2, N)
        e2 = mx.array(np.zeros((3, 0), np.uint32))
        out = mx.gather_qmm(xe, *q, lhs_indices=e2, rhs_indices=e2, transpose=transpose, **kw)
        assert out.shape == (3, 0, 2, N) and np.array(out).shape == (3, 0, 2, N)
        out = mx.gather_qmm(xe[:, :0], *q, rhs_indices=mx.array([1, 2, 0]), transpose=transpose, **kw)  # M = 0
        assert out.shape == (3, 0, N) and np.array(out).shape == (3, 0, N)
    # out of range: the gather's IndexError (at evaluation), never a read
    # outside the batch; negative indices count from the end, as in take
    for rhs in [np.array([0, 1, 4], np.uint32), np.array([0, 2 ** 31, 1], np.uint32),
                np.array([2 ** 40, 0, 0], np.int64), np.array([0, -5, 1], np.int32)]:
        with pytest.raises(IndexError, match=r"\[gather\] Index -?\d+ is out of bounds for axis 0 with size 4"):
            mx.eval(mx.gather_qmm(x, *q, rhs_indices=mx.array(rhs), **kw))
    with pytest.raises(IndexError, match=r"Index 3 is out of bounds for axis 0 with size 3"):
        mx.eval(mx.gather_qmm(x, *q, lhs_indices=mx.array([0, 3], mx.uint32), rhs_indices=mx.array([0, 1]), **kw))
    out = mx.gather_qmm(x, *q, rhs_indices=mx.array([0, -1, -4], mx.int32), **kw)
    assert_rel(out, gather_ref(np.array(x), W, None, [0, 3, 0], True))
    # index shapes that do not broadcast
    with pytest.raises(ValueError, match=r"\[gather_qmm\] Shapes \(3\) and \(2\) cannot be broadcast"):
        mx.gather_qmm(x, *q, rhs_indices=mx.array([0, 1]), **kw)


@pytest.mark.parametrize("mode, gs, bits, gscale", [GATHER_MODES[2], GATHER_MODES[3], GATHER_MODES[5],
                                                    GATHER_MODES[8]], ids=[GATHER_IDS[i] for i in (2, 3, 5, 8)])
@pytest.mark.parametrize("transpose", [True, False], ids=["T", "N"])
def test_gather_qmm_vjp_jvp(rng, mode, gs, bits, gscale, transpose):
    """Derivatives with respect to x (and the affine scales and biases) by
    central differences. The op takes no float64 x, so x is float32; it is
    linear in each of x, scales and biases, which makes a central difference
    with a step of 1 exact up to float32 rounding of the products; the sums
    are formed in float64."""
    q, W, kw = gather_setup(rng, mode, gs, bits, gscale, (4, 16, 128))
    K = 128 if transpose else 16
    wq, s, b = q
    x = mx.array(rng.standard_normal((5, 2, K)).astype(np.float32))
    lhs = mx.array(np.array([[4, 0, 4], [1, 1, 2]], np.uint32))  # repeats: cotangents add up
    rhs = mx.array(np.array([[3, 0, 3], [2, 1, 2]], np.uint32))
    f = lambda x, s, b: mx.gather_qmm(x, wq, s, b, lhs_indices=lhs, rhs_indices=rhs, transpose=transpose, **kw)
    out = f(x, s, b)
    cot = mx.array(rng.standard_normal(out.shape).astype(np.float32))
    prims = [x, s, b] if mode == "affine" else [x]
    _, grads = mx.vjp(lambda *p: f(*p) if len(p) == 3 else f(p[0], s, b), prims, [cot])
    # the x gradient exactly: scatter-add of cot @ W (W.T without transpose)
    Wt = W if transpose else np.swapaxes(W, -1, -2)
    gref = np.zeros(x.shape)
    c = np.array(cot).astype(np.float64)
    for i in np.ndindex(2, 3):
        gref[np.array(lhs)[i]] += c[i] @ Wt[np.array(rhs)[i]]
    np.testing.assert_allclose(np.array(grads[0]), gref, rtol=1e-4, atol=1e-4)
    check_vjp_jvp(rng, f, [x, s, b], cot, grads, n=len(prims))


@pytest.mark.parametrize("mode, gs, bits, gscale", [GATHER_MODES[4], GATHER_MODES[6], GATHER_MODES[8]],
                         ids=[GATHER_IDS[i] for i in (4, 6, 8)])
def test_gather_qmm_vmap(rng, mode, gs, bits, gscale):
    q, W, kw = gather_setup(rng, mode, gs, bits, gscale, (3, 4, 16, 64))  # vmapped over the 3
    wq, s, b = q
    xs = mx.array(rng.standard_normal((3, 5, 2, 64)).astype(np.float32))
    ls = mx.array(rng.integers(0, 5, (3, 6)).astype(np.uint32))
    rs = mx.array(rng.integers(0, 4, (3, 6)).astype(np.uint32))

    def f(x, w, s, *rest):  # rest: (b, l, r) or (l, r)
        b, (l, r) = (rest[0], rest[1:]) if len(rest) == 3 else (None, rest)
        return mx.gather_qmm(x, w, s, b, lhs_indices=l, rhs_indices=r, **kw)

    full = [xs, wq, s] + ([b] if b is not None else []) + [ls, rs]
    for mapped in [(0,), (0, 4, 5), (4, 5), (1, 2, 3, 5), (0, 1, 2, 3, 4, 5)]:
        # positions in (x, w, s, b, l, r); b follows w and s
        in_axes = tuple(0 if (j if j < 3 or b is not None else j + 1) in mapped else None
                        for j in range(len(full)))
        args = [a if ax == 0 else a[0] for a, ax in zip(full, in_axes)]
        got = mx.vmap(f, in_axes=in_axes)(*args)
        ref = np.stack([np.array(f(*[a[i] if ax == 0 else a for a, ax in zip(args, in_axes)])) for i in range(3)])
        np.testing.assert_allclose(np.array(got), ref, rtol=1e-6, atol=1e-6, err_msg=str(in_axes))


def test_qqmm(rng):
    x = rng.standard_normal((3, 64)).astype(np.float32)
    w = rng.standard_normal((8, 64)).astype(np.float32)
    for mode in FP_MODES:
        xq = ref_fp_dequantize(*ref_fp_quantize(x, mode), mode)
        wq = ref_fp_dequantize(*ref_fp_quantize(w, mode), mode)
        ref = xq.astype(np.float64) @ wq.T.astype(np.float64)
        out = mx.qqmm(mx.array(x), mx.array(w), mode=mode)
        np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-5)
        wq_, ws_ = mx.quantize(mx.array(w), mode=mode)
        np.testing.assert_allclose(np.array(mx.qqmm(mx.array(x), wq_, ws_, mode=mode)), ref, rtol=1e-5, atol=1e-5)
    assert mx.qqmm(mx.array(x).astype(mx.bfloat16), mx.array(w)).dtype == mx.bfloat16
    with pytest.raises(ValueError, match="affine mode is not supported"):
        mx.qqmm(mx.array(x), mx.array(w), mode="affine")
    E = rng.standard_normal((3, 8, 64)).astype(np.float32)
    out = mx.gather_qqmm(mx.array(x[:, None]), mx.array(E), rhs_indices=mx.array([2, 0, 1]), mode="mxfp8")
    for i, e in enumerate([2, 0, 1]):
        np.testing.assert_allclose(np.array(out[i]), np.array(mx.qqmm(mx.array(x[i:i + 1]), mx.array(E[e]),
                                                                      mode="mxfp8")), rtol=1e-5, atol=1e-5)


def fake_quant_ref(a, mode, global_scale=None):
    """a quantized and dequantized in the mode (NumPy model), float64."""
    return ref_fp_dequantize(*ref_fp_quantize(a, mode, global_scale), mode, global_scale).astype(np.float64)


def test_qqmm_global_scales(rng):
    """nvfp4 with global scales: x quantized with global_scale_x, w with
    global_scale_w (each group's e4m3 scale stored relative to it), both
    dequantized, then x_q @ w_q.T."""
    x = rng.standard_normal((5, 64)).astype(np.float32)
    w = (rng.standard_normal((12, 64)) * 3).astype(np.float32)
    x[1] *= 1e-3  # a row whose groups need the small e4m3 scales
    amx, amw = float(np.abs(x).max()), float(np.abs(w).max())
    for gx, gw in [(amx, None), (None, amw), (amx, amw), (0.75, 40.0)]:
        kx = {} if gx is None else {"global_scale_x": mx.array(np.float32(gx))}
        kw = {} if gw is None else {"global_scale_w": mx.array(np.float32(gw))}
        ref = fake_quant_ref(x, "nvfp4", gx) @ fake_quant_ref(w, "nvfp4", gw).T
        assert_rel(mx.qqmm(mx.array(x), mx.array(w), mode="nvfp4", **kx, **kw), ref, what=(gx, gw))
        # w given quantized (with its global scale), as QQLinear stores it
        wq, ws = mx.quantize(mx.array(w), mode="nvfp4", global_scale=kw.get("global_scale_w"))
        assert_rel(mx.qqmm(mx.array(x), wq, ws, mode="nvfp4", **kx, **kw), ref, what=(gx, gw, "quantized w"))
    # the global scale is what the stored scales are relative to: quantized
    # with one and read without it, the product is off by gw / 2688
    wq, ws = mx.quantize(mx.array(w), mode="nvfp4", global_scale=mx.array(np.float32(amw)))
    a = np.array(mx.qqmm(mx.array(x), wq, ws, mode="nvfp4", global_scale_w=mx.array(np.float32(amw))))
    b = np.array(mx.qqmm(mx.array(x), wq, ws, mode="nvfp4"))
    np.testing.assert_allclose(a, b * np.float32(amw) / 2688, rtol=1e-5, atol=1e-6)
    for mode in ["mxfp4", "mxfp8"]:
        with pytest.raises(ValueError, match="global scale is only supported with the nvfp4 mode"):
            mx.qqmm(mx.array(x), mx.array(w), mode=mode, global_scale_x=mx.array(1.0))
        with pytest.raises(ValueError, match="global scale is only supported with the nvfp4 mode"):
            mx.qqmm(mx.array(x), mx.array(w), mode=mode, global_scale_w=mx.array(1.0))


@pytest.mark.parametrize("mode", FP_MODES)
def test_gather_qqmm_indices(rng, mode):
    x = rng.standard_normal((4, 3, 64)).astype(np.float32)
    w = rng.standard_normal((2, 3, 8, 64)).astype(np.float32)  # 6 experts
    gx, gw = (float(np.abs(x).max()), float(np.abs(w).max())) if mode == "nvfp4" else (None, None)
    g = {} if gx is None else {"global_scale_x": mx.array(np.float32(gx)), "global_scale_w": mx.array(np.float32(gw))}
    X = fake_quant_ref(x, mode, gx)
    W = fake_quant_ref(w, mode, gw)
    u32 = lambda a: mx.array(np.asarray(a, np.uint32))
    wq, ws = mx.quantize(mx.array(w), mode=mode, global_scale=g.get("global_scale_w"))
    for lhs, rhs in [([[3, 0, 3], [1, 1, 2]], [[5, 0, 2], [4, 4, 1]]),  # both
                     ([[3, 0, 1], [2, 2, 0]], None),  # lhs alone: w's (2, 3) batch enumerated
                     ([[0], [3]], [[1, 5]])]:  # broadcast
        idx = {"lhs_indices": u32(lhs)}
        if rhs is not None:
            idx["rhs_indices"] = u32(rhs)
        ref = gather_ref(X, W, lhs, rhs, True)
        assert_rel(mx.gather_qqmm(mx.array(x), mx.array(w), mode=mode, **idx, **g), ref, what=(lhs, rhs))
        assert_rel(mx.gather_qqmm(mx.array(x), wq, ws, mode=mode, **idx, **g), ref, what=(lhs, rhs, "quantized w"))
    # sorted indices: the hint changes nothing, bit for bit
    lhs, rhs = u32([0, 0, 1, 2, 3, 3]), u32([1, 1, 1, 4, 5, 5])
    a = mx.gather_qqmm(mx.array(x), mx.array(w), lhs_indices=lhs, rhs_indices=rhs, mode=mode, **g)
    c = mx.gather_qqmm(mx.array(x), mx.array(w), lhs_indices=lhs, rhs_indices=rhs, mode=mode, sorted_indices=True, **g)
    np.testing.assert_array_equal(np.array(c), np.array(a))
    assert_rel(c, gather_ref(X, W, np.array(lhs), np.array(rhs), True))
    with pytest.raises(IndexError, match=r"Index 4 is out of bounds for axis 0 with size 4"):
        mx.eval(mx.gather_qqmm(mx.array(x), mx.array(w), lhs_indices=u32([4]), rhs_indices=u32([0]), mode=mode))


# --------------------------------------------------------------------------
# nn layers
# --------------------------------------------------------------------------

def test_quantized_linear_and_embedding(rng, tmp_path):
    import ember.nn as nn
    lin = nn.Linear(64, 16)
    ql = nn.QuantizedLinear.from_linear(lin, 32, 8)
    assert repr(ql) == "QuantizedLinear(input_dims=64, output_dims=16, bias=True, group_size=32, bits=8, mode=affine)"
    x = mx.array(rng.standard_normal((2, 64)).astype(np.float32))
    W = mx.dequantize(ql.weight, ql.scales, ql.biases, 32, 8)
    np.testing.assert_allclose(np.array(ql(x)), np.array(x @ W.T + lin.bias), rtol=1e-5, atol=1e-5)
    assert set(dict(nn.utils.tree_flatten(ql.trainable_parameters())) if hasattr(nn.utils, "tree_flatten")
               else {}) <= {"bias"}
    from ember.utils import tree_flatten
    assert [k for k, _ in tree_flatten(ql.trainable_parameters())] == ["bias"]
    assert repr(nn.QuantizedLinear(64, 8, bias=False, mode="mxfp4")) == (
        "QuantizedLinear(input_dims=64, output_dims=8, bias=False, group_size=32, bits=4, mode=mxfp4)")
    emb = nn.Embedding(10, 64)
    qe = emb.to_quantized(group_size=32, bits=4)
    assert repr(qe) == "QuantizedEmbedding(10, 64, group_size=32, bits=4, mode=affine)"
    idx = mx.array([[1, 9], [0, 3]])
    T = mx.dequantize(qe.weight, qe.scales, qe.biases, 32, 4)
    np.testing.assert_array_equal(np.array(qe(idx)), np.array(T)[np.array(idx)])
    np.testing.assert_allclose(np.array(qe.as_linear(x)), np.array(x @ T.T), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="not supported"):
        emb.to_quantized(quantize_input=True)
    # save and load through the io formats
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
    nn.quantize(model, 32, 4)
    y = model(x)
    for ext in ["safetensors", "npz"]:
        path = str(tmp_path / f"q.{ext}")
        model.save_weights(path)
        twin = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
        nn.quantize(twin, 32, 4)
        twin.load_weights(path)
        np.testing.assert_array_equal(np.array(twin(x)), np.array(y))


def test_nn_quantize_predicate_and_qqlinear(rng):
    import ember.nn as nn
    model = nn.Sequential(nn.Linear(64, 64, bias=False), nn.Linear(64, 32), nn.Embedding(5, 64))
    nn.quantize(model, class_predicate=lambda p, m: {"group_size": 32, "bits": 8} if p == "layers.0"
                else isinstance(m, nn.Linear))
    assert isinstance(model.layers[0], nn.QuantizedLinear) and model.layers[0].bits == 8
    assert model.layers[0].group_size == 32
    assert isinstance(model.layers[1], nn.QuantizedLinear) and model.layers[1].bits == 4
    assert isinstance(model.layers[2], nn.Embedding)
    with pytest.raises(ValueError, match="must return a bool or a dict"):
        nn.quantize(nn.Sequential(nn.Linear(64, 8)), class_predicate=lambda p, m: 3)
    m = nn.Sequential(nn.Linear(64, 16, bias=False))
    nn.quantize(m, mode="nvfp4", quantize_input=True)
    ql = m.layers[0]
    assert isinstance(ql, nn.QQLinear)
    x = mx.array(rng.standard_normal((2, 64)).astype(np.float32))
    np.testing.assert_allclose(np.array(ql(x)), np.array(mx.qqmm(x, ql.weight)), rtol=1e-6)
    ql.eval()
    assert ql.weight.dtype == mx.uint32 and "scales" in ql
    ql.train()
    assert ql.weight.dtype != mx.uint32 and "scales" not in ql


needs_mlx_lm = pytest.mark.skipif(importlib.util.find_spec("mlx_lm") is None, reason="mlx-lm not installed")


def tiny_llama_and_twin(arch="llama"):
    """mlx-lm's Llama (``mlx_lm_configs``), quantized with nn.quantize (group
    32, 4 bits), and its twin holding the dequantized weights in float layers."""
    import ember
    ember.alias_mlx()
    import mlx_lm_configs as C
    C.import_mlx_lm()
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    model, _ = C.build(mx, arch)
    nn.quantize(model, group_size=32, bits=4)
    twin, _ = C.build(mx, arch)
    params = dict(tree_flatten(model.parameters()))
    new = {}
    for path, mod in model.named_modules():
        if isinstance(mod, (nn.QuantizedLinear, nn.QuantizedEmbedding)):
            new[path + ".weight"] = mx.dequantize(mod.weight, mod.scales, mod.biases, 32, 4)
    for k, v in params.items():  # everything else as it is, the quantization's scales and biases dropped
        if not (k.endswith(".scales") or k.endswith(".biases")) and k not in new:
            new[k] = v
    twin.load_weights(list(new.items()))
    assert any(isinstance(m, nn.QuantizedLinear) for _, m in model.named_modules())
    return model, twin


PROMPT = [5, 17, 42, 8]


def greedy(m, steps=8):
    """Greedy tokens through mlx-lm's prompt cache, and each step's logits."""
    from mlx_lm.models.cache import make_prompt_cache
    cache = make_prompt_cache(m)
    logits = m(mx.array([PROMPT]), cache=cache)[:, -1]
    y = mx.argmax(logits, axis=-1)
    out, lg = [y.item()], [np.array(logits[0])]
    for _ in range(steps - 1):
        logits = m(y[:, None], cache=cache)[:, -1]
        y = mx.argmax(logits, axis=-1)
        out.append(y.item())
        lg.append(np.array(logits[0]))
    return out, np.array(lg, np.float64)


def forced(m, tokens):
    """Logits after the prompt and after each of tokens[:-1] fed one at a time
    through the cache (decoding: the matrix-vector products), and the same
    from one forward over the whole sequence (prefill: the matrix-matrix ones)."""
    from mlx_lm.models.cache import make_prompt_cache
    cache = make_prompt_cache(m)
    lg = [np.array(m(mx.array([PROMPT]), cache=cache)[0, -1])]
    for t in tokens[:-1]:
        lg.append(np.array(m(mx.array([[t]]), cache=cache)[0, -1]))
    full = np.array(m(mx.array([PROMPT + list(tokens[:-1])]))[0, len(PROMPT) - 1:])
    return np.array(lg, np.float64), full.astype(np.float64)


@needs_mlx_lm
def test_tiny_llama_quantized_greedy_tokens():
    """mlx-lm's Llama, quantized with nn.quantize, generates the same greedy
    tokens as its twin holding the dequantized weights in float layers (the
    float kernels: the fixture turns the int8 paths off)."""
    model, twin = tiny_llama_and_twin()
    assert greedy(model)[0] == greedy(twin)[0]


@needs_mlx_lm
def test_tiny_llama_quantized_default_int8_kernels(float_qmv, monkeypatch):
    """The same model with the default kernels (the fixture's ``float_qmv`` is
    the setting it found, Ember's default unless EMBER_QMM_INT8 says
    otherwise): the quantized projections take the int8-activation paths,
    for decoding (M <= 8, K a multiple of 128) and for prefill (M > 8).

    Exact token equality with the twin is not a principled check here: this
    random model's two top logits are often a few thousandths apart, while
    int8 activations move each product by up to max|x of a block of 32| / 254
    times sum |w| (test_qmm_kernels.py's int8_bound; the bfloat16 AMX
    prefill tiles of setting 4 stay inside it), i.e. up to ~0.4% of the
    product's magnitude, over 15 products in series here. So, along the
    twin's greedy tokens (teacher forcing, decoding and prefill alike):
    - the logits agree with the twin's within 3% of the largest twin logit
      (observed: 1.5% decoding 32 tokens, whose cached keys and values carry
      the earlier steps' errors, 0.7% prefill; with the float kernels 1e-6);
    - the tokens agree wherever the twin's top-2 margin exceeds twice that
      bound (a logit error below half the margin cannot flip the argmax);
    - the int8 paths ran: the logits differ from the float kernels' by more
      than float32 rounding."""
    import mlx_lm_configs as C
    assert float_qmv != 0, "EMBER_QMM_INT8=0: the default kernels are the float ones"
    # hidden 128, FFN 256: every projection's K a multiple of 128, so every
    # decoding product takes the int8 matrix-vector path (the test's usual
    # hidden size of 64 keeps q/k/v/gate/up on the float lanes)
    _, cfg = C.CONFIGS["llama"]
    monkeypatch.setitem(C.CONFIGS, "llama128", ("llama", dict(cfg, hidden_size=128, intermediate_size=256)))
    model, twin = tiny_llama_and_twin("llama128")
    tokens, twin_logits = greedy(twin, 32)
    mx._set_qmm_int8(float_qmv)
    dec, pre = forced(model, tokens)
    mx._set_qmm_int8(0)
    dec_f, pre_f = forced(model, tokens)
    bound = 0.03 * np.abs(twin_logits).max()
    top2 = np.sort(twin_logits, -1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * bound
    assert clear.sum() >= 8, clear  # enough steps where the check has teeth
    for got, got_f in [(dec, dec_f), (pre, pre_f)]:
        err = np.abs(got - twin_logits).max()
        assert err <= bound, (err, bound)
        assert np.abs(got_f - twin_logits).max() <= 1e-4 * np.abs(twin_logits).max()
        assert np.abs(got - got_f).max() > 1e-4 * np.abs(twin_logits).max()  # int8 ran
        np.testing.assert_array_equal(got.argmax(-1)[clear], np.array(tokens)[clear])
