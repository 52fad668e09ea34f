"""Llama and the families whose attention is Llama's with a different config or bias.

Llama: separate q/k/v/o projections (biases if ``attention_bias``), grouped-query heads,
rotary positions on the whole head (``rotate_half`` pairing), scale ``1/sqrt(D)``. Mistral
slides a window on every layer when ``sliding_window`` is set; Qwen2 biases q, k and v but not
o, and slides the upper layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import nn

from ..block import Block
from ..multihead import MultiHeadAttention
from ..residual import PreNorm
from .common import copy_weights, drop_bias, layer_rule, rms_norm, rotary
from .mlp import gated_mlp

__all__ = ["BUILDERS", "attention", "decoder_layer", "projections"]


def projections(theirs: Any, prefix: str = "") -> dict[str, Any]:
    """Their ``q_proj``, ``k_proj``, ``v_proj``, ``o_proj`` under our names."""
    names = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "o_proj": "out_proj"}
    return {
        f"{prefix}{ours}.{kind}": t
        for theirs_name, ours in names.items()
        for kind, t in getattr(theirs, theirs_name).state_dict().items()
    }


def attention(
    theirs: Any, *, qk_parts: Sequence[nn.Module] | None = None, **options: Any
) -> MultiHeadAttention:
    """``MultiHeadAttention`` for a Llama-like attention module: sizes, scale, bias per
    projection, the layer's rule and rotary positions from its config and layer index;
    ``qk_parts`` replaces the default ``[rotary]``; ``options`` go to the constructor."""
    config, i = theirs.config, theirs.layer_idx
    D = theirs.head_dim
    parts = [rotary(config, i, D)] if qk_parts is None else qk_parts
    ours = MultiHeadAttention(
        config.hidden_size,
        config.num_attention_heads,
        num_kv_heads=config.num_key_value_heads,
        head_dim=D,
        scale=theirs.scaling,
        bias=True,
        qk_parts=parts,
        mask_mod=layer_rule(config, i),
        **options,
    )
    for name, mine in (
        ("q_proj", ours.q_proj),
        ("k_proj", ours.k_proj),
        ("v_proj", ours.v_proj),
        ("o_proj", ours.out_proj),
    ):
        if getattr(theirs, name).bias is None:
            drop_bias(mine)
    return ours


def llama_attention(theirs: Any) -> MultiHeadAttention:
    """LlamaAttention, MistralAttention, Qwen2Attention: the projections and RoPE."""
    ours = attention(theirs)
    copy_weights(ours, projections(theirs))
    return ours


def decoder_layer(theirs: Any, attention_builder: Any = llama_attention) -> Block:
    """A Llama-like pre-norm decoder layer: RMSNorm, attention, RMSNorm, the gated MLP with
    the config's ``hidden_act`` (SwiGLU with ``"silu"``, the default)."""
    wiring = PreNorm(rms_norm(theirs.input_layernorm), rms_norm(theirs.post_attention_layernorm))
    ffn = gated_mlp(theirs.mlp, theirs.self_attn.config.hidden_act)
    return Block(attention_builder(theirs.self_attn), ffn, wiring)


BUILDERS = {
    "LlamaAttention": llama_attention,
    "MistralAttention": llama_attention,
    "Qwen2Attention": llama_attention,
    "LlamaDecoderLayer": decoder_layer,
    "MistralDecoderLayer": decoder_layer,
    "Qwen2DecoderLayer": decoder_layer,
}
