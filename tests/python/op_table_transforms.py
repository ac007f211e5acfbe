"""Op-table rows for the transform suite: matmul and the products, conv,
fft, linalg and random.

Imported by op_table.py (at its end); rows register with ``add_op`` and carry
``forward=False``: their values, dtypes and errors are checked against
NumPy / closed forms in their own files (test_matmul.py, test_contract.py,
test_conv.py, test_fft.py, test_linalg.py, test_random.py), and these rows
give ``test_transforms_table.py`` their samples -- jvp/vjp against finite
differences in float64 and vmap against a Python loop.

Samples are drawn so the checks are well posed: matrices to invert or
factor are well conditioned (``_square``) or symmetric positive definite
(``_spd``), eigen- and singular values are apart, random keys are
``Fixed`` uint32 leaves (three draws of a sample give three keys, so vmap
runs over keys as well as over parameters).
"""

import numpy as np

from conftest import mx, mx_dtype
from op_table import Fixed, SampleInput, add_op

FL = ["float32", "float64"]


def _n(shape, rng, scale=1.0):
    return np.asarray(rng.standard_normal(tuple(shape)) * scale)


def _square(shape, rng):
    """Well-conditioned square matrices (a scaled identity plus noise)."""
    n = shape[-1]
    return _n(shape, rng, 0.3) + 2.0 * np.eye(n)


def _spd(shape, rng):
    """Symmetric positive definite matrices with well separated
    eigenvalues (1, 2, ..., n rotated by a random orthogonal matrix)."""
    n = shape[-1]
    q, _ = np.linalg.qr(_n(shape, rng))
    w = np.arange(1.0, n + 1.0) + rng.uniform(0, 0.2, n)
    return np.einsum("...ij,j,...kj->...ik", q, w, q)


def _lower(shape, rng):
    return np.tril(_square(shape, rng))


def _key(rng):
    return Fixed(rng.integers(0, 2 ** 32, size=2, dtype=np.uint64).astype(np.uint32), "uint32")


def _row(name, op, samples, family, dtypes=FL, **kw):
    """A transform-only row; submodule functions are named as in the API
    list (``linalg.inv``, ``fft.rfft``, ``random.split``)."""
    if family in ("fft", "linalg", "random"):
        name = f"{family}.{name}"
    add_op(name=name, op=op, ref=None, dtypes=dtypes, sample_inputs=samples,
           family=family, forward=False, **kw)


# ---- matmul and the products -------------------------------------------------

def _matmul_samples(n, rng):
    return [SampleInput((_n((3, 4), rng), _n((4, 5), rng)), desc="2-d"),
            SampleInput((_n((2, 3, 4), rng), _n((4, 2), rng)), desc="batch x 2-d"),
            SampleInput((_n((2, 1, 3, 2), rng), _n((3, 2, 4), rng)), desc="broadcast batch"),
            SampleInput((_n((4,), rng), _n((4, 3), rng)), desc="1-d x 2-d"),
            SampleInput((_n((3, 4), rng), _n((4,), rng)), desc="2-d x 1-d"),
            SampleInput((_n((4,), rng), _n((4,), rng)), desc="1-d x 1-d"),
            SampleInput((_n((0, 3), rng), _n((3, 2), rng)), desc="empty rows"),
            SampleInput((_n((2, 0), rng), _n((0, 3), rng)), desc="empty contraction")]


_row("matmul", mx.matmul, _matmul_samples, "product")


def _addmm_samples(n, rng):
    # the transform suite takes the first three samples of a row
    return [SampleInput((_n((3, 5), rng), _n((3, 4), rng), _n((4, 5), rng)), desc="default"),
            SampleInput((_n((), rng), _n((2, 3), rng), _n((3, 4), rng)),
                        {"alpha": -1.5, "beta": 2.0}, desc="0-d c, alpha, beta"),
            SampleInput((_n((5,), rng), _n((2, 3, 4), rng), _n((4, 5), rng)),
                        {"beta": 0.0}, desc="batch, broadcast c, beta 0")]


_row("addmm", mx.addmm, _addmm_samples, "product")


def _gather_mm_samples(n, rng):
    a, b = _n((3, 2, 4), rng), _n((2, 4, 3), rng)
    li = Fixed(rng.integers(0, 3, size=(5,)), "uint32")
    ri = Fixed(rng.integers(0, 2, size=(5,)), "uint32")
    return [SampleInput((a, b), {"lhs_indices": li, "rhs_indices": ri}, desc="both indexed"),
            SampleInput((_n((2, 4), rng), b), {"rhs_indices": ri}, desc="rhs indexed")]


_row("gather_mm", mx.gather_mm, _gather_mm_samples, "product")


def _segmented_mm_samples(n, rng):
    seg = Fixed(np.array([[0, 2], [2, 2], [2, 6]]), "uint32")
    return [SampleInput((_n((3, 6), rng), _n((6, 4), rng), seg), desc="3 segments (one empty)")]


_row("segmented_mm", mx.segmented_mm, _segmented_mm_samples, "product")


def _block_masked_samples(n, rng):
    # blocks of 32 (the smallest size MLX supports): a 2x2 grid of blocks
    a, b = _n((64, 64), rng, 0.2), _n((64, 64), rng, 0.2)
    mo = Fixed(np.array([[True, False], [True, True]]), "bool")
    ml = Fixed(np.array([[True, False], [True, True]]), "bool")
    mr = Fixed(np.array([[False, True], [True, True]]), "bool")
    return [SampleInput((a, b), {"block_size": 32, "mask_out": mo}, desc="output mask"),
            SampleInput((a, b), {"block_size": 32, "mask_lhs": ml, "mask_rhs": mr},
                        desc="operand masks")]


_row("block_masked_mm", mx.block_masked_mm, _block_masked_samples, "product")


def _hadamard_samples(n, rng):
    return [SampleInput((_n((3, 8), rng),), desc="n 8"),
            SampleInput((_n((2, 12), rng),), {"scale": 0.5}, desc="n 12, scale"),
            SampleInput((_n((4,), rng),), desc="1-d")]


_row("hadamard_transform", mx.hadamard_transform, _hadamard_samples, "product")


# ---- convolution ---------------------------------------------------------------

def _conv1d_samples(n, rng):
    return [SampleInput((_n((2, 7, 3), rng), _n((4, 3, 3), rng)), desc="default"),
            SampleInput((_n((1, 9, 4), rng), _n((4, 2, 2), rng)),
                        {"stride": 2, "padding": 1, "dilation": 2, "groups": 2},
                        desc="stride, padding, dilation, groups"),
            SampleInput((_n((2, 6, 3), rng), _n((3, 3, 1), rng)), {"groups": 3},
                        desc="depthwise")]


_row("conv1d", mx.conv1d, _conv1d_samples, "conv")


def _conv2d_samples(n, rng):
    return [SampleInput((_n((1, 5, 5, 2), rng), _n((3, 3, 3, 2), rng)), desc="default"),
            SampleInput((_n((2, 6, 5, 2), rng), _n((2, 2, 3, 2), rng)),
                        {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)},
                        desc="stride, padding, dilation"),
            SampleInput((_n((1, 5, 6, 4), rng), _n((6, 3, 2, 2), rng)),
                        {"groups": 2, "dilation": 2, "padding": (2, 1)}, desc="groups, dilation")]


_row("conv2d", mx.conv2d, _conv2d_samples, "conv")


def _conv3d_samples(n, rng):
    return [SampleInput((_n((1, 4, 4, 3, 2), rng), _n((2, 2, 2, 2, 2), rng)),
                        {"padding": 1}, desc="padding")]


_row("conv3d", mx.conv3d, _conv3d_samples, "conv")


def _conv_general_samples(n, rng):
    return [SampleInput((_n((1, 5, 4, 2), rng), _n((2, 2, 2, 2), rng)),
                        {"stride": (1, 2), "padding": ([1, 0], [0, 1]),
                         "kernel_dilation": (2, 1), "input_dilation": (1, 2), "flip": True},
                        desc="asymmetric padding, input dilation, flip"),
            SampleInput((_n((2, 6, 4), rng), _n((4, 3, 2), rng)),
                        {"groups": 2, "padding": -1}, desc="groups, negative padding")]


_row("conv_general", mx.conv_general, _conv_general_samples, "conv")


def _conv_t1_samples(n, rng):
    return [SampleInput((_n((2, 5, 3), rng), _n((2, 3, 3), rng)),
                        {"stride": 2, "padding": 1, "output_padding": 1}, desc="stride, output padding")]


_row("conv_transpose1d", mx.conv_transpose1d, _conv_t1_samples, "conv")


def _conv_t2_samples(n, rng):
    return [SampleInput((_n((1, 4, 3, 2), rng), _n((3, 2, 2, 2), rng)),
                        {"stride": (2, 1), "dilation": (1, 2)}, desc="stride, dilation"),
            SampleInput((_n((2, 3, 3, 4), rng), _n((4, 2, 3, 2), rng)),
                        {"groups": 2, "padding": 1, "output_padding": (1, 0), "stride": 2},
                        desc="groups, padding, output padding")]


_row("conv_transpose2d", mx.conv_transpose2d, _conv_t2_samples, "conv")


def _conv_t3_samples(n, rng):
    return [SampleInput((_n((1, 3, 3, 2, 2), rng), _n((2, 2, 2, 2, 2), rng)),
                        {"stride": 2}, desc="stride")]


_row("conv_transpose3d", mx.conv_transpose3d, _conv_t3_samples, "conv")


def _convolve_samples(n, rng):
    a, v = _n((7,), rng), _n((3,), rng)
    return [SampleInput((a, v), {"mode": m}, desc=m) for m in ("full", "same", "valid")]


_row("convolve", mx.convolve, _convolve_samples, "conv")


# ---- fft -------------------------------------------------------------------------
# complex inputs are Fixed complex64 leaves (Ember has no complex128)

def _cplx(shape, rng):
    return Fixed(_n(shape, rng) + 1j * _n(shape, rng), "complex64")


def _fft1_samples(real_in):
    # the transform suite takes the first three samples of a row
    def samples(n, rng):
        x = (lambda s: _n(s, rng)) if real_in else (lambda s: _cplx(s, rng))
        return [SampleInput((x((3, 11)),), {"norm": "forward"}, desc="prime length, forward"),
                SampleInput((x((5, 3)),), {"axis": 0, "n": 6}, desc="axis 0, padded"),
                SampleInput((x((6, 2, 3)),), {"axis": -2, "n": 5, "norm": "ortho"},
                            desc="middle axis, cropped, ortho")]
    return samples


def _fftn_samples(real_in, two):
    def samples(n, rng):
        x = (lambda s: _n(s, rng)) if real_in else (lambda s: _cplx(s, rng))
        out = [SampleInput((x((2, 4, 6)),), desc="default axes"),
               SampleInput((x((4, 3, 5)),), {"s": (4, 6), "axes": (0, 2)}, desc="s, axes")]
        if not two:
            out.append(SampleInput((x((3, 4, 2)),), {"norm": "ortho"}, desc="all axes, ortho"))
        return out
    return samples


for _name, _real in [("fft", True), ("ifft", False), ("rfft", True), ("irfft", False)]:
    _row(_name, getattr(mx.fft, _name), _fft1_samples(_real), "fft")
for _name, _real in [("fft2", True), ("ifft2", False), ("rfft2", True), ("irfft2", False),
                     ("fftn", True), ("ifftn", False), ("rfftn", True), ("irfftn", False)]:
    _row(_name, getattr(mx.fft, _name), _fftn_samples(_real, _name.endswith("2")), "fft")


def _shift_samples(n, rng):
    return [SampleInput((_n((4, 5), rng),), desc="all axes"),
            SampleInput((_n((3, 6, 2), rng),), {"axes": [1]}, desc="one axis")]


_row("fftshift", mx.fft.fftshift, _shift_samples, "fft")
_row("ifftshift", mx.fft.ifftshift, _shift_samples, "fft")


def _stft_samples(n, rng):
    return [SampleInput((_n((20,), rng),), {"n_fft": 8, "hop_length": 3}, desc="centered"),
            SampleInput((_n((16,), rng), _n((8,), rng)), {"n_fft": 8, "center": False},
                        desc="window, not centered")]


def _stft(x, window=None, **kw):
    return mx.fft.stft(x, window=window, **kw)


_row("stft", _stft, _stft_samples, "fft")


def _istft_samples(n, rng):
    return [SampleInput((_cplx((5, 6), rng),), {"hop_length": 3}, desc="hop 3"),
            SampleInput((_cplx((4, 5), rng),), {"length": 10, "center": False}, desc="length")]


_row("istft", mx.fft.istft, _istft_samples, "fft")


# ---- linalg ---------------------------------------------------------------------

L = mx.linalg


def _square_samples(n, rng):
    return [SampleInput((_square((3, 3), rng),), desc="3x3"),
            SampleInput((_square((2, 4, 4), rng),), desc="batch"),
            SampleInput((_square((1, 1), rng),), desc="1x1")]


def _spd_samples(n, rng):
    return [SampleInput((_spd((3, 3), rng),), desc="3x3"),
            SampleInput((_spd((2, 4, 4), rng),), desc="batch")]


for _name in ("inv", "det", "slogdet"):
    _row(_name, getattr(L, _name), _square_samples, "linalg")


def _tri_inv_samples(n, rng):
    return [SampleInput((_lower((3, 3), rng),), desc="lower"),
            SampleInput((np.swapaxes(_lower((2, 4, 4), rng), -1, -2),), {"upper": True},
                        desc="upper, batch")]


_row("tri_inv", L.tri_inv, _tri_inv_samples, "linalg")


def _solve_samples(n, rng):
    return [SampleInput((_square((3, 3), rng), _n((3, 2), rng)), desc="matrix rhs"),
            SampleInput((_square((2, 4, 4), rng), _n((2, 4, 1), rng)), desc="batch")]


_row("solve", L.solve, _solve_samples, "linalg")


def _solve_tri_samples(n, rng):
    return [SampleInput((_lower((3, 3), rng), _n((3, 2), rng)), desc="lower"),
            SampleInput((np.swapaxes(_lower((2, 4, 4), rng), -1, -2), _n((2, 4, 3), rng)),
                        {"upper": True}, desc="upper, batch")]


_row("solve_triangular", L.solve_triangular, _solve_tri_samples, "linalg")


def _cholesky_samples(n, rng):
    return _spd_samples(n, rng) + [SampleInput((_spd((3, 3), rng),), {"upper": True}, desc="upper")]


_row("cholesky", L.cholesky, _cholesky_samples, "linalg")


def _chol_inv_samples(n, rng):
    return [SampleInput((np.linalg.cholesky(_spd((3, 3), rng)),), desc="lower factor")]


_row("cholesky_inv", L.cholesky_inv, _chol_inv_samples, "linalg")


def _tall_samples(n, rng):
    return [SampleInput((_n((4, 3), rng),), desc="tall"),
            SampleInput((_square((2, 3, 3), rng),), desc="square batch")]


_row("qr", L.qr, _tall_samples, "linalg")


def _svd_samples(n, rng):
    # square matrices with singular values apart (U and Vt derivatives need
    # both)
    return [SampleInput((_spd((3, 3), rng) @ np.diag([1.0, -1.0, 1.0]),), desc="square"),
            SampleInput((_spd((2, 4, 4), rng),), {"compute_uv": False}, desc="values, batch")]


def _svd_nonsquare_samples(n, rng):
    return [SampleInput((_n((3, 5), rng),), {"compute_uv": False}, desc="values, wide"),
            SampleInput((_n((2, 5, 3), rng),), {"compute_uv": False}, desc="values, tall batch")]


_row("svd", L.svd, _svd_samples, "linalg")
# non-square: the thin factors' rules (the singular values to second order)
_row("svd-nonsquare", L.svd, _svd_nonsquare_samples, "linalg")
_row("eigh", L.eigh, _spd_samples, "linalg")
_row("eigvalsh", L.eigvalsh, _spd_samples, "linalg")


def _pinv_samples(n, rng):
    return [SampleInput((_square((3, 3), rng),), desc="square"),
            SampleInput((_square((2, 4, 4), rng),), desc="square batch")]


def _pinv_nonsquare_samples(n, rng):
    return [SampleInput((_n((4, 2), rng),), desc="tall"),
            SampleInput((_n((2, 5), rng),), desc="wide")]


_row("pinv", L.pinv, _pinv_samples, "linalg")
_row("pinv-nonsquare", L.pinv, _pinv_nonsquare_samples, "linalg")


def _norm_samples(kind):
    # one row per kind of norm: the transform suite takes three samples a row
    def samples(n, rng):
        if kind == "vector":
            return [SampleInput((_n((5,), rng),), desc="2-norm"),
                    SampleInput((_n((6,), rng),), {"ord": np.inf}, desc="max"),
                    SampleInput((_n((2, 5), rng),), {"ord": 3, "axis": -1}, desc="3-norm of rows")]
        if kind == "matrix":
            return [SampleInput((_n((3, 4), rng),), {"ord": "fro"}, desc="frobenius"),
                    SampleInput((_n((3, 3), rng),), {"ord": 2}, desc="spectral"),
                    SampleInput((_square((3, 3), rng),), {"ord": "nuc"}, desc="nuclear")]
        return [SampleInput((_n((3, 4), rng),), {"ord": 1, "axis": 1}, desc="1-norm of rows"),
                SampleInput((_n((3, 4), rng),), {"ord": -1}, desc="min column sum"),
                SampleInput((_n((2, 3, 4), rng),), {"axis": (1, 2), "keepdims": True},
                            desc="matrix axes, keepdims")]
    return samples


_row("norm", L.norm, _norm_samples("vector"), "linalg")
_row("norm-matrix", L.norm, _norm_samples("matrix"), "linalg")
_row("norm-axes", L.norm, _norm_samples("axes"), "linalg")


def _cross_samples(n, rng):
    return [SampleInput((_n((4, 3), rng), _n((4, 3), rng)), desc="rows"),
            SampleInput((_n((3, 2), rng), _n((3, 1), rng)), {"axis": 0}, desc="axis 0, broadcast")]


_row("cross", L.cross, _cross_samples, "linalg")

# no derivative rules (test_transforms_table.NO_RULE): values are discrete
# (pivots) or complex; vmap only
for _name in ("eig", "eigvals"):
    _row(_name, getattr(L, _name), _square_samples, "linalg", differentiable=False)
_row("lu", L.lu, _tall_samples, "linalg", differentiable=False)
_row("lu_factor", L.lu_factor, _tall_samples, "linalg", differentiable=False)


# ---- random ----------------------------------------------------------------------

R = mx.random


def _uniform_samples(n, rng):
    lo = _n((3,), rng)
    hi = lo + 1.0 + np.abs(_n((3,), rng))
    return [SampleInput((lo, hi), {"shape": (2, 3), "dtype": mx_dtype(n), "key": _key(rng)},
                        desc="array bounds"),
            SampleInput((), {"low": lo[:1].reshape(()), "high": 2.0, "shape": (4,),
                             "dtype": mx_dtype(n), "key": _key(rng)}, desc="0-d low")]


_row("uniform", R.uniform, _uniform_samples, "random")


def _normal_samples(n, rng):
    return [SampleInput(((2, 3),), {"dtype": mx_dtype(n), "loc": _n((3,), rng),
                                    "scale": 1.0 + np.abs(_n((2, 1), rng)), "key": _key(rng)},
                        desc="loc, scale"),
            SampleInput(((5,),), {"dtype": mx_dtype(n), "key": _key(rng)}, desc="standard"),
            SampleInput(((3, 2),), {"dtype": mx_dtype(n), "loc": _n((), rng),
                                    "scale": 0.5 + np.abs(_n((), rng)), "key": _key(rng)},
                        desc="0-d loc, scale")]


_row("normal", R.normal, _normal_samples, "random")


def _truncated_samples(n, rng):
    lo = -1.0 - np.abs(_n((3,), rng))
    return [SampleInput((lo, lo + 2.0), {"shape": (2, 3), "dtype": mx_dtype(n), "key": _key(rng)},
                        desc="array bounds")]


_row("truncated_normal", R.truncated_normal, _truncated_samples, "random")


def _randint_samples(n, rng):
    lo = rng.integers(-5, 5, size=(3,))
    return [SampleInput((lo, lo + rng.integers(1, 9, size=(3,))), {"shape": (2, 3), "key": _key(rng)},
                        desc="array bounds")]


_row("randint", R.randint, _randint_samples, "random", dtypes=["int32"], differentiable=False)


def _bernoulli_samples(n, rng):
    return [SampleInput((rng.uniform(0.1, 0.9, (2, 4)),), {"key": _key(rng)}, desc="p array"),
            SampleInput((0.3, (5,)), {"key": _key(rng)}, desc="scalar p")]


_row("bernoulli", R.bernoulli, _bernoulli_samples, "random", differentiable=False)


def _categorical_samples(n, rng):
    return [SampleInput((_n((3, 5), rng),), {"key": _key(rng)}, desc="last axis"),
            SampleInput((_n((4, 2), rng),), {"axis": 0, "num_samples": 3, "key": _key(rng)},
                        desc="axis 0, 3 samples")]


_row("categorical", R.categorical, _categorical_samples, "random", differentiable=False)


def _shape_only_samples(n, rng):
    return [SampleInput(((2, 3),), {"dtype": mx_dtype(n), "key": _key(rng)}, desc="(2, 3)")]


_row("gumbel", R.gumbel, _shape_only_samples, "random", differentiable=False)


def _laplace_samples(n, rng):
    return [SampleInput(((4,),), {"dtype": mx_dtype(n), "loc": 1.0, "scale": 2.0, "key": _key(rng)},
                        desc="loc, scale")]


_row("laplace", R.laplace, _laplace_samples, "random", differentiable=False)


def _mvn_samples(n, rng):
    return [SampleInput((_n((3,), rng), _spd((3, 3), rng)),
                        {"shape": (4,), "dtype": mx_dtype(n), "key": _key(rng)}, desc="3-d")]


def _mvn(mean, cov, **kw):
    """multivariate_normal with the covariance's symmetric part (a finite
    difference step in a random direction would make it asymmetric, which
    the op rejects)."""
    return R.multivariate_normal(mean, (cov + mx.swapaxes(cov, -1, -2)) * 0.5, **kw)


_row("multivariate_normal", _mvn, _mvn_samples, "random")


def _permutation_samples(n, rng):
    return [SampleInput((_n((6,), rng),), {"key": _key(rng)}, desc="1-d"),
            SampleInput((_n((3, 4), rng),), {"axis": 1, "key": _key(rng)}, desc="axis 1")]


_row("permutation", R.permutation, _permutation_samples, "random")


def _bits_samples(n, rng):
    return [SampleInput(((2, 3),), {"key": _key(rng)}, desc="32-bit"),
            SampleInput(((5,),), {"width": 2, "key": _key(rng)}, desc="16-bit")]


# random.bits is JAX's (MLX 0.32.4 has none): called late, so that the table
# imports under MLX, and its vmap cases are ember_only (test_transforms_table)
_row("bits", lambda *a, **k: R.bits(*a, **k), _bits_samples, "random", dtypes=["uint32"],
     differentiable=False)


def _split_samples(n, rng):
    return [SampleInput((_key(rng),), desc="2 keys"),
            SampleInput((_key(rng),), {"num": 3}, desc="3 keys")]


_row("split", R.split, _split_samples, "random", dtypes=["uint32"], differentiable=False)
