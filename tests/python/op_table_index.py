"""Op-table entries: take, take_along_axis, put_along_axis, slice, slice_update,
diag, diagonal, trace.

Imported by op_table.py (at its end); entries register with ``add_op``.
Index arrays are pinned to an integer dtype with ``Fixed`` (several index
dtypes appear); negative indices count from the end. Out-of-range index
values raise IndexError on Ember when evaluated (MLX does not check: those
error rows are ember_only).
"""

import numpy as np

from conftest import ALL, DATA_DTYPES, IS_MLX, mx, mx_dtype
from op_table import Fixed, SampleInput, _e, _vals, add_op, sum_dtype

IDX_DTYPES = ["int32", "int64", "uint8", "int16", "uint32"]


def _idx(values, k=0):
    """Index values pinned to one of the integer dtypes (rotating)."""
    values = np.asarray(values)
    name = IDX_DTYPES[k % len(IDX_DTYPES)]
    if name.startswith("uint") and (values < 0).any():
        name = "int32"
    return Fixed(values.astype(np.int64), name)


def _rand_idx(rng, shape, n, negative=True):
    lo = -n if negative else 0
    return rng.integers(lo, n, size=shape) if n > 0 else np.zeros(shape, int)


def _arr(shape=(2, 3), dtype="float32"):
    return mx.zeros(shape, dtype=mx_dtype(dtype))


def _i(v, dtype=mx.int32):
    return mx.array(v, dtype)


# ---- take -------------------------------------------------------------------

def _take_samples(n, rng):
    out = []
    cases = [((7,), (5,), 0), ((7,), (), 0), ((3, 4), (2, 3), 0),
             ((3, 4), (5,), 1), ((3, 4), (2, 2), -1), ((2, 3, 4), (3,), 1),
             ((3, 4), (6,), None), ((2, 3, 4), (2, 2), None),
             ((3, 0), (2,), 0), ((3, 4), (0,), 1), ((4,), (3, 0), 0)]
    for k, (shape, ishape, axis) in enumerate(cases):
        x = _vals(shape, n, rng, (-50, 50))
        dim = x.size if axis is None else shape[axis]
        idx = _idx(_rand_idx(rng, ishape, dim), k)
        kw = {} if axis is None else {"axis": axis}
        out.append(SampleInput((x, idx), kw, desc=f"{shape} idx{ishape} axis={axis}"))
    x = _vals((5,), n, rng, (-50, 50))
    out.append(SampleInput((x, _idx([0, 0, 4, -5, 2, 2])), {"axis": 0}, desc="repeated and negative"))
    return out


def _take_ref(x, idx, axis=None):
    return np.take(x, idx, axis=axis)


add_op(name="take", op=mx.take, ref=_take_ref, dtypes=ALL, sample_inputs=_take_samples,
       family="index",
       error_inputs=lambda: [
           _e(lambda: ((_arr(), _i([0.5], mx.float32)), {"axis": 0}), ValueError, "integral",
              "float indices", mlx_msg=True),
           _e(lambda: ((_arr(), _i([0])), {"axis": 2}), IndexError, "take", "axis out of range"),
           _e(lambda: ((_arr(), _i([2])), {"axis": 0}), IndexError, "out of bounds",
              "index out of range", ember_only=True),
           _e(lambda: ((_arr(), _i([-3])), {"axis": 0}), IndexError, "out of bounds",
              "negative index out of range", ember_only=True),
           _e(lambda: ((_arr(), mx.array([2 ** 40], mx.int64)), {"axis": 1}), IndexError,
              "out of bounds", "huge index", ember_only=True),
           _e(lambda: ((_arr((0, 3)), _i([0])), {"axis": 0}), ValueError, "empty axis",
              "index into an empty axis", mlx_msg=True),
       ])


# ---- take_along_axis / put_along_axis ------------------------------------------

def _along_cases(rng):
    return [((4,), (6,), 0), ((3, 4), (3, 2), 1), ((3, 4), (5, 4), 0),
            ((3, 4), (1, 3), 1), ((3, 4), (3, 1), -1), ((2, 3, 4), (2, 3, 2), 2),
            ((2, 3, 4), (2, 5, 4), 1), ((3, 4), (3, 0), 1), ((3, 4), (12,), None)]


def _take_along_samples(n, rng):
    out = []
    for k, (shape, ishape, axis) in enumerate(_along_cases(rng)):
        x = _vals(shape, n, rng, (-50, 50))
        dim = x.size if axis is None else shape[axis]
        idx = _idx(_rand_idx(rng, ishape, dim), k)
        out.append(SampleInput((x, idx), {"axis": axis}, desc=f"{shape} idx{ishape} axis={axis}"))
    return out


def _take_along_ref(x, idx, axis=-1):
    if axis is None:
        return np.take_along_axis(x.reshape(-1), idx, axis=0)
    idx = np.broadcast_to(idx, tuple(i if d == (axis % x.ndim) else max(i, s)
                                     for d, (i, s) in enumerate(zip(idx.shape, x.shape))))
    xs = np.broadcast_to(x, tuple(s if d == (axis % x.ndim) else max(i, s)
                                  for d, (i, s) in enumerate(zip(idx.shape, x.shape))))
    return np.take_along_axis(xs, idx, axis=axis)


add_op(name="take_along_axis", op=mx.take_along_axis, ref=_take_along_ref, dtypes=ALL,
       sample_inputs=_take_along_samples, family="index",
       error_inputs=lambda: [
           _e(lambda: ((_arr(), _i([[0]], mx.float32)), {"axis": 1}), ValueError, "integral",
              "float indices (MLX accepts them)", ember_only=True),
           _e(lambda: ((_arr(), _i([0])), {"axis": 1}), ValueError, "dimension",
              "rank mismatch", mlx_msg=True),
           _e(lambda: ((_arr(), _i([[0, 0]])), {"axis": 3}), IndexError, "take_along_axis",
              "axis out of range"),
           _e(lambda: ((_arr(), _i([[3]])), {"axis": 1}), IndexError, "out of bounds",
              "index out of range", ember_only=True),
           _e(lambda: ((_arr(), _i([[0, 0]] * 3)), {"axis": 1}), ValueError, "broadcast",
              "shapes do not broadcast", ember_only=True),
       ])


def _put_along_samples(n, rng):
    out = []
    for k, (shape, ishape, axis) in enumerate(_along_cases(rng)):
        if axis is not None and any(i > s for d, (i, s) in enumerate(zip(ishape, shape))
                                    if d != axis % len(shape)):
            continue  # put cannot grow the array
        x = _vals(shape, n, rng, (-50, 50))
        dim = x.size if axis is None else shape[axis]
        # distinct indices per line so the written value is unambiguous
        if axis is None:
            idx = rng.permutation(dim)[:ishape[0]]
        else:
            ax = axis % len(shape)
            m = min(ishape[ax], dim)
            ishape = tuple(m if d == ax else i for d, i in enumerate(ishape))
            perm = np.argsort(rng.random(ishape[:ax] + (dim,) + ishape[ax + 1:]), axis=ax)
            idx = np.take(perm, np.arange(m), axis=ax)
            idx = np.where(rng.random(idx.shape) < 0.5, idx - dim, idx)  # some negative
        vshape = idx.shape
        v = _vals(vshape, n, rng, (-50, 50))
        out.append(SampleInput((x, _idx(idx, k), v), {"axis": axis},
                               desc=f"{shape} idx{idx.shape} axis={axis}"))
        out.append(SampleInput((x, _idx(idx, k + 1), Fixed(np.asarray(7), "int32")), {"axis": axis},
                               desc=f"{shape} scalar value axis={axis}"))
    return out


def _put_along_ref(x, idx, values, axis=None, _name=None):
    r = np.array(x, copy=True)
    if axis is None:
        flat = r.reshape(-1)
        flat[idx] = np.asarray(values).astype(r.dtype)
        return flat.reshape(x.shape)
    ax = axis % x.ndim
    full = tuple(s if d == ax else x.shape[d] for d, s in enumerate(idx.shape))
    idx = np.broadcast_to(idx, full)
    values = np.broadcast_to(np.asarray(values).astype(r.dtype), full)
    np.put_along_axis(r, idx, values, axis=ax)
    return r


add_op(name="put_along_axis", op=mx.put_along_axis, ref=_put_along_ref, dtypes=ALL,
       sample_inputs=_put_along_samples, family="index", ref_gets_dtype=True,
       error_inputs=lambda: [
           _e(lambda: ((_arr(), _i([[0]], mx.float32), _arr((1, 1))), {"axis": 1}), ValueError,
              "integral", "float indices (MLX accepts them)", ember_only=True),
           _e(lambda: ((_arr(), _i([[5]]), _arr((1, 1))), {"axis": 1}), IndexError,
              "out of bounds", "index out of range", ember_only=True),
           _e(lambda: ((_arr(), _i([[0]]), _arr((2, 2))), {"axis": 1}), ValueError,
              "broadcast", "values do not broadcast", ember_only=True),
       ])


# ---- slice / slice_update (dynamic starts) -------------------------------------

def _slice_samples(n, rng):
    out = []
    cases = [((7,), [2], (0,), (3,)), ((3, 4), [1, 2], (0, 1), (2, 2)),
             ((3, 4), [1], (0,), (2, 4)), ((3, 4), [2], (1,), (3, 2)),
             ((2, 3, 4), [1, 0], (2, 0), (1, 3, 3)), ((3, 4), [0], (0,), (0, 4))]
    if not IS_MLX:  # negative starts count from the end (MLX crashes on them)
        cases.append(((5,), [-2], (0,), (2,)))
    for k, (shape, start, axes, size) in enumerate(cases):
        x = _vals(shape, n, rng, (-50, 50))
        out.append(SampleInput((x, _idx(start, k), axes, size), desc=f"{shape} start={start} axes={axes}"))
    return out


def _slice_ref(x, start, axes, size):
    sl = [slice(0, s) for s in size]
    for st, ax in zip(np.asarray(start).reshape(-1), axes):
        st = int(st) + (x.shape[ax] if st < 0 else 0)
        sl[ax] = slice(st, st + size[ax])
    return x[tuple(sl)]


add_op(name="slice", op=mx.slice, ref=_slice_ref, dtypes=DATA_DTYPES, sample_inputs=_slice_samples,
       family="index", mlx_layouts=None,
       error_inputs=lambda: [
           _e(lambda: ((_arr(), _i([0]), (0,), (2,)), {}), ValueError, "slice",
              "slice_size shorter than ndim", mlx_msg=True),
           _e(lambda: ((_arr(), _i([0]), (0,), (3, 3)), {}), ValueError, "slice",
              "slice size larger than the dim"),
           _e(lambda: ((_arr(), _i([1]), (0,), (2, 3)), {}), IndexError, "out of bounds",
              "window runs past the end", ember_only=True),
           _e(lambda: ((_arr(), _i([-3]), (0,), (1, 3)), {}), IndexError, "out of bounds",
              "negative start past the front", ember_only=True),
       ])


def _slice_update_samples(n, rng):
    out = []
    cases = [((7,), (3,), [2], (0,)), ((3, 4), (2, 2), [1, 2], (0, 1)),
             ((3, 4), (2,), [1], (1,)), ((3, 4), (1, 4), [2], (0,)),
             ((2, 3, 4), (2, 1, 4), [1], (1,)),
             # the window has the update's shape: no broadcast over unlisted dims
             ((2, 3), (1, 2), [1], (1,)), ((2, 3, 4), (1, 2), [1], (1,)),
             ((2, 3, 4), (2,), [1], (1,)), ((3, 4), (2, 1), [1], (1,)),
             ((3, 4), (1, 2), [], ())]
    if not IS_MLX:  # negative starts count from the end (MLX crashes on them)
        cases.append(((5,), (2,), [-2], (0,)))
    for k, (shape, ushape, start, axes) in enumerate(cases):
        x = _vals(shape, n, rng, (-50, 50))
        u = _vals(ushape, n, rng, (-50, 50))
        out.append(SampleInput((x, u, _idx(start, k), axes), desc=f"{shape} update{ushape} start={start}"))
    return out


def _slice_update_ref(x, u, start, axes):
    r = np.array(x, copy=True)
    u = np.asarray(u)
    lead = x.ndim - u.ndim
    # the window: the update's dims (trailing-aligned); a leading dim the
    # update lacks is whole, or 1 along axes
    win = list(x.shape[:lead]) + list(u.shape)
    for ax in axes:
        if ax < lead:
            win[ax] = 1
    sl = [slice(0, w) for w in win]
    for st, ax in zip(np.asarray(start).reshape(-1), axes):
        st = int(st) + (x.shape[ax] if st < 0 else 0)
        sl[ax] = slice(st, st + win[ax])
    r[tuple(sl)] = np.broadcast_to(u, tuple(win))
    return r


add_op(name="slice_update", op=mx.slice_update, ref=_slice_update_ref, dtypes=DATA_DTYPES,
       sample_inputs=_slice_update_samples, family="index",
       error_inputs=lambda: [
           _e(lambda: ((_arr(), _arr((1, 2)), _i([2]), (1,)), {}), IndexError, "out of bounds",
              "window runs past the end", ember_only=True),
           _e(lambda: ((_arr(), _arr((1, 4)), _i([0]), (1,)), {}), ValueError, "slice_update",
              "update larger than the array", ember_only=True),
           _e(lambda: ((_arr(), _arr((1, 1)), _i([0.5], mx.float32), (1,)), {}), ValueError,
              "integral", "float start", ember_only=True),
       ])


# ---- diag / diagonal / trace ---------------------------------------------------

def _diagonal_samples(n, rng):
    out = []
    for shape, kw in [((3, 4), {}), ((4, 3), {"offset": 1}), ((4, 3), {"offset": -2}),
                      ((3, 3), {"offset": 5}), ((2, 3, 4), {"axis1": 1, "axis2": 2}),
                      ((2, 3, 4), {"axis1": 2, "axis2": 0, "offset": 1}),
                      ((2, 3, 4), {"axis1": -1, "axis2": -3}), ((0, 3), {}), ((3, 4), {"offset": -3})]:
        out.append(SampleInput((_vals(shape, n, rng, (-50, 50)),), kw, desc=f"{shape} {kw}"))
    return out


def _diagonal_ref(x, offset=0, axis1=0, axis2=1):
    return np.diagonal(x, offset, axis1, axis2)


add_op(name="diagonal", op=mx.diagonal, ref=_diagonal_ref, dtypes=ALL, sample_inputs=_diagonal_samples,
       family="index",
       error_inputs=lambda: [
           _e(lambda: ((_arr((3,)),), {}), ValueError, "diagonal", "1-d input", mlx_msg=True),
           _e(lambda: ((_arr(),), {"axis1": 1, "axis2": 1}), ValueError, "diagonal", "same axes",
              mlx_msg=True),
           _e(lambda: ((_arr(),), {"axis2": 2}), IndexError, "diagonal", "axis out of range"),
       ])


def _diag_samples(n, rng):
    out = []
    for shape, k in [((3,), 0), ((3,), 2), ((3,), -1), ((1,), 0), ((0,), 1), ((3, 4), 0), ((3, 4), 1),
                     ((4, 3), -2), ((3, 3), 4)]:
        kw = {} if k == 0 else {"k": k}
        out.append(SampleInput((_vals(shape, n, rng, (-50, 50)),), kw, desc=f"{shape} k={k}"))
    return out


add_op(name="diag", op=mx.diag, ref=lambda x, k=0: np.diag(x, k), dtypes=ALL, sample_inputs=_diag_samples,
       family="index",
       error_inputs=lambda: [
           _e(lambda: ((_arr(()),), {}), ValueError, "diag", "0-d input", mlx_msg=True),
           _e(lambda: ((_arr((2, 2, 2)),), {}), ValueError, "diag", "3-d input", mlx_msg=True),
       ])


def _trace_samples(n, rng):
    out = []
    for shape, kw in [((3, 4), {}), ((4, 4), {"offset": 1}), ((4, 3), {"offset": -1}),
                      ((2, 3, 4), {"axis1": 1, "axis2": 2}), ((3, 3), {"offset": 7}), ((0, 0), {})]:
        out.append(SampleInput((_vals(shape, n, rng, (-5, 5)),), kw, desc=f"{shape} {kw}"))
    if n != "complex64":
        out.append(SampleInput((_vals((3, 3), n, rng, (-5, 5)),), {"dtype": mx.float32},
                               desc="dtype=float32", out_dtype="float32"))
    return out


def _trace_ref(x, offset=0, axis1=0, axis2=1, dtype=None):
    d = np.diagonal(x, offset, axis1, axis2)
    if d.dtype == np.bool_:
        d = d.astype(np.int64)
    return d.sum(axis=-1)


add_op(name="trace", op=mx.trace, ref=_trace_ref, dtypes=ALL, sample_inputs=_trace_samples,
       out_dtype=sum_dtype, family="index",
       error_inputs=lambda: [
           _e(lambda: ((_arr((3,)),), {}), ValueError, "diagonal", "1-d input"),
       ])
