"""ember.optimizers: every update rule against a NumPy implementation of its
published formula, the schedules against theirs, clip_grad_norm, the state
(layout, dtypes, lazy creation, checkpoint round trip), MultiOptimizer and
the error paths.

The update rules are checked step by step: each step's NumPy reference
starts from the parameters and the state the optimizer holds before it, so
bfloat16 rounding does not accumulate across steps while every step still
has to use the state the previous one left. With EMBER_TEST_BACKEND=mlx the
same tests run on mlx.optimizers.
"""

import io
import math

import numpy as np
import pytest

from conftest import IS_MLX, ember_only, mx, raises, round_to, to_numpy

if IS_MLX:
    import mlx.optimizers as optim
    from mlx.utils import tree_flatten, tree_map, tree_unflatten
else:
    import ember.optimizers as optim
    from ember.utils import tree_flatten, tree_map, tree_unflatten


def dtype_of(name):
    return getattr(mx, name)


def dname(d):
    return str(d).rsplit(".", 1)[-1]


# --------------------------------------------------------------------------
# trees of parameters and gradients
# --------------------------------------------------------------------------

SHAPES = {"w": (3, 4), "layers": [{"b": (4,)}, {"k": (2, 3, 2)}], "tall": (5, 2)}


def _np_tree(fn):
    return {"w": fn((3, 4)), "layers": [{"b": fn((4,))}, {"k": fn((2, 3, 2))}], "tall": fn((5, 2))}


def make_trees(dtype, steps, seed=0):
    """Parameters and ``steps`` gradient trees as NumPy float64 values
    representable in ``dtype``. Each gradient entry keeps one sign over the
    steps, with a magnitude in [0.5, 1.5], so that no momentum crosses zero
    (Lion's sign stays well defined under rounding)."""
    rng = np.random.default_rng(seed)
    params = _np_tree(lambda s: round_to(rng.standard_normal(s), dtype).astype(np.float64))
    signs = _np_tree(lambda s: np.where(rng.random(s) < 0.5, -1.0, 1.0))
    grads = []
    for _ in range(steps):
        mags = _np_tree(lambda s: rng.uniform(0.5, 1.5, s))
        grads.append(tree_map(lambda a, b: round_to(a * b, dtype).astype(np.float64), signs, mags))
    return params, grads


def to_mx_tree(tree, dtype):
    return tree_map(lambda a: mx.array(a.astype(np.float32)).astype(dtype_of(dtype)), tree)


def flat_np(tree):
    return {k: to_numpy(v).astype(np.float64) for k, v in tree_flatten(tree)}


# --------------------------------------------------------------------------
# NumPy references (float64), one leaf at a time:
#   init(w) -> state dict, step(w, g, state, t, lr) -> (w_new, state_new)
# t counts updates from 1; lr is the learning rate this update uses.
# --------------------------------------------------------------------------

def zeros(*keys):
    return lambda w: {k: np.zeros_like(w) for k in keys}


def ref_sgd(momentum=0.0, weight_decay=0.0, dampening=0.0, nesterov=False):
    def step(w, g, s, t, lr):
        g = g + weight_decay * w
        if momentum <= 0:
            return w - lr * g, dict(s)
        v = momentum * s["v"] + (1 - dampening) * g
        d = g + momentum * v if nesterov else v
        return w - lr * d, {"v": v}
    return zeros("v"), step


def ref_rmsprop(alpha=0.99, eps=1e-8):
    def step(w, g, s, t, lr):
        v = alpha * s["v"] + (1 - alpha) * g * g
        return w - lr * g / (np.sqrt(v) + eps), {"v": v}
    return zeros("v"), step


def ref_adagrad(eps=1e-8):
    def step(w, g, s, t, lr):
        v = s["v"] + g * g
        return w - lr * g / (np.sqrt(v) + eps), {"v": v}
    return zeros("v"), step


def ref_adadelta(rho=0.9, eps=1e-6):
    def step(w, g, s, t, lr):
        v = rho * s["v"] + (1 - rho) * g * g
        d = np.sqrt(s["u"] + eps) / np.sqrt(v + eps) * g
        u = rho * s["u"] + (1 - rho) * d * d
        return w - lr * d, {"v": v, "u": u}
    return zeros("v", "u"), step


def ref_adam(betas=(0.9, 0.999), eps=1e-8, bias_correction=False, weight_decay=0.0):
    b1, b2 = betas

    def step(w, g, s, t, lr):
        w = w * (1 - lr * weight_decay)  # AdamW's decoupled decay (0 for Adam)
        m = b1 * s["m"] + (1 - b1) * g
        v = b2 * s["v"] + (1 - b2) * g * g
        if bias_correction:
            upd = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
        else:
            upd = m / (np.sqrt(v) + eps)
        return w - lr * upd, {"m": m, "v": v}
    return zeros("m", "v"), step


def ref_adamax(betas=(0.9, 0.999), eps=1e-8):
    b1, b2 = betas

    def step(w, g, s, t, lr):
        m = b1 * s["m"] + (1 - b1) * g
        v = np.maximum(b2 * s["v"], np.abs(g))
        return w - lr * m / (v + eps), {"m": m, "v": v}
    return zeros("m", "v"), step


def ref_lion(betas=(0.9, 0.99), weight_decay=0.0):
    b1, b2 = betas

    def step(w, g, s, t, lr):
        c = b1 * s["m"] + (1 - b1) * g
        m = b2 * s["m"] + (1 - b2) * g
        return w * (1 - lr * weight_decay) - lr * np.sign(c), {"m": m}
    return zeros("m"), step


def ref_adafactor(lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta_1=None,
                  weight_decay=0.0, scale_parameter=True, relative_step=True, warmup_init=False):
    def rms(x):
        return np.sqrt(np.mean(x * x))

    def init(w):
        s = ({"exp_avg_sq_row": np.zeros(w.shape[:-1]), "exp_avg_sq_col": np.zeros(w.shape[:-2] + w.shape[-1:])}
             if w.ndim >= 2 else {"exp_avg_sq": np.zeros_like(w)})
        if beta_1 is not None:
            s["exp_avg"] = np.zeros_like(w)
        return s

    def step(w, g, s, t, _lr):
        if relative_step:
            size = min(1e-6 * t if warmup_init else 1e-2, 1 / math.sqrt(t))
        else:
            size = lr
        if scale_parameter:
            size *= max(eps[1], rms(w))
        beta2 = 1 - t ** decay_rate
        sq = g * g + eps[0]
        s = dict(s)
        if w.ndim >= 2:
            row = beta2 * s["exp_avg_sq_row"] + (1 - beta2) * sq.mean(-1)
            col = beta2 * s["exp_avg_sq_col"] + (1 - beta2) * sq.mean(-2)
            s["exp_avg_sq_row"], s["exp_avg_sq_col"] = row, col
            vhat = (row / row.mean(-1, keepdims=True))[..., :, None] * col[..., None, :]
        else:
            vhat = s["exp_avg_sq"] = beta2 * s["exp_avg_sq"] + (1 - beta2) * sq
        upd = g / np.sqrt(vhat)
        upd = size * upd / max(1.0, rms(upd) / clip_threshold)
        if beta_1 is not None:
            upd = s["exp_avg"] = beta_1 * s["exp_avg"] + (1 - beta_1) * upd
        return w * (1 - weight_decay * size) - upd, s
    return init, step


def newton_schulz(x, steps):
    """Muon's quintic Newton-Schulz orthogonalization (Jordan et al., 2024)."""
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    x = x / (np.linalg.norm(x) + 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


def ref_muon(momentum=0.95, weight_decay=0.01, nesterov=True, ns_steps=5):
    def step(w, g, s, t, lr):
        g = g + weight_decay * w
        v = momentum * s["v"] + (1 - momentum) * g
        d = (1 - momentum) * g + momentum * v if nesterov else v
        if d.ndim >= 2:
            d = newton_schulz(d.reshape(d.shape[0], -1), ns_steps).reshape(d.shape)
            lr = lr * math.sqrt(max(1.0, w.shape[-2] / w.shape[-1]))
        return w - lr * d, {"v": v}
    return zeros("v"), step


def const(lr):
    return lambda step: lr


# id -> (optimizer factory, reference, learning rate as a function of the step before the update)
RULES = {
    "sgd": (lambda: optim.SGD(0.1), ref_sgd(), const(0.1)),
    "sgd_momentum": (lambda: optim.SGD(0.1, momentum=0.9, weight_decay=0.05, dampening=0.2),
                     ref_sgd(0.9, 0.05, 0.2), const(0.1)),
    "sgd_nesterov": (lambda: optim.SGD(0.1, momentum=0.8, nesterov=True), ref_sgd(0.8, nesterov=True), const(0.1)),
    "rmsprop": (lambda: optim.RMSprop(0.01, alpha=0.9), ref_rmsprop(0.9), const(0.01)),
    "adagrad": (lambda: optim.Adagrad(0.1), ref_adagrad(), const(0.1)),
    "adadelta": (lambda: optim.AdaDelta(0.5, rho=0.8), ref_adadelta(0.8), const(0.5)),
    "adam": (lambda: optim.Adam(0.05), ref_adam(), const(0.05)),
    "adam_bias_correction": (lambda: optim.Adam(0.05, betas=[0.8, 0.95], bias_correction=True),
                             ref_adam((0.8, 0.95), bias_correction=True), const(0.05)),
    "adamw": (lambda: optim.AdamW(0.05, weight_decay=0.1), ref_adam(weight_decay=0.1), const(0.05)),
    "adamw_bias_correction": (lambda: optim.AdamW(0.05, weight_decay=0.1, bias_correction=True),
                              ref_adam(weight_decay=0.1, bias_correction=True), const(0.05)),
    "adamax": (lambda: optim.Adamax(0.05), ref_adamax(), const(0.05)),
    "lion": (lambda: optim.Lion(0.05, weight_decay=0.1), ref_lion(weight_decay=0.1), const(0.05)),
    "adafactor": (lambda: optim.Adafactor(), ref_adafactor(), const(None)),
    "adafactor_lr_beta1_decay": (
        lambda: optim.Adafactor(learning_rate=0.05, relative_step=False, beta_1=0.9, weight_decay=0.1,
                                scale_parameter=False, clip_threshold=0.5),
        ref_adafactor(0.05, relative_step=False, beta_1=0.9, weight_decay=0.1, scale_parameter=False,
                      clip_threshold=0.5), const(None)),
    "adafactor_warmup": (lambda: optim.Adafactor(warmup_init=True), ref_adafactor(warmup_init=True), const(None)),
    "muon": (lambda: optim.Muon(0.05), ref_muon(), const(0.05)),
    "muon_plain": (lambda: optim.Muon(0.05, momentum=0.9, weight_decay=0.0, nesterov=False, ns_steps=3),
                   ref_muon(0.9, 0.0, False, 3), const(0.05)),
}

TOL = {"float32": 2e-5, "bfloat16": 3e-2}


def close(actual, expected, dtype, what):
    """Values within TOL[dtype] of the reference, relative to its largest
    magnitude (bfloat16 rounding error scales with the values around)."""
    scale = max(1e-3, float(np.max(np.abs(expected)))) if expected.size else 1.0
    np.testing.assert_allclose(actual, expected, rtol=TOL[dtype], atol=TOL[dtype] * scale, err_msg=what)


def run_rule(name, dtype, steps=5):
    make, (init, ref_step), lr_at = RULES[name]
    opt = make()
    params_np, grads_np = make_trees(dtype, steps)
    params = to_mx_tree(params_np, dtype)
    for t in range(1, steps + 1):
        before_p = flat_np(params)
        before_s = flat_np(opt.state) if t > 1 else {}
        grads = to_mx_tree(grads_np[t - 1], dtype)
        params = opt.apply_gradients(grads, params)
        mx.eval(params, opt.state)
        assert to_numpy(opt.step).item() == t
        state = opt.state
        flat_state = dict(tree_flatten(state))
        for path, g in flat_np(grads).items():
            w = before_p[path]
            s_old = init(w) if t == 1 else {k: before_s[f"{path}.{k}"] for k in init(w)}
            w_new, s_new = ref_step(w, g, s_old, t, lr_at(t - 1))
            got = dict(tree_flatten(params))[path]
            assert dname(got.dtype) == dtype, (path, got.dtype)
            close(to_numpy(got).astype(np.float64), w_new, dtype, f"{name} step {t} {path}")
            keys = sorted(k[len(path) + 1:] for k in flat_state if k.startswith(path + "."))
            assert keys == sorted(s_new), (path, keys)
            for k, v in s_new.items():
                arr = flat_state[f"{path}.{k}"]
                assert dname(arr.dtype) == dtype and tuple(arr.shape) == v.shape, (path, k, arr.dtype, arr.shape)
                close(to_numpy(arr).astype(np.float64), v, dtype, f"{name} step {t} {path}.{k}")
    return opt, params


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", list(RULES))
def test_update_rule_matches_formula(name, dtype):
    opt, params = run_rule(name, dtype)
    # the tree's structure survives: dicts and lists in place
    assert isinstance(params["layers"], list) and set(params["layers"][1]) == {"k"}
    assert isinstance(opt.state["layers"], list)
    assert dname(opt.step.dtype) == "uint64"
    if name.startswith("adafactor") and "lr" not in name:
        assert "learning_rate" not in opt.state
    else:
        assert dname(opt.learning_rate.dtype) == "float32"


def test_state_follows_gradient_dtype_and_params_promote():
    # the lazy state is created from the gradients; the update promotes as
    # the arithmetic does (float32 parameter, bfloat16 gradient -> float32)
    opt = optim.Adam(0.1)
    out = opt.apply_gradients({"a": mx.ones((2,), mx.bfloat16)}, {"a": mx.ones((2,))})
    assert dname(opt.state["a"]["m"].dtype) == "bfloat16"
    assert dname(out["a"].dtype) == "float32"
    np.testing.assert_allclose(to_numpy(out["a"]), 1 - 0.1 * 0.1 / (math.sqrt(1e-3) + 1e-8), rtol=1e-2)


def test_sgd_without_momentum_keeps_a_zero_buffer():
    opt = optim.SGD(0.5)
    out = opt.apply_gradients({"a": mx.array([1.0, 2.0])}, {"a": mx.array([1.0, 1.0])})
    np.testing.assert_allclose(to_numpy(out["a"]), [0.5, 0.0])
    np.testing.assert_array_equal(to_numpy(opt.state["a"]["v"]), [0.0, 0.0])


# --------------------------------------------------------------------------
# the Optimizer API: init, update, step, learning_rate, state
# --------------------------------------------------------------------------

class TinyModel(dict):
    """Stands in for an nn.Module: a dict of parameters (nested) with
    update() and trainable_parameters()."""

    def trainable_parameters(self):
        return tree_map(lambda x: x, dict(self))

    def update(self, params):
        def merge(dst, src):
            for k, v in src.items():
                if isinstance(v, dict):
                    merge(dst[k], v)
                elif isinstance(v, list):
                    for i, item in enumerate(v):
                        if isinstance(item, dict):
                            merge(dst[k][i], item)
                        else:
                            dst[k][i] = item
                else:
                    dst[k] = v
        merge(self, params)
        return self


def test_update_writes_the_model_in_place():
    model = TinyModel(w=mx.array([1.0, 2.0]), sub={"b": mx.array([3.0])}, frozen=mx.array([5.0]))
    opt = optim.SGD(0.5)
    grads = {"w": mx.array([1.0, 1.0]), "sub": {"b": mx.array([2.0])}}
    assert opt.update(model, grads) is None
    np.testing.assert_allclose(to_numpy(model["w"]), [0.5, 1.5])
    np.testing.assert_allclose(to_numpy(model["sub"]["b"]), [2.0])
    np.testing.assert_allclose(to_numpy(model["frozen"]), [5.0])  # no gradient: unchanged
    assert "frozen" not in opt.state
    # the trainable parameters initialise the state explicitly too
    opt2 = optim.Adam(0.1)
    opt2.init(model.trainable_parameters())
    assert set(opt2.state) == {"step", "learning_rate", "w", "sub", "frozen"}
    assert to_numpy(opt2.step).item() == 0


def test_init_keeps_existing_state_and_adds_new_parameters():
    opt = optim.Adam(0.1)
    opt.init({"a": mx.ones((2,))})
    opt.state["a"]["m"] = mx.full((2,), 7.0)
    opt.init({"a": mx.ones((2,)), "b": [mx.ones((3,)), {"c": mx.ones((1,))}]})
    np.testing.assert_array_equal(to_numpy(opt.state["a"]["m"]), [7.0, 7.0])
    assert set(opt.state["b"][0]) == {"m", "v"} and set(opt.state["b"][1]["c"]) == {"m", "v"}
    np.testing.assert_array_equal(to_numpy(opt.state["b"][0]["v"]), np.zeros(3))


def test_step_and_learning_rate():
    opt = optim.SGD(0.1)
    assert dname(opt.step.dtype) == "uint64" and to_numpy(opt.step).item() == 0
    assert dname(opt.learning_rate.dtype) == "float32"
    np.testing.assert_allclose(to_numpy(opt.learning_rate), 0.1, rtol=1e-7)
    model = TinyModel(a=mx.array([1.0]))
    for _ in range(3):
        opt.update(model, {"a": mx.array([1.0])})
    assert to_numpy(opt.step).item() == 3
    np.testing.assert_allclose(to_numpy(model["a"]), [0.7], rtol=1e-6)
    opt.learning_rate = 0.5
    np.testing.assert_allclose(to_numpy(opt.learning_rate), 0.5)
    out = opt.apply_gradients({"a": mx.array([1.0])}, model)
    np.testing.assert_allclose(to_numpy(out["a"]), [0.2], rtol=1e-6)
    with pytest.raises(AttributeError):
        opt.step = 3


def _snapshot(opt):
    """A copy of the state's structure (its dicts are updated in place by
    later steps; the arrays are immutable). A checkpoint through
    tree_flatten/tree_unflatten is test_state_checkpoint_through_flatten."""
    return tree_map(lambda x: x, opt.state)


ROUND_TRIP = {
    "sgd": lambda: optim.SGD(0.1, momentum=0.9),
    "adam": lambda: optim.Adam(optim.cosine_decay(0.1, 10), bias_correction=True),
    "adafactor": lambda: optim.Adafactor(beta_1=0.9),
    "muon": lambda: optim.Muon(0.05),
    "lion": lambda: optim.Lion(0.05),
    "multi": lambda: optim.MultiOptimizer([optim.Muon(0.05), optim.AdamW(0.01)],
                                          [lambda path, w: w.ndim >= 2]),
}


@pytest.mark.parametrize("name", list(ROUND_TRIP))
def test_state_round_trip(name):
    params_np, grads_np = make_trees("float32", 4, seed=3)
    params = to_mx_tree(params_np, "float32")
    grads = [to_mx_tree(g, "float32") for g in grads_np]
    opt = ROUND_TRIP[name]()
    for g in grads[:3]:
        params = opt.apply_gradients(g, params)
    mx.eval(params, opt.state)
    saved = _snapshot(opt)
    expected = opt.apply_gradients(grads[3], params)

    fresh = ROUND_TRIP[name]()
    fresh.state = saved
    got = fresh.apply_gradients(grads[3], params)
    for (k, a), (_, b) in zip(tree_flatten(got), tree_flatten(expected)):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=k)
    assert [k for k, _ in tree_flatten(fresh.state)] == [k for k, _ in tree_flatten(opt.state)]
    for (k, a), (_, b) in zip(tree_flatten(fresh.state), tree_flatten(opt.state)):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=k)


def test_state_checkpoint_through_flatten():
    # what saving to a file and loading back gives: flat (path, array) pairs
    params_np, grads_np = make_trees("float32", 3, seed=6)
    params = to_mx_tree(params_np, "float32")
    grads = [to_mx_tree(g, "float32") for g in grads_np]
    opt = optim.AdamW(0.05, bias_correction=True)
    for g in grads[:2]:
        params = opt.apply_gradients(g, params)
    saved = {k: np.array(to_numpy(v)) for k, v in tree_flatten(opt.state)}
    dtypes = {k: v.dtype for k, v in tree_flatten(opt.state)}
    expected = opt.apply_gradients(grads[2], params)
    fresh = optim.AdamW(0.05, bias_correction=True)
    fresh.state = tree_unflatten([(k, mx.array(v).astype(dtypes[k])) for k, v in saved.items()])
    got = fresh.apply_gradients(grads[2], params)
    for (k, a), (_, b) in zip(tree_flatten(got), tree_flatten(expected)):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=k)
    assert to_numpy(fresh.step).item() == 3


def test_assigned_state_is_completed_for_new_parameters():
    opt = optim.Adam(0.1)
    opt.apply_gradients({"a": mx.ones((2,))}, {"a": mx.ones((2,))})
    fresh = optim.Adam(0.1)
    fresh.state = _snapshot(opt)
    fresh.apply_gradients({"a": mx.ones((2,)), "b": mx.ones((3,))}, {"a": mx.ones((2,)), "b": mx.ones((3,))})
    assert to_numpy(fresh.step).item() == 2
    assert set(fresh.state["b"]) == {"m", "v"}


# --------------------------------------------------------------------------
# schedules
# --------------------------------------------------------------------------

def sched_refs():
    return {
        "exponential_decay": (optim.exponential_decay(0.1, 0.7), lambda t: 0.1 * 0.7 ** t),
        "step_decay": (optim.step_decay(0.1, 0.5, 3), lambda t: 0.1 * 0.5 ** (t // 3)),
        "cosine_decay": (optim.cosine_decay(0.1, 8), lambda t: 0.05 * (1 + math.cos(math.pi * min(t, 8) / 8))),
        "cosine_decay_end": (optim.cosine_decay(0.1, 8, 0.02),
                             lambda t: 0.02 + 0.04 * (1 + math.cos(math.pi * min(t, 8) / 8))),
        "linear_schedule": (optim.linear_schedule(0.0, 0.1, 4), lambda t: 0.1 * min(t, 4) / 4),
        "linear_schedule_down": (optim.linear_schedule(1.0, 0.2, 5), lambda t: 1.0 - 0.8 * min(t, 5) / 5),
        "join_schedules": (
            optim.join_schedules([optim.linear_schedule(0.0, 0.1, 4), optim.cosine_decay(0.1, 6),
                                  optim.exponential_decay(0.01, 0.5)], [4, 10]),
            lambda t: (0.1 * t / 4 if t < 4 else
                       0.05 * (1 + math.cos(math.pi * min(t - 4, 6) / 6)) if t < 10 else 0.01 * 0.5 ** (t - 10))),
    }


@pytest.mark.parametrize("name", list(sched_refs()))
def test_schedule_matches_formula(name):
    schedule, ref = sched_refs()[name]
    for t in range(15):
        for step in (mx.array(t, mx.uint64), mx.array(t)):
            value = schedule(step)
            assert isinstance(value, mx.array) and dname(value.dtype) == "float32", (t, value)
            np.testing.assert_allclose(to_numpy(value), ref(t), rtol=1e-5, atol=1e-8, err_msg=f"step {t}")
        np.testing.assert_allclose(float(schedule(t)), ref(t), rtol=1e-5, atol=1e-8)


def test_join_schedules_on_an_array_of_steps():
    schedule, ref = sched_refs()["join_schedules"]
    steps = np.arange(15)
    np.testing.assert_allclose(to_numpy(schedule(mx.array(steps))), [ref(t) for t in steps], rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("name", ["exponential_decay", "cosine_decay", "join_schedules"])
def test_schedule_as_learning_rate(name):
    schedule, ref = sched_refs()[name]
    opt = optim.SGD(schedule)
    np.testing.assert_allclose(to_numpy(opt.learning_rate), ref(0), rtol=1e-6)
    w = mx.array([0.0])
    expected = 0.0
    for t in range(12):
        w = opt.apply_gradients({"w": mx.array([1.0])}, {"w": w})["w"]
        expected -= ref(t)  # the update after t steps uses schedule(t)
        np.testing.assert_allclose(to_numpy(opt.learning_rate), ref(t), rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(to_numpy(w), [expected], rtol=1e-5, atol=1e-7)
    # assigning a value lasts until the next update evaluates the schedule
    opt.learning_rate = 3.0
    np.testing.assert_allclose(to_numpy(opt.learning_rate), 3.0)
    opt.apply_gradients({"w": mx.array([1.0])}, {"w": w})
    np.testing.assert_allclose(to_numpy(opt.learning_rate), ref(12), rtol=1e-5, atol=1e-9)


def test_schedule_examples_from_the_documentation():
    opt = optim.SGD(learning_rate=optim.exponential_decay(1e-1, 0.9))
    for _ in range(5):
        opt.update(TinyModel(), {})
    np.testing.assert_allclose(to_numpy(opt.learning_rate), 0.1 * 0.9 ** 4, rtol=1e-6)
    opt = optim.Adam(learning_rate=optim.linear_schedule(0, 1e-1, 100))
    for _ in range(101):
        opt.update(TinyModel(), {})
    np.testing.assert_allclose(to_numpy(opt.learning_rate), 0.1, rtol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: optim.step_decay(0.1, 0.5, 0),
    lambda: optim.cosine_decay(0.1, 0),
    lambda: optim.linear_schedule(0.0, 0.1, 0),
    lambda: optim.join_schedules([], []),
    lambda: optim.join_schedules([optim.exponential_decay(0.1, 0.5)], [3]),
    lambda: optim.join_schedules([optim.exponential_decay(0.1, 0.5)] * 2, []),
], ids=["step_decay", "cosine_decay", "linear_schedule", "join_empty", "join_extra", "join_missing"])
def test_schedule_argument_errors(make):
    with pytest.raises(ValueError):
        make()


# --------------------------------------------------------------------------
# clip_grad_norm
# --------------------------------------------------------------------------

def test_clip_grad_norm_scales_a_nested_tree():
    rng = np.random.default_rng(4)
    grads_np = {"a": rng.standard_normal((3, 4)), "b": [rng.standard_normal(5), {"c": rng.standard_normal(())}]}
    grads = to_mx_tree(grads_np, "float32")
    leaves = [v for _, v in tree_flatten(grads_np)]
    norm = math.sqrt(sum(float(np.sum(np.float32(v) ** 2)) for v in leaves))
    clipped, total = clip_grad_norm_call(grads, 1.0)
    np.testing.assert_allclose(to_numpy(total), norm, rtol=1e-5)
    scale = 1.0 / (norm + 1e-6)
    for (k, got), (_, g) in zip(tree_flatten(clipped), tree_flatten(grads_np)):
        np.testing.assert_allclose(to_numpy(got), np.float32(g) * scale, rtol=1e-5, atol=1e-7, err_msg=k)
    assert isinstance(clipped["b"], list)
    # under the bound nothing changes
    same, total2 = clip_grad_norm_call(grads, norm * 2)
    np.testing.assert_allclose(to_numpy(total2), norm, rtol=1e-5)
    for (k, got), (_, g) in zip(tree_flatten(same), tree_flatten(grads)):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(g), err_msg=k)


def clip_grad_norm_call(grads, max_norm):
    clipped, total = optim.clip_grad_norm(grads, max_norm)
    mx.eval(clipped, total)
    return clipped, total


def test_clip_grad_norm_dtypes():
    clipped, total = clip_grad_norm_call({"a": mx.array([3.0, 4.0], mx.bfloat16)}, 1.0)
    assert dname(clipped["a"].dtype) == "bfloat16" and dname(total.dtype) == "bfloat16"
    np.testing.assert_allclose(to_numpy(clipped["a"]), [0.6, 0.8], rtol=1e-2)
    clipped, total = clip_grad_norm_call({"a": mx.array([3.0, 4.0], mx.bfloat16),
                                          "b": mx.array([0.0], mx.float16)}, 1.0)
    assert dname(clipped["a"].dtype) == "bfloat16" and dname(clipped["b"].dtype) == "float16"
    assert dname(total.dtype) == "float32"
    clipped, total = clip_grad_norm_call({"a": mx.array([3, 4])}, 10.0)
    assert dname(clipped["a"].dtype) == "float32"
    np.testing.assert_allclose(to_numpy(total), 5.0)
    clipped, total = clip_grad_norm_call({}, 1.0)
    assert clipped == {} and to_numpy(total).item() == 0.0


# --------------------------------------------------------------------------
# MultiOptimizer
# --------------------------------------------------------------------------

def test_multi_optimizer_routes_by_filter():
    params_np, grads_np = make_trees("float32", 3, seed=5)
    params = to_mx_tree(params_np, "float32")
    seen = []

    def matrices(path, w):
        seen.append(path)
        return w.ndim == 2

    multi = optim.MultiOptimizer([optim.Muon(0.05), optim.SGD(0.1), optim.AdamW(0.01)],
                                 [matrices, lambda path, w: path.startswith("layers.1")])
    muon, sgd, adamw = optim.Muon(0.05), optim.SGD(0.1), optim.AdamW(0.01)
    p = expected = params
    for g_np in grads_np:
        g = to_mx_tree(g_np, "float32")
        p = multi.apply_gradients(g, p)
        # the same updates, each optimizer given its part by hand
        parts = [(muon, {"w": g["w"], "tall": g["tall"]}),
                 (sgd, {"layers": [{}, {"k": g["layers"][1]["k"]}]}),
                 (adamw, {"layers": [{"b": g["layers"][0]["b"]}]})]
        new = {}
        for opt, sub in parts:
            new.update(dict(tree_flatten(opt.apply_gradients(sub, expected))))
        expected = {"w": new["w"], "tall": new["tall"],
                    "layers": [{"b": new["layers.0.b"]}, {"k": new["layers.1.k"]}]}
    expected = dict(tree_flatten(expected))
    assert sorted(set(seen)) == ["layers.0.b", "layers.1.k", "tall", "w"]
    for k, v in tree_flatten(p):
        np.testing.assert_allclose(to_numpy(v), to_numpy(expected[k]), rtol=1e-6, atol=1e-7, err_msg=k)
    assert isinstance(p["layers"], list)
    states = multi.state["states"]
    assert len(states) == 3
    assert set(states[0]) == {"step", "learning_rate", "w", "tall"}
    assert set(states[2]) == {"step", "learning_rate", "layers"}
    assert to_numpy(states[1]["step"]).item() == 3
    np.testing.assert_allclose(to_numpy(multi.learning_rate), 0.05)


def test_multi_optimizer_filter_count():
    with pytest.raises(ValueError):
        optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.1)], [])
    with pytest.raises(ValueError):
        optim.MultiOptimizer([optim.SGD(0.1)], [lambda p, w: True])
    with pytest.raises(ValueError):
        optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.1)], [lambda p, w: True]).state = {"states": [{}]}


def test_multi_optimizer_list_positions():
    # a list split between optimizers: the gaps are {} in each state
    multi = optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.01)], [lambda path, w: path.endswith("1")])
    ps = {"x": [mx.ones((2,)), mx.ones((2,)), mx.ones((2,))]}
    out = multi.apply_gradients(ps, ps)
    np.testing.assert_allclose(to_numpy(out["x"][1]), [0.9, 0.9], rtol=1e-6)
    np.testing.assert_allclose(to_numpy(out["x"][0]), [1 - 0.01 * 0.1 / (math.sqrt(1e-3) + 1e-8)] * 2, rtol=1e-5)
    sgd_state, adam_state = multi.state["states"]
    assert sgd_state["x"][0] == {} and set(sgd_state["x"][1]) == {"v"}
    assert len(adam_state["x"]) == 3 and adam_state["x"][1] == {}


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

def test_schedule_returning_the_wrong_type_fails():
    with pytest.raises((TypeError, AttributeError)):
        opt = optim.SGD(lambda step: "fast")
        opt.apply_gradients({"a": mx.ones((2,))}, {"a": mx.ones((2,))})


@ember_only
def test_schedule_returning_the_wrong_type_names_it():
    # MLX stores the value and fails at the update (AttributeError: 'str'
    # object has no attribute 'astype'); Ember checks the value at once
    with raises(TypeError, "learning_rate schedule returned str"):
        optim.SGD(lambda step: "fast")
    calls = []

    def later(step):
        calls.append(step)
        return mx.array(0.1) if len(calls) == 1 else 0.1

    opt = optim.Adam(later)
    with raises(TypeError, "schedule returned float"):
        opt.apply_gradients({"a": mx.ones((2,))}, {"a": mx.ones((2,))})


def test_gradient_without_parameter():
    opt = optim.SGD(0.1)
    with pytest.raises(KeyError):
        opt.apply_gradients({"a": mx.ones((2,)), "b": mx.ones((2,))}, {"a": mx.ones((2,))})
    opt = optim.SGD(0.1)
    with pytest.raises(IndexError):
        opt.apply_gradients({"a": [mx.ones((2,)), mx.ones((2,))]}, {"a": [mx.ones((2,))]})


def test_gradient_shape_mismatch():
    opt = optim.Adam(0.1)
    with pytest.raises(ValueError):
        mx.eval(opt.apply_gradients({"a": mx.ones((3,))}, {"a": mx.ones((2, 2))}))
    opt = optim.SGD(0.1)
    with pytest.raises(ValueError):
        mx.eval(opt.apply_gradients({"a": mx.ones((2,))}, {"a": [mx.ones((2,))]}))


@ember_only
def test_mismatched_trees_name_the_path():
    # MLX raises KeyError 'b' / IndexError / a broadcasting error, and
    # silently indexes into an array parameter under a list gradient or
    # broadcasts a gradient of another shape; Ember names the position
    ps = {"a": mx.ones((2,)), "l": [mx.ones((3,))]}
    cases = [
        (KeyError, "gradient 'b' has no parameter", {"b": mx.ones((2,))}),
        (IndexError, "gradient at 'l' has 2 entries", {"l": [mx.ones((3,)), mx.ones((3,))]}),
        (ValueError, r"gradient at 'a' has shape \(1,\) but the parameter has shape \(2,\)", {"a": mx.ones((1,))}),
        (ValueError, "gradient at 'a' is a list but the parameter is an array", {"a": [mx.ones((2,))]}),
        (ValueError, "gradient at 'l' is a dict but the parameter is a list", {"l": {"x": mx.ones((3,))}}),
        (TypeError, "gradient at 'a' is a NoneType", {"a": None}),
    ]
    for exc, msg, grads in cases:
        opt = optim.SGD(0.1)
        opt.init(ps)
        with raises(exc, msg):
            opt.apply_gradients(grads, ps)
    opt = optim.SGD(0.1)
    with raises(TypeError, "parameter at 'n' is a NoneType"):
        opt.init({"n": None})


def test_state_for_parameters_init_did_not_see():
    # once initialised (by init or a first update, even an empty one) the
    # state is not extended by later gradients
    ab = {"a": mx.ones((2,)), "b": mx.ones((2,))}
    opt = optim.Adam(0.1)
    opt.init({"a": mx.ones((2,))})
    with pytest.raises(KeyError):
        opt.apply_gradients(ab, ab)
    opt = optim.SGD(0.1)
    opt.update(TinyModel(), {})
    with pytest.raises(KeyError):
        opt.apply_gradients(ab, ab)


def test_adafactor_needs_a_learning_rate_without_relative_step():
    opt = optim.Adafactor(relative_step=False)
    with pytest.raises(KeyError):
        opt.apply_gradients({"a": mx.ones((2,))}, {"a": mx.ones((2,))})


@pytest.mark.parametrize("make", [
    lambda: optim.SGD(0.1, nesterov=True),
    lambda: optim.SGD(0.1, momentum=0.9, dampening=0.1, nesterov=True),
    lambda: optim.RMSprop(0.1, alpha=-0.1),
    lambda: optim.RMSprop(0.1, eps=0.0),
    lambda: optim.Adagrad(0.1, eps=-1.0),
    lambda: optim.AdaDelta(0.1, rho=-0.5),
    lambda: optim.AdaDelta(0.1, eps=0.0),
    lambda: optim.Adam(0.1, betas=[1.0, 0.9]),
    lambda: optim.AdamW(0.1, betas=[0.9, -0.1]),
    lambda: optim.Adamax(0.1, eps=-1.0),
    lambda: optim.Lion(0.1, betas=[2.0, 0.9]),
    lambda: optim.SGD("fast"),
], ids=["sgd_nesterov", "sgd_nesterov_dampening", "rmsprop_alpha", "rmsprop_eps", "adagrad_eps",
        "adadelta_rho", "adadelta_eps", "adam_beta1", "adamw_beta2", "adamax_eps", "lion_beta1", "sgd_lr_str"])
def test_hyperparameter_errors(make):
    with pytest.raises(ValueError):
        make()


def test_base_optimizer_is_abstract():
    with pytest.raises(NotImplementedError):
        optim.Optimizer().apply_gradients({"a": mx.ones((2,))}, {"a": mx.ones((2,))})
    assert set(optim.Optimizer().state) == {"step"}


@ember_only
def test_multi_optimizer_step_is_the_first_optimizers():
    # MLX's MultiOptimizer.step raises KeyError 'step' (its state is
    # {"states": [...]}); Ember reports the first optimizer's count
    multi = optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.1)], [lambda path, w: path == "a"])
    ps = {"a": mx.ones((2,)), "b": mx.ones((2,))}
    multi.apply_gradients(ps, ps)
    assert to_numpy(multi.step).item() == 1


def test_training_a_least_squares_model():
    # end to end with the transforms: value_and_grad over a parameter tree
    rng = np.random.default_rng(7)
    x = mx.array(rng.standard_normal((64, 3)).astype(np.float32))
    y = x @ mx.array([[1.0], [-2.0], [0.5]]) + 0.3
    params = {"w": mx.zeros((3, 1)), "b": [mx.zeros((1,))]}

    def loss(p):
        return mx.mean(mx.square(x @ p["w"] + p["b"][0] - y))

    step = mx.value_and_grad(loss)
    opt = optim.Adam(optim.join_schedules([optim.linear_schedule(0.01, 0.1, 5), optim.cosine_decay(0.1, 200)], [5]))
    first = None
    for _ in range(150):
        value, grads = step(params)
        grads, _ = optim.clip_grad_norm(grads, 10.0)
        params = opt.apply_gradients(grads, params)
        mx.eval(params, opt.state)
        first = value.item() if first is None else first
    assert value.item() < 1e-3 * first
    np.testing.assert_allclose(to_numpy(params["w"]).ravel(), [1.0, -2.0, 0.5], atol=2e-2)


@ember_only
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("make", [lambda: optim.Adam(1e-2), lambda: optim.Adam(1e-2, bias_correction=True),
                                  lambda: optim.AdamW(1e-2, bias_correction=True, weight_decay=0.01),
                                  lambda: optim.AdamW(1e-2, weight_decay=0.1)],
                         ids=["adam", "adam-bias-correction", "adamw-bias-correction", "adamw"])
def test_adam_step_is_one_kernel_with_the_unfused_bits(dtype, make):
    # Adam's per-parameter step is compiled (shapeless): one kernel per
    # parameter, bit for bit the step written out (compile switched off)
    dt = getattr(mx, dtype)
    rng = np.random.default_rng(0)
    p0 = {"w": rng.standard_normal((64, 48)), "b": rng.standard_normal(5)}
    gs = [{k: rng.standard_normal(v.shape) for k, v in p0.items()} for _ in range(3)]

    def run():
        opt = make()
        p = {k: mx.array(v, dtype=dt) for k, v in p0.items()}
        for g in gs:
            p = opt.apply_gradients({k: mx.array(v, dtype=dt) for k, v in g.items()}, p)
        return p, opt
    p, opt = run()
    buf = io.StringIO()
    mx.export_to_dot(buf, p["w"])
    text = buf.getvalue()
    assert text.count("Compiled[") == 3 and "Sqrt\"" not in text, text  # one per step
    mx.eval(p, opt.state)
    mx.disable_compile()
    try:
        q, opt2 = run()
        mx.eval(q, opt2.state)
    finally:
        mx.enable_compile()
    for k in p0:
        for a, b in ((p[k], q[k]), (opt.state[k]["m"], opt2.state[k]["m"]), (opt.state[k]["v"], opt2.state[k]["v"])):
            assert a.dtype == b.dtype == dt
            np.testing.assert_array_equal(np.array(a.astype(mx.float32)), np.array(b.astype(mx.float32)))
