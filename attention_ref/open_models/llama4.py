"""Llama 4 (text): Llama's attention in two kinds of layers, neither of which is Llama's.

RoPE layers (three of four by default; ``no_rope_layers[i] == 1`` means layer i *uses* RoPE)
rotate interleaved pairs ``(2i, 2i + 1)`` (Hugging Face multiplies complex numbers), then, with
``use_qk_norm``, normalize each query and key head by its RMS with no weight (after RoPE, where
Qwen3 normalizes before), and attend only within their chunk of ``attention_chunk_size``
positions (``j // C == i // C``, causal). NoPE layers attend to every earlier token without
positions; with ``attn_temperature_tuning`` their queries are scaled up with the position
(``QueryTemperature``). The decoder layer is Llama's pre-norm layer; its feed-forward network
is a mixture of experts on the layers in ``config.moe_layers``, and only the dense layers are
built here.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from ..block import Block
from ..multihead import MultiHeadAttention
from ..norms import RMSNorm
from ..qk_parts import QKNorm, QueryTemperature
from ..residual import PreNorm
from .common import copy_weights, rms_norm, rotary
from .llama import attention, projections
from .mlp import gated_mlp

__all__ = ["BUILDERS", "llama4_attention", "llama4_layer", "llama4_qk_parts"]


def llama4_qk_parts(theirs: Any) -> list[nn.Module]:
    """The parts on a Llama 4 layer's queries and keys: interleaved RoPE, then a weightless
    RMSNorm per head (``use_qk_norm``), on a RoPE layer; the query temperature
    (``attn_temperature_tuning``) on a NoPE layer."""
    config, i, D = theirs.config, theirs.layer_idx, theirs.head_dim
    if not theirs.use_rope:  # no_rope_layers[i] == 0
        if not theirs.attn_temperature_tuning:
            return []
        return [QueryTemperature(theirs.floor_scale, theirs.attn_scale)]
    parts: list[nn.Module] = [rotary(config, i, D, interleaved=True)]
    if hasattr(theirs, "qk_norm"):  # Llama4TextL2Norm: x / rms(x), no weight
        eps = theirs.qk_norm.eps
        weightless = [RMSNorm(D, eps=eps, elementwise_affine=False) for _ in "qk"]
        parts.append(QKNorm(*weightless))
    return parts


def llama4_attention(theirs: Any) -> MultiHeadAttention:
    """Llama4TextAttention: RoPE + chunks + norm after RoPE, or NoPE + query temperature."""
    ours = attention(theirs, qk_parts=llama4_qk_parts(theirs))
    copy_weights(ours, projections(theirs))
    return ours


def llama4_layer(theirs: Any) -> Block:
    """Llama4TextDecoderLayer with a dense feed-forward network (``feed_forward``: a SwiGLU
    MLP): Llama's pre-norm layer.

    Raises:
        ValueError: For a mixture-of-experts layer (``layer_idx in config.moe_layers``).
    """
    if theirs.is_moe_layer:
        raise ValueError(
            f"module: Llama4TextDecoderLayer {theirs.layer_idx} has a mixture-of-experts "
            "feed-forward network, which from_hf does not build; pass its self_attn instead, "
            "or a dense layer (not in config.moe_layers)"
        )
    wiring = PreNorm(rms_norm(theirs.input_layernorm), rms_norm(theirs.post_attention_layernorm))
    ffn = gated_mlp(theirs.feed_forward, theirs.self_attn.config.hidden_act)
    return Block(llama4_attention(theirs.self_attn), ffn, wiring)


BUILDERS = {"Llama4TextAttention": llama4_attention, "Llama4TextDecoderLayer": llama4_layer}
