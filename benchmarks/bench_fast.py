"""mx.fast: the fused kernels against the same computation written with
Ember's ops, and against PyTorch's equivalents (in the interpreter given
with --torch-python, one process of its own). Realistic shapes: norms over
x (16, 128, 2048); attention prefill (causal, q/k/v (1, 32, 128, 64)) and
decode (q (1, 32, 1, 64) against a KV cache (1, 8, 4096, 64)). Run:

    PYTHONPATH=python python3 benchmarks/bench_fast.py [--torch-python /work/peers/bin/python]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import cpu_info  # noqa: E402

SHAPES = {
    "rms_norm": dict(x=(16, 128, 2048)),
    "layer_norm": dict(x=(16, 128, 2048)),
    "rope": dict(x=(1, 32, 128, 128)),
    "sdpa_prefill": dict(q=(1, 32, 128, 64), k=(1, 32, 128, 64)),
    "sdpa_prefill_gqa": dict(q=(1, 32, 512, 64), k=(1, 8, 512, 64)),
    "sdpa_decode": dict(q=(1, 32, 1, 64), k=(1, 8, 4096, 64)),
}


def timeit(fn, min_seconds=0.5, rounds=5):
    fn()
    best = float("inf")
    for _ in range(rounds):
        n, t0 = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            if time.perf_counter() - t0 > min_seconds / rounds:
                break
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def inputs(name):
    rng = np.random.default_rng(0)
    s = SHAPES[name]
    if "x" in s:
        return {"x": rng.standard_normal(s["x"]).astype(np.float32),
                "w": rng.standard_normal(s["x"][-1]).astype(np.float32)}
    q, k = s["q"], s["k"]
    return {"q": rng.standard_normal(q).astype(np.float32), "k": rng.standard_normal(k).astype(np.float32),
            "v": rng.standard_normal(k).astype(np.float32)}


def ember_cases():
    import ember.core as mx
    out = {}
    for name in SHAPES:
        a = {k: mx.array(v) for k, v in inputs(name).items()}
        if name == "rms_norm":
            x, w = a["x"], a["w"]
            fused = lambda: mx.fast.rms_norm(x, w, 1e-5)
            comp = lambda: x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-5) * w
        elif name == "layer_norm":
            x, w = a["x"], a["w"]
            fused = lambda: mx.fast.layer_norm(x, w, w, 1e-5)

            def comp():
                c = x - mx.mean(x, axis=-1, keepdims=True)
                return c * mx.rsqrt(mx.mean(c * c, axis=-1, keepdims=True) + 1e-5) * w + w
        elif name == "rope":
            x = a["x"]
            fused = lambda: mx.fast.rope(x, 128, traditional=False, base=10000.0, scale=1.0, offset=0)

            def comp():
                L, D = x.shape[-2], x.shape[-1]
                inv = mx.power(10000.0, -mx.arange(0, D, 2, dtype=mx.float32) / D)
                th = mx.arange(L, dtype=mx.float32)[:, None] * inv[None]
                c, s = mx.cos(th), mx.sin(th)
                x1, x2 = x[..., : D // 2], x[..., D // 2:]
                return mx.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)
        else:
            q, k, v = a["q"], a["k"], a["v"]
            causal = "prefill" in name
            g = q.shape[1] // k.shape[1]
            fused = lambda: mx.fast.scaled_dot_product_attention(q, k, v, scale=0.125,
                                                                 mask="causal" if causal else None)

            def comp():
                kk, vv = mx.repeat(k, g, axis=1), mx.repeat(v, g, axis=1)
                s = 0.125 * (q @ mx.swapaxes(kk, -1, -2))
                if causal:
                    L, S = q.shape[2], k.shape[2]
                    keep = mx.arange(L)[:, None] + (S - L) >= mx.arange(S)[None]
                    s = mx.where(keep, s, -np.inf)
                return mx.softmax(s, axis=-1) @ vv
        f, c = fused(), comp()
        err = float(np.max(np.abs(np.array(f) - np.array(c))))
        out[name] = dict(fused=timeit(lambda: mx.eval(fused())), ops=timeit(lambda: mx.eval(comp())), err=err)
    return out, mx.__config__()


def torch_cases():
    import torch
    import torch.nn.functional as F
    out = {}
    with torch.no_grad():
        for name in SHAPES:
            a = {k: torch.from_numpy(v) for k, v in inputs(name).items()}
            if name == "rms_norm":
                fn = lambda: F.rms_norm(a["x"], (a["x"].shape[-1],), a["w"], 1e-5)
            elif name == "layer_norm":
                fn = lambda: F.layer_norm(a["x"], (a["x"].shape[-1],), a["w"], a["w"], 1e-5)
            elif name == "rope":
                continue
            else:
                causal = "prefill" in name
                gqa = a["q"].shape[1] != a["k"].shape[1]
                fn = lambda: F.scaled_dot_product_attention(a["q"], a["k"], a["v"], scale=0.125,
                                                            is_causal=causal, enable_gqa=gqa)
            out[name] = dict(torch=timeit(fn))
    return out, {"torch": torch.__version__, "threads": torch.get_num_threads()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch-python", default="/work/peers/bin/python")
    ap.add_argument("--child", choices=["torch"])
    args = ap.parse_args()
    if args.child == "torch":
        print(json.dumps(torch_cases()))
        return
    model, flags = cpu_info()
    res, cfg = ember_cases()
    tinfo = {}
    if args.torch_python and os.path.exists(args.torch_python):
        p = subprocess.run([args.torch_python, __file__, "--child", "torch"], capture_output=True, text=True)
        if p.returncode == 0:
            tres, tinfo = json.loads(p.stdout.strip().splitlines()[-1])
            for k, v in tres.items():
                res[k].update(v)
        else:
            print("torch run failed:", p.stderr[-500:])
    print(f"CPU: {model}; Ember ISA level: {cfg.get('isa')} (supported {cfg.get('isa_supported')}), "
          f"threads {cfg.get('num_threads')}; {tinfo}")
    print(f"{'case':18} {'shape':40} {'fast ms':>9} {'ops ms':>9} {'torch ms':>9} {'ops/fast':>8} "
          f"{'torch/fast':>10} {'max|fast-ops|':>13}")
    for name, r in res.items():
        t = r.get("torch")
        print(f"{name:18} {str(SHAPES[name]):40} {r['fused'] * 1e3:9.3f} {r['ops'] * 1e3:9.3f} "
              f"{(t * 1e3 if t else float('nan')):9.3f} {r['ops'] / r['fused']:8.2f} "
              f"{(t / r['fused'] if t else float('nan')):10.2f} {r['err']:13.2e}")


if __name__ == "__main__":
    main()
