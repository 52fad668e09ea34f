"""Qwen3, and Qwen3-Next's full-attention layers: Llama's attention with a norm on each head.

Qwen3: an RMSNorm over each query head's and key head's ``D`` features (one weight ``(D,)``
shared by all heads), before RoPE; biases on all four projections if ``attention_bias``; the
upper layers slide (``i >= max_window_layers``) as in Qwen2. Its decoder layer is Llama's.

Qwen3-Next (full-attention layers; the others are linear attention, out of scope): the same
norms with Gemma's ``(1 + w)`` weights (converted at load), RoPE on the first quarter of each
head (``partial_rotary_factor``), and a sigmoid gate on the merged heads
(``attention_ref.output_gate.OutputGate``). Its ``q_proj`` packs the gate with the queries,
head by head: rows ``[q_h | gate_h]`` for each head ``h``; they are split at load.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from ..block import Block
from ..multihead import MultiHeadAttention
from ..output_gate import OutputGate
from ..qk_parts import QKNorm
from .common import copy_weights, rms_norm, rotary
from .llama import attention, decoder_layer, projections

__all__ = [
    "BUILDERS",
    "qwen3_attention",
    "qwen3_decoder_layer",
    "qwen3_next_attention",
    "split_query_and_gate",
]


def qwen3_attention(theirs: Any) -> MultiHeadAttention:
    """Qwen3Attention: q/k RMSNorm per head (``q_norm``, ``k_norm``), then RoPE."""
    norms = QKNorm(rms_norm(theirs.q_norm), rms_norm(theirs.k_norm))
    rope = rotary(theirs.config, theirs.layer_idx, theirs.head_dim)
    ours = attention(theirs, qk_parts=[norms, rope])
    state = {f"qk_parts.0.{k}": v for k, v in norms.state_dict().items()}
    copy_weights(ours, projections(theirs) | state)
    return ours


def split_query_and_gate(packed: Tensor, num_heads: int) -> tuple[Tensor, Tensor]:
    """Qwen3-Next's ``q_proj`` weight ``(2 H D, E)`` (or bias ``(2 H D,)``), whose rows hold
    ``[q_h | gate_h]`` for each head in turn, as the queries' ``(H D, ...)`` and the gate's.

    Examples:
        >>> import torch
        >>> from attention_ref.open_models.qwen import split_query_and_gate
        >>> rows = torch.arange(8.0)  # H = 2 heads, D = 2: q_0, gate_0, q_1, gate_1
        >>> split_query_and_gate(rows, 2)
        (tensor([0., 1., 4., 5.]), tensor([2., 3., 6., 7.]))
    """
    per_head = packed.reshape(num_heads, 2, -1, *packed.shape[1:])  # (H, 2, D, ...)
    query, gate = per_head.unbind(1)  # (H, D, ...) each
    return query.flatten(0, 1), gate.flatten(0, 1)  # (H * D, ...)


def qwen3_next_attention(theirs: Any) -> MultiHeadAttention:
    """Qwen3NextAttention: ``(1 + w)`` q/k norms per head, RoPE on a quarter of each head,
    and an output gate whose weights ``q_proj`` holds beside the queries'."""
    config, H, D = theirs.config, theirs.config.num_attention_heads, theirs.head_dim
    norms = QKNorm(rms_norm(theirs.q_norm, plus_one=True), rms_norm(theirs.k_norm, plus_one=True))
    has_bias = theirs.q_proj.bias is not None
    gate = OutputGate(config.hidden_size, H * D, bias=has_bias)
    rope = rotary(config, theirs.layer_idx, D)
    ours = attention(theirs, qk_parts=[norms, rope], output_gate=gate)
    state = projections(theirs) | {f"qk_parts.0.{k}": v for k, v in norms.state_dict().items()}
    for kind in ("weight", "bias") if has_bias else ("weight",):
        query, gated = split_query_and_gate(getattr(theirs.q_proj, kind), H)
        state |= {f"q_proj.{kind}": query, f"output_gate.proj.{kind}": gated}
    copy_weights(ours, state)
    return ours


def qwen3_decoder_layer(theirs: Any) -> Block:
    """Qwen3DecoderLayer: Llama's pre-norm layer around ``qwen3_attention``."""
    return decoder_layer(theirs, qwen3_attention)


BUILDERS = {
    "Qwen3Attention": qwen3_attention,
    "Qwen3DecoderLayer": qwen3_decoder_layer,
    "Qwen3NextAttention": qwen3_next_attention,
}
