"""Quantization packing where Ember follows MLX 0.32.4 bit for bit (issue
18): quantize's codes, scales and biases for affine (bits 2, 3, 4, 5, 6, 8;
groups 32, 64, 128), mxfp4, mxfp8 and nvfp4 (with and without a global
scale) from float32, float16 and bfloat16 weights; dequantize of those and
of random codes; quantized_matmul on operands whose arithmetic is exact, so
that every backend gives the same bits and the product checks only where
each code and scale is read from.

The cases are the quantization probes of ``tools/mlx_diff_probes.py``
(``tools/mlx_diff.py --ops probe:quantize,probe:dequantize,
probe:quantized_matmul --kinds probe`` compares them between Ember and MLX
directly); here they run on one backend against the NumPy model of the
formats in ``test_quantized.py``. Nothing here needs MLX: run
``EMBER_TEST_BACKEND=mlx ... -m "not ember_only"`` in an interpreter with
``mlx`` to check the model, and so Ember, against MLX."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from conftest import ember_only, mx
from test_quantized import (bf16, f32, half, ref_affine_dequantize, ref_affine_quantize, ref_fp_dequantize,
                            ref_fp_quantize, unpack)

_spec = importlib.util.spec_from_file_location(
    "mlx_diff_probes", Path(__file__).resolve().parents[2] / "tools" / "mlx_diff_probes.py")
P = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(P)

ROUND = {"float32": f32, "float16": half, "bfloat16": bf16}


def bits_of(a):
    """Float values (NumPy, float32) as bit patterns, for exact comparison."""
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


def assert_bits(got, want, what=""):
    np.testing.assert_array_equal(bits_of(np.array(got.astype(mx.float32))), bits_of(want), err_msg=str(what))


@pytest.mark.parametrize("dtype", P.QUANT_DTYPES)
@pytest.mark.parametrize("bits, gs", P.QUANT_AFFINE)
def test_affine_quantize_and_dequantize(bits, gs, dtype):
    w, (wq, s, b) = P.quantize_case(mx, np, "affine", bits, gs, dtype)
    rq, rs, rb = ref_affine_quantize(w.astype(np.float16) if dtype == "float16" else w, gs, bits,
                                     dtype == "bfloat16")
    assert wq.dtype == mx.uint32 and s.dtype == b.dtype == getattr(mx, dtype)
    np.testing.assert_array_equal(np.array(wq), rq)
    assert_bits(s, ROUND[dtype](f32(rs)), "scales")
    assert_bits(b, ROUND[dtype](f32(rb)), "biases")
    d = mx.dequantize(wq, s, b, gs, bits)
    assert d.dtype == getattr(mx, dtype)
    assert_bits(d, ref_affine_dequantize(rq, rs, rb, gs, bits, ROUND[dtype]), "dequantize")


@pytest.mark.parametrize("dtype", P.QUANT_DTYPES)
@pytest.mark.parametrize("mode, gscale", P.QUANT_FP, ids=[m + ("" if g is None else f"-g{g}") for m, g in P.QUANT_FP])
def test_fp_quantize_and_dequantize(mode, gscale, dtype):
    w, (wq, sc) = P.quantize_case(mx, np, mode, None, None, dtype, gscale)
    rq, rs = ref_fp_quantize(w, mode, gscale, dtype=dtype)
    assert wq.dtype == mx.uint32 and sc.dtype == mx.uint8
    np.testing.assert_array_equal(np.array(wq), rq)
    np.testing.assert_array_equal(np.array(sc), rs)
    kw = {} if gscale is None else {"global_scale": mx.array(gscale)}
    d = mx.dequantize(wq, sc, mode=mode, dtype=mx.float32, **kw)
    assert_bits(d, ref_fp_dequantize(rq, rs, mode, gscale), "dequantize")


@pytest.mark.parametrize("bits, gs", P.QUANT_AFFINE)
def test_affine_dequantize_random_codes(bits, gs):
    (codes, s, b), d = P.dequantize_case(mx, np, "affine", bits, gs, "float32")
    assert_bits(d, ref_affine_dequantize(np.array(codes), np.array(s), np.array(b), gs, bits, ROUND["float32"]))


# with a global scale only float32 output: MLX ignores the dtype there (the
# ember_only test below)
FP_DEQ = [(m, g, od) for m, g in P.QUANT_FP for od in (None, "float32", "float16") if g is None or od == "float32"]


@pytest.mark.parametrize("mode, gscale, out_dtype", FP_DEQ, ids=[f"{m}-g{g}-{od}" for m, g, od in FP_DEQ])
def test_fp_dequantize_random_codes(mode, gscale, out_dtype):
    (codes, sc, _), d = P.dequantize_case(mx, np, mode, None, None, "float32", gscale, out_dtype)
    assert d.dtype == getattr(mx, out_dtype or "bfloat16")  # MLX's default for the fp modes
    ref = ref_fp_dequantize(np.array(codes), np.array(sc), mode, gscale)
    assert_bits(d, ROUND[out_dtype or "bfloat16"](ref))


@ember_only
@pytest.mark.parametrize("out_dtype", [None, "float16"])
def test_fp_dequantize_global_scale_keeps_the_dtype(out_dtype):
    """Ember returns the requested dtype (bfloat16 by default) with a global
    scale too; MLX 0.32.4 returns float32 there (the float32 global scale
    promotes its product), ignoring ``dtype``."""
    (codes, sc, _), d = P.dequantize_case(mx, np, "nvfp4", None, None, "float32", 3.7, out_dtype)
    assert d.dtype == getattr(mx, out_dtype or "bfloat16")
    assert_bits(d, ROUND[out_dtype or "bfloat16"](ref_fp_dequantize(np.array(codes), np.array(sc), "nvfp4", 3.7)))


QMM_CASES = [("affine", b, g) for b, g in P.QUANT_AFFINE] + [(m, None, None) for m in ("mxfp4", "mxfp8", "nvfp4")]


@pytest.mark.parametrize("transpose", [True, False], ids=["T", "N"])
@pytest.mark.parametrize("mode, bits, gs", QMM_CASES, ids=[f"{m}-{b}-{g}" for m, b, g in QMM_CASES])
def test_quantized_matmul_exact(mode, bits, gs, transpose):
    for M in (1, 12):  # the matrix-vector and the matrix-matrix kernels (int8 / bfloat16 tiles on Ember)
        x, (codes, s, b), out = P.qmm_exact_case(mx, np, mode, bits, gs, transpose, M)
        if mode == "affine":
            q = unpack(codes, bits).astype(np.float64)
            q = q.reshape(*q.shape[:-1], -1, gs)
            W = (q * s[..., None] + b[..., None]).reshape(codes.shape[0], -1)
        else:
            W = ref_fp_dequantize(codes, s, mode).astype(np.float64)
        ref = np.array(x).astype(np.float64) @ (W.T if transpose else W)
        assert np.array_equal(ref.astype(np.float32).astype(np.float64), ref)  # every sum exact in float32
        assert out.shape == ref.shape and out.dtype == mx.float32
        np.testing.assert_array_equal(np.array(out), ref.astype(np.float32), err_msg=f"M={M}")
