"""Indexing: ``a[idx]``, ``a[idx] = v`` and ``a.at[idx].op(v)`` against NumPy.

Most of the module is a deterministic, systematic generator of
(shape, layout, dtype, index[, value]) combinations, replayed chunk by chunk
(a failing chunk lists the failing indices in full).  Every combination is
first run through NumPy: combinations NumPy rejects are drawn again, and
NumPy's answer is the expectation (values, shape and dtype).

Two families of combinations:

* the *common* family uses the index forms MLX supports (ints, negative
  ints, slices, ``None``, ``...``, mx integer arrays of every int dtype,
  0-d mx integer arrays, Python lists / nested lists of ints) and values MLX
  accepts (scalars, mx arrays, NumPy arrays); it runs on both backends;
* the *Ember forms* family adds what MLX 0.32 rejects or gets wrong;
  those chunks are ``ember_only`` and Ember follows NumPy there:
  - NumPy integer index arrays ("Cannot index mlx array using the given
    type"), boolean masks as NumPy / mx / list ("boolean indices are not
    yet supported"), empty lists (MLX makes them float arrays);
  - a uint64 mx index array next to a signed one or a list (MLX promotes
    the pair to float and rejects it);
  - advanced indices on both sides of an Ellipsis that spans no dims
    (NumPy: result dims first; MLX: in place);
  - setitem / at[] only: Python lists as values, values with more dims
    than the indexed shape, values reaching into dims made by None, index
    arrays split by ints or None (MLX places the dims differently or fails
    to reshape), and scatters into empty slices (MLX raises or dies with
    SIGFPE).

Repeated indices: ``a[idx] = v`` writes one of the candidate values (NumPy:
the last one), so the setitem check accepts any candidate at a position
written more than once; ``a.at[idx].add(v)`` and friends accumulate, checked
against ``np.add.at`` / ``np.multiply.at`` / ``np.maximum.at`` /
``np.minimum.at`` on the flat positions the index selects.
"""

import warnings

import numpy as np
import pytest

from conftest import (ALL, INEXACT, IS_MLX, NP_CARRIER, SINTS, UINTS,
                      assert_close, assert_equal, dtype_name, ember_only,
                      make_values, mx, mx_dtype, raises, round_to, to_mx,
                      to_numpy)


INT_DTYPES = SINTS + UINTS
GEN_LAYOUTS = ["contiguous", "contiguous", "transposed", "negstride",
               "sliced", "broadcast"]
CHUNK = 50


# --------------------------------------------------------------------------
# index specs: pure numpy/python descriptions, materialised per backend
# --------------------------------------------------------------------------
#
#   ("int", k)                      Python int (may be negative)
#   ("slice", start, stop, step)
#   ("none",) / ("ellipsis",)
#   ("mxarr", values, dtype)        mx integer array
#   ("mx0d", value, dtype)          0-d mx integer array
#   ("list", values)                (nested) list of ints from an ndarray
#   ("nparr", values)               numpy integer array       [Ember forms]
#   ("mask", values, form)          bool mask: np / mx / list [Ember forms]
#   ("emptylist", ndim)             [] or [[]]                [Ember forms]
#
# Two more Ember forms: an index mixing a uint64 mx array with a signed one
# (or a list) -- MLX type-promotes them to float and rejects them -- and
# advanced indices on both sides of an Ellipsis that spans no dims (NumPy
# puts their result dims first, MLX keeps them in place).

EMBER_KINDS = {"nparr", "mask", "emptylist"}


def _mx_from_np(values, name):
    """mx.array of numpy values (MLX: empty arrays via mx.zeros, see
    conftest._from_numpy)."""
    values = np.asarray(values)
    if IS_MLX and values.size == 0:
        return mx.zeros(values.shape, dtype=mx_dtype(name))
    return mx.array(values, dtype=mx_dtype(name))


def _mx_item(item):
    kind = item[0]
    if kind == "int":
        return item[1]
    if kind == "slice":
        return slice(*item[1:])
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "mxarr":
        return _mx_from_np(item[1], item[2])
    if kind == "mx0d":
        return mx.array(int(item[1]), dtype=mx_dtype(item[2]))
    if kind == "list":
        return item[1].tolist()
    if kind == "nparr":
        return item[1].copy()
    if kind == "mask":
        values, form = item[1], item[2]
        if form == "np":
            return values.copy()
        if form == "mx":
            return _mx_from_np(values, "bool")
        return values.tolist()
    if kind == "emptylist":
        return [] if item[1] == 1 else [[]]
    raise AssertionError(kind)


def _np_item(item):
    kind = item[0]
    if kind in ("mxarr", "nparr", "mask"):
        return item[1]
    if kind == "mx0d":
        return int(item[1])
    if kind == "list":
        return np.asarray(item[1], dtype=np.intp)
    if kind == "emptylist":
        return np.zeros((0,) if item[1] == 1 else (1, 0), dtype=np.intp)
    return _mx_item(item)


def _fmt_item(item):
    kind = item[0]
    if kind == "int":
        return repr(item[1])
    if kind == "slice":
        return ":".join("" if v is None else str(v) for v in item[1:])
    if kind == "none":
        return "None"
    if kind == "ellipsis":
        return "..."
    if kind == "mxarr":
        return f"mx.array({item[1].tolist()}, {item[2]})"
    if kind == "mx0d":
        return f"mx.array({int(item[1])}, {item[2]})"
    if kind == "list":
        return repr(item[1].tolist())
    if kind == "nparr":
        return f"np.array({item[1].tolist()}, {item[1].dtype})"
    if kind == "mask":
        return f"{item[2]}_mask({item[1].astype(int).tolist()})"
    if kind == "emptylist":
        return "[]" if item[1] == 1 else "[[]]"
    raise AssertionError(kind)


class Index:
    """A generated index: items, and whether it is passed bare (not in a
    tuple)."""

    def __init__(self, items, bare, empty_ellipsis=False):
        self.items = items
        self.bare = bare and len(items) == 1
        self.empty_ellipsis = empty_ellipsis

    def _advanced_around_empty_ellipsis(self):
        """Advanced indices on both sides of an Ellipsis that spans no
        dims: NumPy counts them as separated (result dims go first), MLX as
        adjacent (in place)."""
        if not self.empty_ellipsis:
            return False
        arrays = {"mxarr", "list", "nparr", "mask", "emptylist"}
        if not any(i[0] in arrays for i in self.items):
            return False
        k = [i[0] for i in self.items].index("ellipsis")
        adv = arrays | {"int", "mx0d"}
        return (0 < k < len(self.items) - 1 and self.items[k - 1][0] in adv
                and self.items[k + 1][0] in adv)

    def mx(self):
        items = tuple(_mx_item(i) for i in self.items)
        return items[0] if self.bare else items

    def np(self):
        items = tuple(_np_item(i) for i in self.items)
        return items[0] if self.bare else items

    def mixes_uint64_with_signed(self):
        """MLX promotes uint64 with a signed index array to float and then
        rejects the indices; NumPy converts each index array on its own."""
        dtypes = set()
        for i in self.items:
            if i[0] in ("mxarr", "mx0d"):
                dtypes.add(i[2])
            elif i[0] == "list":
                dtypes.add("int32")
        return "uint64" in dtypes and bool(dtypes & set(SINTS))

    def advanced_split_by_basic(self):
        """Advanced items (NumPy: arrays, lists and, with them, ints) that
        are not one contiguous run, where the run is broken by a None or
        includes ints / 0-d mx arrays.  NumPy puts the broadcast dims first;
        MLX's setitem / at[] places them elsewhere (it does not count ints
        and 0-d arrays as NumPy does) or fails to reshape the value."""
        arrays = {"mxarr", "list", "nparr", "mask", "emptylist"}
        kinds = [i[0] for i in self.items]
        if not any(k in arrays or k == "mx0d" for k in kinds):
            return False
        adv = [j for j, k in enumerate(kinds)
               if k in arrays or k in ("int", "mx0d")]
        if adv[-1] - adv[0] + 1 == len(adv):
            return False
        return (any(kinds[j] in ("int", "mx0d") for j in adv)
                or "none" in kinds[adv[0]:adv[-1]])

    def dims_after_last_none(self, ndim):
        """How many trailing result dims certainly come after the last
        None (slices and Ellipsis / implicit dims behind it); None when the
        index has no None."""
        kinds = [i[0] for i in self.items]
        if "none" not in kinds:
            return None
        consumed = sum(i[1].ndim if i[0] == "mask" else 1
                       for i in self.items
                       if i[0] not in ("none", "ellipsis"))
        last = len(kinds) - 1 - kinds[::-1].index("none")
        k = 0
        for kind in kinds[last + 1:]:
            if kind == "slice":
                k += 1
            elif kind == "ellipsis":
                k += ndim - consumed
        if "ellipsis" not in kinds:
            k += ndim - consumed
        return k

    def uses_ember_forms(self):
        return (any(i[0] in EMBER_KINDS for i in self.items)
                or self.mixes_uint64_with_signed()
                or self._advanced_around_empty_ellipsis())

    def __repr__(self):
        text = ", ".join(_fmt_item(i) for i in self.items)
        if self.bare:
            return f"[{text}]"
        return f"[({text}{',' if len(self.items) == 1 else ''})]"


# --------------------------------------------------------------------------
# the generator
# --------------------------------------------------------------------------

def _gen_shape(r):
    ndim = r.choice([0, 1, 2, 3, 4], p=[0.06, 0.22, 0.32, 0.26, 0.14])
    shape = []
    for _ in range(ndim):
        u = r.rand()
        shape.append(0 if u < 0.06 else 1 if u < 0.18 else r.randint(2, 6))
    return tuple(shape)


def _gen_slice_bound(r, n):
    if r.rand() < 0.3:
        return None
    return int(r.randint(-n - 3, n + 4))


def _gen_slice(r, n):
    step = [None, 1, 2, 3, -1, -2, -3][r.choice(7, p=[.3, .1, .15, .05, .2,
                                                        .15, .05])]
    return ("slice", _gen_slice_bound(r, n), _gen_slice_bound(r, n), step)


def _gen_int_values(r, n, shape, dtype):
    if dtype in UINTS or r.rand() < 0.3:
        lo = 0
    else:
        lo = -n
    if n == 0:
        return np.zeros(shape, dtype=NP_CARRIER[dtype])
    return r.randint(lo, n, size=shape).astype(NP_CARRIER[dtype])


def _gen_array_shape(r, bshape):
    k = r.randint(0, len(bshape) + 1) if r.rand() < 0.4 else len(bshape)
    s = list(bshape[len(bshape) - k:])
    for i in range(len(s)):
        if r.rand() < 0.25:
            s[i] = 1
    return tuple(s)


COMMON_KINDS = ["int", "negint", "slice", "mxarr", "list", "mx0d"]
COMMON_P = [0.14, 0.07, 0.30, 0.29, 0.15, 0.05]
EXT_KINDS = COMMON_KINDS + ["nparr", "mask", "emptylist"]
EXT_P = [0.10, 0.05, 0.25, 0.14, 0.08, 0.03, 0.14, 0.18, 0.03]


def _mask_item(r, shape):
    """A bool mask; a list mask only when nested lists keep its shape."""
    forms = ["np", "mx", "list"] if 0 not in shape else ["np", "mx"]
    return ("mask", r.rand(*shape) < 0.5, forms[r.randint(len(forms))])


def _gen_item(r, n, bshape, ext):
    kinds, p = (EXT_KINDS, EXT_P) if ext else (COMMON_KINDS, COMMON_P)
    kind = kinds[r.choice(len(kinds), p=p)]
    if kind in ("int", "negint") and n == 0:
        kind = "slice"
    if kind == "int":
        return ("int", int(r.randint(0, n)))
    if kind == "negint":
        return ("int", int(r.randint(-n, 0)))
    if kind == "slice":
        return _gen_slice(r, n)
    if kind == "mx0d":
        dtype = INT_DTYPES[r.randint(len(INT_DTYPES))]
        return ("mx0d", _gen_int_values(r, max(n, 1), (), dtype)[()], dtype)
    if kind == "mask":
        return _mask_item(r, (n,))
    if kind == "emptylist":
        return ("emptylist", 1 + int(r.rand() < 0.3))
    shape = _gen_array_shape(r, bshape)
    if kind == "list":
        if not shape:
            shape = (1,)
        if int(np.prod(shape)) == 0:  # [] is an Ember form (MLX: float)
            shape = tuple(max(s, 1) for s in shape)
        return ("list", _gen_int_values(r, n, shape, "int64"))
    if kind == "nparr":
        dtype = ["int64", "int32", "int16", "uint8", "uint64"][r.randint(5)]
        return ("nparr", _gen_int_values(r, n, shape, dtype))
    dtype = INT_DTYPES[r.randint(len(INT_DTYPES))]
    return ("mxarr", _gen_int_values(r, n, shape, dtype), dtype)


def _gen_index_once(r, shape, ext):
    d = len(shape)
    widths = []
    remaining = int(r.randint(0, d + 1)) if r.rand() < 0.5 else d
    while remaining > 0:
        w = 1
        if ext and remaining >= 2 and r.rand() < 0.15:
            w = int(r.randint(2, min(3, remaining) + 1))
        widths.append(w)
        remaining -= w
    use_ell = r.rand() < 0.3
    ell_pos = int(r.randint(0, len(widths) + 1)) if use_ell else len(widths)
    dims, k = [], 0
    for w in widths[:ell_pos]:
        dims.append(k)
        k += w
    k = d - sum(widths[ell_pos:])
    for w in widths[ell_pos:]:
        dims.append(k)
        k += w
    bnd = [0, 1, 1, 2, 2, 3][r.randint(6)]
    bshape = tuple(int(r.choice([0, 1, 2, 3], p=[.04, .2, .38, .38]))
                   for _ in range(bnd))
    items = []
    for w, dim in zip(widths, dims):
        if w > 1:
            items.append(_mask_item(r, shape[dim:dim + w]))
        else:
            items.append(_gen_item(r, shape[dim], bshape, ext))
    if use_ell:
        items.insert(ell_pos, ("ellipsis",))
    for _ in range([0, 0, 0, 0, 1, 1, 2][r.randint(7)]):
        items.insert(int(r.randint(0, len(items) + 1)), ("none",))
    return Index(items, bare=r.rand() < 0.5,
                 empty_ellipsis=use_ell and sum(widths) == d)


def _np_getitem(x, index):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return x[index.np()]


def _empty_scatter(shape, index, target):
    """A scatter (index arrays present) that writes nothing because the
    indexed slices are empty: MLX 0.32 dies with SIGFPE or raises
    '[scatter] Updates ... are too large' or '[broadcast_to] Negative
    dimensions'.  (A plain empty index array into non-empty slices works on
    MLX; test_empty_arrays_and_empty_index_arrays has those.)"""
    arrays = [i for i in index.items
              if i[0] in ("mxarr", "mx0d", "list", "nparr", "mask",
                          "emptylist")]
    return bool(arrays) and int(np.prod(target)) == 0


def _gen_case(r, ext, max_out=3000, scatter=False):
    """(shape, dtype, layout, Index, numpy values) of the family ``ext``;
    ``scatter``: the index is for setitem / at[]."""
    while True:
        shape = _gen_shape(r)
        u = r.rand()
        if u < 0.5:
            dtype = "int32"
        elif u < 0.7:
            dtype = "float32"
        else:
            dtype = ALL[r.randint(len(ALL))]
        layout = GEN_LAYOUTS[r.randint(len(GEN_LAYOUTS))]
        index = _gen_index_once(r, shape, ext)
        values = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        try:
            ref = _np_getitem(values, index)
        except (IndexError, ValueError, TypeError, Warning):
            continue
        if ref.size > max_out:
            continue
        ember = index.uses_ember_forms() or (
            scatter and (_empty_scatter(shape, index, ref.shape)
                         or index.advanced_split_by_basic()))
        if ember != ext:
            continue
        return shape, dtype, layout, index, values


def _describe(i, shape, dtype, layout, index, extra=""):
    return (f"case {i}: a.shape={shape} dtype={dtype} layout={layout} "
            f"a{index!r}{extra}")


def _report(failures, total):
    if failures:
        head = "\n".join(failures[:6])
        more = f"\n... and {len(failures) - 6} more" if len(failures) > 6 \
            else ""
        pytest.fail(f"{len(failures)} of {total} combinations failed:\n"
                    f"{head}{more}", pytrace=False)


def _same(got, expected):
    """Exact equality with NaNs equal (values here are exact)."""
    got = np.asarray(got)
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        return False
    if got.dtype.kind in "fc" or expected.dtype.kind in "fc":
        return bool(np.all((got == expected) |
                           (np.isnan(got) & np.isnan(expected))))
    return bool(np.array_equal(got, expected))


# --------------------------------------------------------------------------
# a[idx]: generated
# --------------------------------------------------------------------------

GET_COMMON_CHUNKS = 40   # 2000 combinations
GET_EMBER_CHUNKS = 16    # 800 combinations


def _run_getitem_chunk(seed, ext):
    r = np.random.RandomState(seed)
    failures = []
    for i in range(CHUNK):
        shape, dtype, layout, index, values = _gen_case(r, ext)
        what = _describe(i, shape, dtype, layout, index)
        try:
            a, x = to_mx(values, dtype, layout)
            ref = _np_getitem(x, index)
            out = a[index.mx()]
            if not isinstance(out, mx.array):
                failures.append(f"{what}: returned {type(out).__name__}")
                continue
            if dtype_name(out.dtype) != dtype:
                failures.append(f"{what}: dtype {dtype_name(out.dtype)}")
                continue
            if tuple(out.shape) != ref.shape:
                failures.append(f"{what}: shape {tuple(out.shape)}, "
                                f"expected {ref.shape}")
                continue
            got = to_numpy(out)
            if not _same(got, ref):
                failures.append(f"{what}: values {got.tolist()}, "
                                f"expected {ref.tolist()}")
        except Exception as e:  # report every combination of the chunk
            failures.append(f"{what}: raised {type(e).__name__}: {e}")
    _report(failures, CHUNK)


@pytest.mark.parametrize("chunk", range(GET_COMMON_CHUNKS))
def test_getitem_generated(chunk):
    _run_getitem_chunk(1000 + chunk, ext=False)


@ember_only
@pytest.mark.parametrize("chunk", range(GET_EMBER_CHUNKS))
def test_getitem_generated_ember_forms(chunk):
    """NumPy index arrays, bool masks (1-d to 3-d, np/mx/list), empty lists,
    mixed with every other form.  MLX rejects these index types."""
    _run_getitem_chunk(2000 + chunk, ext=True)


# --------------------------------------------------------------------------
# a[idx] = v: generated
# --------------------------------------------------------------------------

SET_COMMON_CHUNKS = 24   # 1200 combinations
SET_EMBER_CHUNKS = 8     # 400 combinations


def _gen_value_shape(r, target, leading_ones):
    """A shape broadcastable to ``target`` (NumPy assignment rules),
    possibly with extra leading 1-dims."""
    k = len(target) if r.rand() < 0.6 else int(r.randint(0, len(target) + 1))
    s = list(target[len(target) - k:])
    for i in range(len(s)):
        if r.rand() < 0.2:
            s[i] = 1
    if leading_ones and r.rand() < 0.35:
        s = [1] * int(r.randint(1, 3)) + s
    return tuple(s)


def _value_numbers(r, shape, dtype):
    raw = r.randint(100, 120, size=shape)
    if dtype == "bool":
        return r.rand(*shape) < 0.5 if shape else np.asarray(r.rand() < 0.5)
    if dtype == "complex64":
        return (raw + 1j * r.randint(-3, 4, size=shape)).astype(np.complex64)
    return round_to(raw, dtype)


def _python_scalar(v, dtype):
    v = np.asarray(v)[()]
    if dtype == "bool":
        return bool(v)
    if dtype == "complex64":
        return complex(v)
    if dtype in INEXACT:
        return float(v)
    return int(v)


VALUE_FORMS_COMMON = ["scalar", "mx", "mx", "np", "mx0d"]
VALUE_FORMS_EMBER = ["scalar", "mx", "np", "list", "list"]


def _gen_scatter_case(r, ext):
    """(shape, dtype, layout, Index, values, value form, value shape) for
    setitem / at[].  Ember forms on the value side: list values, and values
    with more dims than the indexed shape (leading 1-dims; MLX's
    slice-update path rejects many of those: "Cannot broadcast array of
    shape (1,1,1) into shape (1,5)")."""
    while True:
        index_ext = ext and r.rand() < 0.6
        shape, dtype, layout, index, values = _gen_case(r, index_ext,
                                                        scatter=True)
        target = _np_getitem(values, index).shape
        forms = VALUE_FORMS_EMBER if ext else VALUE_FORMS_COMMON
        form = forms[r.randint(len(forms))]
        if form in ("scalar", "mx0d"):
            vshape = ()
        else:
            vshape = _gen_value_shape(r, target, leading_ones=ext)
            if form == "list" and not vshape:
                vshape = (1,)
            if form == "list" and 0 in vshape:
                form = "np"  # [] / [[]] would not keep the value's shape
        # MLX's setitem misplaces None dims (a[None] = v of shape (1, n)
        # raises "Cannot broadcast array of shape (1,n) into shape (n)",
        # a[arr, ..., None] = v lines the None dim up wrongly): values that
        # reach into dims made by None are an Ember form.
        k = index.dims_after_last_none(len(shape))
        reaches_none = k is not None and len(vshape) > k
        if reaches_none and not ext:
            vshape = vshape[len(vshape) - k:]
            reaches_none = False
        value_ember = (form == "list" or len(vshape) > len(target)
                       or reaches_none)
        if ext and not (index_ext or value_ember):
            continue
        trial = np.zeros(shape, dtype=np.int64)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                trial[index.np()] = np.ones(vshape, np.int64)
        except (IndexError, ValueError, TypeError, Warning):
            continue
        return shape, dtype, layout, index, values, form, vshape


def _mx_value(form, v, dtype):
    if form == "scalar":
        return _python_scalar(v, dtype)
    if form in ("mx", "mx0d"):
        return _mx_from_np(v, dtype)
    if form == "np":
        return np.array(v, dtype=NP_CARRIER[dtype])
    if form == "list":
        return v.tolist()
    raise AssertionError(form)


def _fmt_value(form, v):
    return f"{form} {np.asarray(v).tolist()!r} (shape {np.shape(v)})"


def _positions(x, index):
    """Flat positions selected by ``index`` (same shape as x[index])."""
    return _np_getitem(np.arange(x.size).reshape(x.shape), index)


def _broadcast_value(v, shape):
    v = np.asarray(v)
    while v.ndim > len(shape) and v.shape[0] == 1:
        v = v[0]
    return np.broadcast_to(v, shape)


def _check_setitem(x, pos, v, got):
    """None if ``got`` (flat numpy) is a valid result of x[idx] = v, else a
    reason.  Positions written more than once may hold any written value."""
    flat_pos = pos.ravel()
    flat_v = _broadcast_value(v, pos.shape).ravel()
    exp = x.ravel().copy()
    exp[flat_pos] = flat_v.astype(exp.dtype)
    uniq, counts = np.unique(flat_pos, return_counts=True)
    dup = uniq[counts > 1]
    single = np.ones(x.size, dtype=bool)
    single[dup] = False
    if not _same(got.ravel()[single], exp[single]):
        return (f"values {got.tolist()}, "
                f"expected {exp.reshape(x.shape).tolist()}")
    for p in dup:
        cands = flat_v[flat_pos == p].astype(exp.dtype)
        if not np.any(cands == got.ravel()[p]):
            return (f"repeated position {p} holds {got.ravel()[p]!r}, not "
                    f"one of the written values {cands.tolist()}")
    return None


def _run_setitem_chunk(seed, ext):
    r = np.random.RandomState(seed)
    failures = []
    for i in range(CHUNK):
        shape, dtype, layout, index, values, form, vshape = \
            _gen_scatter_case(r, ext)
        v = _value_numbers(r, vshape, dtype)
        what = _describe(i, shape, dtype, layout, index,
                         f" = {_fmt_value(form, v)}")
        try:
            a, x = to_mx(values, dtype, layout)
            snapshot = mx.array(a)
            if i % 2:
                mx.eval(snapshot)
            a[index.mx()] = _mx_value(form, v, dtype)
            if dtype_name(a.dtype) != dtype or tuple(a.shape) != shape:
                failures.append(f"{what}: became {a.dtype} {a.shape}")
                continue
            why = _check_setitem(x, _positions(x, index), v, to_numpy(a))
            if why:
                failures.append(f"{what}: {why}")
                continue
            if not _same(to_numpy(snapshot), x):
                failures.append(f"{what}: an earlier copy changed to "
                                f"{to_numpy(snapshot).tolist()}")
        except Exception as e:
            failures.append(f"{what}: raised {type(e).__name__}: {e}")
    _report(failures, CHUNK)


@pytest.mark.parametrize("chunk", range(SET_COMMON_CHUNKS))
def test_setitem_generated(chunk):
    _run_setitem_chunk(3000 + chunk, ext=False)


@ember_only
@pytest.mark.parametrize("chunk", range(SET_EMBER_CHUNKS))
def test_setitem_generated_ember_forms(chunk):
    """Setitem with NumPy index arrays, bool masks, empty lists and list
    values (all rejected by MLX)."""
    _run_setitem_chunk(4000 + chunk, ext=True)


# --------------------------------------------------------------------------
# a.at[idx].op(v): generated
# --------------------------------------------------------------------------

AT_COMMON_CHUNKS = 12   # 600 combinations
AT_EMBER_CHUNKS = 4     # 200 combinations
AT_OPS = ["add", "subtract", "multiply", "divide", "maximum", "minimum"]


def _at_reference(x, pos, op, v):
    flat = x.ravel().copy()
    vb = _broadcast_value(v, pos.shape).ravel().astype(flat.dtype)
    p = pos.ravel()
    if op == "add":
        np.add.at(flat, p, vb)
    elif op == "subtract":
        np.add.at(flat, p, -vb)
    elif op == "multiply":
        np.multiply.at(flat, p, vb)
    elif op == "divide":
        np.multiply.at(flat, p, (1 / vb).astype(flat.dtype))
    elif op == "maximum":
        np.maximum.at(flat, p, vb)
    else:
        np.minimum.at(flat, p, vb)
    return flat.reshape(x.shape)


def _at_numbers(r, shape, op, dtype):
    if op in ("multiply", "divide"):
        choices = [0.5, 2.0, -1.0, 1.0, -2.0] if dtype == "float32" else \
            [2, -1, 1, 1, -2]
        v = np.asarray(choices, dtype=NP_CARRIER[dtype])[
            r.randint(5, size=shape)]
    else:
        v = r.randint(-6, 7, size=shape).astype(NP_CARRIER[dtype])
    return np.asarray(v)


def _run_at_chunk(seed, ext):
    r = np.random.RandomState(seed)
    failures = []
    for i in range(CHUNK):
        op = AT_OPS[i % len(AT_OPS)]
        dtype = "float32" if op == "divide" or r.rand() < 0.5 else "int32"
        shape, _, layout, index, _, form, vshape = _gen_scatter_case(r, ext)
        values = (np.arange(int(np.prod(shape))) % 7 - 3).reshape(shape)
        v = _at_numbers(r, vshape, op, dtype)
        what = _describe(i, shape, dtype, layout, index,
                         f".at.{op}({_fmt_value(form, v)})")
        try:
            a, x = to_mx(values, dtype, layout)
            ref = _at_reference(x, _positions(x, index), op, v)
            out = getattr(a.at[index.mx()], op)(_mx_value(form, v, dtype))
            if dtype_name(out.dtype) != dtype or tuple(out.shape) != shape:
                failures.append(f"{what}: result {out.dtype} {out.shape}")
                continue
            got = to_numpy(out)
            if not _same(got, ref):
                failures.append(f"{what}: values {got.tolist()}, expected "
                                f"{ref.tolist()}")
                continue
            if not _same(to_numpy(a), x):
                failures.append(f"{what}: the source array changed")
        except Exception as e:
            failures.append(f"{what}: raised {type(e).__name__}: {e}")
    _report(failures, CHUNK)


@pytest.mark.parametrize("chunk", range(AT_COMMON_CHUNKS))
def test_at_generated(chunk):
    _run_at_chunk(5000 + chunk, ext=False)


@ember_only
@pytest.mark.parametrize("chunk", range(AT_EMBER_CHUNKS))
def test_at_generated_ember_forms(chunk):
    _run_at_chunk(6000 + chunk, ext=True)


def test_generator_is_deterministic_and_covers_the_forms():
    """The generator itself: reproducible, and it really produces every
    form (so the chunks above test what they claim)."""
    seen = set()
    shapes = set()
    for ext in (False, True):
        r1 = np.random.RandomState(7)
        r2 = np.random.RandomState(7)
        for _ in range(300):
            c1 = _gen_case(r1, ext)
            c2 = _gen_case(r2, ext)
            assert repr(c1[3]) == repr(c2[3]) and c1[0] == c2[0]
            shapes.add(len(c1[0]))
            if 0 in c1[0]:
                shapes.add("size-0")
            for item in c1[3].items:
                kind = item[0]
                if kind == "int":
                    kind = "negint" if item[1] < 0 else "int"
                if kind == "slice" and item[3] is not None and item[3] < 0:
                    seen.add("negstep")
                seen.add(kind)
            advanced = [k for k in c1[3].items
                        if k[0] in ("mxarr", "list", "nparr", "mask")]
            if len(advanced) >= 2:
                seen.add("multi-advanced")
    assert seen >= {"int", "negint", "slice", "negstep", "none", "ellipsis",
                    "mxarr", "mx0d", "list", "nparr", "mask", "emptylist",
                    "multi-advanced"}, seen
    assert shapes >= {0, 1, 2, 3, 4, "size-0"}


# --------------------------------------------------------------------------
# explicit cases: placement of advanced-index dims, broadcasting
# --------------------------------------------------------------------------

X3 = np.arange(2 * 3 * 4 * 5, dtype=np.int32).reshape(2, 3, 4, 5)

PLACEMENT = [
    # adjacent advanced indices: result dims replace them in place
    (slice(None), [0, 2], [1, 3]),
    (slice(None), [[0], [2]], [1, 3, 0]),
    (0, [1, 2], slice(None)),             # int + array adjacent
    (slice(None), 1, [0, 3]),
    (Ellipsis, [0, 1], [4, 2]),
    (slice(1, None), [[2, 0]], [[1], [3]], slice(None, None, -1)),
    # non-adjacent: result dims go first
    ([0, 1], slice(None), [1, 2]),
    ([1, 0], slice(None), slice(None), [4, 0]),
    (0, slice(None), [1, 2]),             # int and array split by a slice
    ([0, 1], None, [0, 1]),               # None splits them too
    (slice(None), [0, 2], slice(None), 3),
    ([[1], [0]], Ellipsis, [0, 4, 2]),
    (None, [1], slice(None), [0, 2], None),
    # an Ellipsis that spans no dims still separates them (NumPy; MLX keeps
    # them in place: Ember-only)
    (slice(None), [0, 1], Ellipsis, [0, 1], [1, 2]),
    (1, Ellipsis, [2, 0], slice(None), 0),
]


def _spec(index):
    """Index of a literal tuple of ints / lists / None / ... / slices."""
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    return Index([("list", np.asarray(i)) if isinstance(i, list)
                  else ("int", i) if isinstance(i, int)
                  else ("none",) if i is None
                  else ("ellipsis",) if i is Ellipsis
                  else ("slice", i.start, i.stop, i.step)
                  for i in index], bare=False,
                 empty_ellipsis=Ellipsis in index and consumed == X3.ndim)


GET_PLACEMENT = [
    pytest.param(i, id=repr(i),
                 marks=[ember_only] if _spec(i).uses_ember_forms() else [])
    for i in PLACEMENT]


@pytest.mark.parametrize("index", GET_PLACEMENT)
def test_advanced_index_placement(index):
    a = mx.array(X3)
    as_mx = tuple(mx.array(i) if isinstance(i, list) else i for i in index)
    ref = X3[tuple(np.asarray(i) if isinstance(i, list) else i
                   for i in index)]
    assert_equal(a[as_mx], ref, "int32", msg=repr(index))
    assert_equal(a[index], ref, "int32", msg=repr(index))   # lists


# MLX's setitem places the dims of split advanced indices that include ints
# (or are split by None) differently from NumPy: Ember-only there.
SET_PLACEMENT = [
    pytest.param(i, id=repr(i),
                 marks=[ember_only] if (_spec(i).uses_ember_forms()
                                        or _spec(i).advanced_split_by_basic())
                 else [])
    for i in PLACEMENT]


@pytest.mark.parametrize("index", SET_PLACEMENT)
def test_advanced_setitem_placement(index):
    np_index = tuple(np.asarray(i) if isinstance(i, list) else i
                     for i in index)
    target = X3[np_index].shape
    v = (1000 + np.arange(int(np.prod(target)))).reshape(target)
    pos = _positions(X3, _spec(index))
    a = mx.array(X3)
    a[tuple(mx.array(i) if isinstance(i, list) else i for i in index)] = \
        mx.array(v.astype(np.int32))
    why = _check_setitem(X3, pos, v, to_numpy(a))
    assert why is None, f"{index!r}: {why}"
    b = mx.array(X3).at[tuple(mx.array(i) if isinstance(i, list) else i
                              for i in index)].add(mx.array(v))
    ref = X3.copy()
    np.add.at(ref.reshape(-1), pos.ravel(), v.ravel().astype(np.int32))
    assert_equal(b, ref, "int32", msg=f"at[{index!r}].add")


def test_index_arrays_broadcast_together():
    a = mx.array(X3)
    rows = mx.array([[0], [1]])
    cols = mx.array([0, 2, 1])
    assert_equal(a[rows, cols], X3[[[0], [1]], [0, 2, 1]], "int32")
    assert_equal(a[rows, :, cols], X3[[[0], [1]], :, [0, 2, 1]], "int32")
    assert_equal(a[0, rows, 1, cols], X3[0, [[0], [1]], 1, [0, 2, 1]],
                 "int32")
    with pytest.raises((ValueError, IndexError)):  # MLX / NumPy
        mx.eval(a[mx.array([0, 1]), mx.array([0, 1, 2])])


def test_nested_lists_and_tuples():
    a = mx.array(X3)
    assert_equal(a[[[1, 0], [0, 1]]], X3[np.array([[1, 0], [0, 1]])],
                 "int32")
    # a tuple is a multi-dimensional index, a list is one index array
    assert_equal(a[([1, 0], [0, 2])], X3[[1, 0], [0, 2]], "int32")
    assert_equal(a[[1, 0], [0, 2]], X3[[1, 0], [0, 2]], "int32")
    assert_equal(a[:, [[2]], [[1, 3]]], X3[:, [[2]], [[1, 3]]], "int32")


# --------------------------------------------------------------------------
# index array dtypes, 0-d index arrays, negative index arrays
# --------------------------------------------------------------------------

@pytest.mark.parametrize("idx_dtype", INT_DTYPES)
def test_every_index_dtype(idx_dtype):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    a = mx.array(x)
    idx = mx.array([3, 0, 3], dtype=mx_dtype(idx_dtype))
    assert_equal(a[idx], x[[3, 0, 3]], "float32")
    assert_equal(a[:, idx[:2] % 3], x[:, [0, 0]], "float32")
    b = mx.array(x)
    b[idx] = 0.5
    ref = x.copy()
    ref[[3, 0]] = 0.5
    assert_equal(b, ref, "float32")
    c = a.at[idx].add(1)
    ref = x.copy()
    np.add.at(ref, [3, 0, 3], 1)
    assert_equal(c, ref, "float32")


@pytest.mark.parametrize("idx_dtype", SINTS)
def test_negative_index_arrays_wrap(idx_dtype):
    x = np.arange(20, dtype=np.int32).reshape(5, 4)
    a = mx.array(x)
    idx = mx.array([-1, -5, 2, -2], dtype=mx_dtype(idx_dtype))
    np_idx = np.array([-1, -5, 2, -2])
    assert_equal(a[idx], x[np_idx], "int32")
    assert_equal(a[:, idx[:3] % 4 - 4], x[:, np_idx[:3] % 4 - 4], "int32")
    assert_equal(a[idx, idx % 4 - 4], x[np_idx, np_idx % 4 - 4], "int32")
    b = mx.array(x)
    b[idx] = mx.array([[-1], [-2], [-3], [-4]])
    ref = x.copy()
    ref[np_idx] = [[-1], [-2], [-3], [-4]]
    assert_equal(b, ref, "int32")
    c = a.at[mx.array([-1, 4, -1], dtype=mx_dtype(idx_dtype))].add(10)
    ref = x.copy()
    np.add.at(ref, [-1, 4, -1], 10)
    assert_equal(c, ref, "int32")
    d = a.at[:, mx.array([-4, 0], dtype=mx_dtype(idx_dtype))].maximum(7)
    ref = x.copy()
    np.maximum.at(ref, (slice(None), [-4, 0]), 7)
    assert_equal(d, ref, "int32")


@pytest.mark.parametrize("idx_dtype", INT_DTYPES)
def test_0d_mx_index_acts_like_an_int(idx_dtype):
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    a = mx.array(x)
    one = mx.array(1, dtype=mx_dtype(idx_dtype))
    assert_equal(a[one], x[1], "int32")
    assert_equal(a[:, one], x[:, 1], "int32")
    assert_equal(a[one, :, one], x[1, :, 1], "int32")
    assert_equal(a[..., one], x[..., 1], "int32")
    # in the presence of an index array it is an advanced index (placement)
    assert_equal(a[one, :, mx.array([0, 3], dtype=mx_dtype(idx_dtype))],
                 x[1, :, [0, 3]], "int32")
    b = mx.array(x)
    b[one] = 0
    ref = x.copy()
    ref[1] = 0
    assert_equal(b, ref, "int32")


# --------------------------------------------------------------------------
# every dtype, non-contiguous inputs
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_gather_and_setitem_every_dtype(name):
    rng = np.random.default_rng(len(name))
    a, x = to_mx(make_values((4, 3), name, rng), name)
    for index in [(mx.array([2, 0, 2]),), (slice(1, None), slice(None, None,
                                                                  -1)),
                  (-1,), (slice(None), mx.array([-1, 0])), (None, 1, 2),
                  (mx.array([[3], [0]]), mx.array([1, 2]))]:
        np_index = tuple(np.array(i) if isinstance(i, mx.array) else i
                         for i in index)
        assert_equal(a[index], x[np_index], name, msg=repr(np_index))
    v, vx = to_mx(make_values((2, 3), name, rng), name)
    b = a[...]
    b[mx.array([0, 2])] = v
    ref = x.copy()
    ref[[0, 2]] = vx
    assert_equal(b, ref, name)
    s = _python_scalar(make_values((), name, rng), name)
    b[1, ::-2] = s
    ref[1, ::-2] = s
    assert_equal(b, ref, name)
    assert_equal(a, x, name)  # the source is untouched
    if name != "bool":
        ones = mx.ones((3,), dtype=mx_dtype(name))
        c = a.at[mx.array([1, 1, 3])].add(ones)
        ref = x.copy()
        np.add.at(ref, [1, 1, 3], np.ones(3, ref.dtype))
        assert_close(c, ref, name)


NONCONTIG = {
    "transposed": lambda a: mx.transpose(a, (2, 0, 1)),
    "negstride": lambda a: a[::-1, :, ::-2],
    "sliced": lambda a: a[1:, 1::2, ::3],
    "broadcast": lambda a: mx.broadcast_to(a[:1], a.shape),
}


@pytest.mark.parametrize("view", list(NONCONTIG))
def test_non_contiguous_inputs(view):
    base = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    a = NONCONTIG[view](mx.array(base))
    x = {"transposed": lambda b: np.transpose(b, (2, 0, 1)),
         "negstride": lambda b: b[::-1, :, ::-2],
         "sliced": lambda b: b[1:, 1::2, ::3],
         "broadcast": lambda b: np.broadcast_to(b[:1], b.shape)}[view](base)
    idx = mx.array([1, 0, 1])
    assert_equal(a[idx], x[[1, 0, 1]], "float32")
    assert_equal(a[:, idx, -1], x[:, [1, 0, 1], -1], "float32")
    assert_equal(a[::-1, idx][..., 1:], x[::-1, [1, 0, 1]][..., 1:],
                 "float32")
    b = NONCONTIG[view](mx.array(base))
    b[:, idx[:2]] = -1.0
    ref = x.copy()
    ref[:, [1, 0]] = -1.0
    assert_equal(b, ref, "float32")
    c = a.at[idx].add(1.0)
    ref = x.copy()
    np.add.at(ref, [1, 0, 1], 1.0)
    assert_equal(c, ref, "float32")
    assert_equal(a, x, "float32")


def test_setitem_on_a_view_leaves_the_base_alone():
    base = mx.arange(12).reshape(3, 4)
    view = base[::-1, 1:]
    view[0] = 99
    view[mx.array([1, 1])] = -5
    assert base.tolist() == np.arange(12).reshape(3, 4).tolist()
    ref = np.arange(12).reshape(3, 4)[::-1, 1:].copy()
    ref[0] = 99
    ref[1] = -5
    assert_equal(view, ref, "int32")


# --------------------------------------------------------------------------
# setitem: functional update, value broadcasting
# --------------------------------------------------------------------------

@pytest.mark.parametrize("evaluated", [False, True])
def test_setitem_is_a_functional_update(evaluated):
    a = mx.arange(6).reshape(2, 3)
    derived = a + 0
    taken = a[0]
    if evaluated:
        mx.eval(derived, taken)
    alias = a  # the same Python object: sees the rebinding (MLX semantics)
    a[0] = 5
    a[mx.array([1]), mx.array([2])] = -1
    assert a.tolist() == [[5, 5, 5], [3, 4, -1]]
    assert alias is a and alias.tolist() == a.tolist()
    assert derived.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert taken.tolist() == [0, 1, 2]


def test_inplace_operator_on_repeated_indices_does_not_accumulate():
    a = mx.zeros(4, dtype=mx.int32)
    a[mx.array([0, 0, 2])] += 1
    assert a.tolist() == [1, 0, 1, 0]
    b = mx.zeros(4, dtype=mx.int32)
    assert b.at[mx.array([0, 0, 2])].add(1).tolist() == [2, 0, 1, 0]
    assert b.tolist() == [0, 0, 0, 0]


def _broadcast_cases():
    x = np.zeros((2, 3, 4))
    cases = []
    for name, index in [("int", (0,)), ("slices", (slice(None),) * 2),
                        ("array", ([1],)), ("ellipsis", (Ellipsis,))]:
        np_index = tuple(np.array(i) if isinstance(i, list) else i
                         for i in index)
        target = x[np_index].shape
        for vshape in [(4,), (1, 4), (3, 1), (1,), (), (3, 4), (1, 3, 4),
                       (1, 1, 4), (1, 1, 3, 4), (2, 1, 1)]:
            try:
                x[np_index] = np.zeros(vshape)
            except ValueError:
                continue
            # MLX rejects values with more dims than the target in most
            # paths ("Cannot broadcast array of shape (1,1,1,4) into shape
            # (1,3,4)"); NumPy drops the leading 1-dims.
            marks = [ember_only] if len(vshape) > len(target) else []
            cases.append(pytest.param(index, vshape, marks=marks,
                                      id=f"{name}-{vshape}"))
    return cases


@pytest.mark.parametrize("index,vshape", _broadcast_cases())
def test_setitem_value_broadcasting(index, vshape):
    x = np.zeros((2, 3, 4), dtype=np.float32)
    v = np.arange(1, 1 + int(np.prod(vshape)),
                  dtype=np.float32).reshape(vshape)
    np_index = tuple(np.array(i) if isinstance(i, list) else i
                     for i in index)
    mx_index = tuple(mx.array(i) if isinstance(i, list) else i
                     for i in index)
    ref = x.copy()
    ref[np_index] = v
    a = mx.array(x)
    a[mx_index] = mx.array(v)
    assert_equal(a, ref, "float32", msg=f"{np_index} = shape {vshape}")
    b = mx.array(x)
    b[mx_index] = v  # a numpy value
    assert_equal(b, ref, "float32", msg=f"{np_index} = np {vshape}")
    c = mx.array(x).at[mx_index].add(mx.array(v))
    assert_equal(c, ref, "float32", msg=f"at[{np_index}].add {vshape}")


def test_setitem_value_that_does_not_broadcast_raises():
    a = mx.zeros((3, 4))
    with raises(ValueError, "broadcast"):
        a[0] = mx.ones((3,))
    with raises(ValueError, "broadcast"):
        a[mx.array([0, 1])] = mx.ones((3, 4))
    with raises(ValueError, "broadcast"):
        a[:, 1:] = mx.ones((3, 2))


def test_setitem_casts_to_the_array_dtype():
    a = mx.zeros(3, dtype=mx.int32)
    a[0] = 2.7
    a[mx.array([1])] = mx.array([3.9])
    assert dtype_name(a.dtype) == "int32" and a.tolist() == [2, 3, 0]
    b = mx.zeros(3, dtype=mx.float16)
    b[1:] = mx.array([1, 2], dtype=mx.int64)
    assert dtype_name(b.dtype) == "float16" and b.tolist() == [0, 1, 2]


@ember_only
def test_setitem_list_values():
    """MLX: 'Invalid type list received in array initialization'."""
    a = mx.zeros((3, 4), dtype=mx.int32)
    a[0] = [1, 2, 3, 4]
    a[1:] = [[5], [6]]
    a[mx.array([0, 2]), mx.array([3, 3])] = [7, 8]
    assert a.tolist() == [[1, 2, 3, 7], [5, 5, 5, 5], [6, 6, 6, 8]]
    assert a.at[mx.array([0, 0])].add([[1, 1, 1, 1], [1, 1, 1, 1]]).tolist()[
        0] == [3, 4, 5, 9]


# --------------------------------------------------------------------------
# at[]: accumulation, every op
# --------------------------------------------------------------------------

def test_at_add_accumulates():
    assert mx.zeros(3).at[mx.array([0, 0, 2])].add(1).tolist() == [2, 0, 1]
    assert mx.zeros(3).at[[0, 0, 2]].add(1).tolist() == [2, 0, 1]


@pytest.mark.parametrize("op", AT_OPS)
def test_at_ops_with_repeated_indices(op):
    x = np.array([[1, -2, 4], [8, 0.5, -1], [3, 2, 2]], dtype=np.float32)
    idx = [2, 0, 2, 2, 1]
    v = np.array([[2, 0.5, -1], [-2, 4, 0.5], [0.5, 2, 2], [-1, -1, 2],
                  [4, 4, 0.5]], dtype=np.float32)
    a = mx.array(x)
    out = getattr(a.at[mx.array(idx)], op)(mx.array(v))
    ref = _at_reference(x, _positions(x, Index([("list", np.array(idx))],
                                              bare=True)), op, v)
    assert_equal(out, ref, "float32")
    assert_equal(a, x, "float32")
    # a scalar value and mixed basic/advanced index
    out = getattr(a.at[mx.array([1, 1]), ::-1], op)(2.0)
    ref = _at_reference(
        x, _positions(x, Index([("list", np.array([1, 1])),
                                ("slice", None, None, -1)], bare=False)),
        op, np.float32(2.0))
    assert_equal(out, ref, "float32")


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum",
                                "minimum"])
@pytest.mark.parametrize("name", ["uint8", "int16", "int32", "int64",
                                  "float16", "bfloat16", "float64",
                                  "complex64"])
def test_at_ops_dtypes(op, name):
    # complex maximum/minimum: NumPy orders lexicographically, as MLX does
    x = round_to(np.array([3, 5, 7, 9]), name)
    v = round_to(np.array([1, 2, 1]), name)
    a = mx.array(x, dtype=mx_dtype(name))
    v_mx = mx.array(v, dtype=mx_dtype(name))
    out = getattr(a.at[mx.array([3, 0, 3])], op)(v_mx)
    ref = _at_reference(x, np.array([3, 0, 3]), op, v)
    assert_equal(out, round_to(ref, name), name)


# --------------------------------------------------------------------------
# 0-d, empty
# --------------------------------------------------------------------------

def test_0d_arrays():
    a = mx.array(7)
    x = np.array(7, dtype=np.int32)
    for index in [(), Ellipsis, None, (None, Ellipsis), (Ellipsis, None),
                  (None, None), (None, Ellipsis, None)]:
        assert_equal(a[index], x[index], "int32", msg=repr(index))
    b = mx.array(7)
    b[...] = 3
    assert b.item() == 3 and b.shape == ()
    b[()] = mx.array(4)
    assert b.item() == 4 and b.shape == ()
    b[None] = 5
    assert b.item() == 5 and b.shape == ()
    assert a.at[...].add(2).item() == 9
    assert a.item() == 7


@ember_only
def test_setitem_with_none_and_value_covering_the_new_dim():
    """MLX: 'Cannot broadcast array of shape (1) into shape ()'."""
    b = mx.array(7)
    b[None] = mx.array([5])
    assert b.item() == 5 and b.shape == ()
    c = mx.zeros(3, dtype=mx.int32)
    c[None] = mx.array([[1, 2, 3]])
    assert c.tolist() == [1, 2, 3]
    d = mx.zeros((3, 2), dtype=mx.int32)
    d[mx.array([0, 2]), ..., None] = mx.array([[[1], [2]], [[3], [4]]])
    assert d.tolist() == [[1, 2], [0, 0], [3, 4]]


def test_0d_arrays_reject_integer_indices():
    with pytest.raises((ValueError, IndexError)):
        mx.array(1)[0]


def test_0d_array_integer_index_raises_value_error():
    """MLX: 'too many indices for array: array is 0-dimensional' (ValueError)."""
    with raises(ValueError, "too many|indices"):
        mx.array(1)[0]


def test_empty_arrays_and_empty_index_arrays():
    x = np.zeros((0, 3), dtype=np.float32)
    a = mx.zeros((0, 3))
    assert_equal(a[1:, ::-1], x[1:, ::-1], "float32")
    assert_equal(a[mx.array([], dtype=mx.int32)], x[np.zeros(0, int)],
                 "float32")
    assert_equal(a[:, mx.array([2, 0])], x[:, [2, 0]], "float32")
    assert_equal(a[mx.zeros((2, 0), dtype=mx.int32)],
                 x[np.zeros((2, 0), int)], "float32")
    y = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = mx.array(y)
    empty = mx.zeros((0,), dtype=mx.int64)
    assert_equal(b[empty], y[np.zeros(0, int)], "int32")
    assert_equal(b[:, empty], y[:, np.zeros(0, int)], "int32")
    assert_equal(b[empty, empty], y[np.zeros(0, int), np.zeros(0, int)],
                 "int32")
    assert_equal(b[2:2], y[2:2], "int32")
    assert_equal(b[5:, 1], y[5:, 1], "int32")
    c = mx.array(y)
    c[empty] = 100
    c[1:1] = mx.zeros((0, 4), dtype=mx.int32)
    assert_equal(c, y, "int32")
    assert_equal(b.at[empty].add(1), y, "int32")


@ember_only
def test_scatter_into_empty_slices():
    """MLX raises '[scatter] Updates with shape (0,1,3) are too large' or
    dies with SIGFPE when the indexed slices hold no elements."""
    d = mx.zeros((0, 3))
    d[mx.array([], dtype=mx.int32)] = 1.0
    d[:, mx.array([1, 2])] = 1.0
    assert d.shape == (0, 3)
    e = mx.zeros((2, 0), dtype=mx.int32)
    e[mx.array([1, 0, 1])] = 4
    assert e.shape == (2, 0)
    assert e.at[mx.array([1, 1])].add(1).shape == (2, 0)
    f = mx.arange(6).reshape(2, 3)
    f[mx.array([1]), 1:1] = 9
    f[mx.array([0, 0]), 3:] = mx.zeros((2, 0), dtype=mx.int32)
    assert f.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert f.at[mx.array([1]), 2:0].add(1).tolist() == f.tolist()


@ember_only
def test_empty_lists_as_indices():
    """MLX makes [] a float array and rejects it."""
    y = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = mx.array(y)
    assert_equal(b[[]], y[np.zeros(0, int)], "int32")
    assert_equal(b[:, []], y[:, np.zeros(0, int)], "int32")
    assert_equal(b[[[]]], y[np.zeros((1, 0), int)], "int32")
    c = mx.array(y)
    c[[]] = 7
    assert_equal(c, y, "int32")


# --------------------------------------------------------------------------
# boolean masks and scalar booleans (MLX: not supported)
# --------------------------------------------------------------------------

MASK_FORMS = {
    "np": lambda m: np.array(m, dtype=bool),
    "mx": lambda m: mx.array(np.array(m, dtype=bool)),
    "list": lambda m: np.array(m, dtype=bool).tolist(),
}


@ember_only
@pytest.mark.parametrize("form", list(MASK_FORMS))
def test_bool_masks(form):
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    a = mx.array(x)
    m1 = np.array([True, False, True])
    m2 = np.array([[True, False, False, True], [False, True, True, False],
                   [False, False, False, True]])
    full = x > 11
    f = MASK_FORMS[form]
    cases = [
        ((slice(None), f(m1)), (slice(None), m1)),
        ((0, f(m2)), (0, m2)),
        ((f(full),), (full,)),
        ((Ellipsis, f(m2[0])), (Ellipsis, m2[0])),
        ((f(m1[:2]), slice(None), 1), (m1[:2], slice(None), 1)),
        ((slice(None), f(m1), [0, 3]), (slice(None), m1, [0, 3])),
        ((None, f(m1[:2]), 1), (None, m1[:2], 1)),
    ]
    for mx_index, np_index in cases:
        assert_equal(a[mx_index], x[np_index], "int32", msg=repr(np_index))
        b = mx.array(x)
        b[mx_index] = -1
        ref = x.copy()
        ref[np_index] = -1
        assert_equal(b, ref, "int32", msg=f"{np_index!r} = -1")
        c = a.at[mx_index].add(5)
        ref = x.copy()
        ref[np_index] += 5  # masks select each element once
        assert_equal(c, ref, "int32", msg=f"at[{np_index!r}].add")
    # a mask selecting nothing
    none = np.zeros(3, dtype=bool)
    assert_equal(a[:, f(none)], x[:, none], "int32")
    assert_equal(a[f(np.zeros_like(full))], x[np.zeros_like(full)], "int32")
    b = mx.array(x)
    b[:, f(none)] = 9
    assert_equal(b, x, "int32")
    # assigning a value per selected element
    b[f(full)] = mx.arange(12)
    ref = x.copy()
    ref[full] = np.arange(12)
    assert_equal(b, ref, "int32")


@ember_only
def test_bool_mask_shape_mismatch_raises():
    """Ember reads with boolean masks (MLX: 'not yet supported'); a mask
    that does not match the indexed dims is MLX's ValueError."""
    a = mx.zeros((2, 3))
    with pytest.raises(ValueError, match="Boolean index"):
        mx.eval(a[np.array([True, False, True])])
    with pytest.raises(ValueError, match="Boolean index"):
        mx.eval(a[:, mx.array([True, False])])
    with pytest.raises(ValueError, match="more dimensions"):
        mx.eval(mx.zeros((2,))[mx.array([[True, False]])])


@pytest.mark.parametrize("shape,mask", [
    ((2, 3), [True, False, True]), ((2, 3), [[True, False]]), ((2,), [[True, False]]),
])
def test_bool_mask_setitem_shape_mismatch_is_a_value_error(shape, mask):
    """MLX: the mask must have the shape of the leading dims (ValueError)."""
    a = mx.zeros(shape)
    with pytest.raises(ValueError):
        a[mx.array(mask)] = 1.0
        mx.eval(a)


@ember_only
@pytest.mark.parametrize("index", [True, False, (True,), (Ellipsis, True),
                                   (True, Ellipsis), (slice(1, None), True),
                                   (None, False)])
def test_bool_scalar_index(index):
    """NumPy: a scalar True adds a dim of size 1, False one of size 0."""
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    a = mx.array(x)
    assert_equal(a[index], x[index], "int32", msg=repr(index))
    b = mx.array(x)
    b[index] = 7
    ref = x.copy()
    ref[index] = 7
    assert_equal(b, ref, "int32", msg=repr(index))
    try:
        ref0 = np.array(5, np.int32)[index]
    except IndexError:
        return
    assert_equal(mx.array(5)[index], ref0, "int32")


@ember_only
@pytest.mark.parametrize("np_dtype", [np.int64, np.int32, np.int8, np.uint16,
                                      np.uint64, np.intp])
def test_numpy_integer_index_arrays(np_dtype):
    """MLX: 'Cannot index mlx array using the given type'."""
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    a = mx.array(x)
    idx = np.array([2, 0, 2], dtype=np_dtype)
    assert_equal(a[idx], x[idx], "int32")
    assert_equal(a[:, idx], x[:, idx], "int32")
    assert_equal(a[idx, idx[::-1]], x[idx, idx[::-1]], "int32")
    assert_equal(a[np.array(1, np_dtype)], x[1], "int32")
    b = mx.array(x)
    b[idx[:2]] = 0
    ref = x.copy()
    ref[idx[:2]] = 0
    assert_equal(b, ref, "int32")
    c = a.at[idx].add(1)
    ref = x.copy()
    np.add.at(ref, idx, 1)
    assert_equal(c, ref, "int32")


# --------------------------------------------------------------------------
# out of range
# --------------------------------------------------------------------------

@ember_only
@pytest.mark.parametrize("shape,index", [
    ((3,), 5), ((3,), 3), ((3,), -4), ((2, 3), (0, 3)), ((2, 3), (-3, 0)),
    ((2, 3), (1, -4)), ((2, 3), (Ellipsis, 7)), ((3,), 2 ** 31 - 1),
])
def test_static_int_out_of_range_raises(shape, index):
    """MLX reads out of bounds (garbage or a segfault); Ember raises."""
    a = mx.zeros(shape)
    with raises(IndexError, "index|bound|range"):
        mx.eval(a[index])
    with raises(IndexError, "index|bound|range"):
        a[index] = 1.0
        mx.eval(a)
    with raises(IndexError, "index|bound|range"):
        mx.eval(mx.zeros(shape).at[index].add(1.0))


OUT_OF_RANGE = [
    (5, "int32"), (3, "int32"), (-4, "int32"), (2 ** 31 - 1, "int32"),
    (-2 ** 31, "int32"), (2 ** 40, "int64"), (-2 ** 40, "int64"),
    (2 ** 63 - 1, "int64"), (-2 ** 63, "int64"), (127, "int8"),
    (-128, "int8"), (255, "uint8"), (2 ** 32 - 1, "uint32"),
    (2 ** 64 - 1, "uint64"), (2 ** 63, "uint64"),
]


# Note 2**64-1 as uint64: NumPy casts index arrays to intp unsafely and reads
# it as -1; Ember treats it as the huge positive value it is and raises.


def _bad_index(value, dtype):
    return mx.array(np.array([0, value, 1], dtype=NP_CARRIER[dtype]))


@ember_only
@pytest.mark.parametrize("value,dtype", OUT_OF_RANGE,
                         ids=[f"{v}-{d}" for v, d in OUT_OF_RANGE])
def test_out_of_range_index_array_gather_raises(value, dtype):
    a = mx.arange(3 * 3).reshape(3, 3)
    for make in [lambda i: a[i], lambda i: a[:, i], lambda i: a[i, i],
                 lambda i: a[1, None, i], lambda i: a[i.reshape(3, 1), 1:]]:
        with raises(IndexError, "index|bound|range"):
            mx.eval(make(_bad_index(value, dtype)))
    # the array itself still works afterwards
    assert a[mx.array([2])].tolist() == [[6, 7, 8]]


@ember_only
@pytest.mark.parametrize("value,dtype", OUT_OF_RANGE,
                         ids=[f"{v}-{d}" for v, d in OUT_OF_RANGE])
def test_out_of_range_index_array_setitem_raises(value, dtype):
    for index in [lambda i: (i,), lambda i: (slice(None), i),
                  lambda i: (i, mx.array(0))]:
        a = mx.zeros((3, 3))
        with raises(IndexError, "index|bound|range"):
            a[index(_bad_index(value, dtype))] = 1.0
            mx.eval(a)
        with raises(IndexError, "index|bound|range"):
            b = mx.zeros((3, 3))
            b[index(_bad_index(value, dtype))] = mx.ones((3,))
            mx.eval(b + 1)


@ember_only
@pytest.mark.parametrize("op", AT_OPS)
@pytest.mark.parametrize("value,dtype", OUT_OF_RANGE[::2],
                         ids=[f"{v}-{d}" for v, d in OUT_OF_RANGE[::2]])
def test_out_of_range_index_array_at_raises(op, value, dtype):
    a = mx.ones((3, 3))
    with raises(IndexError, "index|bound|range"):
        mx.eval(getattr(a.at[_bad_index(value, dtype)], op)(2.0))
    with raises(IndexError, "index|bound|range"):
        mx.eval(getattr(a.at[:, _bad_index(value, dtype)], op)(2.0))
    assert a.tolist() == [[1.0] * 3] * 3


@ember_only
def test_out_of_range_lists_and_numpy_indices_raise():
    a = mx.arange(4)
    for index in [[0, 4], [[-5]], np.array([9]), np.array([-2 ** 40])]:
        with raises(IndexError, "index|bound|range"):
            mx.eval(a[index])
        with raises(IndexError, "index|bound|range"):
            b = mx.arange(4)
            b[index] = 0
            mx.eval(b)


@ember_only
def test_out_of_range_in_a_lazy_graph_raises_on_eval():
    """The bad value is only known when the graph runs."""
    a = mx.arange(10)
    idx = mx.array([1, 2, 3]) * 5           # [5, 10, 15]: 10, 15 are bad
    with raises(IndexError, "index|bound|range"):
        out = a[idx] + 1
        mx.eval(out)
    ok = mx.array([1, 2, 3]) * 3
    assert (a[ok] + 1).tolist() == [4, 7, 10]


# --------------------------------------------------------------------------
# type errors, too many indices
# --------------------------------------------------------------------------

@pytest.mark.parametrize("index", [
    "float_mx", "float_list", "float_scalar", "string", "complex",
    "float_mx_in_tuple",
])
def test_non_integer_indices_raise(index):
    """MLX raises ValueError for every non-integer index."""
    a = mx.arange(6).reshape(2, 3)
    make = {
        "float_mx": lambda: mx.array([1.0]),
        "float_list": lambda: [1.0, 0.0],
        "float_scalar": lambda: 1.0,
        "string": lambda: "a",
        "complex": lambda: 1j,
        "float_mx_in_tuple": lambda: (slice(None), mx.array([0.0])),
    }[index]
    with pytest.raises(ValueError):
        mx.eval(a[make()])
    with pytest.raises(ValueError):
        b = mx.arange(6).reshape(2, 3)
        b[make()] = 1
        mx.eval(b)
    with pytest.raises(ValueError):
        mx.eval(a.at[make()].add(1))


@ember_only
def test_float_numpy_index_array_raises():
    a = mx.arange(6)
    with pytest.raises(ValueError):
        mx.eval(a[np.array([1.0])])


@pytest.mark.parametrize("index", [(0, 0, 0), (slice(None),) * 3,
                                   (0, Ellipsis, 0, 0),
                                   (None, 0, mx.array([0]), 0)])
def test_too_many_indices_raise(index):
    a = mx.arange(6).reshape(2, 3)
    with pytest.raises((IndexError, ValueError)):
        mx.eval(a[index])
    with pytest.raises((IndexError, ValueError)):
        a[index] = 1
    with pytest.raises((IndexError, ValueError)):
        mx.eval(a.at[index].add(1))


@pytest.mark.parametrize("index", [(0, 0, 0), (slice(None),) * 3,
                                   (0, Ellipsis, 0, 0)])
def test_too_many_indices_raise_value_error(index):
    """MLX's ValueError (NumPy raises IndexError)."""
    a = mx.arange(6).reshape(2, 3)
    with raises(ValueError, "Too many indices", mlx_msg=True):
        a[index]
    with raises(ValueError, "Too many indices", mlx_msg=True):
        a[index] = 1


def test_two_ellipses_raise_value_error():
    a = mx.arange(6).reshape(2, 3)
    with raises(ValueError, "single ellipsis", mlx_msg=True):
        a[..., 0, ...]


# --------------------------------------------------------------------------
# large inputs: the kernels' parallel paths
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n_dst", [4096, 1 << 23])
@pytest.mark.parametrize("method", ["add", "maximum", "minimum", "multiply"])
def test_large_scatter_matches_sequential_order(method, n_dst):
    """1M updates, many repeated: each position must see its updates in index
    order (Ember splits a large target across cores by destination), so
    float32 results equal NumPy's sequential ufunc.at bit for bit."""
    rng = np.random.default_rng(7)
    n_upd = 1 << 20
    x = rng.standard_normal(n_dst).astype(np.float32)
    idx = rng.integers(0, n_dst, n_upd).astype(np.int32)
    if n_dst > 4096:  # plenty of repeats in both halves of a big target
        idx[::2] = rng.integers(0, 64, n_upd // 2) * (n_dst // 64)
    upd = rng.uniform(0.999, 1.001, n_upd).astype(np.float32)
    if method == "add":
        upd = rng.standard_normal(n_upd).astype(np.float32)
    expected = x.copy()
    getattr(np, method).at(expected, idx, upd)
    got = getattr(mx.array(x).at[mx.array(idx)], method)(mx.array(upd))
    np.testing.assert_array_equal(to_numpy(got), expected)


def test_large_assign_last_write_wins():
    rng = np.random.default_rng(8)
    n = 1 << 18
    idx = rng.integers(0, 1000, n).astype(np.int32)
    vals = np.arange(n, dtype=np.int32)
    a = mx.zeros((1000,), dtype=mx.int32)
    a[mx.array(idx)] = mx.array(vals)
    expected = np.zeros(1000, np.int32)
    expected[idx] = vals  # NumPy: the last write wins
    if IS_MLX:  # MLX does not promise an order for repeated indices
        return
    np.testing.assert_array_equal(to_numpy(a), expected)


def test_large_gather_rows_and_elements():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4096, 64)).astype(np.float32)
    rows = rng.integers(-4096, 4096, 50000).astype(np.int64)
    assert_equal(mx.array(x)[mx.array(rows)], x[rows], "float32")
    flat = x.reshape(-1)
    el = rng.integers(0, flat.size, 1 << 20).astype(np.int32)
    assert_equal(mx.take(mx.array(flat), mx.array(el)), flat[el], "float32")
    # a strided source and a strided index array
    xt = x.T[::-1]
    cols = rng.integers(0, 4096, (300, 2)).astype(np.int32)[:, 0]
    assert_equal(mx.array(x).T[::-1][:, mx.array(cols)], xt[:, cols], "float32")


@ember_only
def test_large_out_of_range_is_found_by_any_thread():
    idx = np.arange(1 << 20, dtype=np.int64)
    idx[-3] = 1 << 20  # one bad value near the end (another thread's chunk)
    a = mx.zeros((1 << 20,))
    with raises(IndexError, "out of bounds"):
        mx.eval(a[mx.array(idx)])
    with raises(IndexError, "out of bounds"):
        mx.eval(a.at[mx.array(idx)].add(1.0))
    b = mx.arange(10)
    c = b + 0
    with raises(IndexError, "out of bounds"):
        mx.eval(c.at[mx.array([1, 99])].add(1))
    # a failed scatter leaves its input as it was
    assert c.tolist() == list(range(10))


# --------------------------------------------------------------------------
# slice_update: the window has the update's shape
# --------------------------------------------------------------------------

@pytest.mark.parametrize("shape,ushape,start,axes,ref", [
    # MLX: an update of shape (1, 2) at column 1 writes row 0 only
    ((2, 3), (1, 2), [1], [1], [[0, 1, 1], [0, 0, 0]]),
    ((2, 3), (1, 1), [1], [1], [[0, 1, 0], [0, 0, 0]]),
    ((2, 3), (2, 1), [1], [-1], [[0, 1, 0], [0, 1, 0]]),
    # a leading dim the update lacks: whole, or 1 along the listed axes
    ((2, 3), (2,), [1], [1], [[0, 1, 1], [0, 1, 1]]),
    ((2, 3), (3,), [1], [0], [[0, 0, 0], [1, 1, 1]]),
    ((2, 3), (), [1], [0], [[0, 0, 0], [1, 1, 1]]),
    ((2, 3), (), [1], [1], [[0, 1, 0], [0, 1, 0]]),
    ((2, 3), (1, 2), [], [], [[1, 1, 0], [0, 0, 0]]),
])
def test_slice_update_window_has_the_update_shape(shape, ushape, start, axes, ref):
    out = mx.slice_update(mx.zeros(shape, dtype=mx.int32), mx.ones(ushape, dtype=mx.int32),
                          mx.array(start, dtype=mx.int32), axes=axes)
    assert out.tolist() == ref


def test_slice_update_3d_window():
    x = np.zeros((2, 3, 4), np.int32)
    out = mx.slice_update(mx.array(x), mx.ones((1, 2), dtype=mx.int32), mx.array([1]), axes=[1])
    ref = x.copy()
    ref[:, 1:2, 0:2] = 1
    assert_equal(out, ref, "int32")
    out = mx.slice_update(mx.array(x), mx.ones((2, 2), dtype=mx.int32), mx.array([1]), axes=[1])
    ref = x.copy()
    ref[:, 1:3, 0:2] = 1
    assert_equal(out, ref, "int32")


def test_slice_update_update_larger_than_the_array_raises():
    with pytest.raises(ValueError):
        mx.eval(mx.slice_update(mx.zeros((2, 3)), mx.ones((3, 3)), mx.array([0]), axes=[0]))


def test_dynamic_slice_checks_axes_and_start_before_sizes():
    """MLX checks the axes and the start indices before the slice sizes."""
    a = mx.zeros((2, 3))
    with pytest.raises(IndexError):
        mx.slice(a, mx.array([0]), [2], [1])
    with pytest.raises(ValueError, match="integ"):
        mx.slice(a, mx.array([1.0]), [1], [2])
    with pytest.raises(IndexError):
        mx.slice_update(a, mx.ones((1, 2)), mx.array([1]), axes=[2])


@pytest.mark.parametrize("shape,index", [
    ((3,), 2 ** 31), ((3,), 2 ** 40), ((3,), -2 ** 40), ((3, 3), (0, 2 ** 40)),
    # MLX lets a C++ std::bad_cast out (RuntimeError) for ints beyond int64
    pytest.param((3,), 2 ** 63, marks=[ember_only]),
    ((3,), slice(0, 2 ** 31)), ((3,), slice(2 ** 40, None)), ((3,), slice(None, None, 2 ** 40)),
])
def test_index_beyond_int32_is_a_value_error(shape, index):
    """MLX: 'Slice indices must be 32-bit integers' (ValueError), for ints
    and slice bounds alike, in reads and writes."""
    with pytest.raises(ValueError, match="32-bit"):
        mx.eval(mx.zeros(shape)[index])
    a = mx.zeros(shape)
    with pytest.raises(ValueError, match="32-bit"):
        a[index] = 1.0
        mx.eval(a)


@pytest.mark.parametrize("index", [0, -1, [0], mx.array([0]), (mx.array([0]), 1)])
def test_take_from_an_empty_axis_is_a_value_error(index):
    """MLX: 'Cannot do a non-empty take from an empty axis' (ValueError)."""
    with pytest.raises(ValueError, match="empty"):
        mx.eval(mx.zeros((0, 3))[index])
    with pytest.raises(ValueError, match="empty axis"):
        mx.eval(mx.take(mx.zeros((0, 3)), mx.array([0]), axis=0))
    with pytest.raises(ValueError, match="empty axis"):
        mx.eval(mx.take(mx.zeros((0,)), mx.array([[0]])))
    assert mx.take(mx.zeros((0, 3)), mx.array([], dtype=mx.int32), axis=0).shape == (0, 3)


@pytest.mark.parametrize("index", [mx.array([0]), [0, 0]])
def test_setitem_into_an_empty_axis_is_a_value_error(index):
    """MLX: a non-empty write into an empty axis is a ValueError."""
    a = mx.zeros((0, 3))
    with pytest.raises(ValueError):
        a[index] = 1.0
        mx.eval(a)
    with pytest.raises(ValueError):
        mx.eval(mx.zeros((0, 3)).at[index].add(1.0))


@ember_only
def test_along_axis_on_an_empty_axis_raises():
    """MLX returns values read out of bounds (take_along_axis) or returns the
    array unchanged (put_along_axis); Ember raises the ValueError of take."""
    idx = mx.zeros((1, 3), dtype=mx.int32)
    with pytest.raises(ValueError, match="empty axis"):
        mx.eval(mx.take_along_axis(mx.zeros((0, 3)), idx, axis=0))
    with pytest.raises(ValueError, match="empty axis"):
        mx.eval(mx.put_along_axis(mx.zeros((0, 3)), idx, mx.ones((1, 3)), axis=0))


@ember_only
def test_slice_update_update_with_more_dims_raises():
    """MLX aborts the process (the dim difference underflows)."""
    with raises(ValueError, "slice_update.*more dims"):
        mx.slice_update(mx.zeros((2, 3)), mx.ones((1, 1, 2)), mx.array([1]), axes=[1])


@ember_only
def test_dynamic_slices_take_lists_and_scalars():
    """MLX's slice/slice_update take arrays only (TypeError for a list start
    or a scalar update); Ember converts them, as every op does."""
    a = mx.zeros((2, 3), dtype=mx.int32)
    assert mx.slice(mx.arange(6).reshape(2, 3), [1], [1], [2, 2]).tolist() == [[1, 2], [4, 5]]
    assert mx.slice_update(a, mx.ones((1, 2), dtype=mx.int32), [1], axes=[1]).tolist() == [[0, 1, 1], [0, 0, 0]]
    assert mx.slice_update(a, 5, mx.array([1]), axes=[1]).tolist() == [[0, 5, 0], [0, 5, 0]]
