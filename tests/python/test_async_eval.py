"""async_eval on its worker thread: the caller builds the next graph while
the worker computes, and every way of reading the arrays (eval, item, NumPy,
printing, transforms, compile, synchronize) sees the finished values.

The cases here are about correctness under that concurrency: graphs built on
arrays still in flight, in-place updates of such arrays, handles dropped
meanwhile, errors surfacing later, buffers borrowed from Python, several
Python threads, deep chains. None of them measures time.
"""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember.core as mx
from conftest import buffer_address, raises

HERE = os.path.dirname(os.path.abspath(__file__))


def jobs():
    return mx._eval_stats()["async_jobs"]


def chain(x, w, n):
    """n steps of y <- tanh(y @ w), lazily."""
    y = x
    for _ in range(n):
        y = mx.tanh(y @ w)
    return y


def np_chain(x, w, n):
    y = x
    for _ in range(n):
        y = np.tanh(y @ w)
    return y


def test_the_worker_runs_the_job_and_eval_waits_for_it():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    w = (rng.standard_normal((64, 64)) / 8).astype(np.float32)
    before = jobs()
    y = chain(mx.array(x), mx.array(w), 40)
    mx.async_eval(y)
    z = mx.ones((3,)) * 2  # a graph built while it computes
    np.testing.assert_allclose(np.array(y), np_chain(x, w, 40), rtol=1e-4, atol=1e-5)
    assert jobs() == before + 1
    assert z.tolist() == [2.0, 2.0, 2.0]


def test_already_computed_arrays_make_no_job():
    a = mx.arange(4.0) + 1
    mx.eval(a)
    before = jobs()
    mx.async_eval(a, [a], {"k": a})
    mx.synchronize()
    assert jobs() == before
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_a_decode_loop_builds_on_arrays_in_flight():
    """The generation loop: each step's graph takes the previous step's
    (uncomputed) token and an in-place updated cache; its handles are
    dropped while the worker runs."""
    rng = np.random.default_rng(1)
    V, D, T = 50, 16, 30
    emb = rng.standard_normal((V, D)).astype(np.float32)
    wo = rng.standard_normal((D, V)).astype(np.float32)
    E, W = mx.array(emb), mx.array(wo)
    cache = mx.zeros((T, D))
    ref_cache = np.zeros((T, D), np.float32)

    def step(tok, t, cache):
        h = E[tok]                       # (D,)
        cache[t] = h                     # in-place update of an array in flight
        ctx = mx.mean(cache[: t + 1], axis=0)
        return mx.argmax(ctx @ W), cache

    y, cache = step(mx.array(3), 0, cache)
    mx.async_eval(y)
    got = []
    for t in range(1, T):
        nxt, cache = step(y, t, cache)
        mx.async_eval(nxt)
        got.append(y.item())
        y = nxt
    got.append(y.item())

    tok, want = 3, []
    for t in range(T):
        ref_cache[t] = emb[tok]
        tok = int(np.argmax(ref_cache[: t + 1].mean(axis=0) @ wo))
        want.append(tok)
    assert got == want
    np.testing.assert_allclose(np.array(cache), ref_cache, rtol=1e-6)


def test_a_kv_cache_slice_assigned_in_flight_is_never_copied():
    """mlx-lm's KVCache update, ``keys[..., prev:offset, :] = k`` into a
    preallocated buffer, in a decode loop whose next step is built while the
    current one runs: each step's scatter takes over the buffer of the
    cache it updates (donation: the graph holds the only reference), so the
    buffer keeps its address and no step copies it: the loop's peak memory
    stays below one cache buffer (512 KiB) above where it started, where a
    single copy of either buffer would reach it (a step's own arrays are a
    few KiB). Holding a view of the cache makes the copy necessary, and
    visible to the same measure."""
    import gc

    H, S, D = 8, 256, 64
    rng = np.random.default_rng(2)
    q = mx.array(rng.standard_normal((1, H, 1, D)).astype(np.float32))
    kv_in = mx.array(rng.standard_normal((1, H, 1, D)).astype(np.float32))
    keys, values = mx.zeros((1, H, S, D)), mx.zeros((1, H, S, D))
    mx.eval(keys, values, q, kv_in)

    def step(t, scale):
        keys[..., t:t + 1, :] = kv_in * scale
        values[..., t:t + 1, :] = kv_in - scale
        k, v = keys[..., :t + 1, :], values[..., :t + 1, :]
        s = mx.softmax((q @ mx.swapaxes(k, -1, -2)) * D ** -0.5, axis=-1)
        return (s @ v).sum()

    addresses = (buffer_address(keys), buffer_address(values))
    gc.collect()
    mx.synchronize()
    base = mx.get_active_memory()
    mx.reset_peak_memory()
    y = step(0, mx.array(1.0))
    mx.async_eval(y)
    outs = []
    for t in range(1, 200):
        nxt = step(t, y * 0 + (t + 1))  # depends on the step in flight
        mx.async_eval(nxt)
        outs.append(y.item())
        y = nxt
    outs.append(y.item())
    assert mx.get_peak_memory() - base < keys.nbytes, mx.get_peak_memory() - base
    assert (buffer_address(keys), buffer_address(values)) == addresses
    ks = np.array(kv_in)[0, :, 0]
    np.testing.assert_allclose(np.array(keys)[0, :, :200], ks[:, None] * np.arange(1, 201)[None, :, None],
                               rtol=1e-6)
    np.testing.assert_allclose(np.array(values)[0, :, :200], ks[:, None] - np.arange(1, 201)[None, :, None],
                               rtol=1e-6, atol=1e-5)
    # the control: a view held across the update forbids donation, so the
    # scatter copies the buffer and the peak shows it
    held = keys[..., :1, :]
    mx.eval(held)
    mx.synchronize()
    base = mx.get_active_memory()
    mx.reset_peak_memory()
    mx.eval(step(200, mx.array(201.0)))
    assert mx.get_peak_memory() - base >= keys.nbytes
    assert buffer_address(keys) != addresses[0]


def test_many_jobs_in_the_queue_then_synchronize():
    arrays = [mx.arange(1000.0) * i + 1 for i in range(50)]
    for a in arrays:
        mx.async_eval(a)
    del a
    mx.synchronize()
    for i, a in enumerate(arrays):
        assert mx.get_array_buffer_size(a) >= 4000
        assert a[999].item() == 999.0 * i + 1


def test_dropped_handles_and_a_dropped_job():
    # the only handle of the job's arrays goes away at once: the worker keeps
    # what it needs, and nothing leaks into later results
    for i in range(20):
        mx.async_eval(mx.sum(mx.arange(10000.0) + i))
    s = mx.sum(mx.arange(10.0))
    mx.async_eval(s)
    assert s.item() == 45.0


def test_an_error_surfaces_at_the_next_eval():
    idx = mx.array([0, 7])
    bad = mx.take(mx.arange(3.0), idx) + 1  # index 7 is out of range: raises when computed
    mx.async_eval(bad)
    mx.synchronize()
    with pytest.raises(IndexError):
        mx.eval(bad)
    with pytest.raises(IndexError):  # still uncomputed: raises again
        bad.tolist()
    good = mx.arange(3.0) + 1
    mx.async_eval(good)
    assert good.tolist() == [1.0, 2.0, 3.0]


def test_transforms_and_compile_after_async_eval():
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((32, 32)).astype(np.float32)
    x = mx.array(xv) * 1  # lazy
    mx.async_eval(x)

    def f(x):
        return mx.sum(mx.sin(x) * x)

    g = mx.grad(f)(x)  # traces on an array the worker may still compute
    np.testing.assert_allclose(np.array(g), np.cos(xv) * xv + np.sin(xv), rtol=1e-5, atol=1e-6)
    y = mx.exp(x)
    mx.async_eval(y)
    cf = mx.compile(lambda a, b: a * b + 1)
    np.testing.assert_allclose(np.array(cf(y, x)), np.exp(xv) * xv + 1, rtol=1e-5, atol=1e-5)
    z = mx.cos(x) + 1
    mx.async_eval(z)
    v = mx.vmap(lambda r: mx.sum(r * z[0]))(z)
    np.testing.assert_allclose(np.array(v), ((np.cos(xv) + 1) * (np.cos(xv[0]) + 1)).sum(axis=1), rtol=1e-5)
    assert "digraph" in _dot(z * 2)


def _dot(a):
    import io

    buf = io.StringIO()
    mx.export_to_dot(buf, a)
    return buf.getvalue()


def test_conversions_wait():
    a = mx.arange(6.0).reshape(2, 3) * 3
    mx.async_eval(a)
    assert np.array(a).tolist() == [[0, 3, 6], [9, 12, 15]]
    b = mx.arange(3) + 1
    mx.async_eval(b)
    assert "array([1, 2, 3]" in repr(b)
    c = mx.array(2.0) > 1
    mx.async_eval(c)
    assert bool(c)
    d = mx.arange(4.0) * 2
    mx.async_eval(d)
    assert memoryview(d).tolist() == [0.0, 2.0, 4.0, 6.0]


def test_borrowed_buffers_freed_by_the_worker():
    # the job holds the last handle of an array on NumPy memory: the worker
    # frees it, taking the GIL, while this thread waits in eval
    for _ in range(20):
        src = np.arange(4096, dtype=np.float32)
        b = mx.asarray(memoryview(src), copy=False)
        del src
        s = mx.sum(b * 2)
        del b
        mx.async_eval(s)
        assert s.item() == 4095 * 4096


def test_several_python_threads():
    rng = np.random.default_rng(3)
    ws = [(rng.standard_normal((48, 48)) / 7).astype(np.float32) for _ in range(4)]
    errors, results = [], {}

    def work(i):
        try:
            x = np.eye(48, dtype=np.float32)[: 8] + i
            y = mx.array(x)
            W = mx.array(ws[i])
            for k in range(30):
                y = mx.tanh(y @ W)
                if k % 3 == 0:
                    mx.async_eval(y)
                if k % 7 == 0:
                    mx.eval(y)
            results[i] = (np.array(y), np_chain(x, ws[i], 30))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert sorted(results) == [0, 1, 2, 3]
    for got, want in results.values():
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_deep_chain_in_flight():
    x = mx.array(1.0)
    y = x
    for _ in range(200000):
        y = y + 1
    mx.async_eval(y)
    z = y * 2  # built on the chain's end while it computes
    assert z.item() == 400002.0


def test_switched_off_by_the_environment():
    code = (
        "import ember.core as mx\n"
        "a = mx.arange(5.0) * 2\n"
        "mx.async_eval(a)\n"
        "v = a.tolist()\n"
        "print(mx._eval_stats()['async_jobs'], v)\n"
    )
    env = dict(os.environ, EMBER_ASYNC_EVAL="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "0 [0.0, 2.0, 4.0, 6.0, 8.0]"
    env["EMBER_ASYNC_EVAL"] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "1 [0.0, 2.0, 4.0, 6.0, 8.0]"


def test_inside_a_transform_it_evaluates_at_once():
    before = jobs()

    def f(x):
        c = mx.arange(3.0) + 1  # not traced: evaluated at once, on this thread
        mx.async_eval(c)
        return mx.sum(x * c)

    assert mx.grad(f)(mx.array([1.0, 1.0, 1.0])).tolist() == [1.0, 2.0, 3.0]
    assert jobs() == before
    with raises(ValueError, "async_eval"):
        mx.grad(lambda x: (mx.async_eval(x), x.sum())[1])(mx.array([1.0]))


def test_exit_with_a_job_in_flight():
    # the interpreter shuts down while the worker computes: it waits for it
    code = (
        "import ember.core as mx\n"
        "x = mx.random.normal((256, 256)) / 16\n"
        "y = x\n"
        "for _ in range(100):\n"
        "    y = mx.tanh(y @ x)\n"
        "mx.async_eval(y)\n"
        "print('submitted')\n"
    )
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout == "submitted\n" and out.stderr == ""
