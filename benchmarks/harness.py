"""Reusable harness for Ember's side-by-side benchmarks.

A benchmark script builds a list of :class:`Case` objects (one per table row)
and calls :func:`main`. For each framework (ember, numpy, torch, jax, mlx) the
harness starts a fresh worker process (so one framework's threads, allocator
and JIT caches cannot disturb another's timings), converts the NumPy inputs,
runs each case's implementation, checks its result against a float64 NumPy
reference *before* any time counts, and times it: warm-up runs, then the median
of N runs, each run synchronized the way the framework needs (``mx.eval`` for
ember/mlx, ``block_until_ready`` for jax; numpy and CPU torch are eager). The
parent process prints one table: a row per case, a column per framework with
the case's metric, and a final column with Ember's ratio to the best peer
(> 1 means Ember is faster, whatever the metric's direction).

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
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

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

    def impl_for(self, fw: str):
        if fw in self.impls:
            return self.impls[fw]
        if fw == "ember":
            return self.impls.get("mlx")
        return None


# --------------------------------------------------------------------------
# Framework adapters


class Adapter:
    name = ""

    def __init__(self):
        self.m = None          # the module handed to implementations
        self.version = ""
        self.info: Dict[str, Any] = {}

    def load(self):            # import; raise on failure
        raise NotImplementedError

    def convert(self, a: np.ndarray):
        raise NotImplementedError

    def sync(self, out):       # wait until `out` is computed
        pass

    def to_numpy(self, out) -> np.ndarray:
        return np.asarray(out)


class NumpyAdapter(Adapter):
    name = "numpy"

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

    def convert(self, a):
        return a


class TorchAdapter(Adapter):
    name = "torch"

    def load(self):
        import torch
        self.m = torch
        self.version = torch.__version__
        # Default threads, as shipped; recorded, not changed.
        self.info["threads"] = torch.get_num_threads()
        self.info["interop_threads"] = torch.get_num_interop_threads()

    def convert(self, a):
        return self.m.from_numpy(np.require(a, requirements="C"))

    def to_numpy(self, out):
        return out.detach().cpu().numpy()


class JaxAdapter(Adapter):
    name = "jax"

    def load(self):
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        self.jax = jax
        self.m = jnp
        self.version = jax.__version__
        self.info["devices"] = [str(d) for d in jax.devices()]

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
        self.version = getattr(self.m, "__version__", "")
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


class EmberAdapter(MlxLikeAdapter):
    name = "ember"
    module = "ember.core"

    def load(self):
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
    err = check(adapter, case, out, ref)
    if err:
        return {"status": "wrong", "error": "last timed run: " + err}
    med = statistics.median(times)
    to_value, _ = METRICS[case.metric]
    return {"status": "ok", "median_s": med, "min_s": min(times),
            "runs": len(times), "value": to_value(case.amount, med)}


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
    result.update(available=True, version=adapter.version, info=adapter.info)
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
        with open("/proc/cpuinfo") as f:
            text = f.read()
        m = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
        info["cpu"] = m.group(1).strip() if m else platform.processor()
        flags = set(re.search(r"^flags\s*:\s*(.*)$", text, re.M).group(1).split())
        isa = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512_bf16",
                           "avx512_vnni", "amx_tile") if f in flags]
        info["isa"] = " ".join(isa)
    except Exception:
        info["cpu"] = platform.processor()
    try:
        info["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                      "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                      "MKL_NUM_THREADS", "XLA_FLAGS")
           if k in os.environ}
    if env:
        info["env"] = env
    return info


def _cpu_seconds():
    """(busy CPU seconds of the whole machine, CPU seconds of this process
    and its waited-for children), or None where /proc/stat is missing."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal ...: all but idle/iowait
    busy = sum(v) - v[3] - (v[4] if len(v) > 4 else 0)
    t = os.times()
    return busy / os.sysconf("SC_CLK_TCK"), t.user + t.system + \
        t.children_user + t.children_system


class LoadMeter:
    """How many cores other processes kept busy while the benchmark ran."""

    def __init__(self):
        self.t0 = time.perf_counter()
        self.c0 = _cpu_seconds()

    def other_cores(self) -> Optional[float]:
        c1 = _cpu_seconds()
        dt = time.perf_counter() - self.t0
        if self.c0 is None or c1 is None or dt <= 0:
            return None
        other = (c1[0] - self.c0[0]) - (c1[1] - self.c0[1])
        return max(0.0, other / dt)


def cell(res: Optional[Dict[str, Any]], avail: bool, has_impl: bool) -> str:
    if not avail:
        return "n/a"
    if not has_impl:
        return "—"
    if res is None:
        return "FAIL"
    if res["status"] == "ok":
        return fmt(res["value"])
    return {"wrong": "WRONG", "error": "ERROR"}.get(res["status"], "FAIL")


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


def print_table(title: str, cases: List[Case], by_fw: Dict[str, Dict[str, Any]],
                frameworks: Sequence[str], machine: Dict[str, Any], rounds: int = 1):
    out = sys.stdout
    print(f"\n## {title}\n", file=out)
    m = machine
    print(f"machine: {m.get('cpu')} ({m.get('cpus')} CPUs; {m.get('isa', '')}); "
          f"Python {m.get('python')}; load avg {m.get('loadavg')}", file=out)
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
    print(file=out)

    header = ["workload", "metric", *frameworks, "best peer", "ember/best"]
    rows = []
    for case in cases:
        row = [case.name, case.metric]
        for fw in frameworks:
            r = by_fw.get(fw, {})
            row.append(cell(r.get("results", {}).get(case.name),
                            bool(r.get("available")), case.impl_for(fw) is not None))
        best, rr = ratio(case, by_fw)
        row.append(best or "—")
        row.append("n/a" if rr is None else f"{rr:.2f}×")
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    right = [False, False] + [True] * (len(header) - 2)

    def line(vals):
        return "| " + " | ".join(str(v).rjust(w) if r else str(v).ljust(w)
                                 for v, w, r in zip(vals, widths, right)) + " |"
    print(line(header), file=out)
    print("|" + "|".join(("-" * (w + 1) + ":") if r else ("-" * (w + 2))
                         for w, r in zip(widths, right)) + "|", file=out)
    for row in rows:
        print(line(row), file=out)

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
    out.flush()


# --------------------------------------------------------------------------
# Entry point


def parse_args(argv=None):
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
                        "and keep each case's fastest round (default 1)")
    p.add_argument("--in-process", action="store_true",
                   help="run all frameworks in this process (debugging; timings "
                        "may disturb one another)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
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
    """One framework over the selected cases, in its own process."""
    if args.in_process:
        return run_framework(fw, args.cases, args)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.json")
        cmd = [sys.executable, os.path.abspath(sys.argv[0]),
               *_passthrough(args), "--worker", fw, "--worker-out", path]
        proc = subprocess.run(cmd, stdout=sys.stderr)
        if proc.returncode == 0 and os.path.exists(path):
            with open(path) as f:
                return json.load(f)
    log(f"[{fw}] worker failed (status {proc.returncode})")
    return {"framework": fw, "available": False,
            "note": f"worker exited with status {proc.returncode}"}


def _best_of(prev: Optional[Dict[str, Any]], new: Dict[str, Any]) -> Dict[str, Any]:
    """Merge one round into the previous ones: per case, the fastest ok run."""
    if prev is None or not prev.get("available"):
        return new
    for name, r in new.get("results", {}).items():
        old = prev["results"].get(name)
        if old is None or (r["status"] == "ok" and
                           (old["status"] != "ok" or r["median_s"] < old["median_s"])):
            prev["results"][name] = r
    return prev


def main(cases: List[Case], title: str = "Ember benchmarks", argv=None) -> int:
    args = parse_args(argv)
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
    meter = LoadMeter()
    by_fw: Dict[str, Dict[str, Any]] = {}
    # Rounds alternate the framework order (forward, then reversed) and keep
    # each case's fastest round: this VM's speed drifts by 10-30% over tens of
    # seconds, and one pass in a fixed order hands that drift to whichever
    # framework ran during the slow stretch.
    for rnd in range(args.rounds):
        order = args.frameworks if rnd % 2 == 0 else args.frameworks[::-1]
        for fw in order:
            res = _run_worker(fw, args)
            by_fw[fw] = _best_of(by_fw.get(fw), res)

    oc = meter.other_cores()
    if oc is not None:
        machine["other_cores"] = round(oc, 3)
    print_table(title, cases, by_fw, args.frameworks, machine, args.rounds)
    if args.json:
        rows = []
        for case in cases:
            best, rr = ratio(case, by_fw)
            rows.append({"workload": case.name, "metric": case.metric,
                         "amount": case.amount, "best_peer": best,
                         "ember_vs_best": rr,
                         "results": {fw: by_fw.get(fw, {}).get("results", {}).get(case.name)
                                     for fw in args.frameworks}})
        doc = {"title": title, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "argv": sys.argv, "machine": machine,
               "settings": {"quick": args.quick, "repeat": args.repeat,
                            "warmup": args.warmup, "max_seconds": args.max_seconds,
                            "min_seconds": args.min_seconds, "rounds": args.rounds,
                            "in_process": args.in_process},
               "frameworks": {fw: {k: v for k, v in by_fw.get(fw, {}).items()
                                   if k != "results"} for fw in args.frameworks},
               "rows": rows}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
        log(f"saved {args.json}")
    return 0


def _passthrough(args) -> List[str]:
    out = ["--repeat", str(args.repeat), "--warmup", str(args.warmup),
           "--max-seconds", str(args.max_seconds), "--min-seconds", str(args.min_seconds)]
    if args.quick:
        out.append("--quick")
    if args.only:
        out += ["--only", args.only]
    return out
