"""Gather and scatter: take of 1M random indices from a 16M float32 array,
scatter-add of 1M updates (repeated indices accumulate), and a gather by a
boolean-free NumPy-style advanced index on a 2-d array. Run:

    python3 benchmarks/bench_index.py [--quick] [--only PATTERN] [--json FILE]
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Case, main  # noqa: E402

N_SRC = 16 * 1024 * 1024   # 16M float32 source
N_IDX = 1024 * 1024        # 1M indices / updates
N_DST = 1024 * 1024        # scatter destination
ROWS, COLS = 65536, 256    # row gather: 64k x 256 f32 (64 MiB)
F32, I32 = 4, 4


def take_inputs(rng):
    x = rng.standard_normal(N_SRC, dtype=np.float32)
    idx = rng.integers(0, N_SRC, N_IDX).astype(np.int32)
    return [x, idx]


def scatter_inputs(rng):
    x = rng.standard_normal(N_DST, dtype=np.float32)
    idx = rng.integers(0, N_DST, N_IDX).astype(np.int32)
    upd = rng.standard_normal(N_IDX, dtype=np.float32)
    return [x, idx, upd]


def rows_inputs(rng):
    x = rng.standard_normal((ROWS, COLS), dtype=np.float32)
    idx = rng.integers(0, ROWS, 16384).astype(np.int32)
    return [x, idx]


def scatter_ref(x, idx, upd):
    y = x.astype(np.float64)
    np.add.at(y, idx, upd.astype(np.float64))
    return y


def scatter_numpy(np_, x, idx, upd):
    def run():
        y = x.copy()
        np_.add.at(y, idx, upd)
        return y
    return run


def scatter_torch(torch, x, idx, upd):
    li = idx.long()
    return lambda: x.index_add(0, li, upd)


def scatter_jax(jnp, x, idx, upd):
    import jax
    f = jax.jit(lambda x, i, u: x.at[i].add(u))
    return lambda: f(x, idx, upd)


CASES = [
    Case(name="take 1M of 16M f32", metric="GB/s", amount=N_IDX * (F32 + I32 + F32),
         make_inputs=take_inputs, reference=lambda x, i: x[i].astype(np.float64),
         out_dtype="float32", note="bytes: indices read + values read + written",
         impls={"numpy": lambda np_, x, i: (lambda: np_.take(x, i)),
                "torch": lambda torch, x, i: (lambda li=i.long(): torch.take(x, li)),
                "jax": lambda jnp, x, i: (lambda: jnp.take(x, i)),
                "mlx": lambda mx, x, i: (lambda: mx.take(x, i))}),
    Case(name="scatter-add 1M into 1M f32", metric="ms", amount=1,
         make_inputs=scatter_inputs, reference=scatter_ref, out_dtype="float32",
         rtol=1e-5, atol=1e-5, note="out of place; repeated indices accumulate",
         impls={"numpy": scatter_numpy, "torch": scatter_torch, "jax": scatter_jax,
                "mlx": lambda mx, x, i, u: (lambda: x.at[i].add(u))}),
    Case(name="rows x[idx] 16k of 64k×256 f32", metric="GB/s", amount=16384 * COLS * F32 * 2,
         make_inputs=rows_inputs, reference=lambda x, i: x[i].astype(np.float64),
         out_dtype="float32", note="row gather; bytes read + written",
         impls={"numpy": lambda np_, x, i: (lambda: x[i]),
                "torch": lambda torch, x, i: (lambda li=i.long(): x[li]),
                "jax": lambda jnp, x, i: (lambda: x[i]),
                "mlx": lambda mx, x, i: (lambda: x[i])}),
]


if __name__ == "__main__":
    sys.exit(main(CASES, title="Ember indexing (bench_index.py)"))
