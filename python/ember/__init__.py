"""Ember: lazily evaluated arrays with composable transforms.

``import ember.core as mx`` gives MLX's ``mlx.core`` API.
"""
from . import core
from . import _transforms

_transforms.install(core)
# MLX exposes linalg.norm under this name too
core.matrix_norm = core.linalg.norm

__version__ = "0.1.0"
__all__ = ["core"]
