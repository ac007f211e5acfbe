#!/usr/bin/env python3
"""Smoke test of an installed Ember at the ISA level it picks on this CPU.

Imports the installed ``ember`` (no pytest), prints the kernels' level and
checks, against NumPy in the same process, what is compiled once per level:
matmul, conv2d and its gradient, sort/argsort, sum/max over axes, exp, tanh,
erf, sin, random.normal with a key, fft, astype float -> int, and linalg.
Meant for an emulated CPU, to run the AVX2 kernels on any x86-64 machine:

    PY=$(python3 -c 'import sys; print(sys.executable)')   # the real binary, not a shim
    EMBER_SMOKE_EXPECT_ISA=avx2 qemu-x86_64 -cpu Haswell $PY tests/smoke_isa.py

With EMBER_SMOKE_EXPECT_ISA set, Ember must run at that level, and asking
for a higher one (``_set_cpu_isa("avx512")``) must give it when it is the best
the CPU has. Exit status 0 when every check passes, 1 otherwise (each failure
is printed). tests/python/test_isa.py runs the same checks at every level of
the machine it runs on.
"""

import math
import os
import sys
import time

import numpy as np

import ember.core as mx

# rtol, atol of float32 results against a float64 NumPy reference
F32 = (2e-5, 2e-5)
F32_MATH = (2e-6, 1e-6)  # simd_math.h: <= 4 ulp
F64_MATH = (1e-14, 1e-15)


def close(got, want, tol, what):
    """got (an Ember array) equals want within tol = (rtol, atol), NaNs equal."""
    got_np = np.array(got)
    assert got_np.shape == np.shape(want), f"{what}: shape {got_np.shape}, expected {np.shape(want)}"
    np.testing.assert_allclose(got_np.astype(np.float64) if got_np.dtype.kind != "c" else got_np,
                               want, rtol=tol[0], atol=tol[1], err_msg=what)


def equal(got, want, what):
    got_np = np.array(got)
    np.testing.assert_array_equal(got_np, want, err_msg=what)


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def check_matmul(rng):
    a, b = f32(rng, 67, 131), f32(rng, 131, 45)
    want = a.astype(np.float64) @ b
    close(mx.array(a) @ mx.array(b), want, F32, "float32 matmul")
    close(mx.array(a.T.copy()).T @ mx.array(b.T.copy()).T, want, F32, "column-major operands")
    x, y = f32(rng, 3, 1, 9, 20), f32(rng, 4, 20, 7)
    close(mx.matmul(mx.array(x), mx.array(y)), x.astype(np.float64) @ y, F32, "batched, broadcast")
    d = rng.standard_normal((40, 33))
    close(mx.array(d, dtype=mx.float64) @ mx.array(d.T, dtype=mx.float64), d @ d.T, (1e-12, 1e-12),
          "float64 matmul")
    h = a.astype(np.float16)
    close(mx.array(h) @ mx.array(b.astype(np.float16)), h.astype(np.float64) @ b.astype(np.float16),
          (2e-2, 2e-2), "float16 matmul (float32 tiles)")


def conv2d_ref(x, w, stride=1, padding=0, groups=1):
    """NHWC conv2d (cross-correlation, MLX's layout: w is (O, kh, kw, C/groups))
    in float64, and the patches it read: (N, OH, OW, C, kh, kw)."""
    x = np.pad(np.asarray(x, np.float64), ((0, 0), (padding, padding), (padding, padding), (0, 0)))
    w = np.asarray(w, np.float64)
    kh, kw = w.shape[1:3]
    patches = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))[:, ::stride, ::stride]
    cg, og = x.shape[-1] // groups, w.shape[0] // groups
    out = [np.einsum("nhwckl,oklc->nhwo", patches[:, :, :, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og])
           for g in range(groups)]
    return np.concatenate(out, axis=-1), patches


def conv2d_grads_ref(x, w, g, padding):
    """Gradients of sum(conv2d(x, w, padding) * g) w.r.t. x and w (stride 1, one group)."""
    _, patches = conv2d_ref(x, w, padding=padding)
    g = np.asarray(g, np.float64)
    dw = np.einsum("nhwo,nhwckl->oklc", g, patches)
    n, h, wd, c = x.shape
    dxp = np.zeros((n, h + 2 * padding, wd + 2 * padding, c))
    oh, ow = g.shape[1:3]
    for k in range(w.shape[1]):
        for l in range(w.shape[2]):
            dxp[:, k:k + oh, l:l + ow] += np.einsum("nhwo,oc->nhwc", g, np.asarray(w, np.float64)[:, k, l])
    return dxp[:, padding:padding + h, padding:padding + wd], dw


def check_conv2d(rng):
    x, w = f32(rng, 2, 11, 10, 6), f32(rng, 8, 3, 3, 6)
    close(mx.conv2d(mx.array(x), mx.array(w), padding=1), conv2d_ref(x, w, padding=1)[0], F32, "conv2d")
    close(mx.conv2d(mx.array(x), mx.array(w), stride=2), conv2d_ref(x, w, stride=2)[0], F32, "strided conv2d")
    wg = f32(rng, 8, 3, 3, 3)
    close(mx.conv2d(mx.array(x), mx.array(wg), padding=1, groups=2),
          conv2d_ref(x, wg, padding=1, groups=2)[0], F32, "grouped conv2d")
    x64 = rng.standard_normal((1, 7, 8, 5))
    w64 = rng.standard_normal((3, 2, 3, 5))
    close(mx.conv2d(mx.array(x64, dtype=mx.float64), mx.array(w64, dtype=mx.float64)),
          conv2d_ref(x64, w64)[0], (1e-12, 1e-12), "float64 conv2d")


def check_conv2d_grad(rng):
    x, w = f32(rng, 2, 9, 8, 4), f32(rng, 5, 3, 3, 4)
    g = f32(rng, 2, 9, 8, 5)
    gm = mx.array(g)
    dx, dw = mx.grad(lambda a, b: mx.sum(mx.conv2d(a, b, padding=1) * gm), argnums=(0, 1))(
        mx.array(x), mx.array(w))
    want_dx, want_dw = conv2d_grads_ref(x, w, g, padding=1)
    close(dx, want_dx, F32, "conv2d grad w.r.t. the input")
    close(dw, want_dw, (1e-4, 1e-4), "conv2d grad w.r.t. the weight")


def check_sort(rng):
    x = f32(rng, 13, 301)
    x[::3, ::7] = x[0, 0]  # ties
    x[2, 5] = np.nan
    x[4, :3] = (np.inf, -np.inf, -0.0)
    equal(mx.sort(mx.array(x), axis=-1), np.sort(x, axis=-1), "sort float32 along the last axis")
    equal(mx.sort(mx.array(x), axis=0), np.sort(x, axis=0), "sort float32 along axis 0")
    idx = np.array(mx.argsort(mx.array(x), axis=-1))
    equal(np.sort(idx, axis=-1), np.broadcast_to(np.arange(x.shape[1]), x.shape), "argsort is a permutation")
    equal(np.take_along_axis(x, idx, axis=-1), np.sort(x, axis=-1), "argsort orders the values")
    i = rng.integers(-1000, 1000, (5000,)).astype(np.int32)
    equal(mx.sort(mx.array(i)), np.sort(i), "sort int32")
    equal(mx.argsort(mx.array(i)), np.argsort(i, kind="stable"), "argsort int32 (stable)")


def check_reductions(rng):
    x = f32(rng, 6, 70, 33)
    x64 = x.astype(np.float64)
    for axis in (None, 0, 1, 2, (0, 2)):
        close(mx.sum(mx.array(x), axis=axis), x64.sum(axis=axis), (1e-5, 1e-4), f"sum axis={axis}")
        equal(mx.max(mx.array(x), axis=axis), x.max(axis=axis), f"max axis={axis}")
        close(mx.sum(mx.array(x64, dtype=mx.float64), axis=axis), x64.sum(axis=axis), (1e-12, 1e-12),
              f"float64 sum axis={axis}")
    xt = mx.transpose(mx.array(x), (2, 0, 1))
    close(mx.sum(xt, axis=-1), x64.transpose(2, 0, 1).sum(axis=-1), (1e-5, 1e-4), "sum of a transposed input")
    i = rng.integers(-100, 100, (300, 257)).astype(np.int32)
    equal(mx.sum(mx.array(i), axis=0), i.sum(axis=0, dtype=np.int32), "int32 sum axis=0")
    equal(mx.max(mx.array(i), axis=1), i.max(axis=1), "int32 max axis=1")


def check_math(rng):
    x = rng.uniform(-10, 10, 4099).astype(np.float32)
    x[:6] = (0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40)
    x64 = x.astype(np.float64)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    with np.errstate(all="ignore"):
        refs = {"exp": np.exp, "tanh": np.tanh, "erf": erf, "sin": np.sin}
        for name, ref in refs.items():
            fn = getattr(mx, name)
            close(fn(mx.array(x)), ref(x64).astype(np.float32), F32_MATH, f"{name} float32")
            close(fn(mx.array(x64, dtype=mx.float64)), ref(x64), F64_MATH, f"{name} float64")


def check_random(rng):
    key = mx.random.key(1234)
    shape = (200, 301)
    z = np.array(mx.random.normal(shape, key=key)).astype(np.float64)
    assert z.shape == shape and z.dtype == np.float64, "normal: shape"
    assert np.isfinite(z).all(), "normal: non-finite samples"
    n = z.size
    assert abs(z.mean()) < 5 / math.sqrt(n), f"normal: mean {z.mean()}"
    assert abs(z.var() - 1) < 5 * math.sqrt(2 / n), f"normal: variance {z.var()}"
    assert abs((z ** 3).mean()) < 5 * math.sqrt(15 / n), "normal: skewness"
    assert abs((z ** 4).mean() - 3) < 5 * math.sqrt(96 / n), "normal: kurtosis"
    equal(mx.random.normal(shape, key=key), z.astype(np.float32), "normal: the same key, the same samples")
    u = np.array(mx.random.uniform(shape=(10 ** 5,), key=mx.random.split(key)[0]))
    assert (u >= 0).all() and (u < 1).all() and abs(u.mean() - 0.5) < 0.005, "uniform in [0, 1)"


def check_fft(rng):
    for n in (256, 1000, 97):  # radix 2/8, mixed radix, Bluestein
        z = (rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))).astype(np.complex64)
        want = np.fft.fft(z.astype(np.complex128), axis=-1)
        close(mx.fft.fft(mx.array(z)), want, (1e-4, 1e-4 * math.sqrt(n)), f"fft n={n}")
        r = z.real.copy()
        close(mx.fft.rfft(mx.array(r)), np.fft.rfft(r.astype(np.float64)), (1e-4, 1e-4 * math.sqrt(n)),
              f"rfft n={n}")
        close(mx.fft.irfft(mx.fft.rfft(mx.array(r)), n=n), r, (1e-5, 1e-5), f"irfft(rfft) n={n}")


# Values whose conversion NumPy answers the same way in its scalar and vector
# loops (out-of-range float -> uint32 it does not: see test_isa.py).
ASTYPE_VALUES = [0.0, -0.0, 0.5, -0.5, 1.9, -2.7, 100.5, 127.9, 255.9, 65535.5, 3e4, -3e4]
ASTYPE_SPECIALS = [np.nan, np.inf, -np.inf, 3e9, -3e9, 1e20, -1e20]  # out of range: int32/int64/int8 rule


def check_astype(rng):
    vals = np.array(ASTYPE_VALUES + list(rng.uniform(0, 250, 50)), np.float32)
    for target in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool"):
        src = vals if target in ("int8", "int16", "int32", "int64", "bool") else np.abs(vals)
        for dtype in (np.float32, np.float64):
            s = src.astype(dtype)
            equal(mx.array(s).astype(getattr(mx, "bool_" if target == "bool" else target)), s.astype(target),
                  f"astype {np.dtype(dtype).name} -> {target}")
    specials = np.array(ASTYPE_SPECIALS * 3, np.float32)
    with np.errstate(invalid="ignore"):
        for target in ("int8", "int32", "int64"):
            equal(mx.array(specials).astype(getattr(mx, target)), specials.astype(target),
                  f"astype float32 specials -> {target}")


def check_linalg(rng):
    a = rng.standard_normal((12, 12)).astype(np.float32)
    spd = a @ a.T + 12 * np.eye(12, dtype=np.float32)
    b = rng.standard_normal((12, 3)).astype(np.float32)
    cpu = {"stream": mx.cpu}
    close(mx.linalg.solve(mx.array(spd), mx.array(b), **cpu), np.linalg.solve(spd.astype(np.float64), b),
          (1e-4, 1e-5), "solve")
    close(mx.linalg.inv(mx.array(spd), **cpu), np.linalg.inv(spd.astype(np.float64)), (1e-4, 1e-6), "inv")
    close(mx.linalg.cholesky(mx.array(spd), **cpu), np.linalg.cholesky(spd.astype(np.float64)), (1e-4, 1e-5),
          "cholesky")
    close(mx.linalg.eigvalsh(mx.array(spd), **cpu), np.linalg.eigvalsh(spd.astype(np.float64)), (1e-4, 1e-4),
          "eigvalsh")
    close(mx.linalg.svd(mx.array(a), compute_uv=False, **cpu), np.linalg.svd(a.astype(np.float64), compute_uv=False),
          (1e-4, 1e-4), "singular values")


CHECKS = [check_matmul, check_conv2d, check_conv2d_grad, check_sort, check_reductions, check_math,
          check_random, check_fft, check_astype, check_linalg]


def check_level(expect, cfg):
    """The level in use is `expect`; a request above it clamps to it when it is the best."""
    assert cfg["isa"] == expect, f"isa is {cfg['isa']!r}, expected {expect!r} (config {cfg})"
    if cfg["isa_supported"] == expect:
        got = mx._set_cpu_isa("avx512")
        assert got == expect, f"_set_cpu_isa('avx512') gave {got!r} on a CPU whose best level is {expect!r}"


def main():
    cfg = mx.__config__()
    print(f"ember: isa {cfg['isa']} (supported {cfg['isa_supported']}, levels {', '.join(cfg['isa_levels'])}), "
          f"dispatch {cfg['isa_dispatch']}, {cfg['num_threads']} threads; "
          f"cpu features: {' '.join(cfg['cpu_features'])}")
    checks = list(CHECKS)
    expect = os.environ.get("EMBER_SMOKE_EXPECT_ISA", "").strip()
    if expect:
        checks.insert(0, lambda rng: check_level(expect, cfg))
        checks[0].__name__ = f"level is {expect}"
    failures = 0
    t_all = time.perf_counter()
    for check in checks:
        t0 = time.perf_counter()
        try:
            check(np.random.default_rng(0))
            status = "ok"
        except Exception as e:  # an Ember error fails the check, it does not stop the run
            failures += 1
            status = "FAIL\n" + "\n".join("      " + line for line in f"{type(e).__name__}: {e}".strip().splitlines())
        print(f"  {check.__name__.replace('check_', ''):<16} {time.perf_counter() - t0:6.2f} s  {status}")
    total = time.perf_counter() - t_all
    print(f"smoke_isa: {len(checks) - failures}/{len(checks)} passed at isa {mx.__config__()['isa']} ({total:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
