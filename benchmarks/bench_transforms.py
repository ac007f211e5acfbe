"""Ember transforms: per-example gradients (vmap of grad) and the overhead of
value_and_grad on a small MLP step, beside MLX, JAX and torch.func. Run:

    python3 benchmarks/bench_transforms.py [--quick] [--only PATTERN] [--json FILE]

The per-example row jits JAX (how JAX is used; Ember, MLX and torch.func run
eagerly), and a second row compiles Ember's and MLX's (mx.compile) and
torch.func's (torch.compile) beside the same jitted JAX. The MLP step runs
eagerly everywhere, transforming the Python function on every call, and again
compiled (mx.compile / jax.jit / torch.compile).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Case, main  # noqa: E402

BATCH, DIM = 512, 1024
MLP = (64, 128, 128, 10)   # input, hidden, hidden, classes
MLP_BATCH = 32


# --- 1. per-example gradients of a linear least-squares model ---------------

def pe_inputs(rng):
    w = rng.standard_normal(DIM, dtype=np.float32) / np.float32(np.sqrt(DIM))
    x = rng.standard_normal((BATCH, DIM), dtype=np.float32)
    y = rng.standard_normal(BATCH, dtype=np.float32)
    return [w, x, y]


def pe_ref(w, x, y):
    w, x, y = (a.astype(np.float64) for a in (w, x, y))
    r = x @ w - y
    return 2 * r[:, None] * x


def _pe_loss(m):
    """The squared error of one example, in module `m`'s ops."""
    return lambda w, xi, yi: m.square(m.sum(xi * w) - yi)


def pe_mlx(mx, w, x, y, jit=False):
    f = mx.vmap(mx.grad(_pe_loss(mx)), in_axes=(None, 0, 0))
    if jit:
        f = mx.compile(f)
    return lambda: f(w, x, y)


def pe_jax(jnp, w, x, y):
    import jax
    f = jax.jit(jax.vmap(jax.grad(_pe_loss(jnp)), in_axes=(None, 0, 0)))
    return lambda: f(w, x, y)


def pe_torch(torch, w, x, y, jit=False):
    from torch.func import grad, vmap
    f = vmap(grad(_pe_loss(torch)), in_dims=(None, 0, 0))
    if jit:
        f = torch.compile(f)
    return lambda: f(w, x, y)


# --- 2. value_and_grad of a 3-layer MLP (cross-entropy) ---------------------

def mlp_inputs(rng):
    arrs = []
    for a, b in zip(MLP[:-1], MLP[1:]):
        arrs.append((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32))
        arrs.append(np.zeros(b, np.float32) + np.float32(0.01))
    arrs.append(rng.standard_normal((MLP_BATCH, MLP[0]), dtype=np.float32))
    arrs.append(np.eye(MLP[-1], dtype=np.float32)[rng.integers(0, MLP[-1], MLP_BATCH)])  # one-hot labels
    return arrs


def _mlp_forward(xp, params, x, relu, logsumexp):
    h = x
    n = len(params) // 2
    for i in range(n):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < n - 1:
            h = relu(h)
    return h


def mlp_ref(*arrs):
    params = [a.astype(np.float64) for a in arrs[:-2]]
    x, y = (a.astype(np.float64) for a in arrs[-2:])
    acts = [x]
    h = x
    n = len(params) // 2
    for i in range(n):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < n - 1:
            h = np.maximum(h, 0)
        acts.append(h)
    logits = h
    m = logits.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(logits - m).sum(axis=1))
    loss = np.mean(lse - (logits * y).sum(axis=1))
    p = np.exp(logits - lse[:, None])
    d = (p - y) / x.shape[0]
    grads = [None] * len(params)
    for i in reversed(range(n)):
        a_in = acts[i]
        grads[2 * i] = a_in.T @ d
        grads[2 * i + 1] = d.sum(axis=0)
        if i > 0:
            d = (d @ params[2 * i].T) * (acts[i] > 0)
    return (loss, *grads)


def _mlp_step(m, value_and_grad, compile_fn, logsumexp, arrs, jit):
    """One value_and_grad step of the MLP's loss, (loss, *grads), in an
    MLX-like API (module `m` and its transforms); compiled when `jit`."""
    params, x, y = list(arrs[:-2]), arrs[-2], arrs[-1]

    def loss(params, x, y):
        logits = _mlp_forward(m, params, x, lambda h: m.maximum(h, 0), logsumexp)
        return m.mean(logsumexp(logits, axis=1) - m.sum(logits * y, axis=1))
    vg = value_and_grad(loss)
    if jit:
        vg = compile_fn(vg)

    def step():
        v, g = vg(params, x, y)
        return (v, *g)
    return step


def mlp_mlx(mx, *arrs, jit=False):
    # mx.compile looked up only when used: Ember has none yet
    return _mlp_step(mx, mx.value_and_grad, lambda f: mx.compile(f), mx.logsumexp, arrs, jit)


def mlp_jax(jnp, *arrs, jit=False):
    import jax
    return _mlp_step(jnp, jax.value_and_grad, jax.jit, jax.nn.logsumexp, arrs, jit)


def mlp_torch(torch, *arrs, jit=False):
    from torch.func import grad_and_value
    params, x, y = list(arrs[:-2]), arrs[-2], arrs[-1]

    def loss(params, x, y):
        logits = _mlp_forward(torch, params, x, torch.relu, None)
        return torch.mean(torch.logsumexp(logits, dim=1) - torch.sum(logits * y, dim=1))
    gv = grad_and_value(loss)
    if jit:
        gv = torch.compile(gv)

    def step():
        g, v = gv(params, x, y)
        return (v, *g)
    return step


CASES = [
    Case(name=f"per-example grads vmap(grad), linear {BATCH}x{DIM}", metric="ms", amount=1,
         make_inputs=pe_inputs, reference=pe_ref, out_dtype="float32",
         impls={"mlx": pe_mlx, "jax": pe_jax, "torch": pe_torch}),
    Case(name=f"per-example grads vmap(grad), linear {BATCH}x{DIM} (compiled)", metric="ms", amount=1,
         make_inputs=pe_inputs, reference=pe_ref, out_dtype="float32",
         impls={"mlx": lambda mx, *a: pe_mlx(mx, *a, jit=True), "jax": pe_jax,
                "torch": lambda torch, *a: pe_torch(torch, *a, jit=True)}),
    Case(name="value_and_grad 3-layer MLP step (64-128-128-10, batch 32)", metric="µs/op", amount=1,
         make_inputs=mlp_inputs, reference=mlp_ref, out_dtype="float32", rtol=1e-4, atol=1e-5,
         impls={"mlx": mlp_mlx, "jax": mlp_jax, "torch": mlp_torch}),
    Case(name="value_and_grad 3-layer MLP step (compiled)", metric="µs/op", amount=1,
         make_inputs=mlp_inputs, reference=mlp_ref, out_dtype="float32", rtol=1e-4, atol=1e-5,
         impls={"mlx": lambda mx, *a: mlp_mlx(mx, *a, jit=True), "jax": lambda jnp, *a: mlp_jax(jnp, *a, jit=True),
                "torch": lambda torch, *a: mlp_torch(torch, *a, jit=True)}),
]

if __name__ == "__main__":
    main(CASES, title="Ember transforms (bench_transforms.py)")
