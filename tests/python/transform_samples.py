"""Sample plumbing for the table-driven transform suite
(``test_transforms_table.py``).

An op-table ``SampleInput`` mixes array arguments (numpy arrays, ``Fixed``
arrays of a pinned dtype such as index arrays and masks) with static ones
(shapes, axes, Python scalars, dtypes, subscripts), possibly nested in lists
(``concatenate([x, y])``).  :class:`Case` splits a sample into its array
*leaves* and a function of the leaves only -- what ``check_grads``,
``check_vmap``, ``mx.vmap`` and ``mx.grad`` need.

Also here: sample selection (a few per op), value separation for ops with
kinks, batching three draws of a sample along an axis and a strided relayout
inside the graph.
"""

import zlib
from dataclasses import dataclass

import numpy as np

from conftest import mx, round_to
from op_table import Fixed


# --------------------------------------------------------------------------
# leaves and templates
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Leaf:
    index: int


def _split(obj, leaves, pinned, name):
    """Replace every array in ``obj`` by a _Leaf placeholder; the values go
    to ``leaves`` in the carrier dtype of their mx dtype."""
    if isinstance(obj, Fixed):
        leaves.append(np.asarray(round_to(np.asarray(obj.value), obj.dtype)))
        pinned.append(True)
        return _Leaf(len(leaves) - 1)
    if isinstance(obj, np.ndarray):
        leaves.append(np.asarray(round_to(obj, name)))
        pinned.append(False)
        return _Leaf(len(leaves) - 1)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_split(o, leaves, pinned, name) for o in obj)
    if isinstance(obj, dict):
        return {k: _split(v, leaves, pinned, name) for k, v in obj.items()}
    return obj


def _fill(obj, arrays):
    if isinstance(obj, _Leaf):
        return arrays[obj.index]
    if isinstance(obj, (list, tuple)):
        return type(obj)(_fill(o, arrays) for o in obj)
    if isinstance(obj, dict):
        return {k: _fill(v, arrays) for k, v in obj.items()}
    return obj


class Case:
    """One sample of one op in one dtype, as a function of its leaves."""

    def __init__(self, op, sample, name):
        self.op, self.sample, self.dtype = op, sample, name
        self.leaves, self.pinned = [], []
        self.template = _split((tuple(sample.args), dict(sample.kwargs)),
                               self.leaves, self.pinned, name)
        self.desc = sample.desc

    def fun(self, *arrays):
        args, kwargs = _fill(self.template, list(arrays))
        return self.op.op(*args, **kwargs)

    def key(self):
        """Equal for two draws of the same sample (same static arguments,
        leaf shapes and dtypes): their leaves can be stacked."""
        return (repr(self.template), self.desc,
                tuple((a.shape, a.dtype.str) for a in self.leaves))

    @property
    def float_argnums(self):
        """Leaves to differentiate: the float64 ones not pinned."""
        return [i for i, (a, p) in enumerate(zip(self.leaves, self.pinned))
                if not p and a.dtype == np.float64]

    def kind(self):
        """'empty' (a leaf has size 0), '0-d' (all leaves 0-d), 'regular'
        or None (no array argument)."""
        if not self.leaves:
            return None
        if any(a.size == 0 for a in self.leaves):
            return "empty"
        if all(a.ndim == 0 for a in self.leaves):
            return "0-d"
        return "regular"

    def mx_leaves(self):
        return [as_mx(a) for a in self.leaves]

    def __repr__(self):
        return f"{self.op.name}[{self.dtype}] {self.desc}"


def as_mx(a):
    """numpy -> mx keeping the numpy dtype (mx.array makes float64 float32)."""
    a = np.asarray(a)
    if a.dtype == np.float64:
        return mx.array(a, dtype=mx.float64)
    return mx.array(a)


def seed(*parts):
    return zlib.crc32("/".join(map(str, parts)).encode())


def draw(op, name, k=0):
    """The op's samples for dtype ``name`` (draw ``k``: other random values,
    same structure) as Cases."""
    rng = np.random.default_rng(seed(op.name, name, k))
    return [Case(op, s, name) for s in op.sample_inputs(name, rng)]


def pick(cases, regular=3):
    """The first ``regular`` samples with nonzero size, plus the first 0-d
    and the first empty one (in table order)."""
    out, seen = [], {"regular": 0, "0-d": 0, "empty": 0}
    limit = {"regular": regular, "0-d": 1, "empty": 1}
    for c in cases:
        k = c.kind()
        if k is not None and seen[k] < limit[k]:
            seen[k] += 1
            out.append(c)
    return out


# --------------------------------------------------------------------------
# values for finite differences
# --------------------------------------------------------------------------

def separate(x, rng, gap=1e-3):
    """Float values with no two closer than ``gap`` (ties make max, sort &
    co. non-differentiable): near-tied arrays are replaced by a shuffled
    grid spanning the same range."""
    if x.dtype.kind != "f" or x.size < 2:
        return x
    s = np.sort(x.reshape(-1))
    if np.all(np.diff(s) >= gap):
        return x
    lo, hi = float(s[0]), float(s[-1])
    if hi - lo < gap * x.size:
        hi = lo + 0.37 * x.size
    grid = np.linspace(lo, hi, x.size) + rng.uniform(0, 0.1, x.size) * (hi - lo) / x.size
    return rng.permutation(grid).reshape(x.shape).astype(x.dtype)


def finite(arrays):
    return all(np.all(np.isfinite(np.asarray(a))) for a in arrays
               if np.asarray(a).dtype.kind in "fc")


def as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


# --------------------------------------------------------------------------
# batching and layouts
# --------------------------------------------------------------------------

def stack_leaves(cases, axes):
    """Leaf i of the batch: the cases' leaf i stacked along axes[i] (None:
    case 0's leaf, shared)."""
    out = []
    for i, ax in enumerate(axes):
        if ax is None:
            out.append(cases[0].leaves[i])
        else:
            out.append(np.stack([c.leaves[i] for c in cases], axis=ax))
    return out


def relayout(a):
    """Same values, non-contiguous strides, built inside the graph so the
    op's rules see a strided primal: column-major for ndim >= 2 (a
    transpose of a row-major copy of the transpose), a reversed view of a
    reversed copy for 1-d."""
    if a.ndim >= 2:
        rev = list(range(a.ndim))[::-1]
        return mx.transpose(mx.contiguous(mx.transpose(a, rev)), rev)
    if a.ndim == 1:
        return mx.contiguous(a[::-1])[::-1]
    return a
