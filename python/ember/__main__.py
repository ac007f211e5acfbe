"""``python -m ember``: facts about the installed Ember.

``--cmake-dir`` prints the directory of Ember's CMake package (for
``find_package(Ember CONFIG REQUIRED)`` with ``-DEmber_DIR=...``, as
pybind11 does), ``--include-dir`` the directory to put on the include path
(``#include <ember/ember.h>``) and ``--libs`` the linker flags of the static
library for a build without CMake (``ember/lib/pkgconfig/ember.pc`` has the
same for pkg-config). These options need no compiled extension: they read
the package's files only.
"""
import argparse
import os
import sys

_PKG = os.path.dirname(os.path.abspath(__file__))


def _cpp_path(*parts):
    path = os.path.join(_PKG, *parts)
    if not os.path.exists(path):
        sys.exit(f"python -m ember: {path} does not exist; this ember was not installed with its C++ "
                 "package (install the wheel, or `cmake --install` a build)")
    return path


def _openblas_libdir():
    try:
        import scipy_openblas32
    except ImportError:
        sys.exit("python -m ember: scipy_openblas32 is not installed (pip install scipy-openblas32)")
    return scipy_openblas32.get_lib_dir()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ember", description="Facts about the installed Ember.")
    parser.add_argument("--cmake-dir", action="store_true",
                        help="print the directory of the CMake package (Ember_DIR) and exit")
    parser.add_argument("--include-dir", action="store_true",
                        help="print the include directory of the C++ headers and exit")
    parser.add_argument("--libs", action="store_true",
                        help="print the linker flags of the static library and exit")
    args = parser.parse_args(argv)
    if args.cmake_dir:
        print(_cpp_path("lib", "cmake", "Ember"))
        return 0
    if args.include_dir:
        print(_cpp_path("include"))
        return 0
    if args.libs:
        lib = _cpp_path("lib")
        blas = _openblas_libdir()
        print(f"-L{lib} -lember -L{blas} -lscipy_openblas -Wl,-rpath,{blas} -pthread -ldl")
        return 0
    import ember
    print(f"ember {ember.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
