"""vjp / jvp / vmap rules of the shape and layout primitives (Reshape,
Transpose, Broadcast, Slice, AsStrided, Contiguous, Full, Arange,
Concatenate, Pad, View) and of the ops composed from them.

* The op table's ``shape``, ``creation`` and ``cast`` families are checked
  row by row: derivatives against central differences in float64
  (``gradcheck.check_grads``, with the inputs also fed transposed and with
  negative strides), and vmap against a Python loop for in_axes 0, 1, -1
  and None (``gradcheck.check_vmap``).
* Targeted tests pin the values of the non-trivial rules (strided and
  reversed slices, overlapping as_strided windows, the pad value, full's
  value), second derivatives, dtypes kept by the rules, nested vmap, and
  View's missing derivative.
"""

import numpy as np
import pytest

from conftest import dtype_name, ember_only, make_values, mx, mx_dtype, round_to
from gradcheck import check_grads, check_vmap
from op_table import OPS, Fixed
from transform_samples import as_mx


FAMILIES = ("shape", "creation", "cast")
TABLE = [op for op in OPS if op.family in FAMILIES]

# --------------------------------------------------------------------------
# sample plumbing: the array leaves of a sample, and the call rebuilt
# from them
# --------------------------------------------------------------------------

def _leaves(obj):
    if isinstance(obj, np.ndarray):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [x for o in obj for x in _leaves(o)]
    return []


def _rebuild(obj, it):
    if isinstance(obj, np.ndarray):
        return next(it)
    if isinstance(obj, Fixed):
        return mx.array(obj.value, dtype=mx_dtype(obj.dtype))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_rebuild(o, it) for o in obj)
    return obj


def _caller(op, sample, prep=lambda x: x):
    """fun(*leaves) calling op with the sample's structure; prep maps each
    leaf (an mx array) before the call."""
    keys = list(sample.kwargs)

    def fun(*xs):
        it = iter(prep(x) for x in xs)
        args = _rebuild(tuple(sample.args), it)
        kw = {k: _rebuild(sample.kwargs[k], it) for k in keys}
        return op.op(*args, **kw)
    return fun


def _all_leaves(sample):
    return _leaves(tuple(sample.args)) + _leaves([sample.kwargs[k] for k in sample.kwargs])


def _outputs(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _flip(x):
    return x[(slice(None, None, -1),) * x.ndim] if x.ndim else x


# Layout variants for the differentiated inputs: the function receives a
# contiguous array and makes the layout itself (so derivatives flow through
# that view too).
LAYOUTS = {
    "contiguous": (lambda v: v, lambda x: x),
    "transposed": (lambda v: np.ascontiguousarray(v.T), lambda x: mx.transpose(x)),
    "negstride": (lambda v: np.ascontiguousarray(_flip(v)), _flip),
}


def _grad_params():
    for op in TABLE:
        if op.differentiable and op.layouts and "float64" in op.dtypes:
            for lay in LAYOUTS:
                yield pytest.param(op, lay, id=f"{op.name}-{lay}")


@pytest.mark.parametrize("op,layout", list(_grad_params()))
def test_grad_table(op, layout, rng):
    to_arg, prep = LAYOUTS[layout]
    checked = 0
    for sample in op.sample_inputs("float64", rng):
        vals = _all_leaves(sample)
        if not vals or any(v.dtype != np.float64 for v in vals):
            continue
        fun = _caller(op, sample, prep)
        args = [to_arg(v) for v in vals]
        outs = _outputs(fun(*[as_mx(a) for a in args]))
        if not outs or any(dtype_name(o.dtype) != "float64" for o in outs):
            continue  # casts to other dtypes: not a float64 derivative
        check_grads(fun, args)
        checked += 1
    assert checked or op.name in ("astype",), "no float64 sample checked"


# Second derivatives (reverse-over-reverse, forward-over-reverse) of the
# rules on a few rows of each primitive.
SECOND_ORDER = ["reshape", "transpose", "broadcast_to", "concatenate", "pad",
                "as_strided", "flip", "tile", "repeat", "split", "stack",
                "diff", "roll", "tril", "contiguous", "meshgrid"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_grad_table_second_order(name, rng):
    (op,) = [o for o in TABLE if o.name == name]
    for sample in op.sample_inputs("float64", rng)[:4]:
        vals = _all_leaves(sample)
        if not vals or any(v.dtype != np.float64 for v in vals):
            continue
        check_grads(_caller(op, sample), vals, order=2)


# --------------------------------------------------------------------------
# vmap of the table rows
# --------------------------------------------------------------------------

VMAP_DTYPES = ["float32", "int64", "bool", "complex64", "float16", "uint8"]
B = 3


def _batched(v, name, axis, rng):
    """B fresh samples of v's shape and dtype, stacked on `axis`."""
    items = [round_to(make_values(v.shape, name, rng, -50, 50), name) for _ in range(B)]
    return np.stack(items, axis=axis)


def _vmap_params():
    for op in TABLE:
        if not op.layouts:
            continue
        for d in VMAP_DTYPES:
            if d in op.dtypes:
                yield pytest.param(op, d, id=f"{op.name}-{d}")


@pytest.mark.parametrize("op,dtype", list(_vmap_params()))
def test_vmap_table(op, dtype, rng):
    axes_choices = [0, 1, -1, "mixed"] if dtype == "float32" else [0]
    checked = 0
    for sample in op.sample_inputs(dtype, rng):
        vals = _all_leaves(sample)
        if not vals or sample.out_dtype == "bfloat16":
            continue  # (numpy cannot hold bfloat16 results)
        fun = _caller(op, sample)
        for choice in axes_choices:
            if choice == "mixed":
                if len(vals) < 2:
                    continue
                # first leaf batched on its last axis, the others unbatched
                axes = [-1] + [None] * (len(vals) - 1)
            else:
                if choice == 1 and any(v.ndim < 1 for v in vals):
                    continue
                axes = [choice] * len(vals)
            args = [v if ax is None else _batched(v, dtype, ax, rng) for v, ax in zip(vals, axes)]
            check_vmap(fun, args, in_axes=tuple(axes), out_axes=0,
                                              rtol=1e-6, atol=1e-6)
            checked += 1
    assert checked, "no sample checked"


def test_vmap_out_axes(rng):
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)
    check_vmap(lambda a: mx.reshape(mx.transpose(a), (3, 2)), [x],
                                      in_axes=(0,), out_axes=1)
    check_vmap(lambda a: mx.pad(a[:, ::-2], [(1, 0), (0, 2)]), [x],
                                      in_axes=(2,), out_axes=-1)


def test_vmap_nested(rng):
    x = rng.standard_normal((3, 4, 5, 6))

    def f(a):
        return mx.pad(mx.reshape(a[1:, ::-2], (-1,)), [(2, 1)], constant_values=1.5)

    inner = mx.vmap(f, in_axes=1)
    got = np.array(mx.vmap(inner, in_axes=0)(as_mx(x)))
    want = np.stack([np.stack([np.array(f(as_mx(x[i, :, j]))) for j in range(5)])
                     for i in range(3)])
    np.testing.assert_allclose(got, want, rtol=0, atol=0)


def test_vmap_of_grad(rng):
    x = rng.standard_normal((4, 3, 5))

    def loss(a):
        y = mx.concatenate([mx.as_strided(a, (3, 3), (5, 1), 1), mx.broadcast_to(a[:, :1], (3, 3))], axis=1)
        return mx.sum(y * y)

    g = np.array(mx.vmap(mx.grad(loss))(as_mx(x)))
    want = np.stack([np.array(mx.grad(loss)(as_mx(x[i]))) for i in range(4)])
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------
# targeted rule checks
# --------------------------------------------------------------------------

SLICES = [
    (slice(None, None, 2),), (slice(1, None, 3),), (slice(None, None, -1),),
    (slice(5, 0, -2),), (slice(-1, 2, -3),), (slice(3, 3),), (slice(2, 9, 10),),
    (slice(None, None, -7),), (slice(1, 7), slice(None, None, -2)),
    (slice(None, None, -3), slice(4, 0, -1)),
]


@pytest.mark.parametrize("index", SLICES, ids=[str(s) for s in SLICES])
def test_slice_vjp_places_cotangent(index, rng):
    shape = (8,) if len(index) == 1 else (8, 6)
    x = rng.standard_normal(shape)
    cot = rng.standard_normal(x[index].shape)
    _, (g,) = mx.vjp(lambda a: a[index], [as_mx(x)], [as_mx(cot)])
    want = np.zeros(shape)
    want[index] = cot
    np.testing.assert_array_equal(np.array(g), want)
    check_grads(lambda a: a[index], [x], order=2)


def _as_strided_cases():
    return [((3, 3), (1, 1), 0), ((2,), (2,), 3), ((3,), (-1,), 5),
            ((4, 2), (0, 3), 0), ((2, 0), (1, 1), 0), ((5, 2), (1, 1), 1),
            ((), (), 4)]


@pytest.mark.parametrize("shape,strides,offset", _as_strided_cases())
def test_as_strided_vjp_scatter_adds(shape, strides, offset, rng):
    x = rng.standard_normal((2, 5))
    cot = rng.standard_normal(shape)
    f = lambda a: mx.as_strided(a, shape, strides, offset)  # noqa: E731
    _, (g,) = mx.vjp(f, [as_mx(x)], [as_mx(cot)])
    want = np.zeros(x.size)
    for idx in np.ndindex(*shape):
        want[offset + sum(i * s for i, s in zip(idx, strides))] += cot[idx]
    np.testing.assert_allclose(np.array(g), want.reshape(x.shape), rtol=1e-12, atol=1e-12)
    # a transposed input: as_strided reads its logical row-major order
    check_grads(lambda a: mx.as_strided(mx.transpose(a), shape, strides, offset), [x.T.copy()])
    check_grads(f, [x], order=2)


# MLX: the cotangent of the pad value is not summed (shape (5, 4) for a scalar value),
# and the derivative checks crash the process (SIGSEGV)
@ember_only
def test_pad_value_gets_padding_sum(rng):
    x = rng.standard_normal((2, 3))
    v = np.array(0.5)
    cot = rng.standard_normal((5, 4))
    widths = [(1, 2), (0, 1)]
    f = lambda a, c: mx.pad(a, widths, constant_values=c)  # noqa: E731
    _, (gx, gv) = mx.vjp(f, [as_mx(x), as_mx(v)], [as_mx(cot)])
    inside = np.zeros(cot.shape, bool)
    inside[1:3, 0:3] = True
    np.testing.assert_array_equal(np.array(gx), cot[1:3, 0:3])
    np.testing.assert_allclose(np.array(gv), cot[~inside].sum(), rtol=1e-12)
    assert gv.shape == ()
    check_grads(f, [x, v], order=2)
    # the value alone, and an empty input padded (everything is padding)
    check_grads(lambda c: mx.pad(as_mx(x), widths, constant_values=c), [v])
    check_grads(lambda a, c: mx.pad(a, [(1, 1), (2, 0)], constant_values=c), [np.zeros((0, 3)), v])


def test_full_value_grad(rng):
    row = rng.standard_normal((3,))
    _, (g,) = mx.vjp(lambda r: mx.full((4, 2, 3), r), [as_mx(row)], [mx.ones((4, 2, 3), mx.float64)])
    np.testing.assert_allclose(np.array(g), np.full(3, 8.0))
    check_grads(lambda r: mx.full((2, 3), r), [row], order=2)
    check_grads(lambda r: mx.full((2, 1, 3), r), [row[None, :]])
    check_grads(lambda r: mx.full((), r), [np.array(1.5)])
    check_grads(lambda r: mx.full((0, 3), r), [row])


def test_concatenate_partial_argnums(rng):
    a, b, c = (rng.standard_normal(s) for s in [(2, 3), (2, 1), (2, 4)])
    f = lambda x, y, z: mx.concatenate([x, y, z], axis=1)  # noqa: E731
    g = mx.grad(lambda y: mx.sum(f(as_mx(a), y, as_mx(c)) ** 2))(as_mx(b))
    np.testing.assert_allclose(np.array(g), 2 * b)
    check_grads(f, [a, b, c], argnums=[1])
    check_grads(f, [a, b, c], argnums=[0, 2], order=2)


def test_arange_and_creation_under_vmap(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    check_vmap(lambda a: a * mx.arange(3, dtype=mx.float32), [x])
    check_vmap(lambda a: a + mx.linspace(0, 1, 3), [x])
    check_vmap(lambda a: a * mx.eye(3)[1], [x])
    check_vmap(lambda a: a + mx.zeros_like(a) + mx.ones((4,)), [x], in_axes=1)
    # a batched fill value: 0-d and 1-d items
    v = rng.standard_normal((5,)).astype(np.float32)
    check_vmap(lambda c: mx.full((2, 3), c), [v])
    check_vmap(lambda c: mx.full((2, 3), c, dtype=mx.float32), [x], in_axes=0)
    check_vmap(lambda c: mx.full((2, 3), c), [x.T.copy()], in_axes=1)


def test_pad_vmap_batched_value(rng):
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)
    v = rng.standard_normal((4,)).astype(np.float32)
    f = lambda a, c: mx.pad(a, [(1, 0), (2, 1)], constant_values=c)  # noqa: E731
    check_vmap(f, [x, v], in_axes=(0, 0))
    check_vmap(f, [x[0], v], in_axes=(None, 0))
    check_vmap(f, [np.moveaxis(x, 0, 2), v], in_axes=(2, 0))
    iv = np.arange(4, dtype=np.int32)
    check_vmap(f, [x.astype(np.int32), iv], in_axes=(0, 0))


def test_view_has_no_derivative():
    x = as_mx(np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match="View"):
        mx.vjp(lambda a: mx.view(a, mx.complex64), [x], [mx.zeros((2, 3), mx.complex64)])
    with pytest.raises(ValueError, match="View"):
        mx.jvp(lambda a: mx.view(a, mx.complex64), [x], [mx.ones((2, 3), mx.float64)])
    with pytest.raises(ValueError, match="View"):
        mx.vjp(lambda a: mx.view(a, mx.float16), [mx.ones((2, 4), mx.float32)],
               [mx.zeros((2, 8), mx.float16)])


def test_view_vmap(rng):
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    for axis in (0, 1, 2, -1):
        xa = np.moveaxis(x, 0, axis)
        check_vmap(lambda a: mx.view(a, mx.uint8), [xa], in_axes=(axis,))
        check_vmap(lambda a: mx.view(a, mx.int32), [xa], in_axes=(axis,))
    # 0-d items: fine with the same itemsize, an error otherwise
    v = rng.standard_normal((5,)).astype(np.float32)
    check_vmap(lambda a: mx.view(a, mx.uint32), [v])
    with pytest.raises(ValueError, match="view"):
        mx.vmap(lambda a: mx.view(a, mx.uint8))(mx.array(v))


# Each primitive's rules keep the input's dtype (vjp) and the output's
# dtype (jvp), for every inexact dtype.
DTYPE_FUNS = {
    "reshape": lambda a: mx.reshape(a, (3, 2)),
    "transpose": lambda a: mx.transpose(a),
    "broadcast": lambda a: mx.broadcast_to(a[:1], (4, 2, 3)),
    "slice": lambda a: a[::-1, 1::2],
    "as_strided": lambda a: mx.as_strided(a, (3, 2), (1, 2), 1),
    "contiguous": lambda a: mx.contiguous(mx.transpose(a)),
    "full": lambda a: mx.full((4, 2, 3), a),
    "concatenate": lambda a: mx.concatenate([a, a * 2], axis=1),
    "pad": lambda a: mx.pad(a, [(1, 1), (0, 2)], constant_values=a[0, 0]),
    "edge_pad": lambda a: mx.pad(a, [(2, 1), (1, 2)], mode="edge"),
    "reflect_pad": lambda a: mx.pad(a, [(1, 1), (2, 2)], mode="reflect"),
    "flip": lambda a: mx.flip(a),
    "roll": lambda a: mx.roll(a, 1, axis=1),
    "tile": lambda a: mx.tile(a, (2, 1)),
    "repeat": lambda a: mx.repeat(a, 2, axis=0),
}
INEXACT_DTYPES = ["float16", "bfloat16", "float32", "float64", "complex64"]


@pytest.mark.parametrize("dtype", INEXACT_DTYPES)
@pytest.mark.parametrize("name", list(DTYPE_FUNS))
def test_rules_keep_dtypes(name, dtype, rng):
    f = DTYPE_FUNS[name]
    d = mx_dtype(dtype)
    vals = make_values((2, 3), dtype, rng, -2, 2)
    x = as_mx(vals.astype(np.complex64 if dtype == "complex64" else np.float64)).astype(d)
    out = f(x)
    cot = mx.ones(out.shape, out.dtype)
    _, (g,) = mx.vjp(f, [x], [cot])
    assert g.dtype == d and g.shape == x.shape
    _, (t,) = mx.jvp(f, [x], [mx.ones(x.shape, d)])
    assert t.dtype == out.dtype and t.shape == out.shape
    # values: the float64 (complex128 -> via real and imaginary parts) rule
    if dtype != "complex64":
        x64 = x.astype(mx.float64)
        _, (g64,) = mx.vjp(f, [x64], [cot.astype(mx.float64)])
        tol = {"float16": 1e-3, "bfloat16": 1e-2}.get(dtype, 1e-5)
        np.testing.assert_allclose(np.array(g.astype(mx.float64)), np.array(g64), rtol=tol, atol=tol)


def test_complex_vjp_is_linear(rng):
    """A linear map's cotangent is its transpose applied, no conjugation."""
    z = (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))).astype(np.complex64)
    u = (rng.standard_normal((4, 2, 3)) + 1j * rng.standard_normal((4, 2, 3))).astype(np.complex64)
    _, (g,) = mx.vjp(lambda a: mx.broadcast_to(a, (4, 2, 3)), [mx.array(z)], [mx.array(u)])
    np.testing.assert_allclose(np.array(g), u.sum(0), rtol=1e-5)
    _, (g,) = mx.vjp(lambda a: a[:, ::-2], [mx.array(z)], [mx.array(u[0, :, ::-2])])
    want = np.zeros_like(z)
    want[:, ::-2] = u[0, :, ::-2]
    np.testing.assert_array_equal(np.array(g), want)


def test_zero_d_and_empty(rng):
    s = np.array(2.5)
    check_grads(lambda a: mx.reshape(a, (1, 1)), [s], order=2)
    check_grads(lambda a: mx.broadcast_to(a, (2, 3)), [s], order=2)
    check_grads(lambda a: mx.pad(mx.reshape(a, (1,)), [(2, 1)]), [s])
    check_grads(lambda a: mx.as_strided(a, (3,), (0,), 0), [s])
    e = np.zeros((0, 3))
    check_grads(lambda a: mx.reshape(a, (3, 0)), [e])
    check_grads(lambda a: mx.broadcast_to(a[:, :1], (0, 3)), [e])
    check_grads(lambda a: mx.concatenate([a, a], axis=0), [e])
    check_grads(lambda a: a[::-1], [e])
    check_vmap(lambda a: mx.reshape(a, (0, 3)), [np.zeros((2, 3, 0), np.float32)])
    check_vmap(lambda a: mx.broadcast_to(a, (2, 3)), [np.ones((4,), np.float32)])
