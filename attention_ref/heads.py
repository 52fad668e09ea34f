"""Heads: split a projection into heads, merge them back, share key/value heads (GQA).

What the attention modules and functions do around the attention itself: split a projection
into heads and merge them back (``split_heads``, ``merge_heads``), repeat key/value heads for
grouped-query attention (``expand_kv_heads``), find the batch shape that query, key and value
broadcast to (``batch_shape``) and the positions RoPE rotates the heads at
(``head_positions``). ``MultiHeadAttention`` and ``MultiHeadLatentAttention`` split, merge
and place their heads with them; ``scaled_dot_product_attention`` and ``chunked_attention``
repeat key/value heads with ``expand_kv_heads``; ``chunked_attention`` and the local and
linear attention functions find their batch with ``batch_shape``.

Shape legend (batch-first): N batch, L length, H heads, H_kv key/value heads, D one head's
width (d_k), S key/value length.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "batch_shape",
    "expand_kv_heads",
    "head_positions",
    "merge_heads",
    "split_heads",
]


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """(N, L, H * D) -> (N, H, L, D): each head gets its own slice of the features."""
    n, length, width = x.shape
    return x.view(n, length, num_heads, width // num_heads).transpose(1, 2)  # (N, H, L, D)


def merge_heads(x: Tensor) -> Tensor:
    """(N, H, L, D) -> (N, L, H * D): concatenate the heads again."""
    n, heads, length, head_dim = x.shape
    return x.transpose(1, 2).reshape(n, length, heads * head_dim)  # (N, L, E)


def expand_kv_heads(query: Tensor, kv: Tensor, name: str) -> Tensor:
    """Grouped-query attention: repeat each key/value head for its group of query heads.

    Args:
        query: ``(..., H, L, D)``.
        kv: The keys or values, ``(..., H_kv, S, D)``, with ``H_kv`` dividing ``H``.
        name: ``"key"`` or ``"value"``, for the error message.

    Returns:
        ``(..., H, S, D)``: key/value head ``j`` serves query heads ``j·H/H_kv`` to
        ``(j + 1)·H/H_kv - 1``.

    Raises:
        ValueError: If ``query`` or ``kv`` has fewer than 3 dimensions, or ``H_kv`` does not
            divide ``H``.
    """
    if query.dim() < 3 or kv.dim() < 3:
        raise ValueError(
            f"enable_gqa: expected query and {name} with a head dimension (..., H, L, D), "
            f"got query {tuple(query.shape)} and {name} {tuple(kv.shape)}"
        )
    q_heads, kv_heads = query.size(-3), kv.size(-3)
    if q_heads % kv_heads != 0:
        raise ValueError(
            f"enable_gqa: the {kv_heads} heads of {name} must divide the {q_heads} heads of "
            f"query, got query {tuple(query.shape)} and {name} {tuple(kv.shape)}"
        )
    return kv.repeat_interleave(q_heads // kv_heads, dim=-3)  # (..., H, S, D)


def batch_shape(query: Tensor, key: Tensor, value: Tensor) -> torch.Size:
    """The batch dimensions (all but the last two) that query, key and value broadcast to.

    Raises:
        ValueError: If they do not broadcast.
    """
    try:
        return torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except RuntimeError:
        raise ValueError(
            "query, key and value: batch dimensions do not broadcast, got query "
            f"{tuple(query.shape)}, key {tuple(key.shape)} and value {tuple(value.shape)}"
        ) from None


def head_positions(
    positions: Tensor | None, start: int, length: int, device: torch.device
) -> Tensor:
    """The positions at which RoPE rotates every head's queries and keys.

    Args:
        positions: ``(L,)`` or ``(N, L)``; None for ``start + arange(length)``, which
            continues a cache of ``start`` tokens.
        start: The position of the first token when ``positions`` is None.
        length: L, the number of tokens when ``positions`` is None.
        device: Where to make the default positions.

    Returns:
        ``(L,)``, or ``(N, 1, L)`` for ``(N, L)`` positions: the same for every head.
    """
    if positions is None:
        return torch.arange(start, start + length, device=device)  # (L,)
    return positions[:, None, :] if positions.dim() == 2 else positions  # (N, 1, L) or (L,)
