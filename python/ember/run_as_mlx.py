"""Run a program written for MLX on Ember.

``python -m ember.run_as_mlx script.py [ARGS...]`` runs ``script.py`` as
``__main__`` (with ``sys.argv`` = ``[script.py, ARGS...]`` and the script's
folder first on ``sys.path``, as ``python script.py`` would), and
``python -m ember.run_as_mlx -m package.module [ARGS...]`` runs a module as
``python -m`` would, both with :func:`ember.mlx_alias.alias_mlx` installed, so
every ``import mlx...`` inside gives Ember.
"""
import os
import runpy
import sys

from .mlx_alias import alias_mlx

_USAGE = "usage: python -m ember.run_as_mlx (script.py | -m module) [args...]"


def main(argv=None):
    """Run a script or module with the mlx alias installed.

    Args:
        argv (list[str], optional): the command line after
            ``-m ember.run_as_mlx``: ``[script, *args]`` or
            ``["-m", module, *args]``. Default: ``sys.argv[1:]``.

    Returns:
        int: 0 when the program ran to its end (its own ``sys.exit`` passes
        through), 2 for a bad command line.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    alias_mlx()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(_USAGE, file=sys.stderr)
            return 2
        module, args = argv[1], argv[2:]
        sys.argv = [module] + args
        sys.path.insert(0, os.getcwd())
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    script, args = argv[0], argv[1:]
    if not os.path.exists(script):
        print(f"run_as_mlx: no such file: {script}", file=sys.stderr)
        return 2
    sys.argv = [script] + args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
