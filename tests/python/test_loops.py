"""The elementwise loop engine (backend/cpu/loops.cpp): every element once,
whatever the operands' layouts. Runs go along the last dim; where an operand
runs along the second-last dim instead (a transposed view) the last two dims
go in square tiles, whose edge tiles are partial here. Results against
NumPy, exactly (additions, selects and casts round the same way)."""

import numpy as np
import pytest

from conftest import mx, to_numpy


def _pair(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return a, mx.array(a)


@pytest.mark.parametrize("shape,view", [
    ((300, 270), lambda t: t.T),
    ((257, 1000), lambda t: t.T),
    ((1000, 257), lambda t: t.T),
    ((3, 259, 300), lambda t: t.swapaxes(1, 2)),
    ((2, 3, 260, 270), lambda t: t.swapaxes(2, 3)),
    ((600, 600), lambda t: t[::-1, ::-2].T),       # negative and non-unit strides
    ((2, 290, 3, 280), lambda t: t.transpose(0, 2, 3, 1)),
])
def test_transposed_operands(shape, view):
    a, x = _pair(shape, sum(shape))
    va, vx = view(a), view(x)
    b, y = _pair(va.shape, 7)                       # a contiguous operand beside it
    np.testing.assert_array_equal(to_numpy(vx + y), va + b)
    np.testing.assert_array_equal(to_numpy(y - vx), b - va)
    row = np.random.default_rng(3).standard_normal(va.shape[-1:]).astype(np.float32)
    np.testing.assert_array_equal(to_numpy(vx * mx.array(row)), va * row)      # a broadcast row
    np.testing.assert_array_equal(to_numpy(mx.where(vx > 0, vx, y)), np.where(va > 0, va, b))
    np.testing.assert_array_equal(to_numpy(vx.astype(mx.int32)), va.astype(np.int32))
    np.testing.assert_array_equal(to_numpy(mx.abs(vx)), np.abs(va))
    np.testing.assert_array_equal(to_numpy(vx + vx), va + va)                 # both transposed

