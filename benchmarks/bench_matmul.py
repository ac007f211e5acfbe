"""Matmul: float32 squares of 256, 1024 and 2048, a batched (64, 128, 128)
product, and float16 / bfloat16 squares of 1024, beside NumPy, PyTorch, JAX
and MLX. Half-precision rows cast the float32 inputs once at set-up and time
the product plus a cast of the result back to float32 (for the check). Run:

    python3 benchmarks/bench_matmul.py [--quick] [--only PATTERN] [--json FILE]
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Case, main  # noqa: E402


def inputs(shape_a, shape_b):
    def make(rng):
        return [rng.standard_normal(shape_a, dtype=np.float32), rng.standard_normal(shape_b, dtype=np.float32)]
    return make


def ref(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


F32_IMPLS = {
    "numpy": lambda np_, a, b: (lambda: a @ b),
    "torch": lambda torch, a, b: (lambda: a @ b),
    "jax": lambda jnp, a, b: (lambda: jnp.matmul(a, b)),
    "mlx": lambda mx, a, b: (lambda: a @ b),
}


def half_impls(name):
    def torch_impl(torch, a, b):
        dt = getattr(torch, name)
        a, b = a.to(dt), b.to(dt)
        return lambda: (a @ b).float()

    def jax_impl(jnp, a, b):
        dt = getattr(jnp, name)
        a, b = a.astype(dt), b.astype(dt)
        return lambda: jnp.matmul(a, b).astype(jnp.float32)

    def mlx_impl(mx, a, b):
        dt = getattr(mx, name)
        a, b = a.astype(dt), b.astype(dt)
        mx.eval(a, b)
        return lambda: (a @ b).astype(mx.float32)

    impls = {"torch": torch_impl, "jax": jax_impl, "mlx": mlx_impl}
    if name == "float16":
        def numpy_impl(np_, a, b):
            a, b = a.astype(np_.float16), b.astype(np_.float16)
            return lambda: (a @ b).astype(np_.float32)
        impls["numpy"] = numpy_impl
    return impls


def flops(shape_a, shape_b):
    batch = int(np.prod(np.broadcast_shapes(shape_a[:-2], shape_b[:-2]))) if len(shape_a) > 2 else 1
    return 2.0 * batch * shape_a[-2] * shape_a[-1] * shape_b[-1]


def square(n, name="float32"):
    shp = (n, n)
    if name == "float32":
        return Case(name=f"matmul {n}² f32", metric="GFLOP/s", amount=flops(shp, shp),
                    make_inputs=inputs(shp, shp), reference=ref, out_dtype="float32", impls=F32_IMPLS)
    tol = 3e-2 if name == "bfloat16" else 1e-2
    return Case(name=f"matmul {n}² {name}", metric="GFLOP/s", amount=flops(shp, shp),
                make_inputs=inputs(shp, shp), reference=ref, rtol=tol, atol=tol, impls=half_impls(name))


CASES = [
    square(256),
    square(1024),
    square(2048),
    Case(name="matmul batched (64, 128, 128) f32", metric="GFLOP/s", amount=flops((64, 128, 128), (64, 128, 128)),
         make_inputs=inputs((64, 128, 128), (64, 128, 128)), reference=ref, out_dtype="float32", impls=F32_IMPLS),
    square(1024, "float16"),
    square(1024, "bfloat16"),
]

if __name__ == "__main__":
    main(CASES, title="Ember matmul (bench_matmul.py)")
