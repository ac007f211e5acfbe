"""Transforms over a module's parameters: ``value_and_grad`` and
``checkpoint``."""

from functools import wraps
from typing import Callable, Optional

from ember import core as mx
from ember.nn.layers.base import Module


def _with_parameters(model, fn):
    """``fn`` as a function of the model's trainable parameters first: it
    puts them into the model, calls ``fn`` and puts the originals back, so
    no traced array stays in the model after a transform."""

    def inner(params, *args, **kwargs):
        saved = model.trainable_parameters()
        model.update(params)
        try:
            return fn(*args, **kwargs)
        finally:
            model.update(saved)

    return inner


def value_and_grad(model: Module, fn: Callable):
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
    def wrapped(*args, **kwargs):
        return vg(model.trainable_parameters(), *args, **kwargs)

    return wrapped


def checkpoint(module: Module, fn: Optional[Callable] = None):
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
    def wrapped(*args, **kwargs):
        return ck(module.trainable_parameters(), *args, **kwargs)

    return wrapped
