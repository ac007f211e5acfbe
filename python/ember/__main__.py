"""``python -m ember``: what this Ember is and how it runs on this machine.

Prints the version, the kernels' instruction-set level (in use, the best the
CPU supports, the levels the build contains), the BLAS library in use, the
thread counts, and whether a C++ compiler (for ``mx.compile``'s fused
kernels) and an MPI library (for ``mx.distributed``) were found. ``--json``
prints the same facts as one JSON object.

For C++ programs built on the installed package: ``--cmake-dir`` prints the
folder of Ember's CMake package (``-DEmber_DIR=...`` for
``find_package(Ember CONFIG REQUIRED)``), ``--include-dir`` the include
folder (``#include <ember/ember.h>``), ``--libs`` the linker flags of the
static library for a build without CMake.
"""
import argparse
import json
import os
import shutil
import sys
from typing import Any, Dict, List, Optional


_PKG = os.path.dirname(os.path.abspath(__file__))


def _cpp_path(*parts: str) -> str:
    path = os.path.join(_PKG, *parts)
    if not os.path.exists(path):
        sys.exit(f"python -m ember: {path} does not exist; this ember was not installed with its C++ "
                 "package (install the wheel, or `cmake --install` a build)")
    return path


def _openblas_libdir() -> str:
    try:
        import scipy_openblas32
    except ImportError:
        sys.exit("python -m ember: scipy_openblas32 is not installed (pip install scipy-openblas32)")
    return str(scipy_openblas32.get_lib_dir())


def _compiler_path() -> Optional[str]:
    """The compiler compile's kernel builder uses: ``$CXX``, else ``c++``,
    ``g++`` or ``clang++`` on ``PATH`` (csrc/ember/compile/jit.cpp's order)."""
    cxx = os.environ.get("CXX", "").strip()
    names = [cxx.split(" ")[0]] if cxx else ["c++", "g++", "clang++"]
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def info() -> Dict[str, Any]:
    """The facts ``python -m ember`` prints, as a dict (loads MPI if it can)."""
    import ember
    import ember.core as mx

    cfg = mx.__config__()
    compiler = bool(mx._fuse_stats()["compiler"])
    mpi = bool(mx.distributed.is_available())
    return {
        "version": ember.__version__,
        "location": os.path.dirname(os.path.abspath(ember.__file__)),
        "python": sys.version.split()[0],
        "isa": cfg["isa"],
        "isa_supported": cfg["isa_supported"],
        "isa_levels": list(cfg["isa_levels"]),
        "isa_dispatch": bool(cfg["isa_dispatch"]),
        "cpu_features": list(cfg["cpu_features"]),
        "amx": bool(cfg.get("amx", False)),
        "num_threads": cfg["num_threads"],
        "blas": dict(cfg["blas"]),
        "compiler": _compiler_path() if compiler else None,
        "mpi": (mx._dist_library() or "found") if mpi else None,
        "mpi_error": None if mpi else (mx._dist_load_error() or "no libmpi found"),
    }


def _report(d: Dict[str, Any]) -> str:
    blas = d["blas"]
    levels = ", ".join(d["isa_levels"])
    lines: List[str] = [
        f"ember {d['version']} ({d['location']}, Python {d['python']})",
        f"ISA in use:       {d['isa']}",
        f"ISA supported:    {d['isa_supported']} (build contains: {levels}; "
        f"{'runtime dispatch' if d['isa_dispatch'] else 'single level, no dispatch'})",
        f"CPU features:     {' '.join(d['cpu_features']) or '-'}",
        "AMX tiles:        " + ("in use (EMBER_AMX=0 turns them off)" if d["amx"] else "not in use"),
        f"threads:          {d['num_threads']}",
        f"BLAS:             {blas['config']}",
        f"BLAS core:        {blas['core']} ({blas['num_threads']} threads)",
        "compiler:         " + (f"found: {d['compiler']}" if d["compiler"]
                                else "not found (compile runs graphs without fused kernels)"),
        "MPI:              " + (f"found: {d['mpi']}" if d["mpi"]
                                else f"not found (distributed runs as one process: {d['mpi_error']})"),
    ]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ember",
                                description="Ember's version, ISA level, BLAS, threads, compiler and MPI.")
    p.add_argument("--version", action="store_true", help="print the version only")
    p.add_argument("--json", action="store_true", help="print the facts as one JSON object")
    p.add_argument("--cmake-dir", action="store_true",
                   help="print the folder of the CMake package (Ember_DIR) and exit")
    p.add_argument("--include-dir", action="store_true", help="print the include folder of the C++ headers and exit")
    p.add_argument("--libs", action="store_true", help="print the linker flags of the static library and exit")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmake_dir:
        print(_cpp_path("lib", "cmake", "Ember"))
        return 0
    if args.include_dir:
        print(_cpp_path("include"))
        return 0
    if args.libs:
        lib, blas = _cpp_path("lib"), _openblas_libdir()
        print(f"-L{lib} -lember -L{blas} -lscipy_openblas -Wl,-rpath,{blas} -pthread -ldl")
        return 0
    if args.version:
        import ember

        print(ember.__version__)
        return 0
    d = info()
    print(json.dumps(d, indent=2) if args.json else _report(d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
