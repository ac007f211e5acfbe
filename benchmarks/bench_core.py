"""Ember core: elementwise chain, reductions, softmax, graph overhead.

Each workload in every framework's idiomatic eager form, plus a compiled row
(Ember's and MLX's mx.compile / jax.jit / torch.compile) for the chain and for softmax, as in
the peer table of PERFORMANCE.md. Sums and softmax run on 4096x4096, on short
rows (8, 64 and 1000 elements; 8M elements in all) and on strided views
(every other column, transposed) of 8M elements. Run:

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


def _chain_jax(jnp, x):
    import jax
    return jnp.tanh(x * 2 + 1) * jax.nn.sigmoid(x) - x / 3


# framework -> the chain of its ops, f(m, x); NumPy's in float64 is the reference
CHAIN = {
    "numpy": lambda np_, x: np_.tanh(x * 2 + 1) * (1 / (1 + np_.exp(-x))) - x / 3,
    "torch": lambda torch, x: torch.tanh(x * 2 + 1) * torch.sigmoid(x) - x / 3,
    "jax": _chain_jax,
    "mlx": lambda mx, x: mx.tanh(x * 2 + 1) * mx.sigmoid(x) - x / 3,
}


def chain_ref(x):
    return CHAIN["numpy"](np, x.astype(np.float64))


def chain_inputs_f16(rng):
    return [rng.standard_normal(N_CHAIN, dtype=np.float32).astype(np.float16)]


# --- eager and compiled implementations from f(m, x) ------------------------

def _jax_jit(jnp, f):
    import jax
    return jax.jit(f)


COMPILERS = {"torch": lambda torch, f: torch.compile(f), "jax": _jax_jit,
             "mlx": lambda mx, f: mx.compile(f), "ember": lambda mx, f: mx.compile(f)}


def eager(fns):
    """{framework: f(m, x)} as implementations that run f(m, x) eagerly."""
    def make(f):
        return lambda m, x: (lambda: f(m, x))
    return {fw: make(f) for fw, f in fns.items()}


def compiled(fns):
    """{framework: f(m, x)} as implementations that run x -> f(m, x) through
    torch.compile / jax.jit / mx.compile, Ember's and MLX's (frameworks without one dropped)."""
    def make(fw, f):
        def impl(m, x):
            g = COMPILERS[fw](m, lambda x: f(m, x))
            return lambda: g(x)
        return impl
    return {fw: make(fw, f) for fw, f in fns.items() if fw in COMPILERS}


# --- 2./3. sums and softmax: 4096 x 4096, short rows, strided views ---------
#
# One helper makes every reduction row: `op` ("sum" or "softmax") over
# `axis` of a float32 input of `shape`, optionally seen through a strided
# view. Short rows (8, 64, 1000 elements) test the per-row overhead; the views
# test inputs that are not contiguous along the reduced axis. A view is taken
# inside the timed function, as user code would (free in NumPy, PyTorch, MLX
# and Ember; a copy in eager JAX, fused under jit).

ROW_ELEMENTS = 8 * 1024 * 1024     # short-row inputs: 32 MB of float32 each
ROW_LENGTHS = (8, 64, 1000)

VIEWS = {
    # name -> (label in the row name, view(x), shape of the base for a view of 8M elements)
    "every other column": ("x[:, ::2] of", lambda x: x[:, ::2], (2048, 8192)),
    "transposed": ("x.T of", lambda x: x.T, (2048, 4096)),
}


def uniform(shape):
    # Positive values: a relative tolerance then means what it says.
    return lambda rng: [rng.random(shape, dtype=np.float32)]


def normal(shape):
    return lambda rng: [rng.standard_normal(shape, dtype=np.float32)]


def softmax_numpy(np_, x):
    e = np_.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_ref(x):
    return softmax_numpy(np, x.astype(np.float64))


def _jax_softmax(jnp, x):
    import jax
    return jax.nn.softmax(x, axis=-1)


# op -> (input maker, reference(x, axis), {framework: op(m, x, axis)}, bytes moved / input bytes)
OPS = {
    "sum": (uniform, lambda x, axis: x.astype(np.float64).sum(axis=axis), {
        "numpy": lambda np_, x, axis: np_.sum(x, axis=axis),
        "torch": lambda torch, x, axis: torch.sum(x, dim=axis),
        "jax": lambda jnp, x, axis: jnp.sum(x, axis=axis),
        "mlx": lambda mx, x, axis: mx.sum(x, axis=axis),
    }, 1),                                               # the input read
    "softmax": (normal, lambda x, axis: softmax_ref(x), {
        "numpy": lambda np_, x, axis: softmax_numpy(np_, x),
        "torch": lambda torch, x, axis: torch.softmax(x, dim=-1),
        "jax": lambda jnp, x, axis: _jax_softmax(jnp, x),
        "mlx": lambda mx, x, axis: mx.softmax(x, axis=-1),
    }, 2),                                               # 1 read + 1 write
}


def reduce_case(op, shape, axis=-1, view=None):
    """`op` over `axis` of `shape` float32 (of VIEWS[view](x) when a view is
    named: `shape` is then the base's), eager in every framework."""
    make, reference, fns, moved = OPS[op]
    assert op == "sum" or axis == -1, "softmax rows are over the last axis"
    label, see, _ = VIEWS[view] if view else ("", lambda x: x, None)
    elements = see(np.broadcast_to(np.float32(0), shape)).size   # of the view
    where = "last axis" if axis == -1 else f"axis {axis}"
    dims = f"{shape[0]}²" if len(set(shape)) == 1 else "×".join(map(str, shape))
    return Case(
        name=f"{op} {where}, {label + ' ' if label else ''}{dims} f32",
        metric="GB/s", amount=moved * elements * F32,
        make_inputs=make(shape),
        reference=lambda x: reference(see(x), axis),
        out_dtype="float32",
        note=f"bytes: {'the input read' if moved == 1 else '1 read + 1 write'} of the elements used",
        impls=eager({fw: on_view(f, see, axis) for fw, f in fns.items()}))


def on_view(f, see, axis):
    """f(m, x, axis) as g(m, x) = f(m, see(x), axis)."""
    return lambda m, x: f(m, see(x), axis)


def short_rows(op):
    """`op` over rows of 8, 64 and 1000 elements (ROW_ELEMENTS // n rows)."""
    return [reduce_case(op, (ROW_ELEMENTS // n, n)) for n in ROW_LENGTHS]


def strided(op):
    """`op` over the last axis of each of VIEWS."""
    return [reduce_case(op, base, view=v) for v, (_, _, base) in VIEWS.items()]


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
         note="tanh(x*2+1)*sigmoid(x) - x/3; 1 read + 1 write", impls=eager(CHAIN)),
    Case(name="chain 4M f32 (compiled)", metric="GB/s", amount=2 * N_CHAIN * F32,
         make_inputs=chain_inputs, reference=chain_ref, out_dtype="float32",
         impls=compiled(CHAIN)),
    # float16: each op rounds its result to float16 (x/3 near 5 is a step of 2^-8)
    Case(name="chain 4M f16", metric="GB/s", amount=2 * N_CHAIN * 2,
         make_inputs=chain_inputs_f16, reference=chain_ref, out_dtype="float16", rtol=1e-2, atol=8e-3,
         note="the chain above on float16 arrays", impls=eager(CHAIN)),
    reduce_case("sum", (SIDE, SIDE), axis=0),
    reduce_case("sum", (SIDE, SIDE), axis=1),
    *short_rows("sum"),
    *strided("sum"),
    reduce_case("softmax", (SIDE, SIDE)),
    Case(name="softmax last axis, 4096² f32 (compiled)", metric="GB/s",
         amount=2 * SIDE * SIDE * F32,
         make_inputs=normal((SIDE, SIDE)), reference=softmax_ref, out_dtype="float32",
         impls=compiled({fw: on_view(f, lambda x: x, -1) for fw, f in OPS["softmax"][2].items()})),
    *short_rows("softmax"),
    *strided("softmax"),
    Case(name="1,000 chained scalar adds", metric="µs/op", amount=N_ADDS,
         make_inputs=adds_inputs, reference=lambda x: np.float64(N_ADDS),
         out_dtype="float32", rtol=0, atol=0,
         impls={fw: (lambda m, x: adds(x))
                for fw in ("numpy", "torch", "jax", "mlx")}),
]


if __name__ == "__main__":
    sys.exit(main(CASES, title="Ember core (bench_core.py)"))
