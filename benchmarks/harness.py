"""Reusable harness for Ember's side-by-side benchmarks.

A benchmark script builds a list of :class:`Case` objects (one per table row)
and calls :func:`main`. For each framework (ember, numpy, torch, jax, mlx) the
harness starts a fresh worker process (so one framework's threads, allocator
and JIT caches cannot disturb another's timings), converts the NumPy inputs,
runs each case's implementation, checks its result against a float64 NumPy
reference *before* any time counts, and times it: warm-up runs, then the median
of N runs, each run synchronized the way the framework needs (``mx.eval`` for
ember/mlx, ``block_until_ready`` for jax; numpy and CPU torch are eager). The
parent process prints a header (the machine, and each framework's version,
threads and ISA level), then the table: a row per case, a column per
framework with the case's metric, and a final column with Ember's ratio to
the best peer (> 1 means Ember is faster, whatever the metric's direction).

A framework that is not importable is skipped with a note ("n/a" in its
column). A case with no implementation for a framework shows "—" there.

Usage from a benchmark script::

    from harness import Case, main
    cases = [Case(name=..., metric="GB/s", amount=nbytes, make_inputs=...,
                  reference=..., impls={"numpy": ..., "mlx": ...})]
    if __name__ == "__main__":
        main(cases, title="...")

An implementation is ``impl(m, *inputs) -> fn``: ``m`` is the framework's
module (``ember.core``, ``numpy``, ``torch``, ``jax.numpy``, ``mlx.core``),
``inputs`` are the case's inputs converted to that framework, and ``fn()``
computes and returns the result (an array, or a tuple/list of arrays). Any
one-time work (``jax.jit``, ``torch.compile``, ``mx.compile``) belongs in
``impl``; the first call of ``fn`` (compilation) falls in the warm-up. An
implementation for "mlx" is used for "ember" too unless the case gives one
for "ember": Ember's API is MLX's.

Every run's time is kept: the main table shows each case's median, a second
table the spread (lowest / median / highest over all timed runs of all
rounds), so that a peer whose speed jumps between two modes shows as such.

``--isa LEVEL`` (baseline = x86-64-v2, avx2 = x86-64-v3, avx512 = x86-64-v4)
caps every framework at that level through its own control, set in the
environment of the worker processes (see ``isa_environment``); each worker
reports the level its framework actually runs at (``Adapter.isa``), and the
table header prints it per framework.

A script may add options and table columns: ``main(..., add_args=f)`` calls
``f(parser)``; ``main(..., extras=g)`` calls ``g(args, by_fw, machine)`` after
the runs, which returns an :class:`Extras` (more columns, header lines, JSON).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from machine import LoadMeter, cache_dir, cpu_info

FRAMEWORKS = ("ember", "numpy", "torch", "jax", "mlx")
PEERS = ("numpy", "torch", "jax", "mlx")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# metric -> (seconds -> value, higher is better)
METRICS = {
    "GB/s": (lambda amount, t: amount / t / 1e9, True),        # amount = bytes
    "GFLOP/s": (lambda amount, t: amount / t / 1e9, True),     # amount = flops
    "µs/op": (lambda amount, t: t / amount * 1e6, False),      # amount = ops
    "ms": (lambda amount, t: t * 1e3 / (amount or 1), False),  # amount = 1
    "steps/s": (lambda amount, t: amount / t, True),           # amount = steps
}

# Default tolerances by dtype: |out - ref| <= atol * scale + rtol * |ref|,
# scale = max(1e-30, max |ref|): atol is relative to the result's magnitude,
# so a softmax (values ~1e-4) is held as tightly as a sum (values ~1e3).
TOLERANCES = {
    "float64": (1e-10, 1e-12),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (3e-2, 1e-2),
}


# --------------------------------------------------------------------------
# Cases


@dataclasses.dataclass
class Case:
    """One table row: a workload in one form (eager, or compiled)."""

    name: str
    metric: str                       # a key of METRICS
    amount: float                     # bytes / flops / ops / steps per call
    make_inputs: Callable[[np.random.Generator], Sequence[np.ndarray]]
    reference: Callable[..., Any]     # NumPy (float64) reference from the inputs
    impls: Dict[str, Callable[..., Callable[[], Any]]]
    rtol: Optional[float] = None      # override the dtype's tolerance
    atol: Optional[float] = None
    out_dtype: Optional[str] = None   # e.g. "float32": every output must have it
    note: str = ""
    # For a stateful fn (a training step: each call starts where the last
    # one ended) only the first result can match `reference`; the last timed
    # result is then checked by check_last(first, last), both lists of the
    # outputs as NumPy arrays, which returns None or what is wrong.
    check_last: Optional[Callable[[List[np.ndarray], List[np.ndarray]], Optional[str]]] = None

    def impl_for(self, fw: str):
        if fw in self.impls:
            return self.impls[fw]
        if fw == "ember":
            return self.impls.get("mlx")
        return None


# --------------------------------------------------------------------------
# ISA levels: what the CPU has, and each framework's own cap

ISA_LEVELS = ("baseline", "avx2", "avx512")    # x86-64-v2, -v3, -v4
PSABI = {"baseline": "x86-64-v2", "avx2": "x86-64-v3", "avx512": "x86-64-v4"}
# /proc/cpuinfo flags each level needs (the psABI's lists)
LEVEL_FLAGS = (
    {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"},
    {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"},
    {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
)
# the flags the header lists
SHOWN_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl",
               "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16")

# Each framework's control, and its value per level. OpenBLAS's core type is
# a forced choice, not a cap: it is only set below the CPU's own level (a
# forced SkylakeX on a CPU without AVX-512 would crash).
ISA_CAPS = {
    "EMBER_ISA": ("baseline", "avx2", "avx512"),
    "OPENBLAS_CORETYPE": ("Nehalem", "Haswell", "SkylakeX"),
    "ATEN_CPU_CAPABILITY": ("default", "avx2", "avx512"),
    "ONEDNN_MAX_CPU_ISA": ("SSE41", "AVX2", "AVX512_CORE"),
    "MKL_ENABLE_INSTRUCTIONS": ("SSE4_2", "AVX2", "AVX512"),
    "XLA_FLAGS": ("SSE4_2", "AVX2", "AVX512"),      # --xla_cpu_max_isa=...
}


def cpu_level(flags) -> int:
    """Index into ISA_LEVELS of the best level the flags allow (-1: none)."""
    level = -1
    for need in LEVEL_FLAGS:
        if not need <= set(flags):
            break
        level += 1
    return level


def _numpy_umath():
    try:
        from numpy._core import _multiarray_umath as u      # NumPy 2
    except ImportError:
        from numpy.core import _multiarray_umath as u       # NumPy 1
    return u


def numpy_level(name: str) -> int:
    """The level index a NumPy SIMD target needs (3: above x86-64-v4)."""
    if name in ("X86_V4", "AVX512F", "AVX512CD", "AVX512_SKX", "AVX512BW",
                "AVX512DQ", "AVX512VL"):
        return 2
    if name.startswith("AVX512"):
        return 3                       # _CLX, _CNL, _ICL, _SPR, VNNI, FP16, ...
    if name in ("X86_V3", "AVX", "AVX2", "FMA3", "F16C", "FMA4", "XOP"):
        return 1
    return 0


def isa_environment(level: str, cpu: int) -> Dict[str, str]:
    """The environment that caps every framework at `level` (on a CPU whose
    own level index is `cpu`): Ember, OpenBLAS (NumPy's and Ember's), NumPy's
    SIMD dispatch, PyTorch (ATen, oneDNN, MKL) and XLA. MLX has no control."""
    i = min(ISA_LEVELS.index(level), max(cpu, 0))
    env = {k: v[i] for k, v in ISA_CAPS.items()}
    if i >= cpu:
        del env["OPENBLAS_CORETYPE"]
    env["XLA_FLAGS"] = " ".join(
        [f for f in os.environ.get("XLA_FLAGS", "").split()
         if not f.startswith("--xla_cpu_max_isa")] + [f"--xla_cpu_max_isa={env['XLA_FLAGS']}"])
    # Only the targets this NumPy dispatches to: NumPy 1.x raises on others,
    # NumPy 2.x ignores them silently (so that AVX512F alone does not turn
    # off its X86_V4 target).
    off = [t for t in _numpy_umath().__cpu_dispatch__ if numpy_level(t) > i]
    if off:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(off)
    return env


def loaded_libraries() -> List[str]:
    """The files mapped into this process (/proc/self/maps), in load order."""
    try:
        with open("/proc/self/maps") as f:
            return list(dict.fromkeys(line.split()[-1] for line in f if "/" in line))
    except OSError:
        return []


def openblas_cores() -> Dict[str, str]:
    """{library file: core type} of every OpenBLAS loaded in this process."""
    import ctypes
    cores = {}
    for p in loaded_libraries():
        if "openblas" not in os.path.basename(p).lower():
            continue
        lib = ctypes.CDLL(p)
        for sym in ("openblas_get_corename", "scipy_openblas_get_corename",
                    "openblas_get_corename64_", "scipy_openblas_get_corename64_"):
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                cores[os.path.basename(p)] = fn().decode()
                break
    return cores


def _openblas_text(cores: Dict[str, str]) -> str:
    return ", ".join(f"OpenBLAS {c}" for c in sorted(set(cores.values())))


def capture_stdout(fn) -> str:
    """What `fn()` writes to file descriptor 1 (C libraries' printf too)."""
    import ctypes
    sys.stdout.flush()
    libc = ctypes.CDLL(None)
    saved = os.dup(1)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 1)
        try:
            fn()
            libc.fflush(None)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        return f.read().decode(errors="replace")


def vector_isa_of_object(path: str) -> str:
    """The widest vector ISA the machine code in an object file or shared
    library uses (from objdump's disassembly)."""
    objdump = shutil.which("objdump")
    if not objdump:
        return "unverified (no objdump)"
    evex = re.compile(r"[xy]mm(1[6-9]|2\d|3[01])\b|%k[1-7]|\{1to\d+\}")
    seen = set()
    with subprocess.Popen([objdump, "-d", "--no-show-raw-insn", path], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        for line in proc.stdout:
            if "mm" not in line:
                continue
            if "zmm" in line:
                seen.add("zmm")
                proc.kill()
                break
            if evex.search(line):
                seen.add("evex")
            seen.update(k for k in ("ymm", "xmm", "vfmadd") if k in line)
    if "zmm" in seen:
        return "AVX-512 (zmm)"
    if "evex" in seen:
        return "AVX-512VL (EVEX on ymm)"
    if "ymm" in seen:
        return "AVX2 (ymm)" if "vfmadd" in seen else "AVX (ymm)"
    return "SSE (xmm)" if "xmm" in seen else "scalar"


def cached_vector_isa(path: str) -> str:
    """vector_isa_of_object for a large library, cached by path, size and
    modification time (a disassembly takes seconds)."""
    st = os.stat(path)
    key = f"{path}|{st.st_size}|{int(st.st_mtime)}"
    cache = os.path.join(cache_dir(), "vector_isa.json")
    try:
        with open(cache) as f:
            known = json.load(f)
    except (OSError, ValueError):
        known = {}
    if key not in known:
        known[key] = vector_isa_of_object(path)
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        with open(cache, "w") as f:
            json.dump(known, f, indent=1)
    return known[key]


def loaded_library(prefix: str) -> Optional[str]:
    """The first library loaded in this process whose file name starts with
    `prefix`."""
    return next((p for p in loaded_libraries() if os.path.basename(p).startswith(prefix)), None)


# --------------------------------------------------------------------------
# Framework adapters


class Adapter:
    name = ""
    isa_env: Sequence[str] = ()    # the environment variables that cap its ISA

    def __init__(self):
        self.m = None          # the module handed to implementations
        self.version = ""
        self.info: Dict[str, Any] = {}

    def load(self):            # import; raise on failure
        raise NotImplementedError

    def isa(self) -> str:      # the vector ISA it runs at, as it reports it
        return ""

    def convert(self, a: np.ndarray):
        raise NotImplementedError

    def sync(self, out):       # wait until `out` is computed
        pass

    def to_numpy(self, out) -> np.ndarray:
        return np.asarray(out)


class NumpyAdapter(Adapter):
    name = "numpy"
    isa_env = ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE")

    def load(self):
        self.m = np
        self.version = np.__version__
        try:
            from threadpoolctl import threadpool_info
            self.info["blas"] = [
                f"{d.get('internal_api')} {d.get('version')} "
                f"{d.get('architecture')} threads={d.get('num_threads')}"
                for d in threadpool_info() if d.get("user_api") == "blas"]
        except Exception:
            pass

    def isa(self):
        u = _numpy_umath()
        on = [t for t in u.__cpu_dispatch__ if u.__cpu_features__.get(t)]
        off = [t for t in u.__cpu_dispatch__ if t not in on]
        level = max([0] + [numpy_level(t) for t in list(u.__cpu_baseline__) + on])
        text = f"{ISA_LEVELS[min(level, 2)]} (SIMD {' + '.join(list(u.__cpu_baseline__) + on)}"
        text += f"; off: {' '.join(off)})" if off else ")"
        blas = _openblas_text(openblas_cores())
        return text + (f", {blas}" if blas else "")

    def convert(self, a):
        return a


class TorchAdapter(Adapter):
    name = "torch"
    isa_env = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")

    def load(self):
        import torch
        self.m = torch
        self.version = torch.__version__
        # Default threads, as shipped; recorded, not changed.
        self.info["threads"] = torch.get_num_threads()
        self.info["interop_threads"] = torch.get_num_interop_threads()

    def isa(self):
        """ATen's kernel level, and what oneDNN (convolutions) and MKL
        (matmul) print in verbose mode for one small call each."""
        torch = self.m
        parts = [f"ATen {torch.backends.cpu.get_cpu_capability()}"]

        def probe():
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON), \
                    torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON):
                x = torch.ones(4, 32, 32, 32).contiguous(memory_format=torch.channels_last)
                torch.nn.functional.conv2d(x, torch.ones(64, 32, 3, 3))
                torch.ones(64, 64) @ torch.ones(64, 64)
        text = capture_stdout(probe)
        m = re.search(r"onednn_verbose.*,isa:(.*)", text)
        parts.append(f"oneDNN {m.group(1).strip() if m else '?'}")
        m = re.search(r"architecture.*?\(Intel\(R\) ([^()]+)\)", text)
        parts.append(f"MKL {m.group(1).strip() if m else '?'}")
        return ", ".join(parts)

    def convert(self, a):
        return self.m.from_numpy(np.require(a, requirements="C"))

    def to_numpy(self, out):
        return out.detach().cpu().numpy()


class JaxAdapter(Adapter):
    name = "jax"
    isa_env = ("XLA_FLAGS",)

    def load(self):
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        self.jax = jax
        self.m = jnp
        self.version = jax.__version__
        self.info["devices"] = [str(d) for d in jax.devices()]

    def isa(self):
        """The vectors in the machine code XLA generates for a small
        elementwise function (compiled with a dump of its object file).
        Library kernels XLA calls (Eigen convolutions, XNNPACK dots)
        dispatch on their own and are not covered."""
        jnp = self.m
        with tempfile.TemporaryDirectory() as d:
            f = self.jax.jit(lambda x: jnp.tanh(x) * 2 + x)
            f.lower(jnp.ones(4096, jnp.float32)).compile(compiler_options={"xla_dump_to": d})
            objs = [os.path.join(d, p) for p in sorted(os.listdir(d)) if p.endswith(".o")]
            opts = "".join(open(os.path.join(d, p)).read() for p in os.listdir(d)
                           if p.endswith(".debug_options"))
            m = re.search(r'xla_cpu_max_isa: "([^"]*)"', opts)
            code = vector_isa_of_object(objs[0]) if objs else "?"
        # Measured: with --xla_cpu_max_isa=SSE4_2, conv2d 3x3 still runs
        # above the 128-bit peak; the flag reaches XLA's own code only.
        return f"XLA codegen {code}" + (
            f", max_isa {m.group(1)} (XLA's library kernels, convolutions and dots, "
            "dispatch on their own: not capped)" if m else "")

    def convert(self, a):
        x = self.jax.device_put(a)
        return self.jax.block_until_ready(x)

    def sync(self, out):
        self.jax.block_until_ready(out)


class MlxLikeAdapter(Adapter):
    module = ""

    def load(self):
        import importlib
        self.m = importlib.import_module(self.module)
        top = sys.modules.get(self.module.split(".")[0])
        self.version = getattr(self.m, "__version__", "") or getattr(top, "__version__", "")
        try:
            self.info["device"] = str(self.m.default_device())
        except Exception:
            pass

    def convert(self, a):
        x = self.m.array(a)
        self.m.eval(x)
        return x

    def sync(self, out):
        self.m.eval(out)

    def to_numpy(self, out):
        return np.array(out, copy=True)


class MlxAdapter(MlxLikeAdapter):
    name = "mlx"
    module = "mlx.core"

    def isa(self):
        """MLX has no ISA control: what its library's machine code uses."""
        lib = loaded_library("libmlx")
        code = cached_vector_isa(lib) if lib else "?"
        return f"no ISA control; libmlx code {code}"


class EmberAdapter(MlxLikeAdapter):
    name = "ember"
    module = "ember.core"
    isa_env = ("EMBER_ISA", "OPENBLAS_CORETYPE")

    def load(self):
        self._blas_before = set(openblas_cores())
        try:
            super().load()
        except ImportError as first:
            # An in-place build may not be installed: try the source tree.
            path = os.path.join(REPO_ROOT, "python")
            if os.path.isdir(path) and path not in sys.path:
                sys.path.insert(0, path)
                for k in [k for k in sys.modules if k.split(".")[0] == "ember"]:
                    del sys.modules[k]
                try:
                    super().load()
                    return
                except Exception:
                    pass
            raise first

    def isa(self):
        """Ember's level from ``__config__()`` (also kept whole in the
        result as "config"), and the core of the OpenBLAS it loaded."""
        cfg = self.m.__config__()
        self.config = cfg
        cores = {k: v for k, v in openblas_cores().items() if k not in self._blas_before}
        blas = _openblas_text(cores or openblas_cores())
        return (f"{cfg['isa']} of {cfg['isa_supported']} supported"
                + ("" if cfg.get("isa_dispatch", True) else ", no dispatch")
                + (", AMX tiles" if cfg.get("amx") else "")
                + (f", {blas}" if blas else ""))


ADAPTERS = {"ember": EmberAdapter, "numpy": NumpyAdapter, "torch": TorchAdapter,
            "jax": JaxAdapter, "mlx": MlxAdapter}


# --------------------------------------------------------------------------
# Checking and timing


def _leaves(out) -> List[Any]:
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r.extend(_leaves(o))
        return r
    if isinstance(out, dict):
        return _leaves([out[k] for k in sorted(out)])
    return [out]


def check(adapter: Adapter, case: Case, out, ref) -> Optional[str]:
    """None when `out` matches the NumPy reference, else what is wrong."""
    got = _leaves(out)
    want = _leaves(ref)
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        g = adapter.to_numpy(g)
        w = np.asarray(w)
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, expected {w.shape}"
        kind = g.dtype.name
        if case.out_dtype and kind != case.out_dtype:
            return f"output {i}: dtype {kind}, expected {case.out_dtype}"
        if g.dtype.kind in "iub":
            if not np.array_equal(g, w):
                return f"output {i}: {np.count_nonzero(g != w)} elements differ"
            continue
        rtol, atol = TOLERANCES.get(kind, TOLERANCES["float32"])
        rtol = case.rtol if case.rtol is not None else rtol
        atol = case.atol if case.atol is not None else atol
        g64 = g.astype(np.float64)
        w64 = w.astype(np.float64)
        finite = np.isfinite(w64)
        if not np.array_equal(np.isfinite(g64), finite) or \
                not np.array_equal(np.isnan(g64), np.isnan(w64)):
            return f"output {i}: non-finite values differ from the reference"
        if not finite.any():
            continue
        scale = max(1e-30, float(np.max(np.abs(w64[finite]))))
        err = np.abs(g64[finite] - w64[finite])
        bound = atol * scale + rtol * np.abs(w64[finite])
        bad = err > bound
        if bad.any():
            j = int(np.argmax(err - bound))
            return (f"output {i} ({kind}): {int(bad.sum())}/{err.size} elements "
                    f"out of tolerance (rtol={rtol:g}, atol={atol:g}x{scale:.3g}); "
                    f"worst: got {float(g64[finite][j])!r}, expected {float(w64[finite][j])!r}")
    return None


def time_case(adapter: Adapter, case: Case, inputs, ref, warmup: int,
              repeat: int, max_seconds: float, min_seconds: float = 0.0) -> Dict[str, Any]:
    impl = case.impl_for(adapter.name)
    fn = impl(adapter.m, *inputs)
    sync = adapter.sync

    # Warm-up (and compilation); the first result is checked.
    out = fn()
    sync(out)
    err = check(adapter, case, out, ref)
    if err:
        return {"status": "wrong", "error": "first run: " + err}
    first = [np.array(adapter.to_numpy(o), copy=True) for o in _leaves(out)] \
        if case.check_last else None
    out = None
    for _ in range(max(0, warmup - 1)):
        out = fn()
        sync(out)
        out = None

    times = []
    gc.collect()
    gc_was = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        while True:
            out = None           # drop the previous result, as `y = f(x)` would
            t0 = time.perf_counter_ns()
            out = fn()
            sync(out)
            times.append((time.perf_counter_ns() - t0) * 1e-9)
            elapsed = time.perf_counter() - start
            if len(times) >= repeat and elapsed >= min_seconds:
                break
            if len(times) >= 3 and elapsed > max_seconds:
                break
    finally:
        if gc_was:
            gc.enable()
    # The last result is checked too: buffer reuse or donation bugs show
    # up on later runs, not the first.
    if case.check_last:
        err = case.check_last(first, [adapter.to_numpy(o) for o in _leaves(out)])
    else:
        err = check(adapter, case, out, ref)
    if err:
        return {"status": "wrong", "error": "last timed run: " + err}
    return ok_result(case, times)


def ok_result(case: Case, times: List[float]) -> Dict[str, Any]:
    """A timed case's result: every run's time, and the median's value in
    the case's metric."""
    med = statistics.median(times)
    to_value, _ = METRICS[case.metric]
    return {"status": "ok", "median_s": med, "min_s": min(times), "max_s": max(times),
            "runs": len(times), "times": times, "value": to_value(case.amount, med)}


def run_framework(fw: str, cases: List[Case], args) -> Dict[str, Any]:
    """Run every selected case for one framework in this process."""
    adapter = ADAPTERS[fw]()
    result: Dict[str, Any] = {"framework": fw, "results": {}}
    try:
        adapter.load()
    except Exception as e:  # noqa: BLE001 - any import failure means "skip"
        result.update(available=False,
                      note=f"not importable: {type(e).__name__}: {e}".strip())
        log(f"[{fw}] skipped: {result['note']}")
        return result
    try:
        adapter.info["isa"] = adapter.isa()
    except Exception as e:  # noqa: BLE001 - a failed probe is reported, not fatal
        adapter.info["isa"] = f"unknown ({type(e).__name__}: {e})"[:200]
    cap = " ".join(f"{k}={os.environ[k]!r}" if " " in os.environ[k] else f"{k}={os.environ[k]}"
                   for k in adapter.isa_env if k in os.environ)
    if cap:
        adapter.info["cap"] = cap
    result.update(available=True, version=adapter.version, info=adapter.info)
    if getattr(adapter, "config", None):
        result["config"] = adapter.config
    log(f"[{fw}] {adapter.version} {adapter.info if adapter.info else ''}".rstrip())

    for case in cases:
        if case.impl_for(fw) is None:
            continue
        rng = np.random.default_rng(0)
        np_inputs = [np.asarray(a) for a in case.make_inputs(rng)]
        with np.errstate(all="ignore"):
            ref = case.reference(*[a.copy() for a in np_inputs])
        try:
            inputs = [adapter.convert(a) for a in np_inputs]
            r = time_case(adapter, case, inputs, ref, args.warmup, args.repeat,
                          args.max_seconds, args.min_seconds)
        except Exception as e:  # noqa: BLE001
            tb = traceback.format_exc(limit=3).strip().splitlines()
            r = {"status": "error", "error": f"{type(e).__name__}: {e}"[:500],
                 "traceback": tb[-6:]}
        result["results"][case.name] = r
        if r["status"] == "ok":
            log(f"[{fw}] {case.name}: {fmt(r['value'])} {case.metric} "
                f"(median of {r['runs']}, {r['median_s'] * 1e3:.3f} ms)")
        else:
            log(f"[{fw}] {case.name}: {r['status'].upper()}: {r['error']}")
        del inputs, ref, np_inputs
        gc.collect()
    return result


# --------------------------------------------------------------------------
# Output


def log(msg: str):
    print(msg, file=sys.stderr, flush=True)


def fmt(v: float) -> str:
    if v is None or not math.isfinite(v):
        return "?"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def machine_info() -> Dict[str, Any]:
    info = {"python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count()}
    try:
        model, flags = cpu_info()
        info["cpu"] = model
        info["cpu_flags"] = " ".join(f for f in SHOWN_FLAGS if f in flags)
        info["cpu_level"] = cpu_level(flags)
    except Exception:
        info["cpu"] = platform.processor()
    try:
        info["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    # ISA controls are shown on each framework's line, not here.
    env = {k: os.environ[k] for k in ("OPENBLAS_L2_SIZE", "OMP_NUM_THREADS",
                                      "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
           if k in os.environ}
    if env:
        info["env"] = env
    return info


def cell(res: Optional[Dict[str, Any]], avail: bool, has_impl: bool, text=None) -> str:
    """A table cell: `text(res)` (default: the median's value) when the case
    ran fine, else why not."""
    if not avail:
        return "n/a"
    if not has_impl:
        return "—"
    if res is None:
        return "FAIL"
    if res["status"] == "ok":
        return text(res) if text else fmt(res["value"])
    return {"wrong": "WRONG", "error": "ERROR"}.get(res["status"], "FAIL")


def spread_values(case: Case, res: Dict[str, Any]) -> List[float]:
    """[lowest, median, highest] of the metric over all timed runs (of every
    round) of an ok result."""
    sp = res.get("spread") or {"min_s": res["min_s"], "median_s": res["median_s"],
                               "max_s": res["max_s"]}
    to_value, _ = METRICS[case.metric]
    return sorted(to_value(case.amount, sp[k]) for k in ("min_s", "median_s", "max_s"))


def ratio(case: Case, by_fw: Dict[str, Dict[str, Any]]):
    """(best peer name, Ember's speed relative to it) — >1: Ember is faster."""
    _, higher = METRICS[case.metric]
    peers = [(fw, by_fw[fw]["results"][case.name]["value"]) for fw in PEERS
             if case.name in by_fw.get(fw, {}).get("results", {})
             and by_fw[fw]["results"][case.name]["status"] == "ok"]
    if not peers:
        return None, None
    best = max(peers, key=lambda p: p[1]) if higher else min(peers, key=lambda p: p[1])
    e = by_fw.get("ember", {}).get("results", {}).get(case.name)
    if not e or e["status"] != "ok":
        return best[0], None
    r = e["value"] / best[1] if higher else best[1] / e["value"]
    return best[0], r


@dataclasses.dataclass
class Extras:
    """What a script adds to its table (see ``main(..., extras=...)``)."""

    columns: List[Any] = dataclasses.field(default_factory=list)  # (header, case -> text)
    lines: List[str] = dataclasses.field(default_factory=list)    # under the header
    json: Dict[str, Any] = dataclasses.field(default_factory=dict)


def markdown_table(header: Sequence[str], rows: List[List[str]], left: int = 2) -> str:
    """A Markdown table, its first `left` columns left-aligned, the rest right."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    right = [i >= left for i in range(len(header))]

    def line(vals):
        return "| " + " | ".join(str(v).rjust(w) if r else str(v).ljust(w)
                                 for v, w, r in zip(vals, widths, right)) + " |"
    sep = "|" + "|".join(("-" * (w + 1) + ":") if r else ("-" * (w + 2))
                         for w, r in zip(widths, right)) + "|"
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def _level_name(i: Optional[int]) -> str:
    if i is None:
        return "?"
    return f"{ISA_LEVELS[i]} = {PSABI[ISA_LEVELS[i]]}" if i >= 0 else "below x86-64-v2"


def print_header(by_fw: Dict[str, Dict[str, Any]], frameworks: Sequence[str],
                 machine: Dict[str, Any], out):
    m = machine
    print(f"machine: {m.get('cpu')} ({m.get('cpus')} CPUs; flags: {m.get('cpu_flags', '?')}; "
          f"best level {_level_name(m.get('cpu_level'))}); Python {m.get('python')}; "
          f"load avg {m.get('loadavg')}", file=out)
    cfg = by_fw.get("ember", {}).get("config")
    if cfg:
        print(f"Ember runs at {cfg.get('isa')} ({PSABI.get(cfg.get('isa'), '?')}); the best this "
              f"CPU supports is {cfg.get('isa_supported')} (Ember's levels: "
              f"{', '.join(cfg.get('isa_levels', []))}; {cfg.get('num_threads')} threads)", file=out)
    if m.get("isa_cap"):
        print(f"--isa {m['isa_cap']}: every framework capped at {PSABI[m['isa_cap']]} through "
              "its own control (cap=, and the level it reports, isa=, on its line); "
              "MLX has no control", file=out)
    oc = m.get("other_cores")
    if oc is not None:
        warn = (" — the machine was shared: numbers are unreliable, rerun when idle"
                if oc > 0.25 else "")
        print(f"other processes kept {oc:.2f} of {m.get('cpus')} cores busy "
              f"during the run{warn}", file=out)
    if m.get("env"):
        print(f"env: {m['env']}", file=out)
    for fw in frameworks:
        r = by_fw.get(fw, {})
        if r.get("available"):
            extra = "; ".join(f"{k}={v}" for k, v in (r.get("info") or {}).items())
            print(f"- {fw} {r.get('version', '')}" + (f" ({extra})" if extra else ""),
                  file=out)
        else:
            print(f"- {fw}: n/a — {r.get('note', 'not run')}", file=out)


def print_table(title: str, cases: List[Case], by_fw: Dict[str, Dict[str, Any]],
                frameworks: Sequence[str], machine: Dict[str, Any], rounds: int = 1,
                extras: Optional[Extras] = None):
    out = sys.stdout
    extras = extras or Extras()
    print(f"\n## {title}\n", file=out)
    print_header(by_fw, frameworks, machine, out)
    for line in extras.lines:
        print(line, file=out)
    print(file=out)

    def row(case, text=None):
        r = [case.name, case.metric]
        for fw in frameworks:
            f = by_fw.get(fw, {})
            r.append(cell(f.get("results", {}).get(case.name), bool(f.get("available")),
                          case.impl_for(fw) is not None, text and (lambda res: text(case, res))))
        return r

    rows = []
    for case in cases:
        best, rr = ratio(case, by_fw)
        rows.append(row(case) + [best or "—", "n/a" if rr is None else f"{rr:.2f}×"]
                    + [col(case) for _, col in extras.columns])
    print(markdown_table(["workload", "metric", *frameworks, "best peer", "ember/best",
                          *[h for h, _ in extras.columns]], rows), file=out)

    problems = []
    for case in cases:
        for fw in frameworks:
            r = by_fw.get(fw, {}).get("results", {}).get(case.name)
            if r and r["status"] != "ok":
                problems.append(f"- {fw} / {case.name}: {r['status']}: {r['error']}")
    if problems:
        print("\nnot counted:", file=out)
        print("\n".join(problems), file=out)
    best_of = f" (each framework's fastest of {rounds} rounds, order alternating)" if rounds > 1 else ""
    print(f"\nmedian of timed runs after warm-up{best_of}; every result checked against "
          "NumPy first. ember/best > 1: Ember is faster than the best peer. "
          "n/a: not importable; —: no such variant.", file=out)

    # The spread: a framework whose runs fall into two modes shows it here.
    rows = []
    for case in cases:
        widest = []
        for fw in frameworks:
            r = by_fw.get(fw, {}).get("results", {}).get(case.name)
            if r and r["status"] == "ok":
                lo, _, hi = spread_values(case, r)
                widest.append((hi / lo if lo > 0 else math.inf, fw))
        w = max(widest) if widest else None
        rows.append(row(case, lambda c, r: " / ".join(fmt(v) for v in spread_values(c, r)))
                    + [f"{w[1]} {w[0]:.2f}×" if w else "—"])
    print("\n### spread over timed runs (lowest / median / highest)\n", file=out)
    print(markdown_table(["workload", "metric", *frameworks, "widest"], rows), file=out)
    over = f"all timed runs of the {rounds} rounds" if rounds > 1 else "all timed runs"
    print(f"\nlowest / median / highest of the metric over {over}; widest: the framework "
          "whose highest / lowest ratio is the largest. A wide spread is the VM's drift "
          "or a framework switching between two speeds: rerun with --rounds 3 to tell.",
          file=out)
    out.flush()


# --------------------------------------------------------------------------
# Entry point


def parse_args(argv=None, add_args=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="fewer runs (1 warm-up, 3 timed): a smoke test, not a measurement")
    p.add_argument("--only", metavar="PATTERN",
                   help="run only workloads whose name matches this regex (case-insensitive)")
    p.add_argument("--json", metavar="FILE", help="save machine info and all results")
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS),
                   help="comma-separated subset of " + ",".join(FRAMEWORKS))
    p.add_argument("--repeat", type=int, help="timed runs per case (default 10, quick 3)")
    p.add_argument("--warmup", type=int, help="warm-up runs per case (default 2, quick 1)")
    p.add_argument("--max-seconds", type=float,
                   help="stop timing a case after this long once 3 runs are done "
                        "(default 5, quick 1)")
    p.add_argument("--min-seconds", type=float,
                   help="keep timing a case until this long has passed, so short cases "
                        "take their median over more of the VM's drift (default 1, quick 0)")
    p.add_argument("--rounds", type=int, default=1,
                   help="run every framework this many times, alternating the order, "
                        "and keep each case's fastest round; the spread table covers "
                        "every round (default 1)")
    p.add_argument("--isa", choices=ISA_LEVELS,
                   help="cap every framework at this x86-64 level (baseline = v2, avx2 = v3, "
                        "avx512 = v4) through its own control (EMBER_ISA, OPENBLAS_CORETYPE, "
                        "NPY_DISABLE_CPU_FEATURES, ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, "
                        "MKL_ENABLE_INSTRUCTIONS, XLA_FLAGS=--xla_cpu_max_isa); MLX has none")
    p.add_argument("--in-process", action="store_true",
                   help="run all frameworks in this process (debugging; timings "
                        "may disturb one another; NumPy's caps do not apply)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    if add_args:
        add_args(p)
    a = p.parse_args(argv)
    a.repeat = a.repeat or (3 if a.quick else 10)
    a.warmup = a.warmup if a.warmup is not None else (1 if a.quick else 2)
    a.max_seconds = a.max_seconds or (1.0 if a.quick else 5.0)
    if a.min_seconds is None:
        a.min_seconds = 0.0 if a.quick else 1.0
    a.frameworks = [f.strip() for f in a.frameworks.split(",") if f.strip()]
    bad = [f for f in a.frameworks if f not in ADAPTERS]
    if bad:
        p.error(f"unknown framework(s) {bad}; choose from {list(FRAMEWORKS)}")
    return a


def select(cases: List[Case], pattern: Optional[str]) -> List[Case]:
    if not pattern:
        return list(cases)
    rx = re.compile(pattern, re.I)
    return [c for c in cases if rx.search(c.name)]


def _run_worker(fw: str, args) -> Dict[str, Any]:
    """One framework over the selected cases, in its own process (which
    inherits this one's environment, --isa's caps included)."""
    if args.in_process:
        return run_framework(fw, args.cases, args)
    # NumPy's OpenBLAS threads busy-wait ~0.1 s after NumPy's import and
    # after each of its BLAS calls (the reference checks), on one of the
    # machine's few cores: in the workers that use NumPy only for inputs and
    # references they sleep after ~1.3 ms instead (NumPy's own rows keep
    # its default)
    env = dict(os.environ)
    if fw != "numpy":
        env.setdefault("OPENBLAS_THREAD_TIMEOUT", "22")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.json")
        cmd = [sys.executable, os.path.abspath(sys.argv[0]),
               *_passthrough(args), "--worker", fw, "--worker-out", path]
        proc = subprocess.run(cmd, stdout=sys.stderr, env=env)
        if proc.returncode == 0 and os.path.exists(path):
            with open(path) as f:
                return json.load(f)
    log(f"[{fw}] worker failed (status {proc.returncode})")
    return {"framework": fw, "available": False,
            "note": f"worker exited with status {proc.returncode}"}


def combine_rounds(rounds: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One framework's rounds as one result: per case, the ok round with the
    fastest median (the main table), plus "spread" over the timed runs of
    every ok round (the spread table)."""
    out = dict(next((r for r in rounds if r.get("available")), rounds[-1]), results={})
    for name in dict.fromkeys(n for r in rounds for n in r.get("results", {})):
        rs = [r["results"][name] for r in rounds if name in r.get("results", {})]
        ok = [r for r in rs if r["status"] == "ok"]
        if not ok:
            out["results"][name] = rs[-1]
            continue
        best = dict(min(ok, key=lambda r: r["median_s"]))
        times = [t for r in ok for t in r["times"]]
        best["spread"] = {"min_s": min(times), "median_s": statistics.median(times),
                          "max_s": max(times), "runs": len(times), "rounds": len(ok),
                          "round_medians_s": [r["median_s"] for r in ok]}
        out["results"][name] = best
    return out


def main(cases: List[Case], title: str = "Ember benchmarks", argv=None,
         add_args: Optional[Callable[[argparse.ArgumentParser], None]] = None,
         extras: Optional[Callable[[Any, Dict[str, Any], Dict[str, Any]], Extras]] = None) -> int:
    """Run `cases` for every framework and print the tables. `add_args(parser)`
    adds a script's own options; `extras(args, by_fw, machine)`, called after
    the runs, returns an :class:`Extras` for the table."""
    args = parse_args(argv, add_args)
    cases = select(cases, args.only)
    args.cases = cases
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise ValueError("case names must be unique")

    if args.worker:                      # child: one framework, results to a file
        res = run_framework(args.worker, cases, args)
        with open(args.worker_out, "w") as f:
            json.dump(res, f)
        return 0

    if not cases:
        log(f"no workload matches --only {args.only!r}")
        return 1
    machine = machine_info()
    if args.isa:
        env = isa_environment(args.isa, machine.get("cpu_level", 2))
        os.environ.update(env)           # the workers inherit it
        machine.update(isa_cap=args.isa, isa_env=env)
    meter = LoadMeter()
    rounds: Dict[str, List[Dict[str, Any]]] = {fw: [] for fw in args.frameworks}
    # Rounds alternate the framework order (forward, then reversed): this
    # VM's speed drifts by 10-30% over tens of seconds, and one pass in a
    # fixed order hands that drift to whichever framework ran during the
    # slow stretch.
    for rnd in range(args.rounds):
        for fw in (args.frameworks if rnd % 2 == 0 else args.frameworks[::-1]):
            rounds[fw].append(_run_worker(fw, args))
    by_fw = {fw: combine_rounds(rs) for fw, rs in rounds.items()}

    oc = meter.other_cores()
    if oc is not None:
        machine["other_cores"] = round(oc, 3)
    ext = extras(args, by_fw, machine) if extras else Extras()
    print_table(title, cases, by_fw, args.frameworks, machine, args.rounds, ext)
    if args.json:
        write_json(args, title, cases, by_fw, machine, ext)
    return 0


def write_json(args, title: str, cases: List[Case], by_fw: Dict[str, Dict[str, Any]],
               machine: Dict[str, Any], ext: Extras):
    """Machine, settings, each framework's line and every result (its runs'
    times left out; min/median/max kept, in seconds and in the metric)."""
    rows = []
    for case in cases:
        best, rr = ratio(case, by_fw)
        results = {}
        for fw in args.frameworks:
            r = by_fw.get(fw, {}).get("results", {}).get(case.name)
            if r is not None:
                r = {k: v for k, v in r.items() if k != "times"}
                if r["status"] == "ok":
                    r["spread_values"] = dict(zip(("lowest", "median", "highest"),
                                                  spread_values(case, r)))
            results[fw] = r
        rows.append({"workload": case.name, "metric": case.metric,
                     "amount": case.amount, "best_peer": best,
                     "ember_vs_best": rr, "results": results})
    doc = {"title": title, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "argv": sys.argv, "machine": machine,
           "settings": {"quick": args.quick, "repeat": args.repeat,
                        "warmup": args.warmup, "max_seconds": args.max_seconds,
                        "min_seconds": args.min_seconds, "rounds": args.rounds,
                        "isa": args.isa, "in_process": args.in_process},
           "frameworks": {fw: {k: v for k, v in by_fw.get(fw, {}).items()
                               if k != "results"} for fw in args.frameworks},
           "rows": rows, **({"extras": ext.json} if ext.json else {})}
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
    log(f"saved {args.json}")


def _passthrough(args) -> List[str]:
    out = ["--repeat", str(args.repeat), "--warmup", str(args.warmup),
           "--max-seconds", str(args.max_seconds), "--min-seconds", str(args.min_seconds)]
    if args.quick:
        out.append("--quick")
    if args.only:
        out += ["--only", args.only]
    return out
