"""Transform checks of every op in the op table.

For each ``op_table.OPS`` entry (a few samples each, see
``transform_samples.pick``):

* ``test_grad``         jvp and vjp against central differences in float64
                        (``gradcheck.check_grads``) for every float64 array
                        argument of a differentiable op;
  ``test_grad_layout``  the same on one strided (transposed / reversed) input;
  ``test_grad2``        second order for the smooth ops of ``ORDER2``;
  ``test_zero_grad``    piecewise-constant ops (floor, sign, ...) give zero
                        tangents and cotangents of the right shape and dtype;
* ``test_vmap``         vmap against a Python loop (``gradcheck.check_vmap``)
                        in float32, an integer dtype and bool, batching every
                        argument along 0, 1, -1 or sharing it (None), with
                        out_axes 0 and -1; ``test_vmap_layout`` on a strided
                        input;
* ``test_grad_of_vmap`` grad of a vmapped, summed op equals vmap of its grad
                        (and a loop of grads);
* ``test_no_rule``      the (op, transform) pairs of ``NO_RULE``, where no rule
                        can exist, raise ValueError naming the primitive.

The rows come from ``op_table.OPS``: the forward table (op_table.py and the
family modules it imports) plus ``op_table_transforms.py``, the rows of
matmul and the products, conv, fft, linalg and random, which exist for this
suite (``forward=False``).  What a check leaves out is in one list below
(``SKIP_GRAD``, ``SKIP_VMAP``, with reasons), kept exact by
``test_skip_list_matches_the_table``; rows exposing known engine bugs are
strict xfails in ``KNOWN_BUGS``.

Test ids carry the op's family: ``test_grad[unary-exp]``,
``test_vmap[index-take-int32]``, so ``-k unary``, ``-k shape``, ``-k index``
select a family.
"""

import contextlib

import numpy as np
import pytest

from conftest import ember_only, mx, tolerance
from gradcheck import check_grads, check_vmap
from op_table import OPS
from transform_samples import (as_list, as_mx, draw, finite,
                               pick, relayout, separate, seed, stack_leaves)


# --------------------------------------------------------------------------
# what each check leaves out, and why: the one list
# --------------------------------------------------------------------------
# Every table row gets every check except where this list says otherwise;
# test_skip_list_matches_the_table fails when a row is left out without a
# line here (or a line here names a row that could be checked).

_PIECEWISE = "piecewise constant: test_zero_grad checks zero tangents and cotangents"
_BOOL_OUT = "boolean output: no derivative"
_INT_OUT = "integer output (indices, counts, bits): no derivative"
_INT_ONLY = "integer and bool dtypes only: nothing to differentiate"
_NO_ARRAY = "no array argument in any sample (creation from shapes and scalars)"
_COMPLEX = ("complex64 output and Ember has no complex128, so no float64 finite "
            "differences; test_fft.py checks its derivatives through the real and "
            "imaginary parts in complex64 with wider steps")
_KEY_ONLY = "the key is the only array argument: nothing to differentiate"
_NO_RULE = "no derivative rule (pivots or complex eigenpairs): see NO_RULE"

# ops that test_grad, test_grad_layout and test_grad_of_vmap leave out
SKIP_GRAD = {
    **dict.fromkeys(["sign", "floor", "ceil", "trunc", "round", "floor_divide",
                     "zeros_like", "ones_like", "full_like"], _PIECEWISE),
    **dict.fromkeys(["isnan", "isinf", "isfinite", "isneginf", "isposinf",
                     "logical_not", "equal", "not_equal", "less", "less_equal",
                     "greater", "greater_equal", "logical_and", "logical_or",
                     "logical_xor", "isclose", "allclose", "array_equal", "all",
                     "any", "random.bernoulli"], _BOOL_OUT),
    **dict.fromkeys(["argmax", "argmin", "argsort", "argpartition", "searchsorted",
                     "count_nonzero", "random.randint", "random.categorical",
                     "random.bits", "random.split"], _INT_OUT),
    **dict.fromkeys(["bitwise_invert", "bitwise_and", "bitwise_or", "bitwise_xor",
                     "left_shift", "right_shift"], _INT_ONLY),
    **dict.fromkeys(["zeros", "ones", "arange", "linspace", "eye", "identity", "tri",
                     "bartlett", "blackman", "hamming", "hanning"], _NO_ARRAY),
    "full": "its value argument is broadcast into a new array; the table marks it "
            "non-differentiable (its gradient, a sum, is checked in test_transforms.py)",
    "unique": "data-dependent output size: no derivative",
    "view": "reinterprets bytes: no derivative (NO_RULE checks the error)",
    "to_fp8": "uint8 codes: integer output, no derivative (test_fp8.py checks that "
              "none flows through it)",
    "from_fp8": "uint8 codes are its only input: nothing to differentiate",
    "nan_to_num": "no float64 (MLX 0.32 rejects it): nothing to check in float64",
    **dict.fromkeys(["fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.fft2",
                     "fft.ifft2", "fft.rfft2", "fft.irfft2", "fft.fftn", "fft.ifftn",
                     "fft.rfftn", "fft.irfftn", "fft.stft", "fft.istft"], _COMPLEX),
    **dict.fromkeys(["random.gumbel", "random.laplace"], _KEY_ONLY),
    **dict.fromkeys(["linalg.eig", "linalg.eigvals", "linalg.lu", "linalg.lu_factor"],
                    _NO_RULE),
}

# ops that test_vmap and test_vmap_layout leave out
SKIP_VMAP = {name: _NO_ARRAY for name in
             ["zeros", "ones", "arange", "linspace", "eye", "identity", "tri",
              "bartlett", "blackman", "hamming", "hanning"]}
NO_ARRAY_ARGS = set(SKIP_VMAP)

# Not in the table at all, and why:
# * fft.fftfreq, fft.rfftfreq, random.key, random.seed: no array argument
#   (nothing to batch or differentiate);
# * einsum_path: returns a string and a path, no array;
# * complex64 inputs of linalg and conv: conv takes real floats only, and
#   the linalg derivative rules are real-only and raise for complex64
#   (test_conv.py and test_linalg.py check the errors); the complex transforms
#   are tested through test_fft.py's real/imaginary splits;
# * every new row (matmul ... random) runs in float32 and float64 only: its
#   other dtypes are forward checks, done in the family's own file.

# Known engine bugs a row exposes: strict xfails (they fail the day the bug
# is fixed, so the line goes), each with a reproduction in its reason.
KNOWN_BUGS = {
}

# Rows whose vmap MLX 0.32.4 does not have ("[Primitive::vmap] Not
# implemented for ToFP8"): Ember batches them (elementwise), ember_only.
MLX_NO_VMAP = {"to_fp8", "from_fp8", "random.bits"}

# The derivative checks run in float64; the rows MLX computes at float32
# accuracy (op.mlx_f64_is_f32) cannot meet float64 finite differences there.
GRAD_TESTS = ("test_grad", "test_grad_layout", "test_grad2", "test_grad_of_vmap")

# (test, row) pairs where MLX 0.32.4 is wrong, crashes or hangs, each an
# entry of docs/mlx-differences.md that names this file: Ember's alone.
MLX_WRONG = {
    ("test_grad", "divmod"): "no derivative of the remainder",
    ("test_grad", "take"): "SIGFPE in the vjp of take from an array with an empty axis",
}

# Families whose rows (op_table_transforms.py) have not been run against
# MLX: ember_only until they are (Ember's linalg derivatives, for one, go
# beyond MLX's; vmap of conv and of the products may too).
NOT_CHECKED_ON_MLX = {"product", "conv", "fft", "linalg", "random"}

# derivatives meet a kink at ties (equal values or equal operands): samples
# are separated first (transform_samples.separate)
KINKED = {"abs", "maximum", "minimum", "clip", "max", "min", "sort",
          "partition", "topk", "median", "minmax", "cummax", "cummin"}

# sqrt of a zero variance: no derivative where the output is 0
ZERO_KINK = {"std"}

# the table marks these non-differentiable, but away from ties they are
# (the running extreme's cotangent goes to the element that holds it), and
# divmod's remainder is (its quotient has a zero derivative)
GRAD_EXTRA = {"cummax", "cummin", "divmod"}

# second order: smooth ops whose second derivative is not trivially zero
# (plus the matmul-based contractions, bilinear in their operands)
ORDER2 = ({op.name for op in OPS if op.family == "unary" and op.transcendental}
          | {"add", "subtract", "multiply", "divide", "power", "arctan2",
             "logaddexp", "sum", "mean", "var", "logsumexp", "softmax",
             "einsum", "tensordot", "inner", "vecdot"}
          # every differentiable row of the transform-only families
          | {op.name for op in OPS
             if op.family in ("product", "conv", "fft", "linalg", "random")
             and op.name not in SKIP_GRAD})

# piecewise constant: zero derivative almost everywhere
PIECEWISE_CONSTANT = {name for name, why in SKIP_GRAD.items() if why == _PIECEWISE}

# (op, transform, primitive): no rule can exist.  view reinterprets bytes:
# float64 -> float32 pairs of words has no derivative; LU's pivots are
# discrete and Eig's complex eigenpairs have no real-valued rule.
NO_RULE = [("view", "vjp", "View"), ("view", "jvp", "View")] + [
    (name, t, prim) for name, prim in [("linalg.eig", "Eig"), ("linalg.eigvals", "Eigvals"),
                                       ("linalg.lu", "LU"), ("linalg.lu_factor", "LUFactor")]
    for t in ("vjp", "jvp")]


def _grad_ops():
    return [op for op in OPS if op.name not in SKIP_GRAD]


def _pid(op, *more):
    return "-".join([op.family, op.name, *map(str, more)])


def _marks(op, test):
    """KNOWN_BUGS entries of ``test`` as strict xfails; ember_only for the
    families not checked on MLX, the vmaps MLX lacks, the float64 derivative
    checks of rows MLX computes in float32 and MLX_WRONG."""
    bug = KNOWN_BUGS.get((test, op.name))
    marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
    if op.family in NOT_CHECKED_ON_MLX or (
            op.name in MLX_NO_VMAP and test in ("test_vmap", "test_vmap_layout")) or (
            op.mlx_f64_is_f32 and test in GRAD_TESTS) or (test, op.name) in MLX_WRONG:
        marks.append(ember_only)
    return marks


def _params(ops, test):
    return [pytest.param(op, id=_pid(op), marks=_marks(op, test)) for op in ops]


@contextlib.contextmanager
def _about(case, what=""):
    """Name the case in any failure raised inside."""
    try:
        yield
    except BaseException as e:  # noqa: B036 - re-raised with a note
        e.add_note(f"{what} case: {case!r}")
        raise


# --------------------------------------------------------------------------
# derivative cases
# --------------------------------------------------------------------------

def _grad_cases(op, k=0, regular=3):
    """float64 samples to differentiate: finite inputs, every output
    float64 and finite (casts to other dtypes, ddof == n, means of empty
    arrays are left out), values separated for kinked ops."""
    rng = np.random.default_rng(seed(op.name, "separate", k))
    out = []
    for c in draw(op, "float64", k):
        if not c.float_argnums or not finite(c.leaves):
            continue
        if op.name in KINKED:
            c.leaves = [a if p else separate(a, rng)
                        for a, p in zip(c.leaves, c.pinned)]
        outs = as_list(c.fun(*c.mx_leaves()))
        if any(o.dtype != mx.float64 for o in outs):
            continue
        vals = [np.array(o) for o in outs]
        if not finite(vals):
            continue
        if op.name in ZERO_KINK and any(np.any(v == 0) for v in vals):
            continue
        out.append(c)
    return pick(out, regular)


def _first_strided(cases):
    for c in cases:
        if c.kind() == "regular" and any(a.ndim >= 1 for a in c.leaves):
            return c
    return None


@pytest.mark.parametrize("op", _params(_grad_ops(), "test_grad"))
def test_grad(op):
    cases = _grad_cases(op)
    assert cases, "no float64 sample with float64 outputs"
    for c in cases:
        with _about(c, "order 1"):
            check_grads(c.fun, c.leaves, argnums=c.float_argnums, order=1)
    if op.name == "astype":
        # float64 -> float32 -> float64: both AsType rules; the outputs are
        # float32-rounded, so a wide step (the map is linear)
        x = cases[0].leaves[0]
        check_grads(lambda a: mx.astype(mx.astype(a, mx.float32), mx.float64),
                    [x], eps=0.1, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", _params(_grad_ops(), "test_grad_layout"))
def test_grad_layout(op):
    c = _first_strided(_grad_cases(op))
    assert c is not None, "no float64 sample with an array argument of ndim >= 1"
    with _about(c, "strided inputs"):
        check_grads(lambda *xs: c.fun(*[relayout(x) for x in xs]), c.leaves,
                    argnums=c.float_argnums)


@pytest.mark.parametrize(
    "op", _params([op for op in _grad_ops() if op.name in ORDER2], "test_grad2"))
def test_grad2(op):
    cases = [c for c in _grad_cases(op, regular=2) if c.kind() == "regular"]
    assert cases
    for c in cases:
        with _about(c, "order 2"):
            check_grads(c.fun, c.leaves, argnums=c.float_argnums, order=2)


@pytest.mark.parametrize(
    "op", _params([op for op in OPS if op.name in PIECEWISE_CONSTANT], "test_zero_grad"))
def test_zero_grad(op):
    cases = _grad_cases(op)
    assert cases
    rng = np.random.default_rng(seed(op.name, "zero"))
    for c in cases:
        argnums = c.float_argnums
        fixed = c.mx_leaves()

        def f(*xs, c=c, argnums=argnums, fixed=fixed):
            full = list(fixed)
            for i, x in zip(argnums, xs):
                full[i] = x
            return as_list(c.fun(*full))

        xs = [fixed[i] for i in argnums]
        with _about(c, "zero derivative"):
            outs, tans = mx.jvp(f, xs, [as_mx(rng.standard_normal(x.shape)) for x in xs])
            for o, t in zip(outs, tans):
                assert t.shape == o.shape and t.dtype == o.dtype
                np.testing.assert_array_equal(np.array(t), 0)
            cots = [as_mx(rng.standard_normal(o.shape)) for o in outs]
            _, vjps = mx.vjp(f, xs, cots)
            assert len(vjps) == len(xs)
            for v, x in zip(vjps, xs):
                assert v.shape == x.shape and v.dtype == x.dtype
                np.testing.assert_array_equal(np.array(v), 0)


@pytest.mark.parametrize("op", _params(_grad_ops(), "test_grad_of_vmap"))
def test_grad_of_vmap(op):
    """d/dX sum(vmap(f)(X)) == vmap(grad(sum f))(X) == [grad(sum f)(X[i])]
    for f = the op as a function of its first float argument."""
    cases = [c for c in _grad_cases(op) if c.kind() == "regular"]
    assert cases, "no regular float64 sample"
    c = cases[0]
    i = c.float_argnums[0]
    # two more draws of the same sample give the other batch entries
    group = [c]
    for k in (1, 2):
        other = [o for o in _grad_cases(op, k) if o.key() == c.key()]
        group.append(other[0] if other else c)
    X = as_mx(np.stack([g.leaves[i] for g in group]))
    fixed = c.mx_leaves()

    def f(x):
        full = list(fixed)
        full[i] = x
        return as_list(c.fun(*full))

    def fsum(x):
        return sum(o.sum() for o in f(x))

    with _about(c, "grad of vmap"):
        gov = mx.grad(lambda X: sum(o.sum() for o in as_list(mx.vmap(f)(X))))(X)
        vog = mx.vmap(mx.grad(fsum))(X)
        loop = np.stack([np.array(mx.grad(fsum)(X[b])) for b in range(3)])
        assert gov.shape == X.shape and vog.shape == X.shape
        assert gov.dtype == mx.float64 and vog.dtype == mx.float64
        np.testing.assert_allclose(np.array(vog), loop, rtol=1e-10, atol=1e-12,
                                   err_msg="vmap(grad) vs loop of grad")
        np.testing.assert_allclose(np.array(gov), loop, rtol=1e-10, atol=1e-12,
                                   err_msg="grad(vmap) vs loop of grad")


# --------------------------------------------------------------------------
# vmap
# --------------------------------------------------------------------------

def _vmap_dtypes(op):
    """float32, one integer dtype and bool, where the op takes them."""
    out = [d for d in ("float32",) if d in op.dtypes]
    ints = [d for d in ("int32", "int64", "int16", "uint32", "uint8")
            if d in op.dtypes]
    out += ints[:1]
    out += [d for d in ("bool",) if d in op.dtypes]
    return out


def _vmap_ops():
    return [op for op in OPS if op.name not in SKIP_VMAP]


def _vmap_params():
    return [pytest.param(op, d, id=_pid(op, d), marks=_marks(op, "test_vmap"))
            for op in _vmap_ops() for d in _vmap_dtypes(op)]


def _configs(leaves, full):
    """(in_axes, out_axes) pairs: every argument along 0, along 1 (0-d ones
    along 0), along -1 with out_axes -1, along 0 with out_axes -1, and each
    argument shared in turn (``full``; else only the first)."""
    n = len(leaves)
    cfgs = [((0,) * n, 0), ((-1,) * n, -1)]
    if full:
        if any(a.ndim >= 1 for a in leaves):
            cfgs.append((tuple(1 if a.ndim >= 1 else 0 for a in leaves), 0))
        cfgs.append(((0,) * n, -1))
    if n > 1:
        for i in range(n if full else 1):
            axes = [0] * n
            axes[i] = None
            cfgs.append((tuple(axes), 0))
    return cfgs


def _groups(op, name, regular):
    """Each picked sample with two other draws of it (same structure,
    other values; the sample itself when a draw differs in structure)."""
    draws = [draw(op, name, k) for k in range(3)]
    out = []
    for c in pick(draws[0], regular):
        j = draws[0].index(c)
        group = [c]
        for d in draws[1:]:
            group.append(d[j] if j < len(d) and d[j].key() == c.key() else c)
        out.append(group)
    return out


def _vmap_tol(op, name):
    rtol, atol = tolerance(name, op.transcendental)
    # batched kernels may take other vector/tail paths: a few ulps more
    return 4 * rtol, 4 * atol


@pytest.mark.parametrize("op,name", _vmap_params())
def test_vmap(op, name):
    full = name == "float32"
    groups = _groups(op, name, regular=3 if full else 1)
    assert groups, "no sample with an array argument"
    rtol, atol = _vmap_tol(op, name)
    for group in groups:
        c = group[0]
        for in_axes, out_axes in _configs(c.leaves, full):
            with _about(c, f"vmap in_axes={in_axes} out_axes={out_axes}"):
                check_vmap(c.fun, stack_leaves(group, in_axes), in_axes,
                           out_axes, rtol=rtol, atol=atol)


@pytest.mark.parametrize("op", _params(_vmap_ops(), "test_vmap_layout"))
def test_vmap_layout(op):
    name = _vmap_dtypes(op)[0]
    groups = [g for g in _groups(op, name, regular=3)
              if _first_strided([g[0]]) is not None]
    assert groups, "no sample with an array argument of ndim >= 1"
    group = groups[0]
    c = group[0]
    rtol, atol = _vmap_tol(op, name)

    def fun(*xs):
        return c.fun(*[relayout(x) for x in xs])

    for in_axes, out_axes in _configs(c.leaves, False)[:2]:
        with _about(c, f"strided vmap in_axes={in_axes} out_axes={out_axes}"):
            check_vmap(fun, stack_leaves(group, in_axes), in_axes, out_axes,
                       rtol=rtol, atol=atol)


def test_every_op_is_covered():
    """Every op gets a vmap check unless it takes no array at all; a new
    table row without array samples must be listed on purpose."""
    without = {op.name for op in OPS
               if all(c.kind() is None for c in draw(op, op.dtypes[0]))}
    assert without == NO_ARRAY_ARGS


def test_skip_list_matches_the_table():
    """SKIP_GRAD names exactly the rows the derivative checks cannot take:
    rows the table marks non-differentiable (GRAD_EXTRA aside), rows
    without float64, and rows with no float64 sample that has float64
    outputs.  A new row of any of these kinds needs its line (and reason);
    a line for a row that could be checked must go."""
    names = {op.name for op in OPS}
    assert not set(SKIP_GRAD) - names, sorted(set(SKIP_GRAD) - names)
    assert not set(SKIP_VMAP) - names, sorted(set(SKIP_VMAP) - names)
    assert all(isinstance(why, str) and why for why in SKIP_GRAD.values())
    uncheckable = set()
    for op in OPS:
        flagged = not (op.differentiable or op.name in GRAD_EXTRA)
        if flagged or "float64" not in op.dtypes or not _grad_cases(op):
            uncheckable.add(op.name)
    assert set(SKIP_GRAD) == uncheckable, (
        f"listed but checkable: {sorted(set(SKIP_GRAD) - uncheckable)}; "
        f"not checkable but unlisted: {sorted(uncheckable - set(SKIP_GRAD))}")
    for (test, name) in KNOWN_BUGS:
        assert name in names and name not in SKIP_GRAD, (test, name)


# --------------------------------------------------------------------------
# rules that cannot exist
# --------------------------------------------------------------------------

def _no_rule_call(opname, transform):
    """A call of ``transform`` on the op that must raise: view of a float64
    array as float32, otherwise the op's first regular float64 sample."""
    if opname == "view":
        xs = [as_mx(np.random.default_rng(0).standard_normal((2, 8)))]

        def f(a):
            return [mx.view(a, mx.float32)]
    else:
        op = next(op for op in OPS if op.name == opname)
        c = next(c for c in draw(op, "float64") if c.kind() == "regular")
        fixed, argnums = c.mx_leaves(), c.float_argnums
        xs = [fixed[i] for i in argnums]

        def f(*a):
            full = list(fixed)
            for i, v in zip(argnums, a):
                full[i] = v
            return as_list(c.fun(*full))
    outs = f(*xs)
    if transform == "vjp":
        return lambda: mx.eval(mx.vjp(f, xs, [mx.ones(o.shape, o.dtype) for o in outs]))
    return lambda: mx.eval(mx.jvp(f, xs, [mx.ones(x.shape, x.dtype) for x in xs]))


@pytest.mark.parametrize(
    "opname,transform,prim",
    [pytest.param(o, t, p, id=_pid(op, t), marks=_marks(op, "test_no_rule"))
     for o, t, p in NO_RULE for op in OPS if op.name == o])
def test_no_rule(opname, transform, prim):
    call = _no_rule_call(opname, transform)
    with pytest.raises(ValueError) as info:
        call()
    msg = str(info.value)
    assert f"has no {transform} rule" in msg and prim in msg, msg
