"""where()'s kernel paths (csrc/ember/backend/cpu/copy.cpp, select_eval) at
every ISA level the CPU has, against np.where, exactly.

The kernel loads both sides before choosing, with runs for: everything
contiguous, a broadcast scalar for the false side (a ReLU's gradient,
``where(mask, g, 0)``), a broadcast scalar for the true side, and any
strides. Shapes reach each run with lengths around the vector widths and
above the thread split (65536 elements), with random masks (the case a
branch on the condition mispredicts) and constant ones.
"""

import numpy as np
import pytest

from conftest import ISA_LEVELS, ember_only, mx, mx_dtype

pytestmark = ember_only

DTYPES = ["bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64", "complex64"]
LENGTHS = [1, 3, 15, 16, 17, 31, 33, 64, 1000, 70001]


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _arr(x):
    x = np.asarray(x)
    return mx.array(x, dtype=mx_dtype(x.dtype.name))


def _at_level(lvl, fn):
    before = mx.__config__()["isa"]
    mx._set_cpu_isa(lvl)
    try:
        out = fn()
        mx.eval(out)
        return np.array(out)
    finally:
        mx._set_cpu_isa(before)


def _check(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.dtype)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("level", ISA_LEVELS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_where_paths_match_numpy(level, dtype):
    rng = np.random.default_rng(DTYPES.index(dtype))
    for n in LENGTHS:
        c = rng.random(n) < 0.5
        x, y = _values(rng, n, dtype), _values(rng, n, dtype)
        s = _values(rng, (), dtype)
        cases = {
            "contiguous": (c, x, y),
            "scalar false side": (c, x, s),
            "scalar true side": (c, s, y),
            "constant mask": (np.ones(n, bool), x, y),
        }
        for what, (cc, xx, yy) in cases.items():
            got = _at_level(level, lambda: mx.where(_arr(cc), _arr(xx), _arr(yy)))
            _check(got, np.where(cc, xx, yy).astype(dtype))
        # any strides: every other element of x, a reversed y
        x2, y2 = _values(rng, 2 * n, dtype), _values(rng, n, dtype)
        got = _at_level(level, lambda: mx.where(_arr(c), _arr(x2)[::2], _arr(y2)[::-1]))
        _check(got, np.where(c, x2[::2], y2[::-1]).astype(dtype))


@pytest.mark.parametrize("level", ISA_LEVELS)
def test_where_broadcast_rows_and_relu_gradient(level):
    rng = np.random.default_rng(7)
    g = rng.standard_normal((300, 257)).astype(np.float32)
    h = rng.standard_normal((300, 257)).astype(np.float32)
    # a condition broadcast along rows, a scalar false side (the causal mask
    # of attention scores)
    keep = np.tril(np.ones((300, 257), bool))[None][:, :, :]
    got = _at_level(level, lambda: mx.where(_arr(keep), _arr(g)[None], -1e30))
    _check(got, np.where(keep, g[None], np.float32(-1e30)))
    # the transposed operand takes the any-stride run
    got = _at_level(level, lambda: mx.where(_arr(h.T > 0), _arr(g.T), 0.0))
    _check(got, np.where(h.T > 0, g.T, np.float32(0)))
    # the gradient of a ReLU is where(h > 0, g, 0)
    got = _at_level(level, lambda: mx.vjp(lambda x: mx.maximum(x, 0.0), [_arr(h)], [_arr(g)])[1][0])
    _check(got, np.where(h > 0, g, np.float32(0)))
