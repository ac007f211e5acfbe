"""mx.fft against numpy.fft: every function over lengths (powers of two,
3*5*7 composites, primes small and large, 1, even/odd for irfft), axes,
n / s cropping and zero-padding, norms, input dtypes, strided and
transposed inputs, the error paths, gradients (finite differences and the
adjoint identity) and vmap.

FFT results are complex64 (MLX has no complex128), so the reference is
numpy.fft in float64 and the tolerance scales with the transform's size.
"""

import numpy as np
import pytest

from conftest import IS_MLX, ember_only, mx
from gradcheck import check_grads, check_vmap

FFT = mx.fft


def _rng(seed=0):
    return np.random.default_rng(seed)


def _cplx(shape, seed=0):
    r = _rng(seed)
    return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(np.complex64)


def _real(shape, seed=0):
    return _rng(seed).standard_normal(shape).astype(np.float32)


def _close(got, want, dtype=None, tol=2e-6):
    got_np = np.array(got)
    if dtype is not None:
        assert got.dtype == dtype, f"dtype {got.dtype}, expected {dtype}"
    assert got_np.shape == np.shape(want), f"shape {got_np.shape}, expected {np.shape(want)}"
    want = np.asarray(want)
    if want.size == 0:
        return
    n = max(2, want.size)
    scale = max(1.0, float(np.abs(want).max()))
    err = float(np.abs(got_np - want).max())
    assert err <= tol * scale * np.log2(n) * 4, f"max error {err} (scale {scale})"


SIZES = [1, 2, 3, 4, 5, 7, 8, 12, 16, 30, 64, 105, 128, 210, 243, 1000, 1024, 17, 31, 37, 97, 101, 1009, 4099]


@pytest.mark.parametrize("n", SIZES)
def test_fft_ifft_lengths(n):
    x = _cplx((3, n), n)
    _close(FFT.fft(mx.array(x)), np.fft.fft(x.astype(np.complex128)), mx.complex64)
    _close(FFT.ifft(mx.array(x)), np.fft.ifft(x.astype(np.complex128)), mx.complex64)


@pytest.mark.parametrize("n", SIZES)
def test_rfft_irfft_lengths(n):
    x = _real((2, n), n)
    _close(FFT.rfft(mx.array(x)), np.fft.rfft(x.astype(np.float64)), mx.complex64)
    c = _cplx((2, n // 2 + 1), n)
    _close(FFT.irfft(mx.array(c), n=n), np.fft.irfft(c.astype(np.complex128), n=n), mx.float32)
    # the default output length 2 (m - 1)
    if n > 1:
        _close(FFT.irfft(mx.array(c)), np.fft.irfft(c.astype(np.complex128)), mx.float32)


@pytest.mark.parametrize("n", [2 ** 20, 1_000_003])
def test_long_transforms(n):
    x = _cplx(n, 1)
    want = np.fft.fft(x.astype(np.complex128))
    got = np.array(FFT.fft(mx.array(x)))
    rel = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert rel < 2e-6, rel
    assert np.abs(got - want).max() < 1e-5 * np.abs(want).max()
    back = np.array(FFT.ifft(mx.array(got)))
    assert np.linalg.norm(back - x) / np.linalg.norm(x) < 4e-6


@pytest.mark.parametrize("func", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("n", [None, 1, 3, 6, 8, 13, 20])
@pytest.mark.parametrize("axis", [0, 1, -1, -3])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_one_dim_n_axis_norm(func, n, axis, norm):
    x = _real((4, 6, 5), 3) if func == "rfft" else _cplx((4, 6, 5), 3)
    if func == "irfft" and n is None and x.shape[axis] == 1:
        return
    got = getattr(FFT, func)(mx.array(x), n=n, axis=axis, norm=norm)
    want = getattr(np.fft, func)(x.astype(np.complex128 if func != "rfft" else np.float64), n=n, axis=axis, norm=norm)
    _close(got, want, mx.float32 if func == "irfft" else mx.complex64)


ND_CASES = [
    (None, None), (None, (0,)), (None, (1, 2)), (None, (2, 0)), ((3, 8), (2, 0)), ((7,), (1,)),
    ((2, 4, 9), (0, 1, 2)), ((5, 5), (-1, -2)), (None, (-3, -1)), ((1, 1), (0, 2)),
]


@pytest.mark.parametrize("func", ["fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("s,axes", ND_CASES)
@pytest.mark.parametrize("norm", ["backward", "ortho"])
def test_n_dim(func, s, axes, norm):
    x = _real((4, 6, 5), 4) if func == "rfftn" else _cplx((4, 6, 5), 4)
    ref = getattr(np.fft, func)
    xr = x.astype(np.float64 if func == "rfftn" else np.complex128)
    if axes is None:
        want = ref(xr, norm=norm)
    else:
        want = ref(xr, s=s, axes=axes, norm=norm)
    got = getattr(FFT, func)(mx.array(x), s=s, axes=axes, norm=norm)
    _close(got, want, mx.float32 if func == "irfftn" else mx.complex64)


@pytest.mark.parametrize("func", ["fft2", "ifft2", "rfft2", "irfft2"])
@pytest.mark.parametrize("s,axes", [(None, (-2, -1)), ((4, 6), (-2, -1)), ((3, 7), (0, 2)), (None, (2, 1))])
def test_two_dim(func, s, axes):
    x = _real((3, 4, 5), 5) if func == "rfft2" else _cplx((3, 4, 5), 5)
    xr = x.astype(np.float64 if func == "rfft2" else np.complex128)
    want = getattr(np.fft, func)(xr, s=s, axes=axes)
    got = getattr(FFT, func)(mx.array(x), s=s, axes=axes)
    _close(got, want, mx.float32 if func == "irfft2" else mx.complex64)
    if s is None and axes == (-2, -1):  # the defaults
        _close(getattr(FFT, func)(mx.array(x)), getattr(np.fft, func)(xr))


def test_fft2_axes_none_is_all_axes():
    x = _cplx((3, 4, 5), 6)
    _close(FFT.fft2(mx.array(x), axes=None), np.fft.fftn(x.astype(np.complex128)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32", "uint8", "bool_", "complex64"])
def test_input_dtypes(dtype):
    base = np.abs(_real((3, 8), 7) * 4)
    x = mx.array(base).astype(getattr(mx, dtype))
    xv = np.array(x.astype(mx.float32)).astype(np.float64)
    _close(FFT.fft(x), np.fft.fft(xv), mx.complex64)
    _close(FFT.rfft(x), np.fft.rfft(xv), mx.complex64)
    _close(FFT.irfft(x), np.fft.irfft(xv), mx.float32)
    _close(FFT.fftn(x), np.fft.fftn(xv), mx.complex64)


def test_rfft_of_complex_uses_real_part():
    x = _cplx((3, 8), 8)
    _close(FFT.rfft(mx.array(x)), np.fft.rfft(x.real.astype(np.float64)), mx.complex64)


def test_irfft_ignores_imaginary_dc_and_nyquist():
    c = _cplx((10,), 9)
    got = np.array(FFT.irfft(mx.array(c), n=18))
    c2 = c.copy()
    c2[0] = c2[0].real
    c2[9] = c2[9].real
    _close(FFT.irfft(mx.array(c2), n=18), got)
    _close(got, np.fft.irfft(c.astype(np.complex128), n=18))


@pytest.mark.parametrize("n", [16, 105, 97])
def test_strided_and_transposed_inputs(n):
    x = _cplx((n, 6, 4), 10)
    a = mx.array(x)
    for view, ref in [
        (a.transpose(2, 0, 1), x.transpose(2, 0, 1)),
        (a[::-1, ::2, 1:], x[::-1, ::2, 1:]),
        (a.transpose(1, 2, 0)[:, ::-1], x.transpose(1, 2, 0)[:, ::-1]),
        (mx.broadcast_to(a[:, :1, :1], (n, 3, 2)), np.broadcast_to(x[:, :1, :1], (n, 3, 2))),
    ]:
        r = ref.astype(np.complex128)
        _close(FFT.fft(view, axis=0), np.fft.fft(r, axis=0))
        _close(FFT.fft(view), np.fft.fft(r))
        _close(FFT.fftn(view), np.fft.fftn(r))
        _close(FFT.rfft(mx.real(view), axis=0), np.fft.rfft(r.real, axis=0))
        _close(FFT.irfft(view, axis=0), np.fft.irfft(r, axis=0))


def test_many_rows_threads():
    x = _cplx((3000, 40), 11)
    _close(FFT.fft(mx.array(x)), np.fft.fft(x.astype(np.complex128)))
    x = _cplx((5, 70000), 12)
    _close(FFT.fft(mx.array(x)), np.fft.fft(x.astype(np.complex128)))
    x = _cplx((3, 40009), 13)  # prime, Bluestein
    _close(FFT.fft(mx.array(x)), np.fft.fft(x.astype(np.complex128)))


def test_empty_batch_and_identity_axes():
    x = np.zeros((0, 5), np.complex64)
    assert FFT.fft(mx.array(x)).shape == (0, 5)
    assert FFT.rfft(mx.zeros((0, 8))).shape == (0, 5)
    a = mx.ones((2, 3))
    r = FFT.fftn(a, axes=[])
    assert r.shape == (2, 3) and r.dtype == mx.float32  # MLX returns the input


@pytest.mark.parametrize("axes", [None, 0, 1, [0, 1], [-1], (1, 0)])
@pytest.mark.parametrize("shape", [(5, 6), (4, 7), (1, 3)])
def test_shifts(axes, shape):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    np.testing.assert_array_equal(np.array(FFT.fftshift(mx.array(x), axes=axes)), np.fft.fftshift(x, axes=axes))
    np.testing.assert_array_equal(np.array(FFT.ifftshift(mx.array(x), axes=axes)), np.fft.ifftshift(x, axes=axes))
    y = FFT.ifftshift(FFT.fftshift(mx.array(x), axes=axes), axes=axes)
    np.testing.assert_array_equal(np.array(y), x)


def test_shift_scalar_and_complex():
    assert FFT.fftshift(mx.array(1.0)).shape == ()
    c = _cplx((5,), 1)
    np.testing.assert_array_equal(np.array(FFT.fftshift(mx.array(c))), np.fft.fftshift(c))


@pytest.mark.parametrize("n", [1, 2, 5, 8, 11])
@pytest.mark.parametrize("d", [1.0, 0.25, 3.0])
def test_freqs(n, d):
    got = FFT.fftfreq(n, d)
    assert got.dtype == mx.float32
    np.testing.assert_allclose(np.array(got), np.fft.fftfreq(n, d), rtol=1e-6, atol=1e-7)
    got = FFT.rfftfreq(n, d=d)
    np.testing.assert_allclose(np.array(got), np.fft.rfftfreq(n, d), rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

def _raises(exc, fragment, f):
    """The exception type as MLX raises it; the message is Ember's own."""
    with pytest.raises(exc) as e:
        f()
    if not IS_MLX:
        assert fragment in str(e.value), str(e.value)


def test_errors():
    a = mx.ones((4, 6))
    _raises(ValueError, "[fft] Invalid FFT output size 0", lambda: FFT.fft(a, n=0))
    _raises(ValueError, "[rfft] Invalid FFT output size -2", lambda: FFT.rfft(a, n=-2))
    _raises(ValueError, "(4,6)", lambda: FFT.ifft(a, n=0))
    _raises(IndexError, "[fft] Axis 2 is out of bounds", lambda: FFT.fft(a, axis=2))
    _raises(IndexError, "Axis -3", lambda: FFT.irfft(a, axis=-3))
    _raises(IndexError, "shape ()", lambda: FFT.fft(mx.array(1.0)))
    _raises(IndexError, "[fftn]", lambda: FFT.fftn(a, axes=[0, 2]))
    _raises(ValueError, "[fftn] Duplicated axis", lambda: FFT.fftn(a, axes=[0, 0]))
    _raises(ValueError, "Duplicated axis", lambda: FFT.rfft2(a, axes=[1, -1]))
    _raises(ValueError, "different sizes", lambda: FFT.fftn(a, s=[3], axes=[0, 1]))
    _raises(ValueError, "`axes` should not be `None`", lambda: FFT.fftn(a, s=[3, 3]))
    _raises(ValueError, "Invalid norm", lambda: FFT.fft(a, norm="bad"))
    _raises(ValueError, "Invalid norm", lambda: FFT.irfftn(a, norm="Ortho"))
    _raises(ValueError, "Invalid FFT output size 0", lambda: FFT.fft(mx.zeros((0,))))
    _raises(ValueError, "Invalid FFT output size 0", lambda: FFT.fft(mx.zeros((3, 0))))
    _raises(ValueError, "[irfft] Invalid FFT output size 0", lambda: FFT.irfft(mx.ones((3, 1))))
    _raises(ValueError, "[fftfreq]", lambda: FFT.fftfreq(0))
    _raises(ValueError, "[rfftfreq]", lambda: FFT.rfftfreq(-3))
    _raises(IndexError, "fftshift", lambda: FFT.fftshift(a, axes=[2]))


# --------------------------------------------------------------------------
# gradients and vmap
# --------------------------------------------------------------------------
# The transforms compute in complex64, so finite differences use a large
# step: every function below is linear or quadratic in its inputs, where
# central differences are exact up to rounding.

GRAD_TOL = dict(eps=0.5, rtol=2e-4, atol=2e-4)


def _split(z):
    return [mx.real(z), mx.imag(z)] if z.dtype == mx.complex64 else [z]


def _c(re, im):
    return re.astype(mx.complex64) + im.astype(mx.complex64) * mx.array(1j, dtype=mx.complex64)


@pytest.mark.parametrize("func,kw", [
    ("fft", {}), ("fft", {"n": 5}), ("fft", {"n": 11, "axis": 0}), ("ifft", {"norm": "ortho"}),
    ("fft", {"n": 7}), ("ifft", {"n": 13, "axis": 0, "norm": "forward"}),
    ("fftn", {}), ("ifft2", {"s": (4, 3)}), ("fftn", {"s": (5, 2), "axes": (1, 0)}),
])
def test_grad_complex(func, kw):
    f = getattr(FFT, func)
    re, im = _rng(1).standard_normal((2, 6, 7))
    check_grads(lambda a, b: _split(f(_c(a, b), **kw)), [re, im], order=2, **GRAD_TOL)


@pytest.mark.parametrize("func,kw", [
    ("rfft", {}), ("rfft", {"n": 10}), ("rfft", {"n": 5, "axis": 0}), ("rfft", {"norm": "ortho"}),
    ("rfftn", {}), ("rfft2", {"s": (5, 9)}), ("rfftn", {"axes": (1, 0), "norm": "forward"}),
])
def test_grad_real_to_complex(func, kw):
    f = getattr(FFT, func)
    x = _rng(2).standard_normal((6, 7))
    check_grads(lambda a: _split(f(a, **kw)), [x], order=2, **GRAD_TOL)


# MLX's jvp of irfft gets the output length wrong when n is odd or crops the
# input (and fails for n=1); its vjp is right
_MLX_IRFFT_JVP = [ember_only]


@pytest.mark.parametrize("func,kw", [
    ("irfft", {}), pytest.param("irfft", {"n": 11}, marks=_MLX_IRFFT_JVP), ("irfft", {"n": 12}),
    pytest.param("irfft", {"n": 3, "axis": 0}, marks=_MLX_IRFFT_JVP),
    ("irfft", {"norm": "ortho"}), ("irfftn", {}), ("irfft2", {"s": (5, 8)}), ("irfftn", {"axes": (1, 0)}),
    pytest.param("irfft", {"n": 1}, marks=_MLX_IRFFT_JVP),
])
def test_grad_complex_to_real(func, kw):
    f = getattr(FFT, func)
    re, im = _rng(3).standard_normal((2, 6, 7))
    check_grads(lambda a, b: f(_c(a, b), **kw), [re, im], order=2, **GRAD_TOL)


def test_grad_of_power_spectrum_matches_closed_form():
    # d/dx sum |rfft(x)|^2 w  ==  2 Re(F^H (w * P F x)) computed by NumPy
    x = _real((16,), 4)
    w = np.ones(9)
    w[1:8] = 2.0  # the Hermitian weights make sum w |X|^2 = n |x|^2
    g = mx.grad(lambda v: (mx.square(mx.abs(FFT.rfft(v))) * mx.array(w, dtype=mx.float32)).sum())(mx.array(x))
    np.testing.assert_allclose(np.array(g), 2 * 16 * x, rtol=1e-4, atol=1e-4)
    g = mx.grad(lambda v: mx.square(mx.abs(FFT.rfft(v))).sum())(mx.array(x))
    X = np.fft.rfft(x.astype(np.float64))
    want = 2 * np.real(np.fft.ifft(np.concatenate([X, np.zeros(7)])) * 16)
    np.testing.assert_allclose(np.array(g), want, rtol=1e-4, atol=1e-4)


def test_grad_through_shift():
    x = _rng(5).standard_normal((4, 5))
    check_grads(lambda a: FFT.fftshift(a, axes=[0, 1]), [x], eps=1e-3, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("in_axes", [0, 1, 2])
def test_vmap(in_axes):
    re = _real((3, 4, 6), 6)
    check_vmap(lambda a: _split(FFT.fft(a.astype(mx.complex64))), [re], in_axes=in_axes, rtol=1e-5, atol=1e-5)
    check_vmap(lambda a: _split(FFT.rfft(a, n=8, axis=0)), [re], in_axes=in_axes, rtol=1e-5, atol=1e-5)
    check_vmap(lambda a: FFT.irfft(a.astype(mx.complex64), axis=-1), [re], in_axes=in_axes, rtol=1e-5, atol=1e-5)
    check_vmap(lambda a: _split(FFT.fftn(a.astype(mx.complex64), s=(3, 5), axes=(1, 0))), [re], in_axes=in_axes,
               rtol=1e-5, atol=1e-5)
    check_vmap(lambda a: FFT.irfftn(a.astype(mx.complex64)), [re], in_axes=in_axes, rtol=1e-5, atol=1e-5)


def test_vmap_of_grad():
    x = _real((3, 8), 7)
    per = mx.vmap(mx.grad(lambda v: mx.square(mx.abs(FFT.fft(v.astype(mx.complex64)))).sum()))(mx.array(x))
    np.testing.assert_allclose(np.array(per), 2 * 8 * x, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------
# stft
# --------------------------------------------------------------------------

def _padded_window(n_fft, wl, window):
    """The window (ones of length wl by default) centred in n_fft zeros."""
    if window is None:
        window = np.ones(wl or n_fft)
    left = (n_fft - len(window)) // 2
    win = np.zeros(n_fft)
    win[left:left + len(window)] = window
    return win


def _stft_ref(x, n_fft, hop=None, wl=None, window=None, center=True, mode="reflect", onesided=None, norm="backward"):
    hop = hop or n_fft // 4
    win = _padded_window(n_fft, wl, window)
    if onesided is None:
        onesided = not np.iscomplexobj(x)
    if center:
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)], mode=mode)
    frames = 1 + (x.shape[-1] - n_fft) // hop
    fr = np.stack([x[..., f * hop:f * hop + n_fft] * win for f in range(frames)], -2)
    r = np.fft.rfft(fr, axis=-1, norm=norm) if onesided else np.fft.fft(fr, axis=-1, norm=norm)
    return np.swapaxes(r, -1, -2)


STFT_CASES = [
    dict(n_fft=8), dict(n_fft=8, win_length=6), dict(n_fft=7, win_length=4, hop_length=3, pad_mode="edge"),
    dict(n_fft=7, center=False, hop_length=5), dict(n_fft=6, onesided=False, pad_mode="constant"),
    dict(n_fft=16, hop_length=16, norm="ortho"), dict(n_fft=5, hop_length=2, center=False, onesided=False),
]


@pytest.mark.parametrize("kw", STFT_CASES)
def test_stft(kw):
    x = _real((2, 37), 20).astype(np.float64)
    want = _stft_ref(x, kw["n_fft"], kw.get("hop_length"), kw.get("win_length"), None, kw.get("center", True),
                     kw.get("pad_mode", "reflect"), kw.get("onesided"), kw.get("norm", "backward"))
    _close(mx.fft.stft(mx.array(x.astype(np.float32)), **kw), want, mx.complex64)


def test_stft_window_and_complex_and_layouts():
    x = _real((3, 40), 21).astype(np.float64)
    w = np.hanning(6)
    got = mx.fft.stft(mx.array(x.astype(np.float32)), n_fft=8, window=mx.array(w.astype(np.float32)))
    _close(got, _stft_ref(x, 8, window=w))
    # a given window sets the window length (win_length ignored, as MLX)
    got = mx.fft.stft(mx.array(x.astype(np.float32)), n_fft=8, win_length=3, window=mx.array(w.astype(np.float32)))
    _close(got, _stft_ref(x, 8, window=w))
    c = _cplx((40,), 22)
    _close(mx.fft.stft(mx.array(c), n_fft=8), _stft_ref(c.astype(np.complex128), 8))
    xt = _real((40, 3), 23)
    _close(mx.fft.stft(mx.array(xt).T, n_fft=8, hop_length=3), _stft_ref(xt.T.astype(np.float64), 8, 3))
    xi = np.arange(30)
    got = mx.fft.stft(mx.array(xi), n_fft=8)
    _close(got, _stft_ref(xi.astype(np.float64), 8), mx.complex64)


def test_stft_errors():
    x = mx.ones((2, 37))
    _raises(ValueError, "[stft] n_fft must be positive", lambda: mx.fft.stft(x, n_fft=0))
    _raises(ValueError, "[stft] hop_length must be positive", lambda: mx.fft.stft(x, n_fft=3))
    _raises(ValueError, "[stft] hop_length must be positive", lambda: mx.fft.stft(x, n_fft=8, hop_length=0))
    _raises(ValueError, "[stft] window length must not exceed n_fft", lambda: mx.fft.stft(x, n_fft=8, win_length=9))
    _raises(ValueError, "must not exceed", lambda: mx.fft.stft(x, n_fft=8, window=mx.ones(9)))
    _raises(ValueError, "[stft] window must be a one-dimensional", lambda: mx.fft.stft(x, n_fft=8, window=mx.ones((2, 4))))
    _raises(ValueError, "[stft] Input is too short", lambda: mx.fft.stft(x, n_fft=64, center=False))
    _raises(ValueError, "[stft] Input must have at least one dimension", lambda: mx.fft.stft(mx.array(1.0), n_fft=8))
    _raises(ValueError, "pad_mode", lambda: mx.fft.stft(x, n_fft=8, pad_mode="wrap"))
    _raises(ValueError, "Invalid norm", lambda: mx.fft.stft(x, n_fft=8, norm="x"))


def test_stft_grad_and_vmap():
    x = _rng(24).standard_normal((2, 20))
    w = _rng(25).standard_normal(6)
    check_grads(lambda a: _split(mx.fft.stft(a, n_fft=8, hop_length=3)), [x], **GRAD_TOL)
    # bilinear in (signal, window): central differences stay exact
    check_grads(lambda a, b: _split(mx.fft.stft(a, n_fft=8, window=b, center=False)), [x, w], **GRAD_TOL)


@ember_only
def test_stft_vmap():
    """MLX: '[Primitive::vmap] Not implemented for AsStrided' (its stft frames
    the signal with as_strided)."""
    check_vmap(lambda a: _split(mx.fft.stft(a, n_fft=8)), [_real((3, 2, 20), 26)], in_axes=1, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# istft
# --------------------------------------------------------------------------

def _istft_ref(S, n_fft=None, hop=None, wl=None, window=None, center=True, norm="backward", onesided=True,
               length=None):
    n_freq, frames = S.shape[-2], S.shape[-1]
    if n_fft is None:
        n_fft = 2 * (n_freq - 1) if onesided else n_freq
    hop = hop or n_fft // 4
    win = _padded_window(n_fft, wl, window)
    Sf = np.swapaxes(S, -1, -2)
    fr = np.fft.irfft(Sf, n=n_fft, axis=-1, norm=norm) if onesided else \
        np.real(np.fft.ifft(Sf, n=n_fft, axis=-1, norm=norm))
    fr = fr * win
    T = n_fft + hop * (frames - 1)
    y = np.zeros(S.shape[:-2] + (T,))
    env = np.zeros(T)
    for f in range(frames):
        y[..., f * hop:f * hop + n_fft] += fr[..., f, :]
        env[f * hop:f * hop + n_fft] += win ** 2
    ok = env > 1e-11
    y = np.where(ok, y / np.where(ok, env, 1), 0)
    start = n_fft // 2 if center else 0
    if length is None:
        return y[..., start:T - start]
    out = y[..., start:start + length]
    return np.concatenate([out, np.zeros(out.shape[:-1] + (length - out.shape[-1],))], -1)


ISTFT_CASES = [
    ({}, {}), (dict(center=False), dict(center=False)), (dict(hop_length=3), dict(hop=3)),
    (dict(n_fft=9), dict(n_fft=9)), (dict(win_length=6), dict(wl=6)), (dict(norm="ortho"), dict(norm="ortho")),
    (dict(onesided=False, n_fft=5), dict(onesided=False, n_fft=5)), (dict(length=30), dict(length=30)),
    (dict(length=4, center=False), dict(length=4, center=False)), (dict(win_length=2, hop_length=4), dict(wl=2, hop=4)),
    (dict(length=0), dict(length=0)),
]


@pytest.mark.parametrize("kw,rk", ISTFT_CASES)
def test_istft(kw, rk):
    S = _cplx((2, 5, 6), 30)
    _close(mx.fft.istft(mx.array(S), **kw), _istft_ref(S.astype(np.complex128), **rk), mx.float32)


def test_istft_inverts_stft():
    x = _real((3, 61), 31)
    w = (np.hanning(16) + 0.1).astype(np.float32)
    for center in [True, False]:
        S = mx.fft.stft(mx.array(x), n_fft=16, hop_length=4, window=mx.array(w), center=center)
        y = mx.fft.istft(S, n_fft=16, hop_length=4, window=mx.array(w), center=center, length=61 if center else None)
        got = np.array(y)
        np.testing.assert_allclose(got, x[:, :got.shape[-1]], rtol=1e-5, atol=1e-5)
    w5 = _rng(32).standard_normal(5)
    S = _cplx((5, 6), 33)
    _close(mx.fft.istft(mx.array(S).T.T, window=mx.array(w5.astype(np.float32))),
           _istft_ref(S.astype(np.complex128), window=w5.astype(np.float32).astype(np.float64)))


def test_istft_errors():
    S = mx.array(_cplx((5, 6), 34))
    _raises(ValueError, "[istft] hop_length must be positive", lambda: mx.fft.istft(S, hop_length=0))
    _raises(ValueError, "[istft] Input must have at least two dimensions", lambda: mx.fft.istft(S[0]))
    _raises(ValueError, "[istft] n_fft must be positive", lambda: mx.fft.istft(S, n_fft=0))
    _raises(ValueError, "[istft] window length must not exceed n_fft", lambda: mx.fft.istft(S, win_length=9))
    _raises(ValueError, "Invalid norm", lambda: mx.fft.istft(S, norm="x"))


@ember_only
def test_istft_negative_length_raises():
    """MLX returns an empty signal for length=-1; Ember raises."""
    S = mx.array(_cplx((5, 6), 34))
    _raises(ValueError, "[istft] length must be non-negative", lambda: mx.fft.istft(S, length=-1))


def test_istft_grad_and_vmap():
    re, im = _rng(35).standard_normal((2, 5, 6))
    check_grads(lambda a, b: mx.fft.istft(_c(a, b), hop_length=3), [re, im], **GRAD_TOL)
    check_grads(lambda a, b: mx.fft.istft(_c(a, b), length=12, center=False), [re, im], **GRAD_TOL)
    re3 = _real((3, 5, 6), 36)
    check_vmap(lambda a: mx.fft.istft(a.astype(mx.complex64)), [re3], in_axes=0, rtol=1e-5, atol=1e-5)
    check_vmap(lambda a: mx.fft.istft(a.astype(mx.complex64)), [re3], in_axes=2, rtol=1e-5, atol=1e-5)
