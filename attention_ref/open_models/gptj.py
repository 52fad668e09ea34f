"""GPT-J: rotary positions on part of each head, interleaved; a parallel block.

What differs from Llama: no bias anywhere in the attention; rotary positions on the first
``rotary_dim`` features of each head only, pairing features ``2i`` and ``2i + 1`` (Llama
pairs ``i`` and ``i + D/2``), with base 10000 fixed in the code; the block runs attention
and the MLP side by side on one LayerNorm's output (``x + A(n(x)) + F(n(x))``), the MLP a
plain one (``fc_in``, ``fc_out``) with ``gelu_new``.
"""

from __future__ import annotations

from typing import Any

from ..block import Block
from ..multihead import MultiHeadAttention
from ..qk_parts import Rotary
from ..residual import Parallel
from .common import copy_weights, layer_norm
from .mlp import feed_forward

__all__ = ["BUILDERS", "gptj_attention", "gptj_block"]

ROPE_BASE = 10000.0  # create_sinusoidal_positions' base; GPTJConfig has no field for it


def gptj_attention(theirs: Any) -> MultiHeadAttention:
    """GPTJAttention: q, k, v and out without bias; interleaved RoPE on ``rotary_dim``
    features of each head (all of them if it is None)."""
    E, H = theirs.embed_dim, theirs.num_attention_heads
    weight = theirs.q_proj.weight
    rotary = Rotary(ROPE_BASE, interleaved=True, rotary_dim=theirs.rotary_dim)
    ours = MultiHeadAttention(
        E, H, bias=False, scale=theirs.scaling, qk_parts=[rotary], dtype=weight.dtype
    )
    names = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "out_proj": "out_proj"}
    copy_weights(ours, {f"{o}.weight": getattr(theirs, t).weight for t, o in names.items()})
    return ours


def gptj_block(theirs: Any) -> Block:
    """GPTJBlock: one LayerNorm, then attention and the MLP in parallel."""
    act = theirs.attn.config.activation_function
    fc_in, fc_out = theirs.mlp.fc_in, theirs.mlp.fc_out
    ffn = feed_forward((fc_in.weight, fc_in.bias), (fc_out.weight, fc_out.bias), act)
    return Block(gptj_attention(theirs.attn), ffn, Parallel(layer_norm(theirs.ln_1)))


BUILDERS = {"GPTJAttention": gptj_attention, "GPTJBlock": gptj_block}
