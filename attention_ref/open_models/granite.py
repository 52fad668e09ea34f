"""Granite: Llama's layer with multipliers in place of the usual constants.

The attention scales its scores by ``attention_multiplier``, used as it is: the config's
default is 1.0, not ``1/sqrt(D)`` (released checkpoints set their own). The decoder layer
scales each branch by ``residual_multiplier`` before adding it to the residual stream
(``PreNorm(residual_multiplier=...)``). Granite's other multipliers act outside the layers:
``embedding_multiplier`` on the embeddings and ``logits_scaling`` on the logits.
"""

from __future__ import annotations

from typing import Any

from ..block import Block
from ..multihead import MultiHeadAttention
from ..residual import PreNorm
from .common import copy_weights, rms_norm
from .llama import attention, decoder_layer, projections

__all__ = ["BUILDERS", "granite_attention", "granite_decoder_layer"]


def granite_attention(theirs: Any) -> MultiHeadAttention:
    """GraniteAttention: Llama's, with ``scale = attention_multiplier``."""
    ours = attention(theirs)  # scale: theirs.scaling, which is attention_multiplier as it is
    copy_weights(ours, projections(theirs))
    return ours


def granite_decoder_layer(theirs: Any) -> Block:
    """GraniteDecoderLayer: Llama's pre-norm layer, each branch times ``residual_multiplier``."""
    llama_like = decoder_layer(theirs, granite_attention)
    norm1, norm2 = rms_norm(theirs.input_layernorm), rms_norm(theirs.post_attention_layernorm)
    scaled = PreNorm(norm1, norm2, residual_multiplier=theirs.residual_multiplier)
    return Block(llama_like.self_attn, llama_like.mlp, scaled)


BUILDERS = {
    "GraniteAttention": granite_attention,
    "GraniteDecoderLayer": granite_decoder_layer,
}
