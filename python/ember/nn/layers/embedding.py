"""Embedding: a lookup table of vectors."""

import math
from typing import Optional

from ember import core as mx
from ember.nn.layers.base import Module


class Embedding(Module):
    r"""Maps integer indices to rows of ``weight``, shape
    ``(num_embeddings, dims)``, initialised from
    :math:`\mathcal{N}(0, 1/\text{dims})`.

    Args:
        num_embeddings (int): size of the vocabulary.
        dims (int): size of each vector.
    """

    def __init__(self, num_embeddings: int, dims: int) -> None:
        super().__init__()
        self.weight = mx.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1.0 / dims))

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, {self.weight.shape[1]}"

    def __call__(self, x: mx.array) -> mx.array:
        if not mx.issubdtype(x.dtype, mx.integer):
            raise ValueError(f"[Embedding] Expected integer indices but got an array of dtype {x.dtype}.")
        return self.weight[x]

    def as_linear(self, x: mx.array) -> mx.array:
        """Uses the table as a linear layer tied to the embedding: ``x @
        weight.T`` (the logits of an output layer sharing the weights)."""
        if x.ndim < 1 or x.shape[-1] != self.weight.shape[1]:
            raise ValueError(f"[Embedding.as_linear] Expected the input to have {self.weight.shape[1]} "
                             f"features in its last dimension but got an array of shape {tuple(x.shape)}.")
        return x @ self.weight.T

    def to_quantized(self, group_size: Optional[int] = None, bits: Optional[int] = None, mode: str = "affine",
                     quantize_input: bool = False) -> Module:
        """This table quantized, as a QuantizedEmbedding (``quantize_input``
        is not supported: ValueError)."""
        if quantize_input:
            raise ValueError("Quantized input is not supported.")
        from ember.nn.layers.quantized import QuantizedEmbedding
        return QuantizedEmbedding.from_embedding(self, group_size, bits, mode)
