"""Memory Ember does not own: DLPack, NumPy and buffer-protocol imports.

MLX (CPU) copies every import: ``mx.array``, ``mx.asarray`` and
``mx.from_dlpack`` of a NumPy array, a memoryview or a DLPack tensor take a
copy at once, so later writes into the source do not show.  Ember does the
same, reading the source in place with its strides (one borrowed buffer,
released as soon as the copy is made).  ``copy=False`` (``asarray``,
``from_dlpack``; MLX's CPU build refuses it) shares the memory instead: the
array lives on a borrowed buffer that keeps its owner alive exactly as long
as any array, view or graph node uses it, is never counted as Ember's active
memory, never enters the cache and is never written by kernels.
"""

import array as pyarray
import ctypes
import gc
import threading
import weakref

import numpy as np
import pytest

from conftest import IS_MLX, assert_equal, dtype_name, ember_only, mx, run_python

MiB = 1 << 20


def strided_sources():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    return {
        "transposed": base.T,
        "sliced": base[1:, ::2],
        "reversed": base[::-1, ::-2],
        "broadcast": np.broadcast_to(base[0], (3, 6)),
        "column": base[:, 3],
        "0-d": np.array(3.5, np.float32),
        "empty": np.zeros((0, 3), np.float32),
    }


STRIDED = list(strided_sources())


def fresh(name):
    return strided_sources()[name]


def writable(name):
    """A writable source of this layout (broadcast_to is read-only)."""
    x = fresh(name)
    if name == "broadcast":
        base = np.arange(6, dtype=np.float32)
        x = np.lib.stride_tricks.as_strided(base, (3, 6), (0, 4))  # keeps base
    return x


def poke(x):
    """Write into the first element x's view addresses."""
    if x.size:
        x[(0,) * x.ndim] = -100.0


# --------------------------------------------------------------------------
# imports copy, as MLX: strides read in place, later writes not visible
# --------------------------------------------------------------------------

IMPORTS = {
    "array": mx.array,
    "asarray": mx.asarray,
    "from_dlpack": mx.from_dlpack,
    "__dlpack__": lambda x: mx.from_dlpack(x) if IS_MLX else mx.from_dlpack(_DLPackOnly(x)),
}


class _DLPackOnly:
    """Only the DLPack protocol of a NumPy array (no buffer, no __array__)."""

    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kwargs):
        return self.x.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


class _LegacyOnly:
    """A producer of unversioned DLPack only."""

    def __init__(self, x):
        self.x = x

    def __dlpack__(self):
        return self.x.__dlpack__()


@pytest.mark.parametrize("how", list(IMPORTS))
@pytest.mark.parametrize("layout", STRIDED)
def test_strided_import_copies(layout, how):
    if IS_MLX and layout == "reversed":
        pytest.skip("MLX refuses negative strides (Ember reads them)")
    x = writable(layout)
    want = x.copy()
    a = IMPORTS[how](x)
    poke(x)
    assert a.shape == want.shape
    assert_equal(a, want, "float32")


def test_array_of_numpy_is_a_copy():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = mx.array(x.T)
    b = mx.asarray(x)
    c = mx.from_dlpack(x)
    x[:] = 0
    assert_equal(a, np.arange(6, dtype=np.float32).reshape(2, 3).T, "float32")
    assert_equal(b, np.arange(6, dtype=np.float32).reshape(2, 3), "float32")
    assert_equal(c, np.arange(6, dtype=np.float32).reshape(2, 3), "float32")


def test_non_contiguous_buffer_protocol_inputs():
    src = np.arange(24, dtype=np.int32).reshape(4, 6)
    mv = memoryview(src)[::2]  # strided memoryview
    assert not mv.c_contiguous
    assert_equal(mx.array(mv), src[::2], "int32")
    mv_t = memoryview(src.T)
    assert_equal(mx.array(mv_t), src.T, "int32")
    assert_equal(mx.array(pyarray.array("h", [1, -2, 3])), [1, -2, 3], "int16")
    assert_equal(mx.array(pyarray.array("d", [1.5, 2.5])), [1.5, 2.5], "float32")
    assert_equal(mx.array(bytearray(b"\x01\x02")), [1, 2], "uint8")
    assert_equal(mx.array(memoryview(b"abc")[::2]), [97, 99], "uint8")


NP_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
             "uint32", "uint64", "float16", "float32", "float64", "complex64",
             "complex128"]
NARROWED = {"float64": "float32", "complex128": "complex64"}


def np_values(name):
    if name == "bool":
        return np.array([[True, False, True], [False, False, True]])
    x = np.arange(6).reshape(2, 3) + 1
    if name.startswith("complex"):
        x = x + 1j * (x - 2)
    return x.astype(name)


@pytest.mark.parametrize("name", NP_DTYPES)
@pytest.mark.parametrize("how", ["array", "from_dlpack"])
def test_every_numpy_dtype(name, how):
    x = np_values(name)
    want = NARROWED.get(name, name)
    for src in (x, x.T, x[:, ::2]):
        a = IMPORTS[how](src)
        assert dtype_name(a.dtype) == want
        assert_equal(a, src.astype(want if want != "bool" else np.bool_), want)


# --------------------------------------------------------------------------
# copy=False shares the memory (Ember; MLX's CPU build raises)
# --------------------------------------------------------------------------

SHARE = {
    "asarray": lambda x: mx.asarray(x, copy=False),
    "from_dlpack": lambda x: mx.from_dlpack(x, copy=False),
    "__dlpack__": lambda x: mx.from_dlpack(_DLPackOnly(x), copy=False),
}


@ember_only
@pytest.mark.parametrize("how", list(SHARE))
@pytest.mark.parametrize("layout", STRIDED)
def test_copy_false_shares_with_strides(layout, how):
    x = writable(layout)
    a = SHARE[how](x)
    assert a.shape == x.shape
    assert_equal(a, x.copy(), "float32")
    poke(x)  # the write shows through: no copy was made
    assert_equal(a, x.copy(), "float32")
    assert_equal(a * 1, x.copy(), "float32")


@ember_only
@pytest.mark.parametrize("name", [n for n in NP_DTYPES if n not in NARROWED])
def test_copy_false_every_dtype(name):
    x = np_values(name)
    for src in (x, x.T, x[::-1, ::2]):
        a = mx.asarray(src, copy=False)
        b = mx.from_dlpack(src, copy=False)
        assert dtype_name(a.dtype) == name and dtype_name(b.dtype) == name
        assert_equal(a, src, name)
        assert_equal(b, src, name)


@ember_only
def test_copy_false_buffer_protocol_objects():
    buf = bytearray(b"\x01\x02\x03")
    a = mx.asarray(buf, copy=False)
    buf[0] = 9
    assert a.tolist() == [9, 2, 3]
    arr = pyarray.array("i", [1, 2, 3, 4])
    b = mx.asarray(memoryview(arr)[::2], copy=False)
    arr[2] = 30
    assert b.tolist() == [1, 30]
    assert dtype_name(b.dtype) == "int32"


@ember_only
def test_copy_false_refuses_what_needs_a_copy():
    for v in ([1, 2], 3, np.arange(3.0), np.arange(3, dtype=np.complex128)):
        with pytest.raises(ValueError, match="copy"):
            mx.asarray(v, copy=False)
    with pytest.raises(ValueError, match="copy"):
        mx.asarray(np.arange(3, dtype=np.int32), dtype=mx.int64, copy=False)
    with pytest.raises(ValueError, match="copy"):
        mx.from_dlpack(np.arange(3.0), copy=False)  # float64 is narrowed
    # misaligned float32 data: copied by default, refused without a copy
    raw = np.frombuffer(b"\x00" + np.arange(3, dtype=np.float32).tobytes(),
                        np.float32, offset=1)
    assert not raw.flags.aligned
    assert_equal(mx.array(raw), [0.0, 1.0, 2.0], "float32")
    with pytest.raises(ValueError, match="aligned"):
        mx.asarray(raw, copy=False)
    # a structured field: strides that are not whole elements
    rec = np.zeros(3, dtype=[("a", "<f4"), ("b", "u1")])
    rec["a"] = [1, 2, 3]
    assert_equal(mx.array(rec["a"]), [1.0, 2.0, 3.0], "float32")
    with pytest.raises(ValueError, match="copy"):
        mx.asarray(rec["a"], copy=False)
    # arrays never need a copy
    a = mx.arange(3)
    assert mx.asarray(a, copy=False) is not None
    # float64 kept when asked for
    f = np.arange(3.0)
    g = mx.asarray(f, dtype=mx.float64, copy=False)
    f[0] = 7
    assert g.tolist() == [7.0, 1.0, 2.0]


# --------------------------------------------------------------------------
# owner lifetime
# --------------------------------------------------------------------------

def _alive(w):
    gc.collect()
    return w() is not None


@pytest.mark.parametrize("how", ["array", "asarray", "from_dlpack"])
def test_copy_releases_the_owner_at_once(how):
    x = np.arange(1000, dtype=np.float32)
    w = weakref.ref(x)
    a = IMPORTS[how](x)
    del x
    assert not _alive(w)
    assert a.sum().item() == 499500.0


@ember_only
@pytest.mark.parametrize("how", list(SHARE))
def test_owner_alive_while_used(how):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    w = weakref.ref(x)
    a = SHARE[how](x)
    del x
    assert _alive(w)
    lazy = a * 2  # a graph node holding the borrowed array
    view = a[1:, ::2]
    mx.eval(view)
    del a
    assert _alive(w)
    mx.eval(lazy)  # evaluated: the node and its input go
    assert lazy.tolist()[0] == [0.0, 2.0, 4.0, 6.0]
    assert _alive(w)  # the view still reads the memory
    assert view.tolist() == [[4.0, 6.0], [8.0, 10.0]]
    del view
    assert not _alive(w)
    del lazy


@ember_only
def test_owner_alive_through_a_lazy_graph():
    x = np.ones(100, dtype=np.float32)
    w = weakref.ref(x)
    y = mx.sum(mx.exp(mx.asarray(x, copy=False) * 0))
    del x
    assert _alive(w)
    assert y.item() == 100.0
    assert not _alive(w)


@ember_only
def test_release_in_eval_threads_takes_the_gil():
    # the last user dies inside eval (the GIL released); the owner's
    # finalizer runs Python code, which needs the GIL
    freed = []

    def work(k):
        for i in range(20):
            x = np.full(1000, float(i), dtype=np.float32)
            weakref.finalize(x, freed.append, (k, i))
            y = mx.asarray(x, copy=False) + 1
            del x
            mx.eval(y)
            assert y[0].item() == i + 1

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gc.collect()
    assert len(freed) == 80


@ember_only
def test_borrowed_arrays_alive_at_exit():
    # owners released (or left) while the interpreter shuts down: no crash,
    # no hang, also for arrays made on other threads and lazy graphs
    p = run_python("""
        import threading
        import numpy as np
        import ember.core as mx
        x = np.arange(10, dtype=np.float32)
        kept = mx.asarray(x, copy=False)
        lazy = kept * 2
        del x
        held = []
        def worker():
            y = mx.asarray(np.ones(5, np.float32), copy=False)
            held.append(y + 1)
            mx.eval(held[-1])
            held.append(y)
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        print("ok", held[0].tolist())
    """, timeout=120)
    assert p.stdout.split() == ["ok", "[2.0,", "2.0,", "2.0,", "2.0,", "2.0]"]


# --------------------------------------------------------------------------
# kernels never donate or write borrowed memory
# --------------------------------------------------------------------------

DONATING = {
    "unary": lambda a: mx.abs(a),
    "binary": lambda a: a + 1,
    "scan": lambda a: mx.cumsum(a),
    "scatter": lambda a: a.at[0].add(5.0),
    "setitem": None,
}


@ember_only
@pytest.mark.parametrize("op", list(DONATING))
def test_no_donation_into_borrowed_memory(op):
    x = np.arange(-4, 4, dtype=np.float32)
    keep = x.copy()
    if op == "setitem":
        a = mx.asarray(x, copy=False)
        a[0] = 100.0
        mx.eval(a)
        assert a.tolist()[0] == 100.0
    else:
        # the borrowed input is held by the node alone: the case where a
        # kernel would reuse its buffer for the output
        r = DONATING[op](mx.asarray(x, copy=False))
        mx.eval(r)
        want = {"unary": np.abs(keep), "binary": keep + 1,
                "scan": np.cumsum(keep),
                "scatter": keep + np.eye(8, dtype=np.float32)[0] * 5}[op]
        assert_equal(r, want, "float32")
    np.testing.assert_array_equal(x, keep)


# --------------------------------------------------------------------------
# allocator statistics
# --------------------------------------------------------------------------

@ember_only
def test_borrowed_memory_is_not_active_and_never_cached():
    x = np.ones((1024, 1024), dtype=np.float32)  # 4 MiB
    gc.collect()
    mx.clear_cache()
    base, cache = mx.get_active_memory(), mx.get_cache_memory()
    a = mx.asarray(x, copy=False)
    mx.eval(a)
    assert mx.get_active_memory() - base < MiB
    assert mx.get_array_buffer_size(a) == 4 * MiB
    v = a[::2]
    mx.eval(v)
    del a, v
    gc.collect()
    assert mx.get_cache_memory() - cache < MiB
    assert mx.get_active_memory() - base < MiB
    # a copy is Ember's memory, as in MLX
    c = mx.array(x)
    mx.eval(c)
    assert mx.get_active_memory() - base >= 4 * MiB


# --------------------------------------------------------------------------
# exports keep their memory alive
# --------------------------------------------------------------------------

EXPORTS = {
    "np.asarray": np.asarray,
    "memoryview": memoryview,
    "np.from_dlpack": np.from_dlpack,
    "__array__": lambda a: a.__array__(),
}


@pytest.mark.parametrize("how", list(EXPORTS))
def test_export_outlives_the_array(how):
    a = mx.arange(12).reshape(3, 4).astype(mx.float32) + 1
    want = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    e = EXPORTS[how](a)
    del a
    gc.collect()
    mx.clear_cache()
    junk = mx.full((3, 4), 7.0)  # would reuse a freed block
    mx.eval(junk)
    np.testing.assert_array_equal(np.asarray(e), want)


@pytest.mark.parametrize("how", list(EXPORTS))
def test_strided_export(how):
    a = mx.arange(12).reshape(3, 4).astype(mx.float32)
    for v, want in ((a.T, np.arange(12.0).reshape(3, 4).T),
                    (a[::-1, ::2], np.arange(12.0).reshape(3, 4)[::-1, ::2]),
                    (mx.broadcast_to(a[0], (2, 4)), np.tile(np.arange(4.0), (2, 1)))):
        np.testing.assert_array_equal(np.asarray(EXPORTS[how](v)), want)


def test_strided_export_shares_like_mlx():
    a = mx.arange(12).reshape(3, 4).astype(mx.float32)
    n = np.asarray(a.T)
    assert n.strides == (4, 16)  # no copy: the array's own strides


@ember_only  # MLX's __array__ shares memory even with copy=True
def test_array_protocol_copy_argument():
    a = mx.arange(4).astype(mx.float32)
    shared = a.__array__()
    assert np.shares_memory(shared, a.__array__(copy=False))
    assert not np.shares_memory(shared, a.__array__(copy=True))
    assert a.__array__(np.float64).dtype == np.float64
    assert np.shares_memory(shared, a.__array__(np.float32, copy=False))
    with pytest.raises(ValueError):
        a.__array__(np.float64, copy=False)
    n = np.array(a)  # np.array copies
    n[0] = 9
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_array_outlives_its_numpy_source():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = mx.array(x.T)
    del x
    gc.collect()
    assert_equal(a, np.arange(6, dtype=np.float32).reshape(2, 3).T, "float32")


@ember_only
@pytest.mark.parametrize("how", list(EXPORTS))
def test_export_of_borrowed_keeps_the_owner(how):
    x = np.arange(6, dtype=np.float32)
    w = weakref.ref(x)
    a = mx.asarray(x, copy=False)
    del x
    e = EXPORTS[how](a)
    del a
    assert _alive(w)
    np.testing.assert_array_equal(np.asarray(e), np.arange(6, dtype=np.float32))
    del e
    assert not _alive(w)


@ember_only
def test_read_only_memory_stays_read_only():
    a = mx.asarray(b"abcd", copy=False)
    assert a.tolist() == [97, 98, 99, 100]
    assert memoryview(a).readonly
    n = np.asarray(a)
    assert not n.flags.writeable
    assert not a.__array__().flags.writeable
    d = np.from_dlpack(a)
    assert not d.flags.writeable
    with pytest.raises(ValueError):
        n[0] = 1
    r = np.arange(3, dtype=np.float32)
    r.flags.writeable = False
    b = mx.from_dlpack(r, copy=False)  # versioned DLPack says read-only
    assert memoryview(b).readonly
    # an unversioned consumer gets a copy
    cap = b.__dlpack__()
    assert '"dltensor"' in repr(cap)
    c = mx.from_dlpack(_LegacyOnly(b))
    assert not memoryview(c).readonly


# --------------------------------------------------------------------------
# malformed DLPack producers
# --------------------------------------------------------------------------

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]
DLManagedTensorVersioned._fields_ = [
    ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
    ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
    ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Producer:
    """A hand-made DLPack producer over a NumPy buffer; counts deleter calls."""

    def __init__(self, buf, shape, strides=None, code=2, bits=32, lanes=1,
                 ndim=None, device=1, data="buf", byte_offset=0, version=None,
                 kwargs=True):
        self.buf = buf
        self.calls = 0
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(*strides)
        self.deleter = DELETER(self._deleted)
        t = DLTensor()
        t.data = buf.ctypes.data if data == "buf" else data
        t.device = DLDevice(device, 0)
        t.ndim = len(shape) if ndim is None else ndim
        t.dtype = DLDataType(code, bits, lanes)
        t.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = (ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
                     if self.strides is not None else None)
        t.byte_offset = byte_offset
        self.version = version
        if version is None:
            self.mt = DLManagedTensor(t, None, self.deleter)
        else:
            self.mt = DLManagedTensorVersioned(version[0], version[1], None,
                                               self.deleter, 0, t)
        if not kwargs:
            self.__dlpack__ = self._dlpack_plain

    def _deleted(self, _):
        self.calls += 1

    def _capsule(self):
        name = b"dltensor" if self.version is None else b"dltensor_versioned"
        return _capsule_new(ctypes.addressof(self.mt), name, None)

    def __dlpack__(self, **kwargs):
        return self._capsule()

    def _dlpack_plain(self):
        return self._capsule()

    def __dlpack_device__(self):
        return (1, 0)


@ember_only
@pytest.mark.parametrize("copy", [None, False])
@pytest.mark.parametrize("versioned", [False, True])
def test_hand_made_producer_strides_and_deleter(copy, versioned):
    buf = np.arange(12, dtype=np.float32)
    p = Producer(buf, [3, 2], [1, 4], byte_offset=4,
                 version=(1, 0) if versioned else None)
    a = mx.from_dlpack(p, copy=copy)
    want = np.array([[buf[1 + i + 4 * j] for j in range(2)] for i in range(3)])
    assert_equal(a, want, "float32")
    del a
    gc.collect()
    assert p.calls == 1


@ember_only
def test_producer_without_max_version():
    buf = np.arange(4, dtype=np.int32)
    p = Producer(buf, [4], code=0, bits=32, kwargs=False)
    assert_equal(mx.from_dlpack(p), [0, 1, 2, 3], "int32")
    assert p.calls == 1


BAD = {
    "ndim < 0": dict(shape=[4], ndim=-1),
    "ndim huge": dict(shape=[4], ndim=1000),
    "negative dim": dict(shape=[-4]),
    "null data": dict(shape=[4], data=0),
    "vector dtype": dict(shape=[4], lanes=4),
    "bits": dict(shape=[4], code=0, bits=7),
    "int128": dict(shape=[4], code=0, bits=128),
    "dtype code": dict(shape=[4], code=9),
    "device": dict(shape=[4], device=2),
    "stride overflow": dict(shape=[4, 4], strides=[1 << 62, 1]),
    "address wrap": dict(shape=[2], strides=[-(1 << 60)]),
    "byte offset": dict(shape=[2], byte_offset=(1 << 64) - 8),
    "version": dict(shape=[4], version=(2, 0)),
}


@ember_only
@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("copy", [None, False])
def test_malformed_dlpack_raises(case, copy):
    buf = np.arange(16, dtype=np.float32)
    p = Producer(buf, **BAD[case])
    with pytest.raises((ValueError, TypeError)) as e:
        mx.from_dlpack(p, copy=copy)
    assert "from_dlpack" in str(e.value)
    assert p.calls == 1  # the consumed tensor is handed back exactly once


@ember_only
def test_dlpack_zero_d_and_empty_with_hand_made_producer():
    buf = np.array([5.0], dtype=np.float32)
    p = Producer(buf, [])
    assert mx.from_dlpack(p).item() == 5.0
    e = Producer(buf, [0, 3], data=0)  # an empty tensor may have no data
    assert mx.from_dlpack(e).shape == (0, 3)
    assert p.calls == 1 and e.calls == 1


def test_dlpack_only_objects_convert_like_mlx():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = mx.array(_DLPackOnly(x.T))
    b = mx.add(mx.array(1.0), _DLPackOnly(x))
    x[0, 0] = 100  # copied
    assert_equal(a, np.arange(6, dtype=np.float32).reshape(2, 3).T, "float32")
    assert_equal(b, np.arange(6, dtype=np.float32).reshape(2, 3) + 1, "float32")
    f = np.array([1 / 3])
    assert dtype_name(mx.array(_DLPackOnly(f)).dtype) == "float32"
    if not IS_MLX:
        assert mx.array(_DLPackOnly(f), dtype=mx.float64).item() == 1 / 3


def test_from_dlpack_needs_dlpack():
    with pytest.raises((TypeError, ValueError)):
        mx.from_dlpack([1, 2])


# --------------------------------------------------------------------------
# torch (extra: skipped without torch)
# --------------------------------------------------------------------------

def test_torch_imports_and_exports():
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    for src in (t, t.T, t[:, ::2]):
        a = mx.from_dlpack(src)
        b = mx.array(src)
        want = src.numpy().copy()
        assert_equal(a, want, "float32")
        assert_equal(b, want, "float32")
    c = mx.from_dlpack(t)
    t[0, 0] = 50.0  # copied, as MLX
    assert c[0, 0].item() == 0.0
    e = torch.from_dlpack(mx.arange(6).reshape(2, 3).T)
    assert e.tolist() == [[0, 3], [1, 4], [2, 5]]


@ember_only
def test_torch_copy_false_shares():
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    a = mx.from_dlpack(t.T, copy=False)
    t[0, 1] = 50.0
    assert a[1, 0].item() == 50.0
    want = t.T.numpy().copy()
    del t  # the DLPack tensor keeps the storage until a goes
    gc.collect()
    junk = torch.full((3, 4), 7.0)
    assert_equal(a, want, "float32")
    del junk
