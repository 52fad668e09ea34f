"""Tiny configs for the families that test_from_hf_llama_like.py compares with Hugging Face's
(one builder a family, its default the config that table tests), which each family's own test
file reuses for its quirks. Eager attention, no dropout; E features in H heads of D, KV
key/value heads, a window of W where a family slides one."""

import pytest

from ._hf import eager_config

transformers = pytest.importorskip("transformers")

E, H, KV, D, W = 32, 4, 2, 8, 3  # width, heads, key/value heads, head width, window
SIZES = {"intermediate_size": 16, "vocab_size": 16}
ONE_LAYER = {"num_hidden_layers": 1, **SIZES}
TWO_LAYERS = {"num_hidden_layers": 2, **SIZES}
GEMMA_QUERY_SCALAR = 16  # query_pre_attn_scalar: Gemma's scale is 16 ** -0.5, not D ** -0.5
GRANITE_MULTIPLIERS = {"attention_multiplier": 0.2, "residual_multiplier": 0.3}
LATENT_SIZES = {"kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6}


def _eager(config):
    """``config`` with its attention computed eagerly."""
    config._attn_implementation = "eager"
    return config


def llama_config():
    """Llama: q, k, v and o biased; both layers full."""
    return eager_config(transformers.LlamaConfig, E, H, KV, True, head_dim=D, **TWO_LAYERS)


def mistral_config():
    """Mistral: every layer slides its window."""
    config_class = transformers.MistralConfig
    return eager_config(config_class, E, H, KV, False, head_dim=D, sliding_window=W, **TWO_LAYERS)


def qwen2_config():
    """Qwen2: the upper layers slide (layer 1 here); q, k, v biased, o not."""
    more = {"use_sliding_window": True, "sliding_window": W, "max_window_layers": 1}
    return eager_config(transformers.Qwen2Config, E, H, KV, False, **more, **TWO_LAYERS)


def qwen3_config(bias=True):
    """Qwen3 with a window on the upper layer (layer 1); ``bias`` on all four projections."""
    more = {"use_sliding_window": True, "sliding_window": W, "max_window_layers": 1}
    return eager_config(transformers.Qwen3Config, E, H, KV, bias, head_dim=D, **TWO_LAYERS, **more)


def qwen3_next_config(bias=True):
    """Qwen3-Next: layer 3 of 4 is a full-attention layer; tiny MoE and linear sizes."""
    return eager_config(
        transformers.Qwen3NextConfig,
        *(E, H, KV, bias),
        head_dim=D,
        num_hidden_layers=4,
        num_experts=2,
        num_experts_per_tok=1,
        moe_intermediate_size=8,
        shared_expert_intermediate_size=8,
        linear_key_head_dim=8,
        linear_value_head_dim=8,
        linear_num_key_heads=2,
        linear_num_value_heads=2,
        **SIZES,
    )


def hunyuan_config(bias=True):
    """HunYuan dense (v1)."""
    config_class = transformers.HunYuanDenseV1Config
    return eager_config(config_class, E, H, KV, bias, head_dim=D, **ONE_LAYER)


def helium_config(bias=True, head_dim=D, **more):
    """Helium: H * D == E unless ``head_dim`` says otherwise."""
    config_class = transformers.HeliumConfig
    return eager_config(config_class, E, H, KV, bias, head_dim=head_dim, **ONE_LAYER, **more)


def granite_config(bias=True, **more):
    """Granite, its multipliers at their defaults unless ``more`` sets them (D = E / H)."""
    return eager_config(transformers.GraniteConfig, E, H, KV, bias, **ONE_LAYER, **more)


def glm_config():
    """GLM: q, k, v biased (the default)."""
    config_class = transformers.GlmConfig
    return eager_config(config_class, E, H, KV, True, head_dim=D, pad_token_id=0, **ONE_LAYER)


def glm4_config():
    """GLM-4: q, k, v biased (the default)."""
    config_class = transformers.Glm4Config
    return eager_config(config_class, E, H, KV, True, head_dim=D, pad_token_id=0, **ONE_LAYER)


def cohere_config():
    """Cohere: one full layer, the q/k norm on (D = E / H)."""
    config_class = transformers.CohereConfig
    return eager_config(config_class, E, H, KV, True, use_qk_norm=True, **ONE_LAYER)


def cohere2_config():
    """Cohere2: layers 0-2 slide (with RoPE), layer 3 attends to all (no positions)."""
    config_class = transformers.Cohere2Config
    more = {"num_hidden_layers": 4, "sliding_window": W}
    return eager_config(config_class, E, H, KV, True, **more, **SIZES)


def olmo2_config():
    """OLMo 2 (no head_dim: D = E / H)."""
    return eager_config(transformers.Olmo2Config, E, H, KV, True, **ONE_LAYER)


def exaone4_config(**more):
    """EXAONE 4, four layers, as ``more`` sets their windows (D = E / H)."""
    config_class = transformers.Exaone4Config
    return eager_config(config_class, E, H, KV, False, num_hidden_layers=4, **SIZES, **more)


def gemma_config(version, cap=2.0):
    """Gemma ``version`` (2 or 3): layer 0 slides, layer 1 does not; the scale from
    ``GEMMA_QUERY_SCALAR``; ``cap``: the attention soft cap, small so that the
    tanh bites. Gemma 3 keeps one rotary set per layer type."""
    common = {"hidden_size": E, "num_attention_heads": H, "num_key_value_heads": KV}
    common |= {"head_dim": D, "sliding_window": W, "attention_bias": True, **TWO_LAYERS}
    common |= {"query_pre_attn_scalar": GEMMA_QUERY_SCALAR, "attn_logit_softcapping": cap}
    if version == 2:
        return _eager(transformers.Gemma2Config(**common))
    rope = {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
    }
    types = ["sliding_attention", "full_attention"]
    return _eager(transformers.Gemma3TextConfig(**common, layer_types=types, rope_parameters=rope))


def gpt_oss_config(bias=True):
    """gpt-oss: layer 0 slides, layer 1 attends to all; a tiny mixture of experts."""
    config = eager_config(
        transformers.GptOssConfig,
        *(E, H, KV, bias),
        head_dim=D,
        sliding_window=W,
        num_local_experts=2,
        num_experts_per_tok=1,
        **TWO_LAYERS,
    )
    assert config.layer_types == ["sliding_attention", "full_attention"]
    return config


def nemotron_config():
    """Nemotron: RoPE on half of each head (its default), biases on attention and MLP."""
    config_class = transformers.NemotronConfig
    return eager_config(config_class, E, H, KV, True, head_dim=D, mlp_bias=True, **ONE_LAYER)


def phi3_config(window=None):
    """Phi-3: RoPE on half of each head, as Phi-4-mini's configs allow; ``window``, when set,
    slides on every layer (D = E / H)."""
    rope = {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5}
    config = transformers.Phi3Config(
        hidden_size=E,
        num_attention_heads=H,
        num_key_value_heads=KV,
        pad_token_id=0,
        bos_token_id=0,
        eos_token_id=0,
        attention_dropout=0.0,
        sliding_window=window,
        rope_parameters=rope,
        **TWO_LAYERS,
    )
    return _eager(config)


def stablelm_config(qk_layernorm=True, parallel=False):
    """StableLM, 64 features in 4 heads of 16 (RoPE on a quarter: 4), q, k, v biased; a
    LayerNorm per head on the queries and keys if ``qk_layernorm``; ``parallel``: one
    LayerNorm before the attention and the MLP side by side."""
    config = transformers.StableLmConfig(
        hidden_size=64,
        num_attention_heads=H,
        num_key_value_heads=KV,
        attention_dropout=0.0,
        hidden_dropout=0.0,
        use_qkv_bias=True,
        qk_layernorm=qk_layernorm,
        use_parallel_residual=parallel,
        **ONE_LAYER,
    )
    return _eager(config)


def gpt_neox_config(parallel=True):
    """GPT-NeoX, 32 features in 2 heads of 16 (RoPE on a quarter: 4); ``parallel``: two
    LayerNorms, the attention and the MLP side by side."""
    config = transformers.GPTNeoXConfig(
        hidden_size=E,
        num_attention_heads=2,
        attention_dropout=0.0,
        hidden_dropout=0.0,
        use_parallel_residual=parallel,
        **ONE_LAYER,
    )
    return _eager(config)


def deepseek_v3_config(interleaved=True, q_lora_rank=12, **more):
    """DeepSeek-V3's latent attention, RoPE ``interleaved`` or with Llama's pairing, a query
    latent of ``q_lora_rank`` (None: none); layer 0 dense, layer 1 a mixture of experts."""
    return eager_config(
        transformers.DeepseekV3Config,
        *(E, H, H, True),
        q_lora_rank=q_lora_rank,
        rope_interleave=interleaved,
        first_k_dense_replace=1,
        moe_intermediate_size=8,
        n_routed_experts=2,
        num_experts_per_tok=1,
        **LATENT_SIZES,
        **TWO_LAYERS,
        **more,
    )


def minicpm3_config(q_lora_rank=12, **more):
    """MiniCPM3's latent attention (Llama's RoPE pairing), a query latent of ``q_lora_rank``."""
    config_class = transformers.MiniCPM3Config
    more |= {"q_lora_rank": q_lora_rank, **LATENT_SIZES, **TWO_LAYERS}
    return eager_config(config_class, E, H, H, False, **more)
