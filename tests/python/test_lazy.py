"""Lazy evaluation as seen from Python, the memory API, devices and streams.

Whether an array has been evaluated is observed through
``mx.get_array_buffer_size``, which raises ValueError for an unevaluated
array (MLX behaviour).  Memory numbers come from the allocator
(``get_active_memory`` / ``get_peak_memory``); freed buffers move to the
cache, which is not counted as active.
"""

import gc
import threading

import numpy as np
import pytest

from conftest import (BACKEND, IS_MLX, assert_close, assert_equal,
                      dtype_name, ember_only, is_evaluated, mx, raises, run_python,
                      to_numpy)

MODULE = "mlx.core" if IS_MLX else "ember.core"
MiB = 1 << 20


def fresh():
    """An unevaluated array (a graph node, not a constant)."""
    return mx.arange(16.0) * 2 + 1


# --------------------------------------------------------------------------
# explicit evaluation
# --------------------------------------------------------------------------

def test_ops_are_lazy():
    a = fresh()
    assert not is_evaluated(a)
    mx.eval(a)
    assert is_evaluated(a)
    assert mx.get_array_buffer_size(a) >= 16 * 4


def test_eval_pytrees():
    leaves = [fresh() for _ in range(6)]
    tree = {"a": [leaves[0], (leaves[1], leaves[2])],
            "b": {"c": leaves[3]}, "d": (leaves[4],)}
    mx.eval(tree, leaves[5])
    assert all(is_evaluated(x) for x in leaves)


def test_eval_ignores_non_array_leaves():
    a = fresh()
    assert mx.eval([a, 1, "x", None, 2.5]) is None
    assert is_evaluated(a)
    mx.eval()
    mx.eval(None)
    mx.eval({"k": object()})


def test_async_eval_pytrees():
    leaves = [fresh() for _ in range(4)]
    assert mx.async_eval({"x": leaves[0]}, [leaves[1], (leaves[2],)],
                         leaves[3]) is None
    mx.synchronize()
    assert all(is_evaluated(x) for x in leaves)
    b = mx.sum(fresh())
    mx.async_eval(b)
    assert b.item() == sum(2 * i + 1 for i in range(16))  # waits if needed
    mx.async_eval(1, "x")


def test_get_array_buffer_size():
    a = mx.arange(10.0) + 1
    with raises(ValueError, "get_array_buffer_size|evaluated", mlx_msg=True):
        mx.get_array_buffer_size(a)
    mx.eval(a)
    # the size of the underlying buffer: at least nbytes (an allocator may
    # round up or hand out a larger cached buffer)
    assert 40 <= mx.get_array_buffer_size(a) < 40 + 4096
    b = mx.arange(10.0) * 2
    mx.eval(b)
    assert mx.get_array_buffer_size(a, b) >= 80
    assert mx.get_array_buffer_size(a, b) == (mx.get_array_buffer_size(a)
                                              + mx.get_array_buffer_size(b))


IMPLICIT = {
    "repr": repr, "str": str, "print": print, "tolist": lambda a: a.tolist(),
    "numpy": np.array, "memoryview": memoryview,
    # scalar conversions of a reduction: its (live) input is evaluated as
    # part of the reduction's graph
    "item": lambda a: mx.sum(a).item(),
    "bool": lambda a: bool(mx.sum(a) > 0),
    "float": lambda a: float(mx.sum(a)), "int": lambda a: int(mx.sum(a)),
}


@pytest.mark.parametrize("how", list(IMPLICIT))
def test_implicit_eval(how):
    a = fresh()
    assert not is_evaluated(a)
    IMPLICIT[how](a)
    assert is_evaluated(a)


def test_evaluating_an_output_evaluates_its_inputs_not_its_siblings():
    a = fresh()
    b = a * 3
    c = a - 1  # shares the input, never asked for
    mx.eval(b)
    assert is_evaluated(a) and is_evaluated(b)
    assert not is_evaluated(c)
    assert_equal(c, np.arange(16.0) * 2, "float32")


def test_values_are_stable_across_evaluations():
    a = fresh()
    b = a + 1
    first = to_numpy(b)
    mx.eval(a)
    np.testing.assert_array_equal(to_numpy(b), first)
    np.testing.assert_array_equal(to_numpy(a + 1), first)


# --------------------------------------------------------------------------
# memory follows liveness
# --------------------------------------------------------------------------

@pytest.fixture
def quiet_memory():
    mx.synchronize()
    gc.collect()
    mx.clear_cache()
    mx.reset_peak_memory()
    yield mx.get_active_memory()
    gc.collect()
    mx.clear_cache()


def test_unused_branch_is_not_computed(quiet_memory):
    base = quiet_memory
    x = mx.ones((16,))
    big = mx.ones((2048, 2048)) * 2  # 16 MiB if it were ever computed
    small = x + 1
    mx.eval(small)
    assert not is_evaluated(big)
    assert mx.get_peak_memory() - base < 4 * MiB
    assert mx.get_active_memory() - base < 1 * MiB
    assert_equal(small, np.full(16, 2.0), "float32")


def test_chain_intermediates_are_freed(quiet_memory):
    n = 1024 * 1024  # 4 MiB per float32 array
    x = mx.full((n,), 1.0)
    mx.eval(x)
    base = mx.get_active_memory()
    mx.reset_peak_memory()
    y = x
    for _ in range(40):
        y = y * 1.0001 + 1
    mx.eval(y)
    # without freeing, 80 intermediates (320 MiB) would be alive
    assert mx.get_active_memory() - base <= 2 * 4 * MiB
    assert mx.get_peak_memory() - base <= 5 * 4 * MiB
    before = mx.get_active_memory()
    del y
    gc.collect()
    assert mx.get_active_memory() <= before - 4 * MiB + MiB


def test_memory_returns_after_del(quiet_memory):
    base = quiet_memory
    a = mx.zeros((1024, 1024)) + 1
    mx.eval(a)
    assert mx.get_active_memory() - base >= 4 * MiB
    del a
    gc.collect()
    assert mx.get_active_memory() - base < MiB
    assert mx.get_peak_memory() >= 4 * MiB


def test_long_chain_evaluates_and_is_freed():
    """A 10**6-op chain: eval walks the graph without recursion, and both an
    evaluated and an unevaluated chain are destroyed without overflowing the
    C stack.  Run in a subprocess so a crash fails only this test."""
    code = f"""
        import gc
        import {MODULE} as mx
        n = 10 ** 6
        y = mx.array(0.0)
        for _ in range(n):
            y = y + 1
        mx.eval(y)
        print(y.item())
        z = mx.array(0.0)
        for _ in range(n):
            z = z + 1
        del z          # never evaluated: the whole graph is torn down
        gc.collect()
        print("freed", mx.get_active_memory() < (1 << 20))
    """
    lines = run_python(code, timeout=300).stdout.split()
    assert float(lines[0]) == 1e6
    assert lines[1:] == ["freed", "True"]


# --------------------------------------------------------------------------
# threads
# --------------------------------------------------------------------------

def _work(seed):
    rng = np.random.default_rng(seed)
    x = mx.array(rng.standard_normal((64, 64)).astype(np.float32))
    y = x
    for _ in range(30):
        y = mx.tanh(y * x.T * 0.5 + y) + mx.mean(y, axis=0) * 0.01
        y = mx.softmax(y, axis=-1) * 64 - mx.max(y, axis=1, keepdims=True)
    mx.eval(y)
    return np.array(y)


def test_threads_give_sequential_results():
    expected = [_work(s) for s in range(4)]
    for _ in range(3):
        results = _in_threads(_work, 4)
        for r, e in zip(results, expected):
            np.testing.assert_array_equal(r, e)


def _in_threads(fn, n):
    """fn(i) for i in range(n), each in its own thread started together;
    returns the results in order and re-raises any thread's exception."""
    results, errors = [None] * n, []

    def run(i):
        try:
            results[i] = fn(i)
        except Exception as e:  # pragma: no cover - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def _share(shared):
    out = _in_threads(lambda i: np.array(mx.sum(shared * (i + 1))), 4)
    total = np.exp(np.arange(1000.0) / 1000.0).sum()
    for i, v in enumerate(out):
        np.testing.assert_allclose(v, total * (i + 1), rtol=1e-5)


@ember_only
def test_thread_pool_many_short_jobs_oversubscribed():
    # more pool threads than cores, two Python threads and async_eval: every
    # parallel job (reductions split across the threads, elementwise chains)
    # must run each of its tasks exactly once, whichever thread lags behind
    r = run_python("""
        import threading
        import numpy as np
        import ember.core as mx
        rng = np.random.default_rng(0)
        xs = [rng.standard_normal(n).astype(np.float32) for n in (70_000, 130_001, 262_144, 33)]
        def job(x):
            a = mx.array(x)
            return mx.sum(a * 3 + 1), mx.cumsum(a)[-1], mx.max(mx.abs(a) - a)
        expected = [[np.array(v) for v in job(x)] for x in xs]
        errors = []
        def loop(seed):
            try:
                for i in range(400):
                    k = (i + seed) % len(xs)
                    out = job(xs[k])
                    if i % 3 == 0:
                        mx.async_eval(*out)
                    got = [np.array(v) for v in out]
                    for g, e in zip(got, expected[k]):
                        assert np.array_equal(g, e), (k, g, e)
            except Exception as e:
                errors.append(repr(e))
        threads = [threading.Thread(target=loop, args=(s,)) for s in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[:3]
        print("ok")
    """, env={"EMBER_NUM_THREADS": "5"}, timeout=300)
    assert r.stdout.strip() == "ok"


def test_threads_share_an_evaluated_input():
    shared = mx.exp(mx.arange(1000.0) / 1000.0)
    mx.eval(shared)
    _share(shared)


@ember_only
def test_threads_share_an_unevaluated_graph():
    """MLX raises 'There is no Stream(cpu, 0) in current thread' when a
    graph built on the main thread is evaluated from another thread."""
    _share(mx.exp(mx.arange(1000.0) / 1000.0))


# --------------------------------------------------------------------------
# sizes that do not fit
# --------------------------------------------------------------------------

def test_shape_size_overflow_raises():
    for make in (lambda: mx.zeros((2 ** 40, 2 ** 40)),
                 lambda: mx.ones((2 ** 40, 2 ** 40)),
                 lambda: mx.full((2 ** 40, 2 ** 40), 1.0)):
        with pytest.raises((ValueError, OverflowError)):
            make()


@pytest.mark.parametrize("make", [
    lambda: mx.zeros((2 ** 40, 2 ** 40)),
    lambda: mx.zeros((2 ** 31, 2 ** 31, 4)),
    lambda: mx.reshape(mx.zeros((1,)), (2 ** 32, 2 ** 32)),
    lambda: mx.zeros((2 ** 62,), mx.float32),
    lambda: mx.zeros(2 ** 31),
    lambda: mx.ones((-2 ** 31 - 1,)),
    lambda: mx.broadcast_to(mx.zeros((1,)), (2 ** 31,)),
    lambda: mx.zeros((4,)).reshape((2 ** 31, 0)),
    lambda: mx.full((2 ** 31,), 1.0),
], ids=["2^80", "2^64", "reshape", "bytes", "int", "negative", "broadcast", "method", "full"])
def test_shape_dim_beyond_int32_is_an_overflow_error(make):
    """MLX's shape dims are 32-bit: a dim given outside that range raises
    OverflowError (Ember's dims are 64-bit inside, see below)."""
    with pytest.raises(OverflowError, match="range"):
        make()


@ember_only
def test_reshape_method_dims_beyond_int32_are_an_overflow_error():
    """MLX lets a C++ std::bad_cast out (RuntimeError) for a.reshape(2**31, 0);
    Ember raises the OverflowError of every other shape argument."""
    with pytest.raises(OverflowError, match="range"):
        mx.zeros((4,)).reshape(2 ** 31, 0)


@ember_only
@pytest.mark.parametrize("make", [
    lambda: mx.zeros((2 ** 21, 2 ** 21, 2 ** 21)),
    lambda: mx.broadcast_to(mx.zeros((1, 1, 1)), (2 ** 21,) * 3),
], ids=["2^63", "broadcast"])
def test_size_overflowing_int64_is_a_value_error(make):
    """MLX accepts (2**21,)*3 (size 2**63 wraps); Ember checks every size in
    64 bits and raises ValueError."""
    with pytest.raises(ValueError):
        mx.eval(make())


# --------------------------------------------------------------------------
# memory API
# --------------------------------------------------------------------------

def test_memory_queries_are_ints():
    for f in (mx.get_active_memory, mx.get_peak_memory, mx.get_cache_memory,
              mx.get_memory_limit):
        v = f()
        assert isinstance(v, int) and v >= 0
    assert mx.get_memory_limit() > 0


def test_set_memory_limit_returns_previous():
    old = mx.get_memory_limit()
    try:
        assert mx.set_memory_limit(2 ** 30) == old
        assert mx.get_memory_limit() == 2 ** 30
        assert mx.set_memory_limit(2 ** 31) == 2 ** 30
        assert mx.get_memory_limit() == 2 ** 31
    finally:
        mx.set_memory_limit(old)
    assert mx.get_memory_limit() == old


def test_set_cache_limit_returns_previous():
    old = mx.set_cache_limit(2 ** 20)
    try:
        assert isinstance(old, int)
        assert mx.set_cache_limit(0) == 2 ** 20
        a = mx.zeros((1024, 1024)) + 1
        mx.eval(a)
        del a
        gc.collect()
        assert mx.get_cache_memory() == 0  # limit 0: nothing is kept
    finally:
        mx.set_cache_limit(old)


def test_cache_and_clear_cache():
    old = mx.set_cache_limit(1 << 30)
    try:
        a = mx.zeros((1024, 1024)) + 1
        mx.eval(a)
        del a
        gc.collect()
        assert mx.get_cache_memory() >= 0
        assert mx.clear_cache() is None
        assert mx.get_cache_memory() == 0
    finally:
        mx.set_cache_limit(old)


def test_reset_peak_memory():
    a = mx.zeros((512, 512)) + 1
    mx.eval(a)
    assert mx.get_peak_memory() >= a.nbytes
    del a
    gc.collect()
    assert mx.reset_peak_memory() is None
    assert mx.get_peak_memory() <= mx.get_active_memory() + MiB


def test_set_wired_limit_returns_int():
    old = mx.set_wired_limit(0)
    assert isinstance(old, int)
    mx.set_wired_limit(old)


def _locked_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmLck:"):
                return int(line.split()[1])
    return None


@ember_only  # MLX wires memory only on macOS
def test_wired_limit_locks_new_buffers():
    import os
    import resource
    soft = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
    if _locked_kib() is None or (os.geteuid() != 0 and soft != resource.RLIM_INFINITY
                                 and soft < 64 * MiB):
        pytest.skip("cannot lock 64 MiB here")
    mx.clear_cache()
    before = _locked_kib()
    old = mx.set_wired_limit(64 * MiB)
    try:
        assert mx.set_wired_limit(64 * MiB) == 64 * MiB
        a = mx.zeros((4 * MiB,)) + 1.0  # 16 MiB, a fresh block
        mx.eval(a)
        assert _locked_kib() - before >= 16 * 1024
        assert mx.sum(a).item() == 4 * MiB  # locked memory is ordinary memory
        mx.set_wired_limit(0)  # lowering the limit unlocks
        assert _locked_kib() - before < 16 * 1024
    finally:
        mx.set_wired_limit(old)
        mx.clear_cache()


def test_set_wired_limit_errors():
    with raises(TypeError):
        mx.set_wired_limit(-1)
    if not IS_MLX:
        with raises(RuntimeError, "memory size"):
            mx.set_wired_limit(1 << 62)


# --------------------------------------------------------------------------
# devices and streams
# --------------------------------------------------------------------------

def test_device_types():
    assert list(mx.DeviceType.__members__) == ["cpu", "gpu"]
    assert mx.cpu == mx.DeviceType.cpu and mx.gpu == mx.DeviceType.gpu
    assert mx.cpu != mx.gpu


def test_device_objects():
    d = mx.Device(mx.cpu)
    assert d.type == mx.cpu
    assert repr(d) == "Device(cpu, 0)"
    assert d == mx.Device(mx.cpu, 0)
    assert d == mx.cpu
    assert mx.Device(mx.cpu) != mx.Device(mx.gpu)
    assert isinstance(hash(d), int)
    assert mx.default_device() == mx.Device(mx.cpu)
    assert isinstance(mx.default_device(), mx.Device)


def test_availability():
    assert mx.metal.is_available() is False
    assert mx.cuda.is_available() is False
    assert mx.is_available(mx.cpu) is True
    assert mx.is_available(mx.Device(mx.cpu)) is True
    assert mx.is_available(mx.gpu) is False
    assert mx.device_count(mx.cpu) == 1
    assert mx.device_count(mx.gpu) == 0


def test_device_info():
    info = mx.device_info()
    assert isinstance(info, dict) and info
    assert all(isinstance(k, str) and isinstance(v, (str, int))
               for k, v in info.items())
    assert mx.device_info(mx.cpu) == info
    try:  # MLX answers {} for an absent GPU; raising ValueError is fine too
        assert isinstance(mx.device_info(mx.gpu), dict)
    except ValueError:
        pass


def test_set_default_device():
    mx.set_default_device(mx.cpu)
    assert mx.default_device() == mx.cpu
    mx.set_default_device(mx.Device(mx.cpu))
    with raises(ValueError, "gpu|set_default_device", mlx_msg=True):
        mx.set_default_device(mx.gpu)
    assert mx.default_device() == mx.cpu


def test_streams():
    s = mx.default_stream(mx.cpu)
    assert isinstance(s, mx.Stream)
    assert s.device == mx.cpu
    assert repr(s).startswith("Stream(Device(cpu, 0), ")
    assert mx.default_stream(mx.default_device()) == s
    n = mx.new_stream(mx.cpu)
    assert isinstance(n, mx.Stream) and n != s and n == n
    assert n.device == mx.Device(mx.cpu)
    with raises(ValueError, "gpu|stream", mlx_msg=True):
        mx.new_stream(mx.gpu)
    with raises(ValueError, "gpu|stream", mlx_msg=True):
        mx.default_stream(mx.gpu)


def test_ops_on_streams_and_devices():
    s = mx.new_stream(mx.cpu)
    a, b = mx.array([1, 2]), mx.array([3, 4])
    for where in (s, mx.cpu, mx.Device(mx.cpu)):
        assert_equal(mx.add(a, b, stream=where), [4, 6], "int32")
        assert_equal(mx.zeros((2,), stream=where), [0.0, 0.0], "float32")
        assert_equal(mx.sum(a, stream=where), 3, "int32")
    # work on two streams feeding each other
    s2 = mx.new_stream(mx.cpu)
    x = mx.exp(mx.arange(4.0), stream=s)
    y = mx.sum(x, stream=s2)
    assert_close(y, np.exp(np.arange(4.0)).sum(), "float32", rtol=2e-6)
    mx.synchronize(s)
    mx.synchronize(s2)
    mx.synchronize(mx.cpu)
    mx.synchronize()


def test_stream_context_manager():
    before = mx.default_stream(mx.cpu)
    s = mx.new_stream(mx.cpu)
    with mx.stream(s):
        assert mx.default_stream(mx.cpu) == s
        r = mx.arange(3) + 1
    assert mx.default_stream(mx.cpu) == before
    assert r.tolist() == [1, 2, 3]
    with mx.stream(mx.cpu):
        assert mx.default_device() == mx.cpu
        assert (mx.arange(2) * 2).tolist() == [0, 2]
    assert isinstance(mx.stream(s), mx.StreamContext)


def test_set_default_stream():
    old = mx.default_stream(mx.cpu)
    s = mx.new_stream(mx.cpu)
    mx.set_default_stream(s)
    try:
        assert mx.default_stream(mx.cpu) == s
        assert (mx.arange(3) * 3).tolist() == [0, 3, 6]
    finally:
        mx.set_default_stream(old)
    assert mx.default_stream(mx.cpu) == old
    assert (mx.arange(3) + 1).tolist() == [1, 2, 3]


def test_clear_streams():
    """In a subprocess (clear_streams drops every stream, which MLX means
    for shutdown / fork): the call succeeds and the process exits
    cleanly."""
    code = f"""
        import {MODULE} as mx
        a = mx.add(mx.arange(3), 1, stream=mx.new_stream(mx.cpu))
        mx.eval(a)
        print((mx.arange(3) + 1).tolist(), a.tolist())
        assert mx.clear_streams() is None
    """
    assert run_python(code, timeout=120).stdout.strip() == "[1, 2, 3] [1, 2, 3]"


def test_thread_local_and_unsafe_streams():
    t = mx.new_thread_local_stream(mx.cpu)
    assert isinstance(t, mx.ThreadLocalStream)
    assert t.device == mx.cpu
    assert mx.add(1, 2, stream=t).item() == 3
    with mx.stream(t):
        assert (mx.arange(3) + 1).tolist() == [1, 2, 3]
    mx.synchronize(t)
    u = mx.new_thread_unsafe_stream(mx.cpu)
    assert isinstance(u, mx.Stream)
    assert mx.multiply(2, 3, stream=u).item() == 6


@ember_only  # MLX's stream context yields None, so the stream is not observable
def test_thread_local_stream_is_one_stream_per_thread():
    t = mx.new_thread_local_stream(mx.cpu)
    assert repr(t).startswith("ThreadLocalStream(Device(cpu, 0), ")
    assert t == t and t != mx.new_thread_local_stream(mx.cpu)
    seen = {}

    def work(name):
        with mx.stream(t) as s1:
            pass
        with mx.stream(t) as s2:
            seen[name] = (s1, s2, (mx.arange(4) * 2).tolist())

    work("main")
    th = threading.Thread(target=work, args=("other",))
    th.start()
    th.join()
    m1, m2, mv = seen["main"]
    o1, o2, ov = seen["other"]
    assert m1 == m2 and o1 == o2      # the same stream within a thread
    assert m1 != o1                   # a different one in each thread
    assert mv == ov == [0, 2, 4, 6]


def test_backend_is_what_was_asked_for():
    assert mx.__name__ == MODULE
    assert BACKEND in ("ember", "mlx")
    assert dtype_name(mx.float32) == "float32"


@ember_only
def test_failed_evaluation_raises_again_on_every_access():
    """A kernel that raises leaves its output not computed: NumPy conversion
    (which tries the buffer protocol, then __array__) and later accesses all
    raise, never expose the half-written buffer. (MLX writes out of bounds
    here and corrupts its heap.)"""
    r = mx.zeros(3).at[mx.array([5])].add(1.0)
    for access in (lambda: np.array(r), lambda: np.asarray(r), lambda: r.tolist(), lambda: mx.eval(r)):
        with pytest.raises(IndexError, match="out of bounds"):
            access()
    with pytest.raises(BufferError, match="out of bounds"):  # the buffer protocol's own error type
        memoryview(r)


def _data_address(a):
    return np.asarray(a).__array_interface__["data"][0]


@ember_only  # Ember's allocator: MLX picks its cached blocks its own way
def test_cache_reuses_the_block_freed_last():
    # Of the cached blocks of one size, an allocation takes the one freed
    # last: its lines are the likeliest to be in the CPU's caches (taking the
    # oldest rotated a loop's buffers through every cached block of the size).
    old = mx.set_cache_limit(1 << 30)
    try:
        mx.clear_cache()
        n = 1 << 20
        a, b, c = (mx.full((n,), float(i)) for i in range(3))
        mx.eval(a, b, c)
        addr = [_data_address(x) for x in (a, b, c)]
        assert len(set(addr)) == 3
        del a
        del c
        del b  # freed last
        d = mx.full((n,), 7.0)
        mx.eval(d)
        assert _data_address(d) == addr[1]
        del d
        e = mx.full((n,), 8.0)  # d's block again, not the older c's
        mx.eval(e)
        assert _data_address(e) == addr[1]
        assert float(e[0].item()) == 8.0
    finally:
        mx.clear_cache()
        mx.set_cache_limit(old)
