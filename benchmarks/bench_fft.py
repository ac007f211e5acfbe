"""FFT: complex64 transforms of length 2^20 (a power of two) and of the prime
1,000,003 (Bluestein in Ember), plus a batched real transform (rfft of
1024 rows of 4096 float32), beside NumPy, PyTorch, JAX and MLX.

The reference is numpy.fft in float64; results must be within 2e-5 of the
largest magnitude. Run:

    python3 benchmarks/bench_fft.py [--quick] [--only PATTERN] [--json FILE]
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Case, main  # noqa: E402


def complex_signal(n):
    def make(rng):
        x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        return [x.astype(np.complex64)]
    return make


def fft_case(n, label):
    return Case(
        name=f"fft {label} c64",
        metric="ms", amount=1,
        make_inputs=complex_signal(n),
        reference=lambda x: np.fft.fft(x.astype(np.complex128)),
        out_dtype="complex64", rtol=0.0, atol=2e-5,
        impls={
            "numpy": lambda np_, x: (lambda: np_.fft.fft(x)),
            "torch": lambda torch, x: (lambda: torch.fft.fft(x)),
            "jax": lambda jnp, x: (lambda: jnp.fft.fft(x)),
            "mlx": lambda mx, x: (lambda: mx.fft.fft(x)),
        })


def rfft_rows_case():
    return Case(
        name="rfft 1024x4096 f32 rows",
        metric="ms", amount=1,
        make_inputs=lambda rng: [rng.standard_normal((1024, 4096), dtype=np.float32)],
        reference=lambda x: np.fft.rfft(x.astype(np.float64), axis=-1),
        out_dtype="complex64", rtol=0.0, atol=2e-5,
        impls={
            "numpy": lambda np_, x: (lambda: np_.fft.rfft(x, axis=-1)),
            "torch": lambda torch, x: (lambda: torch.fft.rfft(x, dim=-1)),
            "jax": lambda jnp, x: (lambda: jnp.fft.rfft(x, axis=-1)),
            "mlx": lambda mx, x: (lambda: mx.fft.rfft(x, axis=-1)),
        })


CASES = [
    fft_case(1 << 20, "2^20"),
    fft_case(1_000_003, "1,000,003 (prime)"),
    rfft_rows_case(),
]


if __name__ == "__main__":
    sys.exit(main(CASES, title="FFT (bench_fft.py)"))
