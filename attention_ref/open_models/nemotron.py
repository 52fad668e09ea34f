"""Nemotron: half of each head rotated; LayerNorms that scale by ``1 + w``; a relu² MLP.

What differs from Llama: rotary positions rotate the first half of each head
(``partial_rotary_factor`` 0.5 by default), ``rotate_half`` pairing; the attention is
otherwise Llama's (biases if ``attention_bias``, on all four projections). The layer is
pre-norm with ``LayerNorm1P``, a LayerNorm whose stored weight ``w`` scales by ``1 + w``
(converted here at load to a plain weight), and an MLP without a gate,
``down(relu(up(x)) ** 2)``.
"""

from __future__ import annotations

from typing import Any

from ..block import Block
from ..multihead import MultiHeadAttention
from ..residual import PreNorm
from .common import copy_weights, layer_norm
from .llama import attention, projections
from .mlp import feed_forward

__all__ = ["BUILDERS", "nemotron_attention", "nemotron_decoder_layer"]


def nemotron_attention(theirs: Any) -> MultiHeadAttention:
    """NemotronAttention: Llama's, with RoPE on ``partial_rotary_factor`` of each head."""
    ours = attention(theirs)  # the fraction is read from the config's rope_parameters
    copy_weights(ours, projections(theirs))
    return ours


def nemotron_decoder_layer(theirs: Any) -> Block:
    """NemotronDecoderLayer: LayerNorm1P (``1 + w``), attention, LayerNorm1P, relu² MLP."""
    wiring = PreNorm(
        layer_norm(theirs.input_layernorm, plus_one=True),
        layer_norm(theirs.post_attention_layernorm, plus_one=True),
    )
    up, down = theirs.mlp.up_proj, theirs.mlp.down_proj
    act = theirs.self_attn.config.hidden_act  # "relu2"
    ffn = feed_forward((up.weight, up.bias), (down.weight, down.bias), act)
    return Block(nemotron_attention(theirs.self_attn), ffn, wiring)


BUILDERS = {
    "NemotronAttention": nemotron_attention,
    "NemotronDecoderLayer": nemotron_decoder_layer,
}
