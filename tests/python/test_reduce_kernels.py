"""The reduction and softmax kernels' own paths, at every ISA level the CPU has.

csrc/ember/backend/cpu/reduce.cpp computes every reduction in one order of
evaluation fixed by the shape alone, and reaches it through several paths:
rows reduced one at a time in vectors as narrow as the row (16 bytes up to
the level's width), many short rows at once through a shuffle network,
every-other-element and any-stride runs, a strided reduced axis vectorized
over a contiguous kept axis (sum over axis 0, x.T over its last axis), long
runs cut into pieces spread over the threads, reductions over several axes
copied first, and softmax in chunks of rows (read in place, gathered,
transposed in registers, written around the caches when the output is
large). These tests pick shapes that reach each path and check

* the values against NumPy (float64 references for sums and products,
  exact for max/min and integers),
* that a view (transposed, strided, reversed, broadcast) reduces to the same
  bits as its dense copy, so the path taken never changes the result,
* that every ISA level gives the same bits,
* NaN: sums propagate it as the canonical quiet NaN, max/min propagate it.
"""

import numpy as np
import pytest

from conftest import ISA_LEVELS, ember_only, mx, mx_dtype, to_numpy

pytestmark = ember_only


# row lengths around every vector width (2..16 lanes), the 32-lane order,
# the 4096-element piece and beyond it
WIDTHS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 257, 1000, 4095, 4096, 4097, 9000]
ROWS = [1, 5, 67]  # one row, fewer rows than a vector's lanes, many rows (the row network)



def arr(x):
    """x as an Ember array of x's own dtype (float64 included)."""
    x = np.asarray(x)
    return mx.array(x, dtype=mx_dtype(x.dtype.name))


def at_level(lvl, fn):
    before = mx.__config__()["isa"]
    mx._set_cpu_isa(lvl)
    try:
        out = fn()
        mx.eval(out)
        return to_numpy(out)
    finally:
        mx._set_cpu_isa(before)


def assert_same_bits(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, f"{what}: {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
    if a.tobytes() != b.tobytes():
        bad = np.flatnonzero(np.asarray(a).reshape(-1) != np.asarray(b).reshape(-1))[:5]
        raise AssertionError(f"{what}: bits differ at {bad}: {a.reshape(-1)[bad]} vs {b.reshape(-1)[bad]}")


def sum_bound(x64, axis, n, eps):
    """The error bound of the canonical order: at most kBlock / 32 = 128
    sequential additions per lane, then a tree of log2(n) levels."""
    depth = min(n, 128) + int(np.ceil(np.log2(max(n, 2)))) + 8
    return depth * eps * np.abs(x64).sum(axis=axis)


# ---------------------------------------------------------------------------
# values against NumPy
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("n", WIDTHS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_rows_against_numpy(level, dt, n, rows):
    rng = np.random.default_rng(n * 1000 + rows)
    x = rng.standard_normal((rows, n)).astype(dt)
    xm = arr(x)
    x64 = x.astype(np.float64)
    eps = np.finfo(dt).eps
    got = to_numpy(mx.sum(xm, axis=-1))
    assert got.dtype == np.dtype(dt) and got.shape == (rows,)
    assert (np.abs(got - x64.sum(-1)) <= sum_bound(x64, -1, n, eps)).all()
    mean = to_numpy(mx.mean(xm, axis=-1))
    assert (np.abs(mean - x64.mean(-1)) <= sum_bound(x64, -1, n, eps) / n + 2 * eps * np.abs(x64.mean(-1))).all()
    np.testing.assert_array_equal(to_numpy(mx.max(xm, axis=-1)), x.max(-1))
    np.testing.assert_array_equal(to_numpy(mx.min(xm, axis=-1)), x.min(-1))
    near_one = (1 + x * (0.5 / n)).astype(dt)
    p = to_numpy(mx.prod(arr(near_one), axis=-1))
    p64 = near_one.astype(np.float64).prod(-1)
    assert (np.abs(p - p64) <= sum_bound(np.ones_like(x64), -1, n, eps) * np.abs(p64)).all()
    # the whole array as one run
    tot = to_numpy(mx.sum(xm))
    assert abs(tot - x64.sum()) <= sum_bound(x64, None, x.size, eps)


@pytest.mark.parametrize("n", [1, 7, 16, 33, 1000, 5000])
@pytest.mark.parametrize("dt", ["int32", "int8", "uint8", "int16", "uint16", "int64", "uint32", "bool"])
def test_integer_rows_exact(level, dt, n):
    rng = np.random.default_rng(n)
    if dt == "bool":
        x = rng.random((9, n)) < 0.5
    else:
        info = np.iinfo(dt)
        x = rng.integers(max(info.min, -100), min(info.max, 100), (9, n)).astype(dt)
    xm = arr(x)
    want_sum = x.astype(np.int64).sum(-1)
    got = to_numpy(mx.sum(xm, axis=-1))
    np.testing.assert_array_equal(got.astype(np.int64), want_sum)
    np.testing.assert_array_equal(to_numpy(mx.sum(xm[:, ::-3], axis=-1)).astype(np.int64),
                                  x[:, ::-3].astype(np.int64).sum(-1))
    np.testing.assert_array_equal(to_numpy(mx.sum(xm, axis=0)).astype(np.int64), x.astype(np.int64).sum(0))
    if dt == "bool":
        np.testing.assert_array_equal(to_numpy(mx.any(xm, axis=-1)), x.any(-1))
        np.testing.assert_array_equal(to_numpy(mx.all(xm, axis=0)), x.all(0))
    else:
        np.testing.assert_array_equal(to_numpy(mx.max(xm, axis=-1)), x.max(-1))
        np.testing.assert_array_equal(to_numpy(mx.min(xm, axis=0)), x.min(0))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [3, 64, 4097])
def test_half_rows(level, dt, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((6, n)).astype(np.float32)
    xm = arr(x).astype(getattr(mx, dt))
    x64 = to_numpy(xm.astype(mx.float64))
    got = to_numpy(mx.sum(xm, axis=-1).astype(mx.float64))
    # accumulated in float32, rounded once to the half type
    half_eps = 2.0 ** -10 if dt == "float16" else 2.0 ** -7
    tol = sum_bound(x64, -1, n, np.finfo(np.float32).eps) + half_eps * np.abs(x64.sum(-1))
    assert (np.abs(got - x64.sum(-1)) <= tol).all()
    np.testing.assert_array_equal(to_numpy(mx.max(xm, axis=0).astype(mx.float64)), x64.max(0))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_long_runs_and_tall_columns(level, dt):
    """Runs longer than two 65536-element pieces (split over the threads at
    fixed nodes) and vertical reductions over more than a 4096-row piece,
    with kept axes longer than a 1024-element task."""
    rng = np.random.default_rng(3)
    eps = np.finfo(dt).eps
    run = rng.standard_normal(2 * 65536 + 77).astype(dt)
    r64 = run.astype(np.float64)
    assert abs(to_numpy(mx.sum(arr(run))) - r64.sum()) <= sum_bound(r64, None, run.size, eps)
    assert to_numpy(mx.max(arr(run))) == run.max()
    tall = rng.standard_normal((4100 + 3, 1500)).astype(dt)
    t64 = tall.astype(np.float64)
    got = to_numpy(mx.sum(arr(tall), axis=0))
    assert (np.abs(got - t64.sum(0)) <= sum_bound(t64, 0, tall.shape[0], eps)).all()
    np.testing.assert_array_equal(to_numpy(mx.min(arr(tall), axis=0)), tall.min(0))


# ---------------------------------------------------------------------------
# every layout reduces to what its dense copy does
# ---------------------------------------------------------------------------

def _views(x):
    """(name, mx view, axes): views that reach each reading path."""
    a = arr(x)                              # (R, C) = (70, 90)
    b = arr(x.reshape(7, 10, 90))
    row = arr(x[:1])
    return [
        ("transposed_last", mx.transpose(a), -1),        # strided reduced axis, contiguous kept axis
        ("transposed_first", mx.transpose(a), 0),
        ("every_other", a[:, ::2], -1),                 # stride-2 runs
        ("every_other_short", a[:5, ::2][:, :7], -1),
        ("every_third", a[:, ::3], -1),                 # any-stride runs
        ("reversed_runs", a[:, ::-1], -1),
        ("reversed_rows", a[::-1], -1),
        ("reversed_kept_axis0", a[:, ::-1], 0),         # vertical, kept axis read backwards
        ("rows_stride2_axis0", a[::2], 0),
        ("columns_axis0_short", a[:, :9], 0),
        ("col_pairs_axis0", a[:, ::2][:, :5], 0),      # stride-2 rows too short for the vertical path
        ("broadcast_axis0", mx.broadcast_to(row, (33, 90)), 0),
        ("broadcast_axis1", mx.broadcast_to(arr(x[:, :1]), (70, 40)), 1),
        ("3d_outer_and_inner", b, (0, 2)),              # axes that do not merge: copied first
        ("3d_middle", b, 1),
        ("3d_transposed", mx.transpose(b, (2, 0, 1)), (1, 2)),
        ("3d_negstride", b[::-1, :, ::-2], (0, 1)),
        ("all_of_transposed", mx.transpose(a), None),
    ]


VIEW_NAMES = [v[0] for v in _views(np.zeros((70, 90), np.float32))]


@pytest.mark.parametrize("view", VIEW_NAMES)
@pytest.mark.parametrize("dt", ["float32", "float64", "int32"])
def test_views_reduce_to_dense_bits(level, dt, view):
    rng = np.random.default_rng(VIEW_NAMES.index(view))
    x = (rng.standard_normal((70, 90)) * 10).astype(dt)
    name, v, axes = next(t for t in _views(x) if t[0] == view)
    dense = arr(to_numpy(v))
    ops = ["sum", "max", "min", "prod"] + (["mean"] if dt != "int32" else [])
    for op in ops:
        f = getattr(mx, op)
        src_v, src_d = (v, dense) if op != "prod" else (v * 0.01 + 1 if dt != "int32" else v % 3,
                                                      dense * 0.01 + 1 if dt != "int32" else dense % 3)
        assert_same_bits(to_numpy(f(src_v, axis=axes)), to_numpy(f(arr(to_numpy(src_d)), axis=axes)),
                         f"{op} of {name} ({dt})")
    # and against NumPy
    vn = to_numpy(v)
    np.testing.assert_array_equal(to_numpy(mx.max(v, axis=axes)), vn.max(axis=axes))
    want = vn.astype(np.float64).sum(axis=axes)
    np.testing.assert_allclose(to_numpy(mx.sum(v, axis=axes)).astype(np.float64), want,
                               rtol=1e-5 if dt == "float32" else 1e-12, atol=1e-3 if dt == "float32" else 1e-9)


@pytest.mark.parametrize("dt", ["float32", "float16", "int8", "bool"])
def test_reduced_axes_of_size_one(level, dt):
    """Reductions over axes of size 1 (a grouped attention's sum over one
    repeat) are one elementwise pass: each output the identity folded with
    its element, in the reduction's output dtype, for dense, transposed and
    strided inputs (the kept axes walked by a cursor) and a NaN."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 1, 6, 5)) * 3).astype(dt)
    if dt == "float32":
        x[0, 0, 0, 0] = np.nan
    X = arr(x)
    views = {"dense": (X, x), "transposed": (mx.transpose(X, (3, 1, 2, 0)), x.transpose(3, 1, 2, 0)),
             "strided": (X[::-1, :, ::2], x[::-1, :, ::2])}
    for name, (v, vn) in views.items():
        for op in ("sum", "prod", "max", "min", "any", "all"):
            if dt == "bool" and op == "prod":
                continue
            got = to_numpy(getattr(mx, op)(v, axis=1))
            want = getattr(np, op)(vn, axis=1)
            if op in ("sum", "prod") and dt in ("int8", "bool"):
                want = want.astype(to_numpy(getattr(mx, op)(arr(np.ones(1, dt)))).dtype)
            assert got.dtype == want.dtype, (name, op, got.dtype, want.dtype)
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {op}")
            kept = to_numpy(getattr(mx, op)(v, axis=1, keepdims=True))
            np.testing.assert_array_equal(kept[:, 0], got, err_msg=f"{name} {op} keepdims")


def test_vmap_of_sum_matches_loop():
    """vmap moves the mapped axis; the kernel then reads another layout, and
    must still give each slice's bits."""
    x = arr(np.random.default_rng(0).standard_normal((13, 37, 29)).astype(np.float32))
    for in_axis in (0, 1, 2):
        got = to_numpy(mx.vmap(lambda t: mx.sum(t, axis=0), in_axes=in_axis)(x))
        want = np.stack([to_numpy(mx.sum(mx.take(x, i, axis=in_axis), axis=0)) for i in range(x.shape[in_axis])])
        assert_same_bits(got, want, f"vmap(sum) in_axes={in_axis}")


# ---------------------------------------------------------------------------
# every level gives the same bits
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("lvl", ISA_LEVELS[1:])  # each level above the first against the first
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_widths_same_bits_every_level(dt, lvl):
    rng = np.random.default_rng(11)
    cases = {}
    for n in WIDTHS:
        x = arr(rng.standard_normal((67, n)).astype(dt))
        cases[f"sum_rows_{n}"] = lambda x=x: mx.sum(x, axis=-1)
        cases[f"sum_one_{n}"] = lambda x=x: mx.sum(x[3], axis=-1)
        cases[f"sum_cols_{n}"] = lambda x=x: mx.sum(x, axis=0)
        cases[f"sum_t_{n}"] = lambda x=x: mx.sum(mx.transpose(x), axis=-1)
        cases[f"sum_stride2_{n}"] = lambda x=x: mx.sum(x[:, ::2], axis=-1)
        cases[f"softmax_{n}"] = lambda x=x: mx.softmax(x, axis=-1) if dt == "float64" else mx.max(x, axis=-1)
    for k, f in cases.items():
        assert_same_bits(at_level(lvl, f), at_level(ISA_LEVELS[0], f), f"{k} at {lvl} vs {ISA_LEVELS[0]}")


# ---------------------------------------------------------------------------
# NaN
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 3, 8, 17, 64, 1000, 4097])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_nan_anywhere(level, dt, n):
    """A NaN (of any sign and payload) anywhere in a row: sums and products
    give the canonical quiet NaN, max and min give NaN, other rows are
    untouched."""
    utype = np.uint32 if dt == "float32" else np.uint64
    odd_nan = np.array([0xFFC00001 if dt == "float32" else 0xFFF8000000000001], utype).view(dt)[0]
    canon = np.array([np.nan], dt).view(utype)[0]
    rows = 9
    x = np.random.default_rng(n).standard_normal((rows, n)).astype(dt)
    positions = sorted({0, n // 2, n - 1})
    for i, p in enumerate(positions):
        x[i, p] = odd_nan
    for xs, ax in ((x, -1), (np.ascontiguousarray(x.T), 0)):
        xm = arr(xs)
        for op in ("sum", "prod", "max", "min"):
            got = to_numpy(getattr(mx, op)(xm, axis=ax))
            nan_rows = np.isnan(got)
            assert nan_rows[:len(positions)].all() and not nan_rows[len(positions):].any(), (op, ax)
            if op in ("sum", "prod"):
                assert (got[:len(positions)].view(utype) == canon).all(), (op, ax, got[:len(positions)].view(utype))


# ---------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------

def ref_softmax(x, axis=-1):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("rows", [1, 5, 67])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 17, 63, 64, 65, 1000, 2049, 4097])
@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
def test_softmax_rows(level, dt, n, rows):
    rng = np.random.default_rng(n * 7 + rows)
    x = (rng.standard_normal((rows, n)) * 4).astype(np.float32)
    xm = arr(x).astype(getattr(mx, dt))
    got = to_numpy(mx.softmax(xm, axis=-1).astype(mx.float64))
    want = ref_softmax(to_numpy(xm.astype(mx.float64)))
    rtol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3}[dt]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 1e-3)
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=rtol * (1 + np.log2(n)))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_softmax_views_dense_bits(level, dt):
    """Rows read in place, gathered (stride 2, any stride, reversed, rows
    of a transposed matrix through register transposes, several kept axes)
    all give the dense copy's bits."""
    rng = np.random.default_rng(5)
    a = arr((rng.standard_normal((96, 80)) * 3).astype(dt))
    b = arr((rng.standard_normal((6, 7, 40)) * 3).astype(dt))
    views = {"transposed": mx.transpose(a), "transposed_few": mx.transpose(a[:, :5]),
             "every_other": a[:, ::2], "every_third": a[:, ::3], "reversed": a[::-1, ::-1],
             "reversed_rows": a[::-1], "3d_kept_axes": mx.transpose(b, (1, 0, 2)),
             "3d_transposed": mx.transpose(b, (2, 1, 0)), "broadcast": mx.broadcast_to(a[:1], (9, 80))}
    for name, v in views.items():
        assert_same_bits(to_numpy(mx.softmax(v, axis=-1)), to_numpy(mx.softmax(arr(to_numpy(v)), axis=-1)),
                         f"softmax of {name}")
        np.testing.assert_allclose(to_numpy(mx.softmax(v, axis=-1)), ref_softmax(to_numpy(v)),
                                   rtol=1e-5 if dt == "float32" else 1e-12, atol=1e-9)


def test_softmax_large_output_streams_same_bits():
    """An output of 16 MB or more is written around the caches: the rows
    still get the bits a small softmax of the same rows gets."""
    rng = np.random.default_rng(9)
    for n in (1024, 7):  # whole-vector rows, and rows too short for vector stores
        rows = (16 << 20) // (4 * n) + 3
        x = arr((rng.standard_normal((rows, n)) * 3).astype(np.float32))
        big = to_numpy(mx.softmax(x, axis=-1))
        for lo in (0, rows // 2, rows - 5):
            assert_same_bits(big[lo:lo + 5], to_numpy(mx.softmax(x[lo:lo + 5], axis=-1)), f"rows {lo}.. of {n}")
        np.testing.assert_allclose(big[-3:], ref_softmax(to_numpy(x[-3:])), rtol=1e-5, atol=1e-9)


def test_softmax_infinities(level):
    x = np.array([[0.0, -np.inf, 1.0, -np.inf], [-np.inf] * 4, [np.inf, 0, 0, 0], [np.nan, 0, 0, 0]], np.float32)
    got = to_numpy(mx.softmax(arr(x), axis=-1))
    np.testing.assert_allclose(got[0], ref_softmax(x[:1])[0], rtol=1e-6)
    assert got[0, 1] == 0 and got[0, 3] == 0
    assert np.isnan(got[1]).all() and np.isnan(got[3]).all()  # -inf - -inf, NaN: NaN, as NumPy
    assert np.isnan(got[2, 0])  # inf - inf


# ---- argmax / argmin of long dense rows (the two-pass vector path) ----------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64"])
@pytest.mark.parametrize("n", [64, 65, 1000, 4097])
def test_arg_extremum_long_rows(dtype, n):
    """Rows of >= 64 contiguous values take the vector path (the extremum,
    then its first index): the first occurrence of a tied extremum, the
    first NaN when there is one, as NumPy; a transposed view (the scalar
    path) gives the same indices."""
    rng = np.random.default_rng(n)
    if dtype.startswith("float") or dtype == "bfloat16":
        x = rng.integers(-50, 50, size=(6, n)).astype(np.float32)
        x[1, [n // 3, n - 1]] = 60.0            # the max twice: the first one
        x[1, [5, n // 2]] = -60.0               # the min twice
        x[2, n - 1] = np.nan                    # a NaN last
        x[3, [7, n // 2]] = np.nan              # two NaNs: the first
        x[4, :] = 0.0
        x[4, n // 2] = -0.0                     # -0 and +0 tie: index 0
        x[5, :] = -np.inf
        npdt = np.float32 if dtype == "bfloat16" else np.dtype(dtype)
        ref = x.astype(npdt)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(6, n), endpoint=True, dtype=dtype)
        x[1, [n // 3, n - 1]] = info.max
        x[1, [5, n // 2]] = info.min
        x[4, :] = 7
        ref = x
    a = mx.array(ref, dtype=mx_dtype(dtype)) if dtype != "bfloat16" else mx.array(ref).astype(mx.bfloat16)
    if dtype == "bfloat16":
        ref = np.array(a.astype(mx.float32))
    for op, npop in ((mx.argmax, np.argmax), (mx.argmin, np.argmin)):
        want = npop(ref, axis=1)
        np.testing.assert_array_equal(np.array(op(a, axis=1)), want)
        np.testing.assert_array_equal(np.array(op(a.T, axis=0)), want)  # strided: the scalar path
