"""Cohere (Command R) and Cohere2 (Command R7B, Command A): how they differ from Llama.

Cohere rotates pairs of neighbouring features (``2i, 2i + 1``, interleaved RoPE) and may
normalize each head's queries and keys before it with a LayerNorm without bias whose weight
has one row per head, ``(H, D)`` (``use_qk_norm``). Cohere2 has no q/k norm; three layers of
four slide a window and rotate, the fourth attends to everything with no positions at all
(NoPE). Both wire a layer in parallel around one LayerNorm without bias:
``y = x + A(n(x)) + F(n(x))``, with a SwiGLU feed-forward network.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..block import Block
from ..multihead import MultiHeadAttention
from ..norms import LayerNorm
from ..qk_parts import HeadLayerNorm, QKNorm
from ..residual import Parallel
from .common import copy_weights, layer_type, rotary
from .llama import attention, projections
from .mlp import gated_mlp

__all__ = [
    "BUILDERS",
    "cohere2_attention",
    "cohere_attention",
    "cohere_decoder_layer",
    "head_layer_norm",
]


def head_layer_norm(theirs: Any) -> HeadLayerNorm:
    """Our ``HeadLayerNorm`` from a ``CohereLayerNorm`` with a weight of shape ``(H, D)``
    (no bias: it takes a ``bias`` argument and ignores it)."""
    H, D = theirs.weight.shape
    ours = HeadLayerNorm(H, D, eps=theirs.variance_epsilon)
    with torch.no_grad():
        ours.weight.copy_(theirs.weight)
    return ours


def cohere_attention(theirs: Any) -> MultiHeadAttention:
    """CohereAttention: a per-head LayerNorm on queries and keys (if ``use_qk_norm``), then
    interleaved RoPE on the whole head."""
    parts: list[nn.Module] = []
    if theirs.use_qk_norm:
        parts.append(QKNorm(head_layer_norm(theirs.q_norm), head_layer_norm(theirs.k_norm)))
    parts.append(rotary(theirs.config, theirs.layer_idx, theirs.head_dim, interleaved=True))
    ours = attention(theirs, qk_parts=parts)
    copy_weights(ours, ours.state_dict() | projections(theirs))  # the norms' weights: set above
    return ours


def cohere2_attention(theirs: Any) -> MultiHeadAttention:
    """Cohere2Attention: interleaved RoPE and a window on sliding layers; on full layers
    neither (no positions: NoPE)."""
    config, i = theirs.config, theirs.layer_idx
    sliding = layer_type(config, i) == "sliding_attention"
    parts = [rotary(config, i, theirs.head_dim, interleaved=True)] if sliding else []
    ours = attention(theirs, qk_parts=parts)
    copy_weights(ours, projections(theirs))
    return ours


def cohere_decoder_layer(theirs: Any) -> Block:
    """CohereDecoderLayer, Cohere2DecoderLayer: attention and a SwiGLU network in parallel,
    both reading the same LayerNorm (no bias) of the input."""
    norm = theirs.input_layernorm
    ours_norm = LayerNorm(norm.weight.shape[-1], eps=norm.variance_epsilon, bias=False)
    copy_weights(ours_norm, {"weight": norm.weight})
    ffn = gated_mlp(theirs.mlp, theirs.self_attn.config.hidden_act)
    attend = BUILDERS[type(theirs.self_attn).__name__]
    return Block(attend(theirs.self_attn), ffn, Parallel(ours_norm))


BUILDERS = {
    "CohereAttention": cohere_attention,
    "Cohere2Attention": cohere2_attention,
    "CohereDecoderLayer": cohere_decoder_layer,
    "Cohere2DecoderLayer": cohere_decoder_layer,
}
