"""What the benchmarks need to know about the machine they run on: the CPU's
model and flags, how busy other processes kept it, and where to cache what
was measured about it (fma_peak.py's peak, disassembly verdicts)."""

from __future__ import annotations

import os
import re
import time
from typing import Optional


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
