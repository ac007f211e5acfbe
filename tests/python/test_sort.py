"""Sorting, selection and scans: semantics the op table cannot express.

NaN placement and the exact bits of -0 / NaN in sorted output, stability
of argsort, the partition property for any kth (negative too), topk's
order, unique's four outputs with fill / size semantics, reverse/inclusive
scan identities, long and large inputs (radix and parallel paths, both
cores), non-contiguous inputs, precision of 2^20-long scans.
"""

import numpy as np
import pytest

from conftest import (ALL, DATA_DTYPES, FLOATS, IS_MLX, assert_close,
                      assert_equal, ember_only, mx, mx_dtype, raises,
                      round_to, to_mx, to_numpy)
import op_table  # noqa: F401  (first: it imports op_table_sort at its end)
from op_table_sort import _unique_ref, unique_samples


def _rng(seed=0):
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------
# NaN, -0 and stability
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [9, 1000])
def test_nan_sorts_last_and_zero_signs_keep_input_order(dtype, n):
    rng = _rng(n)
    base = np.array([np.nan, 1.0, -0.0, 0.0, np.inf, -np.inf, -1.0, 0.0, -0.0])
    x = round_to(np.resize(base, n), dtype)
    rng.shuffle(x)
    a = mx.array(x, dtype=mx_dtype(dtype))
    got = to_numpy(mx.sort(a))
    order = np.argsort(x, kind="stable")
    want = x[order]
    n_nan = int(np.isnan(x).sum())
    assert np.isnan(got[n - n_nan:]).all() and not np.isnan(got[:n - n_nan]).any()
    np.testing.assert_array_equal(got[:n - n_nan], want[:n - n_nan])
    # -0 and +0 are equal: a stable sort keeps their input order
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert_equal(mx.argsort(a), order.astype(np.uint32), "uint32")


@ember_only
def test_sort_keeps_nan_payloads():
    """NaNs come out bit-exact (sign and payload), in input order."""
    bits = np.array([0x7FC00001, 0x3F800000, 0xFFC00000, 0x00000000, 0x7F800001],
                    dtype=np.uint32)
    x = bits.view(np.float32)
    got = np.array(mx.sort(mx.array(x))).view(np.uint32)
    np.testing.assert_array_equal(got, [0x00000000, 0x3F800000, 0x7FC00001, 0xFFC00000,
                                        0x7F800001])


@pytest.mark.parametrize("n", [50, 5000, 300000])
@pytest.mark.parametrize("dtype", ["int8", "int32", "float32", "float64", "uint16",
                                   "bfloat16", "complex64"])
def test_argsort_is_stable(n, dtype):
    rng = _rng(n)
    x = rng.integers(-3, 3, size=n)
    if dtype == "complex64":
        x = x + 1j * rng.integers(0, 2, size=n)
    x = round_to(x if dtype != "uint16" else np.abs(x), dtype)
    a = mx.array(x, dtype=mx_dtype(dtype))
    want = np.argsort(x, kind="stable")
    assert_equal(mx.argsort(a), want.astype(np.uint32), "uint32")
    assert_equal(mx.sort(a), x[want], dtype)


def test_argsort_stable_along_axis_0_and_transposed():
    x = _rng(1).integers(0, 4, size=(300, 7)).astype(np.float32)
    a = mx.array(x)
    assert_equal(mx.argsort(a, axis=0), np.argsort(x, axis=0, kind="stable").astype(np.uint32))
    at = mx.transpose(mx.array(np.ascontiguousarray(x.T)))
    assert_equal(mx.argsort(at, axis=0), np.argsort(x, axis=0, kind="stable").astype(np.uint32))


@pytest.mark.parametrize("dtype", DATA_DTYPES)
def test_sort_presorted_reversed_and_constant(dtype):
    n = 4000
    if dtype == "bool":
        inc = np.arange(n) >= n // 2
    else:
        inc = round_to(np.sort(_rng(2).integers(0, 100, size=n)), dtype)
    for x in (inc, inc[::-1].copy(), np.full(n, inc[n // 3])):
        a = mx.array(x, dtype=mx_dtype(dtype))
        assert_equal(mx.sort(a), np.sort(x, kind="stable"), dtype)
        assert_equal(mx.argsort(a), np.argsort(x, kind="stable").astype(np.uint32), "uint32")


@ember_only  # MLX orders complex NaNs differently from NumPy
def test_complex_nan_classes_sort_as_numpy():
    nan = np.nan
    x = np.array([2 + 0j, complex(1, nan), 1 + 2j, complex(nan, 0), complex(nan, -5),
                  complex(3, nan), complex(nan, nan), complex(-0.0, 1), complex(0.0, 1)],
                 dtype=np.complex64)
    order = np.argsort(x, kind="stable")
    assert_equal(mx.argsort(mx.array(x)), order.astype(np.uint32), "uint32")
    got = to_numpy(mx.sort(mx.array(x)))
    np.testing.assert_array_equal(got, x[order])


# --------------------------------------------------------------------------
# large inputs: radix paths, one huge row (split across threads), many rows
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "int64", "uint8",
                                   "float16", "uint32"])
def test_sort_one_huge_row(dtype):
    n = 1 << 20
    rng = _rng(3)
    if dtype in ("uint8",):
        x = rng.integers(0, 256, size=n).astype(np.uint8)
    elif dtype.startswith(("int", "uint")):
        info = np.iinfo(getattr(np, dtype))
        x = rng.integers(info.min, info.max, size=n, dtype=getattr(np, dtype))
    else:
        x = round_to(rng.standard_normal(n) * 100, dtype)
        x[rng.integers(0, n, 100)] = np.nan
    a = mx.array(x, dtype=mx_dtype(dtype))
    want = np.argsort(x, kind="stable")
    assert_equal(mx.argsort(a), want.astype(np.uint32), "uint32")
    assert_equal(mx.sort(a), x[want], dtype)


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32"])
def test_sort_32bit_all_sizes(dtype):
    """The 32-bit sort: networks below 1024, quicksort above; ties, extremes."""
    rng = _rng(21)
    sizes = list(range(1, 70)) + [127, 128, 129, 255, 256, 257, 511, 513, 1023, 1024, 1025,
                                  1500, 2047, 2049, 3000, 8191]
    info = np.iinfo(np.int32) if dtype == "int32" else np.iinfo(np.uint32)
    for n in sizes:
        for kind in ("random", "ties", "extremes"):
            if kind == "random":
                x = rng.standard_normal(n) * 1000
            elif kind == "ties":
                x = rng.integers(0, 3, n)
            else:
                x = rng.choice([info.min, info.max, 0, 1], n)
            x = x.astype(np.float32 if dtype == "float32" else getattr(np, dtype))
            if dtype == "float32" and kind == "extremes":
                x = rng.choice(np.array([np.inf, -np.inf, np.nan, 0.0, -0.0,
                                         np.finfo(np.float32).max], np.float32), n)
            got = to_numpy(mx.sort(mx.array(x)))
            np.testing.assert_array_equal(got, np.sort(x), err_msg=f"n={n} {kind}")


def test_sort_narrow_range_skips_digits():
    """Values sharing their top bytes (the MSD pass finds one bucket)."""
    x = (_rng(4).integers(0, 1000, size=1 << 19) + 10 ** 6).astype(np.int32)
    a = mx.array(x)
    assert_equal(mx.sort(a), np.sort(x), "int32")
    assert_equal(mx.argsort(a), np.argsort(x, kind="stable").astype(np.uint32), "uint32")


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_many_rows_both_cores(axis):
    x = _rng(5).standard_normal((512, 700)).astype(np.float32)
    a = mx.array(x)
    assert_equal(mx.sort(a, axis=axis), np.sort(x, axis=axis), "float32")
    assert_equal(mx.argsort(a, axis=axis),
                 np.argsort(x, axis=axis, kind="stable").astype(np.uint32), "uint32")


@pytest.mark.parametrize("layout", ["transposed", "negstride", "sliced", "broadcast",
                                    "np_strided"])
def test_sort_non_contiguous(layout):
    x = _rng(6).integers(-50, 50, size=(64, 300)).astype(np.float32)
    a, vals = to_mx(x, "float32", layout)
    for axis in (0, 1):
        assert_equal(mx.sort(a, axis=axis), np.sort(vals, axis=axis), "float32")
        assert_equal(mx.argsort(a, axis=axis),
                     np.argsort(vals, axis=axis, kind="stable").astype(np.uint32), "uint32")
    assert_equal(mx.sort(a, axis=None), np.sort(vals, axis=None), "float32")


# --------------------------------------------------------------------------
# partition / argpartition: the partition property for every kth
# --------------------------------------------------------------------------

def _check_partitioned(vals, kth, axis, ref):
    """vals: partitioned values; ref: the input. NaN-aware, per row."""
    s = np.sort(ref, axis=axis)
    vm = np.moveaxis(vals, axis, -1)
    sm = np.moveaxis(s, axis, -1)
    n = vm.shape[-1]
    k = kth % n
    np.testing.assert_array_equal(np.sort(vm, axis=-1), sm)  # a permutation
    pivot = sm[..., k:k + 1]
    np.testing.assert_array_equal(vm[..., k:k + 1], pivot)
    with np.errstate(invalid="ignore"):
        below = vm[..., :k]
        above = vm[..., k + 1:]
        nanp = np.isnan(pivot)
        ok_below = (below <= pivot) | nanp
        ok_above = (above >= pivot) | np.isnan(above)
    assert ok_below.all() and ok_above.all()


@pytest.mark.parametrize("kth", [0, 1, 5, 9, -1, -3, -10])
@pytest.mark.parametrize("dtype", ["float32", "int16", "float16", "uint64"])
def test_partition_property(kth, dtype):
    rng = _rng(kth + 20)
    x = round_to(rng.integers(0, 6, size=(4, 10)), dtype)
    if dtype in ("float32", "float16"):
        x[0, 3] = np.nan
        x[2, :2] = np.nan
    a = mx.array(x, dtype=mx_dtype(dtype))
    for axis in (1, -1):
        got = to_numpy(mx.partition(a, kth, axis=axis))
        _check_partitioned(got, kth, axis, x)
        idx = np.array(mx.argpartition(a, kth, axis=axis))
        assert idx.dtype == np.uint32
        np.testing.assert_array_equal(np.sort(idx, axis=axis),
                                      np.broadcast_to(np.arange(10), idx.shape))
        _check_partitioned(np.take_along_axis(x, idx.astype(np.int64), axis=axis), kth, axis, x)
    xt = x.T.copy()
    got = to_numpy(mx.partition(mx.array(xt, dtype=mx_dtype(dtype)), kth % 4 - 4, axis=0))
    _check_partitioned(got, kth % 4 - 4, 0, xt)


def test_partition_long_rows_and_none_axis():
    x = _rng(7).standard_normal((3, 5000)).astype(np.float32)
    for kth in (0, 2500, -1):
        _check_partitioned(to_numpy(mx.partition(mx.array(x), kth)), kth, 1, x)
    flat = to_numpy(mx.partition(mx.array(x), 7000, axis=None))
    _check_partitioned(flat, 7000, 0, x.reshape(-1))


@ember_only
def test_partition_order_is_deterministic():
    """Ember: smaller elements in input order, then the kth value's equals,
    then the larger ones in input order."""
    x = np.array([5, 1, 4, 1, 3, 9, 2, 3, 0], dtype=np.int32)
    assert mx.partition(mx.array(x), 4).tolist() == [1, 1, 2, 0, 3, 3, 5, 4, 9]
    assert mx.argpartition(mx.array(x), 4).tolist() == [1, 3, 6, 8, 4, 7, 0, 2, 5]
    assert mx.partition(mx.array(x), -1).tolist() == [5, 1, 4, 1, 3, 2, 3, 0, 9]


@ember_only
@pytest.mark.parametrize("dtype", ["bfloat16", "int8", "uint8", "float32", "int64", "complex64"])
def test_partition_layout_long_rows_with_ties(dtype):
    """Rows of a vocabulary's length, values bunched into a few (tied)
    buckets as logits are: the kth value found by the radix select (by
    nth_element for complex keys), then smaller, equal and larger elements
    each in input order."""
    rng = _rng(31)
    base = rng.integers(-20, 21, size=12000)
    x = base.astype(np.complex64) + 1j * rng.integers(0, 2, size=12000) if dtype == "complex64" else base
    if dtype == "uint8":
        x = base + 20
    x = round_to(x, dtype) if dtype not in ("complex64",) else x.astype(np.complex64)
    a = mx.array(x, dtype=mx_dtype(dtype))
    for kth in (0, 1, 5000, 11999, -1):
        v = np.sort(x)[kth]
        idx = np.arange(x.size)
        want = np.concatenate([idx[x < v], idx[x == v], idx[x > v]]) if dtype != "complex64" else None
        if dtype == "complex64":  # NumPy orders complex by (real, imag), as Ember does
            key = lambda z: (z.real, z.imag)
            lt = np.array([key(z) < key(v) for z in x])
            gt = np.array([key(z) > key(v) for z in x])
            want = np.concatenate([idx[lt], idx[~lt & ~gt], idx[gt]])
        np.testing.assert_array_equal(np.array(mx.argpartition(a, kth)), want)
        np.testing.assert_array_equal(to_numpy(mx.partition(a, kth)), x[want])


# --------------------------------------------------------------------------
# topk
# --------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 3, 10, 200])
def test_topk_values_are_the_k_largest(k):
    x = _rng(k).standard_normal((5, 200)).astype(np.float32)
    got = to_numpy(mx.topk(mx.array(x), k))
    want = np.sort(x, axis=-1)[:, 200 - k:]
    np.testing.assert_array_equal(np.sort(got, axis=-1), want)
    got0 = to_numpy(mx.topk(mx.array(x), min(k, 5), axis=0))
    np.testing.assert_array_equal(np.sort(got0, axis=0), np.sort(x, axis=0)[5 - min(k, 5):])


@ember_only
def test_topk_is_ascending():
    """Ember returns the k largest in ascending order (MLX promises no order
    and its output is not sorted)."""
    x = _rng(8).standard_normal(1000).astype(np.float32)
    got = to_numpy(mx.topk(mx.array(x), 10))
    np.testing.assert_array_equal(got, np.sort(x)[-10:])


def test_topk_nan_counts_as_largest():
    x = mx.array([1.0, np.nan, 3.0, 2.0, np.nan])
    got = np.sort(to_numpy(mx.topk(x, 3)))
    assert got[0] == 3.0 and np.isnan(got[1:]).all()


# --------------------------------------------------------------------------
# unique: all four outputs, fill and size
# --------------------------------------------------------------------------

def _unique_call(x, size, dtype, kw):
    a = mx.array(x, dtype=mx_dtype(dtype)) if x.size else mx.zeros(x.shape, mx_dtype(dtype))
    kw = dict(kw)
    if "fill_value" in kw and not np.isscalar(kw["fill_value"]) and \
            not isinstance(kw["fill_value"], (int, float)):
        fv = kw["fill_value"]
        kw["fill_value"] = mx.array(fv.value, dtype=mx_dtype(fv.dtype))
    return mx.unique(a, size, True, True, True, **kw)


@pytest.mark.parametrize("dtype", ALL)
def test_unique_all_outputs(dtype):
    rng = _rng(ALL.index(dtype))
    for x, size, kw in unique_samples(dtype, rng):
        x = round_to(x, dtype)
        fill = kw.get("fill_value", None)
        ref_fill = getattr(fill, "value", fill)
        want = _unique_ref(x.astype(np.float64) if dtype == "bfloat16" else x, size,
                           True, True, True, fill_value=ref_fill)
        got = _unique_call(x, size, dtype, kw)
        assert isinstance(got, tuple) and len(got) == 4
        msg = f"unique[{dtype}] shape={x.shape} size={size} {kw}"
        assert_close(got[0], want[0], dtype=dtype, msg=msg + " values")
        assert_equal(got[1], want[1], "uint32", msg=msg + " index")
        assert_equal(got[2], want[2], "uint32", msg=msg + " inverse")
        assert_equal(got[3], want[3], "int32", msg=msg + " counts")


def test_unique_documented_example():
    a = mx.array([2, 1, 2, 3, 1])
    assert mx.unique(a, 3).tolist() == [1, 2, 3]
    assert mx.unique(a, 5).tolist() == [1, 2, 3, 1, 1]
    v, i, inv, c = mx.unique(a, 4, True, True, True, fill_value=0)
    assert v.tolist() == [1, 2, 3, 0]
    assert i.tolist() == [1, 0, 3, 1] and i.dtype == mx.uint32
    assert inv.tolist() == [1, 0, 1, 2, 0] and inv.dtype == mx.uint32
    assert c.tolist() == [2, 2, 1, 0] and c.dtype == mx.int32


def test_unique_return_combinations_and_truncation():
    a = mx.array([3, 1, 2, 3, 1, 5])
    r = mx.unique(a, 6, return_index=True)
    assert isinstance(r, tuple) and len(r) == 2
    assert r[1].tolist() == [1, 2, 0, 5, 1, 1]
    v, c = mx.unique(a, 2, return_counts=True)
    assert v.tolist() == [1, 2] and c.tolist() == [2, 1]
    v, inv = mx.unique(a, 2, return_inverse=True)
    assert inv.tolist() == [1, 0, 1, 1, 0, 1]   # dropped values clamp to the last entry
    v, inv = mx.unique(a, 0, return_inverse=True)
    assert v.shape == (0,) and inv.tolist() == [0] * 6
    assert mx.unique(a, 6, fill_value=2.5).tolist() == [1, 2, 3, 5, 2, 2]
    assert mx.unique(a, 6, fill_value=mx.array(9)).tolist() == [1, 2, 3, 5, 9, 9]
    assert mx.unique(mx.array([[3, 1], [1, 3]]), 3, return_inverse=True)[1].tolist() == \
        [[1, 0], [0, 1]]


def test_unique_nans_are_distinct_and_zero_is_first_occurrence():
    x = mx.array([1.0, np.nan, np.nan, 0.0, -0.0])
    v, i, inv, c = mx.unique(x, 5, True, True, True)
    got = to_numpy(v)
    np.testing.assert_array_equal(got[:2], [0.0, 1.0])
    assert np.isnan(got[2:4]).all() and got[4] == 0.0
    assert not np.signbit(got[0])   # the first occurrence (0.0, not -0.0)
    assert i.tolist() == [3, 0, 1, 2, 3]
    assert inv.tolist() == [1, 2, 3, 0, 0]
    assert c.tolist() == [2, 1, 1, 1, 0]


def test_unique_large_input():
    x = _rng(9).integers(0, 5000, size=400000).astype(np.int32)
    v, i, inv, c = mx.unique(mx.array(x), 5000, True, True, True)
    uv, ui, uinv, uc = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    assert_equal(v, uv, "int32")
    assert_equal(i, ui.astype(np.uint32), "uint32")
    assert_equal(inv, uinv.astype(np.uint32), "uint32")
    assert_equal(c, uc.astype(np.int32), "int32")


# --------------------------------------------------------------------------
# searchsorted
# --------------------------------------------------------------------------

def test_searchsorted_documented_example_and_promotion():
    a = mx.array([1, 2, 2, 4])
    v = mx.array([0, 2, 3, 5])
    assert mx.searchsorted(a, v).tolist() == [0, 1, 3, 4]
    assert mx.searchsorted(a, v, side="right").tolist() == [0, 3, 3, 4]
    u8 = mx.array([1, 2, 3], mx.uint8)
    assert mx.searchsorted(u8, mx.array([-1, 300])).tolist() == [0, 3]
    assert mx.searchsorted(mx.array([1, 2, 3], mx.int8), mx.array([1.5])).tolist() == [1]
    assert mx.searchsorted(a, mx.array(3)).shape == ()


def test_searchsorted_large_and_strided():
    s = np.sort(_rng(10).standard_normal(100000)).astype(np.float32)
    v = _rng(11).standard_normal((300, 200)).astype(np.float32)
    mv = mx.transpose(mx.array(np.ascontiguousarray(v.T)))
    for side in ("left", "right"):
        assert_equal(mx.searchsorted(mx.array(s), mv, side=side),
                     np.searchsorted(s, v, side=side).astype(np.uint32), "uint32")
    big = mx.array(np.repeat(s[:1000], 2))[::2]   # a strided sorted sequence
    assert_equal(mx.searchsorted(big, mx.array(v[0])),
                 np.searchsorted(s[:1000], v[0]).astype(np.uint32), "uint32")


# --------------------------------------------------------------------------
# median, minmax, count_nonzero
# --------------------------------------------------------------------------

def test_median_semantics():
    a = mx.array([[1, 2, 3], [4, 5, 7]])
    assert_close(mx.median(a), np.float64(3.5), "float32")
    assert_close(mx.median(a, 1, True), np.array([[2.0], [5.0]]), "float32")
    assert_close(mx.median(a, axis=[0, 1]), np.float64(3.5), "float32")
    nan = mx.array([[1.0, np.nan, 3.0, 4.0, 5.0], [1, 2, 3, 4, 5]])
    r = to_numpy(mx.median(nan, axis=1))
    assert np.isnan(r[0]) and r[1] == 3.0
    assert mx.median(mx.array([True, False, True, True])).item() == 1.0
    assert mx.median(mx.array([255, 254], mx.uint8)).item() == 254.5
    assert_close(mx.median(mx.array([1 + 5j, 2 + 1j, 3 + 0j, 0 + 9j])),
                 np.complex128(1.5 + 3j), "complex64")
    assert mx.median(mx.zeros((0, 3)), axis=1).shape == (0,)


@ember_only
def test_median_ember_extensions():
    """axis=() returns the input as the result dtype (MLX raises from its
    flatten); half types average in float32 (MLX overflows to inf)."""
    a = mx.array([[1, 2], [3, 4]])
    assert_equal(mx.median(a, axis=()), np.array([[1, 2], [3, 4]], np.float32), "float32")
    h = mx.median(mx.array([60000, 65000], mx.float16))
    assert h.dtype == mx.float16 and np.isfinite(to_numpy(h))
    assert_close(h, np.float64(62500), "float16")


def test_median_large_even_and_odd():
    x = _rng(12).standard_normal((6, 100001)).astype(np.float32)
    assert_close(mx.median(mx.array(x), axis=1), np.median(x, axis=1), "float32")
    assert_close(mx.median(mx.array(x[:, :-1]), axis=1), np.median(x[:, :-1], axis=1),
                 "float32")
    assert_close(mx.median(mx.array(x), axis=0), np.median(x, axis=0), "float32")


def test_minmax_and_count_nonzero():
    a = mx.array([[3.0, 1, 2], [4, 0, 0]])
    r = mx.minmax(a, axis=1)
    assert isinstance(r, tuple) and len(r) == 2
    assert r[0].tolist() == [1.0, 0.0] and r[1].tolist() == [3.0, 4.0]
    lo, hi = mx.minmax(a, 1, True)
    assert lo.shape == (2, 1) and hi.shape == (2, 1)
    assert mx.count_nonzero(a).item() == 4
    assert mx.count_nonzero(a, 1).tolist() == [3, 1]       # axis accepted positionally
    c = mx.count_nonzero(a, axis=(0, 1), keepdims=True)
    assert c.shape == (1, 1) and c.dtype == mx.int32
    assert mx.count_nonzero(mx.array([0.0, -0.0, np.nan])).item() == 1
    with raises(ValueError, "minmax"):
        mx.minmax(mx.zeros((0, 3)), axis=0)


# --------------------------------------------------------------------------
# scans
# --------------------------------------------------------------------------

SCANS = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]


@pytest.mark.parametrize("name", SCANS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_scan_reverse_and_exclusive_identities(name, axis):
    x = _rng(13).uniform(0.5, 1.5, (3, 9, 11)).astype(np.float32)
    f = getattr(mx, name)
    a = mx.array(x)
    inc = to_numpy(f(a, axis=axis))
    # reverse == flip . scan . flip
    rev = to_numpy(f(a, axis=axis, reverse=True))
    flip = to_numpy(f(mx.array(np.flip(x, axis).copy()), axis=axis))
    np.testing.assert_allclose(rev, np.flip(flip, axis), rtol=2e-6)
    # exclusive == inclusive shifted by one, starting from the identity
    exc = to_numpy(f(a, axis=axis, inclusive=False))
    ident = {"cumsum": 0, "cumprod": 1, "cummax": -np.inf, "cummin": np.inf,
             "logcumsumexp": -np.inf}[name]
    first = np.take(exc, [0], axis=axis)
    assert (first == ident).all()
    np.testing.assert_allclose(np.take(exc, np.arange(1, x.shape[axis]), axis=axis),
                               np.take(inc, np.arange(x.shape[axis] - 1), axis=axis), rtol=2e-6)
    rexc = to_numpy(f(a, axis=axis, reverse=True, inclusive=False))
    np.testing.assert_allclose(np.take(rexc, np.arange(x.shape[axis] - 1), axis=axis),
                               np.take(rev, np.arange(1, x.shape[axis]), axis=axis), rtol=2e-6)
    assert (np.take(rexc, [x.shape[axis] - 1], axis=axis) == ident).all()


def test_scan_exclusive_identities_per_dtype():
    assert mx.cummax(mx.array([1, 2, 3], mx.int8), inclusive=False).tolist() == [-128, 1, 2]
    assert mx.cummin(mx.array([1, 2, 3], mx.uint8), inclusive=False).tolist() == [255, 1, 1]
    assert mx.cummax(mx.array([True, False]), inclusive=False).tolist() == [False, True]
    assert mx.cummin(mx.array([True, False]), inclusive=False).tolist() == [True, True]
    assert mx.cumprod(mx.array([True, False, True]), inclusive=False).tolist() == \
        [True, True, False]
    z = to_numpy(mx.cummax(mx.array([1 + 1j, 2 + 0j]), inclusive=False))
    assert z[0] == complex(-np.inf, -np.inf)


def test_scan_dtype_rules():
    assert mx.cumsum(mx.array([True, True])).dtype == mx.int32
    assert mx.cumsum(mx.array([100, 100, 100], mx.int8)).tolist() == [100, -56, 44]  # wraps
    assert mx.cumsum(mx.array([100, 100, 100], mx.int8), dtype=mx.int32).tolist() == \
        [100, 200, 300]
    assert mx.cumsum(mx.array([1.5, 2.5, 3.5]), dtype=mx.int32).tolist() == [1, 3, 6]
    assert mx.cumsum(mx.array([0.5, 2.0]), dtype=mx.bool_).tolist() == [1, 2]
    assert mx.cumprod(mx.array([2, 3], mx.uint8)).dtype == mx.uint8
    assert mx.cumprod(mx.array([1, 2]), dtype=mx.bool_).tolist() == [True, True]
    assert mx.logcumsumexp(mx.array([1, 2], mx.int64)).dtype == mx.float32
    assert mx.logcumsumexp(mx.array([1, 2], mx.float16)).dtype == mx.float16
    assert mx.cummax(mx.array([1.0, np.nan, 3.0, 0.0])).tolist()[0] == 1.0
    assert np.isnan(to_numpy(mx.cummax(mx.array([1.0, np.nan, 3.0])))[1:]).all()
    assert np.isnan(to_numpy(mx.cummin(mx.array([1.0, np.nan, 3.0])))[1:]).all()
    r = to_numpy(mx.logcumsumexp(mx.array([-np.inf, -np.inf, 1000.0, 1000.0, np.inf, np.nan])))
    assert r[0] == -np.inf and r[1] == -np.inf and r[2] == 1000.0
    assert abs(r[3] - (1000 + np.log(2))) < 1e-3 and r[4] == np.inf and np.isnan(r[5])


def test_scan_none_axis_flattens():
    a = mx.array([[1, 2], [3, 4]])
    assert mx.cumsum(a).tolist() == [1, 3, 6, 10]
    assert mx.cumsum(mx.array(5)).shape == (1,)
    assert mx.cumsum(a, axis=None, reverse=True, inclusive=False).tolist() == [9, 7, 4, 0]


@ember_only
@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_cumsum_2_20_is_accurate(dtype):
    """float32 sums accumulate in float64: every prefix is correctly rounded
    (MLX's float32 running sum drifts by ~3e-5 relative at 2^20)."""
    n = 1 << 20
    rng = _rng(14)
    x = rng.random(n).astype(np.float32)
    if dtype == "complex64":
        x = (x + 1j * rng.random(n)).astype(np.complex64)
    ref = np.cumsum(x.astype(np.complex128 if dtype == "complex64" else np.float64))
    got = to_numpy(mx.cumsum(mx.array(x)))
    assert np.max(np.abs(got - ref) / np.abs(ref)) < 1.2e-7
    got_r = to_numpy(mx.cumsum(mx.array(x), reverse=True))
    ref_r = np.flip(np.cumsum(np.flip(x.astype(ref.dtype))))
    assert np.max(np.abs(got_r - ref_r) / np.abs(ref_r)) < 1.2e-7


def test_cumsum_2_20_float64_and_ints():
    n = 1 << 20
    x = _rng(15).random(n)
    assert_close(mx.cumsum(mx.array(x, dtype=mx.float64)), np.cumsum(x), "float64")
    i = _rng(16).integers(-1000, 1000, n).astype(np.int32)
    assert_equal(mx.cumsum(mx.array(i)), np.cumsum(i).astype(np.int32), "int32")


@ember_only
def test_half_scans_accumulate_in_float32():
    """MLX's float16 running sum sticks at 2048; Ember's rounds a float32 sum."""
    r = to_numpy(mx.cumsum(mx.ones(4096, mx.float16)))
    assert r[-1] == 4096 and r[2050] == 2052  # 2051 rounds to even (2052)
    b = to_numpy(mx.cumsum(mx.ones(1000, mx.bfloat16)))
    assert b[-1] == 1000


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_scan_large_both_cores(axis, layout):
    x = _rng(17).random((1024, 1000)).astype(np.float32)
    a, vals = to_mx(x, "float32", layout)
    ref = np.cumsum(vals.astype(np.float64), axis=axis)
    assert_close(mx.cumsum(a, axis=axis), ref, "float32", rtol=1e-5 if IS_MLX else 1e-6)
    ref_max = np.maximum.accumulate(vals, axis=axis)
    assert_equal(mx.cummax(a, axis=axis, reverse=True),
                 np.flip(np.maximum.accumulate(np.flip(vals, axis), axis=axis), axis), "float32")
    assert_equal(mx.cummax(a, axis=axis), ref_max, "float32")
    assert_close(mx.logcumsumexp(a, axis=axis),
                 np.logaddexp.accumulate(vals.astype(np.float64), axis=axis), "float32",
                 rtol=1e-5)


def test_scan_int_wraps_like_storage():
    x = np.full(300, 100, dtype=np.int8)
    assert_equal(mx.cumsum(mx.array(x)), np.cumsum(x, dtype=np.int8), "int8")
    y = np.full(40, 3, dtype=np.int64)
    assert_equal(mx.cumprod(mx.array(y)), np.cumprod(y), "int64")
    u = np.full(20, 300, dtype=np.uint16)
    assert_equal(mx.cumprod(mx.array(u)), np.cumprod(u, dtype=np.uint16), "uint16")


# --------------------------------------------------------------------------
# array methods and signatures
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", SCANS)
def test_scan_methods_match_functions(name):
    a = mx.array(_rng(18).uniform(0.5, 1.5, (4, 5)).astype(np.float32))
    f = getattr(mx, name)
    m = getattr(a, name)
    for kw in [{}, {"axis": 0}, {"axis": 1, "reverse": True}, {"inclusive": False},
               {"axis": -1, "reverse": True, "inclusive": False}]:
        assert_equal(m(**kw), to_numpy(f(a, **kw)))
    assert_equal(m(1), to_numpy(f(a, 1)))
    with pytest.raises(TypeError):
        m(0, True)             # reverse is keyword-only
    with pytest.raises(TypeError):
        m(0, dtype=mx.float32)  # the methods take no dtype
    with raises(IndexError, name):
        m(axis=2)


def test_cumulative_aliases():
    assert mx.cumulative_sum is mx.cumsum
    assert mx.cumulative_prod is mx.cumprod
    a = mx.array([1, 2, 3])
    assert mx.cumulative_sum(a).tolist() == [1, 3, 6]
    assert mx.cumulative_prod(a, reverse=True).tolist() == [6, 6, 3]


def test_keyword_names_and_defaults():
    a = mx.array([[3, 1, 2], [0, 5, 4]])
    with pytest.raises(TypeError):
        mx.sort(a=a)
    assert mx.sort(a, axis=0).tolist() == [[0, 1, 2], [3, 5, 4]]
    assert mx.sort(a, None).tolist() == [0, 1, 2, 3, 4, 5]
    assert mx.argsort(a, axis=None).tolist() == [3, 1, 2, 0, 5, 4]
    assert mx.partition(a, kth=1, axis=0).shape == (2, 3)
    assert mx.topk(a, k=1, axis=0).tolist() == [[3, 5, 4]]
    assert mx.searchsorted(mx.array([1, 2]), mx.array([2]), side="right").tolist() == [2]
    with pytest.raises(TypeError):
        mx.unique(a)          # size is required
    assert mx.unique(a, size=3).tolist() == [0, 1, 2]


def test_errors_name_the_op():
    with raises(IndexError, "sort", mlx_msg=True):
        mx.sort(mx.array(1.0))
    with raises(ValueError, "partition"):
        mx.partition(mx.zeros((3,)), 3)
    with raises(ValueError, "topk", mlx_msg=True):
        mx.topk(mx.zeros((3,)), 4)
    with raises(ValueError, "searchsorted", mlx_msg=True):
        mx.searchsorted(mx.zeros((2, 2)), mx.zeros((1,)))
    with raises(ValueError, "unique", mlx_msg=True):
        mx.unique(mx.zeros((0,)), 2)
    with raises(ValueError, "median", mlx_msg=True):
        mx.median(mx.zeros((0,)))
    with raises(IndexError, "cumsum", mlx_msg=True):
        mx.cumsum(mx.zeros((2,)), axis=1)
