"""Attention with nothing but the formula: softmax(Q K^T / sqrt(d_k)) V.

No masks, no input checks, no grouped heads: the formula that
``attention_ref.attention.scaled_dot_product_attention`` implements, for a first reading.
Shapes: query ``(..., L, D)``, key ``(..., S, D)``, value ``(..., S, Dv)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["plain_attention"]


def plain_attention(query: Tensor, key: Tensor, value: Tensor) -> Tensor:
    r"""Scaled dot-product attention, the formula alone.

    No masks and no input checks: for those, use
    [`scaled_dot_product_attention`][attention_ref.scaled_dot_product_attention].

    $$\operatorname{Attention}(Q, K, V) =
      \operatorname{softmax}\left(\frac{QK^\top}{\sqrt{d_k}}\right)V$$

    Args:
        query: ``(..., L, D)``.
        key: ``(..., S, D)``.
        value: ``(..., S, Dv)``.

    Returns:
        ``(..., L, Dv)``.

    Examples:
        >>> import torch
        >>> from attention_ref import plain_attention
        >>> q = k = torch.eye(3)
        >>> v = torch.arange(6.0).reshape(3, 2)
        >>> plain_attention(q, k, v)
        tensor([[1.5868, 2.5868],
                [2.0000, 3.0000],
                [2.4132, 3.4132]])
    """
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., L, S)
    weights = torch.softmax(scores, dim=-1)  # each row sums to 1
    return weights @ value  # (..., L, Dv)
