"""vmap rules share one set of batch helpers (transforms/transforms.h).

* The batch sizes of a rule's mapped inputs must agree: a rule that meets two
  sizes raises a ValueError naming its primitive and both sizes instead of
  broadcasting a batch of 1 against the others. Top-level vmap checks its
  own inputs, so the sizes can only disagree inside the graph when a rule
  (here a custom one) returns a wrong batch; every multi-input family is
  checked.
* Unmapped operands get the batch the way each rule needs it (broadcast to
  B copies, or a size-1 axis where the op broadcasts its operands): every
  case is compared with a Python loop.
* The elementwise output dtype is one rule, shared by the ops and the
  primitives' vmap: vmapped outputs have the unmapped dtype for every input
  dtype.
"""

import numpy as np
import pytest

from conftest import ALL, ember_only, mx, to_numpy
import op_table

pytestmark = ember_only


def loop(fun, args, in_axes):
    """fun applied example by example, stacked on axis 0."""
    n = next(a.shape[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = []
    for i in range(n):
        xs = [a if ax is None else mx.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]
        outs.append(fun(*xs))
    return mx.stack(outs)


def assert_same(got, want):
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    np.testing.assert_array_equal(to_numpy(got), to_numpy(want))


def check_vmap(fun, args, in_axes):
    assert_same(mx.vmap(fun, in_axes=tuple(in_axes))(*args), loop(fun, args, in_axes))


# ---- a rule meeting two batch sizes ----------------------------------------

def one_row(x):
    """x (identity), whose vmap rule wrongly returns a batch of one."""

    @mx.custom_function
    def f(a):
        return a

    @f.vmap
    def f_vmap(inputs, axes):
        a, ax = inputs, axes  # a one-argument function: the argument itself (as MLX)
        return mx.take(mx.moveaxis(a, ax, 0), mx.array([0]), axis=0), 0

    return f(x)


B = 3
X = mx.arange(B * 4, dtype=mx.float32).reshape(B, 4)
IDX = mx.array([[0, 1], [2, 3], [1, 1]])

MISMATCHED = [
    ("Add", lambda x, i: one_row(x) + x),
    ("Select", lambda x, i: mx.where(one_row(x) > 2, x, 0.0)),
    ("Gather", lambda x, i: mx.take(one_row(x), i)),
    ("Gather", lambda x, i: mx.take_along_axis(x, one_row(i), axis=0)),
    ("ScatterAdd", lambda x, i: one_row(x).at[i].add(1.0)),
    ("ScatterAdd", lambda x, i: x.at[i].add(one_row(i.astype(mx.float32)))),
    ("Concatenate", lambda x, i: mx.concatenate([one_row(x), x])),
    ("Pad", lambda x, i: mx.pad(one_row(x), 1, constant_values=x[0])),
    ("Matmul", lambda x, i: mx.matmul(one_row(x)[:, None], x[None, :])),
    ("SearchSorted", lambda x, i: mx.searchsorted(one_row(x), x[:2])),
    ("Unique", lambda x, i: mx.unique(one_row(x), size=4, fill_value=x[0])[0]),
    ("ConvGeneral", lambda x, i: mx.conv1d(one_row(x).reshape(1, 4, 1), x.reshape(1, 4, 1))),
]


@pytest.mark.parametrize("prim,fun", MISMATCHED, ids=[f"{p}-{k}" for k, (p, _) in enumerate(MISMATCHED)])
def test_mismatched_batch_sizes_raise(prim, fun):
    loop(fun, [X, IDX], [0, 0])  # example by example the function is fine
    with pytest.raises(ValueError, match=rf"\[vmap\] {prim}: Inconsistent sizes") as e:
        mx.eval(mx.vmap(fun)(X, IDX))
    assert "has size 1 " in str(e.value) and "has size 3 " in str(e.value)


def test_top_level_mismatch_still_raises():
    with pytest.raises(ValueError, match=r"\[vmap\] Inconsistent sizes.* 3.* 2"):
        mx.vmap(lambda a, b: a + b)(mx.ones((3, 2)), mx.ones((2, 2)))


# ---- unmapped operands ---------------------------------------------------------

RNG = np.random.default_rng(7)
A = mx.array(RNG.standard_normal((3, 4)).astype(np.float32))
V = mx.array(RNG.standard_normal((4,)).astype(np.float32))
I = mx.array([[0, 2], [3, 1], [1, 1]])
I0 = mx.array([2, 0])
I2 = mx.array([[0, 1], [1, 0], [1, 1]])
SORTED = mx.sort(A, axis=-1)


@pytest.mark.parametrize("fun,args,in_axes", [
    # gather: batched indices against an unbatched source and vice versa, two
    # index arrays of which one is batched (the other broadcasts from size 1)
    (lambda a, i: mx.take(a, i), [V, I], [None, 0]),
    (lambda a, i: mx.take(a, i), [A, I0], [0, None]),
    (lambda a, i: a[i, mx.array([1, 0])], [A.reshape(3, 2, 2), I2], [None, 0]),
    (lambda a, i: a[i, mx.array([1, 0])], [A.reshape(3, 2, 2), I2], [0, 0]),
    (lambda a, i: a[mx.array([1, 0]), i], [A.reshape(3, 2, 2), I2], [0, 0]),
    # scatter: every combination of batched destination, indices, updates
    (lambda a, i: a.at[i].add(mx.array([10.0, 20.0])), [V, I], [None, 0]),
    (lambda a, i: a.at[i].add(mx.array([10.0, 20.0])), [A, I0], [0, None]),
    (lambda a, i, u: a.at[i].add(u), [V, I, A[:, :2]], [None, 0, 0]),
    (lambda a, i, u: a.at[i].add(u), [A, I0, A[:, :2]], [0, None, 0]),
    (lambda a, i, u: a.at[i].maximum(u), [V, I0, A[:, :2]], [None, None, 0]),
    # shape ops with an unbatched operand
    (lambda a, b: mx.concatenate([a, b]), [A, V], [0, None]),
    (lambda a, b: mx.concatenate([a, b]), [V, A], [None, 0]),
    (lambda a, v: mx.pad(a, 1, constant_values=v), [V, A[:, 0]], [None, 0]),
    (lambda a, v: mx.pad(a, 1, constant_values=v), [A, V[0]], [0, None]),
    # sort family
    (lambda s, v: mx.searchsorted(s, v), [SORTED, V], [0, None]),
    (lambda s, v: mx.searchsorted(s, v), [SORTED[0], A], [None, 0]),
    (lambda s, v: mx.searchsorted(s, v, side="right"), [SORTED, A], [0, 0]),
    (lambda a, f: mx.unique(a, size=5, fill_value=f)[0], [mx.round(A), V[:3]], [0, 0]),
    (lambda a, f: mx.unique(a, size=5, fill_value=f)[0], [mx.round(V), V[:3]], [None, 0]),
    # elementwise, matmul, where, conv with one side unbatched
    (lambda a, b: a * b, [A, V], [0, None]),
    (lambda a, b: a * b, [A, A.reshape(4, 3)], [1, 0]),
    (lambda c, a, b: mx.where(c, a, b), [A > 0, V, A.T], [0, None, 1]),
    (lambda a, b: mx.matmul(a, b), [A.reshape(3, 2, 2), A[:2, :2]], [0, None]),
    (lambda a, b: mx.matmul(a, b), [A[:2, :2], A.reshape(3, 2, 2)], [None, 0]),
    (lambda a, b: mx.matmul(a, b), [A.reshape(3, 2, 2), A.reshape(2, 3, 2)], [0, 1]),
    (lambda x, w: mx.conv1d(x.reshape(1, 4, 1), w.reshape(1, 2, 1)), [A, V[:2]], [0, None]),
    (lambda x, w: mx.conv1d(x.reshape(1, 4, 1), w.reshape(1, 2, 1)), [V, A[:, :2]], [None, 0]),
    (lambda x, w: mx.conv1d(x.reshape(1, 4, 1), w.reshape(1, 2, 1)), [A, A[:, :2]], [0, 0]),
])
def test_unmapped_operands_match_a_loop(fun, args, in_axes):
    check_vmap(fun, args, in_axes)


def test_unmapped_operand_of_a_gradient_rule():
    # the vjp of take under vmap scatters an unbatched cotangent shape
    g = mx.grad(lambda a, i: mx.take(a, i).sum())
    check_vmap(g, [A, I], [0, 0])
    check_vmap(g, [V, I], [None, 0])


# ---- the elementwise output dtype --------------------------------------------------

ELEMENTWISE = [o for o in op_table.OPS if o.family in ("unary", "binary") and not o.multi_output]
VALUES = np.array([[1, 2, 3], [0, 1, 2]], dtype=np.float64)


def _inputs(dtype):
    x = mx.array(VALUES).astype(getattr(mx, "bool_" if dtype == "bool" else dtype))
    return x, x[::-1]


@pytest.mark.parametrize("info", ELEMENTWISE, ids=[o.name for o in ELEMENTWISE])
def test_vmapped_elementwise_dtype_is_the_unmapped_one(info):
    arity = 1 if info.family == "unary" else 2
    checked = 0
    for dtype in ALL:
        x, y = _inputs(dtype)
        args = [x, y][:arity]
        try:
            ref = loop(info.op, args, [0] * arity)
            mx.eval(ref)
        except (ValueError, TypeError):
            continue  # the op does not take this dtype
        checked += 1
        for in_axes in ([0], [1]) if arity == 1 else ([0, 0], [0, None], [None, 0], [1, 1]):
            got = mx.vmap(info.op, in_axes=tuple(in_axes))(*args)
            want = loop(info.op, args, in_axes)
            assert got.dtype == want.dtype, (info.name, dtype, in_axes)
            np.testing.assert_array_equal(to_numpy(got), to_numpy(want), err_msg=f"{info.name} {dtype}")
    assert checked


@pytest.mark.parametrize("info", [o for o in ELEMENTWISE if o.family == "binary"],
                         ids=[o.name for o in ELEMENTWISE if o.family == "binary"])
def test_vmapped_mixed_dtype_binary(info):
    for da, db in [("int32", "float16"), ("bool", "int8"), ("uint8", "float32"), ("int64", "bfloat16")]:
        a = mx.array(VALUES).astype(getattr(mx, "bool_" if da == "bool" else da))
        b = mx.array(VALUES).astype(getattr(mx, db))
        try:
            mx.eval(info.op(a, b))
        except (ValueError, TypeError):
            continue
        got = mx.vmap(info.op, in_axes=(0, 1))(a, b.T)
        want = loop(info.op, [a, b.T], [0, 1])
        assert got.dtype == want.dtype, (info.name, da, db)
