#!/usr/bin/env python3
"""export_function / import_function: Ember beside MLX.

Workload: the 784-512-512-10 MLP training step of the compile benchmark
(value_and_grad of a cross-entropy loss and an SGD update, batch 256),
exported as a function of (x, y, *parameters). For each framework, in a
fresh process:

- export: export_function (trace + write the file), seconds;
- file: its size in MB;
- import: import_function (read, validate, rebuild, compile), seconds;
- first call: the first call of the imported function, evaluated;
- warm call: median of the following calls (steps/s), beside the eager
  step of the same framework.

Each figure is the median over --rounds fresh processes per framework.

Usage:
    PYTHONPATH=python python benchmarks/bench_export.py [--mlx-python /work/peers/bin/python]
        [--rounds 3] [--steps 30] [--dir /tmp/bench_export]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from machine import LoadMeter  # noqa: E402


def worker(fw, path, steps):
    import numpy as np
    mx = __import__("ember.core" if fw == "ember" else "mlx.core", fromlist=["x"])
    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [mx.array(rng.standard_normal((a, b)).astype(np.float32) * (1 / a) ** 0.5),
                   mx.zeros((b,), mx.float32)]
    x = mx.array(rng.standard_normal((256, 784)).astype(np.float32))
    y = mx.array(rng.integers(0, 10, 256).astype(np.int32))

    def loss(ps, x, y):
        h = x
        for i in range(0, len(ps), 2):
            h = h @ ps[i] + ps[i + 1]
            if i + 2 < len(ps):
                h = mx.maximum(h, 0)
        lse = mx.logsumexp(h, axis=-1)
        picked = mx.take_along_axis(h, y[:, None], axis=-1)[:, 0]
        return mx.mean(lse - picked)

    def step(x, y, *ps):
        l, g = mx.value_and_grad(loss)(list(ps), x, y)
        return [l] + [p - 0.01 * d for p, d in zip(ps, g)]

    out = {}
    t = time.perf_counter()
    mx.export_function(path, step, x, y, *params)
    out["export"] = time.perf_counter() - t
    out["file_mb"] = os.path.getsize(path) / 1e6
    t = time.perf_counter()
    f = mx.import_function(path)
    out["import"] = time.perf_counter() - t
    t = time.perf_counter()
    mx.eval(f(x, y, *params))
    out["first"] = time.perf_counter() - t
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        mx.eval(f(x, y, *params))
        times.append(time.perf_counter() - t)
    out["warm_steps_s"] = 1 / statistics.median(times)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        mx.eval(step(x, y, *params))
        times.append(time.perf_counter() - t)
    out["eager_steps_s"] = 1 / statistics.median(times)
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlx-python", default="/work/peers/bin/python")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--dir", default="/tmp/bench_export")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], a.worker[1], a.steps)
        return
    os.makedirs(a.dir, exist_ok=True)
    pythons = {"ember": sys.executable}
    if a.mlx_python and os.path.exists(a.mlx_python):
        pythons["mlx"] = a.mlx_python
    results = {fw: [] for fw in pythons}
    meter = LoadMeter()
    load0 = os.getloadavg()[0]
    for r in range(a.rounds):
        for fw in (list(pythons) if r % 2 == 0 else list(reversed(list(pythons)))):
            path = os.path.join(a.dir, f"step_{fw}.fn")
            p = subprocess.run([pythons[fw], __file__, "--steps", str(a.steps), "--worker", fw, path],
                               capture_output=True, text=True, env=dict(os.environ))
            if p.returncode != 0:
                print(f"{fw}: failed\n{p.stderr[-2000:]}")
                continue
            results[fw].append(json.loads(p.stdout.strip().splitlines()[-1]))
    keys = ["export", "file_mb", "import", "first", "warm_steps_s", "eager_steps_s"]
    print(f"MLP 784-512-512-10 SGD step, batch 256; median of {a.rounds} fresh processes")
    print(f"{'framework':10}" + "".join(f"{k:>15}" for k in keys))
    for fw, rs in results.items():
        if rs:
            print(f"{fw:10}" + "".join(f"{statistics.median(r[k] for r in rs):15.4g}" for k in keys))
    busy = meter.other_cores()
    print(f"load average at start {load0:.2f}; other processes kept "
          f"{'?' if busy is None else f'{busy:.1f}'} cores busy during the run")


if __name__ == "__main__":
    main()
