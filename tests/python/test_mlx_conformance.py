"""Argument checks and results where Ember follows MLX 0.32.4 (issue 14,
"Exception types and validation"): what MLX checks, Ember checks too, with
the same exception type. Deliberate differences carry ``ember_only`` and a
line of docs/mlx-differences.md."""

import numpy as np
import pytest

from conftest import ember_only, mx, raises


# --------------------------------------------------------------------------
# arange
# --------------------------------------------------------------------------

@pytest.mark.parametrize("args,ref", [
    ((0, 3, float("inf")), [0.0]), ((0.5, 3, float("inf")), [0.5]),
    ((3, 0, float("-inf")), [3.0]), ((0, 3, float("-inf")), []),
    ((3, 0, float("inf")), []),
])
def test_arange_infinite_step(args, ref):
    """MLX (and NumPy): the start alone when the step points towards stop."""
    a = mx.arange(*args)
    assert a.tolist() == ref
    assert a.dtype == mx.float32


@pytest.mark.parametrize("value", [True, False])
def test_arange_of_a_lone_bool_is_a_value_error(value):
    """MLX takes arange(True)'s dtype from the bool, which arange rejects."""
    with pytest.raises(ValueError, match="bool"):
        mx.arange(value)
    assert mx.arange(value, dtype=mx.int32).dtype == mx.int32
    assert mx.arange(0, True).tolist() == [0]


@pytest.mark.parametrize("args", [("a",), (0, "a"), ([1, 2],), (1j,), (None,), (0, 3, "x")])
def test_arange_of_wrong_types_is_a_type_error(args):
    with pytest.raises(TypeError):
        mx.arange(*args)


@pytest.mark.parametrize("args", [(float("nan"),), (float("inf"),), (0, 3, 0)])
def test_arange_without_a_length_is_a_value_error(args):
    with pytest.raises(ValueError):
        mx.arange(*args)


# --------------------------------------------------------------------------
# fft
# --------------------------------------------------------------------------

@pytest.mark.parametrize("f", ["fft", "ifft", "rfft", "irfft"])
def test_fft_n_beyond_int32_is_a_type_error(f):
    """MLX's n is an int32: a larger one does not match the signature."""
    with pytest.raises(TypeError):
        getattr(mx.fft, f)(mx.zeros((4,)), n=2 ** 31)


@pytest.mark.parametrize("f", ["fft", "rfft"])
@pytest.mark.parametrize("axis", [1, -2])
def test_fft_axis_out_of_range_is_an_index_error(f, axis):
    with pytest.raises(IndexError):
        getattr(mx.fft, f)(mx.zeros((4,)), axis=axis)


@pytest.mark.parametrize("f", ["fft", "rfft", "irfft"])
@pytest.mark.parametrize("n", [0, -1])
def test_fft_n_not_positive_is_a_value_error(f, n):
    with pytest.raises(ValueError, match="output size"):
        getattr(mx.fft, f)(mx.zeros((4,)), n=n)


def test_fftn_shape_checks():
    a = mx.zeros((4, 4))
    with pytest.raises(ValueError, match="Duplicated axis"):
        mx.fft.fftn(a, axes=[0, 0])
    with pytest.raises(IndexError):
        mx.fft.fftn(a, axes=[0, 2])
    with pytest.raises(ValueError):
        mx.fft.fftn(a, s=[4], axes=[0, 1])
    with pytest.raises(ValueError, match="output size"):
        mx.fft.fftn(a, s=[-1, 4], axes=[0, 1])


@ember_only
def test_fftn_s_beyond_int32_is_an_overflow_error():
    """MLX aborts the process (an OverflowError escapes as a C++ exception)."""
    with pytest.raises(OverflowError):
        mx.fft.fftn(mx.zeros((4, 4)), s=[2 ** 31, 4], axes=[0, 1])


# --------------------------------------------------------------------------
# pad
# --------------------------------------------------------------------------

@pytest.mark.parametrize("width", [[(1, 1, 1)], [(1, 2, 3), (0, 0, 0)]])
def test_pad_width_of_three_is_a_type_error(width):
    """MLX: a pad width is an int or a (low, high) pair (signature mismatch)."""
    with pytest.raises(TypeError):
        mx.pad(mx.zeros((3,)), width)


def test_pad_under_vmap():
    x = mx.ones((2, 3))
    out = mx.vmap(lambda v: mx.pad(v, [(1, 0)]))(x)
    assert out.tolist() == [[0, 1, 1, 1], [0, 1, 1, 1]]
    out = mx.vmap(lambda v: mx.pad(v, 1, constant_values=mx.array(2.0)))(x)
    assert out.tolist() == [[2, 1, 1, 1, 2], [2, 1, 1, 1, 2]]


@ember_only
def test_pad_under_vmap_over_the_constant_value():
    """MLX: '[Pad::vmap] Vmap over padding value is not supported'; Ember
    pads each batch element with its own value."""
    out = mx.vmap(lambda v, c: mx.pad(v, 1, constant_values=c))(mx.zeros((2, 3)), mx.array([1.0, 2.0]))
    assert out.tolist() == [[1, 0, 0, 0, 1], [2, 0, 0, 0, 2]]


@ember_only
def test_pad_constant_value_must_be_a_scalar():
    """MLX takes the first element of a non-scalar constant value and drops
    the rest silently; Ember raises."""
    with pytest.raises(ValueError, match="scalar"):
        mx.pad(mx.zeros((3,)), 1, constant_values=mx.array([1.0, 2.0]))


# --------------------------------------------------------------------------
# searchsorted
# --------------------------------------------------------------------------

def test_searchsorted_checks():
    s = mx.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        mx.searchsorted(mx.zeros((2, 3)), mx.array([1.0]))
    with pytest.raises(ValueError):
        mx.searchsorted(mx.array(1.0), mx.array([1.0]))
    with pytest.raises(ValueError):
        mx.searchsorted(s, mx.array([1.0]), side="middle")
    with pytest.raises(TypeError):
        mx.searchsorted(s, mx.array([1.0]), side=None)
    assert mx.searchsorted(s, mx.array([1.5, 3.0]), side="right").tolist() == [1, 3]


@ember_only
def test_searchsorted_takes_scalars_and_lists():
    """MLX's signature takes arrays only (TypeError for a Python scalar or a
    list); Ember converts them, as every other op does."""
    s = mx.array([1.0, 2.0, 3.0])
    assert mx.searchsorted(s, 1.5).item() == 1
    assert mx.searchsorted(s, [1.5, 2.5]).tolist() == [1, 2]
    assert mx.searchsorted([1.0, 2.0, 3.0], mx.array([2.5])).tolist() == [2]


# --------------------------------------------------------------------------
# construction
# --------------------------------------------------------------------------

@ember_only
def test_tri_of_a_negative_size_raises():
    """MLX returns an empty (0, 0) array for tri(-1); NumPy and Ember raise."""
    with pytest.raises(ValueError):
        mx.tri(-1)


@ember_only
def test_lists_and_tuples_mix_in_nested_sequences():
    """NumPy's rule; MLX raises ValueError for ([1, 2], (3, 4))."""
    assert mx.array(([1, 2], (3, 4))).tolist() == [[1, 2], [3, 4]]


@ember_only
def test_float_shape_dims_are_a_type_error():
    """MLX lets a C++ std::bad_cast out (RuntimeError)."""
    with pytest.raises(TypeError):
        mx.zeros((2.5,))


@ember_only
def test_shape_dim_beyond_int64_is_a_type_error():
    """MLX lets a C++ std::bad_cast out (RuntimeError)."""
    with pytest.raises(TypeError):
        mx.full((2 ** 70,), 1.0)


# --------------------------------------------------------------------------
# operators with operands that are not arrays
# --------------------------------------------------------------------------

import operator  # noqa: E402

_OPERATORS = [
    (operator.add, "addition"), (operator.sub, "subtraction"), (operator.mul, "multiplication"),
    (operator.truediv, "division"), (operator.floordiv, "floor division"), (operator.mod, "modulus"),
    (operator.pow, "power"), (operator.lt, "less than"), (operator.ge, "greater than or equal"),
    (operator.iadd, "inplace addition"), (operator.imul, "inplace multiplication"),
]


@pytest.mark.parametrize("op,what", _OPERATORS)
@pytest.mark.parametrize("other", ["x", [1.0, 2.0], {}, object()], ids=["str", "list", "dict", "object"])
def test_operator_with_a_non_array_is_a_value_error(op, what, other):
    """MLX: ``a + "x"``, ``a + [1, 2]``, ``[1, 2] + a`` raise ValueError
    naming the operation and the other operand's type."""
    a = mx.array([1.0, 2.0])
    with pytest.raises(ValueError, match=f"Cannot perform {what} on an .*array and {type(other).__name__}"):
        op(a, other)
    if not what.startswith("inplace") and not (op is operator.mod and isinstance(other, str)):
        with pytest.raises(ValueError, match="Cannot perform "):   # a < x is x > a reflected
            op(other, a)


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.lt, operator.eq, operator.ne,
                                operator.iadd, operator.matmul])
def test_operator_with_none_is_a_type_error(op):
    with pytest.raises(TypeError):
        op(mx.array([1.0, 2.0]), None)


def test_equality_with_a_non_array_is_false():
    a = mx.array([1.0, 2.0])
    for other in ["x", {}, object()]:
        assert (a == other) is False
        assert (a != other) is True
    assert (a == [1.0, 3.0]) is False           # a list is no operand of ==, as in MLX
    assert (a == 1.0).tolist() == [True, False]


def test_matmul_with_a_non_array_is_a_type_error():
    with pytest.raises(TypeError):
        mx.ones((2, 2)) @ "x"
    with pytest.raises(TypeError):
        mx.ones((2, 2)) @ [[1.0, 0.0], [0.0, 1.0]]


# --------------------------------------------------------------------------
# the Python array API namespace
# --------------------------------------------------------------------------

def test_array_namespace_is_the_module():
    a = mx.array([1.0, 2.0, 3.0])
    ns = a.__array_namespace__()
    assert ns is mx
    assert ns.vecdot(a, a).item() == 14.0
    assert ns.isdtype(a.dtype, "real floating")
    assert not ns.isdtype(a.dtype, "integral")
    with pytest.raises(ValueError):
        a.__array_namespace__(api_version="2023.12")


# --------------------------------------------------------------------------
# async_eval inside a transform
# --------------------------------------------------------------------------

def test_async_eval_of_a_traced_array_raises():
    """MLX: "[async_eval] Not allowed inside a graph transformation" for an
    array that depends on the transformed function's inputs; other arrays
    (and plain eval inside grad) are fine."""
    with raises(ValueError, r"async_eval.*transformation", mlx_msg=True):
        mx.grad(lambda x: (mx.async_eval(x), x.sum())[1])(mx.array([1.0]))
    with raises(ValueError, r"async_eval.*transformation", mlx_msg=True):
        mx.vmap(lambda x: (mx.async_eval(x), x)[1])(mx.array([1.0]))
    with raises(ValueError, r"async_eval.*transformation", mlx_msg=True):
        mx.jvp(lambda x: (mx.async_eval(x), x)[1], [mx.array([1.0])], [mx.array([1.0])])
    g = mx.grad(lambda x: (mx.async_eval(mx.array(1.0)), x.sum())[1])(mx.array([1.0]))
    assert g.tolist() == [1.0]
    g = mx.grad(lambda x: (mx.eval(x), x.sum())[1])(mx.array([1.0]))
    assert g.tolist() == [1.0]


# --------------------------------------------------------------------------
# operands from other libraries
# --------------------------------------------------------------------------

class _ArrayLike:
    """An object NumPy can read (``__array__``), and nothing else."""

    def __init__(self, x):
        self.x = np.asarray(x, dtype=np.float32)

    def __array__(self, dtype=None, copy=None):
        return self.x if dtype is None else self.x.astype(dtype)


class _DLPackOnly:
    """An object with ``__dlpack__`` (a torch tensor, a JAX array) and
    nothing else."""

    def __init__(self, x):
        self.x = np.asarray(x, dtype=np.float32)

    def __dlpack__(self, **kwargs):
        return self.x.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


def test_dlpack_and_buffer_operands_on_either_side():
    """MLX: ``mx_array - torch_tensor`` works (the tensor is imported
    through DLPack), and so do buffer-protocol objects, on either side."""
    a = mx.array([1.0, 2.0])
    for other in (_DLPackOnly([0.5, 0.5]), memoryview(np.array([0.5, 0.5], np.float32)),
                  np.array([0.5, 0.5], np.float32)):
        assert (a - other).tolist() == [0.5, 1.5]
        assert mx.subtract(a, other).tolist() == [0.5, 1.5]
    for other in (_DLPackOnly([0.5, 0.5]), memoryview(np.array([0.5, 0.5], np.float32))):
        assert (other - a).tolist() == [-0.5, -1.5]


@ember_only
def test_array_like_operands():
    """An object with only ``__array__`` is an operand as in NumPy; MLX
    raises ValueError ("Cannot perform subtraction on an mlx.core.array and
    _ArrayLike", "Invalid type ... received in array initialization")."""
    a = mx.array([1.0, 2.0])
    assert (a - _ArrayLike([0.5, 0.5])).tolist() == [0.5, 1.5]
    assert (_ArrayLike([0.5, 0.5]) - a).tolist() == [-0.5, -1.5]
    assert mx.subtract(a, _ArrayLike([0.5, 0.5])).tolist() == [0.5, 1.5]


@ember_only
def test_numpy_negative_strides_convert():
    """MLX: "Cannot convert DLPack arrays with negative strides"."""
    x = np.arange(4.0, dtype=np.float32)[::-1]
    assert mx.array(x).tolist() == [3.0, 2.0, 1.0, 0.0]


@ember_only
def test_numpy_operand_promotes_as_an_array():
    """A NumPy array operand is typed, converted as mx.array(np_array) is;
    MLX treats it as a weak scalar (int8 + np.array([1.5]) stays int8 and
    truncates, 300 wraps to 45)."""
    x = mx.array([1, 2, 3], dtype=mx.int8)
    r = x + np.array([1.5, 1.5, 1.5])
    assert r.dtype == mx.float32 and r.tolist() == [2.5, 3.5, 4.5]
    r = x + np.array([300, 1, 1])
    assert r.dtype == mx.int64 and r.tolist() == [301, 3, 4]
    assert (x + np.int64(1)).dtype == mx.int8     # a NumPy scalar is weak, as a Python int


@ember_only
def test_float64_trig_at_large_arguments():
    """float64 sin/cos/tan are reduced in float64 (NumPy's values); MLX's
    lose all accuracy beyond about 1e9."""
    x = np.array([3e9, -7.5e12, 1e15, 1.2345e100, 1e300, 0.5])
    for name in ("sin", "cos", "tan"):
        got = np.array(getattr(mx, name)(mx.array(x, dtype=mx.float64)))
        np.testing.assert_allclose(got, getattr(np, name)(x), rtol=1e-14, atol=1e-15)


def test_async_eval_error_surfaces_at_the_next_synchronisation():
    """The error of an asynchronous evaluation is raised no later than the
    next eval (MLX raises it at async_eval when the worker has already
    failed, else at the eval; Ember always at the eval)."""
    a = mx.linalg.inv(mx.zeros((2, 2)), stream=mx.cpu)
    raised = False
    try:
        mx.async_eval(a)
        mx.eval(a)
    except (ValueError, RuntimeError):
        raised = True
    assert raised


@ember_only
def test_async_eval_error_is_raised_on_every_later_access():
    """MLX leaves the failed array holding zeros after the error; Ember keeps
    it uncomputed, so every access raises again."""
    a = mx.linalg.inv(mx.zeros((2, 2)))
    assert mx.async_eval(a) is None         # nothing raised at async_eval
    for access in (lambda: mx.eval(a), a.tolist, lambda: np.array(a)):
        with pytest.raises(ValueError, match="singular"):
            access()
