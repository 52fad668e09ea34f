"""A Transformer layer put together from parts: an attention, a feed-forward network, a wiring.

[`DecoderBlock`][attention_ref.DecoderBlock] is the one layer these pages build, with
options; ``Block`` takes the three parts already made, so that any open model's layer is the
same few lines: ``Block(MultiHeadAttention(...), FeedForward(...), PreNorm(n1, n2))`` for
Llama, ``Parallel`` for GPT-NeoX, ``Sandwich`` for Gemma (``attention_ref.residual``).

Shape legend: N batch, L length, E model width.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

__all__ = ["Block"]


class Block(nn.Module):
    """One Transformer layer from its attention, FFN and wiring: ``wiring(x, attend, ffn)``.

    A decoder's layer (Llama's, GPT-NeoX's...) or an encoder's (BERT's): whether it attends
    causally is up to each call's ``is_causal``.

    Args:
        self_attn: ``MultiHeadAttention`` or ``MultiHeadLatentAttention`` (any module called
            as ``self_attn(x, **options)``, returning the output or ``(output, weights)``).
        mlp: The feed-forward network, ``(N, L, E) -> (N, L, E)``.
        wiring: Where the norms and additions sit (``attention_ref.residual``).

    Examples:
        >>> import torch
        >>> from attention_ref import MultiHeadAttention, RMSNorm
        >>> from attention_ref.block import Block
        >>> from attention_ref.feed_forward import FeedForward
        >>> from attention_ref.residual import PreNorm
        >>> _ = torch.manual_seed(0)
        >>> attn = MultiHeadAttention(8, 2, bias=False, rope_base=10000.0)
        >>> llama = Block(attn, FeedForward(8, 16), PreNorm(RMSNorm(8), RMSNorm(8)))
        >>> llama(torch.randn(1, 3, 8), is_causal=True).shape
        torch.Size([1, 3, 8])
    """

    def __init__(self, self_attn: nn.Module, mlp: nn.Module, wiring: nn.Module) -> None:
        super().__init__()
        self.self_attn, self.mlp, self.wiring = self_attn, mlp, wiring

    def forward(self, x: Tensor, **options: Any) -> Tensor:
        """``x`` ``(N, L, E)`` to ``(N, L, E)``; ``options`` go to the attention
        (``positions``, ``attn_mask``, ``is_causal``, ``mask_mod``, ``kv_cache``; for
        ``MultiHeadAttention`` also ``need_weights``, whose weights the layer drops, and for
        ``MultiHeadLatentAttention`` ``absorb``)."""

        def attend(h: Tensor) -> Tensor:
            out = self.self_attn(h, **options)
            return out[0] if isinstance(out, tuple) else out

        return self.wiring(x, attend, self.mlp)
