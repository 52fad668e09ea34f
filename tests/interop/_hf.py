"""What the tests against Hugging Face's attention modules share: a config for one attention
layer, run eagerly, and their module for it with random weights."""

import torch


def eager_config(config_class, width: int, heads: int, kv_heads: int, bias: bool, **more):
    """``config_class`` (a Hugging Face config) for attention over ``width`` features in
    ``heads`` heads and ``kv_heads`` key/value heads, without dropout, with plain RoPE (no
    scaling such as YaRN), its attention computed eagerly; ``more``: the model's own fields."""
    config = config_class(
        hidden_size=width,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        attention_bias=bias,
        attention_dropout=0.0,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        **more,
    )
    config._attn_implementation = "eager"
    return config


def random_attention(attention_class, config, layer_idx: int, seed: int) -> torch.nn.Module:
    """Their attention module of layer ``layer_idx`` in eval mode, with every parameter random
    (norms' weights and sinks too, which they create as ones or empty: so none is trivial)."""
    torch.manual_seed(seed)
    theirs = attention_class(config, layer_idx=layer_idx).eval()
    with torch.no_grad():
        for p in theirs.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return theirs
