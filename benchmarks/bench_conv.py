"""Convolution, channels-last, stride 1, 'same' padding, beside PyTorch
(channels_last / NDHWC memory via permute), JAX (jit of
lax.conv_general_dilated) and MLX. NumPy has no convolution: its column is
skipped; a float64 NumPy reference checks every result. Rows:

- conv2d forward, batch 32, 64x64x32 -> 64 channels, 3x3: plain, dilation 2,
  groups 4; depthwise 3x3 (32 -> 32, groups 32); 1x1 (32 -> 64);
- the plain 3x3's gradients w.r.t. the input and w.r.t. the weight, alone
  and together (the vjp of both);
- conv1d forward (batch 32, length 4096, 64 -> 64, kernel 3) and conv3d
  forward (8x16x32x32x16 -> 32, 3x3x3);
- the plain 3x3 forward in float16 and bfloat16 (inputs cast once at set-up,
  the result cast back to float32 for the check; the reference is the
  float64 convolution of the rounded inputs, held to the harness's tolerance
  for that half type).

GFLOP/s counts 2 x multiply-adds of the direct convolution (for a gradient:
of the convolution it is). The table adds Ember's share of the machine's
float32 FMA peak (fma_peak.py, measured in each run and kept as the best
seen on this machine, at the widest vectors of the level Ember ran at, on
all threads); ``--peak GFLOPS`` gives the peak instead, ``--peak off``
drops the column. Run:

    python3 benchmarks/bench_conv.py [--quick] [--only PATTERN] [--json FILE] [--peak auto|off|GFLOPS]
"""

import dataclasses
import math
import os
import sys
from typing import Tuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fma_peak  # noqa: E402
from harness import ISA_LEVELS, TOLERANCES, Case, Extras, main  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Conv:
    """One convolution: input (N, *spatial, C), weight (O, *K, C // groups),
    output (N, *spatial, O) ('same' padding, stride 1)."""

    spatial: Tuple[int, ...]
    C: int
    O: int
    K: int
    N: int = 32
    dil: int = 1
    groups: int = 1

    @property
    def d(self):
        return len(self.spatial)

    @property
    def pad(self):
        return self.dil * (self.K - 1) // 2

    def shapes(self):
        """(input, weight, output) shapes."""
        return ((self.N, *self.spatial, self.C), (self.O, *(self.K,) * self.d, self.C // self.groups),
                (self.N, *self.spatial, self.O))

    def flops(self):
        return 2.0 * self.N * math.prod(self.spatial) * self.O * self.K ** self.d * self.C / self.groups

    def describe(self):
        return (f"{'x'.join(map(str, self.shapes()[0]))} -> {self.O}, "
                f"{'x'.join([str(self.K)] * self.d)}")


PLAIN = Conv((64, 64), 32, 64, 3)


# --------------------------------------------------------------------------
# Inputs and the NumPy float64 reference


def make(conv, with_cot):
    def f(rng):
        xs, ws, cs = conv.shapes()
        fan_in = conv.K ** conv.d * conv.C / conv.groups
        out = [rng.standard_normal(xs, dtype=np.float32),
               (rng.standard_normal(ws, dtype=np.float32) / np.sqrt(fan_in)).astype(np.float32)]
        if with_cot:
            out.append(rng.standard_normal(cs, dtype=np.float32))
        return out
    return f


def rounded(a, dtype):
    """float32 `a` rounded (to nearest even) to float16 or bfloat16, as float32."""
    if dtype == "float16":
        return a.astype(np.float16).astype(np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def windows(x, K, pad, dil):
    """(N, *spatial, C, *K) windows of the zero-padded input (float64)."""
    d = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0)] + [(pad, pad)] * d + [(0, 0)])
    win = sliding_window_view(xp, ((K - 1) * dil + 1,) * d, axis=tuple(range(1, d + 1)))
    return win[(Ellipsis,) + (slice(None, None, dil),) * d]


def ref_forward(x, w, conv):
    d, G = conv.d, conv.groups
    win = windows(x, conv.K, conv.pad, conv.dil)
    w = w.astype(np.float64)
    Cg, Og = conv.C // G, conv.O // G
    chan = (slice(None),) * (d + 1)       # index up to the window's channel axis
    kern = list(range(d + 2, 2 * d + 2))
    return np.concatenate(
        [np.tensordot(win[chan + (slice(g * Cg, (g + 1) * Cg),)], w[g * Og:(g + 1) * Og],
                      axes=([d + 1] + kern, [d + 1] + list(range(1, d + 1))))
         for g in range(G)], axis=-1)


def ref_backward(x, w, ct, conv, wrt):
    """The gradients `wrt` ("x", "w" or "xw") of sum(ct * conv(x, w)); one
    group, no dilation."""
    assert conv.groups == 1 and conv.dil == 1
    d, K = conv.d, conv.K
    out = []
    if "x" in wrt:
        # the input's gradient: ct convolved with the flipped weight
        wf = np.flip(w.astype(np.float64), axis=tuple(range(1, d + 1)))
        cwin = windows(ct, K, K - 1 - conv.pad, 1)                    # (N, *S, O, *K)
        out.append(np.tensordot(cwin, wf, axes=([d + 1] + list(range(d + 2, 2 * d + 2)),
                                                [0] + list(range(1, d + 1)))))
    if "w" in wrt:
        win = windows(x, K, conv.pad, 1)                              # (N, *S, C, *K)
        dw = np.tensordot(ct.astype(np.float64), win, axes=(list(range(d + 1)),) * 2)
        out.append(np.moveaxis(dw, 1, -1))                            # (O, *K, C)
    return tuple(out)


# --------------------------------------------------------------------------
# The frameworks' convolutions


def torch_layout(torch, a, d):
    """A channels-last array (N, *S, C) as the (N, C, *S) view PyTorch takes,
    made contiguous in channels_last / channels_last_3d (no copy: it already
    is); conv1d has no such format and gets the permuted view."""
    t = a.permute(0, d + 1, *range(1, d + 1))
    fmt = {2: torch.channels_last, 3: torch.channels_last_3d}.get(d)
    return t.contiguous(memory_format=fmt) if fmt else t


def torch_back(t, d):
    """PyTorch's (N, C, *S) result as channels-last (N, *S, C)."""
    return t.permute(0, *range(2, d + 2), 1)


JAX_DIMS = {1: ("NWC", "OWI", "NWC"), 2: ("NHWC", "OHWI", "NHWC"), 3: ("NDHWC", "ODHWI", "NDHWC")}


def jax_conv(conv):
    import jax
    d = conv.d
    return lambda a, b: jax.lax.conv_general_dilated(
        a, b, (1,) * d, [(conv.pad, conv.pad)] * d, rhs_dilation=(conv.dil,) * d,
        dimension_numbers=JAX_DIMS[d], feature_group_count=conv.groups)


def mlx_conv(mx, conv):
    fn = getattr(mx, f"conv{conv.d}d")
    return lambda a, b: fn(a, b, padding=conv.pad, dilation=conv.dil, groups=conv.groups)


def forward_impls(conv, dtype="float32"):
    """torch / jax / mlx forward implementations; a half `dtype` casts the
    inputs at set-up and the result back to float32."""
    half = dtype != "float32"

    def torch_impl(torch, x, w):
        fn = getattr(torch.nn.functional, f"conv{conv.d}d")
        xt, wt = torch_layout(torch, x, conv.d), torch_layout(torch, w, conv.d)
        if half:
            xt, wt = xt.to(getattr(torch, dtype)), wt.to(getattr(torch, dtype))
        out = (lambda y: y.float()) if half else (lambda y: y)
        return lambda: torch_back(out(fn(xt, wt, padding=conv.pad, dilation=conv.dil,
                                         groups=conv.groups)), conv.d)

    def jax_impl(jnp, x, w):
        import jax
        f = jax_conv(conv)
        if half:
            x, w = x.astype(getattr(jnp, dtype)), w.astype(getattr(jnp, dtype))
        out = (lambda y: y.astype(jnp.float32)) if half else (lambda y: y)
        g = jax.jit(lambda a, b: out(f(a, b)))
        return lambda: g(x, w)

    def mlx_impl(mx, x, w):
        f = mlx_conv(mx, conv)
        if half:
            x, w = x.astype(getattr(mx, dtype)), w.astype(getattr(mx, dtype))
            mx.eval(x, w)
        out = (lambda y: y.astype(mx.float32)) if half else (lambda y: y)
        return lambda: out(f(x, w))

    return {"torch": torch_impl, "jax": jax_impl, "mlx": mlx_impl}


WRT = {"x": (0,), "w": (1,), "xw": (0, 1)}     # which of (input, weight)


def grad_impls(conv, wrt):
    """torch (torch.nn.grad), jax (jit of vjp) and mlx (vjp) implementations of
    the gradients `wrt`."""
    idx = WRT[wrt]

    def with_args(f, primals, idx):
        """f of the primals, as a function of those at `idx` only."""
        def g(*vals):
            args = list(primals)
            for i, v in zip(idx, vals):
                args[i] = v
            return f(*args)
        return g

    def torch_impl(torch, x, w, ct):
        d = conv.d
        xt, wt, ctt = (torch_layout(torch, a, d) for a in (x, w, ct))
        grad_in = getattr(torch.nn.grad, f"conv{d}d_input")
        grad_w = getattr(torch.nn.grad, f"conv{d}d_weight")
        parts = {0: lambda: grad_in(xt.shape, wt, ctt, padding=conv.pad),
                 1: lambda: grad_w(xt, wt.shape, ctt, padding=conv.pad)}
        return lambda: tuple(torch_back(parts[i](), d) for i in idx)

    def jax_impl(jnp, x, w, ct):
        import jax
        f = jax_conv(conv)

        def grads(a, b, c):
            g = with_args(f, (a, b), idx)
            return jax.vjp(g, *[(a, b)[i] for i in idx])[1](c)
        g = jax.jit(grads)
        return lambda: g(x, w, ct)

    def mlx_impl(mx, x, w, ct):
        f = with_args(mlx_conv(mx, conv), (x, w), idx)

        def run():
            _, vjps = mx.vjp(f, [(x, w)[i] for i in idx], [ct])
            return tuple(vjps)
        return run

    return {"torch": torch_impl, "jax": jax_impl, "mlx": mlx_impl}


# --------------------------------------------------------------------------
# Cases


def forward_case(name, conv, dtype="float32"):
    """The forward convolution `conv`, in float32 or a half type."""
    if dtype == "float32":
        reference, tol = (lambda x, w: ref_forward(x, w, conv)), {}
    else:
        reference = lambda x, w: ref_forward(rounded(x, dtype), rounded(w, dtype), conv)  # noqa: E731
        rtol, atol = TOLERANCES[dtype]
        tol = {"rtol": rtol, "atol": atol}
    return Case(name=name, metric="GFLOP/s", amount=conv.flops(),
                make_inputs=make(conv, False), reference=reference, out_dtype="float32",
                note=f"{conv.describe()}, {dtype}", impls=forward_impls(conv, dtype), **tol)


def grad_case(name, conv, wrt):
    """The gradients `wrt` of `conv` (as one vjp), given the output's cotangent."""
    return Case(name=name, metric="GFLOP/s", amount=len(WRT[wrt]) * conv.flops(),
                make_inputs=make(conv, True),
                reference=lambda x, w, ct: ref_backward(x, w, ct, conv, wrt),
                out_dtype="float32", note=f"vjp of {conv.describe()} w.r.t. {wrt}",
                impls=grad_impls(conv, wrt))


CASES = [
    forward_case("conv2d 3x3", PLAIN),
    forward_case("conv2d 3x3 dilation 2", dataclasses.replace(PLAIN, dil=2)),
    forward_case("conv2d 3x3 groups 4", dataclasses.replace(PLAIN, groups=4)),
    forward_case("conv2d depthwise 3x3 (groups 32)", Conv((64, 64), 32, 32, 3, groups=32)),
    forward_case("conv2d 1x1 32 -> 64", Conv((64, 64), 32, 64, 1)),
    grad_case("conv2d 3x3 grad input", PLAIN, "x"),
    grad_case("conv2d 3x3 grad weight", PLAIN, "w"),
    grad_case("conv2d backward (dx, dw)", PLAIN, "xw"),
    forward_case("conv1d k3, 32x4096x64 -> 64", Conv((4096,), 64, 64, 3)),
    forward_case("conv3d 3x3x3, 8x16x32x32x16 -> 32", Conv((16, 32, 32), 16, 32, 3, N=8)),
    forward_case("conv2d 3x3 float16", PLAIN, "float16"),
    forward_case("conv2d 3x3 bfloat16", PLAIN, "bfloat16"),
]


# --------------------------------------------------------------------------
# % of the FMA peak


def add_args(p):
    p.add_argument("--peak", default="auto", metavar="auto|off|GFLOPS",
                   help="float32 peak for the 'ember %% peak' column: auto (fma_peak.py, "
                        "measured now, the best seen on this machine kept), off, or GFLOP/s")


def peak_extras(args, by_fw, machine):
    """The 'ember % peak' column: Ember's GFLOP/s over the float32 FMA peak at
    the widest vectors of the level Ember ran at, on its thread count."""
    peak, source = fma_peak.ember_peak(by_fw, machine, args.isa, args.peak, ISA_LEVELS)
    if not peak:
        return Extras() if args.peak == "off" else Extras(lines=[f"FMA peak: {source}"])

    def pct(case):
        r = by_fw.get("ember", {}).get("results", {}).get(case.name)
        return f"{100 * r['value'] / peak:.0f}%" if r and r["status"] == "ok" else "—"
    return Extras(columns=[("ember % peak", pct)],
                  lines=[f"float32 FMA peak: {peak:.0f} GFLOP/s ({source}); half-precision "
                         "rows are held to the same float32 peak"],
                  json={"fma_peak_gflops": peak, "fma_peak_source": source})


if __name__ == "__main__":
    sys.exit(main(CASES, title="Convolution (bench_conv.py)", add_args=add_args,
                  extras=peak_extras))
