"""Quantized matmul on the shapes of a Llama-3.2-1B-sized model (hidden 2048,
FFN 8192, vocabulary 128256): decode (one row of x) in GB/s of quantized
weights read (compare with mem_bw.py's DRAM read bandwidth), and prefill (128
rows) in GFLOP/s, beside NumPy (dequantize then matmul), torch (dequantize
then matmul: its int4/int8 CPU kernels need a packing of their own, see the
note) and MLX's quantized_matmul. Ember's default for 4- and 8-bit affine
weights multiplies x quantized to int8 per block of 32 (backend/cpu/qmm.cpp;
prefill on CPUs with AMX-BF16: bfloat16 x and weights on the tile unit),
checked at rtol = atol = 2e-2. Weights are 4- or 8-bit affine, group 64,
bfloat16 scales and biases as mlx-lm stores them; x is float32 (MLX 0.32's
CPU kernel accumulates a bfloat16 x in bfloat16, and fails the check). The
inputs hold weights that are already on the quantization grid, so every
framework multiplies by the same matrix and the float64 reference is exact.
Prefill runs at 128 and 512 rows. The table adds Ember's share of the
machine's limit: for decode, of the DRAM read bandwidth on Ember's thread
count (mem_bw.py, cached per machine); for prefill, of the float32 FMA peak
at the widest vectors of Ember's level (fma_peak.py, measured in the run;
``--peak GFLOPS`` or ``--peak off`` as in bench_conv.py). Int8 and AMX
kernels can pass the float32 peak. Run:

    python3 benchmarks/bench_quant.py [--quick] [--only PATTERN] [--rounds 3] [--peak auto|off|GFLOPS]
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fma_peak  # noqa: E402
import mem_bw  # noqa: E402
from harness import ISA_LEVELS, Case, Extras, main  # noqa: E402

GROUP = 64


def grid_weights(rng, n, k, bits):
    """(n, k) float32 weights on an affine grid of `bits` bits per group of 64
    (bfloat16-exact scales and biases): quantizing them again is lossless."""
    levels = (1 << bits) - 1
    q = rng.integers(0, levels + 1, size=(n, k // GROUP, GROUP)).astype(np.float32)
    # scales and biases exactly representable in bfloat16, products exact in float32
    scale = (np.ldexp(1.0, rng.integers(-9, -6, size=(n, k // GROUP, 1)))).astype(np.float32)
    bias = (-scale * (levels // 2)).astype(np.float32)
    q[:, :, 0] = 0  # every group spans the whole grid, so its min and max fix the same scale
    q[:, :, 1] = levels
    return (q * scale + bias).reshape(n, k)


def codes_np(w, bits):
    g = w.reshape(w.shape[0], -1, GROUP)
    lo, hi = g.min(-1, keepdims=True), g.max(-1, keepdims=True)
    s = (hi - lo) / ((1 << bits) - 1)
    return np.rint((g - lo) / s).astype(np.uint8), s.astype(np.float32), lo.astype(np.float32)


def make(m, n, k, bits):
    def inputs(rng):
        return [rng.standard_normal((m, k)).astype(np.float32), grid_weights(rng, n, k, bits)]
    return inputs


def ref(x, w):
    return x.astype(np.float64) @ w.astype(np.float64).T


def impls(bits):
    def mlx_like(mx, x, w):
        wq, s, b = mx.quantize(w.astype(mx.bfloat16), GROUP, bits)
        mx.eval(wq, s, b)
        return lambda: mx.quantized_matmul(x, wq, s, b, True, GROUP, bits)

    def numpy_impl(np_, x, w):
        q, s, b = codes_np(np_.asarray(w), bits)
        return lambda: x @ (q * s + b).reshape(w.shape).T

    def torch_impl(torch, x, w):
        q, s, b = codes_np(w.numpy(), bits)
        q, s, b = torch.from_numpy(q), torch.from_numpy(s), torch.from_numpy(b)
        return lambda: x @ (q.float() * s + b).reshape(w.shape).T

    return {"mlx": mlx_like, "numpy": numpy_impl, "torch": torch_impl}


def weight_bytes(n, k, bits):
    return n * k * bits / 8 + 2 * (n * k // GROUP) * 2  # codes + bfloat16 scales and biases


SHAPES = [("attn 2048x2048", 2048, 2048), ("ffn up 2048->8192", 8192, 2048), ("ffn down 8192->2048", 2048, 8192)]
# decode only: 4096x2048, and the tied 128256-row embedding as the output
# layer (NumPy and torch would dequantize 1 GB a call: MLX and Ember only)
DECODE_ONLY = [("4096x2048", 4096, 2048, None), ("lm head 2048->128256", 128256, 2048, ("mlx",))]

CASES = []
for bits in (4, 8):
    for name, n, k in SHAPES:
        CASES.append(Case(name=f"decode q{bits} {name}", metric="GB/s", amount=weight_bytes(n, k, bits),
                          make_inputs=make(1, n, k, bits), reference=ref, rtol=2e-2, atol=2e-2,
                          out_dtype="float32", impls=impls(bits)))
for name, n, k, only in DECODE_ONLY:
    im = impls(4)
    CASES.append(Case(name=f"decode q4 {name}", metric="GB/s", amount=weight_bytes(n, k, 4),
                      make_inputs=make(1, n, k, 4), reference=ref, rtol=2e-2, atol=2e-2, out_dtype="float32",
                      impls={f: v for f, v in im.items() if only is None or f in only}))
for rows in (128, 512):
    for bits in (4, 8):
        for name, n, k in SHAPES[1:]:
            CASES.append(Case(name=f"prefill {rows} q{bits} {name}", metric="GFLOP/s", amount=2.0 * rows * n * k,
                              make_inputs=make(rows, n, k, bits), reference=ref, rtol=2e-2, atol=2e-2,
                              out_dtype="float32", impls=impls(bits)))


def add_args(p):
    p.add_argument("--peak", default="auto", metavar="auto|off|GFLOPS",
                   help="float32 FMA peak for the prefill rows' share: auto (fma_peak.py), off, or GFLOP/s")


def last_level_cache():
    """The size of the last cache level of CPU 0 (sysfs), e.g. '480 MB', or '?'."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        levels = [(int(open(f"{base}/{d}/level").read()), open(f"{base}/{d}/size").read().strip())
                  for d in os.listdir(base) if d.startswith("index")]
        return "L%d %s" % max(levels)
    except OSError:
        return "?"


def limit_extras(args, by_fw, machine):
    """The 'ember % limit' column: decode rows over the DRAM read bandwidth,
    prefill rows over the float32 FMA peak, both on Ember's thread count."""
    cfg = by_fw.get("ember", {}).get("config") or {}
    threads = cfg.get("num_threads") or os.cpu_count()
    lines = []
    try:
        gbps = mem_bw.read_gbps(threads, mem_bw.bandwidth(log=lambda s: print(f"[mem_bw] {s}", file=sys.stderr)))
        lines.append(f"DRAM read bandwidth: {gbps:.1f} GB/s on {threads} threads (mem_bw.py, cached)")
    except Exception as e:  # noqa: BLE001 - no compiler: no decode limit
        gbps = None
        lines.append(f"DRAM read bandwidth: not measured ({type(e).__name__}: {e})")
    llc = last_level_cache()
    lines.append(f"a decode row's weights (2-131 MB) are read again every call: where they fit the last-level cache "
                 f"({llc}) they come from it, not DRAM, and the row can pass 100%; bench_llm.py's decode reads "
                 "a whole 695 MB model per token")
    peak, source = fma_peak.ember_peak(by_fw, machine, args.isa, args.peak, ISA_LEVELS)
    lines.append(f"float32 FMA peak: {peak:.0f} GFLOP/s ({source})" if peak else f"FMA peak: {source}")

    def pct(case):
        r = by_fw.get("ember", {}).get("results", {}).get(case.name)
        limit = gbps if case.metric == "GB/s" else peak
        return f"{100 * r['value'] / limit:.0f}%" if limit and r and r["status"] == "ok" else "—"
    return Extras(columns=[("ember % limit", pct)], lines=lines,
                  json={"dram_read_gbps": gbps, "fma_peak_gflops": peak, "fma_peak_source": source})


if __name__ == "__main__":
    sys.exit(main(CASES, title="Ember quantized matmul (bench_quant.py)", add_args=add_args, extras=limit_extras))
