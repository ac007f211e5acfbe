"""Positional encodings: RoPE (rotary, through ``mx.fast.rope``),
SinusoidalPositionalEncoding and ALiBi (linear attention biases)."""

import math
from typing import List, Optional

from ember import core as mx
from ember.nn.layers.base import Module


class RoPE(Module):
    r"""Rotary positional encoding: rotates pairs of the first ``dims``
    features of each row of the second-to-last axis by an angle
    proportional to the row's position, :math:`(\text{offset} + l) \cdot
    \text{scale} \cdot \text{base}^{-2i/\text{dims}}` for pair :math:`i`.
    Features beyond ``dims`` pass unchanged.

    Args:
        dims (int): number of features rotated.
        traditional (bool): rotate consecutive pairs ``(2i, 2i + 1)``;
            otherwise the pairs are ``(i, i + dims / 2)``. Default: False.
        base (float): base of the frequencies. Default: 10000.
        scale (float): multiplies the positions. Default: 1.0.
    """

    def __init__(self, dims: int, traditional: bool = False, base: float = 10000, scale: float = 1.0) -> None:
        super().__init__()
        self.dims = dims
        self.traditional = traditional
        self.base = base
        self.scale = scale

    def _extra_repr(self) -> str:
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x: mx.array, offset: int = 0) -> mx.array:
        """Args:
            x (array): at least 3-D, the positions along axis -2.
            offset (int or array): position of the first row. Default: 0.

        Returns:
            array: ``x`` with its first ``dims`` features rotated.
        """
        return mx.fast.rope(x, self.dims, traditional=self.traditional, base=self.base, scale=self.scale,
                            offset=offset)


class SinusoidalPositionalEncoding(Module):
    r"""Sinusoidal embedding of positions: each value :math:`p` of the
    input becomes ``dims`` features, :math:`\sin(p\,\sigma_i)` then
    :math:`\cos(p\,\sigma_i)` (or cosines first) for ``dims / 2``
    frequencies :math:`\sigma_i` spaced geometrically from ``max_freq``
    down to ``min_freq``, all times ``scale``.

    The frequencies are kept in ``_sigmas`` (float32, not a parameter).

    Args:
        dims (int): features of the embedding; positive and even.
        min_freq (float): the lowest frequency. Default: 0.0001.
        max_freq (float): the highest frequency. Default: 1.
        scale (float, optional): multiplies the embedding. Default: None,
            :math:`\sqrt{2 / \text{dims}}`.
        cos_first (bool): cosines before sines. Default: False.
        full_turns (bool): multiply the frequencies by :math:`2\pi`.
            Default: False.
    """

    def __init__(self, dims: int, min_freq: float = 0.0001, max_freq: float = 1, scale: Optional[float] = None,
                 cos_first: bool = False, full_turns: bool = False) -> None:
        super().__init__()
        if dims <= 0 or dims % 2 != 0:
            raise ValueError(f"[SinusoidalPositionalEncoding] dims must be positive and even but got {dims}.")
        half = dims // 2
        # 1 at the first frequency, 0 at the last (one frequency: max_freq)
        ramp = mx.array([1.0]) if half == 1 else 1 - mx.arange(0, half) / (half - 1)
        lo, hi = math.log(min_freq), math.log(max_freq)
        sigmas = mx.exp(ramp * (hi - lo) + lo)
        if full_turns:
            sigmas = sigmas * (2 * math.pi)
        self._sigmas = sigmas
        self.scale = scale if scale is not None else math.sqrt(2 / dims)
        self.cos_first = cos_first

    def __call__(self, x: mx.array) -> mx.array:
        """Args:
            x (array): positions, any shape.

        Returns:
            array: ``x.shape + (dims,)``.
        """
        y = x[..., None] * self._sigmas
        parts = [mx.cos(y), mx.sin(y)] if self.cos_first else [mx.sin(y), mx.cos(y)]
        y = mx.concatenate(parts, axis=-1)
        if self.scale != 1:
            y = y * self.scale
        return y


def _alibi_slopes(n: int) -> List[float]:
    """Geometric slopes of ``n`` heads: ``2^(-8 (i + 1) / n)`` for a power
    of two; otherwise those of the power of two below ``n`` followed by
    every other slope of the next power of two."""
    if math.log2(n).is_integer():
        first = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [first * first ** i for i in range(n)]
    below = 2 ** math.floor(math.log2(n))
    return _alibi_slopes(below) + _alibi_slopes(2 * below)[0::2][:n - below]


class ALiBi(Module):
    """Attention with linear biases: adds to the attention scores of head
    ``h`` the bias ``-slope_h * |i - j|`` between query position ``i``
    (counted from ``offset``) and key position ``j``. Nothing is learned.
    """

    @staticmethod
    def create_alibi_matrix(q_sequence_length: int, k_sequence_length: int, num_heads: int, offset: int = 0,
                            dtype: mx.Dtype = mx.float32) -> mx.array:
        """The biases of queries ``offset .. q_sequence_length - 1`` and
        keys ``0 .. k_sequence_length - 1``.

        Args:
            q_sequence_length (int): one past the last query position.
            k_sequence_length (int): number of keys.
            num_heads (int): number of heads.
            offset (int): position of the first query. Default: 0.
            dtype (Dtype): dtype of the result. Default: float32.

        Returns:
            array: ``(1, num_heads, q_sequence_length - offset,
            k_sequence_length)``.
        """
        q = mx.arange(offset, q_sequence_length)
        k = mx.arange(0, k_sequence_length)
        distance = -mx.abs(q[:, None] - k[None, :])[None, None]
        slopes = ALiBi.create_alibi_slope(num_heads, dtype=dtype)
        return (distance * slopes).astype(dtype)

    @staticmethod
    def create_alibi_slope(num_heads: int, dtype: mx.Dtype = mx.float32) -> mx.array:
        """The slope of each head.

        Args:
            num_heads (int): number of heads.
            dtype (Dtype): dtype of the result. Default: float32.

        Returns:
            array: ``(num_heads, 1, 1)``.
        """
        return mx.array(_alibi_slopes(num_heads), dtype=dtype)[:, None, None]

    def __call__(self, attention_scores: mx.array, offset: int = 0, mask: Optional[mx.array] = None) -> mx.array:
        """Adds the biases (and ``mask``) to the scores.

        Args:
            attention_scores (array): ``(B, num_heads, L, S)``.
            offset (int): position of the first query. Default: 0.
            mask (array, optional): added to the biases. Default: None.

        Returns:
            array: the biased scores.
        """
        if attention_scores.ndim != 4:
            raise ValueError(f"[ALiBi] Expected attention scores of shape (B, num_heads, L, S) but got an "
                             f"array of shape {tuple(attention_scores.shape)}.")
        _, heads, n_q, n_k = attention_scores.shape
        bias = ALiBi.create_alibi_matrix(n_q + offset, n_k, heads, offset=offset, dtype=attention_scores.dtype)
        if mask is not None:
            bias = bias + mask
        return attention_scores + bias
