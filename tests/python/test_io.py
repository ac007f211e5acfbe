"""Saving and loading: .npy, .npz, .safetensors, .gguf.

The references are independent writers and readers: NumPy (``np.save``,
``np.lib.format`` versions 1.0/2.0/3.0, ``np.savez``,
``np.savez_compressed``), the ``safetensors`` package and the ``gguf``
package. Files they write are read bit-exactly by Ember, and they read
what Ember writes. The malformed-file table is ``io_cases.MALFORMED``; the
fuzz runs are in ``test_io_fuzz.py``.
"""

import io
import os
import struct
import zipfile

import numpy as np
import pytest

import io_cases as C
from conftest import IS_MLX, ember_only, mx

safetensors_numpy = pytest.importorskip("safetensors.numpy")
gguf = pytest.importorskip("gguf")

# every dtype NumPy has and Ember has (bfloat16 separately)
NP_DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
             "float16", "float32", "float64", "complex64"]


def sample(dtype, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith(("uint", "int")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    x = rng.standard_normal(shape).astype(dtype)
    if x.size > 0:
        x.flat[0] = np.inf
    if x.size > 1:
        x.flat[1] = -0.0
    return x


def to_mx(v):
    """An Ember array of v's own dtype (mx.array makes float64 float32)."""
    return mx.array(v, dtype=mx.bool_ if v.dtype == np.bool_ else getattr(mx, v.dtype.name))


def same_bits(e, ref):
    """An Ember array against a NumPy array: dtype, shape and bytes."""
    got = np.array(e)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(ref).tobytes()


def bf16_bits(a):
    """The uint16 bit patterns of an Ember bfloat16 array."""
    return np.array(a.view(mx.uint16))


def raises(exc, frags, f):
    with pytest.raises(exc) as e:
        f()
    if not IS_MLX:
        for frag in [frags] if isinstance(frags, str) else frags:
            assert frag in str(e.value), str(e.value)
    return e


# ---- .npy ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NP_DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_npy_from_numpy(tmp_path, dtype, order):
    for shape in [(3, 4), (2, 3, 5), (), (0, 3), (7,)]:
        ref = np.asarray(sample(dtype, shape), order=order)
        p = tmp_path / f"a_{len(shape)}.npy"
        np.save(p, ref)
        same_bits(mx.load(str(p)), ref)


# MLX 0.32 rejects version 3.0
@pytest.mark.parametrize("version", [(1, 0), (2, 0), pytest.param((3, 0), marks=ember_only)])
def test_npy_versions(tmp_path, version):
    ref = sample("float32", (4, 5))
    p = tmp_path / "v.npy"
    with open(p, "wb") as f:
        np.lib.format.write_array(f, ref, version=version)
    assert open(p, "rb").read(8)[6:8] == bytes(version)
    same_bits(mx.load(str(p)), ref)


@ember_only  # MLX 0.32 rejects a valid header whose keys come in another order
def test_npy_keys_reordered_and_spacing(tmp_path):
    data = np.arange(6, dtype=np.int16).reshape(3, 2)
    for header in ["{'shape': (3, 2), 'fortran_order': False, 'descr': '<i2'}",
                   "{'fortran_order': False, 'descr': '<i2', 'shape': (3,2,),}",
                   '{"descr": "<i2", "shape": (3, 2), "fortran_order": False}']:
        p = tmp_path / "k.npy"
        p.write_bytes(C.npy(header, data.tobytes()))
        same_bits(mx.load(str(p)), data)
        assert np.array_equal(np.load(p), data)  # NumPy agrees the file is valid


# MLX 0.32 swaps a big-endian complex64 as one 8-byte word
@pytest.mark.parametrize("dtype", [">f4", ">i2", ">u8", pytest.param(">c8", marks=ember_only), ">f2", ">f8"])
def test_npy_big_endian(tmp_path, dtype):
    ref = sample(np.dtype(dtype).newbyteorder("<").name, (3, 2)).astype(dtype)
    p = tmp_path / "be.npy"
    np.save(p, ref)
    same_bits(mx.load(str(p)), ref.astype(ref.dtype.newbyteorder("<")))


@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_npy_numpy_reads_ember(tmp_path, dtype):
    ref = sample(dtype, (5, 3))
    p = str(tmp_path / "e.npy")
    mx.save(p, to_mx(ref))
    got = np.load(p)
    assert got.dtype == ref.dtype and np.array_equal(got.view(np.uint8), ref.view(np.uint8))
    # a transposed (strided) array and a 0-d one
    mx.save(p, to_mx(ref).T)
    assert np.array_equal(np.ascontiguousarray(np.load(p)).view(np.uint8), ref.T.copy().view(np.uint8))
    mx.save(p, to_mx(ref)[0, 0])
    assert np.load(p).shape == ()


def test_npy_bfloat16(tmp_path):
    bits = np.array([0x3F80, 0xC000, 0x7F80, 0x0001, 0x7FC0, 0x8000], np.uint16)
    p = tmp_path / "b.npy"
    p.write_bytes(C.npy(C.npy_dict("<V2", shape=(6,)), bits.tobytes()))
    a = mx.load(str(p))
    assert a.dtype == mx.bfloat16
    assert np.array_equal(bf16_bits(a), bits)
    q = str(tmp_path / "c.npy")
    mx.save(q, a)
    raw = np.load(q)  # NumPy reads the '<V2' void type
    assert raw.dtype == np.dtype("V2") and raw.tobytes() == bits.tobytes()


def test_save_appends_extension(tmp_path):
    mx.save(str(tmp_path / "x"), mx.ones(2))
    mx.save(str(tmp_path / "y.txt"), mx.ones(2))
    mx.savez(str(tmp_path / "z"), a=mx.ones(2))
    mx.save_safetensors(str(tmp_path / "s"), {"a": mx.ones(2)})
    mx.save_gguf(str(tmp_path / "g"), {"a": mx.ones(2)}, {})
    assert sorted(os.listdir(tmp_path)) == ["g.gguf", "s.safetensors", "x.npy", "y.txt.npy", "z.npz"]


def test_save_evaluates_lazy_arrays(tmp_path):
    a = mx.arange(10) * 2 + 1
    p = str(tmp_path / "l.npy")
    mx.save(p, a)
    assert np.array_equal(np.load(p), np.arange(10) * 2 + 1)


@ember_only  # MLX 0.32's save_gguf takes only paths
def test_pathlib_and_file_objects(tmp_path):
    ref = sample("float32", (2, 3))
    p = tmp_path / "p.npy"
    mx.save(p, to_mx(ref))
    same_bits(mx.load(p), ref)
    with open(p, "rb") as f:  # the name gives the format
        same_bits(mx.load(f), ref)
    for fmt, save in [("npy", lambda f: mx.save(f, to_mx(ref))),
                      ("npz", lambda f: mx.savez(f, x=to_mx(ref))),
                      ("safetensors", lambda f: mx.save_safetensors(f, {"x": to_mx(ref)})),
                      ("gguf", lambda f: mx.save_gguf(f, {"x": to_mx(ref)}, {}))]:
        b = io.BytesIO()
        save(b)
        b.seek(0)
        out = mx.load(b, format=fmt)
        same_bits(out if fmt == "npy" else out["x"], ref)


# ---- .npz ------------------------------------------------------------------

@pytest.mark.parametrize("compressed", [False, True])
def test_npz_from_numpy(tmp_path, compressed):
    arrays = {d: sample(d, (4, 3), seed=i) for i, d in enumerate(NP_DTYPES)}
    arrays["fortran"] = np.asfortranarray(sample("float32", (3, 5)))
    arrays["empty"] = np.zeros((0, 2), np.int32)
    p = tmp_path / "n.npz"
    (np.savez_compressed if compressed else np.savez)(p, *[arrays["int8"]], **arrays)
    out = mx.load(str(p))
    assert sorted(out) == sorted(list(arrays) + ["arr_0"])
    for k, v in arrays.items():
        same_bits(out[k], v)
    same_bits(out["arr_0"], arrays["int8"])


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_numpy_reads_ember(tmp_path, compressed):
    arrays = {d: sample(d, (6, 5), seed=i) for i, d in enumerate(NP_DTYPES)}
    arrays["big"] = np.tile(np.arange(1000, dtype=np.float32), 70)  # repetitive: compresses
    p = str(tmp_path / "e.npz")
    (mx.savez_compressed if compressed else mx.savez)(p, mx.ones(3), **{k: to_mx(v) for k, v in arrays.items()})
    with np.load(p) as z:
        assert sorted(z.files) == sorted(list(arrays) + ["arr_0"])
        for k, v in arrays.items():
            assert z[k].dtype == v.dtype and z[k].tobytes() == v.tobytes(), k
    with zipfile.ZipFile(p) as z:
        assert z.testzip() is None  # CRCs
        infos = z.infolist()
        assert all(i.compress_type == (zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED) for i in infos)
        if compressed:
            big = z.getinfo("big.npy")
            assert big.compress_size < big.file_size / 20
        elif not IS_MLX:  # Ember aligns stored data to 64 bytes, so loads map it
            for i in infos:
                with open(p, "rb") as f:
                    f.seek(i.header_offset + 26)
                    n, m = struct.unpack("<HH", f.read(4))
                assert (i.header_offset + 30 + n + m) % 64 == 0


def test_npz_deflate_incompressible_and_empty(tmp_path):
    # random bytes fall back to stored deflate blocks; an empty array still works
    x = np.random.default_rng(1).integers(0, 256, 300_000, dtype=np.uint8)
    p = str(tmp_path / "r.npz")
    mx.savez_compressed(p, x=mx.array(x), e=mx.zeros((0,)))
    with zipfile.ZipFile(p) as z:
        assert z.getinfo("x.npy").compress_size < x.size + 1000
    out = mx.load(p)
    same_bits(out["x"], x)
    assert out["e"].shape == (0,)


def test_npz_zip64_many_members(tmp_path):
    # more than 65535 members: Ember writes zip64 end records, zipfile reads them, and back
    n = 65537
    p = str(tmp_path / "many.npz")
    mx.savez(p, *[mx.array(k % 251, dtype=mx.uint8) for k in range(n)])
    with zipfile.ZipFile(p) as z:
        assert len(z.infolist()) == n
        assert np.load(io.BytesIO(z.read("arr_65536.npy"))) == 65536 % 251
    out = mx.load(p)
    assert len(out) == n and out["arr_70"].item() == 70 and out["arr_65536"].item() == 65536 % 251


def test_npz_zip64_from_python_zipfile(tmp_path):
    # zip64 central directory entries and end records as Python's zipfile writes them
    p = tmp_path / "z64.npz"
    b = io.BytesIO()
    np.save(b, np.arange(5, dtype=np.int16))
    with zipfile.ZipFile(p, "w", allowZip64=True) as z:
        for k in range(65536):
            z.writestr(f"a{k}.npy" if k else "x.npy", b.getvalue())
    out = mx.load(str(p))
    assert len(out) == 65536
    same_bits(out["x"], np.arange(5, dtype=np.int16))


def test_savez_names(tmp_path):
    p = str(tmp_path / "n.npz")
    raises(ValueError, "Cannot use un-named variables and keyword arr_0",
           lambda: mx.savez(p, mx.ones(2), arr_0=mx.ones(2)))


@ember_only  # MLX raises RuntimeError (std::bad_cast) for these
def test_save_type_errors(tmp_path):
    p = str(tmp_path / "t")
    raises(TypeError, "'arr_0' is not an array", lambda: mx.savez(p, 3))
    raises(TypeError, "'x' is not an array", lambda: mx.save_safetensors(p, {"x": np.ones(2)}))
    raises(TypeError, "names must be strings", lambda: mx.save_safetensors(p, {1: mx.ones(2)}))


# ---- .safetensors ------------------------------------------------------------

ST_DTYPES = [d for d in NP_DTYPES if d != "complex64"]


# MLX 0.32 has no F64 in safetensors
@pytest.mark.parametrize("dtype", [pytest.param(d, marks=ember_only) if d == "float64" else d for d in ST_DTYPES])
def test_safetensors_package_roundtrip(tmp_path, dtype):
    arrays = {"a": sample(dtype, (3, 4)), "b": sample(dtype, (5,), seed=1), "s": sample(dtype, ()),
              "e": np.zeros((0, 3), dtype)}
    if dtype == "bool":  # the package cannot write a 0-d bool (it reads a NumPy bool scalar's .ctypes)
        del arrays["s"]
    p = str(tmp_path / "ref.safetensors")
    safetensors_numpy.save_file(arrays, p, metadata={"format": "np", "k": "é"})
    out, meta = mx.load(p, return_metadata=True)
    assert meta == {"format": "np", "k": "é"}
    for k, v in arrays.items():
        same_bits(out[k], v)
    q = str(tmp_path / "ember.safetensors")
    mx.save_safetensors(q, {k: to_mx(v) for k, v in arrays.items()}, {"who": "ember"})
    back = safetensors_numpy.load_file(q)
    for k, v in arrays.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape and back[k].tobytes() == v.tobytes()
    from safetensors import safe_open
    with safe_open(q, "np") as f:
        assert f.metadata() == {"who": "ember"}


def test_safetensors_bfloat16_and_complex(tmp_path):
    bits = np.array([0x3F80, 0xC000, 0x7F80, 0x0001], np.uint16)
    c = sample("complex64", (2, 2))
    raw = C.st({"b": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
                "c": {"dtype": "C64", "shape": [2, 2], "data_offsets": [8, 40]}}, bits.tobytes() + c.tobytes())
    p = tmp_path / "b.safetensors"
    p.write_bytes(raw)
    out = mx.load(str(p))
    assert out["b"].dtype == mx.bfloat16 and np.array_equal(bf16_bits(out["b"]).ravel(), bits)
    same_bits(out["c"], c)
    q = str(tmp_path / "o.safetensors")
    mx.save_safetensors(q, out)
    out2 = mx.load(q)
    assert np.array_equal(bf16_bits(out2["b"]).ravel(), bits)
    same_bits(out2["c"], c)


@ember_only  # Ember's layout (MLX 0.32 cannot save float64 here)
def test_safetensors_layout_aligned(tmp_path):
    p = str(tmp_path / "a.safetensors")
    mx.save_safetensors(p, {"u8": mx.ones(3, dtype=mx.uint8), "f64": mx.ones(2, dtype=mx.float64),
                            "f16": mx.ones(3, dtype=mx.float16)})
    raw = open(p, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    assert (8 + n) % 8 == 0
    import json
    h = json.loads(raw[8:8 + n])
    assert "__metadata__" not in h
    for k, v in h.items():
        assert v["data_offsets"][0] % {"u8": 1, "f64": 8, "f16": 2}[k] == 0


@ember_only  # MLX truncates such dimensions to 32 bits
def test_dimensions_beyond_32_bits():
    d = C.st({"a": {"dtype": "U8", "shape": [2 ** 32 + 2, 0], "data_offsets": [0, 0]}})
    assert mx.load(io.BytesIO(d), format="safetensors")["a"].shape == (2 ** 32 + 2, 0)
    d = C.npy(C.npy_dict("|u1", shape=(0, 2 ** 32 + 2)))
    assert mx.load(io.BytesIO(d), format="npy").shape == (0, 2 ** 32 + 2)
    d = C.gguf([], [("g", [0, 2 ** 33], 0, 0)])
    assert mx.load(io.BytesIO(d), format="gguf")["g"].shape == (2 ** 33, 0)


def test_safetensors_metadata_errors(tmp_path):
    p = str(tmp_path / "m")
    msg = "Metadata must be a dictionary with string keys and values"
    raises(ValueError, msg, lambda: mx.save_safetensors(p, {"x": mx.ones(2)}, {"k": 1}))
    raises(ValueError, msg, lambda: mx.save_safetensors(p, {"x": mx.ones(2)}, {1: "v"}))


# ---- .gguf -----------------------------------------------------------------

GGUF_PLAIN = {"float32": 0, "float16": 1, "int8": 24, "int16": 25, "int32": 26, "int64": 27, "float64": 28}


def _gguf_write(path, tensors, kv=None):
    w = gguf.GGUFWriter(str(path), "test")
    for name, arr, raw in tensors:
        if raw is None:
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, arr, raw_shape=arr.shape, raw_dtype=raw)
    for fn, key, val in kv or []:
        getattr(w, fn)(key, val)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@ember_only  # MLX 0.32 cannot load GGUF I64 and F64 tensors
def test_gguf_package_plain_tensors(tmp_path):
    tensors = {d: sample(d, (3, 4), seed=i) for i, d in enumerate(GGUF_PLAIN)}
    tensors["vec"] = sample("float32", (7,))
    tensors["cube"] = sample("float16", (2, 3, 4))
    p = tmp_path / "t.gguf"
    _gguf_write(p, [(k, v, None) for k, v in tensors.items()])
    out = mx.load(str(p))
    for k, v in tensors.items():
        same_bits(out[k], v)


@ember_only  # MLX 0.32 crashes (segmentation fault) on this file
def test_gguf_metadata_types(tmp_path):
    kv = [("add_uint8", "u8", 200), ("add_int8", "i8", -5), ("add_uint16", "u16", 60000),
          ("add_int16", "i16", -30000), ("add_uint32", "u32", 4_000_000_000), ("add_int32", "i32", -7),
          ("add_float32", "f32", 1.25), ("add_uint64", "u64", 2 ** 63 + 1), ("add_int64", "i64", -2 ** 40),
          ("add_float64", "f64", 0.1), ("add_bool", "b", True), ("add_string", "s", "héllo"),
          ("add_array", "ai", [1, 2, 3]), ("add_array", "as", ["a", "bc"]), ("add_array", "af", [0.5, 1.5])]
    p = tmp_path / "m.gguf"
    _gguf_write(p, [("w", np.ones(2, np.float32), None)], kv)
    _, meta = mx.load(str(p), return_metadata=True)
    want = {"u8": (mx.uint8, 200), "i8": (mx.int8, -5), "u16": (mx.uint16, 60000), "i16": (mx.int16, -30000),
            "u32": (mx.uint32, 4_000_000_000), "i32": (mx.int32, -7), "f32": (mx.float32, 1.25),
            "u64": (mx.uint64, 2 ** 63 + 1), "i64": (mx.int64, -2 ** 40), "f64": (mx.float64, 0.1),
            "b": (mx.bool_, True)}
    for k, (dt, v) in want.items():
        assert meta[k].dtype == dt and meta[k].shape == () and meta[k].item() == v, k
    assert meta["s"] == "héllo" and meta["as"] == ["a", "bc"]
    assert meta["general.architecture"] == "test"
    assert meta["ai"].tolist() == [1, 2, 3] and meta["af"].dtype == mx.float32


def _q_reference(blocks, kind, k):
    """MLX's affine form of Q4_0/Q4_1/Q8_0 blocks (rows of k values), in NumPy."""
    rows = blocks.shape[0]
    g = k // 32
    bs = {"Q4_0": 18, "Q4_1": 20, "Q8_0": 34}[kind]
    b = blocks.reshape(rows, g, bs)
    d = b[..., 0:2].copy().view(np.float16)[..., 0]
    if kind == "Q8_0":
        q = b[..., 2:].view(np.int8).astype(np.int32) + 128
        packed = q.astype(np.uint8).reshape(rows, k).view(np.uint32)
        return packed, d, (np.float32(-128) * d.astype(np.float32)).astype(np.float16)
    qs = b[..., 4:] if kind == "Q4_1" else b[..., 2:]
    q = np.concatenate([qs & 15, qs >> 4], axis=-1).astype(np.uint32)  # element order within a block
    q = q.reshape(rows, k // 8, 8)
    packed = np.zeros((rows, k // 8), np.uint32)
    for j in range(8):
        packed |= q[..., j] << (4 * j)
    if kind == "Q4_1":
        return packed, d, b[..., 2:4].copy().view(np.float16)[..., 0]
    return packed, d, (np.float32(-8) * d.astype(np.float32)).astype(np.float16)


@pytest.mark.parametrize("kind", ["Q4_0", "Q4_1", "Q8_0"])
def test_gguf_quantized_mlx_layout(tmp_path, kind):
    from gguf import quants
    t = getattr(gguf.GGMLQuantizationType, kind)
    x = np.random.default_rng(0).standard_normal((6, 128)).astype(np.float32)
    q = quants.quantize(x, t)
    p = tmp_path / "q.gguf"
    _gguf_write(p, [("w", q, t)])
    out = mx.load(str(p))
    assert sorted(out) == ["w", "w.biases", "w.scales"]
    packed, scales, biases = _q_reference(q, kind, 128)
    same_bits(out["w"], packed)
    same_bits(out["w.scales"], scales)
    same_bits(out["w.biases"], biases)
    # dequantized as MLX's affine form: w * scale + bias per group of 32
    bits = 8 if kind == "Q8_0" else 4
    w = np.array(out["w"]).view(np.uint8).reshape(6, -1)
    vals = w.astype(np.float32) if bits == 8 else np.stack([w & 15, w >> 4], -1).reshape(6, 128).astype(np.float32)
    deq = vals.reshape(6, 4, 32) * np.array(out["w.scales"]).astype(np.float32)[..., None] \
        + np.array(out["w.biases"]).astype(np.float32)[..., None]
    ref = quants.dequantize(q, t)
    np.testing.assert_allclose(deq.reshape(6, 128), ref, atol=4e-3)
    # the quantization ops read the loaded layout: dequantize and quantized_matmul
    got = mx.dequantize(out["w"], out["w.scales"], out["w.biases"], 32, bits)
    np.testing.assert_allclose(np.array(got).astype(np.float32), deq.reshape(6, 128), rtol=2e-3, atol=2e-3)
    xv = np.random.default_rng(1).standard_normal((3, 128)).astype(np.float32)
    before = mx._set_qmm_int8(0)  # float arithmetic at this tolerance (int8 activations: test_qmm_kernels.py)
    y = mx.quantized_matmul(mx.array(xv), out["w"], out["w.scales"], out["w.biases"], True, 32, bits)
    mx.eval(y)
    mx._set_qmm_int8(before)
    np.testing.assert_allclose(np.array(y), xv @ deq.reshape(6, 128).T, rtol=1e-4, atol=1e-3)


@ember_only  # MLX 0.32's save_gguf rejects bfloat16 (and its loader int64/float64)
def test_gguf_package_reads_ember(tmp_path):
    tensors = {d: sample(d, (3, 4), seed=i) for i, d in enumerate(GGUF_PLAIN)}
    tensors["bf"] = None
    p = str(tmp_path / "e.gguf")
    arrays = {k: to_mx(v) for k, v in tensors.items() if v is not None}
    arrays["bf"] = mx.array([1.0, -2.0, 3.5], dtype=mx.bfloat16)
    meta = {"s": "text", "l": ["a", "b"], "u": mx.array(7, dtype=mx.uint32), "f": mx.array([1.5, 2.5]),
            "b": mx.array(True), "i64": mx.array(-3, dtype=mx.int64)}
    mx.save_gguf(p, arrays, meta)
    r = gguf.GGUFReader(p)
    got = {t.name: t for t in r.tensors}
    for k, v in tensors.items():
        if v is None:
            continue
        t = got[k]
        assert int(t.tensor_type) == GGUF_PLAIN[k]
        assert list(t.shape) == list(v.shape[::-1])
        assert np.asarray(t.data).reshape(v.shape).tobytes() == v.tobytes()
    assert int(got["bf"].tensor_type) == 30
    f = r.fields
    assert bytes(f["s"].parts[-1]).decode() == "text"
    assert [bytes(f["l"].parts[i]).decode() for i in f["l"].data] == ["a", "b"]
    assert f["u"].parts[-1][0] == 7 and f["u"].types[0] == gguf.GGUFValueType.UINT32
    assert list(f["f"].parts[i][0] for i in f["f"].data) == [1.5, 2.5]
    assert f["b"].types[0] == gguf.GGUFValueType.BOOL and f["i64"].parts[-1][0] == -3
    # and Ember reads its own file back with the metadata
    out, m2 = mx.load(p, return_metadata=True)
    same_bits(out["int32"], tensors["int32"])
    assert m2["s"] == "text" and m2["l"] == ["a", "b"] and m2["u"].item() == 7


@ember_only
def test_gguf_save_errors(tmp_path):
    p = str(tmp_path / "e")
    raises(ValueError, ["save_gguf", "'x'", "uint8", "no GGUF tensor type"],
           lambda: mx.save_gguf(p, {"x": mx.ones(2, dtype=mx.uint8)}, {}))
    raises(ValueError, ["'x'", "exceed GGML's limit of 4"], lambda: mx.save_gguf(p, {"x": mx.ones((1,) * 5)}, {}))
    raises(TypeError, "'m' must be an array, a string or a list of strings",
           lambda: mx.save_gguf(p, {}, {"m": 3}))
    raises(ValueError, ["'m'", "0-d or 1-d"], lambda: mx.save_gguf(p, {}, {"m": mx.ones((2, 2))}))


# ---- load: formats, metadata, errors -----------------------------------------

def test_load_format_errors(tmp_path):
    p = tmp_path / "a.npy"
    mx.save(str(p), mx.ones(2))
    raises(ValueError, "[load] Unknown file format txt", lambda: mx.load(str(tmp_path / "x.txt")))
    raises(ValueError, "[load] Could not infer file format from extension", lambda: mx.load(str(tmp_path / "x")))
    raises(ValueError, "[load] Unknown file format foo", lambda: mx.load(str(p), format="foo"))
    raises(ValueError, "[load] metadata not supported for format npy", lambda: mx.load(str(p), return_metadata=True))
    mx.savez(str(tmp_path / "z"), a=mx.ones(1))
    raises(ValueError, "metadata not supported for format npz",
           lambda: mx.load(str(tmp_path / "z.npz"), return_metadata=True))
    raises(ValueError, "Input must be a file-like object opened in binary mode, or string", lambda: mx.load(3))
    raises(ValueError, "Input must be a file-like object, or string", lambda: mx.save(3, mx.ones(1)))
    same_bits(mx.load(str(p), format="npy"), np.ones(2, np.float32))
    q = tmp_path / "renamed.bin"
    q.write_bytes(p.read_bytes())
    same_bits(mx.load(str(q), format="npy"), np.ones(2, np.float32))


@ember_only  # MLX raises AttributeError for a file object without a name
def test_file_object_without_name_needs_format():
    b = io.BytesIO()
    mx.save(b, mx.ones(2))
    b.seek(0)
    raises(ValueError, "[load] Could not infer file format from extension", lambda: mx.load(b))


@ember_only  # MLX raises RuntimeError for missing files
def test_load_missing_file_oserror(tmp_path):
    for ext in ["npy", "npz", "safetensors", "gguf"]:
        path = str(tmp_path / f"missing.{ext}")
        raises(FileNotFoundError, [path, "No such file"], lambda: mx.load(path))
    raises(IsADirectoryError, "Is a directory", lambda: mx.load(str(tmp_path), format="npy"))
    raises(FileNotFoundError, "Failed to open file", lambda: mx.save(str(tmp_path / "no" / "dir.npy"), mx.ones(1)))


@ember_only
@pytest.mark.parametrize("case", C.MALFORMED, ids=[c[0] for c in C.MALFORMED])
def test_malformed_table(tmp_path, case):
    cid, fmt, data, frag = case
    p = tmp_path / f"bad.{fmt}"
    p.write_bytes(data)
    e = raises(ValueError, [str(p), frag], lambda: mx.load(str(p)))
    assert f"[load_{fmt}]" in str(e.value)
    # the same bytes through a file object
    raises(ValueError, frag, lambda: mx.load(io.BytesIO(data), format=fmt))


@ember_only
def test_error_names_the_tensor(tmp_path):
    p = tmp_path / "t.safetensors"
    p.write_bytes(C.st({"weight.0": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, C.F4x2))
    raises(ValueError, [str(p), "tensor 'weight.0'", "need 12"], lambda: mx.load(str(p)))
    g = tmp_path / "t.gguf"
    g.write_bytes(C.gguf([], [("blk.0.attn", [2], 77, 0)], C.F4x2))
    raises(ValueError, [str(g), "tensor 'blk.0.attn'", "tensor type 77"], lambda: mx.load(str(g)))


@ember_only  # MLX 0.32 rejects the npy seed with reordered header keys
def test_seeds_load():
    for fmt, files in C.seeds().items():
        for data in files:
            mx.load(io.BytesIO(data), format=fmt)


# ---- mapped, lazy, zero-copy; atomic saves -------------------------------------

@ember_only
def test_mapped_arrays_are_views(tmp_path):
    x = np.arange(1 << 20, dtype=np.float32)  # 4 MiB
    p = str(tmp_path / "big.safetensors")
    safetensors_numpy.save_file({"x": x, "y": x[:10].copy()}, p)
    mx.eval(mx.zeros(1))
    before = mx.get_active_memory()
    out = mx.load(p)
    assert mx.get_active_memory() - before < 1 << 16  # nothing allocated: views of the mapping
    v = np.array(out["x"], copy=False)
    assert not v.flags.writeable  # the mapping is read-only
    os.unlink(p)  # the mapping outlives the file's name and descriptor
    assert float(mx.sum(out["x"][:4]).item()) == 6.0
    same_bits(out["y"], x[:10])
    # npy and stored npz members (aligned by Ember's writer) too
    q = str(tmp_path / "a.npz")
    mx.savez(q, x=mx.array(x))
    before = mx.get_active_memory()
    z = mx.load(q)
    assert mx.get_active_memory() - before < 1 << 16
    same_bits(z["x"], x)
    q = str(tmp_path / "a.npy")
    np.save(q, x)
    before = mx.get_active_memory()
    a = mx.load(q)
    assert mx.get_active_memory() - before < 1 << 16
    b = a + 1  # computing on a view allocates the result only
    mx.eval(b)
    assert np.array_equal(np.array(a), x)


@ember_only
def test_file_shrinking_under_a_mapping_raises_at_eval(tmp_path):
    x = np.arange(1 << 20, dtype=np.float32)  # 4 MiB
    p = tmp_path / "t.npy"
    np.save(p, x)
    a = mx.load(str(p))
    b = mx.load(str(p))
    os.truncate(p, 8192)  # the pages past it vanish: reading them would be SIGBUS
    raises(OSError, [str(p), "shrank while mapped"], lambda: mx.eval(mx.sum(a)))
    assert mx.sum(mx.ones(3)).item() == 3  # the process lives on; other evaluations work
    assert float(mx.sum(b[:10]).item()) == 45.0  # the first page is still there
    del a, b


@ember_only
def test_open_file_objects_are_mapped(tmp_path):
    x = np.arange(1 << 18, dtype=np.float32)
    p = str(tmp_path / "f.safetensors")
    safetensors_numpy.save_file({"x": x}, p)
    mx.eval(mx.zeros(1))
    before = mx.get_active_memory()
    with open(p, "rb") as f:
        out = mx.load(f)  # a regular file at its start: mapped, not read into memory
        assert f.tell() == os.path.getsize(p)
    assert mx.get_active_memory() - before < 1 << 16
    same_bits(out["x"], x)  # valid after the file object is closed
    with open(p, "rb") as f:
        f.seek(3)
        raises(ValueError, "[load_safetensors]", lambda: mx.load(f, format="safetensors"))  # read from there


@ember_only
def test_atomic_save_keeps_old_file(tmp_path):
    p = tmp_path / "keep.gguf"
    mx.save_gguf(str(p), {"a": mx.ones(2)}, {})
    old = p.read_bytes()
    # fails while writing (the second tensor has no GGUF type): nothing replaced, no temporary left
    raises(ValueError, "no GGUF tensor type",
           lambda: mx.save_gguf(str(p), {"a": mx.zeros(2), "b": mx.zeros(2, dtype=mx.uint16)}, {}))
    assert p.read_bytes() == old
    assert os.listdir(tmp_path) == ["keep.gguf"]
