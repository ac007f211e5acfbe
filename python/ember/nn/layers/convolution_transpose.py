"""Transposed convolutions over channels-last inputs, with weights
``(C_out, *kernel, C_in)``."""

import math
from typing import Tuple, Union

from ember import core as mx
from ember.nn.layers.base import Module
from ember.nn.layers.convolution import _check_conv_input, _tuple


class _ConvTransposeNd(Module):
    _spatial = 0

    def _init_weights(self, in_channels: int, out_channels: int, kernel_size: Tuple[int, ...],
                      bias: bool) -> None:
        k = math.sqrt(1.0 / (in_channels * math.prod(kernel_size)))
        self.weight = mx.random.uniform(low=-k, high=k, shape=(out_channels, *kernel_size, in_channels))
        if bias:
            self.bias = mx.zeros((out_channels,))

    def _extra_repr(self) -> str:
        ks = self.weight.shape[1:-1]
        ks = ks[0] if self._spatial == 1 else tuple(ks)
        return (f"{self.weight.shape[-1]}, {self.weight.shape[0]}, kernel_size={ks}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, output_padding={self.output_padding}, "
                f"bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        _check_conv_input(type(self).__name__, x, self._spatial, self.weight.shape[-1])
        op = {1: mx.conv_transpose1d, 2: mx.conv_transpose2d, 3: mx.conv_transpose3d}[self._spatial]
        y = op(x, self["weight"], self.stride, self.padding, self.dilation, self.output_padding)
        if "bias" in self:
            y = y + self["bias"]
        return y


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution of ``(N, L, C_in)`` inputs.

    ``weight`` has shape ``(out_channels, kernel_size, in_channels)``,
    uniform in ``±1/sqrt(in_channels * kernel_size)``; ``bias`` is zeros.

    Args:
        in_channels (int): input channels.
        out_channels (int): output channels.
        kernel_size (int): kernel width.
        stride (int): Default: 1.
        padding (int): Default: 0.
        dilation (int): Default: 1.
        output_padding (int): added to one side of the output. Default: 0.
        bias (bool): whether to add a bias. Default: True.
    """

    _spatial = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, output_padding: int = 0, bias: bool = True) -> None:
        super().__init__()
        self._init_weights(in_channels, out_channels, (kernel_size,), bias)
        self.padding = padding
        self.dilation = dilation
        self.stride = stride
        self.output_padding = output_padding


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution of ``(N, H, W, C_in)`` inputs.

    ``weight`` has shape ``(out_channels, kh, kw, in_channels)``, uniform in
    ``±1/sqrt(in_channels * kh * kw)``; ``bias`` is zeros.

    Args:
        in_channels (int): input channels.
        out_channels (int): output channels.
        kernel_size (int or tuple): kernel size.
        stride (int or tuple): Default: 1.
        padding (int or tuple): Default: 0.
        dilation (int or tuple): Default: 1.
        output_padding (int or tuple): Default: 0.
        bias (bool): whether to add a bias. Default: True.
    """

    _spatial = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple],
                 stride: Union[int, tuple] = 1, padding: Union[int, tuple] = 0, dilation: Union[int, tuple] = 1,
                 output_padding: Union[int, tuple] = 0, bias: bool = True) -> None:
        super().__init__()
        self._init_weights(in_channels, out_channels, _tuple(kernel_size, 2), bias)
        self.padding = _tuple(padding, 2)
        self.stride = _tuple(stride, 2)
        self.output_padding = _tuple(output_padding, 2)
        self.dilation = dilation


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution of ``(N, D, H, W, C_in)`` inputs.

    ``weight`` has shape ``(out_channels, kd, kh, kw, in_channels)``,
    uniform in ``±1/sqrt(in_channels * kd * kh * kw)``; ``bias`` is zeros.

    Args:
        in_channels (int): input channels.
        out_channels (int): output channels.
        kernel_size (int or tuple): kernel size.
        stride (int or tuple): Default: 1.
        padding (int or tuple): Default: 0.
        dilation (int or tuple): Default: 1.
        output_padding (int or tuple): Default: 0.
        bias (bool): whether to add a bias. Default: True.
    """

    _spatial = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple],
                 stride: Union[int, tuple] = 1, padding: Union[int, tuple] = 0, dilation: Union[int, tuple] = 1,
                 output_padding: Union[int, tuple] = 0, bias: bool = True) -> None:
        super().__init__()
        self._init_weights(in_channels, out_channels, _tuple(kernel_size, 3), bias)
        self.padding = _tuple(padding, 3)
        self.stride = _tuple(stride, 3)
        self.output_padding = _tuple(output_padding, 3)
        self.dilation = dilation
