"""Op-table entries: einsum and contractions, window functions, diff, flip, roll.

Imported by op_table.py (at its end); entries register with ``add_op``.

Contraction samples use values whose products and short sums are exact in
every dtype (eighths in [-2, 2] for float32/float64/complex64, small
integers for float16/bfloat16 and the integer dtypes), so the comparison
does not depend on the summation order.  MLX's matmul rejects integer and
bool operands, so every MLX op that contracts through matmul (einsum with a
summed shared index, tensordot, inner) raises for them; Ember's matmul
supports them and those cases are Ember-only (extra samples when the
backend is Ember, ``mlx_wrong_dtypes`` for tensordot/inner).
"""

import numpy as np

from conftest import (ALL, BOOL, DATA_DTYPES, INEXACT, INTS, IS_MLX, NP_CARRIER,
                      SINTS, UINTS, mx, mx_dtype)
from op_table import SampleInput, _e, add_op, sum_dtype

NOT_INEXACT = BOOL + INTS


def _exact(shape, n, rng):
    """Random values of mx dtype ``n`` whose products/sums stay exact."""
    shape = tuple(shape)
    if n == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if n in UINTS:
        return np.asarray(rng.integers(0, 3, size=shape)).astype(NP_CARRIER[n])
    if n in SINTS:
        return np.asarray(rng.integers(-2, 3, size=shape)).astype(NP_CARRIER[n])
    if n in ("float16", "bfloat16"):
        return np.asarray(rng.integers(-2, 3, size=shape)).astype(np.float32)
    if n == "complex64":
        re = rng.integers(-16, 17, size=shape) / 8
        im = rng.integers(-16, 17, size=shape) / 8
        return np.asarray(re + 1j * im).astype(np.complex64)
    return np.asarray(rng.integers(-16, 17, size=shape) / 8).astype(NP_CARRIER[n])


def _wide(x):
    """Integers and bools as int64 (the result is wrapped/cast to the output
    dtype by the harness; modular arithmetic makes that exact)."""
    return x.astype(np.int64) if x.dtype.kind in "biu" else x


def _arr(shape=(2, 3), dtype="float32"):
    return mx.zeros(shape, dtype=mx_dtype(dtype))


# ---- einsum ------------------------------------------------------------------

def _einsum_terms(sub, shapes):
    """Per-operand label lists and the output labels (ellipsis dims become
    ('.', k) labels, right-aligned), as einsum reads ``sub``."""
    sub = sub.replace(" ", "")
    lhs, arrow, rhs = sub.partition("->")
    terms = lhs.split(",")
    max_ell = 0
    for t, s in zip(terms, shapes):
        if "..." in t:
            max_ell = max(max_ell, len(s) - len(t.replace("...", "")))

    def expand(t, ell):
        if "..." not in t:
            return list(t)
        a, b = t.split("...")
        return list(a) + [(".", k) for k in range(max_ell - ell, max_ell)] + list(b)

    labels = [expand(t, len(s) - len(t.replace("...", "")))
              for t, s in zip(terms, shapes)]
    if arrow:
        out = expand(rhs, max_ell)
    else:
        flat = [c for t in terms for c in t.replace("...", "")]
        out = [(".", k) for k in range(max_ell)] + sorted(
            c for c in set(flat) if flat.count(c) == 1)
    return labels, out


def _einsum_kind(sub, shapes):
    """(contracts, sums): whether MLX contracts a shared index through
    matmul, and whether an index held by one operand is summed (sum's dtype
    rules apply then: small ints accumulate in 32 bits)."""
    labels, out = _einsum_terms(sub, shapes)
    size = {}
    for ls, s in zip(labels, shapes):
        for l, d in zip(ls, s):
            size[l] = d if size.get(l, 1) == 1 else size[l]
    raw = [set(ls) for ls in labels]
    eff = [set(l for l, d in zip(ls, s) if d != 1 or size[l] == 1)
           for ls, s in zip(labels, shapes)]
    contracts = any(sum(l in r for r in raw) >= 2
                    for l in size if l not in out)
    sums = any(sum(l in e for e in eff) == 1 for l in size if l not in out)
    return contracts, sums


EINSUM_CASES = [
    # one operand: transposes, diagonals, traces, sums, 0-d, empty
    ("ij->ji", [(2, 3)]), ("ij", [(3, 4)]), ("ji", [(2, 3)]),
    ("ii", [(3, 3)]), ("ii->i", [(4, 4)]), ("iij->ji", [(3, 3, 2)]),
    ("ijij->ij", [(2, 3, 2, 3)]), ("ij->", [(3, 4)]), ("ij->i", [(3, 4)]),
    ("i->", [(5,)]), ("", [()]), ("->", [()]), ("...->...", [(2, 3)]),
    ("i...->...", [(3, 2, 2)]), ("...ii->...i", [(2, 3, 3)]),
    ("ij->j", [(0, 3)]), ("ii->i", [(0, 0)]), ("ijk->kji", [(2, 3, 4)]),
    ("i j -> j i", [(2, 3)]), ("Ab->bA", [(2, 3)]),
    # two operands, nothing contracted: products with broadcasting
    ("i,j->ij", [(3,), (4,)]), ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("i,->i", [(3,), ()]), (",->", [(), ()]), (",", [(), ()]),
    ("ij,j->ij", [(2, 3), (3,)]), ("ij,ij->ij", [(2, 1), (1, 3)]),
    ("...i,...i->...i", [(2, 3), (3,)]), ("i,j", [(0,), (3,)]),
    ("I,i", [(2,), (3,)]), ("i,i,i->i", [(4,), (4,), (4,)]),
    ("a,b,c->abc", [(2,), (3,), (2,)]),
    # contractions (matmul)
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]), ("ji,jk->ki", [(3, 2), (3, 4)]),
    ("i,i", [(5,), (5,)]), ("i,i->", [(5,), (5,)]),
    ("ij,ij->", [(3, 4), (3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bkj->kbi", [(2, 3, 4), (2, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij,...jk", [(3, 2, 4), (4, 2)]),
    ("ijk,jil->kl", [(3, 4, 2), (4, 3, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 2), (2, 3)]),
    ("ab,bc,cd,de,ef->af", [(2, 3), (3, 2), (2, 4), (4, 2), (2, 3)]),
    ("abc,bcd,def,fa->e", [(2, 3, 2), (3, 2, 2), (2, 3, 2), (2, 2)]),
    ("ii,ij->j", [(3, 3), (3, 4)]), ("ij,j->", [(3, 4), (4,)]),
    ("i,i", [(2,), (1,)]), ("ij,jk,k", [(3, 3), (3, 3), (3,)]),
    ("ij,jk->ik", [(0, 3), (3, 4)]), ("ij,jk->ik", [(2, 0), (0, 4)]),
    ("a,ab,bc->c", [(2,), (2, 3), (3, 4)]),
    ("ij,kl,jk->il", [(2, 3), (4, 2), (3, 4)]),
    ("bi,bj->bij", [(3, 2), (3, 4)]),
]


def _einsum_samples(n, rng):
    out = []
    for sub, shapes in EINSUM_CASES:
        contracts, sums = _einsum_kind(sub, shapes)
        if contracts and n not in INEXACT and IS_MLX:
            continue  # MLX's matmul rejects integer/bool operands
        xs = tuple(_exact(s, n, rng) for s in shapes)
        out.append(SampleInput((sub,) + xs, desc=f"{sub!r} {shapes}",
                               out_dtype=sum_dtype(n) if sums else n))
    return out


def _einsum_ref(sub, *ops):
    return np.einsum(sub, *[_wide(o) for o in ops])


def _einsum_errors():
    return [
        _e(lambda: (("ijk", _arr()), {}), ValueError, "einsum",
           "too many subscripts", mlx_msg=True),
        _e(lambda: (("ij,jk", _arr()), {}), ValueError, "Number of operands",
           "operand count", mlx_msg=True),
        _e(lambda: (("ij,jk->ik", _arr(), _arr((4, 5))), {}), ValueError,
           "Cannot broadcast dimension", "size mismatch", mlx_msg=True),
        _e(lambda: (("ii", _arr()), {}), ValueError,
           "do not have the same size", "non-square diagonal", mlx_msg=True),
        _e(lambda: (("i1", _arr()), {}), ValueError,
           "Subscripts must be letters", "digit", mlx_msg=True),
        _e(lambda: (("ij->i->j", _arr()), {}), ValueError,
           "Subscripts must be letters", "two arrows", mlx_msg=True),
        _e(lambda: (("ij->ii", _arr()), {}), ValueError,
           "Repeat indices not allowed in output", "repeated output",
           mlx_msg=True),
        _e(lambda: (("ij->k", _arr()), {}), ValueError, "does not appear",
           "output index not in the inputs"),
        _e(lambda: (("ij",), {}), ValueError, "At least one operand",
           "no operands", mlx_msg=True),
        _e(lambda: (("...i...", _arr()), {}), ValueError,
           "Only one ellipsis", "two ellipses", mlx_msg=True),
        _e(lambda: (("...ijk", _arr()), {}), ValueError,
           "insufficient dimensions", "ellipsis with too few dims",
           mlx_msg=True),
        _e(lambda: (("i.j", _arr()), {}), ValueError,
           "Subscripts must be letters", "lone dot", mlx_msg=True),
    ]


add_op(name="einsum", op=mx.einsum, ref=_einsum_ref, dtypes=ALL,
       sample_inputs=_einsum_samples, family="contract",
       error_inputs=_einsum_errors)


# ---- tensordot / inner / outer / kron / vecdot -----------------------------------

def _pair_samples(cases):
    """cases: list of (shape_a, shape_b, extra args, kwargs)."""
    def gen(n, rng):
        return [SampleInput((_exact(sa, n, rng), _exact(sb, n, rng)) + tuple(rest),
                            dict(kw), desc=f"{sa} {sb} {rest} {kw}")
                for sa, sb, rest, kw in cases]
    return gen


def _tensordot_ref(a, b, axes=2):
    return np.tensordot(_wide(a), _wide(b), axes)


add_op(name="tensordot", op=mx.tensordot, ref=_tensordot_ref, dtypes=ALL,
       mlx_wrong_dtypes=NOT_INEXACT, family="contract",
       sample_inputs=_pair_samples([
           ((2, 3), (3, 4), (1,), {}), ((2, 3, 4), (3, 4, 5), (), {}),
           ((2, 3), (2, 3), (), {}), ((2, 3), (3, 4), (0,), {}),
           ((2, 3, 4), (4, 2, 5), ([[0, 2], [1, 0]],), {}),
           ((2, 3, 4), (4, 2, 5), (), {"axes": ((0, 2), (1, 0))}),
           ((2, 3, 4), (4, 2, 5), ([[-1], [0]],), {}),
           ((2, 3), (3, 4), ([[], []],), {}), ((), (3, 3), (0,), {}),
           ((2, 0), (0, 3), (1,), {}), ((0, 3), (3, 2), (1,), {}),
           ((3,), (3,), (1,), {}),
       ]),
       error_inputs=lambda: [
           _e(lambda: ((_arr(), _arr((3, 4)), -1), {}), ValueError,
              "tensordot", "negative axes", mlx_msg=True),
           _e(lambda: ((_arr(), _arr((3, 4)), 3), {}), ValueError,
              "tensordot", "more axes than dims", mlx_msg=True),
           _e(lambda: ((_arr(), _arr((3, 4))), {}), ValueError,
              "same shape on the contracted axes", "shape mismatch",
              mlx_msg=True),
           _e(lambda: ((_arr(), _arr((3, 4)), [[0, 1], [0]]), {}),
              ValueError, "same size", "axes of different lengths",
              mlx_msg=True),
           _e(lambda: ((_arr(), _arr((3, 4)), [[0], [0], [1]]), {}),
              ValueError, "two lists", "three axes lists", mlx_msg=True),
           _e(lambda: ((_arr(), _arr((3, 4)), [[2], [0]]), {}), IndexError,
              "tensordot", "axis out of range"),
           _e(lambda: ((_arr((3, 3)), _arr((3, 3)), [[0, 0], [0, 1]]), {}),
              ValueError, "Repeated axis", "repeated axis"),
       ])


def _inner_ref(a, b):
    return np.inner(_wide(a), _wide(b))


add_op(name="inner", op=mx.inner, ref=_inner_ref, dtypes=ALL,
       mlx_wrong_dtypes=NOT_INEXACT, family="contract",
       sample_inputs=_pair_samples([
           ((3,), (3,), (), {}), ((2, 3), (4, 3), (), {}),
           ((2, 5, 3), (4, 3), (), {}), ((), (3,), (), {}),
           ((2, 2), (), (), {}), ((), (), (), {}), ((2, 0), (3, 0), (), {}),
           ((0, 3), (3,), (), {}),
       ]),
       error_inputs=lambda: [
           _e(lambda: ((_arr((3,)), _arr((4,))), {}), ValueError,
              "same last dimension", "last dims differ", mlx_msg=True)])


def _outer_ref(a, b):
    return np.outer(_wide(a), _wide(b))


add_op(name="outer", op=mx.outer, ref=_outer_ref, dtypes=ALL,
       family="contract",
       sample_inputs=_pair_samples([
           ((3,), (4,), (), {}), ((2, 3), (2, 2), (), {}), ((), (3,), (), {}),
           ((), (), (), {}), ((0,), (3,), (), {}), ((2, 2), (), (), {}),
       ]),
       error_inputs=lambda: [
           _e(lambda: ((_arr(), "x"), {}), (TypeError, ValueError), None,
              "not an array")])


def _kron_ref(a, b):
    return np.kron(_wide(a), _wide(b))


add_op(name="kron", op=mx.kron, ref=_kron_ref, dtypes=ALL, family="contract",
       sample_inputs=_pair_samples([
           ((2, 2), (2, 3), (), {}), ((2,), (3,), (), {}),
           ((2,), (2, 2), (), {}), ((2, 1, 3), (2,), (), {}),
           ((), (2, 2), (), {}), ((), (), (), {}), ((3, 2), (1, 1), (), {}),
       ]),
       error_inputs=lambda: [
           _e(lambda: ((_arr((0, 2)), _arr((2, 2))), {}), ValueError,
              "cannot be empty", "empty a", mlx_msg=True),
           _e(lambda: ((_arr((2, 2)), _arr((0,))), {}), ValueError,
              "cannot be empty", "empty b", mlx_msg=True)])


def _vecdot_ref(a, b, axis=-1):
    a, b = _wide(a), _wide(b)
    a = np.moveaxis(a, axis, -1)
    b = np.moveaxis(b, axis, -1)
    return np.sum(np.conj(a) * b, axis=-1)


add_op(name="vecdot", op=mx.vecdot, ref=_vecdot_ref, dtypes=ALL,
       out_dtype=sum_dtype, family="contract",
       sample_inputs=_pair_samples([
           ((3,), (3,), (), {}), ((2, 3), (2, 3), (), {}),
           ((1, 3), (4, 3), (), {}), ((3, 2), (3, 1), (), {"axis": 0}),
           ((2, 3), (2, 3), (), {"axis": -2}), ((0,), (0,), (), {}),
           ((2, 0), (2, 0), (), {}), ((2, 4, 3), (1, 4, 1), (), {"axis": 1}),
       ]),
       error_inputs=lambda: [
           _e(lambda: ((mx.array(2.0), mx.array(3.0)), {}), ValueError,
              "at least 1D", "0-d", mlx_msg=True),
           _e(lambda: ((_arr((3, 2)), _arr((3, 3))), {}), ValueError,
              "same size along axis", "size mismatch", mlx_msg=True),
           _e(lambda: ((_arr((3, 2)), _arr((3, 2))), {"axis": 2}),
              IndexError, "vecdot", "axis out of range", mlx_msg=True)])


# ---- layout: matrix_transpose, permute_dims, unstack, flip ------------------------

def _one_samples(cases):
    """cases: list of (shape, extra args, kwargs)."""
    def gen(n, rng):
        return [SampleInput((_exact(s, n, rng),) + tuple(rest), dict(kw),
                            desc=f"{s} {rest} {kw}") for s, rest, kw in cases]
    return gen


add_op(name="matrix_transpose", op=mx.matrix_transpose,
       ref=lambda x: np.swapaxes(x, -1, -2), dtypes=DATA_DTYPES,
       family="shape",
       sample_inputs=_one_samples([((2, 3), (), {}), ((2, 3, 4), (), {}),
                                   ((0, 3), (), {}), ((1, 2, 0, 5), (), {})]),
       error_inputs=lambda: [
           _e(lambda: ((_arr((3,)),), {}), ValueError, "at least 2 dimensions",
              "1-d", mlx_msg=True),
           _e(lambda: ((mx.array(1.0),), {}), ValueError,
              "at least 2 dimensions", "0-d", mlx_msg=True)])


def _permute_ref(x, axes=None):
    return np.transpose(x, axes)


add_op(name="permute_dims", op=mx.permute_dims, ref=_permute_ref,
       dtypes=DATA_DTYPES, family="shape",
       sample_inputs=_one_samples([
           ((2, 3, 4), ((2, 0, 1),), {}), ((2, 3), (), {}),
           ((2, 3, 4), (), {"axes": [1, -1, 0]}), ((), (), {}),
           ((0, 2), ((1, 0),), {})]),
       error_inputs=lambda: [
           _e(lambda: ((_arr(), (0,)), {}), ValueError, "permute_dims|transpose",
              "wrong number of axes", mlx_msg=True),
           _e(lambda: ((_arr(), (0, 0)), {}), ValueError, "transpose|permute",
              "repeated axes", mlx_msg=True),
           _e(lambda: ((_arr(), (0, 2)), {}), IndexError, "transpose|permute",
              "axis out of range", mlx_msg=True)])


def _unstack_ref(x, axis=0):
    return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


add_op(name="unstack", op=mx.unstack, ref=_unstack_ref, dtypes=DATA_DTYPES,
       family="shape", multi_output=True,
       sample_inputs=_one_samples([
           ((3, 4), (), {}), ((3, 4), (), {"axis": 1}),
           ((2, 3, 4), (), {"axis": -1}), ((3,), (), {}),
           ((0, 3), (), {}), ((0, 3), (), {"axis": 1})]),
       error_inputs=lambda: [
           _e(lambda: ((mx.array(1.0),), {}), IndexError, "unstack",
              "0-d", mlx_msg=True),
           _e(lambda: ((_arr(),), {"axis": 2}), IndexError, "unstack",
              "axis out of range", mlx_msg=True)])


def _flip_ref(x, axis=None):
    if axis is None:
        return np.flip(x).copy()
    axes = {a % x.ndim for a in ([axis] if isinstance(axis, int) else axis)}
    return np.flip(x, tuple(sorted(axes))).copy() if axes else x.copy()


add_op(name="flip", op=mx.flip, ref=_flip_ref, dtypes=DATA_DTYPES,
       family="shape",
       sample_inputs=_one_samples([
           ((3, 4), (), {}), ((3, 4), (0,), {}), ((3, 4), (-1,), {}),
           ((2, 3, 4), ((0, 2),), {}), ((2, 3, 4), (), {"axis": [1]}),
           ((3, 4), ([],), {}), ((3, 4), ((0, 0),), {}), ((), (), {}),
           ((0, 3), (), {}), ((1, 5), (), {}), ((7,), (), {})]),
       error_inputs=lambda: [
           _e(lambda: ((_arr(), 2), {}), IndexError, "flip",
              "axis out of range", mlx_msg=True),
           _e(lambda: ((mx.array(1.0), 0), {}), IndexError, "flip",
              "axis of a 0-d array", mlx_msg=True)])


# ---- diff / roll -------------------------------------------------------------------

def _diff_ref(x, n=1, axis=-1):
    if x.dtype == np.bool_:
        for _ in range(n):
            x = np.not_equal(np.take(x, range(1, x.shape[axis]), axis=axis),
                             np.take(x, range(0, x.shape[axis] - 1), axis=axis))
        return x
    return np.diff(x, n=n, axis=axis)


add_op(name="diff", op=mx.diff, ref=_diff_ref, dtypes=ALL, family="shape",
       sample_inputs=_one_samples([
           ((5,), (), {}), ((3, 4), (), {}), ((3, 4), (2, 0), {}),
           ((3, 4), (), {"n": 0}), ((3, 4), (3, 0), {}), ((3, 4), (7, 0), {}),
           ((3, 4), (), {"n": 2, "axis": -2}), ((6,), (5,), {}),
           ((0, 3), (), {}), ((0, 3), (1, 0), {}), ((2, 3, 4), (1, 1), {})]),
       error_inputs=lambda: [
           _e(lambda: ((_arr(), -1), {}), ValueError, "non-negative",
              "negative n", mlx_msg=True),
           _e(lambda: ((_arr(), 1, 2), {}), IndexError, "diff",
              "axis out of range", mlx_msg=True),
           _e(lambda: ((mx.array(1.0),), {}), IndexError, "diff", "0-d",
              mlx_msg=True)])


def _roll_ref(x, shift, axis=None):
    if axis is None:
        total = shift if isinstance(shift, int) else sum(shift)
        return np.roll(x, total)
    if isinstance(axis, int):
        total = shift if isinstance(shift, int) else sum(shift)
        return np.roll(x, total, axis)
    axis = tuple(axis)
    shifts = [shift] * len(axis) if isinstance(shift, int) else \
        list(shift)[:len(axis)]
    for s, a in zip(shifts, axis):
        x = np.roll(x, s, a)
    return x


add_op(name="roll", op=mx.roll, ref=_roll_ref, dtypes=DATA_DTYPES,
       family="shape",
       sample_inputs=_one_samples([
           ((3, 4), (1,), {}), ((3, 4), (-1,), {}), ((3, 4), (13,), {}),
           ((3, 4), (1, 0), {}), ((3, 4), (1, (0, 1)), {}),
           ((3, 4), ((1, 2), (0, 1)), {}), ((3, 4), ((1, 2),), {}),
           ((3, 4), ((1, 1), 0), {}), ((3, 4), ((1, 2, 3), (0, 1)), {}),
           ((3, 4), ((1, 2), (0, 0)), {}), ((3, 4), (-13, 1), {}),
           ((3, 4), (1, ()), {}), ((), (1,), {}), ((0, 3), (1,), {}),
           ((0, 3), (1, 1), {}), ((2, 3, 4), (-100,), {}),
           ((3, 4), (), {"shift": 2, "axis": -1}), ((5,), ([2],), {})]),
       error_inputs=lambda: [
           _e(lambda: ((_arr(), 1, 2), {}), IndexError, "roll",
              "axis out of range", mlx_msg=True),
           _e(lambda: ((mx.array(1.0), 1, 0), {}), IndexError, "roll",
              "axis of a 0-d array", mlx_msg=True),
           _e(lambda: ((_arr(), (1,), (0, 1)), {}), ValueError,
              "At least one shift value per axis", "too few shifts",
              mlx_msg=True),
           _e(lambda: ((_arr(), 1.5), {}), TypeError, None, "float shift")])


# ---- window functions ---------------------------------------------------------------

def _window_samples(n, rng):
    return [SampleInput((m,), desc=f"M={m}") for m in (-3, 0, 1, 2, 5, 8, 51)] + \
        [SampleInput((), {"M": 6}, desc="M by keyword")]


def _window_ref(fn):
    def ref(M):
        return fn(M).astype(np.float64) if M > 0 else np.zeros(0)
    return ref


for _w, _fn in [("bartlett", np.bartlett), ("blackman", np.blackman),
                ("hamming", np.hamming), ("hanning", np.hanning)]:
    add_op(name=_w, op=getattr(mx, _w), ref=_window_ref(_fn), dtypes=["float32"],
           sample_inputs=_window_samples, family="creation", layouts=False,
           differentiable=False,
           error_inputs=lambda _w=_w: [
               _e(lambda: ((2.5,), {}), TypeError, None, "float M"),
               _e(lambda: (("5",), {}), TypeError, None, "str M")])
