"""Recurrent layers: RNN (Elman), GRU and LSTM.

A sequence is ``(N, L, D)`` (any number of leading batch axes) or ``(L,
D)`` unbatched. The input projection of every step is computed at once;
the recurrence then walks the ``L`` steps in Python, so the graph has one
matmul per step. The layers return the hidden state of every step, stacked
on the second-to-last axis.
"""

import math
from typing import Callable, Optional, Tuple

from ember import core as mx
from ember.nn.layers.activations import tanh
from ember.nn.layers.base import Module


def _check_sequence(layer: str, x: mx.array, input_size: int) -> None:
    """``x`` must be ``(..., L, input_size)`` with ``L >= 1``."""
    if x.ndim < 2 or x.shape[-1] != input_size:
        raise ValueError(f"[{layer}] Expected an input of shape (N, L, {input_size}) or (L, {input_size}) "
                         f"but got an array of shape {tuple(x.shape)}.")
    if x.shape[-2] == 0:
        raise ValueError(f"[{layer}] Expected a sequence of at least one step but got an input of shape "
                         f"{tuple(x.shape)}.")


def _broadcasts_to(shape: Tuple[int, ...], target: Tuple[int, ...]) -> bool:
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(shape[::-1], target[::-1]))


def _check_state(layer: str, what: str, state: Optional[mx.array], x: mx.array, hidden_size: int) -> None:
    """An initial state must broadcast to ``x.shape[:-2] + (hidden_size,)``."""
    if state is None:
        return
    want = tuple(x.shape[:-2]) + (hidden_size,)
    if state.ndim < 1 or state.shape[-1] != hidden_size or not _broadcasts_to(tuple(state.shape), want):
        raise ValueError(f"[{layer}] Expected the initial {what} state to have shape {want} for an input of "
                         f"shape {tuple(x.shape)} but got an array of shape {tuple(state.shape)}.")


def _uniform(scale: float, shape: Tuple[int, ...]) -> mx.array:
    return mx.random.uniform(low=-scale, high=scale, shape=shape)


def _project(x: mx.array, weight: mx.array, bias: Optional[mx.array]) -> mx.array:
    """``x @ weight.T (+ bias)`` over every step."""
    if bias is None:
        return x @ weight.T
    return mx.addmm(bias, x, weight.T)


class RNN(Module):
    r"""Elman recurrent layer.

    For each step :math:`t` of the sequence:

    .. math::

        h_{t+1} = \sigma(W_{xh} x_t + W_{hh} h_t + b)

    with :math:`\sigma` the nonlinearity (tanh by default). ``Wxh`` has
    shape ``(hidden_size, input_size)``, ``Whh`` ``(hidden_size,
    hidden_size)`` and ``bias`` ``(hidden_size,)``, all initialised from
    :math:`\mathcal{U}(-k, k)` with :math:`k = 1/\sqrt{\text{hidden\_size}}`.
    Without an initial hidden state the first step sees none (as a zero
    state would).

    Args:
        input_size (int): features of the input, ``D``.
        hidden_size (int): features of the hidden state, ``H``.
        bias (bool): whether to add ``bias``. Default: True.
        nonlinearity (Callable, optional): applied to each pre-activation.
            Default: None, :func:`tanh`.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: Optional[Callable] = None) -> None:
        super().__init__()
        self.nonlinearity = nonlinearity if nonlinearity is not None else tanh
        if not callable(self.nonlinearity):
            raise ValueError(f"[RNN] The nonlinearity must be callable but got {nonlinearity!r}.")
        self.hidden_size = hidden_size
        k = 1.0 / math.sqrt(hidden_size)
        self.Wxh = _uniform(k, (hidden_size, input_size))
        self.Whh = _uniform(k, (hidden_size, hidden_size))
        self.bias = _uniform(k, (hidden_size,)) if bias else None

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wxh.shape[1]}, hidden_size={self.hidden_size}, "
                f"nonlinearity={self.nonlinearity}, bias={'bias' in self}")

    def __call__(self, x: mx.array, hidden: Optional[mx.array] = None) -> mx.array:
        """Runs the recurrence over the sequence.

        Args:
            x (array): the input, ``(N, L, D)`` or ``(L, D)``.
            hidden (array, optional): the initial hidden state, ``(N, H)``
                or ``(H,)``. Default: None, no initial state.

        Returns:
            array: the hidden state of every step, ``(N, L, H)`` or ``(L, H)``.
        """
        _check_sequence("RNN", x, self.Wxh.shape[1])
        _check_state("RNN", "hidden", hidden, x, self.hidden_size)
        xp = _project(x, self["Wxh"], self.get("bias"))
        whh_t = self["Whh"].T
        states = []
        for t in range(x.shape[-2]):
            pre = xp[..., t, :]
            if hidden is not None:
                pre = pre + hidden @ whh_t
            hidden = self.nonlinearity(pre)
            states.append(hidden)
        return mx.stack(states, axis=-2)


class GRU(Module):
    r"""Gated recurrent unit layer.

    For each step :math:`t`, with the reset gate :math:`r`, the update
    gate :math:`z` and the candidate :math:`n`:

    .. math::

        \begin{aligned}
        r_t &= \sigma(W_{xr} x_t + b_r + W_{hr} h_t) \\
        z_t &= \sigma(W_{xz} x_t + b_z + W_{hz} h_t) \\
        n_t &= \tanh(W_{xn} x_t + b_n + r_t \odot (W_{hn} h_t + b_{hn})) \\
        h_{t+1} &= (1 - z_t) \odot n_t + z_t \odot h_t
        \end{aligned}

    ``Wx`` ``(3 * hidden_size, input_size)`` and ``Wh`` ``(3 *
    hidden_size, hidden_size)`` stack the gates in the order r, z, n; ``b``
    ``(3 * hidden_size,)`` is added to the input projections and ``bhn``
    ``(hidden_size,)`` to the hidden projection of the candidate. All are
    initialised from :math:`\mathcal{U}(-k, k)`, :math:`k =
    1/\sqrt{\text{hidden\_size}}`.

    Args:
        input_size (int): features of the input, ``D``.
        hidden_size (int): features of the hidden state, ``H``.
        bias (bool): whether to use ``b`` and ``bhn``. Default: True.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        k = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(k, (3 * hidden_size, input_size))
        self.Wh = _uniform(k, (3 * hidden_size, hidden_size))
        self.b = _uniform(k, (3 * hidden_size,)) if bias else None
        self.bhn = _uniform(k, (hidden_size,)) if bias else None

    def _extra_repr(self) -> str:
        return f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, bias={'b' in self}"

    def __call__(self, x: mx.array, hidden: Optional[mx.array] = None) -> mx.array:
        """Runs the recurrence over the sequence.

        Args:
            x (array): the input, ``(N, L, D)`` or ``(L, D)``.
            hidden (array, optional): the initial hidden state, ``(N, H)``
                or ``(H,)``. Default: None, no initial state.

        Returns:
            array: the hidden state of every step, ``(N, L, H)`` or ``(L, H)``.
        """
        _check_sequence("GRU", x, self.Wx.shape[1])
        _check_state("GRU", "hidden", hidden, x, self.hidden_size)
        H = self.hidden_size
        xp = _project(x, self["Wx"], self.get("b"))
        x_rz, x_n = xp[..., :2 * H], xp[..., 2 * H:]
        wh_t = self["Wh"].T
        bhn = self.get("bhn")
        states = []
        for t in range(x.shape[-2]):
            rz = x_rz[..., t, :]
            if hidden is not None:
                hp = hidden @ wh_t
                rz = rz + hp[..., :2 * H]
                hn = hp[..., 2 * H:]
                if bhn is not None:
                    hn = hn + bhn
            else:
                hn = bhn
            rz = mx.sigmoid(rz)
            r, z = rz[..., :H], rz[..., H:]
            n = x_n[..., t, :]
            if hn is not None:
                n = n + r * hn
            n = mx.tanh(n)
            hidden = (1 - z) * n if hidden is None else (1 - z) * n + z * hidden
            states.append(hidden)
        return mx.stack(states, axis=-2)


class LSTM(Module):
    r"""Long short-term memory layer.

    For each step :math:`t`, with the input, forget, cell and output gates
    :math:`i, f, g, o`:

    .. math::

        \begin{aligned}
        i_t &= \sigma(W_{xi} x_t + W_{hi} h_t + b_i) \\
        f_t &= \sigma(W_{xf} x_t + W_{hf} h_t + b_f) \\
        g_t &= \tanh(W_{xg} x_t + W_{hg} h_t + b_g) \\
        o_t &= \sigma(W_{xo} x_t + W_{ho} h_t + b_o) \\
        c_{t+1} &= f_t \odot c_t + i_t \odot g_t \\
        h_{t+1} &= o_t \odot \tanh(c_{t+1})
        \end{aligned}

    ``Wx`` ``(4 * hidden_size, input_size)``, ``Wh`` ``(4 * hidden_size,
    hidden_size)`` and ``bias`` ``(4 * hidden_size,)`` stack the gates in
    the order i, f, g, o, all initialised from :math:`\mathcal{U}(-k, k)`,
    :math:`k = 1/\sqrt{\text{hidden\_size}}`.

    Args:
        input_size (int): features of the input, ``D``.
        hidden_size (int): features of the hidden and cell states, ``H``.
        bias (bool): whether to add ``bias``. Default: True.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        k = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(k, (4 * hidden_size, input_size))
        self.Wh = _uniform(k, (4 * hidden_size, hidden_size))
        self.bias = _uniform(k, (4 * hidden_size,)) if bias else None

    def _extra_repr(self) -> str:
        return f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, bias={'bias' in self}"

    def __call__(self, x: mx.array, hidden: Optional[mx.array] = None, cell: Optional[mx.array] = None) -> Tuple[mx.array, mx.array]:
        """Runs the recurrence over the sequence.

        Args:
            x (array): the input, ``(N, L, D)`` or ``(L, D)``.
            hidden (array, optional): the initial hidden state, ``(N, H)``
                or ``(H,)``. Default: None, no initial state.
            cell (array, optional): the initial cell state, of the hidden
                state's shape. Default: None, no initial state.

        Returns:
            tuple(array, array): the hidden and the cell state of every
            step, each ``(N, L, H)`` or ``(L, H)``.
        """
        _check_sequence("LSTM", x, self.Wx.shape[1])
        _check_state("LSTM", "hidden", hidden, x, self.hidden_size)
        _check_state("LSTM", "cell", cell, x, self.hidden_size)
        H = self.hidden_size
        xp = _project(x, self["Wx"], self.get("bias"))
        wh_t = self["Wh"].T
        hiddens, cells = [], []
        for t in range(x.shape[-2]):
            gates = xp[..., t, :]
            if hidden is not None:
                gates = gates + hidden @ wh_t
            i = mx.sigmoid(gates[..., :H])
            f = mx.sigmoid(gates[..., H:2 * H])
            g = mx.tanh(gates[..., 2 * H:3 * H])
            o = mx.sigmoid(gates[..., 3 * H:])
            cell = i * g if cell is None else f * cell + i * g
            hidden = o * mx.tanh(cell)
            hiddens.append(hidden)
            cells.append(cell)
        return mx.stack(hiddens, axis=-2), mx.stack(cells, axis=-2)
