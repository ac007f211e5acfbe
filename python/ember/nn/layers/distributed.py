"""Linear layers sharded over a distributed group (``mlx.nn.layers.distributed``).

A fully connected layer ``y = x W^T + b`` can be split over the ``N``
processes of a group in two ways. *All-to-sharded*: every process holds
``output_dims / N`` rows of ``W`` (and of ``b``), takes the whole input and
produces its slice of the output; the gradient of the input is summed over
the group. *Sharded-to-all*: every process holds ``input_dims / N`` columns
of ``W``, takes its slice of the input, and the partial products are summed
over the group (then ``b`` is added). ``segments`` describes a fused weight
(a QKV projection: 3 segments, or the split points): each segment is
sharded on its own so that every process gets its part of each.
``QuantizedAllToShardedLinear`` and ``QuantizedShardedToAllLinear`` do the
same with the weight held as ``mx.quantize`` writes it: the packed codes,
scales and biases are sharded along the same axis as a float weight would
be (by rows, or by columns, which must then split on whole quantization
groups), and the products run on ``mx.quantized_matmul``.

``FullyShardedModule`` shards every parameter of a module on axis 0
instead, gathering them for each call (fully sharded data parallelism). On
the singleton group every layer computes what ``nn.Linear`` computes.
"""
from typing import Any, Callable, List, Optional, Tuple, Union

import math

from ember import core as mx
from ember.nn.layers.base import Module
from ember.nn.layers.linear import Linear
from ember.nn.layers.quantized import _product_t
from ember.utils import tree_flatten, tree_map_with_path, tree_unflatten

_SHARDINGS = ("all-to-sharded", "sharded-to-all")


def sum_gradients(group: "mx.distributed.Group") -> Callable[[mx.array], mx.array]:
    """A function that is the identity forward and sums its cotangent over
    ``group`` backward.

    Args:
        group (Group): the distributed group.

    Returns:
        Callable: ``f(x) -> x`` whose vjp all-sums the cotangent.
    """
    if group.size() == 1:
        return lambda x: x

    @mx.custom_function
    def identity(x: mx.array) -> mx.array:
        return x

    @identity.vjp  # type: ignore[no-redef]
    def identity(x: mx.array, cotangent: mx.array, output: mx.array) -> mx.array:
        return mx.distributed.all_sum(cotangent, group=group)

    return identity


def _segments(weight: mx.array, segments: Union[int, list], axis: int) -> List[mx.array]:
    """``weight`` split along ``axis`` into segments: a count, split
    indices, or fractions of the axis' length."""
    if isinstance(segments, int):
        return mx.split(weight, segments, axis=axis)
    segments = list(segments)
    if segments and not isinstance(segments[0], int):
        n = weight.shape[axis]
        segments = [int(s * n) for s in segments]
    return mx.split(weight, segments, axis=axis)


def _shard_array(weight: mx.array, axis: int, segments: Union[int, list],
                 group: "mx.distributed.Group") -> mx.array:
    n, rank = group.size(), group.rank()
    parts = []
    for seg in _segments(weight, segments, axis):
        if seg.shape[axis] % n:
            raise ValueError(f"[shard] Cannot shard a segment of size {seg.shape[axis]} on axis {axis} of a "
                             f"weight of shape {tuple(weight.shape)} over {n} processes.")
        parts.append(mx.split(seg, n, axis=axis)[rank])
    return mx.contiguous(mx.concatenate(parts, axis=axis))


def _predicate(sharding: Optional[str], segments: Union[int, list]) -> Callable[[str, mx.array], Any]:
    if sharding == "all-to-sharded":
        # rows of a weight (its second-to-last axis), the bias whole
        return lambda path, w: (-1, segments) if path.endswith("bias") else (max(w.ndim - 2, 0), segments)
    # columns of a weight; the bias stays whole
    return lambda path, w: None if path.endswith("bias") else (-1, segments)


def _check_sharding(sharding: str) -> None:
    if sharding not in _SHARDINGS:
        raise ValueError(f"Sharding type sharding={sharding!r} not supported, choose one of "
                         "'all-to-sharded' or 'sharded-to-all'")


def _sharded_parameters(parameters: Any, predicate: Callable[[str, mx.array], Any],
                        group: Optional["mx.distributed.Group"]) -> Any:
    group = group or mx.distributed.init()

    def shard(path: str, leaf: Any) -> Any:
        if not isinstance(leaf, mx.array):
            return leaf
        how = predicate(path, leaf)
        if how is None:
            return leaf
        if isinstance(how, int):
            axis, segments = how, 1
        elif isinstance(how, tuple) and len(how) == 2:
            axis, segments = how
        else:
            raise ValueError("[shard_inplace] The sharding function should return None, an axis (int) or "
                             f"a tuple (axis, segments), got {how!r}.")
        return _shard_array(leaf, axis, segments, group)

    return tree_map_with_path(shard, parameters)


def shard_inplace(module: Module, sharding: Union[str, Callable], *, segments: Union[int, list] = 1,
                  group: Optional["mx.distributed.Group"] = None) -> None:
    """Replace ``module``'s parameters by this process's shard of them.

    The module's computation is unchanged (it must do the communication
    itself).

    Args:
        module (Module): the module whose parameters are sharded.
        sharding (str or Callable): ``"all-to-sharded"`` (weights by rows,
            biases too), ``"sharded-to-all"`` (weights by columns, biases
            whole), or ``fn(path, array)`` returning ``None`` (keep), an axis,
            or ``(axis, segments)``.
        segments (int or list): the segments of a fused weight, for a string
            ``sharding``. Default: 1.
        group (Group, optional): the group. Default: the global group.

    Returns:
        None
    """
    if isinstance(sharding, str):
        _check_sharding(sharding)
        sharding = _predicate(sharding, segments)
    module.update(_sharded_parameters(module.parameters(), sharding, group))


def shard_linear(module: Module, sharding: str, *, segments: Union[int, list] = 1,
                 group: Optional["mx.distributed.Group"] = None) -> Module:
    """A sharded copy of a linear layer that also communicates.

    An ``nn.Linear`` becomes an :class:`AllToShardedLinear` or a
    :class:`ShardedToAllLinear`; any other layer is taken for a quantized
    linear layer (``nn.QuantizedLinear``: ``weight``, ``scales``,
    ``group_size``, ``bits``, ``mode``) and becomes a
    :class:`QuantizedAllToShardedLinear` or a
    :class:`QuantizedShardedToAllLinear`.

    Args:
        module (Module): the ``nn.Linear`` or ``nn.QuantizedLinear`` (left
            unchanged).
        sharding (str): ``"all-to-sharded"`` or ``"sharded-to-all"``.
        segments (int or list): the segments of a fused weight. Default: 1.
        group (Group, optional): the group. Default: the global group.

    Returns:
        Module: the new layer.

    Raises:
        ValueError: ``sharding`` is neither of the two, or the weight does
            not split over the group.
        AttributeError: ``module`` is neither a linear nor a quantized linear
            layer.
    """
    _check_sharding(sharding)
    if isinstance(module, Linear):
        cls = AllToShardedLinear if sharding == "all-to-sharded" else ShardedToAllLinear
        return cls.from_linear(module, segments=segments, group=group)
    qcls = QuantizedAllToShardedLinear if sharding == "all-to-sharded" else QuantizedShardedToAllLinear
    return qcls.from_quantized_linear(module, segments=segments, group=group)


class _ShardedLinear(Module):
    def __init__(self, input_dims: int, output_dims: int, bias: bool, group: Optional["mx.distributed.Group"],
                 sharded_axis: int) -> None:
        super().__init__()
        self.group = group or mx.distributed.init()
        n = self.group.size()
        dims = [output_dims, input_dims]
        if dims[sharded_axis] % n:
            what = "output" if sharded_axis == 0 else "input"
            raise ValueError(f"[{type(self).__name__}] Cannot shard the {what} of size {dims[sharded_axis]} "
                             f"across {n} devices.")
        dims[sharded_axis] //= n
        k = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(low=-k, high=k, shape=tuple(dims))
        if bias:
            self.bias = mx.random.uniform(low=-k, high=k, shape=(dims[0],))
        self._sharded_axis = sharded_axis

    def _extra_repr(self) -> str:
        out, inp = self.weight.shape
        n = self.group.size()
        if self._sharded_axis == 0:
            out *= n
        else:
            inp *= n
        return f"input_dims={inp}, output_dims={out}, bias={'bias' in self}"

    @classmethod
    def from_linear(cls, linear_layer: Module, *, segments: Union[int, list] = 1,
                    group: Optional["mx.distributed.Group"] = None) -> Module:
        """The sharded layer holding this process's part of ``linear_layer``.

        Args:
            linear_layer (Linear): the layer to shard.
            segments (int or list): the segments of a fused weight. Default: 1.
            group (Group, optional): the group. Default: the global group.

        Returns:
            Module: the sharded layer.
        """
        group = group or mx.distributed.init()
        out, inp = linear_layer.weight.shape
        # the subclasses, the only classes this is called on, fix sharded_axis
        layer = cls(inp, out, bias="bias" in linear_layer, group=group)  # type: ignore[call-arg]
        sharding = "all-to-sharded" if cls is AllToShardedLinear else "sharded-to-all"
        layer.update(_sharded_parameters(linear_layer.parameters(), _predicate(sharding, segments), group))
        return layer


class AllToShardedLinear(_ShardedLinear):
    """A linear layer whose output is sharded over a group: this process
    holds ``output_dims / N`` rows of the weight and computes that slice of
    the output from the whole input; the input's gradient is summed over the
    group.

    Args:
        input_dims (int): features of the input.
        output_dims (int): features of the whole output.
        bias (bool): whether to add a bias. Default: True.
        group (Group, optional): the group. Default: the global group.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group: Optional["mx.distributed.Group"] = None) -> None:
        super().__init__(input_dims, output_dims, bias, group, sharded_axis=0)

    def __call__(self, x: mx.array) -> mx.array:
        x = sum_gradients(self.group)(x)
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T


class ShardedToAllLinear(_ShardedLinear):
    """A linear layer whose input is sharded over a group: this process
    holds ``input_dims / N`` columns of the weight, multiplies its slice of
    the input, and the partial results are summed over the group before the
    bias is added.

    Args:
        input_dims (int): features of the whole input.
        output_dims (int): features of the output.
        bias (bool): whether to add a bias. Default: True.
        group (Group, optional): the group. Default: the global group.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group: Optional["mx.distributed.Group"] = None) -> None:
        super().__init__(input_dims, output_dims, bias, group, sharded_axis=1)

    def __call__(self, x: mx.array) -> mx.array:
        y = mx.distributed.all_sum(x @ self["weight"].T, group=self.group)
        if "bias" in self:
            y = y + self["bias"]
        return y


class _QuantizedShardedLinear(Module):
    """What the two quantized sharded layers share: the quantized weight of
    this process's part, the repr of the whole layer, frozen parameters and
    ``from_quantized_linear``."""

    _sharding: Optional[str] = None  # set by the subclasses

    def __init__(self, input_dims: int, output_dims: int, bias: bool, group_size: int, bits: int, mode: str,
                 group: Optional["mx.distributed.Group"], sharded_axis: int) -> None:
        super().__init__()
        self.group_size, self.bits, self.mode = group_size, bits, mode
        self.group = group or mx.distributed.init()
        n = self.group.size()
        dims = [output_dims, input_dims]
        if dims[sharded_axis] % n:
            what = "output" if sharded_axis == 0 else "input"
            raise ValueError(f"[{type(self).__name__}] Cannot shard the {what} of size {dims[sharded_axis]} "
                             f"across {n} devices.")
        dims[sharded_axis] //= n
        k = math.sqrt(1.0 / input_dims)
        q = mx.quantize(mx.random.uniform(low=-k, high=k, shape=tuple(dims)), group_size, bits, mode=mode)
        self.weight, self.scales = q[0], q[1]
        if len(q) == 3:
            self.biases = q[2]
        if bias:
            self.bias = mx.zeros((dims[0],))
        self._sharded_axis = sharded_axis
        self.freeze()

    def unfreeze(self, *args: Any, **kwargs: Any) -> Module:
        """Unfreeze the submodules as ``Module.unfreeze`` does; the layer's own
        parameters (the quantized weight and the bias) stay frozen.

        Args:
            *args: passed to ``Module.unfreeze``.
            **kwargs: passed to ``Module.unfreeze`` (``recurse``, ``keys``,
                ``strict``).

        Returns:
            Module: the layer.
        """
        super().unfreeze(*args, **kwargs)
        self.freeze(recurse=False)
        return self

    def _extra_repr(self) -> str:
        out, packed = self.weight.shape
        inp = packed * 32 // self.bits
        n = self.group.size()
        if self._sharded_axis == 0:
            out *= n
        else:
            inp *= n
        return (f"input_dims={inp}, output_dims={out}, bias={'bias' in self}, group_size={self.group_size}, "
                f"bits={self.bits}, mode={self.mode}")

    def _product(self, x: mx.array) -> mx.array:
        return _product_t(self, x)

    @classmethod
    def from_quantized_linear(cls, quantized_linear_layer: Module, *, segments: Union[int, list] = 1,
                              group: Optional["mx.distributed.Group"] = None) -> Module:
        """The sharded layer holding this process's part of a quantized
        linear layer (its packed weight, scales, biases and bias), with its
        group size, bits and mode.

        Args:
            quantized_linear_layer (QuantizedLinear): the layer to shard (left
                unchanged).
            segments (int or list): the segments of a fused weight. Default: 1.
            group (Group, optional): the group. Default: the global group.

        Returns:
            Module: the sharded layer.

        Raises:
            AttributeError: the layer has no quantization ``bits`` (it is not
                a quantized linear layer).
            ValueError: the weight does not split over the group.
        """
        for attr in ("bits", "group_size"):
            if not hasattr(quantized_linear_layer, attr):
                raise AttributeError(f"[{cls.__name__}.from_quantized_linear] Expected a quantized linear layer, "
                                     f"but {type(quantized_linear_layer).__name__} has no attribute '{attr}'.")
        group = group or mx.distributed.init()
        out, packed = quantized_linear_layer.weight.shape
        bits = quantized_linear_layer.bits
        # the subclasses, the only classes this is called on, fix sharded_axis
        layer = cls(packed * 32 // bits, out, "bias" in quantized_linear_layer,  # type: ignore[call-arg]
                    group_size=quantized_linear_layer.group_size, bits=bits,
                    mode=getattr(quantized_linear_layer, "mode", "affine"), group=group)
        layer.update(_sharded_parameters(quantized_linear_layer.parameters(), _predicate(cls._sharding, segments),
                                         group))
        return layer


class QuantizedAllToShardedLinear(_QuantizedShardedLinear):
    """The quantized :class:`AllToShardedLinear`: this process holds
    ``output_dims / N`` rows of the quantized weight (codes, scales and
    biases) and of the bias, and computes that slice of the output from the
    whole input with ``mx.quantized_matmul``; the input's gradient is summed
    over the group. As in ``nn.QuantizedLinear`` the parameters are frozen
    (``unfreeze`` leaves them so).

    Args:
        input_dims (int): features of the input (a multiple of ``group_size``).
        output_dims (int): features of the whole output (a multiple of the
            group's size).
        bias (bool): whether to add a bias. Default: True.
        group_size (int): the quantization group size. Default: 64.
        bits (int): bits per weight. Default: 4.
        mode (str): the quantization mode (see ``mx.quantize``). Default:
            ``"affine"``.
        group (Group, optional): the group. Default: the global group.

    Raises:
        ValueError: ``output_dims`` does not divide over the group, or the
            quantization parameters are invalid.
    """

    _sharding = "all-to-sharded"

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True, group_size: int = 64, bits: int = 4,
                 mode: str = "affine", group: Optional["mx.distributed.Group"] = None) -> None:
        super().__init__(input_dims, output_dims, bias, group_size, bits, mode, group, sharded_axis=0)

    def __call__(self, x: mx.array) -> mx.array:
        y = self._product(sum_gradients(self.group)(x))
        if "bias" in self:
            y = y + self["bias"]
        return y


class QuantizedShardedToAllLinear(_QuantizedShardedLinear):
    """The quantized :class:`ShardedToAllLinear`: this process holds
    ``input_dims / N`` columns of the quantized weight (whole quantization
    groups: codes, scales and biases), multiplies its slice of the input with
    ``mx.quantized_matmul``, and the partial results are summed over the
    group before the bias is added; every process gets the whole output. As
    in ``nn.QuantizedLinear`` the parameters are frozen (``unfreeze`` leaves
    them so).

    Args:
        input_dims (int): features of the whole input (``input_dims / N`` a
            multiple of ``group_size``).
        output_dims (int): features of the output.
        bias (bool): whether to add a bias. Default: True.
        group_size (int): the quantization group size. Default: 64.
        bits (int): bits per weight. Default: 4.
        mode (str): the quantization mode (see ``mx.quantize``). Default:
            ``"affine"``.
        group (Group, optional): the group. Default: the global group.

    Raises:
        ValueError: ``input_dims`` does not divide over the group, or the
            quantization parameters are invalid.
    """

    _sharding = "sharded-to-all"

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True, group_size: int = 64, bits: int = 4,
                 mode: str = "affine", group: Optional["mx.distributed.Group"] = None) -> None:
        super().__init__(input_dims, output_dims, bias, group_size, bits, mode, group, sharded_axis=1)

    def __call__(self, x: mx.array) -> mx.array:
        y = mx.distributed.all_sum(self._product(x), group=self.group)
        if "bias" in self:
            y = y + self["bias"]
        return y


def _shardable(module: Module, key: str, value: Any) -> bool:
    """Parameters to shard: the ordinary ones, but not those of modules
    already sharded on their own."""
    return not isinstance(value, FullyShardedModule) and Module.valid_parameter_filter(module, key, value)


def _gather_function(group: "mx.distributed.Group", full_shapes: List[Tuple[int, ...]],
                     compute_dtype: Optional["mx.Dtype"]) -> Callable[[List[mx.array]], List[mx.array]]:
    """``shards -> full parameters`` with one all_gather for all of them; its
    vjp reduce-scatters the cotangents and averages them over the group (each
    process trains on its own data)."""
    n = group.size()

    def cast(x: mx.array, dtype: Optional["mx.Dtype"]) -> mx.array:
        return x if dtype is None or x.dtype == dtype else x.astype(dtype)

    @mx.custom_function
    def gather(shards: List[mx.array]) -> List[mx.array]:
        # every shard flattened, side by side: rank k's row k of the gathered block
        flat = [cast(s.reshape(1, -1), compute_dtype) for s in shards]
        full = mx.distributed.all_gather(mx.concatenate(flat, axis=1), group=group)  # (n, sum rows_i*k_i)
        out, start = [], 0
        for s, shape in zip(shards, full_shapes):
            width = s.size
            out.append(cast(full[:, start:start + width].reshape(shape), compute_dtype or s.dtype))
            start += width
        return out

    @gather.vjp  # type: ignore[no-redef]
    def gather(shards: List[mx.array], cotangents: List[mx.array],
               outputs: List[mx.array]) -> List[mx.array]:
        packed = mx.concatenate([c.reshape(n, -1) for c in cotangents], axis=1)
        mine = mx.distributed.sum_scatter(packed, group=group) / n
        grads, start = [], 0
        for s in shards:
            grads.append(cast(mine[:, start:start + s.size].reshape(s.shape), s.dtype))
            start += s.size
        return grads

    return gather


class FullyShardedModule(Module):
    """A module whose parameters are sharded over a group on axis 0.

    Each process keeps ``1 / N`` of the rows of every parameter; a call
    gathers the whole parameters (one ``all_gather``), runs the module and
    puts the shards back, and the gradients of the shards are the
    reduce-scattered, group-averaged gradients of the whole parameters, so
    that an optimizer updates only this process's shard (data-parallel
    training with sharded parameters and optimizer state).

    Args:
        module (Module): the module to shard (its parameters are replaced by
            this process's shards).
        group (Group, optional): the group. Default: the global group.
        compute_dtype (Dtype, optional): the dtype the gathered parameters
            are cast to for the call. Default: None (their own).

    Raises:
        ValueError: a parameter is 0-d, or its first dimension is not
            divisible by the group size.
    """

    def __init__(self, module: Module, group: Optional["mx.distributed.Group"] = None,
                 compute_dtype: Optional["mx.Dtype"] = None) -> None:
        super().__init__()
        group = group or mx.distributed.init()
        n = group.size()
        flat = tree_flatten(module.filter_and_map(_shardable))
        for path, a in flat:
            if a.ndim == 0:
                raise ValueError(f"[FullyShardedModule] Cannot shard the 0-d parameter '{path}'.")
            if a.shape[0] % n:
                raise ValueError(f"[FullyShardedModule] Cannot shard the parameter '{path}' of shape "
                                 f"{tuple(a.shape)} over {n} processes: its first dimension must be "
                                 f"divisible by {n}.")
        object.__setattr__(self, "_paths", [p for p, _ in flat])
        full_shapes = [tuple(a.shape) for _, a in flat]
        r = group.rank()
        shards = [(p, mx.contiguous(a[r * (a.shape[0] // n):(r + 1) * (a.shape[0] // n)])) for p, a in flat]
        if shards:
            module.update(tree_unflatten(shards), strict=False)
        self.module = module
        object.__setattr__(self, "_gather", _gather_function(group, full_shapes, compute_dtype))

    def _extra_repr(self) -> str:
        return f"num_sharded_params={len(self._paths)}"

    def _with_full_parameters(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        shard_tree = self.module.filter_and_map(_shardable)
        shards = [a for _, a in tree_flatten(shard_tree)]
        full = self._gather(shards)
        self.module.update(tree_unflatten(list(zip(self._paths, full))), strict=False)
        try:
            return fn(*args, **kwargs)
        finally:
            self.module.update(shard_tree, strict=False)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._with_full_parameters(self.module, *args, **kwargs)

    def as_linear(self, *args: Any, **kwargs: Any) -> mx.array:
        """The wrapped module's ``as_linear`` with the whole parameters.

        Args:
            *args: passed on.
            **kwargs: passed on.

        Returns:
            array: what the module's ``as_linear`` returns.
        """
        return self._with_full_parameters(self.module.as_linear, *args, **kwargs)


def fully_shard(module: Module, *, group: Optional["mx.distributed.Group"] = None,
                compute_dtype: Optional["mx.Dtype"] = None) -> Module:
    """Wrap ``module`` in a :class:`FullyShardedModule`.

    Args:
        module (Module): the module.
        group (Group, optional): the group. Default: the global group.
        compute_dtype (Dtype, optional): the dtype of the gathered parameters
            in the forward pass. Default: None.

    Returns:
        Module: the wrapped module; ``module`` itself on a group of one
        process, when it is already wrapped, or when it has no parameters.
    """
    group = group or mx.distributed.init()
    if group.size() == 1 or isinstance(module, FullyShardedModule):
        return module
    wrapped = FullyShardedModule(module, group=group, compute_dtype=compute_dtype)
    return wrapped if wrapped._paths else module
