"""HunYuan dense (v1): Llama's attention with a norm on each head, after RoPE.

``query_layernorm`` and ``key_layernorm`` are RMSNorms over each head's ``D`` features (one
weight ``(D,)`` shared by the heads), as in Qwen3, but applied *after* the rotary positions
(Qwen3 and most others normalize before). The decoder layer is Llama's.

The released checkpoints label their rotary type ``"dynamic"`` with an ``alpha``; Hugging Face
reads that as a fixed base, ``rope_theta * alpha ** (D / (D - 2))``, and so does this module:
plain RoPE with that base.
"""

from __future__ import annotations

from typing import Any

from ..block import Block
from ..multihead import MultiHeadAttention
from ..qk_parts import QKNorm, Rotary
from .common import copy_weights, rms_norm, rotary
from .llama import attention, decoder_layer, projections

__all__ = ["BUILDERS", "hunyuan_attention", "hunyuan_decoder_layer", "hunyuan_rotary"]


def hunyuan_rotary(config: Any, layer_idx: int, head_dim: int) -> Rotary:
    """The layer's RoPE; ``"dynamic"`` with an ``alpha`` (HunYuan's "NTK alpha") is plain
    RoPE with the base ``rope_theta * alpha ** (D / (D - 2))``."""
    params = config.rope_parameters
    if params.get("rope_type") == "dynamic" and params.get("alpha"):
        D = config.head_dim  # Hugging Face reads the config's, as here
        return Rotary(params["rope_theta"] * params["alpha"] ** (D / (D - 2)))
    return rotary(config, layer_idx, head_dim)


def hunyuan_attention(theirs: Any) -> MultiHeadAttention:
    """HunYuanDenseV1Attention: RoPE, then q/k RMSNorm per head."""
    rope = hunyuan_rotary(theirs.config, theirs.layer_idx, theirs.head_dim)
    norms = QKNorm(rms_norm(theirs.query_layernorm), rms_norm(theirs.key_layernorm))
    ours = attention(theirs, qk_parts=[rope, norms])
    state = {f"qk_parts.1.{k}": v for k, v in norms.state_dict().items()}
    copy_weights(ours, projections(theirs) | state)
    return ours


def hunyuan_decoder_layer(theirs: Any) -> Block:
    """HunYuanDenseV1DecoderLayer: Llama's pre-norm layer around ``hunyuan_attention``."""
    return decoder_layer(theirs, hunyuan_attention)


BUILDERS = {
    "HunYuanDenseV1Attention": hunyuan_attention,
    "HunYuanDenseV1DecoderLayer": hunyuan_decoder_layer,
}
