"""Ember: lazily evaluated arrays with composable transforms.

``import ember.core as mx`` gives MLX's ``mlx.core`` API.
"""
import os as _os

# EMBER_ISA caps the instruction set of Ember's kernels; cap OpenBLAS's
# (matmul, linalg) to match unless the user chose its core already. OpenBLAS
# reads this when the extension loads it, so it is set first — and only to a
# core this CPU can run (OPENBLAS_CORETYPE forces a kernel set, it does not cap).
_OPENBLAS_CORE = {"baseline": ("Nehalem", {"sse4_2"}), "sse4.2": ("Nehalem", {"sse4_2"}),
                  "x86-64-v2": ("Nehalem", {"sse4_2"}), "v2": ("Nehalem", {"sse4_2"}),
                  "avx2": ("Haswell", {"avx2", "fma"}), "x86-64-v3": ("Haswell", {"avx2", "fma"}),
                  "v3": ("Haswell", {"avx2", "fma"})}


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


_isa = _os.environ.get("EMBER_ISA", "").strip().lower()
if _isa in _OPENBLAS_CORE and "OPENBLAS_CORETYPE" not in _os.environ:
    _core, _needs = _OPENBLAS_CORE[_isa]
    if _needs <= _cpu_flags():
        _os.environ["OPENBLAS_CORETYPE"] = _core



def _preload_openblas():
    """The extension needs scipy-openblas32's libscipy_openblas.so, which its
    rpath finds in this site-packages folder. Where that package sits in
    another folder (a user site, a --target install), load it from there
    first: the extension's dependency is then satisfied by the loaded one."""
    if _os.path.isdir(_os.path.join(_os.path.dirname(_os.path.dirname(__file__)), "scipy_openblas32", "lib")):
        return
    try:
        import ctypes
        import glob

        import scipy_openblas32
    except ImportError:
        return
    for lib in sorted(glob.glob(_os.path.join(scipy_openblas32.get_lib_dir(), "libscipy_openblas*.so*"))):
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
        return


# OpenBLAS's threads watch for work for 2^OPENBLAS_THREAD_TIMEOUT cycles
# after starting and after every threaded call before they sleep: 2^28 by
# default, ~0.1 s of a whole core each time, taken from Ember's own threads
# (after the import, after each LAPACK call). 2^22 cycles (~1.3 ms) still
# covers the back-to-back calls inside one LAPACK routine. Ember's OpenBLAS
# reads the variable when it loads, just below; the user's value wins, and
# the process's environment is left as it was (numpy's OpenBLAS, children).
_timeout_set = "OPENBLAS_THREAD_TIMEOUT" not in _os.environ
if _timeout_set:
    _os.environ["OPENBLAS_THREAD_TIMEOUT"] = "22"
try:
    _preload_openblas()
    from . import core  # noqa: E402
finally:
    if _timeout_set:
        del _os.environ["OPENBLAS_THREAD_TIMEOUT"]
from . import _transforms

_transforms.install(core)
from . import _compile, _distributed  # noqa: E402

_compile.install(core)
_distributed.install(core)
from .mlx_alias import alias_mlx, unalias_mlx  # noqa: E402  (opt-in: nothing happens until called)
# MLX exposes linalg.norm under this name too
core.matrix_norm = core.linalg.norm

# one version: pyproject.toml's, compiled into the extension by CMake
# (core.__version__, as mlx.core.__version__; ember::version() in C++)
__version__ = core.__version__
__all__ = ["core", "alias_mlx", "unalias_mlx"]
