"""The binding layer itself: what every op accepts as an array (the
ArrayLike caster: NumPy, ``__array__``, ``__dlpack__``, the buffer protocol,
Python scalars with MLX's weak typing), as a stream (the StreamOrDevice
caster), and the one pytree walker behind ``eval`` / ``async_eval`` and the
tree utilities."""

import array as pyarray
import collections
import time

import numpy as np
import pytest

from conftest import IS_MLX, ember_only, is_evaluated, mx

if not IS_MLX:
    import ember.utils as tree_utils
else:  # pragma: no cover
    import mlx.utils as tree_utils


def lazy():
    """An unevaluated array."""
    return mx.arange(8.0) * 2 + 1


def evaluated_soon(arrays, timeout=10.0):
    """Whether all arrays get evaluated (async_eval) without asking for it."""
    deadline = time.monotonic() + timeout
    while not all(is_evaluated(x) for x in arrays):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


# --------------------------------------------------------------------------
# array-likes
# --------------------------------------------------------------------------

class OnlyArray:
    """Has __array__ and nothing else."""

    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


class OnlyDlpack:
    """Has __dlpack__ / __dlpack_device__ and nothing else."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


V = np.array([5.0, 7.0], np.float32)

ARRAY_LIKES = {
    "memoryview": lambda: memoryview(V.copy()),
    "array.array": lambda: pyarray.array("f", V.tolist()),
    "__dlpack__": lambda: OnlyDlpack(V.copy()),
    # MLX does not read __array__ (nanobind takes DLPack and buffers only)
    "__array__": pytest.param(lambda: OnlyArray(V.copy()), marks=ember_only),
}


@pytest.mark.parametrize("make", list(ARRAY_LIKES.values()), ids=list(ARRAY_LIKES))
def test_ops_accept_array_likes(make):
    x = mx.array([1.0, 2.0])
    assert mx.add(x, make()).tolist() == [6.0, 9.0]
    assert mx.subtract(make(), x).tolist() == [4.0, 5.0]
    assert mx.exp(make()).dtype == mx.float32
    assert mx.maximum(make(), x).tolist() == [5.0, 7.0]
    assert mx.where(mx.array([True, False]), make(), x).tolist() == [5.0, 2.0]
    assert mx.array(make()).tolist() == [5.0, 7.0]


@ember_only
@pytest.mark.parametrize("make", list(ARRAY_LIKES.values()), ids=list(ARRAY_LIKES))
def test_every_op_accepts_array_likes(make):
    # MLX's non-elementwise ops take arrays only; Ember's take any array-like
    assert mx.sum(make()).item() == 12.0
    assert mx.reshape(make(), (2, 1)).shape == (2, 1)
    assert mx.linalg.norm(make()).item() == pytest.approx(float(np.hypot(5, 7)), rel=1e-6)
    assert mx.concatenate([make(), make()]).shape == (4,)
    assert mx.isclose(make(), 5.0).tolist() == [True, False]


@pytest.mark.parametrize("make", list(ARRAY_LIKES.values()), ids=list(ARRAY_LIKES))
def test_operators_accept_array_likes(make):
    x = mx.array([1.0, 2.0])
    assert (x - make()).tolist() == [-4.0, -5.0]
    assert (make() - x).tolist() == [4.0, 5.0]  # __rsub__
    assert (x + make()).tolist() == [6.0, 9.0]
    assert (make() + x).tolist() == [6.0, 9.0]  # __radd__
    assert (x < make()).tolist() == [True, True]
    assert (x == make()).tolist() == [False, False]
    assert (x != make()).tolist() == [True, True]
    assert (x ** make()).dtype == mx.float32
    y = mx.array([1.0, 2.0])
    y += make()
    assert y.tolist() == [6.0, 9.0]


def test_operators_accept_numpy_scalars_weakly():
    x = mx.array([1.0, 2.0], mx.float16)
    assert (x - np.float32(2)).dtype == mx.float16
    assert (x - np.float32(2)).tolist() == [-1.0, 0.0]
    assert (mx.array([1.0, 2.0]) - np.int64(2)).dtype == mx.float32


def test_operators_refuse_lists_and_strings():
    x = mx.array([1, 2])
    with pytest.raises(ValueError):
        x - [1, 2]
    with pytest.raises((TypeError, ValueError)):
        x - "a"
    with pytest.raises((TypeError, ValueError)):
        "a" - x
    assert (x == [1, 2]) is False
    assert (x == object()) is False
    assert (x != "a") is True


def test_conversion_errors_keep_their_type():
    with pytest.raises((TypeError, ValueError)):
        mx.exp(object())
    with pytest.raises((TypeError, ValueError)):
        mx.add(mx.array([1]), "a")
    with pytest.raises(ValueError):
        mx.exp([[1, 2], [3]])  # ragged: ValueError with MLX's message
    with pytest.raises(ValueError):
        mx.add(mx.array([1, 2], mx.int8), 300)  # a weak int must fit the array's dtype


# --------------------------------------------------------------------------
# weak typing of Python scalars (promote)
# --------------------------------------------------------------------------

def test_weak_scalars_take_the_array_dtype():
    i8 = mx.array([1, 2], mx.int8)
    f16 = mx.array([1.0, 2.0], mx.float16)
    assert mx.add(i8, 1).dtype == mx.int8
    assert mx.add(1, i8).dtype == mx.int8
    assert (1 - i8).tolist() == [0, -1] and (1 - i8).dtype == mx.int8
    assert (2 ** i8).dtype == mx.int8
    assert mx.add(f16, 1.5).dtype == mx.float16
    assert mx.add(i8, 1.5).dtype == mx.float32
    assert mx.multiply(True, i8).dtype == mx.int8
    assert mx.where(mx.array([True, False]), i8, 1).dtype == mx.int8
    assert mx.clip(i8, 0, 1).dtype == mx.int8
    assert mx.maximum(f16, 1).dtype == mx.float16
    assert mx.pad(i8, 1, constant_values=3).dtype == mx.int8
    assert mx.add(1, 2).dtype == mx.int32  # two scalars convert alone
    assert mx.add(1, 2.5).dtype == mx.float32


@ember_only
def test_weak_scalars_in_updates():
    i8 = mx.array([1, 2], mx.int8)
    assert i8.at[0].add(1).dtype == mx.int8
    assert mx.put_along_axis(i8, mx.array([0]), 5, axis=0).dtype == mx.int8
    assert mx.random.uniform(0, 1, (2,), dtype=mx.float16).dtype == mx.float16


# --------------------------------------------------------------------------
# stream / device arguments
# --------------------------------------------------------------------------

STREAMS = {
    "None": lambda: None,
    "DeviceType": lambda: mx.cpu,
    "Device": lambda: mx.Device(mx.cpu),
    "Stream": lambda: mx.default_stream(mx.cpu),
    "new Stream": lambda: mx.new_stream(mx.cpu),
}


@pytest.mark.parametrize("make", list(STREAMS.values()), ids=list(STREAMS))
def test_stream_arguments(make):
    x = mx.array([1.0, 2.0])
    s = make()
    assert mx.exp(x, stream=s).shape == (2,)
    assert mx.add(x, 1, stream=s).tolist() == [2.0, 3.0]
    assert mx.sum(x, stream=s).item() == 3.0
    assert x.sum(stream=s).item() == 3.0
    assert x.astype(mx.int32, stream=s).dtype == mx.int32
    assert mx.sort(x, stream=s).tolist() == [1.0, 2.0]
    assert mx.fft.fft(x, stream=s).dtype == mx.complex64
    assert mx.random.uniform(shape=(2,), stream=s).shape == (2,)
    assert mx.take(x, mx.array([1]), stream=s).tolist() == [2.0]
    assert mx.zeros((2,), stream=s).tolist() == [0.0, 0.0]


@ember_only
def test_thread_local_stream_argument():
    s = mx.new_thread_local_stream(mx.cpu)
    assert mx.add(mx.array([1.0]), 1, stream=s).tolist() == [2.0]


@pytest.mark.parametrize("bad", ["cpu", object(), 1.5], ids=["str", "object", "float"])
def test_wrong_stream_kind_is_a_type_error(bad):
    x = mx.array([1.0, 2.0])
    for call in (lambda: mx.exp(x, stream=bad), lambda: mx.add(x, x, stream=bad),
                 lambda: x.sum(stream=bad), lambda: mx.linalg.inv(mx.eye(2), stream=bad)):
        with pytest.raises(TypeError):
            call()


@ember_only
def test_signatures_name_the_argument_kinds():
    doc = mx.add.__doc__
    assert "a: array | scalar" in doc and "stream: Stream | Device | None = None" in doc


# --------------------------------------------------------------------------
# axis / shape / dtype arguments (AxesArg, ShapeArg, std::optional<Dtype>)
# --------------------------------------------------------------------------

def test_axis_arguments():
    x = mx.ones((2, 3))
    for axis in [1, -1, [1], (0, 1), np.int64(1), [np.int64(0)]]:
        assert mx.sum(x, axis=axis).ndim == 2 - np.atleast_1d(np.asarray(axis)).size
    assert x.sum(axis=np.int32(0)).shape == (3,)
    assert mx.squeeze(mx.ones((1, 2)), axis=None).shape == (2,)
    assert mx.expand_dims(x, (0, 3)).shape == (1, 2, 3, 1)
    assert mx.fft.fftn(x, axes=[0]).shape == (2, 3)


@pytest.mark.parametrize("call", [
    lambda x: mx.sum(x, axis="a"), lambda x: x.sum(axis=1.0), lambda x: mx.mean(x, axis=[0.5]),
    lambda x: mx.expand_dims(x, None), lambda x: mx.transpose(x, "ab"), lambda x: mx.fft.fftn(x, s="a"),
    lambda x: mx.linalg.norm(x, axis="a"), lambda x: mx.median(x, axis=object()),
], ids=["sum-str", "method-float", "mean-float-list", "expand_dims-None", "transpose-str", "fftn-s",
        "norm", "median"])
def test_bad_axis_is_a_type_error(call):
    with pytest.raises(TypeError):
        call(mx.ones((2, 3)))


def test_shape_arguments():
    assert mx.zeros(3).shape == (3,)
    assert mx.ones((np.int64(2), 3)).shape == (2, 3)
    assert mx.reshape(mx.arange(6), [3, np.int32(2)]).shape == (3, 2)
    assert mx.random.normal(shape=(2,)).shape == (2,)
    assert mx.random.bernoulli(0.5, shape=None).shape == ()
    for call in [lambda: mx.broadcast_to(mx.ones(2), "a"),
                 lambda: mx.random.uniform(shape="a")]:
        with pytest.raises(TypeError):
            call()


def test_dtype_arguments():
    assert mx.zeros((2,), dtype=None).dtype == mx.float32  # None: the default
    assert mx.full((2,), 1, dtype=mx.int8).dtype == mx.int8
    assert mx.random.normal((2,), dtype=mx.float16).dtype == mx.float16
    assert mx.array([1, 2], dtype=None).dtype == mx.int32
    for call in [lambda: mx.zeros((2,), dtype="float32"), lambda: mx.random.normal((2,), dtype="x"),
                 lambda: mx.zeros_like(mx.ones(2), dtype=1), lambda: mx.arange(3, dtype=float)]:
        with pytest.raises(TypeError):
            call()


@ember_only
def test_numpy_int_shape():
    # MLX: RuntimeError('std::bad_cast') for both
    assert mx.zeros(np.int64(3)).shape == (3,)
    with pytest.raises(TypeError):
        mx.ones((2.0, 3))
    assert mx.isclose(mx.array([1.0], mx.float16), 1.0).dtype == mx.bool_  # MLX: arrays only


@ember_only
def test_signatures_name_axis_shape_and_dtype_kinds():
    assert "axis: int | Sequence[int] | None = None" in mx.sum.__doc__
    assert "shape: int | Sequence[int]" in mx.zeros.__doc__


# --------------------------------------------------------------------------
# the one pytree walker: eval / async_eval / tree utilities
# --------------------------------------------------------------------------

class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


class Box:
    def __init__(self, items):
        self.items = items


if not IS_MLX:
    tree_utils.register_pytree_node(Pair, lambda p: ((p.a, p.b), "pair"), lambda aux, kids: Pair(*kids))
    tree_utils.register_pytree_node(Box, lambda b: (b.items, None), lambda aux, kids: Box(list(kids)))


@ember_only
@pytest.mark.parametrize("evaluate", [mx.eval, mx.async_eval], ids=["eval", "async_eval"])
def test_eval_walks_registered_nodes(evaluate):
    a, b = lazy(), lazy()
    evaluate(Pair(a, b))
    assert evaluated_soon([a, b])


@ember_only
def test_eval_walks_nested_registered_nodes():
    leaves = [lazy() for _ in range(5)]
    tree = [Pair(Box([leaves[0], {"k": leaves[1]}]), (leaves[2], "not an array")),
            {"p": Pair(None, Box([Pair(leaves[3], 1)]))}]
    mx.eval(tree, Box([leaves[4]]))
    assert all(is_evaluated(x) for x in leaves)


@ember_only
def test_async_eval_walks_nested_registered_nodes():
    leaves = [lazy() for _ in range(3)]
    mx.async_eval({"x": Box([Pair(leaves[0], leaves[1])])}, [Pair(leaves[2], 3)])
    assert evaluated_soon(leaves)


def test_eval_accepts_every_leaf():
    # MLX ignores the leaves that are not arrays, at any depth
    x = lazy()
    for args in [(1,), ("a",), (None,), ([x, 1],), ({"a": object()},), (1.5,), ()]:
        assert mx.eval(*args) is None
        assert mx.async_eval(*args) is None
    assert is_evaluated(x)


@ember_only
def test_one_definition_of_a_node():
    # the tree utilities and eval read the same registry and node rule
    assert tree_utils._children is mx._tree_children
    assert tree_utils._registry is mx._pytree_registry
    assert mx._tree_children(mx.array(1)) is None
    assert mx._tree_children(3) is None
    Point = collections.namedtuple("Point", "x y")

    class D(dict):
        pass

    for tree in [Point(1, 2), collections.OrderedDict(b=1, a=2), D(a=1), [1, 2], (1,), {"z": 1, "a": 2},
                 Pair(1, 2), Box([1, 2])]:
        pairs, rebuild = mx._tree_children(tree)
        new = rebuild([v for _, v in pairs])
        assert type(new) is type(tree)
        if isinstance(tree, dict):
            assert list(new.items()) == list(tree.items()) and [k for k, _ in pairs] == list(tree)
    assert tree_utils.tree_flatten(Pair(1, [2, 3])) == [("0", 1), ("1.0", 2), ("1.1", 3)]
    doubled = tree_utils.tree_map(lambda v: v * 2, {"p": Pair(1, Point(2, 3))})
    assert isinstance(doubled["p"], Pair) and doubled["p"].b == Point(4, 6)


@ember_only
def test_a_bad_flatten_function_raises():
    class Bad:
        pass

    tree_utils.register_pytree_node(Bad, lambda b: 5, lambda aux, kids: Bad())
    with pytest.raises(TypeError):
        mx.eval([Bad()])
