"""``ember.core.distributed``: MLX's ``mlx.core.distributed`` on one process.

Ember has no communication backend (no MPI, ring, NCCL or JACCL). What it
provides is MLX's singleton group: ``init()`` returns the group of one
process (rank 0, size 1), on which the collectives are the identity
(``all_sum``, ``all_max``, ``all_min``, ``all_gather`` and ``sum_scatter``
return their input) and point-to-point messages are errors, as they are on
MLX's singleton group. Code that shards a model over ``group.size()``
devices (``nn.layers.distributed``, mlx-lm's ``Model.shard``) thus runs
with one shard. ``is_available()`` is ``False`` for every backend, and
``init(strict=True)`` raises, since no backend can be initialised.
"""
import sys
import types

_BACKENDS = ("any", "mpi", "nccl", "jaccl", "ring")
_TOKEN = object()


class Group:
    """A group of processes taking part in collective operations.

    Only the singleton group (this process alone) exists; get it with
    :func:`init`.
    """

    def __init__(self, *args, **kwargs):
        if not args or args[0] is not _TOKEN:
            raise TypeError("ember.core.distributed.Group: no constructor defined! Use distributed.init().")

    def rank(self):
        """The rank of this process in the group.

        Returns:
            int: 0.
        """
        return 0

    def size(self):
        """The number of processes in the group.

        Returns:
            int: 1.
        """
        return 1

    def split(self, color, key=-1):
        """Split the group into subgroups by ``color`` (ordered by ``key``).

        Args:
            color (int): processes with the same color share a subgroup.
            key (int): the order within the subgroup. Default: -1 (the rank).

        Raises:
            RuntimeError: always; the singleton group cannot be split.
        """
        raise RuntimeError("Cannot split the distributed group further.")

    def __repr__(self):
        return "<ember.core.distributed.Group rank=0 size=1>"


_WORLD = None


def _world():
    global _WORLD
    if _WORLD is None:
        _WORLD = Group(_TOKEN)
    return _WORLD


def _check_backend(fn, backend):
    if backend not in _BACKENDS:
        raise ValueError(f"[distributed] The only valid values for backend are 'any', 'mpi', 'nccl', "
                         f"'jaccl' and 'ring' but {backend!r} was provided.")


def is_available(backend="any"):
    """Whether a communication backend is available.

    Args:
        backend (str): ``"any"``, ``"mpi"``, ``"nccl"``, ``"jaccl"`` or
            ``"ring"``. Default: ``"any"``.

    Returns:
        bool: ``False``; Ember has no communication backend.
    """
    _check_backend("is_available", backend)
    return False


def init(strict=False, backend="any", *, all_gather_factory=None):
    """Initialise the distributed context and return its global group.

    Args:
        strict (bool): raise if no backend can be initialised, instead of
            returning the singleton group. Default: False.
        backend (str): which backend to try. Default: ``"any"``.
        all_gather_factory (Callable, optional): a custom all-gather for
            MLX's ring setup; unused without a backend. Default: None.

    Returns:
        Group: the singleton group (rank 0, size 1).

    Raises:
        ValueError: ``backend`` names no backend.
        RuntimeError: ``strict`` is true (no backend can be initialised).
    """
    _check_backend("init", backend)
    if strict:
        raise RuntimeError("[distributed] Couldn't initialize any backend")
    return _world()


def _group(fn, group):
    if group is None:
        return _world()
    if not isinstance(group, Group):
        raise TypeError(f"[{fn}] group must be a distributed.Group, got {type(group).__name__}.")
    return group


def _array(fn, x):
    from ember import core

    if not isinstance(x, core.array):
        raise TypeError(f"[{fn}] x must be an array, got {type(x).__name__}.")
    return x


def _collective(name, doc):
    def f(x, *, group=None, stream=None):
        _group(name, group)
        return _array(name, x)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc + """

    Args:
        x (array): this process's input.
        group (Group, optional): the group. Default: the global group.
        stream (Stream, optional): unused (there is no communication).

    Returns:
        array: ``x`` itself: on the singleton group the result is the input.
    """
    return f


all_sum = _collective("all_sum", "Sum of ``x`` over the processes of the group.")
all_max = _collective("all_max", "Elementwise maximum of ``x`` over the processes of the group.")
all_min = _collective("all_min", "Elementwise minimum of ``x`` over the processes of the group.")
all_gather = _collective("all_gather", "The ``x`` of every process of the group, concatenated on axis 0.")
sum_scatter = _collective("sum_scatter", "Sum of ``x`` over the group, axis 0 split among the processes.")


def send(x, dst, *, group=None, stream=None):
    """Send ``x`` to process ``dst`` of the group.

    Args:
        x (array): the array to send.
        dst (int): the destination rank.
        group (Group, optional): the group. Default: the global group.
        stream (Stream, optional): unused.

    Raises:
        ValueError: always; there is no other process in the singleton group.
    """
    _group("send", group)
    _array("send", x)
    raise ValueError("Cannot send to a singleton group")


def recv(shape, dtype, src, *, group=None, stream=None):
    """Receive an array of ``shape`` and ``dtype`` from process ``src``.

    Args:
        shape (Sequence[int]): the shape of the array to receive.
        dtype (Dtype): its dtype.
        src (int): the source rank.
        group (Group, optional): the group. Default: the global group.
        stream (Stream, optional): unused.

    Raises:
        ValueError: always; there is no other process in the singleton group.
    """
    _group("recv", group)
    raise ValueError("Cannot recv from a singleton group")


def recv_like(x, src, *, group=None, stream=None):
    """Receive an array with ``x``'s shape and dtype from process ``src``.

    Args:
        x (array): the template array.
        src (int): the source rank.
        group (Group, optional): the group. Default: the global group.
        stream (Stream, optional): unused.

    Raises:
        ValueError: always; there is no other process in the singleton group.
    """
    _group("recv_like", group)
    _array("recv_like", x)
    raise ValueError("Cannot recv from a singleton group")


def install(core) -> None:
    """Adds the ``distributed`` submodule to the ember.core module."""
    mod = types.ModuleType("ember.core.distributed", __doc__)
    for name in ("Group", "init", "is_available", "all_sum", "all_max", "all_min", "all_gather",
                 "sum_scatter", "send", "recv", "recv_like"):
        obj = globals()[name]
        obj.__module__ = "ember.core.distributed"
        setattr(mod, name, obj)
    core.distributed = mod
    sys.modules["ember.core.distributed"] = mod
