"""Transforms over a module's parameters: ``value_and_grad`` and
``checkpoint``."""

from functools import wraps
from typing import Any, Callable, List, Optional

from ember import core as mx
from ember.nn.layers.base import Module


def _with_parameters(model: Module, fn: Callable) -> Callable:
    """``fn`` as a function of the model's trainable parameters first: it
    puts them into the model, calls ``fn`` and puts the originals back, so
    no traced array stays in the model after a transform."""

    def inner(params: Any, *args: Any, **kwargs: Any) -> Any:
        saved = model.trainable_parameters()
        model.update(params)
        try:
            return fn(*args, **kwargs)
        finally:
            model.update(saved)

    return inner


def value_and_grad(model: Module, fn: Callable) -> Callable:
    """Like ``ember.core.value_and_grad``, differentiating ``fn`` with
    respect to the trainable parameters of ``model``.

    Args:
        model (Module): the module whose trainable parameters are the
            variables.
        fn (Callable): the function; it uses ``model`` and returns a scalar
            array (or a tuple whose first element is one).

    Returns:
        Callable: called with ``fn``'s arguments, it returns ``(value,
        grads)``, ``grads`` a tree of the trainable parameters' structure.
    """
    vg = mx.value_and_grad(_with_parameters(model, fn))

    @wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return vg(model.trainable_parameters(), *args, **kwargs)

    return wrapped


def checkpoint(module: Module, fn: Optional[Callable] = None) -> Callable:
    """Gradient checkpointing of a module call: the backward pass
    recomputes the intermediate values instead of keeping them
    (``ember.core.checkpoint`` over the module's trainable parameters and
    the arguments).

    Args:
        module (Module): the module whose parameters flow into ``fn``.
        fn (Callable, optional): the function to checkpoint. Default: None,
            the module's ``__call__``.

    Returns:
        Callable: ``fn`` checkpointed.
    """
    fn = fn if fn is not None else module.__call__
    ck = mx.checkpoint(_with_parameters(module, fn))

    @wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return ck(module.trainable_parameters(), *args, **kwargs)

    return wrapped


def average_gradients(gradients: Any, group: Optional[Any] = None, all_reduce_size: int = 32 * 1024 ** 2,
                      communication_stream: Optional[Any] = None) -> Any:
    """Average a tree of gradients over the processes of a group.

    Small arrays are packed into buckets of about ``all_reduce_size`` bytes
    (one bucket per dtype run, so mixed dtypes keep theirs) and each bucket
    is summed with one ``all_sum``, fewer and larger messages than one per
    array.

    Args:
        gradients (Any): the tree of gradients, of the same structure on
            every process.
        group (Group, optional): the group. Default: the global group.
        all_reduce_size (int): the bytes a bucket is filled to before it is
            sent; 0 or less sends every array on its own. Default: 32 MiB.
        communication_stream (Stream, optional): the stream of the
            collectives. Default: None (the default stream).

    Returns:
        Any: the tree of the averages (the input itself on one process).
    """
    from ember.utils import tree_flatten, tree_unflatten

    group = group or mx.distributed.init()
    n = group.size()
    if n == 1:
        return gradients

    def average(x: mx.array) -> mx.array:
        return mx.distributed.all_sum(x, group=group, stream=communication_stream) / n

    flat = tree_flatten(gradients)
    if all_reduce_size <= 0:
        return tree_unflatten([(k, average(v)) for k, v in flat])
    out: List[Any] = [None] * len(flat)
    bucket: list = []
    nbytes = 0

    def flush() -> None:
        nonlocal bucket, nbytes
        if len(bucket) == 1:
            i = bucket[0]
            out[i] = average(flat[i][1])
        elif bucket:
            arrays = [flat[i][1] for i in bucket]
            summed = average(mx.concatenate([a.reshape(-1) for a in arrays]))
            start = 0
            for i, a in zip(bucket, arrays):
                out[i] = summed[start:start + a.size].reshape(a.shape)
                start += a.size
        bucket, nbytes = [], 0

    for i, (_, v) in enumerate(flat):
        if bucket and flat[bucket[0]][1].dtype != v.dtype:
            flush()
        bucket.append(i)
        nbytes += v.nbytes
        if nbytes >= all_reduce_size:
            flush()
    flush()
    return tree_unflatten([(k, o) for (k, _), o in zip(flat, out)])
