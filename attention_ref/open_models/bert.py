"""BERT: a bidirectional encoder layer, with the 2017 paper's post-LN ("Add & Norm").

What differs from Llama: attention is bidirectional (call ``is_causal=False`` and give the
padding as ``attn_mask``, bool ``(N, 1, 1, S)``, True = may attend; a decoder BERT,
``is_decoder``, is causal); no positions in the layer (BERT adds learned position
embeddings to the tokens); every projection has a bias. ``BertSelfAttention`` stops before
the output projection, which lives in ``BertSelfOutput`` with the residual and a LayerNorm:
ours has no ``out_proj`` (an ``nn.Identity``). The layer adds, then normalizes
(``h = n1(x + A(x))``, ``y = n2(h + F(h))``: ``attention_ref.residual.AddNorm``), with a
plain MLP and the exact GELU. ``BertAttention``, half a layer (attention, then its Add &
Norm), is not taken: ``BertSelfAttention`` and ``BertLayer`` are.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from ..block import Block
from ..multihead import MultiHeadAttention
from ..residual import AddNorm
from .common import copy_weights, layer_norm
from .mlp import feed_forward

__all__ = ["BUILDERS", "bert_layer", "bert_self_attention"]


def bert_self_attention(theirs: Any, out_proj: Any = None) -> MultiHeadAttention:
    """BertSelfAttention: ``query``, ``key``, ``value`` with biases; no output projection
    unless ``out_proj`` (their ``BertSelfOutput.dense``) is given."""
    H, D = theirs.num_attention_heads, theirs.attention_head_size
    weight = theirs.query.weight
    ours = MultiHeadAttention(
        weight.shape[1], H, head_dim=D, scale=theirs.scaling, dtype=weight.dtype
    )
    state = {
        f"{ours_name}.{kind}": t
        for theirs_name, ours_name in (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj"))
        for kind, t in getattr(theirs, theirs_name).state_dict().items()
    }
    if out_proj is None:
        ours.register_module("out_proj", nn.Identity())  # BERT's W^O sits in BertSelfOutput
    else:
        state |= {f"out_proj.{kind}": t for kind, t in out_proj.state_dict().items()}
    copy_weights(ours, state)
    return ours


def bert_layer(theirs: Any) -> Block:
    """BertLayer: attention (with ``attention.output.dense`` as ``out_proj``), Add & Norm,
    MLP (``intermediate.dense``, ``output.dense``), Add & Norm.

    Raises:
        ValueError: For a layer with cross-attention (``add_cross_attention``).
    """
    if hasattr(theirs, "crossattention"):
        raise ValueError("module: BertLayer with cross-attention is not supported")
    attention, up, down = theirs.attention, theirs.intermediate.dense, theirs.output.dense
    act = attention.self.config.hidden_act
    ffn = feed_forward((up.weight, up.bias), (down.weight, down.bias), act)
    wiring = AddNorm(layer_norm(attention.output.LayerNorm), layer_norm(theirs.output.LayerNorm))
    return Block(bert_self_attention(attention.self, attention.output.dense), ffn, wiring)


BUILDERS = {"BertSelfAttention": bert_self_attention, "BertLayer": bert_layer}
