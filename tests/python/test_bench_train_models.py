"""The models of benchmarks/bench_train.py are right: the MLP step against a
float64 NumPy forward and backward, the transformer's loss against a NumPy
forward and its gradients against central differences of that forward
(float64), the AdamW configuration against PyTorch's update rule written out
in NumPy, and training lowers the loss. With PyTorch importable (the peers'
interpreter) one step's gradients are also compared with PyTorch's for the
same weights. No peer is needed otherwise."""

import os
import sys

import numpy as np
import pytest

from conftest import mx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import bench_train as bt  # noqa: E402

nn, optim = bt._libs(mx)

# a small transformer for the float64 checks: vocabulary 40, d 16, 2 heads,
# sequence 6, batch 3, 2 layers, MLP 24
SMALL = dict(vocab=40, d=16, heads=2, seq=6, layers=2, ffn=24)
SMALL_BATCH = 3


def _small_transformer(rng, dtype=np.float32):
    specs = bt.transformer_param_specs(vocab=SMALL["vocab"], d=SMALL["d"], seq=SMALL["seq"],
                                       layers=SMALL["layers"], ffn=SMALL["ffn"])
    params = [p.astype(dtype) for p in bt.transformer_init(rng, specs)]
    tokens = rng.integers(0, SMALL["vocab"], (SMALL_BATCH, SMALL["seq"])).astype(np.int32)
    targets = rng.integers(0, SMALL["vocab"], (SMALL_BATCH, SMALL["seq"])).astype(np.int32)
    _, Transformer = bt.mlx_models(mx)
    model = Transformer(**SMALL)
    mxdt = mx.float64 if dtype == np.float64 else mx.float32
    bt.mlx_set_params(model, specs, [mx.array(p, mxdt) for p in params])
    return model, specs, params, mx.array(tokens), mx.array(targets), tokens, targets


def _lm_loss(model):
    def loss(tokens, targets):
        logits = model(tokens)
        return nn.losses.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                       reduction="mean")
    return loss


def _close(got, want, rtol, atol_rel):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape
    scale = max(1e-30, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol_rel * scale)


# --- the MLP ------------------------------------------------------------------

def test_mlp_gradients_match_numpy():
    arrs = bt.mlp_inputs(np.random.default_rng(1))
    MLP, _ = bt.mlx_models(mx)
    model = MLP()
    for i, layer in enumerate(model.layers):
        layer.weight, layer.bias = mx.array(arrs[2 * i]), mx.array(arrs[2 * i + 1])
    x, labels = mx.array(arrs[-2]), mx.array(arrs[-1])
    vg = nn.value_and_grad(model, lambda x, y: nn.losses.cross_entropy(model(x), y, reduction="mean"))
    loss, grads = vg(x, labels)
    want_loss, want = bt.mlp_loss_and_grads(arrs[:-2], arrs[-2], arrs[-1])
    assert abs(float(loss) - want_loss) <= 1e-5 * abs(want_loss)
    for i, layer in enumerate(grads["layers"]):
        _close(layer["weight"], want[2 * i], 1e-4, 1e-5)
        _close(layer["bias"], want[2 * i + 1], 1e-4, 1e-5)


def test_mlp_step_matches_numpy_and_loss_falls():
    arrs = bt.mlp_inputs(np.random.default_rng(2))
    step = bt.mlp_mlx(mx, *[mx.array(a) for a in arrs])
    first = [np.array(o) for o in step()]
    want = bt.mlp_ref(*arrs)
    assert len(first) == len(want) == 7
    for got, w in zip(first, want):
        assert got.dtype == np.float32
        _close(got, w, 1e-4, 1e-5)
    losses = [float(step()[0]) for _ in range(5)]
    assert all(b < a for a, b in zip([float(first[0])] + losses, losses)), losses
    # the check the benchmark applies to its last timed step
    assert bt.loss_fell(first, [np.array(losses[-1])]) is None
    assert "did not fall" in bt.loss_fell([np.array(1.0)], [np.array(2.0)])
    assert "after training" in bt.loss_fell([np.array(1.0)], [np.array(np.nan)])


# --- the transformer ----------------------------------------------------------

def test_transformer_loss_matches_numpy():
    model, _, params, tokens, targets, tok_np, tgt_np = _small_transformer(np.random.default_rng(3))
    loss = _lm_loss(model)(tokens, targets)
    assert loss.dtype == mx.float32 and loss.shape == ()
    want = bt.transformer_loss_ref(params, tok_np, tgt_np, heads=SMALL["heads"])
    assert abs(float(loss) - want) <= 1e-5 * abs(want)
    # the causal mask matters: changing the last token leaves every
    # earlier position's loss alone
    logits = np.array(model(tokens))
    tok2 = tok_np.copy()
    tok2[:, -1] = (tok2[:, -1] + 1) % SMALL["vocab"]
    logits2 = np.array(model(mx.array(tok2)))
    np.testing.assert_allclose(logits2[:, :-1], logits[:, :-1], rtol=1e-6, atol=1e-6)
    assert np.abs(logits2[:, -1] - logits[:, -1]).max() > 1e-4


def test_transformer_gradients_match_numpy_differences():
    """Each parameter's gradient (float64, through nn.value_and_grad) along a
    random direction equals the central difference of the NumPy forward."""
    rng = np.random.default_rng(4)
    model, specs, params, tokens, targets, tok_np, tgt_np = _small_transformer(rng, np.float64)
    loss, grads = nn.value_and_grad(model, _lm_loss(model))(tokens, targets)
    assert loss.dtype == mx.float64
    got = bt.mlx_transformer_params(grads, specs)
    eps = 1e-6
    for i, ((name, shape), g) in enumerate(zip(specs, got)):
        g = np.array(g)
        assert g.shape == shape, name
        v = rng.standard_normal(shape)
        plus = [p if j != i else p + eps * v for j, p in enumerate(params)]
        minus = [p if j != i else p - eps * v for j, p in enumerate(params)]
        fd = (bt.transformer_loss_ref(plus, tok_np, tgt_np, heads=SMALL["heads"])
              - bt.transformer_loss_ref(minus, tok_np, tgt_np, heads=SMALL["heads"])) / (2 * eps)
        an = float(np.sum(g * v))
        assert abs(an - fd) <= 1e-6 * max(1.0, abs(fd)), (name, an, fd)


def test_transformer_adamw_is_pytorchs_rule_and_loss_falls():
    """The benchmark's AdamW (bias correction on) makes PyTorch's update,
    written out: w <- w (1 - lr wd) - lr m_hat / (sqrt(v_hat) + eps)."""
    model, specs, params, tokens, targets, _, _ = _small_transformer(np.random.default_rng(5))
    a = bt.ADAMW
    opt = optim.AdamW(learning_rate=a["lr"], betas=[a["b1"], a["b2"]], eps=a["eps"],
                      weight_decay=a["wd"], bias_correction=True)
    vg = nn.value_and_grad(model, _lm_loss(model))
    w = [p.astype(np.float64) for p in params]
    m = [np.zeros_like(p) for p in w]
    v = [np.zeros_like(p) for p in w]
    losses = []
    for t in range(1, 4):
        loss, grads = vg(tokens, targets)
        g = [np.array(x, np.float64) for x in bt.mlx_transformer_params(grads, specs)]
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state)
        losses.append(float(loss))
        for j in range(len(w)):
            m[j] = a["b1"] * m[j] + (1 - a["b1"]) * g[j]
            v[j] = a["b2"] * v[j] + (1 - a["b2"]) * g[j] ** 2
            mh, vh = m[j] / (1 - a["b1"] ** t), v[j] / (1 - a["b2"] ** t)
            w[j] = w[j] * (1 - a["lr"] * a["wd"]) - a["lr"] * mh / (np.sqrt(vh) + a["eps"])
        for (name, _), got, want in zip(specs, bt.mlx_transformer_params(model, specs), w):
            np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=2e-6, err_msg=name)
    for _ in range(5):
        loss, grads = vg(tokens, targets)
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state)
        losses.append(float(loss))
    assert losses[-1] < losses[0] - 0.1, losses


def test_mlx_set_params_places_every_array():
    """Every canonical name lands on its own parameter (no two names share
    one, none is left at its random initial value)."""
    model, specs, params, *_ = _small_transformer(np.random.default_rng(6))
    got = bt.mlx_transformer_params(model, specs)
    assert len(got) == len(specs) == len(params) == 2 + 12 * SMALL["layers"] + 4
    for (name, shape), g, p in zip(specs, got, params):
        assert tuple(g.shape) == shape, name
        np.testing.assert_array_equal(np.array(g), p, err_msg=name)
    n_model = len([1 for _ in _leaves(model.parameters())])
    assert n_model == len(specs)


def _leaves(tree):
    if isinstance(tree, dict):
        for v in tree.values():
            yield from _leaves(v)
    elif isinstance(tree, (list, tuple)):
        for v in tree:
            yield from _leaves(v)
    else:
        yield tree


# --- against PyTorch, where it is importable ----------------------------------

def test_transformer_gradients_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    model, specs, params, tokens, targets, tok_np, tgt_np = _small_transformer(rng)
    _, grads = nn.value_and_grad(model, _lm_loss(model))(tokens, targets)
    tmodel = bt.torch_models(torch)(**SMALL)
    named = dict(tmodel.named_parameters())
    with torch.no_grad():
        for (name, _), a in zip(specs, params):
            named[name + ".weight" if name.endswith("_emb") else name].copy_(torch.from_numpy(a))
    logits = tmodel(torch.from_numpy(tok_np).long())
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             torch.from_numpy(tgt_np).long().reshape(-1))
    loss.backward()
    for (name, _), g in zip(specs, bt.mlx_transformer_params(grads, specs)):
        tg = named[name + ".weight" if name.endswith("_emb") else name].grad.numpy()
        _close(np.array(g), tg, 1e-3, 1e-4)


def test_mlp_step_matches_torch():
    torch = pytest.importorskip("torch")
    arrs = bt.mlp_inputs(np.random.default_rng(8))
    ours = [np.array(o) for o in bt.mlp_mlx(mx, *[mx.array(a) for a in arrs])()]
    theirs = [t.numpy() for t in bt.mlp_torch(torch, *[torch.from_numpy(a) for a in arrs])()]
    for a, b in zip(ours, theirs):
        _close(a, b, 1e-4, 1e-5)


# --- the harness's check of a stateful step ---------------------------------

def _stateful_case(step_size, check_last):
    import harness
    state = {"loss": 2.0}

    def impl(m, x):
        def fn():
            out = np.float32(state["loss"])
            state["loss"] += step_size
            return np.array(out)
        return fn
    case = harness.Case(name="step", metric="ms", amount=1, make_inputs=lambda rng: [np.zeros(1)],
                        reference=lambda x: np.array(2.0), impls={"numpy": impl},
                        check_last=check_last)
    adapter = harness.NumpyAdapter()
    adapter.load()
    return harness.time_case(adapter, case, [np.zeros(1)], np.array(2.0), warmup=2, repeat=3,
                             max_seconds=1.0)


def test_harness_checks_a_stateful_step_with_check_last():
    assert _stateful_case(-0.1, bt.loss_fell)["status"] == "ok"
    r = _stateful_case(+0.1, bt.loss_fell)
    assert r["status"] == "wrong" and "did not fall" in r["error"]
    # without check_last the last step is held to the first step's reference
    r = _stateful_case(-0.1, None)
    assert r["status"] == "wrong" and r["error"].startswith("last timed run")
