"""Probes for tools/mlx_diff.py: single calls outside the op table, one per
behaviour that issue 14 lists (and its neighbours), run under both backends
as the kind ``probe`` and compared like the table's cases (values, dtypes,
shapes or the exception type).

Each entry is ``(name, description, fn)``; ``fn(mx, np)`` gets the backend's
``mlx.core``-like module and NumPy and returns arrays, Python values or
lists of them, or raises.  The name is what a deliberate entry of
docs/mlx-differences.md names (``- `probe:take` `empty axis`: reason``).
"""

import threading

PROBES = []


def probe(name, desc, ref=None):
    """``ref(np)``: a NumPy reference of the result (the report then says
    which side agrees with it)."""
    def deco(fn):
        PROBES.append((f"probe:{name}", desc, fn, ref))
        return fn
    return deco


_NPF = {"arcsin": "arcsin", "rsqrt": lambda np, x: 1 / np.sqrt(x),
        "sigmoid": lambda np, x: 1 / (1 + np.exp(-x)), "reciprocal": lambda np, x: 1 / x,
        "sign": lambda np, x: x / np.abs(x) if np.iscomplexobj(x) else np.sign(x)}


def _npfun(np, f):
    g = _NPF.get(f, f)
    return (lambda x: g(np, x)) if callable(g) else getattr(np, g)


def _key(mx):
    return mx.random.key(7)


# ---- exception types and validation ---------------------------------------

probe("softmax", "0-d array with axis=0")(lambda mx, np: mx.softmax(mx.array(1.0), axis=0))
probe("softmax", "axis out of range")(lambda mx, np: mx.softmax(mx.zeros((2, 3)), axis=2))
probe("take", "empty axis, non-empty indices")(
    lambda mx, np: mx.take(mx.zeros((0, 3)), mx.array([0]), axis=0))
probe("take", "empty axis, no axis given")(lambda mx, np: mx.take(mx.zeros((0,)), mx.array([0])))
probe("take", "index too large for int32")(lambda mx, np: mx.take(mx.zeros(3), 2 ** 40))
probe("getitem", "boolean mask of the wrong shape")(
    lambda mx, np: mx.zeros((3, 4))[mx.array([True, False])])
probe("getitem", "boolean mask of the right shape")(
    lambda mx, np: mx.arange(12).reshape(3, 4)[mx.array([True, False, True])])
probe("getitem", "index beyond int64")(lambda mx, np: mx.zeros(3)[2 ** 70])
probe("setitem", "boolean mask of the wrong shape")(
    lambda mx, np: _setitem(mx.zeros((3, 4)), mx.array([True, False]), 1.0))
probe("fft.fft", "axis out of range")(lambda mx, np: mx.fft.fft(mx.zeros(4), axis=1))
probe("fft.fft", "n = 0")(lambda mx, np: mx.fft.fft(mx.zeros(4), n=0))
probe("fft.rfft", "axis out of range")(lambda mx, np: mx.fft.rfft(mx.zeros(4), axis=-2))
probe("fft.rfft", "n negative")(lambda mx, np: mx.fft.rfft(mx.zeros(4), n=-1))
probe("fft.fftn", "repeated axes")(lambda mx, np: mx.fft.fftn(mx.zeros((4, 4)), axes=[0, 0]))
probe("fft.irfft", "n = 0")(lambda mx, np: mx.fft.irfft(mx.zeros(4, mx.complex64), n=0))
probe("pad", "under vmap, widths for the batched rank")(
    lambda mx, np: mx.vmap(lambda x: mx.pad(x, [(1, 1), (1, 1)]))(mx.zeros((2, 3))))
probe("pad", "under vmap, one width")(lambda mx, np: mx.vmap(lambda x: mx.pad(x, 1))(mx.zeros((2, 3))))
probe("pad", "negative width")(lambda mx, np: mx.pad(mx.zeros(3), -1))
probe("searchsorted", "2-d sorted sequence")(
    lambda mx, np: mx.searchsorted(mx.zeros((2, 2)), mx.array([1.0])))
probe("searchsorted", "side='middle'")(
    lambda mx, np: mx.searchsorted(mx.array([1.0, 2.0]), mx.array([1.5]), side="middle"))
probe("searchsorted", "0-d sorted sequence")(
    lambda mx, np: mx.searchsorted(mx.array(1.0), mx.array([1.5])))
probe("arange", "a string")(lambda mx, np: mx.arange("a"))
probe("arange", "step 0")(lambda mx, np: mx.arange(0, 5, 0))
probe("arange", "start and stop None")(lambda mx, np: mx.arange(1, None))
probe("arange", "a list")(lambda mx, np: mx.arange([1, 2]))
probe("arange", "an array")(lambda mx, np: mx.arange(mx.array(3)))
probe("arange", "float range, int dtype")(lambda mx, np: mx.arange(0.5, 4.5, 1.5, dtype=mx.int32))
probe("arange", "huge length")(lambda mx, np: mx.arange(0, 2 ** 40, 1e-9))
probe("zeros", "a dim beyond int32")(lambda mx, np: mx.zeros((2 ** 31,)))
probe("zeros", "a negative dim")(lambda mx, np: mx.zeros((-1, 2)))
probe("reshape", "a dim beyond int32")(lambda mx, np: mx.reshape(mx.zeros(4), (2 ** 31, -1)))
probe("full", "a dim beyond int64")(lambda mx, np: mx.full((2 ** 64,), 1.0))
probe("broadcast_to", "a dim beyond int32")(lambda mx, np: mx.broadcast_to(mx.zeros(1), (2 ** 32,)))
probe("expand_dims", "repeated axes")(lambda mx, np: mx.expand_dims(mx.zeros(3), (0, 0)))
probe("squeeze", "a non-1 axis")(lambda mx, np: mx.squeeze(mx.zeros((2, 3)), 0))
probe("moveaxis", "axis out of range")(lambda mx, np: mx.moveaxis(mx.zeros((2, 3)), 2, 0))
probe("split", "uneven sections")(lambda mx, np: mx.split(mx.zeros(5), 2))
probe("concatenate", "no arrays")(lambda mx, np: mx.concatenate([]))
probe("stack", "different shapes")(lambda mx, np: mx.stack([mx.zeros(2), mx.zeros(3)]))
probe("sum", "axis out of range")(lambda mx, np: mx.sum(mx.zeros((2, 3)), axis=5))
probe("sum", "repeated axes")(lambda mx, np: mx.sum(mx.zeros((2, 3)), axis=(0, 0)))
probe("argmax", "empty array")(lambda mx, np: mx.argmax(mx.zeros((0,))))
probe("topk", "k too large")(lambda mx, np: mx.topk(mx.zeros(3), 5))
probe("matmul", "0-d operand")(lambda mx, np: mx.matmul(mx.array(1.0), mx.zeros(2)))
probe("matmul", "mismatched inner dims")(lambda mx, np: mx.matmul(mx.zeros((2, 3)), mx.zeros((2, 3))))
probe("astype", "a string dtype")(lambda mx, np: mx.zeros(2).astype("float32"))

# ---- construction and conversion --------------------------------------------

probe("array", "list holding a string")(lambda mx, np: mx.array([1, "a"]))
probe("array", "a string")(lambda mx, np: mx.array("abc"))
probe("array", "ragged list")(lambda mx, np: mx.array([[1, 2], [3]]))
probe("array", "list mixing arrays and scalars")(lambda mx, np: mx.array([mx.array(1), 2, 3.5]))
probe("array", "list of arrays and lists")(lambda mx, np: mx.array([mx.array([1, 2]), [3, 4]]))
probe("array", "list of arrays of different dtypes")(
    lambda mx, np: mx.array([mx.array([1, 2], mx.int8), mx.array([3.5, 4], mx.float16)]))
probe("array", "list of bools and ints")(lambda mx, np: mx.array([True, 2]))
probe("array", "copy=False of a numpy array")(lambda mx, np: mx.array(np.arange(3.0), copy=False))
probe("array", "numpy float64 array")(lambda mx, np: mx.array(np.arange(3.0)))
probe("array", "numpy negative strides")(lambda mx, np: mx.array(np.arange(4.0, dtype=np.float32)[::-1]))
probe("array", "numpy object array")(lambda mx, np: mx.array(np.array([1, None], dtype=object)))
probe("array", "python int beyond int64")(lambda mx, np: mx.array(2 ** 64))
probe("array", "python int beyond int32")(lambda mx, np: mx.array(2 ** 40))
probe("array", "dtype and a float list to int")(lambda mx, np: mx.array([1.7, -1.7], mx.int32))
probe("array", "an empty list")(lambda mx, np: mx.array([]))
probe("array", "a nested empty list")(lambda mx, np: mx.array([[], []]))
probe("array", "a tuple")(lambda mx, np: mx.array((1, 2)))
probe("array", "a generator")(lambda mx, np: mx.array(x for x in range(3)))
probe("array", "a memoryview")(lambda mx, np: mx.array(memoryview(np.arange(3, dtype=np.int16))))
probe("asarray", "a numpy array")(lambda mx, np: mx.asarray(np.arange(3.0, dtype=np.float32)))
probe("asarray", "shares the numpy buffer")(lambda mx, np: _shares(mx, np, mx.asarray))
probe("array", "shares the numpy buffer")(lambda mx, np: _shares(mx, np, mx.array))
probe("__version__", "is a string")(lambda mx, np: type(mx.__version__).__name__)
probe("array", "__array_namespace__")(lambda mx, np: hasattr(mx.array(1), "__array_namespace__"))
probe("array", "__array_namespace__ is the module")(
    lambda mx, np: mx.array(1).__array_namespace__() is mx)
probe("isdtype", "float32 real floating")(lambda mx, np: mx.isdtype(mx.float32, "real floating"))
probe("isdtype", "int8 integral")(lambda mx, np: mx.isdtype(mx.int8, "integral"))
probe("isdtype", "a tuple of kinds")(lambda mx, np: mx.isdtype(mx.complex64, ("bool", "complex floating")))
probe("vecdot", "through the array namespace")(
    lambda mx, np: mx.array([1.0, 2.0]).__array_namespace__().vecdot(mx.array([1.0, 2.0]), mx.array([3.0, 4.0])))
probe("to_fp8", "values")(lambda mx, np: mx.to_fp8(mx.array([0.0, 1.0, 2.5, -448.0, 1e4, 1e-4])))
probe("from_fp8", "round trip")(
    lambda mx, np: mx.from_fp8(mx.to_fp8(mx.array([0.0, 1.0, 2.5, -448.0, 1e4, 1e-4])), mx.float32))
probe("array", "tolist of bfloat16")(lambda mx, np: mx.array([1.5, 2.0], mx.bfloat16).tolist())
probe("array", "item of a 2-element array")(lambda mx, np: mx.array([1, 2]).item())
probe("array", "len of a 0-d array")(lambda mx, np: len(mx.array(1)))
probe("array", "iterating a 0-d array")(lambda mx, np: list(mx.array(1)))
probe("array", "bool of a 2-element array")(lambda mx, np: bool(mx.array([1, 2])))
probe("array", "int of a float array")(lambda mx, np: int(mx.array(2.7)))
probe("array", "hash")(lambda mx, np: isinstance(hash(mx.array(1)), int))

# ---- interop ---------------------------------------------------------------

probe("from_dlpack", "strided numpy")(
    lambda mx, np: mx.from_dlpack(np.arange(6.0, dtype=np.float32)[::2]))
probe("from_dlpack", "bool numpy")(lambda mx, np: mx.from_dlpack(np.array([True, False])))
probe("from_dlpack", "complex numpy")(lambda mx, np: mx.from_dlpack(np.array([1 + 2j], np.complex64)))
probe("from_dlpack", "2-d transposed numpy")(
    lambda mx, np: mx.from_dlpack(np.arange(6, dtype=np.int32).reshape(2, 3).T))
probe("from_dlpack", "shares the numpy buffer")(lambda mx, np: _shares(mx, np, mx.from_dlpack))
probe("array", "memoryview of an array")(lambda mx, np: bytes(memoryview(mx.array([1, 2], mx.uint8))))
probe("array", "numpy view keeps the array alive")(lambda mx, np: _np_view_alive(mx, np))
probe("subtract", "array minus an __array__ object")(
    lambda mx, np: mx.array([1.0, 2.0]) - _ArrayLike(np.array([0.5, 0.5], np.float32)))
probe("subtract", "__array__ object minus an array")(
    lambda mx, np: _ArrayLike(np.array([0.5, 0.5], np.float32)) - mx.array([1.0, 2.0]))
probe("add", "array plus a __dlpack__ object")(
    lambda mx, np: mx.array([1.0, 2.0]) + _DLPackLike(np.array([0.5, 0.5], np.float32)))
probe("add", "array plus a list")(lambda mx, np: mx.array([1.0, 2.0]) + [1, 2])
probe("add", "array plus a numpy array")(lambda mx, np: mx.array([1, 2], mx.int8) + np.array([1, 2], np.int64))
probe("add", "array plus a numpy scalar")(lambda mx, np: mx.array([1, 2], mx.int8) + np.int64(3))
probe("add", "array plus a string")(lambda mx, np: mx.array([1.0]) + "a")
probe("equal", "array == None")(lambda mx, np: mx.array([1.0]) == None)  # noqa: E711

# ---- complex64 ---------------------------------------------------------------

_INF = float("inf")
_NAN = float("nan")
probe("isposinf", "complex input")(lambda mx, np: mx.isposinf(mx.array([complex(_INF, 0), 1j])))
probe("isneginf", "complex input")(lambda mx, np: mx.isneginf(mx.array([complex(-_INF, 0), 1j])))
probe("isinf", "complex input")(lambda mx, np: mx.isinf(mx.array([complex(1, _INF), 1j])))
probe("isnan", "complex input")(lambda mx, np: mx.isnan(mx.array([complex(1, _NAN), 1j])))
probe("logaddexp", "complex inputs")(
    lambda mx, np: mx.logaddexp(mx.array([1 + 1j, 0.5j]), mx.array([2 + 0j, -1 + 0.25j])))
probe("addmm", "complex64")(lambda mx, np: mx.addmm(
    mx.array([[1 + 1j, 2], [0, 1j]]), mx.array([[1j, 2], [3, 4 - 1j]]), mx.array([[1, 1j], [2j, 1]]),
    alpha=2.0, beta=0.5))
probe("matmul", "complex gemv")(lambda mx, np: mx.matmul(mx.array([[1 + 1j, 2], [0, 1j]]),
                                                         mx.array([1j, 2 - 1j])))
probe("matmul", "complex vector-matrix")(lambda mx, np: mx.matmul(mx.array([1j, 2 - 1j]),
                                                                  mx.array([[1 + 1j, 2], [0, 1j]])))
probe("sum", "complex with a NaN")(lambda mx, np: mx.sum(mx.array([complex(_NAN, 0), 1 + 1j])))
probe("prod", "complex with a NaN")(lambda mx, np: mx.prod(mx.array([complex(0, _NAN), 1 + 1j])))
probe("max", "complex with a NaN")(lambda mx, np: mx.max(mx.array([complex(_NAN, 0), 1 + 1j, 2])))
probe("min", "complex with a NaN")(lambda mx, np: mx.min(mx.array([1 + 1j, complex(0, _NAN), 2])))
probe("mean", "complex")(lambda mx, np: mx.mean(mx.array([1 + 1j, 2 - 3j, 0.5j])))
_C = [0.5 + 0.25j, -3 + 2j, 10 + 10j, 1e-4j, -0.75 - 30j, 40 + 0.5j]
_L32 = [1e4, -1e6, 3e9, 1e20, 8.5e37, -1e38]
_L64 = [1e4, -1e6, 3e9, 1e20, 1e300]
for _f in ["sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "log", "sqrt", "arcsin", "arccos",
           "arctan", "arcsinh", "arccosh", "arctanh", "expm1", "log1p", "log2", "log10", "rsqrt",
           "sigmoid", "square", "reciprocal", "sign", "abs"]:
    probe(_f, "complex64", ref=lambda np, f=_f: _npfun(np, f)(
        np.array(_C, np.complex64).astype(np.complex128)))(
        lambda mx, np, f=_f: getattr(mx, f)(mx.array(_C)))
    probe(_f, "float32 large arguments", ref=lambda np, f=_f: _npfun(np, f)(
        np.array(_L32, np.float32).astype(np.float64)))(
        lambda mx, np, f=_f: getattr(mx, f)(mx.array(_L32)))
for _f in ["sin", "cos", "tan"]:
    probe(_f, "float64 large arguments", ref=lambda np, f=_f: _npfun(np, f)(np.array(_L64)))(
        lambda mx, np, f=_f: getattr(mx, f)(mx.array(_L64, mx.float64)))

# ---- transforms ------------------------------------------------------------

probe("grad", "integer input")(lambda mx, np: mx.grad(lambda x: (x * x).sum())(mx.array([1, 2])))
probe("grad", "bool input")(lambda mx, np: mx.grad(lambda x: x.sum())(mx.array([True])))
probe("vjp", "integer primal")(lambda mx, np: mx.vjp(lambda x: x * 2, [mx.array([1, 2])], [mx.array([1, 1])]))
probe("jvp", "integer primal")(lambda mx, np: mx.jvp(lambda x: x * 2, [mx.array([1, 2])], [mx.array([1, 1])]))
probe("jvp", "float16 tangent for a float32 primal")(
    lambda mx, np: mx.jvp(lambda x: x * 2, [mx.array([1.0])], [mx.array([1.0], mx.float16)]))
probe("jvp", "float64 tangent for a float32 primal")(
    lambda mx, np: mx.jvp(lambda x: mx.sin(x), [mx.array([1.0])], [mx.array([1.0], mx.float64)]))
probe("jvp", "fewer tangents than primals")(
    lambda mx, np: mx.jvp(lambda x, y: x * y, [mx.array(1.0), mx.array(2.0)], [mx.array(1.0)]))
probe("jvp", "tangent of another shape")(
    lambda mx, np: mx.jvp(lambda x: x * 2, [mx.array([1.0, 2.0])], [mx.array([1.0])]))
for _r in ["sum", "prod", "max", "min", "mean", "var", "std", "logsumexp", "all", "argmax"]:
    probe("jvp", f"of {_r}")(lambda mx, np, r=_r: mx.jvp(
        lambda x: getattr(mx, r)(x, axis=0), [mx.array([[1.0, 2.0], [3.0, 0.5]])],
        [mx.array([[1.0, -1.0], [0.5, 2.0]])]))
probe("grad", "through an in-place update of a captured array")(lambda mx, np: _captured_update(mx))
probe("grad", "through an in-place update of the argument")(lambda mx, np: mx.grad(
    lambda x: (_setitem(x, 0, 5.0) * x).sum())(mx.array([1.0, 2.0, 3.0])))
probe("grad", "index computed from the input, no stop_gradient")(lambda mx, np: mx.grad(
    lambda x: mx.take_along_axis(x, mx.argsort(x), axis=0).sum())(mx.array([3.0, 1.0, 2.0])))
probe("grad", "float index array as an argument")(lambda mx, np: mx.grad(
    lambda x, i: mx.take(x, i.astype(mx.int32)).sum(), argnums=1)(mx.array([1.0, 2.0]), mx.array([0.0])))
probe("vjp", "cotangent is a new object")(lambda mx, np: _cot_is_new(mx))
probe("grad", "gradient is a new object")(lambda mx, np: _grad_is_new(mx))
probe("vmap", "out_axes a 1-tuple for a single output")(
    lambda mx, np: mx.vmap(lambda x: x * 2, out_axes=(0,))(mx.zeros((2, 3))))
probe("vmap", "in_axes a bare int for two arguments")(
    lambda mx, np: mx.vmap(lambda x, y: x + y, in_axes=1)(mx.zeros((2, 3)), mx.ones((2, 3))))
probe("vmap", "out_axes beyond the output rank")(
    lambda mx, np: mx.vmap(lambda x: x.sum(), out_axes=1)(mx.zeros((2, 3))))
probe("vmap", "batch sizes that disagree")(
    lambda mx, np: mx.vmap(lambda x, y: x + y)(mx.zeros((2, 3)), mx.ones((3, 3))))
probe("vmap", "masked scatter")(lambda mx, np: mx.vmap(lambda x, m: _setitem(x, m, 0.0))(
    mx.arange(6.0).reshape(2, 3), mx.array([[True, False, True], [False, True, False]])))
probe("vmap", "masked gather")(lambda mx, np: mx.vmap(lambda x, m: mx.where(m, x, 0.0).sum())(
    mx.arange(6.0).reshape(2, 3), mx.array([[True, False, True], [False, True, False]])))
probe("vmap", "scatter into a captured array")(lambda mx, np: mx.vmap(
    lambda i: _setitem(mx.zeros(4), i, 1.0))(mx.array([0, 2])))
probe("vmap", "of a function returning a Python scalar")(lambda mx, np: mx.vmap(lambda x: 1.0)(mx.zeros(2)))
probe("custom_function", "vjp rule calling an op with stream=")(lambda mx, np: _custom_stream(mx))
probe("checkpoint", "grad")(lambda mx, np: mx.grad(mx.checkpoint(lambda x: mx.sin(x).sum()))(mx.array([1.0, 2.0])))
probe("value_and_grad", "a tuple output (value, aux)")(lambda mx, np: mx.value_and_grad(
    lambda x: (x.sum(), x * 2))(mx.array([1.0, 2.0])))
probe("grad", "a non-scalar output")(lambda mx, np: mx.grad(lambda x: x * 2)(mx.array([1.0, 2.0])))
probe("grad", "argnums out of range")(lambda mx, np: mx.grad(lambda x: x.sum(), argnums=1)(mx.array([1.0])))
probe("grad", "a dict argument")(lambda mx, np: mx.grad(lambda d: (d["a"] * d["b"]).sum())(
    {"a": mx.array([1.0, 2.0]), "b": mx.array([3.0, 4.0])}))
probe("stop_gradient", "grad")(lambda mx, np: mx.grad(lambda x: (mx.stop_gradient(x) * x).sum())(mx.array([2.0])))

# ---- eval and streams --------------------------------------------------------

probe("async_eval", "inside grad")(lambda mx, np: mx.grad(lambda x: _async_then(mx, x))(mx.array([1.0])))
probe("async_eval", "inside vmap")(lambda mx, np: mx.vmap(lambda x: _async_then(mx, x))(mx.array([1.0])))
probe("eval", "inside grad")(lambda mx, np: mx.grad(lambda x: _eval_then(mx, x))(mx.array([1.0])))
probe("eval", "a non-array argument")(lambda mx, np: mx.eval(1))
probe("eval", "None")(lambda mx, np: mx.eval(None))
probe("clear_cache", "cache memory afterwards")(lambda mx, np: _after_clear(mx))
probe("ThreadLocalStream", "used from several threads")(lambda mx, np: _tls_threads(mx))
probe("new_stream", "ops on it")(lambda mx, np: mx.add(mx.array([1.0]), 1.0, stream=mx.new_stream(mx.cpu)))
probe("default_stream", "of the cpu")(lambda mx, np: str(mx.default_stream(mx.cpu).device))

# ---- random ------------------------------------------------------------------

probe("random.bernoulli", "p of another shape than shape")(
    lambda mx, np: mx.random.bernoulli(mx.array([0.5, 0.5]), shape=(3,), key=_key(mx)))
probe("random.bernoulli", "p broadcast to shape")(
    lambda mx, np: mx.random.bernoulli(mx.array([0.1, 0.9]), shape=(3, 2), key=_key(mx)))
probe("random.bernoulli", "p above 1")(lambda mx, np: mx.random.bernoulli(2.0, key=_key(mx)))
probe("random.bernoulli", "integer p")(lambda mx, np: mx.random.bernoulli(mx.array([1, 0]), key=_key(mx)))
probe("random.bernoulli", "default p")(lambda mx, np: mx.random.bernoulli(shape=(4,), key=_key(mx)))
probe("random.normal", "array loc and scale")(lambda mx, np: mx.random.normal(
    shape=(2,), loc=mx.array([0.0, 10.0]), scale=mx.array([1.0, 2.0]), key=_key(mx)))
probe("random.normal", "loc broadcast to shape")(lambda mx, np: mx.random.normal(
    shape=(3, 2), loc=mx.array([0.0, 10.0]), key=_key(mx)))
probe("random.normal", "loc of another shape than shape")(lambda mx, np: mx.random.normal(
    shape=(3,), loc=mx.array([0.0, 10.0]), key=_key(mx)))
probe("random.normal", "no shape, array loc")(lambda mx, np: mx.random.normal(
    loc=mx.array([0.0, 10.0]), key=_key(mx)))
probe("random.normal", "integer dtype")(lambda mx, np: mx.random.normal((2,), dtype=mx.int32, key=_key(mx)))
probe("random.laplace", "array loc and scale")(lambda mx, np: mx.random.laplace(
    shape=(2,), loc=mx.array([0.0, 10.0]), scale=mx.array([1.0, 2.0]), key=_key(mx)))
probe("random.laplace", "loc of another shape than shape")(lambda mx, np: mx.random.laplace(
    shape=(3,), loc=mx.array([0.0, 10.0]), key=_key(mx)))
probe("random.truncated_normal", "lower above upper")(
    lambda mx, np: mx.random.truncated_normal(1.0, 0.0, shape=(3,), key=_key(mx)))
probe("random.truncated_normal", "bounds broadcast with shape")(lambda mx, np: mx.random.truncated_normal(
    mx.array([-1.0, 0.0]), mx.array([1.0, 2.0]), shape=(3, 2), key=_key(mx)))
probe("random.truncated_normal", "bounds of another shape than shape")(
    lambda mx, np: mx.random.truncated_normal(mx.array([-1.0, 0.0]), 1.0, shape=(3,), key=_key(mx)))
probe("random.truncated_normal", "infinite bounds")(
    lambda mx, np: mx.random.truncated_normal(-_INF, _INF, shape=(3,), key=_key(mx)))
probe("random.uniform", "low above high")(lambda mx, np: mx.random.uniform(1.0, 0.0, (3,), key=_key(mx)))
probe("random.uniform", "bounds of another shape than shape")(
    lambda mx, np: mx.random.uniform(mx.array([0.0, 1.0]), 2.0, (3,), key=_key(mx)))
probe("random.randint", "low above high")(lambda mx, np: mx.random.randint(5, 0, (3,), key=_key(mx)))
probe("random.randint", "float dtype")(lambda mx, np: mx.random.randint(0, 5, (3,), dtype=mx.float32, key=_key(mx)))
probe("random.categorical", "num_samples and shape")(lambda mx, np: mx.random.categorical(
    mx.zeros((2, 3)), shape=(2,), num_samples=2, key=_key(mx)))
probe("random.permutation", "an integer")(lambda mx, np: mx.random.permutation(5, key=_key(mx)))
probe("random.split", "num=0")(lambda mx, np: mx.random.split(_key(mx), 0))
probe("random.key", "a negative seed")(lambda mx, np: mx.random.key(-1))
probe("random.key", "a seed beyond uint64")(lambda mx, np: mx.random.key(2 ** 64))
probe("random.uniform", "a bad key")(lambda mx, np: mx.random.uniform(shape=(2,), key=mx.array([1, 2, 3])))


# ---- quantization: MLX's packing, bit for bit ---------------------------------
# quantize / dequantize / quantized_matmul for every mode, affine bits and
# group size and weight dtype. Float outputs come back twice: as arrays (the
# dtypes and shapes compared) and as float32 bit patterns (uint32, compared
# exactly). tests/python/test_mlx_conformance_quantized.py runs the same
# cases on one backend against the NumPy model of the formats.

QUANT_AFFINE = [(b, g) for b in (2, 3, 4, 5, 6, 8) for g in (32, 64, 128)]
QUANT_DTYPES = ("float32", "float16", "bfloat16")
QUANT_FP = [("mxfp4", None), ("mxfp8", None), ("nvfp4", None), ("nvfp4", 3.7), ("nvfp4", 150.0)]


def quant_weights(np, shape=(8, 256), seed=0, gs=32):
    """Random weights with hard groups: a group of quarter steps (ties), of
    zeros, a constant one, a few levels, one dominated by a negative value;
    rows spanning magnitudes from 1e-3 to 300."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(np.float32)
    flat = w.reshape(-1, shape[-1])
    flat[0, :gs] = np.round(flat[0, :gs] * 4) / 4
    flat[1, :gs] = 0
    flat[2, :gs] = 0.75
    flat[3, :gs] = rng.integers(0, 3, gs)
    flat[4, :gs] = rng.standard_normal(gs) * 1e-3
    flat[4, 0] = -5
    flat[5] *= 300
    flat[6] *= 1e-3
    return w


def float_bits(mx, np, a):
    """a's values as float32 bit patterns (half types widen exactly)."""
    return np.array(a.astype(mx.float32)).view(np.uint32)


def _leaves(mx, np, arrays):
    out = []
    for a in arrays:
        out.append(a)
        if a.dtype in (mx.float32, mx.float16, mx.bfloat16):
            out.append(float_bits(mx, np, a))
    return out


def quantize_case(mx, np, mode, bits, gs, dtype, global_scale=None):
    """(the weights as float32, as rounded to dtype; quantize's outputs)."""
    w = mx.array(quant_weights(np, gs=gs or 32)).astype(getattr(mx, dtype))
    kw = {} if global_scale is None else {"global_scale": mx.array(global_scale)}
    q = mx.quantize(w, gs, bits, mode=mode, **kw)
    return np.array(w.astype(mx.float32)), list(q)


def dequantize_case(mx, np, mode, bits, gs, dtype, global_scale=None, out_dtype=None):
    """Random codes and scales (no NaN codes, scales in a modest range)
    dequantized: reads the layout independently of quantize."""
    rng = np.random.default_rng(1)
    C = 256
    if mode == "affine":
        codes = rng.integers(0, 2 ** 32, (4, C * bits // 32), dtype=np.uint64).astype(np.uint32)
        s = rng.standard_normal((4, C // gs)).astype(np.float32)
        b = rng.standard_normal((4, C // gs)).astype(np.float32)
        args = [mx.array(codes), mx.array(s).astype(getattr(mx, dtype)), mx.array(b).astype(getattr(mx, dtype))]
    else:
        if mode == "mxfp8":  # e4m3 bytes without the NaN codes 0x7f, 0xff
            by = rng.integers(0, 127, (4, C)).astype(np.uint8) | (rng.integers(0, 2, (4, C)) << 7).astype(np.uint8)
            codes = by.view(np.uint32)
        else:
            codes = rng.integers(0, 2 ** 32, (4, C * 4 // 32), dtype=np.uint64).astype(np.uint32)
        gsz = 16 if mode == "nvfp4" else 32
        lo, hi = (8, 127) if mode == "nvfp4" else (110, 140)  # e4m3 without NaN / e8m0 around 1
        sc = rng.integers(lo, hi, (4, C // gsz)).astype(np.uint8)
        args = [mx.array(codes), mx.array(sc), None]
    kw = {"mode": mode}
    if global_scale is not None:
        kw["global_scale"] = mx.array(global_scale)
    if out_dtype is not None:
        kw["dtype"] = getattr(mx, out_dtype)
    return args, mx.dequantize(*args, gs if mode == "affine" else None, bits if mode == "affine" else None, **kw)


def qmm_exact_case(mx, np, mode, bits, gs, transpose, M):
    """quantized_matmul on operands whose products and sums are exact in
    float32 (and in int8 blocks and bfloat16 tiles): x = k / 4 with |k| <=
    127 and 127 in every block of 32; affine weights (q + b') * 2^-e with
    small integers b' <= 0 and 8 significant bits at most, fp weights of a
    few significant bits. Every backend's arithmetic gives the same bits, so
    the product checks only where each code and scale is read from. Returns
    (x, (codes, scales, biases) as NumPy arrays, the product)."""
    rng = np.random.default_rng(2 + (bits or 0) + (gs or 0) + 7 * transpose)
    K, N = (128, 24) if transpose else (64, 128)
    R, C = (N, K) if transpose else (K, N)
    k = rng.integers(-127, 128, (M, K))
    k[:, ::32] = 127 * rng.choice([-1, 1], (M, K // 32))
    x = mx.array((k / 4).astype(np.float32))
    if mode == "affine":
        codes = rng.integers(0, 2 ** 32, (R, C * bits // 32), dtype=np.uint64).astype(np.uint32)
        e = rng.integers(3, 6, (R, C // gs))
        s = np.ldexp(np.float32(1), -e).astype(np.float32)
        b = (rng.integers(-8, 1, (R, C // gs)) * s).astype(np.float32)
        out = mx.quantized_matmul(x, mx.array(codes), mx.array(s), mx.array(b), transpose, gs, bits)
        return x, (codes, s, b), out
    gsz = 16 if mode == "nvfp4" else 32
    if mode == "mxfp8":  # e4m3 values between 2^-3 and 15 (codes with exponent 4..10)
        by = (rng.integers(4, 11, (R, C)) << 3 | rng.integers(0, 8, (R, C))) | (rng.integers(0, 2, (R, C)) << 7)
        codes = by.astype(np.uint8).view(np.uint32)
    else:
        codes = rng.integers(0, 2 ** 32, (R, C * 4 // 32), dtype=np.uint64).astype(np.uint32)
    lo, hi = (48, 64) if mode == "nvfp4" else (124, 129)  # e4m3 0.5..1.875 / e8m0 2^-3..2^1
    sc = rng.integers(lo, hi, (R, C // gsz)).astype(np.uint8)
    out = mx.quantized_matmul(x, mx.array(codes), mx.array(sc), None, transpose, mode=mode)
    return x, (codes, sc, None), out


for _b, _g in QUANT_AFFINE:
    for _dt in QUANT_DTYPES:
        probe("quantize", f"affine bits={_b} group={_g} {_dt}")(
            lambda mx, np, b=_b, g=_g, dt=_dt: _leaves(mx, np, quantize_case(mx, np, "affine", b, g, dt)[1]))
        probe("dequantize", f"affine bits={_b} group={_g} {_dt} round trip")(
            lambda mx, np, b=_b, g=_g, dt=_dt: _leaves(mx, np, [mx.dequantize(
                *quantize_case(mx, np, "affine", b, g, dt)[1], g, b)]))
    probe("dequantize", f"affine bits={_b} group={_g} random codes")(
        lambda mx, np, b=_b, g=_g: _leaves(mx, np, [dequantize_case(mx, np, "affine", b, g, "float32")[1]]))
    for _t in (True, False):
        probe("quantized_matmul", f"affine bits={_b} group={_g} transpose={_t} exact")(
            lambda mx, np, b=_b, g=_g, t=_t: _leaves(mx, np, [qmm_exact_case(mx, np, "affine", b, g, t, M)[2]
                                                           for M in (1, 12)]))
for _m, _gsc in QUANT_FP:
    _tag = "" if _gsc is None else f" global_scale={_gsc}"
    for _dt in QUANT_DTYPES:
        probe("quantize", f"{_m} {_dt}{_tag}")(
            lambda mx, np, m=_m, dt=_dt, gsc=_gsc: _leaves(mx, np, quantize_case(mx, np, m, None, None, dt, gsc)[1]))
        probe("dequantize", f"{_m} {_dt}{_tag} round trip")(
            lambda mx, np, m=_m, dt=_dt, gsc=_gsc: _leaves(mx, np, [
                mx.dequantize(*quantize_case(mx, np, m, None, None, dt, gsc)[1], mode=m, dtype=mx.float32,
                              **({} if gsc is None else {"global_scale": mx.array(gsc)}))]))
    for _od in (None, "float32", "float16"):
        probe("dequantize", f"{_m}{_tag} random codes dtype={_od}")(
            lambda mx, np, m=_m, gsc=_gsc, od=_od: _leaves(
                mx, np, [dequantize_case(mx, np, m, None, None, "float32", gsc, od)[1]]))
    if _gsc is None:
        for _t in (True, False):
            probe("quantized_matmul", f"{_m} transpose={_t} exact")(
                lambda mx, np, m=_m, t=_t: _leaves(mx, np, [qmm_exact_case(mx, np, m, None, None, t, M)[2]
                                                         for M in (1, 12)]))


# ---- helpers -------------------------------------------------------------------

class _ArrayLike:
    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a


class _DLPackLike:
    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def _setitem(x, idx, v):
    x[idx] = v
    return x


def _shares(mx, np, fn):
    x = np.arange(3.0, dtype=np.float32)
    a = fn(x)
    x[0] = 5.0
    return a


def _np_view_alive(mx, np):
    v = np.asarray(mx.array([1.0, 2.0]))
    return v + 1


def _captured_update(mx):
    c = mx.zeros(3)

    def f(x):
        c[1] = x * 2
        return (c * c).sum()
    return mx.grad(f)(mx.array(1.5))


def _cot_is_new(mx):
    ct = mx.array([1.0, 2.0])
    _, (g,) = mx.vjp(lambda x: x, [mx.array([3.0, 4.0])], [ct])
    return g is ct


def _grad_is_new(mx):
    x = mx.array([3.0, 4.0])
    g = mx.grad(lambda y: (y * 1.0).sum())(x)
    return g is x


def _custom_stream(mx):
    @mx.custom_function
    def f(x):
        return mx.sin(x)

    @f.vjp
    def f_vjp(primals, cotangent, output):
        (x,) = primals
        return mx.multiply(cotangent, mx.cos(x, stream=mx.cpu), stream=mx.cpu)
    return mx.grad(lambda x: f(x).sum())(mx.array([0.5, 1.0]))


def _async_then(mx, x):
    y = x * 2
    mx.async_eval(y)
    return y.sum()


def _eval_then(mx, x):
    y = x * 2
    mx.eval(y)
    return y.sum()


def _after_clear(mx):
    a = mx.ones((1024, 1024))
    mx.eval(a)
    del a
    mx.clear_cache()
    return mx.get_cache_memory()


def _tls_threads(mx):
    out = [None] * 4
    s = mx.ThreadLocalStream(mx.cpu) if hasattr(mx, "ThreadLocalStream") else None

    def work(i):
        with mx.stream(s):
            out[i] = (mx.arange(4) * i).tolist()
    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out
