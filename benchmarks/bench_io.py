#!/usr/bin/env python3
"""Saving and loading speed: Ember beside NumPy, the safetensors package and MLX.

Workloads: a float32 .safetensors file (default 1 GiB, in 16 tensors) and
an .npz (default 256 MiB, 8 arrays, stored). For each framework:

- save: writing the file (Ember and MLX evaluate first; timed is the call);
- open + first use: load() and read one element of one tensor;
- eval all: load() and read every tensor completely (a sum);
- peak RSS: the process's maximum resident memory over open + eval all,
  above what it held before loading (each measurement runs in a fresh
  process, so the numbers do not mix).

Baselines: a bare ``mmap`` of the file touching one page, and a read of
the whole file into memory (the page-cache copy speed). The file is read
once before each timing, so everything comes from the page cache. Each
figure is the median of --rounds runs.

Usage:
    PYTHONPATH=python python benchmarks/bench_io.py [--mlx-python /work/peers/bin/python]
        [--st-mb 1024] [--npz-mb 256] [--rounds 3] [--dir /tmp/bench_io]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_hwm():
    # writing 5 to clear_refs resets the peak RSS (VmHWM) of this process
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def arrays_np(total_mb, count):
    import numpy as np
    n = total_mb * (1 << 20) // 4 // count
    rng = np.random.default_rng(0)
    return {f"t{k:02d}": rng.standard_normal(n, dtype=np.float32) for k in range(count)}


def worker(fw, task, path, fmt, total_mb, count):
    """One measurement in this process; prints a JSON line."""
    import numpy as np
    out = {}
    if task == "save":
        data = arrays_np(total_mb, count)
        if fw in ("ember", "mlx"):
            mx = __import__("ember.core" if fw == "ember" else "mlx.core", fromlist=["x"])
            data = {k: mx.array(v) for k, v in data.items()}
            mx.eval(list(data.values()))
        t = time.perf_counter()
        if fw == "numpy":
            np.savez(path, **data)
        elif fw == "safetensors":
            import safetensors.numpy as stn
            stn.save_file(data, path)
        elif fmt == "safetensors":
            mx.save_safetensors(path, data)
        else:
            mx.savez(path, **data)
        out["s"] = time.perf_counter() - t
        print(json.dumps(out))
        return
    with open(path, "rb") as f:  # into the page cache
        while f.read(1 << 24):
            pass
    if fw in ("ember", "mlx"):
        mx = __import__("ember.core" if fw == "ember" else "mlx.core", fromlist=["x"])
        mx.eval(mx.zeros(1))
    elif fw == "safetensors":
        import safetensors.numpy as stn
        from safetensors import safe_open
    reset_hwm()
    base = rss_mb()
    t = time.perf_counter()
    if fw == "mmap":
        import mmap
        with open(path, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        _ = m[4096]
        out["first"] = time.perf_counter() - t
        t = time.perf_counter()
        buf = bytearray(os.path.getsize(path))
        with open(path, "rb") as f:
            f.readinto(buf)
        out["all"] = time.perf_counter() - t
    elif fw == "numpy":
        z = np.load(path)
        _ = z["t00"][0]
        out["first"] = time.perf_counter() - t
        t = time.perf_counter()
        z = np.load(path)
        s = sum(float(z[k].sum()) for k in z.files)
        out["all"] = time.perf_counter() - t
    elif fw == "safetensors":
        with safe_open(path, "np") as f:
            _ = f.get_tensor("t00")[0]
        out["first"] = time.perf_counter() - t
        t = time.perf_counter()
        d = stn.load_file(path)
        s = sum(float(v.sum()) for v in d.values())
        out["all"] = time.perf_counter() - t
    else:
        d = mx.load(path)
        _ = d["t00"][0].item()
        out["first"] = time.perf_counter() - t
        del d
        t = time.perf_counter()
        d = mx.load(path)
        tot = [mx.sum(v) for v in d.values()]
        mx.eval(tot)
        out["all"] = time.perf_counter() - t
    out["rss_mb"] = rss_mb() - base
    print(json.dumps(out))


def run(py, fw, task, path, fmt, total_mb, count, env):
    cmd = [py, os.path.abspath(__file__), "--worker", fw, "--task", task, "--path", path, "--fmt", fmt,
           "--mb", str(total_mb), "--count", str(count)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--task")
    ap.add_argument("--path")
    ap.add_argument("--fmt")
    ap.add_argument("--mb", type=int)
    ap.add_argument("--count", type=int)
    ap.add_argument("--mlx-python", default="/work/peers/bin/python")
    ap.add_argument("--st-mb", type=int, default=1024)
    ap.add_argument("--npz-mb", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/bench_io")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.task, a.path, a.fmt, a.mb, a.count)
        return
    os.makedirs(a.dir, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(HERE, "..", "python") + os.pathsep + env.get("PYTHONPATH", "")
    mlx_py = a.mlx_python if os.path.exists(a.mlx_python) else None
    peers = lambda fw: mlx_py if fw == "mlx" else sys.executable  # noqa: E731
    rows = []
    for fmt, mb, count, others in [("safetensors", a.st_mb, 16, ["safetensors", "mlx"]),
                                   ("npz", a.npz_mb, 8, ["numpy", "mlx"])]:
        for fw in ["ember", "mmap"] + others:
            if fw == "mlx" and not mlx_py:
                continue
            path = os.path.join(a.dir, f"{fw}.{fmt}")
            saves, firsts, alls, rss = [], [], [], []
            for _ in range(a.rounds):
                if fw != "mmap":
                    r = run(peers(fw), fw, "save", path, fmt, mb, count, env)
                    if "error" in r:
                        print(f"{fw} {fmt} save: {r['error']}")
                        break
                    saves.append(r["s"])
                src = path if fw != "mmap" else os.path.join(a.dir, f"ember.{fmt}")
                r = run(peers(fw), fw, "load", src, fmt, mb, count, env)
                if "error" in r:
                    print(f"{fw} {fmt} load: {r['error']}")
                    break
                firsts.append(r["first"])
                alls.append(r["all"])
                rss.append(r["rss_mb"])
            if not firsts:
                continue
            med = lambda v: statistics.median(v) if v else float("nan")  # noqa: E731
            rows.append((fmt, mb, fw, med(saves), med(firsts), med(alls), max(rss)))
    print(f"\n{'file':<21}{'framework':<13}{'save s':>9}{'save GB/s':>11}{'open+first ms':>15}"
          f"{'eval all s':>12}{'GB/s':>7}{'peak RSS MB':>13}")
    for fmt, mb, fw, s, f, al, r in rows:
        gb = mb / 1024
        save = f"{s:9.3f}{gb / s:11.2f}" if s == s else f"{'-':>9}{'-':>11}"
        name = "mmap / read" if fw == "mmap" else fw
        print(f"{fmt + f' {mb} MiB':<21}{name:<13}{save}{f * 1e3:15.2f}{al:12.3f}{gb / al:7.2f}{r:13.0f}")


if __name__ == "__main__":
    main()
