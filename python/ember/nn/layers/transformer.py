"""Attention and the transformer: MultiHeadAttention, the encoder and
decoder layers and stacks, and Transformer.

Attention runs through ``mx.fast.scaled_dot_product_attention``; a mask
(additive, boolean or ``"causal"``) is handed to it unchanged. The stacks
can recompute each layer in the backward pass (``checkpoint=True``,
:func:`ember.nn.utils.checkpoint` over ``ember.core.checkpoint``).
"""

import math
from typing import Any, Callable, Optional, Union

from ember import core as mx
from ember.nn.layers.activations import relu
from ember.nn.layers.base import Module
from ember.nn.layers.dropout import Dropout
from ember.nn.layers.linear import Linear
from ember.nn.layers.normalization import LayerNorm


def _layer_call(layer: Module, checkpoint: bool) -> Callable:
    """The layer, or it under gradient checkpointing (``ember.nn.utils``
    imports the layers' base, so it is imported here, at call time)."""
    if not checkpoint:
        return layer
    from ember.nn.utils import checkpoint as ck
    return ck(layer)


def _shapes(*arrays: mx.array) -> str:
    return ", ".join(str(tuple(a.shape)) for a in arrays)


class MultiHeadAttention(Module):
    r"""Scaled dot-product attention with ``num_heads`` heads.

    Queries, keys and values are projected (``query_proj``, ``key_proj``,
    ``value_proj``), split into heads along the features, attended with
    the scale :math:`1/\sqrt{d}` (``d = dims / num_heads``), joined again
    and projected by ``out_proj``. The projections are :class:`Linear`
    layers without bias by default.

    Args:
        dims (int): features of the projected queries and keys (and the
            default of every other size); a multiple of ``num_heads``.
        num_heads (int): number of heads.
        query_input_dims (int, optional): features of the queries.
            Default: None, ``dims``.
        key_input_dims (int, optional): features of the keys. Default:
            None, ``dims``.
        value_input_dims (int, optional): features of the values. Default:
            None, ``key_input_dims``.
        value_dims (int, optional): features of the projected values; a
            multiple of ``num_heads``. Default: None, ``dims``.
        value_output_dims (int, optional): features of the output.
            Default: None, ``dims``.
        bias (bool): whether the projections add a bias. Default: False.
    """

    def __init__(self, dims: int, num_heads: int, query_input_dims: Optional[int] = None,
                 key_input_dims: Optional[int] = None, value_input_dims: Optional[int] = None,
                 value_dims: Optional[int] = None, value_output_dims: Optional[int] = None, bias: bool = False) -> None:
        super().__init__()
        if dims % num_heads != 0:
            raise ValueError(f"[MultiHeadAttention] The feature dimensions should be divisible by the number "
                             f"of heads ({dims} % {num_heads}) != 0")
        query_input_dims = query_input_dims or dims
        key_input_dims = key_input_dims or dims
        value_input_dims = value_input_dims or key_input_dims
        value_dims = value_dims or dims
        value_output_dims = value_output_dims or dims
        self.num_heads = num_heads
        self.query_proj = Linear(query_input_dims, dims, bias=bias)
        self.key_proj = Linear(key_input_dims, dims, bias=bias)
        self.value_proj = Linear(value_input_dims, value_dims, bias=bias)
        self.out_proj = Linear(value_dims, value_output_dims, bias=bias)

    def _check(self, queries: mx.array, keys: mx.array, values: mx.array) -> None:
        dims = [p.weight.shape[1] for p in (self.query_proj, self.key_proj, self.value_proj)]
        ok = all(a.ndim == 3 and a.shape[-1] == d for a, d in zip((queries, keys, values), dims))
        ok = ok and keys.shape[:2] == values.shape[:2] and queries.shape[0] == keys.shape[0]
        if not ok:
            raise ValueError(f"[MultiHeadAttention] Expected queries (B, L, {dims[0]}), keys (B, S, {dims[1]}) "
                             f"and values (B, S, {dims[2]}) but got arrays of shapes "
                             f"{_shapes(queries, keys, values)}.")
        value_dims = self.value_proj.weight.shape[0]
        if value_dims % self.num_heads != 0:
            raise ValueError(f"[MultiHeadAttention] The value dimensions should be divisible by the number "
                             f"of heads ({value_dims} % {self.num_heads}) != 0")

    def _check_mask(self, mask: Optional[Union[mx.array, str]], queries: mx.array, keys: mx.array) -> None:
        if mask is None or isinstance(mask, str):
            return
        scores = (queries.shape[0], self.num_heads, queries.shape[1], keys.shape[1])
        shape = tuple(mask.shape)
        if len(shape) > 4 or any(m not in (1, s) for m, s in zip(shape[::-1], scores[::-1])):
            raise ValueError(f"[MultiHeadAttention] The mask of shape {shape} does not broadcast to the "
                             f"scores' shape (B, num_heads, L, S) = {scores}.")

    def _heads(self, x: mx.array) -> mx.array:
        """``(B, L, F)`` -> ``(B, num_heads, L, F / num_heads)``."""
        b, n, f = x.shape
        return x.reshape(b, n, self.num_heads, f // self.num_heads).transpose(0, 2, 1, 3)

    def __call__(self, queries: mx.array, keys: mx.array, values: mx.array,
                 mask: Optional[Union[mx.array, str]] = None) -> mx.array:
        """Attends the queries to the keys and values.

        Args:
            queries (array): ``(B, L, query_input_dims)``.
            keys (array): ``(B, S, key_input_dims)``.
            values (array): ``(B, S, value_input_dims)``.
            mask (array or str, optional): an additive mask, a boolean mask
                (True: attend) or ``"causal"``; arrays broadcast to ``(B,
                num_heads, L, S)``. Default: None.

        Returns:
            array: ``(B, L, value_output_dims)``.
        """
        self._check(queries, keys, values)
        self._check_mask(mask, queries, keys)
        q = self._heads(self.query_proj(queries))
        k = self._heads(self.key_proj(keys))
        v = self._heads(self.value_proj(values))
        scale = math.sqrt(1.0 / q.shape[-1])
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask=mask)
        b, _, n, _ = out.shape
        return self.out_proj(out.transpose(0, 2, 1, 3).reshape(b, n, -1))

    @staticmethod
    def create_additive_causal_mask(N: int, dtype: mx.Dtype = mx.float32) -> mx.array:
        """An ``(N, N)`` additive mask that hides the later positions: 0
        on and below the diagonal, the dtype's lowest finite value above
        it.

        Args:
            N (int): the sequence length.
            dtype (Dtype): a floating dtype. Default: float32.

        Returns:
            array: the mask.
        """
        idx = mx.arange(N)
        later = idx[:, None] < idx[None, :]
        return later.astype(dtype) * mx.finfo(dtype).min


class TransformerEncoderLayer(Module):
    """One encoder layer: self-attention, then a two-layer MLP, each a
    residual branch with a :class:`LayerNorm` (before the branch with
    ``norm_first``, after the sum otherwise) and dropout.

    Args:
        dims (int): features of the input.
        num_heads (int): heads of the attention.
        mlp_dims (int, optional): hidden features of the MLP. Default: None,
            ``4 * dims``.
        dropout (float): dropout probability after the attention and after
            the MLP's activation. Default: 0.0.
        activation (Callable): the MLP's activation. Default: :func:`relu`.
        norm_first (bool): normalise before each branch. Default: True.
    """

    def __init__(self, dims: int, num_heads: int, mlp_dims: Optional[int] = None, dropout: float = 0.0,
                 activation: Callable[[Any], Any] = relu, norm_first: bool = True) -> None:
        super().__init__()
        mlp_dims = mlp_dims or 4 * dims
        self.attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def _mlp(self, x: mx.array) -> mx.array:
        return self.linear2(self.dropout2(self.activation(self.linear1(x))))

    def __call__(self, x: mx.array, mask: Optional[Union[mx.array, str]]) -> mx.array:
        """Args:
            x (array): ``(B, L, dims)``.
            mask (array or str): the attention mask, or None.

        Returns:
            array: ``(B, L, dims)``.
        """
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.attention(y, y, y, mask))
            return x + self._mlp(self.ln2(x))
        x = self.ln1(x + self.dropout1(self.attention(x, x, x, mask)))
        return self.ln2(x + self._mlp(x))


def _stack_layers(stack: Module, layer: type, num_layers: int, dims: int, num_heads: int, mlp_dims: Optional[int],
                  dropout: float, activation: Callable[[mx.array], mx.array], norm_first: bool,
                  checkpoint: bool) -> None:
    """The encoder's or decoder's ``layers``, final ``ln`` and ``checkpoint``."""
    stack.layers = [layer(dims, num_heads, mlp_dims, dropout, activation, norm_first) for _ in range(num_layers)]
    stack.ln = LayerNorm(dims)
    stack.checkpoint = checkpoint


class TransformerEncoder(Module):
    """``num_layers`` :class:`TransformerEncoderLayer` followed by a
    :class:`LayerNorm`.

    Args:
        num_layers (int): number of layers.
        dims (int): features of the input.
        num_heads (int): heads of each attention.
        mlp_dims (int, optional): hidden features of each MLP. Default:
            None, ``4 * dims``.
        dropout (float): dropout probability. Default: 0.0.
        activation (Callable): the MLPs' activation. Default: :func:`relu`.
        norm_first (bool): normalise before each branch. Default: True.
        checkpoint (bool): recompute each layer in the backward pass
            instead of keeping its intermediate values. Default: False.
    """

    def __init__(self, num_layers: int, dims: int, num_heads: int, mlp_dims: Optional[int] = None,
                 dropout: float = 0.0, activation: Callable[[mx.array], mx.array] = relu,
                 norm_first: bool = True, checkpoint: bool = False) -> None:
        super().__init__()
        _stack_layers(self, TransformerEncoderLayer, num_layers, dims, num_heads, mlp_dims, dropout, activation,
                      norm_first, checkpoint)

    def __call__(self, x: mx.array, mask: Optional[Union[mx.array, str]]) -> mx.array:
        """Args:
            x (array): ``(B, L, dims)``.
            mask (array or str): the attention mask, or None.

        Returns:
            array: ``(B, L, dims)``.
        """
        for layer in self.layers:
            x = _layer_call(layer, self.checkpoint)(x, mask)
        return self.ln(x)


class TransformerDecoderLayer(Module):
    """One decoder layer: self-attention, attention to the encoder's
    output (``memory``), then a two-layer MLP, each a residual branch with
    a :class:`LayerNorm` and dropout.

    Args:
        dims (int): features of the input and of the memory.
        num_heads (int): heads of the attentions.
        mlp_dims (int, optional): hidden features of the MLP. Default: None,
            ``4 * dims``.
        dropout (float): dropout probability after each attention and after
            the MLP's activation. Default: 0.0.
        activation (Callable): the MLP's activation. Default: :func:`relu`.
        norm_first (bool): normalise before each branch. Default: True.
    """

    def __init__(self, dims: int, num_heads: int, mlp_dims: Optional[int] = None, dropout: float = 0.0,
                 activation: Callable[[Any], Any] = relu, norm_first: bool = True) -> None:
        super().__init__()
        mlp_dims = mlp_dims or 4 * dims
        self.self_attention = MultiHeadAttention(dims, num_heads)
        self.cross_attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.ln3 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def _mlp(self, x: mx.array) -> mx.array:
        return self.linear2(self.dropout3(self.activation(self.linear1(x))))

    def __call__(self, x: mx.array, memory: mx.array, x_mask: Optional[Union[mx.array, str]],
                 memory_mask: Optional[Union[mx.array, str]]) -> mx.array:
        """Args:
            x (array): ``(B, L, dims)``.
            memory (array): the encoder's output, ``(B, S, dims)``.
            x_mask (array or str): the self-attention mask, or None.
            memory_mask (array or str): the mask of the attention to the
                memory, or None.

        Returns:
            array: ``(B, L, dims)``.
        """
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.self_attention(y, y, y, x_mask))
            y = self.ln2(x)
            x = x + self.dropout2(self.cross_attention(y, memory, memory, memory_mask))
            return x + self._mlp(self.ln3(x))
        x = self.ln1(x + self.dropout1(self.self_attention(x, x, x, x_mask)))
        x = self.ln2(x + self.dropout2(self.cross_attention(x, memory, memory, memory_mask)))
        return self.ln3(x + self._mlp(x))


class TransformerDecoder(Module):
    """``num_layers`` :class:`TransformerDecoderLayer` followed by a
    :class:`LayerNorm`.

    Args:
        num_layers (int): number of layers.
        dims (int): features of the input and of the memory.
        num_heads (int): heads of each attention.
        mlp_dims (int, optional): hidden features of each MLP. Default:
            None, ``4 * dims``.
        dropout (float): dropout probability. Default: 0.0.
        activation (Callable): the MLPs' activation. Default: :func:`relu`.
        norm_first (bool): normalise before each branch. Default: True.
        checkpoint (bool): recompute each layer in the backward pass
            instead of keeping its intermediate values. Default: False.
    """

    def __init__(self, num_layers: int, dims: int, num_heads: int, mlp_dims: Optional[int] = None,
                 dropout: float = 0.0, activation: Callable[[mx.array], mx.array] = relu,
                 norm_first: bool = True, checkpoint: bool = False) -> None:
        super().__init__()
        _stack_layers(self, TransformerDecoderLayer, num_layers, dims, num_heads, mlp_dims, dropout, activation,
                      norm_first, checkpoint)

    def __call__(self, x: mx.array, memory: mx.array, x_mask: Optional[Union[mx.array, str]],
                 memory_mask: Optional[Union[mx.array, str]]) -> mx.array:
        """Args:
            x (array): ``(B, L, dims)``.
            memory (array): the encoder's output, ``(B, S, dims)``.
            x_mask (array or str): the self-attention mask, or None.
            memory_mask (array or str): the mask of the attention to the
                memory, or None.

        Returns:
            array: ``(B, L, dims)``.
        """
        for layer in self.layers:
            x = _layer_call(layer, self.checkpoint)(x, memory, x_mask, memory_mask)
        return self.ln(x)


class Transformer(Module):
    """Encoder-decoder transformer ("Attention Is All You Need"): the
    encoder reads ``src``, the decoder reads ``tgt`` and attends to the
    encoder's output.

    Args:
        dims (int): features of the inputs. Default: 512.
        num_heads (int): heads of each attention. Default: 8.
        num_encoder_layers (int): encoder layers. Default: 6.
        num_decoder_layers (int): decoder layers. Default: 6.
        mlp_dims (int, optional): hidden features of each MLP. Default:
            None, ``4 * dims``.
        dropout (float): dropout probability after each attention and each
            MLP activation. Default: 0.0.
        activation (Callable): the MLPs' activation. Default: :func:`relu`.
        custom_encoder (Module, optional): used instead of a
            :class:`TransformerEncoder`; called as ``encoder(src,
            src_mask)``. Default: None.
        custom_decoder (Module, optional): used instead of a
            :class:`TransformerDecoder`; called as ``decoder(tgt, memory,
            tgt_mask, memory_mask)``. Default: None.
        norm_first (bool): normalise before each branch. Default: True.
        checkpoint (bool): recompute each layer in the backward pass.
            Default: False.
    """

    def __init__(self, dims: int = 512, num_heads: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, mlp_dims: Optional[int] = None, dropout: float = 0.0,
                 activation: Callable[[Any], Any] = relu, custom_encoder: Optional[Any] = None,
                 custom_decoder: Optional[Any] = None, norm_first: bool = True, checkpoint: bool = False) -> None:
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(num_encoder_layers, dims, num_heads, mlp_dims, dropout, activation,
                                              norm_first, checkpoint)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(num_decoder_layers, dims, num_heads, mlp_dims, dropout, activation,
                                              norm_first, checkpoint)

    def __call__(self, src: mx.array, tgt: mx.array, src_mask: Optional[Union[mx.array, str]],
                 tgt_mask: Optional[Union[mx.array, str]], memory_mask: Optional[Union[mx.array, str]]) -> mx.array:
        """Args:
            src (array): the encoder's input, ``(B, S, dims)``.
            tgt (array): the decoder's input, ``(B, L, dims)``.
            src_mask (array or str): the encoder's self-attention mask, or
                None.
            tgt_mask (array or str): the decoder's self-attention mask, or
                None.
            memory_mask (array or str): the mask of the decoder's attention
                to the encoder's output, or None.

        Returns:
            array: the decoder's output, ``(B, L, dims)``.
        """
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)
