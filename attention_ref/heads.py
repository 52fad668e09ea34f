"""Heads: split a projection into heads, merge them back, share key/value heads (GQA).

What every multi-head module does around the attention itself: multi-head attention, the
latent form (MLA) and the figures all use these three functions.

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
    """Grouped-query attention: repeat each key/value head for its group of query heads."""
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
    """The batch dimensions (all but the last two) that query, key and value broadcast to."""
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
    """The positions to rotate every head's queries and keys at: ``start + arange(L)`` by
    default (continuing a cache of ``start`` tokens), ``(L,)`` as given, or ``(N, L)`` as
    ``(N, 1, L)``, the same for every head."""
    if positions is None:
        return torch.arange(start, start + length, device=device)  # (L,)
    return positions[:, None, :] if positions.dim() == 2 else positions  # (N, 1, L) or (L,)
