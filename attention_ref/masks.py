"""Boolean attention masks: True = the query **may attend** to the key.

Every mask here broadcasts against scores of shape (N, H, L, S):
    causal_mask, sliding_window_mask -> (L, S)
    padding_mask                     -> (N, 1, 1, S)

This is PyTorch SDPA's convention. ``nn.MultiheadAttention`` uses the opposite one (True =
masked): pass ``~mask`` there.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ._checks import check_positive_int

__all__ = ["causal_mask", "padding_mask", "sliding_window_mask"]

_ALIGNS = ("top_left", "bottom_right")


def _offset(q_len: int, k_len: int, align: str) -> int:
    """How many keys come before query 0's own position."""
    if align not in _ALIGNS:
        raise ValueError(f"align: expected one of {_ALIGNS}, got {align!r}")
    return 0 if align == "top_left" else k_len - q_len


def causal_mask(
    q_len: int,
    k_len: int | None = None,
    *,
    align: str = "top_left",
    device: torch.device | str | None = None,
) -> Tensor:
    """Lower-triangular mask: query ``i`` may attend to keys up to its own position.

    With ``align="top_left"`` (PyTorch's ``is_causal``), query ``i`` sees keys ``0..i``.
    With ``align="bottom_right"``, the queries are the *last* ``q_len`` positions of the
    ``k_len`` keys, so query ``i`` sees keys ``0..i + k_len - q_len``: what decoding with a
    KV cache needs. The two agree when ``q_len == k_len``.

    Args:
        q_len: L, the number of queries.
        k_len: S, the number of keys; defaults to ``q_len``.
        align: ``"top_left"`` or ``"bottom_right"``.
        device: Where to create the mask.

    Returns:
        A bool tensor ``(L, S)``, True where attention is allowed.

    Raises:
        TypeError: If ``q_len`` or ``k_len`` is not an int.
        ValueError: If one of them is below 1, or ``align`` is unknown.

    Examples:
        >>> from attention_ref import causal_mask
        >>> causal_mask(3).int()
        tensor([[1, 0, 0],
                [1, 1, 0],
                [1, 1, 1]], dtype=torch.int32)
        >>> causal_mask(2, 4, align="bottom_right").int()  # 2 new tokens after 2 cached ones
        tensor([[1, 1, 1, 0],
                [1, 1, 1, 1]], dtype=torch.int32)
    """
    q_len = check_positive_int("q_len", q_len, "length")
    k_len = q_len if k_len is None else check_positive_int("k_len", k_len, "length")
    diagonal = _offset(q_len, k_len, align)
    return torch.ones(q_len, k_len, dtype=torch.bool, device=device).tril(diagonal)  # (L, S)


def padding_mask(lengths: Tensor | Sequence[int], max_len: int | None = None) -> Tensor:
    """Mask out the padding at the end of each sequence in a batch.

    Args:
        lengths: ``(N,)`` the true length of each sequence (an int tensor or a list).
        max_len: S, the padded length; defaults to ``max(lengths)``.

    Returns:
        A bool tensor ``(N, 1, 1, S)`` on ``lengths``' device: True for real tokens, False
        for padding. It broadcasts over heads and queries.

    Raises:
        TypeError: If ``lengths`` is not one-dimensional integers.
        ValueError: On a negative length, or ``max_len`` below the longest length.

    Examples:
        >>> import torch
        >>> from attention_ref import padding_mask
        >>> padding_mask([3, 1], max_len=4)[:, 0, 0].int()
        tensor([[1, 1, 1, 0],
                [1, 0, 0, 0]], dtype=torch.int32)
        >>> padding_mask(torch.tensor([2, 3])).shape
        torch.Size([2, 1, 1, 3])
    """
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise TypeError(
            "lengths: expected a 1-D integer tensor or list of ints (N,), got "
            f"{lengths.dtype} of shape {tuple(lengths.shape)}"
        )
    if lengths.numel() and int(lengths.min()) < 0:
        raise ValueError(f"lengths: expected non-negative lengths, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    max_len = longest if max_len is None else max_len
    if max_len < longest:
        raise ValueError(f"max_len: expected at least the longest length {longest}, got {max_len}")
    positions = torch.arange(max_len, device=lengths.device)  # (S,)
    keep = positions < lengths[:, None]  # (N, S)
    return keep[:, None, None, :]  # (N, 1, 1, S)


def sliding_window_mask(
    q_len: int,
    window: int,
    k_len: int | None = None,
    *,
    causal: bool = True,
    align: str = "top_left",
    sink_tokens: int = 0,
) -> Tensor:
    """Local attention: each query sees only the keys within ``window`` positions.

    With ``causal=True`` query ``i`` sees key ``j`` when ``0 <= i - j < window`` (itself and
    the ``window - 1`` keys before it); with ``causal=False`` when ``|i - j| < window``.
    Positions are aligned as in [`causal_mask`][attention_ref.causal_mask]. The first
    ``sink_tokens`` keys are always visible too (when causal, to the queries at or after
    them): StreamingLLM's attention sinks, which a rolling [`KVCache`][attention_ref.KVCache]
    keeps. The mask is built on the CPU (there is no ``device`` argument): move it with
    ``.to(device)``.

    Args:
        q_len: L, the number of queries.
        window: The band's width: a query sees keys less than ``window`` positions away
            (1: itself only); at least 1.
        k_len: S, the number of keys; defaults to ``q_len``.
        causal: Only look backwards.
        align: ``"top_left"`` or ``"bottom_right"``, as in
            [`causal_mask`][attention_ref.causal_mask].
        sink_tokens: Keys ``j < sink_tokens`` are allowed too; 0 or more.

    Returns:
        A bool tensor ``(L, S)``, True where attention is allowed.

    Raises:
        TypeError: If ``q_len``, ``window``, ``k_len`` or ``sink_tokens`` is not an int.
        ValueError: If one of them is below 1 (``sink_tokens`` below 0), or ``align`` is
            unknown.

    Examples:
        >>> from attention_ref import sliding_window_mask
        >>> sliding_window_mask(4, window=2).int()
        tensor([[1, 0, 0, 0],
                [1, 1, 0, 0],
                [0, 1, 1, 0],
                [0, 0, 1, 1]], dtype=torch.int32)
        >>> sliding_window_mask(3, window=2, causal=False).int()
        tensor([[1, 1, 0],
                [1, 1, 1],
                [0, 1, 1]], dtype=torch.int32)
        >>> sliding_window_mask(5, window=2, sink_tokens=1).int()  # and always key 0
        tensor([[1, 0, 0, 0, 0],
                [1, 1, 0, 0, 0],
                [1, 1, 1, 0, 0],
                [1, 0, 1, 1, 0],
                [1, 0, 0, 1, 1]], dtype=torch.int32)
    """
    q_len = check_positive_int("q_len", q_len, "length")
    window = check_positive_int("window", window, "length")
    k_len = q_len if k_len is None else check_positive_int("k_len", k_len, "length")
    sink_tokens = check_positive_int("sink_tokens", sink_tokens, "count", minimum=0)
    query_pos = torch.arange(q_len)[:, None] + _offset(q_len, k_len, align)  # (L, 1)
    distance = query_pos - torch.arange(k_len)[None, :]  # (L, S): i - j
    sink = torch.arange(k_len)[None, :] < sink_tokens  # (1, S): the first keys
    if causal:
        return (distance >= 0) & ((distance < window) | sink)
    return (distance.abs() < window) | sink
