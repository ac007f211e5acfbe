"""The convolution kernels' own paths, at every ISA level the CPU has.

test_conv.py checks what convolutions compute over randomized small
configurations; the kernels (csrc/ember/backend/cpu/conv.cpp) choose their
register tiles from the vector width of the ISA level and the channel
counts, cut long reductions into chunks, take a separate path for
depthwise convolutions and cache packed weights. These tests pick sizes that
reach each of those paths (whole and partial vectors of output channels,
one to four vectors per tile, tiles cut at the end of an output line,
reductions longer than a chunk, edge and interior depthwise tiles) and
compare with the float64 reference of test_conv.py.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ember_only, mx, to_numpy
from test_conv import ref_conv, ref_conv_transpose

pytestmark = ember_only


def ref_weight_grad(x, ct, wshape, stride, lo, kd, groups):
    """dW[o, k, c] = sum over batch and output positions of ct * the input
    the weight saw there (zero padding; float64)."""
    x = np.asarray(x, np.float64)
    ct = np.asarray(ct, np.float64)
    D = x.ndim - 2
    C, O = x.shape[-1], wshape[0]
    Cg, Og = C // groups, O // groups
    K = wshape[1:-1]
    pad = [(0, 0)] + [(l, l + (k - 1) * q + s) for l, k, q, s in zip(lo, K, kd, stride)] + [(0, 0)]
    xp = np.pad(x, pad)
    dw = np.zeros(wshape)
    OS = ct.shape[1:-1]
    for kp in np.ndindex(*K):
        sl = tuple(slice(k * q, k * q + (o - 1) * s + 1, s) for k, q, o, s in zip(kp, kd, OS, stride))
        win = xp[(slice(None),) + sl]  # (N, *OS, C)
        for g in range(groups):
            a = ct[..., g * Og:(g + 1) * Og].reshape(-1, Og)
            b = win[..., g * Cg:(g + 1) * Cg].reshape(-1, Cg)
            dw[(slice(g * Og, (g + 1) * Og),) + kp] = a.T @ b
    return dw


def arr(a):
    """a as an Ember array of its own dtype (float64 stays float64)."""
    return mx.array(a, dtype=mx.float64 if a.dtype == np.float64 else mx.float32)


def conv_and_ref(x, w, stride=1, pad=1, dil=1, groups=1):
    D = x.ndim - 2
    fn = {1: mx.conv1d, 2: mx.conv2d, 3: mx.conv3d}[D]
    got = fn(arr(x), arr(w), stride, pad, dil, groups)
    want = ref_conv(x, w, [stride] * D, [pad] * D, [pad] * D, [dil] * D, [1] * D, groups, False)
    return to_numpy(got), want


def tol(dt):
    return {np.float32: 2e-4, np.float64: 1e-11}[dt]


@pytest.mark.parametrize("O", [1, 7, 16, 17, 33, 64, 65, 130])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_forward_output_widths(level, O, dt):
    # one to four vectors of output channels per tile, whole and partial,
    # several column blocks; 13 positions per line leave short tiles
    rng = np.random.default_rng(O)
    x = rng.standard_normal((2, 5, 13, 24)).astype(dt)
    w = rng.standard_normal((O, 3, 3, 24)).astype(dt)
    got, want = conv_and_ref(x, w)
    np.testing.assert_allclose(got, want, rtol=tol(dt), atol=tol(dt) * 10)


@pytest.mark.parametrize("stride,pad,dil", [(2, 1, 1), (1, 0, 2), (3, 2, 1), (1, 3, 3)])
def test_forward_strided_dilated(level, stride, pad, dil):
    rng = np.random.default_rng(stride * 10 + dil)
    x = rng.standard_normal((2, 11, 17, 20)).astype(np.float32)
    w = rng.standard_normal((48, 3, 3, 20)).astype(np.float32)
    got, want = conv_and_ref(x, w, stride, pad, dil)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-3)


@pytest.mark.parametrize("stride,dil,O", [(1, 1, 16), (1, 1, 64), (2, 2, 16), (2, 1, 32), (1, 2, 40), (3, 3, 8)])
@pytest.mark.parametrize("D", [1, 2, 3])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_forward_affine_tiles(level, stride, dil, O, D, dt):
    # Tiles inside a line whose rows step evenly along it at every kernel
    # position (affine tiles: the kernel reads the first row's pointers and
    # steps), next to line-start, line-end and padded tiles; taps a row's
    # step apart reuse pixels across taps (stride 2 with dilation 2 too),
    # others do not (stride 2, dilation 1); float32 and float64 tiles.
    rng = np.random.default_rng(stride * 100 + dil * 10 + O + D)
    S = {1: [61], 2: [5, 47], 3: [3, 3, 29]}[D]
    x = rng.standard_normal((2, *S, 6)).astype(dt)
    w = rng.standard_normal((O, *[3] * D, 6)).astype(dt)
    got, want = conv_and_ref(x, w, stride, dil, dil)
    np.testing.assert_allclose(got, want, rtol=tol(dt), atol=tol(dt) * 10)


@pytest.mark.parametrize("groups,O", [(2, 32), (2, 64), (4, 64), (3, 48)])
@pytest.mark.parametrize("D", [1, 2, 3])
def test_forward_affine_tiles_groups(level, groups, O, D):
    # a group's channels are part of each pixel: an affine tile's kernel
    # positions are never one run across pixels (as they are with one group)
    rng = np.random.default_rng(groups * 10 + O + D)
    S = {1: [50], 2: [3, 40], 3: [2, 3, 26]}[D]
    x = rng.standard_normal((2, *S, 8 * groups)).astype(np.float32)
    w = rng.standard_normal((O, *[3] * D, 8)).astype(np.float32)
    got, want = conv_and_ref(x, w, groups=groups)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-3)


@pytest.mark.parametrize("Wd,O,pad", [(wd, o, p) for wd in [1, 2, 6, 7, 8, 9, 10, 16, 17, 33]
                                       for o, p in [(8, 1), (16, 1), (32, 1), (16, 2), (32, 0)] if wd + 2 * p >= 3])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_forward_tap_reuse_line_ends(level, Wd, O, pad, dt):
    # Tiles that reuse each pixel across three taps (one or two vectors of
    # output channels) skip the FMAs of a line's outer padding pixels: the
    # first tile's first pixel, the last tile's last, both in a line no
    # longer than one tile; padding wider than a tap (pad 2: the tile's
    # next pixel is padding too, computed), none (pad 0), short last tiles.
    # The weights are large beside the inputs so that a skipped real pixel
    # or a counted padding one shows.
    rng = np.random.default_rng(Wd * 100 + O + pad)
    x = rng.standard_normal((2, 3, Wd, 5)).astype(dt)
    w = (rng.standard_normal((O, 3, 3, 5)) * 8).astype(dt)
    got, want = conv_and_ref(x, w, pad=pad)
    np.testing.assert_allclose(got, want, rtol=tol(dt), atol=tol(dt) * 100)


@pytest.mark.parametrize("Wd", [7, 8, 9, 10, 16, 17, 24, 33])
@pytest.mark.parametrize("lo,hi,dil", [(1, 1, 1), (1, 0, 1), (0, 1, 1), (1, 2, 1), (2, 1, 1), (1, 1, 2), (2, 1, 2)])
@pytest.mark.parametrize("O", [8, 16, 32, 64])
@pytest.mark.parametrize("flip", [False, True])
def test_forward_edge_tiles(level, Wd, lo, hi, dil, O, flip):
    # Tiles at a line's ends whose first row's first tap (or last row's
    # last) is the only one in the padding run as edge tiles: one row of
    # pointers, the rows after it one step on, the padded tap skipped (by
    # the three-tap form of narrow tiles, by the runs of wider ones: 64
    # outputs with AVX-512, 16 and more with AVX2).
    # One-sided and wider padding (where the next pixel reads the padding
    # too: not an edge tile), dilated kernels (a last row whose last tap
    # alone reads the padding, but whose taps are two pixels apart: not an
    # edge tile either), flipped kernels, lines of one tile and a bit,
    # conv2d and conv3d. Weights large beside the inputs, so that a padded
    # tap read from the neighbouring pixel, or a real one skipped, shows.
    rng = np.random.default_rng(Wd * 1000 + O * 10 + lo * 3 + hi + flip + dil * 7)
    for D in (2, 3):
        x = rng.standard_normal((2,) + (1 + dil,) * (D - 1) + (Wd, 5)).astype(np.float32)
        w = (rng.standard_normal((O,) + (3,) * D + (5,)) * 8).astype(np.float32)
        got = mx.conv_general(arr(x), arr(w), 1, ([lo] * D, [hi] * D), dil, flip=flip)
        want = ref_conv(x, w, [1] * D, [lo] * D, [hi] * D, [dil] * D, [1] * D, 1, flip)
        np.testing.assert_allclose(to_numpy(got), want, rtol=2e-4, atol=2e-2)


@pytest.mark.parametrize("C,O", [(1100, 32), (700, 16)])
def test_forward_edge_tiles_chunked_positions(level, C, O):
    # the reduction cut into chunks of kernel positions: 1100 channels take
    # chunks of 2 positions, across the three taps of a line (no edge tiles,
    # the taps one at a time); 700 take chunks of whole kernel rows
    rng = np.random.default_rng(C + O)
    x = rng.standard_normal((1, 3, 19, C)).astype(np.float32)
    w = (rng.standard_normal((O, 3, 3, C)) / np.sqrt(C * 9)).astype(np.float32)
    got, want = conv_and_ref(x, w)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    ct = rng.standard_normal(want.shape).astype(np.float32)
    _, (dx,) = mx.vjp(lambda a: mx.conv2d(a, arr(w), 1, 1), [arr(x)], [arr(ct)])
    np.testing.assert_allclose(to_numpy(dx), ref_input_grad(ct, w, x.shape, 1), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("Wd", [1, 2, 3, 4, 5, 7, 8, 26, 32, 33])
@pytest.mark.parametrize("O", [24, 32, 40, 48, 64])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_forward_wide_tiles_line_ends(level, Wd, O, dt):
    # With AVX2 the forward picks 3 x 4 or 4 x 3 tiles (rows x vectors of
    # output channels) over 6 x 2 where a line's tiles then take fewer steps:
    # widths whose last tile is short (2, 5, 7, 26, 33), blocks of columns
    # cut short (40 outputs: a 3-vector block and a 2-vector one), float64's
    # 4-lane vectors (24 outputs: 6 vectors); every level runs it.
    rng = np.random.default_rng(Wd * 1000 + O)
    x = rng.standard_normal((2, 3, Wd, 7)).astype(dt)
    w = (rng.standard_normal((O, 3, 3, 7)) * 8).astype(dt)
    got, want = conv_and_ref(x, w)
    np.testing.assert_allclose(got, want, rtol=tol(dt), atol=tol(dt) * 100)
    got, want = conv_and_ref(x[:, None].repeat(2, axis=1), w[:, None].repeat(3, axis=1))  # conv3d, the same lines
    np.testing.assert_allclose(got, want, rtol=tol(dt), atol=tol(dt) * 100)


@pytest.mark.parametrize("N,H,Wd,O", [(1, 9, 37, 64), (2, 3, 100, 48), (1, 2, 300, 33), (3, 5, 64, 64)])
def test_forward_blocks_of_whole_lines(level, N, H, Wd, O):
    # more rows than one task's block: blocks of whole output lines where a
    # line fits in one (37, 100, 64 positions; odd line counts per block,
    # batch items crossed), a line longer than a block cut into several
    # (300); partial vectors of output channels, batch 1
    rng = np.random.default_rng(Wd + O)
    x = rng.standard_normal((N, H, Wd, 12)).astype(np.float32)
    w = rng.standard_normal((O, 3, 3, 12)).astype(np.float32)
    got, want = conv_and_ref(x, w)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-3)


@pytest.mark.parametrize("C,K", [(1100, 3), (150, 3), (40, 7)])
def test_forward_long_reductions(level, C, K):
    # the weights of one column block exceed the chunk the kernel keeps in
    # cache: split over channels (C=1100 with four vectors of output
    # channels a tile), over kernel positions (C=150); 26-wide lines hold
    # affine tiles, whose runs of positions then stop at the chunk's end
    rng = np.random.default_rng(C)
    x = rng.standard_normal((1, 3, 26, C)).astype(np.float32)
    w = (rng.standard_normal((64, K, K, C)) / np.sqrt(C * K * K)).astype(np.float32)
    got, want = conv_and_ref(x, w, pad=K // 2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("D", [1, 2, 3])
def test_forward_1d_3d_lines(level, D):
    rng = np.random.default_rng(D)
    S = {1: [37], 2: [6, 11], 3: [3, 4, 10]}[D]
    x = rng.standard_normal((2, *S, 16)).astype(np.float32)
    w = rng.standard_normal((40, *[3] * D, 16)).astype(np.float32)
    got, want = conv_and_ref(x, w)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-3)


# channel blocks are 128 bytes: 48 and 80 end in a half block, 33 in a ragged one
@pytest.mark.parametrize("C", [1, 5, 16, 32, 33, 48, 80])
@pytest.mark.parametrize("stride,pad,dil", [(1, 1, 1), (2, 1, 1), (1, 2, 2), (1, 0, 1)])
def test_depthwise(level, C, stride, pad, dil):
    rng = np.random.default_rng(C + stride)
    x = rng.standard_normal((2, 7, 21, C)).astype(np.float32)
    w = rng.standard_normal((C, 3, 3, 1)).astype(np.float32)
    got, want = conv_and_ref(x, w, stride, pad, dil, groups=C)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("D", [1, 3])
def test_depthwise_1d_3d_and_float64(level, D):
    rng = np.random.default_rng(D)
    S = {1: [50], 3: [4, 5, 19]}[D]
    x = rng.standard_normal((2, *S, 24))
    w = rng.standard_normal((24, *[3] * D, 1))
    got, want = conv_and_ref(x, w, groups=24)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("O", [64, 48, 40])
def test_forward_large_output_streams(level, O):
    # an output of 16 MB or more computed in one chunk is written around the
    # caches where tiles write whole lines (O=40: pixels do not start on a
    # line, stored as usual); the 30-wide lines end in short tiles
    rng = np.random.default_rng(O)
    n = -(-(16 << 20) // (30 * 30 * O * 4)) + 1
    x = rng.standard_normal((n, 30, 30, 16)).astype(np.float32)
    w = rng.standard_normal((O, 3, 3, 16)).astype(np.float32)
    big = to_numpy(mx.conv2d(arr(x), arr(w), 1, 1))
    assert big.nbytes >= 16 << 20
    for i in (0, n - 1):
        assert big[i:i + 1].tobytes() == to_numpy(mx.conv2d(arr(x[i:i + 1]), arr(w), 1, 1)).tobytes()
    want = ref_conv(x[-1:], w, [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], 1, False)
    np.testing.assert_allclose(big[-1:], want, rtol=2e-4, atol=2e-3)


@pytest.mark.parametrize("C,dt", [(64, np.float32), (48, np.float32), (32, np.float64), (40, np.float32)])
def test_depthwise_large_output_streams(level, C, dt):
    # an output of 16 MB or more is written around the caches (whole lines
    # only: C=40 float32 pixels do not start on a line and are stored as
    # usual; C=48 ends in half a channel block): each image gets the bits it
    # gets alone (a 4 MB output), and
    # the values of the float64 reference
    rng = np.random.default_rng(C)
    n = -(-(16 << 20) // (48 * 40 * C * np.dtype(dt).itemsize)) + 1
    x = rng.standard_normal((n, 48, 40, C)).astype(dt)
    w = rng.standard_normal((C, 3, 3, 1)).astype(dt)
    big = to_numpy(mx.conv2d(arr(x), arr(w), 1, 1, 1, C))
    assert big.nbytes >= 16 << 20
    for i in (0, n - 1):
        one = to_numpy(mx.conv2d(arr(x[i:i + 1]), arr(w), 1, 1, 1, C))
        assert big[i:i + 1].tobytes() == one.tobytes()
    xp = np.pad(x[-1].astype(np.float64), ((1, 1), (1, 1), (0, 0)))
    want = sum(xp[i:i + 48, j:j + 40] * w[:, i, j, 0] for i in range(3) for j in range(3))
    np.testing.assert_allclose(big[-1], want, rtol=tol(dt), atol=tol(dt))


def test_depthwise_flip_input_dilation_multiplier(level):
    # flip and input dilation take the edge path of the depthwise kernel; a
    # channel multiplier of 2 is a grouped convolution
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 6, 9, 16))
    w = rng.standard_normal((16, 3, 2, 1))
    got = mx.conv_general(arr(x), arr(w), stride=[1, 2], padding=([2, 1], [1, 2]),
                          input_dilation=[1, 2], groups=16, flip=True)
    want = ref_conv(x, w, [1, 2], [2, 1], [1, 2], [1, 1], [1, 2], 16, True)
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-12, atol=1e-12)
    w2 = rng.standard_normal((32, 3, 3, 1))
    got, want = conv_and_ref(x, w2, groups=16)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# Three taps along the line at unit stride: edge tiles (padding, input
# dilation's holes, lines that end in a short tile) load each pixel once too,
# from a table of pixel pointers; padding wider than a tap, negative padding
# and flip move where the zeros are.
@pytest.mark.parametrize("pad", [(1, 1), (2, 0), (0, 3), (-1, 2), (3, 3)])
@pytest.mark.parametrize("idil", [1, 2])
@pytest.mark.parametrize("flip", [False, True])
def test_depthwise_three_taps_edges(level, pad, idil, flip):
    rng = np.random.default_rng([pad[0] + 1, pad[1], idil])
    x = rng.standard_normal((2, 3, 13, 32))
    w = rng.standard_normal((32, 2, 3, 1))
    got = mx.conv_general(arr(x), arr(w), padding=([1, pad[0]], [0, pad[1]]),
                          input_dilation=[1, idil], groups=32, flip=flip)
    want = ref_conv(x, w, [1, 1], [1, pad[0]], [0, pad[1]], [1, 1], [1, idil], 32, flip)
    assert got.shape == want.shape
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-12, atol=1e-12)


def weight_grad(x, w, stride, pad, dil, groups):
    D = x.ndim - 2
    fn = {1: mx.conv1d, 2: mx.conv2d, 3: mx.conv3d}[D]
    xm, wm = arr(x), arr(w)
    y = fn(xm, wm, stride, pad, dil, groups)
    ct = np.random.default_rng(1).standard_normal(y.shape).astype(x.dtype)
    _, (dw,) = mx.vjp(lambda b: fn(xm, b, stride, pad, dil, groups), [wm], [arr(ct)])
    return to_numpy(dw), ref_weight_grad(x, ct, w.shape, [stride] * D, [pad] * D, [dil] * D, groups)


@pytest.mark.parametrize("O", [1, 7, 16, 64, 65])
@pytest.mark.parametrize("C", [1, 6, 13, 32])
def test_weight_grad_widths(level, O, C):
    rng = np.random.default_rng(O * 100 + C)
    x = rng.standard_normal((2, 6, 11, C))
    w = rng.standard_normal((O, 3, 3, C))
    got, want = weight_grad(x, w, 1, 1, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-10)


@pytest.mark.parametrize("stride,pad,dil,groups", [(2, 1, 1, 1), (1, 2, 2, 2), (1, 0, 1, 4), (3, 1, 1, 2)])
def test_weight_grad_configs(level, stride, pad, dil, groups):
    rng = np.random.default_rng(stride + groups)
    x = rng.standard_normal((3, 9, 10, 8)).astype(np.float32)
    w = rng.standard_normal((24, 3, 3, 8 // groups)).astype(np.float32)
    got, want = weight_grad(x, w, stride, pad, dil, groups)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_weight_grad_many_rows(level):
    # more rows than one partition of the row sum (the partials are added in order)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 40, 40, 8)).astype(np.float32)
    w = rng.standard_normal((16, 3, 3, 8)).astype(np.float32)
    got, want = weight_grad(x, w, 1, 1, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-2)


@pytest.mark.parametrize("xshape,O,pad", [
    ((5, 7, 9, 16), 24, 2),    # several images per block: padded lines inside a block's row range
    ((3, 6, 13, 8), 64, 1),    # 13-wide lines: blocks of whole lines, not a power of two
    ((2, 3000, 8), 64, 1),     # 1-D lines longer than a block: blocks cut inside a line
])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_weight_grad_blocks(level, xshape, O, pad, dt):
    # The weight gradient walks the rows in blocks sized per level (long,
    # L2-resident ones with AVX-512, L1-sized below), cut at output lines
    # where a line fits; every row of a block, padded ones included, must
    # land on the right kernel position.
    rng = np.random.default_rng(sum(xshape) + O)
    D = len(xshape) - 2
    x = rng.standard_normal(xshape).astype(dt)
    w = rng.standard_normal((O,) + (3,) * D + (xshape[-1],)).astype(dt)
    got, want = weight_grad(x, w, 1, pad, 1, 1)
    t = {np.float32: 1e-4, np.float64: 1e-11}[dt]
    np.testing.assert_allclose(got, want, rtol=t, atol=t * 10 * np.abs(want).max())


def ref_input_grad(ct, w, x_shape, pad):
    """d/dx of sum(ct * conv(x, w)) for stride 1, no dilation, one group and
    padding `pad` on both sides of every spatial dim (float64): each kernel
    position's ct @ w added into the window it read, the padding cut off."""
    ct = np.asarray(ct, np.float64)
    w = np.asarray(w, np.float64)
    D = ct.ndim - 2
    OS = ct.shape[1:-1]
    gp = np.zeros((x_shape[0],) + tuple(s + 2 * pad for s in x_shape[1:-1]) + (x_shape[-1],))
    for kp in np.ndindex(*w.shape[1:-1]):
        sl = tuple(slice(k, k + o) for k, o in zip(kp, OS))
        gp[(slice(None),) + sl] += ct @ w[(slice(None),) + kp]
    return gp[(slice(None),) + tuple(slice(pad, gp.shape[1 + d] - pad) for d in range(D))]


@pytest.mark.parametrize("shape,O,pad", [
    ((1, 1, 1, 5), 7, 1),          # a 1-pixel image: all but the centre tap read the padding
    ((1, 2, 9, 3), 16, 3),         # wider padding than the kernel: lines that see nothing but zeros
    ((2, 3, 17, 16), 33, 2),       # odd widths, leading taps off the input on several lines
    ((1, 4, 2, 5, 16), 32, 2),     # 3-D: padded depth and height taps skipped, 5-wide lines
    ((1, 1, 1, 13, 8), 16, 1),     # 3-D, one plane of one line
    ((3, 7, 5), 20, 4),            # 1-D: the padding wider than the kernel
])
def test_padded_kernel_positions(level, shape, O, pad):
    # Kernel positions that every row of a tile reads in the padding (the
    # forward kernel skips them), and rows of a weight-gradient block that
    # read the padding at a position (cut off the block's row range): the
    # forward output, both gradients and the values at the image edges.
    rng = np.random.default_rng(sum(shape) + O + pad)
    D = len(shape) - 2
    x = rng.standard_normal(shape)
    w = rng.standard_normal((O,) + (3,) * D + (shape[-1],))
    fn = {1: mx.conv1d, 2: mx.conv2d, 3: mx.conv3d}[D]
    got, want = conv_and_ref(x, w, 1, pad)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)
    ct = rng.standard_normal(want.shape)
    _, (dx, dw) = mx.vjp(lambda a, b: fn(a, b, 1, pad), [arr(x), arr(w)], [arr(ct)])
    np.testing.assert_allclose(to_numpy(dx), ref_input_grad(ct, w, x.shape, pad), rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(to_numpy(dw), ref_weight_grad(x, ct, w.shape, [1] * D, [pad] * D, [1] * D, 1),
                               rtol=1e-11, atol=1e-10)
    # the same in float32, where the kernels' tiles are twice as wide
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    got, want = conv_and_ref(x32, w32, 1, pad)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


_DETERMINISM = r"""
import numpy as np, ember.core as mx, sys
rng = np.random.default_rng(0)
x = mx.array(rng.standard_normal((8, 40, 40, 8)).astype(np.float32))
w = mx.array(rng.standard_normal((16, 3, 3, 8)).astype(np.float32))
ct = mx.array(rng.standard_normal((8, 40, 40, 16)).astype(np.float32))
_, (dx, dw) = mx.vjp(lambda a, b: mx.conv2d(a, b, padding=1), [x, w], [ct])
y = mx.conv2d(x, w, padding=1)
sys.stdout.write(np.array(dw).tobytes().hex()[:4000] + np.array(dx).tobytes().hex()[::997]
                 + np.array(y).tobytes().hex()[::991])
"""


def test_results_do_not_depend_on_thread_count():
    outs = []
    for n in ("1", "2", "3"):
        env = dict(os.environ, EMBER_NUM_THREADS=n)
        outs.append(subprocess.run([sys.executable, "-c", _DETERMINISM], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    assert outs[0] == outs[1] == outs[2]


def test_packed_weights_follow_the_weight_array():
    # The kernel keeps packed copies of recently used weight arrays; a new
    # array (even one reusing the old buffer) must never see stale weights.
    rng = np.random.default_rng(5)
    x = mx.array(rng.standard_normal((1, 6, 6, 8)).astype(np.float32))
    wn = rng.standard_normal((16, 3, 3, 8)).astype(np.float32)
    w = mx.array(wn)
    first = to_numpy(mx.conv2d(x, w, padding=1))
    np.testing.assert_array_equal(to_numpy(mx.conv2d(x, w, padding=1)), first)
    for step in range(3):
        w = w * 0.5 + 1.0  # may donate w's buffer to the result
        wn = wn * 0.5 + 1.0
        _, want = conv_and_ref(to_numpy(x), wn)
        np.testing.assert_allclose(to_numpy(mx.conv2d(x, w, padding=1)), want, rtol=1e-4, atol=1e-4)
    w[0] = 0.0
    wn[0] = 0.0
    _, want = conv_and_ref(to_numpy(x), wn)
    np.testing.assert_allclose(to_numpy(mx.conv2d(x, w, padding=1)), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_types_all_paths(level, dt):
    rng = np.random.default_rng(11)
    mdt = getattr(mx, dt)
    x = mx.array(rng.standard_normal((2, 6, 9, 16)).astype(np.float32)).astype(mdt)
    xr = to_numpy(x.astype(mx.float32)).astype(np.float64)
    for w_shape, groups in [((24, 3, 3, 16), 1), ((16, 3, 3, 1), 16)]:
        w = mx.array(rng.standard_normal(w_shape).astype(np.float32)).astype(mdt)
        wr = to_numpy(w.astype(mx.float32)).astype(np.float64)
        got = mx.conv2d(x, w, padding=1, groups=groups)
        assert got.dtype == mdt
        want = ref_conv(xr, wr, [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], groups, False)
        t = 3e-2 if dt == "float16" else 2e-1
        np.testing.assert_allclose(to_numpy(got.astype(mx.float32)), want, rtol=t, atol=t * 4)


# A half output is rounded from the float32 kernels' sums block by block of
# output rows (the last block partial), chunk sums included: the same bits as
# the float32 convolution of the same values, rounded. Odd group widths keep
# bfloat16 off the channel-pair and tile paths, which sum in their own order.
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("op,xs,ws,kw", [
    ("conv2d", (2, 21, 30, 15), (24, 3, 3, 15), dict(padding=1)),            # 6 blocks, the last partial
    ("conv2d", (1, 7, 40, 261), (40, 3, 3, 261), dict(padding=(1, 2))),      # kernel positions in chunks
    ("conv2d", (2, 9, 13, 12), (8, 3, 3, 3), dict(groups=4, stride=2)),      # groups, a partial vector
    ("conv1d", (3, 700, 9), (17, 5, 9), dict(padding=2, dilation=2)),
    ("conv3d", (1, 6, 11, 13, 5), (32, 3, 3, 3, 5), dict(padding=1)),
    ("conv_transpose2d", (2, 11, 12, 7), (16, 3, 3, 7), dict(stride=2, padding=1)),
])
def test_half_output_is_the_float32_sums_rounded(level, dt, op, xs, ws, kw):
    rng = np.random.default_rng(sum(xs) + sum(ws))
    mdt = getattr(mx, dt)
    x = mx.array(rng.standard_normal(xs).astype(np.float32)).astype(mdt)
    w = mx.array(rng.standard_normal(ws).astype(np.float32)).astype(mdt)
    amx_before = mx._set_amx(False)
    try:
        got = getattr(mx, op)(x, w, **kw)
        want = getattr(mx, op)(x.astype(mx.float32), w.astype(mx.float32), **kw).astype(mdt)
        assert got.dtype == mdt
        np.testing.assert_array_equal(to_numpy(got.view(mx.uint16)), to_numpy(want.view(mx.uint16)))
    finally:
        mx._set_amx(amx_before)


def bf16(a):
    """a rounded to bfloat16, as an Ember array, and its values in float64."""
    m = mx.array(np.asarray(a, np.float32)).astype(mx.bfloat16)
    return m, to_numpy(m.astype(mx.float32)).astype(np.float64)


def assert_bf16_close(got, want):
    """got (bfloat16) is want (float64) rounded to bfloat16, give or take one
    rounding step and float32 sums: a channel pair multiplied by the wrong
    weights is off by the size of the terms."""
    assert got.dtype == mx.bfloat16
    got = to_numpy(got.astype(mx.float32)).astype(np.float64)
    scale = max(float(np.abs(want).max()), 1.0)
    np.testing.assert_allclose(got, want, rtol=2.0 ** -7, atol=scale * 2.0 ** -12)


# bfloat16 forward convolutions: on AVX-512 CPUs with the BF16 extension
# they multiply pairs of input channels (VDPBF16PS) over weights packed by
# channel pairs; elsewhere, and for odd group widths, through float32; on
# CPUs with AMX-BF16, groups of 16 channels or more run on the tile unit
# (level_amx runs each test with it on and off).
@pytest.mark.parametrize("C,O,groups,stride,pad,dil", [
    (16, 16, 1, 1, 1, 1),    # one output vector: three-tap pixel reuse
    (8, 32, 1, 1, 1, 1),     # two vectors
    (32, 48, 1, 2, 1, 1),    # three, strided
    (32, 64, 1, 1, 2, 2),    # four, dilated
    (24, 20, 1, 1, 1, 1),    # a partial vector of output channels
    (16, 24, 2, 1, 1, 1),    # groups of 8 channels: pairs start at each group's offset
    (12, 8, 4, 1, 0, 1),     # groups of 3 channels (odd): float32 products
    (5, 16, 1, 1, 1, 1),     # odd channel count
    (2, 16, 1, 3, 2, 1),     # one channel pair
])
def test_bfloat16_channel_pairs(level_amx, C, O, groups, stride, pad, dil):
    rng = np.random.default_rng(C * 7 + O + groups)
    x, xr = bf16(rng.standard_normal((2, 9, 13, C)))
    w, wr = bf16(rng.standard_normal((O, 3, 3, C // groups)))
    got = mx.conv2d(x, w, stride=stride, padding=pad, dilation=dil, groups=groups)
    want = ref_conv(xr, wr, [stride] * 2, [pad] * 2, [pad] * 2, [dil] * 2, [1, 1], groups, False)
    assert_bf16_close(got, want)


@pytest.mark.parametrize("D", [1, 3])
def test_bfloat16_channel_pairs_1d_3d_long_reduction(level_amx, D):
    rng = np.random.default_rng(D)
    if D == 1:
        # 2306 channels: a kernel position's weights are cut into two
        # chunks, each an even number of channels (1154 + 1152)
        x, xr = bf16(rng.standard_normal((2, 7, 2306)))
        w, wr = bf16(rng.standard_normal((64, 1, 2306)) * 0.05)
        got = mx.conv1d(x, w)
    else:
        x, xr = bf16(rng.standard_normal((1, 4, 5, 6, 10)))
        w, wr = bf16(rng.standard_normal((32, 3, 3, 3, 10)))
        got = mx.conv3d(x, w, padding=1)
    want = ref_conv(xr, wr, [1] * D, [D // 3] * D, [D // 3] * D, [1] * D, [1] * D, 1, False)
    assert_bf16_close(got, want)


def test_bfloat16_channel_pairs_flipped_and_input_gradient(level_amx):
    # conv_transpose and the input gradient run the forward kernel with a
    # flipped (reverse-packed) kernel and input dilation
    rng = np.random.default_rng(9)
    x, xr = bf16(rng.standard_normal((2, 6, 7, 16)))
    w, wr = bf16(rng.standard_normal((32, 3, 3, 16)))
    ct, ctr = bf16(rng.standard_normal((2, 6, 7, 32)))
    _, (dx,) = mx.vjp(lambda a: mx.conv2d(a, w, padding=1), [x], [ct])
    assert_bf16_close(dx, ref_input_grad(ctr, wr, x.shape, 1))
    wt, wtr = bf16(rng.standard_normal((16, 3, 3, 32)))
    got = mx.conv_transpose2d(ct, wt, stride=2, padding=1)
    want = ref_conv_transpose(ctr, wtr, [2, 2], [1, 1], [1, 1], [0, 0], 1)
    assert_bf16_close(got, want)


@pytest.mark.parametrize("W,C", [(4, 8), (20, 32)])  # channel pairs; the tile unit's (direct) A tiles
def test_bfloat16_channel_pairs_non_finite(level_amx, W, C):
    # an infinity or a NaN in one channel of a pair reaches every output
    # that reads it, as with float32 products
    x = np.ones((1, 4, W, C), np.float32)
    x[0, 1, 1, 3] = np.inf
    x[0, 2, W - 2, C - 2] = np.nan
    w = np.ones((2 * C, 1, 1, C), np.float32)
    got = to_numpy(mx.conv2d(bf16(x)[0], bf16(w)[0]).astype(mx.float32))
    want = to_numpy(mx.conv2d(mx.array(x), mx.array(w)))
    np.testing.assert_array_equal(got, want)
    assert np.isposinf(got[0, 1, 1]).all() and np.isnan(got[0, 2, W - 2]).all()


# The tile unit's forward path (AMX-BF16 CPUs; the other paths where it is
# off): 16 output rows x 32 channels of one kernel position an A tile, read
# straight from the input where the 16 rows read pixels one step apart and
# the chunk is whole, else gathered (line ends, padding, strides that break
# the step, input dilation, partial chunks); two row tiles x two tiles of 16
# output channels a block, a lone row tile at the end of a block.
@pytest.mark.parametrize("shape,O,groups,stride,pad,dil", [
    ((2, 9, 21, 32), 64, 1, 1, 1, 1),     # whole and short row tiles, one chunk
    ((1, 6, 40, 96), 32, 1, 1, 1, 1),     # three chunks a kernel position
    ((1, 7, 19, 40), 20, 1, 1, 1, 1),     # a partial chunk (8 channels), O < 32
    ((1, 7, 19, 17), 48, 1, 1, 1, 1),     # one partial chunk, a partial channel block
    ((1, 11, 37, 32), 33, 1, 2, 1, 1),    # strided: loads rows two pixels apart
    ((1, 11, 37, 32), 16, 1, 1, 2, 2),    # dilated
    ((2, 8, 13, 64), 64, 2, 1, 1, 1),     # groups of 32 channels
    ((1, 5, 6, 32), 32, 1, 1, 2, 1),      # rows and tiles all padding at some positions
])
def test_bfloat16_tiles(level_amx, shape, O, groups, stride, pad, dil):
    rng = np.random.default_rng(sum(shape) + O)
    x, xr = bf16(rng.standard_normal(shape))
    w, wr = bf16(rng.standard_normal((O, 3, 3, shape[-1] // groups)))
    got = mx.conv2d(x, w, stride=stride, padding=pad, dilation=dil, groups=groups)
    want = ref_conv(xr, wr, [stride] * 2, [pad] * 2, [pad] * 2, [dil] * 2, [1, 1], groups, False)
    assert_bf16_close(got, want)
    # each output one sum over (kernel position, channels) in order, whatever
    # block or task computes it: an image alone gives its rows of the batch
    np.testing.assert_array_equal(
        to_numpy(mx.conv2d(x[-1:], w, stride=stride, padding=pad, dilation=dil, groups=groups).astype(mx.float32)),
        to_numpy(got[-1:].astype(mx.float32)))


@pytest.mark.parametrize("D", [1, 3])
def test_bfloat16_tiles_1d_3d_long_lines(level_amx, D):
    rng = np.random.default_rng(5 + D)
    if D == 1:  # lines longer than a task's block of rows
        x, xr = bf16(rng.standard_normal((2, 600, 48)))
        w, wr = bf16(rng.standard_normal((40, 5, 48)))
        got = mx.conv1d(x, w, padding=2)
        want = ref_conv(xr, wr, [1], [2], [2], [1], [1], 1, False)
    else:
        x, xr = bf16(rng.standard_normal((1, 4, 5, 18, 32)))
        w, wr = bf16(rng.standard_normal((32, 3, 3, 3, 32)))
        got = mx.conv3d(x, w, padding=1)
        want = ref_conv(xr, wr, [1] * 3, [1] * 3, [1] * 3, [1] * 3, [1] * 3, 1, False)
    assert_bf16_close(got, want)


def test_bfloat16_tiles_transposed_and_partial_chunks(level_amx):
    rng = np.random.default_rng(21)
    ct, ctr = bf16(rng.standard_normal((2, 6, 7, 32)))
    wt, wtr = bf16(rng.standard_normal((32, 3, 3, 32)))
    got = mx.conv_transpose2d(ct, wt, stride=2, padding=1)  # input dilation: gathered tiles
    assert_bf16_close(got, ref_conv_transpose(ctr, wtr, [2, 2], [1, 1], [1, 1], [0, 0], 1))
    # a partial chunk (40 channels: 32 + 8) reads no channel past the
    # group: the pixel before an infinity stays finite
    x = np.ones((1, 3, 20, 40), np.float32)
    x[0, 1, 5, 0] = np.inf
    got = to_numpy(mx.conv2d(bf16(x)[0], bf16(np.ones((32, 1, 1, 40), np.float32))[0]).astype(mx.float32))
    assert np.isposinf(got[0, 1, 5]).all() and (got[0, 1, 4] == 40).all()
    assert np.isfinite(np.delete(got[0, 1], 5, 0)).all()
