"""Dtypes: the 14 types, promotion (checked against MLX's table, written out
below as data), weak Python scalars, categories, can_cast, isdtype,
finfo/iinfo and the default dtypes of Python values."""

import numpy as np
import pytest

from conftest import (ALL, FLOATS, INEXACT, INTS, ITEMSIZE, SINTS, UINTS,
                      dtype_name, mx, mx_dtype, raises)

SHORT = {"b": "bool", "u8": "uint8", "u16": "uint16", "u32": "uint32",
         "u64": "uint64", "i8": "int8", "i16": "int16", "i32": "int32",
         "i64": "int64", "f16": "float16", "bf16": "bfloat16",
         "f32": "float32", "f64": "float64", "c64": "complex64"}

# MLX 0.32 result_type(row, column), columns in the order of ALL:
#   b u8 u16 u32 u64 i8 i16 i32 i64 f16 bf16 f32 f64 c64
# Notable: uint64 with any signed int -> float32; float16 with bfloat16 ->
# float32; any integer with float16/bfloat16 stays half precision;
# float64 with complex64 -> complex64.
PROMOTION = {
    "bool": "b u8 u16 u32 u64 i8 i16 i32 i64 f16 bf16 f32 f64 c64",
    "uint8": "u8 u8 u16 u32 u64 i16 i16 i32 i64 f16 bf16 f32 f64 c64",
    "uint16": "u16 u16 u16 u32 u64 i32 i32 i32 i64 f16 bf16 f32 f64 c64",
    "uint32": "u32 u32 u32 u32 u64 i64 i64 i64 i64 f16 bf16 f32 f64 c64",
    "uint64": "u64 u64 u64 u64 u64 f32 f32 f32 f32 f16 bf16 f32 f64 c64",
    "int8": "i8 i16 i32 i64 f32 i8 i16 i32 i64 f16 bf16 f32 f64 c64",
    "int16": "i16 i16 i32 i64 f32 i16 i16 i32 i64 f16 bf16 f32 f64 c64",
    "int32": "i32 i32 i32 i64 f32 i32 i32 i32 i64 f16 bf16 f32 f64 c64",
    "int64": "i64 i64 i64 i64 f32 i64 i64 i64 i64 f16 bf16 f32 f64 c64",
    "float16": "f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f32 f32 f64 c64",
    "bfloat16":
        "bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32 bf16 f32 f64 c64",
    "float32": "f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f64 c64",
    "float64": "f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 c64",
    "complex64": "c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64",
}


def promote(a, b):
    return SHORT[PROMOTION[a].split()[ALL.index(b)]]


PAIRS = [(a, b) for a in ALL for b in ALL]


def _one(name):
    return mx.array([1], dtype=mx_dtype(name))


# --------------------------------------------------------------------------
# the dtype objects
# --------------------------------------------------------------------------

def test_fourteen_dtypes_exist_with_sizes():
    for name in ALL:
        d = mx_dtype(name)
        assert isinstance(d, mx.Dtype)
        assert d.size == ITEMSIZE[name]
        assert dtype_name(d) == name
        assert repr(d).endswith(name) and str(d).endswith(name)
    assert mx.bool_ is not None and dtype_name(mx.bool_) == "bool"


def test_dtype_equality_and_hash():
    assert mx.float32 == mx.float32
    assert mx.float32 != mx.int32
    assert not (mx.float32 == "float32")
    assert not (mx.float32 == np.float32)
    assert len({mx.float32, mx.float32, mx.int32}) == 2
    d = {mx.int8: 1}
    assert d[mx.array([1], mx.int8).dtype] == 1


def test_dtype_has_no_ordering_and_no_constructor():
    with pytest.raises(TypeError):
        mx.float32 < mx.float64  # noqa: B015
    with pytest.raises(TypeError):
        mx.Dtype()


# --------------------------------------------------------------------------
# promotion
# --------------------------------------------------------------------------

def test_promotion_table_is_symmetric():
    for a, b in PAIRS:
        assert promote(a, b) == promote(b, a), (a, b)


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}+{b}" for a, b in PAIRS])
def test_result_type_and_add(a, b):
    expect = promote(a, b)
    assert dtype_name(mx.result_type(mx_dtype(a), mx_dtype(b))) == expect
    assert dtype_name(mx.result_type(_one(a), _one(b))) == expect
    assert dtype_name(mx.result_type(_one(a), mx_dtype(b))) == expect
    r = mx.add(_one(a), _one(b))
    assert dtype_name(r.dtype) == expect
    # 0-d arrays are not weak: they promote like any other array
    r = _one(a) + mx.array(1, dtype=mx_dtype(b))
    assert dtype_name(r.dtype) == expect


@pytest.mark.parametrize("a,b", [("int8", "uint8"), ("uint64", "int64"),
                                 ("float16", "bfloat16"),
                                 ("int32", "float16"), ("bool", "int8"),
                                 ("float64", "complex64")])
def test_promoted_values(a, b):
    x = mx.array([1, 2], dtype=mx_dtype(a))
    y = mx.array([3, 1], dtype=mx_dtype(b))
    r = x * y + x
    assert dtype_name(r.dtype) == promote(a, b)
    expect = [4, 4] if a != "bool" else [4, 2]  # bool [1, 2] is [T, T]
    np.testing.assert_allclose(np.array(r.astype(mx.complex64)).real,
                               expect)


def test_result_type_several_and_errors():
    r = mx.result_type(mx.array([1], mx.int8), mx.array([1.0], mx.float16),
                       mx.uint8)
    assert dtype_name(r) == "float16"
    assert dtype_name(mx.result_type(mx.int8)) == "int8"
    with raises(ValueError, "result_type", mlx_msg=True):
        mx.result_type()
    with raises(ValueError, "result_type", mlx_msg=True):
        mx.result_type(1, mx.int8)


# --------------------------------------------------------------------------
# weak Python scalars
# --------------------------------------------------------------------------

def _weak_expect(name, scalar):
    if isinstance(scalar, complex):
        return "complex64"
    if isinstance(scalar, bool):
        return name
    if isinstance(scalar, int):
        return "int32" if name == "bool" else name
    return name if name in INEXACT else "float32"


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("scalar", [True, 1, 2.5, 1j],
                         ids=["bool", "int", "float", "complex"])
def test_weak_python_scalars(name, scalar):
    expect = _weak_expect(name, scalar)
    a = _one(name) if name != "bool" else mx.array([True])
    assert dtype_name((a + scalar).dtype) == expect
    assert dtype_name((scalar + a).dtype) == expect
    assert dtype_name(mx.multiply(a, scalar).dtype) == expect
    assert dtype_name(mx.maximum(scalar, a).dtype) == expect


def test_weak_scalar_values_are_exact():
    assert np.array(mx.array([1], mx.int8) + 100).tolist() == [101]
    assert np.array(mx.array([1.5], mx.float16) * 2.0).dtype == np.float16
    assert np.array(mx.array([1], mx.uint32) + (2 ** 32 - 2)).tolist() == \
        [2 ** 32 - 1]
    assert np.array(mx.array([1], mx.int64) + 2 ** 40).tolist() == \
        [2 ** 40 + 1]
    # float scalars that overflow a half type become inf, no error
    assert np.array(mx.array([1], mx.float16) + 1e10).tolist() == \
        [float("inf")]


@pytest.mark.parametrize("name,value", [("int8", 300), ("uint8", -1),
                                        ("int32", 2 ** 40),
                                        ("uint32", 2 ** 32),
                                        ("int16", -40000)])
def test_weak_scalar_out_of_range_raises(name, value):
    with raises(ValueError, name + "|overflow", mlx_msg=True):
        _one(name) + value
    with raises(ValueError, name + "|overflow", mlx_msg=True):
        mx.where(mx.array([True]), _one(name), value)


def test_scalar_only_ops_use_default_dtypes():
    assert dtype_name(mx.add(1, 2).dtype) == "int32"
    assert dtype_name(mx.add(1.0, 2).dtype) == "float32"
    assert dtype_name(mx.add(True, 2).dtype) == "int32"
    assert dtype_name(mx.add(True, False).dtype) == "bool"
    assert dtype_name(mx.multiply(2, 1j).dtype) == "complex64"
    assert dtype_name(mx.where(True, 2, 3.5).dtype) == "float32"
    assert dtype_name(mx.divide(1, 2).dtype) == "float32"


def test_comparison_with_scalars():
    r = mx.array([1], mx.int8) < 1.5
    assert dtype_name(r.dtype) == "bool" and r.tolist() == [True]
    assert (mx.array([1], mx.int8) == 100).tolist() == [False]


# --------------------------------------------------------------------------
# default dtypes of Python values
# --------------------------------------------------------------------------

@pytest.mark.parametrize("value,name", [
    (1, "int32"), (1.0, "float32"), (True, "bool"), (1j, "complex64"),
    ([1, 2], "int32"), ([1, 2.0], "float32"), ([True, 1], "int32"),
    ([True, 2.5], "float32"), ([1j, 2], "complex64"), ([], "float32"),
    ((1, 2), "int32"), (2 ** 31 - 1, "int32"), (2 ** 31, "int64"),
    (-2 ** 31, "int32"), (-2 ** 31 - 1, "int64"), ([1, 2 ** 40], "int64"),
    (1e300, "float32"),
])
def test_default_dtype_of_python_values(value, name):
    assert dtype_name(mx.array(value).dtype) == name


@pytest.mark.parametrize("np_dtype,name", [
    (np.bool_, "bool"), (np.uint8, "uint8"), (np.uint16, "uint16"),
    (np.uint32, "uint32"), (np.uint64, "uint64"), (np.int8, "int8"),
    (np.int16, "int16"), (np.int32, "int32"), (np.int64, "int64"),
    (np.float16, "float16"), (np.float32, "float32"),
    # MLX narrows NumPy's double types unless a dtype is given
    (np.float64, "float32"), (np.complex64, "complex64"),
    (np.complex128, "complex64"),
])
def test_dtype_of_numpy_arrays(np_dtype, name):
    assert dtype_name(mx.array(np.zeros(2, np_dtype)).dtype) == name
    assert dtype_name(mx.asarray(np.zeros(2, np_dtype)).dtype) == name


def test_float64_kept_when_asked():
    a = mx.array(np.array([0.1, 1e300]), dtype=mx.float64)
    assert dtype_name(a.dtype) == "float64"
    assert np.array(a).tolist() == [0.1, 1e300]


# --------------------------------------------------------------------------
# categories
# --------------------------------------------------------------------------

CATEGORIES = ["complexfloating", "floating", "inexact", "signedinteger",
              "unsignedinteger", "integer", "number", "generic"]

# rows: dtype; columns: CATEGORIES (MLX 0.32)
SUBDTYPE = {
    "bool": "00000001", "uint8": "00001111", "uint16": "00001111",
    "uint32": "00001111", "uint64": "00001111", "int8": "00010111",
    "int16": "00010111", "int32": "00010111", "int64": "00010111",
    "float16": "01100011", "bfloat16": "01100011", "float32": "01100011",
    "float64": "01100011", "complex64": "10100011",
}
CAT_SUBDTYPE = {
    "complexfloating": "10100011", "floating": "01100011",
    "inexact": "00100011", "signedinteger": "00010111",
    "unsignedinteger": "00001111", "integer": "00000111",
    "number": "00000011", "generic": "00000001",
}


def test_dtype_category_enum():
    assert list(mx.DtypeCategory.__members__) == CATEGORIES
    for c in CATEGORIES:
        assert getattr(mx, c) == getattr(mx.DtypeCategory, c)
        assert isinstance(getattr(mx, c), mx.DtypeCategory)


@pytest.mark.parametrize("name", ALL)
def test_issubdtype_dtype_vs_category(name):
    got = "".join(str(int(mx.issubdtype(mx_dtype(name), getattr(mx, c))))
                  for c in CATEGORIES)
    assert got == SUBDTYPE[name]


def test_issubdtype_category_vs_category_and_dtypes():
    for c, row in CAT_SUBDTYPE.items():
        got = "".join(str(int(mx.issubdtype(getattr(mx, c),
                                            getattr(mx, c2))))
                      for c2 in CATEGORIES)
        assert got == row, c
    assert mx.issubdtype(mx.float32, mx.float32)
    assert not mx.issubdtype(mx.float32, mx.float64)
    assert not mx.issubdtype(mx.floating, mx.float32)
    assert mx.issubdtype(mx.array([1.0]).dtype, mx.floating)


ISDTYPE_KINDS = {
    "bool": ["bool"], "signed integer": SINTS, "unsigned integer": UINTS,
    "integral": INTS, "real floating": FLOATS,
    "complex floating": ["complex64"],
    "numeric": INTS + INEXACT,
}


@pytest.mark.parametrize("kind", list(ISDTYPE_KINDS))
def test_isdtype_kinds(kind):
    for name in ALL:
        assert mx.isdtype(mx_dtype(name), kind) == (
            name in ISDTYPE_KINDS[kind]), (name, kind)


def test_isdtype_dtypes_tuples_and_errors():
    assert mx.isdtype(mx.float32, mx.float32)
    assert not mx.isdtype(mx.float32, mx.float16)
    assert mx.isdtype(mx.int32, ("integral", "bool"))
    assert mx.isdtype(mx.bool_, ("integral", "bool"))
    assert mx.isdtype(mx.float16, (mx.float32, "real floating"))
    assert not mx.isdtype(mx.complex64, ("integral", mx.float32))
    with raises(ValueError, "isdtype", mlx_msg=True):
        mx.isdtype(mx.float32, "foo")
    with raises(ValueError, "isdtype", mlx_msg=True):
        mx.isdtype(mx.float32, mx.floating)


# --------------------------------------------------------------------------
# can_cast: MLX allows a cast exactly when promotion lands on the target
# --------------------------------------------------------------------------

@pytest.mark.parametrize("src", ALL)
def test_can_cast_follows_promotion(src):
    for dst in ALL:
        expect = promote(src, dst) == dst
        got = mx.can_cast(mx_dtype(src), mx_dtype(dst))
        assert got == expect, (src, dst)


def test_can_cast_examples_and_arrays():
    assert mx.can_cast(mx.int8, mx.int16)
    assert not mx.can_cast(mx.int8, mx.uint8)
    assert not mx.can_cast(mx.float16, mx.bfloat16)
    assert mx.can_cast(mx.uint64, mx.float32)
    assert mx.can_cast(mx.array([1]), mx.float32)
    assert not mx.can_cast(mx.array([1.0]), mx.int32)
    with raises(ValueError, "can_cast", mlx_msg=True):
        mx.can_cast(1, mx.int8)


# --------------------------------------------------------------------------
# finfo / iinfo
# --------------------------------------------------------------------------

FINFO = {  # bits, eps, max, smallest_normal, dtype
    "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, "float16"),
    "bfloat16": (16, 0.0078125, 3.3895313892515355e+38,
                 1.1754943508222875e-38, "bfloat16"),
    "float32": (32, 1.1920928955078125e-07, 3.4028234663852886e+38,
                1.1754943508222875e-38, "float32"),
    "float64": (64, 2.220446049250313e-16, 1.7976931348623157e+308,
                2.2250738585072014e-308, "float64"),
    # complex64 reports its float32 component
    "complex64": (32, 1.1920928955078125e-07, 3.4028234663852886e+38,
                  1.1754943508222875e-38, "float32"),
}


@pytest.mark.parametrize("name", list(FINFO))
def test_finfo(name):
    bits, eps, big, tiny, dt = FINFO[name]
    f = mx.finfo(mx_dtype(name))
    assert f.bits == bits
    assert f.eps == eps
    assert f.max == big and f.min == -big
    assert f.smallest_normal == tiny
    assert dtype_name(f.dtype) == dt
    assert "finfo(" in repr(f) and dt in repr(f)


@pytest.mark.parametrize("name", INTS)
def test_iinfo(name):
    info = np.iinfo(getattr(np, name))
    f = mx.iinfo(mx_dtype(name))
    assert f.min == int(info.min) and f.max == int(info.max)
    assert isinstance(f.max, int)
    assert dtype_name(f.dtype) == name
    assert repr(f) == f"iinfo(min={info.min}, max={info.max}, dtype={name})"


def test_finfo_iinfo_errors():
    with raises(ValueError, "finfo", mlx_msg=True):
        mx.finfo(mx.int32)
    with raises(ValueError, "iinfo", mlx_msg=True):
        mx.iinfo(mx.float32)
    with raises(ValueError, "iinfo", mlx_msg=True):
        mx.iinfo(mx.bool_)
    with pytest.raises(TypeError):
        mx.finfo(mx.floating)


def test_finfo_values_agree_with_arrays():
    for name in ("float16", "float32", "float64"):
        f = mx.finfo(mx_dtype(name))
        big = mx.array(f.max, dtype=mx_dtype(name))
        assert np.isinf(np.array(big * 2))
        one = mx.array(1.0, dtype=mx_dtype(name))
        assert (one + f.eps).item() > 1.0
        assert (one + f.eps / 4).item() == 1.0
