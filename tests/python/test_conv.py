"""Convolutions: conv1d/2d/3d, conv_general, conv_transpose1d/2d/3d and
convolve against a direct-loop NumPy reference in float64 (randomized
over stride, padding incl. asymmetric and negative, kernel and input
dilation, groups, flip), dtypes, non-contiguous operands, gradients
against finite differences, vmap against a loop, and error cases.
"""

import itertools

import numpy as np
import pytest

from conftest import ember_only, mx, to_numpy
from gradcheck import check_grads, check_vmap


def _rng(seed):
    return np.random.default_rng(seed)


def f64(x):
    return mx.array(np.asarray(x, np.float64), dtype=mx.float64)


# --------------------------------------------------------------------------
# reference
# --------------------------------------------------------------------------

def ref_conv(x, w, stride, lo, hi, kd, idil, groups, flip):
    """Direct loops in float64: x (N, *S, C), w (O, *K, C/groups)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    D = x.ndim - 2
    N, C, O = x.shape[0], x.shape[-1], w.shape[0]
    Cg, Og = C // groups, O // groups
    S, K = x.shape[1:-1], w.shape[1:-1]
    # dilate, then pad / crop
    dil_shape = [(s - 1) * i + 1 if s > 0 else 0 for s, i in zip(S, idil)]
    xd = np.zeros((N, *dil_shape, C))
    xd[(slice(None),) + tuple(slice(None, None, i) for i in idil)] = x
    for d in range(D):
        ax = d + 1
        if lo[d] < 0:
            xd = np.take(xd, np.arange(-lo[d], xd.shape[ax]), axis=ax)
        if hi[d] < 0:
            xd = np.take(xd, np.arange(0, xd.shape[ax] + hi[d]), axis=ax)
        widths = [(0, 0)] * xd.ndim
        widths[ax] = (max(lo[d], 0), max(hi[d], 0))
        xd = np.pad(xd, widths)
    P = xd.shape[1:-1]
    ke = [(k - 1) * kk + 1 for k, kk in zip(K, kd)]
    OS = [(p - e) // s + 1 if p >= e else 0 for p, e, s in zip(P, ke, stride)]
    out = np.zeros((N, *OS, O))
    for pos in itertools.product(*[range(o) for o in OS]):
        for kp in itertools.product(*[range(k) for k in K]):
            src = tuple(p * s + k * q for p, s, k, q in zip(pos, stride, kp, kd))
            wk = tuple(k - 1 - i if flip else i for k, i in zip(K, kp))
            xv = xd[(slice(None),) + src]  # (N, C)
            wv = w[(slice(None),) + wk]  # (O, Cg)
            for g in range(groups):
                out[(slice(None),) + pos + (slice(g * Og, (g + 1) * Og),)] += (
                    xv[:, g * Cg:(g + 1) * Cg] @ wv[g * Og:(g + 1) * Og].T)
    return out


def ref_conv_transpose(x, w, stride, pad, dil, outpad, groups):
    """Scatter form: out[i*s - p + k*d] += x[i] * w[k]."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    N, C, O = x.shape[0], x.shape[-1], w.shape[0]
    Cg, Og = C // groups, O // groups
    S, K = x.shape[1:-1], w.shape[1:-1]
    OS = [(s - 1) * st - 2 * p + d * (k - 1) + 1 + op
          for s, st, p, d, k, op in zip(S, stride, pad, dil, K, outpad)]
    out = np.zeros((N, *OS, O))
    for pos in itertools.product(*[range(s) for s in S]):
        for kp in itertools.product(*[range(k) for k in K]):
            dst = tuple(i * st - p + k * d for i, st, p, k, d in zip(pos, stride, pad, kp, dil))
            if any(t < 0 or t >= o for t, o in zip(dst, OS)):
                continue
            xv = x[(slice(None),) + pos]
            wv = w[(slice(None),) + kp]
            for g in range(groups):
                out[(slice(None),) + dst + (slice(g * Og, (g + 1) * Og),)] += (
                    xv[:, g * Cg:(g + 1) * Cg] @ wv[g * Og:(g + 1) * Og].T)
    return out


def random_config(rng, D):
    """A random valid conv_general configuration with small sizes."""
    while True:
        groups = int(rng.choice([1, 1, 2, 3]))
        Cg = int(rng.integers(1, 4))
        Og = int(rng.integers(1, 4))
        N = int(rng.integers(1, 3))
        S = [int(rng.integers(1, 7 if D < 3 else 5)) for _ in range(D)]
        K = [int(rng.integers(1, 4)) for _ in range(D)]
        stride = [int(rng.integers(1, 4)) for _ in range(D)]
        kd = [int(rng.integers(1, 3)) for _ in range(D)]
        idil = [int(rng.integers(1, 3)) for _ in range(D)]
        lo = [int(rng.integers(-1, 3)) for _ in range(D)]
        hi = [int(rng.integers(-1, 3)) for _ in range(D)]
        flip = bool(rng.integers(0, 2))
        # MLX crops negative padding before dilating the input; keep the
        # randomized configs where both agree (see test_negative_padding_dilated)
        lo = [max(v, 0) if i > 1 else v for v, i in zip(lo, idil)]
        hi = [max(v, 0) if i > 1 else v for v, i in zip(hi, idil)]
        ok = all((s - 1) * i + 1 + l + h >= (k - 1) * q + 1
                 for s, i, l, h, k, q in zip(S, idil, lo, hi, K, kd))
        if ok:
            x = rng.standard_normal((N, *S, groups * Cg))
            w = rng.standard_normal((groups * Og, *K, Cg))
            return x, w, dict(stride=stride, lo=lo, hi=hi, kd=kd, idil=idil, groups=groups, flip=flip)


def run_general(x, w, c):
    return mx.conv_general(x, w, stride=c["stride"], padding=(c["lo"], c["hi"]),
                           kernel_dilation=c["kd"], input_dilation=c["idil"],
                           groups=c["groups"], flip=c["flip"])


def ref_general(x, w, c):
    return ref_conv(x, w, c["stride"], c["lo"], c["hi"], c["kd"], c["idil"], c["groups"], c["flip"])


# --------------------------------------------------------------------------
# forward
# --------------------------------------------------------------------------

@ember_only  # MLX: float64 convolutions raise "[Convolution::eval] got unsupported data type"
@pytest.mark.parametrize("D", [1, 2, 3])
@pytest.mark.parametrize("seed", range(12))
def test_conv_general_random_configs_float64(D, seed):
    x, w, c = random_config(_rng(seed * 7 + D), D)
    got = to_numpy(run_general(f64(x), f64(w), c))
    want = ref_general(x, w, c)
    assert got.dtype == np.float64
    assert got.shape == want.shape, (c, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=str(c))


def _float32_config(D, seed):
    return random_config(_rng(seed * 11 + D + 100), D)


def _float32_cases():
    # MLX: grouped 3-d convolutions raise "[conv] Can only handle groups != 1
    # in 1D or 2D convolutions"
    for seed in range(6):
        for D in [1, 2, 3]:
            grouped_3d = D == 3 and _float32_config(D, seed)[2]["groups"] > 1
            yield pytest.param(D, seed, marks=[ember_only] if grouped_3d else [])


@pytest.mark.parametrize("D,seed", list(_float32_cases()))
def test_conv_general_random_configs_float32(D, seed):
    x, w, c = _float32_config(D, seed)
    got = to_numpy(run_general(mx.array(x.astype(np.float32)), mx.array(w.astype(np.float32)), c))
    want = ref_general(x.astype(np.float32), w.astype(np.float32), c)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(c))


@pytest.mark.parametrize("dt", [
    "float32",
    # MLX: float64 convolutions raise "[Convolution::eval] got unsupported data type"
    pytest.param("float64", marks=[ember_only]),
    "float16"])
@pytest.mark.parametrize("Og", [1, 4, 8, 12, 16, 20, 24, 32, 40])
def test_grouped_output_widths(dt, Og):
    # Narrow groups take a register-blocked kernel whose tiles are whole
    # vectors (8 float32 / 4 float64 lanes) of up to two vectors; these widths
    # cover exact, partial and multi-chunk tiles and the BLAS fallback, over
    # row counts that leave tails of the 6-row tiles.
    rng = _rng(Og)
    x = rng.standard_normal((2, 5, 7, 3 * 2)).astype(np.float32)
    w = rng.standard_normal((3 * Og, 3, 2, 2)).astype(np.float32)
    xm, wm = mx.array(x).astype(getattr(mx, dt)), mx.array(w).astype(getattr(mx, dt))
    got = mx.conv2d(xm, wm, stride=(1, 2), padding=(1, 0), groups=3)
    assert got.dtype == getattr(mx, dt)
    want = ref_conv(to_numpy(xm.astype(mx.float64)), to_numpy(wm.astype(mx.float64)), [1, 2], [1, 0], [1, 0],
                    [1, 1], [1, 1], 3, False)
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-2}[dt]
    np.testing.assert_allclose(to_numpy(got.astype(mx.float64)), want, rtol=tol, atol=tol * 4)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_types(dt):
    rng = _rng(3)
    x = rng.standard_normal((2, 7, 6, 4)).astype(np.float32)
    w = rng.standard_normal((6, 3, 2, 2)).astype(np.float32)
    mdt = getattr(mx, dt)
    xm, wm = mx.array(x).astype(mdt), mx.array(w).astype(mdt)
    got = mx.conv2d(xm, wm, stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
    assert got.dtype == mdt
    xr = to_numpy(xm.astype(mx.float32))
    wr = to_numpy(wm.astype(mx.float32))
    want = ref_conv(xr, wr, [2, 1], [1, 1], [1, 1], [1, 2], [1, 1], 2, False)
    tol = 2e-2 if dt == "float16" else 1e-1
    np.testing.assert_allclose(to_numpy(got.astype(mx.float32)), want, rtol=tol, atol=tol)


def test_dtype_promotion():
    x = mx.ones((1, 5, 2), dtype=mx.float16)
    w = mx.ones((3, 2, 2))
    assert mx.conv1d(x, w).dtype == mx.float32
    assert mx.conv1d(x, w.astype(mx.float16)).dtype == mx.float16
    assert mx.conv1d(x.astype(mx.float64), w).dtype == mx.float64


@ember_only  # MLX: float64 convolutions raise "[Convolution::eval] got unsupported data type"
@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (3, 1, 2, 2), (2, 0, 1, 4)])
def test_conv1d_2d_3d(stride, padding, dilation, groups):
    rng = _rng(stride + 10 * padding + 100 * dilation + groups)
    for D, fn in [(1, mx.conv1d), (2, mx.conv2d), (3, mx.conv3d)]:
        S = [9, 8, 6][:D]
        x = rng.standard_normal((2, *S, 4))
        w = rng.standard_normal((8, *[3] * D, 4 // groups))
        got = to_numpy(fn(f64(x), f64(w), stride, padding, dilation, groups))
        want = ref_conv(x, w, [stride] * D, [padding] * D, [padding] * D, [dilation] * D, [1] * D, groups, False)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@ember_only  # MLX: float64 convolutions raise "[Convolution::eval] got unsupported data type"
def test_conv2d_tuple_params():
    rng = _rng(5)
    x = rng.standard_normal((2, 9, 7, 3))
    w = rng.standard_normal((4, 3, 2, 3))
    got = to_numpy(mx.conv2d(f64(x), f64(w), stride=(2, 1), padding=(1, 2), dilation=(2, 1)))
    want = ref_conv(x, w, [2, 1], [1, 2], [1, 2], [2, 1], [1, 1], 1, False)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_pointwise_and_large_blocks():
    # 1x1 (the direct GEMM path) and an input big enough for several column blocks
    rng = _rng(6)
    x = rng.standard_normal((2, 5, 6, 7)).astype(np.float32)
    w = rng.standard_normal((3, 1, 1, 7)).astype(np.float32)
    got = to_numpy(mx.conv2d(mx.array(x), mx.array(w)))
    np.testing.assert_allclose(got, np.einsum("nhwc,oc->nhwo", x, w[:, 0, 0]), rtol=1e-5, atol=1e-5)
    x = rng.standard_normal((3, 70, 70, 64)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 64)).astype(np.float32)
    got = to_numpy(mx.conv2d(mx.array(x), mx.array(w), padding=1))
    xp = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)]).astype(np.float64)
    want = np.zeros((3, 70, 70, 5))
    for i in range(3):
        for j in range(3):
            want += np.einsum("nhwc,oc->nhwo", xp[:, i:i + 70, j:j + 70], w[:, i, j].astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@ember_only  # MLX: float64 convolutions raise "[Convolution::eval] got unsupported data type"
def test_non_contiguous_operands():
    rng = _rng(7)
    xb = rng.standard_normal((6, 2, 9, 4))  # transposed to (2, 9, 6, 4) below
    wb = rng.standard_normal((3, 5, 2, 4))[:, ::-1]  # negative stride
    x = f64(xb).transpose(1, 2, 0, 3)
    w = f64(np.ascontiguousarray(wb))[:, ::2]
    xn = np.transpose(xb, (1, 2, 0, 3))
    wn = np.ascontiguousarray(wb)[:, ::2]
    got = to_numpy(mx.conv2d(x, w, padding=1))
    want = ref_conv(xn, wn, [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], 1, False)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@ember_only  # MLX 0.32 crashes (SIGFPE) on empty channels
def test_empty():
    assert mx.conv2d(mx.ones((0, 5, 5, 4)), mx.ones((6, 3, 3, 4))).shape == (0, 3, 3, 6)
    out = mx.conv2d(mx.ones((2, 5, 5, 0)), mx.ones((6, 3, 3, 0)))
    assert out.shape == (2, 3, 3, 6)
    np.testing.assert_array_equal(to_numpy(out), np.zeros((2, 3, 3, 6), np.float32))


# --------------------------------------------------------------------------
# transposed convolutions and convolve
# --------------------------------------------------------------------------

@ember_only  # MLX: float64 convolutions raise "[Convolution::eval] got unsupported data type"
@pytest.mark.parametrize("D", [1, 2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_conv_transpose_random(D, seed):
    rng = _rng(seed * 13 + D)
    groups = int(rng.choice([1, 2]))
    S = [int(rng.integers(1, 5)) for _ in range(D)]
    K = [int(rng.integers(1, 4)) for _ in range(D)]
    stride = int(rng.integers(1, 4))
    dil = int(rng.integers(1, 3))
    pad = int(rng.integers(0, 2))
    outpad = int(rng.integers(0, stride))
    if any((s - 1) * stride - 2 * pad + dil * (k - 1) + 1 + outpad <= 0 for s, k in zip(S, K)):
        pad = 0
    x = rng.standard_normal((2, *S, 2 * groups))
    w = rng.standard_normal((3 * groups, *K, 2))
    fn = [mx.conv_transpose1d, mx.conv_transpose2d, mx.conv_transpose3d][D - 1]
    got = to_numpy(fn(f64(x), f64(w), stride=stride, padding=pad, dilation=dil, output_padding=outpad,
                      groups=groups))
    want = ref_conv_transpose(x, w, [stride] * D, [pad] * D, [dil] * D, [outpad] * D, groups)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", [(7, 3), (5, 4), (3, 6), (1, 1), (4, 4)])
def test_convolve(mode, n, m):
    rng = _rng(n * 10 + m)
    a, v = rng.standard_normal(n), rng.standard_normal(m)
    got32 = mx.convolve(mx.array(a.astype(np.float32)), mx.array(v.astype(np.float32)), mode)
    assert got32.dtype == mx.float32


@ember_only  # MLX: a float64 convolve computes in float32 (values 1e-7 apart)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", [(7, 3), (5, 4), (3, 6), (1, 1), (4, 4)])
def test_convolve_float64(mode, n, m):
    rng = _rng(n * 10 + m)
    a, v = rng.standard_normal(n), rng.standard_normal(m)
    got = to_numpy(mx.convolve(f64(a), f64(v), mode=mode))
    np.testing.assert_allclose(got, np.convolve(a, v, mode=mode), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------
# gradients and vmap
# --------------------------------------------------------------------------

@ember_only  # MLX: float64 convolutions raise "[Convolution::eval] got unsupported data type" (checks in float64)
@pytest.mark.parametrize("D", [1, 2, 3])
@pytest.mark.parametrize("seed", range(5))
def test_grads_random_configs(D, seed):
    x, w, c = random_config(_rng(seed * 17 + D + 500), D)
    check_grads(lambda a, b: run_general(a, b, c), [x, w])


@ember_only  # MLX: float64 convolutions raise "[Convolution::eval] got unsupported data type" (checks in float64)
@pytest.mark.parametrize("seed", range(3))
def test_second_order_grads(seed):
    x, w, c = random_config(_rng(seed + 900), 1)
    check_grads(lambda a, b: run_general(a, b, c), [x, w], order=2)


@ember_only  # MLX: float64 convolutions raise "[Convolution::eval] got unsupported data type"
def test_grads_conv_transpose_and_convolve():
    rng = _rng(8)
    x = rng.standard_normal((2, 4, 3, 4))
    w = rng.standard_normal((4, 2, 3, 2))
    check_grads(lambda a, b: mx.conv_transpose2d(a, b, stride=2, padding=1, dilation=(1, 2), output_padding=1,
                                                 groups=2), [x, w])
    check_grads(lambda a, b: mx.convolve(a, b, "same"), [rng.standard_normal(6), rng.standard_normal(3)])


@ember_only  # MLX: float64 convolutions raise "[Convolution::eval] got unsupported data type" (checks in float64)
@pytest.mark.parametrize("D", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_vmap_random_configs(D, seed):
    rng = _rng(seed * 19 + D + 700)
    x, w, c = random_config(rng, D)
    B = 3
    xb = rng.standard_normal((B,) + x.shape)
    wb = rng.standard_normal((B,) + w.shape)
    fn = lambda a, b: run_general(a, b, c)  # noqa: E731
    check_vmap(fn, [xb, w], in_axes=[0, None], rtol=1e-10, atol=1e-10)
    check_vmap(fn, [x, wb], in_axes=[None, 0], rtol=1e-10, atol=1e-10)
    check_vmap(fn, [np.moveaxis(xb, 0, 2), np.moveaxis(wb, 0, -1)], in_axes=[2, -1], rtol=1e-10, atol=1e-10)


@ember_only  # MLX: float64 convolutions raise "[Convolution::eval] got unsupported data type"
def test_vmap_of_grad():
    rng = _rng(9)
    x = rng.standard_normal((3, 2, 6, 4))
    w = rng.standard_normal((4, 3, 2))
    c = dict(stride=[2], lo=[1], hi=[0], kd=[2], idil=[1], groups=2, flip=True)

    def loss(a, b):
        return (run_general(a, b, c) ** 2).sum()
    check_vmap(mx.grad(loss, argnums=(0, 1)), [x, w], in_axes=[0, None], rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

def _raises(exc, frag, fn):
    with pytest.raises(exc) as e:
        fn()
    assert frag in str(e.value), str(e.value)


def test_errors():
    x = mx.ones((2, 5, 5, 4))
    w = mx.ones((6, 3, 3, 4))
    _raises(ValueError, "input channels in the input and weight array to match",
            lambda: mx.conv2d(x, mx.ones((6, 3, 3, 3))))
    _raises(ValueError, "divisible by the number of groups", lambda: mx.conv2d(x, mx.ones((6, 3, 3, 2)), groups=3))
    _raises(ValueError, "output channels must be divisible",
            lambda: mx.conv2d(x, mx.ones((5, 3, 3, 2)), groups=2))
    _raises(ValueError, "Stride sizes must be positive", lambda: mx.conv2d(x, w, stride=0))
    _raises(ValueError, "Kernel dilation sizes must be positive", lambda: mx.conv2d(x, w, dilation=0))
    _raises(ValueError, "Input dilation sizes must be positive", lambda: mx.conv_general(x, w, input_dilation=0))
    _raises(ValueError, "Invalid weight array with 4 dimensions for 1D", lambda: mx.conv2d(x[0], w))
    _raises(ValueError, "Invalid strides (1,1) for 1D", lambda: mx.conv2d(x[0], w[0], stride=(1, 1)))
    _raises(ValueError, "Only works for inputs with 1-3 spatial dimensions",
            lambda: mx.conv_general(mx.ones((2, 4)), mx.ones((3, 4))))
    _raises(ValueError, "cannot be smaller than weight spatial dimensions",
            lambda: mx.conv2d(x, mx.ones((6, 7, 7, 4))))
    _raises(ValueError, "cannot be smaller than weight spatial dimensions",
            lambda: mx.conv1d(mx.ones((2, 5, 4)), mx.ones((3, 2, 4)), padding=-3))
    _raises(ValueError, "Invalid padding", lambda: mx.conv_general(x, w, padding=([1, 0], [0, 2, 1])))
    _raises(ValueError, "only supports floating point types",
            lambda: mx.conv2d(x.astype(mx.int32), w.astype(mx.int32)))
    _raises(ValueError, "only supports floating point types",
            lambda: mx.conv2d(x.astype(mx.complex64), w))
    _raises(ValueError, "Inputs must be 1D", lambda: mx.convolve(mx.ones((5, 2)), mx.ones(3)))
    _raises(ValueError, "Invalid mode", lambda: mx.convolve(mx.ones(5), mx.ones(3), mode="bad"))


def test_negative_padding_crops():
    # MLX accepts negative padding (the input is cropped) as long as the kernel fits
    x = np.arange(7.0).reshape(1, 7, 1)
    w = np.ones((1, 2, 1))
    got = to_numpy(mx.conv1d(f64(x), f64(w), padding=-1))
    np.testing.assert_allclose(got, ref_conv(x, w, [1], [-1], [-1], [1], [1], 1, False))
    np.testing.assert_allclose(got[0, :, 0], [3, 5, 7, 9])


@ember_only  # MLX crops before dilating the input (JAX crops the dilated input)
def test_negative_padding_dilated():
    # Ember pads / crops the dilated input (as jax.lax.conv_general_dilated)
    x = np.arange(1.0, 4.0).reshape(1, 3, 1)
    w = np.ones((1, 1, 1))
    got = to_numpy(mx.conv_general(f64(x), f64(w), padding=([0], [-1]), input_dilation=2))
    np.testing.assert_allclose(got[0, :, 0], [1, 0, 2, 0])
