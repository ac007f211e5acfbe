"""Hand-made files for the loaders: valid seeds and the malformed-file table.

Everything here is built byte by byte with ``struct`` (not with Ember's
writers), so the table checks the loaders against the formats as specified.
``MALFORMED`` is a list of ``(case id, format, bytes, message fragment)``:
loading the bytes must raise ValueError whose message holds the fragment.
``seeds()`` gives valid files of each format for the fuzz harness
(``test_io_fuzz.py`` and, under the sanitizers, ``tests/cpp/io_fuzz.cpp``
through ``tools/io_cases_dump.py``).
"""

import json
import struct
import zlib

import numpy as np

# ---- .npy ------------------------------------------------------------------


def npy(header, data=b"", version=(1, 0), pad=True):
    """A .npy file with the header text `header` (a str) and raw data."""
    h = header.encode("latin1" if version[0] < 3 else "utf8")
    if pad:
        pre = 10 if version[0] == 1 else 12
        total = -(-(pre + len(h) + 1) // 64) * 64
        h = h + b" " * (total - pre - len(h) - 1) + b"\n"
    fmt = "<H" if version[0] == 1 else "<I"
    return b"\x93NUMPY" + bytes(version) + struct.pack(fmt, len(h)) + h + data


def npy_dict(descr="<f4", fortran=False, shape=(2,)):
    return "{'descr': %r, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, tuple(shape))


F4x2 = np.array([1.5, -2.0], np.float32).tobytes()

# ---- .npz (zip) ------------------------------------------------------------


def zip_file(members, comment=b"", crc_fix=None, method=None, usize_fix=None, local_name=None,
             offset_fix=None, count_fix=None):
    """A zip of (name, bytes) members, stored or deflated (method 8)."""
    out = b""
    central = b""
    for k, (name, data) in enumerate(members):
        name_b = name.encode()
        m = 0 if method is None else method
        comp = data if m == 0 else zlib.compress(data)[2:-4]
        crc = zlib.crc32(data) if crc_fix is None else crc_fix
        usize = len(data) if usize_fix is None else usize_fix
        off = len(out) if offset_fix is None else offset_fix
        lname = name_b if local_name is None else local_name.encode()
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, m, 0, 0x21, crc, len(comp), usize,
                           len(lname), 0) + lname + comp
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, m, 0, 0x21, crc, len(comp),
                               usize, len(name_b), 0, 0, 0, 0, 0, off) + name_b
    n = len(members) if count_fix is None else count_fix
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(central), len(out), len(comment))
    return out + central + end + comment


def npz(arrays):
    """Stored .npz of name -> numpy array, written as np.save would."""
    import io
    members = []
    for name, a in arrays.items():
        b = io.BytesIO()
        np.save(b, a)
        members.append((name + ".npy", b.getvalue()))
    return zip_file(members)


# ---- .safetensors ------------------------------------------------------------


def st(header, data=b"", raw_header=None, length=None):
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def st_ok():
    return st({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
               "b": {"dtype": "I16", "shape": [1, 2], "data_offsets": [8, 12]}},
              F4x2 + struct.pack("<hh", 7, -3))


# ---- .gguf -----------------------------------------------------------------


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf(kvs=(), tensors=(), data=b"", version=3, nt=None, nkv=None, align=32):
    """kvs: raw encoded key-value pairs; tensors: (name, dims, type, offset)."""
    body = b"".join(kvs)
    infos = b""
    for name, dims, typ, off in tensors:
        infos += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", typ, off)
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors) if nt is None else nt,
                                 len(kvs) if nkv is None else nkv)
    out = head + body + infos
    out += b"\0" * ((-len(out)) % align)
    return out + data


def kv_u32(key, v):
    return gstr(key) + struct.pack("<II", 4, v)


def kv_str(key, v):
    return gstr(key) + struct.pack("<I", 8) + gstr(v)


def gguf_ok():
    return gguf([kv_str("general.name", "x"), kv_u32("n", 3)],
                [("w", [2], 0, 0), ("i", [2, 1], 26, 32)],
                F4x2 + b"\0" * 24 + struct.pack("<ii", 5, 6))


def seeds():
    """Valid files per format, for the fuzzers."""
    q4 = bytes([0x00, 0x3C]) + bytes(range(16))  # one Q4_0 block, d = 1.0
    return {
        "npy": [npy(npy_dict()) + F4x2,
                npy(npy_dict("<i2", True, (2, 1)), struct.pack("<hh", 1, 2), version=(2, 0)),
                npy("{'shape': (), 'descr': '>f8', 'fortran_order': False}", struct.pack(">d", 2.5))],
        "npz": [npz({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([True, False])}),
                zip_file([("x.npy", npy(npy_dict()) + F4x2)], method=8)],
        "safetensors": [st_ok(), st({"__metadata__": {"k": "v"},
                                     "z": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}})],
        "gguf": [gguf_ok(), gguf([], [("q", [32], 2, 0)], q4)],
    }


# ---- the malformed-file table ----------------------------------------------

def _cases():
    c = []
    add = lambda cid, fmt, data, frag: c.append((cid, fmt, data, frag))  # noqa: E731
    # npy
    add("npy-empty", "npy", b"", "truncated")
    add("npy-magic", "npy", b"\x93NUMPZ\x01\x00" + b"\0" * 60, "magic")
    add("npy-version", "npy", npy(npy_dict(), F4x2, version=(4, 0)), "version 4.0")
    add("npy-minor", "npy", npy(npy_dict(), F4x2, version=(1, 1)), "version 1.1")
    add("npy-header-len", "npy", b"\x93NUMPY\x01\x00\x40\x00{'descr'", "truncated")
    add("npy-header-huge", "npy", b"\x93NUMPY\x02\x00" + struct.pack("<I", 1 << 30), "exceeds NumPy's limit")
    add("npy-no-newline", "npy", npy(npy_dict(), pad=False) + F4x2, "newline")
    add("npy-missing-key", "npy", npy("{'descr': '<f4', 'shape': (2,)}", F4x2), "lacks the key 'fortran_order'")
    add("npy-extra-key", "npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", F4x2),
        "the key 'x'")
    add("npy-dup-key", "npy", npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", F4x2),
        "twice")
    add("npy-object", "npy", npy(npy_dict("|O"), b"\0" * 16), "pickle")
    add("npy-complex128", "npy", npy(npy_dict("<c16"), b"\0" * 32), "complex128")
    add("npy-unknown-dtype", "npy", npy(npy_dict("<U3"), b"\0" * 24), "not a dtype Ember supports")
    add("npy-structured", "npy", npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", F4x2),
        "structured")
    add("npy-negative-dim", "npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", F4x2), "negative")
    add("npy-shape-int", "npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", F4x2), "not a tuple")
    add("npy-shape-overflow", "npy", npy(npy_dict(shape=(2 ** 40, 2 ** 40)), F4x2), "more elements than 2^62")
    add("npy-dim-64bit", "npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551617,)}"),
        "does not fit in 64 bits")
    add("npy-truncated-data", "npy", npy(npy_dict(shape=(3,)), F4x2), "truncated")
    add("npy-trailing-data", "npy", npy(npy_dict(), F4x2 + b"xx"), "trailing data")
    add("npy-fortran-value", "npy", npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", F4x2),
        "not True or False")
    add("npy-eval", "npy", npy("{'descr': __import__('os'), 'fortran_order': False, 'shape': (2,)}", F4x2),
        "expected a string")
    add("npy-v1-nonascii", "npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\xe9", F4x2),
        "not ASCII")
    add("npy-v3-bad-utf8", "npy", b"\x93NUMPY\x03\x00" + struct.pack("<I", 4) + b"{\xff}\n", "UTF-8")
    # npz
    good = npz({"a": np.ones(2, np.float32)})
    add("npz-not-zip", "npz", b"PK" + b"\0" * 30, "end-of-central-directory")
    add("npz-short", "npz", b"PK\x05\x06", "shorter than")
    add("npz-crc", "npz", zip_file([("a.npy", npy(npy_dict()) + F4x2)], crc_fix=1234), "CRC-32 mismatch")
    add("npz-method", "npz", zip_file([("a.npy", npy(npy_dict()) + F4x2)], method=12), "compression method 12")
    add("npz-bomb", "npz", zip_file([("a.npy", npy(npy_dict()) + F4x2)], method=8, usize_fix=4000000000),
        "beyond deflate's 1032:1")
    add("npz-stored-size", "npz", zip_file([("a.npy", npy(npy_dict()) + F4x2)], usize_fix=5), "sizes differ")
    add("npz-local-name", "npz", zip_file([("a.npy", npy(npy_dict()) + F4x2)], local_name="b.npy"),
        "names another member")
    add("npz-offset", "npz", zip_file([("a.npy", npy(npy_dict()) + F4x2)], offset_fix=10 ** 6), "past the end")
    add("npz-dup", "npz", zip_file([("a.npy", npy(npy_dict()) + F4x2)] * 2), "twice")
    add("npz-count", "npz", zip_file([("a.npy", npy(npy_dict()) + F4x2)], count_fix=60000), "cannot hold")
    add("npz-not-npy", "npz", zip_file([("a.txt", b"hello")]), "not a .npy file")
    add("npz-bad-member", "npz", zip_file([("a.npy", b"\x93NUMPY\x01\x00\x00")]), "a.npy]")
    add("npz-inflate-short", "npz", zip_file([("a.npy", npy(npy_dict()) + F4x2)], method=8,
                                             usize_fix=len(npy(npy_dict()) + F4x2) + 10), "fewer bytes")
    add("npz-inflate-long", "npz", zip_file([("a.npy", npy(npy_dict()) + F4x2)], method=8,
                                            usize_fix=len(npy(npy_dict()) + F4x2) - 10), "more bytes")
    add("npz-truncated-cd", "npz", good[:-30] + good[-22:], "")
    # safetensors
    add("st-empty", "safetensors", b"", "truncated")
    add("st-header-huge", "safetensors", struct.pack("<Q", 2 ** 63 + 5) + b"{}", "exceeds the 100 MB limit")
    add("st-header-past-end", "safetensors", struct.pack("<Q", 1000) + b"{}", "truncated")
    add("st-not-json", "safetensors", st(None, raw_header=b"{'a': 1}"), "not valid JSON")
    add("st-not-object", "safetensors", st(None, raw_header=b"[1,2]"), "does not start with '{'")
    add("st-bad-utf8", "safetensors", st(None, raw_header=b'{"\xff": 1}'), "UTF-8")
    add("st-dup-key", "safetensors",
        st(None, raw_header=b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
           b'"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', data=b"x"), "twice")
    add("st-dtype", "safetensors", st({"a": {"dtype": "F7", "shape": [1], "data_offsets": [0, 1]}}, b"x"),
        "dtype 'F7'")
    add("st-neg-dim", "safetensors", st({"a": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}}, b"x"),
        "negative")
    add("st-float-dim", "safetensors", st({"a": {"dtype": "U8", "shape": [1.5], "data_offsets": [0, 1]}}, b"x"),
        "not an integer")
    add("st-size-mismatch", "safetensors", st({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, F4x2),
        "need 12")
    add("st-overflow", "safetensors",
        st({"a": {"dtype": "F32", "shape": [2 ** 62, 2 ** 62], "data_offsets": [0, 8]}}, F4x2), "2^62")
    add("st-offsets-huge", "safetensors",
        st({"a": {"dtype": "U8", "shape": [1], "data_offsets": [18446744073709551615, 0]}}, b"x"), "end before")
    add("st-offsets-64bit", "safetensors",
        st({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 18446744073709551616]}}, b"x"),
        "does not fit in 64 bits")
    add("st-overlap", "safetensors",
        st({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, F4x2), "overlap")
    add("st-gap", "safetensors", st({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, F4x2), "gap")
    add("st-trailing", "safetensors", st({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, F4x2),
        "trailing data")
    add("st-truncated", "safetensors", st({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, F4x2[:6]),
        "truncated")
    add("st-missing-field", "safetensors", st({"a": {"dtype": "F32", "shape": [1]}}, F4x2[:4]), "lacks 'data_offsets'")
    add("st-extra-field", "safetensors",
        st({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": 1}}, F4x2[:4]), "unknown field 'x'")
    add("st-metadata-int", "safetensors", st({"__metadata__": {"k": 1}}), "not a string")
    add("st-deep", "safetensors", st(None, raw_header=b'{"a":' + b"[" * 100 + b"]" * 100 + b"}"), "nesting")
    add("st-trailing-garbage", "safetensors", st(None, raw_header=b"{} x"), "trailing characters")
    add("st-surrogate", "safetensors", st(None, raw_header=b'{"\\ud800": 1}'), "surrogate")
    # gguf
    add("gguf-magic", "gguf", b"GGUX" + b"\0" * 20, "magic")
    add("gguf-version", "gguf", gguf(version=1), "version 1")
    add("gguf-tensor-count", "gguf", gguf(nt=2 ** 63), "tensor count")
    add("gguf-kv-count", "gguf", gguf(nkv=2 ** 40), "metadata count")
    add("gguf-key-past-end", "gguf", gguf([struct.pack("<Q", 2 ** 62) + b"abc"]), "past the end")
    add("gguf-str-past-end", "gguf", gguf([gstr("k") + struct.pack("<IQ", 8, 10 ** 9)]), "past the end")
    add("gguf-array-len", "gguf", gguf([gstr("k") + struct.pack("<IIQ", 9, 4, 2 ** 61)]), "cannot fit")
    add("gguf-nested", "gguf", gguf([gstr("k") + struct.pack("<IIQ", 9, 9, 1)]), "nested arrays")
    add("gguf-value-type", "gguf", gguf([gstr("k") + struct.pack("<I", 13)]), "unknown value type 13")
    add("gguf-bool", "gguf", gguf([gstr("k") + struct.pack("<IB", 7, 2)]), "not 0 or 1")
    add("gguf-dup-key", "gguf", gguf([kv_u32("n", 1), kv_u32("n", 2)]), "appears twice")
    add("gguf-align-0", "gguf", gguf([kv_u32("general.alignment", 0)]), "not a power of two")
    add("gguf-align-3", "gguf", gguf([kv_u32("general.alignment", 3)]), "not a power of two")
    add("gguf-n-dims", "gguf", gguf([], [("w", [1] * 1000, 0, 0)]), "n_dims 1000")
    add("gguf-type", "gguf", gguf([], [("w", [2], 99, 0)], F4x2), "tensor type 99")
    add("gguf-type-q2k", "gguf", gguf([], [("w", [256], 10, 0)], b"\0" * 84), "tensor type 10")
    add("gguf-offset-align", "gguf", gguf([], [("w", [1], 0, 4)], F4x2), "not a multiple of the alignment")
    add("gguf-data-past-end", "gguf", gguf([], [("w", [4], 0, 0)], F4x2), "truncated")
    add("gguf-offset-huge", "gguf", gguf([], [("w", [1], 0, 2 ** 64 - 32)], F4x2), "truncated")
    add("gguf-overlap", "gguf", gguf([], [("a", [16], 0, 0), ("b", [2], 0, 32)], b"\0" * 64), "overlaps")
    add("gguf-dup-tensor", "gguf", gguf([], [("a", [1], 0, 0), ("a", [1], 0, 32)], b"\0" * 64), "appears twice")
    add("gguf-quant-rows", "gguf", gguf([], [("q", [16], 2, 0)], b"\0" * 18), "multiple of 32")
    add("gguf-dims-overflow", "gguf", gguf([], [("w", [2 ** 40, 2 ** 40], 0, 0)], F4x2), "2^62")
    add("gguf-align-type", "gguf", gguf([gstr("general.alignment") + struct.pack("<IQ", 10, 32)]), "not a uint32")
    return c


MALFORMED = _cases()
