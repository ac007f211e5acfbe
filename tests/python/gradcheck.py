"""Derivative and vmap checks shared by the transform tests.

    check_grads(fun, [x, y])          # jvp and vjp against central differences
    check_grads(fun, [x], order=2)    # ... and of the derivative itself
    check_vmap(fun, [x, y], in_axes=(0, None))   # vmap against a Python loop
    check_complex(f_mx, f_np, [z, w])   # complex64 vjp/jvp against complex128 differences

``fun`` takes mx arrays (one per argument) and returns an mx array or a
list/tuple of them. Arguments are NumPy arrays; ``argnums`` names the ones
to differentiate (default: every float64 array), the rest are passed as
fixed mx arrays of their own dtype (index arrays, masks).

The checks compute in float64:
* jvp: ``mx.jvp(fun, xs, ts)`` equals (f(x + eps t) - f(x - eps t)) / 2eps
  for a random direction t;
* vjp: for a random output cotangent u, <u, J t> (from the differences)
  equals sum_i <vjp_i(u), t_i>, the adjoint identity;
* order 2 applies both checks to x -> vjp(fun, x, u) (reverse-over-reverse
  and forward-over-reverse).
"""

import numpy as np

from conftest import mx


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _to_np(a):
    return np.array(a)


def _float_argnums(args):
    return [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype == np.float64]


def _caller(fun, args, argnums):
    """fun over the differentiated args only (a list), others held fixed."""
    fixed = {i: (_keep(a) if isinstance(a, np.ndarray) else a) for i, a in enumerate(args) if i not in argnums}

    def call(xs):
        full = []
        it = iter(xs)
        for i in range(len(args)):
            full.append(next(it) if i in argnums else fixed[i])
        return _as_list(fun(*full))

    return call


def _f64(x):
    """float64 stays float64 (mx.array alone would give float32, as MLX)."""
    return mx.array(x, dtype=mx.float64)


def _keep(a):
    """An mx array of a NumPy array's own dtype."""
    return _f64(a) if a.dtype == np.float64 else mx.array(a)


def _dot(a, b):
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))


def _check(call, xs, rng, eps, rtol, atol, what):
    ts = [rng.standard_normal(x.shape) for x in xs]
    plus = [_to_np(o) for o in call([_f64(x + eps * t) for x, t in zip(xs, ts)])]
    minus = [_to_np(o) for o in call([_f64(x - eps * t) for x, t in zip(xs, ts)])]
    fd = [(p - m) / (2 * eps) for p, m in zip(plus, minus)]

    outs, jvps = mx.jvp(lambda *a: call(list(a)), [_f64(x) for x in xs], [_f64(t) for t in ts])
    assert len(jvps) == len(fd), f"{what}: jvp returned {len(jvps)} tangents for {len(fd)} outputs"
    for k, (j, f) in enumerate(zip(jvps, fd)):
        assert j.shape == tuple(f.shape), f"{what}: jvp output {k} has shape {j.shape}, expected {f.shape}"
        np.testing.assert_allclose(_to_np(j), f, rtol=rtol, atol=atol, err_msg=f"{what}: jvp output {k}")

    us = [rng.standard_normal(np.shape(o)) for o in plus]
    outs, vjps = mx.vjp(lambda *a: call(list(a)), [_f64(x) for x in xs], [_f64(u) for u in us])
    assert len(vjps) == len(xs), f"{what}: vjp returned {len(vjps)} cotangents for {len(xs)} inputs"
    for k, (v, x) in enumerate(zip(vjps, xs)):
        assert v.shape == x.shape, f"{what}: vjp cotangent {k} has shape {v.shape}, input {x.shape}"
    lhs = sum(_dot(u, f) for u, f in zip(us, fd))
    rhs = sum(_dot(_to_np(v), t) for v, t in zip(vjps, ts))
    scale = max(1.0, abs(lhs), abs(rhs))
    assert abs(lhs - rhs) <= (rtol * 10 + atol) * scale, f"{what}: <u, J t> = {lhs} but <J^T u, t> = {rhs}"
    return us


def check_grads(fun, args, argnums=None, order=1, rng=None, eps=1e-6, rtol=1e-5, atol=1e-7):
    rng = rng if rng is not None else np.random.default_rng(0)
    argnums = list(argnums) if argnums is not None else _float_argnums(args)
    if not argnums:
        return
    call = _caller(fun, args, argnums)
    xs = [np.asarray(args[i], np.float64) for i in argnums]
    us = _check(call, xs, rng, eps, rtol, atol, "order 1")
    if order >= 2:
        u_mx = [_f64(u) for u in us]

        def vjp_of(*ys):
            return mx.vjp(lambda *a: call(list(a)), list(ys), u_mx)[1]

        _check(lambda ys: _as_list(vjp_of(*ys)), xs, rng, eps, rtol * 10, atol * 10, "order 2")


def _take(a, i, axis):
    return np.take(a, i, axis=axis)


def check_vmap(fun, args, in_axes=0, out_axes=0, rtol=1e-6, atol=1e-6):
    """vmap(fun, in_axes, out_axes) on the given (already batched) args
    equals stacking fun over the batch in a Python loop."""
    axes = list(in_axes) if isinstance(in_axes, (list, tuple)) else [in_axes] * len(args)
    sizes = {np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None}
    assert len(sizes) == 1, f"batched args disagree on the batch size: {sizes}"
    (n,) = sizes
    mx_args = [_keep(a) if isinstance(a, np.ndarray) else a for a in args]
    # vmap maps arrays only (as MLX): other unbatched arguments (NumPy
    # scalars) are bound around it
    mapped = [i for i, m in enumerate(mx_args) if isinstance(m, mx.array) or axes[i] is not None]

    def bound(*xs):
        full = list(mx_args)
        for i, x in zip(mapped, xs):
            full[i] = x
        return fun(*full)

    got = _as_list(mx.vmap(bound, in_axes=tuple(axes[i] for i in mapped), out_axes=out_axes)(
        *[mx_args[i] for i in mapped]))
    per = []
    for i in range(n):
        sl = [_keep(_take(a, i, ax)) if ax is not None else m for a, ax, m in zip(args, axes, mx_args)]
        per.append([_to_np(o) for o in _as_list(fun(*sl))])
    oaxes = list(out_axes) if isinstance(out_axes, (list, tuple)) else [out_axes] * len(got)
    for k, (g, oa) in enumerate(zip(got, oaxes)):
        want = np.stack([p[k] for p in per], axis=oa)
        gn = _to_np(g)
        assert gn.shape == want.shape, f"vmap output {k}: shape {gn.shape}, loop gives {want.shape}"
        assert gn.dtype == want.dtype, f"vmap output {k}: dtype {gn.dtype}, loop gives {want.dtype}"
        if gn.dtype.kind in "fc":
            np.testing.assert_allclose(gn, want, rtol=rtol, atol=atol, err_msg=f"vmap output {k}")
        else:
            np.testing.assert_array_equal(gn, want, err_msg=f"vmap output {k}")


# complex inputs: ct -> dL/dRe + i dL/dIm of L = Re(sum(conj(ct) * f(z)))

def _complex_fd(fun_np, args, ct, ts, h=1e-6):
    """(vjp of every argument, jvp along ts) of fun_np by central differences
    in complex128 / float64."""
    def L(xs):
        return np.real(np.sum(np.conj(ct) * fun_np(*xs)))

    vjps = []
    for k, a in enumerate(args):
        g = np.zeros(a.shape, a.dtype)
        for idx in np.ndindex(a.shape):
            parts = [1.0, 1j] if np.iscomplexobj(a) else [1.0]
            for p in parts:
                xs_p = [x.copy() for x in args]
                xs_m = [x.copy() for x in args]
                xs_p[k][idx] += h * p
                xs_m[k][idx] -= h * p
                g[idx] += p * (L(xs_p) - L(xs_m)) / (2 * h)
        vjps.append(g)
    plus = fun_np(*[x + h * t for x, t in zip(args, ts)])
    minus = fun_np(*[x - h * t for x, t in zip(args, ts)])
    return vjps, (plus - minus) / (2 * h)


def _mx_c(a):
    a = np.asarray(a)
    return mx.array(a.astype(np.complex64 if np.iscomplexobj(a) else np.float32))


def check_complex(fun_mx, fun_np, args, rtol=2e-4, atol=2e-5, seed=0):
    """vjp (every argument) and jvp of fun_mx in complex64/float32 against
    central differences of fun_np in complex128/float64; a real argument's
    cotangent is real."""
    rng = np.random.default_rng(seed)
    args = [np.asarray(a) for a in args]

    def draw(shape, cplx):
        v = rng.standard_normal(shape)
        return v + 1j * rng.standard_normal(shape) if cplx else v

    out = fun_np(*args)
    ct = draw(np.shape(out), np.iscomplexobj(out))
    ts = [draw(a.shape, np.iscomplexobj(a)) for a in args]
    ref_vjps, ref_jvp = _complex_fd(fun_np, args, ct, ts)
    _, vjps = mx.vjp(fun_mx, [_mx_c(a) for a in args], [_mx_c(ct)])
    _, (jvp,) = mx.jvp(fun_mx, [_mx_c(a) for a in args], [_mx_c(t) for t in ts])
    for k, (v, r, a) in enumerate(zip(vjps, ref_vjps, args)):
        assert v.dtype == (mx.complex64 if np.iscomplexobj(a) else mx.float32), f"vjp {k} dtype {v.dtype}"
        assert v.shape == a.shape
        np.testing.assert_allclose(np.array(v), r, rtol=rtol, atol=atol, err_msg=f"vjp {k}")
    np.testing.assert_allclose(np.array(jvp), ref_jvp, rtol=rtol, atol=atol, err_msg="jvp")
