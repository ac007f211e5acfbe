"""Compiled elementwise chains: Ember's fused kernels beside JAX jit,
torch.compile and MLX compile, each framework in its own process. Run:

    PYTHONPATH=python /path/to/peers/bin/python benchmarks/bench_compile.py [--quick] [--rounds 3]

Workloads (float32): the chain tanh(x*2+1)*sigmoid(x) - x/3 on 4M elements,
a 10-op multiply/add chain, GELU (erf form), softmax over 4096x4096 and a
layer norm over rows of 1024 (compiled: one row program, both reductions
and the normalization in one kernel per row), each beside the eager form and a plain copy (the
machine's DRAM copy bandwidth: 1 read + 1 write of 64 MB). Ember's compiled
rows run `mx.compile` of the same function as MLX's (traced once, then
replayed: the fused kernel and the unfused rest). Under the table: the first call of the 10-op chain in a
fresh process, with a cold and a warm kernel cache.
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Case, Extras, main  # noqa: E402

F32 = 4
N = 4 * 1024 * 1024
N_COPY = 16 * 1024 * 1024
SIDE = 4096
LN_ROWS, LN_DIM = 4096, 1024


def _erf(m):
    if m.__name__.startswith("jax"):
        import jax
        return jax.scipy.special.erf
    if m.__name__ == "numpy":  # the reference
        try:
            from scipy.special import erf
            return erf
        except ImportError:
            import math
            return np.vectorize(math.erf)
    return m.erf


def _sigmoid(m):
    if m.__name__.startswith("jax"):
        import jax
        return jax.nn.sigmoid
    if m.__name__ == "numpy":
        return lambda x: 1 / (1 + m.exp(-x))
    return m.sigmoid


def chain(m, x):
    return m.tanh(x * 2 + 1) * _sigmoid(m)(x) - x / 3


def muladd10(m, x):
    for k in range(5):
        x = x * (1.0 + 0.01 * k) + 0.5
    return x


def gelu(m, x):
    return x * 0.5 * (1 + _erf(m)(x * 0.7071067811865476))


def softmax(m, x):
    if m.__name__.startswith("jax"):
        import jax
        return jax.nn.softmax(x, axis=-1)
    if m.__name__ == "torch":
        return m.softmax(x, dim=-1)
    if m.__name__ == "numpy":
        e = m.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    return m.softmax(x, axis=-1)


def layer_norm(m, x, w, b):
    if m.__name__ == "torch":
        mu = x.mean(dim=-1, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    else:
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) * (x - mu)).mean(axis=-1, keepdims=True)
    return (x - mu) * (1 / m.sqrt(var + 1e-5)) * w + b


def copy(m, x):
    if m.__name__ == "torch":
        return x.clone()
    if m.__name__.startswith("jax"):
        return m.array(x, copy=True)
    return m.array(x, copy=True) if m.__name__ == "numpy" else x + 0


FRAMEWORKS = ("numpy", "torch", "jax", "mlx", "ember")


def _compiler(fw, m):
    if fw == "jax":
        import jax
        return jax.jit
    if fw == "torch":
        return m.compile
    if fw in ("mlx", "ember"):
        return m.compile
    return None


def eager(f, frameworks=FRAMEWORKS):
    return {fw: (lambda m, *xs: (lambda: f(m, *xs))) for fw in frameworks}


def compiled(f):
    def peer(fw):
        def impl(m, *xs):
            g = _compiler(fw, m)(lambda *a: f(m, *a))
            return lambda: g(*xs)
        return impl

    return {fw: peer(fw) for fw in ("torch", "jax", "mlx", "ember")}


def normal(*shapes):
    return lambda rng: [rng.standard_normal(s, dtype=np.float32) for s in shapes]


def ln_inputs(rng):
    return [rng.standard_normal((LN_ROWS, LN_DIM), dtype=np.float32),
            rng.standard_normal(LN_DIM, dtype=np.float32),
            rng.standard_normal(LN_DIM, dtype=np.float32)]


def ref(f):
    return lambda *xs: f(np, *[x.astype(np.float64) for x in xs])


def rows(name, f, inputs, amount):
    return [Case(name=name, metric="GB/s", amount=amount, make_inputs=inputs, reference=ref(f),
                 out_dtype="float32", impls=eager(f)),
            Case(name=name + " (compiled)", metric="GB/s", amount=amount, make_inputs=inputs,
                 reference=ref(f), out_dtype="float32", impls=compiled(f))]


CASES = [
    Case(name="copy 16M f32 (DRAM copy bandwidth)", metric="GB/s", amount=2 * N_COPY * F32,
         make_inputs=normal(N_COPY), reference=lambda x: x, out_dtype="float32", impls=eager(copy)),
    *rows("tanh(x*2+1)*sigmoid(x) - x/3, 4M f32", chain, normal(N), 2 * N * F32),
    *rows("10-op mul/add chain, 4M f32", muladd10, normal(N), 2 * N * F32),
    *rows("GELU (erf), 4M f32", gelu, normal(N), 2 * N * F32),
    *rows("softmax 4096² f32", softmax, normal((SIDE, SIDE)), 2 * SIDE * SIDE * F32),
    *rows("layer norm 4096x1024 f32", layer_norm, ln_inputs, 2 * LN_ROWS * LN_DIM * F32),
]

FIRST_CALL = r"""
import sys, time, numpy as np
import ember.core as mx
x = mx.array(np.random.default_rng(0).standard_normal(1 << 20, dtype=np.float32))
mx.eval(x)
def chain(y):
    for k in range(5):
        y = y * (1.0 + 0.01 * k) + 0.5
    return y
t = time.perf_counter()
y = mx.compile(chain)(x)  # trace, passes, fuse (kernel compiled or loaded), replay
t1 = time.perf_counter()
mx.eval(y)
t2 = time.perf_counter()
print(t2 - t, t1 - t, mx._fuse_stats()["compiles"])
"""


def first_call_extras(args, by_fw, machine):
    if "ember" not in args.frameworks:
        return Extras()
    lines = []
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, EMBER_CACHE_DIR=d)
        out = []
        for label in ("cold", "warm"):
            p = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, capture_output=True, text=True)
            if p.returncode != 0:
                lines.append(f"first call ({label}): failed: {p.stderr.strip()[-200:]}")
                return Extras(lines=lines)
            secs, build, compiles = p.stdout.split()
            out.append((label, float(secs), float(build), int(compiles)))
        for label, secs, build, compiles in out:
            lines.append(f"Ember first call of the 10-op chain (1M f32, mx.compile: trace + passes + fuse + eval), {label} kernel cache: "
                         f"{secs * 1e3:.1f} ms ({compiles} compile{'s' if compiles != 1 else ''}; "
                         f"trace, passes, fuse and kernel {build * 1e3:.1f} ms, eval {(secs - build) * 1e3:.1f} ms)")
    return Extras(lines=lines, json={"first_call_ms": {k: s * 1e3 for k, s, _, _ in out}})


if __name__ == "__main__":
    sys.exit(main(CASES, title="Compiled chains (bench_compile.py)", extras=first_call_extras))
