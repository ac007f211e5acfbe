"""The fused kernels the layers use, in one place.

MLX's normalisation layers call ``mx.fast.layer_norm`` and
``mx.fast.rms_norm``. Ember's ``core.fast`` is written separately; until
it exists (and for any function it lacks) these helpers compute the same
thing with ordinary ops, in float32 for half-precision inputs as the fused
kernels do, returning the input's dtype.
"""

from ember import core as mx

_HALF = (mx.float16, mx.bfloat16)


def _fast(name):
    fast = getattr(mx, "fast", None)
    return getattr(fast, name, None) if fast is not None else None


def _check_affine(op, x, arr, what):
    if arr is not None and (arr.ndim != 1 or arr.shape[0] != x.shape[-1]):
        raise ValueError(f"[{op}] {what} of shape {tuple(arr.shape)} must have the size of the last "
                         f"dimension of the input of shape {tuple(x.shape)}.")


def layer_norm(x, weight, bias, eps):
    """Normalises the last axis of ``x`` to zero mean and unit variance,
    then scales by ``weight`` and shifts by ``bias`` (either may be None)."""
    fn = _fast("layer_norm")
    if fn is not None:
        return fn(x, weight, bias, eps)
    _check_affine("layer_norm", x, weight, "weight")
    _check_affine("layer_norm", x, bias, "bias")
    dtype = x.dtype
    xf = x.astype(mx.float32) if dtype in _HALF else x
    mean = mx.mean(xf, axis=-1, keepdims=True)
    centred = xf - mean
    var = mx.mean(mx.square(centred), axis=-1, keepdims=True)
    y = centred * mx.rsqrt(var + eps)
    y = y.astype(dtype)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def rms_norm(x, weight, eps):
    """Divides the last axis of ``x`` by its root mean square, then scales
    by ``weight`` (may be None)."""
    fn = _fast("rms_norm")
    if fn is not None:
        return fn(x, weight, eps)
    _check_affine("rms_norm", x, weight, "weight")
    dtype = x.dtype
    xf = x.astype(mx.float32) if dtype in _HALF else x
    y = xf * mx.rsqrt(mx.mean(mx.square(xf), axis=-1, keepdims=True) + eps)
    y = y.astype(dtype)
    if weight is not None:
        y = y * weight
    return y
