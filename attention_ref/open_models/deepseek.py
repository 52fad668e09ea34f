"""DeepSeek-V3 and MiniCPM3: multi-head latent attention (MLA) instead of Llama's heads.

What differs from Llama: keys and values are expanded from one small latent per token
(``kv_a_proj_with_mqa``, an RMSNorm, ``kv_b_proj``), and the queries optionally from a
latent of their own; rotary positions go to a separate ``qk_rope_head_dim``-wide part of
each query and to one key shared by all heads (``attention_ref.MultiHeadLatentAttention``,
whose parameters carry Hugging Face's names, so their state dict loads as it is). The
scale is ``1/sqrt(qk_nope_head_dim + qk_rope_head_dim)`` (YaRN, which multiplies it by an
``mscale``, is out of scope). DeepSeek-V3 pairs the rotary features ``2i, 2i + 1``
(``rope_interleave``, its default); MiniCPM3 is the same module with Llama's pairing
(``i, i + D_rope/2``), and its block scales both branches by
``scale_depth / sqrt(num_hidden_layers)`` before adding them.
"""

from __future__ import annotations

from typing import Any

from ..block import Block
from ..latent import MultiHeadLatentAttention
from .common import copy_weights, rotary
from .llama import decoder_layer

__all__ = [
    "BUILDERS",
    "deepseek_v3_attention",
    "deepseek_v3_layer",
    "latent_attention",
    "minicpm3_attention",
    "minicpm3_layer",
]


def latent_attention(theirs: Any, *, interleaved: bool) -> MultiHeadLatentAttention:
    """``MultiHeadLatentAttention`` with their sizes, scale, latent norms' eps, rotary base
    (the default rotary type only) and weights; ``interleaved``: the rotary pairing."""
    base = rotary(theirs.config, theirs.layer_idx, theirs.qk_rope_head_dim).base
    weight = theirs.kv_a_proj_with_mqa.weight
    ours = MultiHeadLatentAttention(
        theirs.hidden_size,
        theirs.num_heads,
        kv_lora_rank=theirs.kv_lora_rank,
        qk_nope_head_dim=theirs.qk_nope_head_dim,
        qk_rope_head_dim=theirs.qk_rope_head_dim,
        v_head_dim=theirs.v_head_dim,
        q_lora_rank=theirs.q_lora_rank,
        rope_base=base,
        rope_interleaved=interleaved,
        scale=theirs.scaling,
        eps=theirs.kv_a_layernorm.variance_epsilon,
        bias=theirs.kv_a_proj_with_mqa.bias is not None,
        dtype=weight.dtype,
    )
    copy_weights(ours, theirs.state_dict())
    return ours


def deepseek_v3_attention(theirs: Any) -> MultiHeadLatentAttention:
    """DeepseekV3Attention: MLA, its pairing from ``config.rope_interleave``."""
    return latent_attention(theirs, interleaved=theirs.config.rope_interleave)


def minicpm3_attention(theirs: Any) -> MultiHeadLatentAttention:
    """MiniCPM3Attention: MLA with Llama's rotary pairing."""
    return latent_attention(theirs, interleaved=False)


def _check_dense(theirs: Any) -> None:
    """Raise unless their layer's MLP is the dense gated one (not a mixture of experts)."""
    if not hasattr(theirs.mlp, "gate_proj"):
        raise ValueError(
            f"module: {type(theirs).__name__} {theirs.self_attn.layer_idx} has a mixture of "
            "experts, not supported: take its self_attn"
        )


def deepseek_v3_layer(theirs: Any) -> Block:
    """DeepseekV3DecoderLayer of a dense layer (``layer_idx < first_k_dense_replace``):
    Llama's pre-norm layer with MLA.

    Raises:
        ValueError: For a mixture-of-experts layer.
    """
    _check_dense(theirs)
    return decoder_layer(theirs, deepseek_v3_attention)


def minicpm3_layer(theirs: Any) -> Block:
    """MiniCPM3DecoderLayer: Llama's pre-norm layer with MLA, both branches scaled by
    ``scale_depth / sqrt(num_hidden_layers)`` (their ``residual_scale``)."""
    _check_dense(theirs)
    block = decoder_layer(theirs, minicpm3_attention)
    block.wiring.residual_multiplier = theirs.residual_scale
    return block


BUILDERS = {
    "DeepseekV3Attention": deepseek_v3_attention,
    "DeepseekV3DecoderLayer": deepseek_v3_layer,
    "MiniCPM3Attention": minicpm3_attention,
    "MiniCPM3DecoderLayer": minicpm3_layer,
}
