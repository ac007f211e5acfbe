"""Shared test machinery for the Ember Python suite.

Backend switch
--------------
The suite imports ``ember.core as mx`` by default.  Set
``EMBER_TEST_BACKEND=mlx`` to run the very same tests against
``mlx.core`` instead; this is how the expectations in this directory were
validated against MLX, which Ember must match name for name::

    EMBER_TEST_BACKEND=mlx python -m pytest tests/python -q -p no:cacheprovider

Tests that encode a deliberate Ember difference (a safer error where MLX
reads out of bounds or crashes, exact float32 summation, reflected operators
MLX lacks, ...) carry the ``ember_only`` marker (``@ember_only`` from this
module, or ``marks=[ember_only]`` on a parameter) -- never a
``skipif(IS_MLX)`` -- and are skipped on the mlx backend; ``pytest -m "not
ember_only"`` selects exactly what runs against MLX, on either backend.  Error-message checks use :func:`raises`, which checks the message
on Ember and, on MLX, only where the entry says MLX words it the same way.

Helpers
-------
``to_numpy``          mx array -> numpy (bfloat16 goes through float32).
``to_mx``             numpy values -> mx array of a given dtype and layout.
``make_values``       random values representable in a given dtype.
``assert_close``      shape + dtype + values with per-dtype tolerances.
``LAYOUTS``           contiguous, transposed, negative-stride, sliced,
                      broadcast and strided-numpy inputs.
``run_python``        run code in a fresh interpreter that imports the same
                      packages (for environment variables read at import,
                      and crashes that must fail only one test).
"""

import os
import subprocess
import sys
import tempfile
import textwrap

import hypothesis
import hypothesis.configuration
import numpy as np
import pytest

# Hypothesis keeps nothing in the working directory (its home would
# otherwise be ./.hypothesis), stores no example database, and has no
# per-example deadline (first calls compile kernels / warm caches).
hypothesis.configuration.set_hypothesis_home_dir(
    os.path.join(tempfile.gettempdir(), "ember-tests-hypothesis"))
hypothesis.settings.register_profile("ember", database=None, deadline=None)
hypothesis.settings.load_profile("ember")

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "ember").strip().lower()
if BACKEND == "mlx":
    import mlx.core as mx  # noqa: F401  (the oracle, only when asked for)
elif BACKEND == "ember":
    import ember.core as mx  # noqa: F401
else:  # pragma: no cover - configuration error
    raise RuntimeError(
        f"EMBER_TEST_BACKEND must be 'ember' or 'mlx', got {BACKEND!r}")

IS_MLX = BACKEND == "mlx"
IS_EMBER = not IS_MLX


# --------------------------------------------------------------------------
# pytest hooks: markers and the ember_only skip
# --------------------------------------------------------------------------

def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: large or long-running test (deselect with -m 'not slow')")
    config.addinivalue_line(
        "markers",
        "ember_only: expectation where Ember deliberately differs from MLX "
        "(safer error, better precision, extra operator); skipped when "
        "EMBER_TEST_BACKEND=mlx")


# Behaviour Ember does not have yet, each with the issue that brings it.
# These run as strict xfails: the day one passes, the suite fails until its
# line is removed here.
KNOWN_GAPS = {}


def pytest_collection_modifyitems(config, items):
    if not IS_MLX:
        for item in items:
            for prefix, reason in KNOWN_GAPS.items():
                if item.nodeid.split("/")[-1].startswith(prefix):
                    item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
        return
    skip = pytest.mark.skip(reason="Ember-only expectation (MLX differs)")
    for item in items:
        if "ember_only" in item.keywords:
            item.add_marker(skip)


ember_only = pytest.mark.ember_only


# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------

ALL = [
    "bool", "uint8", "uint16", "uint32", "uint64",
    "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64", "complex64",
]
BOOL = ["bool"]
UINTS = ["uint8", "uint16", "uint32", "uint64"]
SINTS = ["int8", "int16", "int32", "int64"]
INTS = UINTS + SINTS
FLOATS = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64"]
INEXACT = FLOATS + COMPLEX
# one dtype per (itemsize, kind) for ops that only move data (shape ops,
# creation): keeps the suite fast without losing a code path
DATA_DTYPES = ["bool", "uint8", "int16", "uint32", "int64", "float16",
               "bfloat16", "float32", "float64", "complex64"]


def mx_dtype(name):
    return getattr(mx, "bool_" if name == "bool" else name)


def dtype_name(d):
    """'float32' for mx.float32 (works for any backend's repr)."""
    return str(d).rsplit(".", 1)[-1]


# numpy dtype used to *carry* values of each mx dtype (bfloat16 values are
# carried as float32 numbers that are exactly representable in bfloat16).
NP_CARRIER = {
    "bool": np.bool_, "uint8": np.uint8, "uint16": np.uint16,
    "uint32": np.uint32, "uint64": np.uint64, "int8": np.int8,
    "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "float16": np.float16, "bfloat16": np.float32, "float32": np.float32,
    "float64": np.float64, "complex64": np.complex64,
}

ITEMSIZE = {
    "bool": 1, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8,
    "int8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2,
    "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8,
}


def bf16_round(x):
    """Round float32 values to the nearest bfloat16 (ties to even)."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    lsb = (bits >> np.uint64(16)) & np.uint64(1)
    bits = ((bits + np.uint64(0x7FFF) + lsb) >> np.uint64(16)) << np.uint64(16)
    out = bits.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), out).astype(np.float32)


def round_to(x, name):
    """numpy values rounded/cast to the carrier of mx dtype ``name``."""
    x = np.asarray(x)
    if name == "bfloat16":
        with np.errstate(over="ignore", invalid="ignore"):
            return bf16_round(x.astype(np.float32))
    if name == "bool" and x.dtype != np.bool_:
        return x != 0
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(NP_CARRIER[name])


# --------------------------------------------------------------------------
# conversions
# --------------------------------------------------------------------------

def is_evaluated(a):
    """Whether an array holds data (an unevaluated one has no buffer to size)."""
    try:
        mx.get_array_buffer_size(a)
        return True
    except ValueError:
        return False


def to_numpy(a):
    """Evaluate an mx array into numpy (bfloat16 comes back as float32)."""
    if dtype_name(a.dtype) == "bfloat16":
        a = a.astype(mx.float32)
    out = np.array(a)
    assert out.shape == tuple(a.shape)
    return out


def _c_copy(x):
    """C-contiguous copy that keeps 0-d arrays 0-d (np.ascontiguousarray
    would make them 1-d)."""
    return np.array(x, order="C", copy=True)


def _from_numpy(x, name):
    """mx.array(x, dtype) -- except that on MLX empty inputs are made with
    mx.zeros: MLX 0.32's CPU reduce can spin for minutes on an empty array
    imported from numpy (``a = mx.array(np.zeros(0))`` then
    ``np.array(mx.sum(a))`` in a loop hangs on the second pass).  Ember
    gets the real mx.array path."""
    if IS_MLX and x.size == 0:
        return mx.zeros(x.shape, dtype=mx_dtype(name))
    return mx.array(x, dtype=mx_dtype(name))


def _mx_contig(x, name):
    return _from_numpy(_c_copy(x), name)


def _flip_all(ndim):
    return (slice(None, None, -1),) * ndim


def _layout_contiguous(x, name):
    return _mx_contig(x, name), x


def _layout_transposed(x, name):
    """mx.transpose of a contiguous array: every axis order reversed."""
    if x.ndim < 2:
        return _layout_contiguous(x, name)
    perm = tuple(reversed(range(x.ndim)))
    a = mx.transpose(_mx_contig(np.transpose(x, perm), name), perm)
    return a, x


def _layout_negstride(x, name):
    """Every axis reversed by slicing with step -1 on an mx array."""
    if x.ndim == 0:
        return _layout_contiguous(x, name)
    flip = _flip_all(x.ndim)
    return _mx_contig(x[flip], name)[flip], x


def _layout_sliced(x, name):
    """Every other element of a larger mx array (step-2 slicing)."""
    if x.ndim == 0:
        return _layout_contiguous(x, name)
    big_shape = tuple(2 * s + 1 for s in x.shape)
    big = np.empty(big_shape, dtype=x.dtype)
    big[...] = np.ones((), dtype=x.dtype) * 3  # junk that must not leak
    sl = tuple(slice(1, None, 2) for _ in x.shape)
    big[sl] = x
    return _mx_contig(big, name)[sl], x


def _layout_broadcast(x, name):
    """A stride-0 input: the first slice along axis 0 broadcast by mx."""
    if x.ndim == 0 or x.shape[0] == 0:
        return _layout_contiguous(x, name)
    small = x[:1]
    vals = np.broadcast_to(small, x.shape).copy()
    a = mx.broadcast_to(_mx_contig(small, name), x.shape)
    return a, vals


def _layout_numpy_strided(x, name):
    """mx.array() of a non-contiguous numpy view (column-major buffer,
    every other element of the last axis)."""
    if x.ndim == 0:
        return _layout_contiguous(x, name)
    carrier = NP_CARRIER[name]
    big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), dtype=carrier,
                   order="F")
    big[..., ::2] = x
    view = big[..., ::2]
    return _from_numpy(view, name), x


def _layout_numpy_negstride(x, name):
    """mx.array() of a numpy view with negative strides (Ember accepts any
    numpy strides; MLX raises ValueError)."""
    if x.ndim == 0:
        return _layout_contiguous(x, name)
    flip = _flip_all(x.ndim)
    view = _c_copy(x[flip]).astype(NP_CARRIER[name])[flip]
    return mx.array(view, dtype=mx_dtype(name)), x


LAYOUT_FUNCS = {
    "contiguous": _layout_contiguous,
    "transposed": _layout_transposed,
    "negstride": _layout_negstride,
    "sliced": _layout_sliced,
    "broadcast": _layout_broadcast,
    "np_strided": _layout_numpy_strided,
    "np_negstride": _layout_numpy_negstride,
}
LAYOUTS = list(LAYOUT_FUNCS)
# layouts MLX itself cannot produce (Ember-only expectations)
EMBER_ONLY_LAYOUTS = {"np_negstride"}


def to_mx(x, name, layout="contiguous"):
    """Return ``(mx_array, numpy_values)`` for numpy values ``x``.

    The mx array has dtype ``name`` and the requested memory layout; the
    numpy values are what the array holds (the broadcast layout replaces
    values by a broadcast of the first slice, so always compute references
    from the returned numpy values).
    """
    x = round_to(x, name)
    return LAYOUT_FUNCS[layout](x, name)


# --------------------------------------------------------------------------
# random values
# --------------------------------------------------------------------------

_INT_RANGE = {
    n: (int(np.iinfo(NP_CARRIER[n]).min), int(np.iinfo(NP_CARRIER[n]).max))
    for n in INTS
}


def make_values(shape, name, rng, low=-5.0, high=5.0):
    """Random numpy values exactly representable in mx dtype ``name``.

    Floats are uniform in [low, high); integers uniform in
    [ceil(low), floor(high)] clipped to the dtype's range; complex numbers
    have real and imaginary parts uniform in [low, high).  Always returns an
    ndarray (0-d for shape ()).
    """
    return np.asarray(_make_values(tuple(shape), name, rng, low, high))


def _make_values(shape, name, rng, low, high):
    shape = tuple(shape)
    if name == "bool":
        return rng.random(shape) < 0.5
    if name in INTS:
        lo, hi = _INT_RANGE[name]
        lo = max(lo, int(np.ceil(low)))
        hi = min(hi, int(np.floor(high)))
        if hi < lo:
            hi = lo
        return rng.integers(lo, hi + 1, size=shape, endpoint=False).astype(
            NP_CARRIER[name])
    if name == "complex64":
        re = rng.uniform(low, high, shape)
        im = rng.uniform(low, high, shape)
        return (re + 1j * im).astype(np.complex64)
    return round_to(rng.uniform(low, high, shape), name)


# --------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------

# rtol, atol per dtype: never one loose tolerance for everything.
TOLERANCES = {
    "float64": (1e-12, 1e-12),
    "float32": (1e-6, 1e-6),
    "complex64": (1e-6, 1e-6),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1e-2),
}
# Transcendental functions (exp, sin, erf, ...) are not correctly rounded in
# any vectorised libm; allow a few more ulps in float32 (2e-6 rel ~ 16 ulp)
# and an absolute floor for results near zero (erf near 0, sin near pi).
TRANSCENDENTAL_TOLERANCES = dict(TOLERANCES)
TRANSCENDENTAL_TOLERANCES.update({
    "float32": (2e-6, 1e-6),
    "complex64": (2e-6, 1e-6),
})


def tolerance(name, transcendental=False):
    table = TRANSCENDENTAL_TOLERANCES if transcendental else TOLERANCES
    return table.get(name, (0.0, 0.0))


def assert_close(actual, expected, dtype=None, rtol=None, atol=None,
                 equal_nan=True, msg=""):
    """Assert an mx array equals numpy ``expected``.

    Checks: result is an mx array, shape, dtype (``dtype`` is the expected
    mx dtype name; defaults to no dtype check), and values: exact for
    bool/integers, within (rtol, atol) of the dtype otherwise.  ``expected``
    is first rounded to the expected dtype, so it is the correctly rounded
    answer.
    """
    assert isinstance(actual, mx.array), f"{msg}: not an array: {actual!r}"
    if dtype is not None:
        got = dtype_name(actual.dtype)
        assert got == dtype, f"{msg}: dtype {got}, expected {dtype}"
    expected = np.asarray(expected)
    assert tuple(actual.shape) == expected.shape, (
        f"{msg}: shape {tuple(actual.shape)}, expected {expected.shape}")
    got = to_numpy(actual)
    name = dtype or dtype_name(actual.dtype)
    if name in _EXACT:
        exp = round_to(expected, name) if expected.dtype.kind in "biu" else \
            expected
        if not np.array_equal(got, exp):  # fast path; message below
            np.testing.assert_array_equal(got, exp, err_msg=msg)
        return
    d_rtol, d_atol = TOLERANCES.get(name, (0.0, 0.0))
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    exp = round_to(expected, name) if name in INEXACT else expected
    with np.errstate(invalid="ignore", over="ignore"):
        if np.iscomplexobj(got) or np.iscomplexobj(exp):
            got = got.astype(np.complex128)
            exp = np.asarray(exp).astype(np.complex128)
        else:
            got = got.astype(np.float64)
            exp = np.asarray(exp).astype(np.float64)
        # fast path (np.testing is slow); same criterion, exact infs
        ok = (got == exp) | (np.abs(got - exp) <= atol + rtol * np.abs(exp))
        if equal_nan:
            ok |= np.isnan(got) & np.isnan(exp)
    if not np.all(ok):
        np.testing.assert_allclose(got, exp, rtol=rtol, atol=atol,
                                   equal_nan=equal_nan, err_msg=msg)


_EXACT = frozenset(["bool"] + INTS)


def assert_equal(actual, expected, dtype=None, msg=""):
    """Exact comparison (NaNs equal), with shape and optional dtype."""
    assert isinstance(actual, mx.array), f"{msg}: not an array: {actual!r}"
    if dtype is not None:
        assert dtype_name(actual.dtype) == dtype, (
            f"{msg}: dtype {dtype_name(actual.dtype)}, expected {dtype}")
    expected = np.asarray(expected)
    assert tuple(actual.shape) == expected.shape, (
        f"{msg}: shape {tuple(actual.shape)} != {expected.shape}")
    np.testing.assert_array_equal(to_numpy(actual), expected, err_msg=msg)


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

class raises:
    """``with raises(ValueError, "reshape"):`` -- like pytest.raises, plus
    a message check: the fragment (a regex searched case-insensitively)
    must appear in the message on Ember.  On MLX the message is only checked
    when ``mlx_msg=True`` (MLX words many messages without the op name)."""

    def __init__(self, exc, match=None, mlx_msg=False):
        self.exc = exc
        self.match = match
        self.check_msg = match is not None and (IS_EMBER or mlx_msg)
        self._ctx = pytest.raises(exc)

    def __enter__(self):
        self.info = self._ctx.__enter__()
        return self.info

    def __exit__(self, *exc_info):
        ok = self._ctx.__exit__(*exc_info)
        if ok and self.check_msg:
            import re
            text = str(self.info.value)
            assert re.search(self.match, text, re.IGNORECASE), (
                f"message {text!r} does not match {self.match!r}")
        return ok


# --------------------------------------------------------------------------
# subprocesses
# --------------------------------------------------------------------------

def buffer_address(a):
    """The address of an evaluated array's buffer, through the buffer
    protocol (the export is released at once, so it holds no reference that
    would block donation): the same address means the same buffer."""
    with memoryview(a) as m:
        return np.frombuffer(m, np.uint8).__array_interface__["data"][0]


def run_python(code, env=None, args=(), check=True, timeout=600):
    """Run ``code`` (dedented) with ``python -c`` in a fresh interpreter that
    finds the packages this one does (PYTHONPATH = this sys.path), with the
    variables ``env`` added to the environment and ``args`` in sys.argv[1:].
    Returns the CompletedProcess (text stdout/stderr); with ``check``, a
    non-zero exit fails the calling test with the end of stderr."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    full_env.update(env or {})
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True,
                       text=True, env=full_env, timeout=timeout)
    if check:
        assert p.returncode == 0, f"exit status {p.returncode}:\n{p.stderr[-3000:]}"
    return p


# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------

# Ember's ISA levels on this CPU (none under MLX)
ISA_LEVELS = [] if IS_MLX else list(mx.__config__()["isa_levels"])


@pytest.fixture(params=ISA_LEVELS)
def level(request):
    """Runs the test once per ISA level this CPU has, with the kernels of
    that level in use (restored afterwards)."""
    before = mx.__config__()["isa"]
    mx._set_cpu_isa(request.param)
    yield request.param
    mx._set_cpu_isa(before)


# the levels again with the AMX tile unit off, plus the avx512 level with it
# on where the CPU lets Ember use it (bfloat16 matmul's and the quantized
# products' tile paths)
LEVELS_AMX = [(lv, False) for lv in ISA_LEVELS] + (
    [("avx512", True)] if not IS_MLX and mx.__config__().get("amx") else [])


@pytest.fixture(params=LEVELS_AMX, ids=lambda p: p[0] + ("+amx" if p[1] else ""))
def level_amx(request):
    """Runs the test once per ISA level with the AMX tile unit off, and once
    at avx512 with it on where this CPU has it (settings restored
    afterwards); yields (level, amx)."""
    level, amx = request.param
    before, amx_before = mx.__config__()["isa"], mx._set_amx(amx)
    mx._set_cpu_isa(level)
    yield level, amx
    mx._set_cpu_isa(before)
    mx._set_amx(amx_before)


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from the test id (reproducible per test)."""
    import zlib
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
