"""Run on 2 ranks by test_distributed_mpi.py: mlx-lm's llama (tiny, random
weights) split across the ranks by its own ``Model.shard`` (shard_linear:
attention heads and MLP over the group) gives the logits and the greedily
generated tokens of the unsplit model. Prints "SKIP" without mlx-lm."""
import importlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
import ember.core as mx  # noqa: E402

g = mx.distributed.init()
try:
    import mlx_lm_configs as C

    ember.alias_mlx()
    C.import_mlx_lm()
except ImportError:
    print("SKIP", g.rank(), flush=True)
    sys.exit(0)

cache_mod = importlib.import_module("mlx_lm.models.cache")
toks = mx.array(np.random.default_rng(1).integers(0, 97, (2, 9)).astype(np.int32))


def generate(model, prompt, steps=8):
    cache = cache_mod.make_prompt_cache(model)
    logits = model(prompt, cache=cache)
    out = []
    nxt = mx.argmax(logits[:, -1], axis=-1)
    for _ in range(steps):
        out.append(nxt)
        logits = model(nxt[:, None], cache=cache)
        nxt = mx.argmax(logits[:, -1], axis=-1)
    return np.array(mx.stack(out, axis=1)), logits


for arch in ("llama", "qwen3"):
    full, _ = C.build(mx, arch)
    split, _ = C.build(mx, arch)
    split.shard(g)
    q = split.model.layers[0].self_attn.q_proj
    assert type(q).__name__ == "AllToShardedLinear" and q.weight.shape[0] == full.model.layers[0].self_attn.q_proj.weight.shape[0] // g.size()
    np.testing.assert_allclose(np.array(split(toks)), np.array(full(toks)), rtol=1e-4, atol=1e-4, err_msg=arch)
    t_full, l_full = generate(full, toks)
    t_split, l_split = generate(split, toks)
    np.testing.assert_array_equal(t_split, t_full, err_msg=arch)
    np.testing.assert_allclose(np.array(l_split), np.array(l_full), rtol=1e-4, atol=1e-4)
    # and the ranks agree on the tokens
    np.testing.assert_array_equal(np.array(mx.distributed.all_max(mx.array(t_split))), t_split)

print("OK", g.rank(), flush=True)
