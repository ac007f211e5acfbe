"""``ember.parallel``: JAX's named axes and ``pmap`` on Ember (beyond MLX).

    from ember import parallel as P
    P.vmap(lambda x: x - P.pmean(x, "batch"), axis_name="batch")(xs)   # centre the batch
    P.pmap(step, in_axes=(None, 0), axis_name="batch")(params, batch)   # SPMD over the ranks

A mapped axis gets a name with ``vmap(..., axis_name=)``; inside the mapped
function, ``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather`` and
``axis_index`` work across that axis: every example sees the sum (mean, ...)
over all examples, its own position, or all of them stacked. ``pmap`` maps
the same way but spreads the axis over the processes of the distributed
group: each rank computes its block of the axis (its size must be divisible
by the group size), the collectives on the axis name combine the block's
examples and then the ranks (``mx.distributed`` collectives), and the
outputs are gathered, so the result is the same as ``vmap``'s; on one
process ``pmap`` is ``vmap``. Derivatives follow JAX: the transpose of
``psum`` is ``psum``, of ``all_gather`` the sum of the cotangents at each
example's position (so gradients inside the map are those of the sum of
every example's output).
"""
from ember import _transforms as _t
from ember import core as mx

__all__ = ["vmap", "pmap", "psum", "pmean", "pmax", "pmin", "all_gather", "axis_index"]


def vmap(fun, in_axes=0, out_axes=0, axis_name=None):
    """``mx.vmap`` with a name for the mapped axis.

    Args:
        fun (Callable): the function to vectorize.
        in_axes (int, None or tuple): as ``mx.vmap``. Default: 0.
        out_axes (int or tree): as ``mx.vmap``. Default: 0.
        axis_name (Hashable, optional): the name the collectives of this
            module use for the mapped axis. Default: None (unnamed).

    Returns:
        Callable: the vectorized function.
    """
    return _t._vmap(fun, in_axes, out_axes, axis_name)


def pmap(fun, in_axes=0, out_axes=0, axis_name=None, *, group=None):
    """``fun`` mapped over an axis spread across the processes of a group.

    Every process calls the mapped function with the same arguments; each
    computes the examples of its block of the mapped axis (vectorized, as
    ``vmap``), collectives on ``axis_name`` combine all examples of all
    processes, and every process returns the whole result, the same as
    ``vmap(fun, in_axes, out_axes, axis_name)(...)`` gives on one process.

    Args:
        fun (Callable): the function to map.
        in_axes (int, None or tuple): as ``mx.vmap``. Default: 0.
        out_axes (int or tree): as ``mx.vmap``. Default: 0.
        axis_name (Hashable, optional): the name of the mapped axis.
            Default: None.
        group (Group, optional): the processes. Default: the global group.

    Returns:
        Callable: the mapped function.

    Raises:
        ValueError: (when called) the mapped axis' size is not divisible by
            the group size.
    """
    def mapped(*args):
        g = group or mx.distributed.init()
        return _t._vmap(fun, in_axes, out_axes, axis_name, group=g, op="pmap")(*args)

    return mapped


def _frame(name, op):
    for f in reversed(_t._AXIS_FRAMES):
        if f.name == name and name is not None:
            return f
    bound = [f.name for f in _t._AXIS_FRAMES if f.name is not None]
    raise NameError(f"[{op}] unbound axis name: {name!r} (names bound here: {bound}); name the axis with "
                    "ember.parallel.vmap(..., axis_name=) or pmap.")


def _names(axis_name):
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _expand(v, ax, shape):
    return mx.broadcast_to(mx.expand_dims(v, ax), shape)


def _across(kind, x, g):
    """The collective over the ranks of ``g``, with the derivatives of JAX's
    convention (the sum over the ranks of what each computes): the transpose
    of a sum is a sum, of a gather a reduce-scatter. (``mx.distributed``'s
    own rules are MLX's, for values replicated on every rank.)"""
    D = mx.distributed
    if kind in ("psum", "pmean"):
        f = mx.custom_function(lambda v: D.all_sum(v, group=g))
        f.vjp(lambda v, cot, out: D.all_sum(cot, group=g))
        f.jvp(lambda v, t: D.all_sum(t, group=g))
    elif kind == "all_gather":
        f = mx.custom_function(lambda v: D.all_gather(v, group=g))
        f.vjp(lambda v, cot, out: D.sum_scatter(cot, group=g))
        f.jvp(lambda v, t: D.all_gather(t, group=g))
    else:
        reduce = D.all_max if kind == "pmax" else D.all_min
        f = mx.custom_function(lambda v: reduce(v, group=g))

        def share(v, out):
            mask = (v == out).astype(v.dtype)
            return mask, D.all_sum(mask, group=g)

        @f.vjp
        def f_vjp(v, cot, out):
            mask, count = share(v, out)
            return D.all_sum(cot, group=g) * mask / count

        @f.jvp
        def f_jvp(v, t):
            mask, count = share(v, reduce(v, group=g))
            return D.all_sum(t * mask, group=g) / count
    return f(x)


def _combine(kind, v, ax, frame):
    """The collective over the frame's axis of the batched ``v`` (batch axis
    ``ax``, None: the same on every example): the value and its batch axis."""
    g = frame.group
    if kind == "all_gather":
        block = mx.moveaxis(v, ax, 0) if ax is not None else mx.broadcast_to(v[None], (frame.size,) + v.shape)
        if g is not None:
            block = _across("all_gather", block, g)
        return block, None
    if ax is None:
        local = v * frame.size if kind in ("psum", "pmean") else v
    elif kind in ("psum", "pmean"):
        local = mx.sum(v, axis=ax)
    else:
        local = (mx.max if kind == "pmax" else mx.min)(v, axis=ax)
    if g is not None:
        local = _across(kind, local, g)
    if kind == "pmean":
        local = local / frame.total
    return local, None


def _collective(kind, x, name):
    frame = _frame(name, kind)
    if not isinstance(x, mx.array):
        x = mx.array(x)

    def forward(v, index):
        # what one example's value is replaced by when its vmap level rewrites
        # the graph (see the rule); the shape is the example's. `index` (the
        # example's position, batched at the frame's level) makes that level
        # rewrite the node even where `v` is the same for every example.
        if kind == "all_gather":
            return mx.broadcast_to(v[None], (frame.total,) + v.shape)
        return v

    f = mx.custom_function(forward)

    @f.vmap
    def rule(inputs, axes):
        v, _ = inputs
        ax = axes[0]
        if _t._AXIS_FRAMES and _t._AXIS_FRAMES[-1] is frame:
            return _combine(kind, v, ax, frame)
        # another level's axis: the collective stays, the batch axis passes through
        if ax is None:
            return _collective(kind, v, name), None
        return _collective(kind, v, name), (ax + 1 if kind == "all_gather" else ax)

    @f.vjp
    def vjp(primals, cot, out):
        v, index = primals
        if kind == "psum":
            g = psum(cot, name)
        elif kind == "pmean":
            g = pmean(cot, name)
        elif kind == "all_gather":
            g = mx.take(psum(cot, name), axis_index(name), axis=0)
        else:
            mask = (v == out).astype(v.dtype)
            g = psum(cot, name) * mask / psum(mask, name)
        return g, mx.zeros_like(index)

    @f.jvp
    def jvp(primals, tangents):
        v, _ = primals
        t = tangents[0]
        if t is None:
            t = mx.zeros_like(v)
        if kind in ("psum", "pmean", "all_gather"):
            return _collective(kind, t, name)
        out = _collective(kind, v, name)
        mask = (v == out).astype(v.dtype)
        return psum(t * mask, name) / psum(mask, name)

    return f(x, frame.index)


def _over_names(kind, x, axis_name):
    """The collective ``kind`` applied over each of the axis names in turn."""
    for n in _names(axis_name):
        x = _collective(kind, x, n)
    return x


def psum(x, axis_name):
    """Sum of ``x`` over the examples of a named axis (inside ``vmap``/``pmap``).

    Args:
        x (array): this example's value.
        axis_name (Hashable or tuple): the axis name, or several (summed over each).

    Returns:
        array: the sum, the same for every example.

    Raises:
        NameError: no enclosing map has that axis name.
    """
    return _over_names("psum", x, axis_name)


def pmean(x, axis_name):
    """Mean of ``x`` over the examples of a named axis.

    Args:
        x (array): this example's value.
        axis_name (Hashable or tuple): the axis name(s).

    Returns:
        array: the mean, the same for every example.
    """
    return _over_names("pmean", x, axis_name)


def pmax(x, axis_name):
    """Elementwise maximum of ``x`` over the examples of a named axis.

    Its derivative goes to the examples that hold the maximum (shared evenly
    among ties).

    Args:
        x (array): this example's value.
        axis_name (Hashable or tuple): the axis name(s).

    Returns:
        array: the maximum, the same for every example.
    """
    return _over_names("pmax", x, axis_name)


def pmin(x, axis_name):
    """Elementwise minimum of ``x`` over the examples of a named axis.

    Args:
        x (array): this example's value.
        axis_name (Hashable or tuple): the axis name(s).

    Returns:
        array: the minimum, the same for every example.
    """
    return _over_names("pmin", x, axis_name)


def all_gather(x, axis_name):
    """Every example's ``x`` stacked on a new leading axis, in axis order.

    Args:
        x (array): this example's value.
        axis_name (Hashable): the axis name.

    Returns:
        array: shape ``(size of the axis, *x.shape)``, the same for every example.
    """
    return _collective("all_gather", x, axis_name)


def axis_index(axis_name):
    """This example's position along a named axis (int32).

    Under ``pmap`` the position counts the examples of every process
    (process ``r`` holds positions ``r * k`` to ``r * k + k - 1``).

    Args:
        axis_name (Hashable): the axis name.

    Returns:
        array: a 0-d int32 array.
    """
    return _frame(axis_name, "axis_index").index
