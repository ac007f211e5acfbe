"""ember.core.random: Threefry keys and the samplers.

Known-answer vectors of Threefry-2x32-20 (Random123's kat_vectors) check a
NumPy reference of the hash; ember's bits are compared with that reference
(layout included) for many keys and sizes, also sizes that go through the
thread pool. Values recorded from MLX 0.32.4 (same keys) pin split and the
samplers' derivation of values from bits. Distribution checks use fixed keys
and sample sizes: Kolmogorov-Smirnov statistics against the exact CDFs and
moments, with thresholds a correct sampler meets with overwhelming
probability (the tests are deterministic given the keys).
"""

import math
import threading

import numpy as np
import pytest

import ember.core as mx
from conftest import run_python
from gradcheck import check_grads

R = mx.random
K = R.key

# ---------------------------------------------------------------------------
# NumPy reference of Threefry-2x32 (20 rounds) and of the bit layout
# ---------------------------------------------------------------------------

_ROT = [13, 15, 26, 6, 17, 29, 16, 24]


def threefry(k0, k1, c0, c1):
    k0, k1 = np.uint32(k0), np.uint32(k1)
    ks = [k0, k1, np.uint32(0x1BD11BDA) ^ k0 ^ k1]
    x0 = np.asarray(c0, np.uint32) + ks[0]
    x1 = np.asarray(c1, np.uint32) + ks[1]
    for s in range(5):
        for i in range(4):
            r = np.uint32(_ROT[(4 * s + i) % 8])
            x0 = x0 + x1
            x1 = (x1 << r) | (x1 >> (np.uint32(32) - r))
            x1 = x1 ^ x0
        x0 = x0 + ks[(s + 1) % 3]
        x1 = x1 + ks[(s + 2) % 3] + np.uint32(s + 1)
    return x0, x1


def ref_bits(key, n, width=4):
    nbytes = n * width
    words = (nbytes + 3) // 4
    half, odd = words // 2, words % 2
    j = np.arange(half, dtype=np.uint32)
    a, b = threefry(key[0], key[1], j, j + np.uint32(half + odd))
    parts = [a]
    if odd:
        parts.append(threefry(key[0], key[1], np.uint32(half), np.uint32(0))[0].reshape(1))
    parts.append(b)
    w = np.concatenate(parts).astype(np.uint32)
    dt = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
    return w.view(np.uint8)[:nbytes].view(dt)


@pytest.mark.parametrize("key,ctr,want", [
    ((0, 0), (0, 0), (0x6b200159, 0x99ba4efe)),
    ((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
    ((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3), (0xc4923a9c, 0x483df7a0)),
])
def test_threefry_known_answers(key, ctr, want):
    with np.errstate(over="ignore"):
        got = threefry(key[0], key[1], np.uint32(ctr[0]), np.uint32(ctr[1]))
    assert (int(got[0]), int(got[1])) == want


def test_bits_known_answer_directly():
    # One word under key (0, 0) is the first half of threefry((0,0), (0,0)).
    assert np.array(R.bits((1,), key=K(0))).tolist() == [0x6b200159]


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 13, 64, 1001, 300_007])
def test_bits_match_reference(width, n):
    for seed in (0, 1, 2**33 + 17):
        k = K(seed)
        got = np.array(R.bits((n,), width=width, key=k))
        with np.errstate(over="ignore"):
            want = ref_bits(np.array(k), n, width)
        assert got.dtype == want.dtype and got.shape == (n,)
        np.testing.assert_array_equal(got, want)


def test_bits_shapes():
    k = K(3)
    assert R.bits((2, 3), key=k).shape == (2, 3)
    assert R.bits((), key=k).shape == ()
    assert R.bits((0, 4), key=k).shape == (0, 4)
    np.testing.assert_array_equal(np.array(R.bits((2, 3), key=k)).ravel(), np.array(R.bits((6,), key=k)))


# ---------------------------------------------------------------------------
# Keys, split, values recorded from MLX 0.32.4 on this machine
# ---------------------------------------------------------------------------

MLX_VALUES = {
    'split_0': ([[4146024105, 967050713], [2718843009, 1272950319]], 'uint32'),
    'split_7_5': ([[3583082021, 1059767885], [1158596951, 3570483602], [902484696, 1947592014], [964771841, 2936027381], [2956069637, 3584898772]], 'uint32'),  # noqa: E501
    'split_2p40_3': ([[1070028816, 3116542653], [3600761423, 1908725145], [1447120341, 1212153964]], 'uint32'),
    'uniform_3_9': ([0.8688967227935791, 0.15015387535095215, 1.349595069885254, -1.52101469039917, -1.4940178394317627, -1.846774935722351, 0.10590243339538574, 2.485732078552246, -1.2607170343399048], 'float32'),  # noqa: E501
    'uniform_f16_3_7': ([0.3173828125, 0.85498046875, 0.81640625, 0.94873046875, 0.08782958984375, 0.047119140625, 0.85791015625], 'float16'),  # noqa: E501
    'randint_5_11': ([-4, 16, 6, 13, 6, 3, -4, 15, 7, 2, -3], 'int32'),
    'bernoulli_5_13': ([False, True, True, False, True, True, False, False, False, False, False, False, False], 'bool'),
    'permutation_5_10': ([7, 0, 9, 5, 6, 1, 4, 2, 8, 3], 'uint32'),
    'normal_5_9': ([-0.7504116296768188, 0.40619778633117676, 0.6943164467811584, 1.966550350189209, -1.0190057754516602, 0.20223797857761383, 0.28679361939430237, -1.3284183740615845, 1.0798745155334473], 'float32'),  # noqa: E501
    'gumbel_5_6': ([0.9697163105010986, 1.0306822061538696, 1.0608915090560913, 1.097845196723938, -1.0052779912948608, 0.6266277432441711], 'float32'),  # noqa: E501
    'laplace_5_6': ([0.07963871955871582, -0.021238088607788086, -0.07166099548339844, -0.1337205171585083, 5.079039096832275, 0.6223893761634827], 'float32'),  # noqa: E501
    'tn_5_7': ([-0.4403739869594574, -0.979199230670929, 0.0921950712800026, -0.2336038500070572, 1.1434406042099, -0.02413817122578621, -0.7712790369987488], 'float32'),  # noqa: E501
    'categorical': ([4, 3, 1], 'uint32'),
    'categorical_shape': ([[4, 0, 0], [5, 2, 1], [5, 1, 4], [2, 2, 1]], 'uint32'),
    'categorical_ns': ([[1, 5, 4, 2, 2], [0, 1, 0, 0, 4], [1, 4, 5, 5, 0]], 'uint32'),
    'categorical_ax0': ([1, 2, 1, 1, 0, 0], 'uint32'),
}

_LOGITS = np.log(np.array([[1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1], [1, 1, 1, 1, 1, 1]], np.float32))

SAMPLES = {
    'split_0': lambda: R.split(K(0)),
    'split_7_5': lambda: R.split(K(7), 5),
    'split_2p40_3': lambda: R.split(K(2**40 + 5), 3),
    'uniform_3_9': lambda: R.uniform(-2, 3, shape=(9,), key=K(3)),
    'uniform_f16_3_7': lambda: R.uniform(shape=(7,), dtype=mx.float16, key=K(3)),
    'randint_5_11': lambda: R.randint(-5, 17, shape=(11,), key=K(5)),
    'bernoulli_5_13': lambda: R.bernoulli(0.3, shape=(13,), key=K(5)),
    'permutation_5_10': lambda: R.permutation(10, key=K(5)),
    'normal_5_9': lambda: R.normal(shape=(9,), key=K(5)),
    'gumbel_5_6': lambda: R.gumbel(shape=(6,), key=K(5)),
    'laplace_5_6': lambda: R.laplace(shape=(6,), loc=1.0, scale=2.0, key=K(5)),
    'tn_5_7': lambda: R.truncated_normal(-1, 2, shape=(7,), key=K(5)),
    'categorical': lambda: R.categorical(mx.array(_LOGITS), key=K(11)),
    'categorical_shape': lambda: R.categorical(mx.array(_LOGITS), shape=(4, 3), key=K(11)),
    'categorical_ns': lambda: R.categorical(mx.array(_LOGITS), num_samples=5, key=K(11)),
    'categorical_ax0': lambda: R.categorical(mx.array(_LOGITS), axis=0, key=K(11)),
}
# Bit-exact with MLX except where the erfinv/log implementations differ.
INEXACT = {'normal_5_9': 2e-6, 'gumbel_5_6': 2e-6, 'laplace_5_6': 2e-6, 'tn_5_7': 2e-6}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_values_recorded_from_mlx(name):
    values, dtype = MLX_VALUES[name]
    got = np.array(SAMPLES[name]())
    want = np.array(values, dtype=dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    if name in INEXACT:
        np.testing.assert_allclose(got, want, rtol=INEXACT[name], atol=INEXACT[name])
    else:
        np.testing.assert_array_equal(got, want)


def test_key_layout():
    assert np.array(K(0)).tolist() == [0, 0]
    assert np.array(K(2**40 + 5)).tolist() == [256, 5]
    assert K(2**64 - 1).dtype == mx.uint32
    with pytest.raises(TypeError):
        K(-1)


def test_split_shapes_and_reference():
    k = K(123)
    for num in (0, 1, 2, 3, 10):
        s = np.array(R.split(k, num))
        assert s.shape == (num, 2) and s.dtype == np.uint32
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(s.ravel(), ref_bits(np.array(k), 2 * num))


# ---------------------------------------------------------------------------
# Determinism: runs, threads, processes; the global key
# ---------------------------------------------------------------------------

def test_same_key_same_values_across_threads_and_processes():
    k = K(99)
    want = np.array(R.normal((100_003,), key=k))
    np.testing.assert_array_equal(np.array(R.normal((100_003,), key=k)), want)
    out = [None] * 4

    def work(i):
        out[i] = np.array(R.normal((100_003,), key=K(99)))
    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for o in out:
        np.testing.assert_array_equal(o, want)
    code = ("import ember.core as mx, numpy as np, sys;"
            "sys.stdout.write(np.array(mx.random.normal((100003,), key=mx.random.key(99))).tobytes().hex())")
    res = run_python(code)
    np.testing.assert_array_equal(np.frombuffer(bytes.fromhex(res.stdout), np.float32), want)


def test_global_seed():
    R.seed(42)
    a = np.array(R.uniform(shape=(5,)))
    b = np.array(R.uniform(shape=(5,)))
    R.seed(42)
    np.testing.assert_array_equal(np.array(R.uniform(shape=(5,))), a)
    np.testing.assert_array_equal(np.array(R.uniform(shape=(5,))), b)
    assert not np.array_equal(a, b)
    for f in (lambda: R.normal((3,)), lambda: R.randint(0, 5, (3,)), lambda: R.bernoulli(0.5, (3,)),
              lambda: R.gumbel((3,)), lambda: R.laplace((3,)), lambda: R.permutation(4),
              lambda: R.truncated_normal(0, 1, (3,)), lambda: R.categorical(mx.zeros((2, 3))),
              lambda: R.bits((3,)), lambda: R.multivariate_normal(mx.zeros(2), mx.eye(2))):
        assert f().size >= 1


def test_global_key_thread_safe():
    R.seed(7)
    got = []
    lock = threading.Lock()

    def work():
        vals = [np.array(R.bits((2,))).tobytes() for _ in range(200)]
        with lock:
            got.extend(vals)
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(got) == 800 and len(set(got)) == 800   # every draw used its own key


# ---------------------------------------------------------------------------
# Distributions: KS against the exact CDF and moments
# ---------------------------------------------------------------------------

N = 200_000
KS_BOUND = 1.95 / math.sqrt(N)   # alpha ~ 0.001


def ks(x, cdf):
    x = np.sort(np.asarray(x, np.float64))
    f = cdf(x)
    n = x.size
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


_erf = np.vectorize(math.erf)


def _phi(x):
    return 0.5 * (1 + _erf(x / math.sqrt(2)))


DISTS = {
    "uniform": (lambda k: R.uniform(-1, 3, (N,), key=k), lambda x: (x + 1) / 4, 1.0, 4 / 3),
    "normal": (lambda k: R.normal((N,), key=k), _phi, 0.0, 1.0),
    "normal_loc_scale": (lambda k: R.normal((N,), loc=2.0, scale=0.5, key=k), lambda x: _phi((x - 2) / 0.5),
                         2.0, 0.25),
    "gumbel": (lambda k: R.gumbel((N,), key=k), lambda x: np.exp(-np.exp(-x)), 0.5772156649, math.pi ** 2 / 6),
    "laplace": (lambda k: R.laplace((N,), loc=1.0, scale=2.0, key=k),
                lambda x: np.where(x < 1, 0.5 * np.exp((x - 1) / 2), 1 - 0.5 * np.exp(-(x - 1) / 2)), 1.0, 8.0),
    "truncated_normal": (lambda k: R.truncated_normal(-0.5, 1.5, (N,), key=k),
                         lambda x: (_phi(x) - _phi(-0.5)) / (_phi(1.5) - _phi(-0.5)), None, None),
}


@pytest.mark.parametrize("name", sorted(DISTS))
def test_distribution_ks_and_moments(name):
    sample, cdf, mean, var = DISTS[name]
    x = np.array(sample(K(2024))).astype(np.float64)
    assert x.shape == (N,) and np.isfinite(x).all()
    assert ks(x, cdf) < KS_BOUND, name
    if mean is not None:
        assert abs(x.mean() - mean) < 5 * math.sqrt(var / N)
        assert abs(x.var() / var - 1) < 0.03


def test_discrete_distributions():
    x = np.array(R.randint(-3, 7, (N,), key=K(1)))
    counts = np.bincount(x + 3, minlength=10)
    assert x.min() == -3 and x.max() == 6 and counts.size == 10
    chi2 = np.sum((counts - N / 10) ** 2 / (N / 10))
    assert chi2 < 35      # 9 dof: p ~ 7e-5
    b = np.array(R.bernoulli(0.3, (N,), key=K(2)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 5 * math.sqrt(0.21 / N)
    p = np.array([0.1, 0.2, 0.3, 0.4])
    c = np.array(R.categorical(mx.array(np.log(p).astype(np.float32)), shape=(N,), key=K(3)))
    counts = np.bincount(c, minlength=4)
    assert np.sum((counts - N * p) ** 2 / (N * p)) < 25   # 3 dof
    perm = np.array(R.permutation(1000, key=K(4)))
    assert sorted(perm.tolist()) == list(range(1000)) and not np.array_equal(perm, np.arange(1000))


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64])
def test_multivariate_normal_moments(dtype):
    mean = np.array([1.0, -2.0, 0.5])
    a = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.4], [0.1, -0.4, 0.8]])
    x = np.array(R.multivariate_normal(mx.array(mean), mx.array(a), shape=(N,), dtype=dtype, key=K(5)))
    assert x.shape == (N, 3) and x.dtype == (np.float32 if dtype == mx.float32 else np.float64)
    np.testing.assert_allclose(x.mean(0), mean, atol=0.02)
    np.testing.assert_allclose(np.cov(x.T), a, atol=0.03)
    # z = L^-1 (x - mean) is standard normal.
    z = np.linalg.solve(np.linalg.cholesky(a), (x - mean).T).ravel()
    assert ks(z, _phi) < 1.95 / math.sqrt(z.size)


def test_multivariate_normal_semidefinite_and_batched():
    cov = np.array([[1.0, 1.0], [1.0, 1.0]])           # rank 1: x0 == x1
    x = np.array(R.multivariate_normal(mx.zeros(2), mx.array(cov), shape=(1000,), key=K(6)))
    np.testing.assert_allclose(x[:, 0], x[:, 1], atol=1e-5)
    covs = np.stack([np.eye(2), 4 * np.eye(2)])
    y = np.array(R.multivariate_normal(mx.zeros((2, 2)), mx.array(covs), shape=(20000, 2), key=K(7)))
    assert y.shape == (20000, 2, 2)
    np.testing.assert_allclose(y.std(0), [[1, 1], [2, 2]], rtol=0.05)


# ---------------------------------------------------------------------------
# Support, dtypes, shapes
# ---------------------------------------------------------------------------

FLOAT_DTYPES = [mx.float16, mx.bfloat16, mx.float32, mx.float64]


def _np(a):
    return np.array(a.astype(mx.float64)) if a.dtype == mx.bfloat16 else np.array(a)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_uniform_never_reaches_high(dtype):
    # Half types: ~1 in 2^12 float32 samples round up to 1.0 before clamping.
    for lo, hi in ((0, 1), (-3, 5.5), (1, 1.5)):
        x = R.uniform(lo, hi, (400_000,), dtype=dtype, key=K(8))
        assert x.dtype == dtype
        v = _np(x)
        assert v.min() >= lo and v.max() < hi, (lo, hi, v.min(), v.max())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_truncated_normal_inside_bounds(dtype):
    for lo, hi in ((-1, 1), (3.0, 3.5), (-6.0, -5.0), (-7.0, 7.0), (0.0, float("inf"))):
        x = _np(R.truncated_normal(lo, hi, (100_000,), dtype=dtype, key=K(9)))
        assert np.isfinite(x).all() or hi == float("inf")
        assert x.min() >= lo and x.max() <= hi, (lo, hi, x.min(), x.max())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3, 4), (2, 0, 3)])
def test_dtype_shape_combinations(dtype, shape):
    k = K(10)
    for f in (lambda: R.uniform(shape=shape, dtype=dtype, key=k),
              lambda: R.normal(shape, dtype=dtype, key=k),
              lambda: R.gumbel(shape, dtype=dtype, key=k),
              lambda: R.laplace(shape, dtype=dtype, key=k),
              lambda: R.truncated_normal(-1, 1, shape, dtype=dtype, key=k)):
        x = f()
        assert x.shape == shape and x.dtype == dtype
        assert np.isfinite(_np(x)).all()
    for it in (mx.int8, mx.uint8, mx.int16, mx.int32, mx.uint32, mx.int64, mx.bool_):
        x = R.randint(0, 2, shape, dtype=it, key=k)
        assert x.shape == shape and x.dtype == it
    assert R.bernoulli(0.5, shape, key=k).shape == shape


def test_broadcast_parameters():
    k = K(11)
    x = np.array(R.uniform(mx.array([0.0, 10.0, 20.0]), mx.array([[1.0], [2.0]]) + 20, (2, 3), key=k))
    assert x.shape == (2, 3)
    assert (x >= [0, 10, 20]).all() and (x < [[21], [22]]).all()
    y = np.array(R.randint(mx.array([0, 100]), 105, (4, 2), key=k))
    assert (y[:, 0] < 105).all() and (y[:, 1] >= 100).all()
    b = R.bernoulli(mx.array([0.0, 1.0]), key=k)
    assert np.array(b).tolist() == [False, True]
    assert R.truncated_normal(mx.array([-1.0, 0.0]), 1.0, key=k).shape == (2,)
    z = np.array(R.normal((3,), loc=mx.array([1.0, 2.0, 3.0]), scale=0.0, key=k))
    np.testing.assert_array_equal(z, [1, 2, 3])


def test_permutation_of_arrays():
    x = np.arange(24).reshape(4, 6).astype(np.float32)
    for axis in (0, 1, -1):
        p = np.array(R.permutation(mx.array(x), axis=axis, key=K(12)))
        assert p.shape == x.shape and p.dtype == np.float32
        np.testing.assert_array_equal(np.sort(p, axis=axis), x)
    # non-contiguous input
    xt = mx.array(x).T
    p = np.array(R.permutation(xt, key=K(12)))
    np.testing.assert_array_equal(np.sort(p, axis=0), x.T)


# ---------------------------------------------------------------------------
# Transforms: vmap over keys, derivatives through the parameters
# ---------------------------------------------------------------------------

VMAP_SAMPLERS = {
    "bits": lambda k: R.bits((5,), key=k),
    "split": lambda k: R.split(k, 3),
    "uniform": lambda k: R.uniform(1.0, 2.0, (4, 3), key=k),
    "normal": lambda k: R.normal((7,), key=k),
    "randint": lambda k: R.randint(0, 9, (6,), key=k),
    "categorical": lambda k: R.categorical(mx.zeros((3, 5)), key=k),
    "permutation": lambda k: R.permutation(8, key=k),
    "gumbel": lambda k: R.gumbel((3,), key=k),
}


@pytest.mark.parametrize("name", sorted(VMAP_SAMPLERS))
def test_vmap_over_keys(name):
    f = VMAP_SAMPLERS[name]
    keys = R.split(K(13), 4)
    got = np.array(mx.vmap(f)(keys))
    want = np.stack([np.array(f(keys[i])) for i in range(4)])
    np.testing.assert_array_equal(got, want)
    # batch axis 1 of the keys, outputs on axis 1
    got1 = np.array(mx.vmap(f, in_axes=1, out_axes=1)(keys.T))
    np.testing.assert_array_equal(np.moveaxis(got1, 1, 0), want)


def test_nested_vmap_over_keys():
    keys = R.split(K(14), 6).reshape(2, 3, 2)
    got = np.array(mx.vmap(mx.vmap(lambda k: R.normal((4,), key=k)))(keys))
    want = np.stack([np.stack([np.array(R.normal((4,), key=keys[i, j])) for j in range(3)]) for i in range(2)])
    np.testing.assert_array_equal(got, want)


def test_grads_through_parameters():
    k = K(15)
    check_grads(lambda loc, scale: R.normal((5,), dtype=mx.float64, loc=loc, scale=scale, key=k),
                [mx.array([0.5, 1.0, -1.0, 2.0, 0.0], mx.float64), mx.array(1.5, mx.float64)])
    check_grads(lambda lo, hi: R.uniform(lo, hi, (5,), dtype=mx.float64, key=k),
                [mx.array(-1.0, mx.float64), mx.array([2.0, 3.0, 4.0, 5.0, 6.0], mx.float64)])
    check_grads(lambda m: R.multivariate_normal(m, mx.eye(2, dtype=mx.float64) * 2, (3,), dtype=mx.float64, key=k),
                [mx.array([1.0, -1.0], mx.float64)])
    # d/dscale of scale * z is z itself
    z = R.normal((5,), key=k)
    g = mx.grad(lambda s: mx.sum(R.normal((5,), scale=s, key=k)))(mx.array(1.0))
    np.testing.assert_allclose(float(g), float(mx.sum(z)), rtol=1e-5)


def test_no_derivative_through_keys():
    # Keys are integers: a function of a key has no gradient path through it.
    def f(x, k):
        return mx.sum(x * R.normal((3,), key=k))
    g = mx.grad(f)(mx.ones(3), K(1))
    np.testing.assert_array_equal(np.array(g), np.array(R.normal((3,), key=K(1))))


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

ERRORS = [
    (lambda: R.uniform(shape=(-1,), key=K(0)), ValueError, "Negative dimensions"),
    (lambda: R.normal((2, -3), key=K(0)), ValueError, "Negative dimensions"),
    (lambda: R.bits((-1,), key=K(0)), ValueError, "Negative dimensions"),
    (lambda: R.bits((3,), width=3, key=K(0)), ValueError, "width"),
    (lambda: R.uniform(shape=(3,), key=mx.array([1, 2], mx.int32)), ValueError, "uint32"),
    (lambda: R.uniform(shape=(3,), key=mx.array([1.0, 2.0])), ValueError, "uint32"),
    (lambda: R.uniform(shape=(3,), key=mx.array([1, 2, 3], mx.uint32)), ValueError, "key shape"),
    (lambda: R.normal((3,), key=R.split(K(0), 3)), ValueError, "key shape"),
    (lambda: R.split(mx.array([1, 2], mx.int32)), ValueError, "uint32"),
    (lambda: R.split(K(0), -1), ValueError, "non-negative"),
    (lambda: R.uniform(shape=(3,), dtype=mx.int32, key=K(0)), ValueError, "floating"),
    (lambda: R.normal((3,), dtype=mx.int32, key=K(0)), ValueError, "floating"),
    (lambda: R.normal((3,), dtype=mx.complex128 if hasattr(mx, "complex128") else mx.int8, key=K(0)),
     ValueError, "complex64"),
    (lambda: R.gumbel((3,), dtype=mx.uint8, key=K(0)), ValueError, "floating"),
    (lambda: R.laplace((3,), dtype=mx.int16, key=K(0)), ValueError, "floating"),
    (lambda: R.truncated_normal(0, 1, (3,), dtype=mx.int32, key=K(0)), ValueError, "floating"),
    (lambda: R.randint(0, 10, (3,), dtype=mx.float32, key=K(0)), ValueError, "integer"),
    (lambda: R.uniform(mx.array([0.0, 1.0]), 2.0, key=K(0)), ValueError, "Cannot generate"),
    (lambda: R.uniform(mx.zeros(3), 2.0, shape=(2,), key=K(0)), ValueError, "uniform"),
    (lambda: R.bernoulli(mx.array([0.1, 0.2]), shape=(3,), key=K(0)), ValueError, "bernoulli"),
    (lambda: R.categorical(mx.zeros((3, 4)), shape=(2,), num_samples=2, key=K(0)), ValueError, "At most one"),
    (lambda: R.categorical(mx.zeros((3, 4)), axis=2, key=K(0)), IndexError, "categorical"),
    (lambda: R.categorical(mx.zeros((3, 4)), shape=(2,), key=K(0)), ValueError, "cannot be broadcast"),
    (lambda: R.permutation(-2, key=K(0)), ValueError, "non-negative"),
    (lambda: R.permutation(mx.zeros((2, 3)), axis=2, key=K(0)), IndexError, "permutation"),
    (lambda: R.multivariate_normal(mx.zeros(2), mx.eye(3), key=K(0)), ValueError, "cov"),
    (lambda: R.multivariate_normal(mx.zeros(2), mx.eye(2), dtype=mx.float16, key=K(0)), ValueError, "float32"),
    (lambda: R.uniform(shape="abc", key=K(0)), TypeError, "shape"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    f, exc, frag = ERRORS[i]
    with pytest.raises(exc, match=frag):
        mx.eval(f())


@pytest.mark.parametrize("cov", [
    [[1.0, 2.0], [2.0, 1.0]],          # indefinite
    [[-1.0, 0.0], [0.0, 1.0]],         # negative variance
    [[1.0, 0.5], [0.0, 1.0]],          # not symmetric
    [[1.0, float("nan")], [float("nan"), 1.0]],
])
def test_multivariate_normal_rejects_non_psd(cov):
    for dtype in (mx.float32, mx.float64):
        x = R.multivariate_normal(mx.zeros(2), mx.array(cov), shape=(3,), dtype=dtype, key=K(0))
        with pytest.raises(ValueError, match="multivariate_normal"):
            mx.eval(x)


def test_multivariate_normal_grads_and_vmap_over_cov():
    k = K(16)
    b = mx.array([[1.0, 0.2, 0.0], [0.3, 0.9, 0.1], [-0.2, 0.4, 1.1]], mx.float64)

    def f(m, a):   # a @ a.T + I: symmetric positive definite for any a
        cov = a @ a.T + mx.eye(3, dtype=mx.float64)
        return R.multivariate_normal(m, cov, (4,), dtype=mx.float64, key=k)
    check_grads(f, [mx.array([0.5, -1.0, 2.0], mx.float64), b])
    covs = mx.stack([mx.eye(2) * 2, mx.array([[2.0, 0.5], [0.5, 1.0]])])
    got = np.array(mx.vmap(lambda c: R.multivariate_normal(mx.zeros(2), c, (3,), key=k))(covs))
    want = np.stack([np.array(R.multivariate_normal(mx.zeros(2), covs[i], (3,), key=k)) for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_normal_complex64():
    # Recorded from MLX 0.32.4: normal((3,), complex64, key(5)), plain and with loc=1, scale=2.
    want = np.array([0.33946875 + 0.37068117j, 0.38595983 + 0.40448406j, -1.0703776 + 0.1536787j], np.complex64)
    got = np.array(R.normal((3,), dtype=mx.complex64, key=K(5)))
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    want2 = np.array([1.6789374 + 0.74136233j, 1.7719197 + 0.8089681j, -1.1407552 + 0.3073574j], np.complex64)
    got2 = np.array(R.normal((3,), dtype=mx.complex64, loc=1.0, scale=2.0, key=K(5)))
    np.testing.assert_allclose(got2, want2, rtol=1e-5, atol=1e-6)
    z = np.array(R.normal((N,), dtype=mx.complex64, key=K(6)))
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.02 and abs(z.real.var() - 0.5) < 0.01
    assert R.normal((2, 0, 3), dtype=mx.complex64, key=K(6)).shape == (2, 0, 3)


def test_random_state_is_the_global_key():
    """mx.random.state: a sequence of one item, the global key (what MLX's
    compile captures through inputs=/outputs=): seed(3) makes it [0, 3], and
    each keyless draw moves it on (values recorded from MLX 0.32.4)."""
    mx.random.seed(3)
    st = mx.random.state
    assert len(st) == 1
    np.testing.assert_array_equal(np.array(st[0]), [0, 3])
    assert st[0].dtype == mx.uint32
    mx.random.uniform()
    np.testing.assert_array_equal(np.array(mx.random.state[0]), [1024511538, 47757680])
    # the key it holds is the one the next keyless sampler splits
    mx.random.seed(7)
    k = mx.random.state[0]
    _, sub = mx.random.split(k)
    np.testing.assert_array_equal(np.array(mx.random.uniform(shape=(4,))), np.array(mx.random.uniform(shape=(4,), key=sub)))
    assert [np.array(a).tolist() for a in mx.random.state] == [np.array(mx.random.state[0]).tolist()]
    with pytest.raises(IndexError):
        mx.random.state[1]
