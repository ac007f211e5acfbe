"""Normalisation layers: LayerNorm, RMSNorm, GroupNorm, InstanceNorm and
BatchNorm. Features are the last axis of the input (channels last)."""

from typing import Any, Tuple

from ember import core as mx
from ember.nn.layers.base import Module


def _check_features(layer: str, x: mx.array, dims: int, min_ndim: int = 1) -> None:
    if x.ndim < min_ndim or x.shape[-1] != dims:
        raise ValueError(f"[{layer}] Expected an input with {dims} features in its last dimension "
                         f"(at least {min_ndim}-D) but got an array of shape {tuple(x.shape)}.")


class LayerNorm(Module):
    r"""Normalises each vector of the last axis to zero mean and unit
    variance, then applies ``weight`` (ones) and ``bias`` (zeros):
    :math:`y = (x - E[x]) / \sqrt{Var[x] + \epsilon}\, \gamma + \beta`.

    Args:
        dims (int): size of the last axis.
        eps (float): added to the variance. Default: 1e-5.
        affine (bool): learn ``weight`` (and ``bias``). Default: True.
        bias (bool): with ``affine``, learn ``bias`` too. Default: True.
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = True, bias: bool = True) -> None:
        super().__init__()
        if affine:
            self.weight = mx.ones((dims,))
            if bias:
                self.bias = mx.zeros((dims,))
        self.eps = eps
        self.dims = dims

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        if "weight" in self:
            _check_features("LayerNorm", x, self.dims)
        return mx.fast.layer_norm(x, self.get("weight"), self.get("bias"), self.eps)


class RMSNorm(Module):
    r"""Divides each vector of the last axis by its root mean square and
    applies ``weight`` (ones): :math:`y = x / \sqrt{E[x^2] + \epsilon}\,
    \gamma`.

    Args:
        dims (int): size of the last axis.
        eps (float): added to the mean square. Default: 1e-5.
    """

    def __init__(self, dims: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = mx.ones((dims,))
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"

    def __call__(self, x: mx.array) -> mx.array:
        _check_features("RMSNorm", x, self.weight.shape[0])
        return mx.fast.rms_norm(x, self["weight"], self.eps)


class GroupNorm(Module):
    r"""Normalises groups of features over the group and every axis
    between the first (batch) and the last (features).

    By default (MLX's layout) feature ``c`` belongs to group ``c %
    num_groups``; with ``pytorch_compatible`` the groups are contiguous
    blocks of ``dims // num_groups`` features, as in PyTorch.

    Args:
        num_groups (int): number of groups; must divide ``dims``.
        dims (int): number of features (the last axis).
        eps (float): added to the variance. Default: 1e-5.
        affine (bool): learn ``weight`` (ones) and ``bias`` (zeros).
            Default: True.
        pytorch_compatible (bool): PyTorch's grouping. Default: False.
    """

    def __init__(self, num_groups: int, dims: int, eps: float = 1e-5, affine: bool = True,
                 pytorch_compatible: bool = False) -> None:
        super().__init__()
        if affine:
            self.bias = mx.zeros((dims,))
            self.weight = mx.ones((dims,))
        self.num_groups = num_groups
        self.dims = dims
        self.eps = eps
        self.pytorch_compatible = pytorch_compatible

    def _extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.dims}, eps={self.eps}, affine={'weight' in self}, "
                f"pytorch_compatible={self.pytorch_compatible}")

    def _pytorch_groups(self, x: mx.array) -> mx.array:
        batch, *rest, dims = x.shape
        size = dims // self.num_groups
        x = x.reshape(batch, -1, self.num_groups, size).transpose(0, 2, 1, 3).reshape(batch, self.num_groups, -1)
        x = mx.fast.layer_norm(x, None, None, self.eps)
        x = x.reshape(batch, self.num_groups, -1, size).transpose(0, 2, 1, 3)
        return x.reshape(batch, *rest, dims)

    def _strided_groups(self, x: mx.array) -> mx.array:
        batch, *rest, dims = x.shape
        x = x.reshape(batch, -1, self.num_groups)
        mean = mx.mean(x, axis=1, keepdims=True)
        var = mx.var(x, axis=1, keepdims=True)
        x = (x - mean) * mx.rsqrt(var + self.eps)
        return x.reshape(batch, *rest, dims)

    def __call__(self, x: mx.array) -> mx.array:
        if "weight" in self:
            _check_features("GroupNorm", x, self.dims, min_ndim=2)
        x = self._pytorch_groups(x) if self.pytorch_compatible else self._strided_groups(x)
        if "weight" in self:
            x = self["weight"] * x + self["bias"]
        return x


class InstanceNorm(Module):
    r"""Normalises each feature of each sample over the axes between the
    first (batch) and the last (features).

    Args:
        dims (int): number of features (the last axis).
        eps (float): added to the variance. Default: 1e-5.
        affine (bool): learn ``weight`` (ones) and ``bias`` (zeros).
            Default: False.
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = False) -> None:
        super().__init__()
        if affine:
            self.weight = mx.ones((dims,))
            self.bias = mx.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        if "weight" in self:
            _check_features("InstanceNorm", x, self.dims, min_ndim=3)
        axes = tuple(range(1, x.ndim - 1))
        mean = mx.mean(x, axis=axes, keepdims=True)
        var = mx.var(x, axis=axes, keepdims=True)
        x = (x - mean) * mx.rsqrt(var + self.eps)
        if "weight" in self:
            x = self["weight"] * x + self["bias"]
        return x


class BatchNorm(Module):
    r"""Normalises each feature over the batch (and spatial) axes.

    In training mode the statistics are the batch's and, with
    ``track_running_stats``, they update ``running_mean`` and
    ``running_var`` (an unbiased variance) with ``momentum``; in evaluation
    mode the running statistics are used. The running statistics are
    frozen parameters (never trained). Inputs are ``(N, C)``, ``(N, L, C)``
    or ``(N, H, W, C)``.

    Args:
        num_features (int): number of features ``C``.
        eps (float): added to the variance. Default: 1e-5.
        momentum (float): weight of the batch in the running statistics.
            Default: 0.1.
        affine (bool): learn ``weight`` (ones) and ``bias`` (zeros).
            Default: True.
        track_running_stats (bool): keep running statistics. Default: True.
    """

    _STATS = ["running_mean", "running_var"]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True,
                 track_running_stats: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = mx.ones((num_features,))
            self.bias = mx.zeros((num_features,))
        if track_running_stats:
            self.running_mean = mx.zeros((num_features,))
            self.running_var = mx.ones((num_features,))
            self.freeze(keys=self._STATS)

    def unfreeze(self, *args: Any, **kwargs: Any) -> Module:
        """Unfreezes parameters as :meth:`Module.unfreeze` does, except the
        running statistics, which stay frozen.

        Args:
            *args: passed to :meth:`Module.unfreeze`.
            **kwargs: passed to :meth:`Module.unfreeze`.

        Returns:
            Module: the module.
        """
        super().unfreeze(*args, **kwargs)
        if self.track_running_stats:
            self.freeze(recurse=False, keys=self._STATS)
        return self

    def _extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={'weight' in self}, "
                f"track_running_stats={self.track_running_stats}")

    def _batch_stats(self, x: mx.array) -> Tuple[mx.array, mx.array]:
        axes = tuple(range(x.ndim - 1))
        return mx.mean(x, axis=axes), mx.var(x, axis=axes)

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim < 2 or x.ndim > 4:
            raise ValueError(f"Expected input tensor to have 2, 3 or 4 dimensions, but got {x.ndim}")
        if "weight" in self or self.track_running_stats:
            _check_features("BatchNorm", x, self.num_features, min_ndim=2)
        n = x.size // x.shape[-1] if x.shape[-1] else 0
        if self.training and n <= 1:
            raise ValueError("BatchNorm training requires more than one value per channel.")
        if self.training or not self.track_running_stats:
            mean, var = self._batch_stats(x)
            if self.training and self.track_running_stats:
                mu = self.momentum
                self.running_mean = (1 - mu) * self.running_mean + mu * mean
                self.running_var = (1 - mu) * self.running_var + mu * var * (n / (n - 1))
        else:
            mean, var = self.running_mean, self.running_var
        x = (x - mean) * mx.rsqrt(var + self.eps)
        if "weight" in self:
            x = self["weight"] * x + self["bias"]
        return x
