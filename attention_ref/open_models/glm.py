"""GLM and GLM-4: how their attention and decoder layers differ from Llama's.

Rotary positions on the first half of each head only (``partial_rotary_factor`` 0.5), its
features paired with their neighbours (``2i, 2i + 1``, interleaved); the other half passes
through. The query, key and value projections are biased (``attention_bias``, on by default)
and the output projection never is, whatever the config says. The feed-forward network keeps
its gate and "up" projections fused in one ``gate_up_proj``, split at load. GLM wires its layer
as Llama does (pre-norm); GLM-4 as a sandwich, with an RMSNorm after attention
(``post_self_attn_layernorm``) and after the feed-forward network (``post_mlp_layernorm``)
besides the two before them.
"""

from __future__ import annotations

from typing import Any

from ..block import Block
from ..feed_forward import FeedForward
from ..multihead import MultiHeadAttention
from ..residual import PreNorm, Sandwich
from .common import copy_weights, rms_norm, rotary
from .llama import attention, projections
from .mlp import feed_forward

__all__ = ["BUILDERS", "glm4_decoder_layer", "glm_attention", "glm_decoder_layer", "glm_mlp"]


def glm_attention(theirs: Any) -> MultiHeadAttention:
    """GlmAttention, Glm4Attention: interleaved RoPE on the first ``partial_rotary_factor``
    of each head; q, k, v biased as the config says, o never."""
    rope = rotary(theirs.config, theirs.layer_idx, theirs.head_dim, interleaved=True)
    ours = attention(theirs, qk_parts=[rope])
    copy_weights(ours, projections(theirs))
    return ours


def glm_mlp(theirs: Any) -> FeedForward:
    """Their MLP as a SwiGLU ``FeedForward``: ``gate_up_proj`` split into the gate (first
    half of its rows) and "up" (second half)."""
    gate, up = theirs.gate_up_proj.weight.chunk(2, dim=0)
    down, act = theirs.down_proj.weight, theirs.config.hidden_act
    return feed_forward((up, None), (down, None), act, gate=(gate, None))


def glm_decoder_layer(theirs: Any) -> Block:
    """GlmDecoderLayer: Llama's pre-norm layer with GLM's attention and fused MLP."""
    wiring = PreNorm(rms_norm(theirs.input_layernorm), rms_norm(theirs.post_attention_layernorm))
    return Block(glm_attention(theirs.self_attn), glm_mlp(theirs.mlp), wiring)


def glm4_decoder_layer(theirs: Any) -> Block:
    """Glm4DecoderLayer: sandwich norms, under GLM-4's names (its ``post_attention_layernorm``
    sits before the MLP)."""
    wiring = Sandwich(
        rms_norm(theirs.input_layernorm),
        rms_norm(theirs.post_self_attn_layernorm),
        rms_norm(theirs.post_attention_layernorm),
        rms_norm(theirs.post_mlp_layernorm),
    )
    return Block(glm_attention(theirs.self_attn), glm_mlp(theirs.mlp), wiring)


BUILDERS = {
    "GlmAttention": glm_attention,
    "Glm4Attention": glm_attention,
    "GlmDecoderLayer": glm_decoder_layer,
    "Glm4DecoderLayer": glm4_decoder_layer,
}
