"""Optimizers for ``ember.nn`` models, in pure Python on ``ember.core``.

``import ember.optimizers as optim`` gives MLX's ``mlx.optimizers`` API: the
optimizers (their state a pytree, created lazily), ``clip_grad_norm`` and
the learning-rate schedules.

    opt = optim.AdamW(learning_rate=optim.cosine_decay(1e-3, 1000))
    loss, grads = mx.value_and_grad(loss_fn)(model.trainable_parameters())
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
"""

from .optimizers import (AdaDelta, Adafactor, Adagrad, Adam, Adamax, AdamW, Lion, MultiOptimizer, Muon,
                         Optimizer, RMSprop, SGD, clip_grad_norm)
from .schedulers import cosine_decay, exponential_decay, join_schedules, linear_schedule, step_decay

__all__ = [
    "Optimizer", "MultiOptimizer", "SGD", "RMSprop", "Adagrad", "AdaDelta", "Adam", "AdamW", "Adamax",
    "Lion", "Adafactor", "Muon", "clip_grad_norm",
    "cosine_decay", "exponential_decay", "step_decay", "linear_schedule", "join_schedules",
]
