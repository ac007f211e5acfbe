"""to_fp8 / from_fp8: 8-bit floats (e4m3fn) stored as uint8 codes.

Compared with the NumPy reference of ``op_table`` (``fp8_encode_ref``,
``fp8_decode_ref``: nearest of the 127 code magnitudes, ties to the even
code; MLX's saturation of |x| >= 448, infinities and NaN to +-448), which
works on values where the kernel works on bits:

* to_fp8 over every float16 and every bfloat16 bit pattern, float32
  patterns at and around every rounding boundary (midpoints between codes
  and their neighbours, every pattern of the top 16 bits), NaN of either
  sign, infinities, signed zeros; float64 in one rounding (``ember_only``:
  MLX 0.32.4 reads a float64 array's bytes as float32 values);
* from_fp8 of all 256 codes into float16, bfloat16 and float32, with the
  exact bits MLX gives its NaN codes; float64 (``ember_only``: MLX writes
  float32 values into the float64 buffer);
* 0-d, empty, transposed, negative-stride, sliced and broadcast inputs,
  arrays large enough to be split over threads, every ISA level;
* vmap against a loop and the zero derivative through the uint8 codes
  (``ember_only``: MLX 0.32.4 has no vmap, vjp or jvp for either op and
  raises "[Primitive::vmap] Not implemented for ToFP8");
* the errors, with MLX's messages.
"""

import numpy as np
import pytest

from conftest import ALL, FLOATS, ember_only, mx, mx_dtype, raises
from op_table import FP8_MAGNITUDES, fp8_decode_ref, fp8_encode_ref

NOT_FLOAT = [d for d in ALL if d not in FLOATS]


# --------------------------------------------------------------------------
# inputs as bit patterns
# --------------------------------------------------------------------------

def _from_bits(u, dtype):
    """An mx array of dtype ``dtype`` holding the bit patterns ``u``."""
    return mx.array(u).view(mx_dtype(dtype))


def _values(u, dtype):
    """float64 values of the bit patterns ``u`` read as ``dtype``."""
    with np.errstate(invalid="ignore"):  # NaN patterns
        if dtype == "bfloat16":
            return (u.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
        carrier = {"float16": np.float16, "float32": np.float32, "float64": np.float64}[dtype]
        return u.view(carrier).astype(np.float64)


def _codes(a):
    assert a.dtype == mx.uint8, a.dtype
    return np.array(a)


def _check_encode(u, dtype, msg=""):
    got = _codes(mx.to_fp8(_from_bits(u, dtype)))
    want = fp8_encode_ref(_values(u, dtype))
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (
        f"{msg} {dtype}: {bad.size} differences, first bits "
        f"{[hex(int(b)) for b in u[bad[:5]]]}: got {got[bad[:5]]}, want {want[bad[:5]]}")


def _all16():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _boundaries(dtype):
    """Bit patterns of ``dtype`` at and around every rounding boundary:
    each code's value and each midpoint between neighbouring codes, with
    their neighbours a few ulps away, both signs."""
    v = FP8_MAGNITUDES
    points = np.concatenate([v, (v[:-1] + v[1:]) / 2, [v[-1] + 8, v[-1] + 16, v[-1] + 32],
                             [2.0 ** -10, 2.0 ** -11, 2.0 ** -30]])
    carrier, ui = {"float32": (np.float32, np.uint32), "float64": (np.float64, np.uint64)}[dtype]
    bits = points.astype(carrier).view(ui)
    near = np.concatenate([bits + np.array(k, dtype=ui) for k in (0, 1, 2)] +
                          [bits - np.array(k, dtype=ui) for k in (1, 2)])
    near = near[near.view(carrier) >= 0]
    sign = np.array(1, dtype=ui) << np.array(8 * np.dtype(ui).itemsize - 1, dtype=ui)
    return np.concatenate([near, near | sign])


# --------------------------------------------------------------------------
# the reference itself
# --------------------------------------------------------------------------

def test_reference_codes():
    """Spot values of the format, and the reference's round trip."""
    assert FP8_MAGNITUDES[1] == 2.0 ** -9 and FP8_MAGNITUDES[7] == 7 * 2.0 ** -9
    assert FP8_MAGNITUDES[8] == 2.0 ** -6 and FP8_MAGNITUDES[56] == 1.0
    assert FP8_MAGNITUDES[126] == 448.0
    assert np.all(np.diff(FP8_MAGNITUDES) > 0)
    c = np.arange(256, dtype=np.uint8)
    finite = (c & 127) != 127
    np.testing.assert_array_equal(fp8_encode_ref(fp8_decode_ref(c[finite])), c[finite])
    assert np.isnan(fp8_decode_ref(np.array([127, 255]))).all()
    np.testing.assert_array_equal(
        fp8_encode_ref(np.array([1.0625, 1.1875, 3 * 2.0 ** -10, 2.0 ** -10, 432.0, 464.0, -np.nan])),
        [56, 58, 2, 0, 126, 126, 254])


# --------------------------------------------------------------------------
# to_fp8
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_to_fp8_every_16_bit_pattern(dtype):
    _check_encode(_all16(), dtype)


def test_to_fp8_float32_boundaries():
    _check_encode(_boundaries("float32"), "float32", "boundaries")


def test_to_fp8_float32_patterns():
    """Every pattern of the top 16 bits with low halves at the edges of a
    float16-sized rounding step, and random patterns."""
    hi = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    low = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    _check_encode((hi[:, None] | low[None, :]).ravel(), "float32", "top bits")
    rng = np.random.default_rng(8)
    _check_encode(rng.integers(0, 1 << 32, 100_000, dtype=np.uint64).astype(np.uint32),
                  "float32", "random")


def test_to_fp8_specials():
    """Saturation, NaN of either sign, infinities, signed zeros, ties."""
    x = np.array([0.0, -0.0, 448.0, -448.0, 449.0, 463.9, 464.0, 1e30, np.inf, -np.inf,
                  2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10, 2.0 ** -10 * 1.0001, -2.0 ** -10,
                  1.0625, 1.1875, 2.0 ** -6 - 2.0 ** -11, 1e-30], dtype=np.float32)
    want = [0, 128, 126, 254, 126, 126, 126, 126, 126, 254,
            1, 0, 2, 1, 128, 56, 58, 8, 0]
    np.testing.assert_array_equal(_codes(mx.to_fp8(mx.array(x))), want)
    nans = {"float16": [0x7E00, 0xFE00, 0x7C01, 0xFC01, 0x7FFF],
            "bfloat16": [0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x7FFF],
            "float32": [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF]}
    for dtype, bits in nans.items():
        u = np.array(bits, dtype=np.uint32 if dtype == "float32" else np.uint16)
        np.testing.assert_array_equal(_codes(mx.to_fp8(_from_bits(u, dtype))),
                                      [126, 254, 126, 254, 126], err_msg=dtype)


@ember_only  # MLX 0.32.4 reads the float64 buffer as float32 values
def test_to_fp8_float64():
    _check_encode(_boundaries("float64"), "float64", "boundaries")
    rng = np.random.default_rng(9)
    mag = 2.0 ** rng.uniform(-12, 10, 50_000)
    x = np.concatenate([mag, -mag, [1e300, -1e300, 1e-300, 5e-324, -5e-324, np.inf, np.nan]])
    _check_encode(x.view(np.uint64), "float64", "random")
    # one rounding from float64: just above the tie between 1 and 1.125
    # (float32 would round it to the tie, which goes to 1)
    x = np.array([1.0625 + 2.0 ** -30, 1.0625 - 2.0 ** -30, 1.0625])
    np.testing.assert_array_equal(_codes(mx.to_fp8(mx.array(x, mx.float64))), [57, 56, 56])


# --------------------------------------------------------------------------
# from_fp8
# --------------------------------------------------------------------------

# MLX 0.32.4's bits for the NaN codes 127 and 255
NAN_BITS = {"float32": (0x7FF00000, 0xFFF00000), "float16": (0x7D00, 0xFD00),
            "bfloat16": (0x7FC0, 0x7FC0)}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_from_fp8_every_code(dtype):
    c = np.arange(256, dtype=np.uint8)
    out = mx.from_fp8(mx.array(c), dtype=mx_dtype(dtype))
    assert out.dtype == mx_dtype(dtype) and out.shape == (256,)
    ui = mx.uint32 if dtype == "float32" else mx.uint16
    bits = np.array(out.view(ui))
    want = fp8_decode_ref(c)
    finite = ~np.isnan(want)
    # every finite value is exact in the dtype: compare bits (signed zeros too)
    if dtype == "bfloat16":
        wbits = (want[finite].astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    else:
        carrier = np.float32 if dtype == "float32" else np.float16
        wbits = want[finite].astype(carrier).view(np.uint32 if dtype == "float32" else np.uint16)
    np.testing.assert_array_equal(bits[finite], wbits)
    assert [int(bits[127]), int(bits[255])] == list(NAN_BITS[dtype])


@ember_only  # MLX 0.32.4 writes float32 values into the float64 buffer
def test_from_fp8_float64():
    c = np.arange(256, dtype=np.uint8)
    out = mx.from_fp8(mx.array(c), dtype=mx.float64)
    assert out.dtype == mx.float64
    got = np.array(out)
    np.testing.assert_array_equal(got, fp8_decode_ref(c))  # NaN == NaN here
    np.testing.assert_array_equal(np.signbit(got), c >= 128)


def test_from_fp8_default_dtype():
    out = mx.from_fp8(mx.array(np.array([56, 66, 254], dtype=np.uint8)))
    assert out.dtype == mx.bfloat16
    np.testing.assert_array_equal(np.array(out.astype(mx.float32)), [1.0, 2.5, -448.0])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_round_trips(dtype):
    c = np.arange(256, dtype=np.uint8)
    back = _codes(mx.to_fp8(mx.from_fp8(mx.array(c), dtype=mx_dtype(dtype))))
    # NaN codes come back saturated, by the NaN's sign (which bfloat16's
    # NaN, 0x7FC0 for both, does not keep)
    want = np.where(c == 127, 126, np.where(c == 255, 126 if dtype == "bfloat16" else 254, c))
    np.testing.assert_array_equal(back, want)


# --------------------------------------------------------------------------
# layouts, sizes, ISA levels
# --------------------------------------------------------------------------

def _layouts(x):
    """(description, mx array) views of numpy ``x`` (2-d)."""
    a = mx.array(x)
    return [("0-d", a[0, 0]), ("empty", a[:0]), ("empty 3-d", mx.reshape(a[:0], (0, 2, 3))),
            ("transposed", a.T), ("negative strides", a[::-1, ::-1]),
            ("step 2", a[:, ::2]), ("reversed step 3", a[::-3]),
            ("broadcast", mx.broadcast_to(a[:1], x.shape)), ("column", a[:, 1])]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_to_fp8_layouts(dtype, rng):
    x = (2.0 ** rng.uniform(-11, 10, (12, 9)) * rng.choice([-1, 1], (12, 9)))
    x = np.array(mx.array(x.astype(np.float32)).astype(mx_dtype(dtype)).astype(mx.float32))
    for desc, a in _layouts(x):
        a = a.astype(mx_dtype(dtype))
        got = mx.to_fp8(a)
        assert got.shape == a.shape, desc
        np.testing.assert_array_equal(_codes(got), fp8_encode_ref(np.array(a.astype(mx.float32))),
                                      err_msg=desc)


def test_from_fp8_layouts(rng):
    c = rng.integers(0, 256, (12, 9)).astype(np.uint8)
    for desc, a in _layouts(c):
        for dtype in ("float16", "float32"):
            got = mx.from_fp8(a, dtype=mx_dtype(dtype))
            assert got.shape == a.shape and got.dtype == mx_dtype(dtype), desc
            np.testing.assert_array_equal(np.array(got).astype(np.float64), fp8_decode_ref(np.array(a)),
                                          err_msg=desc)


def test_large_arrays(rng):
    """Sizes the loop engine splits over threads, with an odd tail."""
    n = (1 << 18) + 13
    x = (2.0 ** rng.uniform(-11, 10, n) * rng.choice([-1, 1], n)).astype(np.float32)
    codes = mx.to_fp8(mx.array(x))
    np.testing.assert_array_equal(_codes(codes), fp8_encode_ref(x))
    np.testing.assert_array_equal(np.array(mx.from_fp8(codes, dtype=mx.float32)),
                                  fp8_decode_ref(fp8_encode_ref(x)))


@ember_only  # Ember's ISA levels (the fixture runs it once per level)
def test_every_isa_level(level):
    _check_encode(_all16(), "float16", level)
    _check_encode(_all16(), "bfloat16", level)
    _check_encode(_boundaries("float32"), "float32", level)
    _check_encode(_boundaries("float64"), "float64", level)
    c = mx.array(np.arange(256, dtype=np.uint8))
    for dtype in FLOATS:
        np.testing.assert_array_equal(np.array(mx.from_fp8(c, dtype=mx_dtype(dtype)).astype(mx.float64)),
                                      fp8_decode_ref(np.arange(256)), err_msg=f"{level} {dtype}")


# --------------------------------------------------------------------------
# transforms (MLX 0.32.4 has no rule for either op and raises)
# --------------------------------------------------------------------------

@ember_only
def test_vmap_against_a_loop(rng):
    x = (2.0 ** rng.uniform(-11, 10, (4, 3, 5)) * rng.choice([-1, 1], (4, 3, 5))).astype(np.float32)
    X = mx.array(x)
    for axis in (0, 1, 2, -1):
        for out_axis in (0, -1):
            got = mx.vmap(mx.to_fp8, in_axes=axis, out_axes=out_axis)(X)
            loop = np.stack([np.array(mx.to_fp8(mx.array(np.take(x, i, axis=axis))))
                             for i in range(x.shape[axis])], axis=out_axis)
            assert got.dtype == mx.uint8
            np.testing.assert_array_equal(np.array(got), loop, err_msg=f"to_fp8 {axis} {out_axis}")
            C = mx.to_fp8(X)
            c = np.array(C)
            got = mx.vmap(lambda a: mx.from_fp8(a, mx.float16), in_axes=axis, out_axes=out_axis)(C)
            loop = np.stack([np.array(mx.from_fp8(mx.array(np.take(c, i, axis=axis)), mx.float16))
                             for i in range(c.shape[axis])], axis=out_axis)
            assert got.dtype == mx.float16
            np.testing.assert_array_equal(np.array(got), loop, err_msg=f"from_fp8 {axis} {out_axis}")
    # default dtype, nested, a strided input, and the round trip composed
    got = mx.vmap(mx.vmap(mx.from_fp8))(mx.to_fp8(X[:, ::-1]))
    assert got.dtype == mx.bfloat16
    np.testing.assert_array_equal(np.array(got.astype(mx.float32)),
                                  fp8_decode_ref(fp8_encode_ref(x[:, ::-1])))
    got = mx.vmap(lambda a: mx.from_fp8(mx.to_fp8(a), mx.float32), in_axes=1)(X)
    np.testing.assert_array_equal(np.array(got),
                                  np.moveaxis(fp8_decode_ref(fp8_encode_ref(x)), 1, 0))


@ember_only
def test_no_derivative_flows_through_the_codes():
    """The uint8 codes cut the graph, as a cast to an integer type does:
    x -> from_fp8(to_fp8(x)) is piecewise constant, its derivative zero."""
    x = mx.array([1.0, 2.5, -300.0, 1000.0])
    g = mx.grad(lambda a: mx.from_fp8(mx.to_fp8(a), mx.float32).sum())(x)
    assert g.dtype == mx.float32 and g.shape == x.shape
    np.testing.assert_array_equal(np.array(g), 0)
    (y,), (t,) = mx.jvp(lambda a: mx.from_fp8(mx.to_fp8(a), mx.float32), [x], [mx.ones(4)])
    np.testing.assert_array_equal(np.array(y), [1.0, 2.5, -288.0, 448.0])
    assert t.dtype == mx.float32
    np.testing.assert_array_equal(np.array(t), 0)
    (c,), (ct,) = mx.vjp(mx.to_fp8, [x], [mx.ones(4, mx.uint8)])
    assert c.dtype == mx.uint8 and ct.dtype == mx.float32
    np.testing.assert_array_equal(np.array(ct), 0)
    (v,), (cc,) = mx.vjp(lambda a: mx.from_fp8(a, mx.float32), [c], [mx.ones(4)])
    assert cc.dtype == mx.uint8
    np.testing.assert_array_equal(np.array(cc), 0)


# --------------------------------------------------------------------------
# errors (MLX's types and messages)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NOT_FLOAT)
def test_to_fp8_rejects_non_floating(dtype):
    x = mx.zeros((2,), dtype=mx_dtype(dtype))
    name = "bool" if dtype == "bool" else dtype
    with raises(ValueError, rf"\[to_fp8\] Only real floating types are supported but "
                            rf"x\.dtype\(\) == {name}\.", mlx_msg=True):
        mx.to_fp8(x)


@pytest.mark.parametrize("dtype", [d for d in ALL if d != "uint8"])
def test_from_fp8_rejects_non_uint8(dtype):
    x = mx.zeros((2,), dtype=mx_dtype(dtype))
    with raises(ValueError, rf"\[from_fp8\] Input must have type uint8 but x\.dtype\(\) == {dtype}\.",
                mlx_msg=True):
        mx.from_fp8(x, dtype=mx.float32)


@pytest.mark.parametrize("dtype", NOT_FLOAT)
def test_from_fp8_rejects_non_floating_dtype(dtype):
    x = mx.zeros((2,), dtype=mx.uint8)
    with raises(ValueError, rf"\[from_fp8\] Only real floating types are supported but dtype == {dtype}\.",
                mlx_msg=True):
        mx.from_fp8(x, dtype=mx_dtype(dtype))


def test_dtype_argument_kinds():
    c = mx.zeros((2,), dtype=mx.uint8)
    for bad in (None, "float32", np.float32, 1):
        with raises(TypeError):
            mx.from_fp8(c, dtype=bad)
    # positional dtype and the stream keyword
    assert mx.from_fp8(c, mx.float16, stream=mx.cpu).dtype == mx.float16
    assert mx.to_fp8(mx.ones(2), stream=mx.cpu).dtype == mx.uint8
