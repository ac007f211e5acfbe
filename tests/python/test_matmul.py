"""Matmul layouts the BLAS path takes without copies (any leading dimension,
column-major, broadcast and strided batches, evenly or unevenly spaced) and
the ones it copies, against NumPy, plus small and large products (OpenBLAS
threading is switched off for small ones)."""

import numpy as np
import pytest

from conftest import mx, to_numpy

DTYPES = ["float32", "float64", "complex64", "int32"]
TOL = {"float32": 1e-4, "float64": 1e-12, "complex64": 1e-4, "int32": 0}


def rand(rng, shape, dtype):
    if dtype == "int32":
        return rng.integers(-5, 5, shape).astype(np.int32)
    x = rng.standard_normal(shape)
    if dtype == "complex64":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def as_mx(x):
    return mx.array(x, dtype=getattr(mx, str(x.dtype)))


def check(a_np, b_np, a_mx, b_mx, dtype):
    got = to_numpy(a_mx @ b_mx)
    want = a_np @ b_np
    assert got.shape == want.shape
    tol = TOL[dtype]
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


# each case: (a shape, b shape, view applied to the mx/np operands)
VIEWS = {
    "dense": lambda x: x,
    "transposed": lambda x: x.swapaxes(-1, -2),
    "column_slice": lambda x: x[..., 1:],           # row-major with ld > cols
    "row_slice_step": lambda x: x[..., ::2, :],      # row stride 2 * cols
    "reversed": lambda x: x[..., ::-1, :],           # negative stride: copied
    "batch_step": lambda x: x[::2] if x.ndim > 2 else x,  # evenly spaced batch
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("va", list(VIEWS))
@pytest.mark.parametrize("vb", ["dense", "transposed", "column_slice"])
def test_operand_layouts(dtype, va, vb):
    rng = np.random.default_rng(hash((dtype, va, vb)) % 2**32)
    a0 = rand(rng, (6, 7, 9), dtype)
    b0 = rand(rng, (6, 9, 8), dtype)
    a_np, a_mx = VIEWS[va](a0), VIEWS[va](as_mx(a0))
    k = a_np.shape[-1]
    b_full = rand(rng, (a_np.shape[0], k + 1, k + 1), dtype)
    b_np = VIEWS[vb](b_full)[..., :k, :5] if vb != "column_slice" else b_full[..., :k, 1:6]
    b_mx = VIEWS[vb](as_mx(b_full))[..., :k, :5] if vb != "column_slice" else as_mx(b_full)[..., :k, 1:6]
    check(a_np, b_np, a_mx, b_mx, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_and_uneven_batches(dtype):
    rng = np.random.default_rng(7)
    a = rand(rng, (3, 1, 4, 5), dtype)
    b = rand(rng, (1, 2, 5, 6), dtype)
    check(a, b, as_mx(a), as_mx(b), dtype)                       # stride-0 batch dims
    w = rand(rng, (5, 6), dtype)
    check(a, w, as_mx(a), as_mx(w), dtype)                       # one matrix for the batch
    big = rand(rng, (4, 6, 4, 5), dtype)
    sub_np, sub_mx = big[1:3, ::2], as_mx(big)[1:3, ::2]         # unevenly spaced batch offsets
    b3 = rand(rng, (3, 5, 6), dtype)
    check(sub_np, b3, sub_mx, as_mx(b3), dtype)


@pytest.mark.parametrize("n", [1, 8, 64, 200])
def test_sizes_around_the_threading_switch(n):
    rng = np.random.default_rng(n)
    a, b = rand(rng, (n, n), "float32"), rand(rng, (n, n), "float32")
    check(a, b, as_mx(a), as_mx(b), "float32")
    a3, b3 = rand(rng, (5, n, n), "float64"), rand(rng, (5, n, n), "float64")
    check(a3, b3, as_mx(a3), as_mx(b3), "float64")
