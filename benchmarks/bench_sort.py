"""Sorting and scans: sort / argsort of 4M float32 along the last axis, cumsum
of 4096x4096 float32 along each axis, beside NumPy, PyTorch, JAX and MLX.

The 4M floats are sorted as 4096 rows of 1024 and as one row of 4M; their
values are distinct (random normal, duplicates redrawn), so every framework's
argsort has one right answer, checked exactly. Run:

    python3 benchmarks/bench_sort.py [--quick] [--only PATTERN] [--json FILE]
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Case, main  # noqa: E402

F32 = 4
N_SORT = 4 * 1024 * 1024           # 4M elements
ROWS = (4096, 1024)                # ... as 4096 rows of 1024
ONE_ROW = (1, N_SORT)              # ... as one row
SIDE = 4096                        # cumsum: 4096 x 4096


def distinct_normal(rng, shape):
    """Random normal float32 values, all different (ties redrawn)."""
    x = rng.standard_normal(int(np.prod(shape)), dtype=np.float32)
    while True:
        order = np.argsort(x, kind="stable")
        s = x[order]
        dup = order[1:][s[1:] == s[:-1]]
        if dup.size == 0:
            return x.reshape(shape)
        x[dup] = rng.standard_normal(dup.size, dtype=np.float32)


# --- sort / argsort along the last axis ---------------------------------------

def sort_impls(arg):
    if arg:
        return {
            "numpy": lambda np_, x: (lambda: np_.argsort(x, axis=-1)),
            "torch": lambda torch, x: (lambda: torch.argsort(x, dim=-1)),
            "jax": lambda jnp, x: (lambda: jnp.argsort(x, axis=-1)),
            "mlx": lambda mx, x: (lambda: mx.argsort(x, axis=-1)),
        }
    return {
        "numpy": lambda np_, x: (lambda: np_.sort(x, axis=-1)),
        "torch": lambda torch, x: (lambda: torch.sort(x, dim=-1).values),
        "jax": lambda jnp, x: (lambda: jnp.sort(x, axis=-1)),
        "mlx": lambda mx, x: (lambda: mx.sort(x, axis=-1)),
    }


def sort_case(shape, arg):
    what = "argsort" if arg else "sort"
    label = "x".join(str(d) for d in shape) if shape != ONE_ROW else "1x4M"
    return Case(
        name=f"{what} last axis, {label} f32",
        metric="ms", amount=1,
        make_inputs=lambda rng: [distinct_normal(rng, shape)],
        reference=(lambda x: np.argsort(x, axis=-1, kind="stable")) if arg
        else (lambda x: np.sort(x.astype(np.float64), axis=-1)),
        out_dtype=None if arg else "float32",   # index dtypes differ by framework
        note="indices: uint32 (ember, mlx), int64 (numpy, torch), int32 (jax)" if arg else "",
        impls=sort_impls(arg))


# --- cumsum along each axis of 4096 x 4096 ------------------------------------

def square_uniform(rng):
    # positive values: a relative tolerance then means what it says
    return [rng.random((SIDE, SIDE), dtype=np.float32)]


def cumsum_case(axis):
    return Case(
        name=f"cumsum axis {axis}, 4096² f32",
        metric="GB/s", amount=2 * SIDE * SIDE * F32,    # 1 read + 1 write
        make_inputs=square_uniform,
        reference=lambda x: np.cumsum(x.astype(np.float64), axis=axis),
        out_dtype="float32",
        impls={
            "numpy": lambda np_, x: (lambda: np_.cumsum(x, axis=axis)),
            "torch": lambda torch, x: (lambda: torch.cumsum(x, dim=axis)),
            "jax": lambda jnp, x: (lambda: jnp.cumsum(x, axis=axis)),
            "mlx": lambda mx, x: (lambda: mx.cumsum(x, axis=axis)),
        })


CASES = [
    sort_case(ROWS, arg=False),
    sort_case(ONE_ROW, arg=False),
    sort_case(ROWS, arg=True),
    sort_case(ONE_ROW, arg=True),
    cumsum_case(0),
    cumsum_case(1),
]


if __name__ == "__main__":
    sys.exit(main(CASES, title="Sorting and scans (bench_sort.py)"))
