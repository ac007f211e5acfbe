"""nn.losses: every loss against a NumPy reference written from its formula.

For each loss and each reduction ('none', 'mean', 'sum') in float32,
float16 and bfloat16 (the reference is computed in float64 from the inputs
rounded to the dtype); the signatures and defaults of the API list
(docs/api/mlx_api.tsv); broadcasting where MLX broadcasts and the shape
errors where it does not; weights (the exact shape of the unreduced loss,
as MLX requires); 0-d and empty inputs; large logits; derivatives against
finite differences in float64 (gradcheck.check_grads); the error paths
(unknown reduction, mismatched shapes) with the loss named in the message.

Runs on MLX too: ``EMBER_TEST_BACKEND=mlx ... -m "not ember_only"``.
"""

import ast
import inspect
import math
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import IS_MLX, assert_close, ember_only, mx, raises, round_to, to_numpy
from gradcheck import check_grads

if IS_MLX:
    import mlx.nn as nn
else:
    import ember.nn as nn

L = nn.losses
REDUCTIONS = ["none", "mean", "sum"]
DTYPES = ["float32", "float16", "bfloat16"]
# the computation runs in the input dtype: a few ulps per op and per summand
TOL = {"float32": (2e-5, 2e-5), "float16": (6e-3, 6e-3), "bfloat16": (5e-2, 5e-2),
       "float64": (1e-10, 1e-10)}


def _f(x, dtype="float32"):
    """An mx array of numpy values in the given float dtype."""
    x = np.asarray(x)
    if x.size == 0:  # MLX imports of empty numpy arrays can hang (conftest)
        return mx.zeros(x.shape, dtype=getattr(mx, dtype))
    return mx.array(np.asarray(round_to(x, dtype), np.float32 if dtype != "float64" else np.float64),
                    dtype=getattr(mx, dtype))


def _i(x):
    return mx.array(np.asarray(x, np.int32))


def _reduce(loss, reduction):
    loss = np.asarray(loss, np.float64)
    return {"none": loss, "mean": np.mean(loss) if loss.size else np.nan, "sum": np.sum(loss)}[reduction]


# --------------------------------------------------------------------------
# NumPy references, unreduced, in float64
# --------------------------------------------------------------------------

def np_lse(x, axis=-1, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


def np_log_softmax(x, axis=-1):
    return x - np_lse(x, axis, keepdims=True)


def ref_cross_entropy(logits, targets, weights=None, axis=-1, label_smoothing=0.0):
    k = logits.shape[axis]
    if targets.ndim == logits.ndim:
        t = targets * (1 - label_smoothing) + label_smoothing / k
    else:
        t = np.moveaxis(np.eye(k)[targets.astype(np.int64)], -1, axis)
        t = t * (1 - label_smoothing) + label_smoothing / k
    loss = -np.sum(t * np_log_softmax(logits, axis), axis=axis)
    return loss if weights is None else loss * weights


def ref_bce(inputs, targets, weights=None, with_logits=True):
    if with_logits:
        loss = np.log1p(np.exp(-np.abs(inputs))) + np.maximum(inputs, 0) - inputs * targets
    else:
        with np.errstate(divide="ignore"):
            loss = -(targets * np.maximum(np.log(inputs), -100)
                     + (1 - targets) * np.maximum(np.log(1 - inputs), -100))
    return loss if weights is None else loss * weights


def ref_nll(inputs, targets, axis=-1):
    idx = np.expand_dims(targets.astype(np.int64), axis)
    return -np.squeeze(np.take_along_axis(inputs, idx, axis=axis), axis=axis)


def ref_kl(inputs, targets, axis=-1):
    return np.sum(np.exp(targets) * (targets - inputs), axis=axis)


def ref_smooth_l1(p, t, beta=1.0):
    d = np.abs(p - t)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d < beta, 0.5 * d ** 2 / beta, d - 0.5 * beta)


def ref_huber(p, t, delta=1.0):
    d = np.abs(p - t)
    return np.where(d <= delta, 0.5 * d ** 2, delta * (d - 0.5 * delta))


def ref_triplet(a, pos, neg, axis=-1, p=2, margin=1.0, eps=1e-6):
    def dist(x, y):
        return (np.sum(np.abs(x - y) ** p, axis=axis) + eps) ** (1.0 / p)
    return np.maximum(dist(a, pos) - dist(a, neg) + margin, 0)


def ref_cosine(x1, x2, axis=1, eps=1e-8):
    x1, x2 = np.broadcast_arrays(x1, x2)
    n = np.sqrt(np.sum(x1 ** 2, axis=axis)) * np.sqrt(np.sum(x2 ** 2, axis=axis))
    return np.sum(x1 * x2, axis=axis) / np.maximum(n, eps)


def ref_gaussian(x, t, v, full=False, eps=1e-6):
    v = np.maximum(v, eps)
    loss = 0.5 * (np.log(v) + (x - t) ** 2 / v)
    return loss + 0.5 * math.log(2 * math.pi) if full else loss


# --------------------------------------------------------------------------
# the cases: inputs (kind 'f': a float argument cast to the dtype under
# test, 'i': int32 class indices), keyword arguments, reference
# --------------------------------------------------------------------------

def _away(rng, shape, lo, hi, kinks=(), gap=0.05):
    """Uniform values in [lo, hi] at least ``gap`` from every kink (so that
    neither finite differences nor low-precision rounding cross one)."""
    x = rng.uniform(lo, hi, shape)
    for _ in range(100):
        bad = np.zeros(np.shape(x), bool)
        for k in kinks:
            bad |= np.abs(x - k) < gap
        if not bad.any():
            return x
        x = np.where(bad, rng.uniform(lo, hi, np.shape(x)), x)
    raise AssertionError("could not draw values away from the kinks")


def _softmax(x, axis=-1):
    return np.exp(np_log_softmax(x, axis))


def _signs(rng, shape):
    return rng.choice([-1.0, 1.0], shape)


def _case_mse(rng):
    return [("f", rng.normal(size=(3, 5))), ("f", rng.normal(size=(3, 5)))], {}


def _case_l1(rng):
    t = rng.normal(size=(3, 5))
    return [("f", t + _away(rng, (3, 5), -2, 2, [0])), ("f", t)], {}


def _case_smooth_l1(rng):
    t = rng.normal(size=(3, 5))
    return [("f", t + _away(rng, (3, 5), -3, 3, [0, -1.5, 1.5])), ("f", t)], {"beta": 1.5}


def _case_huber(rng):
    t = rng.normal(size=(3, 5))
    return [("f", t + _away(rng, (3, 5), -3, 3, [-0.7, 0.7])), ("f", t)], {"delta": 0.7}


def _case_log_cosh(rng):
    return [("f", rng.normal(size=(3, 5)) * 2), ("f", rng.normal(size=(3, 5)))], {}


def _case_hinge(rng):
    y = _signs(rng, (3, 5))
    m = _away(rng, (3, 5), -2, 2, [0])           # 1 - x*y = m
    return [("f", y * (1 - m)), ("f", y)], {}


def _case_margin_ranking(rng):
    y = _signs(rng, (3, 5))
    x2 = rng.normal(size=(3, 5))
    m = _away(rng, (3, 5), -2, 2, [0])           # margin - y*(x1 - x2) = m
    return [("f", x2 - y * (m - 0.5)), ("f", x2), ("f", y)], {"margin": 0.5}


def _case_bce_logits(rng):
    return [("f", rng.normal(size=(3, 5)) * 3), ("f", rng.integers(0, 2, (3, 5)).astype(float))], {}


def _case_bce_probs(rng):
    return ([("f", rng.uniform(0.05, 0.95, (3, 5))), ("f", rng.integers(0, 2, (3, 5)).astype(float))],
            {"with_logits": False})


def _case_bce_weights(rng):
    args, kw = _case_bce_logits(rng)
    return args + [("f", rng.uniform(0.5, 2, (3, 5)))], kw


def _case_ce_indices(rng):
    return [("f", rng.normal(size=(4, 6)) * 3), ("i", rng.integers(0, 6, (4,)))], {}


def _case_ce_probs(rng):
    return [("f", rng.normal(size=(4, 6)) * 3), ("f", _softmax(rng.normal(size=(4, 6))))], {}


def _case_ce_smoothing(rng):
    args, _ = _case_ce_indices(rng)
    return args, {"label_smoothing": 0.2}


def _case_ce_probs_smoothing(rng):
    args, _ = _case_ce_probs(rng)
    return args, {"label_smoothing": 0.3}


def _case_ce_weights(rng):
    args, _ = _case_ce_indices(rng)
    return args + [("f", rng.uniform(0.5, 2, (4,)))], {}


def _case_ce_axis(rng):
    return [("f", rng.normal(size=(5, 3, 4))), ("i", rng.integers(0, 5, (3, 4)))], {"axis": 0}


def _case_ce_axis_probs(rng):
    return [("f", rng.normal(size=(3, 5, 4))), ("f", _softmax(rng.normal(size=(3, 5, 4)), 1))], \
        {"axis": 1, "label_smoothing": 0.1}


def _case_nll(rng):
    return [("f", np_log_softmax(rng.normal(size=(4, 6)))), ("i", rng.integers(0, 6, (4,)))], {}


def _case_nll_axis(rng):
    return [("f", np_log_softmax(rng.normal(size=(5, 3)), 0)), ("i", rng.integers(0, 5, (3,)))], {"axis": 0}


def _case_kl(rng):
    return [("f", np_log_softmax(rng.normal(size=(4, 6)))), ("f", np_log_softmax(rng.normal(size=(4, 6))))], {}


def _case_kl_axis(rng):
    return [("f", np_log_softmax(rng.normal(size=(3, 4)), 0)),
            ("f", np_log_softmax(rng.normal(size=(3, 4)), 0))], {"axis": 0}


def _triplet_args(rng, p, margin):
    def dist(x, y):
        return (np.sum(np.abs(x - y) ** p, axis=-1) + 1e-6) ** (1.0 / p)
    while True:
        a, pos, neg = (rng.normal(size=(4, 5)) for _ in range(3))
        # the hinge's argument d(a, pos) - d(a, neg) + margin away from 0
        if np.all(np.abs(dist(a, pos) - dist(a, neg) + margin) > 0.05):
            return [("f", a), ("f", pos), ("f", neg)]


def _case_triplet(rng):
    return _triplet_args(rng, 2, 1.0), {}


def _case_triplet_p(rng):
    return _triplet_args(rng, 3, 0.5), {"p": 3, "margin": 0.5}


def _case_cosine(rng):
    return [("f", rng.normal(size=(3, 5))), ("f", rng.normal(size=(3, 5)))], {}


def _case_cosine_axis(rng):
    return [("f", rng.normal(size=(3, 4, 2))), ("f", rng.normal(size=(3, 4, 2)))], {"axis": -1}


def _case_gaussian(rng):
    return ([("f", rng.normal(size=(3, 5))), ("f", rng.normal(size=(3, 5))),
             ("f", rng.uniform(0.2, 2, (3, 5)))], {})


def _case_gaussian_full(rng):
    args, _ = _case_gaussian(rng)
    return args, {"full": True, "eps": 1e-3}


CASES = {
    "mse_loss": ("mse_loss", _case_mse, lambda p, t: (p - t) ** 2),
    "l1_loss": ("l1_loss", _case_l1, lambda p, t: np.abs(p - t)),
    "smooth_l1_loss": ("smooth_l1_loss", _case_smooth_l1, ref_smooth_l1),
    "huber_loss": ("huber_loss", _case_huber, ref_huber),
    "log_cosh_loss": ("log_cosh_loss", _case_log_cosh, lambda p, t: np.log(np.cosh(p - t))),
    "hinge_loss": ("hinge_loss", _case_hinge, lambda x, y: np.maximum(1 - x * y, 0)),
    "margin_ranking_loss": ("margin_ranking_loss", _case_margin_ranking,
                            lambda x1, x2, y, margin=0.0: np.maximum(-y * (x1 - x2) + margin, 0)),
    "bce_logits": ("binary_cross_entropy", _case_bce_logits, ref_bce),
    "bce_probs": ("binary_cross_entropy", _case_bce_probs, ref_bce),
    "bce_weights": ("binary_cross_entropy", _case_bce_weights, ref_bce),
    "ce_indices": ("cross_entropy", _case_ce_indices, ref_cross_entropy),
    "ce_probs": ("cross_entropy", _case_ce_probs, ref_cross_entropy),
    "ce_smoothing": ("cross_entropy", _case_ce_smoothing, ref_cross_entropy),
    "ce_probs_smoothing": ("cross_entropy", _case_ce_probs_smoothing, ref_cross_entropy),
    "ce_weights": ("cross_entropy", _case_ce_weights, ref_cross_entropy),
    "ce_axis": ("cross_entropy", _case_ce_axis, ref_cross_entropy),
    "ce_axis_probs": ("cross_entropy", _case_ce_axis_probs, ref_cross_entropy),
    "nll_loss": ("nll_loss", _case_nll, ref_nll),
    "nll_axis": ("nll_loss", _case_nll_axis, ref_nll),
    "kl_div_loss": ("kl_div_loss", _case_kl, ref_kl),
    "kl_axis": ("kl_div_loss", _case_kl_axis, ref_kl),
    "triplet_loss": ("triplet_loss", _case_triplet, ref_triplet),
    "triplet_p3": ("triplet_loss", _case_triplet_p, ref_triplet),
    "cosine_similarity_loss": ("cosine_similarity_loss", _case_cosine, ref_cosine),
    "cosine_axis": ("cosine_similarity_loss", _case_cosine_axis, ref_cosine),
    "gaussian_nll_loss": ("gaussian_nll_loss", _case_gaussian, ref_gaussian),
    "gaussian_full": ("gaussian_nll_loss", _case_gaussian_full, ref_gaussian),
}

# the signature's positional order for the weights-taking cases
_WEIGHTS = {"bce_weights", "ce_weights"}


def _call_args(case, args, convert):
    """Positional and keyword arguments for the loss (weights by keyword)."""
    pos = [convert(kind, v) for kind, v in args]
    if case in _WEIGHTS:
        return pos[:-1], {"weights": pos[-1]}
    return pos, {}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", list(CASES))
def test_forward(case, reduction, dtype, rng):
    fname, make, ref = CASES[case]
    args, kw = make(rng)
    # the reference sees the inputs as the dtype holds them
    rounded = [(k, round_to(v, dtype).astype(np.float64) if k == "f" else v) for k, v in args]
    pos, extra = _call_args(case, rounded, lambda k, v: _f(v, dtype) if k == "f" else _i(v))
    out = getattr(L, fname)(*pos, **extra, **kw, reduction=reduction)
    np_pos, np_extra = _call_args(case, rounded, lambda k, v: v)
    want = _reduce(ref(*np_pos, **np_extra, **kw), reduction)
    rtol, atol = TOL[dtype]
    assert_close(out, want, dtype=dtype, rtol=rtol, atol=atol, msg=f"{case} {reduction}")


# --------------------------------------------------------------------------
# signatures and defaults (the API list's, which are MLX's)
# --------------------------------------------------------------------------

LOSS_NAMES = sorted({fname for fname, _, _ in CASES.values()})


def _listed_signatures(prefix):
    tsv = Path(__file__).resolve().parents[2] / "docs" / "api" / "mlx_api.tsv"
    out = {}
    for line in tsv.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) == 4 and fields[0].startswith(prefix):
            out[fields[0][len(prefix):]] = fields[3]
    return out


def _params(text):
    """[(name, default or '<none>')] of a signature text, defaults as
    literals ('mlx.core.float32' style defaults kept as text)."""
    text = text[:text.rindex("->")] if "->" in text else text
    args = ast.parse(f"def _f{text}: pass").body[0].args
    plain = args.args
    defaults = [None] * (len(plain) - len(args.defaults)) + list(args.defaults)
    out = []
    for a, d in zip(plain, defaults):
        if d is None:
            out.append((a.arg, "<none>"))
        else:
            try:
                out.append((a.arg, ast.literal_eval(d)))
            except ValueError:
                out.append((a.arg, ast.unparse(d).rsplit(".", 1)[-1]))
    return out


def _declared(fn):
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.default is inspect.Parameter.empty:
            out.append((p.name, "<none>"))
        elif "Dtype" in type(p.default).__name__:
            out.append((p.name, str(p.default).rsplit(".", 1)[-1]))
        else:
            out.append((p.name, p.default))
    return out


LISTED = _listed_signatures("nn.losses.")


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_signature(name):
    assert _declared(getattr(L, name)) == _params(LISTED[name])


def test_every_listed_loss_is_tested():
    assert set(LISTED) - {"Reduction"} == set(LOSS_NAMES)


def test_reduction_type():
    import typing
    assert typing.get_origin(L.Reduction) is typing.Literal
    assert typing.get_args(L.Reduction) == ("none", "mean", "sum")


@pytest.mark.parametrize("case", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "bce_logits",
                                  "ce_indices", "nll_loss", "kl_div_loss", "triplet_loss",
                                  "gaussian_nll_loss", "margin_ranking_loss"])
def test_default_reduction(case, rng):
    fname, make, _ = CASES[case]
    args, kw = make(rng)
    pos, extra = _call_args(case, args, lambda k, v: _f(v) if k == "f" else _i(v))
    fn = getattr(L, fname)
    default = inspect.signature(fn).parameters["reduction"].default
    assert_close(fn(*pos, **extra, **kw), to_numpy(fn(*pos, **extra, **kw, reduction=default)))


# --------------------------------------------------------------------------
# derivatives (float64, central differences)
# --------------------------------------------------------------------------

# MLX computes exp, logaddexp and logsumexp of float64 in float32 (the
# float64 rows of docs/mlx-differences.md): differences of its float64
# losses at eps = 1e-6 are noise there, so these cases are Ember's; the
# closed-form derivatives below (test_grad_values) hold on both.
F64_AS_F32_ON_MLX = {"log_cosh_loss", "bce_logits", "bce_weights", "ce_indices", "ce_probs", "ce_smoothing",
                     "ce_probs_smoothing", "ce_weights", "ce_axis", "ce_axis_probs", "kl_div_loss", "kl_axis"}


@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("case", [pytest.param(c, marks=[ember_only] if c in F64_AS_F32_ON_MLX else [])
                                  for c in CASES])
def test_grad(case, reduction, rng):
    fname, make, _ = CASES[case]
    args, kw = make(rng)
    values = [v.astype(np.float64) if k == "f" else np.asarray(v, np.int32) for k, v in args]
    fn = getattr(L, fname)

    def loss(*xs):
        pos, extra = _call_args(case, list(zip([k for k, _ in args], xs)), lambda k, v: v)
        return fn(*pos, **extra, **kw, reduction=reduction)

    check_grads(loss, values, rtol=1e-5, atol=1e-6)


@ember_only  # float64 logsumexp/logaddexp (F64_AS_F32_ON_MLX)
def test_grad_second_order(rng):
    """The smooth losses have second derivatives too."""
    x, y = rng.normal(size=(3, 4)), _softmax(rng.normal(size=(3, 4)))
    check_grads(lambda a, b: L.cross_entropy(a, b), [x, y], order=2)
    check_grads(lambda a, b: L.log_cosh_loss(a, b), [x, y], order=2)
    check_grads(lambda a, b: L.binary_cross_entropy(a, b, reduction="sum"), [x, y], order=2)


def test_grad_values():
    """d/dx of a few losses in closed form (not only consistency)."""
    x = mx.array([[1.0, 2.0, 3.0]])
    g = mx.grad(lambda z: L.cross_entropy(z, mx.array([0]), reduction="sum"))(x)
    want = np.exp(np.array([1.0, 2.0, 3.0])) / np.exp(np.array([1.0, 2.0, 3.0])).sum() - [1, 0, 0]
    assert_close(g, [want], rtol=1e-5, atol=1e-6)
    g = mx.grad(lambda z: L.binary_cross_entropy(z, mx.array([[0.0, 1.0, 1.0]]), reduction="sum"))(x)
    assert_close(g, [1 / (1 + np.exp(-np.array([1.0, 2.0, 3.0]))) - [0, 1, 1]], rtol=1e-5, atol=1e-6)
    g = mx.grad(lambda z: L.log_cosh_loss(z, mx.zeros((1, 3)), reduction="sum"))(x * 300)
    assert_close(g, [np.tanh([300.0, 600.0, 900.0])])
    g = mx.grad(lambda z: L.log_cosh_loss(z, mx.zeros((1, 3)), reduction="sum"))(x / 4)
    assert_close(g, [np.tanh([0.25, 0.5, 0.75])], rtol=1e-5, atol=1e-6)
    t = mx.log(mx.array([[0.2, 0.3, 0.5]]))
    g = mx.grad(lambda z: L.kl_div_loss(z, t, reduction="sum"))(x)
    assert_close(g, [[-0.2, -0.3, -0.5]], rtol=1e-5, atol=1e-6)
    p = mx.array([[0.2, 0.6, 0.9]])
    g = mx.grad(lambda z: L.binary_cross_entropy(z, mx.array([[0.0, 1.0, 1.0]]), with_logits=False,
                                                 reduction="sum"))(p)
    assert_close(g, [[1 / 0.8, -1 / 0.6, -1 / 0.9]], rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------
# numerical range: large logits, large differences
# --------------------------------------------------------------------------

def test_cross_entropy_large_logits():
    logits = mx.array([[1000.0, 0.0, -1000.0], [0.0, 1e30, 0.0]])
    out = L.cross_entropy(logits, mx.array([1, 1]))
    assert_close(out, [1000.0, 0.0])
    out = L.cross_entropy(logits, mx.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
    assert_close(out, [1000.0, 1e30])
    out = L.cross_entropy(logits, mx.array([0, 1]), label_smoothing=0.1)
    # 0.9 * ce + 0.1 * (lse - mean(logits)) per row
    assert_close(out, [0.1 * 1000.0, 0.1 * (1e30 - 1e30 / 3)], rtol=1e-6)
    g = mx.grad(lambda z: L.cross_entropy(z, mx.array([1, 1]), reduction="sum"))(logits)
    assert_close(g, [[1.0, -1.0, 0.0], [0.0, 0.0, 0.0]])


def test_cross_entropy_half_large_logits():
    logits = mx.array([[60000.0, 0.0]], dtype=mx.float16)
    assert_close(L.cross_entropy(logits, mx.array([1])), [60000.0], dtype="float16")
    assert_close(L.cross_entropy(logits, mx.array([0])), [0.0], dtype="float16")


def test_bce_large_logits():
    x = mx.array([1000.0, -1000.0, 100.0, -100.0, 1e30])
    y = mx.array([0.0, 1.0, 1.0, 0.0, 1.0])
    assert_close(L.binary_cross_entropy(x, y, reduction="none"), [1000.0, 1000.0, 0.0, 0.0, 0.0])
    g = mx.grad(lambda z: L.binary_cross_entropy(z, y, reduction="sum"))(x)
    assert_close(g, [1.0, -1.0, 0.0, 0.0, 0.0])


def test_bce_probabilities_clipped():
    """log(p) and log(1 - p) are clipped at -100: p = 0 or 1 is finite."""
    p = mx.array([0.0, 1.0, 0.0, 1.0, 0.5, 1e-30])
    y = mx.array([0.0, 1.0, 1.0, 0.0, 0.5, 1.0])
    out = L.binary_cross_entropy(p, y, with_logits=False, reduction="none")
    assert_close(out, [0.0, 0.0, 100.0, 100.0, math.log(2.0), -math.log(1e-30)])


def test_log_cosh_large_differences():
    d = mx.array([1000.0, -1000.0, 50.0, 0.0])
    out = L.log_cosh_loss(d, mx.zeros((4,)))
    assert_close(out, [1000 - math.log(2), 1000 - math.log(2), 50 - math.log(2), 0.0])
    half = L.log_cosh_loss(mx.array([100.0], dtype=mx.float16), mx.array([0.0], dtype=mx.float16))
    assert_close(half, [100 - math.log(2)], dtype="float16")


def test_gaussian_nll_variance_floor():
    out = L.gaussian_nll_loss(mx.array([1.0, 2.0]), mx.array([1.5, 2.0]), mx.array([0.0, -1.0]),
                              reduction="none")
    assert_close(out, ref_gaussian(np.array([1.0, 2.0]), np.array([1.5, 2.0]), np.array([0.0, -1.0])),
                 rtol=1e-6)


def test_cosine_similarity_eps():
    """The denominator is max(|x1| |x2|, eps): zero vectors give 0."""
    assert_close(L.cosine_similarity_loss(mx.zeros((2, 3)), mx.zeros((2, 3))), [0.0, 0.0])
    small = mx.full((1, 2), 1e-5)
    assert_close(L.cosine_similarity_loss(small, small), [2e-10 / 1e-8], rtol=1e-5)


def test_smooth_l1_and_huber_thresholds():
    d = mx.array([0.0, 1.0, 2.0, 3.0])
    z = mx.zeros((4,))
    assert_close(L.smooth_l1_loss(d, z, beta=2.0, reduction="none"), [0.0, 0.25, 1.0, 2.0])
    assert_close(L.huber_loss(d, z, delta=2.0), [0.0, 0.5, 2.0, 4.0])
    assert_close(L.smooth_l1_loss(d, z, beta=0.0, reduction="none"), [0.0, 1.0, 2.0, 3.0])


# --------------------------------------------------------------------------
# broadcasting, weights, 0-d and empty inputs, dtypes
# --------------------------------------------------------------------------

BROADCAST = [
    # (loss, shapes of the float arguments, keyword arguments, reference)
    ("huber_loss", [(2, 3), (1, 3)], {}, ref_huber),
    ("huber_loss", [(2, 3), (3,)], {}, ref_huber),
    ("log_cosh_loss", [(2, 1, 3), (4, 1)], {}, lambda p, t: np.log(np.cosh(p - t))),
    ("hinge_loss", [(2, 3), ()], {}, lambda x, y: np.maximum(1 - x * y, 0)),
    ("kl_div_loss", [(2, 3), (1, 3)], {}, ref_kl),
    ("cosine_similarity_loss", [(2, 3), (1, 3)], {}, ref_cosine),
    ("triplet_loss", [(2, 3), (3,), (1, 3)], {}, ref_triplet),
]


@pytest.mark.parametrize("fname,shapes,kw,ref", BROADCAST, ids=[f"{b[0]}-{b[1]}" for b in BROADCAST])
def test_broadcasting(fname, shapes, kw, ref, rng):
    vals = [rng.normal(size=s) for s in shapes]
    out = getattr(L, fname)(*[_f(v) for v in vals], **kw, reduction="none")
    bv = [round_to(v, "float32").astype(np.float64) for v in vals]
    assert_close(out, ref(*bv, **kw), rtol=2e-5, atol=2e-5)


def test_nll_broadcast_targets():
    x = np.log(np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]))
    out = L.nll_loss(_f(x), _i([2]))
    assert_close(out, [-x[0, 2], -x[1, 2]], rtol=1e-6)


def test_weights_exact_shape(rng):
    """Weights multiply the unreduced losses; the mean is the mean of the
    weighted losses (not a weighted average)."""
    x, y, w = rng.normal(size=(2, 3)), rng.integers(0, 2, (2, 3)).astype(float), rng.uniform(0, 2, (2, 3))
    for red in REDUCTIONS:
        assert_close(L.binary_cross_entropy(_f(x), _f(y), weights=_f(w), reduction=red),
                     _reduce(ref_bce(x, y, w), red), rtol=2e-5, atol=2e-5)
    t = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    wr = np.array([1.0, 3.0])
    out = L.cross_entropy(_f(x), _f(t), weights=_f(wr), label_smoothing=0.3, reduction="mean")
    assert_close(out, np.mean(ref_cross_entropy(x, t, label_smoothing=0.3) * wr), rtol=2e-5)


@pytest.mark.parametrize("wshape", [(), (1, 3), (3,), (2,)])
def test_bce_weights_do_not_broadcast(wshape):
    x = mx.zeros((2, 3))
    with raises(ValueError, r"\[binary_cross_entropy\] Weights with shape " + re.escape(str(wshape))):
        L.binary_cross_entropy(x, x, weights=mx.ones(wshape))
    with raises(ValueError, "Weights with shape .* is not the same as output loss with shape \\(2, 3\\)",
                mlx_msg=True):
        L.binary_cross_entropy(x, x, weights=mx.ones(wshape))


@pytest.mark.parametrize("wshape", [(), (1,), (3,), (2, 1)])
def test_cross_entropy_weights_do_not_broadcast(wshape):
    with raises(ValueError, r"\[cross_entropy\] Weights with shape .* output loss with shape \(2,\)"):
        L.cross_entropy(mx.zeros((2, 3)), mx.array([0, 1]), weights=mx.ones(wshape))


def test_mixed_dtypes():
    x16 = mx.array([1.0, -1.0], dtype=mx.float16)
    out = L.binary_cross_entropy(x16, mx.array([1, 0]), weights=mx.array([1.0, 2.0]))
    assert_close(out, np.mean(ref_bce(np.array([1.0, -1.0]), np.array([1.0, 0.0]), np.array([1.0, 2.0]))),
                 dtype="float32", rtol=1e-3)
    assert L.binary_cross_entropy(x16, mx.array([1, 0])).dtype == mx.float16
    assert L.mse_loss(mx.array([1.0, 2.0]), x16).dtype == mx.float32


INTEGER_DTYPES = [
    # (loss, reduction, result dtype) for int32 inputs, as MLX gives them
    ("mse_loss", "none", "int32"), ("mse_loss", "mean", "float32"), ("mse_loss", "sum", "int32"),
    ("l1_loss", "none", "int32"), ("smooth_l1_loss", "none", "float32"),
    ("huber_loss", "none", "float32"), ("log_cosh_loss", "none", "float32"),
    ("hinge_loss", "none", "int32"), ("binary_cross_entropy", "none", "float32"),
    ("kl_div_loss", "none", "float32"), ("cosine_similarity_loss", "none", "float32"),
]


@pytest.mark.parametrize("fname,reduction,dtype", INTEGER_DTYPES)
def test_integer_inputs(fname, reduction, dtype):
    x = mx.array([[1, 2, 3], [4, 5, 6]])
    y = mx.array([[0, 2, 1], [4, 3, 6]])
    out = getattr(L, fname)(x, y, reduction=reduction)
    assert str(out.dtype).rsplit(".", 1)[-1] == dtype
    xf, yf = to_numpy(x).astype(float), to_numpy(y).astype(float)
    refs = {"mse_loss": lambda: (xf - yf) ** 2, "l1_loss": lambda: np.abs(xf - yf),
            "smooth_l1_loss": lambda: ref_smooth_l1(xf, yf), "huber_loss": lambda: ref_huber(xf, yf),
            "log_cosh_loss": lambda: np.log(np.cosh(xf - yf)),
            "hinge_loss": lambda: np.maximum(1 - xf * yf, 0),
            "binary_cross_entropy": lambda: ref_bce(xf, yf), "kl_div_loss": lambda: ref_kl(xf, yf),
            "cosine_similarity_loss": lambda: ref_cosine(xf, yf)}
    assert_close(out, _reduce(refs[fname](), reduction), rtol=1e-5, atol=1e-5)


ZERO_D = [
    ("mse_loss", 2), ("l1_loss", 2), ("smooth_l1_loss", 2), ("huber_loss", 2), ("log_cosh_loss", 2),
    ("hinge_loss", 2), ("binary_cross_entropy", 2), ("margin_ranking_loss", 3), ("gaussian_nll_loss", 3),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("fname,nargs", ZERO_D)
def test_zero_dim(fname, nargs, reduction):
    vals = [0.7, -0.4, 1.3][:nargs]
    out = getattr(L, fname)(*[mx.array(v) for v in vals], reduction=reduction)
    refs = {"mse_loss": lambda p, t: (p - t) ** 2, "l1_loss": lambda p, t: abs(p - t),
            "smooth_l1_loss": ref_smooth_l1, "huber_loss": ref_huber,
            "log_cosh_loss": lambda p, t: np.log(np.cosh(p - t)),
            "hinge_loss": lambda x, y: np.maximum(1 - x * y, 0), "binary_cross_entropy": ref_bce,
            "margin_ranking_loss": lambda a, b, y: np.maximum(-y * (a - b), 0),
            "gaussian_nll_loss": ref_gaussian}
    want = refs[fname](*[np.float64(round_to(v, "float32")) for v in vals])
    assert_close(out, np.asarray(want, np.float64), rtol=1e-6, atol=1e-6)


def test_zero_dim_reductions_over_an_axis():
    """Losses that reduce an axis give 0-d results for 1-d inputs."""
    x = np.array([1.0, 2.0, 3.0])
    assert_close(L.cross_entropy(_f(x), _i(2)), ref_cross_entropy(x, np.array(2)), rtol=1e-6)
    assert_close(L.nll_loss(_f(np.log(x / 6)), _i(1)), -np.log(2 / 6), rtol=1e-6)
    assert_close(L.kl_div_loss(_f(x), _f(x)), 0.0)
    assert_close(L.cosine_similarity_loss(_f(x), _f(2 * x), axis=0), 1.0, rtol=1e-6)
    assert_close(L.triplet_loss(_f(x), _f(x), _f(x + 10)), 0.0)


@pytest.mark.parametrize("fname", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                                   "hinge_loss", "log_cosh_loss"])
def test_empty(fname):
    e = mx.zeros((0, 3))
    fn = getattr(L, fname)
    assert fn(e, e, reduction="none").shape == (0, 3)
    assert_close(fn(e, e, reduction="sum"), 0.0)
    assert np.isnan(to_numpy(fn(e, e, reduction="mean")))


def test_empty_along_kept_axes():
    e = mx.zeros((0, 4))
    assert L.kl_div_loss(e, e).shape == (0,)
    assert L.cosine_similarity_loss(e, e).shape == (0,)
    assert L.triplet_loss(e, e, e).shape == (0,)


# --------------------------------------------------------------------------
# cross entropy specifics
# --------------------------------------------------------------------------

def test_cross_entropy_integer_probability_targets():
    """Targets of the logits' rank are probabilities, whatever their dtype."""
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    t = np.array([[0, 0, 1], [1, 0, 0]])
    assert_close(L.cross_entropy(_f(x), _i(t)), ref_cross_entropy(x, t.astype(float)), rtol=1e-6)


@pytest.mark.parametrize("ls", [1.0, -0.1, 2.0])
def test_cross_entropy_label_smoothing_range(ls):
    with raises(ValueError, r"\[cross_entropy\] Label smoothing must be in \[0, 1\)"):
        L.cross_entropy(mx.zeros((2, 3)), mx.array([0, 1]), label_smoothing=ls)
    with raises(ValueError, r"Label smoothing must be in \[0, 1\)", mlx_msg=True):
        L.cross_entropy(mx.zeros((2, 3)), mx.array([0, 1]), label_smoothing=ls)


@ember_only
def test_cross_entropy_unnormalized_probability_targets():
    """-sum(t * log_softmax) for any t: MLX's value equals it only where
    the targets sum to 1 (MLX adds (sum(t) - 1) * (max - logsumexp))."""
    x = np.array([[1.0, 2.0, 3.0]])
    t = np.array([[0.0, 2.0, 1.0]])
    assert_close(L.cross_entropy(_f(x), _f(t)), ref_cross_entropy(x, t), rtol=1e-6)


@ember_only
def test_smooth_l1_beta_zero_gradient():
    """beta = 0 is the L1 loss, with its gradient (MLX's is NaN: 0/0 in the
    unused quadratic branch)."""
    g = mx.grad(lambda x: L.smooth_l1_loss(x, mx.zeros(3), beta=0.0, reduction="sum"))(
        mx.array([1.0, -2.0, 0.5]))
    assert_close(g, [1.0, -1.0, 1.0])


# --------------------------------------------------------------------------
# errors: unknown reductions, mismatched shapes
# --------------------------------------------------------------------------

def _valid_args(fname):
    x = mx.zeros((2, 3))
    return {
        "cross_entropy": (x, mx.array([0, 1])),
        "nll_loss": (x, mx.array([0, 1])),
        "margin_ranking_loss": (x, x, x),
        "triplet_loss": (x, x, x),
        "gaussian_nll_loss": (x, x, mx.ones((2, 3))),
    }.get(fname, (x, x))


@pytest.mark.parametrize("bad", ["foo", "Mean", None, ""])
@pytest.mark.parametrize("fname", LOSS_NAMES)
def test_unknown_reduction(fname, bad):
    fn = getattr(L, fname)
    with raises(ValueError, rf"\[{fname}\] Invalid reduction {re.escape(repr(bad))}"):
        fn(*_valid_args(fname), reduction=bad)
    with raises(ValueError, "Invalid reduction", mlx_msg=True):
        fn(*_valid_args(fname), reduction=bad)


SHAPE_ERRORS = [
    # (loss, argument shapes, the shapes the message names)
    ("mse_loss", [(2, 3), (2, 2)], None),
    ("mse_loss", [(2, 3), (3,)], None),         # no broadcasting
    ("l1_loss", [(2, 3), (1, 3)], None),
    ("smooth_l1_loss", [(2, 3), (2, 2)], None),
    ("binary_cross_entropy", [(2, 3), (3,)], None),
    ("gaussian_nll_loss", [(2, 3), (2, 2), (2, 3)], [(2, 3), (2, 2)]),
    ("gaussian_nll_loss", [(2, 3), (2, 3), (3,)], [(2, 3), (3,)]),
    ("margin_ranking_loss", [(2, 3), (2, 3), (2, 2)], None),
    ("margin_ranking_loss", [(3,), (3,), ()], None),
    ("huber_loss", [(2, 3), (2, 2)], None),
    ("log_cosh_loss", [(2, 3), (2, 2)], None),
    ("hinge_loss", [(2, 3), (2, 2)], None),
    ("kl_div_loss", [(2, 3), (2, 2)], None),
    ("cosine_similarity_loss", [(2, 3), (2, 2)], None),
    ("triplet_loss", [(2, 3), (2, 3), (2, 2)], [(2, 3), (2, 2)]),
]


def _shapes_regex(name, shapes):
    return rf"\[{name}\]" + "".join(f"(?=.*{re.escape(str(tuple(s)))})" for s in shapes)


@pytest.mark.parametrize("fname,shapes,named", SHAPE_ERRORS,
                         ids=[f"{s[0]}-{s[1]}" for s in SHAPE_ERRORS])
def test_shape_mismatch(fname, shapes, named):
    args = [mx.ones(s) for s in shapes]
    with raises(ValueError, _shapes_regex(fname, named or shapes)):
        getattr(L, fname)(*args)


@pytest.mark.parametrize("targets", [(3,), (1,), (2, 2), (1, 3)])
def test_cross_entropy_target_shape(targets):
    t = mx.zeros(targets, dtype=mx.int32) if len(targets) == 1 else mx.zeros(targets)
    with raises(ValueError, _shapes_regex("cross_entropy", [(2, 3), targets])):
        L.cross_entropy(mx.zeros((2, 3)), t)
    with raises(ValueError, "Targets shape .* does not match logits shape", mlx_msg=True):
        L.cross_entropy(mx.zeros((2, 3)), t)


def test_nll_target_shape():
    with raises(ValueError, _shapes_regex("nll_loss", [(2, 3), (3,)])):
        L.nll_loss(mx.zeros((2, 3)), mx.array([0, 1, 2]))


@pytest.mark.parametrize("fname,what", [("mse_loss", "Predictions shape"), ("l1_loss", "Predictions shape"),
                                        ("binary_cross_entropy", "Inputs shape")])
def test_shape_message_as_mlx(fname, what):
    with raises(ValueError, rf"{what} \(2, 3\) does not match targets shape \(2, 2\)", mlx_msg=True):
        getattr(L, fname)(mx.zeros((2, 3)), mx.zeros((2, 2)))


def test_shapes_checked_before_reduction():
    """As MLX: a shape mismatch is reported even with a bad reduction."""
    with raises(ValueError, "does not match", mlx_msg=True):
        L.mse_loss(mx.zeros((2, 3)), mx.zeros((2, 2)), reduction="x")


def test_import_paths():
    assert nn.losses.mse_loss is L.mse_loss
    if not IS_MLX:
        import ember.nn.losses as direct
        assert direct is L


@pytest.mark.parametrize("fname", ["cross_entropy", "nll_loss", "kl_div_loss"])
def test_axis_out_of_range(fname):
    x = mx.zeros((2, 3))
    second = mx.array([0, 1]) if fname != "kl_div_loss" else x
    with raises(IndexError, "Invalid axis 5 for array with 2 dimensions"):
        getattr(L, fname)(x, second, axis=5)


@pytest.mark.parametrize("axis", [-1, 1])
def test_cross_entropy_over_shapes_and_its_gradient(axis):
    # the log-sum-exp is compiled shapeless in Ember: one trace serves every
    # batch size (and each axis its own); values and gradients against
    # float64 NumPy, on sizes whose backward is fused too
    rng = np.random.default_rng(11)
    for batch, classes in [(600, 512), (96, 40), (7, 3)]:
        shape = (batch, classes, 2) if axis == 1 else (batch, classes)
        x0 = rng.standard_normal(shape).astype(np.float32) * 3
        y0 = rng.integers(0, classes, (batch, 2) if axis == 1 else batch)
        x, y = mx.array(x0), mx.array(y0)

        def loss(x):
            return nn.losses.cross_entropy(x, y, axis=axis, reduction="sum")
        X = np.moveaxis(x0.astype(np.float64), axis, -1)
        m = X.max(-1, keepdims=True)
        lse = (m + np.log(np.exp(X - m).sum(-1, keepdims=True)))[..., 0]
        picked = np.take_along_axis(X, (y0 if axis == -1 else y0)[..., None], -1)[..., 0]
        np.testing.assert_allclose(np.array(loss(x)), (lse - picked).sum(), rtol=1e-5)
        p = np.exp(X - lse[..., None])
        np.put_along_axis(p, y0[..., None], np.take_along_axis(p, y0[..., None], -1) - 1, -1)
        np.testing.assert_allclose(np.array(mx.grad(loss)(x)), np.moveaxis(p, -1, axis), rtol=1e-4, atol=1e-6)
