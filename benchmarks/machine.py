"""What the benchmarks need to know about the machine they run on: the CPU's
model and flags, how busy other processes kept it, and where to cache what
was measured about it (fma_peak.py's peak, disassembly verdicts)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from typing import Callable, Dict, Optional


def cpu_info():
    """(model name, set of flags) from /proc/cpuinfo."""
    with open("/proc/cpuinfo") as f:
        text = f.read()
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    return (model.group(1).strip() if model else "unknown",
            set(flags.group(1).split()) if flags else set())


def cache_dir() -> str:
    """$XDG_CACHE_HOME/ember-benchmarks, else ~/.cache/ember-benchmarks."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "ember-benchmarks")


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


def cached_measurement(name: str, measure: Callable[[], Dict], refresh: bool = False, log=None,
                       merge: Optional[Callable[[Dict, Dict], Dict]] = None) -> Dict:
    """`measure()`'s result for this machine (CPU model, flags and count),
    from `cache_dir()/<name>-<key>.json` unless `refresh`; a fresh result is
    cached only if other processes kept at most 0.25 cores busy (its
    "other_cores"), since a figure measured beside other work is too low.
    With `merge`, a fresh result is first merged with the cached one
    (`merge(cached, fresh)`: for a peak, the best of both, so that a VM's
    slow spell during one measurement does not lower it for later runs).
    The result's "cached" says the file it came from or went to (None: not
    cached)."""
    model, flags = cpu_info()
    key = hashlib.sha1(f"{model}|{' '.join(sorted(flags))}|{os.cpu_count()}".encode()).hexdigest()[:12]
    path = os.path.join(cache_dir(), f"{name}-{key}.json")
    old = None
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        old.pop("cached", None)
        if not refresh:
            return dict(old, cached=path)
    result = measure()
    if merge and old is not None:
        result = merge(old, result)
    if result["other_cores"] > 0.25:
        if log:
            log(f"other processes kept {result['other_cores']:.2f} cores busy: "
                "not cached, measure again when the machine is idle")
        return dict(result, cached=None)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    return dict(result, cached=path)


def where(result: Dict) -> str:
    """Where a result of cached_measurement() came from, in words."""
    if result.get("cached"):
        return f"cached in {result['cached']}"
    return f"measured now, not cached (other processes kept {result['other_cores']:.2f} cores busy)"
