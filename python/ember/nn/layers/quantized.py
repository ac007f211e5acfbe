"""Quantized layers: QuantizedLinear, QuantizedEmbedding, QQLinear, and
``quantize``, which swaps a model's layers for their quantized versions.

The weights are held as ``mx.quantize`` writes them (uint32 codes, scales
and, for the affine mode, biases) and are frozen: only a layer's float bias
trains. The products run on ``mx.quantized_matmul`` (``mx.qqmm`` for
QQLinear), so the dequantized weights are never materialized.
"""

import math
from typing import Callable, Optional, Tuple, Union

from ember import core as mx
from ember.nn.layers.base import Module
from ember.utils import tree_map_with_path

_MODE_DEFAULTS = {"affine": (64, 4), "mxfp4": (32, 4), "nvfp4": (16, 4), "mxfp8": (32, 8)}


def _mode_params(mode: str, group_size: Optional[int], bits: Optional[int]) -> Tuple[int, int]:
    """The mode's group size and bits where None was given (ValueError for a
    mode that does not exist)."""
    if mode not in _MODE_DEFAULTS:
        raise ValueError(f"Invalid quantization mode '{mode}'. Valid modes are: {', '.join(_MODE_DEFAULTS)}.")
    gs, b = _MODE_DEFAULTS[mode]
    return group_size or gs, bits or b


def _store(layer: Module, weight: mx.array) -> None:
    """Quantizes ``weight`` into the layer's weight, scales (and biases)."""
    q = mx.quantize(weight, layer.group_size, layer.bits, mode=layer.mode)
    layer.weight, layer.scales = q[0], q[1]
    if len(q) == 3:
        layer.biases = q[2]
    elif "biases" in layer:
        del layer["biases"]


def _product_t(layer: Module, x: mx.array) -> mx.array:
    """``x @ dequantize(layer's weight).T`` (arguments by position: keywords
    cost the binding about 2 us a call, some 6% of the graph building of a
    1B model's decoding step)."""
    return mx.quantized_matmul(x, layer["weight"], layer["scales"], layer.get("biases"), True, layer.group_size,
                               layer.bits, layer.mode)


class QuantizedEmbedding(Module):
    """An embedding table held quantized; rows are dequantized on lookup.

    Args:
        num_embeddings (int): size of the vocabulary.
        dims (int): size of each vector (a multiple of the group size).
        group_size (int, optional): the quantization group size. Default: the
            mode's (64 for affine).
        bits (int, optional): bits per weight. Default: the mode's (4 for affine).
        mode (str): the quantization mode (see ``mx.quantize``). Default: ``"affine"``.
    """

    def __init__(self, num_embeddings: int, dims: int, group_size: Optional[int] = None, bits: Optional[int] = None,
                 mode: str = "affine") -> None:
        super().__init__()
        self.group_size, self.bits = _mode_params(mode, group_size, bits)
        self.mode = mode
        _store(self, mx.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1.0 / dims)))
        self.num_embeddings = num_embeddings
        self.dims = dims
        self.freeze()

    def __call__(self, x: mx.array) -> mx.array:
        if not mx.issubdtype(x.dtype, mx.integer):
            raise ValueError(f"[QuantizedEmbedding] Expected integer indices but got an array of dtype {x.dtype}.")
        shape = x.shape
        flat = x.flatten()
        out = mx.dequantize(self["weight"][flat], scales=self["scales"][flat],
                            biases=self["biases"][flat] if "biases" in self else None,
                            group_size=self.group_size, bits=self.bits, mode=self.mode)
        return out.reshape(*shape, -1)

    def as_linear(self, x: mx.array) -> mx.array:
        """The table as a tied output layer: ``x @ dequantize(weight).T``
        through ``mx.quantized_matmul`` (the logits of a model sharing its
        embedding)."""
        return _product_t(self, x)

    def _extra_repr(self) -> str:
        return (f"{self.num_embeddings}, {self.dims}, group_size={self.group_size}, bits={self.bits}, "
                f"mode={self.mode}")

    @classmethod
    def from_embedding(cls, embedding_layer: Module, group_size: Optional[int] = None, bits: Optional[int] = None,
                       mode: str = "affine") -> "QuantizedEmbedding":
        """A QuantizedEmbedding holding ``embedding_layer``'s table quantized."""
        n, dims = embedding_layer.weight.shape
        ql = cls(n, dims, group_size, bits, mode=mode)
        _store(ql, embedding_layer.weight)
        return ql


class QuantizedLinear(Module):
    """``y = x W^T + b`` with ``W`` held quantized (``mx.quantized_matmul``).

    Args:
        input_dims (int): features of the input (a multiple of the group size).
        output_dims (int): features of the output.
        bias (bool): whether to add a (float, trainable) bias. Default: True.
        group_size (int, optional): the quantization group size. Default: the
            mode's (64 for affine).
        bits (int, optional): bits per weight. Default: the mode's (4 for affine).
        mode (str): the quantization mode (see ``mx.quantize``). Default: ``"affine"``.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True, group_size: Optional[int] = None,
                 bits: Optional[int] = None, mode: str = "affine") -> None:
        super().__init__()
        self.group_size, self.bits = _mode_params(mode, group_size, bits)
        self.mode = mode
        k = math.sqrt(1.0 / input_dims)
        _store(self, mx.random.uniform(low=-k, high=k, shape=(output_dims, input_dims)))
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze()

    def _extra_repr(self) -> str:
        out_dims, packed = self.weight.shape
        return (f"input_dims={packed * 32 // self.bits}, output_dims={out_dims}, bias={'bias' in self}, "
                f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}")

    def __call__(self, x: mx.array) -> mx.array:
        y = _product_t(self, x)
        if "bias" in self:
            y = y + self["bias"]
        return y

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: Optional[int] = None, bits: Optional[int] = None,
                    mode: str = "affine") -> "QuantizedLinear":
        """A QuantizedLinear holding ``linear_layer``'s weight quantized (and
        its bias as it is)."""
        out_dims, in_dims = linear_layer.weight.shape
        ql = cls(in_dims, out_dims, False, group_size, bits, mode=mode)
        _store(ql, linear_layer.weight)
        if "bias" in linear_layer:
            ql.bias = linear_layer.bias
        return ql


class QQLinear(Module):
    """A linear layer (no bias) whose weights and inputs are both quantized
    (``mx.qqmm``; the fp modes). In training mode the weight is kept in
    float (and trains); ``eval()`` quantizes it, ``train()`` dequantizes it.

    Args:
        input_dims (int): features of the input (a multiple of the group size).
        output_dims (int): features of the output.
        group_size (int, optional): the quantization group size. Default: the mode's.
        bits (int, optional): bits per weight. Default: the mode's.
        mode (str): ``"nvfp4"``, ``"mxfp4"`` or ``"mxfp8"``. Default: ``"nvfp4"``.
    """

    def __init__(self, input_dims: int, output_dims: int, group_size: Optional[int] = None, bits: Optional[int] = None,
                 mode: str = "nvfp4") -> None:
        super().__init__()
        self.group_size, self.bits = _mode_params(mode, group_size, bits)
        self.mode = mode
        k = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(low=-k, high=k, shape=(output_dims, input_dims))
        self._quantized = False

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        if self.weight.dtype == mx.uint32:
            in_dims = in_dims * 32 // self.bits
        return (f"input_dims={in_dims}, output_dims={out_dims}, group_size={self.group_size}, bits={self.bits}, "
                f"mode={self.mode}")

    def quantize(self) -> None:
        """Replaces the float weight by its quantized form (and scales)."""
        if not self._quantized:
            self.weight, self.scales = mx.quantize(self.weight, self.group_size, self.bits, mode=self.mode)
            self._quantized = True

    def dequantize(self) -> None:
        """Replaces the quantized weight by its dequantized float form."""
        if self._quantized:
            self.weight = mx.dequantize(self.weight, scales=self.scales, group_size=self.group_size, bits=self.bits,
                                        mode=self.mode)
            del self["scales"]
            self._quantized = False

    def _set_training_mode(self, mode: bool) -> None:
        super()._set_training_mode(mode)
        if self._training:
            self.dequantize()
        else:
            self.quantize()

    def __call__(self, x: mx.array) -> mx.array:
        return mx.qqmm(x, self["weight"], scales=self.get("scales"), group_size=self.group_size, bits=self.bits,
                       mode=self.mode)

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: Optional[int] = None, bits: Optional[int] = None, mode: str = "nvfp4") -> "QQLinear":
        """A QQLinear with ``linear_layer``'s weight (which must have no bias),
        in the same training mode."""
        out_dims, in_dims = linear_layer.weight.shape
        if linear_layer.get("bias") is not None:
            raise NotImplementedError("QQLinear does not support bias yet.")
        ql = cls(in_dims, out_dims, group_size, bits, mode=mode)
        ql.weight = linear_layer.weight
        ql.train(linear_layer.training)
        return ql


def quantize(model: Module, group_size: Optional[int] = None, bits: Optional[int] = None, *, mode: str = "affine",
             quantize_input: bool = False,
             class_predicate: Optional[Callable[[str, Module], Union[bool, dict]]] = None) -> None:
    """Quantizes a model's layers in place: every leaf module for which
    ``class_predicate(path, module)`` holds is replaced by
    ``module.to_quantized(...)``.

    Args:
        model (Module): the model.
        group_size (int, optional): the group size. Default: the mode's.
        bits (int, optional): bits per weight. Default: the mode's.
        mode (str): the quantization mode. Default: ``"affine"``.
        quantize_input (bool): quantize the layers' inputs too (Linear becomes
            QQLinear). Default: False.
        class_predicate (callable, optional): ``(path, module) -> bool or
            dict``; a dict gives that layer's own ``to_quantized`` arguments.
            Default: every leaf that has ``to_quantized``.
    """
    predicate = class_predicate or (lambda _, m: hasattr(m, "to_quantized"))

    def swap(path: str, m: Module) -> Module:
        sel = predicate(path, m)
        if not sel:
            return m
        if not hasattr(m, "to_quantized"):
            raise ValueError(f"Unable to quantize model of type {type(m)}")
        if isinstance(sel, bool):
            kwargs = {"group_size": group_size, "bits": bits, "mode": mode}
            if quantize_input:
                kwargs["quantize_input"] = True
            return m.to_quantized(**kwargs)
        if isinstance(sel, dict):
            kwargs = dict(sel)
            if not kwargs.get("quantize_input", True):
                kwargs.pop("quantize_input")
            return m.to_quantized(**kwargs)
        raise ValueError("``class_predicate`` must return a bool or a dict of parameters to pass to ``to_quantized``")

    leaves = tree_map_with_path(swap, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)
