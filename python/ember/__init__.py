"""Ember: lazily evaluated arrays with composable transforms.

``import ember.core as mx`` gives MLX's ``mlx.core`` API.
"""
import os as _os

# EMBER_ISA caps the instruction set of Ember's kernels; cap OpenBLAS's
# (matmul, conv, linalg) to match unless the user chose its core already.
# OpenBLAS reads this when the extension loads it, so it is set first.
_OPENBLAS_CORE = {"baseline": "Nehalem", "sse4.2": "Nehalem", "x86-64-v2": "Nehalem", "v2": "Nehalem",
                  "avx2": "Haswell", "x86-64-v3": "Haswell", "v3": "Haswell"}
_isa = _os.environ.get("EMBER_ISA", "").strip().lower()
if _isa in _OPENBLAS_CORE and "OPENBLAS_CORETYPE" not in _os.environ:
    _os.environ["OPENBLAS_CORETYPE"] = _OPENBLAS_CORE[_isa]

from . import core  # noqa: E402
from . import _transforms

_transforms.install(core)
# MLX exposes linalg.norm under this name too
core.matrix_norm = core.linalg.norm

__version__ = "0.1.0"
__all__ = ["core"]
