"""Weight initializers (``mlx.nn.init``), written with ``ember.core``.

Each function here takes the distribution's parameters and returns an
initializer: a function that takes an array and returns a new array of its
shape, of the dtype given to the outer function (``float32`` unless told),
drawn from the global random state (``ember.core.random.seed`` makes it
repeatable). The input array only supplies the shape.

The Glorot and He initializers count fans the way MLX lays out weights,
``(out, *kernel, in)``: ``fan_in = in * prod(kernel)`` and
``fan_out = out * prod(kernel)``; a ``Linear`` weight ``(out, in)`` has
``fan_in = in``.
"""

import math
from typing import Callable, Literal, Sequence, Tuple

from ember import core as mx

__all__ = [
    "constant",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "identity",
    "normal",
    "orthogonal",
    "sparse",
    "uniform",
]


def _fans(name: str, shape: Sequence[int]) -> Tuple[int, int]:
    if len(shape) < 2:
        raise ValueError(
            f"[{name}] Glorot / He initialization requires at least 2 dimensional input "
            f"but input with {len(shape)} dimensions.")
    receptive = math.prod(shape[1:-1])
    return shape[-1] * receptive, shape[0] * receptive


def _fan_for_mode(name: str, shape: Sequence[int], mode: str) -> int:
    fan_in, fan_out = _fans(name, shape)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"[{name}] Invalid mode: {mode}. Valid modes are: fan_in, fan_out")


def constant(value: float, dtype: mx.Dtype = mx.float32) -> Callable[[mx.array], mx.array]:
    """An initializer that fills the array with one value.

    Args:
        value (float): the value.
        dtype (Dtype, optional): the dtype of the result. Default: ``float32``.

    Returns:
        Callable[[array], array]: ``init(a)`` returns an array of ``a``'s
        shape filled with ``value``.

    Example:
        >>> import ember.core as mx
        >>> from ember.nn import init
        >>> init.constant(0.5)(mx.zeros((2,)))
        array([0.5, 0.5], dtype=float32)
    """

    def initializer(a: mx.array) -> mx.array:
        return mx.full(a.shape, value, dtype=dtype)

    return initializer


def normal(mean: float = 0.0, std: float = 1.0,
           dtype: mx.Dtype = mx.float32) -> Callable[[mx.array], mx.array]:
    """An initializer that draws from a normal distribution.

    Args:
        mean (float, optional): the mean. Default: ``0.0``.
        std (float, optional): the standard deviation. Default: ``1.0``.
        dtype (Dtype, optional): the dtype of the result. Default: ``float32``.

    Returns:
        Callable[[array], array]: ``init(a)`` returns samples of ``a``'s shape.

    Example:
        >>> import ember.core as mx
        >>> from ember.nn import init
        >>> init.normal(std=0.1)(mx.zeros((3, 2))).shape
        (3, 2)
    """

    def initializer(a: mx.array) -> mx.array:
        return mx.random.normal(a.shape, dtype=dtype, loc=mean, scale=std)

    return initializer


def uniform(low: float = 0.0, high: float = 1.0,
            dtype: mx.Dtype = mx.float32) -> Callable[[mx.array], mx.array]:
    """An initializer that draws from the uniform distribution on
    ``[low, high)``.

    Args:
        low (float, optional): the lower bound. Default: ``0.0``.
        high (float, optional): the upper bound. Default: ``1.0``.
        dtype (Dtype, optional): the dtype of the result. Default: ``float32``.

    Returns:
        Callable[[array], array]: ``init(a)`` returns samples of ``a``'s shape.

    Example:
        >>> import ember.core as mx
        >>> from ember.nn import init
        >>> init.uniform(-1.0, 1.0)(mx.zeros((4,))).shape
        (4,)
    """

    def initializer(a: mx.array) -> mx.array:
        return mx.random.uniform(low, high, a.shape, dtype=dtype)

    return initializer


def identity(dtype: mx.Dtype = mx.float32) -> Callable[[mx.array], mx.array]:
    """An initializer that returns the identity matrix.

    Args:
        dtype (Dtype, optional): the dtype of the result. Default: ``float32``.

    Returns:
        Callable[[array], array]: ``init(arr)`` returns the identity of
        ``arr``'s shape, which must be square (ValueError otherwise).

    Example:
        >>> import ember.core as mx
        >>> from ember.nn import init
        >>> init.identity()(mx.zeros((2, 2)))
        array([[1, 0],
               [0, 1]], dtype=float32)
    """

    def initializer(arr: mx.array) -> mx.array:
        shape = tuple(arr.shape)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(
                f"[identity] The input array must be a square matrix but got shape {shape}.")
        return mx.eye(shape[0], dtype=dtype)

    return initializer


def glorot_normal(dtype: mx.Dtype = mx.float32) -> Callable[[mx.array, float], mx.array]:
    """A Glorot (Xavier) normal initializer: standard deviation
    ``gain * sqrt(2 / (fan_in + fan_out))``.

    Args:
        dtype (Dtype, optional): the dtype of the result. Default: ``float32``.

    Returns:
        Callable[[array, float], array]: ``init(a, gain=1.0)`` returns
        samples of ``a``'s shape (at least two dimensions).

    Example:
        >>> import ember.core as mx
        >>> from ember.nn import init
        >>> init.glorot_normal()(mx.zeros((8, 4)), gain=2.0).shape
        (8, 4)
    """

    def initializer(a: mx.array, gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _fans("glorot_normal", tuple(a.shape))
        if a.size == 0:
            return mx.zeros(a.shape, dtype=dtype)
        std = gain * math.sqrt(2.0 / (fan_in + fan_out))
        return mx.random.normal(a.shape, dtype=dtype, scale=std)

    return initializer


def glorot_uniform(dtype: mx.Dtype = mx.float32) -> Callable[[mx.array, float], mx.array]:
    """A Glorot (Xavier) uniform initializer: samples from
    ``[-limit, limit)`` with ``limit = gain * sqrt(6 / (fan_in + fan_out))``.

    Args:
        dtype (Dtype, optional): the dtype of the result. Default: ``float32``.

    Returns:
        Callable[[array, float], array]: ``init(a, gain=1.0)`` returns
        samples of ``a``'s shape (at least two dimensions).

    Example:
        >>> import ember.core as mx
        >>> from ember.nn import init
        >>> w = init.glorot_uniform()(mx.zeros((3, 3)))
        >>> bool(mx.all(mx.abs(w) <= 1.0))
        True
    """

    def initializer(a: mx.array, gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _fans("glorot_uniform", tuple(a.shape))
        if a.size == 0:
            return mx.zeros(a.shape, dtype=dtype)
        limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return initializer


def he_normal(dtype: mx.Dtype = mx.float32) -> Callable[
        [mx.array, Literal["fan_in", "fan_out"], float], mx.array]:
    """A He (Kaiming) normal initializer: standard deviation
    ``gain / sqrt(fan)``, ``fan`` the fan-in or the fan-out.

    Args:
        dtype (Dtype, optional): the dtype of the result. Default: ``float32``.

    Returns:
        Callable[[array, str, float], array]: ``init(a, mode="fan_in",
        gain=1.0)`` returns samples of ``a``'s shape (at least two
        dimensions); ``mode`` is ``"fan_in"`` or ``"fan_out"``.

    Example:
        >>> import ember.core as mx
        >>> from ember.nn import init
        >>> init.he_normal()(mx.zeros((8, 4)), mode="fan_out").shape
        (8, 4)
    """

    def initializer(a: mx.array, mode: Literal["fan_in", "fan_out"] = "fan_in",
                    gain: float = 1.0) -> mx.array:
        fan = _fan_for_mode("he_normal", tuple(a.shape), mode)
        if a.size == 0:
            return mx.zeros(a.shape, dtype=dtype)
        return mx.random.normal(a.shape, dtype=dtype, scale=gain / math.sqrt(fan))

    return initializer


def he_uniform(dtype: mx.Dtype = mx.float32) -> Callable[
        [mx.array, Literal["fan_in", "fan_out"], float], mx.array]:
    """A He (Kaiming) uniform initializer: samples from ``[-limit, limit)``
    with ``limit = gain * sqrt(3 / fan)``, ``fan`` the fan-in or the fan-out.

    Args:
        dtype (Dtype, optional): the dtype of the result. Default: ``float32``.

    Returns:
        Callable[[array, str, float], array]: ``init(a, mode="fan_in",
        gain=1.0)`` returns samples of ``a``'s shape (at least two
        dimensions); ``mode`` is ``"fan_in"`` or ``"fan_out"``.

    Example:
        >>> import ember.core as mx
        >>> from ember.nn import init
        >>> w = init.he_uniform()(mx.zeros((2, 3)))
        >>> bool(mx.all(mx.abs(w) <= 1.0))
        True
    """

    def initializer(a: mx.array, mode: Literal["fan_in", "fan_out"] = "fan_in",
                    gain: float = 1.0) -> mx.array:
        fan = _fan_for_mode("he_uniform", tuple(a.shape), mode)
        if a.size == 0:
            return mx.zeros(a.shape, dtype=dtype)
        limit = gain * math.sqrt(3.0 / fan)
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return initializer


def orthogonal(gain: float = 1.0, dtype: mx.Dtype = mx.float32) -> Callable[[mx.array], mx.array]:
    """An initializer that returns a (semi-)orthogonal matrix times ``gain``.

    A Gaussian matrix is factored by QR and the signs of ``Q``'s columns
    fixed by ``R``'s diagonal, which makes ``Q`` uniformly distributed. A
    matrix with no more rows than columns has orthonormal rows
    (``W @ W.T == gain**2 * I``), otherwise its columns are orthonormal.

    Args:
        gain (float, optional): the scale of the matrix. Default: ``1.0``.
        dtype (Dtype, optional): the dtype of the result. Default: ``float32``.

    Returns:
        Callable[[array], array]: ``init(a)`` returns a matrix of ``a``'s
        shape, which must have two dimensions.

    Example:
        >>> import ember.core as mx
        >>> from ember.nn import init
        >>> w = init.orthogonal()(mx.zeros((3, 3)))
        >>> bool(mx.allclose(w @ w.T, mx.eye(3), atol=1e-5))
        True
    """

    def initializer(a: mx.array) -> mx.array:
        shape = tuple(a.shape)
        if len(shape) != 2:
            raise ValueError(
                f"[orthogonal] Orthogonal initialization requires a 2D array but got a "
                f"{len(shape)}D array.")
        rows, cols = shape
        if rows * cols == 0:
            return mx.zeros(shape, dtype=dtype)
        tall = (max(rows, cols), min(rows, cols))
        q, r = mx.linalg.qr(mx.random.normal(tall, dtype=mx.float32))
        signs = mx.where(mx.diagonal(r) < 0, -1.0, 1.0)
        q = q * signs
        if rows < cols:
            q = q.T
        return (gain * q).astype(dtype)

    return initializer


def sparse(sparsity: float, mean: float = 0.0, std: float = 1.0,
           dtype: mx.Dtype = mx.float32) -> Callable[[mx.array], mx.array]:
    """An initializer of normal samples with a fraction of each row zero.

    Each row of the matrix gets ``ceil(sparsity * columns)`` zeros at
    random positions; the other entries are drawn from a normal
    distribution of the given mean and standard deviation.

    Args:
        sparsity (float): the fraction of each row set to zero, in
            ``[0, 1]`` (ValueError otherwise).
        mean (float, optional): the mean of the nonzero entries.
            Default: ``0.0``.
        std (float, optional): their standard deviation. Default: ``1.0``.
        dtype (Dtype, optional): the dtype of the result. Default: ``float32``.

    Returns:
        Callable[[array], array]: ``init(a)`` returns a matrix of ``a``'s
        shape, which must have two dimensions.

    Example:
        >>> import ember.core as mx
        >>> from ember.nn import init
        >>> w = init.sparse(0.5)(mx.zeros((4, 6)))
        >>> (w == 0).sum(axis=1).tolist()
        [3, 3, 3, 3]
    """
    if not 0.0 <= sparsity <= 1.0:
        raise ValueError(f"[sparse] The sparsity must be in [0, 1], got {sparsity}.")

    def initializer(a: mx.array) -> mx.array:
        shape = tuple(a.shape)
        if len(shape) != 2:
            raise ValueError(
                f"[sparse] Only arrays with 2 dimensions are supported, got shape {shape}.")
        rows, cols = shape
        zeros = math.ceil(sparsity * cols)
        values = mx.random.normal(shape, dtype=dtype, loc=mean, scale=std)
        if zeros == 0 or rows * cols == 0:
            return values
        # a random rank of each entry within its row; the lowest ranks are zeroed
        ranks = mx.argsort(mx.argsort(mx.random.uniform(shape=shape), axis=1), axis=1)
        return mx.where(ranks < zeros, mx.zeros((), dtype=dtype), values)

    return initializer
