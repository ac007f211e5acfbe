"""``compile``: MLX's graph compiler, here a wrapper that runs the function.

Ember has no graph compiler yet. ``compile(fun)`` returns a function that
calls ``fun`` on every call, which is what MLX's ``compile`` gives with
compilation disabled (``mx.disable_compile()``): the same results, without
fusion. Code written for MLX (``@partial(mx.compile, shapeless=True)`` on an
activation, a compiled training step with ``inputs``/``outputs`` state)
therefore runs unchanged; the state that MLX would capture through
``inputs``/``outputs`` is read and written by the function itself.
"""
import functools


def compile(fun, inputs=None, outputs=None, shapeless=False):
    """compile(fun, inputs=None, outputs=None, shapeless=False)

    Returns a compiled version of ``fun``. Ember does not fuse graphs yet:
    the returned function calls ``fun`` each time (MLX's behaviour under
    ``disable_compile``), so its results equal ``fun``'s and side effects
    of ``fun`` happen on every call rather than once at tracing.

    Args:
        fun (Callable): the function to compile (arrays and pytrees of
            arrays in and out).
        inputs (list or dict, optional): state the function reads implicitly
            (MLX captures it; here the function reads it itself). Default: None.
        outputs (list or dict, optional): state the function writes
            implicitly. Default: None.
        shapeless (bool): whether MLX may reuse the compiled graph for
            inputs of other shapes. Default: False.

    Returns:
        Callable: a function with ``fun``'s signature and results.

    Raises:
        TypeError: ``fun`` is not callable.
    """
    if not callable(fun):
        raise TypeError(f"compile(): fun must be callable, got {type(fun).__name__}.")
    if not isinstance(shapeless, bool):
        raise TypeError(f"compile(): shapeless must be a bool, got {type(shapeless).__name__}.")

    @functools.wraps(fun)
    def compiled(*args, **kwargs):
        return fun(*args, **kwargs)

    return compiled


def install(core) -> None:
    """Adds ``compile`` to the ember.core module."""
    compile.__module__ = "ember.core"
    core.compile = compile
