"""Random numbers: 16M float32 standard normals and 16M float32 uniforms,
beside NumPy (default_rng), PyTorch, JAX and MLX.

Each framework draws from its own generator, so the outputs cannot be
compared value by value: the result check is replaced, for these cases, by
a check of shape, dtype and moments (mean, variance, and for normals the
fraction beyond 2 sigma; for uniforms the range) with bounds a correct
generator meets with overwhelming probability at this size. Run:

    python3 benchmarks/bench_random.py [--quick] [--only PATTERN] [--json FILE]
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Case, main  # noqa: E402

N = 16 * 1024 * 1024


def _moments(kind):
    def stats(x):
        x = np.asarray(x, dtype=np.float64).ravel()
        if kind == "normal":
            return {"mean": (x.mean(), 0.0, 1e-3), "var": (x.var(), 1.0, 2e-3),
                    "tail2": (np.mean(np.abs(x) > 2), 0.0455003, 5e-4)}
        return {"mean": (x.mean(), 0.5, 1e-3), "var": (x.var(), 1 / 12, 1e-3),
                "min": (x.min(), 0.0, 1e-5), "max": (x.max(), 1.0, 1e-5)}
    return stats


STATS = {}
_value_check = harness.check


def stat_check(adapter, case, out, ref):
    """Moments instead of values for the random cases (see the docstring)."""
    if case.name not in STATS:
        return _value_check(adapter, case, out, ref)
    g = adapter.to_numpy(out)
    if g.shape != (N,):
        return f"shape {g.shape}, expected {(N,)}"
    if g.dtype.name != "float32":
        return f"dtype {g.dtype.name}, expected float32"
    if STATS[case.name] == "uniform" and (g.min() < 0 or g.max() >= 1):
        return f"values outside [0, 1): min {g.min()}, max {g.max()}"
    for name, (got, want, tol) in _moments(STATS[case.name])(g).items():
        if abs(got - want) > tol:
            return f"{name} = {got:.6g}, expected {want:.6g} +- {tol:g}"
    return None


harness.check = stat_check   # time_case looks it up in the harness module


def _jax_sampler(which):
    def make(jnp, _):
        import jax
        key = jax.random.key(0)
        if which == "normal":
            f = jax.jit(lambda k: jax.random.normal(k, (N,), dtype=jnp.float32))
        else:
            f = jax.jit(lambda k: jax.random.uniform(k, (N,), dtype=jnp.float32))
        return lambda: f(key)
    return make


def _torch_sampler(which):
    def make(torch, _):
        g = torch.Generator().manual_seed(0)
        if which == "normal":
            return lambda: torch.randn(N, generator=g, dtype=torch.float32)
        return lambda: torch.rand(N, generator=g, dtype=torch.float32)
    return make


def _numpy_sampler(which):
    def make(np_, _):
        rng = np_.random.default_rng(0)
        if which == "normal":
            return lambda: rng.standard_normal(N, dtype=np_.float32)
        return lambda: rng.random(N, dtype=np_.float32)
    return make


def _mlx_sampler(which):
    def make(mx, _):
        key = mx.random.key(0)
        if which == "normal":
            return lambda: mx.random.normal((N,), key=key)
        return lambda: mx.random.uniform(shape=(N,), key=key)
    return make


def random_case(which):
    name = f"{which} 16M f32"
    STATS[name] = which
    return Case(
        name=name, metric="ms", amount=1,
        make_inputs=lambda rng: [np.zeros(1, np.float32)],
        reference=lambda _: np.zeros(N, np.float32),   # unused: moments are checked
        note="checked by moments, not values",
        impls={"numpy": _numpy_sampler(which), "torch": _torch_sampler(which),
               "jax": _jax_sampler(which), "mlx": _mlx_sampler(which)})


CASES = [random_case("normal"), random_case("uniform")]


if __name__ == "__main__":
    sys.exit(main(CASES, title="Random numbers (bench_random.py)"))
