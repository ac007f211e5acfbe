"""Same weights, same mlx-lm model code: logits on MLX and on Ember.

    PYTHONPATH=python python tools/compare_mlx_lm.py --mlx-python /path/to/mlx/bin/python \
        [--out /tmp/compare-mlx-lm-$USER] [--archs llama,qwen3]

Runs itself twice, one process per framework, on the architectures of
``tests/python/mlx_lm_configs.py`` (mlx-lm 0.32.2 must be installed in both
interpreters, ``pip install --no-deps`` is enough):

1. ``--worker ember``: under ``ember.alias_mlx()``, builds each model with
   random weights, writes every parameter and the tokens as ``.npy`` files
   under ``OUT/<arch>/``, and the logits of the full forward and of a cached
   decode (prefill 7 tokens, then one at a time);
2. ``--worker mlx``: under MLX, builds the same models, loads those weights
   from the ``.npy`` files and writes its logits;
3. prints, per architecture and dtype, the largest absolute difference of
   the logits (full forward and cached decode) and the logits' scale; in
   bfloat16, where the two round differently, also each framework's distance
   to MLX's float32 logits. It exits non-zero when a float32 difference
   exceeds ``--tol`` times the scale, or Ember's bfloat16 distance exceeds
   ``--tol-bf16`` times MLX's (plus 1e-3 of the scale).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import numpy as np  # noqa: E402

import mlx_lm_configs as C  # noqa: E402

DTYPES = ("float32", "bfloat16")


def _logits(mx, model, toks):
    from mlx_lm.models.cache import make_prompt_cache

    full = model(toks)
    cache = make_prompt_cache(model)
    outs = [model(toks[:, :7], cache=cache)]
    for i in range(7, toks.shape[1]):
        outs.append(model(toks[:, i:i + 1], cache=cache))
    dec = mx.concatenate(outs, axis=1)
    return np.array(full.astype(mx.float32)), np.array(dec.astype(mx.float32))


def worker(backend, out, archs):
    if backend == "ember":
        import ember

        ember.alias_mlx()
    import mlx.core as mx
    from mlx.utils import tree_flatten, tree_unflatten

    C.import_mlx_lm()
    for arch in archs:
        d = os.path.join(out, arch)
        os.makedirs(d, exist_ok=True)
        for dtype in DTYPES:
            model, _ = C.build(mx, arch, seed=0)
            if backend == "ember" and dtype == "float32":
                np.save(os.path.join(d, "tokens.npy"),
                        np.random.default_rng(1).integers(0, 97, (2, 12)).astype(np.int32))
                for k, v in tree_flatten(model.parameters()):
                    np.save(os.path.join(d, f"w.{k}.npy"), np.array(v))
            names = [k for k, _ in tree_flatten(model.parameters())]
            weights = [(k, mx.array(np.load(os.path.join(d, f"w.{k}.npy"))).astype(getattr(mx, dtype)))
                       for k in names]
            model.update(tree_unflatten(weights))
            toks = mx.array(np.load(os.path.join(d, "tokens.npy")))
            err_file = os.path.join(d, f"{backend}.{dtype}.error.txt")
            if os.path.exists(err_file):
                os.remove(err_file)
            try:
                full, dec = _logits(mx, model, toks)
            except RuntimeError as e:  # a framework without this dtype for an op
                with open(err_file, "w") as f:
                    f.write(f"{type(e).__name__}: {e}")
                continue
            np.save(os.path.join(d, f"{backend}.{dtype}.full.npy"), full)
            np.save(os.path.join(d, f"{backend}.{dtype}.decode.npy"), dec)
        print(f"{backend}: {arch} done", flush=True)


def compare(out, archs, tol):
    rows, bad = [], []
    for arch in archs:
        d = os.path.join(out, arch)
        for dtype in DTYPES:
            errors = [open(p).read() for p in (os.path.join(d, f"{b}.{dtype}.error.txt") for b in ("ember", "mlx"))
                      if os.path.exists(p)]
            if errors:
                rows.append(dict(arch=arch, dtype=dtype, error="; ".join(errors)))
                continue
            e_full, m_full = (np.load(os.path.join(d, f"{b}.{dtype}.full.npy")) for b in ("ember", "mlx"))
            e_dec, m_dec = (np.load(os.path.join(d, f"{b}.{dtype}.decode.npy")) for b in ("ember", "mlx"))
            scale = float(np.abs(m_full).max())
            diff_full = float(np.abs(e_full - m_full).max())
            diff_dec = float(np.abs(e_dec - m_dec).max())
            row = dict(arch=arch, dtype=dtype, scale=scale, full=diff_full, decode=diff_dec)
            if dtype == "float32":
                ok = max(diff_full, diff_dec) <= tol["float32"] * scale
            else:
                # bfloat16 rounds differently in each framework: compare each
                # one's distance to MLX's float32 logits instead
                ref = np.load(os.path.join(d, "mlx.float32.full.npy"))
                row["ember_err"] = float(max(np.abs(e_full - ref).max(), np.abs(e_dec - ref).max()))
                row["mlx_err"] = float(max(np.abs(m_full - ref).max(), np.abs(m_dec - ref).max()))
                ok = row["ember_err"] <= tol["bfloat16"] * row["mlx_err"] + 1e-3 * scale
            rows.append(row)
            if not ok:
                bad.append(f"{arch} {dtype}")
    print(f"{'arch':<18}{'dtype':<10}{'max |logit|':>12}{'full fwd diff':>15}{'decode diff':>14}")
    for r in rows:
        if "error" in r:
            print(f"{r['arch']:<18}{r['dtype']:<10}  not compared: {r['error']}")
            continue
        extra = (f"   vs MLX float32: Ember {r['ember_err']:.3e}, MLX {r['mlx_err']:.3e}"
                 if "ember_err" in r else "")
        print(f"{r['arch']:<18}{r['dtype']:<10}{r['scale']:>12.3f}{r['full']:>15.3e}{r['decode']:>14.3e}{extra}")
    with open(os.path.join(out, "compare.json"), "w") as f:
        json.dump(rows, f, indent=1)
    if bad:
        print("beyond tolerance:", ", ".join(bad))
        return 1
    print(f"all within tolerance (float32: {tol['float32']:g} of max |logit|; bfloat16: distance to the "
          f"float32 logits at most {tol['bfloat16']:g} times MLX's own)")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlx-python", help="an interpreter with mlx and mlx-lm")
    ap.add_argument("--out", default=f"/tmp/compare-mlx-lm-{os.environ.get('USER', 'user')}")
    ap.add_argument("--archs", default=",".join(C.CONFIGS))
    ap.add_argument("--worker", choices=["ember", "mlx"], help=argparse.SUPPRESS)
    ap.add_argument("--tol", type=float, default=1e-4, help="float32 tolerance, relative to max |logit|")
    ap.add_argument("--tol-bf16", type=float, default=2.0,
                    help="bfloat16: Ember's distance to the float32 logits, at most this times MLX's")
    args = ap.parse_args()
    archs = [a for a in args.archs.split(",") if a]
    if args.worker:
        worker(args.worker, args.out, archs)
        return 0
    if not args.mlx_python:
        ap.error("--mlx-python is required")
    os.makedirs(args.out, exist_ok=True)
    me = [os.path.abspath(__file__), "--out", args.out, "--archs", ",".join(archs)]
    subprocess.run([sys.executable] + me + ["--worker", "ember"], check=True)
    subprocess.run([args.mlx_python] + me + ["--worker", "mlx"], check=True)
    return compare(args.out, archs, {"float32": args.tol, "bfloat16": args.tol_bf16})


if __name__ == "__main__":
    sys.exit(main())
