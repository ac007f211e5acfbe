"""Float32 arithmetic peak of this machine, measured: GFLOP/s per vector width
on one thread and on all of them.

A tiny C++ program, compiled with g++ at run time into a temporary folder,
runs independent chains of ``acc = acc * m + a`` in registers (12 chains for
128/256 bits, 24 for 512: more than FMA latency x ports, so the FMA units
never wait):

- 128 bits: SSE, a separate multiply and add (x86-64-v2 has no FMA), 2 flops
  per lane per step;
- 256 bits: AVX2 FMA (``__attribute__((target("avx2,fma")))``);
- 512 bits: AVX-512F FMA (``target("avx512f")``).

Only the widths the CPU supports (per /proc/cpuinfo flags) are run. ``m`` and
``a`` come from the command line (1 and 0), so the compiler cannot fold the
chains and the values never overflow or turn denormal. Each measurement is
the best of 3 runs of about 0.25 s.

Results are cached per CPU model, flags and CPU count (in
``$XDG_CACHE_HOME/ember-benchmarks/``, else ``~/.cache/...``), so that
``bench_conv.py`` can quote "% of FMA peak" without measuring every time; a
measurement during which other processes kept more than a quarter of a core
busy is used but not cached. Run:

    python3 benchmarks/fma_peak.py            # measure (and refresh the cache)
    python3 benchmarks/fma_peak.py --cached   # print the cached answer, measure if none
    python3 benchmarks/fma_peak.py --json     # the answer as JSON
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import LoadMeter, cached_measurement, cpu_info, where  # noqa: E402

SOURCE = r"""
#include <immintrin.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

static std::atomic<int> ready{0};
static std::atomic<bool> go{false};

// Each kernel: CHAINS independent accumulators, `iters` steps of acc*m + a.
// Returns a sum of the accumulators so that nothing is optimized away.
#define KERNEL(NAME, TARGET, VEC, SET1, STEP, REDUCE, CHAINS)                 \
  __attribute__((target(TARGET))) static float NAME(long iters, float mf,     \
                                                    float af) {               \
    VEC m = SET1(mf), a = SET1(af), acc[CHAINS];                             \
    for (int j = 0; j < CHAINS; ++j) acc[j] = SET1(1.0f + j);                 \
    for (long i = 0; i < iters; ++i) {                                        \
      _Pragma("GCC unroll 32") for (int j = 0; j < CHAINS; ++j) STEP;         \
    }                                                                         \
    VEC s = acc[0];                                                           \
    for (int j = 1; j < CHAINS; ++j) s = REDUCE(s, acc[j]);                   \
    float out[sizeof(VEC) / 4];                                               \
    std::memcpy(out, &s, sizeof(VEC));                                        \
    return out[0];                                                            \
  }

// Even chains multiply, odd chains add: SSE has no FMA; each op is one flop
// per lane, so a pair of chains does what one FMA chain does.
KERNEL(k128, "sse2", __m128, _mm_set1_ps,
       acc[j] = (j & 1) ? _mm_add_ps(acc[j], a) : _mm_mul_ps(acc[j], m),
       _mm_add_ps, 12)
KERNEL(k256, "avx2,fma", __m256, _mm256_set1_ps,
       acc[j] = _mm256_fmadd_ps(acc[j], m, a), _mm256_add_ps, 12)
KERNEL(k512, "avx512f", __m512, _mm512_set1_ps,
       acc[j] = _mm512_fmadd_ps(acc[j], m, a), _mm512_add_ps, 24)

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s bits threads iters m a\n", argv[0]);
    return 2;
  }
  int bits = std::atoi(argv[1]), threads = std::atoi(argv[2]);
  long iters = std::atol(argv[3]);
  float m = std::atof(argv[4]), a = std::atof(argv[5]);
  float (*kernel)(long, float, float) = bits == 512 ? k512 : bits == 256 ? k256 : k128;
  // flops per step: 128 bits: 12 chains x 4 lanes x 1 op; else chains x lanes x 2.
  double per_step = bits == 512 ? 24 * 16 * 2 : bits == 256 ? 12 * 8 * 2 : 12 * 4;
  std::vector<std::thread> pool;
  std::vector<float> sink(threads);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) {}
      sink[t] = kernel(iters, m, a);
    });
  while (ready.load() < threads) {}
  auto t0 = std::chrono::steady_clock::now();
  go.store(true);
  for (auto& th : pool) th.join();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  float total = 0;
  for (float v : sink) total += v;
  std::printf("%.3f %.6f %g\n", per_step * iters * threads / s / 1e9, s, total);
  return 0;
}
"""

# vector width -> the /proc/cpuinfo flags it needs
WIDTHS = {128: ("sse2",), 256: ("avx2", "fma"), 512: ("avx512f",)}


def measure(log=None) -> Dict:
    """Compile and run the program: {"cpu", "cpus", "gflops": {bits: {threads: GFLOP/s}}}."""
    model, flags = cpu_info()
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("g++")
    if not cxx:
        raise RuntimeError("fma_peak needs g++ (or $CXX) on PATH")
    ncpu = os.cpu_count() or 1
    result = {"cpu": model, "cpus": ncpu, "gflops": {}}
    meter = LoadMeter()
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "fma_peak.cpp"), os.path.join(d, "fma_peak")
        with open(src, "w") as f:
            f.write(SOURCE)
        subprocess.run([cxx, "-O2", "-std=c++17", "-pthread", src, "-o", exe], check=True)
        for bits, needs in WIDTHS.items():
            if not all(n in flags for n in needs):
                continue
            per = {}
            for threads in sorted({1, ncpu}):
                per[str(threads)] = _best_run(exe, bits, threads)
                if log:
                    log(f"{bits:3d}-bit, {threads} thread(s): {per[str(threads)]:.1f} GFLOP/s")
            result["gflops"][str(bits)] = per
    result["other_cores"] = round(meter.other_cores() or 0.0, 3)
    return result


def _best_run(exe: str, bits: int, threads: int, target_s: float = 0.25, reps: int = 3) -> float:
    def run(iters):
        out = subprocess.run([exe, str(bits), str(threads), str(iters), "1", "0"],
                             check=True, capture_output=True, text=True).stdout.split()
        return float(out[0]), float(out[1])
    iters = 1 << 20
    while True:                                   # calibrate to ~target_s per run
        g, s = run(iters)
        if s >= target_s / 4:
            break
        iters *= 4
    iters = max(1, int(iters * target_s / s))
    return max([g] + [run(iters)[0] for _ in range(reps)])


def _best_of(old: Dict, new: Dict) -> Dict:
    """Per width and thread count, the higher of two measurements: the peak
    is what the machine reaches, and a VM's slow spell only lowers a figure."""
    out = dict(new, gflops={b: dict(per) for b, per in new["gflops"].items()})
    for bits, per in old.get("gflops", {}).items():
        for threads, g in per.items():
            mine = out["gflops"].setdefault(bits, {})
            mine[threads] = max(g, mine.get(threads, 0.0))
    return out


def peak(refresh: bool = False, log=None) -> Dict:
    """The cached measurement for this machine, measuring (and caching) if
    there is none or `refresh`; a new measurement keeps, per width and thread
    count, the best of it and the cached one."""
    return cached_measurement("fma_peak", lambda: measure(log), refresh, log, merge=_best_of)


# Ember's ISA level -> the widest vectors that level computes with
LEVEL_BITS = {"baseline": 128, "avx2": 256, "avx512": 512}


def peak_for(level: str, threads: int, result: Dict) -> Optional[float]:
    """GFLOP/s at the widest width `level` allows (and the CPU has) on
    `threads` threads (the all-thread figure when `threads` > 1)."""
    widths = [int(b) for b in result["gflops"] if int(b) <= LEVEL_BITS.get(level, 512)]
    if not widths:
        return None
    per = result["gflops"][str(max(widths))]
    key = "1" if threads <= 1 else max(per, key=int)
    return per.get(key)


def ember_peak(by_fw: Dict, machine: Dict, isa_arg: Optional[str], peak_arg: str, levels) -> Tuple[Optional[float], str]:
    """The float32 FMA peak a benchmark holds Ember's GFLOP/s to: at the
    widest vectors of the level Ember ran at (its config in `by_fw`, else
    `isa_arg`, else the CPU's best of `levels`), on its thread count.
    `peak_arg`: "auto" (measured now, the best seen on this machine kept),
    "off", or GFLOP/s. Returns (peak or None, where it comes from, or why
    there is none)."""
    if peak_arg == "off":
        return None, "off"
    cfg = by_fw.get("ember", {}).get("config") or {}
    level = cfg.get("isa") or isa_arg or levels[max(0, machine.get("cpu_level", 2))]
    threads = cfg.get("num_threads") or os.cpu_count()
    if peak_arg != "auto":
        return float(peak_arg), "--peak"
    try:
        # measured in this run too: a figure cached during a VM's slow
        # spell made a % peak column read 120% on a fast day
        measured = peak(refresh=True, log=lambda s: print(f"[fma_peak] {s}", file=sys.stderr))
    except Exception as e:  # noqa: BLE001 - no compiler: no peak
        return None, f"not measured ({type(e).__name__}: {e})"
    return (peak_for(level, threads, measured),
            f"{LEVEL_BITS[level]}-bit vectors ({level}), {threads} threads; fma_peak.py, {where(measured)}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cached", action="store_true", help="use the cached answer if there is one")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")
    a = p.parse_args(argv)
    log = None if a.json else (lambda s: print(s, file=sys.stderr, flush=True))
    r = peak(refresh=not a.cached, log=log)
    if a.json:
        print(json.dumps(r, indent=1))
        return 0
    print(f"float32 peak, {r['cpu']} ({r['cpus']} CPUs); {where(r)}")
    print("| width | " + " | ".join(f"{t} thread(s)" for t in next(iter(r["gflops"].values()))) + " |")
    print("|---|" + "---:|" * len(next(iter(r["gflops"].values()))))
    for bits, per in r["gflops"].items():
        kind = "SSE mul+add" if bits == "128" else "FMA"
        print(f"| {bits}-bit ({kind}) | " + " | ".join(f"{v:.1f}" for v in per.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
