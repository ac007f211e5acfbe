"""The training examples (``examples/``) in their shortened modes: each
``main`` runs a few steps and the loss must fall; the digits MLP must also
reach a test accuracy no linear guess gets; the per-example gradients must
match a NumPy backward pass; LoRA must leave the base weights untouched.

Skipped where scikit-learn, tqdm or matplotlib is missing (the ``examples``
extra of pyproject.toml installs them; .ci/run installs it)."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("tqdm")
pytest.importorskip("matplotlib")

from conftest import IS_MLX, ember_only, mx  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BACKEND_MODULES = {"ember": "mlx", "ember.core": "mlx.core", "ember.nn": "mlx.nn",
                   "ember.optimizers": "mlx.optimizers", "ember.utils": "mlx.utils"}

nn = importlib.import_module("mlx.nn" if IS_MLX else "ember.nn")
tree_flatten = importlib.import_module("mlx.utils" if IS_MLX else "ember.utils").tree_flatten


def _import_examples(names):
    """The example modules. With EMBER_TEST_BACKEND=mlx their ``import
    ember.core as mx`` & co. get MLX's modules (aliased in ``sys.modules``
    only while they are imported), so the same tests check them on MLX."""
    saved = {k: sys.modules.get(k) for k in BACKEND_MODULES}
    sys.path.insert(0, str(EXAMPLES))
    try:
        if IS_MLX:
            for k, v in BACKEND_MODULES.items():
                sys.modules[k] = importlib.import_module(v)
        return [importlib.import_module(n) for n in names]
    finally:
        sys.path.remove(str(EXAMPLES))
        if IS_MLX:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v


char_transformer, digits_cnn, digits_mlp, lora, per_example_grads = _import_examples(
    ["char_transformer", "digits_cnn", "digits_mlp", "lora", "per_example_grads"])

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------
# digits
# ---------------------------------------------------------------------------

def test_load_data_split():
    x_tr, y_tr, x_te, y_te = digits_mlp.load_data(0)
    assert x_tr.shape == (1437, 64) and x_te.shape == (360, 64)
    assert x_tr.dtype == np.float32 and 0 <= x_tr.min() and x_tr.max() <= 1
    assert set(np.unique(y_te)) == set(range(10))
    xi = digits_mlp.load_data(0, image=True)[0]
    np.testing.assert_array_equal(xi.reshape(-1, 64), x_tr)
    # a different seed, a different split of the same data
    assert not np.array_equal(digits_mlp.load_data(1)[1], y_tr)


def test_digits_mlp_learns():
    out = digits_mlp.main(steps=150, progress=False)
    assert out["final_loss"] < 0.25 * out["initial_loss"]
    assert len(out["losses"]) == 150
    # a linear classifier on these pixels tops out near 0.95; the MLP passes it
    assert out["accuracy"] >= 0.96, out["accuracy"]


def test_digits_mlp_is_reproducible():
    a = digits_mlp.main(steps=5, progress=False)
    b = digits_mlp.main(steps=5, progress=False)
    assert a["losses"] == b["losses"]
    c = digits_mlp.main(steps=5, seed=1, progress=False)
    assert c["losses"] != a["losses"]


def test_digits_mlp_plot(tmp_path):
    path = tmp_path / "curves.png"
    out = digits_mlp.main(steps=20, plot=str(path), progress=False)
    assert len(out["evals"]) == 10
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5000


@ember_only  # the script in a fresh interpreter imports ember itself, not the backend under test
def test_digits_mlp_command_line(tmp_path):
    """The script as the README runs it, shortened: exit status 0, the PNG
    written, the accuracy printed."""
    path = tmp_path / "cli.png"
    env = dict(os.environ, MPLBACKEND="Agg")
    res = subprocess.run([sys.executable, str(EXAMPLES / "digits_mlp.py"), "--steps", "30", "--no-progress",
                          "--plot", str(path)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "test accuracy" in res.stdout and path.read_bytes().startswith(PNG_MAGIC)


def test_digits_cnn_learns(tmp_path):
    path = tmp_path / "cnn.png"
    out = digits_cnn.main(steps=60, progress=False, plot=str(path))
    assert out["final_loss"] < 0.5 * out["initial_loss"]
    assert out["accuracy"] > 0.8, out["accuracy"]
    assert path.read_bytes().startswith(PNG_MAGIC)


def test_cnn_shapes():
    mx.random.seed(0)
    model = digits_cnn.CNN(4, 6)
    assert model(mx.zeros((3, 8, 8, 1))).shape == (3, 10)
    assert model.head.weight.shape == (10, 24)


# ---------------------------------------------------------------------------
# character transformer
# ---------------------------------------------------------------------------

def test_encode_decode():
    text = "def f(x):\n\treturn x  # é"
    ids = char_transformer.encode(text.expandtabs(4))
    assert ids.dtype == np.int32 and len(ids) == len(text.expandtabs(4))
    assert char_transformer.decode(ids) == "def f(x):\n    return x  # ?"
    assert len(char_transformer.VOCAB) == 96


def test_corpus_is_deterministic_stdlib():
    files = char_transformer.stdlib_files()
    assert files == sorted(files) and all(f.endswith(".py") for f in files)
    assert os.path.dirname(files[0]) == os.path.dirname(os.__file__)
    text = char_transformer.load_corpus(50_000)
    assert len(text) == 50_000 and text == char_transformer.load_corpus(50_000)


def test_attention_is_causal():
    """Changing a later character does not change an earlier position's
    logits; changing an earlier one does change later ones."""
    mx.random.seed(0)
    model = char_transformer.TransformerLM(96, 32, 4, 2)
    x = np.random.default_rng(0).integers(0, 96, (1, 12)).astype(np.int32)
    y = x.copy()
    y[0, 7] = (y[0, 7] + 1) % 96
    a, b = np.array(model(mx.array(x))), np.array(model(mx.array(y)))
    np.testing.assert_array_equal(a[:, :7], b[:, :7])
    assert np.abs(a[:, 7:] - b[:, 7:]).max() > 1e-4


def test_attention_matches_numpy():
    """One attention layer against a NumPy version (rope on the pairs
    ``(i, i + d/2)``, causal softmax)."""
    mx.random.seed(1)
    B, L, D, H = 2, 5, 16, 2
    att = char_transformer.Attention(D, H)
    x = np.random.default_rng(1).standard_normal((B, L, D)).astype(np.float32)
    got = np.array(att(mx.array(x)))

    def w(name):
        return np.array(att[name].weight).astype(np.float64)

    def heads(t):
        return t.reshape(B, L, H, D // H).transpose(0, 2, 1, 3)

    def rope(t):
        d = D // H
        half = d // 2
        theta = np.arange(L)[:, None] * 10000.0 ** (-np.arange(half) / half)
        c, s = np.cos(theta), np.sin(theta)
        a, b = t[..., :half], t[..., half:]
        return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)

    xd = x.astype(np.float64)
    q, k, v = heads(xd @ w("query_proj").T), heads(xd @ w("key_proj").T), heads(xd @ w("value_proj").T)
    q, k = rope(q), rope(k)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    scores = np.where(np.tril(np.ones((L, L), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(B, L, D)
    np.testing.assert_allclose(got, o @ w("out_proj").T, rtol=1e-4, atol=1e-5)


def test_char_transformer_learns():
    out = char_transformer.main(steps=20, chars=200_000, sample_length=30, progress=False)
    assert out["final_loss"] < out["initial_loss"] - 0.5, (out["initial_loss"], out["final_loss"])
    assert out["start_step"] == 0 and out["end_step"] == 20
    assert len(out["sample"]) == 30 and set(out["sample"]) <= set(char_transformer.VOCAB)


def test_generate_greedy_is_deterministic():
    mx.random.seed(0)
    model = char_transformer.TransformerLM(96, 32, 4, 1)
    a = char_transformer.generate(model, "import ", 10, 16, temperature=0)
    assert a == char_transformer.generate(model, "import ", 10, 16, temperature=0, seed=5)
    assert len(a) == 10


def test_char_transformer_save_and_resume(tmp_path):
    """4 steps, save, resume for 4 more: the same losses and the same final
    model as 8 steps in one go (the batches depend only on the step)."""
    kw = dict(chars=100_000, dims=32, sample_length=0, progress=False)
    whole = char_transformer.main(steps=8, **kw)
    ckpt = str(tmp_path / "ckpt")
    first = char_transformer.main(steps=4, save=ckpt, **kw)
    assert {p.name for p in Path(ckpt).iterdir()} == {"model.safetensors", "optimizer.safetensors", "config.json"}
    second = char_transformer.main(steps=4, resume=ckpt, **kw)
    assert second["start_step"] == 4 and second["end_step"] == 8
    assert second["initial_loss"] == first["final_loss"]
    np.testing.assert_allclose(first["losses"] + second["losses"], whole["losses"], rtol=1e-6)
    np.testing.assert_allclose(second["final_loss"], whole["final_loss"], rtol=1e-6)


# ---------------------------------------------------------------------------
# per-example gradients
# ---------------------------------------------------------------------------

def _numpy_per_example_grads(params, x, y):
    """Backward pass of the three-layer ReLU MLP with cross entropy, one
    example at a time, in float64."""
    W = [np.array(params["layers"][i]["weight"], np.float64) for i in range(3)]
    b = [np.array(params["layers"][i]["bias"], np.float64) for i in range(3)]
    out = []
    for xi, yi in zip(x.astype(np.float64), y):
        h1 = np.maximum(W[0] @ xi + b[0], 0)
        h2 = np.maximum(W[1] @ h1 + b[1], 0)
        z = W[2] @ h2 + b[2]
        p = np.exp(z - z.max())
        p /= p.sum()
        dz = p - np.eye(10)[yi]
        dh2 = (W[2].T @ dz) * (h2 > 0)
        dh1 = (W[1].T @ dh2) * (h1 > 0)
        out.append([(np.outer(dh1, xi), dh1), (np.outer(dh2, h1), dh2), (np.outer(dz, h2), dz)])
    return out


def test_per_example_grads_match_numpy():
    mx.random.seed(0)
    x_tr, y_tr, _, _ = digits_mlp.load_data(0)
    model = digits_mlp.MLP(64, 16, 10)
    x, y = x_tr[:6], y_tr[:6]
    vectorized, looped = per_example_grads.per_example_grad_fns(model)
    params = model.trainable_parameters()
    before = {k: np.array(v) for k, v in tree_flatten(params)}
    ref = _numpy_per_example_grads(params, x, y)
    for fn in (vectorized, looped):
        g = fn(params, mx.array(x), mx.array(y))
        for i in range(3):
            for name, j in (("weight", 0), ("bias", 1)):
                got = np.array(g["layers"][i][name])
                assert got.shape == (6,) + tuple(params["layers"][i][name].shape)
                np.testing.assert_allclose(got, np.stack([r[i][j] for r in ref]), rtol=1e-4, atol=1e-6)
    # the model holds its own parameters again afterwards (no traced array left in it)
    after = dict(tree_flatten(model.parameters()))
    assert after.keys() == before.keys()
    for k, v in after.items():
        np.testing.assert_array_equal(np.array(v), before[k])


def test_clipped_mean_matches_numpy():
    rng = np.random.default_rng(0)
    g = {"a": rng.standard_normal((5, 3, 2)).astype(np.float32), "b": [rng.standard_normal((5, 4)).astype(np.float32)]}
    mean, norms = per_example_grads.clipped_mean({"a": mx.array(g["a"]), "b": [mx.array(g["b"][0])]}, 1.5)
    ref_norms = np.sqrt((g["a"] ** 2).sum((1, 2)) + (g["b"][0] ** 2).sum(1))
    np.testing.assert_allclose(np.array(norms), ref_norms, rtol=1e-5)
    scale = np.minimum(1, 1.5 / ref_norms)
    np.testing.assert_allclose(np.array(mean["a"]), (g["a"] * scale[:, None, None]).mean(0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.array(mean["b"][0]), (g["b"][0] * scale[:, None]).mean(0), rtol=1e-5, atol=1e-7)


def test_per_example_grads_example():
    out = per_example_grads.main(steps=100, batch_size=32, progress=False)
    assert out["max_abs_diff"] < 1e-5
    assert out["vmap_seconds"] > 0 and out["loop_seconds"] > 0
    assert out["final_loss"] < 0.5 * out["initial_loss"]
    assert out["accuracy"] > 0.8


# ---------------------------------------------------------------------------
# LoRA
# ---------------------------------------------------------------------------

def test_lora_linear():
    mx.random.seed(0)
    base = nn.Linear(6, 5)
    layer = lora.LoRALinear(base, rank=2, alpha=4.0)
    x = mx.random.normal((3, 6))
    # lora_b starts at zero: the layer is its base
    np.testing.assert_array_equal(np.array(layer(x)), np.array(base(x)))
    layer.lora_b = mx.random.normal((2, 5))
    ref = (np.array(x) @ np.array(base.weight).T + np.array(base.bias)
           + 2.0 * np.array(x) @ np.array(layer.lora_a) @ np.array(layer.lora_b))
    np.testing.assert_allclose(np.array(layer(x)), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(layer.fuse()(x)), ref, rtol=1e-5, atol=1e-5)


def test_apply_lora_trains_only_adapters():
    mx.random.seed(0)
    model = char_transformer.TransformerLM(96, 16, 2, 2)
    lora.apply_lora(model, rank=4, alpha=8.0)
    names = sorted(k for k, _ in tree_flatten(model.trainable_parameters()))
    assert names == sorted(f"blocks.{i}.attn.{p}.{ab}" for i in range(2) for p in ("query_proj", "value_proj")
                           for ab in ("lora_a", "lora_b"))


def test_lora_example():
    out = lora.main(pretrain_steps=20, steps=20, chars=100_000, progress=False)
    assert out["base_unchanged"]
    assert out["final_loss"] < out["initial_loss"] - 0.05, (out["initial_loss"], out["final_loss"])
    d, r, layers = 64, 8, 2
    assert out["trainable_parameters"] == layers * 2 * (d * r + r * d)
    assert out["fused_max_diff"] < 1e-4
