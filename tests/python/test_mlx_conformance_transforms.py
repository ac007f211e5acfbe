"""MLX conformance of the transforms and of random (issue 14): argument
validation, exception types and shapes as MLX 0.32.4 gives them, and the
deliberate differences of docs/mlx-differences.md (marked ember_only).
The transforms' own API contracts are in test_transforms.py."""

import numpy as np
import pytest

from conftest import ember_only, mx, raises, to_numpy

R = mx.random


def K(seed=0):
    return R.key(seed)


# --------------------------------------------------------------------------
# random: bernoulli, normal, laplace, truncated_normal
# --------------------------------------------------------------------------

@pytest.mark.parametrize("p", [1, 0, mx.array([0, 1]), mx.array([True]), mx.array([1 + 0j])],
                         ids=["int", "zero", "int-array", "bool", "complex"])
def test_bernoulli_probability_must_be_real_float(p):
    with pytest.raises(ValueError, match="bernoulli"):
        mx.eval(R.bernoulli(p, key=K()))


@pytest.mark.parametrize("p, shape, want", [
    (0.5, None, ()),
    (mx.array([0.1, 0.5]), None, (2,)),
    (mx.array([0.1, 0.5]), (3, 2), (3, 2)),
    (mx.array([0.5], dtype=mx.float16), None, (1,)),
    (mx.array([[0.5], [0.2]]), (2, 3), (2, 3)),
])
def test_bernoulli_shapes(p, shape, want):
    b = R.bernoulli(p, shape, key=K()) if shape is not None else R.bernoulli(p, key=K())
    assert b.shape == want and b.dtype == mx.bool_


@pytest.mark.parametrize("p, shape", [(mx.array([0.1, 0.5]), (3,)), (mx.array([0.1, 0.5]), (2, 3)),
                                      (0.5, (-1,))])
def test_bernoulli_bad_shapes(p, shape):
    with pytest.raises(ValueError):
        mx.eval(R.bernoulli(p, shape, key=K()))


@pytest.mark.parametrize("kwargs, want", [
    (dict(loc=mx.array([1.0, 2.0])), (2,)),
    (dict(shape=(3, 2), loc=mx.array([1.0, 2.0])), (3, 2)),
    (dict(scale=mx.array([1.0, 2.0])), (2,)),
    (dict(loc=mx.array([[1.0], [2.0]]), scale=mx.array([1.0, 2.0, 3.0])), (2, 3)),
    (dict(shape=(2,), loc=mx.ones((3, 2))), (3, 2)),
    (dict(shape=(2,), scale=mx.ones((3, 2))), (3, 2)),
])
def test_normal_loc_scale_broadcast(kwargs, want):
    z = R.normal(key=K(), **kwargs)
    assert z.shape == want and z.dtype == mx.float32


@pytest.mark.parametrize("kwargs", [
    dict(shape=(3,), loc=mx.array([1.0, 2.0])),
    dict(shape=(3,), scale=mx.array([1.0, 2.0])),
    dict(loc=mx.ones((2,)), scale=mx.ones((3,))),
])
def test_normal_loc_scale_that_do_not_broadcast(kwargs):
    with pytest.raises(ValueError, match="broadcast"):
        mx.eval(R.normal(key=K(), **kwargs))


def test_normal_loc_scale_values():
    z = to_numpy(R.normal((4,), key=K(3)))
    w = to_numpy(R.normal((4,), loc=mx.array(1.0), scale=mx.array(2.0), key=K(3)))
    np.testing.assert_allclose(w, 1.0 + 2.0 * z, rtol=1e-6)


def test_laplace_loc_scale():
    z = to_numpy(R.laplace((4,), key=K(3)))
    w = to_numpy(R.laplace((4,), loc=1.0, scale=2.0, key=K(3)))
    np.testing.assert_allclose(w, 1.0 + 2.0 * z, rtol=1e-6)
    with pytest.raises(ValueError):
        R.laplace((2,), dtype=mx.int32, key=K())


@pytest.mark.parametrize("lower, upper, shape, want", [
    (-1, 1, None, ()),
    (mx.array([-1.0, 0.0]), 1, None, (2,)),
    (mx.array([-1.0, 0.0]), mx.array([[1.0], [2.0], [3.0]]), None, (3, 2)),
    (mx.array([-1.0, 0.0]), 1, (3, 2), (3, 2)),
])
def test_truncated_normal_shapes(lower, upper, shape, want):
    t = R.truncated_normal(lower, upper, shape, key=K()) if shape else R.truncated_normal(lower, upper, key=K())
    assert t.shape == want and t.dtype == mx.float32


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_truncated_normal_bounds_that_do_not_broadcast(shape):
    with pytest.raises(ValueError):
        mx.eval(R.truncated_normal(mx.array([-1.0, 0.0]), 1, shape, key=K()))


def test_truncated_normal_lower_above_upper_gives_lower():
    assert to_numpy(R.truncated_normal(1.0, -1.0, (4,), key=K())).tolist() == [1.0] * 4
    t = to_numpy(R.truncated_normal(mx.array([2.0, 0.0]), mx.array([1.0, 1.0]), key=K()))
    assert t[0] == 2.0 and 0.0 <= t[1] <= 1.0


def test_truncated_normal_dtypes():
    assert R.truncated_normal(-1, 1, dtype=mx.float16, key=K()).dtype == mx.float16
    with pytest.raises(ValueError):
        R.truncated_normal(-1, 1, dtype=mx.int32, key=K())


def test_sampling_axis_of_a_0d_array_is_index_error():
    with pytest.raises(IndexError):
        mx.eval(R.categorical(mx.array(0.0), key=K()))
    with pytest.raises(IndexError):
        mx.eval(R.permutation(mx.array(3), key=K()))


@ember_only  # MLX 0.32.4: "[uniform] Unsupported type" / "dtype must be float32"
def test_float64_samplers():
    assert R.truncated_normal(-1, 1, (3,), dtype=mx.float64, key=K()).dtype == mx.float64
    assert R.multivariate_normal(mx.zeros((2,)), mx.eye(2), dtype=mx.float64, key=K()).dtype == mx.float64
    assert R.uniform(mx.array(0.0, dtype=mx.float64), 1.0, (3,), dtype=mx.float64, key=K()).dtype == mx.float64


# --------------------------------------------------------------------------
# transforms: the deliberate differences
# --------------------------------------------------------------------------

@ember_only  # MLX differentiates integers in integer arithmetic (truncated)
def test_integers_carry_no_derivative():
    xi = mx.array([1, 2, 3])
    for f in (lambda x: (x * x).sum(), lambda x: mx.sin(x).sum(), lambda x: x.sum()):
        g = mx.grad(f)(xi)
        assert g.dtype == mx.int32 and to_numpy(g).tolist() == [0, 0, 0]
    g = mx.grad(lambda x: (x * x).sum())(mx.array([1, 2], dtype=mx.uint8))
    assert g.dtype == mx.uint8 and to_numpy(g).tolist() == [0, 0]
    # a float->int cast has a zero derivative (MLX passes the cotangent through)
    close = lambda a, b: np.testing.assert_allclose(to_numpy(a), b)
    close(mx.grad(lambda x: (x.astype(mx.int32) * 1.0).sum())(mx.array([1.5, 2.5])), [0.0, 0.0])
    _, (t,) = mx.jvp(lambda x: x.astype(mx.int32), [mx.array([1.0, 2.0])], [mx.ones(2)])
    assert to_numpy(t).tolist() == [0, 0]
    # an integer argument's tangent does not count
    _, (t,) = mx.jvp(lambda x, i: x * i, [mx.array([1.0, 2.0]), mx.array([1, 2])],
                     [mx.ones(2), mx.ones(2, dtype=mx.int32)])
    close(t, [1.0, 2.0])
    # the zero tangent of a boolean output is boolean
    _, (t,) = mx.jvp(lambda x: x > 1, [mx.array([1.0, 2.0])], [mx.ones(2)])
    assert t.dtype == mx.bool_ and to_numpy(t).tolist() == [False, False]


@ember_only  # MLX raises "[gather] Cannot calculate VJP with respect to indices"
def test_indices_computed_from_the_primal_need_no_stop_gradient():
    x = mx.array([1.0, 3.0, 2.0])
    np.testing.assert_allclose(to_numpy(mx.grad(lambda v: v[mx.argmax(v)])(x)), [0.0, 1.0, 0.0])
    np.testing.assert_allclose(to_numpy(mx.grad(lambda v: v[mx.argsort(v)][-1])(x)), [0.0, 1.0, 0.0])
    g = mx.grad(lambda i: mx.take(x, i).sum())(mx.array([0, 1]))
    assert g.dtype == mx.int32 and to_numpy(g).tolist() == [0, 0]


@ember_only  # MLX's jvp takes the first of tied extrema, its vjp splits
def test_jvp_of_max_at_ties_is_the_transpose_of_its_vjp():
    x = mx.array([2.0, 2.0, 1.0])
    _, (t,) = mx.jvp(lambda v: v.max(), [x], [mx.array([1.0, 3.0, 5.0])])
    np.testing.assert_allclose(to_numpy(t), 2.0)
    _, (g,) = mx.vjp(lambda v: v.max(), [x], [mx.array(1.0)])
    np.testing.assert_allclose(to_numpy(g), [0.5, 0.5, 0.0])
    np.testing.assert_allclose(to_numpy(mx.jacfwd(lambda v: v.max())(x)),
                               to_numpy(mx.jacrev(lambda v: v.max())(x)))


@ember_only  # MLX: "JVP is not implemented for cumulative prod/min/max"
def test_jvp_of_cumulative_prod_max_min():
    x = mx.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(to_numpy(mx.jvp(mx.cumprod, [x], [mx.array([1.0, 0, 0])])[1][0]), [1.0, 2.0, 6.0])
    np.testing.assert_allclose(to_numpy(mx.jvp(mx.cummax, [x], [mx.array([1.0, 0, 0])])[1][0]), [1.0, 0.0, 0.0])


def test_gradients_and_outputs_are_new_arrays():
    # as MLX: no transform hands back the very array object it was given
    x, c = mx.array([1.0, 2.0]), mx.array([1.0, 1.0])
    outs, grads = mx.vjp(lambda a: a, [x], [c])
    assert outs[0] is not x and grads[0] is not c and grads[0] is not x
    outs, tans = mx.jvp(lambda a: a, [x], [c])
    assert outs[0] is not x and tans[0] is not c
    s = mx.array(2.0)
    assert mx.grad(lambda a: a)(s) is not s
    v, g = mx.value_and_grad(lambda a: a)(s)
    assert v is not g and v is not s
    assert mx.vmap(lambda a: a)(x) is not x
    unused = mx.array([1.0, 2.0])
    g = mx.grad(lambda a, b: a.sum(), argnums=1)(x, unused)
    assert g is not unused and to_numpy(g).tolist() == [0.0, 0.0]


@ember_only  # MLX does part of the arithmetic in the half type (last-bit differences)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_samples_are_float32_samples_rounded_once(dtype):
    dt = getattr(mx, dtype)
    pairs = [
        (R.normal((64,), dtype=dt, key=K(7)), R.normal((64,), key=K(7))),
        (R.uniform(-1, 1, (64,), dtype=dt, key=K(7)), R.uniform(-1, 1, (64,), key=K(7))),
        (R.gumbel((64,), dtype=dt, key=K(7)), R.gumbel((64,), key=K(7))),
    ]
    for half, full in pairs:
        assert half.dtype == dt
        np.testing.assert_array_equal(to_numpy(half.astype(mx.float32)), to_numpy(full.astype(dt).astype(mx.float32)))


@ember_only  # MLX scales the float32 erfinv by sqrt(2) in float64: ~1e-7 apart
def test_float64_normal_is_the_float32_normal_widened():
    np.testing.assert_array_equal(to_numpy(R.normal((64,), dtype=mx.float64, key=K(7))),
                                  to_numpy(R.normal((64,), key=K(7))).astype(np.float64))


def test_grad_through_in_place_updates():
    x = mx.array([1.0, 2.0, 3.0])
    cap = mx.zeros(3)

    def f(v):
        cap[1] = v[0] * 2  # an in-place update of a captured array
        return (cap * v).sum()

    np.testing.assert_allclose(to_numpy(mx.grad(f)(x)), [4.0, 2.0, 0.0])
    assert to_numpy(cap).tolist() == [0.0, 2.0, 0.0]  # the update stays, with the primal's value

    def g(v):
        v[0] = 5.0  # the argument itself: its first element no longer depends on it
        return (v * v).sum()

    y = mx.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(to_numpy(mx.grad(g)(y)), [0.0, 4.0, 6.0])
    assert to_numpy(y).tolist() == [1.0, 2.0, 3.0]  # the caller's array is untouched

    def h(v):
        v += 1
        return (v * v).sum()

    np.testing.assert_allclose(to_numpy(mx.grad(h)(y)), [4.0, 6.0, 8.0])


def test_vjp_jvp_read_an_array_of_primals_as_its_rows():
    rows = mx.array([[1.0, 2.0], [3.0, 4.0]])
    outs, vjps = mx.vjp(lambda a, b: a * b, rows, mx.ones((1, 2)))
    np.testing.assert_allclose(to_numpy(outs[0]), [3.0, 8.0])
    np.testing.assert_allclose(to_numpy(vjps[0]), [3.0, 4.0])
    np.testing.assert_allclose(to_numpy(vjps[1]), [1.0, 2.0])
    outs, jvps = mx.jvp(lambda a, b: a * b, rows, mx.ones((2, 2)))
    np.testing.assert_allclose(to_numpy(jvps[0]), [4.0, 6.0])
    with pytest.raises(TypeError):  # one 1-D array: two 0-d primals for a one-argument function
        mx.vjp(lambda a: a, mx.array([1.0, 2.0]), mx.ones((2,)))


@ember_only  # MLX raises RuntimeError "std::bad_cast"
@pytest.mark.parametrize("ret", [lambda a: {"a": a}, lambda a: [[a]], lambda a: (a, 1), lambda a: None])
def test_vjp_jvp_of_a_function_not_returning_arrays(ret):
    x = mx.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"\[vjp\]"):
        mx.vjp(ret, [x], [mx.ones(2)])
    with pytest.raises(TypeError, match=r"\[jvp\]"):
        mx.jvp(ret, [x], [mx.ones(2)])


@ember_only  # MLX differentiates the vmapped function itself, ignoring the rule
def test_custom_jvp_survives_vmap():
    @mx.custom_function
    def h(x):
        return x * x

    @h.jvp
    def h_jvp(primals, tangents):
        return tangents * 5

    t = mx.jvp(mx.vmap(h), [mx.ones((2, 2))], [mx.ones((2, 2))])[1][0]
    np.testing.assert_allclose(to_numpy(t), np.full((2, 2), 5.0))
    t = mx.vmap(lambda a: mx.jvp(h, [a], [mx.ones(2)])[1][0])(mx.ones((2, 2)))  # MLX agrees here
    np.testing.assert_allclose(to_numpy(t), np.full((2, 2), 5.0))


def test_custom_function_registrations_return_the_custom_function():
    g = mx.custom_function(lambda x: x * 2).vjp(lambda p, c, o: c * 9)
    np.testing.assert_allclose(to_numpy(mx.grad(lambda a: g(a).sum())(mx.ones(2))), [9.0, 9.0])
    h = mx.custom_function(lambda x: x * 2).jvp(lambda p, t: t * 4).vmap(lambda x, ax: (x * 3, ax))
    np.testing.assert_allclose(to_numpy(mx.jvp(h, [mx.ones(2)], [mx.ones(2)])[1][0]), [4.0, 4.0])
    np.testing.assert_allclose(to_numpy(mx.vmap(h)(mx.ones((2, 2)))), np.full((2, 2), 3.0))


@pytest.mark.parametrize("make", [
    lambda f: mx.grad(f), lambda f: mx.value_and_grad(f), lambda f: mx.vmap(f), lambda f: mx.checkpoint(f),
    lambda f: mx.custom_function(f), lambda f: mx.vjp(f, [mx.ones(1)], [mx.ones(1)]),
    lambda f: mx.jvp(f, [mx.ones(1)], [mx.ones(1)]),
], ids=["grad", "value_and_grad", "vmap", "checkpoint", "custom_function", "vjp", "jvp"])
def test_transforms_of_a_non_callable_raise_type_error(make):
    with pytest.raises(TypeError):
        make(3)


@pytest.mark.parametrize("a", [1.0, [1.0, 2.0]])
def test_stop_gradient_takes_arrays_only(a):
    with pytest.raises(TypeError):
        mx.stop_gradient(a)


@ember_only  # MLX drops the max's cotangent of a 0-d minmax (2 instead of 5)
def test_vjp_of_minmax_of_a_0d_array_adds_both_cotangents():
    _, (g,) = mx.vjp(lambda a: mx.minmax(a), [mx.array(1.5)], [mx.array(2.0), mx.array(3.0)])
    np.testing.assert_allclose(to_numpy(g), 5.0)
    _, (g,) = mx.vjp(lambda a: mx.minmax(a), [mx.array([1.5])], [mx.array(2.0), mx.array(3.0)])
    np.testing.assert_allclose(to_numpy(g), [5.0])  # MLX agrees on a 1-element array


# --------------------------------------------------------------------------
# masked assignment (a[mask] = v): lazy, so it works under vmap and grad
# --------------------------------------------------------------------------

def _np_masked_assign(a, m, v):
    """NumPy's a[m] = v, with MLX's rule that v may carry more rows than
    there are true positions (the first ones are used)."""
    a = np.array(a)
    v = np.asarray(v, dtype=a.dtype)
    n = int(m.sum())
    rest = a.shape[m.ndim:]
    if v.ndim == len(rest) + 1 and v.shape[0] > 1:
        v = v[:n]
    a[m] = v
    return a


def _masked(a, m, v):
    a = mx.array(a)
    a[m] = v
    return a


_MASK_CASES = [
    # (a shape, mask shape, value shape)
    ((6,), (6,), ()), ((6,), (6,), (6,)), ((3, 4), (3, 4), (12,)), ((3, 4), (3,), (4,)),
    ((3, 4), (3,), (3, 4)), ((3, 4), (3,), (1, 4)), ((2, 3, 2), (2, 3), (6, 2)), ((2, 3, 2), (2,), (3, 2)),
]


@pytest.mark.parametrize("ashape,mshape,vshape", _MASK_CASES)
def test_masked_assignment_matches_numpy(ashape, mshape, vshape):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(ashape).astype(np.float32)
    m = rng.random(mshape) < 0.5
    v = rng.standard_normal(vshape).astype(np.float32)
    np.testing.assert_array_equal(to_numpy(_masked(mx.array(a), mx.array(m), mx.array(v))),
                                  _np_masked_assign(a, m, v))


@pytest.mark.parametrize("ashape,mshape,vshape", [
    c if c != ((3, 4), (3,), (1, 4)) else pytest.param(*c, marks=[ember_only]) for c in _MASK_CASES])
@pytest.mark.parametrize("mapped", ["mask", "all", "value"])
def test_masked_assignment_under_vmap_matches_a_loop(ashape, mshape, vshape, mapped):
    """MLX's masked scatter works under vmap, the number of true positions
    differing per batch element; Ember's assignment is lazy and does too.
    (MLX gets a one-row value broadcast over a row mask wrong under vmap,
    docs/mlx-differences.md.)"""
    rng = np.random.default_rng(1)
    B = 3
    a = rng.standard_normal((B,) + ashape).astype(np.float32)
    m = rng.random((B,) + mshape) < 0.5
    v = rng.standard_normal((B,) + vshape).astype(np.float32)
    axes = {"mask": (None, 0, None), "all": (0, 0, 0), "value": (0, None, 0)}[mapped]
    args = [a, m, v]
    got = mx.vmap(_masked, in_axes=axes)(*[mx.array(x if ax == 0 else x[0]) for x, ax in zip(args, axes)])
    want = np.stack([_np_masked_assign(*[x[b] if ax == 0 else x[0] for x, ax in zip(args, axes)])
                     for b in range(B)])
    np.testing.assert_array_equal(to_numpy(got), want)


def test_masked_assignment_gradient():
    m = mx.array([True, False, True, True, False])
    w = mx.array([1.0, 2.0, 3.0, 4.0, 5.0])
    f = lambda a, v: (_masked(a, m, v) * w).sum()
    ga, gv = mx.grad(f, argnums=(0, 1))(mx.zeros((5,)), mx.zeros((4,)))
    assert ga.tolist() == [0.0, 2.0, 0.0, 0.0, 5.0]
    assert gv.tolist() == [1.0, 3.0, 4.0, 0.0]        # the unused last row gets nothing
    g = mx.vmap(mx.grad(lambda v, mm: (_masked(mx.zeros((5,)), mm, v) * w).sum()),
                in_axes=(None, 0))(mx.zeros((3,)), mx.array([[True, False, True, False, False],
                                                              [False, False, False, True, True]]))
    assert g.tolist() == [[1.0, 3.0, 0.0], [4.0, 5.0, 0.0]]


def test_masked_assignment_errors():
    a = mx.zeros((3, 4))
    with raises(ValueError, r"setitem.*\(8\).*\(3,4\)"):
        _masked(a, mx.array([True, False, True]), mx.zeros((8,)))
    with raises(ValueError, r"setitem.*too many dims"):
        _masked(mx.zeros((4,)), mx.array([True] * 4), mx.zeros((2, 2)))


@ember_only
def test_masked_assignment_with_too_few_values_raises():
    """MLX: a RuntimeError at evaluation ("Source does not have enough
    elements"), and a crash (SIGFPE) for an empty value; Ember raises the
    ValueError of a value that does not fit, when assigning."""
    with pytest.raises(ValueError, match=r"setitem.*selects 3 positions.*\(2\)"):
        _masked(mx.zeros((4,)), mx.array([True, False, True, True]), mx.zeros((2,)))
    with pytest.raises(ValueError, match=r"setitem.*selects 1 positions.*\(0\)"):
        _masked(mx.zeros((4,)), mx.array([True, False, False, False]), mx.zeros((0,)))
    a = mx.zeros((4,))
    a[mx.array([False] * 4)] = mx.zeros((0,))              # nothing selected, nothing read
    assert a.tolist() == [0.0] * 4
