"""Activation functions, each as a function and as a module.

The functions are compositions of ``ember.core`` ops; scalar constants are
Python numbers, so they take the input's dtype (float16 in, float16 out).
Those of several elementwise ops are compiled (shapeless, by
``utils._compiled_on_arrays``), as MLX compiles its activations: one fused kernel forward and, for large arrays, one
backward (the Compiled primitive's vjp); inside a compiled function their
ops fuse with their neighbours.
"""

import math
from typing import Any

from ember import core as mx
from ember.nn.layers.base import Module
from ember.utils import _compiled_on_arrays

_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SELU_ALPHA = 1.67326
_SELU_SCALE = 1.0507




def sigmoid(x: mx.array) -> mx.array:
    r"""Logistic sigmoid, :math:`1 / (1 + e^{-x})`, elementwise."""
    return mx.sigmoid(x)


def tanh(x: mx.array) -> mx.array:
    """Hyperbolic tangent, elementwise."""
    return mx.tanh(x)


def relu(x: mx.array) -> mx.array:
    r"""Rectified linear unit, :math:`\max(x, 0)`."""
    return mx.maximum(x, 0)


@_compiled_on_arrays
def relu6(x: mx.array) -> mx.array:
    r"""ReLU capped at 6: :math:`\min(\max(x, 0), 6)`."""
    return mx.minimum(mx.maximum(x, 0), 6.0)


@_compiled_on_arrays
def relu2(x: mx.array) -> mx.array:
    r"""Squared ReLU: :math:`\max(x, 0)^2`."""
    return mx.square(mx.maximum(x, 0))


@_compiled_on_arrays
def leaky_relu(x: mx.array, negative_slope: float = 0.01) -> mx.array:
    r"""Leaky ReLU: :math:`\max(x, s x)` with ``s = negative_slope``."""
    return mx.maximum(negative_slope * x, x)


def softplus(x: mx.array) -> mx.array:
    r""":math:`\log(1 + e^x)`, computed stably."""
    return mx.logaddexp(x, 0)


@_compiled_on_arrays
def log_sigmoid(x: mx.array) -> mx.array:
    r""":math:`\log(\sigma(x)) = -\mathrm{softplus}(-x)`."""
    return -softplus(-x)


@_compiled_on_arrays
def elu(x: mx.array, alpha: float = 1.0) -> mx.array:
    r"""Exponential linear unit: ``x`` for ``x > 0``, else
    :math:`\alpha (e^x - 1)`."""
    return mx.where(x > 0, x, alpha * mx.expm1(x))


@_compiled_on_arrays
def celu(x: mx.array, alpha: float = 1.0) -> mx.array:
    r"""Continuously differentiable ELU:
    :math:`\max(0, x) + \alpha (e^{\min(0, x) / \alpha} - 1)`."""
    return mx.maximum(x, 0.0) + alpha * mx.expm1(mx.minimum(x, 0.0) / alpha)


@_compiled_on_arrays
def selu(x: mx.array) -> mx.array:
    r"""Scaled ELU with the self-normalising constants
    :math:`\lambda \approx 1.0507`, :math:`\alpha \approx 1.6733`."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


@_compiled_on_arrays
def silu(x: mx.array) -> mx.array:
    r"""Sigmoid linear unit (swish): :math:`x \sigma(x)`."""
    return x * mx.sigmoid(x)


@_compiled_on_arrays
def gelu(x: mx.array) -> mx.array:
    r"""Gaussian error linear unit, exact: :math:`x \Phi(x)` with the
    standard normal CDF :math:`\Phi(x) = (1 + \mathrm{erf}(x/\sqrt 2))/2`."""
    return x * (1 + mx.erf(x / _SQRT_2)) / 2


@_compiled_on_arrays
def gelu_approx(x: mx.array) -> mx.array:
    r"""GELU with the tanh approximation:
    :math:`x (1 + \tanh(\sqrt{2/\pi} (x + 0.044715 x^3))) / 2`."""
    return 0.5 * x * (1 + mx.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)))


@_compiled_on_arrays
def gelu_fast_approx(x: mx.array) -> mx.array:
    r"""GELU with the sigmoid approximation: :math:`x \sigma(1.702 x)`."""
    return x * mx.sigmoid(1.702 * x)


def glu(x: mx.array, axis: int = -1) -> mx.array:
    r"""Gated linear unit: splits ``x`` in two halves ``a, b`` along
    ``axis`` and returns :math:`a \sigma(b)`."""
    a, b = mx.split(x, indices_or_sections=2, axis=axis)
    return a * mx.sigmoid(b)


def step(x: mx.array, threshold: float = 0.0) -> mx.array:
    """Heaviside step: 1 where ``x > threshold``, 0 elsewhere (int32)."""
    return mx.where(x > threshold, 1, 0)


def prelu(x: mx.array, alpha: mx.array) -> mx.array:
    r"""Parametric ReLU: :math:`\max(0, x) + \alpha \min(0, x)`."""
    return mx.maximum(0, x) + alpha * mx.minimum(0, x)


@_compiled_on_arrays
def mish(x: mx.array) -> mx.array:
    r"""Mish: :math:`x \tanh(\mathrm{softplus}(x))`."""
    return x * mx.tanh(softplus(x))


@_compiled_on_arrays
def hardswish(x: mx.array) -> mx.array:
    r"""Hard swish: :math:`x \min(\max(x + 3, 0), 6) / 6`."""
    return x * mx.minimum(mx.maximum(x + 3, 0), 6) / 6


@_compiled_on_arrays
def hard_tanh(x: mx.array, min_val: float = -1.0, max_val: float = 1.0) -> mx.array:
    """``x`` clipped to ``[min_val, max_val]``."""
    return mx.minimum(mx.maximum(x, min_val), max_val)


@_compiled_on_arrays
def hard_shrink(x: mx.array, lambd: float = 0.5) -> mx.array:
    r"""``x`` where :math:`|x| > \lambda`, else 0."""
    return mx.where(mx.abs(x) > lambd, x, 0)


@_compiled_on_arrays
def softshrink(x: mx.array, lambd: float = 0.5) -> mx.array:
    r"""Soft shrinkage: :math:`x - \lambda\,\mathrm{sign}(x)` where
    :math:`|x| > \lambda`, else 0."""
    return mx.where(mx.abs(x) > lambd, x - mx.sign(x) * lambd, 0)


@_compiled_on_arrays
def softsign(x: mx.array) -> mx.array:
    r""":math:`x / (1 + |x|)`."""
    return mx.divide(x, 1 + mx.abs(x))


def softmax(x: mx.array, axis: int = -1) -> mx.array:
    """Softmax along ``axis``."""
    return mx.softmax(x, axis=axis)


def softmin(x: mx.array, axis: int = -1) -> mx.array:
    """Softmax of ``-x`` along ``axis``."""
    return mx.softmax(-x, axis=axis)


def log_softmax(x: mx.array, axis: int = -1) -> mx.array:
    r"""Log of the softmax along ``axis``: :math:`x - \log\sum e^x`."""
    return x - mx.logsumexp(x, axis=axis, keepdims=True)


# -- modules ------------------------------------------------------------------

class Sigmoid(Module):
    """Module form of :func:`sigmoid`."""

    def __call__(self, x: mx.array) -> mx.array:
        return sigmoid(x)


class Tanh(Module):
    """Module form of :func:`tanh`."""

    def __call__(self, x: mx.array) -> mx.array:
        return tanh(x)


class ReLU(Module):
    """Module form of :func:`relu`."""

    def __call__(self, x: mx.array) -> mx.array:
        return relu(x)


class ReLU6(Module):
    """Module form of :func:`relu6`."""

    def __call__(self, x: mx.array) -> mx.array:
        return relu6(x)


class ReLU2(Module):
    """Module form of :func:`relu2`."""

    def __call__(self, x: mx.array) -> mx.array:
        return relu2(x)


class LeakyReLU(Module):
    """Module form of :func:`leaky_relu`.

    Args:
        negative_slope (float): slope for negative inputs. Default: 0.01.
    """

    def __init__(self, negative_slope: float = 1e-2) -> None:
        super().__init__()
        self._negative_slope = negative_slope

    def __call__(self, x: mx.array) -> mx.array:
        return leaky_relu(x, self._negative_slope)


class ELU(Module):
    """Module form of :func:`elu`.

    Args:
        alpha (float): scale of the negative part. Default: 1.0.
    """

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: mx.array) -> mx.array:
        return elu(x, self._alpha)


class CELU(Module):
    """Module form of :func:`celu`.

    Args:
        alpha (float): Default: 1.0.
    """

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: mx.array) -> mx.array:
        return celu(x, self._alpha)


class SELU(Module):
    """Module form of :func:`selu`."""

    def __call__(self, x: mx.array) -> mx.array:
        return selu(x)


class SiLU(Module):
    """Module form of :func:`silu`."""

    def __call__(self, x: mx.array) -> mx.array:
        return silu(x)


class GELU(Module):
    """Module form of the GELU functions.

    Args:
        approx (str): ``'none'`` (:func:`gelu`), ``'precise'`` or
            ``'tanh'`` (:func:`gelu_approx`), ``'fast'``
            (:func:`gelu_fast_approx`). Default: ``'none'``.
    """

    _FUNCS = {"none": gelu, "precise": gelu_approx, "tanh": gelu_approx, "fast": gelu_fast_approx}

    def __init__(self, approx: str = "none") -> None:
        super().__init__()
        if approx not in self._FUNCS:
            raise ValueError(f"The approximation should be in {list(self._FUNCS)} but '{approx}' was given")
        self._approx = approx

    def __call__(self, x: mx.array) -> mx.array:
        return self._FUNCS[self._approx](x)


class GLU(Module):
    """Module form of :func:`glu`.

    Args:
        axis (int): the axis to split. Default: -1.
    """

    def __init__(self, axis: int = -1) -> None:
        super().__init__()
        self.axis = axis

    def __call__(self, x: mx.array) -> mx.array:
        return glu(x=x, axis=self.axis)


class Step(Module):
    """Module form of :func:`step`.

    Args:
        threshold (float): Default: 0.0.
    """

    def __init__(self, threshold: float = 0.0) -> None:
        super().__init__()
        self.threshold = threshold

    def __call__(self, x: mx.array) -> mx.array:
        return step(x, self.threshold)


class PReLU(Module):
    """Parametric ReLU with a learned slope per channel (``weight``, the
    last axis of the input, or one shared slope).

    Args:
        num_parameters (int): number of slopes. Default: 1.
        init (float): their initial value. Default: 0.25.
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25) -> None:
        super().__init__()
        self.weight = mx.full([num_parameters], init)

    def __call__(self, x: mx.array) -> mx.array:
        return prelu(x, self.weight)


class Mish(Module):
    """Module form of :func:`mish`."""

    def __call__(self, x: mx.array) -> mx.array:
        return mish(x)


class Hardswish(Module):
    """Module form of :func:`hardswish`."""

    def __call__(self, x: mx.array) -> mx.array:
        return hardswish(x)


class HardTanh(Module):
    """Module form of :func:`hard_tanh` (limits -1 and 1)."""

    def __call__(self, x: mx.array) -> mx.array:
        return hard_tanh(x)


class HardShrink(Module):
    """Module form of :func:`hard_shrink`.

    Args:
        lambd (float): Default: 0.5.
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def __call__(self, x: mx.array) -> mx.array:
        return hard_shrink(x, self.lambd)


class Softshrink(Module):
    """Module form of :func:`softshrink`.

    Args:
        lambd (float): Default: 0.5.
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def __call__(self, x: mx.array) -> mx.array:
        return softshrink(x, self.lambd)


class Softsign(Module):
    """Module form of :func:`softsign`."""

    def __call__(self, x: mx.array) -> mx.array:
        return softsign(x)


class Softplus(Module):
    """Module form of :func:`softplus`."""

    def __call__(self, x: mx.array) -> mx.array:
        return softplus(x)


class LogSigmoid(Module):
    """Module form of :func:`log_sigmoid`."""

    def __call__(self, x: mx.array) -> mx.array:
        return log_sigmoid(x)


class LogSoftmax(Module):
    """Module form of :func:`log_softmax` (last axis)."""

    def __call__(self, x: mx.array) -> mx.array:
        return log_softmax(x)


class Softmax(Module):
    """Module form of :func:`softmax` (last axis)."""

    def __call__(self, x: mx.array) -> mx.array:
        return softmax(x)


class Softmin(Module):
    """Module form of :func:`softmin` (last axis)."""

    def __call__(self, x: mx.array) -> mx.array:
        return softmin(x)
