"""Kernels per ISA level (csrc/ember/backend/cpu/isa.h).

Ember compiles its hot kernels once per x86-64 level -- baseline
(x86-64-v2), avx2 (x86-64-v3), avx512 (x86-64-v4) -- and picks one at import
(``EMBER_ISA`` caps it; ``_set_cpu_isa`` changes the cap in-process, which is
how every test here runs at each level the CPU has). Checked:

* ``__config__()`` and ``_set_cpu_isa``: keys, types, capping, clamping,
  bad names, the ``EMBER_ISA`` variable;
* float -> integer conversion: every float source (float16 and bfloat16 go
  through float32, complex64 through its real part) to every integer type and
  bool, for special and random values over all magnitudes, in every layout,
  small and thread-split sizes, at every level -- against a pure-Python model
  of the rule documented at ``float_to_int`` in kernel_utils.h, and against
  NumPy's ``astype`` wherever NumPy has one answer (its scalar and vector
  loops disagree on out-of-range float -> uint32); the other ways a float
  becomes an integer (``mx.array(floats, dtype=int)``, ``full``, ``a[i] = x``,
  ``.at[]``, ``arange``);
* the same bits at every level for what must not depend on it (arithmetic,
  conversions, reductions over every axis layout, scans, sorts, softmax,
  random); transcendental functions, which differ by design between the
  baseline (no FMA) and the FMA levels: bit-identical on avx2/avx512, and
  baseline within simd_math.h's bound of them (4 ulp float32, 2 ulp float64);
* the same bits for any thread split (EMBER_NUM_THREADS, in subprocesses);
* matmul, conv2d and its gradient, fft, linalg (BLAS/LAPACK with their own
  dispatch) and the rest of tests/smoke_isa.py against NumPy at every level.
"""

import importlib.util
import math
import os
import platform

import numpy as np
import pytest

from conftest import (INTS, ITEMSIZE, NP_CARRIER, SINTS, UINTS, IS_EMBER, ember_only, make_values, mx,
                      mx_dtype, round_to, run_python, to_mx, to_numpy, tolerance)

pytestmark = ember_only  # __config__ and _set_cpu_isa are Ember's

ALL_LEVELS = ("baseline", "avx2", "avx512")
CONFIG = mx.__config__() if IS_EMBER else {"isa_levels": [], "isa_dispatch": False}
DISPATCH = CONFIG["isa_dispatch"]
# the levels the tests run at: every level this CPU has (the one level of a
# -march=native build)
LEVELS = list(CONFIG["isa_levels"]) if DISPATCH else CONFIG["isa_levels"][:1]
IS_X86 = platform.machine().lower() in ("x86_64", "amd64")
needs_levels = pytest.mark.skipif(len(LEVELS) < 2, reason="one ISA level on this machine")


@pytest.fixture(autouse=True)
def restore_isa_level():
    """Every test leaves the level as it found it."""
    if not DISPATCH:
        yield
        return
    before = mx.__config__()["isa"]
    yield
    mx._set_cpu_isa(before)


def set_level(level):
    if DISPATCH:
        assert mx._set_cpu_isa(level) == level


def at_each_level(make):
    """{level: result}: ``make()`` (an array, or a dict of arrays) evaluated
    at each level, as raw() NumPy arrays. Inputs made outside ``make`` must be
    evaluated already, so that only the op under test runs at each level."""
    out = {}
    for level in LEVELS:
        set_level(level)
        res = make()
        mx.eval(list(res.values()) if isinstance(res, dict) else res)
        out[level] = {k: raw(a) for k, a in res.items()} if isinstance(res, dict) else raw(res)
    return out


def fma_levels_agree(make, what):
    """Runs ``make()`` at each level and asserts that the FMA levels (avx2,
    avx512) give the same bits. Returns (baseline's result, the first FMA
    level's result and name), or None where the CPU lacks either."""
    res = at_each_level(make)
    fma = [lv for lv in LEVELS if lv != "baseline"]
    for level in fma[1:]:
        assert same_bits(res[level], res[fma[0]]), f"{what}: {level} != {fma[0]}"
    return (res["baseline"], res[fma[0]], fma[0]) if "baseline" in res and fma else None


def raw(a):
    """The values of an array as NumPy holds them (bfloat16 as its bits)."""
    return np.array(a.view(mx.uint16) if a.dtype == mx.bfloat16 else a)


def same_bits(a, b):
    """Same dtype, shape and bytes (NaN payloads and signs of zero included)."""
    return (a.dtype == b.dtype and a.shape == b.shape
            and np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)))


# --------------------------------------------------------------------------
# __config__ and _set_cpu_isa
# --------------------------------------------------------------------------

V3_FEATURES = {"avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "lzcnt", "movbe"}
V4_FEATURES = V3_FEATURES | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}


def test_config_keys_and_types():
    c = mx.__config__()
    types = {"isa": str, "isa_supported": str, "isa_levels": list, "cpu_features": list,
             "isa_dispatch": bool, "amx": bool, "num_threads": int, "version": str, "blas": dict}
    assert set(c) == set(types)
    assert set(c["blas"]) == {"name", "config", "core", "num_threads"}
    for key, t in types.items():
        assert type(c[key]) is t, (key, c[key])
    assert all(isinstance(x, str) for x in c["isa_levels"] + c["cpu_features"])
    assert c["isa"] in c["isa_levels"]
    assert c["isa_supported"] == c["isa_levels"][-1]
    if c["isa_dispatch"]:
        assert c["isa_levels"] == list(ALL_LEVELS[:len(c["isa_levels"])])
    else:
        assert c["isa_levels"] == [c["isa"]] and c["isa"] in ("native", "generic")
    assert c["num_threads"] >= 1
    if os.environ.get("EMBER_NUM_THREADS", "").isdigit():
        assert c["num_threads"] == max(1, min(int(os.environ["EMBER_NUM_THREADS"]), 64))
    assert mx.device_info()["isa"] == c["isa"]


@pytest.mark.skipif(not (DISPATCH and IS_X86), reason="x86-64 dispatch build")
def test_levels_follow_cpu_features():
    feats = set(CONFIG["cpu_features"])
    assert {"sse4_2", "popcnt"} <= feats
    assert ("avx2" in LEVELS) == (V3_FEATURES <= feats)
    assert ("avx512" in LEVELS) == (V4_FEATURES <= feats)
    if os.path.exists("/proc/cpuinfo"):  # what the kernel reports (lzcnt is "abm" there)
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
        if flags:
            missing = {x for x in feats if ("abm" if x == "lzcnt" else x) not in flags}
            assert not missing, f"reported but not in /proc/cpuinfo: {missing}"


@pytest.mark.skipif(not DISPATCH, reason="dispatch build")
@pytest.mark.parametrize("name,level", [
    ("baseline", 0), ("avx2", 1), ("avx512", 2), ("x86-64-v2", 0), ("sse4.2", 0), ("V3", 1),
    ("x86-64-v3", 1), ("AVX512", 2), ("avx-512", 2), ("x86-64-v4", 2)])
def test_set_cpu_isa_caps_and_clamps(name, level):
    """The level in use is the one asked for, or the best this CPU has."""
    want = LEVELS[min(level, len(LEVELS) - 1)]
    assert mx._set_cpu_isa(name) == want
    c = mx.__config__()
    assert c["isa"] == want
    assert c["isa_supported"] == LEVELS[-1]  # the cap does not change what is supported
    assert mx.sum(mx.arange(1000, dtype=mx.float32)).item() == 499500.0


@pytest.mark.skipif(not DISPATCH, reason="dispatch build")
@pytest.mark.parametrize("name", ["", "avx", "sse2", "avx1024", "v5", "native", "avx 2"])
def test_set_cpu_isa_rejects_unknown_names(name):
    before = mx._set_cpu_isa("baseline")
    with pytest.raises(ValueError, match="set_cpu_isa"):
        mx._set_cpu_isa(name)
    assert mx.__config__()["isa"] == before


@pytest.mark.skipif(not DISPATCH, reason="dispatch build")
def test_ember_isa_environment_variable():
    """EMBER_ISA caps the level at import (and OpenBLAS's core with it); an
    unknown value warns and keeps the best level."""
    code = ("import os, ember.core as mx; "
            "print(mx.__config__()['isa'], os.environ.get('OPENBLAS_CORETYPE', '-'))")
    cases = [("baseline", "baseline", "Nehalem"), ("bogus", LEVELS[-1], "-")]
    if "avx2" in LEVELS:
        cases.append(("x86-64-v3", "avx2", "Haswell"))
    for value, isa, core in cases:
        core = os.environ.get("OPENBLAS_CORETYPE", core)  # a core the user chose is kept
        p = run_python(code, env={"EMBER_ISA": value})
        assert p.stdout.split() == [isa, core], (value, p.stdout)
        assert ("not a level" in p.stderr) == (value == "bogus"), p.stderr


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="per-thread CPU times from /proc")
def test_openblas_threads_sleep_soon_after_import_and_lapack():
    """Ember's OpenBLAS threads stop watching for work within milliseconds
    after starting and after a LAPACK call (by default they take a core for
    ~0.1 s each time, away from Ember's own threads); the variable that sets
    this is not left in the environment."""
    code = """
        import os, time
        os.environ.pop("OPENBLAS_THREAD_TIMEOUT", None)
        import ember.core as mx
        def others():  # CPU ticks of every thread but this one
            total = 0
            for t in os.listdir("/proc/self/task"):
                if t != str(os.getpid()):
                    f = open(f"/proc/self/task/{t}/stat").read().rsplit(")", 1)[1].split()
                    total += int(f[11]) + int(f[12])
            return total
        t0 = others(); time.sleep(0.3); t1 = others()
        mx.eval(mx.linalg.svd(mx.random.normal((256, 256)), stream=mx.cpu))
        t2 = others(); time.sleep(0.3); t3 = others()
        print(t1 - t0, t3 - t2, os.environ.get("OPENBLAS_THREAD_TIMEOUT", "-"))
    """
    after_import, after_svd, variable = run_python(code).stdout.split()
    assert int(after_import) <= 4 and int(after_svd) <= 4, (after_import, after_svd)
    assert variable == "-"


# --------------------------------------------------------------------------
# float -> integer: the rule (kernel_utils.h, float_to_int) in pure Python
# --------------------------------------------------------------------------

def _trunc_or_min(x, bits):
    """Truncation of x toward zero if it is a `bits`-bit signed integer, else
    the most negative one (NaN and infinities included)."""
    lo = -2 ** (bits - 1)
    if not math.isfinite(x):
        return lo
    t = math.trunc(x)
    return t if lo <= t < -lo else lo


def float_to_int_rule(z, target):
    """What converting the value z (float or complex) to `target` gives."""
    if target == "bool":
        return z != 0
    x = z.real if isinstance(z, complex) else z
    bits = 8 * ITEMSIZE[target]
    if target in ("uint32", "uint64") and x >= 2.0 ** (bits - 1):  # NaN is not
        # 2^(bits-1) + the signed rule on x - 2^(bits-1): x itself below 2^bits, else 0
        t = math.trunc(x) if math.isfinite(x) else 2 ** bits
        v = t if t < 2 ** bits else 0
    else:
        v = _trunc_or_min(x, 64 if bits == 64 else 32)  # then keep the low bits
    v %= 2 ** bits
    if target in SINTS and v >= 2 ** (bits - 1):
        v -= 2 ** bits
    return v


def _py_number(v):
    return complex(v) if np.iscomplexobj(v) else float(v)


def test_float_rule_model_examples():
    """The pure-Python model itself, on the examples of kernel_utils.h."""
    f = float_to_int_rule
    assert f(-1.0, "uint32") == 4294967295 and f(2.0 ** 32, "uint32") == 0
    assert f(NAN, "int32") == -2 ** 31 and f(NAN, "int64") == -2 ** 63 and f(NAN, "int8") == 0
    assert f(300.7, "uint8") == 44 and f(-129.0, "int8") == 127 and f(65535.5, "int16") == -1
    assert f(2.0 ** 31, "uint32") == 2 ** 31 and f(3e9, "uint32") == 3000000000 and f(5e9, "uint32") == 0
    assert f(2.0 ** 63, "uint64") == 2 ** 63 and f(2.0 ** 64, "uint64") == 0 and f(-1.0, "uint64") == 2 ** 64 - 1
    assert f(NAN, "uint32") == 2 ** 31 and f(-INF, "uint64") == 2 ** 63 and f(INF, "uint64") == 0
    assert f(NAN, "bool") is True and f(-0.0, "bool") is False and f(0.5j, "bool") is True
    assert f(complex(-2.7, 5), "int32") == -2


class Distinct:
    """The distinct values of a NumPy array, so that the references below run
    once per value (np.unique sorts: done once per array)."""

    def __init__(self, values):
        self.shape = values.shape
        self.values, inv = np.unique(values.ravel(), return_inverse=True)
        self.inv = inv.ravel()

    def expand(self, table):
        return table[self.inv].reshape(self.shape)

    def rule(self, target):
        """float_to_int_rule of every value."""
        return self.expand(np.array([float_to_int_rule(_py_number(u), target) for u in self.values],
                                    dtype=NP_CARRIER[target]))

    def numpy_astype(self, target):
        """NumPy's astype of every value, and where NumPy has one answer for
        it: the same in its scalar loop (a 1-element array) and its vector loop
        (inside a long array). On x86-64 they differ for out-of-range
        float -> uint32: the scalar loop gives the low bits of cvttsd2si's
        64-bit result (-1e10 -> 2884901888, NaN -> 0), the AVX-512 loop gives
        Ember's answer (2147483648)."""
        with np.errstate(invalid="ignore", over="ignore"):
            vector = np.repeat(self.values, 64).astype(target)[::64]
            scalar = np.array([np.array([u]).astype(target)[0] for u in self.values])
        return self.expand(vector), self.expand(vector == scalar)


def rule_reference(values, target):
    return Distinct(values).rule(target)


def assert_same_ints(got, want, src, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    if np.array_equal(got, want):
        return
    bad = np.flatnonzero(got.ravel() != want.ravel())
    g, w, s = got.ravel(), want.ravel(), src.ravel()
    raise AssertionError(f"{what}: {bad.size} of {got.size} differ, e.g. " + "; ".join(
        f"{s[i]!r} -> {g[i]!r} (expected {w[i]!r})" for i in bad[:8]))


NAN, INF = float("nan"), float("inf")
SPECIAL_FLOATS = [
    NAN, INF, -INF, 0.0, -0.0, -1.0, -2.7, 0.5, -0.5, 0.99, -0.99, 1.5, 127.5, 128.0, -128.9, -129.0,
    255.9, 256.0, 300.7, 32767.9, 32768.0, -32768.9, -32769.0, 65535.5, 65536.0, -65537.0, 16777217.0,
    2.0 ** 31 - 128, 2.0 ** 31 - 1, 2.0 ** 31 - 0.5, 2.0 ** 31, 2.0 ** 31 + 256, -2.0 ** 31, -2.0 ** 31 - 1,
    -2.0 ** 31 - 256, 2.0 ** 32 - 256, 2.0 ** 32 - 1, 2.0 ** 32, 2.0 ** 32 + 512, -2.0 ** 32, 2.0 ** 40 + 1,
    2.0 ** 53 + 2, 2.0 ** 63 - 1024, 2.0 ** 63, 2.0 ** 63 + 2048, -2.0 ** 63, -2.0 ** 63 - 2048,
    2.0 ** 64 - 2048, 2.0 ** 64, 2.0 ** 65, -3e9, 5e9, 1e10, -1e10, 1e19, -1e19, 1e20, -1e20, 3.4e38,
    -3.4e38, 1e300, -1e300, 5e-324, 1e-40, 6e-8]
FLOAT_SOURCES = ["float32", "float64", "float16", "bfloat16", "complex64"]
INT_TARGETS = SINTS + UINTS + ["bool"]


def _value_pool():
    """The special values and random ones over every magnitude (2^-3 .. 2^68,
    both signs, some integers and halves near the wrap points)."""
    rng = np.random.default_rng(20261201)
    n = 512 - len(SPECIAL_FLOATS)
    mags = 2.0 ** rng.uniform(-3, 68, n - 64)
    edges = (2.0 ** rng.choice([7, 8, 15, 16, 31, 32, 63, 64], 64)
             + rng.integers(-3, 4, 64) + rng.choice([0, 0.5, -0.5], 64))
    rand = np.concatenate([mags, edges]) * rng.choice([-1.0, 1.0], n)
    return np.concatenate([np.array(SPECIAL_FLOATS), rand])


VALUE_POOL = _value_pool()


def conversion_inputs(source, rows):
    """(rows, 512) values: each row the pool in another order (complex64: a
    random imaginary part, sometimes 0 or NaN)."""
    rng = np.random.default_rng(rows)
    x = rng.permuted(np.tile(VALUE_POOL, (rows, 1)), axis=1)
    if source == "complex64":
        x = x + 1j * rng.choice([0.0, 0.0, 1.5, -2.25, NAN], x.shape)
    return x


# small: every layout; large (>= 2^18 elements: split over the threads);
# large stride-0 inputs in the 0-d test
CONVERSION_CASES = (
    [(s, "small", layout) for s in FLOAT_SOURCES
     for layout in ("contiguous", "sliced", "negstride", "transposed", "broadcast")]
    + [(s, "large", "contiguous") for s in FLOAT_SOURCES]
    + [(s, "large", "negstride") for s in ("float32", "float64")])
ROWS = {"small": 3, "large": (1 << 18) // 512 + 1}


@pytest.mark.parametrize("source,size,layout", CONVERSION_CASES)
def test_float_to_int_conversion(source, size, layout):
    a, vals = to_mx(conversion_inputs(source, ROWS[size]), source, layout)
    mx.eval(a)
    with_numpy = IS_X86 and source in ("float32", "float64")
    distinct = Distinct(vals)
    for target in INT_TARGETS:
        want = distinct.rule(target)
        if with_numpy:
            np_want, np_defined = distinct.numpy_astype(target)
        for level in LEVELS:
            set_level(level)
            got = to_numpy(a.astype(mx_dtype(target)))
            what = f"{source} -> {target} ({size}, {layout}) at {level}"
            assert_same_ints(got, want, vals, what)
            if with_numpy:
                assert_same_ints(got[np_defined], np_want[np_defined], vals[np_defined], what + " vs NumPy")


@pytest.mark.parametrize("source", FLOAT_SOURCES)
def test_float_to_int_conversion_0d_and_scalar_broadcast(source):
    """0-d arrays of the special values, and a few broadcast (stride 0) to
    2^18 elements."""
    x = np.array(SPECIAL_FLOATS) + (0.5j if source == "complex64" else 0)
    scalars = [to_mx(v, source)[0] for v in x]
    mx.eval(scalars)
    vals = round_to(x, source)
    distinct = Distinct(vals)
    wide = [i for i, v in enumerate(SPECIAL_FLOATS) if v != v or v in (-INF, 300.7, -1e10, 2.0 ** 31, 2.0 ** 63)]
    for target in INT_TARGETS:
        d, want = mx_dtype(target), distinct.rule(target)
        for level in LEVELS:
            set_level(level)
            got = np.array([to_numpy(a.astype(d)) for a in scalars])
            assert_same_ints(got, want, vals, f"0-d {source} -> {target} at {level}")
            for i in wide:
                got = to_numpy(mx.broadcast_to(scalars[i], (1 << 18,)).astype(d))
                assert_same_ints(got, np.broadcast_to(want[i], got.shape), np.broadcast_to(vals[i], got.shape),
                                 f"broadcast {source} {SPECIAL_FLOATS[i]} -> {target} at {level}")


# The other ways a Python float becomes an integer, and the precision the
# value has when the rule is applied: the list, scalar and full paths take the
# double; a[i] = x and .at[] first make it a float32 array (MLX's weak typing).
def _setitem(values, d):
    a = mx.zeros((len(values),), dtype=d)
    for i, v in enumerate(values):
        a[i] = v
    return a


def _at_add(values, d):
    a = mx.zeros((len(values),), dtype=d)
    for i, v in enumerate(values):
        a = a.at[i].add(v)
    return a


CONSTRUCTION_PATHS = {
    "list": (lambda v, d: mx.array(v, dtype=d), np.float64),
    "complex_list": (lambda v, d: mx.array([complex(x, 1.0) for x in v], dtype=d), np.float64),
    "scalar": (lambda v, d: mx.stack([mx.array(x, dtype=d) for x in v]), np.float64),
    "full": (lambda v, d: mx.stack([mx.full((), x, dtype=d) for x in v]), np.float64),
    "numpy": (lambda v, d: mx.array(np.array(v), dtype=d), np.float64),
    "setitem": (_setitem, np.float32),
    "at_add": (_at_add, np.float32),
}


@pytest.mark.parametrize("target", INTS)
@pytest.mark.parametrize("path", CONSTRUCTION_PATHS)
def test_float_to_int_construction_follows_the_rule(path, target):
    make, precision = CONSTRUCTION_PATHS[path]
    with np.errstate(over="ignore"):
        vals = np.array(SPECIAL_FLOATS).astype(precision)
    want = rule_reference(vals, target)
    for level in LEVELS:
        set_level(level)
        got = to_numpy(make(SPECIAL_FLOATS, mx_dtype(target)))
        assert_same_ints(got, want, vals, f"{path} -> {target} at {level}")


def _np_setitem(values, target):
    # a[i] = x first makes x a float32 array (MLX's weak typing of Python
    # floats, which Ember follows): NumPy assigning that float32 value
    a = np.zeros(len(values), dtype=target)
    for i, v in enumerate(values):
        a[i] = np.float32(v)
    return a


NUMPY_CONSTRUCTION = {  # NumPy's way of doing what CONSTRUCTION_PATHS do
    "list": lambda v, t: np.array(v, dtype=t),
    "complex_list": None,  # NumPy refuses complex -> int
    "scalar": lambda v, t: np.array([np.array(x, dtype=t) for x in v]),
    "full": lambda v, t: np.array([np.full((), x, dtype=t) for x in v]),
    "numpy": lambda v, t: np.array(v).astype(t),
    "setitem": _np_setitem,
    "at_add": _np_setitem,
}


@pytest.mark.parametrize("target", INTS)
@pytest.mark.parametrize("path", [p for p, f in NUMPY_CONSTRUCTION.items() if f])
def test_float_to_int_construction_matches_numpy_in_range(path, target):
    """Where NumPy defines the conversion (the truncated value fits the
    target; NumPy raises for the others), each path gives NumPy's answer."""
    info = np.iinfo(target)
    precision = CONSTRUCTION_PATHS[path][1]
    with np.errstate(over="ignore"):
        vals = [v for v in SPECIAL_FLOATS if math.isfinite(float(precision(v)))
                and info.min <= math.trunc(float(precision(v))) <= info.max]
    want = NUMPY_CONSTRUCTION[path](vals, target)
    assert np.array_equal(want, [math.trunc(float(precision(v))) for v in vals])
    got = to_numpy(CONSTRUCTION_PATHS[path][0](vals, mx_dtype(target)))
    assert_same_ints(got, want, np.array(vals), f"{path} -> {target} vs NumPy")


ARANGE_ARGS = {"integral_step": [(0.9, 4), (3.7,), (-2.5, 3, 1), (0.5, 10.2, 3), (-7.9, -1, 2), (2, 9.5)],
               "fractional_step": [(0.5, 5.2, 1.5), (-1.5, 3.5, 0.7), (0, 10, 2.9)]}


@pytest.mark.parametrize("dtype", SINTS)
@pytest.mark.parametrize("kind", ARANGE_ARGS)
def test_arange_integer_dtype_with_float_arguments(kind, dtype):
    """NumPy (and MLX): the values are int(start) + i * (int(start + step) - int(start))."""
    for args in ARANGE_ARGS[kind]:
        got = to_numpy(mx.arange(*args, dtype=mx_dtype(dtype)))
        want = np.arange(*args, dtype=dtype)
        assert_same_ints(got, want, np.array(args), f"arange{args} {dtype}")


# --------------------------------------------------------------------------
# the same bits at every level
# --------------------------------------------------------------------------

FLOAT_SPECIALS = [NAN, INF, -INF, 0.0, -0.0, 1e-40, -1e-42, 3e38, -3e38, 1e-30]


def data(dtype, shape, seed, low=-5.0, high=5.0, specials=False):
    """An evaluated array of random values of mx dtype `dtype` (floats: with
    some special values spread in when asked)."""
    rng = np.random.default_rng(seed)
    x = make_values(shape, dtype, rng, low, high)
    if specials and dtype in ("float16", "bfloat16", "float32", "float64"):
        flat = x.reshape(-1)
        pos = rng.choice(flat.size, min(flat.size, 4 * len(FLOAT_SPECIALS)), replace=False)
        with np.errstate(over="ignore"):
            flat[pos] = np.resize(np.array(FLOAT_SPECIALS), pos.size).astype(flat.dtype)
    a = to_mx(x, dtype)[0]
    mx.eval(a)
    return a


IDENTICAL_DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "uint32",
                    "int64", "uint64"]
FLOATING = ("float32", "float64", "float16", "bfloat16")
SMALL, MEDIUM, LARGE, LARGE3 = (37, 259), (37, 1031), (257, 1031), (40, 63, 111)  # LARGE*: > 2^18


def _elementwise(d):
    a, b = data(d, SMALL, 1, specials=True), data(d, SMALL, 2, specials=True)
    row = data(d, SMALL[1:], 3)
    ops = {name: (lambda f=getattr(mx, name): f(a, b[::-1])) for name in
           ("add", "subtract", "multiply", "maximum", "minimum", "equal", "less")}
    ops["broadcast_add"] = lambda: a + row
    ops["scalar_multiply"] = lambda: a * 3
    big_a, big_b = data(d, LARGE, 4), data(d, LARGE, 5)
    ops["large_add"] = lambda: big_a + big_b
    if d in FLOATING:
        for name in ("divide", "sqrt", "rsqrt", "reciprocal", "square", "abs", "negative", "floor", "ceil",
                     "round", "sign", "floor_divide", "remainder", "power", "arctan2"):
            f = getattr(mx, name)
            ops[name] = (lambda f=f: f(a, b)) if name in ("divide", "floor_divide", "remainder", "power",
                                                          "arctan2") else (lambda f=f: f(a))
    else:
        pos = data(d, SMALL, 6, 1, 100)
        ops.update(floor_divide=lambda: mx.floor_divide(a, pos), remainder=lambda: mx.remainder(a, pos),
                   divide=lambda: a / pos, abs=lambda: mx.abs(a), square=lambda: mx.square(a))
    return ops


def _conversions(d):
    a = data(d, MEDIUM, 7, -3e4, 3e4, specials=True)
    targets = [t for t in IDENTICAL_DTYPES + ["bool", "complex64"] if t != d]
    return {t: (lambda t=t: a.astype(mx_dtype(t))) for t in targets}


def _reductions(d):
    big = data(d, LARGE3, 8, *((0, 2) if d in UINTS else (-2, 2)))
    near_one = data(d, SMALL, 9, 0.5, 1.5) if d in FLOATING else data(d, SMALL, 9, -3, 3)
    layouts = {"all": (big, None), "inner": (big, -1), "outer": (big, 0), "middle": (big, 1),
               "outer_and_inner": (big, (0, 2)), "strided": (big[:, ::3, 1::2], 1),
               "transposed": (mx.transpose(big, (2, 0, 1)), -1), "negstride": (big[::-1, :, ::-2], (0, 1))}
    ops = {}
    for name, (x, axis) in layouts.items():
        for op in ("sum", "max", "min") + (("mean",) if d in FLOATING else ()):
            ops[f"{op}_{name}"] = lambda f=getattr(mx, op), x=x, axis=axis: f(x, axis=axis)
        ops[f"argmax_{name}"] = lambda x=x, axis=axis: mx.argmax(x, axis=axis if isinstance(axis, int) else None)
    for axis in (None, 0, 1):
        ops[f"prod_{axis}"] = lambda axis=axis: mx.prod(near_one, axis=axis)
    if d in FLOATING:
        ops["var"] = lambda: mx.var(big, axis=0)
    return ops


def _scans(d):
    a = data(d, SMALL, 10, *((0, 3) if d in UINTS else (-3, 3)))
    ops = {}
    for op in ("cumsum", "cumprod", "cummax", "cummin"):
        f = getattr(mx, op)
        for axis in (0, 1):
            ops[f"{op}_{axis}"] = lambda f=f, axis=axis: f(a, axis=axis)
        ops[f"{op}_reverse_exclusive"] = lambda f=f: f(a, axis=1, reverse=True, inclusive=False)
    big = data(d, LARGE, 11, -1, 1)
    ops["cumsum_large"] = lambda: mx.cumsum(big, axis=0)
    return ops


def _sorts(d):
    a = data(d, (29, 1031), 12, -20, 20, specials=True)  # many ties
    ops = {}
    for axis in (-1, 0):
        ops[f"sort_{axis}"] = lambda axis=axis: mx.sort(a, axis=axis)
        ops[f"argsort_{axis}"] = lambda axis=axis: mx.argsort(a, axis=axis)
    ops["sort_strided"] = lambda: mx.sort(a[:, ::-3], axis=-1)
    long = data(d, (70001,), 13, -1000, 1000)
    ops["argsort_long"] = lambda: mx.argsort(long)
    ops["topk"] = lambda: mx.topk(a, 17, axis=-1)
    ops["partition"] = lambda: mx.partition(a, 100, axis=-1)
    return ops


def _softmax(d):
    a = data(d, SMALL, 14, -20, 20)
    return {"last": lambda: mx.softmax(a, axis=-1), "first": lambda: mx.softmax(a, axis=0),
            "precise": lambda: mx.softmax(a, axis=-1, precise=True)}


KEY = mx.random.key(2026) if IS_EMBER else None
N_RANDOM = 100003
RANDOM_CASES = {  # {name: function making the samples}
    "bits": {f"width{w}": lambda w=w: mx.random.bits((N_RANDOM,), width=w, key=KEY) for w in (1, 2, 4)},
    "uniform": {d: lambda d=d: mx.random.uniform(-2, 3, (N_RANDOM,), dtype=mx_dtype(d), key=KEY)
                for d in FLOATING},
    "randint_bernoulli": {"randint": lambda: mx.random.randint(-7, 1000, (N_RANDOM,), key=KEY),
                          "bernoulli": lambda: mx.random.bernoulli(0.3, (N_RANDOM,), key=KEY)},
    "normal": {d: lambda d=d: mx.random.normal((N_RANDOM,), dtype=mx_dtype(d), key=KEY) for d in FLOATING},
}

IDENTICAL_CASES = {}
for _d in IDENTICAL_DTYPES:
    for _family, _make in (("elementwise", _elementwise), ("convert", _conversions), ("reduce", _reductions),
                           ("scan", _scans), ("sort", _sorts)):
        IDENTICAL_CASES[f"{_family}-{_d}"] = lambda m=_make, d=_d: m(d)
# float32 softmax and normal samples go through simd_math.h's FMA-dependent
# functions: test_transcendental_composites_levels holds them to the bound.
IDENTICAL_CASES["softmax-float64"] = lambda: _softmax("float64")
for _name, _ops in RANDOM_CASES.items():
    if _name != "normal":
        IDENTICAL_CASES[f"random-{_name}"] = lambda ops=_ops: ops


def ulp_distance(a, b):
    """Largest distance in units in the last place between two arrays of
    floats as raw() gives them (bfloat16 as its uint16 bits); +0 and -0 are
    0 apart."""
    if a.size == 0:
        return 0
    bits = 8 * a.dtype.itemsize
    u = {16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    ia, ib = a.view(u).astype(np.uint64), b.view(u).astype(np.uint64)
    top = np.uint64(1) << np.uint64(bits - 1)
    ma, mb = ia & (top - np.uint64(1)), ib & (top - np.uint64(1))
    same_sign = (ia & top) == (ib & top)
    d = np.where(same_sign, np.maximum(ma, mb) - np.minimum(ma, mb), ma + mb)
    return int(d.max())


def as_floats(r, dtype):
    """raw() values as floats (bfloat16 bits -> float32)."""
    return (r.astype(np.uint32) << np.uint32(16)).view(np.float32) if dtype == "bfloat16" else r


@needs_levels
@pytest.mark.parametrize("case", IDENTICAL_CASES)
def test_identical_across_levels(case):
    ops = IDENTICAL_CASES[case]()
    results = at_each_level(lambda: {name: f() for name, f in ops.items()})
    first = LEVELS[0]
    diffs = []
    for name in ops:
        want = results[first][name]
        for level in LEVELS[1:]:
            got = results[level][name]
            if not same_bits(got, want):
                floats = got.dtype.kind == "f" or (got.dtype == np.uint16 and "bfloat16" in f"{case} {name}")
                extra = f" (max {ulp_distance(got, want)} ulp)" if floats and got.shape == want.shape else ""
                diffs.append(f"{name}: {level} != {first}{extra}")
    assert not diffs, f"{case}: " + "; ".join(diffs)


# Transcendental functions (simd_math.h): float32 through the vectorized
# implementations, which fuse multiply-adds on the FMA levels. float64 goes
# through libm. float16/bfloat16 compute in float32 and round.
TRANSCENDENTAL = {  # name: input range (log-uniform magnitudes are added)
    "exp": (-104, 89), "expm1": (-100, 89), "log": (0, 3e38), "log1p": (-1, 3e38), "log2": (0, 3e38),
    "log10": (0, 3e38), "sin": (-1e5, 1e5), "cos": (-1e5, 1e5), "tan": (-1e4, 1e4), "sinh": (-89, 89),
    "cosh": (-89, 89), "tanh": (-20, 20), "sigmoid": (-100, 100), "erf": (-6, 6), "erfinv": (-1, 1),
    "arctan": (-1e6, 1e6), "arcsin": (-1, 1), "arccos": (-1, 1), "arcsinh": (-1e6, 1e6),
    "arccosh": (1, 1e6), "arctanh": (-1, 1)}
ULP_BOUND = {"float32": 4, "float64": 2, "float16": 1, "bfloat16": 1}


def transcendental_input(name, dtype, seed):
    lo, hi = TRANSCENDENTAL[name]
    rng = np.random.default_rng(seed)
    n = 20011
    x = rng.uniform(lo, hi, n)
    top = math.log10(max(abs(lo), abs(hi)))
    mags = 10.0 ** rng.uniform(-30, top, n // 2) * rng.choice([-1.0, 1.0], n // 2)
    x[: n // 2] = np.where((mags >= lo) & (mags <= hi), mags, x[: n // 2])
    x[:8] = [NAN, INF, -INF, 0.0, -0.0, lo, hi, (lo + hi) / 2]
    return to_mx(x, dtype)[0]


@needs_levels
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name", TRANSCENDENTAL)
def test_transcendental_levels(name, dtype):
    """avx2 and avx512 give the same bits; baseline (no FMA) is within the
    documented ulp bound of them, with the same NaNs, infinities and zeros."""
    f = getattr(mx, name)
    x = transcendental_input(name, dtype, 1)
    mx.eval(x)
    pair = fma_levels_agree(lambda: f(x), f"{name} {dtype}")
    if pair:
        base, ref, fma = pair
        fb, fr = as_floats(base, dtype), as_floats(ref, dtype)
        np.testing.assert_array_equal(np.isnan(fb), np.isnan(fr), err_msg=f"{name} {dtype}: NaNs")
        finite = ~np.isnan(fb)
        np.testing.assert_array_equal(fb[np.isinf(fr)], fr[np.isinf(fr)], err_msg=f"{name} {dtype}: infinities")
        d = ulp_distance(base[finite], ref[finite])
        assert d <= ULP_BOUND[dtype], f"{name} {dtype}: baseline is {d} ulp from {fma}"


# Composites of transcendental functions: avx2 and avx512 the same bits,
# baseline within the transcendental tolerance of the suite (conftest).
COMPOSITES = {
    "softmax": lambda x, y: mx.softmax(x, axis=-1),
    "logsumexp": lambda x, y: mx.logsumexp(x, axis=0),
    "logaddexp": lambda x, y: mx.logaddexp(x, y),
    "normal": lambda x, y: mx.random.normal((N_RANDOM,), dtype=x.dtype, key=KEY),
    "truncated_normal": lambda x, y: mx.random.truncated_normal(-1.5, 2.0, (N_RANDOM,), dtype=x.dtype, key=KEY),
    "gumbel": lambda x, y: mx.random.gumbel((N_RANDOM,), dtype=x.dtype, key=KEY),
    "laplace": lambda x, y: mx.random.laplace((N_RANDOM,), dtype=x.dtype, key=KEY),
}


# (the samplers compute in float32 for float64 too: their float64 samples are
# float32 values, so they are compared in float32 only)
COMPOSITE_CASES = [(n, d) for n in COMPOSITES for d in ("float32", "float64")
                   if d == "float32" or n in ("softmax", "logsumexp", "logaddexp")]


@needs_levels
@pytest.mark.parametrize("name,dtype", COMPOSITE_CASES)
def test_transcendental_composites_levels(name, dtype):
    x, y = data(dtype, (211, 97), 15, -30, 30), data(dtype, (211, 97), 16, -30, 30)
    pair = fma_levels_agree(lambda: COMPOSITES[name](x, y), f"{name} {dtype}")
    if pair:
        rtol, atol = tolerance(dtype, transcendental=True)
        np.testing.assert_allclose(pair[0], pair[1], rtol=rtol, atol=atol,
                                   err_msg=f"{name} {dtype}: baseline vs {pair[2]}")


# --------------------------------------------------------------------------
# thread split
# --------------------------------------------------------------------------

# What must not depend on the thread split, computed in a subprocess per
# EMBER_NUM_THREADS (the pool's size is fixed at load). Long 1-D runs of odd
# length split unevenly, and 3 threads split where 1 and 2 do not.
THREAD_SETUP = """
import sys
import numpy as np
import ember.core as mx
rng = np.random.default_rng(7)
x = rng.standard_normal((613, 1031)).astype(np.float32)
f32, f64 = mx.array(x), mx.array(x.astype(np.float64) * 1e3, dtype=mx.float64)
run = mx.array(rng.standard_normal(632003).astype(np.float32))
i32 = mx.array(rng.integers(-1000, 1000, (613, 1031)).astype(np.int32))
wide = mx.array(np.concatenate([rng.standard_normal(1 << 19) * 10.0 ** rng.uniform(-3, 21, 1 << 19),
                                [np.nan, np.inf, -np.inf]]).astype(np.float32))
key = mx.random.key(5)
"""
THREAD_EXPRS = {
    "sum_2d": "mx.sum(f32)", "sum_run": "mx.sum(run)", "sum_run_f64": "mx.sum(run.astype(mx.float64))",
    "sum_f64_2d": "mx.sum(f64, axis=(0, 1))", "mean_run": "mx.mean(run)", "max_run": "mx.max(run)",
    "sum_axis0": "mx.sum(f32, axis=0)", "sum_axis1": "mx.sum(f32, axis=1)", "sum_f64_axis0": "mx.sum(f64, axis=0)",
    "int_sum_axis0": "mx.sum(i32, axis=0)", "int_sum_run": "mx.sum(i32.reshape(-1))",
    "max_axis0": "mx.max(f32, axis=0)", "prod_axis1": "mx.prod(f32 * 0.01 + 1, axis=1)",
    "cumsum_axis0": "mx.cumsum(f32, axis=0)", "cumsum_run": "mx.cumsum(run)", "softmax": "mx.softmax(f32, axis=-1)",
    "exp": "mx.exp(wide)", "add": "f32 + f32[::-1]", "sort": "mx.sort(f32, axis=-1)",
    "argsort_axis0": "mx.argsort(i32, axis=0)", "normal": "mx.random.normal((1 << 19,), key=key)",
    "uniform": "mx.random.uniform(shape=(1 << 19,), key=key)", "bits": "mx.random.bits((1 << 19,), key=key)",
    "float64_to_uint64": "(wide.astype(mx.float64) * 1e9).astype(mx.uint64)",
    **{f"float32_to_{t}": f"wide.astype(mx.{t})" for t in ("int8", "uint16", "int32", "uint32", "int64", "uint64")},
}
THREAD_CODE = THREAD_SETUP + "out = {%s}\n" % ", ".join(f"{k!r}: {v}" for k, v in THREAD_EXPRS.items())


@pytest.fixture(scope="module")
def thread_results(tmp_path_factory):
    """{threads: {name: result}}: this process's pool, and 1, 2, 3 and 7
    threads (those this process does not have) each in a process of its own
    (7 on a machine of fewer cores: pieces of a reduction taken over from
    the share of a thread the OS has put aside)."""
    scope = {}
    exec(THREAD_CODE, scope)
    mx.eval(list(scope["out"].values()))
    own = mx.__config__()["num_threads"]
    results = {own: {k: np.array(v) for k, v in scope["out"].items()}}
    save = ("mx.eval(list(out.values()))\n"
            "np.savez(sys.argv[1], threads=mx.__config__()['num_threads'],\n"
            "         **{k: np.array(v) for k, v in out.items()})")
    for n in sorted({1, 2, 3, 7} - {own}):
        path = tmp_path_factory.mktemp("threads") / f"{n}.npz"
        run_python(THREAD_CODE + save, env={"EMBER_NUM_THREADS": str(n)}, args=[str(path)])
        with np.load(path) as f:
            results[n] = {k: f[k] for k in f.files if k != "threads"}
            assert int(f["threads"]) == n
    return results


@pytest.mark.parametrize("name", THREAD_EXPRS)
def test_thread_split_does_not_change_bits(name, thread_results):
    want = thread_results[1][name]
    differ = sorted(n for n, r in thread_results.items() if not same_bits(r[name], want))
    assert not differ, f"{THREAD_EXPRS[name]}: {differ} threads differ from 1 thread"


# --------------------------------------------------------------------------
# BLAS/LAPACK-backed ops and the smoke checks, at every level
# --------------------------------------------------------------------------

def _smoke_module():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "smoke_isa.py")
    spec = importlib.util.spec_from_file_location("smoke_isa", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SMOKE = _smoke_module() if IS_EMBER else None
SMOKE_CHECKS = {c.__name__[len("check_"):]: c for c in SMOKE.CHECKS} if SMOKE else {}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("check", SMOKE_CHECKS)
def test_smoke_checks_at_level(check, level):
    """tests/smoke_isa.py's checks against NumPy (matmul, conv2d and its
    gradient, sort, reductions, math, random, fft, astype, linalg)."""
    set_level(level)
    SMOKE_CHECKS[check](np.random.default_rng(0))


@pytest.mark.skipif(not DISPATCH, reason="dispatch build")
def test_smoke_script_exit_status(monkeypatch, capsys):
    """smoke_isa.py's main(): 0 when the expected level is in use and every
    check passes, 1 when the level is not the expected one."""
    for expect, status in [(mx.__config__()["isa"], 0), ("not-a-level", 1)]:
        monkeypatch.setenv("EMBER_SMOKE_EXPECT_ISA", expect)
        assert SMOKE.main() == status, capsys.readouterr().out
        out = capsys.readouterr().out
        assert ("FAIL" in out) == bool(status), out


# ---- float16 <-> float32 / float64 ------------------------------------------
# float16_t (dtype.h) converts with integer and float32 arithmetic; the AVX2
# and AVX-512 levels' dense runs (astype, elementwise ops through float32
# pieces) use F16C instead. Every path gives NumPy's bits for every value
# that is not a NaN (round to nearest even, overflow to infinity, subnormals),
# and F16C's NaNs: the quiet bit set, the payload's top bits kept.

def _f16_to_f32_want(h):
    h = h.astype(np.uint32)
    want = h.astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32)
    nan = (h & 0x7FFF) > 0x7C00
    quiet = ((h & 0x8000) << 16) | 0x7FC00000 | ((h & 0x3FF) << 13)
    return np.where(nan, quiet, want).astype(np.uint32)


def _f32_to_f16_want(u):
    u = u.astype(np.uint32)
    with np.errstate(over="ignore", invalid="ignore"):
        want = u.view(np.float32).astype(np.float16).view(np.uint16).astype(np.uint32)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    quiet = ((u >> 16) & 0x8000) | 0x7E00 | ((u >> 13) & 0x3FF)
    return np.where(nan, quiet, want).astype(np.uint16)


def _f32_cases():
    """float32 bit patterns: every float16 value, the midpoints between
    neighbours (ties) and one float32 step either side, the overflow edge,
    NaNs with payloads and random patterns; an odd count (vector tails)."""
    h = np.arange(0x10000, dtype=np.uint32)
    h = h[(h & 0x7FFF) < 0x7C00]  # finite
    lo = h.astype(np.uint16).view(np.float16).astype(np.float64)
    nxt = (h + 1).astype(np.uint16).view(np.float16).astype(np.float64)
    ok = np.isfinite(nxt) & (np.sign(nxt) == np.sign(lo)) & ((h & 0x7FFF) < 0x7BFF)
    mid = ((lo[ok] + nxt[ok]) / 2).astype(np.float32).view(np.uint32)  # exact in float32
    edge = np.array([0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x47800000, 0x7F7FFFFF, 0x7F800000,
                     0x33000000, 0x33000001, 0x32FFFFFF, 0x387FEFFF, 0x387FF000, 0x387FFFFF, 0x38800000,
                     0x00000001, 0x007FFFFF, 0x7F800001, 0x7FBFFFFF, 0x7FC00000, 0x7FC12345, 0x7FFFFFFF],
                    dtype=np.uint32)
    edge = np.concatenate([edge, edge | 0x80000000])
    rand = np.random.default_rng(16).integers(0, 2**32, 200001, dtype=np.uint64).astype(np.uint32)
    f16 = h.astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32)
    return np.concatenate([f16, mid, mid - 1, mid + 1, edge, rand])


def _run_f16_paths(x32, x16):
    """float32 -> float16 and float16 -> float32 through astype (dense and
    strided) and through elementwise ops that compute in float32."""
    r = {}
    r["narrow"] = x32.astype(mx.float16)
    r["narrow_strided"] = x32[::-1].astype(mx.float16)[::-1]
    r["widen"] = x16.astype(mx.float32)
    r["widen_strided"] = x16[::-1].astype(mx.float32)[::-1]
    r["add_zero"] = x16 + mx.array(0.0, mx.float16)  # widened, added, rounded back
    r["neg"] = -x16
    r["maximum"] = mx.maximum(x16, x16)
    mx.eval(r)
    return r


@pytest.mark.parametrize("level", LEVELS)
def test_float16_conversions_every_path_and_level(level):
    u = _f32_cases()
    h = np.arange(0x10000, dtype=np.uint32).astype(np.uint16)
    x32 = mx.array(u.view(np.float32))
    x16 = mx.array(h).view(mx.float16)
    mx.eval(x32, x16)
    set_level(level)
    r = {k: to_numpy(v.view(mx.uint16 if v.dtype == mx.float16 else mx.uint32)) for k, v in
         _run_f16_paths(x32, x16).items()}
    want16, want32 = _f32_to_f16_want(u), _f16_to_f32_want(h)
    np.testing.assert_array_equal(r["narrow"], want16)
    np.testing.assert_array_equal(r["narrow_strided"], want16)
    np.testing.assert_array_equal(r["widen"], want32)
    np.testing.assert_array_equal(r["widen_strided"], want32)
    # through float32 and back: every value itself, -0 + 0 = +0, NaNs quieted
    back = _f32_to_f16_want(want32)
    np.testing.assert_array_equal(r["maximum"], back)
    np.testing.assert_array_equal(r["neg"], back ^ 0x8000)
    np.testing.assert_array_equal(r["add_zero"], np.where(h == 0x8000, 0, back))


def test_float64_to_float16_rounds_once():
    # through float32 first, 1 + 2^-11 + 2^-40 would round to the tie 1 + 2^-11
    # and then to even (1.0); rounded once it is above the tie
    d = np.array([1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 65519.999, 65520.0, 2.0**-25,
                  2.0**-25 + 2.0**-60, 2.0**-24 * 1.5, -(2.0**-14) * (1 - 2.0**-12), 1e300, -np.inf, 0.0, -0.0])
    rng = np.random.default_rng(64)
    d = np.concatenate([d, rng.standard_normal(50001) * 10.0 ** rng.integers(-9, 6, 50001)])
    got = to_numpy(mx.array(d, dtype=mx.float64).astype(mx.float16).view(mx.uint16))
    with np.errstate(over="ignore"):
        want = d.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(got, want)
    assert got[0] == np.float16(1 + 2.0**-10).view(np.uint16)
