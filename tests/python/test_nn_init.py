"""nn.init: the initializers' signatures (the API list's), shapes and
dtypes, their statistics on large arrays (mean and standard deviation
within sampling tolerance, the bounds of the uniform ones), the fans of
MLX's weight layout (out, *kernel, in) -- pinned exactly against
``mx.random`` draws under the same seed --, orthogonality, the sparsity of
each row, determinism under ``mx.random.seed``, and the errors.

Runs on MLX too: ``EMBER_TEST_BACKEND=mlx ... -m "not ember_only"``.
"""

import inspect
import math

import numpy as np
import pytest

from conftest import IS_MLX, assert_close, dtype_name, ember_only, mx, raises, to_numpy
from test_nn_losses import _declared, _listed_signatures, _params

if IS_MLX:
    import mlx.nn as nn
else:
    import ember.nn as nn

I = nn.init
LISTED = _listed_signatures("nn.init.")
NAMES = ["constant", "normal", "uniform", "identity", "glorot_normal", "glorot_uniform", "he_normal",
         "he_uniform", "orthogonal", "sparse"]
FLOATS = ["float32", "float16", "bfloat16"]


def _make(name, dtype=None, **kw):
    """The initializer ``name`` with its required arguments filled in."""
    required = {"constant": {"value": 0.5}, "sparse": {"sparsity": 0.5}}.get(name, {})
    if dtype is not None:
        kw["dtype"] = getattr(mx, dtype)
    return getattr(I, name)(**{**required, **kw})


def _shape_for(name):
    return (6, 6) if name in ("identity",) else (6, 8)


# --------------------------------------------------------------------------
# signatures
# --------------------------------------------------------------------------

def test_every_listed_initializer_is_tested():
    assert sorted(LISTED) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_signature(name):
    assert _declared(getattr(I, name)) == _params(LISTED[name])


INNER = {
    # the returned function's parameters, as MLX's
    "constant": [("a", "<none>")], "normal": [("a", "<none>")], "uniform": [("a", "<none>")],
    "identity": [("arr", "<none>")], "orthogonal": [("a", "<none>")], "sparse": [("a", "<none>")],
    "glorot_normal": [("a", "<none>"), ("gain", 1.0)], "glorot_uniform": [("a", "<none>"), ("gain", 1.0)],
    "he_normal": [("a", "<none>"), ("mode", "fan_in"), ("gain", 1.0)],
    "he_uniform": [("a", "<none>"), ("mode", "fan_in"), ("gain", 1.0)],
}


@pytest.mark.parametrize("name", NAMES)
def test_initializer_signature(name):
    assert _declared(_make(name)) == INNER[name]


# --------------------------------------------------------------------------
# shapes and dtypes
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", NAMES)
def test_shape_and_dtype(name, dtype):
    """The shape is the input's, the dtype the initializer's (not the
    input's)."""
    shape = _shape_for(name)
    out = _make(name, dtype)(mx.zeros(shape, dtype=mx.int32))
    assert out.shape == shape
    assert dtype_name(out.dtype) == dtype
    assert np.all(np.isfinite(to_numpy(out)))


@pytest.mark.parametrize("name", NAMES)
def test_default_dtype_is_float32(name):
    out = _make(name)(mx.zeros(_shape_for(name), dtype=mx.float16))
    assert out.dtype == mx.float32


@pytest.mark.parametrize("shape", [(7,), (2, 3, 4), (5, 1), ()])
def test_shapes_of_any_rank(shape):
    for name in ["constant", "normal", "uniform"]:
        assert _make(name)(mx.zeros(shape)).shape == shape


@pytest.mark.parametrize("shape", [(4, 3, 5), (4, 3, 3, 5), (2, 3, 3, 3, 5), (0, 5)])
def test_conv_and_empty_shapes(shape):
    for name in ["glorot_normal", "glorot_uniform", "he_normal", "he_uniform"]:
        assert _make(name)(mx.zeros(shape)).shape == shape


def test_constant_values():
    assert_close(I.constant(0.5)(mx.zeros((2, 3))), np.full((2, 3), 0.5), dtype="float32")
    assert_close(I.constant(3, dtype=mx.int32)(mx.zeros((2,))), [3, 3], dtype="int32")
    assert_close(I.constant(2, dtype=mx.bfloat16)(mx.zeros((2,), mx.int32)), [2.0, 2.0], dtype="bfloat16")
    assert_close(I.constant(-1.5)(mx.zeros(())), -1.5)


@ember_only
def test_constant_fractional_value_in_an_integer_dtype():
    """mx.full's conversion to the dtype (MLX's full keeps a float value
    float32 whatever the dtype asked for)."""
    assert_close(I.constant(0.5, dtype=mx.int32)(mx.zeros((2,))), [0, 0], dtype="int32")


def test_identity():
    assert_close(I.identity()(mx.zeros((3, 3))), np.eye(3), dtype="float32")
    assert_close(I.identity(dtype=mx.int32)(mx.zeros((2, 2))), np.eye(2, dtype=np.int32), dtype="int32")


# --------------------------------------------------------------------------
# statistics (fixed seeds; tolerances of about 5 standard errors)
# --------------------------------------------------------------------------

N = (400, 500)   # 200 000 samples


def _moments(x):
    v = to_numpy(x).astype(np.float64).ravel()
    return v.mean(), v.std()


def _check_normal(x, mean, std):
    m, s = _moments(x)
    n = x.size
    assert abs(m - mean) < 5 * std / math.sqrt(n), (m, mean)
    assert abs(s - std) < 5 * std / math.sqrt(2 * n) + 1e-3 * std, (s, std)


def _check_uniform(x, low, high):
    v = to_numpy(x).astype(np.float64)
    assert v.min() >= low and v.max() <= high, (v.min(), v.max(), low, high)
    width = high - low
    n = x.size
    # the extremes come close to the bounds: P(gap > 20 width / n) ~ e^-20
    assert v.min() < low + 20 * width / n and v.max() > high - 20 * width / n
    m, s = _moments(x)
    std = width / math.sqrt(12)
    assert abs(m - (low + high) / 2) < 5 * std / math.sqrt(n)
    assert abs(s - std) < 5 * std / math.sqrt(n) + 1e-3 * std


def test_normal_statistics():
    mx.random.seed(11)
    _check_normal(I.normal()(mx.zeros(N)), 0.0, 1.0)
    _check_normal(I.normal(mean=2.0, std=0.3)(mx.zeros(N)), 2.0, 0.3)


def test_uniform_statistics():
    mx.random.seed(12)
    _check_uniform(I.uniform()(mx.zeros(N)), 0.0, 1.0)
    _check_uniform(I.uniform(low=-3.0, high=5.0)(mx.zeros(N)), -3.0, 5.0)


# (shape, fan_in, fan_out) in MLX's layout (out, *kernel, in)
FANS = [((400, 500), 500, 400), ((64, 3, 3, 32), 288, 576), ((50, 7, 60), 420, 350),
        ((8, 3, 3, 3, 16), 432, 216)]


@pytest.mark.parametrize("shape,fan_in,fan_out", FANS)
def test_glorot_statistics(shape, fan_in, fan_out):
    mx.random.seed(13)
    std = math.sqrt(2.0 / (fan_in + fan_out))
    _check_normal(I.glorot_normal()(mx.zeros(shape)), 0.0, std)
    _check_normal(I.glorot_normal()(mx.zeros(shape), gain=3.0), 0.0, 3 * std)
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    _check_uniform(I.glorot_uniform()(mx.zeros(shape)), -limit, limit)
    _check_uniform(I.glorot_uniform()(mx.zeros(shape), gain=0.5), -limit / 2, limit / 2)


@pytest.mark.parametrize("shape,fan_in,fan_out", FANS)
def test_he_statistics(shape, fan_in, fan_out):
    mx.random.seed(14)
    for mode, fan in [("fan_in", fan_in), ("fan_out", fan_out)]:
        _check_normal(I.he_normal()(mx.zeros(shape), mode=mode), 0.0, 1 / math.sqrt(fan))
        _check_normal(I.he_normal()(mx.zeros(shape), mode=mode, gain=2.0), 0.0, 2 / math.sqrt(fan))
        limit = math.sqrt(3.0 / fan)
        _check_uniform(I.he_uniform()(mx.zeros(shape), mode=mode), -limit, limit)
        _check_uniform(I.he_uniform()(mx.zeros(shape), mode=mode, gain=5.0), -5 * limit, 5 * limit)
    # mode defaults to fan_in
    _check_normal(I.he_normal()(mx.zeros(shape)), 0.0, 1 / math.sqrt(fan_in))


# --------------------------------------------------------------------------
# exactly mx.random's draws under the same seed (pins the fans too)
# --------------------------------------------------------------------------

SEEDED = [
    ("normal(1, 2)", lambda a: I.normal(mean=1.0, std=2.0)(a),
     lambda s: mx.random.normal(s, loc=1.0, scale=2.0)),
    ("uniform(-2, 3)", lambda a: I.uniform(-2.0, 3.0)(a), lambda s: mx.random.uniform(-2.0, 3.0, s)),
    ("glorot_normal", lambda a: I.glorot_normal()(a, gain=1.5),
     lambda s: mx.random.normal(s, scale=1.5 * math.sqrt(2 / (s[-1] * 9 + s[0] * 9)))),
    ("glorot_uniform", lambda a: I.glorot_uniform()(a),
     lambda s: mx.random.uniform(-math.sqrt(6 / (s[-1] * 9 + s[0] * 9)),
                                 math.sqrt(6 / (s[-1] * 9 + s[0] * 9)), s)),
    ("he_normal", lambda a: I.he_normal()(a), lambda s: mx.random.normal(s, scale=1 / math.sqrt(s[-1] * 9))),
    ("he_uniform fan_out", lambda a: I.he_uniform()(a, mode="fan_out", gain=2.0),
     lambda s: mx.random.uniform(-2 * math.sqrt(3 / (s[0] * 9)), 2 * math.sqrt(3 / (s[0] * 9)), s)),
]


@pytest.mark.parametrize("what,init,draw", SEEDED, ids=[s[0] for s in SEEDED])
def test_same_draws_as_mx_random(what, init, draw):
    shape = (4, 3, 3, 5)  # a conv2d weight: (out, kh, kw, in), receptive field 9
    mx.random.seed(7)
    got = init(mx.zeros(shape))
    mx.random.seed(7)
    want = draw(shape)
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------
# determinism
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["normal", "uniform", "glorot_normal", "glorot_uniform", "he_normal",
                                  "he_uniform", "orthogonal", "sparse"])
def test_seed_determinism(name):
    init = _make(name)
    a = mx.zeros((16, 12))
    mx.random.seed(3)
    first = to_numpy(init(a))
    second = to_numpy(init(a))
    mx.random.seed(3)
    again = to_numpy(init(a))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)
    mx.random.seed(4)
    assert not np.array_equal(first, to_numpy(init(a)))


# --------------------------------------------------------------------------
# orthogonal and sparse
# --------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 5), (3, 7), (7, 3), (1, 4), (64, 32)])
@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_orthogonal(shape, gain):
    mx.random.seed(21)
    w = to_numpy(I.orthogonal(gain=gain)(mx.zeros(shape))).astype(np.float64)
    rows, cols = shape
    gram = w @ w.T if rows <= cols else w.T @ w
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(min(shape)), atol=2e-5 * gain ** 2)


def test_orthogonal_half():
    mx.random.seed(22)
    w = I.orthogonal(dtype=mx.float16)(mx.zeros((8, 8)))
    assert w.dtype == mx.float16
    w = to_numpy(w).astype(np.float64)
    np.testing.assert_allclose(w @ w.T, np.eye(8), atol=5e-3)


def test_orthogonal_is_not_one_fixed_matrix():
    """Different draws give different matrices, with entries of both signs
    in each column (the sign fix makes Q uniformly distributed)."""
    mx.random.seed(23)
    a = to_numpy(I.orthogonal()(mx.zeros((32, 32))))
    b = to_numpy(I.orthogonal()(mx.zeros((32, 32))))
    assert not np.allclose(a, b)
    assert 0.4 < np.mean(a > 0) < 0.6
    assert np.all((a > 0).any(axis=0) & (a < 0).any(axis=0))


@pytest.mark.parametrize("sparsity,cols", [(0.5, 8), (0.3, 10), (0.25, 7), (0.9, 20), (0.0, 6), (1.0, 6)])
def test_sparse_zeros_per_row(sparsity, cols):
    mx.random.seed(31)
    w = to_numpy(I.sparse(sparsity)(mx.zeros((50, cols))))
    zeros = (w == 0).sum(axis=1)
    assert np.all(zeros == math.ceil(sparsity * cols)), zeros


def test_sparse_positions_and_values():
    mx.random.seed(32)
    w = to_numpy(I.sparse(0.5, mean=1.0, std=0.5)(mx.zeros((400, 100))))
    zero = w == 0
    # every column is zeroed about half the time (the positions are random)
    per_column = zero.mean(axis=0)
    assert np.all(np.abs(per_column - 0.5) < 0.15), per_column
    nonzero = w[~zero].astype(np.float64)
    assert abs(nonzero.mean() - 1.0) < 5 * 0.5 / math.sqrt(nonzero.size)
    assert abs(nonzero.std() - 0.5) < 0.01


def test_sparse_dtype():
    w = I.sparse(0.25, dtype=mx.bfloat16)(mx.zeros((4, 8)))
    assert w.dtype == mx.bfloat16
    assert np.all((to_numpy(w) == 0).sum(axis=1) == 2)


@ember_only
@pytest.mark.parametrize("sparsity", [-0.5, 1.5])
def test_sparse_fraction_out_of_range(sparsity):
    """MLX accepts any sparsity (1.5 zeros everything, -0.5 zeros what its
    slicing happens to select)."""
    with raises(ValueError, r"\[sparse\] The sparsity must be in \[0, 1\]"):
        I.sparse(sparsity)


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["glorot_normal", "glorot_uniform", "he_normal", "he_uniform"])
@pytest.mark.parametrize("shape", [(), (5,)])
def test_fans_need_two_dims(name, shape):
    with raises(ValueError, rf"\[{name}\] Glorot / He initialization requires at least 2 dimensional"):
        _make(name)(mx.zeros(shape))
    with raises(ValueError, "requires at least 2 dimensional input", mlx_msg=True):
        _make(name)(mx.zeros(shape))


@pytest.mark.parametrize("name", ["he_normal", "he_uniform"])
def test_he_mode(name):
    with raises(ValueError, rf"\[{name}\] Invalid mode: fan_mid"):
        _make(name)(mx.zeros((3, 3)), mode="fan_mid")
    with raises(ValueError, "Valid modes are: fan_in, fan_out", mlx_msg=True):
        _make(name)(mx.zeros((3, 3)), mode="fan_mid")


@pytest.mark.parametrize("shape", [(2, 3), (2, 2, 2), (2,)])
def test_identity_needs_a_square_matrix(shape):
    with raises(ValueError, r"\[identity\] The input array must be a square matrix but got shape "
                + rf"\({shape[0]},"):
        I.identity()(mx.zeros(shape))
    with raises(ValueError, "must be a square matrix", mlx_msg=True):
        I.identity()(mx.zeros(shape))


@pytest.mark.parametrize("shape", [(4,), (2, 2, 2)])
def test_orthogonal_needs_a_matrix(shape):
    with raises(ValueError, rf"\[orthogonal\] .*requires a 2D array but got a {len(shape)}D array"):
        I.orthogonal()(mx.zeros(shape))
    with raises(ValueError, f"requires a 2D array but got a {len(shape)}D array", mlx_msg=True):
        I.orthogonal()(mx.zeros(shape))


@pytest.mark.parametrize("shape", [(4,), (2, 2, 2)])
def test_sparse_needs_a_matrix(shape):
    with raises(ValueError, r"\[sparse\] Only arrays with 2 dimensions"):
        I.sparse(0.5)(mx.zeros(shape))
    with raises(ValueError, "with 2 dimensions are supported", mlx_msg=True):
        I.sparse(0.5)(mx.zeros(shape))


def test_normal_needs_a_float_dtype():
    with raises(ValueError, "floating point", mlx_msg=True):
        I.normal(dtype=mx.int32)(mx.zeros((2,)))


@ember_only
@pytest.mark.parametrize("name", ["he_normal", "he_uniform", "glorot_normal", "orthogonal"])
def test_zero_fan_gives_the_empty_array(name):
    """No element to draw: the empty array (MLX divides by the zero fan,
    ZeroDivisionError, for He and an all-empty Glorot)."""
    for shape in [(5, 0), (0, 0)]:
        out = _make(name)(mx.zeros(shape))
        assert out.shape == shape and out.dtype == mx.float32


def test_import_paths():
    assert nn.init.constant is I.constant
    assert inspect.isfunction(nn.losses.mse_loss)
