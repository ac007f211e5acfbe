"""Upsampling of channels-last inputs ``(N, *spatial, C)``: nearest,
linear and cubic interpolation, one spatial axis at a time.

Each axis is resampled by gathering a few input positions per output
position (``take``) and summing them with weights: the tables of positions
and weights depend only on the sizes, so they are small arrays computed
with float32 ops (the arithmetic MLX uses), and gradients flow through
``take`` and the products. As in MLX the weights are float32, so linear and
cubic results of half-precision inputs are float32.
"""

import math
from typing import Any, List, Literal, Optional, Tuple, Union

from ember import core as mx
from ember.nn.layers.base import Module

_CUBIC_A = -0.75


def _out_size(n: int, scale: float) -> int:
    return int(scale * n)


def _positions(n: int, m: int, scale: float, align_corners: bool) -> mx.array:
    """Input coordinates (float32) of the m output positions."""
    i = mx.arange(m, dtype=mx.float32)
    if align_corners:
        return i * ((n - 1) / (m - 1)) if m > 1 else i * 0.0
    step = 1 / scale
    start = ((m - 1) * step - n + 1) / 2
    return i * step - start


def _nearest_index(n: int, m: int) -> mx.array:
    i = mx.arange(m, dtype=mx.float32)
    if m > n:
        idx = mx.round((i + 0.5) * (n / m) - 0.5)
    else:
        idx = mx.floor(i * (n / m))
    return mx.clip(idx, 0, n - 1).astype(mx.int32)


def _cubic_weight(d: mx.array) -> mx.array:
    d = mx.abs(d)
    a = _CUBIC_A
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return mx.where(d <= 1, near, mx.where(d < 2, far, 0.0))


def _taps(n: int, m: int, scale: float, mode: str,
          align_corners: bool) -> List[Tuple[mx.array, Optional[mx.array]]]:
    """[(index array (m,), weight array (m,) or None)] for one axis."""
    if mode == "nearest":
        return [(_nearest_index(n, m), None)]
    pos = _positions(n, m, scale, align_corners)
    lo = mx.floor(pos)
    t = pos - lo
    lo = lo.astype(mx.int32)

    def at(k: int) -> mx.array:
        return mx.clip(lo + k, 0, n - 1)

    if mode == "linear":
        return [(at(0), 1 - t), (at(1), t)]
    return [(at(k), _cubic_weight(t - k)) for k in (-1, 0, 1, 2)]


def _resample_axis(x: mx.array, axis: int, scale: float, mode: str, align_corners: bool) -> mx.array:
    n = x.shape[axis]
    m = _out_size(n, scale)
    bshape = [1] * x.ndim
    bshape[axis] = m
    out: Any = None  # the sum of the taps (there is at least one)
    for idx, w in _taps(n, m, scale, mode, align_corners):
        part = mx.take(x, idx, axis=axis)
        if w is not None:
            part = part * w.reshape(bshape)
        out = part if out is None else out + part
    return out


def _upsample(x: mx.array, scale_factor: Tuple, mode: str, align_corners: bool) -> mx.array:
    for d, s in enumerate(scale_factor):
        x = _resample_axis(x, d + 1, s, mode, align_corners)
    return x


def upsample_nearest(x: mx.array, scale_factor: Tuple) -> mx.array:
    """Nearest-neighbour upsampling of ``x`` ``(N, *spatial, C)``, one
    scale per spatial axis."""
    return _upsample(x, scale_factor, "nearest", False)


def upsample_linear(x: mx.array, scale_factor: Tuple, align_corners: bool = False) -> mx.array:
    """(Multi)linear upsampling of ``x`` ``(N, *spatial, C)``, one scale per
    spatial axis; with ``align_corners`` the corner samples line up."""
    return _upsample(x, scale_factor, "linear", align_corners)


def upsample_cubic(x: mx.array, scale_factor: Tuple, align_corners: bool = False) -> mx.array:
    """Bicubic (Keys, a = -0.75) upsampling of ``x`` ``(N, *spatial, C)``,
    one scale per spatial axis."""
    return _upsample(x, scale_factor, "cubic", align_corners)


class Upsample(Module):
    """Resizes the spatial axes of ``(N, *spatial, C)`` inputs by
    ``scale_factor`` (output size ``int(scale * size)``).

    Args:
        scale_factor (float or tuple): one scale for every spatial axis, or
            one per axis.
        mode (str): ``'nearest'``, ``'linear'`` or ``'cubic'``.
            Default: ``'nearest'``.
        align_corners (bool): for linear and cubic, map the corner samples
            of input and output onto each other. Default: False.
        antialias (bool): low-pass filter when downsampling (linear and
            cubic, without ``align_corners``). Default: False.
    """

    def __init__(self, scale_factor: Union[float, Tuple], mode: Literal["nearest", "linear", "cubic"] = "nearest",
                 align_corners: bool = False, antialias: bool = False) -> None:
        super().__init__()
        if mode not in ("nearest", "linear", "cubic"):
            raise ValueError(f"[Upsample] Got unsupported upsampling algorithm: {mode}")
        if antialias and mode == "nearest":
            raise ValueError("[Upsample] Antialiasing is not supported for nearest neighbor upsampling")
        if antialias and align_corners:
            raise ValueError("[Upsample] antialias=True with align_corners=True is not supported. Use "
                             "align_corners=False for antialiased interpolation.")
        self.scale_factor: Union[float, Tuple[float, ...]]
        if isinstance(scale_factor, (list, tuple)):
            self.scale_factor = tuple(map(float, scale_factor))
        else:
            self.scale_factor = float(scale_factor)
        self.mode = mode
        self.align_corners = align_corners
        self.antialias = antialias

    def _extra_repr(self) -> str:
        return f"scale_factor={self.scale_factor}, mode={self.mode!r}, align_corners={self.align_corners}"

    def __call__(self, x: mx.array) -> mx.array:
        dims = x.ndim - 2
        if dims <= 0:
            raise ValueError("[Upsample] The input should have at least 1 spatial dimension which means it "
                             f"should be at least 3D but {x.ndim}D was provided")
        scale = self.scale_factor
        if isinstance(scale, tuple):
            if len(scale) != dims:
                raise ValueError(f"[Upsample] One scale per spatial dimension is required but "
                                 f"scale_factor={scale} and the number of spatial dimensions were {dims}")
        else:
            scale = (scale,) * dims
        if self.antialias:
            return _antialiased(x, scale, self.mode)
        return _upsample(x, scale, self.mode, self.align_corners)


def _antialiased(x: mx.array, scale_factor: Tuple, mode: str) -> mx.array:
    for d, s in enumerate(scale_factor):
        x = _antialias_axis(x, d + 1, s, mode)
    return x


def _filter(mode: str, d: float) -> float:
    d = abs(d)
    if mode == "linear":
        return max(0.0, 1.0 - d)
    a = -0.5
    if d <= 1:
        return ((a + 2) * d - (a + 3)) * d * d + 1
    if d < 2:
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return 0.0


def _antialias_axis(x: mx.array, axis: int, scale: float, mode: str) -> mx.array:
    """Resampling with the interpolation filter (cubic: a = -0.5) widened
    by 1/scale when downsampling and normalised over the taps inside the input (PyTorch's antialiased
    resampling): a dense (m, n) weight matrix applied along the axis."""
    n = x.shape[axis]
    m = _out_size(n, scale)
    ratio = 1 / scale
    width = max(1 / scale, 1.0)
    support = (1.0 if mode == "linear" else 2.0) * width
    rows = []
    for i in range(m):
        centre = ratio * (i + 0.5)
        lo = max(int(centre - support + 0.5), 0)
        hi = min(int(centre + support + 0.5), n)
        w = [_filter(mode, (j - centre + 0.5) / width) for j in range(lo, hi)]
        total = sum(w)
        row = [0.0] * n
        for j, wj in zip(range(lo, hi), w):
            row[j] = wj / total if total else 0.0
        rows.append(row)
    wmat = mx.array(rows, dtype=mx.float32)
    xt = mx.moveaxis(x, axis, -1)
    y = xt @ wmat.T
    return mx.moveaxis(y, -1, axis)
