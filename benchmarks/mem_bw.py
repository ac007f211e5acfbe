"""DRAM read bandwidth of this machine, measured: GB/s of a read-sum over a
1 GB buffer on 1 thread and on all of them.

A tiny C++ program, compiled with g++ at run time into a temporary folder,
fills a buffer of 1 GB (each thread its own contiguous slice, so first-touch
puts the pages near the thread that reads them), then every thread sums its
slice with 8 independent AVX2 (or SSE2) accumulators of 32-bit integers —
integer adds, so the sum never waits on a float latency chain and the loop is
bound by the loads alone. Each measurement is the best of 5 passes. This is
the limit the quantized matrix-vector kernel (decoding) is measured against:
a token reads every weight once.

Cached per CPU model, flags and CPU count beside fma_peak.py's cache (a
measurement during which other processes kept more than a quarter of a core
busy is used but not cached). Run:

    python3 benchmarks/mem_bw.py            # measure (and refresh the cache)
    python3 benchmarks/mem_bw.py --cached   # the cached answer, measuring if none
    python3 benchmarks/mem_bw.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import LoadMeter, cached_measurement, cpu_info, where  # noqa: E402

SOURCE = r"""
#include <immintrin.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

// Sum of n bytes (n a multiple of 256) as 32-bit lanes, 8 accumulators.
__attribute__((target("avx2"))) static uint32_t sum_avx2(const uint8_t* p, size_t n) {
  __m256i acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_si256();
  for (size_t i = 0; i < n; i += 256)
    for (int j = 0; j < 8; ++j)
      acc[j] = _mm256_add_epi32(acc[j], _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32 * j)));
  __m256i s = acc[0];
  for (int j = 1; j < 8; ++j) s = _mm256_add_epi32(s, acc[j]);
  uint32_t out[8];
  std::memcpy(out, &s, 32);
  return out[0] + out[3] + out[7];
}

static uint32_t sum_sse2(const uint8_t* p, size_t n) {
  __m128i acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = _mm_setzero_si128();
  for (size_t i = 0; i < n; i += 128)
    for (int j = 0; j < 8; ++j)
      acc[j] = _mm_add_epi32(acc[j], _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 16 * j)));
  __m128i s = acc[0];
  for (int j = 1; j < 8; ++j) s = _mm_add_epi32(s, acc[j]);
  uint32_t out[4];
  std::memcpy(out, &s, 16);
  return out[0] + out[3];
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s megabytes threads passes\n", argv[0]);
    return 2;
  }
  const size_t bytes = static_cast<size_t>(std::atol(argv[1])) << 20;
  const int threads = std::atoi(argv[2]), passes = std::atoi(argv[3]);
  const bool avx2 = __builtin_cpu_supports("avx2");
  uint8_t* buf = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
  const size_t slice = bytes / threads / 4096 * 4096;
  std::vector<uint32_t> sink(threads);
  auto run = [&](bool fill) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        uint8_t* p = buf + t * slice;
        if (fill) std::memset(p, t + 1, slice);
        else sink[t] += avx2 ? sum_avx2(p, slice) : sum_sse2(p, slice);
      });
    for (auto& th : pool) th.join();
  };
  run(true);
  double best = 0;
  for (int i = 0; i < passes; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run(false);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, slice * threads / s / 1e9);
  }
  uint32_t total = 0;
  for (uint32_t v : sink) total += v;
  std::printf("%.3f %u\n", best, total);
  std::free(buf);
  return 0;
}
"""


def measure(megabytes: int = 1024, log=None) -> Dict:
    """Compile and run the program: {"cpu", "cpus", "gbps": {threads: GB/s}}."""
    model, _ = cpu_info()
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("g++")
    if not cxx:
        raise RuntimeError("mem_bw needs g++ (or $CXX) on PATH")
    ncpu = os.cpu_count() or 1
    result = {"cpu": model, "cpus": ncpu, "megabytes": megabytes, "gbps": {}}
    meter = LoadMeter()
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "mem_bw.cpp"), os.path.join(d, "mem_bw")
        with open(src, "w") as f:
            f.write(SOURCE)
        subprocess.run([cxx, "-O2", "-std=c++17", "-pthread", src, "-o", exe], check=True)
        for threads in sorted({1, ncpu}):
            out = subprocess.run([exe, str(megabytes), str(threads), "5"], check=True,
                                 capture_output=True, text=True).stdout.split()
            result["gbps"][str(threads)] = float(out[0])
            if log:
                log(f"{threads} thread(s): {float(out[0]):.1f} GB/s")
    result["other_cores"] = round(meter.other_cores() or 0.0, 3)
    return result


def bandwidth(refresh: bool = False, log=None) -> Dict:
    """The cached measurement for this machine, measuring (and caching) if
    there is none or `refresh`."""
    return cached_measurement("mem_bw", lambda: measure(log=log), refresh, log)


def read_gbps(threads: int, result: Dict) -> float:
    """GB/s on `threads` threads (the all-thread figure when > 1)."""
    per = result["gbps"]
    return per["1"] if threads <= 1 else per[max(per, key=int)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cached", action="store_true", help="use the cached answer if there is one")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")
    a = p.parse_args(argv)
    log = None if a.json else (lambda s: print(s, file=sys.stderr, flush=True))
    r = bandwidth(refresh=not a.cached, log=log)
    if a.json:
        print(json.dumps(r, indent=1))
        return 0
    src = where(r)
    print(f"DRAM read bandwidth, {r['cpu']} ({r['cpus']} CPUs), read-sum over {r['megabytes']} MB; {src}")
    for t, v in r["gbps"].items():
        print(f"  {t} thread(s): {v:.1f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
