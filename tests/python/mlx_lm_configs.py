"""Tiny random configurations of mlx-lm's model architectures, and the
import of mlx-lm's model files without its package ``__init__``.

Shared by ``test_mlx_lm_models.py`` and ``tools/compare_mlx_lm.py`` (which
runs the same models under MLX and under Ember). mlx-lm's ``__init__``
imports its conversion and generation entry points, which need
``transformers``; the model files (``mlx_lm.models.*``) and the LoRA layers
(``mlx_lm.tuner.lora``) need only ``mlx``. :func:`import_mlx_lm` registers
the ``mlx_lm`` package (and ``mlx_lm.tuner``) as bare packages whose
submodules import from the installed files, without running those
``__init__`` files, so mlx-lm installed with ``--no-deps`` is enough.
"""
import importlib
import importlib.util
import sys
import types

MLX_LM_VERSION = "0.32.2"

_H, _HEADS, _KV, _HD, _FF, _VOCAB = 64, 4, 2, 16, 128, 97

# architecture -> (mlx-lm module, ModelArgs dict). 2 layers, small dims,
# GQA (4 query heads on 2 key/value heads) where the architecture has it,
# tied embeddings where it has them.
CONFIGS = {
    "llama": ("llama", dict(
        model_type="llama", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, rms_norm_eps=1e-5, vocab_size=_VOCAB,
        rope_theta=10000.0, tie_word_embeddings=True)),
    # mlx-lm runs Mistral checkpoints with llama.py; a sliding-window layer
    # (RotatingKVCache) and an untied head
    "mistral": ("llama", dict(
        model_type="mistral", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, rms_norm_eps=1e-5, vocab_size=_VOCAB,
        rope_theta=1e6, tie_word_embeddings=False, sliding_window=5,
        layer_types=["sliding_attention", "full_attention"])),
    "qwen2": ("qwen2", dict(
        model_type="qwen2", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, rms_norm_eps=1e-6, vocab_size=_VOCAB,
        tie_word_embeddings=True)),
    "qwen3": ("qwen3", dict(
        model_type="qwen3", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, rms_norm_eps=1e-6, vocab_size=_VOCAB,
        max_position_embeddings=512, head_dim=_HD, tie_word_embeddings=True, rope_theta=1e6)),
    "gemma": ("gemma", dict(
        model_type="gemma", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, head_dim=_HD, rms_norm_eps=1e-6, vocab_size=_VOCAB,
        num_key_value_heads=1)),
    "gemma2": ("gemma2", dict(
        model_type="gemma2", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, head_dim=_HD, rms_norm_eps=1e-6, vocab_size=_VOCAB,
        num_key_value_heads=_KV, query_pre_attn_scalar=_HD)),
    "gemma3_text": ("gemma3_text", dict(
        model_type="gemma3_text", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, head_dim=_HD, rms_norm_eps=1e-6, vocab_size=_VOCAB,
        num_key_value_heads=_KV, query_pre_attn_scalar=_HD, sliding_window=5, sliding_window_pattern=2)),
    "phi": ("phi", dict(
        model_type="phi", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_HEADS, vocab_size=_VOCAB,
        partial_rotary_factor=0.5, max_position_embeddings=512)),
    "phi3": ("phi3", dict(
        model_type="phi3", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, rms_norm_eps=1e-5, vocab_size=_VOCAB,
        max_position_embeddings=4096)),
    "starcoder2": ("starcoder2", dict(
        model_type="starcoder2", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB)),
    "olmo2": ("olmo2", dict(
        model_type="olmo2", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, rms_norm_eps=1e-6, vocab_size=_VOCAB,
        tie_word_embeddings=False)),
    # more architectures of mlx-lm that run unchanged
    "mixtral": ("mixtral", dict(
        model_type="mixtral", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, num_local_experts=4,
        num_experts_per_tok=2)),
    "qwen3_moe": ("qwen3_moe", dict(
        model_type="qwen3_moe", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, rms_norm_eps=1e-6, vocab_size=_VOCAB,
        num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[],
        moe_intermediate_size=32, head_dim=_HD, rope_theta=1e6, tie_word_embeddings=False,
        max_position_embeddings=512, norm_topk_prob=True)),
    "gpt2": ("gpt2", dict(
        model_type="gpt2", n_ctx=64, n_embd=_H, n_head=_HEADS, n_layer=2, n_positions=64,
        layer_norm_epsilon=1e-5, vocab_size=_VOCAB)),
    "gpt_neox": ("gpt_neox", dict(
        model_type="gpt_neox", max_position_embeddings=64, hidden_size=_H, num_attention_heads=_HEADS,
        num_hidden_layers=2, layer_norm_eps=1e-5, vocab_size=_VOCAB, rotary_emb_base=10000,
        rotary_pct=0.5)),
    "cohere": ("cohere", dict(
        model_type="cohere", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, use_qk_norm=True)),
    "stablelm": ("stablelm", dict(
        model_type="stablelm", vocab_size=_VOCAB, hidden_size=_H, num_attention_heads=_HEADS,
        num_hidden_layers=2, num_key_value_heads=_KV, intermediate_size=_FF, rope_theta=10000,
        use_qkv_bias=True, partial_rotary_factor=0.25, layer_norm_eps=1e-5)),
    "internlm2": ("internlm2", dict(
        model_type="internlm2", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, rms_norm_eps=1e-6, vocab_size=_VOCAB)),
    "granite": ("granite", dict(
        model_type="granite", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, rms_norm_eps=1e-6, vocab_size=_VOCAB, logits_scaling=4.0,
        attention_multiplier=0.25, embedding_multiplier=6.0, residual_multiplier=0.5,
        max_position_embeddings=512, num_key_value_heads=_KV, attention_bias=False, mlp_bias=False,
        rope_theta=10000.0)),
    "smollm3": ("smollm3", dict(
        model_type="smollm3", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, rms_norm_eps=1e-6, vocab_size=_VOCAB,
        no_rope_layer_interval=2)),
    "olmo3": ("olmo3", dict(
        model_type="olmo3", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, rms_norm_eps=1e-6, vocab_size=_VOCAB,
        max_position_embeddings=512, sliding_window=5, rope_theta=10000.0,
        layer_types=["sliding_attention", "full_attention"])),
    # attention sinks, sliding window, MoE with GPT-OSS's SwiGLU
    "gpt_oss": ("gpt_oss", dict(
        model_type="gpt_oss", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        num_local_experts=4, num_experts_per_tok=2, head_dim=_HD, sliding_window=5, rope_theta=10000,
        layer_types=["sliding_attention", "full_attention"])),
    # multi-head latent attention, grouped expert routing, a dense first layer
    "deepseek_v3": ("deepseek_v3", dict(
        model_type="deepseek_v3", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_HEADS, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        moe_intermediate_size=32, n_shared_experts=1, n_routed_experts=4, kv_lora_rank=16, q_lora_rank=24,
        qk_rope_head_dim=8, v_head_dim=16, qk_nope_head_dim=16, n_group=2, topk_group=1,
        num_experts_per_tok=2, first_k_dense_replace=1)),
    "glm4": ("glm4", dict(
        model_type="glm4", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        attention_bias=True, head_dim=_HD, partial_rotary_factor=0.5, rope_theta=10000)),
    # gated delta-rule linear attention (mx.fast.gated_delta_update path),
    # a causal conv state (ArraysCache), MoE with a shared expert
    "qwen3_next": ("qwen3_next", dict(
        model_type="qwen3_next", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=16, linear_value_head_dim=16,
        linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1,
        shared_expert_intermediate_size=32, mlp_only_layers=[], moe_intermediate_size=32, rope_theta=10000,
        partial_rotary_factor=0.5, max_position_embeddings=512, head_dim=_HD, full_attention_interval=2)),
    "ministral3": ("ministral3", dict(
        model_type="ministral3", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        head_dim=_HD, rope_parameters={"rope_theta": 10000.0, "rope_type": "default",
                                       "llama_4_scaling_beta": 0.1, "original_max_position_embeddings": 8})),
    "exaone4": ("exaone4", dict(
        model_type="exaone4", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        max_position_embeddings=512, rope_theta=10000.0, head_dim=_HD, tie_word_embeddings=True,
        rope_scaling=None, sliding_window=5, sliding_window_pattern="LG")),
    "ernie4_5": ("ernie4_5", dict(
        model_type="ernie4_5", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        max_position_embeddings=512, head_dim=_HD, rope_theta=10000.0, use_bias=False,
        tie_word_embeddings=True)),
    "hunyuan_v1_dense": ("hunyuan_v1_dense", dict(
        model_type="hunyuan_v1_dense", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6)),
    "seed_oss": ("seed_oss", dict(
        model_type="seed_oss", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        head_dim=_HD, attention_bias=True)),
    "nemotron": ("nemotron", dict(
        model_type="nemotron", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, hidden_act="relu2",
        norm_eps=1e-5)),
    "minicpm": ("minicpm", dict(
        model_type="minicpm", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        dim_model_base=32, scale_depth=1.4, scale_emb=12)),
    "gpt_bigcode": ("gpt_bigcode", dict(
        model_type="gpt_bigcode", n_embd=_H, n_layer=2, n_inner=_FF, n_head=_HEADS, n_positions=64,
        layer_norm_epsilon=1e-5, vocab_size=_VOCAB)),
    "qwen2_moe": ("qwen2_moe", dict(
        model_type="qwen2_moe", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        num_experts_per_tok=2, num_experts=4, moe_intermediate_size=32, shared_expert_intermediate_size=48)),
    "olmoe": ("olmoe", dict(
        model_type="olmoe", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        num_experts=4, num_experts_per_tok=2)),
    "granitemoe": ("granitemoe", dict(
        model_type="granitemoe", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        logits_scaling=4.0, attention_multiplier=0.25, embedding_multiplier=6.0, residual_multiplier=0.5,
        max_position_embeddings=512, attention_bias=False, rope_theta=10000.0, num_local_experts=4,
        num_experts_per_tok=2)),
    # xIELU activation, QK norm
    "apertus": ("apertus", dict(
        model_type="apertus", hidden_size=_H, num_hidden_layers=2, intermediate_size=_FF,
        num_attention_heads=_HEADS, num_key_value_heads=_KV, vocab_size=_VOCAB, rms_norm_eps=1e-6,
        mlp_bias=False, attention_bias=False, max_position_embeddings=512, rope_theta=10000.0,
        post_norm=False, qk_norm=True, tie_word_embeddings=False)),
    # a state-space model: selective scan with conv and SSM states (ArraysCache)
    "mamba2": ("mamba2", dict(
        model_type="mamba2", num_heads=4, head_dim=16, vocab_size=_VOCAB, hidden_size=_H,
        intermediate_size=64, state_size=8, num_hidden_layers=2, layer_norm_epsilon=1e-5, conv_kernel=4,
        n_groups=1, use_bias=False, use_conv_bias=True, tie_word_embeddings=True,
        time_step_limit=(0.0, float("inf")), time_step_rank=8)),
}


def _bare_package(name):
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not installed as a package")
    module = types.ModuleType(name)
    module.__spec__ = spec
    module.__file__ = spec.origin
    module.__path__ = list(spec.submodule_search_locations)
    module.__package__ = name
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


def import_mlx_lm():
    """Make ``mlx_lm.models.*`` and ``mlx_lm.tuner.lora`` importable
    without mlx-lm's dependencies.

    Returns:
        module: the ``mlx_lm`` package (bare: its ``__init__`` not run).

    Raises:
        ImportError: mlx-lm is not installed.
    """
    if importlib.util.find_spec("mlx_lm") is None:
        raise ImportError("mlx_lm is not installed")
    pkg = _bare_package("mlx_lm")
    _bare_package("mlx_lm.tuner")
    return pkg


def version():
    """The installed mlx-lm's version (from its ``_version`` file)."""
    import_mlx_lm()
    return importlib.import_module("mlx_lm._version").__version__


def build(mx, arch, seed=0, dtype=None):
    """The mlx-lm model of ``arch`` with random weights.

    Every parameter is redrawn from the seeded generator (matrices with
    standard deviation 1/sqrt(fan-in), vectors — norms, biases — around 1
    and 0), so the check does not rest on constant norm weights.

    Args:
        mx: ``mlx.core`` (Ember's under the alias, or MLX's).
        arch (str): a key of :data:`CONFIGS`.
        seed (int): the random seed. Default: 0.
        dtype (Dtype, optional): cast the parameters to it. Default: float32.

    Returns:
        tuple: ``(model, models_module)``.
    """
    import_mlx_lm()
    from mlx.utils import tree_flatten, tree_unflatten

    mod_name, cfg = CONFIGS[arch]
    module = importlib.import_module(f"mlx_lm.models.{mod_name}")
    model = module.Model(module.ModelArgs.from_dict(dict(cfg)))
    mx.random.seed(seed)
    params = []
    for path, p in tree_flatten(model.parameters()):
        if p.ndim >= 2:
            v = mx.random.normal(p.shape) * (p.shape[-1] ** -0.5)
        elif path.endswith("bias"):
            v = 0.1 * mx.random.normal(p.shape)
        else:
            v = 1.0 + 0.1 * mx.random.normal(p.shape)
        params.append((path, v.astype(dtype or mx.float32)))
    model.update(tree_unflatten(params))
    mx.eval(model.parameters())
    return model, module
