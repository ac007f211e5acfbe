"""The array class: construction, every member, operators, conversions,
NumPy / buffer / DLPack interop, copying and pickling, printing, indexing."""

import copy
import operator
import pickle

import numpy as np
import pytest

from conftest import (ALL, DATA_DTYPES, ITEMSIZE, NP_CARRIER, assert_close,
                      assert_equal, dtype_name, ember_only, make_values, mx,
                      mx_dtype, raises, to_mx, to_numpy)


# --------------------------------------------------------------------------
# construction
# --------------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    0, -3, 2.5, True, False, 1 + 2j, [1, 2, 3], [[1.5, 2], [3, 4]],
    [[[1]]], [], [[], []], [True, False], (1, 2), [[1, 2], [3.5, 4]],
])
def test_array_from_python(value):
    a = mx.array(value)
    ref = np.array(value)
    assert a.shape == ref.shape
    assert a.tolist() == ref.tolist()


def test_array_from_nested_arrays_and_scalars():
    a = mx.array([mx.array([1, 2]), mx.array([3, 4])])
    assert_equal(a, [[1, 2], [3, 4]], dtype="int32")
    a = mx.array([mx.array([1, 2]), mx.array([3, 4.0])])
    assert dtype_name(a.dtype) == "float32"
    a = mx.array([mx.array([1, 2]), [3, 4]])
    assert_equal(a, [[1, 2], [3, 4]], dtype="int32")
    assert_equal(mx.array([mx.array(1.5), 2]), [1.5, 2.0], dtype="float32")


@pytest.mark.parametrize("value", [[[1, 2], [3]], [[1, 2], 3], [1, [2]],
                                   [[[1], [2, 3]]]])
def test_ragged_raises_value_error(value):
    with raises(ValueError, "array|uniform|ragged"):
        mx.array(value)


def test_ragged_arrays_raise():
    with raises(ValueError, "array|uniform|ragged"):
        mx.array([mx.array([1, 2]), mx.array([3])])


@pytest.mark.parametrize("value", ["a", [1, "a"], [["a", "b"]], ("a",), object(), range(3),
                                   {}, [{}], [1, None], [b"ab"], [np.array([1, 2]), [3, 4]],
                                   [np.float32(1.5)], [np.int64(1), 2]])
def test_bad_element_types_raise_value_error(value):
    """MLX: 'Invalid type str received in array initialization' (ValueError)
    for a str, a list holding one, or any other object it cannot convert."""
    with raises(ValueError, "Invalid type", mlx_msg=True):
        mx.array(value)


@pytest.mark.parametrize("value,ref,dtype", [
    ([1, mx.array(2.5)], [1.0, 2.5], "float32"),
    ([[1, 2], mx.array([3, 4])], [[1, 2], [3, 4]], "int32"),
    ([mx.array([1, 2]), [3, 4.5]], [[1, 2], [3, 4.5]], "float32"),
    ([1, mx.array(2, dtype=mx.int8)], [1, 2], "int32"),
    ([mx.array(1, dtype=mx.int8), 300], [1, 300], "int32"),
    ([mx.array(1, dtype=mx.float16), 2], [1, 2], "float16"),
    ([1.5, mx.array(2, dtype=mx.float16)], [1.5, 2], "float32"),
    ([True, mx.array(2)], [1, 2], "int32"),
    ([mx.array(True), False], [True, False], "bool"),
    ([[1, mx.array(2)], [3, 4]], [[1, 2], [3, 4]], "int32"),
    ([[mx.array(1), 2], [3, mx.array(4.5)]], [[1, 2], [3, 4.5]], "float32"),
    ([2 ** 40, mx.array(1)], [2 ** 40, 1], "int64"),
    ([1, 2j, mx.array(1)], [1, 2j, 1], "complex64"),
])
def test_lists_mixing_arrays_and_scalars(value, ref, dtype):
    """MLX converts each element on its own (Python scalars with their
    default dtypes) and stacks them in the promoted dtype, wherever the
    arrays sit in the list."""
    a = mx.array(value)
    assert dtype_name(a.dtype) == dtype
    assert a.tolist() == ref


def test_lists_mixing_arrays_and_scalars_take_the_dtype_and_stay_uniform():
    assert dtype_name(mx.array([mx.array(1), 2], dtype=mx.float32).dtype) == "float32"
    with raises(ValueError, "uniform", mlx_msg=True):
        mx.array([1, mx.array([2])])
    with raises(ValueError, "uniform", mlx_msg=True):
        mx.array([mx.array([1, 2]), 3])


def test_version():
    assert isinstance(mx.__version__, str)
    assert all(part.isdigit() for part in mx.__version__.split(".")[:2])


def test_array_none_raises_type_error():
    with pytest.raises(TypeError):
        mx.array(None)


@pytest.mark.parametrize("name", ALL)
def test_array_from_numpy_every_dtype(name, rng):
    x = make_values((3, 4), name, rng)
    a = mx.array(x, dtype=mx_dtype(name))
    assert dtype_name(a.dtype) == name
    np.testing.assert_array_equal(to_numpy(a), x)
    if name not in ("bfloat16", "float64"):  # those need dtype= (above)
        b = mx.array(x)
        assert dtype_name(b.dtype) == name
        np.testing.assert_array_equal(to_numpy(b), x)


@pytest.mark.parametrize("layout", ["transposed", "swapped", "sliced",
                                    "np_strided"])
def test_array_from_strided_numpy(layout, rng):
    x = make_values((3, 4, 5), "float32", rng)
    views = {
        "transposed": x.transpose(2, 0, 1),
        "swapped": np.swapaxes(x, 0, 2),
        "sliced": x[:, 1:, ::2],
        "np_strided": np.asfortranarray(x)[..., ::2],
    }
    v = views[layout]
    assert not v.flags.c_contiguous
    np.testing.assert_array_equal(np.array(mx.array(v)), v)


def test_array_from_numpy_special_strides():
    b = np.broadcast_to(np.arange(4, dtype=np.float32), (3, 4))
    np.testing.assert_array_equal(np.array(mx.array(b)), b)
    s = np.lib.stride_tricks.as_strided(np.arange(10, dtype=np.int32),
                                        (3, 3), (4, 4))
    np.testing.assert_array_equal(np.array(mx.array(s)), s)
    e = np.zeros((2, 0, 4), np.float32)[:, :, ::2]
    assert mx.array(e).shape == (2, 0, 2)
    ro = np.arange(3)
    ro.flags.writeable = False
    assert mx.array(ro).tolist() == [0, 1, 2]


@ember_only
@pytest.mark.parametrize("view", ["rev1", "rev2", "mixed"])
def test_array_from_negative_stride_numpy(view):
    """The engine accepts any numpy strides (MLX raises ValueError)."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    v = {"rev1": x[::-1], "rev2": x[:, ::-1, ::-2],
         "mixed": x.transpose(2, 0, 1)[::-1, :, ::-1]}[view]
    np.testing.assert_array_equal(np.array(mx.array(v)), v)
    np.testing.assert_array_equal(np.array(mx.asarray(v)), v)


def test_array_copies_numpy_input():
    x = np.arange(3, dtype=np.float32)
    a = mx.array(x)
    x[0] = 100
    assert a.tolist() == [0.0, 1.0, 2.0]


def test_array_with_dtype_argument():
    assert_equal(mx.array([1, 2], dtype=mx.float16), [1, 2], "float16")
    assert_equal(mx.array([1.7, -1.7], dtype=mx.int32), [1, -1], "int32")
    assert_equal(mx.array([True, False], dtype=mx.float32), [1.0, 0.0],
                 "float32")
    assert_equal(mx.array(3, dtype=mx.float16), 3.0, "float16")
    assert_equal(mx.array(2.7, dtype=mx.int32), 2, "int32")
    assert_equal(mx.array(mx.array([1, 2]), dtype=mx.float32), [1.0, 2.0],
                 "float32")
    assert_equal(mx.array(np.arange(3), dtype=mx.bool_),
                 [False, True, True], "bool")
    assert mx.array([0.1], dtype=mx.bfloat16).item() == 0.10009765625
    assert_equal(mx.array(np.array([1 + 2j], np.complex64),
                          dtype=mx.float32), [1.0], "float32")


def test_array_from_buffer_protocol_objects():
    assert_equal(mx.array(memoryview(np.arange(3, dtype=np.float32))),
                 [0.0, 1.0, 2.0], "float32")
    assert_equal(mx.array(b"ab"), [97, 98], "uint8")


def test_array_like_protocol():
    class Wrapper:
        def __mlx_array__(self):
            return mx.array([1, 2])

    assert_equal(mx.array(Wrapper()), [1, 2], "int32")
    assert_equal(mx.arange(2) + Wrapper(), [1, 3], "int32")
    assert issubclass(mx.ArrayLike, object)


@ember_only
@pytest.mark.parametrize("np_dtype", ["<U1", "O", "datetime64[s]"])
def test_unsupported_numpy_dtypes_raise_cleanly(np_dtype):
    """MLX raises RuntimeError('std::bad_cast'); Ember a TypeError or
    ValueError that says what is wrong."""
    x = np.zeros(2, dtype=np_dtype)
    with pytest.raises((TypeError, ValueError)):
        mx.array(x)


def test_asarray():
    a = mx.arange(3)
    b = mx.asarray(a)
    assert isinstance(b, mx.array) and b.tolist() == [0, 1, 2]
    assert_equal(mx.asarray(a, dtype=mx.float32), [0.0, 1.0, 2.0],
                 "float32")
    assert_equal(mx.asarray([1, 2]), [1, 2], "int32")
    assert_equal(mx.asarray(np.arange(3.0)), [0.0, 1.0, 2.0], "float32")
    c = mx.asarray(a, copy=True)
    assert c is not a and c.tolist() == [0, 1, 2]
    assert_equal(mx.asarray(3.5), 3.5, "float32")


# --------------------------------------------------------------------------
# attributes
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_metadata(name):
    a = mx.zeros((2, 3, 4), dtype=mx_dtype(name))
    assert a.shape == (2, 3, 4) and isinstance(a.shape, tuple)
    assert a.ndim == 3 and a.size == 24
    assert dtype_name(a.dtype) == name
    assert a.itemsize == ITEMSIZE[name]
    assert a.nbytes == 24 * ITEMSIZE[name]


def test_metadata_does_not_evaluate():
    a = mx.arange(10.0) + 1
    _ = (a.shape, a.dtype, a.size, a.ndim, a.nbytes, a.itemsize)
    with raises(ValueError, "evaluated", mlx_msg=True):
        mx.get_array_buffer_size(a)


def test_zero_d_and_empty_metadata():
    s = mx.array(1.5)
    assert s.shape == () and s.ndim == 0 and s.size == 1
    e = mx.zeros((0, 3))
    assert e.size == 0 and e.nbytes == 0 and e.shape == (0, 3)


def test_T_and_mT():
    x = np.arange(24).reshape(2, 3, 4)
    a = mx.array(x)
    assert_equal(a.T, x.T)
    assert_equal(a.mT, np.swapaxes(x, -1, -2))
    assert mx.array(1).T.shape == ()
    assert_equal(mx.arange(3).T, [0, 1, 2])
    with raises(ValueError, "transpose|mT", mlx_msg=True):
        mx.arange(3).mT


def test_real_imag_properties():
    a = mx.array([1 + 2j, -3 - 4j])
    assert_equal(a.real, [1.0, -3.0], "float32")
    assert_equal(a.imag, [2.0, -4.0], "float32")
    assert_equal(mx.array([1.5]).imag, [0.0], "float32")


# --------------------------------------------------------------------------
# Python conversions
# --------------------------------------------------------------------------

def test_item():
    assert mx.array(3.5).item() == 3.5
    assert isinstance(mx.array(3.5).item(), float)
    assert isinstance(mx.array(3, mx.uint8).item(), int)
    assert mx.array(True).item() is True
    assert mx.array(1 + 2j).item() == 1 + 2j
    assert mx.array([[3.5]]).item() == 3.5
    assert mx.array(0.1, mx.float64).item() == 0.1
    assert mx.array(1.5, mx.float16).item() == 1.5
    assert mx.array(1.5, mx.bfloat16).item() == 1.5
    big = mx.array(np.array(2 ** 64 - 1, dtype=np.uint64))
    assert big.item() == 2 ** 64 - 1
    with raises(ValueError, "item|convert|length-1|scalar", mlx_msg=True):
        mx.array([3.5, 1]).item()


def test_tolist():
    x = np.arange(6).reshape(2, 3)
    assert mx.array(x).tolist() == x.tolist()
    assert mx.array(1.5).tolist() == 1.5
    assert mx.array([1.5], mx.float16).tolist() == [1.5]
    assert mx.array([1.5, 0.1], mx.bfloat16).tolist() == [1.5,
                                                          0.10009765625]
    assert mx.array([0.1]).tolist() == [float(np.float32(0.1))]
    assert mx.array([True]).tolist() == [True]
    assert mx.array([1j]).tolist() == [1j]
    assert mx.zeros((2, 0)).tolist() == [[], []]
    assert all(type(v) is int for v in mx.array([1, 2], mx.int64).tolist())
    t = mx.array(x).T
    assert t.tolist() == x.T.tolist()


def test_len_iter():
    a = mx.array(np.arange(6).reshape(3, 2))
    assert len(a) == 3
    rows = list(a)
    assert len(rows) == 3 and all(isinstance(r, mx.array) for r in rows)
    assert rows[1].tolist() == [2, 3]
    assert type(iter(a)).__name__ == "ArrayIterator"
    assert isinstance(iter(a), mx.ArrayIterator)
    assert [x.item() for x in mx.arange(3)] == [0, 1, 2]
    assert [x.item() for x in reversed(mx.arange(3))] == [2, 1, 0]
    assert list(mx.zeros((0, 3))) == [] and len(mx.zeros((0, 3))) == 0
    assert 2 in mx.arange(3)
    with raises(TypeError, "0-d|0-dimensional|len", mlx_msg=True):
        len(mx.array(1))
    with raises(TypeError, "0-d|0-dimensional|iter", mlx_msg=True):
        iter(mx.array(1))


def test_bool():
    assert bool(mx.array(1)) is True
    assert bool(mx.array(0.0)) is False
    assert bool(mx.array([[2]])) is True
    for bad in (mx.array([1, 2]), mx.array([])):
        with raises(ValueError, "bool|convert|one-element|length-1|"
                    "scalar|truth value", mlx_msg=True):
            bool(bad)


def test_int_float_complex_index():
    assert int(mx.array(3.7)) == 3 and int(mx.array(-3.7)) == -3
    assert int(mx.array([3.7])) == 3
    assert int(mx.array(True)) == 1 and float(mx.array(True)) == 1.0
    assert float(mx.array(3)) == 3.0
    assert complex(mx.array(1 + 2j)) == 1 + 2j
    assert complex(mx.array(1.5)) == 1.5 + 0j
    assert operator.index(mx.array(3)) == 3
    assert [1, 2, 3][mx.array(1)] == 2
    assert list(range(mx.array(3))) == [0, 1, 2]
    for bad in (mx.array([3.7, 1]),):
        with raises(ValueError, "int|float|convert|length-1|scalar",
                    mlx_msg=True):
            int(bad)
        with raises(ValueError, "int|float|convert|length-1|scalar",
                    mlx_msg=True):
            float(bad)
    with raises(TypeError, "index", mlx_msg=True):
        operator.index(mx.array(3.0))
    with raises(TypeError, "index", mlx_msg=True):
        operator.index(mx.array([3]))


def test_format():
    assert format(mx.array(3.14159), ".2f") == "3.14"
    # 0-d arrays format as their Python scalar, others as their repr
    assert f"{mx.array(2)}" == "2" and f"{mx.array(2.5)}" == "2.5"
    assert f"{mx.array([1, 2])}" == "array([1, 2], dtype=int32)"
    with pytest.raises(TypeError):
        format(mx.array([3.14159]), ".2f")


# --------------------------------------------------------------------------
# operators
# --------------------------------------------------------------------------

BINOPS = [
    ("__add__", operator.add, np.add), ("__sub__", operator.sub, np.subtract),
    ("__mul__", operator.mul, np.multiply),
    ("__truediv__", operator.truediv, np.true_divide),
    ("__floordiv__", operator.floordiv, np.floor_divide),
    ("__mod__", operator.mod, np.mod), ("__pow__", operator.pow, np.power),
    ("__lt__", operator.lt, np.less), ("__le__", operator.le,
                                       np.less_equal),
    ("__gt__", operator.gt, np.greater),
    ("__ge__", operator.ge, np.greater_equal),
    ("__eq__", operator.eq, np.equal), ("__ne__", operator.ne, np.not_equal),
]
INT_BINOPS = [
    ("__and__", operator.and_, np.bitwise_and),
    ("__or__", operator.or_, np.bitwise_or),
    ("__xor__", operator.xor, np.bitwise_xor),
    ("__lshift__", operator.lshift, np.left_shift),
    ("__rshift__", operator.rshift, np.right_shift),
]


@pytest.mark.parametrize("name,pyop,npop", BINOPS + INT_BINOPS,
                         ids=[b[0] for b in BINOPS + INT_BINOPS])
def test_binary_operators(name, pyop, npop):
    xa = np.array([[1, 5, 7], [2, 3, 4]], dtype=np.int32)
    xb = np.array([3, 2, 1], dtype=np.int32)
    a, b = mx.array(xa), mx.array(xb)
    is_float = name == "__truediv__"
    expect = npop(xa, xb)
    assert_close(pyop(a, b), expect,
                 dtype="float32" if is_float else dtype_name(
                     mx.array(expect).dtype))
    # with a Python scalar on either side (reflected operators)
    assert_close(pyop(a, 2), npop(xa, 2),
                 dtype="float32" if is_float else None)
    if name not in [n for n, _, _ in INT_BINOPS]:
        assert_close(pyop(2, a), npop(2, xa),
                     dtype="float32" if is_float else None)


def test_reflected_operators_with_float_scalars():
    a = mx.array([1.0, 2.0, 4.0])
    assert_close(1 - a, [0.0, -1.0, -3.0], "float32")
    assert_close(1 / a, [1.0, 0.5, 0.25], "float32")
    assert_close(2 ** a, [2.0, 4.0, 16.0], "float32")
    assert_close(7 // a, [7.0, 3.0, 1.0], "float32")
    assert_close(7 % a, [0.0, 1.0, 3.0], "float32")
    assert_close(2.0 ** mx.array([2]), [4.0], "float32")
    assert_equal(2 ** mx.array([2]), [4], "int32")


def test_unary_operators():
    a = mx.array([-2, 0, 3])
    assert_equal(-a, [2, 0, -3], "int32")
    assert_equal(+a, [-2, 0, 3], "int32")
    assert_equal(abs(a), [2, 0, 3], "int32")
    assert_equal(~a, [1, -1, -4], "int32")
    assert_equal(~mx.array([True, False]), [False, True], "bool")
    with raises(ValueError, "negative", mlx_msg=True):
        -mx.array([True])
    with raises(ValueError, "invert|bitwise"):
        ~mx.array([1.0])


def test_matmul_operator():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = mx.array(x)
    assert_close(a @ a.T, x @ x.T, "float32")
    c = mx.ones((2, 2))
    c @= mx.ones((2, 2))
    assert_equal(c, np.full((2, 2), 2.0), "float32")


@ember_only
def test_reflected_operators_mlx_lacks():
    """MLX has no __rmatmul__/__rand__/__rxor__ (so `True & a`, `1 ^ a`
    and `list @ a` raise TypeError there); Ember provides them."""
    a = mx.array([True, False])
    assert_equal(True & a, [True, False], "bool")
    assert_equal(1 ^ mx.array([1, 2]), [0, 3], "int32")
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    r = x.tolist() @ mx.array(x)
    assert_close(r, x @ x, "float32")


def test_bitwise_operators_reject_floats():
    for op in (operator.and_, operator.or_, operator.xor, operator.lshift,
               operator.rshift):
        with pytest.raises(ValueError):
            op(mx.array([1.0]), 1)


def test_equality_with_non_arrays():
    assert (mx.array([1, 2]) == "x") is False
    assert (mx.array([1, 2]) == [1, 2]) is False
    assert (mx.array([1, 2]) != [1, 2]) is True
    with raises(ValueError, "add|list"):
        mx.array([1, 2]) + [1, 2]


def test_operators_with_numpy_arrays():
    a = mx.array([1.0, 2.0])
    r = a + np.array([1.0, 2.0], dtype=np.float32)
    assert isinstance(r, mx.array)
    assert_equal(r, [2.0, 4.0], "float32")
    # numpy's operator wins when numpy is on the left
    assert isinstance(np.array([1.0, 2.0]) + a, np.ndarray)


INPLACE = [("__iadd__", "+=", [3, 4, 5]), ("__isub__", "-=", [-1, 0, 1]),
           ("__imul__", "*=", [2, 4, 6]), ("__ifloordiv__", "//=", [1, 1, 3]),
           ("__imod__", "%=", [0, 0, 0]), ("__ipow__", "**=", [1, 4, 9]),
           ("__iand__", "&=", [0, 2, 2]), ("__ior__", "|=", [3, 2, 3]),
           ("__ixor__", "^=", [3, 0, 1]), ("__ilshift__", "<<=", [4, 8, 12]),
           ("__irshift__", ">>=", [0, 0, 0])]


@pytest.mark.parametrize("name,sym,expect", INPLACE,
                         ids=[i[0] for i in INPLACE])
def test_inplace_operators_update_the_object(name, sym, expect):
    a = mx.array([1, 2, 3])
    alias = a
    other = mx.array([1, 2, 1]) if sym in ("//=", "%=") else 2
    ns = {"a": a, "other": other}
    exec(f"a {sym} other", ns)
    assert ns["a"] is alias  # same Python object, new value
    assert_equal(alias, expect, "int32")


def test_inplace_true_divide_and_promotion():
    a = mx.arange(3, dtype=mx.float32)
    a /= 2
    assert_equal(a, [0.0, 0.5, 1.0], "float32")
    b = mx.arange(3)
    alias = b
    b += 1.5  # MLX: the object takes the promoted dtype
    assert b is alias
    assert_equal(alias, [1.5, 2.5, 3.5], "float32")
    c = mx.arange(3)
    with raises(ValueError, "divi"):
        c /= 2
    d = mx.ones((2,))
    d += mx.ones((2, 2))  # broadcasting changes the shape too
    assert d.shape == (2, 2)


def test_inplace_does_not_touch_copies():
    a = mx.arange(3)
    b = a + 0
    c = copy.copy(a)
    a += 10
    assert b.tolist() == [0, 1, 2] and c.tolist() == [0, 1, 2]


# --------------------------------------------------------------------------
# method forms
# --------------------------------------------------------------------------

_X = np.array([[0.5, 1.5, 2.5], [3.0, 0.25, 1.0]], dtype=np.float32)

METHODS = [
    ("abs", (), {}, np.abs), ("all", (), {"axis": 1}, np.all),
    ("any", (), {"axis": 0}, np.any),
    ("argmax", (), {"axis": 1}, lambda x, **k: np.argmax(x, 1)),
    ("argmin", (), {}, lambda x: np.argmin(x)),
    ("cos", (), {}, np.cos), ("exp", (), {}, np.exp),
    ("log", (), {}, np.log), ("log2", (), {}, np.log2),
    ("log10", (), {}, np.log10), ("log1p", (), {}, np.log1p),
    ("sin", (), {}, np.sin), ("sqrt", (), {}, np.sqrt),
    ("rsqrt", (), {}, lambda x: 1 / np.sqrt(x)),
    ("square", (), {}, np.square), ("reciprocal", (), {}, np.reciprocal),
    ("max", (), {"axis": 0}, lambda x, axis: np.max(x, axis)),
    ("min", (), {"keepdims": True}, lambda x, keepdims: np.min(
        x, keepdims=keepdims)),
    ("mean", (), {"axis": -1}, lambda x, axis: np.mean(x, axis)),
    ("prod", (), {"axis": (0, 1)}, lambda x, axis: np.prod(x, axis)),
    ("sum", (), {"axis": 1, "keepdims": True},
     lambda x, axis, keepdims: np.sum(x, axis, keepdims=keepdims)),
    ("var", (), {"ddof": 1}, lambda x, ddof: np.var(x, ddof=ddof)),
    ("std", (), {"axis": 0}, lambda x, axis: np.std(x, axis)),
    ("logsumexp", (), {"axis": 1},
     lambda x, axis: np.log(np.sum(np.exp(x), axis))),
    ("round", (1,), {}, lambda x, d: np.round(x, d)),
    ("reshape", (3, 2), {}, lambda x, *s: x.reshape(s)),
    ("reshape", ((3, 2),), {}, lambda x, s: x.reshape(s)),
    ("flatten", (), {}, lambda x: x.reshape(-1)),
    ("squeeze", (), {}, np.squeeze),
    ("transpose", (), {}, np.transpose),
    ("transpose", (1, 0), {}, lambda x, *p: np.transpose(x, p)),
    ("transpose", ((1, 0),), {}, lambda x, p: np.transpose(x, p)),
    ("swapaxes", (0, 1), {}, np.swapaxes),
    ("moveaxis", (0, 1), {}, np.moveaxis),
    ("cumsum", (), {"axis": 1}, lambda x, axis: np.cumsum(x, axis)),
    ("cumprod", (), {"axis": 0}, lambda x, axis: np.cumprod(x, axis)),
    ("cummax", (), {"axis": 1},
     lambda x, axis: np.maximum.accumulate(x, axis)),
    ("cummin", (), {"axis": 1},
     lambda x, axis: np.minimum.accumulate(x, axis)),
    ("logcumsumexp", (), {"axis": 1},
     lambda x, axis: np.log(np.cumsum(np.exp(x), axis))),
    ("diagonal", (), {}, np.diagonal),
    ("diagonal", (), {"offset": 1}, lambda x, offset: np.diagonal(x, offset)),
    ("conj", (), {}, np.conj),
    ("astype", (mx.float16,), {}, lambda x, d: x.astype(np.float16)),
]


@pytest.mark.parametrize("name,args,kwargs,ref", METHODS,
                         ids=[f"{m[0]}-{i}" for i, m in enumerate(METHODS)])
def test_method_forms(name, args, kwargs, ref):
    a = mx.array(_X)
    r = getattr(a, name)(*args, **kwargs)
    expect = ref(_X.astype(np.float64), *args, **kwargs)
    if name in ("argmax", "argmin"):
        assert_equal(r, expect, "uint32")
    elif name in ("all", "any"):
        assert_equal(r, expect, "bool")
    elif name == "astype":
        assert_equal(r, _X.astype(np.float16), "float16")
    else:
        assert_close(r, expect, "float32", rtol=2e-6)


def test_method_forms_misc():
    assert_equal(mx.arange(4).diag(), np.diag(np.arange(4)), "int32")
    parts = mx.arange(6).split(3)
    assert [p.tolist() for p in parts] == [[0, 1], [2, 3], [4, 5]]
    assert_equal(mx.array([1.0]).view(mx.uint32), [1065353216], "uint32")
    assert mx.array([1.0]).tolist() == [1.0]
    assert_equal(mx.arange(4).cumsum(reverse=True, inclusive=False),
                 [6, 5, 3, 0], "int32")
    assert mx.array([1 + 1j]).conj().tolist() == [1 - 1j]
    a = mx.zeros((2, 3, 4))
    assert a.sum(axis=(0, 1), keepdims=True).shape == (1, 1, 4)
    assert a.flatten(1).shape == (2, 12)
    assert a.argmax(axis=1).shape == (2, 4)


def test_array_members_exist():
    names = """T __abs__ __add__ __and__ __array__ __bool__ __copy__
    __deepcopy__ __dlpack__ __eq__ __float__ __floordiv__ __getitem__
    __getstate__ __hash__ __int__ __invert__ __iter__ __len__ __lshift__
    __lt__ __matmul__ __mod__ __neg__ __or__ __pow__ __repr__ __rshift__
    __setitem__ __setstate__ __truediv__ __xor__ abs all any argmax argmin
    astype conj cos cummax cummin cumprod cumsum diag diagonal dtype exp
    flatten imag item itemsize log log10 log1p log2 logcumsumexp logsumexp
    mT max mean min moveaxis nbytes ndim prod real reciprocal reshape round
    rsqrt shape sin size split sqrt square squeeze std sum swapaxes tolist
    transpose var view __radd__ __rsub__ __rmul__ __rtruediv__
    __rfloordiv__ __rmod__ __rpow__ __iadd__ __isub__ __imul__ __itruediv__
    __ifloordiv__ __imod__ __ipow__ __iand__ __ior__ __ixor__ __ilshift__
    __irshift__ __imatmul__ __index__ __complex__ __ne__ __le__ __gt__
    __ge__ __pos__ __dlpack_device__""".split()
    missing = [n for n in names if not hasattr(mx.array, n)]
    assert not missing, missing


# --------------------------------------------------------------------------
# hashing, copying, pickling
# --------------------------------------------------------------------------

def test_hash_is_identity_based():
    a = mx.array(5)
    b = mx.array(5)
    assert hash(a) == hash(a)
    assert hash(a) != hash(b)
    d = {a: "a", b: "b"}
    assert d[a] == "a" and d[b] == "b"


@pytest.mark.parametrize("name", DATA_DTYPES)
def test_copy_and_deepcopy(name, rng):
    x = make_values((3, 4), name, rng)
    a, _ = to_mx(x, name, "transposed")
    for c in (copy.copy(a), copy.deepcopy(a)):
        assert c is not a
        assert dtype_name(c.dtype) == name
        np.testing.assert_array_equal(to_numpy(c), x)


_PICKLE_DTYPES = [pytest.param(n, marks=[ember_only]) if n == "float64"
                  else n for n in ALL]


# MLX's __setstate__ goes through mx.array(numpy float64), which narrows:
# a pickled float64 array comes back float32.  Ember keeps the dtype.
@pytest.mark.parametrize("name", _PICKLE_DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "negstride"])
def test_pickle_roundtrip(name, layout, rng):
    x = make_values((3, 4), name, rng)
    a, _ = to_mx(x, name, layout)
    state = a.__getstate__()
    b = pickle.loads(pickle.dumps(a))
    assert isinstance(b, mx.array) and b is not a
    assert dtype_name(b.dtype) == name and b.shape == a.shape
    np.testing.assert_array_equal(to_numpy(b), x)
    assert pickle.loads(pickle.dumps(state)) is not None


def test_pickle_0d_and_empty():
    for a in (mx.array(2.5), mx.zeros((0, 3), mx.int8)):
        b = pickle.loads(pickle.dumps(a))
        assert b.shape == a.shape and b.dtype == a.dtype
        assert b.tolist() == a.tolist()


# --------------------------------------------------------------------------
# NumPy, buffer protocol, DLPack
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in ALL if n != "bfloat16"])
def test_numpy_conversion(name, rng):
    x = make_values((3, 4), name, rng)
    a = mx.array(x, dtype=mx_dtype(name))
    for conv in (np.array, np.asarray, lambda v: v.__array__()):
        y = conv(a)
        assert isinstance(y, np.ndarray) and y.dtype == NP_CARRIER[name]
        np.testing.assert_array_equal(y, x)
    t = np.array(a.T)
    np.testing.assert_array_equal(t, x.T)


def test_numpy_conversion_is_a_copy_and_dtype_arg():
    a = mx.arange(3.0)
    n = np.array(a)
    n[0] = 5
    assert a.tolist() == [0.0, 1.0, 2.0]
    assert np.array(a, dtype=np.int64).tolist() == [0, 1, 2]


def test_memoryview():
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    a = mx.array(x)
    m = memoryview(a)
    assert m.format == "f" and m.shape == (2, 3) and m.itemsize == 4
    assert m.tolist() == x.tolist()
    assert memoryview(a.T).tolist() == x.T.tolist()
    assert memoryview(a[:, ::-1]).tolist() == x[:, ::-1].tolist()
    assert memoryview(mx.array([1.0], mx.float16)).format == "e"
    assert memoryview(mx.array([1, 2], mx.int8)).tolist() == [1, 2]
    assert bytes(mx.array([1, 2], mx.uint8)) == b"\x01\x02"


def test_dlpack():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = mx.array(x)
    assert a.__dlpack_device__() == (1, 0)  # kDLCPU
    np.testing.assert_array_equal(np.from_dlpack(a), x)
    np.testing.assert_array_equal(np.from_dlpack(a.T), x.T)
    assert_equal(mx.from_dlpack(x), x, "float32")
    assert_equal(mx.from_dlpack(a), x, "float32")
    assert_equal(mx.from_dlpack(x.T), x.T, "float32")
    assert_equal(mx.from_dlpack(np.arange(3)), [0, 1, 2], "int64")
    # like mx.array, float64 producers are narrowed to float32
    assert dtype_name(mx.from_dlpack(np.arange(3.0)).dtype) == "float32"


@ember_only
def test_from_dlpack_negative_strides():
    x = np.arange(6.0, dtype=np.float32)[::-1]
    assert_equal(mx.from_dlpack(x), x, "float32")


# --------------------------------------------------------------------------
# printing
# --------------------------------------------------------------------------

REPRS = [
    (lambda: mx.array(1), "array(1, dtype=int32)"),
    (lambda: mx.array(1.0), "array(1, dtype=float32)"),
    (lambda: mx.array(1.5), "array(1.5, dtype=float32)"),
    (lambda: mx.array(True), "array(True, dtype=bool)"),
    (lambda: mx.array([True, False]), "array([True, False], dtype=bool)"),
    (lambda: mx.array([1.0, 2.0]), "array([1, 2], dtype=float32)"),
    (lambda: mx.array([0.1, 2.0]), "array([0.1, 2], dtype=float32)"),
    (lambda: mx.array([1e-8, 1.0]), "array([1e-08, 1], dtype=float32)"),
    (lambda: mx.array([1e10, 1.0]), "array([1e+10, 1], dtype=float32)"),
    (lambda: mx.array(float("nan")), "array(nan, dtype=float32)"),
    (lambda: mx.array([float("inf"), -float("inf")]),
     "array([inf, -inf], dtype=float32)"),
    (lambda: mx.array([1 + 2j, 3 - 1j]),
     "array([1+2j, 3-1j], dtype=complex64)"),
    (lambda: mx.array(1, mx.uint8), "array(1, dtype=uint8)"),
    (lambda: mx.array([1.5], mx.float16), "array([1.5], dtype=float16)"),
    (lambda: mx.array([1.5], mx.bfloat16), "array([1.5], dtype=bfloat16)"),
    (lambda: mx.array([1.5], mx.float64), "array([1.5], dtype=float64)"),
    (lambda: mx.array(1 / 3), "array(0.333333, dtype=float32)"),
    (lambda: mx.array([1 / 3, 100.0]),
     "array([0.333333, 100], dtype=float32)"),
    (lambda: mx.array([123456789.0]), "array([1.23457e+08], dtype=float32)"),
    (lambda: mx.array([1 / 3], mx.float16),
     "array([0.333252], dtype=float16)"),
    (lambda: mx.array([-1.5, 2.25]), "array([-1.5, 2.25], dtype=float32)"),
    (lambda: mx.array([-1, 2], mx.int8), "array([-1, 2], dtype=int8)"),
    (lambda: mx.array([2 ** 62]),
     "array([4611686018427387904], dtype=int64)"),
    (lambda: mx.zeros((0,)), "array([], dtype=float32)"),
    (lambda: mx.zeros((1, 1, 1, 1)), "array([[[[0]]]], dtype=float32)"),
    (lambda: mx.arange(6), "array([0, 1, 2, 3, 4, 5], dtype=int32)"),
    (lambda: mx.arange(7), "array([0, 1, 2, ..., 4, 5, 6], dtype=int32)"),
    (lambda: mx.arange(2000),
     "array([0, 1, 2, ..., 1997, 1998, 1999], dtype=int32)"),
    (lambda: mx.arange(12).reshape(3, 4),
     "array([[0, 1, 2, 3],\n       [4, 5, 6, 7],\n"
     "       [8, 9, 10, 11]], dtype=int32)"),
    (lambda: mx.zeros((3, 0)),
     "array([[],\n       [],\n       []], dtype=float32)"),
    (lambda: mx.zeros((2, 7)),
     "array([[0, 0, 0, ..., 0, 0, 0],\n"
     "       [0, 0, 0, ..., 0, 0, 0]], dtype=float32)"),
    (lambda: mx.zeros((7, 2)),
     "array([[0, 0],\n       [0, 0],\n       [0, 0],\n       ...,\n"
     "       [0, 0],\n       [0, 0],\n       [0, 0]], dtype=float32)"),
    (lambda: mx.arange(8).reshape(2, 2, 2),
     "array([[[0, 1],\n        [2, 3]],\n       [[4, 5],\n"
     "        [6, 7]]], dtype=int32)"),
    (lambda: mx.arange(24).reshape(2, 3, 4).transpose(2, 0, 1)[:2],
     "array([[[0, 4, 8],\n        [12, 16, 20]],\n       [[1, 5, 9],\n"
     "        [13, 17, 21]]], dtype=int32)"),
]


@pytest.mark.parametrize("make,text", REPRS,
                         ids=[str(i) for i in range(len(REPRS))])
def test_repr_matches_mlx_format(make, text):
    a = make()
    assert repr(a) == text
    assert str(a) == text


def test_repr_evaluates_and_printoptions():
    a = mx.arange(3) + 1
    assert repr(a) == "array([1, 2, 3], dtype=int32)"
    assert mx.get_array_buffer_size(a) == 12
    x = mx.array([1 / 3, 2.0])
    assert mx.get_printoptions().precision == -1
    with mx.printoptions(precision=2):
        assert mx.get_printoptions().precision == 2
        assert repr(x) == "array([0.33, 2.00], dtype=float32)"
    assert repr(x) == "array([0.333333, 2], dtype=float32)"
    mx.set_printoptions(precision=3)
    try:
        assert repr(mx.array([1 / 3])) == "array([0.333], dtype=float32)"
    finally:
        mx.set_printoptions()
    assert mx.get_printoptions().precision == -1
    assert isinstance(mx.get_printoptions(), mx.PrintOptions)


def test_print_large_array_is_summarised(capsys):
    print(mx.zeros((100, 100)))
    out = capsys.readouterr().out
    assert "..." in out and out.count("\n") < 12


# --------------------------------------------------------------------------
# indexing (engine members __getitem__ / __setitem__)
# --------------------------------------------------------------------------

_IDX = np.arange(60, dtype=np.int32).reshape(3, 4, 5)

INDICES = [
    1, -1, (0, 2), (-1, -2, -3), slice(None), slice(1, None),
    slice(None, None, -1), (slice(None), slice(1, 3)),
    (slice(None, None, 2), slice(None, None, -2)), (Ellipsis, 1),
    (1, Ellipsis), (None, 1), (slice(None), None, 0), Ellipsis,
    slice(5, 10), slice(-10, 2), (0, slice(3, 0, -1), 4),
    (slice(None), -1, slice(None, None, -1)),
]


@pytest.mark.parametrize("index", INDICES, ids=[repr(i) for i in INDICES])
def test_basic_indexing(index):
    a = mx.array(_IDX)
    assert_equal(a[index], _IDX[index], "int32")


def test_integer_array_indexing():
    a = mx.array(_IDX)
    assert_equal(a[mx.array([0, 2])], _IDX[[0, 2]], "int32")
    assert_equal(a[[0, 2]], _IDX[[0, 2]], "int32")
    assert_equal(a[mx.array([-1])], _IDX[[-1]], "int32")
    assert_equal(a[mx.array([0, 1]), mx.array([1, 2])], _IDX[[0, 1], [1, 2]],
                 "int32")
    assert_equal(a[:, mx.array([3, 0]), 1], _IDX[:, [3, 0], 1], "int32")
    assert_equal(a[mx.array(1)], _IDX[1], "int32")
    assert_equal(mx.array(7)[...], 7, "int32")


def test_indexing_errors():
    a = mx.array(_IDX)
    with raises((ValueError, IndexError), "indices|index"):
        a[0, 0, 0, 0]
    with raises((ValueError, TypeError, IndexError), "index"):
        a[1.0]
    with raises((ValueError, TypeError, IndexError), "index"):
        a["a"]
    with raises((ValueError, IndexError), "0-d|0-dimensional|indices"):
        mx.array(1)[0]


@ember_only
@pytest.mark.parametrize("index", [3, -4, (0, 4), (0, 0, 5), (0, -5)])
def test_out_of_bounds_integer_index_raises(index):
    """MLX reads out of bounds (garbage or a segfault); Ember raises."""
    a = mx.array(_IDX)
    with raises(IndexError, "index|bound|range"):
        mx.eval(a[index])


@ember_only
def test_out_of_bounds_array_index_raises():
    a = mx.array(_IDX)
    with raises(IndexError, "index|bound|range"):
        mx.eval(a[mx.array([0, 5])])
    with raises(IndexError, "index|bound|range"):
        b = mx.zeros((3,))
        b[mx.array([7])] = 1.0
        mx.eval(b)


def test_setitem():
    b = mx.zeros((3, 4))
    ref = np.zeros((3, 4), np.float32)
    b[0] = 1
    ref[0] = 1
    b[:, 1] = mx.array([1, 2, 3])
    ref[:, 1] = [1, 2, 3]
    b[mx.array([0, 2])] = 5
    ref[[0, 2]] = 5
    b[1, ::-2] = mx.array([7.0, 8.0])
    ref[1, ::-2] = [7.0, 8.0]
    assert_equal(b, ref, "float32")
    c = mx.zeros(3, mx.int32)
    c[0] = 2.7
    assert_equal(c, [2, 0, 0], "int32")
    with raises(ValueError, "broadcast|setitem"):
        b[0] = mx.ones((2,))


def test_setitem_updates_aliases_only():
    c = mx.arange(4)
    alias = c
    snapshot = c + 0
    c[0] = 9
    assert alias.tolist() == [9, 1, 2, 3]
    assert snapshot.tolist() == [0, 1, 2, 3]


# --------------------------------------------------------------------------
# constants
# --------------------------------------------------------------------------

def test_constants():
    assert mx.pi == np.pi and mx.e == np.e
    assert mx.inf == float("inf") and np.isnan(mx.nan)
    assert mx.euler_gamma == 0.5772156649015329
    assert mx.newaxis is None
    assert mx.zeros((2,))[mx.newaxis].shape == (1, 2)


# --------------------------------------------------------------------------
# more than 2**31 elements
# --------------------------------------------------------------------------

@pytest.mark.slow
def test_array_with_more_than_2_31_elements():
    """2**31 + 2**16 uint8 elements (2 GiB): 64-bit sizes and offsets in
    reductions and indexing."""
    rows, cols = 2 ** 16, 2 ** 15 + 1
    a = mx.ones((rows, cols), dtype=mx.uint8)
    a[rows - 1, cols - 1] = 7  # linear offset > 2**31
    total = mx.sum(a)
    assert dtype_name(total.dtype) == "uint32"
    assert total.item() == rows * cols + 6
    assert a[rows - 1, cols - 1].item() == 7
    assert a[-1, -2].item() == 1
    col = mx.sum(a, axis=0)
    assert col.shape == (cols,) and col[-1].item() == rows + 6
    del a, col, total


@pytest.mark.slow
@ember_only
def test_1d_array_longer_than_2_31():
    """MLX limits each dimension to int32; Ember's dims are 64-bit inside
    (a shape given from Python is int32, as in MLX: OverflowError), so a
    flattened large array has one dim longer than 2**31."""
    n = 2 ** 31 + 10
    a = mx.zeros((n // 2, 2), dtype=mx.uint8).reshape(-1)
    assert a.shape == (n,) and a.size == n
    b = a + 1
    assert mx.sum(b).item() == n
    assert b[n - 1].item() == 1 and b[-1].item() == 1
    assert b[2 ** 31 + 5:].shape == (5,)


@ember_only
def test_python_int_beyond_int64_is_an_overflow_error():
    """MLX lets a C++ std::bad_cast out (RuntimeError)."""
    with pytest.raises(OverflowError):
        mx.array(2 ** 64)
    with pytest.raises(OverflowError):
        mx.array([1, 2 ** 64])


@ember_only
def test_python_int_that_does_not_fit_the_dtype_raises():
    """MLX wraps silently (mx.array(2**40, dtype=mx.int32) is 0); NumPy and
    Ember refuse."""
    with raises(ValueError, "overflow"):
        mx.array(2 ** 40, dtype=mx.int32)
    with raises(ValueError, "overflow"):
        mx.array(300, dtype=mx.uint8)
