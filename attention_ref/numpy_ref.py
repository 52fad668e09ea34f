"""Softmax and scaled dot-product attention in plain NumPy, for readers without PyTorch.

This module imports nothing but NumPy. Shapes as in ``attention_ref.attention``: query
``(..., L, D)``, key ``(..., S, D)``, value ``(..., S, Dv)``; a boolean mask is True where a
query may attend.
"""

from __future__ import annotations

import numpy as np

__all__ = ["scaled_dot_product_attention", "softmax"]


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Examples:
        >>> import numpy as np
        >>> from attention_ref.numpy_ref import softmax
        >>> softmax(np.array([1.0, 2.0, 3.0])).round(4)
        array([0.09  , 0.2447, 0.6652])
    """
    exp = np.exp(x - x.max(axis=axis, keepdims=True))
    return exp / exp.sum(axis=axis, keepdims=True)


def scaled_dot_product_attention(
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    attn_mask: np.ndarray | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> np.ndarray:
    """``softmax(query @ key.T * scale + mask) @ value``; fully masked rows give zeros.

    Examples:
        >>> import numpy as np
        >>> from attention_ref.numpy_ref import scaled_dot_product_attention
        >>> q = k = np.eye(3)
        >>> v = np.arange(6.0).reshape(3, 2)
        >>> scaled_dot_product_attention(q, k, v).round(4)
        array([[1.5868, 2.5868],
               [2.    , 3.    ],
               [2.4132, 3.4132]])
    """
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / np.sqrt(query.shape[-1]) if scale is None else scale
    scores = query @ np.swapaxes(key, -2, -1) * scale  # (..., L, S)
    if is_causal:
        attn_mask = np.tril(np.ones((L, S), dtype=bool))
    if attn_mask is not None and attn_mask.dtype == bool:
        scores = np.where(attn_mask, scores, -np.inf)
    elif attn_mask is not None:
        scores = scores + attn_mask
    row_max = scores.max(axis=-1, keepdims=True)
    row_max = np.where(np.isneginf(row_max), 0.0, row_max)  # fully masked row
    exp = np.exp(scores - row_max)
    total = exp.sum(axis=-1, keepdims=True)
    weights = exp / np.where(total == 0, 1.0, total)
    return weights @ value  # (..., L, Dv)
