"""StableLM (StableLM-2, StableLM-3B-4E1T): a quarter of each head rotated, an optional
LayerNorm per head on the queries and keys, an optional parallel layer with one norm.

What differs from Llama: biases on q, k and v only (``use_qkv_bias``), never on the output
projection. Rotary positions rotate the first ``partial_rotary_factor`` of each head (0.25 by
default), ``rotate_half`` pairing. With ``qk_layernorm`` every query head and every key head
goes through a LayerNorm of its own (mean removed, a weight per head, no bias) before RoPE:
``HeadLayerNorm``. The layer uses LayerNorms and SwiGLU; with ``use_parallel_residual``
attention and the MLP read the same normalized input, ``y = x + A(n(x)) + F(n(x))``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..block import Block
from ..multihead import MultiHeadAttention
from ..qk_parts import HeadLayerNorm, QKNorm
from ..residual import Parallel, PreNorm
from .common import copy_weights, layer_norm, rotary
from .llama import attention, projections
from .mlp import gated_mlp

__all__ = ["BUILDERS", "head_layer_norm", "stablelm_attention", "stablelm_decoder_layer"]


def head_layer_norm(theirs: Any) -> HeadLayerNorm:
    """Our ``HeadLayerNorm`` for their ``StableLmLayerNormPerHead``: the H norms' weights
    stacked as ``(H, D)``."""
    norms = theirs.norms
    ours = HeadLayerNorm(len(norms), norms[0].weight.numel(), eps=norms[0].eps)
    copy_weights(ours, {"weight": torch.stack([n.weight for n in norms])})
    return ours


def stablelm_attention(theirs: Any) -> MultiHeadAttention:
    """StableLmAttention: Llama's, RoPE on a fraction of each head, after a LayerNorm per
    head on q and k when ``qk_layernorm``."""
    config, i, D = theirs.config, theirs.layer_idx, theirs.head_dim
    parts: list[nn.Module] = [rotary(config, i, D)]
    if theirs.qk_layernorm:
        norm = QKNorm(head_layer_norm(theirs.q_layernorm), head_layer_norm(theirs.k_layernorm))
        parts.insert(0, norm)  # before RoPE
    ours = attention(theirs, qk_parts=parts)
    norms = {f"qk_parts.0.{k}": t for k, t in parts[0].state_dict().items()}
    copy_weights(ours, projections(theirs) | norms)
    return ours


def stablelm_decoder_layer(theirs: Any) -> Block:
    """StableLmDecoderLayer: LayerNorm, SwiGLU; parallel with one norm if
    ``use_parallel_residual``, else pre-norm."""
    n1 = layer_norm(theirs.input_layernorm)
    if theirs.use_parallel_residual:
        wiring: nn.Module = Parallel(n1)
    else:
        wiring = PreNorm(n1, layer_norm(theirs.post_attention_layernorm))
    ffn = gated_mlp(theirs.mlp, theirs.self_attn.config.hidden_act)
    return Block(stablelm_attention(theirs.self_attn), ffn, wiring)


BUILDERS = {
    "StableLmAttention": stablelm_attention,
    "StableLmDecoderLayer": stablelm_decoder_layer,
}
