"""The quantized matrix product's kernels (backend/cpu/qmm.cpp) path by path,
at every ISA level: the int8 paths (x quantized to int8 per block of 32
columns, integer dot products: VNNI or pmaddubsw, as llama.cpp's Q8
activations) for matrix-vector (M <= 8) and matrix-matrix (M > 8, a
register-blocked tile over a transposed weight panel) products, and the
float paths (MLX's CPU arithmetic: float lanes for M <= 8, dequantized tiles
and sgemm above), each against a float64 reference with a tolerance that
reflects its arithmetic:

- float lanes: float32 accumulation only (2e-5 of the largest output);
- int8: the result is the quantized x (per block of 32: d = max|x| / 127,
  round(x / d) * d; the biases too multiply the quantized x's group sums)
  times the weights, to float32 accuracy; against the float x each value
  moves by at most d / 2, so |error| <= sum over blocks of d / 2 * sum |w|
  over the block (a bound computed per output), plus the float32 term.

The int8 settings 1 (pmaddubsw) and 2 (VNNI where the CPU has it) and every
level give the same bits (the lane sums are exact integers); so do a
matrix-matrix product's rows and columns computed alone."""

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
    with np.errstate(divide="ignore", over="ignore"):
        inv = np.where(d >= np.finfo(np.float32).tiny, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = np.clip(np.rint(xb * inv), -127, 127)
    return (q.astype(np.float64) * d).reshape(x.shape)


def run(x, wq, s, b, gs, bits, setting, transpose=True):
    before = mx._set_qmm_int8(setting)
    try:
        return np.array(mx.quantized_matmul(mx.array(x), wq, s, b, transpose, gs, bits)).astype(np.float64)
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
        # K = 1152: 36 blocks of 32, over 16 at a time in the kernel's scale products
        for M, N, K in [(1, 33, 256), (3, 8, 384), (5, 17, 128), (8, 4, 512), (2, 40, 1152)]:
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


def test_int8_rows_in_many_chunks(rng, int8_setting):
    # enough rows that the matrix-vector path cuts them into many chunks, the
    # last ones shrinking (qmv_int8), over batch items and two sibling
    # matrices of one x: every row exactly once
    for batch, N in [((), 40_003), ((2,), 20_001)]:
        x, wq, s, b, W = case(rng, N, 256, 64, 4, 1, batch=batch)
        emu = x_int8(x) @ np.swapaxes(W, -1, -2)
        w2q, s2, b2 = wq[..., ::-1, :] + 0, s[..., ::-1, :] + 0, b[..., ::-1, :] + 0
        mx.eval(w2q, s2, b2)  # settled, so that the two products batch
        before = mx._set_qmm_int8(2)
        try:
            xa = mx.array(x)
            o1 = mx.quantized_matmul(xa, wq, s, b, True, 64, 4)
            o2 = mx.quantized_matmul(xa, w2q, s2, b2, True, 64, 4)
            stats = mx._eval_stats()["batched"]
            mx.eval(o1, o2)
            assert mx._eval_stats()["batched"] == stats + 2
            o1, o2 = np.array(o1).astype(np.float64), np.array(o2).astype(np.float64)
        finally:
            mx._set_qmm_int8(before)
        tol = 2e-5 * np.abs(emu).max()
        assert np.abs(o1 - emu).max() <= tol, batch
        assert np.abs(o2 - emu[..., ::-1]).max() <= tol, batch


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
    for bits, M in [(4, 6), (8, 6), (4, 20), (8, 11)]:
        x, wq, s, b, _ = case(rng, 40, 512, 32, bits, M, batch=(2,))
        outs = []
        for lv in mx.__config__()["isa_levels"]:
            mx._set_cpu_isa(lv)
            outs += [run(x, wq, s, b, 32, bits, 1), run(x, wq, s, b, 32, bits, 2)]
        mx._set_cpu_isa(before)
        for o in outs[1:]:
            np.testing.assert_array_equal(o, outs[0])


@pytest.mark.parametrize("M", [3, 12])  # the matrix-vector path and the int8 tiles
def test_int8_rounding_ties_agree_across_levels(rng, int8_setting, M):
    # every value of x a tie once scaled (block maximum 127, so 1 / d = 1),
    # and a block of denormals: the levels' quantizations of x (vector code
    # at AVX-512, loops below it) round ties to even alike, bit for bit
    K = 2048
    x = rng.integers(-126, 126, (M, K)).astype(np.float32) + np.float32(0.5)
    x[:, ::32] = 127.0
    x[1, :64] *= np.float32(1e-40)
    wq, s, b = mx.quantize(mx.array(rng.standard_normal((64, K)).astype(np.float32)), 64, 4)
    before = mx.__config__()["isa"]
    outs = []
    try:
        for lv in mx.__config__()["isa_levels"]:
            mx._set_cpu_isa(lv)
            outs.append(run(x, wq, s, b, 64, 4, 2))
    finally:
        mx._set_cpu_isa(before)
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    emu = x_int8(x) @ dequant(wq, s, b, 64, 4).T
    assert np.abs(outs[0] - emu).max() <= 2e-5 * np.abs(emu).max()


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
    """Non-finite x, K not a multiple of 128 (M <= 8), other bit widths and
    transpose=False take the float kernels: the int8 setting changes no bit
    there."""
    w = rng.standard_normal((8, 256)).astype(np.float32)
    wq, s, b = mx.quantize(mx.array(w), 64, 4)
    for M in [2, 12]:
        x = rng.standard_normal((M, 256)).astype(np.float32)
        x[0, 5] = np.inf
        x[1, 7] = np.nan
        np.testing.assert_array_equal(run(x, wq, s, b, 64, 4, 2), run(x, wq, s, b, 64, 4, 0))
        assert np.isnan(run(x, wq, s, b, 64, 4, 2)[1]).all()
    for K, bits, M in [(192, 4, 1), (256, 2, 1), (256, 2, 12), (256, 3, 20)]:
        w = rng.standard_normal((8, K)).astype(np.float32)
        wq, s, b = mx.quantize(mx.array(w), 64, bits)
        x = rng.standard_normal((M, K)).astype(np.float32)
        np.testing.assert_array_equal(run(x, wq, s, b, 64, bits, 2), run(x, wq, s, b, 64, bits, 0))
    for bits in [4, 8]:  # W (K, N): the scales vary along the sum, no integer form
        w = rng.standard_normal((256, 64)).astype(np.float32)
        wq, s, b = mx.quantize(mx.array(w), 32, bits)
        x = rng.standard_normal((12, 256)).astype(np.float32)
        np.testing.assert_array_equal(run(x, wq, s, b, 32, bits, 2, False), run(x, wq, s, b, 32, bits, 0, False))


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
    with pytest.raises(ValueError, match=r"set_qmm_int8.*got 5"):
        mx._set_qmm_int8(5)
    with pytest.raises(ValueError, match=r"set_qmm_int8.*got -1"):
        mx._set_qmm_int8(-1)


# --------------------------------------------------------------------------
# the int8 matrix-matrix path (M > 8)
# --------------------------------------------------------------------------

def bf16_tiles_active():
    """Whether setting 4 runs the bfloat16 AMX tile path here: a CPU with
    AMX-BF16 (and AVX512-BF16) and the avx512 kernels in use."""
    cfg = mx.__config__()
    return cfg["isa"] == "avx512" and {"amx_bf16", "avx512_bf16"} <= set(cfg["cpu_features"])


def bf16(a):
    """float32 -> bfloat16 (nearest even) -> float64."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32).astype(np.float64)


def dequant_f32(wq, s, b, gs, bits):
    """The weights as the bfloat16 path computes them: q * s + b in float32."""
    q = unpack(wq, bits).astype(np.float32)
    q = q.reshape(*q.shape[:-1], -1, gs)
    sf = np.asarray(s.astype(mx.float32))[..., None]
    bf = np.asarray(b.astype(mx.float32))[..., None]
    return (q * sf + bf).reshape(*q.shape[:-2], -1)


def check_int8(x, wq, s, b, W, gs, bits, what):
    """The int8 path's three checks: its bound against float64, the quantized
    x times the weights to float32 accuracy, and pmaddubsw == VNNI == AMX
    int8 tile bits (setting 3 is setting 2 on a CPU without AMX-INT8); then
    setting 4: on AMX-BF16 CPUs bfloat16 x times bfloat16 weights with float32
    sums (within the same bound), elsewhere setting 3's bits."""
    ref = x.astype(np.float64) @ np.swapaxes(W, -1, -2)
    scale = np.abs(ref).max()
    i1, i2 = run(x, wq, s, b, gs, bits, 1), run(x, wq, s, b, gs, bits, 2)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(run(x, wq, s, b, gs, bits, 3), i2)
    err = np.abs(i2 - ref)
    bound = int8_bound(x.astype(np.float64), W) + 2e-5 * scale
    assert (err <= bound).all(), (what, (err - bound).max())
    assert err.max() > 1e-6 * scale, what  # the int8 path ran
    emu = x_int8(x) @ np.swapaxes(W, -1, -2)
    assert np.abs(i2 - emu).max() <= 2e-5 * scale, what
    i4 = run(x, wq, s, b, gs, bits, 4)
    if bf16_tiles_active():
        assert (np.abs(i4 - ref) <= bound).all(), what
        xb, wb = bf16(x), bf16(dequant_f32(wq, s, b, gs, bits))
        emu = xb @ np.swapaxes(wb, -1, -2)
        tol = 1e-5 * (np.abs(xb) @ np.swapaxes(np.abs(wb), -1, -2)) + 1e-30
        assert (np.abs(i4 - emu) <= tol).all(), (what, (np.abs(i4 - emu) / tol).max())
        assert not np.array_equal(i4, i2), what  # the bfloat16 path ran
    else:
        np.testing.assert_array_equal(i4, i2)
    return i2


@pytest.mark.parametrize("bits", [4, 8])
def test_int8_gemm_against_float64(rng, level, int8_setting, bits):
    # odd M and N (short row tiles, padded weight panels), K over one to
    # three column slices of 256, N over several panels; few weight blocks
    # split x's rows between tasks
    for gs in [32, 64, 128]:
        for M, N, K in [(9, 33, 384), (13, 70, 256), (37, 129, 128), (20, 7, 640), (40, 300, 512),
                        (300, 20, 256)]:
            x, wq, s, b, W = case(rng, N, K, gs, bits, M)
            check_int8(x, wq, s, b, W, gs, bits, (gs, M, N, K))
            flo = run(x, wq, s, b, gs, bits, 0)  # the float path (tiles + sgemm) stays exact
            ref = x.astype(np.float64) @ W.T
            assert np.abs(flo - ref).max() <= 2e-5 * np.abs(ref).max()


def test_int8_gemm_batched_and_scale_dtypes(rng, level, int8_setting):
    # batched weights with batched x; 2-d weights with a batched x (its rows
    # all one product of 12 rows)
    x, wq, s, b, W = case(rng, 24, 256, 64, 4, 10, batch=(3,))
    check_int8(x, wq, s, b, W, 64, 4, "batched")
    x, wq, s, b, W = case(rng, 40, 256, 32, 8, 12)
    x = x.reshape(2, 6, 256)
    out = check_int8(x, wq, s, b, W, 32, 8, "2-d weights")
    assert out.shape == (2, 6, 40)
    # float16 and float32 scales and biases
    for dt in [np.float16, np.float32]:
        w = rng.standard_normal((48, 384)).astype(dt)
        wq, s, b = mx.quantize(mx.array(w), 128, 4)
        assert s.dtype == mx.array(w).dtype
        x = rng.standard_normal((16, 384)).astype(np.float32)
        check_int8(x, wq, s, b, dequant(wq, s, b, 128, 4), 128, 4, dt)


def test_int8_gemm_rows_and_columns_alone(rng, int8_setting):
    """A row or column of the product has the same bits whatever else is
    computed with it (short tiles, padded panels, split row ranges)."""
    for bits in [4, 8]:
        x, wq, s, b, _ = case(rng, 150, 512, 64, bits, 45)
        for setting in [2, 3, 4]:
            full = run(x, wq, s, b, 64, bits, setting)
            np.testing.assert_array_equal(run(x[3:12], wq, s, b, 64, bits, setting), full[3:12])
            np.testing.assert_array_equal(run(x[:41], wq, s, b, 64, bits, setting), full[:41])
            np.testing.assert_array_equal(run(x, wq[:65], s[:65], b[:65], 64, bits, setting), full[:, :65])
            np.testing.assert_array_equal(run(x, wq[17:18], s[17:18], b[17:18], 64, bits, setting), full[:, 17:18])


# --------------------------------------------------------------------------
# siblings: products of one x evaluated together run as one kernel call
# (eval's sibling batches; the matrix-vector path shares x's quantization
# and one pool job)

def batched_count():
    return mx._eval_stats()["batched"]


@pytest.mark.parametrize("setting", [0, 2])
def test_siblings_of_one_x_give_the_bits_of_each_alone(rng, level, int8_setting, setting):
    before = mx._set_qmm_int8(setting)
    try:
        for M, batch, xdt in [(1, (), mx.bfloat16), (3, (), mx.float32), (2, (2,), mx.float16), (12, (), mx.float32)]:
            K = 256
            mats = []
            # scales of x's dtype (else each product would convert x apart)
            for N in [33, 8, 200]:
                w = rng.standard_normal((*batch, N, K)).astype(np.float32)
                mats.append(mx.quantize(mx.array(w).astype(xdt), 64, 4))
            x = mx.array(rng.standard_normal((*batch, M, K)).astype(np.float32)).astype(xdt)
            mx.eval(x, *[m for t in mats for m in t])
            alone = []
            for wq, s, b in mats:
                o = mx.quantized_matmul(x, wq, s, b, True, 64, 4)
                mx.eval(o)
                alone.append(np.array(o.astype(mx.float32)))
            n0 = batched_count()
            outs = [mx.quantized_matmul(x, wq, s, b, True, 64, 4) for wq, s, b in mats]
            mx.eval(*outs)
            assert batched_count() - n0 == 3, (M, batch)
            for o, a in zip(outs, alone):
                assert o.dtype == xdt
                np.testing.assert_array_equal(np.array(o.astype(mx.float32)), a)
    finally:
        mx._set_qmm_int8(before)


def test_siblings_that_do_not_batch(rng, int8_setting):
    """A weight computed in the same evaluation, another format, another x
    or a non-finite x: each product still gives its own bits."""
    K = 256
    w = rng.standard_normal((3, 40, K)).astype(np.float32)
    mats = [mx.quantize(mx.array(w[i]), 64, 4) for i in range(3)]
    x = mx.array(rng.standard_normal((1, K)).astype(np.float32))
    mx.eval(x, *[m for t in mats for m in t])

    def alone(x, wq, s, b, gs=64, bits=4):
        o = mx.quantized_matmul(x, wq, s, b, True, gs, bits)
        mx.eval(o)
        return np.array(o)

    ref = [alone(x, *m) for m in mats]
    n0 = batched_count()
    # the third's weights computed in this evaluation: it waits for them
    late = mats[2][0] + mx.array(0, mx.uint32)
    outs = [mx.quantized_matmul(x, *mats[0], True, 64, 4), mx.quantized_matmul(x, *mats[1], True, 64, 4),
            mx.quantized_matmul(x, late, *mats[2][1:], True, 64, 4)]
    mx.eval(*outs)
    assert batched_count() - n0 == 2
    for o, r in zip(outs, ref):
        np.testing.assert_array_equal(np.array(o), r)
    # another group size or bit width, and another x: no batch
    w8 = mx.quantize(mx.array(w[0]), 32, 8)
    x2 = x + 0
    n0 = batched_count()
    outs = [mx.quantized_matmul(x, *mats[0], True, 64, 4), mx.quantized_matmul(x, *w8, True, 32, 8),
            mx.quantized_matmul(x2, *mats[1], True, 64, 4)]
    mx.eval(*outs)
    assert batched_count() == n0
    np.testing.assert_array_equal(np.array(outs[1]), alone(x, *w8, 32, 8))
    # a non-finite x: the batch takes the float path, product by product
    xn = np.array(x)
    xn[0, 3] = np.nan
    xn[0, 9] = np.inf
    xn = mx.array(xn)
    ref = [alone(xn, *m) for m in mats]
    outs = [mx.quantized_matmul(xn, *m, True, 64, 4) for m in mats]
    mx.eval(*outs)
    for o, r in zip(outs, ref):
        np.testing.assert_array_equal(np.array(o), r)
    # one empty product among them
    we = mx.quantize(mx.zeros((0, K)), 64, 4)
    outs = [mx.quantized_matmul(x, *mats[0], True, 64, 4), mx.quantized_matmul(x, *we, True, 64, 4)]
    mx.eval(*outs)
    assert outs[1].shape == (1, 0)
    np.testing.assert_array_equal(np.array(outs[0]), alone(x, *mats[0]))


def test_siblings_in_transforms(rng, int8_setting):
    """Under grad and vmap the products still agree with each alone."""
    K = 128
    mats = [mx.quantize(mx.array(rng.standard_normal((n, K)).astype(np.float32)), 64, 4) for n in (16, 24)]
    x = mx.array(rng.standard_normal((2, K)).astype(np.float32))

    def f(x):
        return sum((mx.quantized_matmul(x, *m, True, 64, 4) ** 2).sum() for m in mats)

    g = mx.grad(f)(x)
    g1 = sum(mx.grad(lambda x, m=m: (mx.quantized_matmul(x, *m, True, 64, 4) ** 2).sum())(x) for m in mats)
    np.testing.assert_allclose(np.array(g), np.array(g1), rtol=1e-6, atol=1e-6)
    v = mx.vmap(lambda r: [mx.quantized_matmul(r, *m, True, 64, 4) for m in mats])(x)
    for vi, m in zip(v, mats):
        np.testing.assert_array_equal(np.array(vi), np.array(mx.quantized_matmul(x, *m, True, 64, 4)))


def test_sibling_batches_switch(rng, int8_setting):
    mats = [mx.quantize(mx.array(rng.standard_normal((n, 128)).astype(np.float32)), 64, 4) for n in (16, 8)]
    x = mx.array(rng.standard_normal((1, 128)).astype(np.float32))
    mx.eval(x, *[m for t in mats for m in t])
    outs = {}
    for on in (False, True):
        before = mx._set_sibling_batches(on)
        try:
            n0 = batched_count()
            o = [mx.quantized_matmul(x, *m, True, 64, 4) for m in mats]
            mx.eval(*o)
            assert batched_count() - n0 == (2 if on else 0)
            outs[on] = [np.array(a) for a in o]
        finally:
            mx._set_sibling_batches(before)
    for a, b in zip(outs[False], outs[True]):
        np.testing.assert_array_equal(a, b)
