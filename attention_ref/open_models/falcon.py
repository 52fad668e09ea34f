"""Falcon: one fused projection in three layouts, RoPE or ALiBi, attention beside the MLP.

What differs from Llama: ``query_key_value`` holds the queries', keys' and values' rows in one
of three layouts, split here at load: grouped (``new_decoder_architecture``, Falcon-40B/180B:
for each key/value head its ``H / H_kv`` query heads, then its key, then its value),
multi-query (Falcon-7B: all ``H`` query heads, then one key head, one value head) or per head
(``[q_h | k_h | v_h]``, as GPT-NeoX). Biases on both projections if ``bias``; the output
projection is ``dense``. Positions: RoPE on the whole head, or with ``alibi`` (Falcon-RW) no
RoPE but ALiBi added to ``q·k`` *before* the scale, so its slopes are divided by ``sqrt(D)``
(``flex.alibi(H, scale=D**-0.5)``), and counted once, as Hugging Face's sdpa path does (its
eager path adds them twice in a full model: the model folds them into the mask too). The
layer uses LayerNorms and a GELU MLP beside attention, with one norm (``parallel_attn``) or
two (``ln_attn``, ``ln_mlp``: the new architecture), or the pre-norm layer.
"""

from __future__ import annotations

import functools
from typing import Any

from torch import Tensor, nn

from ..block import Block
from ..chunked import chunked_attention
from ..flex import alibi
from ..multihead import MultiHeadAttention
from ..residual import Parallel, PreNorm
from .common import copy_weights, layer_norm, rotary
from .gpt_neox import split_per_head
from .mlp import feed_forward

__all__ = ["BUILDERS", "falcon_attention", "falcon_layer", "split_falcon"]


def split_falcon(fused: Tensor, config: Any) -> dict[str, Tensor]:
    """``query_key_value``'s weight ``(rows, E)`` or bias ``(rows,)`` as ``q_proj``'s,
    ``k_proj``'s and ``v_proj``'s rows, in the config's layout."""
    H, D = config.num_attention_heads, config.hidden_size // config.num_attention_heads
    rest = fused.shape[1:]
    if config.new_decoder_architecture:  # per key/value group: H / H_kv queries, k, v
        grouped = fused.reshape(config.num_kv_heads, -1, D, *rest)  # (H_kv, H / H_kv + 2, D, ...)
        q, k, v = (t.reshape(-1, *rest) for t in (grouped[:, :-2], grouped[:, -2], grouped[:, -1]))
        return {"q_proj": q, "k_proj": k, "v_proj": v}
    if config.multi_query:  # all H queries, then one key head and one value head
        q, k, v = fused.split([H * D, D, D])
        return {"q_proj": q, "k_proj": k, "v_proj": v}
    return split_per_head(fused, H)


def falcon_attention(theirs: Any) -> MultiHeadAttention:
    """FalconAttention: ``query_key_value`` split by layout; RoPE, or ALiBi before the scale."""
    config, i = theirs.config, theirs.layer_idx
    H, D = theirs.num_heads, theirs.head_dim
    if config.new_decoder_architecture:
        H_kv = config.num_kv_heads
    else:
        H_kv = 1 if config.multi_query else H
    positions: dict[str, Any] = {"qk_parts": [rotary(config, i, D)]}
    if config.alibi:  # added to q·k before the scale: slopes times 1/sqrt(D)
        score_mod = alibi(H, scale=theirs.inv_norm_factor)
        positions = {"attention_fn": functools.partial(chunked_attention, score_mod=score_mod)}
    ours = MultiHeadAttention(
        config.hidden_size,
        H,
        num_kv_heads=H_kv,
        scale=theirs.inv_norm_factor,
        bias=config.bias,
        **positions,
    )
    fused, dense = theirs.query_key_value, theirs.dense
    state = {
        f"{name}.{kind}": t
        for kind, whole in fused.state_dict().items()
        for name, t in split_falcon(whole, config).items()
    }
    copy_weights(ours, state | {f"out_proj.{k}": t for k, t in dense.state_dict().items()})
    return ours


def _wiring(theirs: Any) -> nn.Module:
    config = theirs.config
    if config.new_decoder_architecture and config.num_ln_in_parallel_attn == 2:
        return Parallel(layer_norm(theirs.ln_attn), layer_norm(theirs.ln_mlp))
    if config.new_decoder_architecture or config.parallel_attn:
        return Parallel(layer_norm(theirs.input_layernorm))
    return PreNorm(layer_norm(theirs.input_layernorm), layer_norm(theirs.post_attention_layernorm))


def falcon_layer(theirs: Any) -> Block:
    """FalconDecoderLayer: LayerNorm, a GELU MLP beside attention (one norm or two), or the
    pre-norm layer when ``parallel_attn`` is off (old architecture)."""
    up, down = theirs.mlp.dense_h_to_4h, theirs.mlp.dense_4h_to_h
    ffn = feed_forward((up.weight, up.bias), (down.weight, down.bias), theirs.config.activation)
    return Block(falcon_attention(theirs.self_attention), ffn, _wiring(theirs))


BUILDERS = {"FalconAttention": falcon_attention, "FalconDecoderLayer": falcon_layer}
