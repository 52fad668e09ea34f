"""Gemma 2 and Gemma 3: what their attention and decoder layers differ in from Llama's.

Both scale the scores by ``query_pre_attn_scalar ** -0.5`` instead of ``1/sqrt(D)``, slide a
window on some layers (Gemma 2 the even ones, Gemma 3 five of every six) and wire the layer as
a sandwich: an RMSNorm before and after attention and before and after the feed-forward
network, a GeGLU (``gelu_tanh``) one. Their RMSNorms scale by ``1 + w``, converted at load.
Gemma 2 soft-caps the scores, ``c tanh(s / c)``, after the scale and before the mask: a score
function bound into the kernel. Gemma 3 normalizes each head's queries and keys (RMSNorm,
``1 + w``) before rotary positions whose base depends on the layer type (10 000 on sliding
layers, 1 000 000 on full ones), and never applies the soft cap its config may keep.
"""

from __future__ import annotations

import functools
from typing import Any

from ..block import Block
from ..chunked import chunked_attention
from ..flex import softcap
from ..multihead import MultiHeadAttention
from ..qk_parts import QKNorm
from ..residual import Sandwich
from .common import copy_weights, rms_norm, rotary
from .llama import attention, projections
from .mlp import gated_mlp

__all__ = ["BUILDERS", "gemma2_attention", "gemma3_attention", "gemma_decoder_layer"]


def _check_causal(theirs: Any) -> None:
    if not getattr(theirs, "is_causal", True):  # EmbeddingGemma's bidirectional window
        raise ValueError(
            f"module: {type(theirs).__name__} with use_bidirectional_attention is not supported"
        )


def gemma2_attention(theirs: Any) -> MultiHeadAttention:
    """Gemma2Attention: Llama's, scaled by ``query_pre_attn_scalar ** -0.5``, its scores
    soft-capped by the kernel (``softcap(attn_logit_softcapping)``, after the scale and
    before the mask, as Hugging Face applies it)."""
    _check_causal(theirs)
    cap = theirs.attn_logit_softcapping  # what their forward passes to the kernel
    kernel = None if cap is None else functools.partial(chunked_attention, score_mod=softcap(cap))
    ours = attention(theirs, attention_fn=kernel)
    copy_weights(ours, projections(theirs))
    return ours


def gemma3_attention(theirs: Any) -> MultiHeadAttention:
    """Gemma3Attention: an RMSNorm (``1 + w``) on each head's queries and keys before RoPE,
    the rotary base of the layer's type, the scale ``query_pre_attn_scalar ** -0.5``, and no
    soft cap: their forward never passes the ``attn_logit_softcapping`` it stores."""
    _check_causal(theirs)
    norms = QKNorm(rms_norm(theirs.q_norm, plus_one=True), rms_norm(theirs.k_norm, plus_one=True))
    parts = [norms, rotary(theirs.config, theirs.layer_idx, theirs.head_dim)]
    ours = attention(theirs, qk_parts=parts)
    copy_weights(ours, ours.state_dict() | projections(theirs))  # the norms' weights: set above
    return ours


def gemma_decoder_layer(theirs: Any) -> Block:
    """Gemma2DecoderLayer, Gemma3DecoderLayer: sandwich norms (``1 + w``) around attention
    and around a GeGLU feed-forward network."""
    names = (
        "input_layernorm",
        "post_attention_layernorm",
        "pre_feedforward_layernorm",
        "post_feedforward_layernorm",
    )
    wiring = Sandwich(*(rms_norm(getattr(theirs, name), plus_one=True) for name in names))
    ffn = gated_mlp(theirs.mlp, theirs.self_attn.config.hidden_activation)
    attend = BUILDERS[type(theirs.self_attn).__name__]
    return Block(attend(theirs.self_attn), ffn, wiring)


BUILDERS = {
    "Gemma2Attention": gemma2_attention,
    "Gemma3Attention": gemma3_attention,
    "Gemma2DecoderLayer": gemma_decoder_layer,
    "Gemma3DecoderLayer": gemma_decoder_layer,
}
