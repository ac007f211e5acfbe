"""Matmul layouts the BLAS path takes without copies (any leading dimension,
column-major, broadcast and strided batches, evenly or unevenly spaced) and
the ones it copies, against NumPy, plus small and large products (OpenBLAS
threading is switched off for small ones)."""

import numpy as np
import pytest

from conftest import ember_only, mx, raises, to_numpy

# MLX: matmul of integers raises "[matmul] Only inexact types are supported"
DTYPES = ["float32", "float64", "complex64", pytest.param("int32", marks=[ember_only])]
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


# --------------------------------------------------------------------------
# addmm, gather_mm, segmented_mm
# --------------------------------------------------------------------------

import gradcheck  # noqa: E402


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("alpha, beta", [(1.0, 1.0), (2.0, 0.5), (-1.5, 0.0)])
@pytest.mark.parametrize("c_shape", [(4, 5), (5,), (1, 5), ()])
def test_addmm(dtype, alpha, beta, c_shape):
    rng = np.random.default_rng(3)
    a, b, c = rand(rng, (4, 3), dtype), rand(rng, (3, 5), dtype), rand(rng, c_shape, dtype)
    got = to_numpy(mx.addmm(as_mx(c), as_mx(a), as_mx(b), alpha=alpha, beta=beta))
    want = alpha * (a @ b) + (beta * c if beta else 0)
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * 10)
    assert got.dtype == np.dtype(dtype)


def test_addmm_beta_zero_dtype_and_errors():
    c = np.array([np.nan, 1.0], np.float32)
    out = to_numpy(mx.addmm(mx.array(c), mx.ones((2, 3)), mx.ones((3, 2)), beta=0.0))
    assert np.all(out == 3.0)  # beta == 0: c is not read
    assert mx.addmm(mx.ones((2, 2), dtype=mx.float16), mx.ones((2, 3)), mx.ones((3, 2))).dtype == mx.float32
    with raises(ValueError, r"\[addmm\].*real floating"):
        mx.addmm(mx.ones((2, 2), dtype=mx.int32), mx.ones((2, 3), dtype=mx.int32), mx.ones((3, 2), dtype=mx.int32))
    with raises(ValueError, r"\[addmm\].*\(3,3\)"):
        mx.addmm(mx.ones((3, 3)), mx.ones((2, 3)), mx.ones((3, 2)))


@ember_only  # MLX: the jvp of addmm is wrong when alpha or beta is not 1 (or c broadcasts)
def test_addmm_rules_and_errors():
    rng = np.random.default_rng(4)
    gradcheck.check_grads(lambda c, a, b: mx.addmm(c, a, b, alpha=0.7, beta=1.3),
                          [rng.standard_normal((2, 4)), rng.standard_normal((2, 3)), rng.standard_normal((3, 4))])
    gradcheck.check_vmap(lambda c, a, b: mx.addmm(c, a, b, alpha=2.0, beta=0.5),
                         [rng.standard_normal((3, 2, 4)), rng.standard_normal((2, 3)), rng.standard_normal((3, 3, 4))],
                         in_axes=(0, None, 0))


def np_gather_mm(a, b, li, ri):
    A = a.reshape((-1,) + a.shape[-2:])
    B = b.reshape((-1,) + b.shape[-2:])
    li = np.arange(A.shape[0]).reshape(a.shape[:-2]) if li is None else li
    ri = np.arange(B.shape[0]).reshape(b.shape[:-2]) if ri is None else ri
    li, ri = np.broadcast_arrays(li, ri)
    return A[li] @ B[ri]


@pytest.mark.parametrize("dtype", [
    "float32",
    # MLX: "[GatherMM::eval] Currently only supports float32"
    pytest.param("float64", marks=[ember_only])])
def test_gather_mm(dtype):
    rng = np.random.default_rng(5)
    a, b = rand(rng, (2, 3, 4, 5), dtype), rand(rng, (4, 5, 2), dtype)
    li = np.array([[5, 0, 2], [1, 1, 3]], np.int32)
    ri = np.array([3, 0, 1], np.uint32)
    for l_, r_ in [(li, ri), (None, None), (li[0], None)]:
        if l_ is None and r_ is None:
            bb = rand(rng, (2, 3, 5, 2), dtype)
            want, got = np_gather_mm(a, bb, None, None), mx.gather_mm(as_mx(a), as_mx(bb))
        else:
            rr = r_ if r_ is not None else np.array([0, 1, 2])
            want = np_gather_mm(a, b, l_, rr)
            got = mx.gather_mm(as_mx(a), as_mx(b), mx.array(l_), None if r_ is None else mx.array(r_)) \
                if r_ is not None else mx.gather_mm(as_mx(a), as_mx(b)[:3], mx.array(l_), None)
        np.testing.assert_allclose(to_numpy(got), want, rtol=TOL[dtype], atol=TOL[dtype] * 10)
    # 1-D operands lose their dim, as in matmul
    assert mx.gather_mm(mx.ones((4,)), mx.ones((2, 4, 5)), None, mx.array([1])).shape == (1, 5)


def test_gather_mm_errors():
    a, b = mx.ones((2, 3, 4)), mx.ones((2, 4, 5))
    with raises(ValueError, r"\[gather_mm\]"):
        mx.gather_mm(a, mx.ones((2, 3, 5)))
    with raises(ValueError, r"\[gather_mm\].*integers"):
        mx.gather_mm(a, b, mx.array([0.0]), None)


@ember_only  # MLX: an out-of-range index is not checked; float64 "Currently only supports float32"
def test_gather_mm_errors_and_rules():
    a, b = mx.ones((2, 3, 4)), mx.ones((2, 4, 5))
    with pytest.raises(IndexError):
        mx.eval(mx.gather_mm(a, b, mx.array([5]), None))
    rng = np.random.default_rng(6)
    li, ri = mx.array([1, 0, 1]), mx.array([0, 0, 1])
    gradcheck.check_grads(lambda x, y: mx.gather_mm(x, y, li, ri),
                          [rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 2))])
    gradcheck.check_vmap(lambda x, y: mx.gather_mm(x, y, li, ri),
                         [rng.standard_normal((3, 2, 3, 4)), rng.standard_normal((2, 4, 2))], in_axes=(0, None))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_segmented_mm(dtype):
    rng = np.random.default_rng(8)
    a, b = rand(rng, (3, 7), dtype), rand(rng, (7, 2), dtype)
    segs = np.array([[[0, 2], [2, 7]], [[4, 4], [5, 3]], [[0, 7], [6, 7]]], np.int32)
    got = to_numpy(mx.segmented_mm(as_mx(a), as_mx(b), mx.array(segs)))
    want = np.stack([np.stack([a[:, s:e] @ b[s:e] if e > s else np.zeros((3, 2), dtype) for s, e in row])
                     for row in segs])
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * 10)
    with raises(ValueError, r"\[segmented_mm\].*Batched"):
        mx.segmented_mm(mx.ones((2, 3, 7)), as_mx(b), mx.array(segs))
    with raises(ValueError, r"\[segmented_mm\].*integers"):
        mx.segmented_mm(as_mx(a), as_mx(b), mx.array([[0.0, 2.0]]))
    with raises(ValueError, r"\[segmented_mm\].*\(\.\.\., 2\)"):
        mx.segmented_mm(as_mx(a), as_mx(b), mx.array([[0, 2, 3]]))


@ember_only  # MLX: "[Primitive::jvp] Not implemented for SegmentedMM"
def test_segmented_mm_grads():
    rng = np.random.default_rng(8)
    rng.standard_normal((3, 7)), rng.standard_normal((7, 2))  # the draws of test_segmented_mm
    segs = np.array([[[0, 2], [2, 7]], [[4, 4], [5, 3]], [[0, 7], [6, 7]]], np.int32)
    s_mx = mx.array(segs[0])
    gradcheck.check_grads(lambda x, y: mx.segmented_mm(x, y, s_mx),
                          [rng.standard_normal((3, 7)), rng.standard_normal((7, 2))])


def sylvester(n):
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.kron(np.array([[1, 1], [1, -1]]), h)
    return h


@pytest.mark.parametrize("n,dtype", [
    (n, d) if (n, d) != (1, "int32") else
    # MLX returns an integer input of n = 1 unconverted (int32); float32 for every other n
    pytest.param(n, d, marks=[ember_only])
    for n in [1, 2, 8, 64, 1024] for d in ["float32", "float16", "int32"]] + [
    # MLX: "[hadamard] Unsupported type" for float64
    pytest.param(n, "float64", marks=[ember_only]) for n in [1, 2, 8, 64, 1024]])
def test_hadamard_transform(n, dtype):
    rng = np.random.default_rng(n)
    x = rand(rng, (3, n), dtype) if dtype != "float16" else rng.standard_normal((3, n)).astype(np.float16)
    got = mx.hadamard_transform(as_mx(x))
    assert got.dtype == (mx.float32 if dtype == "int32" else getattr(mx, dtype))
    want = x.astype(np.float64) @ sylvester(n).T / np.sqrt(n)
    tol = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-12, "int32": 1e-5}[dtype]
    np.testing.assert_allclose(to_numpy(got).astype(np.float64), want, rtol=tol, atol=tol * np.abs(want).max())
    np.testing.assert_allclose(to_numpy(mx.hadamard_transform(as_mx(x), scale=1.0)).astype(np.float64),
                               want * np.sqrt(n), rtol=tol, atol=tol * np.abs(want).max() * np.sqrt(n))


def test_hadamard_transform_errors():
    assert mx.hadamard_transform(mx.array(3.0)).item() == 3.0  # 0-d: n = 1
    with raises(ValueError, r"\[hadamard_transform\].*empty"):
        mx.hadamard_transform(mx.ones((0,)))
    with raises(ValueError, r"\[hadamard_transform\].*m \* 2\^k.*got 6"):
        mx.eval(mx.hadamard_transform(mx.ones((2, 6))))  # MLX raises on evaluation
    x_nc = mx.array(np.arange(32.0).reshape(4, 8)).T  # non-contiguous (8, 4)
    np.testing.assert_allclose(to_numpy(mx.hadamard_transform(x_nc)),
                               np.arange(32.0).reshape(4, 8).T @ sylvester(4).T / 2, rtol=1e-6)


# MLX: 36 and 9 * 1024 (m * 2^k * 3) are not refused (garbage values and heap corruption),
# a bad size raises on evaluation only; float64 derivatives: "[hadamard] Unsupported type"
@ember_only
def test_hadamard_transform_rules_and_errors():
    for bad in (6, 36, 9 * 1024):  # 36 = 12 * 3: not m * 2^k
        with raises(ValueError, r"\[hadamard_transform\].*m \* 2\^k.*got %d" % bad):
            mx.hadamard_transform(mx.ones((2, bad)))
    rng = np.random.default_rng(9)
    gradcheck.check_grads(lambda x: mx.hadamard_transform(x, scale=0.3), [rng.standard_normal((2, 8))], order=2)
    gradcheck.check_vmap(lambda x: mx.hadamard_transform(x), [rng.standard_normal((3, 2, 8))], in_axes=1)


# First rows of MLX's m x m factors (a check that the same matrices are used).
MLX_FACTOR_ROW0 = {12: "+-++++++++++", 20: "+-----++++--++--+--+", 28: "+--------++++--+-++-+-++--++"}


@pytest.mark.parametrize("m", [12, 20, 28])
def test_hadamard_transform_non_power_of_two(m):
    h = to_numpy(mx.hadamard_transform(mx.eye(m), scale=1.0))
    assert set(np.unique(h)) == {-1.0, 1.0}
    np.testing.assert_array_equal(h @ h.T, m * np.eye(m))      # a Hadamard matrix
    assert "".join("+" if v > 0 else "-" for v in h[0]) == MLX_FACTOR_ROW0[m]
    rng = np.random.default_rng(m)
    x = rng.standard_normal((2, 3, 4 * m)).astype(np.float32)
    want = x.astype(np.float64) @ np.kron(h, sylvester(4)) / np.sqrt(4 * m)
    np.testing.assert_allclose(to_numpy(mx.hadamard_transform(as_mx(x)[:, ::-1])), want[:, ::-1], rtol=1e-5, atol=1e-5)
    got16 = mx.hadamard_transform(as_mx(x.astype(np.float16)))
    assert got16.dtype == mx.float16
    np.testing.assert_allclose(to_numpy(got16).astype(np.float64), want, rtol=2e-2, atol=2e-2)


@ember_only  # MLX: "[hadamard] Unsupported type" for float64
@pytest.mark.parametrize("m", [12, 20, 28])
def test_hadamard_transform_non_power_of_two_float64(m):
    h = to_numpy(mx.hadamard_transform(mx.eye(m), scale=1.0))
    for k in (1, 4, 32):                                        # n = m * 2^k: kron(H_m, S_2^k)
        n = m * k
        got = to_numpy(mx.hadamard_transform(mx.eye(n, dtype=mx.float64), scale=1.0))
        np.testing.assert_array_equal(got, np.kron(h, sylvester(k)))
    rng = np.random.default_rng(m)
    x = rng.standard_normal((2, 3, 4 * m)).astype(np.float32)  # as in test_hadamard_transform_non_power_of_two
    want = x.astype(np.float64) @ np.kron(h, sylvester(4)) / np.sqrt(4 * m)
    # a NumPy operand with negative strides (MLX: "Cannot convert DLPack arrays with negative strides")
    np.testing.assert_allclose(to_numpy(mx.hadamard_transform(as_mx(x[:, ::-1]))), want[:, ::-1], rtol=1e-5, atol=1e-5)
    gradcheck.check_grads(lambda x: mx.hadamard_transform(x), [rng.standard_normal((2, 2 * m))], order=2)
    gradcheck.check_vmap(lambda x: mx.hadamard_transform(x, scale=0.5), [rng.standard_normal((3, 2, m))], in_axes=1)


def expand_mask(m, bs, rows, cols):
    return np.repeat(np.repeat(m, bs, -2), bs, -1)[..., :rows, :cols]


@pytest.mark.parametrize("bs", [32, 64])
def test_block_masked_mm(bs):
    rng = np.random.default_rng(bs)
    M, K, N = 70, 40, 33
    a = rng.standard_normal((2, M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    g = lambda r, c: ((r + bs - 1) // bs, (c + bs - 1) // bs)  # noqa: E731
    mo = rng.random((2,) + g(M, N)) > 0.3
    ml = rng.random((2,) + g(M, K)).astype(np.float32)
    mr = rng.random(g(K, N)) > 0.5
    got = to_numpy(mx.block_masked_mm(mx.array(a), mx.array(b), block_size=bs, mask_out=mx.array(mo),
                                      mask_lhs=mx.array(ml), mask_rhs=mx.array(mr)))
    want = ((a * expand_mask(ml, bs, M, K)) @ (b * expand_mask(mr, bs, K, N))) * expand_mask(mo, bs, M, N)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    plain = to_numpy(mx.block_masked_mm(mx.array(a), mx.array(b), block_size=bs))
    np.testing.assert_allclose(plain, a @ b, rtol=1e-5, atol=1e-4)
    # a boolean mask zeroes whole blocks, NaNs included
    a_nan = a.copy()
    a_nan[:, :bs, :] = np.nan
    keep = np.ones((2,) + g(M, K), bool)
    keep[:, 0, :] = False
    out = to_numpy(mx.block_masked_mm(mx.array(a_nan), mx.array(b), block_size=bs, mask_lhs=mx.array(keep)))
    assert np.isfinite(out).all()


def test_block_masked_mm_errors():
    a, b = mx.ones((64, 64)), mx.ones((64, 64))
    with raises(ValueError, r"\[block_masked_mm\].*32 and 64"):
        mx.block_masked_mm(a, b, block_size=16, mask_out=mx.ones((4, 4), dtype=mx.bool_))
    # without a mask the block size is not used (MLX): a plain product
    np.testing.assert_array_equal(to_numpy(mx.block_masked_mm(a, b, block_size=16)), np.full((64, 64), 64.0))
    with raises(ValueError, r"\[block_masked_mm\].*mask_out.*\(2,2\)"):
        mx.block_masked_mm(a, b, block_size=32, mask_out=mx.ones((3, 2), dtype=mx.bool_))
    with raises(ValueError, r"\[block_masked_mm\].*real floating"):
        mx.block_masked_mm(mx.ones((4, 4), dtype=mx.int32), mx.ones((4, 4), dtype=mx.int32), block_size=32)


@ember_only  # MLX: "[BlockMaskedMM::eval] Currently only supports float32" (the derivative checks run in float64)
def test_block_masked_mm_errors_and_rules():
    rng = np.random.default_rng(11)
    mask = mx.array(np.array([[True, False], [True, True]]))
    gradcheck.check_grads(lambda x, y: mx.block_masked_mm(x, y, block_size=32, mask_lhs=mask),
                          [rng.standard_normal((40, 33)), rng.standard_normal((33, 5))])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("K", [1, 7, 256, 600])
def test_half_matmul_in_float32_tiles(dtype, K):
    """Half operands are converted tile by tile (K in blocks of 256) and
    accumulated in float32: the result is the float32 product rounded once."""
    rng = np.random.default_rng(K)
    a = rng.standard_normal((2, 5, K)).astype(np.float32)
    b = rng.standard_normal((K, 3)).astype(np.float32)
    A, B = mx.array(a).astype(getattr(mx, dtype)), mx.array(b).astype(getattr(mx, dtype))
    a_q, b_q = to_numpy(A.astype(mx.float32)), to_numpy(B.astype(mx.float32))
    want = a_q.astype(np.float64) @ b_q.astype(np.float64)
    for x, y in [(A, B), (A.swapaxes(-1, -2).swapaxes(-1, -2), B.T.T), (A[:, ::-1][:, ::-1], B)]:
        got = x @ y
        assert got.dtype == getattr(mx, dtype)
        tol = 1e-2 if dtype == "float16" else 2e-2
        np.testing.assert_allclose(to_numpy(got.astype(mx.float32)), want, rtol=tol, atol=tol * np.abs(want).max())
    # transposed storage of both operands
    got_t = (mx.array(a.swapaxes(-1, -2).copy()).astype(getattr(mx, dtype)).swapaxes(-1, -2)
             @ mx.array(b.T.copy()).astype(getattr(mx, dtype)).T)
    np.testing.assert_allclose(to_numpy(got_t.astype(mx.float32)), want, rtol=2e-2, atol=2e-2 * np.abs(want).max())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_half_product_threaded_has_the_row_slices_bits(level, dtype, ta, tb):
    """One large half product runs one threaded float32 product that widens
    its operands as it packs them; small ones (a few rows of it) run the same
    kernel on their rows alone: every element is the same float32 sum over k
    in order, rounded once, so the rows agree bit for bit (at the FMA levels;
    bfloat16 by pairs of k where the CPU has AVX-512 BF16)."""
    rng = np.random.default_rng(11)
    t = getattr(mx, dtype)
    M, K, N = 96, 700, 160  # 2 * M * K * N: above the threading switch
    a = mx.array(rng.standard_normal((K, M) if ta else (M, K)).astype(np.float32)).astype(t)
    b = mx.array(rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)).astype(t)
    x, y = (a.T if ta else a), (b.T if tb else b)
    full = x @ y
    want = to_numpy(x.astype(mx.float32)).astype(np.float64) @ to_numpy(y.astype(mx.float32)).astype(np.float64)
    tol = 1e-2 if dtype == "float16" else 2e-2
    np.testing.assert_allclose(to_numpy(full.astype(mx.float32)), want, rtol=tol, atol=tol * np.abs(want).max())
    if level == "baseline":
        return  # OpenBLAS sums the float32 tiles there: its blocking, and so its bits, follow the shape
    rows = x[40:45] @ y  # 5 rows: under the switch, the K-tiles of half_gemm (up to 4: dot products)
    np.testing.assert_array_equal(to_numpy(rows.astype(mx.float32)), to_numpy(full.astype(mx.float32))[40:45])


@pytest.mark.parametrize("shape", [(96, 700, 160), (37, 129, 53), (8, 1025, 48), (256, 64, 6)])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt", "views"])
def test_float16_product_is_the_float32_product_rounded(level, shape, layout):
    """float16 operands are widened to float32 as the kernel packs them (never
    read in place, never copied whole), so a float16 product is, bit for bit,
    the float32 product of the widened operands rounded once to float16, for
    every layout (at the FMA levels: the float32 kernel's own sums; at the
    baseline level OpenBLAS sums both, blocked by shape, so there the two
    agree to float16's rounding)."""
    M, K, N = shape
    rng = np.random.default_rng(M + K + N)
    t = mx.float16
    if layout == "views":  # a negative-stride A and a strided B
        a = mx.array(rng.standard_normal((M, 2 * K)).astype(np.float32)).astype(t)[::-1, ::2]
        b = mx.array(rng.standard_normal((K, N + 3)).astype(np.float32)).astype(t)[:, 3:]
    else:
        a = mx.array(rng.standard_normal((K, M) if layout[0] == "t" else (M, K)).astype(np.float32)).astype(t)
        b = mx.array(rng.standard_normal((N, K) if layout[1] == "t" else (K, N)).astype(np.float32)).astype(t)
        a, b = (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)
    got = a @ b
    assert got.dtype == t
    want = (a.astype(mx.float32) @ b.astype(mx.float32)).astype(t)
    if level == "baseline":
        w = to_numpy(want).astype(np.float32)
        np.testing.assert_allclose(to_numpy(got).astype(np.float32), w, rtol=2e-3, atol=2e-3 * np.abs(w).max())
    else:
        np.testing.assert_array_equal(to_numpy(got).view(np.uint16), to_numpy(want).view(np.uint16))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("M", [1, 2, 4, 5])
@pytest.mark.parametrize("K", [3, 1024, 2500])
def test_half_matmul_against_a_transposed_weight(dtype, M, K):
    """x @ W.T with W (N, K) row-major, as a Linear layer computes it: a few
    rows take dot products against W's rows (in 1024-wide chunks), more rows
    the float32 tiles with W kept transposed; both are the float32 product of
    the half values, rounded once."""
    rng = np.random.default_rng(M * K)
    t = getattr(mx, dtype)
    x = mx.array(rng.standard_normal((M, K)).astype(np.float32)).astype(t)
    w = mx.array(rng.standard_normal((37, K)).astype(np.float32)).astype(t)
    want = to_numpy(x.astype(mx.float32)).astype(np.float64) @ to_numpy(w.astype(mx.float32)).astype(np.float64).T
    tol = 1e-2 if dtype == "float16" else 2e-2
    xt = mx.array(to_numpy(x.astype(mx.float32)).T.copy()).astype(t).T  # x stored transposed
    for got in (x @ w.T, xt @ w.T, mx.matmul(x[None], w.T[None])[0]):
        assert got.dtype == t and got.shape == (M, 37)
        np.testing.assert_allclose(to_numpy(got.astype(mx.float32)), want, rtol=tol, atol=tol * np.abs(want).max())


def test_matrix_norm_is_linalg_norm():
    a = mx.array([[3.0, 4.0], [0.0, 0.0]])
    assert mx.matrix_norm(a).item() == pytest.approx(5.0)
    assert mx.matrix_norm(a, ord="fro").item() == mx.linalg.norm(a, ord="fro").item()


# --------------------------------------------------------------------------
# the layout of a cotangent
# --------------------------------------------------------------------------

def _row_major(a):
    mv = memoryview(a)
    return mv.strides == tuple(int(np.prod(mv.shape[i + 1:])) * mv.itemsize for i in range(mv.ndim))


@ember_only  # (strides through the buffer protocol)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("evaluated", [False, True])
def test_gradient_of_a_transposed_operand_comes_out_in_its_layout(dtype, evaluated):
    """x @ W.T (a Linear's weight) and W.T @ x: W's gradient is computed as
    the transpose of the transposed product, so it is row-major like W
    (an optimizer's update then reads both in order), with the values of
    ct @ b^H and a^H @ ct."""
    rng = np.random.default_rng(7)
    x, w, ct = rand(rng, (5, 3), dtype), rand(rng, (4, 3), dtype), rand(rng, (5, 4), dtype)
    X, W, CT = as_mx(x), as_mx(w), as_mx(ct)

    def T(w_):  # w_.T, evaluated inside the traced function (its strides then tell) or not (its node does)
        t = w_.T
        if evaluated:
            mx.eval(t)
        return t
    # W.T as the second operand: the cotangent of W.T is x^H ct, of W its transpose
    _, (gw,) = mx.vjp(lambda W_: X @ T(W_), [W], [CT])
    np.testing.assert_allclose(to_numpy(gw), (x.conj().T @ ct).T, rtol=TOL[dtype], atol=TOL[dtype])
    assert _row_major(gw)
    # W.T as the first operand: the cotangent of W.T is ct y^H
    y, ct2 = rand(rng, (4, 6), dtype), rand(rng, (3, 6), dtype)
    _, (gw2,) = mx.vjp(lambda W_: T(W_) @ as_mx(y), [W], [as_mx(ct2)])
    np.testing.assert_allclose(to_numpy(gw2), (ct2 @ y.conj().T).T, rtol=TOL[dtype], atol=TOL[dtype])
    assert _row_major(gw2)
    # a transposed primal of its own: the same values
    _, (gt,) = mx.vjp(lambda t: X @ t, [W.T], [CT])
    np.testing.assert_allclose(to_numpy(gt), x.conj().T @ ct, rtol=TOL[dtype], atol=TOL[dtype])


@ember_only  # (strides through the buffer protocol)
def test_gradients_of_batched_transposed_operands_and_linear():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 4, 3))
    A, B = mx.array(a, mx.float64), mx.array(b, mx.float64)
    g = mx.grad(lambda B_: (A @ mx.swapaxes(B_, -1, -2)).sum())(B)
    np.testing.assert_allclose(to_numpy(g), np.swapaxes(np.swapaxes(a, -1, -2) @ np.ones((2, 5, 4)), -1, -2),
                               rtol=1e-12)
    assert _row_major(g)
    gradcheck.check_grads(lambda a, b: A @ mx.swapaxes(b, -1, -2) + a @ mx.swapaxes(b, -1, -2), [a, b])
    nn = pytest.importorskip("ember.nn")
    layer = nn.Linear(3, 4)
    grads = nn.value_and_grad(layer, lambda x: layer(x).square().sum())(mx.array(a[0], mx.float32))[1]
    assert _row_major(grads["weight"])
    w = to_numpy(layer.weight).astype(np.float64)
    want = 2 * (a[0] @ w.T + to_numpy(layer.bias)).T @ a[0]
    np.testing.assert_allclose(to_numpy(grads["weight"]), want, rtol=1e-4, atol=1e-4)


@ember_only  # (the traced graph)
@pytest.mark.parametrize("layout", ["dense", "transposed", "broadcast", "vector"])
def test_a_batch_against_one_matrix_is_one_product(layout):
    """(batch..., M, K) @ (K, N): the batch folds into the rows, one (B*M, K)
    product; the gradient of the matrix is then one product whose k runs over
    the batch (no (batch, K, N) products summed afterwards). Values and
    gradients against NumPy for a dense, a transposed and a broadcast batch,
    and a vector on the right."""
    rng = np.random.default_rng(9)
    base = rng.standard_normal((2, 3, 6, 5))
    if layout == "transposed":
        a_np = np.swapaxes(rng.standard_normal((2, 3, 5, 6)), -1, -2)
        a = mx.swapaxes(mx.array(np.swapaxes(a_np, -1, -2), mx.float64), -1, -2)
    elif layout == "broadcast":
        a_np = np.broadcast_to(base[0, 0], (2, 3, 6, 5))
        a = mx.broadcast_to(mx.array(base[0, 0], mx.float64), (2, 3, 6, 5))
    else:
        a_np, a = base, mx.array(base, mx.float64)
    b_np = rng.standard_normal((5,) if layout == "vector" else (5, 4))
    b = mx.array(b_np, mx.float64)
    np.testing.assert_allclose(to_numpy(a @ b), a_np @ b_np, rtol=1e-12)
    ct_np = rng.standard_normal((a_np @ b_np).shape)
    ct = mx.array(ct_np, mx.float64)
    (ga, gb) = mx.grad(lambda x, y: ((x @ y) * ct).sum(), argnums=(0, 1))(a, b)
    want_gb = a_np.reshape(-1, 5).T @ (ct_np.reshape(-1) if layout == "vector" else ct_np.reshape(-1, 4))
    np.testing.assert_allclose(to_numpy(gb), want_gb, rtol=1e-12)
    want_ga = ct_np[..., None] * b_np if layout == "vector" else ct_np @ b_np.T
    np.testing.assert_allclose(to_numpy(ga), want_ga, rtol=1e-12)
    text = mx.compile(lambda y: a @ y).lower(b).as_text()
    assert "f64[36,%s] = Matmul" % (1 if layout == "vector" else 4) in text, text
    gtext = mx.compile(mx.grad(lambda y: ((a @ y) * ct).sum())).lower(b).as_text()
    assert all("Matmul" not in line or "[2,3," not in line for line in gtext.splitlines()), gtext
