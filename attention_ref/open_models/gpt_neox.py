"""GPT-NeoX (Pythia): one fused projection laid out per head, a quarter of each head rotated,
and attention beside the MLP.

What differs from Llama: ``query_key_value`` holds, for each head in turn, its query, key and
value rows, ``[q_1 | k_1 | v_1 | q_2 | ...]`` (split here at load), with biases; the output
projection is ``dense``. Rotary positions rotate the first ``rotary_pct`` of each head (0.25
by default; ``rope_parameters["partial_rotary_factor"]``), ``rotate_half`` pairing. No
grouped-query heads. The layer uses LayerNorms and a GELU MLP; with ``use_parallel_residual``
(the default) attention and the MLP read the same input, each through its own norm:
``y = x + A(n1(x)) + F(n2(x))``; without it, the pre-norm layer.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from ..block import Block
from ..multihead import MultiHeadAttention
from ..residual import Parallel, PreNorm
from .common import copy_weights, layer_norm, layer_rule, rotary
from .mlp import feed_forward

__all__ = ["BUILDERS", "gpt_neox_attention", "gpt_neox_layer", "split_per_head"]


def split_per_head(fused: Tensor, num_heads: int) -> dict[str, Tensor]:
    """Rows laid out per head, ``[q_1 | k_1 | v_1 | q_2 | k_2 | v_2 | ...]``, regrouped as
    ``q_proj``'s, ``k_proj``'s and ``v_proj``'s rows, for a weight ``(3 * H * D, E)`` or a
    bias ``(3 * H * D,)``.

    Examples:
        >>> import torch
        >>> from attention_ref.open_models.gpt_neox import split_per_head
        >>> parts = split_per_head(torch.arange(12), num_heads=2)  # D = 2
        >>> parts["q_proj"].tolist(), parts["v_proj"].tolist()
        ([0, 1, 6, 7], [4, 5, 10, 11])
    """
    per_head = fused.reshape(num_heads, 3, -1, *fused.shape[1:])  # (H, 3, D, ...)
    q, k, v = (t.reshape(-1, *fused.shape[1:]) for t in per_head.unbind(1))
    return {"q_proj": q, "k_proj": k, "v_proj": v}


def gpt_neox_attention(theirs: Any) -> MultiHeadAttention:
    """GPTNeoXAttention: ``query_key_value`` split per head; RoPE on ``rotary_pct`` of each."""
    config, i, D = theirs.config, theirs.layer_idx, theirs.head_size
    H = config.num_attention_heads
    fused, dense = theirs.query_key_value, theirs.dense
    ours = MultiHeadAttention(
        config.hidden_size,
        H,
        head_dim=D,
        scale=theirs.scaling,
        bias=fused.bias is not None,
        qk_parts=[rotary(config, i, D)],
        mask_mod=layer_rule(config, i),
    )
    state = {
        f"{name}.{kind}": t
        for kind, whole in fused.state_dict().items()
        for name, t in split_per_head(whole, H).items()
    }
    copy_weights(ours, state | {f"out_proj.{k}": t for k, t in dense.state_dict().items()})
    return ours


def gpt_neox_layer(theirs: Any) -> Block:
    """GPTNeoXLayer: two LayerNorms, attention and a GELU MLP side by side
    (``use_parallel_residual``), else one after the other (pre-norm)."""
    n1, n2 = layer_norm(theirs.input_layernorm), layer_norm(theirs.post_attention_layernorm)
    wiring: nn.Module = Parallel(n1, n2) if theirs.use_parallel_residual else PreNorm(n1, n2)
    up, down = theirs.mlp.dense_h_to_4h, theirs.mlp.dense_4h_to_h
    act = theirs.attention.config.hidden_act
    ffn = feed_forward((up.weight, up.bias), (down.weight, down.bias), act)
    return Block(gpt_neox_attention(theirs.attention), ffn, wiring)


BUILDERS = {"GPTNeoXAttention": gpt_neox_attention, "GPTNeoXLayer": gpt_neox_layer}
