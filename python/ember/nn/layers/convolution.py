"""Convolutions over channels-last inputs: ``(N, L, C)``, ``(N, H, W, C)``
and ``(N, D, H, W, C)``, with weights ``(C_out, *kernel, C_in / groups)``
as ``ember.core.conv_general`` takes them."""

import math
from typing import Sequence, Tuple, Union

from ember import core as mx
from ember.nn.layers.base import Module


def _tuple(v: Union[int, Sequence[int]], n: int) -> Tuple[int, ...]:
    return (v,) * n if isinstance(v, int) else tuple(v)


def _check_conv_input(layer: str, x: mx.array, spatial: int, channels: int) -> None:
    if x.ndim != spatial + 2 or x.shape[-1] != channels:
        layout = {1: "(N, L, C)", 2: "(N, H, W, C)", 3: "(N, D, H, W, C)"}[spatial]
        raise ValueError(f"[{layer}] Expected an input of layout {layout} with C = {channels} channels but got "
                         f"an array of shape {tuple(x.shape)}.")


def _check_groups(in_channels: int, groups: int) -> None:
    if in_channels % groups != 0:
        raise ValueError(f"The number of input channels ({in_channels}) must be divisible by the number of "
                         f"groups ({groups})")


class _ConvNd(Module):
    _spatial = 0
    _op = None

    def _init_weights(self, in_channels: int, out_channels: int, kernel_size: Tuple[int, ...], groups: int,
                      bias: bool) -> None:
        _check_groups(in_channels, groups)
        k = math.sqrt(1.0 / (in_channels // groups * math.prod(kernel_size)))
        self.weight = mx.random.uniform(low=-k, high=k, shape=(out_channels, *kernel_size, in_channels // groups))
        if bias:
            self.bias = mx.zeros((out_channels,))

    def _in_channels(self) -> int:
        return self.weight.shape[-1] * getattr(self, "groups", 1)

    def __call__(self, x: mx.array) -> mx.array:
        _check_conv_input(type(self).__name__, x, self._spatial, self._in_channels())
        y = self._conv(x)
        if "bias" in self:
            y = y + self["bias"]
        return y


class Conv1d(_ConvNd):
    """1-D convolution of ``(N, L, C_in)`` inputs.

    ``weight`` has shape ``(out_channels, kernel_size, in_channels //
    groups)``, uniform in ``±1/sqrt(in_channels // groups * kernel_size)``;
    ``bias`` is zeros.

    Args:
        in_channels (int): input channels.
        out_channels (int): output channels.
        kernel_size (int): kernel width.
        stride (int): Default: 1.
        padding (int): zeros added on both sides. Default: 0.
        dilation (int): Default: 1.
        groups (int): channel groups; must divide ``in_channels``.
            Default: 1.
        bias (bool): whether to add a bias. Default: True.
    """

    _spatial = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, groups: int = 1, bias: bool = True) -> None:
        super().__init__()
        self._init_weights(in_channels, out_channels, (kernel_size,), groups, bias)
        self.padding = padding
        self.dilation = dilation
        self.stride = stride
        self.groups = groups

    def _extra_repr(self) -> str:
        return (f"{self._in_channels()}, {self.weight.shape[0]}, kernel_size={self.weight.shape[1]}, "
                f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, groups={self.groups}, "
                f"bias={'bias' in self}")

    def _conv(self, x: mx.array) -> mx.array:
        return mx.conv1d(x, self["weight"], self.stride, self.padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """2-D convolution of ``(N, H, W, C_in)`` inputs.

    ``weight`` has shape ``(out_channels, kh, kw, in_channels // groups)``,
    uniform in ``±1/sqrt(in_channels // groups * kh * kw)``; ``bias`` is
    zeros.

    Args:
        in_channels (int): input channels.
        out_channels (int): output channels.
        kernel_size (int or tuple): kernel size.
        stride (int or tuple): Default: 1.
        padding (int or tuple): zeros added on both sides. Default: 0.
        dilation (int or tuple): Default: 1.
        groups (int): channel groups; must divide ``in_channels``.
            Default: 1.
        bias (bool): whether to add a bias. Default: True.
    """

    _spatial = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple],
                 stride: Union[int, tuple] = 1, padding: Union[int, tuple] = 0, dilation: Union[int, tuple] = 1,
                 groups: int = 1, bias: bool = True) -> None:
        super().__init__()
        self._init_weights(in_channels, out_channels, _tuple(kernel_size, 2), groups, bias)
        self.padding = _tuple(padding, 2)
        self.stride = _tuple(stride, 2)
        self.dilation = dilation
        self.groups = groups

    def _extra_repr(self) -> str:
        return (f"{self._in_channels()}, {self.weight.shape[0]}, kernel_size={tuple(self.weight.shape[1:3])}, "
                f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, groups={self.groups}, "
                f"bias={'bias' in self}")

    def _conv(self, x: mx.array) -> mx.array:
        return mx.conv2d(x, self["weight"], self.stride, self.padding, self.dilation, self.groups)


class Conv3d(_ConvNd):
    """3-D convolution of ``(N, D, H, W, C_in)`` inputs.

    ``weight`` has shape ``(out_channels, kd, kh, kw, in_channels)``,
    uniform in ``±1/sqrt(in_channels * kd * kh * kw)``; ``bias`` is zeros.

    Args:
        in_channels (int): input channels.
        out_channels (int): output channels.
        kernel_size (int or tuple): kernel size.
        stride (int or tuple): Default: 1.
        padding (int or tuple): zeros added on both sides. Default: 0.
        dilation (int or tuple): Default: 1.
        bias (bool): whether to add a bias. Default: True.
    """

    _spatial = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple],
                 stride: Union[int, tuple] = 1, padding: Union[int, tuple] = 0, dilation: Union[int, tuple] = 1,
                 bias: bool = True) -> None:
        super().__init__()
        self._init_weights(in_channels, out_channels, _tuple(kernel_size, 3), 1, bias)
        self.padding = _tuple(padding, 3)
        self.stride = _tuple(stride, 3)
        self.dilation = dilation

    def _extra_repr(self) -> str:
        return (f"{self._in_channels()}, {self.weight.shape[0]}, kernel_size={tuple(self.weight.shape[1:4])}, "
                f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, bias={'bias' in self}")

    def _conv(self, x: mx.array) -> mx.array:
        return mx.conv3d(x, self["weight"], self.stride, self.padding, self.dilation)
