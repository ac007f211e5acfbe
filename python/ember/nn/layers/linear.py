"""Identity, Linear and Bilinear."""

import math
from typing import Any, Optional

from ember import core as mx
from ember.nn.layers.base import Module


def _check_last(layer: str, x: mx.array, n: int, what: str = "input") -> None:
    if x.ndim < 1 or x.shape[-1] != n:
        raise ValueError(f"[{layer}] Expected the {what} to have {n} features in its last dimension "
                         f"but got an array of shape {tuple(x.shape)}.")


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are
    ignored)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __call__(self, x: mx.array) -> mx.array:
        return x


class Linear(Module):
    r"""Affine map :math:`y = x W^T + b`.

    ``weight`` has shape ``(output_dims, input_dims)`` and ``bias`` shape
    ``(output_dims,)``, both initialised from
    :math:`\mathcal{U}(-k, k)` with :math:`k = 1/\sqrt{\text{input\_dims}}`.

    Args:
        input_dims (int): features of the input (its last axis).
        output_dims (int): features of the output.
        bias (bool): whether to add a bias. Default: True.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True) -> None:
        super().__init__()
        k = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(low=-k, high=k, shape=(output_dims, input_dims))
        if bias:
            self.bias = mx.random.uniform(low=-k, high=k, shape=(output_dims,))

    def _extra_repr(self) -> str:
        return f"input_dims={self.weight.shape[1]}, output_dims={self.weight.shape[0]}, bias={'bias' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        _check_last("Linear", x, self.weight.shape[1])
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T

    def to_quantized(self, group_size: Optional[int] = None, bits: Optional[int] = None, mode: str = "affine",
                     quantize_input: bool = False) -> Module:
        """This layer quantized: a QuantizedLinear, or with ``quantize_input``
        a QQLinear (inputs quantized too)."""
        from ember.nn.layers.quantized import QQLinear, QuantizedLinear
        if quantize_input:
            return QQLinear.from_linear(self, group_size, bits, mode)
        return QuantizedLinear.from_linear(self, group_size, bits, mode)


class Bilinear(Module):
    r"""Bilinear map :math:`y_k = x_1^T W_k x_2 + b_k`.

    ``weight`` has shape ``(output_dims, input2_dims, input1_dims)`` and
    ``bias`` shape ``(output_dims,)``, both from :math:`\mathcal{U}(-k, k)`
    with :math:`k = 1/\sqrt{\text{input1\_dims}}`.

    Args:
        input1_dims (int): features of the first input.
        input2_dims (int): features of the second input.
        output_dims (int): features of the output.
        bias (bool): whether to add a bias. Default: True.
    """

    def __init__(self, input1_dims: int, input2_dims: int, output_dims: int, bias: bool = True) -> None:
        super().__init__()
        k = math.sqrt(1.0 / input1_dims)
        self.weight = mx.random.uniform(low=-k, high=k, shape=(output_dims, input2_dims, input1_dims))
        if bias:
            self.bias = mx.random.uniform(low=-k, high=k, shape=(output_dims,))

    def _extra_repr(self) -> str:
        out, in2, in1 = self.weight.shape
        return f"input1_dims={in1}, input2_dims={in2}, output_dims={out}, bias={'bias' in self}"

    def __call__(self, x1: mx.array, x2: mx.array) -> mx.array:
        out, in2, in1 = self.weight.shape
        _check_last("Bilinear", x1, in1, "first input")
        _check_last("Bilinear", x2, in2, "second input")
        lead = x1.shape[:-1]
        a = x1.reshape(-1, in1)
        b = x2.reshape(-1, in2)
        # (n, in1) @ (in1, out * in2) -> (n, out, in2), then contract with x2
        t = (a @ self.weight.reshape(out * in2, in1).T).reshape(-1, out, in2)
        y = (t @ b[:, :, None]).squeeze(-1)
        if "bias" in self:
            y = y + self.bias
        return y.reshape(*lead, out)
