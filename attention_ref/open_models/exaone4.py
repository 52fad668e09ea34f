"""EXAONE 4: Qwen3's attention (an RMSNorm on each query and key head, before RoPE) with no
bias and no positions on its global layers, in OLMo 2's post-norm layer.

Three layers of four slide a window (``sliding_window_pattern``, or ``layer_types``) and rotate
their queries and keys; the fourth attends to every earlier token without rotary positions
(NoPE). Only a config without a window (``sliding_window=None``) rotates on every layer.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from ..block import Block
from ..multihead import MultiHeadAttention
from ..qk_parts import QKNorm
from .common import copy_weights, layer_type, rms_norm, rotary
from .llama import attention, projections
from .olmo2 import post_norm_layer

__all__ = ["BUILDERS", "decoder_layer", "exaone4_attention"]


def exaone4_attention(theirs: Any) -> MultiHeadAttention:
    """Exaone4Attention: RMSNorm per head on q and k, then RoPE on sliding layers only."""
    config, i = theirs.config, theirs.layer_idx
    norm = QKNorm(rms_norm(theirs.q_norm), rms_norm(theirs.k_norm))
    parts: list[nn.Module] = [norm]
    if config.sliding_window is None or layer_type(config, i) == "sliding_attention":
        parts.append(rotary(config, i, theirs.head_dim))
    ours = attention(theirs, qk_parts=parts)
    copy_weights(
        ours, projections(theirs) | {f"qk_parts.0.{k}": t for k, t in norm.state_dict().items()}
    )
    return ours


def decoder_layer(theirs: Any) -> Block:
    """Exaone4DecoderLayer: OLMo 2's post-norm layer around EXAONE 4's attention."""
    return post_norm_layer(theirs, exaone4_attention)


BUILDERS = {"Exaone4Attention": exaone4_attention, "Exaone4DecoderLayer": decoder_layer}
