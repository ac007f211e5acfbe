"""Op-table entries: sorting, selection and scans.

Imported by op_table.py (at its end); entries register with ``add_op``.

Ordering is NumPy's: NaN last, -0 == 0, complex lexicographic with the
NaN classes last.  Outputs whose order MLX leaves unspecified are checked
through a canonical form (``topk``: sorted) or exactly against Ember's
deterministic rule (``partition``/``argpartition``: the elements below the
kth value in input order, then its equals, then the larger ones; those rows
are Ember-only, the partition property itself is checked on both backends
in test_sort.py).
"""

import numpy as np

from conftest import (BOOL, COMPLEX, FLOATS, INTS, IS_MLX, UINTS, mx,
                      round_to)
from op_table import (ALL, SampleInput, ErrorInput, Fixed, _e, add_op,  # noqa: F401
                      _vals, _arr, REDUCE_CASES, _reduces_empty, floating,
                      same, uint32)


# --------------------------------------------------------------------------
# shared sample helpers
# --------------------------------------------------------------------------

# (shape, kwargs) for ops along one axis (None: flattened)
AXIS_CASES = [
    ((), {"axis": None}),
    ((0,), {}), ((1,), {}), ((7,), {}), ((7,), {"axis": 0}), ((7,), {"axis": None}),
    ((3, 5), {}), ((3, 5), {"axis": 0}), ((3, 5), {"axis": -2}),
    ((3, 5), {"axis": None}),
    ((2, 3, 4), {"axis": 1}), ((2, 3, 4), {}), ((2, 3, 4), {"axis": 0}),
    ((1, 4, 1), {"axis": 0}), ((1, 4, 1), {"axis": 1}), ((1, 4, 1), {"axis": 2}),
    ((2, 0, 3), {"axis": 1}), ((2, 0, 3), {"axis": 2}),
    ((300,), {}),              # radix-sorted row
    ((3, 257), {"axis": 1}), ((257, 3), {"axis": 0}),
]

FLOAT_SPECIALS = [np.nan, 1.0, -0.0, 0.0, np.inf, -np.inf, 2.0, np.nan, 1.0,
                  -2.0, 0.0, -0.0, -np.inf, 0.5]


def _ties(shape, n, rng):
    """Values with many ties (small integers) in dtype n."""
    if n == "bool":
        return rng.random(shape) < 0.5
    if n in UINTS:
        return rng.integers(0, 4, size=shape).astype(np.uint64)
    if n == "complex64":
        re = rng.integers(-2, 2, size=shape)
        im = rng.integers(-1, 1, size=shape)
        return (re + 1j * im).astype(np.complex64)
    return round_to(rng.integers(-3, 3, size=shape).astype(np.float64), n)


def _specials(n):
    """Special values for float dtypes (NaN, +-0, +-inf, duplicates)."""
    if n not in FLOATS:
        return None
    return round_to(np.array(FLOAT_SPECIALS, dtype=np.float64), n)


def _complex_specials():
    nan = np.nan
    return np.array([complex(1, 2), complex(1, nan), complex(nan, 1),
                     complex(nan, nan), complex(1, 1), complex(-1, 0),
                     complex(nan, -1), complex(3, nan), complex(-0.0, 1),
                     complex(0.0, 1)], dtype=np.complex64)


def _extremes(n):
    """The dtype's extreme values (checks the key transforms' ends)."""
    if n in INTS:
        info = np.iinfo(round_to(np.zeros(1), n).dtype)
        return np.array([info.max, info.min, 0, 1, info.max, info.min + 1, -1 if info.min else 2],
                        dtype=round_to(np.zeros(1), n).dtype)
    return None


def axis_samples(cases=AXIS_CASES, extra=None, ties=True):
    def gen(n, rng):
        out = []
        for shape, kw in cases:
            x = _vals(shape, n, rng, (-5, 5))
            out.append(SampleInput((x,), dict(kw), desc=f"shape={shape} {kw}"))
        if ties:
            for shape, kw in [((40,), {}), ((3, 300), {"axis": 1}), ((30, 4), {"axis": 0})]:
                out.append(SampleInput((_ties(shape, n, rng),), dict(kw), desc=f"ties {shape} {kw}"))
        sp = _specials(n)
        if sp is not None:
            out.append(SampleInput((sp,), {}, desc="nan/inf/-0"))
            big = np.concatenate([sp] * 30)  # long (radix) row with specials
            rng.shuffle(big)
            out.append(SampleInput((big,), {}, desc="long row with nan/inf/-0"))
            out.append(SampleInput((sp.reshape(2, 7),), {"axis": 0}, desc="nan/inf/-0 axis 0"))
        if n == "complex64" and not IS_MLX:  # MLX orders complex NaNs differently
            out.append(SampleInput((_complex_specials(),), {}, desc="complex nan classes"))
        ex = _extremes(n)
        if ex is not None:
            out.append(SampleInput((ex,), {}, desc="dtype extremes"))
        if extra:
            out += extra(n, rng)
        return out
    return gen


def _np_axis(axis):
    return None if axis is None else axis


# --------------------------------------------------------------------------
# sort / argsort
# --------------------------------------------------------------------------

def _sort_ref(x, axis=-1):
    return np.sort(x, axis=axis, kind="stable")


def _argsort_ref(x, axis=-1):
    return np.argsort(x, axis=axis, kind="stable").astype(np.uint32)


def _axis_range_errors(name):
    return [
        _e(lambda: ((_arr(),), {"axis": 2}), IndexError, name, "axis out of range",
           mlx_msg=True),
        _e(lambda: ((_arr(),), {"axis": -3}), IndexError, name,
           "negative axis out of range", mlx_msg=True),
    ]


def _axis_errors(name, extra=()):
    def errs():
        out = [
            *_axis_range_errors(name),
            _e(lambda: ((_arr(),), {"axis": (0,)}), TypeError, None, "tuple axis"),
        ]
        return out + [e() for e in extra]
    return errs


_zero_d = lambda name: lambda: _e(  # noqa: E731
    lambda: ((mx.array(1.0),), {}), IndexError, name, "0-d with axis -1", mlx_msg=True)

add_op(name="sort", op=mx.sort, ref=_sort_ref, dtypes=ALL,
       sample_inputs=axis_samples(), family="sort",
       error_inputs=_axis_errors("sort", [_zero_d("sort")]))
add_op(name="argsort", op=mx.argsort, ref=_argsort_ref, dtypes=ALL,
       sample_inputs=axis_samples(), out_dtype=uint32, family="sort",
       differentiable=False,
       error_inputs=_axis_errors("argsort", [_zero_d("argsort")]))


# --------------------------------------------------------------------------
# partition / argpartition (Ember's deterministic order; see module doc)
# --------------------------------------------------------------------------

def _stable_partition_indices(x, kth, axis):
    """Indices of Ember's partition along ``axis`` (x already has it)."""
    xm = np.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    kth = kth % n if n else kth
    order = np.argsort(xm, axis=-1, kind="stable")
    # a value's class: the first sorted position among its equals
    srt = np.take_along_axis(xm, order, axis=-1)
    same = np.zeros(srt.shape, dtype=bool)
    if n > 1:
        a, b = srt[..., 1:], srt[..., :-1]
        same[..., 1:] = (a == b) | (_isnan(a) & _isnan(b) & _same_nan_class(a, b))
    start = np.where(same, 0, np.arange(n))
    start = np.maximum.accumulate(start, axis=-1)
    cls_sorted = start
    cls = np.empty_like(cls_sorted)
    np.put_along_axis(cls, order, cls_sorted, axis=-1)
    pivot = np.take(cls_sorted, [kth], axis=-1)
    key = np.where(cls < pivot, 0, np.where(cls == pivot, 1, 2))
    idx = np.argsort(key, axis=-1, kind="stable")
    return np.moveaxis(idx, -1, axis)


def _isnan(a):
    return np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, bool)


def _same_nan_class(a, b):
    if a.dtype.kind != "c":
        return np.ones(a.shape, bool)
    ca = np.isnan(a.real) * 2 + np.isnan(a.imag)
    cb = np.isnan(b.real) * 2 + np.isnan(b.imag)
    same = ca == cb
    # within a NaN class the non-NaN part must match too
    part_a = np.where(np.isnan(a.real), a.imag, a.real)
    part_b = np.where(np.isnan(b.real), b.imag, b.real)
    both = np.isnan(a.real) & np.isnan(a.imag)
    return same & (both | (part_a == part_b))


def _partition_ref(x, kth, axis=-1):
    if axis is None:
        x, axis = x.reshape(-1), 0
    return np.take_along_axis(x, _stable_partition_indices(x, kth, axis), axis=axis)


def _argpartition_ref(x, kth, axis=-1):
    if axis is None:
        x, axis = x.reshape(-1), 0
    return _stable_partition_indices(x, kth, axis).astype(np.uint32)


PART_CASES = [
    ((1,), 0, {}), ((7,), 3, {}), ((7,), -1, {}), ((7,), 0, {"axis": 0}),
    ((7,), 6, {}), ((3, 5), 2, {}), ((3, 5), -3, {"axis": 0}),
    ((3, 5), 7, {"axis": None}), ((2, 3, 4), 1, {"axis": 1}),
    ((1, 4, 1), 0, {"axis": 2}), ((2, 0, 3), 1, {"axis": 2}),
    ((300,), 150, {}), ((3, 257), -2, {"axis": 1}), ((), 0, {"axis": None}),
]


def _part_samples(n, rng):
    out = []
    for shape, kth, kw in PART_CASES:
        x = _vals(shape, n, rng, (-5, 5))
        out.append(SampleInput((x, kth), dict(kw), desc=f"shape={shape} kth={kth} {kw}"))
    for shape, kth, kw in [((40,), 20, {}), ((3, 300), 100, {"axis": 1}), ((30, 4), 0, {"axis": 0})]:
        out.append(SampleInput((_ties(shape, n, rng), kth), dict(kw), desc=f"ties {shape} kth={kth}"))
    sp = _specials(n)
    if sp is not None:
        for kth in (0, 3, 7, -1, -3):
            out.append(SampleInput((sp, kth), {}, desc=f"nan/inf/-0 kth={kth}"))
    if n == "complex64":
        for kth in (0, 4, -2):
            out.append(SampleInput((_complex_specials(), kth), {}, desc=f"complex nan kth={kth}"))
    return out


def _part_errors(name):
    return lambda: [
        _e(lambda: ((_arr(), 3), {}), ValueError, name, "kth out of range"),
        _e(lambda: ((_arr(), -4), {}), ValueError, name, "negative kth out of range"),
        _e(lambda: ((mx.zeros((0, 3)), 0), {"axis": 0}), ValueError, name, "empty axis"),
        _e(lambda: ((_arr(), 0), {"axis": 2}), IndexError, name, "axis out of range",
           mlx_msg=True),
        _e(lambda: ((mx.array(1.0), 0), {}), IndexError, name, "0-d with axis -1",
           mlx_msg=True),
        _e(lambda: ((_arr(), 1.0), {}), TypeError, None, "float kth"),
    ]


# MLX leaves the order inside the partitions unspecified (its CPU backend
# uses nth_element): these rows check Ember's deterministic order only.
add_op(name="partition", op=mx.partition, ref=_partition_ref, dtypes=ALL,
       sample_inputs=_part_samples, family="sort", mlx_wrong_dtypes=tuple(ALL),
       error_inputs=_part_errors("partition"))
add_op(name="argpartition", op=mx.argpartition, ref=_argpartition_ref, dtypes=ALL,
       sample_inputs=_part_samples, out_dtype=uint32, family="sort",
       differentiable=False, mlx_wrong_dtypes=tuple(ALL),
       error_inputs=_part_errors("argpartition"))


# --------------------------------------------------------------------------
# topk (compared sorted: MLX does not promise an order)
# --------------------------------------------------------------------------

def _topk_sorted(a, k, axis=-1):
    r = mx.topk(a, k, axis=axis)
    return mx.sort(r, axis=-1 if axis is None else axis)


def _topk_ref(x, k, axis=-1):
    if axis is None:
        x, axis = x.reshape(-1), -1
    s = np.sort(x, axis=axis)
    n = s.shape[axis]
    return np.take(s, np.arange(n - k, n), axis=axis)


TOPK_CASES = [
    ((1,), 1, {}), ((7,), 3, {}), ((7,), 0, {}), ((7,), 7, {}),
    ((3, 5), 2, {}), ((3, 5), 3, {"axis": 0}), ((3, 5), 4, {"axis": None}),
    ((2, 3, 4), 2, {"axis": 1}), ((1, 4, 1), 1, {"axis": 0}),
    ((2, 0, 3), 2, {"axis": 2}), ((300,), 10, {}), ((3, 257), 200, {"axis": 1}),
    ((), 1, {"axis": None}),
]


def _topk_samples(n, rng):
    out = []
    for shape, k, kw in TOPK_CASES:
        x = _vals(shape, n, rng, (-5, 5))
        out.append(SampleInput((x, k), dict(kw), desc=f"shape={shape} k={k} {kw}"))
    out.append(SampleInput((_ties((40,), n, rng), 5), {}, desc="ties"))
    sp = _specials(n)
    if sp is not None:
        for k in (1, 3, 6):
            out.append(SampleInput((sp, k), {}, desc=f"nan/inf/-0 k={k}"))
    return out


add_op(name="topk", op=_topk_sorted, ref=_topk_ref, dtypes=ALL,
       sample_inputs=_topk_samples, family="sort",
       error_inputs=lambda: [
           _e(lambda: ((_arr(), 4), {}), ValueError, "topk", "k too large", mlx_msg=True),
           _e(lambda: ((_arr(), -1), {}), ValueError, "topk", "negative k", mlx_msg=True),
           _e(lambda: ((_arr(), 3), {"axis": 0}), ValueError, "topk", "k too large on axis 0",
              mlx_msg=True),
           _e(lambda: ((_arr(), 1), {"axis": 2}), IndexError, "topk", "axis out of range",
              mlx_msg=True),
           _e(lambda: ((mx.array(1.0), 1), {}), IndexError, "topk", "0-d with axis -1",
              mlx_msg=True),
       ])


# --------------------------------------------------------------------------
# searchsorted
# --------------------------------------------------------------------------

def _ss_samples(n, rng):
    out = []
    for m, vshape in [(7, (5,)), (1, (3,)), (12, (3, 4)), (5, ()), (0, (4,)),
                      (6, (0,)), (300, (50,))]:
        a = np.sort(_vals((m,), n, rng, (-5, 5)), kind="stable")
        v = _vals(vshape, n, rng, (-6, 6))
        for side in ("left", "right"):
            out.append(SampleInput((a, v), {"side": side}, desc=f"n={m} values{vshape} {side}"))
    t = np.sort(_ties((30,), n, rng), kind="stable")
    v = _ties((20,), n, rng)
    out.append(SampleInput((t, v), {}, desc="ties left"))
    out.append(SampleInput((t, v), {"side": "right"}, desc="ties right"))
    sp = _specials(n)
    if sp is not None:
        s = np.sort(sp)
        out.append(SampleInput((s, sp), {}, desc="nan/inf/-0 left"))
        out.append(SampleInput((s, sp), {"side": "right"}, desc="nan/inf/-0 right"))
    if n in INTS + BOOL:
        a = np.sort(_vals((6,), n, rng, (0, 5)))
        v = Fixed(np.array([0.5, 2.5, -1.0, 7.0]), "float32")
        out.append(SampleInput((a, v), {}, desc="float values (promoted)"))
    return out


def _ss_ref(a, v, side="left"):
    return np.searchsorted(a, v, side=side).astype(np.uint32)


add_op(name="searchsorted", op=mx.searchsorted, ref=_ss_ref, dtypes=ALL,
       sample_inputs=_ss_samples, out_dtype=uint32, family="sort",
       differentiable=False,
       error_inputs=lambda: [
           _e(lambda: ((mx.array([1, 2]), mx.array([1])), {"side": "middle"}), ValueError,
              "searchsorted", "bad side", mlx_msg=True),
           _e(lambda: ((mx.zeros((2, 2)), mx.array([1.0])), {}), ValueError, "searchsorted",
              "2-D sequence", mlx_msg=True),
           _e(lambda: ((mx.array(1.0), mx.array([1.0])), {}), ValueError, "searchsorted",
              "0-d sequence", mlx_msg=True),
       ])


# --------------------------------------------------------------------------
# unique (static size, MLX semantics: NaNs are all distinct)
# --------------------------------------------------------------------------

def _unique_ref(x, size, return_index=False, return_inverse=False,
                return_counts=False, fill_value=None):
    flat = x.reshape(-1)
    order = np.argsort(flat, kind="stable")
    s = flat[order]
    new = np.ones(s.shape, dtype=bool)
    if s.size > 1:
        new[1:] = s[1:] != s[:-1]  # NaN != NaN: each NaN its own value
    gid = np.cumsum(new) - 1
    first = order[new]
    counts = np.diff(np.append(np.nonzero(new)[0], s.size))
    g = first.size
    fill = fill_value if fill_value is not None else (flat[first[0]] if g else 0)
    values = np.array([flat[first[j]] if j < g else fill for j in range(size)],
                      dtype=flat.dtype if fill_value is None else None)
    values = values.reshape(size)
    index = np.array([first[j] if j < g else (first[0] if g else 0)
                      for j in range(size)], dtype=np.uint32).reshape(size)
    cnt = np.array([counts[j] if j < g else 0 for j in range(size)],
                   dtype=np.int32).reshape(size)
    inverse = np.empty(flat.shape, dtype=np.uint32)
    inverse[order] = np.minimum(gid, max(size - 1, 0))
    extra = []
    if return_index:
        extra.append(index)
    if return_inverse:
        extra.append(inverse.reshape(x.shape))
    if return_counts:
        extra.append(cnt)
    return [values] + extra if extra else values


def unique_samples(n, rng):
    """(x, size, kwargs) cases; the table checks the values output (one dtype
    per row), test_sort.py all four outputs with the same cases."""
    t = _ties((6,), n, rng)
    cases = [(t, s, {}) for s in (6, 3, 0, 2, 9)]
    cases += [(t, 9, {"fill_value": 1}),
              (_vals((3, 4), n, rng, (-5, 5)), 12, {}),
              (_vals((), n, rng, (-5, 5)), 2, {}),
              (_vals((0,), n, rng, (-5, 5)), 3, {"fill_value": 1}),
              (_vals((0,), n, rng, (-5, 5)), 0, {}),
              (_ties((500,), n, rng), 8, {}),
              (t, 8, {"fill_value": Fixed(np.array(1), "int32")})]
    sp = _specials(n)
    if sp is not None:
        cases.append((sp, 14, {}))
    return cases


def _unique_samples(n, rng):
    return [SampleInput((x, size), dict(kw), desc=f"shape={x.shape} size={size} {kw}")
            for x, size, kw in unique_samples(n, rng)]


add_op(name="unique", op=mx.unique, ref=_unique_ref, dtypes=ALL,
       sample_inputs=_unique_samples, out_dtype=same, family="sort",
       differentiable=False,
       error_inputs=lambda: [
           _e(lambda: ((mx.array([1, 2]), -1), {}), ValueError, "unique", "negative size",
              mlx_msg=True),
           _e(lambda: ((mx.zeros((0,)), 2), {}), ValueError, "unique",
              "empty input needs a fill value", mlx_msg=True),
           _e(lambda: ((mx.array([1, 2]), 3), {"fill_value": mx.array([9, 8])}), ValueError,
              "unique", "fill value with two elements", mlx_msg=True),
           _e(lambda: ((mx.array([1, 2]), 2.0), {}), TypeError, None, "float size"),
           _e(lambda: ((mx.array([1, 2], mx.uint8), 3), {"fill_value": -1}), ValueError, None,
              "fill value out of range"),
       ])


# --------------------------------------------------------------------------
# median, minmax, count_nonzero
# --------------------------------------------------------------------------

def _reduce_like_samples(skip_empty_reduction=False, skip_noop=False, domain=(-5, 5)):
    def gen(n, rng):
        out = []
        for shape, kw in REDUCE_CASES:
            ax = kw.get("axis", None)
            if skip_empty_reduction and _reduces_empty(shape, ax):
                continue
            if skip_noop and ax == ():
                continue
            x = _vals(shape, n, rng, domain)
            out.append(SampleInput((x,), dict(kw), desc=f"shape={shape} {kw}"))
        for shape, kw in [((6,), {}), ((7,), {}), ((4, 6), {"axis": 1}), ((4, 7), {"axis": 0}),
                          ((3, 2, 5), {"axis": (0, 2)}), ((301,), {})]:
            x = _ties(shape, n, rng)
            out.append(SampleInput((x,), dict(kw), desc=f"ties {shape} {kw}"))
        sp = _specials(n)
        if sp is not None:
            out.append(SampleInput((sp,), {}, desc="nan/inf/-0"))
            fin = sp[np.isfinite(sp.astype(np.float64))]
            out.append(SampleInput((fin,), {}, desc="+-0, no nan"))
            out.append(SampleInput((sp.reshape(2, 7),), {"axis": 1}, desc="nan in one row"))
        return out
    return gen


def _median_ref(x, axis=None, keepdims=False):
    if isinstance(axis, list):
        axis = tuple(axis)
    if x.dtype == np.bool_:
        x = x.astype(np.float64)
    if x.dtype.kind == "c":
        # NumPy's median of complex: mean of the middle sorted element(s)
        ax = tuple(range(x.ndim)) if axis is None else (
            (axis,) if isinstance(axis, int) else axis)
        ax = tuple(a % x.ndim for a in ax)
        rest = [d for d in range(x.ndim) if d not in ax]
        m = int(np.prod([x.shape[d] for d in ax]))
        xt = np.transpose(x, rest + list(ax)).reshape([x.shape[d] for d in rest] + [m])
        s = np.sort(xt, axis=-1)
        m = s.shape[-1]
        r = (s[..., (m - 1) // 2] + s[..., m // 2]) / 2
        nan = np.isnan(xt).any(axis=-1)
        r = np.where(nan, np.nan + 0j, r)
        if keepdims:
            r = r.reshape([1 if d in ax else x.shape[d] for d in range(x.ndim)])
        return r
    return np.median(x, axis=axis, keepdims=keepdims)


add_op(name="median", op=mx.median, ref=_median_ref, dtypes=ALL,
       sample_inputs=_reduce_like_samples(skip_empty_reduction=True, skip_noop=True),
       out_dtype=floating, compute_float=True, family="reduction",
       error_inputs=lambda: [
           _e(lambda: ((mx.zeros((0, 3)),), {"axis": 0}), ValueError, "median",
              "empty axis", mlx_msg=True),
           _e(lambda: ((mx.zeros((0,)),), {}), ValueError, "median", "empty input",
              mlx_msg=True),
           _e(lambda: ((_arr(),), {"axis": 2}), IndexError, "median", "axis out of range",
              mlx_msg=True),
           _e(lambda: ((_arr(),), {"axis": (0, 0)}), ValueError, "median", "duplicate axes",
              mlx_msg=True),
           _e(lambda: ((mx.array(1.0),), {"axis": 0}), IndexError, "median", "axis on 0-d",
              mlx_msg=True),
       ])


def _minmax_ref(x, axis=None, keepdims=False):
    if isinstance(axis, list):
        axis = tuple(axis)
    if x.size == 0:  # reductions over non-empty axes of an empty array
        shape = np.sum(np.zeros(x.shape), axis=axis, keepdims=keepdims).shape
        e = np.zeros(shape, dtype=x.dtype)
        return [e, e]
    return [np.min(x, axis=axis, keepdims=keepdims), np.max(x, axis=axis, keepdims=keepdims)]


add_op(name="minmax", op=mx.minmax, ref=_minmax_ref, dtypes=ALL,
       sample_inputs=_reduce_like_samples(skip_empty_reduction=True),
       multi_output=True, family="reduction",
       error_inputs=lambda: [
           _e(lambda: ((mx.zeros((0, 3)),), {"axis": 0}), ValueError, "minmax",
              "empty reduction"),
           _e(lambda: ((mx.zeros((0, 3)),), {}), ValueError, "minmax",
              "empty reduction, all axes"),
           _e(lambda: ((_arr(),), {"axis": 2}), IndexError, "minmax", "axis out of range"),
           _e(lambda: ((_arr(),), {"axis": (1, -1)}), ValueError, "minmax", "duplicate axes"),
           _e(lambda: ((mx.array(1.0),), {"axis": 0}), IndexError, "minmax", "axis on 0-d"),
       ])


def _count_nonzero_ref(x, axis=None, keepdims=False):
    if isinstance(axis, list):
        axis = tuple(axis)
    return np.asarray(np.count_nonzero(x, axis=axis, keepdims=keepdims)).astype(np.int32)


def _cnz_samples(n, rng):
    out = _reduce_like_samples()(n, rng)
    z = round_to(np.array([[0, 1, 0, 2], [0, 0, 0, 3], [1, 1, 1, 1]]), n)
    out.append(SampleInput((z,), {"axis": 1}, desc="zeros per row"))
    out.append(SampleInput((z,), {"axis": 0, "keepdims": True}, desc="zeros per column"))
    if n == "complex64":
        c = np.array([0j, 1j, 1 + 0j, complex(0, -0.0), complex(np.nan, 0)], np.complex64)
        out.append(SampleInput((c,), {}, desc="complex: either part nonzero"))
    return out


add_op(name="count_nonzero", op=mx.count_nonzero, ref=_count_nonzero_ref, dtypes=ALL,
       sample_inputs=_cnz_samples, out_dtype=lambda n: "int32", family="reduction",
       differentiable=False,
       error_inputs=lambda: [
           _e(lambda: ((_arr(),), {"axis": 2}), IndexError, "count_nonzero",
              "axis out of range"),
           _e(lambda: ((_arr(),), {"axis": (0, 0)}), ValueError, "count_nonzero",
              "duplicate axes"),
           _e(lambda: ((_arr(), 1, True), {}), TypeError, None, "keepdims is keyword-only"),
       ])


# --------------------------------------------------------------------------
# scans
# --------------------------------------------------------------------------

SCAN_CASES = [
    ((), {}), ((0,), {}), ((1,), {}), ((6,), {}), ((6,), {"axis": 0}),
    ((6,), {"axis": -1, "reverse": True}), ((6,), {"inclusive": False}),
    ((6,), {"reverse": True, "inclusive": False}),
    ((3, 4), {}), ((3, 4), {"axis": 0}), ((3, 4), {"axis": 1}),
    ((3, 4), {"axis": 0, "reverse": True, "inclusive": False}),
    ((3, 4), {"axis": -1, "inclusive": False}),
    ((2, 3, 4), {"axis": 1}), ((2, 3, 4), {"axis": 1, "reverse": True}),
    ((2, 3, 4), {"axis": 0, "inclusive": False}), ((2, 3, 4), {"axis": 2}),
    ((1, 4, 1), {"axis": 1}), ((1, 4, 1), {"axis": 0}),
    ((2, 0, 3), {"axis": 1}), ((2, 0, 3), {"axis": 2}), ((0, 3), {"axis": 0}),
    ((10, 13), {"axis": 1}),   # 8 interleaved rows + a remainder
]
LONG_SCAN_CASES = [((3, 200), {"axis": 1}), ((200, 3), {"axis": 0, "reverse": True})]


def _np_dtype(d):
    name = str(d).rsplit(".", 1)[-1]
    return {"bool": np.bool_, "bfloat16": np.float32}.get(name, getattr(np, name, None))


def _exclusive(r, axis, init):
    pad = np.take(r, [0], axis=axis)
    pad = np.full(pad.shape, init, dtype=r.dtype)
    body = np.take(r, np.arange(r.shape[axis] - 1), axis=axis)
    return np.concatenate([pad, body], axis=axis)


def _scan_ref(acc, init):
    def ref(x, axis=None, reverse=False, inclusive=True, dtype=None):
        if dtype is not None:
            t = _np_dtype(dtype)
            if x.dtype.kind == "c" and np.dtype(t).kind != "c":
                x = x.real
            x = x.astype(t)
        if axis is None:
            x, axis = x.reshape(-1), 0
        if x.size == 0:
            return x.copy()
        axis = axis % x.ndim
        if reverse:
            x = np.flip(x, axis)
        r = acc(x, axis)
        if not inclusive:
            r = _exclusive(r, axis, init(r.dtype))
        if reverse:
            r = np.flip(r, axis)
        return r
    return ref


def _extreme(dt, high):
    """The identity of a running min (high=True) or max (high=False)."""
    if dt.kind in "iu":
        return np.iinfo(dt).max if high else np.iinfo(dt).min
    if dt.kind == "b":
        return high
    inf = np.inf if high else -np.inf
    return complex(inf, inf) if dt.kind == "c" else inf


def _lowest(dt):
    return _extreme(dt, False)


def _highest(dt):
    return _extreme(dt, True)


def _cum_lex(pick_max):
    """Lexicographic running max/min for complex (NumPy's maximum is too)."""
    def acc(x, axis):
        if x.dtype.kind != "c":
            f = np.maximum if pick_max else np.minimum
            return f.accumulate(x, axis=axis)
        xm = np.moveaxis(x, axis, 0)
        out = np.empty_like(xm)
        cur = xm[0].copy()
        out[0] = cur
        for i in range(1, xm.shape[0]):
            v = xm[i]
            lt = (v.real < cur.real) | ((v.real == cur.real) & (v.imag < cur.imag))
            gt = (v.real > cur.real) | ((v.real == cur.real) & (v.imag > cur.imag))
            cur = np.where(gt if pick_max else lt, v, cur)
            out[i] = cur
        return np.moveaxis(out, 0, axis)
    return acc


def _lcse(x, axis):
    if x.dtype.kind != "c":
        return np.logaddexp.accumulate(x, axis=axis)
    # MLX's complex logaddexp: the operand with the larger real part factored
    # out, m + log(1 + exp(r - m)) (the imaginary part is not wrapped)
    xm = np.moveaxis(x, axis, 0)
    out = np.empty_like(xm)
    cur = xm[0].copy()
    out[0] = cur
    for i in range(1, xm.shape[0]):
        v = xm[i]
        big = cur.real >= v.real
        m = np.where(big, cur, v)
        r = np.where(big, v, cur)
        cur = m + np.log(1 + np.exp(r - m))
        out[i] = cur
    return np.moveaxis(out, 0, axis)


HALF = ("float16", "bfloat16")


def scan_samples(domain=(-5, 5), int_domain=None, long=True, half_nan_on_mlx=True, extra=None):
    """``long``: 200-element scans (MLX's float32 running sums drift past
    the float32 tolerance there; Ember's accumulate in float64, so those run
    on Ember only).  ``half_nan_on_mlx=False``: MLX's cummax/cummin of half
    types drop NaNs, so the NaN sample runs on Ember only."""
    def gen(n, rng):
        out = []
        cases = SCAN_CASES + (LONG_SCAN_CASES if long and not IS_MLX else [])
        for shape, kw in cases:
            x = _vals(shape, n, rng, domain, int_domain)
            out.append(SampleInput((x,), dict(kw), desc=f"shape={shape} {kw}"))
        sp = _specials(n)
        if IS_MLX and not half_nan_on_mlx and n in HALF:
            sp = None
        if sp is not None:
            out.append(SampleInput((sp,), {}, desc="nan/inf/-0"))
            out.append(SampleInput((sp,), {"reverse": True, "inclusive": False},
                                   desc="nan/inf/-0 reverse exclusive"))
        if extra:
            out += extra(n, rng)
        return out
    return gen


def _scan_errors(name, dtype_arg=False):
    def errs():
        out = [
            *_axis_range_errors(name),
            _e(lambda: ((mx.array(1.0),), {"axis": 0}), IndexError, name, "axis on 0-d",
               mlx_msg=True),
            _e(lambda: ((_arr(),), {"axis": (0,)}), TypeError, None, "tuple axis"),
            _e(lambda: ((_arr(), 0, True), {}), TypeError, None, "reverse is keyword-only"),
        ]
        if dtype_arg:
            out.append(_e(lambda: ((_arr(),), {"dtype": "float32"}), TypeError, None,
                          "dtype given as a string"))
        else:
            out.append(_e(lambda: ((_arr(),), {"dtype": mx.float32}), TypeError, None,
                          "no dtype argument"))
        return out
    return errs


def _cumsum_out(n):
    return "int32" if n == "bool" else n


def _cumsum_extra(n, rng):
    x = _vals((3, 4), n, rng, (0.5, 2), (0, 5))
    out = [SampleInput((x,), {"axis": 1, "dtype": mx.float32}, out_dtype="float32",
                       desc="dtype=float32"),
           SampleInput((x,), {"axis": 0, "dtype": mx.int32}, out_dtype="int32",
                       desc="dtype=int32 (cast first)")]
    if n != "complex64":
        out.append(SampleInput((x,), {"dtype": mx.bool_}, out_dtype="int32",
                               desc="dtype=bool counts in int32"))
    return out


def _cumprod_extra(n, rng):
    x = _vals((3, 4), n, rng, (0.5, 1.5), (0, 3))
    out = [SampleInput((x,), {"axis": 1, "dtype": mx.float64}, out_dtype="float64",
                       desc="dtype=float64")]
    if n != "complex64":
        out.append(SampleInput((x,), {"axis": 0, "dtype": mx.bool_}, out_dtype="bool",
                               desc="dtype=bool"))
    return out


# Sums of positive values: no cancellation, so the per-dtype tolerance holds.
# MLX accumulates half-type scans in half precision (Ember: in float32, as
# the reference), so the float16/bfloat16 rows of the accumulating scans are
# Ember-only; MLX's float64 logcumsumexp runs in float32 precision.
add_op(name="cumsum", op=mx.cumsum, aliases=("cumulative_sum",),
       ref=_scan_ref(lambda x, a: np.cumsum(x, axis=a), lambda dt: 0),
       dtypes=ALL, out_dtype=_cumsum_out, family="scan", mlx_wrong_dtypes=HALF,
       sample_inputs=scan_samples((0.5, 2), (-5, 5), extra=_cumsum_extra),
       error_inputs=_scan_errors("cumsum", dtype_arg=True))
add_op(name="cumprod", op=mx.cumprod, aliases=("cumulative_prod",),
       ref=_scan_ref(lambda x, a: np.cumprod(x, axis=a), lambda dt: 1),
       dtypes=ALL, family="scan", mlx_wrong_dtypes=HALF,
       sample_inputs=scan_samples((0.5, 1.5), (-2, 2), long=False, extra=_cumprod_extra),
       error_inputs=_scan_errors("cumprod", dtype_arg=True))
add_op(name="cummax", op=mx.cummax, ref=_scan_ref(_cum_lex(True), _lowest),
       dtypes=ALL, family="scan", differentiable=False,
       sample_inputs=scan_samples(half_nan_on_mlx=False), error_inputs=_scan_errors("cummax"))
add_op(name="cummin", op=mx.cummin, ref=_scan_ref(_cum_lex(False), _highest),
       dtypes=ALL, family="scan", differentiable=False,
       sample_inputs=scan_samples(half_nan_on_mlx=False), error_inputs=_scan_errors("cummin"))
add_op(name="logcumsumexp", op=mx.logcumsumexp,
       ref=_scan_ref(_lcse, lambda dt: -np.inf),
       dtypes=ALL, out_dtype=floating, compute_float=True, transcendental=True,
       family="scan", mlx_wrong_dtypes=HALF, mlx_f64_is_f32=True,
       sample_inputs=scan_samples(int_domain=(-5, 5)),
       error_inputs=_scan_errors("logcumsumexp"))
