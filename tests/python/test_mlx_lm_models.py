"""mlx-lm's own model files on Ember, unchanged, through ``ember.alias_mlx``.

Needs mlx-lm (``pip install --no-deps mlx-lm==0.32.2``; its dependencies
are not needed, see ``mlx_lm_configs.import_mlx_lm``); skipped without it.
For every architecture of ``mlx_lm_configs.CONFIGS`` (tiny random
configurations): the full forward, and prefill plus token-by-token decode
through mlx-lm's KV caches (``make_prompt_cache``: ``KVCache``, whose update
is a slice assignment into a preallocated buffer, and ``RotatingKVCache`` on
sliding-window layers) equal to the full forward's logits. For llama, an
independent NumPy forward of the same weights. mlx-lm's LoRA layer
(``mlx_lm.tuner.lora.LoRALinear``) trained on a llama model.

Under ``EMBER_TEST_BACKEND=mlx`` the same tests run mlx-lm on MLX itself
(no alias).
"""
import importlib
import importlib.util

import numpy as np
import pytest

from conftest import IS_EMBER, buffer_address, ember_only, mx

if importlib.util.find_spec("mlx_lm") is None:
    pytest.skip("mlx-lm is not installed (pip install --no-deps mlx-lm==0.32.2)", allow_module_level=True)

import mlx_lm_configs as C  # noqa: E402

ARCHS = list(C.CONFIGS)
VOCAB = 97


@pytest.fixture(scope="module", autouse=True)
def mlx_names():
    """mlx-lm's ``import mlx...`` resolved to Ember for this module's tests."""
    if IS_EMBER:
        import ember

        ember.alias_mlx()
    C.import_mlx_lm()
    yield
    if IS_EMBER:
        import ember

        ember.unalias_mlx()


def _tokens(batch=2, length=12, seed=1):
    rng = np.random.default_rng(seed)
    return mx.array(rng.integers(0, VOCAB, (batch, length)).astype(np.int32))


def _cache_module():
    return importlib.import_module("mlx_lm.models.cache")


def _decode(model, toks, chunks):
    """Logits of ``toks`` fed through a prompt cache in pieces of the given lengths."""
    cache = _cache_module().make_prompt_cache(model)
    outs, start = [], 0
    for n in chunks:
        outs.append(model(toks[:, start:start + n], cache=cache))
        start += n
    assert start == toks.shape[1]
    return mx.concatenate(outs, axis=1), cache


def test_mlx_lm_version():
    assert C.version() == C.MLX_LM_VERSION


def test_models_import_ember_under_the_alias():
    llama = importlib.import_module("mlx_lm.models.llama")
    assert llama.mx is mx
    assert isinstance(llama.Model(llama.ModelArgs.from_dict(C.CONFIGS["llama"][1])), llama.nn.Module)


@pytest.mark.parametrize("arch", ARCHS)
def test_forward(arch):
    model, _ = C.build(mx, arch)
    logits = model(_tokens())
    assert logits.shape == (2, 12, VOCAB)
    assert logits.dtype == mx.float32
    out = np.array(logits)
    assert np.isfinite(out).all()
    # the logits depend on the tokens (not a constant output)
    assert np.abs(out[:, 1:] - out[:, :1]).max() > 1e-3


@pytest.mark.parametrize("arch", ARCHS)
def test_cached_decode_equals_full_forward(arch):
    model, _ = C.build(mx, arch)
    toks = _tokens()
    full = np.array(model(toks))
    # prefill 7 tokens, then one at a time (mask None: the cache's offset)
    dec, cache = _decode(model, toks, [7, 1, 1, 1, 1, 1])
    np.testing.assert_allclose(np.array(dec), full, rtol=1e-4, atol=1e-4)
    assert all(c.offset == 12 for c in cache if hasattr(c, "offset"))  # ArraysCache (SSM state) has none
    # chunked prefill: a 3-token chunk at offset 7 takes a causal mask whose
    # queries are the last rows of a longer key range
    dec, _ = _decode(model, toks, [4, 3, 3, 1, 1])
    np.testing.assert_allclose(np.array(dec), full, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("arch", ["llama", "mistral", "gemma3_text", "qwen3"])
def test_cached_decode_bfloat16(arch):
    model, _ = C.build(mx, arch, dtype=mx.bfloat16)
    toks = _tokens()
    full = model(toks)
    assert full.dtype == mx.bfloat16
    dec, _ = _decode(model, toks, [7, 1, 1, 1, 1, 1])
    assert dec.dtype == mx.bfloat16
    full32, dec32 = np.array(full.astype(mx.float32)), np.array(dec.astype(mx.float32))
    # bfloat16 keeps 8 bits: the two orders of evaluation agree to its rounding
    scale = np.abs(full32).max()
    assert np.abs(dec32 - full32).max() <= 0.05 * scale
    ref, _ = C.build(mx, arch)
    ref32 = np.array(ref(toks))
    assert np.abs(full32 - ref32).max() <= 0.1 * scale


def test_kv_cache_slice_assignment_state():
    """KVCache grows a preallocated buffer by slice assignment; its state is
    the filled part."""
    cache = _cache_module().KVCache()
    rng = np.random.default_rng(0)
    ks = [rng.standard_normal((1, 2, n, 8)).astype(np.float32) for n in (5, 1, 1)]
    vs = [rng.standard_normal((1, 2, n, 8)).astype(np.float32) for n in (5, 1, 1)]
    for k, v in zip(ks, vs):
        keys, values = cache.update_and_fetch(mx.array(k), mx.array(v))
    np.testing.assert_array_equal(np.array(keys), np.concatenate(ks, axis=2))
    np.testing.assert_array_equal(np.array(values), np.concatenate(vs, axis=2))
    assert cache.offset == 7
    assert cache.keys.shape[2] >= 7  # the buffer, filled up to the offset
    k_kept, _ = cache.keys_and_values()
    np.testing.assert_array_equal(np.array(k_kept), np.concatenate(ks, axis=2))
    # trimming and writing again overwrites the buffer in place
    assert cache.trim(2) == 2
    k_new = rng.standard_normal((1, 2, 2, 8)).astype(np.float32)
    keys, _ = cache.update_and_fetch(mx.array(k_new), mx.array(k_new))
    np.testing.assert_array_equal(np.array(keys), np.concatenate([ks[0], k_new], axis=2))
    assert cache.offset == 7


def test_kv_cache_updated_in_place_while_decoding():
    """Decoding through mlx-lm's KVCache (``self.keys[..., prev:offset, :] =
    keys`` into a 256-step buffer) writes each token into the same buffers:
    the slice assignment's scatter takes over its input's buffer (donation)
    once the cache holds the only reference, so no token copies the cache.

    The property, checked in two ways: every layer's key and value buffers
    keep their address over all steps; and a step's peak memory exceeds the
    memory live before it by less than one cache buffer (32 KiB here), where
    a copy of any buffer would add at least that much (the step's own
    activations are ~2 KiB in this tiny model). Then the same in mlx-lm's
    ``generate_step`` pattern, the next step's graph built while the
    current one computes under ``async_eval``."""
    import gc

    model, _ = C.build(mx, "llama")
    cache = _cache_module().make_prompt_cache(model)
    y = mx.argmax(model(mx.array([[5, 17, 42, 8]]), cache=cache)[:, -1], axis=-1)
    mx.eval(y)
    addresses = [(buffer_address(c.keys), buffer_address(c.values)) for c in cache]
    one_buffer = min(min(c.keys.nbytes, c.values.nbytes) for c in cache)
    assert one_buffer >= 32 * 1024
    gc.collect()
    for t in range(60):
        mx.synchronize()
        before = mx.get_active_memory()
        mx.reset_peak_memory()
        y = mx.argmax(model(y[:, None], cache=cache)[:, -1], axis=-1)
        mx.eval(y)
        assert mx.get_peak_memory() - before < one_buffer, (t, mx.get_peak_memory() - before)
        assert [(buffer_address(c.keys), buffer_address(c.values)) for c in cache] == addresses, t

    def step(tok):
        return mx.argmax(model(tok[:, None], cache=cache)[:, -1], axis=-1)

    mx.synchronize()
    before = mx.get_active_memory()
    mx.reset_peak_memory()
    mx.async_eval(y)
    for _ in range(60):
        nxt = step(y)
        mx.async_eval(nxt)
        y.item()
        y = nxt
    mx.eval(y)
    assert mx.get_peak_memory() - before < one_buffer, mx.get_peak_memory() - before
    assert cache[0].offset == 124 and cache[0].keys.shape[2] == 256  # still the first buffer
    assert [(buffer_address(c.keys), buffer_address(c.values)) for c in cache] == addresses


def test_array_mask_equals_causal_string():
    base = importlib.import_module("mlx_lm.models.base")
    rng = np.random.default_rng(3)
    q = mx.array(rng.standard_normal((1, 4, 6, 16)).astype(np.float32))
    k = mx.array(rng.standard_normal((1, 2, 9, 16)).astype(np.float32))
    v = mx.array(rng.standard_normal((1, 2, 9, 16)).astype(np.float32))
    mask = base.create_causal_mask(6, offset=3)
    assert mask.shape == (6, 9) and mask.dtype == mx.bool_
    a = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.25, mask=mask)
    b = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.25, mask="causal")
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6)
    # windowed: each query sees at most 3 keys
    wmask = np.array(base.create_causal_mask(6, offset=3, window_size=3))
    assert (wmask.sum(-1) == 3).all()


# --------------------------------------------------------------------------
# llama against an independent NumPy forward
# --------------------------------------------------------------------------

def _np_rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _np_rope(x, base):
    # x: (B, H, L, D); rotate the two halves of the head dimension
    L, D = x.shape[-2], x.shape[-1]
    half = D // 2
    inv = base ** (-np.arange(half, dtype=np.float64) * 2.0 / D)
    ang = np.arange(L, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def _np_llama(params, cfg, tokens):
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg["hidden_size"] // H
    eps, theta = cfg["rms_norm_eps"], cfg["rope_theta"]
    W = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    emb = W["model.embed_tokens.weight"]
    h = emb[tokens]
    B, L, _ = h.shape
    causal = np.tril(np.ones((L, L), dtype=bool))
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = _np_rms_norm(h, W[p + "input_layernorm.weight"], eps)
        q = (x @ W[p + "self_attn.q_proj.weight"].T).reshape(B, L, H, D).transpose(0, 2, 1, 3)
        k = (x @ W[p + "self_attn.k_proj.weight"].T).reshape(B, L, KV, D).transpose(0, 2, 1, 3)
        v = (x @ W[p + "self_attn.v_proj.weight"].T).reshape(B, L, KV, D).transpose(0, 2, 1, 3)
        q, k = _np_rope(q, theta), _np_rope(k, theta)
        k, v = np.repeat(k, H // KV, axis=1), np.repeat(v, H // KV, axis=1)
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D)
        s = np.where(causal, s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = (s @ v).transpose(0, 2, 1, 3).reshape(B, L, H * D)
        h = h + o @ W[p + "self_attn.o_proj.weight"].T
        x = _np_rms_norm(h, W[p + "post_attention_layernorm.weight"], eps)
        g = x @ W[p + "mlp.gate_proj.weight"].T
        u = x @ W[p + "mlp.up_proj.weight"].T
        h = h + (g / (1 + np.exp(-g)) * u) @ W[p + "mlp.down_proj.weight"].T
    h = _np_rms_norm(h, W["model.norm.weight"], eps)
    return h @ emb.T  # tied embeddings


def test_llama_matches_numpy():
    from mlx.utils import tree_flatten

    model, _ = C.build(mx, "llama", seed=5)
    cfg = C.CONFIGS["llama"][1]
    toks = _tokens(seed=2)
    params = {k: np.array(v) for k, v in tree_flatten(model.parameters())}
    assert "lm_head.weight" not in params  # tied: the head is embed_tokens.as_linear
    ref = _np_llama(params, cfg, np.array(toks))
    np.testing.assert_allclose(np.array(model(toks)), ref, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------
# LoRA (mlx_lm.tuner.lora)
# --------------------------------------------------------------------------

def _lora_model(r=4, scale=2.0):
    from mlx_lm.tuner.lora import LoRALinear

    model, _ = C.build(mx, "llama", seed=7)
    model.freeze()
    for layer in model.model.layers:
        for name in ("q_proj", "v_proj"):
            base = getattr(layer.self_attn, name)
            out_dims, in_dims = base.weight.shape
            lora = LoRALinear(in_dims, out_dims, r=r, scale=scale)
            lora.linear = base
            lora.linear.freeze()
            setattr(layer.self_attn, name, lora)
    return model


def test_lora_linear_matches_numpy():
    from mlx_lm.tuner.lora import LoRALinear

    mx.random.seed(0)
    lora = LoRALinear(8, 6, r=3, scale=1.5, bias=True)
    lora.lora_b = mx.random.normal((3, 6))
    x = mx.random.normal((2, 5, 8))
    W, b = np.array(lora.linear.weight), np.array(lora.linear.bias)
    A, Bm, xn = np.array(lora.lora_a), np.array(lora.lora_b), np.array(x)
    ref = xn @ W.T + b + 1.5 * (xn @ A) @ Bm
    np.testing.assert_allclose(np.array(lora(x)), ref, rtol=1e-5, atol=1e-5)


def test_lora_training_touches_only_the_adapters():
    import mlx.nn as nn
    import mlx.optimizers as optim
    from mlx.utils import tree_flatten

    base, _ = C.build(mx, "llama", seed=7)
    model = _lora_model()
    toks = _tokens(batch=4, length=10, seed=4)
    # lora_b starts at zero: the adapted model computes the base model
    np.testing.assert_allclose(np.array(model(toks)), np.array(base(toks)), rtol=1e-5, atol=1e-5)
    trainable = dict(tree_flatten(model.trainable_parameters()))
    assert sorted(trainable) == sorted(
        f"model.layers.{i}.self_attn.{n}.{w}" for i in range(2) for n in ("q_proj", "v_proj")
        for w in ("lora_a", "lora_b"))
    frozen_before = {k: np.array(v) for k, v in tree_flatten(model.parameters()) if "lora" not in k}

    def loss_fn(m, x):
        logits = m(x[:, :-1])
        return nn.losses.cross_entropy(logits, x[:, 1:], reduction="mean")

    opt = optim.Adam(learning_rate=1e-2)
    step = nn.value_and_grad(model, loss_fn)
    losses = []
    for _ in range(15):
        loss, grads = step(model, toks)
        assert set(k for k, _ in tree_flatten(grads)) == set(trainable)
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state)
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses
    for k, v in tree_flatten(model.parameters()):
        if "lora" not in k:
            np.testing.assert_array_equal(np.array(v), frozen_before[k])


@ember_only
def test_lora_from_base():
    """mlx-lm's LoRA adapter on a float and on a quantized projection: a zero
    lora_b leaves the output unchanged, and fuse() gives the adapted layer's
    output (dequantized: exactly the float sum; requantized: a QuantizedLinear)."""
    import mlx.nn as nn
    from mlx_lm.tuner.lora import LoRALinear

    model, _ = C.build(mx, "llama")
    lin = model.model.layers[0].self_attn.q_proj
    x = mx.random.normal((3, lin.weight.shape[1]))
    for base in [lin, nn.QuantizedLinear.from_linear(lin, group_size=32, bits=8)]:
        lora = LoRALinear.from_base(base, r=4)
        np.testing.assert_allclose(np.array(lora(x)), np.array(base(x)), rtol=1e-5, atol=1e-5)
        lora.lora_b = 0.1 * mx.random.normal(lora.lora_b.shape)
        want = np.array(lora(x))
        assert np.abs(want - np.array(base(x))).max() > 1e-3
        fused = lora.fuse(dequantize=True) if isinstance(base, nn.QuantizedLinear) else lora.fuse()
        assert type(fused) is nn.Linear
        np.testing.assert_allclose(np.array(fused(x)), want, rtol=1e-4, atol=1e-4)
        if isinstance(base, nn.QuantizedLinear):
            requant = lora.fuse()
            assert isinstance(requant, nn.QuantizedLinear) and requant.bits == 8
            np.testing.assert_allclose(np.array(requant(x)), want, rtol=0.05, atol=0.05)


# --------------------------------------------------------------------------
# gradients through a whole model, and a script run by run_as_mlx
# --------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ["llama", "gemma2", "phi3", "mixtral"])
def test_model_gradient_float64_finite_differences(arch):
    """The gradient of the next-token loss w.r.t. every parameter, along a
    random direction, against central differences in float64."""
    import mlx.nn as nn
    from mlx.utils import tree_flatten, tree_unflatten

    model, _ = C.build(mx, arch, seed=3, dtype=mx.float64)
    toks = _tokens(batch=2, length=6, seed=8)

    def loss_fn(m):
        return nn.losses.cross_entropy(m(toks[:, :-1]), toks[:, 1:], reduction="mean")

    loss, grads = nn.value_and_grad(model, loss_fn)(model)
    assert loss.dtype == mx.float64
    params = tree_flatten(model.parameters())
    rng = np.random.default_rng(0)
    direction = [(k, rng.standard_normal(v.shape)) for k, v in params]
    norm = np.sqrt(sum(float(np.sum(d * d)) for _, d in direction))
    direction = [(k, d / norm) for k, d in direction]  # a unit direction: small truncation error
    grads = dict(tree_flatten(grads))
    analytic = sum(float(np.sum(np.array(grads[k]) * d)) for k, d in direction)
    eps = 1e-5

    def loss_at(t):
        model.update(tree_unflatten([(k, mx.array(np.array(v) + t * d, dtype=mx.float64))
                                     for (k, v), (_, d) in zip(params, direction)]))
        return loss_fn(model).item()

    numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps)
    model.update(tree_unflatten(params))
    assert abs(analytic) > 1e-3  # a direction the loss depends on
    assert abs(analytic - numeric) <= 1e-7 * abs(numeric), (analytic, numeric)


GREEDY_SCRIPT = '''
import sys
sys.path.insert(0, {tests!r})
import mlx.core as mx
import mlx_lm_configs as C
C.import_mlx_lm()
from mlx_lm.models.cache import make_prompt_cache
model, _ = C.build(mx, "qwen3")
prompt = mx.array([[5, 17, 42, 8]])
cache = make_prompt_cache(model)
y = mx.argmax(model(prompt, cache=cache)[:, -1], axis=-1)
out = [y.item()]
for _ in range(7):
    y = mx.argmax(model(y[:, None], cache=cache)[:, -1], axis=-1)
    out.append(y.item())
print(mx.__name__, *out)
'''


@ember_only
def test_run_as_mlx_greedy_decode_script(tmp_path):
    """An mlx-lm decoding script, run by ``python -m ember.run_as_mlx``,
    decodes what the full forward of the same model predicts."""
    import os
    import subprocess
    import sys

    import ember

    tests = os.path.dirname(os.path.abspath(__file__))
    script = tmp_path / "greedy.py"
    script.write_text(GREEDY_SCRIPT.format(tests=tests))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__))) + os.pathsep + \
        env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "ember.run_as_mlx", str(script)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    name, *toks = r.stdout.split()
    assert name == "ember.core"
    toks = [int(t) for t in toks]
    # in-process: feed prompt + decoded tokens through the full forward
    model, _ = C.build(mx, "qwen3")
    seq = mx.array([[5, 17, 42, 8] + toks[:-1]])
    pred = np.array(mx.argmax(model(seq), axis=-1))[0, 3:]
    assert pred.tolist() == toks
