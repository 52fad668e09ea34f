"""Phi-3 (and Phi-3.5, Phi-4-mini): Llama's attention and layer with fused projections.

What differs from Llama: one ``qkv_proj`` holds the queries', keys' and values' rows one
block after the other, ``[Q | K | V]`` (``H * D``, ``H_kv * D``, ``H_kv * D`` rows), and the
MLP's ``gate_up_proj`` holds the gate's rows, then "up"'s; both are split here at load. No
biases. Rotary positions rotate the first ``partial_rotary_factor`` of each head (all of it
by default; Phi-4-mini less). When the config sets ``sliding_window``, every layer slides.
"""

from __future__ import annotations

from typing import Any

from ..block import Block
from ..multihead import MultiHeadAttention
from ..residual import PreNorm
from .common import copy_weights, layer_rule, rms_norm, rotary
from .mlp import feed_forward

__all__ = ["BUILDERS", "phi3_attention", "phi3_decoder_layer"]


def phi3_attention(theirs: Any) -> MultiHeadAttention:
    """Phi3Attention: ``qkv_proj`` split into q, k, v; RoPE on a fraction of each head."""
    config, i, D = theirs.config, theirs.layer_idx, theirs.head_dim
    H, H_kv = config.num_attention_heads, config.num_key_value_heads
    ours = MultiHeadAttention(
        config.hidden_size,
        H,
        num_kv_heads=H_kv,
        head_dim=D,
        scale=theirs.scaling,
        bias=False,
        qk_parts=[rotary(config, i, D)],
        mask_mod=layer_rule(config, i),
    )
    q, k, v = theirs.qkv_proj.weight.split([H * D, H_kv * D, H_kv * D])  # [Q | K | V] rows
    state = {"q_proj.weight": q, "k_proj.weight": k, "v_proj.weight": v}
    copy_weights(ours, state | {"out_proj.weight": theirs.o_proj.weight})
    return ours


def phi3_decoder_layer(theirs: Any) -> Block:
    """Phi3DecoderLayer: Llama's pre-norm layer; ``gate_up_proj`` split into gate and up."""
    gate, up = theirs.mlp.gate_up_proj.weight.chunk(2)  # the gate's rows first
    down, act = theirs.mlp.down_proj.weight, theirs.config.hidden_act
    ffn = feed_forward((up, None), (down, None), act, gate=(gate, None))
    wiring = PreNorm(rms_norm(theirs.input_layernorm), rms_norm(theirs.post_attention_layernorm))
    return Block(phi3_attention(theirs.self_attn), ffn, wiring)


BUILDERS = {"Phi3Attention": phi3_attention, "Phi3DecoderLayer": phi3_decoder_layer}
