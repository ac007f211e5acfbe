"""Ember: lazily evaluated arrays with composable transforms.

``import ember.core as mx`` gives MLX's ``mlx.core`` API.
"""
from . import core
from . import _transforms

_transforms.install(core)

__version__ = "0.1.0"
__all__ = ["core"]
