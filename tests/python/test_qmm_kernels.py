"""The quantized matrix-vector kernels (backend/cpu/qmm.cpp) path by path,
at every ISA level: the int8 path (x quantized to int8 per block of 32
columns, integer dot products: VNNI or pmaddubsw, as llama.cpp's Q8
activations) and the float-lane path (MLX's CPU arithmetic), each against a
float64 reference with a tolerance that reflects its arithmetic:

- float lanes: float32 accumulation only (2e-5 of the largest output);
- int8: the result is the quantized x (per block of 32: d = max|x| / 127,
  round(x / d) * d; the biases too multiply the quantized x's group sums)
  times the weights, to float32 accuracy; against the float x each value
  moves by at most d / 2, so |error| <= sum over blocks of d / 2 * sum |w|
  over the block (a bound computed per output), plus the float32 term.

The int8 settings 1 (pmaddubsw) and 2 (VNNI where the CPU has it) and every
level give the same bits (the lane sums are exact integers)."""

import numpy as np
import pytest

from conftest import ember_only, mx

pytestmark = ember_only


@pytest.fixture
def int8_setting():
    """Restores the int8 setting after the test."""
    before = mx._set_qmm_int8(2)
    mx._set_qmm_int8(before)
    yield
    mx._set_qmm_int8(before)


def unpack(wq, bits):
    w = np.asarray(wq).astype(np.uint64)
    per = 32 // bits
    q = (w[..., None] >> (np.arange(per, dtype=np.uint64) * np.uint64(bits))) & np.uint64((1 << bits) - 1)
    return q.reshape(*w.shape[:-1], -1).astype(np.float64)


def f64(a):
    return np.array(a.astype(mx.float32)).astype(np.float64)


def dequant(wq, s, b, gs, bits):
    q = unpack(wq, bits)
    q = q.reshape(*q.shape[:-1], -1, gs)
    return (q * f64(s)[..., None] + f64(b)[..., None]).reshape(*q.shape[:-2], -1)


def int8_bound(x, W):
    """Per output (..., M, N): sum over blocks of 32 of (d / 2) * sum |W| over
    the block, d = max|x over the block| / 127."""
    xb = np.abs(x).reshape(*x.shape[:-1], -1, 32)
    d = xb.max(-1) / 127.0                                   # (..., M, K/32)
    wb = np.abs(W).reshape(*W.shape[:-1], -1, 32).sum(-1)    # (..., N, K/32)
    return (d / 2) @ np.swapaxes(wb, -1, -2)


def x_int8(x):
    """x as the int8 path sees it: per block of 32, d = max|x| / 127 and
    round(x / d) * d (float32 steps as the kernel takes them)."""
    xb = np.asarray(x, np.float32).reshape(*x.shape[:-1], -1, 32)
    d = (np.abs(xb).max(-1, keepdims=True) / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d >= np.finfo(np.float32).tiny, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = np.clip(np.rint(xb * inv), -127, 127)
    return (q.astype(np.float64) * d).reshape(x.shape)


def run(x, wq, s, b, gs, bits, setting):
    before = mx._set_qmm_int8(setting)
    try:
        return np.array(mx.quantized_matmul(mx.array(x), wq, s, b, True, gs, bits)).astype(np.float64)
    finally:
        mx._set_qmm_int8(before)


def case(rng, N, K, gs, bits, M, batch=()):
    w = rng.standard_normal((*batch, N, K)).astype(np.float32)
    wq, s, b = mx.quantize(mx.array(w).astype(mx.bfloat16), gs, bits)
    x = rng.standard_normal((*batch, M, K)).astype(np.float32)
    x[..., :32] *= 50   # blocks of very different ranges
    x[..., 32:64] = 0   # an all-zero block
    return x, wq, s, b, dequant(wq, s, b, gs, bits)


@pytest.mark.parametrize("bits", [4, 8])
def test_int8_and_float_paths_against_float64(rng, level, int8_setting, bits):
    for gs in [32, 64, 128]:
        for M, N, K in [(1, 33, 256), (3, 8, 384), (5, 17, 128), (8, 4, 512)]:
            x, wq, s, b, W = case(rng, N, K, gs, bits, M)
            ref = x.astype(np.float64) @ W.T
            scale = np.abs(ref).max()
            flo = run(x, wq, s, b, gs, bits, 0)
            assert np.abs(flo - ref).max() <= 2e-5 * scale, (gs, M, N, K)
            bound = int8_bound(x.astype(np.float64), W) + 2e-5 * scale
            i1, i2 = run(x, wq, s, b, gs, bits, 1), run(x, wq, s, b, gs, bits, 2)
            np.testing.assert_array_equal(i1, i2)  # VNNI and pmaddubsw: the same bits
            err = np.abs(i2 - ref)
            assert (err <= bound).all(), (gs, M, N, K, (err - bound).max())
            # the int8 error is real (the path ran), and the result is the
            # quantized x times the weights to float32 accuracy
            assert err.max() > 1e-6 * scale
            emu = x_int8(x) @ W.T
            assert np.abs(i2 - emu).max() <= 2e-5 * scale, (gs, M, N, K)


def test_int8_error_size(rng, int8_setting):
    """What the int8 activations cost, for the record: on Gaussian x and
    weights the relative error of a 4-bit decode product is ~0.3-1%, the
    float path's ~1e-7 (the quantized weights themselves are exact)."""
    x, wq, s, b, W = case(rng, 256, 2048, 64, 4, 1)
    x = rng.standard_normal(x.shape).astype(np.float32)
    ref = x.astype(np.float64) @ W.T
    rel = lambda o: np.linalg.norm(o - ref) / np.linalg.norm(ref)  # noqa: E731
    r_int8, r_float = rel(run(x, wq, s, b, 64, 4, 2)), rel(run(x, wq, s, b, 64, 4, 0))
    assert 1e-4 < r_int8 < 2e-2, r_int8
    assert r_float < 1e-6, r_float


def test_levels_agree_bitwise(rng, int8_setting):
    before = mx.__config__()["isa"]
    for bits in [4, 8]:
        x, wq, s, b, _ = case(rng, 40, 512, 32, bits, 6, batch=(2,))
        outs = []
        for lv in mx.__config__()["isa_levels"]:
            mx._set_cpu_isa(lv)
            outs += [run(x, wq, s, b, 32, bits, 1), run(x, wq, s, b, 32, bits, 2)]
        mx._set_cpu_isa(before)
        for o in outs[1:]:
            np.testing.assert_array_equal(o, outs[0])


def test_batched_and_float16_scales(rng, level, int8_setting):
    x, wq, s, b, W = case(rng, 24, 256, 64, 4, 2, batch=(3,))
    ref = np.einsum("bmk,bnk->bmn", x.astype(np.float64), W)
    out = run(x, wq, s, b, 64, 4, 2)
    assert (np.abs(out - ref) <= int8_bound(x.astype(np.float64), W) + 2e-5 * np.abs(ref).max()).all()
    # float16 scales and biases
    w = rng.standard_normal((16, 256)).astype(np.float16)
    wq, s, b = mx.quantize(mx.array(w), 64, 8)
    W = dequant(wq, s, b, 64, 8)
    x = rng.standard_normal((1, 256)).astype(np.float32)
    ref = x.astype(np.float64) @ W.T
    out = run(x, wq, s, b, 64, 8, 2)
    assert (np.abs(out - ref) <= int8_bound(x.astype(np.float64), W) + 2e-5 * np.abs(ref).max()).all()


def test_paths_that_stay_float(rng, int8_setting):
    """Non-finite x, K not a multiple of 128, other bit widths and more than
    8 rows take the float kernels: the int8 setting changes no bit there."""
    w = rng.standard_normal((8, 256)).astype(np.float32)
    wq, s, b = mx.quantize(mx.array(w), 64, 4)
    x = rng.standard_normal((2, 256)).astype(np.float32)
    x[0, 5] = np.inf
    x[1, 7] = np.nan
    np.testing.assert_array_equal(run(x, wq, s, b, 64, 4, 2), run(x, wq, s, b, 64, 4, 0))
    assert np.isnan(run(x, wq, s, b, 64, 4, 2)[1]).all()
    for K, bits, M in [(192, 4, 1), (256, 2, 1), (256, 4, 9)]:
        w = rng.standard_normal((8, K)).astype(np.float32)
        wq, s, b = mx.quantize(mx.array(w), 64, bits)
        x = rng.standard_normal((M, K)).astype(np.float32)
        np.testing.assert_array_equal(run(x, wq, s, b, 64, bits, 2), run(x, wq, s, b, 64, bits, 0))


def test_tiny_and_zero_x(int8_setting):
    w = np.linspace(-1, 1, 8 * 128, dtype=np.float32).reshape(8, 128)
    wq, s, b = mx.quantize(mx.array(w), 32, 8)
    W = dequant(wq, s, b, 32, 8)
    for x in [np.zeros((1, 128), np.float32), np.full((1, 128), 1e-39, np.float32),
              np.full((1, 128), 1e30, np.float32) * np.sign(np.arange(128) % 2 - 0.5).astype(np.float32)]:
        ref = x.astype(np.float64) @ W.T
        out = run(x, wq, s, b, 32, 8, 2)
        # blocks below 127 * FLT_MIN quantize to zero
        tol = int8_bound(x.astype(np.float64), W) + 1e-5 * np.abs(ref).max() + np.abs(x) @ np.abs(W).T
        assert (np.abs(out - ref) <= tol).all(), (x[0, 0], out, ref)


def test_setting_errors(int8_setting):
    with pytest.raises(ValueError, match=r"set_qmm_int8.*got 3"):
        mx._set_qmm_int8(3)
    with pytest.raises(ValueError, match=r"set_qmm_int8.*got -1"):
        mx._set_qmm_int8(-1)
