"""einsum / einsum_path and the composite ops of ops/contract.cpp: what the
op table (op_table_contract.py) cannot express.

* einsum against np.einsum on a large set of subscripts (traces, diagonals,
  ellipsis broadcasting, outer products, batched matmuls, 4-5 operand
  chains, implicit output order) and on random ones (hypothesis);
* einsum_path against a Python model of MLX's greedy search (exact path and
  cost summary) and against NumPy's greedy path where the two agree;
* contractions go through matmul: peak memory stays at the size of the
  operands, never the size of a broadcast product;
* window functions against NumPy; diff / roll / flip / unstack / vecdot
  edge cases.
"""

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import (assert_close, assert_equal, dtype_name, ember_only,
                      mx, raises, to_numpy)


def _rand(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x).astype(dtype)


def _mxdt(x):
    return {"f": mx.float64, "c": mx.complex64}.get(x.dtype.kind)


def _m(x):
    """An mx array keeping float64 (mx.array alone would make float32)."""
    return mx.array(x, dtype=_mxdt(x))


# --------------------------------------------------------------------------
# einsum against NumPy
# --------------------------------------------------------------------------

EINSUM_CASES = [
    # traces and diagonals
    ("ii", [(4, 4)]), ("ii->i", [(4, 4)]), ("iii->i", [(3, 3, 3)]),
    ("iij->j", [(3, 3, 5)]), ("iji->j", [(3, 2, 3)]), ("ijij->ij", [(2, 3, 2, 3)]),
    ("ijji->", [(2, 3, 3, 2)]), ("ii,jj->ij", [(3, 3), (4, 4)]),
    ("ii,ij->j", [(3, 3), (3, 4)]), ("bii->b", [(5, 3, 3)]),
    ("bii->bi", [(5, 3, 3)]), ("...ii->...i", [(2, 3, 4, 4)]),
    # sums and transposes of one operand
    ("ij->", [(3, 4)]), ("ij->j", [(3, 4)]), ("ijk->kj", [(2, 3, 4)]),
    ("ijk->kji", [(2, 3, 4)]), ("i", [(5,)]), ("", [()]), ("->", [()]),
    # implicit output: letters used once, in alphabetical (ASCII) order
    ("ba", [(2, 3)]), ("kji", [(2, 3, 4)]), ("cab", [(2, 3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]), ("ji,jk", [(3, 2), (3, 4)]),
    ("kj,ji", [(4, 3), (3, 2)]), ("Ba,aC", [(2, 3), (3, 4)]),
    ("aB,Ab", [(2, 3), (3, 4)]), ("i,i", [(5,), (5,)]),
    ("ij,ij", [(3, 4), (3, 4)]),
    # ellipsis broadcasting
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("...ij,...jk->...ik", [(5, 1, 2, 3), (7, 3, 4)]),
    ("...ij,...jk", [(2, 2, 3), (2, 3, 4)]), ("i...->...", [(5, 1, 2, 3)]),
    ("...,...->...", [(2, 3), (3,)]), ("...i,i...->...", [(2, 3), (3, 2)]),
    ("...,i->...i", [(2, 3), (4,)]), ("a...b,b...c->a...c",
                                      [(2, 3, 4), (4, 3, 5)]),
    ("...ij,j->...i", [(4, 2, 3), (3,)]),
    # outer and elementwise products
    ("i,j->ij", [(3,), (4,)]), ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("ij,kl->ijkl", [(2, 3), (2, 2)]), ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij,ij->ij", [(3, 4), (3, 4), (3, 4)]), ("i,->i", [(3,), ()]),
    (",", [(), ()]), (",,->", [(), (), ()]), ("ij,ji->ij", [(3, 4), (4, 3)]),
    # batched matmuls
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("bij,bkj->bki", [(5, 2, 3), (5, 4, 3)]),
    ("bji,bjk->kbi", [(4, 3, 2), (4, 3, 5)]),
    ("abij,abjk->abik", [(2, 3, 4, 5), (2, 3, 5, 2)]),
    ("abij,bajk->abik", [(2, 3, 4, 5), (3, 2, 5, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bhqk,bhkd->bqhd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("ijk,jil->kl", [(3, 4, 5), (4, 3, 2)]),
    ("ijkl,klmn->ijmn", [(2, 3, 4, 5), (4, 5, 2, 3)]),
    # contractions with a sum in one operand
    ("ij,j->", [(3, 4), (4,)]), ("ijk,k->i", [(2, 3, 4), (4,)]),
    ("ij,kl->", [(2, 3), (4, 5)]),
    # chains of 3-5 operands
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(20, 3), (3, 40), (40, 5)]),
    ("ij,jk,k", [(3, 3), (3, 3), (3,)]),
    ("iij,jk,k", [(3, 3, 3), (3, 3), (3,)]),
    ("a,b,ab->", [(5,), (6,), (5, 6)]),
    ("ab,bc,cd,de->ae", [(10, 20), (20, 5), (5, 30), (30, 2)]),
    ("ab,bc,cd,de,ef->af", [(3, 4), (4, 5), (5, 6), (6, 7), (7, 8)]),
    ("abc,bcd,def,fa->e", [(2, 3, 4), (3, 4, 5), (5, 6, 7), (7, 2)]),
    ("ij,kl,jk->il", [(4, 5), (6, 7), (5, 6)]),
    ("ab,cd,ef->abcdef", [(2, 2), (2, 2), (2, 2)]),
    ("ab,cd,bc->ad", [(2, 2), (2, 2), (2, 2)]),
    ("ea,fb,abcd,gc,hd->efgh", [(2, 3), (2, 3), (3, 3, 3, 3), (2, 3), (2, 3)]),
    ("bn,anm,bm->ba", [(3, 4), (2, 4, 5), (3, 5)]),
    # size-1 dims broadcast against the same index
    ("i,i", [(4,), (1,)]), ("ij,ij->ij", [(2, 1), (1, 3)]),
    ("ij,jk->ik", [(2, 1), (4, 3)]), ("bij,bjk->bik", [(1, 2, 3), (4, 3, 2)]),
    # empty dims
    ("ij,jk->ik", [(0, 3), (3, 4)]), ("ij,jk->ik", [(2, 0), (0, 4)]),
    ("ij,jk->", [(2, 0), (0, 4)]), ("ii->i", [(0, 0)]), ("i,j->ij", [(0,), (3,)]),
    # spaces are ignored
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("sub,shapes", EINSUM_CASES,
                         ids=[f"{s}|{sh}" for s, sh in EINSUM_CASES])
def test_einsum_matches_numpy(sub, shapes, rng):
    xs = [_rand(rng, s) for s in shapes]
    r = mx.einsum(sub, *[_m(x) for x in xs])
    assert_close(r, np.einsum(sub, *xs), dtype="float64", rtol=1e-12,
                 atol=1e-12, msg=sub)


@pytest.mark.parametrize("dtype", ["float32", "complex64", "float16",
                                   "bfloat16"])
def test_einsum_dtypes_and_precision(dtype, rng):
    np_dt = {"float32": np.float32, "complex64": np.complex64,
             "float16": np.float16, "bfloat16": np.float32}[dtype]
    a = _rand(rng, (4, 6, 5), np_dt)
    b = _rand(rng, (5, 3), np_dt)
    ma = mx.array(a, dtype=getattr(mx, dtype))
    mb = mx.array(b, dtype=getattr(mx, dtype))
    r = mx.einsum("bij,jk->bik", ma, mb)
    assert dtype_name(r.dtype) == dtype
    exp = np.einsum("bij,jk->bik", to_numpy(ma).astype(np.complex128),
                    to_numpy(mb).astype(np.complex128))
    if dtype != "complex64":
        exp = exp.real
    # the contraction runs in float32 and rounds once
    tol = {"float32": 1e-5, "complex64": 1e-5, "float16": 2e-3,
           "bfloat16": 1.6e-2}[dtype]
    assert_close(r, exp, dtype=dtype, rtol=tol, atol=tol)


def test_einsum_mixed_dtypes_promote():
    a = mx.ones((2, 3), mx.float16)
    b = mx.ones((3, 4), mx.float32)
    assert dtype_name(mx.einsum("ij,jk", a, b).dtype) == "float32"
    c = mx.ones((3, 4), mx.complex64)
    assert dtype_name(mx.einsum("ij,jk", b.T, c).dtype) == "complex64"
    i8 = mx.ones((3,), mx.int8)
    i16 = mx.ones((4,), mx.int16)
    assert dtype_name(mx.einsum("i,j->ij", i8, i16).dtype) == "int16"
    # a sum of small ints accumulates in 32 bits (sum's rule)
    assert_equal(mx.einsum("ij->", mx.full((2, 3), 100, mx.int8)), 600,
                 dtype="int32")
    assert_equal(mx.einsum("ii->", mx.full((3, 3), 1, mx.bool_)), 3,
                 dtype="int32")
    assert_equal(mx.einsum("i,i->i", mx.array([True, True, False]),
                           mx.array([True, False, False])),
                 [True, False, False], dtype="bool")


@ember_only
@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "int64"])
def test_einsum_integer_contraction(dtype, rng):
    """MLX's matmul rejects integers (so do its einsum contractions); Ember
    contracts them exactly (wrapping like NumPy)."""
    np_dt = getattr(np, dtype)
    a = rng.integers(0, 4, size=(3, 4)).astype(np_dt)
    b = rng.integers(0, 4, size=(4, 5)).astype(np_dt)
    c = rng.integers(0, 4, size=(5,)).astype(np_dt)
    r = mx.einsum("ij,jk,k->i", mx.array(a), mx.array(b), mx.array(c))
    assert_equal(r, np.einsum("ij,jk,k->i", a, b, c), dtype=dtype)


def test_einsum_ellipsis_summed_when_missing_from_output():
    """MLX sums ellipsis dims an explicit output leaves out (NumPy raises)."""
    x = np.arange(24.0).reshape(2, 3, 4)
    r = mx.einsum("...ij->ij", mx.array(x))
    assert_close(r, x.sum(axis=0), dtype="float32")
    r = mx.einsum("i...j->ij", mx.array(x))
    assert_close(r, x.sum(axis=1), dtype="float32")


def test_einsum_implicit_output_order():
    x = mx.array(np.arange(24.0).reshape(2, 3, 4))
    assert mx.einsum("cab", x).shape == (3, 4, 2)
    assert mx.einsum("Ab", mx.zeros((2, 3))).shape == (2, 3)
    assert mx.einsum("bA", mx.zeros((2, 3))).shape == (3, 2)  # 'A' < 'b'
    assert mx.einsum("i...", mx.zeros((2, 3, 4))).shape == (3, 4, 2)
    assert mx.einsum("I,i", mx.ones(2), mx.ones(3)).shape == (2, 3)


def test_einsum_does_not_modify_inputs_and_is_lazy_safe(rng):
    a = _rand(rng, (3, 3))
    ma = _m(a)
    r = mx.einsum("ii->i", ma)  # a strided view of the input
    assert_close(r, np.diag(a), dtype="float64")
    r2 = r + 1
    mx.eval(r2)
    assert_close(ma, a, dtype="float64")


def _einsum_strategy():
    letters = "abcdef"

    @st.composite
    def build(draw):
        nops = draw(st.integers(1, 4))
        sizes = {c: draw(st.integers(1, 4)) for c in letters}
        terms, shapes = [], []
        for _ in range(nops):
            t = draw(st.lists(st.sampled_from(letters), min_size=0,
                              max_size=3, unique=True))
            if t and draw(st.booleans()) and draw(st.booleans()):
                t = t + [t[0]]  # a diagonal
            shape = []
            for c in t:
                d = sizes[c]
                # some dims of size 1 broadcast (not inside a diagonal)
                if t.count(c) == 1 and draw(st.integers(0, 5)) == 0:
                    d = 1
                shape.append(d)
            terms.append("".join(t))
            shapes.append(tuple(shape))
        used = sorted(set("".join(terms)))
        if draw(st.booleans()):
            sub = ",".join(terms)
        else:
            out = draw(st.permutations(used))
            keep = draw(st.integers(0, len(used)))
            sub = ",".join(terms) + "->" + "".join(out[:keep])
        return sub, shapes
    return build()


@given(_einsum_strategy(), st.integers(0, 2 ** 31))
@settings(max_examples=150, deadline=None)
def test_einsum_random_subscripts_match_numpy(case, seed):
    sub, shapes = case
    rng = np.random.default_rng(seed)
    xs = [_rand(rng, s) for s in shapes]
    r = mx.einsum(sub, *[_m(x) for x in xs])
    exp = np.einsum(sub, *xs)
    assert_close(r, exp, dtype="float64", rtol=1e-10, atol=1e-10, msg=sub)


# --------------------------------------------------------------------------
# contractions lower to matmul
# --------------------------------------------------------------------------

@pytest.mark.parametrize("sub,nops", [
    ("ij,jk->ik", 2), ("ij,kj->ik", 2), ("ji,jk->ik", 2), ("ij,ij->", 2),
    ("ij,jk,kl->il", 3), ("ij,jk", 2), ("bij,bjk->bik", 2),
])
def test_einsum_contraction_never_materializes_a_broadcast_product(sub,
                                                                   nops):
    """A broadcast multiply-and-sum of n x n operands needs n**3 elements;
    a matmul needs a few n x n buffers."""
    n = 256
    rng = np.random.default_rng(0)
    batch = "b" in sub
    shape = (4, n // 4, n) if batch else (n, n)
    ops = [mx.array(_rand(rng, shape, np.float32)) for _ in range(nops)]
    if batch:
        ops[1] = mx.array(_rand(rng, (4, n, n // 4), np.float32))
    mx.eval(ops)
    matrix = n * n * 4
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    r = mx.einsum(sub, *ops)
    mx.eval(r)
    grown = mx.get_peak_memory() - base
    assert grown < 6 * matrix, (sub, grown / matrix)
    exp = np.einsum(sub, *[to_numpy(o).astype(np.float64) for o in ops])
    assert_close(r, exp, dtype="float32", rtol=1e-4, atol=1e-3)


# --------------------------------------------------------------------------
# einsum_path
# --------------------------------------------------------------------------

def _size(labels, dims):
    n = 1
    for c in labels:
        n *= dims[c]
    return n


def _flops(labels, inner, terms, dims):
    return _size(labels, dims) * (max(1, terms - 1) + (1 if inner else 0))


def _model_path(terms, out, dims):
    """MLX's greedy search, written out: returns (path, naive scaling,
    optimized scaling, naive flops, optimized flops)."""
    sets = [set(t) for t in terms]
    outs = set(out)
    every = set().union(*sets)
    naive = _flops(every, bool(every - outs), len(sets), dims)
    if len(sets) <= 2:
        return ([tuple(range(len(sets)))], len(every), len(every), naive,
                naive)
    limit = max([_size(out, dims)] + [_size(t, dims) for t in terms])
    pairs = list(itertools.combinations(range(len(sets)), 2))
    cands, path, cost, scaling = [], [], 0, 0
    for _ in range(len(terms) - 1):
        def consider(x, y):
            both = sets[x] | sets[y]
            needed = set(outs)
            for k, s in enumerate(sets):
                if k not in (x, y):
                    needed |= s
            result = both & needed
            size = _size(result, dims)
            if size > limit:
                return
            removed = _size(sets[x], dims) + _size(sets[y], dims) - size
            c = _flops(both, len(both) > len(result), 2, dims)
            if cost + c > naive:
                return
            cands.append([removed, c, result, len(both), x, y])
        for x, y in pairs:
            if sets[x] & sets[y]:
                consider(x, y)
        if not cands:
            for x, y in pairs:
                consider(x, y)
        if not cands:
            rest = set().union(*sets)
            path.append(tuple(range(len(sets))))
            cost += _flops(rest, bool(rest - outs), len(sets), dims)
            scaling = max(scaling, len(rest))
            break
        best = cands[0]
        for c in cands[1:]:
            if c[0] > best[0] or (c[0] == best[0] and c[1] < best[1]):
                best = c
        bx, by = best[4], best[5]
        path.append((bx, by))
        cost += best[1]
        scaling = max(scaling, best[3])
        del sets[by]
        del sets[bx]
        sets.append(best[2])
        kept = []
        for c in cands:
            if c[4] in (bx, by) or c[5] in (bx, by):
                continue
            c[4] -= (c[4] > bx) + (c[4] > by)
            c[5] -= (c[5] > bx) + (c[5] > by)
            kept.append(c)
        cands = kept
        last = len(sets) - 1
        pairs = [(k, last) for k in range(last)]
    return path, len(every), scaling, naive, cost


def _info_numbers(info):
    return [int(v) for v in re.findall(r":\s+(\d+)\n", info)]


@st.composite
def _path_case(draw):
    letters = "abcdefg"
    nl = draw(st.integers(1, 7))
    dims = {c: draw(st.sampled_from([1, 2, 3, 4, 5, 7, 10, 20]))
            for c in letters[:nl]}
    terms = []
    for _ in range(draw(st.integers(1, 6))):
        t = draw(st.lists(st.sampled_from(letters[:nl]), max_size=4,
                          unique=True))
        if t and draw(st.integers(0, 6)) == 0:
            t = t + [t[0]]
        terms.append("".join(t))
    used = sorted(set("".join(terms)))
    if draw(st.booleans()):
        flat = "".join(terms)
        out = "".join(c for c in used if flat.count(c) == 1)
        sub = ",".join(terms)
    else:
        out = "".join(c for c in used if draw(st.booleans()))
        sub = ",".join(terms) + "->" + out
    return sub, terms, out, dims


@given(_path_case())
@settings(max_examples=300, deadline=None)
def test_einsum_path_is_mlx_greedy(case):
    sub, terms, out, dims = case
    ops = [mx.zeros(tuple(dims[c] for c in t)) for t in terms]
    path, info = mx.einsum_path(sub, *ops)
    mpath, nscale, oscale, naive, opt = _model_path(terms, out, dims)
    assert [tuple(p) for p in path] == mpath, sub
    assert _info_numbers(info) == [nscale, oscale, naive, opt], (sub, info)


PATHS_AGREEING_WITH_NUMPY = [
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(20, 3), (3, 40), (40, 5)]),
    ("ab,bc,cd,de->ae", [(10, 20), (20, 5), (5, 30), (30, 2)]),
    ("ab,bc,cd,de,ef->af", [(3, 4), (4, 5), (5, 6), (6, 7), (7, 8)]),
    ("ij,kl,jk->il", [(4, 5), (6, 7), (5, 6)]),
    ("abc,bcd,def,fa->e", [(2, 3, 4), (3, 4, 5), (5, 6, 7), (7, 2)]),
    ("ij,jk,kl", [(1000, 2), (2, 1000), (1000, 3)]),
    ("a,b,ab->", [(5,), (6,), (5, 6)]),
    ("ij,jk,k", [(3, 3), (3, 3), (3,)]),
    ("iij,jk,k", [(3, 3, 3), (3, 3), (3,)]),
    ("ab,cd,bc->ad", [(2, 2), (2, 2), (2, 2)]),
    ("ij,ij,ij->", [(3, 4), (3, 4), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk", [(10, 2), (2, 10)]), ("ii", [(3, 3)]),
]


@pytest.mark.parametrize("sub,shapes", PATHS_AGREEING_WITH_NUMPY,
                         ids=[s for s, _ in PATHS_AGREEING_WITH_NUMPY])
def test_einsum_path_matches_numpy_greedy(sub, shapes):
    xs = [np.zeros(s) for s in shapes]
    path, info = mx.einsum_path(sub, *[_m(x) for x in xs])
    np_path = np.einsum_path(sub, *xs, optimize="greedy")[0][1:]
    assert [tuple(p) for p in path] == [tuple(p) for p in np_path]


def test_einsum_path_differs_from_numpy_on_outer_products():
    """NumPy's einsum_path hands pure products to one n-ary step; MLX (and
    Ember) still go pairwise."""
    xs = [mx.zeros((2,)), mx.zeros((3,)), mx.zeros((4,))]
    assert mx.einsum_path("i,j,k->ijk", *xs)[0] == [(0, 1), (0, 1)]


def test_einsum_path_format():
    res = mx.einsum_path("ij,jk,kl->il", mx.ones((2, 3)), mx.ones((3, 4)),
                         mx.ones((4, 5)))
    assert isinstance(res, tuple) and len(res) == 2
    path, info = res
    assert isinstance(path, list) and all(isinstance(p, tuple) for p in path)
    assert path == [(1, 2), (0, 1)]
    assert info == ("  Complete contraction:  ij,jk,kl->il\n"
                    "         Naive scaling:  4\n"
                    "     Optimized scaling:  3\n"
                    "      Naive FLOP count:  360\n"
                    "  Optimized FLOP count:  180\n")
    path, info = mx.einsum_path("ii", mx.ones((3, 3)))
    assert path == [(0,)]
    assert _info_numbers(info) == [1, 1, 6, 6]
    path, _ = mx.einsum_path("i,j", mx.ones(2), mx.ones(3))
    assert path == [(0, 1)]


def test_einsum_path_errors():
    with raises(ValueError, "einsum_path"):
        mx.einsum_path("ij,jk", mx.ones((2, 3)))
    with raises(ValueError, "einsum_path"):
        mx.einsum_path("ijk", mx.ones((2, 3)))
    with raises(ValueError, "einsum_path"):
        mx.einsum_path("ij")


@ember_only
def test_einsum_path_rejects_unknown_output_index():
    """MLX reports a path for 'ij->k' and then fails inside einsum."""
    with raises(ValueError, "does not appear"):
        mx.einsum_path("ij->k", mx.ones((2, 3)))


@ember_only
def test_einsum_accepts_array_likes():
    """MLX requires mx.array operands (RuntimeError otherwise); Ember
    converts NumPy arrays and Python scalars like every other op."""
    r = mx.einsum("ij,j->i", np.ones((2, 3), np.float32), [1.0, 2.0, 3.0])
    assert_close(r, [6.0, 6.0], dtype="float32")
    assert_close(mx.einsum(",", 2.0, 3.0), 6.0, dtype="float32")


def test_einsum_many_operands_and_long_chain(rng):
    subs = ",".join(f"{a}{b}" for a, b in zip("abcdefghijklm", "bcdefghijklmn"))
    n = 13
    shapes = [(3, 3)] * n
    xs = [_rand(rng, s) * 0.5 for s in shapes]
    r = mx.einsum(subs + "->an", *[_m(x) for x in xs])
    exp = np.linalg.multi_dot(xs)
    assert_close(r, exp, dtype="float64", rtol=1e-11, atol=1e-11)


# --------------------------------------------------------------------------
# tensordot / inner / outer / kron / vecdot
# --------------------------------------------------------------------------

def test_tensordot_axes_forms(rng):
    a, b = _rand(rng, (2, 3, 4)), _rand(rng, (4, 3, 5))
    ma, mb = _m(a), _m(b)
    for axes in (1, [[2], [0]], ([1, 2], [1, 0]), [(-1,), (0,)]):
        np_axes = axes if isinstance(axes, int) else tuple(map(tuple, axes))
        assert_close(mx.tensordot(ma, mb, axes=axes),
                     np.tensordot(a, b, np_axes), dtype="float64")
    assert mx.tensordot(ma, mb, 0).shape == (2, 3, 4, 4, 3, 5)


@ember_only
def test_tensordot_numpy_style_int_pair():
    """NumPy's axes=(1, 0) (one axis each); MLX raises TypeError."""
    a, b = np.ones((2, 3)), np.ones((3, 4))
    assert_close(mx.tensordot(mx.array(a), mx.array(b), (1, 0)),
                 np.tensordot(a, b, (1, 0)), dtype="float32")


def test_vecdot_conjugates_first_argument():
    a = mx.array([1 + 2j, 3 - 1j])
    b = mx.array([2 - 1j, 1 + 1j])
    assert_close(mx.vecdot(a, b), 2 - 1j, dtype="complex64")
    assert_close(mx.vecdot(b, a), 2 + 1j, dtype="complex64")


def test_vecdot_dtypes():
    assert dtype_name(mx.vecdot(mx.ones(3, mx.int8),
                                mx.ones(3, mx.int8)).dtype) == "int32"
    assert dtype_name(mx.vecdot(mx.ones(3, mx.uint8),
                                mx.ones(3, mx.uint8)).dtype) == "uint32"
    assert dtype_name(mx.vecdot(mx.ones(3, mx.bool_),
                                mx.ones(3, mx.bool_)).dtype) == "int32"
    assert dtype_name(mx.vecdot(mx.ones(3, mx.float16),
                                mx.ones(3, mx.int32)).dtype) == "float16"


@ember_only
def test_vecdot_float16_accumulates_in_float32():
    """Products and their sum are formed in float32 and rounded once."""
    x = np.full(4096, 0.1, np.float16)
    r = mx.vecdot(mx.array(x), mx.array(np.ones(4096, np.float16)))
    exact = float(np.sum(x.astype(np.float64)))
    assert abs(float(to_numpy(r)) - exact) <= 2 ** -10 * exact


@ember_only
def test_vecdot_operands_of_different_rank():
    """The axis is taken in each operand, the other dims broadcast (NumPy's
    vecdot); MLX 0.32 raises 'axis is out of bounds' when the ranks differ."""
    a, b = np.arange(6.0).reshape(2, 3), np.arange(24.0).reshape(4, 2, 3)
    assert_close(mx.vecdot(mx.array(a), mx.array(b)),
                 np.sum(a * b, axis=-1), dtype="float32")
    assert_close(mx.vecdot(mx.array(b), mx.array(a[0])),
                 np.sum(b * a[0], axis=-1), dtype="float32")


def test_kron_matches_numpy(rng):
    for sa, sb in [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 2), (3,)),
                   ((), (2,)), ((2, 2, 2), (2, 2, 2))]:
        a, b = _rand(rng, sa), _rand(rng, sb)
        assert_close(mx.kron(_m(a), _m(b)), np.kron(a, b),
                     dtype="float64")


def test_inner_outer_shapes():
    assert mx.inner(mx.ones((2, 5, 3)), mx.ones((4, 3))).shape == (2, 5, 4)
    assert mx.outer(mx.ones((2, 2)), mx.ones((3,))).shape == (4, 3)
    assert mx.outer(mx.array(2.0), mx.array(3.0)).shape == (1, 1)


# --------------------------------------------------------------------------
# windows
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming",
                                  "hanning"])
@pytest.mark.parametrize("M", [1, 2, 3, 4, 10, 64, 101, 1000])
def test_windows_match_numpy(name, M):
    r = getattr(mx, name)(M)
    assert dtype_name(r.dtype) == "float32"
    assert_close(r, getattr(np, name)(M), dtype="float32", rtol=1e-6,
                 atol=1e-6)


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming",
                                  "hanning"])
def test_windows_degenerate_lengths(name):
    for M in (0, -1, -100):
        r = getattr(mx, name)(M)
        assert r.shape == (0,) and dtype_name(r.dtype) == "float32"
    assert_equal(getattr(mx, name)(1), [1.0], dtype="float32")


# --------------------------------------------------------------------------
# diff / roll / flip / unstack
# --------------------------------------------------------------------------

def test_diff_edge_cases():
    x = mx.arange(12).reshape(3, 4)
    assert_equal(mx.diff(x, 0), to_numpy(x), dtype="int32")
    assert mx.diff(x, 3, 0).shape == (0, 4)
    assert mx.diff(x, 10, 0).shape == (0, 4)
    assert mx.diff(x, 4).shape == (3, 0)
    assert_equal(mx.diff(mx.array([3, 1], mx.uint8)), [254], dtype="uint8")
    assert_equal(mx.diff(mx.array([True, False, False, True])),
                 [True, False, True], dtype="bool")
    assert_equal(mx.diff(mx.array([1.0, 4.0, 9.0, 16.0]), 2), [2.0, 2.0],
                 dtype="float32")
    assert_equal(mx.diff(x, n=1, axis=0), np.full((2, 4), 4), dtype="int32")
    with raises(IndexError, "diff", mlx_msg=True):
        mx.diff(mx.array(1.0), 0)


@ember_only
def test_diff_huge_n_is_empty_quickly():
    """n beyond the axis length is an empty result without n passes (MLX
    loops n times and runs out of memory)."""
    r = mx.diff(mx.arange(10), 2 ** 31 - 1)
    assert r.shape == (0,)


def test_roll_semantics():
    x = mx.arange(12).reshape(3, 4)
    xn = np.arange(12).reshape(3, 4)
    assert_equal(mx.roll(x, 13), np.roll(xn, 13))
    assert_equal(mx.roll(x, -100), np.roll(xn, -100))
    assert_equal(mx.roll(x, (1, 2)), np.roll(xn, 3))      # shifts add up
    assert_equal(mx.roll(x, (1, 1), 0), np.roll(xn, 2, 0))
    assert_equal(mx.roll(x, 1, (0, 1)), np.roll(xn, (1, 1), (0, 1)))
    assert_equal(mx.roll(x, (1, 2, 3), (0, 1)), np.roll(xn, (1, 2), (0, 1)))
    assert_equal(mx.roll(x, (1, 2), (0, 0)), xn)          # 1 + 2 == 3 rows
    assert_equal(mx.roll(x, shift=1, axis=-1), np.roll(xn, 1, -1))
    assert_equal(mx.roll(x, 5, ()), xn)
    assert_equal(mx.roll(mx.array(7), 3), 7)
    assert mx.roll(mx.zeros((0, 3)), 2, 0).shape == (0, 3)
    with raises(ValueError, "At least one shift value per axis",
                mlx_msg=True):
        mx.roll(x, (1,), (0, 1))


@ember_only
def test_roll_int64_shift():
    """MLX takes shifts as int32 (TypeError beyond); Ember takes any int."""
    xn = np.arange(7)
    assert_equal(mx.roll(mx.arange(7), 2 ** 40 + 3), np.roll(xn, 2 ** 40 + 3))


def test_flip_semantics_and_view():
    xn = np.arange(24).reshape(2, 3, 4)
    x = mx.array(xn)
    assert_equal(mx.flip(x), np.flip(xn))
    assert_equal(mx.flip(x, 1), np.flip(xn, 1))
    assert_equal(mx.flip(x, (0, -1)), np.flip(xn, (0, 2)))
    assert_equal(mx.flip(x, (0, 0)), np.flip(xn, 0))      # flipped once
    assert_equal(mx.flip(x, []), xn)
    assert_equal(mx.flip(mx.array(5)), 5)
    assert_equal(mx.flip(mx.flip(x, 2), 2), xn)
    # a negative-stride view: no new buffer of the input's size
    big = mx.array(np.random.default_rng(0).random((512, 512), np.float32))
    mx.eval(big)
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    f = mx.flip(big)
    mx.eval(f)
    assert mx.get_peak_memory() - base < big.nbytes // 2
    assert_equal(f, np.flip(to_numpy(big)))


def test_unstack():
    x = mx.arange(12).reshape(3, 4)
    parts = mx.unstack(x)
    assert isinstance(parts, tuple) and len(parts) == 3
    assert_equal(parts[1], [4, 5, 6, 7], dtype="int32")
    parts = mx.unstack(x, axis=-1)
    assert len(parts) == 4 and parts[0].shape == (3,)
    assert mx.unstack(mx.zeros((0, 3))) == ()
    assert [p.shape for p in mx.unstack(mx.arange(3))] == [(), (), ()]
    with pytest.raises(TypeError):
        mx.unstack(x, 1)  # axis is keyword-only


def test_matrix_transpose_and_permute_dims():
    x = mx.zeros((2, 3, 4))
    assert mx.matrix_transpose(x).shape == (2, 4, 3)
    assert mx.permute_dims(x, (2, 0, 1)).shape == (4, 2, 3)
    assert mx.permute_dims(x).shape == (4, 3, 2)
