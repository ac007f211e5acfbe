"""Linear algebra: linalg.svd of a 512x512 float32 matrix (full U/S/Vt, and
singular values only), beside NumPy, PyTorch, JAX and MLX (MLX on its CPU
stream: its LAPACK ops run only there).

Singular vectors carry a sign per pair that frameworks choose differently,
so the full SVD is timed as a whole and checked through its singular values
(the whole decomposition is computed either way). Run:

    python3 benchmarks/bench_linalg.py [--quick] [--only PATTERN] [--json FILE]
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Case, main  # noqa: E402

N = 512


def matrix(rng):
    return [rng.standard_normal((N, N), dtype=np.float32)]


def svd_case(compute_uv):
    if compute_uv:
        impls = {
            "numpy": lambda np_, x: (lambda: np_.linalg.svd(x)[1]),
            "torch": lambda torch, x: (lambda: torch.linalg.svd(x)[1]),
            "jax": lambda jnp, x: (lambda: jnp.linalg.svd(x)[1]),
            "mlx": lambda mx, x: (lambda: mx.linalg.svd(x, stream=mx.cpu)[1]),
        }
    else:
        impls = {
            "numpy": lambda np_, x: (lambda: np_.linalg.svd(x, compute_uv=False)),
            "torch": lambda torch, x: (lambda: torch.linalg.svdvals(x)),
            "jax": lambda jnp, x: (lambda: jnp.linalg.svd(x, compute_uv=False)),
            "mlx": lambda mx, x: (lambda: mx.linalg.svd(x, compute_uv=False, stream=mx.cpu)),
        }
    return Case(
        name=f"svd {N}x{N} f32" + ("" if compute_uv else ", values only"),
        metric="ms", amount=1,
        make_inputs=matrix,
        reference=lambda x: np.linalg.svd(x.astype(np.float64), compute_uv=False),
        rtol=1e-4, atol=1e-5, out_dtype="float32",
        note="U, S, Vt computed; S checked" if compute_uv else "",
        impls=impls)


CASES = [svd_case(True), svd_case(False)]


if __name__ == "__main__":
    sys.exit(main(CASES, title="Linear algebra (bench_linalg.py)"))
