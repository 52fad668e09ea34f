"""BLOOM: ALiBi instead of rotary positions, one projection fused per head.

What differs from Llama: no rotary positions; ALiBi instead, a bias ``m_h (j - i)`` on each
score (Press et al.'s slopes, for any number of heads), here a score function bound into
the kernel, ``chunked_attention(score_mod=alibi(H))``; q, k and v come from one
``query_key_value`` laid out per head (``[q_h | k_h | v_h]`` for each head h), split at
load; every projection has a bias; the block is pre-norm with LayerNorms and a plain MLP
with the tanh GELU. ``BloomAttention`` keeps no config: it is read from its attributes.
It also adds the residual it is handed to its output (``forward(x, residual, ...)``); ours
returns the attention alone, as every other family's does.
"""

from __future__ import annotations

import functools
from typing import Any

from ..block import Block
from ..chunked import chunked_attention
from ..flex import alibi
from ..multihead import MultiHeadAttention
from ..residual import PreNorm
from .common import copy_weights, layer_norm
from .mlp import feed_forward

__all__ = ["BUILDERS", "bloom_attention", "bloom_block"]


def bloom_attention(theirs: Any) -> MultiHeadAttention:
    """BloomAttention: ``query_key_value`` split per head; ALiBi in the kernel; ``dense`` is
    ``out_proj``.

    Raises:
        ValueError: If ``beta`` (the weight of ALiBi in the scores) is not 1.
    """
    E, H, D = theirs.hidden_size, theirs.num_heads, theirs.head_dim
    if theirs.beta != 1.0:
        raise ValueError(f"module: BloomAttention with beta {theirs.beta} is not supported")
    fused = theirs.query_key_value
    weight = fused.weight.view(H, 3, D, E)  # per head: its query, key and value rows
    bias = fused.bias.view(H, 3, D)
    kernel = functools.partial(chunked_attention, score_mod=alibi(H))
    ours = MultiHeadAttention(
        E, H, scale=theirs.inv_norm_factor, attention_fn=kernel, dtype=weight.dtype
    )
    state = {
        f"{name}.{kind}": t[:, i].reshape(H * D, *t.shape[3:])
        for i, name in enumerate(("q_proj", "k_proj", "v_proj"))
        for kind, t in (("weight", weight), ("bias", bias))
    }
    state |= {"out_proj.weight": theirs.dense.weight, "out_proj.bias": theirs.dense.bias}
    copy_weights(ours, state)
    return ours


def bloom_block(theirs: Any) -> Block:
    """BloomBlock: LayerNorm, attention, LayerNorm, MLP, pre-norm.

    Raises:
        ValueError: With ``apply_residual_connection_post_layernorm``, where the residual is
            the normalized stream (``h = n1(x) + A(n1(x))``): no released checkpoint uses it.
    """
    if theirs.apply_residual_connection_post_layernorm:
        raise ValueError(
            "module: BloomBlock with apply_residual_connection_post_layernorm is not supported"
        )
    up, down = theirs.mlp.dense_h_to_4h, theirs.mlp.dense_4h_to_h
    # BloomGelu, their own tanh GELU (no config field names it): Hugging Face's "gelu_new"
    ffn = feed_forward((up.weight, up.bias), (down.weight, down.bias), "gelu_new")
    wiring = PreNorm(
        layer_norm(theirs.input_layernorm), layer_norm(theirs.post_attention_layernorm)
    )
    return Block(bloom_attention(theirs.self_attention), ffn, wiring)


BUILDERS = {"BloomAttention": bloom_attention, "BloomBlock": bloom_block}
