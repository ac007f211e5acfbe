"""Optimizers: update rules applied leaf by leaf over a tree of parameters.

An optimizer's state is a pytree: ``step`` (a uint64 array counting the
updates), each hyperparameter that may follow a schedule (``learning_rate``,
as a float32 array unless set otherwise), and, at every parameter's position
in the parameter tree, a dict of that parameter's buffers (``{"m": ..., "v":
...}`` for Adam). The buffers are created lazily, from the first gradients
an optimizer sees (so they take the gradients' dtypes), or by :meth:`init`.
``opt.state`` can be saved and assigned to a fresh optimizer to resume.
"""

import math
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .. import core as mx
from ..utils import _compiled_on_arrays, tree_flatten, tree_map

__all__ = [
    "Optimizer", "MultiOptimizer", "SGD", "RMSprop", "Adagrad", "AdaDelta", "Adam", "AdamW",
    "Adamax", "Lion", "Adafactor", "Muon", "clip_grad_norm",
]

_NODES = (dict, list, tuple)


def _kind(x: Any) -> str:
    if isinstance(x, dict):
        return "a dict"
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__}"
    if isinstance(x, mx.array):
        return "an array"
    return f"a {type(x).__name__}"


def _join(path: str, key: Union[str, int]) -> str:
    return f"{path}.{key}" if path else str(key)


def _rebuild(like: Union[list, tuple], items: List[Any]) -> Union[list, tuple]:
    if isinstance(like, tuple) and hasattr(type(like), "_fields"):
        return type(like)(*items)
    return type(like)(items)


def _state_skeleton(params: Any, state: Any, path: str = "") -> Any:
    """The state subtree for ``params``: what ``state`` already holds is
    kept, every position it lacks gets empty per-leaf dicts."""
    if isinstance(params, dict):
        out = state if isinstance(state, dict) else {}
        for k, v in params.items():
            out[k] = _state_skeleton(v, out.get(k), _join(path, k))
        return out
    if isinstance(params, (list, tuple)):
        old = list(state) if isinstance(state, (list, tuple)) else []
        new = [_state_skeleton(p, old[i] if i < len(old) else None, _join(path, i))
               for i, p in enumerate(params)]
        return _rebuild(params, new)
    if not isinstance(params, mx.array):
        raise TypeError(f"[Optimizer.init] The parameter at '{path}' is {_kind(params)}; "
                        "parameters must be arrays.")
    return state if isinstance(state, dict) else {}


def _leaves_with_state(params: Any, state: Any) -> Iterator[Tuple[mx.array, Dict[str, Any]]]:
    """Pairs (parameter, its state dict) in tree order."""
    stack = [(params, state)]
    while stack:
        p, s = stack.pop()
        if isinstance(p, dict):
            stack.extend((p[k], s[k]) for k in reversed(list(p)))
        elif isinstance(p, (list, tuple)):
            stack.extend((p[i], s[i]) for i in reversed(range(len(p))))
        else:
            yield p, s


class Optimizer:
    """The base class of the optimizers.

    A subclass defines ``init_single(parameter, state)``, which fills the
    (empty) state dict of one parameter, and ``apply_single(gradient,
    parameter, state)``, which returns the updated parameter and updates
    ``state`` in place; the base class maps them over trees.

    Args:
        schedulers (dict, optional): hyperparameter name -> schedule
            (a callable of the step), evaluated before every update into
            ``state[name]``. Default: None.
    """

    def __init__(self, schedulers: Optional[Dict[str, Callable[[mx.array], mx.array]]] = None) -> None:
        self._initialized = False
        self._state = {"step": mx.array(0, mx.uint64)}
        self._schedulers = dict(schedulers or {})

    # -- the public API --------------------------------------------------

    def update(self, model: Any, gradients: Any) -> None:
        """Applies the gradients to a model's parameters, in place.

        Args:
            model (Module): the model; its parameters are read as the tree it
                is (an ``nn.Module`` is a dict of its parameters and
                submodules) and written back with ``model.update``.
            gradients (dict): the gradients, a tree shaped like (part of) the
                model's parameters; only the parameters it holds change.

        Returns:
            None
        """
        model.update(self.apply_gradients(gradients, model))

    def init(self, parameters: Any) -> None:
        """Creates the state of the parameters that have none yet.

        Optional: the first :meth:`apply_gradients` initialises the state
        from the gradients. State already present (set from a checkpoint,
        say) is kept.

        Args:
            parameters (dict): a tree of arrays.

        Returns:
            None
        """
        _state_skeleton(parameters, self._state)
        for p, s in _leaves_with_state(parameters, self._state):
            if not s:
                self.init_single(p, s)
        self._initialized = True

    def init_single(self, parameter: mx.array, state: Dict[str, Any]) -> None:
        """Fills the empty state dict of one parameter."""
        raise NotImplementedError(f"[{type(self).__name__}] init_single is not implemented.")

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: Dict[str, Any]) -> mx.array:
        """Returns the updated parameter, updating its state dict in place."""
        raise NotImplementedError(f"[{type(self).__name__}] apply_single is not implemented.")

    def apply_gradients(self, gradients: Any, parameters: Any) -> Any:
        """Returns the parameters after one update with the gradients.

        The first call creates the state (from the gradients, unless
        :meth:`init` ran). Each call evaluates the schedules at the current
        step, then increments ``step``, then updates every parameter that
        has a gradient.

        Args:
            gradients (dict): a tree of arrays; each leaf must sit where
                ``parameters`` has an array of the same shape.
            parameters (dict): the tree of the parameters (it may hold more
                than the gradients).

        Returns:
            dict: the updated parameters, shaped like ``gradients``.
        """
        if not self._initialized:
            self.init(gradients)
        for name, schedule in self._schedulers.items():
            self.state[name] = self._scheduled_value(name, schedule)
        if "step" not in self.state:
            raise KeyError(f"[{type(self).__name__}] The optimizer state has no 'step' "
                           "(a state assigned to .state must come from an optimizer's .state).")
        self.state["step"] = self.step + 1
        return self._apply_tree(gradients, parameters, self.state, "")

    @property
    def state(self) -> Any:
        """The optimizer's state, a tree (dicts and lists) of arrays.

        Assigning a state (one read from another optimizer of the same kind,
        say from a checkpoint) replaces it; the next update creates the
        state only of the parameters it lacks.
        """
        return self._state

    @state.setter
    def state(self, state: Any) -> None:
        self._initialized = False
        self._state = state

    @property
    def step(self) -> mx.array:
        """The number of updates made so far (a uint64 array)."""
        return self.state["step"]

    @property
    def learning_rate(self) -> mx.array:
        """The learning rate (an array). With a schedule, it holds the value
        the last update used; assigning a value lasts until the next update
        evaluates the schedule again."""
        return self.state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]) -> None:
        self.state["learning_rate"] = mx.array(learning_rate)

    # -- helpers for subclasses ------------------------------------------

    def _maybe_schedule(self, name: str, param: Union[float, mx.array, Callable]) -> None:
        """Keeps ``param`` as a schedule if it is callable and stores its
        current value (or ``param`` itself, as an array) in the state."""
        if callable(param):
            self._schedulers[name] = param
            value = self._scheduled_value(name, param)
        else:
            value = mx.array(param)
        self.state[name] = value

    def _scheduled_value(self, name: str, schedule: Callable) -> mx.array:
        value = schedule(self.step)
        if not isinstance(value, mx.array):
            raise TypeError(f"[{type(self).__name__}] The {name} schedule returned "
                            f"{type(value).__name__}; a schedule must return an array "
                            "(e.g. mx.array(0.1) or an expression of the step array).")
        return value

    def _apply_tree(self, g: Any, p: Any, s: Any, path: str) -> Any:
        if isinstance(g, _NODES) and len(g) == 0:
            return g  # nothing to update here (MultiOptimizer fills gaps with {})
        if isinstance(g, dict):
            if not isinstance(p, dict):
                raise ValueError(f"[{type(self).__name__}] The gradient at '{path or '<root>'}' is a dict "
                                 f"but the parameter is {_kind(p)}.")
            out = {}
            for k, gk in g.items():
                where = _join(path, k)
                if k not in p:
                    raise KeyError(f"[{type(self).__name__}] The gradient '{where}' has no parameter.")
                if not isinstance(s, dict) or k not in s:
                    raise KeyError(f"[{type(self).__name__}] There is no optimizer state for '{where}' "
                                   "(init() ran on parameters without it).")
                out[k] = self._apply_tree(gk, p[k], s[k], where)
            return out
        if isinstance(g, (list, tuple)):
            if not isinstance(p, (list, tuple)):
                raise ValueError(f"[{type(self).__name__}] The gradient at '{path or '<root>'}' is "
                                 f"{_kind(g)} but the parameter is {_kind(p)}.")
            if len(g) > len(p):
                raise IndexError(f"[{type(self).__name__}] The gradient at '{path or '<root>'}' has "
                                 f"{len(g)} entries but the parameter only {len(p)}.")
            if not isinstance(s, (list, tuple)) or len(s) < len(g):
                raise IndexError(f"[{type(self).__name__}] The optimizer state at '{path or '<root>'}' "
                                 f"has fewer than {len(g)} entries.")
            return _rebuild(g, [self._apply_tree(g[i], p[i], s[i], _join(path, i)) for i in range(len(g))])
        if not isinstance(g, mx.array):
            raise TypeError(f"[{type(self).__name__}] The gradient at '{path}' is {_kind(g)}, not an array.")
        if not isinstance(p, mx.array):
            raise ValueError(f"[{type(self).__name__}] The gradient at '{path}' is an array but the "
                             f"parameter is {_kind(p)}.")
        if tuple(g.shape) != tuple(p.shape):
            raise ValueError(f"[{type(self).__name__}] The gradient at '{path}' has shape "
                             f"{tuple(g.shape)} but the parameter has shape {tuple(p.shape)}.")
        return self.apply_single(g, p, s)


def _check(cls: str, name: str, ok: bool, value: Any, rule: str) -> None:
    if not ok:
        raise ValueError(f"[{cls}] {name} must be {rule}, got {value}.")


def _check_betas(cls: str, betas: Sequence[float]) -> None:
    for i, b in enumerate(betas):
        _check(cls, f"beta{i + 1}", 0.0 <= b < 1.0, b, "in [0, 1)")


def _lr(opt: "Optimizer", gradient: mx.array) -> mx.array:
    return opt.learning_rate.astype(gradient.dtype)


class SGD(Optimizer):
    r"""Stochastic gradient descent, with optional momentum.

    With weight decay :math:`\lambda_w` the gradient is first
    :math:`g + \lambda_w w`. Then, with momentum :math:`\mu > 0` and
    dampening :math:`\tau`:

    .. math::

        v_{t+1} = \mu v_t + (1 - \tau) g_t, \quad
        w_{t+1} = w_t - \lambda \, (g_t + \mu v_{t+1} \text{ if nesterov else } v_{t+1})

    and without momentum :math:`w_{t+1} = w_t - \lambda g_t`. The buffer
    starts at zero.

    Args:
        learning_rate (float or callable): the learning rate :math:`\lambda`.
        momentum (float, optional): :math:`\mu`. Default: ``0.0``.
        weight_decay (float, optional): the L2 penalty :math:`\lambda_w`.
            Default: ``0.0``.
        dampening (float, optional): :math:`\tau`. Default: ``0.0``.
        nesterov (bool, optional): Nesterov momentum (needs ``momentum > 0``
            and ``dampening == 0``, ValueError). Default: ``False``.
    """

    def __init__(self, learning_rate: Union[float, Callable], momentum: float = 0.0,
                 weight_decay: float = 0.0, dampening: float = 0.0, nesterov: bool = False) -> None:
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("[SGD] Nesterov momentum requires a momentum and zero dampening.")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.dampening = dampening
        self.nesterov = nesterov

    def init_single(self, parameter: mx.array, state: Dict[str, Any]) -> None:
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: Dict[str, Any]) -> mx.array:
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        lr = _lr(self, gradient)
        if self.momentum <= 0:
            return parameter - lr * gradient
        v = self.momentum * state["v"] + (1 - self.dampening) * gradient
        state["v"] = v
        step = gradient + self.momentum * v if self.nesterov else v
        return parameter - lr * step


class RMSprop(Optimizer):
    r"""RMSprop (Tieleman and Hinton, 2012).

    .. math::

        v_{t+1} = \alpha v_t + (1 - \alpha) g_t^2, \quad
        w_{t+1} = w_t - \lambda \frac{g_t}{\sqrt{v_{t+1}} + \epsilon}

    Args:
        learning_rate (float or callable): the learning rate :math:`\lambda`.
        alpha (float, optional): the smoothing constant; not negative
            (ValueError). Default: ``0.99``.
        eps (float, optional): :math:`\epsilon`; positive (ValueError).
            Default: ``1e-8``.
    """

    def __init__(self, learning_rate: Union[float, Callable], alpha: float = 0.99, eps: float = 1e-8) -> None:
        _check("RMSprop", "alpha", alpha >= 0.0, alpha, ">= 0")
        _check("RMSprop", "eps", eps > 0.0, eps, "> 0")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.alpha = alpha
        self.eps = eps

    def init_single(self, parameter: mx.array, state: Dict[str, Any]) -> None:
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: Dict[str, Any]) -> mx.array:
        v = self.alpha * state["v"] + (1 - self.alpha) * mx.square(gradient)
        state["v"] = v
        return parameter - _lr(self, gradient) * gradient / (mx.sqrt(v) + self.eps)


class Adagrad(Optimizer):
    r"""Adagrad (Duchi, Hazan and Singer, 2011).

    .. math::

        v_{t+1} = v_t + g_t^2, \quad
        w_{t+1} = w_t - \lambda \frac{g_t}{\sqrt{v_{t+1}} + \epsilon}

    Args:
        learning_rate (float or callable): the learning rate :math:`\lambda`.
        eps (float, optional): :math:`\epsilon`; positive (ValueError).
            Default: ``1e-8``.
    """

    def __init__(self, learning_rate: Union[float, Callable], eps: float = 1e-8) -> None:
        _check("Adagrad", "eps", eps > 0.0, eps, "> 0")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps

    def init_single(self, parameter: mx.array, state: Dict[str, Any]) -> None:
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: Dict[str, Any]) -> mx.array:
        v = state["v"] + mx.square(gradient)
        state["v"] = v
        return parameter - _lr(self, gradient) * gradient / (mx.sqrt(v) + self.eps)


class AdaDelta(Optimizer):
    r"""AdaDelta (Zeiler, 2012), with a learning rate.

    .. math::

        v_{t+1} &= \rho v_t + (1 - \rho) g_t^2 \\
        \Delta_{t+1} &= \frac{\sqrt{u_t + \epsilon}}{\sqrt{v_{t+1} + \epsilon}} g_t \\
        u_{t+1} &= \rho u_t + (1 - \rho) \Delta_{t+1}^2 \\
        w_{t+1} &= w_t - \lambda \Delta_{t+1}

    Args:
        learning_rate (float or callable): the learning rate :math:`\lambda`.
        rho (float, optional): :math:`\rho`; not negative (ValueError).
            Default: ``0.9``.
        eps (float, optional): :math:`\epsilon`; positive (ValueError).
            Default: ``1e-6``.
    """

    def __init__(self, learning_rate: Union[float, Callable], rho: float = 0.9, eps: float = 1e-6) -> None:
        _check("AdaDelta", "rho", rho >= 0.0, rho, ">= 0")
        _check("AdaDelta", "eps", eps > 0.0, eps, "> 0")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.rho = rho
        self.eps = eps

    def init_single(self, parameter: mx.array, state: Dict[str, Any]) -> None:
        state["v"] = mx.zeros_like(parameter)
        state["u"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: Dict[str, Any]) -> mx.array:
        rho, eps = self.rho, self.eps
        v = rho * state["v"] + (1 - rho) * mx.square(gradient)
        delta = mx.sqrt(state["u"] + eps) / mx.sqrt(v + eps) * gradient
        state["v"] = v
        state["u"] = rho * state["u"] + (1 - rho) * mx.square(delta)
        return parameter - _lr(self, gradient) * delta


def _adam_math(gradient, parameter, m, v, keep, scale_m, scale_v, b1, b2, eps):
    """One Adam step of one parameter: (parameter, m, v) updated. keep: a
    decay factor of the parameter (AdamW), or None; scale_v: the second
    moment's bias correction, or None (scale_m is then the learning rate)."""
    if keep is not None:
        parameter = parameter * keep
    m = b1 * m + (1 - b1) * gradient
    v = b2 * v + (1 - b2) * mx.square(gradient)
    if scale_v is None:
        return parameter - scale_m * m / (mx.sqrt(v) + eps), m, v
    return parameter - scale_m * m / (mx.sqrt(v) * scale_v + eps), m, v


# the step as one kernel per parameter (a dozen passes over memory
# otherwise): compiled shapeless, the betas and eps static; inside a compiled
# training step it is inlined and fused with the rest
_adam_fused = _compiled_on_arrays(_adam_math)


class Adam(Optimizer):
    r"""Adam (Kingma and Ba, 2015).

    .. math::

        m_{t+1} &= \beta_1 m_t + (1 - \beta_1) g_t \\
        v_{t+1} &= \beta_2 v_t + (1 - \beta_2) g_t^2 \\
        w_{t+1} &= w_t - \lambda \frac{m_{t+1}}{\sqrt{v_{t+1}} + \epsilon}

    With ``bias_correction``, :math:`m_{t+1}` and :math:`v_{t+1}` are
    divided by :math:`1 - \beta_1^{t+1}` and :math:`1 - \beta_2^{t+1}` first.

    Args:
        learning_rate (float or callable): the learning rate :math:`\lambda`.
        betas (Tuple[float, float], optional): :math:`(\beta_1, \beta_2)`,
            each in [0, 1) (ValueError). Default: ``(0.9, 0.999)``.
        eps (float, optional): :math:`\epsilon`; not negative (ValueError).
            Default: ``1e-8``.
        bias_correction (bool, optional): divide out the moments' bias
            towards zero. Default: ``False``.
    """

    def __init__(self, learning_rate: Union[float, Callable], betas: List[float] = [0.9, 0.999],
                 eps: float = 1e-8, bias_correction: bool = False) -> None:
        _check_betas(type(self).__name__, betas)
        _check(type(self).__name__, "eps", eps >= 0.0, eps, ">= 0")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.eps = eps
        self.bias_correction = bias_correction

    def init_single(self, parameter: mx.array, state: Dict[str, Any]) -> None:
        state["m"] = mx.zeros_like(parameter)
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: Dict[str, Any]) -> mx.array:
        return self._adam_step(gradient, parameter, state, None)

    def _adam_step(self, gradient, parameter, state, keep):
        # keep: AdamW's decay factor 1 - lr * wd (None: no decay)
        b1, b2 = self.betas
        lr = _lr(self, gradient)
        scale_m, scale_v = lr, None
        if self.bias_correction:
            t = self.step
            scale_m = (lr / (1 - b1 ** t)).astype(gradient.dtype)
            scale_v = mx.rsqrt(1 - b2 ** t).astype(gradient.dtype)
        new, state["m"], state["v"] = _adam_fused(gradient, parameter, state["m"], state["v"], keep, scale_m, scale_v,
                                                  b1, b2, self.eps)
        return new


class AdamW(Adam):
    r"""AdamW (Loshchilov and Hutter, 2019): Adam with decoupled weight decay.

    The parameter is first shrunk to :math:`w_t (1 - \lambda \lambda_w)`,
    then updated by :class:`Adam`'s rule.

    Args:
        learning_rate (float or callable): the learning rate :math:`\lambda`.
        betas (Tuple[float, float], optional): :math:`(\beta_1, \beta_2)`.
            Default: ``(0.9, 0.999)``.
        eps (float, optional): :math:`\epsilon`. Default: ``1e-8``.
        weight_decay (float, optional): :math:`\lambda_w`. Default: ``0.01``.
        bias_correction (bool, optional): as in :class:`Adam`.
            Default: ``False``.
    """

    def __init__(self, learning_rate: Union[float, Callable], betas: List[float] = [0.9, 0.999],
                 eps: float = 1e-8, weight_decay: float = 0.01, bias_correction: bool = False) -> None:
        super().__init__(learning_rate=learning_rate, betas=betas, eps=eps,
                         bias_correction=bias_correction)
        self.weight_decay = weight_decay

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: Dict[str, Any]) -> mx.array:
        lr = _lr(self, gradient)
        return self._adam_step(gradient, parameter, state, 1 - lr * self.weight_decay)


class Adamax(Adam):
    r"""Adamax (Kingma and Ba, 2015), Adam with the infinity norm.

    .. math::

        m_{t+1} &= \beta_1 m_t + (1 - \beta_1) g_t \\
        v_{t+1} &= \max(\beta_2 v_t, |g_t|) \\
        w_{t+1} &= w_t - \lambda \frac{m_{t+1}}{v_{t+1} + \epsilon}

    Args:
        learning_rate (float or callable): the learning rate :math:`\lambda`.
        betas (Tuple[float, float], optional): :math:`(\beta_1, \beta_2)`,
            each in [0, 1) (ValueError). Default: ``(0.9, 0.999)``.
        eps (float, optional): :math:`\epsilon`; not negative (ValueError).
            Default: ``1e-8``.
    """

    def __init__(self, learning_rate: Union[float, Callable], betas: List[float] = [0.9, 0.999],
                 eps: float = 1e-8) -> None:
        super().__init__(learning_rate, betas, eps)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: Dict[str, Any]) -> mx.array:
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = mx.maximum(b2 * state["v"], mx.abs(gradient))
        state["m"] = m
        state["v"] = v
        return parameter - _lr(self, gradient) * m / (v + self.eps)


class Lion(Optimizer):
    r"""Lion (Chen et al., 2023): the sign of an interpolated momentum.

    .. math::

        c_{t+1} &= \beta_1 m_t + (1 - \beta_1) g_t \\
        m_{t+1} &= \beta_2 m_t + (1 - \beta_2) g_t \\
        w_{t+1} &= w_t (1 - \eta \lambda) - \eta \, \text{sign}(c_{t+1})

    Args:
        learning_rate (float or callable): the learning rate :math:`\eta`.
        betas (Tuple[float, float], optional): :math:`(\beta_1, \beta_2)`,
            each in [0, 1) (ValueError). Default: ``(0.9, 0.99)``.
        weight_decay (float, optional): :math:`\lambda`. Default: ``0.0``.
    """

    def __init__(self, learning_rate: Union[float, Callable], betas: List[float] = [0.9, 0.99],
                 weight_decay: float = 0.0) -> None:
        _check_betas("Lion", betas)
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.weight_decay = weight_decay

    def init_single(self, parameter: mx.array, state: Dict[str, Any]) -> None:
        state["m"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: Dict[str, Any]) -> mx.array:
        b1, b2 = self.betas
        m = state["m"]
        c = b1 * m + (1 - b1) * gradient
        state["m"] = b2 * m + (1 - b2) * gradient
        lr = _lr(self, gradient)
        if self.weight_decay > 0:
            parameter = (1 - lr * self.weight_decay) * parameter
        return parameter - lr * mx.sign(c)


class Adafactor(Optimizer):
    r"""Adafactor (Shazeer and Stern, 2018): factored second moments.

    For a parameter of two or more dimensions the running mean of
    :math:`g^2 + \epsilon_1` is kept as its row means (``exp_avg_sq_row``,
    the last axis averaged) and column means (``exp_avg_sq_col``, the
    second-to-last axis averaged), whose outer product over the mean of the
    rows estimates it; other parameters keep it whole (``exp_avg_sq``). The
    decay at step :math:`t` is :math:`\hat\beta_2 = 1 - t^{c}` (``c`` the
    ``decay_rate``). The update :math:`g / \sqrt{\hat v}` is scaled down to
    an RMS of at most ``clip_threshold``, then multiplied by the step size:
    ``learning_rate``, or with ``relative_step``
    :math:`\min(10^{-2}, 1/\sqrt t)` (:math:`\min(10^{-6} t, 1/\sqrt t)` with
    ``warmup_init``), times :math:`\max(\epsilon_2, \text{RMS}(w))` with
    ``scale_parameter``. With ``beta_1`` the update is averaged
    (``exp_avg``); weight decay shrinks :math:`w` by the step size times
    ``weight_decay``.

    Args:
        learning_rate (float or callable, optional): the step size when
            ``relative_step`` is False (required then: KeyError at the first
            update without it). Default: ``None``.
        eps (tuple(float, float), optional): :math:`(\epsilon_1, \epsilon_2)`.
            Default: ``(1e-30, 1e-3)``.
        clip_threshold (float, optional): the largest RMS of the unscaled
            update. Default: ``1.0``.
        decay_rate (float, optional): :math:`c`. Default: ``-0.8``.
        beta_1 (float, optional): the first-moment coefficient; None keeps no
            first moment. Default: ``None``.
        weight_decay (float, optional): Default: ``0.0``.
        scale_parameter (bool, optional): scale the step by the parameter's
            RMS. Default: ``True``.
        relative_step (bool, optional): compute the step size from the step
            count, ignoring ``learning_rate``. Default: ``True``.
        warmup_init (bool, optional): a relative step that grows with the
            step count. Default: ``False``.
    """

    def __init__(self, learning_rate: Union[float, Callable, None] = None,
                 eps: Tuple[float, float] = (1e-30, 1e-3), clip_threshold: float = 1.0,
                 decay_rate: float = -0.8, beta_1: Optional[float] = None, weight_decay: float = 0.0,
                 scale_parameter: bool = True, relative_step: bool = True, warmup_init: bool = False) -> None:
        super().__init__()
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps
        self.clip_threshold = clip_threshold
        self.decay_rate = decay_rate
        self.beta_1 = beta_1
        self.weight_decay = weight_decay
        self.scale_parameter = scale_parameter
        self.relative_step = relative_step
        self.warmup_init = warmup_init

    def init_single(self, parameter: mx.array, state: Dict[str, Any]) -> None:
        shape = tuple(parameter.shape)
        if len(shape) >= 2:
            state["exp_avg_sq_row"] = mx.zeros(shape[:-1], dtype=parameter.dtype)
            state["exp_avg_sq_col"] = mx.zeros(shape[:-2] + shape[-1:], dtype=parameter.dtype)
        else:
            state["exp_avg_sq"] = mx.zeros_like(parameter)
        if self.beta_1 is not None:
            state["exp_avg"] = mx.zeros_like(parameter)

    @staticmethod
    def _rms(x: mx.array) -> mx.array:
        return mx.sqrt(mx.mean(mx.square(x)))

    def _step_size(self, t: mx.array, parameter: mx.array, dtype: mx.Dtype) -> mx.array:
        if self.relative_step:
            floor = 1e-6 * t if self.warmup_init else 1e-2
            size = mx.minimum(floor, mx.rsqrt(t.astype(mx.float32))).astype(dtype)
        else:
            if "learning_rate" not in self.state:
                raise KeyError("[Adafactor] No learning_rate: give one, or use relative_step=True.")
            size = self.learning_rate.astype(dtype)
        if self.scale_parameter:
            size = mx.maximum(self.eps[1], self._rms(parameter)) * size
        return size.astype(dtype)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: Dict[str, Any]) -> mx.array:
        dtype = gradient.dtype
        t = self.step
        step_size = self._step_size(t, parameter, dtype)
        beta_2 = (1.0 - t.astype(mx.float32) ** self.decay_rate).astype(dtype)
        sq = mx.square(gradient) + self.eps[0]
        if gradient.ndim >= 2:
            row = beta_2 * state["exp_avg_sq_row"] + (1 - beta_2) * mx.mean(sq, axis=-1)
            col = beta_2 * state["exp_avg_sq_col"] + (1 - beta_2) * mx.mean(sq, axis=-2)
            state["exp_avg_sq_row"] = row
            state["exp_avg_sq_col"] = col
            row_factor = mx.rsqrt(row / mx.mean(row, axis=-1, keepdims=True))
            col_factor = mx.rsqrt(col)
            update = mx.expand_dims(row_factor, -1) * mx.expand_dims(col_factor, -2) * gradient
        else:
            v = beta_2 * state["exp_avg_sq"] + (1 - beta_2) * sq
            state["exp_avg_sq"] = v
            update = mx.rsqrt(v) * gradient
        update = update / mx.maximum(1.0, self._rms(update) / self.clip_threshold)
        update = step_size * update
        if self.beta_1 is not None:
            update = self.beta_1 * state["exp_avg"] + (1 - self.beta_1) * update
            state["exp_avg"] = update
        if self.weight_decay != 0:
            parameter = parameter - (self.weight_decay * step_size) * parameter
        return parameter - update


def _orthogonalize(x: mx.array, steps: int) -> mx.array:
    """The Newton-Schulz quintic iteration of Muon: approximately U V^T for
    x = U S V^T, computed on the wide orientation of the matrix."""
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = x.shape[-2] > x.shape[-1]
    if tall:
        x = mx.swapaxes(x, -1, -2)
    x = x / (mx.linalg.norm(x) + 1e-7)
    for _ in range(steps):
        gram = x @ mx.swapaxes(x, -1, -2)
        poly = b * gram + c * (gram @ gram)
        x = a * x + poly @ x
    if tall:
        x = mx.swapaxes(x, -1, -2)
    return x


class Muon(Optimizer):
    r"""Muon (Jordan et al., 2024): momentum orthogonalized by Newton-Schulz.

    With weight decay the gradient is first :math:`g + \lambda_w w`; the
    momentum is :math:`v_{t+1} = \mu v_t + (1 - \mu) g_t` and the direction
    :math:`(1 - \mu) g_t + \mu v_{t+1}` with ``nesterov``, else
    :math:`v_{t+1}`. For a parameter of two or more dimensions the direction,
    seen as a matrix of ``shape[0]`` rows, is replaced by its
    orthogonalization (``ns_steps`` Newton-Schulz iterations) and the
    learning rate scaled by :math:`\sqrt{\max(1, n_{-2}/n_{-1})}`, the
    ratio of the parameter's last two dimensions (as MLX).
    Other parameters take the plain momentum step (they are better left to
    another optimizer, see :class:`MultiOptimizer`).

    Args:
        learning_rate (float or callable): the learning rate.
        momentum (float, optional): :math:`\mu`. Default: ``0.95``.
        weight_decay (float, optional): :math:`\lambda_w`. Default: ``0.01``.
        nesterov (bool, optional): Nesterov momentum. Default: ``True``.
        ns_steps (int, optional): Newton-Schulz iterations. Default: ``5``.
    """

    def __init__(self, learning_rate: Union[float, Callable], momentum: float = 0.95,
                 weight_decay: float = 0.01, nesterov: bool = True, ns_steps: int = 5) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.ns_steps = ns_steps

    def init_single(self, parameter: mx.array, state: Dict[str, Any]) -> None:
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: Dict[str, Any]) -> mx.array:
        mu = self.momentum
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        v = mu * state["v"] + (1 - mu) * gradient
        state["v"] = v
        direction = (1 - mu) * gradient + mu * v if self.nesterov else v
        lr = _lr(self, gradient)
        if direction.ndim >= 2:
            shape = tuple(direction.shape)
            matrix = mx.reshape(direction, (shape[0], -1))
            direction = mx.reshape(_orthogonalize(matrix, self.ns_steps), shape)
            lr = lr * math.sqrt(max(1.0, shape[-2] / shape[-1]))
        return parameter - lr * direction


def _merge(a: Any, b: Any) -> Any:
    """Overlays two trees of disjoint leaves; ``{}`` (or a missing list
    tail) is a gap the other tree fills."""
    if isinstance(a, _NODES) and len(a) == 0:
        return b
    if isinstance(b, _NODES) and len(b) == 0:
        return a
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = _merge(a[k], v) if k in a else v
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        n = max(len(a), len(b))
        return [_merge(a[i] if i < len(a) else {}, b[i] if i < len(b) else {}) for i in range(n)]
    raise ValueError("[MultiOptimizer] Two optimizers updated the same parameter.")


class MultiOptimizer(Optimizer):
    """Several optimizers, each updating the parameters its filter selects.

    A filter is called as ``filter(path, array)`` with the parameter's dotted
    path (``"layers.0.weight"``); a parameter goes to the first optimizer
    whose filter accepts it, and to the last optimizer, which has no filter,
    otherwise. The state is ``{"states": [each optimizer's state]}``.

    Args:
        optimizers (list of Optimizer): the optimizers.
        filters (list of Callable): one fewer than ``optimizers``
            (ValueError otherwise). Default: ``[]``.
    """

    def __init__(self, optimizers: Sequence["Optimizer"],
                 filters: Sequence[Callable[[str, mx.array], bool]] = []) -> None:
        super().__init__()
        self._state = {}
        if len(filters) != len(optimizers) - 1:
            raise ValueError(f"[MultiOptimizer] Given {len(filters)} filters but "
                             f"{len(optimizers) - 1} needed.")
        self.optimizers = list(optimizers)
        self.filters = list(filters) + [lambda path, array: True]

    def _split(self, tree: Any) -> List[Any]:
        """One tree per optimizer holding the leaves its filter selects
        first: dicts keep only the keys with something selected, lists keep
        positions up to the last selected one, with ``{}`` in the gaps."""
        owner = {}
        for path, leaf in tree_flatten(tree):
            owner[path] = next(i for i, accept in enumerate(self.filters) if accept(path, leaf))

        def select(t: Any, path: str, i: int) -> Any:
            if isinstance(t, dict):
                kept = {}
                for k, v in t.items():
                    sub = select(v, _join(path, k), i)
                    if sub is not None:
                        kept[k] = sub
                return kept or None
            if isinstance(t, (list, tuple)):
                subs = [select(v, _join(path, j), i) for j, v in enumerate(t)]
                while subs and subs[-1] is None:
                    subs.pop()
                return [{} if sub is None else sub for sub in subs] or None
            return t if owner.get(path) == i else None

        parts = [select(tree, "", i) for i in range(len(self.optimizers))]
        return [{} if part is None else part for part in parts]

    def init(self, parameters: Any) -> None:
        """Initialises each optimizer on the parameters its filter selects."""
        for opt, part in zip(self.optimizers, self._split(parameters)):
            opt.init(part)

    def apply_gradients(self, gradients: Any, parameters: Any) -> Any:
        """Each optimizer updates the parameters whose gradients it gets.

        Returns:
            dict: the updated parameters, shaped like ``gradients``.
        """
        out: Any = {}
        for opt, part in zip(self.optimizers, self._split(gradients)):
            out = _merge(out, opt.apply_gradients(part, parameters))
        return out

    @property
    def state(self) -> Any:
        """``{"states": [the state of each optimizer]}``."""
        return {"states": [opt.state for opt in self.optimizers]}

    @state.setter
    def state(self, state: Any) -> None:
        if "states" not in state or len(state["states"]) != len(self.optimizers):
            raise ValueError("[MultiOptimizer] Invalid state: expected {'states': [...]} with one "
                             f"state per optimizer ({len(self.optimizers)}).")
        for opt, s in zip(self.optimizers, state["states"]):
            opt.state = s

    @property
    def step(self) -> mx.array:
        """The first optimizer's step count."""
        return self.optimizers[0].step

    @property
    def learning_rate(self) -> mx.array:
        """The first optimizer's learning rate."""
        return self.optimizers[0].learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]) -> None:
        self.optimizers[0].learning_rate = learning_rate


def clip_grad_norm(grads: Any, max_norm: float) -> Tuple[Any, mx.array]:
    """Scales a tree of gradients down to a global L2 norm of at most
    ``max_norm``.

    The global norm is the square root of the sum of every gradient's
    squared entries, computed in the promoted dtype of the gradients. When it
    exceeds ``max_norm`` every gradient is multiplied by ``max_norm /
    (norm + 1e-6)``; each keeps its dtype (integer gradients become
    float32).

    Args:
        grads (dict): a tree of gradient arrays.
        max_norm (float): the largest global norm allowed.

    Returns:
        (dict, array): the (possibly) rescaled gradients and the global norm
        before clipping.

    Example:
        >>> clipped, norm = clip_grad_norm({"w": mx.array([3.0, 4.0])}, 1.0)
        >>> norm
        array(5, dtype=float32)
    """
    leaves = [g for _, g in tree_flatten(grads)]
    if not leaves:
        return grads, mx.array(0.0)
    total: Optional[mx.array] = None
    for g in leaves:
        part = mx.sum(mx.square(g))
        total = part if total is None else total + part
    assert total is not None
    norm = mx.sqrt(total)
    factor = mx.minimum(max_norm / (norm + 1e-6), 1.0)

    def scale(g: mx.array) -> mx.array:
        out_dtype = g.dtype if mx.issubdtype(g.dtype, mx.floating) else mx.float32
        return g * factor.astype(out_dtype)

    return tree_map(scale, grads), norm
