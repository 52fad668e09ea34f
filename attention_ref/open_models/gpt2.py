"""GPT-2: one fused projection, no positions in the layer, a LayerNorm pre-norm block.

What differs from Llama: q, k and v come from one ``c_attn``, a ``Conv1D`` whose weight is
stored input-major, ``(E, 3E)``, split and transposed at load; every projection has a bias;
the layer has no positions (GPT-2 adds learned position embeddings to the tokens, below the
layers); the scale is the module's own ``scaling``: ``1/sqrt(D)``, 1 without
``scale_attn_weights``, divided by ``layer_idx + 1`` with ``scale_attn_by_inverse_layer_idx``.
``reorder_and_upcast_attn`` changes only the order of the float32 operations, not the values
computed. The block is pre-norm with LayerNorms and a plain MLP (``c_fc``, ``c_proj``, two
more ``Conv1D``) with ``gelu_new``, the tanh approximation of GELU.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from ..block import Block
from ..multihead import MultiHeadAttention
from ..residual import PreNorm
from .common import copy_weights, layer_norm
from .mlp import feed_forward

__all__ = ["BUILDERS", "conv1d", "gpt2_attention", "gpt2_block"]


def conv1d(conv: Any) -> tuple[Tensor, Tensor]:
    """A ``Conv1D``'s weight, stored ``(in, out)``, as an ``nn.Linear``'s ``(out, in)``, and
    its bias."""
    return conv.weight.t(), conv.bias


def gpt2_attention(theirs: Any) -> MultiHeadAttention:
    """GPT2Attention (self-attention only): ``c_attn`` split into q, k, v; ``c_proj`` is
    ``out_proj``; no positions; their ``scaling``.

    Raises:
        ValueError: For a cross-attention module (``is_cross_attention``).
    """
    if theirs.is_cross_attention:
        raise ValueError("module: GPT2Attention with is_cross_attention is not supported")
    E, H = theirs.embed_dim, theirs.num_heads
    weight, bias = conv1d(theirs.c_attn)  # (3E, E), (3E,): q, k, v one after the other
    ours = MultiHeadAttention(E, H, scale=theirs.scaling, dtype=weight.dtype)
    names = ("q_proj", "k_proj", "v_proj")
    state: dict[str, Tensor] = {}
    for name, w, b in zip(names, weight.split(E), bias.split(E), strict=True):
        state |= {f"{name}.weight": w, f"{name}.bias": b}
    out_weight, out_bias = conv1d(theirs.c_proj)
    copy_weights(ours, state | {"out_proj.weight": out_weight, "out_proj.bias": out_bias})
    return ours


def gpt2_block(theirs: Any) -> Block:
    """GPT2Block: LayerNorm, attention, LayerNorm, MLP, pre-norm.

    Raises:
        ValueError: For a block with cross-attention (``add_cross_attention``).
    """
    if hasattr(theirs, "crossattention"):
        raise ValueError("module: GPT2Block with cross-attention is not supported")
    act = theirs.attn.config.activation_function
    ffn = feed_forward(conv1d(theirs.mlp.c_fc), conv1d(theirs.mlp.c_proj), act)
    wiring = PreNorm(layer_norm(theirs.ln_1), layer_norm(theirs.ln_2))
    return Block(gpt2_attention(theirs.attn), ffn, wiring)


BUILDERS = {"GPT2Attention": gpt2_attention, "GPT2Block": gpt2_block}
