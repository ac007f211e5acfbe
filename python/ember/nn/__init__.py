"""``ember.nn``: neural-network layers, MLX's ``mlx.nn`` API on
``ember.core``.

    import ember.core as mx
    import ember.nn as nn

    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    loss_and_grad = nn.value_and_grad(model, lambda x, y: ((model(x) - y) ** 2).mean())

A model is a :class:`Module`, a dict of its parameters (arrays) and child
modules, so it is a pytree for ``ember.utils`` and ``ember.core.eval``.
"""


from ember.nn import utils
from ember.nn.layers import *  # noqa: F401,F403
from ember.nn.utils import average_gradients, value_and_grad

# the initialisers and losses live in their own files of this package
from ember.nn import init, losses  # noqa: F401,E402
