"""Ember core: elementwise chain, reductions, softmax, graph overhead.

Each workload in every framework's idiomatic eager form, plus a compiled row
(mx.compile / jax.jit / torch.compile) for the chain and for softmax, as in
the peer table of PERFORMANCE.md. Run:

    python3 benchmarks/bench_core.py [--quick] [--only PATTERN] [--json FILE]
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Case, main  # noqa: E402

F32 = 4
N_CHAIN = 4 * 1024 * 1024          # 4M elements
SIDE = 4096                        # 4096 x 4096
N_ADDS = 1000


# --- 1. elementwise chain: tanh(x*2+1)*sigmoid(x) - x/3 --------------------

def chain_inputs(rng):
    return [rng.standard_normal(N_CHAIN, dtype=np.float32)]


def chain_ref(x):
    x = x.astype(np.float64)
    return np.tanh(x * 2 + 1) * (1 / (1 + np.exp(-x))) - x / 3


def chain_numpy(np_, x):
    return lambda: np_.tanh(x * 2 + 1) * (1 / (1 + np_.exp(-x))) - x / 3


def chain_torch(torch, x):
    return lambda: torch.tanh(x * 2 + 1) * torch.sigmoid(x) - x / 3


def _chain_jax(x):
    import jax
    import jax.numpy as jnp
    return jnp.tanh(x * 2 + 1) * jax.nn.sigmoid(x) - x / 3


def chain_jax(jnp, x):
    return lambda: _chain_jax(x)


def chain_mlx(mx, x):
    return lambda: mx.tanh(x * 2 + 1) * mx.sigmoid(x) - x / 3


def chain_torch_compiled(torch, x):
    f = torch.compile(lambda x: torch.tanh(x * 2 + 1) * torch.sigmoid(x) - x / 3)
    return lambda: f(x)


def chain_jax_jit(jnp, x):
    import jax
    f = jax.jit(_chain_jax)
    return lambda: f(x)


def chain_mlx_compiled(mx, x):
    f = mx.compile(lambda x: mx.tanh(x * 2 + 1) * mx.sigmoid(x) - x / 3)
    return lambda: f(x)


# --- 2. sums over each axis of 4096 x 4096 -----------------------------------

def square_uniform(rng):
    # Positive values: a relative tolerance then means what it says.
    return [rng.random((SIDE, SIDE), dtype=np.float32)]


def square_normal(rng):
    return [rng.standard_normal((SIDE, SIDE), dtype=np.float32)]


def sum_case(axis):
    return Case(
        name=f"sum axis {axis}, 4096² f32",
        metric="GB/s", amount=SIDE * SIDE * F32,         # input read
        make_inputs=square_uniform,
        reference=lambda x: x.astype(np.float64).sum(axis=axis),
        out_dtype="float32",
        impls={
            "numpy": lambda np_, x: (lambda: np_.sum(x, axis=axis)),
            "torch": lambda torch, x: (lambda: torch.sum(x, dim=axis)),
            "jax": lambda jnp, x: (lambda: jnp.sum(x, axis=axis)),
            "mlx": lambda mx, x: (lambda: mx.sum(x, axis=axis)),
        })


# --- 3. softmax over the last axis -------------------------------------------

def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_numpy(np_, x):
    def f():
        e = np_.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    return f


def softmax_jax(jnp, x):
    import jax
    return lambda: jax.nn.softmax(x, axis=-1)


def softmax_torch_compiled(torch, x):
    f = torch.compile(lambda x: torch.softmax(x, dim=-1))
    return lambda: f(x)


def softmax_jax_jit(jnp, x):
    import jax
    f = jax.jit(lambda x: jax.nn.softmax(x, axis=-1))
    return lambda: f(x)


def softmax_mlx_compiled(mx, x):
    f = mx.compile(lambda x: mx.softmax(x, axis=-1))
    return lambda: f(x)


# --- 4. 1,000 chained scalar adds (graph building + eval, end to end) -------

def adds_inputs(rng):
    return [np.zeros((), dtype=np.float32)]


def adds(x):
    def f():
        y = x
        for _ in range(N_ADDS):
            y = y + 1.0
        return y
    return f


# ---------------------------------------------------------------------------

CASES = [
    Case(name="chain 4M f32", metric="GB/s", amount=2 * N_CHAIN * F32,
         make_inputs=chain_inputs, reference=chain_ref, out_dtype="float32",
         note="tanh(x*2+1)*sigmoid(x) - x/3; 1 read + 1 write",
         impls={"numpy": chain_numpy, "torch": chain_torch, "jax": chain_jax,
                "mlx": chain_mlx}),
    Case(name="chain 4M f32 (compiled)", metric="GB/s", amount=2 * N_CHAIN * F32,
         make_inputs=chain_inputs, reference=chain_ref, out_dtype="float32",
         impls={"torch": chain_torch_compiled, "jax": chain_jax_jit,
                "mlx": chain_mlx_compiled}),
    sum_case(0),
    sum_case(1),
    Case(name="softmax last axis, 4096² f32", metric="GB/s",
         amount=2 * SIDE * SIDE * F32,
         make_inputs=square_normal, reference=softmax_ref, out_dtype="float32",
         impls={"numpy": softmax_numpy,
                "torch": lambda torch, x: (lambda: torch.softmax(x, dim=-1)),
                "jax": softmax_jax,
                "mlx": lambda mx, x: (lambda: mx.softmax(x, axis=-1))}),
    Case(name="softmax last axis, 4096² f32 (compiled)", metric="GB/s",
         amount=2 * SIDE * SIDE * F32,
         make_inputs=square_normal, reference=softmax_ref, out_dtype="float32",
         impls={"torch": softmax_torch_compiled, "jax": softmax_jax_jit,
                "mlx": softmax_mlx_compiled}),
    Case(name="1,000 chained scalar adds", metric="µs/op", amount=N_ADDS,
         make_inputs=adds_inputs, reference=lambda x: np.float64(N_ADDS),
         out_dtype="float32", rtol=0, atol=0,
         impls={fw: (lambda m, x: adds(x))
                for fw in ("numpy", "torch", "jax", "mlx")}),
]


if __name__ == "__main__":
    sys.exit(main(CASES, title="Ember core (bench_core.py)"))
