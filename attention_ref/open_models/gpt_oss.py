"""gpt-oss: a learned sink logit per head, and a sliding window on alternate layers.

What differs from Llama: each head has a learned logit ``sinks[h]`` that joins every row's
softmax as one more column and is then dropped, so a query's weights may sum to less than
1 (``MultiHeadAttention(sinks=True)``); the sliding layers (``layer_types``: the even ones by
default) see the last ``sliding_window`` keys (the layer's own rule). Every projection has a
bias if ``attention_bias``. The released checkpoints use YaRN, out of scope; with the
default rotary type the pairing is Llama's. The decoder layer's MLP is a mixture of
experts: only the attention is taken.
"""

from __future__ import annotations

from typing import Any

from ..multihead import MultiHeadAttention
from .common import copy_weights
from .llama import attention, projections

__all__ = ["BUILDERS", "gpt_oss_attention"]


def gpt_oss_attention(theirs: Any) -> MultiHeadAttention:
    """GptOssAttention: Llama's attention with sinks, its layer's window as its rule."""
    ours = attention(theirs, sinks=True, dtype=theirs.q_proj.weight.dtype)
    copy_weights(ours, projections(theirs) | {"sinks": theirs.sinks})
    return ours


BUILDERS = {"GptOssAttention": gpt_oss_attention}
