"""Neural networks (``mlx.nn``): ``ember.nn.losses`` and ``ember.nn.init``."""
from ember.nn import init, losses
