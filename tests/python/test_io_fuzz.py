"""Seeded mutation fuzzing of the four loaders (10,000 inputs per format).

Each input is a valid seed of ``io_cases.seeds()`` with a few mutations
(bit flips, random bytes, truncation, extreme 32/64-bit values, inserted
and deleted ranges, header characters). Loading it must either succeed,
after which every array is evaluated and read, or raise ValueError;
any other exception (or a crash of the process) fails. The same run,
under AddressSanitizer and UndefinedBehaviorSanitizer, is
``tests/cpp/io_fuzz.cpp`` in ``.ci/run``. Also here: deflate streams from
zlib at every level and strategy, inflated by Ember.
"""

import io
import random
import struct
import zlib

import numpy as np
import pytest

import io_cases as C
from conftest import ember_only, mx

pytestmark = ember_only  # the messages and the ValueError-only rule are Ember's

N = 10_000
EXTREME = [0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 1 << 63, (1 << 64) - 1, 1 << 32, 31, 33]


def mutate(data, rng):
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        if op == 0 and b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 2:
            del b[rng.randrange(len(b) + 1):]
        elif op == 3:
            w = rng.choice([4, 8])
            if len(b) >= w:
                at = rng.randrange(len(b) - w + 1)
                b[at:at + w] = struct.pack("<Q", rng.choice(EXTREME))[:w]
        elif op == 4:
            at = rng.randrange(len(b) + 1)
            b[at:at] = bytes([rng.randrange(256)]) * rng.randint(1, 16)
        elif op == 5 and b:
            at = rng.randrange(len(b))
            del b[at:at + rng.randint(1, 16)]
        elif b:
            b[rng.randrange(len(b))] = ord(rng.choice("0123456789,:[]{}()\"' -"))
    return bytes(b)


@pytest.mark.parametrize("fmt", ["npy", "npz", "safetensors", "gguf"])
def test_fuzz_loader(fmt):
    rng = random.Random(f"ember-io-{fmt}")
    seeds = C.seeds()[fmt]
    loaded = rejected = 0
    for i in range(N):
        data = mutate(seeds[i % len(seeds)], rng)
        try:
            out = mx.load(io.BytesIO(data), format=fmt)
        except ValueError:
            rejected += 1
            continue
        arrays = [out] if fmt == "npy" else list(out.values())
        for a in arrays:
            np.array(a)  # reads every byte
        loaded += 1
    assert loaded + rejected == N
    assert rejected > N // 4 and loaded > 0  # the mutations reach both outcomes


@pytest.mark.parametrize("level", [0, 1, 6, 9])
@pytest.mark.parametrize("strategy", ["default", "filtered", "huffman", "rle", "fixed"])
def test_inflate_zlib_streams(tmp_path, level, strategy):
    rng = np.random.default_rng(level)
    payload = np.concatenate([np.repeat(rng.integers(0, 5, 500), 7), rng.integers(0, 256, 3000),
                              np.tile(np.arange(40), 300)]).astype(np.uint8)
    raw = C.npy(C.npy_dict("|u1", shape=(payload.size,)), payload.tobytes())
    strat = {"default": zlib.Z_DEFAULT_STRATEGY, "filtered": zlib.Z_FILTERED, "huffman": zlib.Z_HUFFMAN_ONLY,
             "rle": zlib.Z_RLE, "fixed": zlib.Z_FIXED}[strategy]
    co = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strat)
    comp = co.compress(raw) + co.flush()
    data = _zip_deflated("x.npy", raw, comp)
    out = mx.load(io.BytesIO(data), format="npz")
    assert np.array_equal(np.array(out["x"]), payload)


def _zip_deflated(name, raw, comp):
    n = name.encode()
    crc = zlib.crc32(raw)
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(comp), len(raw), len(n), 0) + n
    cd = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(comp), len(raw), len(n),
                     0, 0, 0, 0, 0, 0) + n
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(cd), len(local) + len(comp), 0)
    return local + comp + cd + end


def test_deflate_readable_by_zlib(tmp_path):
    # Ember's compressor against zlib's decompressor, on data of every kind
    rng = np.random.default_rng(5)
    parts = {"zeros": np.zeros(100_000, np.uint8), "random": rng.integers(0, 256, 70_000, dtype=np.uint8),
             "text": np.frombuffer(b"the quick brown fox jumps over the lazy dog " * 3000, np.uint8),
             "floats": rng.standard_normal(50_000).astype(np.float32), "one": np.ones(1, np.int8)}
    p = str(tmp_path / "c.npz")
    mx.savez_compressed(p, **{k: mx.array(v, dtype=getattr(mx, v.dtype.name)) for k, v in parts.items()})
    import zipfile
    with zipfile.ZipFile(p) as z:
        for k, v in parts.items():
            info = z.getinfo(k + ".npy")
            assert info.compress_type == zipfile.ZIP_DEFLATED
            raw = z.read(k + ".npy")  # zlib inflates and checks the CRC
            assert np.load(io.BytesIO(raw)).tobytes() == v.tobytes()
            if k in ("zeros", "text"):
                assert info.compress_size < info.file_size / 50
            if k == "random":
                assert info.compress_size < info.file_size * 1.01
