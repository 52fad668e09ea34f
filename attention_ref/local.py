"""Sliding-window (local) attention: each query sees only the keys near its own position.

Exact softmax attention restricted to a band of the L×S matrix. Query ``i`` may attend to
key ``j`` when

    causal:      0 <= i - j < window   (itself and the window - 1 keys before it)
    non-causal:  |i - j| < window

with positions aligned at the top-left, as ``is_causal`` and
[`sliding_window_mask`][attention_ref.sliding_window_mask]. The band is computed tile by tile,
so time and memory grow as L·window, not L·S (Longformer, Beltagy et al. 2020; Mistral's
sliding window).

Shape legend (batch-first, as ``torch.nn.functional.scaled_dot_product_attention``):
    N: batch size (any number of leading batch dimensions ``...`` is allowed)
    H: number of heads (just another batch dimension here)
    L: query length          S: key/value length
    D: query/key width (d_k) Dv: value width (d_v)
    w: the window; b: the query tile size (``block_size``)
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._checks import check_positive_int, check_qkv
from .attention import scaled_dot_product_attention
from .heads import batch_shape

__all__ = ["sliding_window_attention"]


def sliding_window_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    window: int,
    is_causal: bool = False,
    scale: float | None = None,
    block_size: int = 128,
) -> Tensor:
    r"""Softmax attention over a band of keys: O(L·w) time and memory instead of O(L·S).

    $$O_i = \sum_{j:\ |i-j| < w} \operatorname{softmax}_j
      \left(\frac{q_i \cdot k_j}{\sqrt{d_k}}\right) v_j
      \qquad (0 \le i - j < w \text{ when causal})$$

    The same, up to rounding, as
    ``scaled_dot_product_attention(query, key, value, attn_mask=band, scale=scale)`` with
    ``band = sliding_window_mask(L, window, S, causal=is_causal)``, but each tile of
    ``block_size`` queries is compared only with the ``block_size + 2·window - 2`` keys
    its band can reach (``block_size + window - 1`` when causal).

    Args:
        query: ``(..., L, D)``.
        key: ``(..., S, D)``; batch dimensions broadcast against ``query``'s.
        value: ``(..., S, Dv)``.
        window: w ≥ 1. Non-causal: query ``i`` sees keys ``i - w + 1 .. i + w - 1``.
            Causal: keys ``i - w + 1 .. i``.
        is_causal: Only look backwards (top-left aligned, as PyTorch's ``is_causal``).
        scale: Multiplies the scores; defaults to ``1 / sqrt(D)``.
        block_size: Queries per tile. Any size gives the same result, up to rounding.

    Returns:
        ``(..., L, Dv)``; zeros for a query with no key in its window (only when L > S).
        float16 and bfloat16 inputs are computed in float32 (by
        [`scaled_dot_product_attention`][attention_ref.scaled_dot_product_attention]) and
        returned in their dtype.

    Raises:
        ValueError: On mismatched shapes or a window or block size below 1.
        TypeError: On non-floating inputs, mixed dtypes, or a non-int window or block size.

    Examples:
        >>> import torch
        >>> from attention_ref import sliding_window_attention
        >>> from attention_ref import scaled_dot_product_attention, sliding_window_mask
        >>> gen = torch.Generator().manual_seed(0)
        >>> q, k, v = (torch.randn(2, 10, 4, generator=gen) for _ in range(3))
        >>> local = sliding_window_attention(q, k, v, window=3, block_size=4)
        >>> band = sliding_window_mask(10, window=3, causal=False)
        >>> band.sum(-1)  # keys each query sees: 2w - 1 = 5 away from the edges
        tensor([3, 4, 5, 5, 5, 5, 5, 5, 4, 3])
        >>> torch.allclose(local, scaled_dot_product_attention(q, k, v, attn_mask=band))
        True
    """
    check_qkv(query, key, value)
    window = check_positive_int("window", window)
    block_size = check_positive_int("block_size", block_size)
    batch = batch_shape(query, key, value)
    L, S, Dv = query.size(-2), key.size(-2), value.size(-1)
    reach_back, reach_ahead = window - 1, 0 if is_causal else window - 1

    out = query.new_zeros(*batch, L, Dv)  # a query with no key in reach keeps its zeros
    for i in range(0, L, block_size):
        stop_q = min(i + block_size, L)
        first, stop = max(0, i - reach_back), min(S, stop_q + reach_ahead)  # keys in reach
        if first >= stop:  # only when L > S: this tile's windows hold no key
            continue
        rows = torch.arange(i, stop_q, device=query.device)[:, None]  # (b, 1)
        cols = torch.arange(first, stop, device=query.device)[None, :]  # (1, b + 2w - 2) at most
        distance = rows - cols  # (b, keys): i - j
        band = (distance >= 0) & (distance < window) if is_causal else distance.abs() < window
        out[..., i:stop_q, :] = scaled_dot_product_attention(
            query[..., i:stop_q, :],  # (..., b, D)
            key[..., first:stop, :],  # (..., keys, D)
            value[..., first:stop, :],  # (..., keys, Dv)
            attn_mask=band,
            scale=scale,
        )  # (..., b, Dv)
    return out
