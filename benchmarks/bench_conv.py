"""Convolution: conv2d NHWC, batch 32, 64x64x32 -> 64 channels, 3x3 (plain,
dilation 2, groups 4) and its backward pass (gradients w.r.t. input and
weight), beside PyTorch (channels-last), JAX (jit) and MLX. NumPy has no
convolution: its column is skipped. Run:

    python3 benchmarks/bench_conv.py [--quick] [--only PATTERN] [--json FILE]
"""

import os
import sys

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Case, main  # noqa: E402

N, H, W, C, O, K = 32, 64, 64, 32, 64, 3


def shapes(groups):
    return (N, H, W, C), (O, K, K, C // groups), (N, H, W, O)


def make(groups, with_cot):
    def f(rng):
        xs, ws, cs = shapes(groups)
        out = [rng.standard_normal(xs, dtype=np.float32),
               (rng.standard_normal(ws, dtype=np.float32) / np.sqrt(K * K * C / groups)).astype(np.float32)]
        if with_cot:
            out.append(rng.standard_normal(cs, dtype=np.float32))
        return out
    return f


def windows(x, pad, dil):
    """(N, H, W, C, K, K) windows of the padded input (float64)."""
    xp = np.pad(x.astype(np.float64), [(0, 0), (pad, pad), (pad, pad), (0, 0)])
    win = sliding_window_view(xp, ((K - 1) * dil + 1, (K - 1) * dil + 1), axis=(1, 2))
    return win[..., ::dil, ::dil]


def ref_forward(x, w, pad, dil, groups):
    win = windows(x, pad, dil)
    Cg, Og = C // groups, O // groups
    outs = []
    for g in range(groups):
        outs.append(np.tensordot(win[:, :, :, g * Cg:(g + 1) * Cg], w[g * Og:(g + 1) * Og].astype(np.float64),
                                 axes=([3, 4, 5], [3, 1, 2])))
    return np.concatenate(outs, axis=-1)


def ref_backward(x, w, ct):
    # stride 1, padding 1, no dilation, one group
    win = windows(x, 1, 1)
    dw = np.tensordot(ct.astype(np.float64), win, axes=([0, 1, 2], [0, 1, 2]))  # (O, C, K, K)
    dw = dw.transpose(0, 2, 3, 1)
    wt = w.astype(np.float64)[:, ::-1, ::-1].transpose(3, 1, 2, 0)  # (C, K, K, O)
    cwin = windows(ct, 1, 1)  # (N, H, W, O, K, K)
    dx = np.tensordot(cwin, wt, axes=([3, 4, 5], [3, 1, 2]))
    return dx, dw


def forward_case(label, pad, dil, groups):
    flops = 2.0 * N * H * W * O * K * K * C / groups

    def torch_impl(torch, x, w):
        xt = x.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        wt = w.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        fn = torch.nn.functional.conv2d
        return lambda: fn(xt, wt, padding=pad, dilation=dil, groups=groups).permute(0, 2, 3, 1)

    def jax_impl(jnp, x, w):
        import jax
        f = jax.jit(lambda a, b: jax.lax.conv_general_dilated(
            a, b, (1, 1), [(pad, pad), (pad, pad)], rhs_dilation=(dil, dil),
            dimension_numbers=("NHWC", "OHWI", "NHWC"), feature_group_count=groups))
        return lambda: f(x, w)

    return Case(
        name=f"conv2d {label}", metric="GFLOP/s", amount=flops,
        make_inputs=make(groups, False),
        reference=lambda x, w: ref_forward(x, w, pad, dil, groups),
        out_dtype="float32",
        note="NHWC 32x64x64x32 -> 64, 3x3",
        impls={
            "torch": torch_impl,
            "jax": jax_impl,
            "mlx": lambda mx, x, w: (lambda: mx.conv2d(x, w, padding=pad, dilation=dil, groups=groups)),
        })


def backward_case():
    flops = 2 * 2.0 * N * H * W * O * K * K * C  # grad input + grad weight

    def torch_impl(torch, x, w, ct):
        xt = x.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        wt = w.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        ctt = ct.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        grad = torch.nn.grad

        def run():
            dx = grad.conv2d_input(xt.shape, wt, ctt, padding=1)
            dw = grad.conv2d_weight(xt, wt.shape, ctt, padding=1)
            return dx.permute(0, 2, 3, 1), dw.permute(0, 2, 3, 1)
        return run

    def jax_impl(jnp, x, w, ct):
        import jax

        def f(a, b):
            return jax.lax.conv_general_dilated(a, b, (1, 1), [(1, 1), (1, 1)],
                                                dimension_numbers=("NHWC", "OHWI", "NHWC"))
        g = jax.jit(lambda a, b, c: jax.vjp(f, a, b)[1](c))
        return lambda: g(x, w, ct)

    def mlx_impl(mx, x, w, ct):
        def run():
            _, vjps = mx.vjp(lambda a, b: mx.conv2d(a, b, padding=1), [x, w], [ct])
            return tuple(vjps)
        return run

    return Case(
        name="conv2d backward (dx, dw)", metric="GFLOP/s", amount=flops,
        make_inputs=make(1, True),
        reference=ref_backward,
        out_dtype="float32",
        note="vjp of the plain 3x3 case",
        impls={"torch": torch_impl, "jax": jax_impl, "mlx": mlx_impl})


CASES = [
    forward_case("3x3", 1, 1, 1),
    forward_case("3x3 dilation 2", 2, 2, 1),
    forward_case("3x3 groups 4", 1, 1, 4),
    backward_case(),
]


if __name__ == "__main__":
    sys.exit(main(CASES, title="Convolution (bench_conv.py)"))
