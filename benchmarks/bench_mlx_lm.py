"""Prefill and greedy-decode speed of mlx-lm's llama, Ember against MLX.

    PYTHONPATH=python python benchmarks/bench_mlx_lm.py --mlx-python /path/to/mlx/bin/python

Runs mlx-lm 0.32.2's ``llama.py`` unchanged in one process per framework
(Ember through ``ember.alias_mlx()``), with the same weights (drawn once
with NumPy and saved under ``--out``): a ~48M-parameter configuration
(hidden 512, 10 layers, 8 query / 4 key-value heads, SwiGLU 1536, vocabulary
32000, tied embeddings). Per dtype (float32, bfloat16) it times the prefill
of a ``--prompt`` token prompt into a fresh ``KVCache`` and the greedy decode
of ``--gen`` tokens after it (one token per step, each evaluated before the
next), and prints tokens per second, the median over ``--rounds`` (after a
warm-up round). Both frameworks decode the same tokens (checked). Run it on
a quiet machine: it reports the load other processes put on it.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

CONFIG = dict(model_type="llama", hidden_size=512, num_hidden_layers=10, intermediate_size=1536,
              num_attention_heads=8, num_key_value_heads=4, rms_norm_eps=1e-5, vocab_size=32000,
              rope_theta=10000.0, tie_word_embeddings=True)


def _weights(out):
    path = os.path.join(out, "llama50m.npz")
    if os.path.exists(path):
        return path
    import mlx_lm_configs as C

    C.import_mlx_lm()
    import mlx.core as mx  # whichever framework runs this: only the shapes are used
    from mlx.utils import tree_flatten
    from mlx_lm.models import llama

    model = llama.Model(llama.ModelArgs.from_dict(CONFIG))
    rng = np.random.default_rng(0)
    arrays = {}
    for k, v in tree_flatten(model.parameters()):
        if v.ndim >= 2:
            arrays[k] = (rng.standard_normal(v.shape, dtype=np.float32) * v.shape[-1] ** -0.5)
        else:
            arrays[k] = (1 + 0.1 * rng.standard_normal(v.shape)).astype(np.float32)
    del mx
    np.savez(path, **arrays)
    return path


def worker(backend, out, prompt_len, gen, rounds):
    if backend == "ember":
        import ember

        ember.alias_mlx()
    import mlx.core as mx
    from mlx.utils import tree_unflatten

    import mlx_lm_configs as C

    C.import_mlx_lm()
    from mlx_lm.models import llama
    from mlx_lm.models.cache import make_prompt_cache

    data = np.load(_weights(out))
    prompt = mx.array(np.random.default_rng(1).integers(0, CONFIG["vocab_size"], (1, prompt_len)).astype(np.int32))
    results = {}
    for dtype in ("float32", "bfloat16"):
        model = llama.Model(llama.ModelArgs.from_dict(CONFIG))
        model.update(tree_unflatten([(k, mx.array(data[k]).astype(getattr(mx, dtype))) for k in data.files]))
        mx.eval(model.parameters())
        nparams = sum(data[k].size for k in data.files)
        pre, dec, tokens = [], [], None
        for r in range(rounds + 1):
            cache = make_prompt_cache(model)
            t0 = time.perf_counter()
            logits = model(prompt, cache=cache)
            y = mx.argmax(logits[:, -1, :], axis=-1)
            mx.eval(y)
            t1 = time.perf_counter()
            out_toks = [y.item()]
            for _ in range(gen - 1):
                logits = model(y[:, None], cache=cache)
                y = mx.argmax(logits[:, -1, :], axis=-1)
                mx.eval(y)
                out_toks.append(y.item())
            t2 = time.perf_counter()
            if r:  # round 0 warms up
                pre.append(prompt_len / (t1 - t0))
                dec.append((gen - 1) / (t2 - t1))
            tokens = out_toks
        results[dtype] = dict(prefill_tps=float(np.median(pre)), decode_tps=float(np.median(dec)),
                              prefill_spread=[min(pre), max(pre)], decode_spread=[min(dec), max(dec)],
                              tokens=tokens, params=int(nparams))
        print(f"{backend} {dtype}: prefill {results[dtype]['prefill_tps']:.1f} tok/s, "
              f"decode {results[dtype]['decode_tps']:.1f} tok/s", flush=True)
    with open(os.path.join(out, f"{backend}.json"), "w") as f:
        json.dump(results, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlx-python", help="an interpreter with mlx and mlx-lm (omit: Ember only)")
    ap.add_argument("--out", default=f"/tmp/bench-mlx-lm-{os.environ.get('USER', 'user')}")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", choices=["ember", "mlx"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.worker:
        worker(args.worker, args.out, args.prompt, args.gen, args.rounds)
        return 0
    from machine import LoadMeter

    me = [os.path.abspath(__file__), "--out", args.out, "--prompt", str(args.prompt), "--gen", str(args.gen),
          "--rounds", str(args.rounds)]
    backends = ["ember"] + (["mlx"] if args.mlx_python else [])
    load = LoadMeter()
    for b in backends:
        subprocess.run([args.mlx_python if b == "mlx" else sys.executable] + me + ["--worker", b], check=True)
    other = load.other_cores()
    res = {b: json.load(open(os.path.join(args.out, f"{b}.json"))) for b in backends}
    params = res["ember"]["float32"]["params"]
    print(f"\nllama {params / 1e6:.1f}M parameters, prompt {args.prompt}, greedy decode {args.gen}; "
          f"median of {args.rounds} rounds; other processes kept "
          f"{'?' if other is None else f'{other:.2f}'} cores busy")
    print(f"{'dtype':<10}{'framework':<10}{'prefill tok/s':>15}{'decode tok/s':>14}")
    for dtype in ("float32", "bfloat16"):
        for b in backends:
            r = res[b][dtype]
            print(f"{dtype:<10}{b:<10}{r['prefill_tps']:>15.1f}{r['decode_tps']:>14.1f}")
    if "mlx" in res:
        for dtype in ("float32", "bfloat16"):
            same = res["ember"][dtype]["tokens"] == res["mlx"][dtype]["tokens"]
            print(f"{dtype}: greedy tokens {'identical' if same else 'DIFFER'} on the two frameworks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
