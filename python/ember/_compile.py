"""``compile``: trace a function once per kind of input, replay the graph.

``compile(fun)`` returns a function that, on its first call for a given
kind of arguments, calls ``fun`` on placeholders (arrays of the arguments'
shapes and dtypes without values), records the graph it builds, simplifies
it in the engine (``csrc/ember/compile/``: common subexpressions, constants,
no-op views; then the fusion hook) and keeps it. Every later call with
arguments of the same kind replays that graph on the new arrays: ``fun``
itself does not run again, so its Python side effects happen once per
trace, as in MLX.

The cache key of a call is the arguments' pytree structure (the walker of
``python/src/trees.cpp``), each array's shape (its rank when
``shapeless=True``) and dtype, the values of the non-array leaves (None,
bool, int, float, str), the static arguments' values and the structure of
the captured state. A call whose key is new traces again.

Captured state: ``inputs`` and ``outputs`` name trees (lists, dicts, an
``nn.Module``, an optimizer or its ``state``, ``mx.random.state``) that
``fun`` reads and writes besides its arguments. Their arrays become extra
inputs and outputs of the graph; after each call the arrays of ``outputs``
are replaced in place (the lists and dicts holding them get the new arrays),
and with ``mx.random.state`` in ``inputs`` the global key is a traced input:
the samplers inside split it as they would eagerly; with it in ``outputs``
too, the global key advances on every call as it would eagerly.

Beyond MLX (JAX's workflow): ``static_argnums`` / ``static_argnames``
(hashed into the key, a retrace when they change), ``lower(*args)`` (the
traced graph, with ``as_text()`` and ``compile()``: a callable that checks
its arguments and has ``as_text()`` and ``cost_analysis()``), and
``make_jaxpr(fun)(*args)``, the printable graph of ``fun``.

``disable_compile()`` / ``enable_compile()`` switch compilation off and on
for every compiled function; the environment variable
``EMBER_DISABLE_COMPILE`` (or MLX's ``MLX_DISABLE_COMPILE``) set to a
non-empty value other than ``0`` starts Ember with it off. Compiled
functions then call ``fun`` directly.
"""
import functools
import inspect
import os
import threading

_core = None


class _Switch:
    enabled = True


_switch = _Switch()


def _env_disabled():
    for name in ("EMBER_DISABLE_COMPILE", "MLX_DISABLE_COMPILE"):
        v = os.environ.get(name, "")
        if v and v.strip().lower() not in ("0", "false", "no", "off"):
            return True
    return False


def disable_compile():
    """disable_compile() -> None

    Turns compilation off: every compiled function calls the function it
    wraps directly, as if it had not been compiled (results equal;
    Python side effects then happen on every call), and the derivative
    rules that fuse their graphs into kernels when evaluated eagerly (layer
    and RMS norm, softmax, attention, a compiled function's backward) leave
    them unfused. Also set by the environment variable
    ``EMBER_DISABLE_COMPILE`` or ``MLX_DISABLE_COMPILE``.

    Args:
        None: this function takes no argument.

    Returns:
        None.

    >>> import ember.core as mx
    >>> mx.disable_compile(); mx.enable_compile()
    """
    _switch.enabled = False
    _core._set_compile_enabled(False)


def enable_compile():
    """enable_compile() -> None

    Turns compilation back on after :func:`disable_compile` (or the
    environment switch): compiled functions trace and replay again.

    Args:
        None: this function takes no argument.

    Returns:
        None.

    >>> import ember.core as mx
    >>> mx.enable_compile()
    """
    _switch.enabled = True
    _core._set_compile_enabled(True)


class _Entry:
    """One trace: the tape and how to map its outputs back."""

    __slots__ = ("tape", "out_tokens", "n_out", "n_state_out", "random", "random_out", "stats", "raw_text")

    def __init__(self, tape, out_tokens, n_out, n_state_out, random, random_out, stats, raw_text):
        self.tape = tape
        self.out_tokens = out_tokens
        self.n_out = n_out
        self.n_state_out = n_state_out
        self.random = random
        self.random_out = random_out
        self.stats = stats
        self.raw_text = raw_text


_Optimizer = None


def _state_trees(state):
    """(trees, uses_random): the state as trees whose lists and dicts hold
    its arrays: the state itself, then the state dict of each optimizer it
    names at its top level (an optimizer is a leaf of the walker);
    ``random.state`` (a leaf too) sets uses_random."""
    global _Optimizer
    if state is None:
        return [], False
    if _Optimizer is None:
        from .optimizers.optimizers import Optimizer  # the optimizers import ember.core: at first use
        _Optimizer = Optimizer
    Optimizer = _Optimizer
    items = state if isinstance(state, (list, tuple)) else [state]
    trees = [state]
    uses_random = False
    for item in items:
        if item is _core.random.state:
            uses_random = True
        elif isinstance(item, Optimizer):
            trees.append(item.state)
    if state is _core.random.state or isinstance(state, Optimizer):
        trees = trees[1:]
    return trees, uses_random


def _signature_positions(fun):
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return None
    return params


class _Compiled:
    """The function ``compile`` returns."""

    def __init__(self, fun, inputs, outputs, shapeless, static_argnums, static_argnames):
        # name, docstring, __wrapped__ of fun; not its __dict__ (a compiled or transformed
        # function's attributes are its own)
        functools.update_wrapper(self, fun, updated=())
        self._fun = fun
        self._inputs = inputs
        self._outputs = outputs
        self._shapeless = shapeless
        self._cache = {}
        self._lock = threading.RLock()
        if isinstance(static_argnums, int):
            static_argnums = (static_argnums,)
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        nums = []
        for i in static_argnums or ():
            if not isinstance(i, int) or isinstance(i, bool):
                raise TypeError(f"compile(): static_argnums must be ints, got {type(i).__name__}.")
            nums.append(i)
        names = []
        for n in static_argnames or ():
            if not isinstance(n, str):
                raise TypeError(f"compile(): static_argnames must be strings, got {type(n).__name__}.")
            names.append(n)
        # as in JAX: a static name's position is static too, and a static position's name
        params = _signature_positions(fun) if (nums or names) else None
        if params is not None:
            positional = [p.name for p in params
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            for n in list(names):
                if n in positional and positional.index(n) not in nums:
                    nums.append(positional.index(n))
            for i in list(nums):
                if 0 <= i < len(positional) and positional[i] not in names:
                    p = params[i]
                    if p.kind != p.POSITIONAL_ONLY:
                        names.append(positional[i])
        # calls without static arguments or state take the engine's fast path (_fast_cache:
        # argument tokens -> (tape, result tokens)), filled by the first trace of each key
        self._fast = not (nums or names) and inputs is None and outputs is None
        self._fast_cache = {}
        self._mode = 1 if shapeless else 0
        self._static_argnums = tuple(nums)
        self._static_argnames = frozenset(names)
        self._has_static = bool(nums or names)

    # -- keys -------------------------------------------------------------

    def _split(self, args, kwargs):
        """(dynamic args, dynamic kwargs, statics key, statics)."""
        if not self._has_static:
            return args, kwargs, (), None
        n = len(args)
        pos = set()
        for i in self._static_argnums:
            j = i + n if i < 0 else i
            if 0 <= j < n:
                pos.add(j)
        static_pos = {j: args[j] for j in sorted(pos)}
        static_kw = {k: v for k, v in kwargs.items() if k in self._static_argnames}
        key = []
        for where, value in list(static_pos.items()) + sorted(static_kw.items()):
            try:
                hash(value)
            except TypeError:
                label = f"argument {where}" if isinstance(where, int) else f"argument {where!r}"
                raise TypeError(
                    f"compile(): static {label} must be hashable, got an unhashable "
                    f"{type(value).__name__} ({value!r:.60}).") from None
            key.append((where, type(value), value))
        dyn_args = tuple(a for j, a in enumerate(args) if j not in pos)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return dyn_args, dyn_kwargs, tuple(key), (static_pos, static_kw)

    def _merge(self, dyn_args, dyn_kwargs, statics):
        if statics is None:
            return dyn_args, dyn_kwargs
        static_pos, static_kw = statics
        args = list(dyn_args)
        for j in sorted(static_pos):
            args.insert(j, static_pos[j])
        kwargs = dict(dyn_kwargs)
        kwargs.update(static_kw)
        return tuple(args), kwargs

    def _prepare(self, args, kwargs):
        """Everything a call needs before the cache lookup."""
        dyn_args, dyn_kwargs, skey, statics = self._split(args, kwargs)
        arrays, tokens = _core._compile_flatten((dyn_args, dyn_kwargs), 1 if self._shapeless else 0)
        in_trees, uses_random = _state_trees(self._inputs)
        state_arrays = []
        state_tokens = []
        for t in in_trees:
            a, tok = _core._compile_flatten(t, 3)
            state_arrays.extend(a)
            state_tokens.append(tok)
        key = (tokens, tuple(state_tokens), skey, uses_random)
        return key, arrays, tokens, in_trees, state_arrays, uses_random, statics

    # -- tracing ------------------------------------------------------------

    def _trace(self, arrays, tokens, in_trees, state_arrays, uses_random, statics, keep_raw=False):
        core = _core
        ph = [core._compile_placeholder(a.shape, a.dtype) for a in arrays]
        ph_state = [core._compile_placeholder(a.shape, a.dtype) for a in state_arrays]
        dyn_args, dyn_kwargs = core._compile_unflatten(tokens, ph)
        args, kwargs = self._merge(tuple(dyn_args), dyn_kwargs, statics)
        out_trees, random_out = _state_trees(self._outputs)
        offset = 0
        counts = {}
        for t in in_trees:
            n = len(core._compile_flatten(t, 3)[0])
            counts[id(t)] = n
            core._compile_fill(t, ph_state[offset:offset + n])
            offset += n
        ph_key = []
        pushed = False
        try:
            if uses_random:
                ph_key = [core._compile_placeholder((2,), core.uint32)]
                core._random_push_traced_key(ph_key[0])
                pushed = True
            result = core._compile_trace(lambda: self._fun(*args, **kwargs))
            out_arrays, out_tokens = core._compile_flatten(result, 2)
            state_out = []
            for t in out_trees:
                state_out.extend(core._compile_flatten(t, 3)[0])
            if uses_random:
                pushed = False
                state_out.append(core._random_pop_traced_key())
        except BaseException:
            # a failed trace changes no state: the input trees get their arrays back (by
            # position where fun left their structure as it was, else where placeholders remain)
            offset = 0
            for t in in_trees:
                n = len(core._compile_flatten(t, 3)[0])
                if n == counts[id(t)]:
                    core._compile_fill(t, state_arrays[offset:offset + n])
                else:
                    core._compile_fill(t, state_arrays, ph_state)
                offset += counts[id(t)]
            raise
        else:
            for t in in_trees:
                core._compile_fill(t, state_arrays, ph_state)
        finally:
            if pushed:
                core._random_pop_traced_key()
        placeholders = ph + ph_state + ph_key
        outs = out_arrays + state_out
        raw_text = core._compile_record(placeholders, outs).as_text() if keep_raw else None
        tape, stats = core._compile_graph(placeholders, outs, self._shapeless)
        return _Entry(tape, out_tokens, len(out_arrays), len(state_out) - (1 if uses_random else 0),
                      uses_random, uses_random and random_out, stats, raw_text)

    def _entry(self, key, arrays, tokens, in_trees, state_arrays, uses_random, statics, keep_raw=False):
        entry = self._cache.get(key)
        if entry is None or (keep_raw and entry.raw_text is None):
            with self._lock:
                entry = self._cache.get(key)
                if entry is None or (keep_raw and entry.raw_text is None):
                    entry = self._trace(arrays, tokens, in_trees, state_arrays, uses_random, statics, keep_raw)
                    # a trace that captured an outer transform's traced value (a closure over
                    # grad's argument, say) holds it as a constant: good for this call only
                    if not entry.tape.captures_tracers:
                        self._cache[key] = entry
                        if self._fast:
                            self._fast_cache[tokens] = (entry.tape, entry.out_tokens)
        return entry

    def _run(self, entry, arrays, state_arrays):
        core = _core
        inputs = arrays + state_arrays
        if entry.random:
            inputs.append(core.random.state[0])
        outs = entry.tape.replay(inputs)
        n = entry.n_out
        if entry.n_state_out or entry.random:
            out_trees, _ = _state_trees(self._outputs)
            new_state = outs[n:n + entry.n_state_out]
            offset = 0
            for t in out_trees:
                k = len(core._compile_flatten(t, 3)[0])
                core._compile_fill(t, new_state[offset:offset + k])
                offset += k
            if entry.random_out:
                core._random_set_key(outs[-1])
        return core._compile_unflatten(entry.out_tokens, outs[:n])

    def __call__(self, *args, **kwargs):
        # called while an enclosing compile (or export) traces its function:
        # fun's ops join that graph, so that its fusion pass groups them with
        # their neighbours (a cached trace of fun would be one opaque node)
        if not _switch.enabled or _core._tracing_function():
            return self._fun(*args, **kwargs)
        if self._fast:
            hit = _core._compile_fast_call(self._fast_cache, args, kwargs, self._mode)
            if hit is not None:
                return hit[0]
        key, arrays, tokens, in_trees, state_arrays, uses_random, statics = self._prepare(args, kwargs)
        entry = self._entry(key, arrays, tokens, in_trees, state_arrays, uses_random, statics)
        return self._run(entry, arrays, state_arrays)

    def __get__(self, obj, objtype=None):
        # a compiled method: bind like a function
        if obj is None:
            return self
        return functools.partial(self, obj)

    def lower(self, *args, **kwargs):
        """lower(*args, **kwargs) -> Lowered

        Traces the function for these arguments (a cache entry, as a call
        would make) without running it, and returns the traced graph:
        ``as_text()`` prints it as traced, ``compile()`` gives the callable
        for exactly these shapes and dtypes.

        Args:
            *args: example arguments (arrays or pytrees of them, constants).
            **kwargs: example keyword arguments.

        Returns:
            Lowered: the traced graph.
        """
        key, arrays, tokens, in_trees, state_arrays, uses_random, statics = self._prepare(args, kwargs)
        entry = self._entry(key, arrays, tokens, in_trees, state_arrays, uses_random, statics, keep_raw=True)
        return Lowered(self, key, entry)


class Lowered:
    """The traced graph of a compiled function for one kind of arguments
    (``compile(f).lower(*args)``)."""

    def __init__(self, compiled, key, entry):
        self._compiled = compiled
        self._key = key
        self._entry = entry

    def as_text(self):
        """as_text() -> str

        The graph as traced, before the passes: one line per node, in the
        form ``name:dtype[shape] = Primitive inputs``, with the captured
        constants before ``;`` and the inputs after it.

        Returns:
            str: the graph's text.
        """
        return self._entry.raw_text

    def compile(self):
        """compile() -> Compiled

        The simplified (and fused) graph of these arguments as a callable
        that accepts only arguments of the lowered structure, shapes and
        dtypes (TypeError otherwise).

        Returns:
            Compiled: the callable.
        """
        return Compiled(self._compiled, self._key, self._entry)

    def cost_analysis(self):
        """cost_analysis() -> dict

        The work of one call of the compiled graph, as
        :meth:`Compiled.cost_analysis` gives it.

        Returns:
            dict: ``{"flops": float, "bytes accessed": float}``.
        """
        return self._entry.tape.cost_analysis()

    def __str__(self):
        return self.as_text()

    __repr__ = __str__


class Compiled:
    """A compiled function fixed to one kind of arguments
    (``compile(f).lower(*args).compile()``)."""

    def __init__(self, compiled, key, entry):
        self._compiled = compiled
        self._key = key
        self._entry = entry

    def __call__(self, *args, **kwargs):
        c = self._compiled
        key, arrays, tokens, in_trees, state_arrays, uses_random, statics = c._prepare(args, kwargs)
        if key != self._key:
            expected = [(tuple(s), d) for s, d in self._entry.tape.input_shapes]
            got = [(tuple(a.shape), a.dtype) for a in arrays + state_arrays]
            raise TypeError(
                "[compile] The arguments do not match the lowered ones: expected arrays "
                f"{_describe(expected)}, got {_describe(got)}"
                + ("" if key[1:] == self._key[1:] and len(expected) == len(got) else
                   " (or the tree structure, constants, static arguments or state differ)") + ".")
        return c._run(self._entry, arrays, state_arrays)

    def as_text(self):
        """as_text() -> str

        The graph after the passes (common subexpressions merged,
        constants merged, no-ops removed, elementwise groups fused), one
        line per node as :meth:`Lowered.as_text`.

        Returns:
            str: the graph's text.
        """
        return self._entry.tape.as_text()

    def cost_analysis(self):
        """cost_analysis() -> dict

        The work of one call: ``flops`` (one per output element of an
        elementwise op, one per input element of a reduction, ``2*M*N*K``
        per matmul) and ``bytes accessed`` (each node's inputs read and
        outputs written; views move nothing).

        Returns:
            dict: ``{"flops": float, "bytes accessed": float}``.
        """
        return self._entry.tape.cost_analysis()


def _describe(pairs):
    return "[" + ", ".join(f"{str(d).rsplit('.', 1)[-1]}{list(s)}" for s, d in pairs) + "]"


def compile(fun, inputs=None, outputs=None, shapeless=False, *, static_argnums=(), static_argnames=()):
    """compile(fun, inputs=None, outputs=None, shapeless=False, *, static_argnums=(), static_argnames=())

    Returns a compiled version of ``fun``: traced once per kind of
    arguments (structure, shapes, dtypes, constants, static arguments),
    simplified, and replayed on every call. ``fun``'s Python code (and its
    side effects) runs only when it is traced; an array that depends on
    the arguments cannot be evaluated inside it (ValueError).

    Args:
        fun (Callable): the function to compile: pytrees of arrays and
            constants (None, bool, int, float, str) in, pytrees out.
        inputs (list or dict, optional): state ``fun`` reads implicitly:
            trees of arrays, an ``nn.Module``, an optimizer (its state) or
            ``mx.random.state``. Default: None.
        outputs (list or dict, optional): state ``fun`` writes implicitly;
            its arrays are replaced after each call. Default: None.
        shapeless (bool): reuse one trace for inputs of any shape of the
            same rank and dtype; a node whose shape cannot follow raises
            ValueError naming it. Default: False.
        static_argnums (int or tuple of int): positional arguments passed
            to ``fun`` as they are, their values (hashable) in the cache
            key. Default: ().
        static_argnames (str or tuple of str): keyword arguments treated
            the same way. Default: ().

    Returns:
        Callable: the compiled function, with ``lower(*args)``.

    Raises:
        TypeError: ``fun`` is not callable, or a static argument is unhashable.

    >>> import ember.core as mx
    >>> f = mx.compile(lambda x: mx.exp(x) * 2)
    >>> f(mx.array([0.0, 1.0]))
    array([2, 5.43656], dtype=float32)
    """
    if not callable(fun):
        raise TypeError(f"compile(): fun must be callable, got {type(fun).__name__}.")
    if not isinstance(shapeless, bool):
        raise TypeError(f"compile(): shapeless must be a bool, got {type(shapeless).__name__}.")
    return _Compiled(fun, inputs, outputs, shapeless, static_argnums, static_argnames)


class _TracedIR:
    """The printable graph ``make_jaxpr`` returns."""

    def __init__(self, text, num_nodes):
        self.text = text
        self.num_nodes = num_nodes

    def __str__(self):
        return self.text

    __repr__ = __str__


def make_jaxpr(fun, static_argnums=(), static_argnames=()):
    """make_jaxpr(fun, static_argnums=(), static_argnames=())

    JAX's ``make_jaxpr``: a function that traces ``fun`` for the arguments
    it is given and returns the traced graph, printable (one line per node:
    ``name:dtype[shape] = Primitive inputs``), without compiling or running
    it.

    Args:
        fun (Callable): the function to trace.
        static_argnums (int or tuple of int): positional arguments passed
            as they are. Default: ().
        static_argnames (str or tuple of str): keyword arguments passed as
            they are. Default: ().

    Returns:
        Callable: ``(*args, **kwargs) ->`` the graph (``str()`` prints it;
        ``num_nodes`` counts its nodes).

    >>> import ember.core as mx
    >>> mx.make_jaxpr(lambda x: x * 2)(mx.array([1.0, 2.0]))
    { lambda b:f32[] ; a:f32[2]. let
        c:f32[2] = Multiply a b
      in (c) }
    """
    if not callable(fun):
        raise TypeError(f"make_jaxpr(): fun must be callable, got {type(fun).__name__}.")
    c = _Compiled(fun, None, None, False, static_argnums, static_argnames)

    @functools.wraps(fun)
    def traced(*args, **kwargs):
        key, arrays, tokens, in_trees, state_arrays, uses_random, statics = c._prepare(args, kwargs)
        core = _core
        ph = [core._compile_placeholder(a.shape, a.dtype) for a in arrays]
        dyn_args, dyn_kwargs = core._compile_unflatten(tokens, ph)
        a, k = c._merge(tuple(dyn_args), dyn_kwargs, statics)
        result = core._compile_trace(lambda: fun(*a, **k))
        outs, _ = core._compile_flatten(result, 2)
        tape = core._compile_record(ph, outs)
        return _TracedIR(tape.as_text(), tape.num_nodes)

    return traced


def export_to_dot(file, *args, **kwargs):
    """export_to_dot(file, *args, **kwargs) -> None

    Writes the unevaluated graph behind the given arrays in Graphviz's DOT
    language: a box per node (its primitive), an ellipse per array (name,
    dtype and shape), the arrays without a node (inputs, computed values)
    at the top and the given outputs at the bottom. Render it with
    ``dot -Tsvg graph.dot``.

    Args:
        file (str, path or file object): where to write (a path is
            created or overwritten; a file object gets ``write(text)``).
        *args (array or tree of arrays): the outputs whose graph to write.
        **kwargs (array): names for arrays of the graph (``x=x`` labels
            the array ``x`` "x").

    Returns:
        None.

    Raises:
        TypeError: a keyword value is not an array.

    >>> import ember.core as mx, io
    >>> buf = io.StringIO()
    >>> x = mx.array([1.0, 2.0])
    >>> mx.export_to_dot(buf, mx.exp(x), x=x)
    >>> buf.getvalue().count("label=")
    3
    """
    core = _core
    outputs, _ = core._compile_flatten(args, 2)
    names = []
    for k, v in kwargs.items():
        if not isinstance(v, core.array):
            raise TypeError(f"export_to_dot(): the name {k!r} must label an array, got {type(v).__name__}.")
        names.append((v, k))
    text = core._graph_dot(outputs, names)
    if isinstance(file, (str, os.PathLike)):
        with open(file, "w") as f:
            f.write(text)
    elif hasattr(file, "write"):
        file.write(text)
    else:
        raise TypeError(f"export_to_dot(): file must be a path or have write(), got {type(file).__name__}.")


# ---- export and import ----

_EXPORT_INPUTS_MSG = ("[export_function] Inputs can either be a variable number of positional and keyword arrays "
                      "or a single tuple and/or dictionary of arrays.")


def _export_arguments(args, kwargs, fn="export_function"):
    """MLX's two forms of a call's arrays: ``*args, **kwargs`` of arrays, or a
    tuple (or list) and/or a dict of arrays. Returns (list of positional
    arrays, dict of keyword arrays)."""
    array = _core.array
    if not kwargs and 1 <= len(args) <= 2 and not isinstance(args[0], array):
        first = args[0]
        rest = args[1] if len(args) == 2 else None
        if isinstance(first, dict) and rest is None:
            pos, kw = [], first
        elif isinstance(first, (tuple, list)) and (rest is None or isinstance(rest, dict)):
            pos, kw = list(first), dict(rest or {})
        else:
            raise ValueError(_EXPORT_INPUTS_MSG.replace("export_function", fn))
    else:
        pos, kw = list(args), dict(kwargs)
    if not all(isinstance(a, array) for a in pos) or not all(
            isinstance(k, str) and isinstance(v, array) for k, v in kw.items()):
        raise ValueError(_EXPORT_INPUTS_MSG.replace("export_function", fn))
    return pos, kw


def _export_one(fun, args, kwargs):
    """The trace of ``fun`` on placeholders shaped like the given arrays."""
    core = _core
    pos, kw = _export_arguments(args, kwargs)
    names = sorted(kw)
    ph_pos = [core._compile_placeholder(a.shape, a.dtype) for a in pos]
    ph_kw = {k: core._compile_placeholder(kw[k].shape, kw[k].dtype) for k in names}
    result = core._compile_trace(lambda: fun(*ph_pos, **ph_kw))
    if isinstance(result, core.array):
        outs = [result]
    elif isinstance(result, (tuple, list)) and all(isinstance(o, core.array) for o in result):
        outs = list(result)
    else:
        raise ValueError("[export_function] Outputs can be either a single array, a tuple, or a list of arrays.")
    return core._export_trace(ph_pos + [ph_kw[k] for k in names], outs, len(pos), names)


def _check_path(file, fn):
    if not isinstance(file, (str, os.PathLike)):
        raise TypeError(f"{fn}(): file must be a path (str or os.PathLike), got {type(file).__name__}.")
    return os.fspath(file)


def _check_metadata(metadata, fn):
    if metadata is not None and not isinstance(metadata, str):
        raise TypeError(f"{fn}(): metadata must be a str or None, got {type(metadata).__name__}.")
    return metadata or ""


def _letters(k):
    """Value names of the callback form: A, B, ..., Z, AA, AB, ..."""
    s = ""
    while True:
        s = chr(ord("A") + k % 26) + s
        k = k // 26 - 1
        if k < 0:
            return s


def _export_to_callback(callback, trace):
    """MLX's callback form: the trace as dicts, one call each (inputs,
    keyword inputs, outputs, constants, then every primitive in order)."""
    g = trace.graph()
    names = {}

    def name(v):
        if v not in names:
            names[v] = _letters(len(names))
        return names[v]

    def entry(value):
        v, shape, dtype = value
        return (name(v), tuple(shape), dtype)

    inputs = [entry(v) for v in g["inputs"]]
    keywords = [(k, inputs[g["n_args"] + i][0]) for i, k in enumerate(g["kwarg_names"])]
    outputs = [entry(v) for v in g["outputs"]]
    constants = [(name(v), a) for v, a in g["constants"]]
    callback({"type": "inputs", "inputs": inputs})
    callback({"type": "keyword_inputs", "keywords": keywords})
    callback({"type": "outputs", "outputs": outputs})
    callback({"type": "constants", "constants": constants})
    for prim, ins, outs, arguments in g["steps"]:
        callback({"type": "primitive", "name": prim, "inputs": [entry(v) for v in ins],
                  "outputs": [entry(v) for v in outs], "arguments": list(arguments)})


def export_function(file_or_callback, fun, *args, shapeless=False, metadata=None, **kwargs):
    """export_function(file_or_callback, fun, *args, shapeless=False, metadata=None, **kwargs) -> None

    Traces ``fun`` on placeholder arrays shaped like the example arrays and
    writes the traced graph to a file, which ``import_function`` reads
    back in any later process (or a C++ program through
    ``ember/compile/export.h``). Arrays the function captures (a model's
    parameters, constants) are stored in the file. Given a callable instead
    of a path, the graph goes to it as dicts, one call each, as MLX sends
    them: ``{"type": "inputs", "inputs": [(name, shape, dtype), ...]}``,
    ``"keyword_inputs"`` (``"keywords"``: (keyword, name) pairs),
    ``"outputs"``, ``"constants"`` ((name, array) pairs) and one
    ``"primitive"`` per node (``"name"``, ``"inputs"``, ``"outputs"``,
    ``"arguments"``: Ember's primitive names and their parameters as the
    file stores them).

    Args:
        file_or_callback (str, os.PathLike or Callable): the path to write,
            or a function receiving the graph.
        fun (Callable): a function of arrays returning an array, or a tuple
            or list of arrays.
        *args (array): example positional arrays; or one tuple of arrays
            and/or one dict of keyword arrays.
        shapeless (bool): let the imported function accept arrays of other
            shapes of the same ranks (the graph's shapes are recomputed; a
            step that cannot follow raises when called). Default: ``False``.
        metadata (str, optional): a string stored beside the function
            (``import_function(file, return_metadata=True)`` returns it);
            files only.
        **kwargs (array): example keyword arrays.

    Returns:
        None.

    Raises:
        ValueError: the inputs or outputs are not arrays (as above), the
            function uses a primitive that cannot be exported (a custom
            function, a collective), or metadata is given with a callback.

    >>> import ember.core as mx, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "f.emfn")
    >>> mx.export_function(path, lambda x, y: x * 2 + y, mx.array([1.0]), mx.array([3.0]))
    >>> mx.import_function(path)(mx.array([2.0]), mx.array([1.0]))
    (array([5], dtype=float32),)
    """
    if not callable(fun):
        raise TypeError(f"export_function(): fun must be callable, got {type(fun).__name__}.")
    if callable(file_or_callback) and not isinstance(file_or_callback, (str, os.PathLike)):
        if metadata is not None:
            raise ValueError("[export_function] The metadata argument is only supported when exporting to a file, "
                             "not when using a callback.")
        _export_to_callback(file_or_callback, _export_one(fun, args, kwargs))
        return
    path = _check_path(file_or_callback, "export_function")
    md = _check_metadata(metadata, "export_function")
    trace = _export_one(fun, args, kwargs)
    _core._export_write(path, _core._export_bytes([trace], bool(shapeless), md))


class _ImportedFunction:
    """A function read by import_function: calls run the trace matching the arguments."""

    def __init__(self, imported):
        self._imported = imported

    def __call__(self, *args, **kwargs):
        pos, kw = _export_arguments(args, kwargs, "import_function::call") if (args or kwargs) else ([], {})
        return tuple(self._imported(pos, kw))

    def __repr__(self):
        return f"<imported function with {self._imported.num_traces} trace(s)>"


def import_function(file, return_metadata=False):
    """import_function(file, return_metadata=False) -> Callable

    Reads a function written by ``export_function`` or ``exporter``. The
    file is validated as untrusted input (magic bytes, format version,
    checksum, bounded sizes, known operations, and every step rebuilt
    through the ops with the shapes and dtypes the file records), so a
    damaged file raises instead of running. The returned function takes
    the arrays as the exported one did (``*args, **kwargs``, or a tuple
    and/or a dict), runs the first stored trace that matches their number,
    keyword names, shapes (ranks when exported shapeless) and dtypes, and
    returns a tuple of arrays. It composes with ``grad``, ``vmap`` and
    ``compile`` like any function of arrays.

    Args:
        file (str or os.PathLike): the path to read.
        return_metadata (bool): also return the metadata string stored
            with the function. Default: ``False``.

    Returns:
        Callable, or (Callable, str) with ``return_metadata=True``.

    Raises:
        RuntimeError: the file cannot be opened.
        ValueError: the file is not a valid export file; a call matches no
            stored trace (the message lists them).

    >>> import ember.core as mx, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "g.emfn")
    >>> mx.export_function(path, lambda x: mx.exp(x), mx.zeros((2,)), metadata="v1")
    >>> f, md = mx.import_function(path, return_metadata=True)
    >>> f(mx.zeros((2,)))[0], md
    (array([1, 1], dtype=float32), 'v1')
    """
    path = _check_path(file, "import_function")
    imported = _core._import_file(path)
    f = _ImportedFunction(imported)
    return (f, imported.metadata) if return_metadata else f


class FunctionExporter:
    """Exports several traces of one function to one file (made by ``exporter``).

    Each call traces the function for the arrays it is given and rewrites
    the file with every trace so far; ``close()`` (or leaving the ``with``
    block) ends the export. The imported function runs the trace matching
    each call's arguments.
    """

    def __init__(self, file, fun, shapeless=False, metadata=None):
        self._path = _check_path(file, "exporter")
        self._metadata = _check_metadata(metadata, "exporter")
        if not callable(fun):
            raise TypeError(f"exporter(): fun must be callable, got {type(fun).__name__}.")
        self._fun = fun
        self._shapeless = bool(shapeless)
        self._traces = []
        self._closed = False

    def __call__(self, *args, **kwargs):
        if self._closed:
            raise RuntimeError("[export_function] Attempting to write after exporting is closed.")
        self._traces.append(_export_one(self._fun, args, kwargs))
        _core._export_write(self._path, _core._export_bytes(self._traces, self._shapeless, self._metadata))

    def close(self):
        """close() -> None

        Ends the export: the file keeps the traces written so far and later
        calls raise RuntimeError. Closing twice does nothing.

        Args:
            (none)

        Returns:
            None.
        """
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def exporter(file, fun, *, shapeless=False, metadata=None):
    """exporter(file, fun, *, shapeless=False, metadata=None) -> FunctionExporter

    A ``FunctionExporter`` that writes several traces of ``fun`` (one per
    call, for the arrays of that call) to one file; use it as a context
    manager. The function that ``import_function`` returns picks the trace
    matching each call.

    Args:
        file (str or os.PathLike): the path to write.
        fun (Callable): a function of arrays returning an array, or a tuple
            or list of arrays.
        shapeless (bool): each trace accepts other shapes of the same
            ranks. Default: ``False``.
        metadata (str, optional): a string stored beside the function.

    Returns:
        FunctionExporter.

    >>> import ember.core as mx, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "h.emfn")
    >>> with mx.exporter(path, lambda *xs: sum(xs)) as ex:
    ...     ex(mx.array(1))
    ...     ex(mx.array(1), mx.array(2))
    >>> mx.import_function(path)(mx.array(3), mx.array(4))
    (array(7, dtype=int32),)
    """
    return FunctionExporter(file, fun, shapeless=shapeless, metadata=metadata)


def install(core) -> None:
    """Adds ``compile``, ``disable_compile``, ``enable_compile``,
    ``make_jaxpr``, ``export_to_dot``, ``export_function``,
    ``import_function``, ``exporter`` and ``FunctionExporter`` to the
    ember.core module."""
    global _core
    _core = core
    for f in (compile, disable_compile, enable_compile, make_jaxpr, export_to_dot, export_function, import_function,
              exporter, FunctionExporter):
        f.__module__ = "ember.core"
        setattr(core, f.__name__, f)
    if _env_disabled():
        disable_compile()
