"""float32 matmul's own kernel (backend/cpu/matmul.cpp, the FMA levels) path
by path at every ISA level (OpenBLAS at the baseline): every operand layout
against the tile edges (rows around MR, columns around NR, k around the
K-block), the few-columns products computed transposed, several K-blocks,
the passes that bound the packed operands, the threaded split; against a
float64 NumPy reference. On the FMA levels each element is one fused
multiply-add chain over k in order, so the bits do not depend on the level,
the tile an element falls in, the operand layout or the thread count.
bfloat16 products on AVX-512 CPUs with the BF16 extension run a kernel of
their own (pairs of k, VDPBF16PS), and on CPUs with AMX-BF16 the tile unit
(TDPBF16PS): both tested here at every level, with AMX off and on."""

import numpy as np
import pytest

from conftest import ember_only, mx, run_python, to_numpy

pytestmark = ember_only  # ISA levels and Ember's own kernel

FMA_LEVELS = [lv for lv in mx.__config__()["isa_levels"] if lv != "baseline"] if hasattr(mx, "__config__") else []


def operand(rng, rows, cols, transposed):
    """A (rows, cols) float32 operand, stored transposed (a column-major view) or not."""
    if transposed:
        x = rng.standard_normal((cols, rows)).astype(np.float32)
        return x.T, mx.array(x).T
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    return x, mx.array(x)


def check(a_np, b_np, got):
    want = a_np.astype(np.float64) @ b_np.astype(np.float64)
    got = to_numpy(got)
    assert got.shape == want.shape and got.dtype == np.float32
    # float32 accumulation over k: the error grows like sqrt(k) times the terms' size
    bound = 4e-7 * np.sqrt(a_np.shape[-1]) * (np.abs(a_np).astype(np.float64) @ np.abs(b_np).astype(np.float64))
    np.testing.assert_array_less(np.abs(got - want), bound + 1e-30)


LAYOUTS = [(False, False), (True, False), (False, True), (True, True)]
EDGES = [(1, 1, 1), (7, 15, 9), (8, 16, 8), (9, 17, 7), (6, 48, 256), (13, 49, 257), (17, 47, 255),
         (25, 97, 513), (3, 200, 40), (64, 5, 300), (300, 10, 64), (10, 300, 64)]


@pytest.mark.parametrize("ta, tb", LAYOUTS)
@pytest.mark.parametrize("M, N, K", EDGES)
def test_layouts_and_tile_edges(level, rng, ta, tb, M, N, K):
    a_np, a_mx = operand(rng, M, K, ta)
    b_np, b_mx = operand(rng, K, N, tb)
    check(a_np, b_np, a_mx @ b_mx)


@pytest.mark.parametrize("M, N, K", [(256, 512, 784), (512, 784, 256), (256, 10, 512), (10, 512, 256),
                                     (256, 512, 10), (1000, 33, 100)])
@pytest.mark.parametrize("ta, tb", LAYOUTS)
def test_threaded_products(level, rng, M, N, K, ta, tb):
    """The MLP step's shapes and other products large enough for the threaded split."""
    a_np, a_mx = operand(rng, M, K, ta)
    b_np, b_mx = operand(rng, K, N, tb)
    check(a_np, b_np, a_mx @ b_mx)


@pytest.mark.parametrize("M, N, K", [(20, 30, 60000),     # k in hundreds of blocks
                                     (500, 400, 20000)])  # rows and columns in several tasks
def test_long_k_and_many_tasks(level, rng, M, N, K):
    a_np, a_mx = operand(rng, M, K, False)
    b_np, b_mx = operand(rng, K, N, True)
    check(a_np, b_np, a_mx @ b_mx)


def test_packed_rows_in_several_groups(level, rng):
    """A transposed operand is packed by row groups of up to 1024 rows (512
    at the AVX2 level): more rows than that run as several groups."""
    a_np, a_mx = operand(rng, 2100, 64, True)
    b_np, b_mx = operand(rng, 64, 100, False)
    check(a_np, b_np, a_mx @ b_mx)


@pytest.mark.parametrize("M, N, K", [(1, 1, 1 << 16), (3, 2, 1 << 15), (1, 300, 4000)])
def test_packing_needs_no_memory_beside_the_output(level, rng, M, N, K):
    """Skinny products pad their few rows and columns to a whole tile; the
    packed panels live in a buffer per thread of bounded size (kept for the
    next product), so a product allocates its output and nothing else."""
    a_np, a_mx = operand(rng, M, K, False)
    b_np, b_mx = operand(rng, K, N, False)
    mx.eval(a_mx, b_mx)
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    out = a_mx @ b_mx
    mx.eval(out)
    grown = mx.get_peak_memory() - base
    # (a cached block up to 25% larger may serve the request: the allocator's reuse rule)
    assert grown <= 1.25 * 4 * M * N + (1 << 16)
    check(a_np, b_np, out)


def test_large_batch_items_split_one_by_one(level, rng):
    a = rng.standard_normal((3, 300, 200)).astype(np.float32)
    b = rng.standard_normal((3, 200, 290)).astype(np.float32)
    check(a, b, mx.array(a) @ mx.array(b))
    check(a, b[0], mx.array(a) @ mx.array(b[0]))


def test_batched_products(level, rng):
    a = rng.standard_normal((3, 2, 37, 70)).astype(np.float32)
    b = rng.standard_normal((2, 70, 51)).astype(np.float32)
    check(a, b, mx.array(a) @ mx.array(b))
    check(a, b.swapaxes(-1, -2).copy().swapaxes(-1, -2), mx.array(a) @ mx.array(b.swapaxes(-1, -2).copy()).swapaxes(-1, -2))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("ta, tb", LAYOUTS)
def test_half_tiles_accumulate(level, rng, dtype, ta, tb):
    """Half operands: float32 tiles of 256 along k added into one float32
    product by the kernel (C += tile product), rounded once."""
    t = getattr(mx, dtype)
    M, N, K = 37, 53, 600
    a_np, a_mx = operand(rng, M, K, ta)
    b_np, b_mx = operand(rng, K, N, tb)
    a_mx, b_mx = a_mx.astype(t), b_mx.astype(t)
    a_q, b_q = to_numpy(a_mx.astype(mx.float32)), to_numpy(b_mx.astype(mx.float32))
    got = a_mx @ b_mx
    assert got.dtype == t
    want = a_q.astype(np.float64) @ b_q.astype(np.float64)
    rel = 2 ** -10 if dtype == "float16" else 2 ** -7  # the one rounding to the half type
    bound = rel * np.abs(want) + 4e-7 * np.sqrt(K) * (np.abs(a_q) @ np.abs(b_q))
    np.testing.assert_array_less(np.abs(to_numpy(got.astype(mx.float32)) - want), bound + 1e-30)


def test_special_values_propagate(level):
    a = np.ones((9, 20), np.float32)
    b = np.ones((20, 50), np.float32)
    a[2, 3], a[5, 0], b[7, 40] = np.nan, np.inf, -np.inf
    with np.errstate(invalid="ignore"):
        want = a @ b
    np.testing.assert_array_equal(to_numpy(mx.array(a) @ mx.array(b)), want)


@pytest.mark.skipif(not FMA_LEVELS, reason="no FMA level on this CPU")
def test_same_bits_for_every_path_and_level(rng):
    """One fused multiply-add chain per element: a row or a column computed
    alone, a transposed operand and its dense copy, a tile at the edge and
    one inside, AVX2 and AVX-512 all give the same bits."""
    M, N, K = 70, 130, 600
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    before = mx.__config__()["isa"]
    try:
        results = []
        for lv in FMA_LEVELS:
            mx._set_cpu_isa(lv)
            full = to_numpy(mx.array(a) @ mx.array(b))
            results.append(full)
            np.testing.assert_array_equal(to_numpy(mx.array(a[5:6]) @ mx.array(b)), full[5:6])
            np.testing.assert_array_equal(to_numpy(mx.array(a) @ mx.array(b[:, 77:78])), full[:, 77:78])
            np.testing.assert_array_equal(to_numpy(mx.array(a.T.copy()).T @ mx.array(b.T.copy()).T), full)
            np.testing.assert_array_equal(to_numpy(mx.array(a[3:11]) @ mx.array(b[:, 49:97])), full[3:11, 49:97])
        for r in results[1:]:
            np.testing.assert_array_equal(r, results[0])
    finally:
        mx._set_cpu_isa(before)


@pytest.mark.skipif(not FMA_LEVELS, reason="no FMA level on this CPU")
def test_small_products_read_operands_in_place_with_the_same_bits(rng):
    """Small products read A's and B's rows where they lie instead of packing
    them, and larger ones A's (rows up to 4 KB apart): the same bits as the packed
    path (which transposed operands take), for batches of row-strided views
    whose columns end in a narrower tile."""
    a = rng.standard_normal((6, 48, 200)).astype(np.float32)
    b = rng.standard_normal((6, 96, 112)).astype(np.float32)
    sa, sb = a[:, :, 8:104], b[:, :, :80]  # (6, 48, 96) @ (6, 96, 80)
    x = rng.standard_normal((240, 512)).astype(np.float32)
    y = rng.standard_normal((512, 100)).astype(np.float32)
    before = mx.__config__()["isa"]
    try:
        for lv in FMA_LEVELS:
            mx._set_cpu_isa(lv)
            got = to_numpy(mx.array(a)[:, :, 8:104] @ mx.array(b)[:, :, :80])
            packed = to_numpy(mx.swapaxes(mx.array(np.swapaxes(sa, 1, 2).copy()), 1, 2)
                              @ mx.swapaxes(mx.array(np.swapaxes(sb, 1, 2).copy()), 1, 2))
            np.testing.assert_array_equal(got, packed)
            np.testing.assert_allclose(got, sa.astype(np.float64) @ sb, rtol=1e-4, atol=1e-4)
            # a larger product: A read in place, B packed
            got = to_numpy(mx.array(x) @ mx.array(y))
            np.testing.assert_array_equal(got, to_numpy(mx.array(x.T.copy()).T @ mx.array(y)))
            np.testing.assert_allclose(got, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)
    finally:
        mx._set_cpu_isa(before)


@pytest.mark.skipif(not FMA_LEVELS, reason="no FMA level on this CPU")
def test_same_bits_for_any_thread_count(tmp_path):
    code = """
        import sys, numpy as np, ember.core as mx
        rng = np.random.default_rng(5)
        a = rng.standard_normal((256, 784)).astype(np.float32)
        w = rng.standard_normal((512, 784)).astype(np.float32)
        g = rng.standard_normal((256, 512)).astype(np.float32)
        out = [mx.array(a) @ mx.array(w).T, mx.array(g).T @ mx.array(a), mx.array(a) @ mx.array(w[:10]).T]
        np.save(sys.argv[1], np.concatenate([np.asarray(o).ravel() for o in out]))
    """
    # the own kernel's level, even when this process runs capped at the baseline
    env = {"EMBER_ISA": FMA_LEVELS[-1]}
    paths = []
    for n in (1, 2, 3):
        p = str(tmp_path / f"t{n}.npy")
        run_python(code, env={**env, "EMBER_NUM_THREADS": str(n)}, args=(p,))
        paths.append(p)
    first = np.load(paths[0])
    for p in paths[1:]:
        np.testing.assert_array_equal(np.load(p), first)


def _bf16(a):
    """a rounded to bfloat16 (an Ember array) and its values in float64."""
    m = mx.array(np.asarray(a, np.float32)).astype(mx.bfloat16)
    return m, to_numpy(m.astype(mx.float32)).astype(np.float64)


def _bf16_operands(rng, M, N, K, ta, tb):
    """Random bfloat16 operands x (M, K) and y (K, N), each stored
    transposed (a column-major view) where ta / tb, and their float64 values."""
    a, ar = _bf16(rng.standard_normal((K, M) if ta else (M, K)))
    b, br = _bf16(rng.standard_normal((N, K) if tb else (K, N)))
    x, xr = (a.T, ar.T) if ta else (a, ar)
    y, yr = (b.T, br.T) if tb else (b, br)
    return x, xr, y, yr


def _assert_bf16_product(got, want):
    # one rounding of a float32 sum: a pair of k multiplied by the wrong
    # values is off by the size of a term
    assert got.dtype == mx.bfloat16
    got = to_numpy(got.astype(mx.float32)).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2.0 ** -7, atol=np.abs(want).max() * 2.0 ** -11)


# bfloat16 products multiply pairs of k (VDPBF16PS) on AVX-512 CPUs with the
# BF16 extension, from panels packed by pairs: both layouts of each operand,
# odd K (the last pair padded), leading dimensions that are odd (the pairs of
# a row not 4-byte aligned), tiles cut at M and N, batches.
@pytest.mark.parametrize("M,N,K", [(8, 48, 64), (9, 50, 7), (37, 100, 1), (64, 16, 255), (5, 130, 600),
                                   (96, 96, 2048)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_bfloat16_pair_products(level_amx, M, N, K, ta, tb):
    x, xr, y, yr = _bf16_operands(np.random.default_rng(M * 7 + N + K), M, N, K, ta, tb)
    full = x @ y
    _assert_bf16_product(full, xr @ yr)
    if level_amx[0] == "baseline":
        return  # OpenBLAS sums the float32 tiles there: its blocking, and so its bits, follow the shape
    # each element one sum over k, whatever tile it falls in
    np.testing.assert_array_equal(to_numpy((x[M // 3:] @ y[:, N // 2:]).astype(mx.float32)),
                                  to_numpy(full.astype(mx.float32))[M // 3:, N // 2:])


def test_bfloat16_pair_products_odd_strides_batches_and_non_finite(level_amx):
    rng = np.random.default_rng(4)
    big, bigr = _bf16(rng.standard_normal((40, 67)))
    x, xr = big[:, :33], bigr[:, :33]  # rows 67 apart: odd leading dimension
    w, wr = _bf16(rng.standard_normal((33, 70)))
    _assert_bf16_product(x @ w, xr @ wr)
    _assert_bf16_product(w.T @ x.T, wr.T @ xr.T)
    xb, xbr = _bf16(rng.standard_normal((3, 20, 31)))
    wb, wbr = _bf16(rng.standard_normal((3, 31, 50)))
    _assert_bf16_product(xb @ wb, xbr @ wbr)
    _assert_bf16_product(xb @ wb[1], xbr @ wbr[1])
    # an infinity in one k of a pair, a NaN in the other operand
    p = np.ones((16, 9), np.float32)
    q = np.ones((9, 48), np.float32)
    p[3, 4] = np.inf
    q[5, 7] = np.nan
    got = to_numpy((_bf16(p)[0] @ _bf16(q)[0]).astype(mx.float32))
    want = to_numpy(mx.array(p) @ mx.array(q))
    np.testing.assert_array_equal(got, want)
    assert np.isposinf(got[3, :7]).all() and np.isnan(got[:, 7]).all()


# The tile path: each element one sum over k in steps of 32 from k = 0,
# whatever 32 x 32 block, task, k chunk (1024 values of k) or thread computes
# it. A product large enough to be split over the pool, with k past one chunk
# and not a multiple of 32, against rows and columns of it computed alone
# (one thread) and against a float64 reference.
@pytest.mark.parametrize("ta,tb", [(False, False), (True, True), (True, False)])
def test_bfloat16_products_tiles_chunks_and_threads(level_amx, ta, tb):
    M, N, K = 400, 424, 1100  # 2 M N K > 2^28: threaded on the tile unit
    x, xr, y, yr = _bf16_operands(np.random.default_rng(17), M, N, K, ta, tb)
    full = x @ y
    _assert_bf16_product(full, xr @ yr)
    full = to_numpy(full.astype(mx.float32))
    for rows, cols in [(slice(0, 1), slice(0, N)), (slice(37, 70), slice(5, 58)), (slice(383, 400), slice(400, 424))]:
        part = to_numpy((x[rows] @ y[:, cols]).astype(mx.float32))
        np.testing.assert_array_equal(part, full[rows, cols])


def test_amx_switch():
    cfg = mx.__config__()
    has = {"amx_bf16", "avx512_bf16"} <= set(cfg["cpu_features"]) or "amx_int8" in cfg["cpu_features"]
    before = mx._set_amx(False)
    try:
        assert mx.__config__()["amx"] is False
        assert mx._set_amx(True) is False
        assert mx.__config__()["amx"] is has
    finally:
        mx._set_amx(before)
    env_off = run_python("import ember.core as mx; print(mx.__config__()['amx'])", env={"EMBER_AMX": "0"})
    assert env_off.stdout.strip() == "False"
