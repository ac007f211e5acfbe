"""The public transforms of ``ember.core``: grad, value_and_grad, vjp, jvp,
vmap, custom_function, checkpoint, and JAX's jacrev, jacfwd, hessian.

The engine (``core._vjp``, ``core._jvp``, ``core._vmap_trace`` /
``core._vmap_replace``, ``core._custom_function``) works on flat lists of
arrays; this module maps pytrees of arguments and results onto those lists
and back. Only array leaves take part; other leaves (ints, strings, None)
pass through unchanged.
"""

import functools
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from . import core as _core
from .utils import _children

array = _core.array


# --------------------------------------------------------------------------
# pytrees of arrays
# --------------------------------------------------------------------------

def _array_leaves(tree, out: Optional[list] = None, only_arrays: Optional[str] = None) -> list:
    """The array leaves of a tree, in tree_flatten order. With only_arrays
    (a transform's name), any other leaf is a TypeError."""
    out = [] if out is None else out
    stack = [tree]
    while stack:
        t = stack.pop()
        if isinstance(t, array):
            out.append(t)
            continue
        node = _children(t)
        if node is not None:
            stack.extend(child for _, child in reversed(node[0]))
        elif only_arrays:
            raise TypeError(f"[{only_arrays}] The function must return arrays or trees of arrays; got a "
                            f"{_type_name(t)} leaf.")
    return out


def _replace_arrays(tree, it):
    """tree with its array leaves replaced, in order, by next(it)."""
    if isinstance(tree, array):
        return next(it)
    node = _children(tree)
    if node is None:
        return tree
    kids, rebuild = node
    return rebuild([_replace_arrays(child, it) for _, child in kids])


def _type_name(x) -> str:
    return type(x).__name__


def _check_callable(fun, tag):
    if not callable(fun):
        raise TypeError(f"[{tag}] fun must be callable; got {_type_name(fun)}.")


def _check_only_arrays(tree, leaves, tag, what):
    """A ValueError unless every leaf of tree is an array (MLX's strict
    flattening of what a transform maps or differentiates)."""
    n = 0
    stack = [tree]
    while stack:
        t = stack.pop()
        if isinstance(t, array):
            n += 1
            continue
        node = _children(t)
        if node is None:
            raise ValueError(f"[{tag}] {what} should contain only arrays; got a {_type_name(t)} leaf.")
        stack.extend(child for _, child in node[0])


def _outputs_as_list(out, tag: str) -> list:
    if isinstance(out, array):
        return [out]
    if isinstance(out, (list, tuple)) and all(isinstance(o, array) for o in out):
        return list(out)
    raise TypeError(f"[{tag}] The function must return an array or a list/tuple of arrays; got {_type_name(out)}.")


def _as_array_list(xs, tag: str, what: str) -> list:
    if isinstance(xs, array):
        # a sequence of arrays, as MLX reads it: the array's rows
        if xs.ndim == 0:
            raise TypeError(f"[{tag}] {what} must be a list of arrays; got a 0-d array.")
        return [xs[i] for i in range(xs.shape[0])]
    if not isinstance(xs, (list, tuple)):
        raise TypeError(f"[{tag}] {what} must be a list of arrays; got {_type_name(xs)}.")
    out = []
    for x in xs:
        if not isinstance(x, array):
            raise TypeError(f"[{tag}] {what} must be arrays; got {_type_name(x)}.")
        out.append(x)
    return out


# --------------------------------------------------------------------------
# vjp / jvp
# --------------------------------------------------------------------------

def vjp(fun: Callable, primals: List[array], cotangents: List[array]) -> Tuple[List[array], List[array]]:
    """vjp(fun: Callable, primals: list[array], cotangents: list[array]) -> tuple[list[array], list[array]]

    Vector-Jacobian products of a function (reverse mode).

    Computes ``fun(*primals)`` and, for each primal, the sum over the
    outputs of each cotangent times that output's derivative with respect
    to the primal (the cotangents pulled back through ``fun``).

    Args:
        fun (Callable): a function of arrays returning an array or a list or
            tuple of arrays.
        primals (list(array)): the arguments at which to differentiate.
        cotangents (list(array)): one per output of ``fun``, each of its
            output's shape.

    Returns:
        tuple(list(array), list(array)): the outputs of ``fun`` and the
        vector-Jacobian products, one per primal (of its shape).

    Example:
        >>> outs, vjps = mx.vjp(lambda x: x * x, [mx.array([3.0])], [mx.array([1.0])])
        >>> vjps
        [array([6], dtype=float32)]
    """
    _check_callable(fun, "vjp")
    primals = _as_array_list(primals, "vjp", "primals")
    cotangents = _as_array_list(cotangents, "vjp", "cotangents")
    outs, vjps = _core._vjp(lambda xs: _outputs_as_list(fun(*xs), "vjp"), primals, cotangents)
    return list(outs), list(vjps)


def jvp(fun: Callable, primals: List[array], tangents: List[array]) -> Tuple[List[array], List[array]]:
    """jvp(fun: Callable, primals: list[array], tangents: list[array]) -> tuple[list[array], list[array]]

    Jacobian-vector products of a function (forward mode).

    Computes ``fun(*primals)`` and the derivative of each output in the
    direction given by the tangents (one per primal).

    Args:
        fun (Callable): a function of arrays returning an array or a list or
            tuple of arrays.
        primals (list(array)): the arguments at which to differentiate.
        tangents (list(array)): the direction, one per primal, each of its
            primal's shape.

    Returns:
        tuple(list(array), list(array)): the outputs of ``fun`` and the
        Jacobian-vector products, one per output.

    Example:
        >>> outs, jvps = mx.jvp(lambda x: x * x, [mx.array([3.0])], [mx.array([1.0])])
        >>> jvps
        [array([6], dtype=float32)]
    """
    _check_callable(fun, "jvp")
    primals = _as_array_list(primals, "jvp", "primals")
    tangents = _as_array_list(tangents, "jvp", "tangents")
    outs, jvps = _core._jvp(lambda xs: _outputs_as_list(fun(*xs), "jvp"), primals, tangents)
    return list(outs), list(jvps)


# --------------------------------------------------------------------------
# grad / value_and_grad
# --------------------------------------------------------------------------

def _normalize_argnums(argnums, argnames, tag):
    if isinstance(argnames, str):
        argnames = [argnames]
    argnames = list(argnames)
    if argnums is None:
        argnums = [0] if not argnames else []
    elif isinstance(argnums, int):
        argnums = [argnums]
    else:
        argnums = list(argnums)
    for a in argnums:
        if not isinstance(a, int):
            raise TypeError(f"[{tag}] argnums must be ints; got {_type_name(a)}.")
    if not argnums and not argnames:
        raise ValueError(f"[{tag}] Gradient with respect to no argument requested.")
    if any(a < 0 for a in argnums):
        raise ValueError(f"[{tag}] argnums cannot be negative; got {argnums}.")
    if len(set(argnums)) != len(argnums):
        raise ValueError(f"[{tag}] Repeated argument index in argnums {argnums}.")
    return sorted(argnums), argnames


def _value_and_grad(fun, argnums, argnames, tag, scalar_only):
    _check_callable(fun, tag)
    argnums, argnames = _normalize_argnums(argnums, argnames, tag)

    def run(args, kwargs):
        for a in argnums:
            if a >= len(args):
                raise ValueError(f"[{tag}] Can't compute the gradient of argument index {a} because the function "
                                 f"is called with only {len(args)} positional arguments.")
        for n in argnames:
            if n not in kwargs:
                raise ValueError(f"[{tag}] Can't compute the gradient of keyword argument '{n}' because the "
                                 f"function is called with the keyword arguments {sorted(kwargs)}.")
        trees = [args[a] for a in argnums] + [kwargs[n] for n in argnames]
        counts, leaves = [], []
        for t in trees:
            before = len(leaves)
            _array_leaves(t, leaves)
            _check_only_arrays(t, leaves, tag, "The argument to differentiate")
            counts.append(len(leaves) - before)
        value = []

        def flat(xs):
            it = iter(xs)
            new_args, new_kwargs = list(args), dict(kwargs)
            for a in argnums:
                new_args[a] = _replace_arrays(args[a], it)
            for n in argnames:
                new_kwargs[n] = _replace_arrays(kwargs[n], it)
            out = fun(*new_args, **new_kwargs)
            loss = out
            if not isinstance(out, array):
                if scalar_only:
                    raise ValueError(f"[{tag}] The return value of the function whose gradient we want to compute "
                                     f"should be a scalar array; but {_type_name(out)} was returned.")
                if not isinstance(out, tuple):
                    raise ValueError(f"[{tag}] The return value of the function whose gradient we want to compute "
                                     "should be either a scalar array or a tuple with the first value being a "
                                     f"scalar array; but {_type_name(out)} was returned.")
                if len(out) == 0:
                    raise ValueError(f"[{tag}] The return value of the function whose gradient we want to compute "
                                     "should be either a scalar array or a non-empty tuple; but an empty tuple "
                                     "was returned.")
                loss = out[0]
                if not isinstance(loss, array):
                    raise ValueError(f"[{tag}] The return value of the function whose gradient we want to "
                                     "compute should be either a scalar array or a tuple with the first value "
                                     f"being a scalar array; but the first value was a {_type_name(loss)}.")
            if loss.ndim != 0:
                raise ValueError(f"[{tag}] The return value of the function whose gradient we want to compute "
                                 f"should be a scalar array; but an array of shape {tuple(loss.shape)} was "
                                 "returned.")
            value.append(out)
            return [loss]

        _, grads = _core._vjp(flat, leaves, [_core.array(1.0)])
        it = iter(grads)
        grad_trees = [_replace_arrays(t, it) for t in trees]
        pos = grad_trees[:len(argnums)]
        kw = dict(zip(argnames, grad_trees[len(argnums):]))
        if len(argnums) == 1:
            positional = pos[0]
        elif len(argnums) > 1:
            positional = tuple(pos)
        else:
            positional = None
        grads_out = positional if not argnames else (positional, kw)
        return value[0], grads_out

    return run


def value_and_grad(fun: Callable, argnums: Union[int, Sequence[int], None] = None,
                   argnames: Union[str, Sequence[str]] = []) -> Callable:
    """value_and_grad(fun: Callable[P, R], argnums: int | Sequence[int] | None = None, argnames: str | Sequence[str] = []) -> Callable[P, tuple[R, Any]]

    A function that computes ``fun``'s value and its gradient together.

    ``fun`` returns a scalar array, or a tuple or list whose first element
    is the scalar to differentiate (the other elements are returned with
    the value, untouched). The differentiated arguments may be arrays or
    trees of arrays (lists, tuples, dicts, registered nodes); each gradient
    has the structure of its argument.

    Args:
        fun (Callable): the function to differentiate.
        argnums (int or sequence of int, optional): the positional arguments
            to differentiate with respect to. Default: None, which means 0
            unless ``argnames`` is given (then no positional argument).
        argnames (str or sequence of str): keyword arguments to
            differentiate with respect to. Default: ``[]``.

    Returns:
        Callable: a function with the arguments of ``fun`` returning
        ``(value, grad)``. ``grad`` is the gradient of the one argument for
        an int ``argnums``, a tuple for a sequence; with ``argnames`` it is
        ``(positional grads, dict of keyword grads)``.

    Example:
        >>> loss, g = mx.value_and_grad(lambda w: (w * w).sum())(mx.array([1.0, 2.0]))
        >>> g
        array([2, 4], dtype=float32)
    """
    run = _value_and_grad(fun, argnums, argnames, "value_and_grad", scalar_only=False)

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        return run(args, kwargs)

    return wrapper


def grad(fun: Callable, argnums: Union[int, Sequence[int], None] = None,
         argnames: Union[str, Sequence[str]] = []) -> Callable:
    """grad(fun: Callable[P, R], argnums: int | Sequence[int] | None = None, argnames: str | Sequence[str] = []) -> Callable[P, Any]

    A function that computes the gradient of a scalar-valued ``fun``.

    The gradient is the derivative of ``fun``'s scalar output with respect
    to the chosen arguments, which may be arrays or trees of arrays; each
    gradient has the structure of its argument. Use :func:`value_and_grad`
    to get the value as well.

    Args:
        fun (Callable): the function to differentiate; it must return a
            scalar array.
        argnums (int or sequence of int, optional): the positional arguments
            to differentiate with respect to. Default: None, which means 0
            unless ``argnames`` is given.
        argnames (str or sequence of str): keyword arguments to
            differentiate with respect to. Default: ``[]``.

    Returns:
        Callable: a function with the arguments of ``fun`` returning the
        gradient (a tuple of them for a sequence ``argnums``; with
        ``argnames``, ``(positional grads, dict of keyword grads)``).

    Example:
        >>> mx.grad(lambda x: (x ** 3).sum())(mx.array([2.0]))
        array([12], dtype=float32)
    """
    run = _value_and_grad(fun, argnums, argnames, "grad", scalar_only=True)

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        return run(args, kwargs)[1]

    return wrapper


# --------------------------------------------------------------------------
# vmap
# --------------------------------------------------------------------------

def _axes_for(tree, spec, tag, what):
    """One axis (or None) per array leaf of tree; spec is a prefix tree of
    ints/None matching tree's structure."""
    if spec is None or isinstance(spec, int):
        return [spec] * len(_array_leaves(tree))
    if isinstance(tree, array):
        raise ValueError(f"[{tag}] {what} must be an int or None for an array; got {_type_name(spec)}.")
    node, snode = _children(tree), _children(spec)
    if node is None or snode is None or type(tree) is not type(spec) or len(node[0]) != len(snode[0]):
        raise ValueError(f"[{tag}] {what} {spec!r} does not match the structure of the argument.")
    out = []
    for (k, child), (sk, schild) in zip(node[0], snode[0]):
        if k != sk:
            raise ValueError(f"[{tag}] {what} {spec!r} does not match the structure of the argument.")
        out.extend(_axes_for(child, schild, tag, what))
    return out


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
    """vmap(fun: Callable[P, R], in_axes: object = 0, out_axes: object = 0) -> Callable[P, R]

    ``fun`` vectorized over an axis of its inputs.

    The returned function behaves like calling ``fun`` on each slice along
    the mapped axes and stacking the results, but traces ``fun`` once and
    runs batched ops.

    Args:
        fun (Callable): the function to vectorize; its arguments and outputs
            are arrays or trees of arrays.
        in_axes (int, None or tuple): the axis to map in each positional
            argument: an int (negative counts from the end) or None (not
            mapped) for all of them, or a tuple with one entry per argument,
            each an int, None or a tree of them matching the argument.
            Default: 0.
        out_axes (int, None or tree): where the mapped axis goes in each
            output (an int, or a tree of ints matching the outputs).
            Default: 0.

    Returns:
        Callable: the vectorized function.

    Example:
        >>> mx.vmap(lambda x, y: x @ y, in_axes=(0, None))(mx.ones((4, 2, 3)), mx.ones((3,))).shape
        (4, 2)
    """

    return _vmap(fun, in_axes, out_axes)


def _pmap_input(x, ax, group, start, k):
    """pmap's view of an argument on this process: its block of the mapped
    axis (the gradient: every process's block, gathered), or, unmapped, the
    argument itself (the gradient: summed over the processes)."""
    D = _core.distributed
    if ax < 0:
        f = custom_function(lambda v: v)
        f.vjp(lambda v, cot, out: D.all_sum(cot, group=group))
        return f(x)

    f = custom_function(lambda v: _core.take(v, _core.arange(start, start + k), axis=ax))
    f.vjp(lambda v, cot, out: _core.moveaxis(D.all_gather(_core.moveaxis(cot, ax, 0), group=group), 0, ax))
    f.jvp(lambda v, t: _core.take(t, _core.arange(start, start + k), axis=ax))
    return f(x)


def _pmap_output(o, ax, group, start, k):
    """pmap's result: every process's block in rank order (the gradient: this
    process's block of the cotangent, the same on every process)."""
    D = _core.distributed
    f = custom_function(lambda v: _core.moveaxis(D.all_gather(_core.moveaxis(v, ax, 0), group=group), 0, ax))
    f.vjp(lambda v, cot, out: _core.take(cot, _core.arange(start, start + k), axis=ax))
    f.jvp(lambda v, t: _core.moveaxis(D.all_gather(_core.moveaxis(t, ax, 0), group=group), 0, ax))
    return f(o)


class AxisFrame:
    """One level of vmap (or pmap) while it traces and rewrites its function:
    the named-axis collectives of ``ember.parallel`` find their axis here."""

    def __init__(self, name, size, group=None, offset=0, total=None):
        self.name = name      # the axis name (None: an unnamed vmap)
        self.size = size      # the mapped size on this process
        self.group = group    # pmap over several processes: the group
        self.offset = offset  # this process's first index along the axis
        self.total = size if total is None else total
        self.index = None     # the traced position along the axis (axis_index)


_AXIS_FRAMES: List[AxisFrame] = []  # innermost last


def _vmap(fun, in_axes, out_axes, axis_name=None, group=None, op="vmap"):
    """vmap with an optional axis name, or, with ``group``, each process
    taking its block of the mapped axis (pmap) and the outputs gathered."""
    _check_callable(fun, op)
    if in_axes is None or out_axes is None:
        raise TypeError("[vmap] in_axes and out_axes must be an int or a tree of ints (None marks an unmapped "
                        f"input inside a tree); got in_axes={in_axes!r}, out_axes={out_axes!r}.")

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        if kwargs:
            raise TypeError(f"[vmap] Keyword arguments are not supported; got {', '.join(sorted(kwargs))}.")
        if isinstance(in_axes, tuple) and len(in_axes) == len(args):
            specs = list(in_axes)
        elif len(args) == 1:
            specs = [in_axes]  # the spec of the one argument itself
        elif isinstance(in_axes, (list, tuple)):
            raise ValueError(f"[vmap] in_axes {in_axes!r} does not match the {len(args)} arguments: give an int, "
                             f"or a tuple of {len(args)} entries.")
        else:
            specs = [in_axes] * len(args)
        inputs, axes, owners = [], [], []
        for i, (a, s) in enumerate(zip(args, specs)):
            leaves = _array_leaves(a)
            _check_only_arrays(a, leaves, "vmap", f"argument {i}")
            for x, ax in zip(leaves, _axes_for(a, s, "vmap", "in_axes")):
                if ax is not None:
                    if not isinstance(ax, int):
                        raise ValueError(f"[vmap] in_axes entries must be ints or None; got {_type_name(ax)}.")
                    if ax < -x.ndim or ax >= x.ndim:
                        raise IndexError(f"[vmap] in_axes {ax} is out of range for argument {i} of shape "
                                         f"{tuple(x.shape)}.")
                    ax = ax % x.ndim
                inputs.append(x)
                axes.append(-1 if ax is None else ax)
                owners.append(i)
        sizes = [(o, x.shape[ax]) for o, x, ax in zip(owners, inputs, axes) if ax >= 0]
        if not sizes:
            raise ValueError("[vmap] At least one argument must be mapped (in_axes are all None).")
        if len({s for _, s in sizes}) > 1:
            desc = ", ".join(f"argument {o} has size {s}" for o, s in sizes)
            raise ValueError(f"[vmap] Inconsistent sizes along the mapped axes: {desc}.")
        structure = []
        size = sizes[0][1]
        frame = AxisFrame(axis_name, size)
        if group is not None and group.size() > 1:
            n, r = group.size(), group.rank()
            if size % n:
                raise ValueError(f"[{op}] The mapped axis of size {size} cannot be split over the {n} processes "
                                 "of the group.")
            k = size // n
            inputs = [_pmap_input(x, ax, group, r * k, k) for x, ax in zip(inputs, axes)]
            frame = AxisFrame(axis_name, k, group, r * k, size)
        n_user = len(inputs)
        if axis_name is not None:  # a hidden mapped input: each example's position
            inputs = inputs + [_core.arange(frame.size, dtype=_core.int32)]
            axes = axes + [0]

        def flat(xs):
            if axis_name is not None:
                frame.index = xs[n_user] + frame.offset if frame.offset else xs[n_user]
                xs = xs[:n_user]
            it = iter(xs)
            new_args = [_replace_arrays(a, it) for a in args]
            out = fun(*new_args)
            leaves = _array_leaves(out)
            _check_only_arrays(out, leaves, op, "the function's output")
            structure.append(out)
            return leaves

        _AXIS_FRAMES.append(frame)
        try:
            traced_in, traced_out = _core._vmap_trace(flat, inputs, axes)
        finally:
            _AXIS_FRAMES.pop()
        out_tree = structure[0]
        spec = out_axes
        if isinstance(out_tree, array) and isinstance(spec, tuple) and len(spec) == 1:
            spec = spec[0]  # MLX takes (axis,) for a single output
        oaxes = _axes_for(out_tree, spec, "vmap", "out_axes")
        for ax in oaxes:
            if not isinstance(ax, int):
                raise ValueError(f"[vmap] out_axes entries must be ints; got {ax!r}.")
        for j, (o, ax) in enumerate(zip(traced_out, oaxes)):
            if ax < -(o.ndim + 1) or ax > o.ndim:
                raise IndexError(f"[vmap] out_axes {ax} is out of range for output {j} of {o.ndim + 1} dimensions "
                                 "(with the batch).")
        _AXIS_FRAMES.append(frame)
        try:
            result = _core._vmap_replace(inputs, traced_in, traced_out, axes, oaxes)
        finally:
            _AXIS_FRAMES.pop()
        if frame.group is not None:  # every process's block, in rank order
            result = [_pmap_output(o, ax, frame.group, frame.offset, frame.size) for o, ax in zip(result, oaxes)]
        return _replace_arrays(out_tree, iter(result))

    return wrapper


# --------------------------------------------------------------------------
# custom_function / checkpoint
# --------------------------------------------------------------------------

class custom_function:
    """custom_function(fun)

    A decorator that gives ``fun`` its own derivative and vectorization rules.

    Transforms use the rules registered on the wrapper instead of
    differentiating or vectorizing ``fun`` itself; a rule not given falls
    back to the default. Arrays that ``fun`` captures are constants: no
    gradient flows to them. Register the rules with the methods
    :meth:`vjp`, :meth:`jvp` and :meth:`vmap`, used as decorators.

    Args:
        fun (Callable): the function to wrap (arrays or trees of arrays in
            and out).

    Example:
        >>> @mx.custom_function
        ... def f(x, y):
        ...     return x * y
        >>> @f.vjp
        ... def f_vjp(primals, cotangent, output):
        ...     x, y = primals
        ...     return cotangent * y, cotangent * x
        >>> mx.grad(f)(mx.array(2.0), mx.array(3.0))
        array(3, dtype=float32)
    """

    def __init__(self, fun: Callable):
        _check_callable(fun, "custom_function")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self._vjp: Optional[Callable] = None
        self._jvp: Optional[Callable] = None
        self._vmap: Optional[Callable] = None

    def vjp(self, f: Callable) -> Callable:
        """Registers ``f`` as the vector-Jacobian product rule (a decorator).

        ``f(primals, cotangent, output, **kwargs)`` receives the positional
        arguments (the argument itself when there is one, a tuple of them
        otherwise), the cotangent of the output and the output (each of the
        output's structure) and ``fun``'s keyword arguments, and returns the
        cotangents of the arguments (one array for a single argument, a tuple
        or any tree of them otherwise).

        Args:
            f (Callable): the rule.

        Returns:
            custom_function: this custom function (as MLX), so that the
            registrations chain.
        """
        self._vjp = f
        return self

    def jvp(self, f: Callable) -> Callable:
        """Registers ``f`` as the Jacobian-vector product rule (a decorator).

        ``f(primals, tangents)`` receives the positional arguments and
        their tangents (each the argument itself when there is one, a tuple
        otherwise; the tangent of an argument without one is None), and
        returns the tangent of the output (of the output's structure). A
        function called with keyword arguments cannot use it (ValueError).

        Args:
            f (Callable): the rule.

        Returns:
            custom_function: this custom function (as MLX), so that the
            registrations chain.
        """
        self._jvp = f
        return self

    def vmap(self, f: Callable) -> Callable:
        """Registers ``f`` as the vectorization rule (a decorator).

        ``f(inputs, axes)`` receives the batched arguments and their mapped
        axes (None: not mapped), each the argument itself when there is one
        and a tuple otherwise, and returns the tuple ``(outputs, out_axes)``:
        the batched output(s) and where the mapped axis is in each (None: not
        mapped). A function called with keyword arguments cannot use it
        (ValueError).

        Args:
            f (Callable): the rule.

        Returns:
            custom_function: this custom function (as MLX), so that the
            registrations chain.
        """
        self._vmap = f
        return self

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __call__(self, *args, **kwargs):
        if self._vjp is None and self._jvp is None and self._vmap is None:
            return self.fun(*args, **kwargs)
        leaves = _array_leaves(list(args))
        fun = self.fun
        out_tree = []

        def rebuild(xs):
            return _replace_arrays(list(args), iter(xs))

        def as_rule_arg(xs):
            # MLX's convention: a single positional argument is passed as
            # itself, several as a tuple.
            return xs[0] if len(xs) == 1 else tuple(xs)

        def flat(xs):
            out = fun(*rebuild(xs), **kwargs)
            leaves = _array_leaves(out)
            _check_only_arrays(out, leaves, "custom_function", "The function's output")
            out_tree.append(out)
            return leaves

        def structured(outs):
            return _replace_arrays(out_tree[0], iter(outs))

        def positional_only(rule):
            if kwargs:
                raise ValueError(f"[custom_function] The {rule} rule of a function called with keyword arguments "
                                 f"({', '.join(sorted(kwargs))}) is not supported; pass them positionally.")

        vjp_flat = jvp_flat = vmap_flat = None
        if self._vjp is not None:
            user_vjp = self._vjp

            def vjp_flat(primals, cotangents, outputs):
                cts = user_vjp(as_rule_arg(rebuild(primals)), structured(cotangents), structured(outputs),
                               **kwargs)
                return _array_leaves(cts)

        if self._jvp is not None:
            user_jvp = self._jvp

            def jvp_flat(primals, tangents, argnums):
                positional_only("jvp")
                have = set(argnums)
                tans = [t if i in have else None for i, t in enumerate(tangents)]
                r = user_jvp(as_rule_arg(rebuild(primals)), as_rule_arg(rebuild(tans)))
                return _array_leaves(r)

        if self._vmap is not None:
            user_vmap = self._vmap

            def vmap_flat(inputs, axes):
                positional_only("vmap")
                ax = rebuild([None if a < 0 else a for a in axes])
                r = user_vmap(as_rule_arg(rebuild(inputs)), as_rule_arg(ax))
                if not isinstance(r, tuple) or len(r) != 2:
                    raise ValueError("[custom_function] The vmap rule should return a tuple of 2 items (outputs, "
                                     f"axes); got {_type_name(r)}"
                                     + (f" of {len(r)} items." if isinstance(r, tuple) else "."))
                outs, oaxes = r
                flat_outs = _array_leaves(outs)
                flat_axes = _axes_for(outs, oaxes, "custom_function", "The vmap rule's axes")
                return flat_outs, [-1 if a is None else a for a in flat_axes]

        wrapped = _core._custom_function(flat, vjp_flat, jvp_flat, vmap_flat)
        outs = wrapped(leaves)
        return structured(list(outs))


def checkpoint(fun: Callable) -> Callable:
    """checkpoint(fun: Callable[P, R]) -> Callable[P, R]

    ``fun`` with gradient checkpointing.

    The intermediate values of ``fun`` are not kept for the backward pass;
    they are recomputed when the gradient needs them, trading compute for
    memory. The values and gradients are those of ``fun``.

    Args:
        fun (Callable): the function to checkpoint.

    Returns:
        Callable: a function with the arguments and results of ``fun``.
    """
    _check_callable(fun, "checkpoint")

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        leaves = _array_leaves(list(args))
        out_tree = []

        def flat(xs):
            out = fun(*_replace_arrays(list(args), iter(xs)), **kwargs)
            out_tree.append(out)
            return _array_leaves(out)  # any tree; other leaves pass through (as MLX)

        outs = _core._checkpoint(flat)(leaves)
        return _replace_arrays(out_tree[0], iter(outs))

    return wrapper


# --------------------------------------------------------------------------
# Jacobians and Hessians (JAX semantics)
# --------------------------------------------------------------------------

def _jac_setup(fun, args, argnums, tag):
    single_arg = isinstance(argnums, int)
    nums = [argnums] if single_arg else list(argnums)
    for a in nums:
        if not isinstance(a, int) or a < -len(args) or a >= len(args):
            raise ValueError(f"[{tag}] argnums {argnums} is out of range for {len(args)} arguments.")
    nums = [a % len(args) for a in nums]
    trees = [args[a] for a in nums]
    counts, leaves = [], []
    for t in trees:
        n0 = len(leaves)
        _array_leaves(t, leaves)
        counts.append(len(leaves) - n0)
    for x in leaves:
        if x.dtype not in (_core.float16, _core.bfloat16, _core.float32, _core.float64, _core.complex64):
            raise TypeError(f"[{tag}] Differentiation needs inexact inputs; got an argument of dtype {x.dtype}.")
    structure = []

    def flat(xs):
        it = iter(xs)
        new_args = list(args)
        for a in nums:
            new_args[a] = _replace_arrays(args[a], it)
        out = fun(*new_args)
        structure.append(out)
        return _array_leaves(out)

    def assemble(blocks):
        # blocks[k][j]: d output leaf k / d input leaf j
        out_tree = structure[0]
        per_out = []
        for row in blocks:
            it = iter(row)
            per_arg = [_replace_arrays(t, it) for t in trees]
            per_out.append(per_arg[0] if single_arg else tuple(per_arg))
        return _replace_arrays(out_tree, iter(per_out))

    return leaves, flat, assemble


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _spans(arrays):
    """(start, stop) of each array's elements in their concatenation."""
    out, start = [], 0
    for a in arrays:
        out.append((start, start + _prod(a.shape)))
        start += _prod(a.shape)
    return out


def _map_basis(basis_of, results_like, apply):
    """vmap of ``apply`` over the standard basis of the concatenated
    ``basis_of`` arrays (each basis vector split and shaped like them): one
    array per entry of ``results_like``'s counterpart, with the basis index
    first."""
    spans = _spans(basis_of)
    total = spans[-1][1] if spans else 0
    if total == 0:
        return [_core.zeros((0,) + tuple(r.shape), r.dtype) for r in results_like]
    basis = _core.eye(total, dtype=basis_of[0].dtype)

    def one(vec):
        return apply([vec[lo:hi].reshape(a.shape).astype(a.dtype) for a, (lo, hi) in zip(basis_of, spans)])

    return vmap(one)(basis)


def jacrev(fun: Callable, argnums: Union[int, Sequence[int]] = 0) -> Callable:
    """jacrev(fun: Callable, argnums: int | Sequence[int] = 0) -> Callable

    A function computing the Jacobian of ``fun`` by reverse mode.

    A :func:`vmap` of :func:`vjp` over the basis of the outputs: efficient
    when the outputs are fewer than the inputs. For an output of shape
    ``O`` and an input of shape ``I`` the Jacobian has shape ``O + I``; trees
    of outputs and inputs nest as in JAX (outer: outputs, inner: inputs).

    Args:
        fun (Callable): the function.
        argnums (int or sequence of int): the positional arguments to
            differentiate with respect to. Default: 0.

    Returns:
        Callable: a function with the arguments of ``fun`` returning the
        Jacobian (a tuple over the arguments for a sequence ``argnums``).

    Example:
        >>> mx.jacrev(lambda x: x * x)(mx.array([1.0, 2.0]))
        array([[2, 0],
               [0, 4]], dtype=float32)
    """

    _check_callable(fun, "jacrev")

    @functools.wraps(fun)
    def wrapper(*args):
        xs, flat, assemble = _jac_setup(fun, args, argnums, "jacrev")
        outs = flat(xs)
        # row i of the basis: the cotangent picking output element i
        rows = _map_basis(outs, xs, lambda cts: _core._vjp(flat, xs, cts)[1])
        return assemble([[r[lo:hi].reshape(tuple(o.shape) + tuple(x.shape)) for r, x in zip(rows, xs)]
                         for o, (lo, hi) in zip(outs, _spans(outs))])

    return wrapper


def jacfwd(fun: Callable, argnums: Union[int, Sequence[int]] = 0) -> Callable:
    """jacfwd(fun: Callable, argnums: int | Sequence[int] = 0) -> Callable

    A function computing the Jacobian of ``fun`` by forward mode.

    A :func:`vmap` of :func:`jvp` over the basis of the inputs: efficient
    when the inputs are fewer than the outputs. Shapes and nesting are those
    of :func:`jacrev`.

    Args:
        fun (Callable): the function.
        argnums (int or sequence of int): the positional arguments to
            differentiate with respect to. Default: 0.

    Returns:
        Callable: a function with the arguments of ``fun`` returning the
        Jacobian.
    """

    _check_callable(fun, "jacfwd")

    @functools.wraps(fun)
    def wrapper(*args):
        xs, flat, assemble = _jac_setup(fun, args, argnums, "jacfwd")
        outs = flat(xs)
        # column j of the basis: the tangent moving input element j
        cols = _map_basis(xs, outs, lambda ts: _core._jvp(flat, xs, ts)[1])
        blocks = []
        for o, c in zip(outs, cols):
            row = []
            for x, (lo, hi) in zip(xs, _spans(xs)):
                part = _core.moveaxis(c[lo:hi], 0, -1) if o.ndim else c[lo:hi]
                row.append(part.reshape(tuple(o.shape) + tuple(x.shape)))
            blocks.append(row)
        return assemble(blocks)

    return wrapper


def hessian(fun: Callable, argnums: Union[int, Sequence[int]] = 0) -> Callable:
    """hessian(fun: Callable, argnums: int | Sequence[int] = 0) -> Callable

    A function computing the Hessian of a scalar-valued ``fun``.

    The matrix of second derivatives, computed as :func:`jacfwd` of
    :func:`jacrev`. For an input of shape ``I`` it has shape ``I + I``.

    Args:
        fun (Callable): the function; it must return a scalar array.
        argnums (int or sequence of int): the positional arguments to
            differentiate with respect to. Default: 0.

    Returns:
        Callable: a function with the arguments of ``fun`` returning the
        Hessian.

    Example:
        >>> mx.hessian(lambda x: (x ** 3).sum())(mx.array([1.0, 2.0]))
        array([[6, 0],
               [0, 12]], dtype=float32)
    """
    return jacfwd(jacrev(fun, argnums), argnums)


def install(core) -> None:
    """Adds the transforms to the ember.core module."""
    for f in (vjp, jvp, grad, value_and_grad, vmap, checkpoint, jacrev, jacfwd, hessian):
        f.__module__ = "ember.core"
        setattr(core, f.__name__, f)
    custom_function.__module__ = "ember.core"
    core.custom_function = custom_function
