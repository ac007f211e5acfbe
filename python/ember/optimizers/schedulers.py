"""Learning-rate schedules: functions of the step count.

Each maker returns a callable ``schedule(step)``. An optimizer given a
schedule as its ``learning_rate`` calls it with its step counter (a uint64
array) before every update, so the first update uses ``schedule(0)``.
Called with an array the schedules return a float32 array; called with a
Python number, ``exponential_decay`` and ``step_decay`` return a Python
number and the others a 0-d array (as MLX).
"""

import math
from typing import Callable, List, Union

from .. import core as mx

__all__ = ["exponential_decay", "step_decay", "cosine_decay", "linear_schedule", "join_schedules"]


def _positive(maker: str, name: str, value: float) -> None:
    if value < 1:
        raise ValueError(f"[{maker}] {name} must be greater than 0, but got {value}.")


def exponential_decay(init: float, decay_rate: float) -> Callable:
    """A schedule that multiplies the value by ``decay_rate`` every step.

    ``schedule(step) = init * decay_rate ** step``.

    Args:
        init (float): the value at step 0.
        decay_rate (float): the factor applied per step.

    Returns:
        Callable: the schedule.

    Example:
        >>> lr = exponential_decay(0.1, 0.5)
        >>> lr(mx.array(2))
        array(0.025, dtype=float32)
    """

    def schedule(step: Union[int, mx.array]) -> Union[float, mx.array]:
        return init * decay_rate ** step

    return schedule


def step_decay(init: float, decay_rate: float, step_size: int) -> Callable:
    """A schedule that multiplies the value by ``decay_rate`` every
    ``step_size`` steps.

    ``schedule(step) = init * decay_rate ** (step // step_size)``.

    Args:
        init (float): the value for the first ``step_size`` steps.
        decay_rate (float): the factor applied at each boundary.
        step_size (int): the number of steps between decays; at least 1
            (ValueError).

    Returns:
        Callable: the schedule.

    Example:
        >>> lr = step_decay(0.1, 0.5, 10)
        >>> lr(mx.array(25))
        array(0.025, dtype=float32)
    """
    _positive("step_decay", "step_size", step_size)

    def schedule(step: Union[int, mx.array]) -> Union[float, mx.array]:
        return init * decay_rate ** (step // step_size)

    return schedule


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Callable:
    """A half-cosine from ``init`` down to ``end`` over ``decay_steps``
    steps, then constant at ``end``.

    ``schedule(step) = end + (init - end) * (1 + cos(pi * s / decay_steps)) / 2``
    with ``s = min(step, decay_steps)``.

    Args:
        init (float): the value at step 0.
        decay_steps (int): the length of the decay; at least 1 (ValueError).
        end (float): the final value. Default: ``0.0``.

    Returns:
        Callable: the schedule.

    Example:
        >>> lr = cosine_decay(0.1, 100)
        >>> lr(mx.array(50))
        array(0.05, dtype=float32)
    """
    _positive("cosine_decay", "decay_steps", decay_steps)

    def schedule(step: Union[int, mx.array]) -> Union[float, mx.array]:
        s = mx.minimum(step, decay_steps)
        half = 0.5 * (1.0 + mx.cos((math.pi / decay_steps) * s))
        return end + half * (init - end)

    return schedule


def linear_schedule(init: float, end: float, steps: int) -> Callable:
    """A straight line from ``init`` to ``end`` over ``steps`` steps, then
    constant at ``end`` (a linear warm-up, typically).

    ``schedule(step) = init + min(step, steps) * (end - init) / steps``.

    Args:
        init (float): the value at step 0.
        end (float): the value from ``steps`` on.
        steps (int): the length of the ramp; at least 1 (ValueError).

    Returns:
        Callable: the schedule.

    Example:
        >>> lr = linear_schedule(0.0, 0.1, 10)
        >>> lr(mx.array(5))
        array(0.05, dtype=float32)
    """
    _positive("linear_schedule", "steps", steps)
    slope = (end - init) / steps

    def schedule(step: Union[int, mx.array]) -> Union[float, mx.array]:
        return mx.minimum(step, steps) * slope + init

    return schedule


def join_schedules(schedules: List[Callable], boundaries: List[int]) -> Callable:
    """Chains schedules: ``schedules[0]`` until ``boundaries[0]``, then
    ``schedules[1]`` counted from that boundary, and so on.

    At a step in ``[boundaries[i - 1], boundaries[i])`` the result is
    ``schedules[i](step - boundaries[i - 1])``. Works elementwise on an
    array of steps.

    Args:
        schedules (list of Callable): at least one schedule (ValueError).
        boundaries (list of int): ``len(schedules) - 1`` increasing steps
            (ValueError for another count).

    Returns:
        Callable: the joined schedule.

    Example:
        >>> warmup = linear_schedule(0.0, 0.1, 10)
        >>> lr = join_schedules([warmup, cosine_decay(0.1, 100)], [10])
        >>> lr(mx.array(10))
        array(0.1, dtype=float32)
    """
    schedules = list(schedules)
    boundaries = list(boundaries)
    if len(schedules) < 1:
        raise ValueError("[join_schedules] Must provide at least 1 schedule to join.")
    if len(boundaries) != len(schedules) - 1:
        raise ValueError(f"[join_schedules] Received {len(boundaries)} boundaries but expected "
                         f"{len(schedules) - 1}.")

    def schedule(step: Union[int, mx.array]) -> Union[float, mx.array]:
        out = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            out = mx.where(step < boundary, out, later(step - boundary))
        return out

    return schedule
