"""OLMo 2: Llama's attention with an RMSNorm over the whole query and key projections, and a
post-norm layer.

The queries' norm acts on all ``H * D`` features of a token at once, and the keys' norm on all
``H_kv * D`` (not on each head, as Qwen3's), each with one weight per feature, before the heads
are split and rotated. The decoder layer normalizes each branch's output before adding it to the
residual stream, and its input not at all: ``h = x + n1(A(x))``, ``y = h + n2(F(h))``.
"""

from __future__ import annotations

from typing import Any

from ..block import Block
from ..multihead import MultiHeadAttention
from ..qk_parts import QKNorm
from ..residual import PostNorm
from .common import copy_weights, rms_norm, rotary
from .llama import attention, projections
from .mlp import gated_mlp

__all__ = ["BUILDERS", "olmo2_attention", "post_norm_layer"]


def olmo2_attention(theirs: Any) -> MultiHeadAttention:
    """Olmo2Attention: RMSNorm over the whole q (H * D) and k (H_kv * D), then RoPE."""
    norm = QKNorm(rms_norm(theirs.q_norm), rms_norm(theirs.k_norm), whole=True)
    rope = rotary(theirs.config, theirs.layer_idx, theirs.head_dim)
    ours = attention(theirs, qk_parts=[norm, rope])
    copy_weights(
        ours,
        projections(theirs) | {f"qk_parts.0.{k}": t for k, t in norm.state_dict().items()},
    )
    return ours


def post_norm_layer(theirs: Any, attention_builder: Any = olmo2_attention) -> Block:
    """A post-norm decoder layer (OLMo 2, EXAONE 4): attention, then RMSNorm on its output,
    added; the gated MLP (SwiGLU with ``hidden_act`` ``"silu"``), then RMSNorm on its output,
    added."""
    wiring = PostNorm(
        rms_norm(theirs.post_attention_layernorm), rms_norm(theirs.post_feedforward_layernorm)
    )
    ffn = gated_mlp(theirs.mlp, theirs.self_attn.config.hidden_act)
    return Block(attention_builder(theirs.self_attn), ffn, wiring)


BUILDERS = {"Olmo2Attention": olmo2_attention, "Olmo2DecoderLayer": post_norm_layer}
