"""Compile's fusion pass (csrc/ember/compile/): elementwise chains of a lazy
graph replaced by Compiled nodes running generated C++ kernels.

``mx._fuse(outputs, inputs)`` is the pass on its own (compile() runs it on
its traced graph). The fused results are compared bit for bit with the
unfused graph (the same arrays, evaluated by the ordinary kernels): the
generated code computes each op as its eager kernel does. Also: layouts
(strided, broadcast, 0-d, empty, multithreaded sizes), the caches (memory,
disk, several processes at once), the fallback without a compiler,
donation, ISA levels, and the transform rules (vjp/jvp against finite
differences in float64, vmap against a loop).
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.core as mx
from op_table import OPS, apply_in_domain, chain_rows



@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("kernels"))
    before = os.environ.get("EMBER_CACHE_DIR")
    os.environ["EMBER_CACHE_DIR"] = d
    yield d
    if before is None:
        os.environ.pop("EMBER_CACHE_DIR", None)
    else:
        os.environ["EMBER_CACHE_DIR"] = before


def bits(a):
    a = np.asarray(a)
    if a.dtype == np.bool_:
        return a
    return a.view(np.uint64 if a.itemsize == 8 else np.uint32)


def assert_same(fused, eager):
    mx.eval(fused, eager)
    f, e = np.array(fused), np.array(eager)
    assert f.dtype == e.dtype and f.shape == e.shape
    np.testing.assert_array_equal(bits(f), bits(e))


def chain(x):
    return mx.tanh(x * 2 + 1) * mx.sigmoid(x) - x / 3


def fused_name(a):
    n = mx._fuse_node_name(a)
    return n or ""


def test_chain_is_one_kernel_and_exact(rng):
    x = mx.array(rng.standard_normal((64, 33)).astype(np.float32))
    y = chain(x)
    (f,) = mx._fuse([y], [x])
    assert fused_name(f) == "Compiled[Multiply,Add,Tanh,Sigmoid,Multiply,Divide,Subtract]"
    assert fused_name(y) == "Subtract"  # the given graph keeps its nodes
    assert_same(f, y)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64])
def test_layouts(dtype, rng):
    base = mx.array(rng.standard_normal((70, 90)), dtype=dtype)
    cases = {
        "transposed": base.T,
        "sliced": base[::3, 5:80:2],
        "negative": base[::-1, ::-2],
        "zero-d": mx.array(0.7, dtype=dtype),
        "empty": base[:0],
        "big": mx.array(rng.standard_normal((300, 1000)), dtype=dtype),  # several threads
    }
    # chain: one loop over each block; with sin: one loop per step (the
    # generator's two forms)
    for fn in (chain, lambda v: mx.sin(chain(v)) * v):
        for name, x in cases.items():
            y = fn(x)
            (f,) = mx._fuse([y], [x])
            assert fused_name(f).startswith("Compiled["), name
            assert_same(f, y)


def test_broadcast_inputs(rng):
    x = mx.array(rng.standard_normal((50, 40)).astype(np.float32))
    row = mx.array(rng.standard_normal((40,)).astype(np.float32))
    col = mx.array(rng.standard_normal((50, 1)).astype(np.float32))
    y = mx.exp(mx.minimum(x * row, 3.0)) + mx.where(col > 0, x, row) * col
    (f,) = mx._fuse([y], [x, row, col])
    assert fused_name(f).startswith("Compiled[")
    assert_same(f, y)


def test_intermediate_outputs_and_boundaries(rng):
    x = mx.array(rng.standard_normal((40, 30)).astype(np.float32))
    a = mx.sin(x) * 3
    b = mx.exp(a) + 1          # a is consumed here and is an output too
    s = mx.sum(b, axis=1, keepdims=True)  # a reduction: not fused
    c = mx.sqrt(mx.abs(s - b)) * 2
    outs = mx._fuse([a, b, c], [x])
    assert all(fused_name(o).startswith("Compiled[") for o in outs)
    for o, e in zip(outs, [a, b, c]):
        assert_same(o, e)


def test_donated_input(rng):
    x = mx.array(rng.standard_normal((1000,)).astype(np.float32))
    ref = np.array(chain(mx.cumsum(x)))
    y = chain(mx.cumsum(x))  # cumsum's result is held by the kernel alone
    (f,) = mx._fuse([y], [x])
    del y
    mx.eval(f)
    np.testing.assert_array_equal(bits(f), bits(ref))


def test_bool_and_casts(rng):
    x = mx.array(rng.standard_normal((30, 20)).astype(np.float32))
    m = (x > 0.1) & mx.logical_not(mx.isnan(x)) | (x < -1)
    y = mx.where(m, x.astype(mx.float64) * 2, mx.array(-1.0, dtype=mx.float64)) + m.astype(mx.float64)
    outs = mx._fuse([y, m], [x])
    assert fused_name(outs[0]).startswith("Compiled[")
    assert_same(outs[0], y)
    assert_same(outs[1], m)


def test_unfusable_dtypes_stay(rng):
    x = mx.array(rng.standard_normal((10,)).astype(np.complex64))
    y = mx.exp(x * 2)
    (f,) = mx._fuse([y], [x])
    assert fused_name(f) == "Exp"
    i = mx.arange(10)
    z = (i * 3 + 1) // 2
    (g,) = mx._fuse([z], [i])
    assert not fused_name(g).startswith("Compiled")
    assert_same(g, z)


def test_long_chain_splits_into_kernels(rng):
    x = mx.array(rng.standard_normal((100,)).astype(np.float32))
    y = x
    for k in range(150):  # 300 ops: groups stop at 256 nodes
        y = y * 0.999 + 0.001
    s0 = mx._fuse_stats()
    (f,) = mx._fuse([y], [x])
    s1 = mx._fuse_stats()
    assert fused_name(f).startswith("Compiled[")
    assert (s1["compiles"] + s1["disk_hits"] + s1["memory_hits"]) - (
        s0["compiles"] + s0["disk_hits"] + s0["memory_hits"]) == 2
    assert_same(f, y)


def test_caches_counted(rng):
    x = mx.array(rng.standard_normal((16,)).astype(np.float32))
    def f(x):
        return mx.erf(mx.cosh(x) * 0.25) - mx.arctan(x)
    s0 = mx._fuse_stats()
    mx._fuse([f(x)], [x])
    s1 = mx._fuse_stats()
    assert s1["compiles"] == s0["compiles"] + 1
    mx._fuse([f(x)], [x])
    s2 = mx._fuse_stats()
    assert s2["memory_hits"] == s1["memory_hits"] + 1 and s2["compiles"] == s1["compiles"]
    mx._fuse_clear_memory_cache()
    (y,) = mx._fuse([f(x)], [x])
    s3 = mx._fuse_stats()
    assert s3["disk_hits"] == s2["disk_hits"] + 1 and s3["compiles"] == s2["compiles"]
    assert_same(y, f(x))


# ---- every elementwise op of the op table, bit for bit ------------------------

def _row_inputs(row, dtype, rng, n=64):
    lo, hi = row.domain if row.domain else (-5, 5)
    vals = rng.uniform(lo, hi, n)
    if row.family == "unary":
        vals[:9] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e7, -3e8]
    if 0 in row.nonzero_args:
        vals[vals == 0] = 1.0
    return mx.array(vals, dtype=dtype)


def _rhs_inputs(row, dtype, rng, n=64):
    lo, hi = row.rhs_domain if row.rhs_domain else (-5, 5)
    vals = rng.uniform(lo, hi, n)
    vals[:3] = [np.nan, 0.0 if 1 not in row.nonzero_args else 1.0, np.inf]
    return mx.array(vals, dtype=dtype)


ELEMENTWISE = [r for r in OPS if r.family in ("unary", "binary") and not r.multi_output]


def _fuse_every_op(rows, dtype, rng):
    """Each row's op applied once into one graph, joined by where(False, previous, this) (exactly `this`) so that
    one kernel per output dtype computes them all, and the graph fused:
    (names, eager results, fused results, fused joins)."""
    dt = getattr(mx, dtype)
    chains = {}
    results, names, leaves = [], [], []
    for row in rows:
        if dtype not in row.dtypes:
            continue
        a = _row_inputs(row, dt, rng)
        args = (a,) if row.family == "unary" else (a, _rhs_inputs(row, dt, rng))
        try:
            r = row.op(*args)
        except Exception:
            continue
        leaves += list(args)
        results.append(r)
        names.append(row.name)
        key = r.dtype
        off = mx.zeros(r.shape, dtype=mx.bool_)
        chains[key] = r if key not in chains else mx.where(off, chains[key], r)
    tails = list(chains.values())
    fused = mx._fuse(results + tails, leaves)
    return names, results, fused[:len(results)], fused[len(results):]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_elementwise_op_exact(dtype, rng):
    """Every op of the table fused in one graph: one kernel per output
    dtype, each op's bits as eager's."""
    names, results, fused, tails = _fuse_every_op(ELEMENTWISE, dtype, rng)
    assert len(names) >= 40
    kernels = {fused_name(f) for f in tails}
    assert all(k.startswith("Compiled[") for k in kernels)
    covered = sum(fused_name(f).startswith("Compiled[") for f in fused)
    assert covered >= len(results) - 6  # all but ops outside the generator (complex, ints)
    mx.eval(fused, results)
    for name, f, e in zip(names, fused, results):
        np.testing.assert_array_equal(bits(f), bits(e), err_msg=name)


# every unary and binary elementwise op of the table, for the random chains
CHAIN_ROWS = chain_rows()


def _random_step(rows, vals, rng, last=False):
    """A random row of `rows` applied to random values of `vals` (`last`:
    one of them the last value, so that every step is read by the next)."""
    row = rows[rng.integers(len(rows))]
    args = [vals[rng.integers(len(vals))] for _ in range(1 if row.family == "unary" else 2)]
    if last:
        args[rng.integers(len(args))] = vals[-1]
    return row, apply_in_domain(row, args)


def test_random_chains_exact(rng):
    """Random chains over the whole table, fused and eager bit for bit:
    every op at least once per dtype and every step's value an output (an
    op whose result no later step reads is checked too); a step whose op
    the generator fuses alone (the table fused as in
    test_every_elementwise_op_exact; divmod not among them) is computed by
    a kernel. Then chains of those ops only: one kernel computes them all."""
    for dtype in ("float32", "float64"):
        names, _, fused, _ = _fuse_every_op(ELEMENTWISE, dtype, rng)  # test_every_elementwise_op_exact's kernels
        alone = {n for n, f in zip(names, fused) if fused_name(f).startswith("Compiled[")}
        leaves = [mx.array(rng.standard_normal((33, 17)) * 3, dtype=getattr(mx, dtype)) for _ in range(3)]
        # the whole table: 4 chains of 20 steps, the first 71 ops a shuffle of the table;
        # each step reads the one before (no dead end: a kernel per chain and unfused op,
        # not per step)
        deck = [CHAIN_ROWS[k] for k in rng.permutation(len(CHAIN_ROWS))]
        assert len(deck) <= 80
        steps, outs = [], []
        for c in range(4):
            vals = list(leaves)
            for i in range(20):
                row, v = _random_step([deck[c * 20 + i]] if c * 20 + i < len(deck) else CHAIN_ROWS, vals, rng,
                                      last=i > 0)
                vals.append(v)
                steps.append(row.name)
                outs.append(v)
        assert set(steps) == {r.name for r in CHAIN_ROWS}
        fused = mx._fuse(outs, leaves)
        kernels = [fused_name(f) for f in fused]  # before anything is evaluated
        for name, k in zip(steps, kernels):
            assert name not in alone or k.startswith("Compiled["), (dtype, name, k)
        for f, e in zip(fused, outs):
            assert_same(f, e)
        # the ops fused alone: one kernel (under its 256 steps) computes every chain
        rows = [r for r in CHAIN_ROWS if r.name in alone]
        assert len(rows) >= 50
        outs = []
        for _ in range(4):
            vals = list(leaves)
            for _ in range(9):  # 4 chains of 9 steps: ~100-170 nodes
                vals.append(_random_step(rows, vals, rng)[1])
            outs.append(vals[-1] + vals[-2] * vals[-5])
        outs.append(outs[0] - outs[1] * outs[2] + outs[3])
        fused = mx._fuse(outs, leaves)
        assert len({fused_name(f) for f in fused}) == 1 and fused_name(fused[0]).startswith("Compiled[")
        for f, e in zip(fused, outs):
            assert_same(f, e)


def test_isa_levels_match_eager(level, rng):
    x = mx.array(rng.standard_normal((500,)).astype(np.float32) * 4)
    for y in (mx.tanh(mx.sin(x) * mx.exp(x * 0.1)) + mx.erf(x), chain(x) * mx.log1p(mx.abs(x))):
        (f,) = mx._fuse([y], [x])
        assert fused_name(f).startswith("Compiled[")
        assert_same(f, y)


# ---- transforms ----------------------------------------------------------------

def _f(x, y):
    out = mx.tanh(x * y + 1) * mx.sigmoid(x) - mx.sin(y) / 3
    (g,) = mx._fuse([out], [x, y])
    assert fused_name(g).startswith("Compiled[")
    return g


def test_vjp_jvp_against_finite_differences(rng):
    x = mx.array(rng.standard_normal((5, 4)), dtype=mx.float64)
    y = mx.array(rng.standard_normal((5, 4)), dtype=mx.float64)
    ct = mx.array(rng.standard_normal((5, 4)), dtype=mx.float64)
    _, (gx, gy) = mx.vjp(_f, [x, y], [ct])
    tx, ty = mx.array(rng.standard_normal((5, 4)), dtype=mx.float64), mx.array(rng.standard_normal((5, 4)), dtype=mx.float64)
    _, (jt,) = mx.jvp(_f, [x, y], [tx, ty])
    eps = 1e-6
    fd = (np.array(_f(x + eps * tx, y + eps * ty)) - np.array(_f(x - eps * tx, y - eps * ty))) / (2 * eps)
    np.testing.assert_allclose(np.array(jt), fd, rtol=1e-6, atol=1e-8)
    # vjp: <ct, J t> == <J^T ct, t>
    np.testing.assert_allclose(np.sum(np.array(ct) * fd),
                               np.sum(np.array(gx) * np.array(tx) + np.array(gy) * np.array(ty)), rtol=1e-6)
    g = mx.grad(lambda a, b: mx.sum(_f(a, b)))(x, y)
    plain = mx.grad(lambda a, b: mx.sum(mx.tanh(a * b + 1) * mx.sigmoid(a) - mx.sin(b) / 3))(x, y)
    np.testing.assert_allclose(np.array(g), np.array(plain), rtol=1e-12)


@pytest.mark.parametrize("axes", [(0, 0), (1, 0), (0, None), (None, 1)])
def test_vmap_against_loop(axes, rng):
    x = mx.array(rng.standard_normal((4, 6)))
    y = mx.array(rng.standard_normal((6, 4)) if axes[1] == 1 else rng.standard_normal((4, 6)))
    if axes == (1, 0):
        x = mx.array(rng.standard_normal((6, 4)))
        y = mx.array(rng.standard_normal((4, 6)))
    if axes == (0, None):
        y = mx.array(rng.standard_normal((6,)))
    if axes == (None, 1):
        x = mx.array(rng.standard_normal((6,)))
    out = mx.vmap(_f, in_axes=axes)(x, y)
    B = 4
    def take(a, ax, i):
        return a if ax is None else (a[i] if ax == 0 else a[:, i])
    loop = np.stack([np.array(_f(take(x, axes[0], i), take(y, axes[1], i))) for i in range(B)])
    np.testing.assert_allclose(np.array(out), loop, rtol=1e-14, atol=0)


def test_vmap_keeps_the_kernel(rng):
    x = mx.array(rng.standard_normal((3, 5)), dtype=mx.float64)
    y = mx.array(rng.standard_normal((3, 5)), dtype=mx.float64)
    traced = {}

    def g(a, b):
        r = _f(a, b)
        traced["name"] = fused_name(r)
        return r
    out = mx.vmap(g)(x, y)
    assert traced["name"].startswith("Compiled[")
    assert fused_name(out) == traced["name"]  # the batched node is the same kernel


# ---- processes: no compiler, a failing compiler, concurrent compiles ------------

SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    import ember.core as mx
    x = mx.array(np.linspace(-3, 3, 200, dtype=np.float32))
    def f(x):
        return mx.tanh(x * 1.5 + 0.25) * mx.cosh(x * 0.1) - mx.log1p(x * x)
    outs = [mx._fuse([f(x)], [x])[0] for _ in range(2)]
    name = mx._fuse_node_name(outs[0])
    ok = all(np.array_equal(np.array(o), np.array(f(x))) for o in outs)
    s = mx._fuse_stats()
    print(ok, name, s["compiles"], s["disk_hits"], s["failures"])
""")


def _run(env_extra, cache, script=None, *argv):
    """`script` (default SCRIPT) started in a fresh interpreter that imports
    the ember this test imported (the installed wheel in CI, python/ in a
    dev tree), with the kernel cache in `cache`, $CXX unset and `env_extra`
    added; argv in sys.argv[1:]."""
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))
    env = dict(os.environ, PYTHONPATH=pkg_parent, EMBER_CACHE_DIR=cache)
    env.pop("CXX", None)
    env.update(env_extra)
    return subprocess.Popen([sys.executable, "-c", script or SCRIPT, *argv], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_no_compiler_falls_back(tmp_path):
    p = _run({"PATH": ""}, str(tmp_path))
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    ok, name, compiles, hits, failures = out.split()
    assert ok == "True" and name == "Subtract" and compiles == "0"
    assert err.count("[ember] compile:") == 1 and "no C++ compiler" in err


def test_failing_compiler_falls_back(tmp_path):
    p = _run({"CXX": "/bin/false"}, str(tmp_path))
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    ok, name, compiles, hits, failures = out.split()
    assert ok == "True" and name == "Subtract" and compiles == "0"
    assert err.count("[ember] compile:") == 1 and "failed" in err


def test_concurrent_processes_share_the_cache(tmp_path):
    procs = [_run({}, str(tmp_path)) for _ in range(4)]
    results = [p.communicate(timeout=180) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        ok, name, compiles, hits, failures = out.split()
        assert ok == "True" and name.startswith("Compiled[") and failures == "0"
        assert int(compiles) + int(hits) == 1
    files = os.listdir(tmp_path)
    assert len([f for f in files if f.endswith(".so")]) == 1
    assert not [f for f in files if ".tmp" in f]



# the same, end to end through mx.compile: two fused groups (a sort between
# them), a cache hit and a retrace; argv[1], if given, a file to wait for
COMPILE_SCRIPT = textwrap.dedent("""
    import os, re, sys, time, numpy as np
    import ember.core as mx
    def f(x, w):
        h = mx.tanh(x * 1.5 + 0.25) * mx.cosh(x * 0.1) - mx.log1p(x * x)
        s = mx.sort(h, axis=-1)
        return mx.erf(s * 0.5) + mx.exp(-mx.abs(s)) * w
    x = mx.array(np.linspace(-3, 3, 600, dtype=np.float32).reshape(3, 200))
    w = mx.array(np.linspace(1, 2, 200, dtype=np.float32))
    if len(sys.argv) > 1:
        while not os.path.exists(sys.argv[1]):
            time.sleep(0.005)
    cf = mx.compile(f)
    args = [(x, w), (x * 2, w), (x[:, :50], w[:50])]
    ok = all(np.array_equal(np.array(cf(*a)), np.array(f(*a))) for a in args)
    kernels = set()
    for a in args[::2]:
        kernels |= set(re.findall(r"Compiled\\[[^\\]]*\\]", cf.lower(*a).compile().as_text()))
    s = mx._fuse_stats()
    print(ok, len(kernels), s["compiles"], s["disk_hits"], s["failures"])
""")


def _run_compile(env_extra, cache, *argv):
    return _run(env_extra, cache, COMPILE_SCRIPT, *argv)


@pytest.mark.parametrize("cxx", [None, "/nonexistent/g++"])
def test_compile_without_a_compiler(cxx, tmp_path):
    """mx.compile in a process that finds no compiler ($PATH without one,
    $CXX unset or naming nothing; an empty cache): the same values as eager
    from the unfused graph, one warning on stderr and nothing else,
    nothing written to the cache."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "cache").mkdir()
    env = {"PATH": str(tmp_path / "bin")}
    if cxx:
        env["CXX"] = cxx
    p = _run_compile(env, str(tmp_path / "cache"))
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    ok, kernels, compiles, hits, failures = out.split()
    assert ok == "True" and kernels == "0" and compiles == "0" and hits == "0"
    assert err.splitlines() == ["[ember] compile: no C++ compiler found ($CXX, or c++/g++/clang++ on PATH): "
                                "fused kernels are off and compiled graphs run on the ordinary kernels"]
    assert not os.listdir(tmp_path / "cache")


def test_compile_concurrent_processes_share_the_cache(tmp_path):
    """Four processes run the same compiled function at once against one
    fresh cache folder: each gets eager's bits and loads each of its kernels
    once (built or found on disk); the folder holds one object per distinct
    kernel and no partial file."""
    cache, go = tmp_path / "cache", tmp_path / "go"
    cache.mkdir()
    procs = [_run_compile({}, str(cache), str(go)) for _ in range(4)]
    go.touch()  # released together once started
    results = [p.communicate(timeout=300) for p in procs]
    built = 0
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        ok, kernels, compiles, hits, failures = out.split()
        assert ok == "True" and kernels == "2" and failures == "0" and err == ""
        assert int(compiles) + int(hits) == 2
        built += int(compiles)
    assert built >= 2
    files = os.listdir(cache)
    assert len([f for f in files if f.endswith(".so")]) == 2, files
    assert not [f for f in files if ".tmp" in f], files



def _compile_run(cache, **env):
    p = _run_compile(env, str(cache))
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    ok, kernels, compiles, hits, failures = out.split()
    assert ok == "True" and kernels == "2" and failures == "0", (out, err)
    return int(compiles), int(hits), sorted(f for f in os.listdir(cache) if f.endswith(".so"))


def test_disk_cache_keyed_by_compiler_and_isa(tmp_path):
    """The disk cache's key holds the compiler's identity and the flags: a
    run whose $CXX is another program (a wrapper that runs the same g++), or
    whose ISA level is lower (EMBER_ISA=avx2 on an AVX-512 machine), builds
    its kernels anew beside the old objects; an identical run rebuilds
    nothing and calls no compiler."""
    import shutil
    real = shutil.which("g++") or shutil.which("c++")
    if real is None:
        pytest.skip("no C++ compiler on PATH")
    cache = tmp_path / "cache"
    cache.mkdir()
    plain = dict(EMBER_ISA="")  # the machine's level ("" counts as unset)
    compiles, hits, first = _compile_run(cache, **plain)
    assert (compiles, hits, len(first)) == (2, 0, 2)
    assert _compile_run(cache, **plain) == (0, 2, first)  # reused
    marker, wrapper = tmp_path / "calls", tmp_path / "wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\necho >> "{marker}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    compiles, hits, second = _compile_run(cache, CXX=str(wrapper), **plain)
    assert (compiles, hits, len(second)) == (2, 0, 4) and set(first) < set(second)
    assert len(marker.read_text().splitlines()) == 2  # the wrapper built them
    assert _compile_run(cache, CXX=str(wrapper), **plain) == (0, 2, second)
    assert len(marker.read_text().splitlines()) == 2  # and was not called again
    if mx.__config__()["isa_supported"] != "avx512":
        pytest.skip("the ISA half needs an AVX-512 machine (EMBER_ISA=avx2 below its default)")
    compiles, hits, third = _compile_run(cache, EMBER_ISA="avx2")
    assert (compiles, hits, len(third)) == (2, 0, 6) and set(second) < set(third)
    assert _compile_run(cache, EMBER_ISA="avx2") == (0, 2, third)
    assert _compile_run(cache, **plain) == (0, 2, third)  # the default level's still there


PCH_SCRIPT = textwrap.dedent("""
    import os, numpy as np
    import ember.core as mx
    x = mx.array(np.linspace(-3, 3, 300, dtype=np.float32))
    fns = [lambda v: mx.tanh(v * 1.5 + 0.25) - v, lambda v: mx.exp(mx.sin(v) * 0.5) * v,
           lambda v: mx.sqrt(mx.abs(v)) + mx.erf(v) * mx.sum(v * v, axis=-1, keepdims=True)]
    ok = True
    for i, fn in enumerate(fns):
        (f,) = mx._fuse([fn(x)], [x])
        ok = ok and mx._fuse_node_name(f).startswith("Compiled[") and np.array_equal(np.array(f), np.array(fn(x)))
        if i == 0:  # the first compile starts the precompiled prelude; the others use it
            mx._fuse_wait_pch()
            gch = [n for n in os.listdir(os.environ["EMBER_CACHE_DIR"]) if n.endswith(".gch")]
    s = mx._fuse_stats()
    print(ok, len(gch), s["compiles"], s["pch_builds"], s["failures"])
""")


@pytest.mark.parametrize("pch", ["1", "0"])
def test_precompiled_prelude(pch, tmp_path):
    """The prelude header, precompiled in the background after the first
    compile (GCC) unless EMBER_KERNEL_PCH=0: later kernels compile against it
    and compute the same bits; nothing temporary is left in the folder."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__))),
               EMBER_CACHE_DIR=str(tmp_path), EMBER_KERNEL_PCH=pch)
    env.pop("CXX", None)
    p = subprocess.run([sys.executable, "-c", PCH_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    ok, gch, compiles, builds, failures = p.stdout.split()
    assert ok == "True" and compiles == "3" and failures == "0"
    # one build (none when the compiler is not GCC, or switched off), in place once waited for
    assert gch == builds and builds in (("0",) if pch == "0" else ("0", "1"))
    files = os.listdir(tmp_path)
    assert len([f for f in files if f.endswith(".h")]) == 1  # the prelude, one ISA level
    assert not [f for f in files if ".tmp" in f]


def test_emptied_cache_folder(tmp_path, rng):
    """A cache folder emptied (or a new one set) while the process runs: the
    next compile writes the prelude header again and succeeds."""
    x = mx.array(rng.standard_normal((20,)).astype(np.float32))
    before = os.environ["EMBER_CACHE_DIR"]
    try:
        os.environ["EMBER_CACHE_DIR"] = str(tmp_path)
        for k, fn in enumerate((lambda v: mx.cosh(v * 0.5) - mx.sin(v), lambda v: mx.erf(v * 0.5) + mx.exp(v))):
            s0 = mx._fuse_stats()
            (f,) = mx._fuse([fn(x)], [x])
            assert fused_name(f).startswith("Compiled[")
            assert mx._fuse_stats()["compiles"] == s0["compiles"] + 1
            assert_same(f, fn(x))
            mx._fuse_wait_pch()
            assert [n for n in os.listdir(tmp_path) if n.endswith(".h")]
            for n in os.listdir(tmp_path):
                os.unlink(tmp_path / n)
    finally:
        os.environ["EMBER_CACHE_DIR"] = before


def test_exit_stops_the_prelude_build(tmp_path):
    """A process that exits while the precompiled prelude is being built
    stops the build: no temporary file (nor compiler) outlives it."""
    script = ("import numpy as np, ember.core as mx\n"
              "x = mx.array(np.ones(8, dtype=np.float32))\n"
              "mx.eval(mx._fuse([mx.cosh(x * 3) - x], [x])[0])\n"
              "print(mx._fuse_stats()['pch_builds'])\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__))),
               EMBER_CACHE_DIR=str(tmp_path))
    env.pop("CXX", None)
    p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    files = os.listdir(tmp_path)
    assert len([f for f in files if f.endswith(".so")]) == 1
    assert not [f for f in files if ".tmp" in f], files


# ---- a closing reduction over the last axis ------------------------------------

@pytest.mark.parametrize("dtype", [mx.float32, mx.float64])
def test_closing_reduction_exact(dtype, rng):
    """sum/max/min over the last axis of a chain, in the eager reduction's
    order (pieces of 4096 split pairwise, lanes): the same bits."""
    for shape in [(7, 5000), (2, 3, 9000), (1, 4096 * 3 + 17), (40, 33), (5, 1), (4, 0), (9,)]:
        x = mx.array(rng.standard_normal(shape), dtype=dtype)
        t = mx.array(rng.standard_normal(shape[-1:]), dtype=dtype)
        for red in (mx.sum, mx.max, mx.min) if dtype == mx.float32 else (mx.sum,):
            if shape[-1] == 0 and red is not mx.sum:
                continue
            y = red((x - t) * (x - t) + mx.tanh(x), axis=-1, keepdims=True)
            (f,) = mx._fuse([y], [x, t])
            kind = {"sum": "Sum", "max": "Max", "min": "Min"}[red.__name__]
            assert fused_name(f) == f"Compiled[Subtract,Subtract,Multiply,Tanh,Add,{kind}]", shape
            assert_same(f, y)
    # a strided input and a NaN row
    base = mx.array(rng.standard_normal((30, 50)), dtype=dtype)
    v = base.T[:, ::-2]
    nan = mx.array(np.where(np.arange(15) == 3, np.nan, 1.0), dtype=dtype)
    for y in (mx.sum(mx.exp(v) * nan, axis=-1), mx.max(v * nan, axis=-1)):
        (f,) = mx._fuse([y], [v, nan])
        assert_same(f, y)


def test_closing_reduction_patterns(rng):
    x = mx.array(rng.standard_normal((64, 300)).astype(np.float32))
    w = mx.array(rng.standard_normal((300,)).astype(np.float32))
    # logsumexp: exp(x - m) closes with its sum
    m = mx.max(x, axis=-1, keepdims=True)
    lse = m + mx.log(mx.sum(mx.exp(x - m), axis=-1, keepdims=True))
    # layer norm: the variance's chain closes with its sum, the tail is one kernel
    mu = mx.mean(x, axis=-1, keepdims=True)
    var = mx.mean((x - mu) * (x - mu), axis=-1, keepdims=True)
    ln = (x - mu) * mx.rsqrt(var + 1e-5) * w
    # a loss
    loss = mx.sum(mx.square(x - w) * 0.5, axis=-1)
    outs = mx._fuse([lse, ln, loss], [x, w])
    for o, e in zip(outs, [lse, ln, loss]):
        assert_same(o, e)
    np.testing.assert_allclose(np.array(outs[0])[:, 0], np.log(np.exp(np.array(x, dtype=np.float64)).sum(-1)),
                               rtol=1e-5)


def test_closing_reduction_transforms(rng):
    def f(a, b):
        y = mx.sum(mx.tanh(a * b) * a, axis=-1)
        (g,) = mx._fuse([y], [a, b])
        return g
    a = mx.array(rng.standard_normal((3, 7)), dtype=mx.float64)
    b = mx.array(rng.standard_normal((3, 7)), dtype=mx.float64)
    ga, gb = mx.grad(lambda p, q: mx.sum(f(p, q) ** 2), argnums=(0, 1))(a, b)
    ra, rb = mx.grad(lambda p, q: mx.sum(mx.sum(mx.tanh(p * q) * p, axis=-1) ** 2), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(np.array(ga), np.array(ra), rtol=1e-12)
    np.testing.assert_allclose(np.array(gb), np.array(rb), rtol=1e-12)
    out = mx.vmap(f, in_axes=(1, None))(a, b[:, 0])
    loop = np.stack([np.array(f(a[:, i], b[:, 0])) for i in range(7)])
    np.testing.assert_allclose(np.array(out), loop, rtol=1e-14)


# ---- row programs: reductions whose results broadcast back ---------------------

def layer_norm(x, w, b):
    mu = mx.mean(x, axis=-1, keepdims=True)
    var = mx.mean((x - mu) * (x - mu), axis=-1, keepdims=True)
    return (x - mu) * (1 / mx.sqrt(var + 1e-5)) * w + b


def rms_norm(x, w, b):
    return x * mx.rsqrt(mx.mean(mx.square(x), axis=-1, keepdims=True) + 1e-6) * w


def softmax_written(x, w, b):
    e = mx.exp(x - mx.max(x, axis=-1, keepdims=True))
    return e / mx.sum(e, axis=-1, keepdims=True)


def n_reductions(name):
    return sum(name.count(k) for k in (",Sum", ",Max", ",Min", "[Sum", "[Max", "[Min"))


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64])
def test_row_programs_one_kernel_exact(dtype, rng):
    """layer norm, rms norm, softmax written out: one kernel each, the same
    bits as the unfused graph (long rows split pairwise, empty rows, no rows,
    1-D, rows of one element)."""
    fns = {layer_norm: 2, rms_norm: 1, softmax_written: 2} if dtype == mx.float32 else {layer_norm: 2}
    for shape in [(64, 300), (3, 5, 130), (2, 9000), (5, 1), (4, 0), (0, 7), (33,)]:
        x = mx.array(rng.standard_normal(shape) * 3, dtype=dtype)
        w = mx.array(rng.standard_normal(shape[-1:]), dtype=dtype)
        b = mx.array(rng.standard_normal(shape[-1:]), dtype=dtype)
        for fn, reds in fns.items():
            if fn is softmax_written and 0 in shape[-1:]:
                continue
            y = fn(x, w, b)
            (f,) = mx._fuse([y], [x, w, b])
            name = fused_name(f)
            assert name.startswith("Compiled[") and n_reductions(name) == reds, (fn.__name__, shape, name)
            assert_same(f, y)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64])
def test_row_reduction_forms_exact(dtype, rng):
    """The generator's reduction forms, each against the unfused graph bit for
    bit: a sum accumulated as its simple chain (compares, select, casts) is
    computed, a max/min of an input read in place (dense) or gathered
    (strided), a sum through a math function (buffered); NaNs and long rows
    split pairwise, tails of every length mod the lanes."""
    forms = {
        "accumulated": lambda x, t: x - mx.sum(mx.where(x > t, x * t, -x) / 3
                                               + (x < 0).astype(x.dtype), axis=-1, keepdims=True),
        "input max": lambda x, t: x * t - mx.max(x, axis=-1, keepdims=True),
        "input min": lambda x, t: (x - mx.min(x, axis=-1, keepdims=True)) * t,
        "buffered": lambda x, t: x / mx.sum(mx.exp(x - t), axis=-1, keepdims=True),
    }
    for shape in [(5, 9000), (3, 4096 * 2 + 31), (9, 47), (6, 1)]:
        vals = rng.standard_normal(shape)
        vals[1, shape[-1] // 2] = np.nan
        x = mx.array(vals, dtype=dtype)
        t = mx.array(rng.standard_normal(shape[-1:]), dtype=dtype)
        for name, fn in forms.items():
            for xv in (x, mx.array(np.ascontiguousarray(vals.T), dtype=dtype).T):  # dense, strided rows
                y = fn(xv, t)
                (f,) = mx._fuse([y], [xv, t])
                assert n_reductions(fused_name(f)) == 1, (name, shape)
                assert_same(f, y)


def test_row_programs_layouts_and_outputs(rng):
    base = mx.array(rng.standard_normal((90, 70)).astype(np.float32))
    w = mx.array(rng.standard_normal((70,)).astype(np.float32))
    col = mx.array(rng.standard_normal((40, 1)).astype(np.float32))
    cases = {
        "transposed": (base.T, mx.array(rng.standard_normal((90,)).astype(np.float32))),
        "strided": (base[::2, ::-3], mx.array(rng.standard_normal((24,)).astype(np.float32))),
        "broadcast rows": (mx.broadcast_to(w, (40, 70)), w),
    }
    for name, (x, v) in cases.items():
        y = layer_norm(x, v, 0.5)
        (f,) = mx._fuse([y], [x, v])
        assert n_reductions(fused_name(f)) == 2, name
        assert_same(f, y)
    # several outputs: the row mean, a full intermediate, the result; a row
    # scalar input; a sin beyond simd_math's accurate bound in a row
    x = mx.array(rng.standard_normal((40, 70)).astype(np.float32))
    x = mx.where(mx.arange(70) == 5, mx.array(1e6, dtype=mx.float32), x)
    mu = mx.mean(x, axis=-1, keepdims=True)
    d = mx.sin(x - mu) * col
    y = d / mx.max(mx.abs(d), axis=-1, keepdims=True)
    outs = mx._fuse([mu, d, y], [x, col])
    assert fused_name(outs[2]).startswith("Compiled[")
    assert fused_name(outs[0]) == fused_name(outs[2])
    for o, e in zip(outs, [mu, d, y]):
        assert_same(o, e)


def test_row_programs_transforms(rng):
    """vjp against finite differences (float64), vmap against a loop."""
    def f(x, w):
        (y,) = mx._fuse([layer_norm(x, w, 0.25)], [x, w])
        return y
    x = mx.array(rng.standard_normal((3, 6)), dtype=mx.float64)
    w = mx.array(rng.standard_normal((6,)), dtype=mx.float64)
    assert "Compiled[" in fused_name(f(x, w))
    loss = lambda p, q: mx.sum(mx.sin(f(p, q)) * mx.arange(18, dtype=mx.float64).reshape(3, 6))
    gx, gw = mx.grad(loss, argnums=(0, 1))(x, w)
    eps = 1e-6
    for arg, g in ((0, gx), (1, gw)):
        base = [np.array(x), np.array(w)]
        num = np.zeros_like(base[arg])
        for i in np.ndindex(num.shape):
            hi = [a.copy() for a in base]
            lo = [a.copy() for a in base]
            hi[arg][i] += eps
            lo[arg][i] -= eps
            num[i] = (loss(*[mx.array(v, dtype=mx.float64) for v in hi]).item()
                      - loss(*[mx.array(v, dtype=mx.float64) for v in lo]).item()) / (2 * eps)
        np.testing.assert_allclose(np.array(g), num, rtol=1e-6, atol=1e-8)
    xs = mx.array(rng.standard_normal((4, 3, 6)), dtype=mx.float64)
    out = mx.vmap(f, in_axes=(0, None))(xs, w)
    loop = np.stack([np.array(f(xs[i], w)) for i in range(4)])
    np.testing.assert_allclose(np.array(out), loop, rtol=1e-14)


def test_row_programs_in_compile(rng):
    x = mx.array(rng.standard_normal((128, 256)).astype(np.float32))
    w = mx.array(rng.standard_normal((256,)).astype(np.float32))
    b = mx.array(rng.standard_normal((256,)).astype(np.float32))
    c = mx.compile(layer_norm)
    text = c.lower(x, w, b).compile().as_text()
    assert text.count("Compiled[") == 1, text
    assert_same(c(x, w, b), layer_norm(x, w, b))
    s = mx.compile(softmax_written, shapeless=True)
    for shape in [(8, 256), (3, 100)]:
        v = mx.array(rng.standard_normal(shape).astype(np.float32))
        assert_same(s(v, None, None), softmax_written(v, None, None))


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
def test_half_types_exact(dtype, rng):
    """float16/bfloat16 in fused groups: computed in float32, each step
    rounded to its type, as the eager kernels do (the same bits), in the
    elementwise form, with casts from and to float64, and around a row program."""
    base = mx.array(rng.standard_normal((70, 40)) * 2, dtype=dtype)
    x, y = base[::2], mx.array(rng.standard_normal((40,)), dtype=dtype)
    w = mx.array(rng.standard_normal((40,)).astype(np.float32))
    cases = [  # (one kernel each: the g++ runs are the test's time)
        mx.where(x > y, (mx.exp(x * y) - mx.erf(x) / (y + 3)).astype(mx.float32) * 3, mx.tanh(x * 2 + 1) * w),
        (x.astype(mx.float64) * 1.1).astype(dtype) + x,
        softmax_written(base.T.astype(mx.float32) * 2, None, None).astype(dtype) * base.T,
    ]
    outs = mx._fuse(cases, [x, y, w, base])
    for o, e in zip(outs, cases):
        assert fused_name(o).startswith("Compiled["), fused_name(e)
        mx.eval(o, e)
        assert o.dtype == e.dtype
        np.testing.assert_array_equal(bits(np.array(o.astype(mx.float32))), bits(np.array(e.astype(mx.float32))))


def test_bfloat16_rounding_edges_exact():
    """Each step's rounding to bfloat16 in a fused group, on the values
    where it can go wrong: ties either way, a carry into the exponent,
    overflow to infinity, NaNs of either sign with every payload bit set,
    infinities, zeros of both signs and denormals, as the eager kernels
    round them (the same bits)."""
    words = np.array([0x3F80, 0x3F81, 0x3F7F, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FFF, 0xFFFF, 0x7FC1, 0xFFC0,
                      0x0000, 0x8000, 0x0001, 0x807F, 0x4049, 0xC0A0, 0x3C00, 0x7F81, 0xFF81], np.uint16)
    vals = (words.astype(np.uint32) << 16).view(np.float32)
    x = mx.array(vals).astype(mx.bfloat16)
    # factors whose products land on ties and on the carry: 1 + 2^-8 and
    # 1 + 2^-9 (in bfloat16: 1.00390625 and, rounded, 1)
    y = mx.array(np.float32(1.00390625) * np.ones_like(vals)).astype(mx.bfloat16)
    # (a select passes signaling NaNs through to the rounding, which quiets them)
    cases = [x * y * y + x, mx.exp(x * 0.5) * x - y, (x * 1.5 + x * y) * 255.0, mx.where(mx.abs(y) > 1, x, y)]
    outs = mx._fuse(cases, [x, y])
    for o, e in zip(outs, cases):
        assert fused_name(o).startswith("Compiled["), fused_name(e)
        mx.eval(o, e)
        assert o.dtype == e.dtype == mx.bfloat16
        np.testing.assert_array_equal(bits(np.array(o.astype(mx.float32))), bits(np.array(e.astype(mx.float32))))


def test_transposed_product_is_computed_transposed(rng):
    """compile's pipeline rewrites (a @ b).T, the product used nowhere else,
    to b.T @ a.T: a row-major product in the transposed shape, so the
    elementwise kernel after it (an SGD update of a weight stored (out, in))
    reads it densely. Not when the product is used elsewhere too."""
    a = mx.array(rng.standard_normal((3, 64, 48)).astype(np.float32))
    b = mx.array(rng.standard_normal((3, 48, 40)).astype(np.float32))
    w = mx.array(rng.standard_normal((3, 40, 64)).astype(np.float32))

    def sgd(a, b, w):
        return w - 0.1 * mx.swapaxes(a @ b, -1, -2)

    def shared(a, b, w):
        p = a @ b
        return w - 0.1 * mx.swapaxes(p, -1, -2), p * 2

    text = mx.compile(sgd).lower(a, b, w).compile().as_text()
    assert "Transpose" not in text.split("Matmul")[-1], text
    ref = np.array(w) - 0.1 * np.swapaxes(np.array(a, dtype=np.float64) @ np.array(b, dtype=np.float64), -1, -2)
    np.testing.assert_allclose(np.array(mx.compile(sgd)(a, b, w)), ref, rtol=1e-5, atol=1e-5)
    text = mx.compile(shared).lower(a, b, w).compile().as_text()
    assert text.count("Matmul") == 1 and "Transpose" in text, text
    for o, e in zip(mx.compile(shared)(a, b, w), shared(a, b, w)):
        np.testing.assert_array_equal(np.array(o), np.array(e))


def test_transpose_of_a_transposed_product_and_rewrites_under_kept_outputs(rng):
    """The vjp of x @ W.T gives W's gradient as the transpose of a transposed
    product: both fold (inputs first), back to one row-major product. The
    graph's output there is the outer transpose, rewired in place, and so is
    a reshape of a fused row sum: rewrites under an output that keeps its
    array are kept too."""
    x = mx.array(rng.standard_normal((6, 5)).astype(np.float32))
    w = mx.array(rng.standard_normal((4, 5)).astype(np.float32))
    g = mx.compile(mx.grad(lambda v: (x @ v.T).square().sum()))
    text = g.lower(w).compile().as_text()
    assert "Transpose" not in text.split("Matmul")[-1], text
    xn, wn = np.array(x, np.float64), np.array(w, np.float64)
    np.testing.assert_allclose(np.array(g(w)), 2 * (xn @ wn.T).T @ xn, rtol=1e-5, atol=1e-5)
    v = mx.array(rng.standard_normal((5,)).astype(np.float32))
    dot = mx.compile(lambda a, b: mx.sum(a * b, axis=-1))
    text = dot.lower(x, v).compile().as_text()
    assert "= Compiled[Multiply,Sum] a b" in text and text.splitlines()[-2].endswith("= Reshape c"), text
    assert_same(dot(x, v), mx.sum(x * v, axis=-1))
