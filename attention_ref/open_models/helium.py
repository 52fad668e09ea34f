"""Helium: Llama's attention with interleaved rotary pairs and a square output projection.

Helium's code reads like Llama's, but its ``rotate_half`` pairs features ``2i`` and ``2i + 1``
(``Rotary(interleaved=True)``), over the whole head. Its ``o_proj`` is ``(E, E)`` and never has
a bias, whatever ``attention_bias`` says: the heads must be as wide as the model,
``H * D == E``. The decoder layer is Llama's.
"""

from __future__ import annotations

from typing import Any

from ..block import Block
from ..multihead import MultiHeadAttention
from .common import copy_weights, rotary
from .llama import attention, decoder_layer, projections

__all__ = ["BUILDERS", "helium_attention", "helium_decoder_layer"]


def helium_attention(theirs: Any) -> MultiHeadAttention:
    """HeliumAttention: interleaved RoPE over the whole head.

    Raises:
        ValueError: If ``H * D`` is not ``E``: Hugging Face's module cannot run then either.
    """
    config, D = theirs.config, theirs.head_dim
    H, E = config.num_attention_heads, config.hidden_size
    if H * D != E:
        raise ValueError(
            f"module: HeliumAttention needs num_attention_heads * head_dim == hidden_size "
            f"(its o_proj is (E, E)), got {H} * {D} != {E}"
        )
    ours = attention(theirs, qk_parts=[rotary(config, theirs.layer_idx, D, interleaved=True)])
    copy_weights(ours, projections(theirs))
    return ours


def helium_decoder_layer(theirs: Any) -> Block:
    """HeliumDecoderLayer: Llama's pre-norm layer around ``helium_attention``."""
    return decoder_layer(theirs, helium_attention)


BUILDERS = {
    "HeliumAttention": helium_attention,
    "HeliumDecoderLayer": helium_decoder_layer,
}
