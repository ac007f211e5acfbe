"""Max and average pooling over channels-last inputs (``(N, L, C)``,
``(N, H, W, C)``, ``(N, D, H, W, C)``).

The windows are a strided view of the (padded) input: ``as_strided`` gives
an array ``(N, *out, *kernel, C)`` and a max or mean over the kernel axes
pools it, so gradients flow through the ops' own rules.
"""

import math
from typing import Optional, Sequence, Tuple, Union

from ember import core as mx
from ember.nn.layers.base import Module


def _tuple(v: Union[int, Sequence[int]], n: int, what: str) -> Tuple[int, ...]:
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) != n or not all(isinstance(i, int) for i in v):
        raise ValueError(f"[{what}] Expected an int or a tuple of {n} ints but got {v}.")
    return v


class _Pool(Module):
    _spatial = 0
    _reduce = None
    _pad_value = 0.0

    def __init__(self, kernel_size: Union[int, Sequence[int]], stride: Optional[Union[int, Sequence[int]]],
                 padding: Optional[Union[int, Sequence[int]]]) -> None:
        super().__init__()
        name = type(self).__name__
        self._kernel_size = _tuple(kernel_size, self._spatial, name)
        self._stride = self._kernel_size if stride is None else _tuple(stride, self._spatial, name)
        self._padding = _tuple(padding if padding is not None else 0, self._spatial, name)
        if any(k <= 0 for k in self._kernel_size) or any(s <= 0 for s in self._stride) \
                or any(p < 0 for p in self._padding):
            raise ValueError(f"[{name}] Expected positive kernel sizes and strides and non-negative padding but "
                             f"got kernel_size={self._kernel_size}, stride={self._stride}, "
                             f"padding={self._padding}.")

    def _extra_repr(self) -> str:
        return f"kernel_size={self._kernel_size}, stride={self._stride}, padding={self._padding}"

    def __call__(self, x: mx.array) -> mx.array:
        name = type(self).__name__
        n = self._spatial
        if x.ndim != n + 2:
            layout = {1: "(N, L, C)", 2: "(N, H, W, C)", 3: "(N, D, H, W, C)"}[n]
            raise ValueError(f"[{name}] Expected an input of layout {layout} but got an array of shape "
                             f"{tuple(x.shape)}.")
        if any(self._padding):
            x = mx.pad(x, [(0, 0)] + [(p, p) for p in self._padding] + [(0, 0)],
                       constant_values=self._pad_value)
        spatial = x.shape[1:-1]
        out = [(s - k) // st + 1 for s, k, st in zip(spatial, self._kernel_size, self._stride)]
        if any(o < 0 for o in out):
            raise ValueError(f"[{name}] The kernel {self._kernel_size} is larger than the (padded) input of "
                             f"spatial shape {tuple(spatial)}.")
        # element strides of the contiguous layout
        strides = [1] * x.ndim
        for i in range(x.ndim - 2, -1, -1):
            strides[i] = strides[i + 1] * x.shape[i + 1]
        sp = strides[1:-1]
        shape = [x.shape[0], *out, *self._kernel_size, x.shape[-1]]
        view_strides = [strides[0], *[s * st for s, st in zip(sp, self._stride)], *sp, strides[-1]]
        windows = mx.as_strided(x, shape, view_strides)
        axes = tuple(range(n + 1, 2 * n + 1))
        return self._pool(windows, axes)


class _MaxPool(_Pool):
    _pad_value = -math.inf

    def _pool(self, w: mx.array, axes: Tuple[int, ...]) -> mx.array:
        return mx.max(w, axis=axes)


class _AvgPool(_Pool):
    _pad_value = 0.0

    def _pool(self, w: mx.array, axes: Tuple[int, ...]) -> mx.array:
        return mx.mean(w, axis=axes)


_DOC = """{kind} pooling of {layout} inputs.

    Output positions step by ``stride`` over windows of ``kernel_size``;
    ``padding`` adds {pad} on both sides of each spatial axis first{extra}.

    Args:
        kernel_size (int or tuple): window size.
        stride (int or tuple, optional): Default: None, ``kernel_size``.
        padding (int or tuple): Default: 0.
"""


class MaxPool1d(_MaxPool):
    __doc__ = _DOC.format(kind="Max", layout="``(N, L, C)``", pad="-inf", extra="")
    _spatial = 1

    def __init__(self, kernel_size: Union[int, Tuple[int]], stride: Optional[Union[int, Tuple[int]]] = None,
                 padding: Union[int, Tuple[int]] = 0) -> None:
        super().__init__(kernel_size, stride, padding)


class MaxPool2d(_MaxPool):
    __doc__ = _DOC.format(kind="Max", layout="``(N, H, W, C)``", pad="-inf", extra="")
    _spatial = 2

    def __init__(self, kernel_size: Union[int, Tuple[int, int]],
                 stride: Optional[Union[int, Tuple[int, int]]] = None,
                 padding: Optional[Union[int, Tuple[int, int]]] = 0) -> None:
        super().__init__(kernel_size, stride, padding)


class MaxPool3d(_MaxPool):
    __doc__ = _DOC.format(kind="Max", layout="``(N, D, H, W, C)``", pad="-inf", extra="")
    _spatial = 3

    def __init__(self, kernel_size: Union[int, Tuple[int, int, int]],
                 stride: Optional[Union[int, Tuple[int, int, int]]] = None,
                 padding: Optional[Union[int, Tuple[int, int, int]]] = 0) -> None:
        super().__init__(kernel_size, stride, padding)


_AVG = " (the zeros count in the mean)"


class AvgPool1d(_AvgPool):
    __doc__ = _DOC.format(kind="Average", layout="``(N, L, C)``", pad="zeros", extra=_AVG)
    _spatial = 1

    def __init__(self, kernel_size: Union[int, Tuple[int]], stride: Optional[Union[int, Tuple[int]]] = None,
                 padding: Union[int, Tuple[int]] = 0) -> None:
        super().__init__(kernel_size, stride, padding)


class AvgPool2d(_AvgPool):
    __doc__ = _DOC.format(kind="Average", layout="``(N, H, W, C)``", pad="zeros", extra=_AVG)
    _spatial = 2

    def __init__(self, kernel_size: Union[int, Tuple[int, int]],
                 stride: Optional[Union[int, Tuple[int, int]]] = None,
                 padding: Optional[Union[int, Tuple[int, int]]] = 0) -> None:
        super().__init__(kernel_size, stride, padding)


class AvgPool3d(_AvgPool):
    __doc__ = _DOC.format(kind="Average", layout="``(N, D, H, W, C)``", pad="zeros", extra=_AVG)
    _spatial = 3

    def __init__(self, kernel_size: Union[int, Tuple[int, int, int]],
                 stride: Optional[Union[int, Tuple[int, int, int]]] = None,
                 padding: Optional[Union[int, Tuple[int, int, int]]] = 0) -> None:
        super().__init__(kernel_size, stride, padding)
