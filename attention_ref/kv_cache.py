"""The key/value cache of causal decoding: the keys and values of every token seen so far.

Generating one token at a time, a decoder's new token attends to all earlier ones. Their
keys and values do not change (causal: an earlier token never sees a later one), so each
layer keeps them instead of recomputing them: the next step projects only the new token.

A rolling cache (``window``, StreamingLLM's ``sink_tokens``) keeps only the first tokens and
the most recent ones, so its memory stops growing: what sliding-window attention needs.

Shape legend (batch-first): N batch, H_kv key/value heads, S tokens cached, L new tokens,
D head_dim.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["KVCache"]


class KVCache:
    r"""The keys and values one attention layer has seen, ``(N, H_kv, S, D)`` each.

    They are stored after the projections and after rotary positions, so a cached key
    never needs rotating again. A stack of layers needs one cache per layer: in all it
    holds $2 \cdot \text{layers} \cdot N \cdot H_{kv} \cdot S \cdot D$ numbers.

    By default the cache keeps every token: ``len(cache)`` (the entries held) equals
    ``cache.tokens_seen`` (the tokens ever added, the position of the next token). With
    ``window=W`` it is a rolling cache: it keeps the first ``sink_tokens`` entries (the
    "attention sinks" of StreamingLLM) and the ``W`` most recent ones, never more than
    ``sink_tokens + W``. A query at position ``t`` then sees the keys ``j < sink_tokens``
    and ``t - W < j <= t``, as [`sliding_window_mask`][attention_ref.sliding_window_mask]
    with ``sink_tokens`` allows; ``visible`` gives that mask for the keys the last
    ``update`` returned, whose positions are ``cache.positions``. ``cache.held_positions``
    are those of the entries held now, which the next ``update`` returns first (to pick
    the columns of a padding mask, say).

    Args:
        window: W, how many recent tokens to keep (each query counts itself); ``None``
            keeps every token.
        sink_tokens: How many first tokens to keep as well; only with ``window``.

    Raises:
        ValueError: On ``window`` below 1, ``sink_tokens`` below 0, or ``sink_tokens``
            without ``window``.
        TypeError: On a non-int ``window`` or ``sink_tokens``.

    Examples:
        >>> import torch
        >>> from attention_ref import KVCache
        >>> cache = KVCache()
        >>> len(cache)
        0
        >>> k, v = cache.update(torch.ones(1, 2, 3, 4), torch.zeros(1, 2, 3, 4))
        >>> k, v = cache.update(torch.ones(1, 2, 1, 4), torch.zeros(1, 2, 1, 4))
        >>> len(cache), tuple(k.shape)  # 3 tokens, then 1 more
        (4, (1, 2, 4, 4))

        A rolling cache with one sink token and a window of 2:

        >>> cache = KVCache(window=2, sink_tokens=1)
        >>> k, v = cache.update(torch.ones(1, 1, 4, 2), torch.ones(1, 1, 4, 2))  # a prompt
        >>> cache.positions  # the keys returned: all four, before trimming
        tensor([0, 1, 2, 3])
        >>> cache.visible(torch.arange(4)).int()  # which key each new query may see
        tensor([[1, 0, 0, 0],
                [1, 1, 0, 0],
                [1, 1, 1, 0],
                [1, 0, 1, 1]], dtype=torch.int32)
        >>> len(cache), cache.tokens_seen, cache.held_positions  # holds tokens 0, 2 and 3
        (3, 4, tensor([0, 2, 3]))
        >>> k, v = cache.update(torch.ones(1, 1, 1, 2), torch.ones(1, 1, 1, 2))  # token 4
        >>> cache.positions, cache.visible(torch.tensor([4])).int()
        (tensor([0, 2, 3, 4]), tensor([[1, 0, 1, 1]], dtype=torch.int32))
        >>> len(cache), cache.tokens_seen
        (3, 5)
    """

    def __init__(self, *, window: int | None = None, sink_tokens: int = 0) -> None:
        if window is not None and (isinstance(window, bool) or not isinstance(window, int)):
            raise TypeError(f"window: expected an int or None, got {type(window).__name__}")
        if isinstance(sink_tokens, bool) or not isinstance(sink_tokens, int):
            raise TypeError(f"sink_tokens: expected an int, got {type(sink_tokens).__name__}")
        if (window is not None and window < 1) or sink_tokens < 0 or (sink_tokens and not window):
            raise ValueError(  # sink tokens only make sense in a rolling cache
                "window and sink_tokens: expected window >= 1 or None and sink_tokens >= 0, "
                f"sink_tokens only with a window, got window={window}, sink_tokens={sink_tokens}"
            )
        self.window, self.sink_tokens = window, sink_tokens
        self.key: Tensor | None = None  # (N, H_kv, S, D)
        self.value: Tensor | None = None  # (N, H_kv, S, D)
        self.tokens_seen = 0  # tokens ever added: the position of the next one
        self.positions = torch.zeros(0, dtype=torch.long)  # (S,): keys the last update returned
        self.held_positions = self.positions  # (S,): the positions of the entries held now

    def __len__(self) -> int:
        return 0 if self.key is None else self.key.size(2)

    def update(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Append the new tokens' ``key`` and ``value``, ``(N, H_kv, L, D)``.

        With a ``window``, the cache trims itself to its first ``sink_tokens`` and last
        ``window`` entries *after* returning: the new queries attend over the held keys and
        all ``L`` new ones, under ``visible``'s rule.

        Returns:
            The held tokens, then the new ones: ``(N, H_kv, S + L, D)`` each, at the
            positions ``cache.positions``.

        Raises:
            ValueError: If the batch size, head count or head width differs from the
                cached tokens'.
        """
        if self.key is not None and (
            key.shape[:2] != self.key.shape[:2] or key.size(3) != self.key.size(3)
        ):
            raise ValueError(
                "kv_cache: expected new keys with the cached batch size, heads and width "
                f"(N, H_kv, D) = {(self.key.size(0), self.key.size(1), self.key.size(3))}, "
                f"got {(key.size(0), key.size(1), key.size(3))}"
            )
        new = torch.arange(self.tokens_seen, self.tokens_seen + key.size(2), device=key.device)
        held = self.held_positions.to(key.device)  # (S,)
        self.positions = self.held_positions = torch.cat([held, new])  # (S + L,)
        self.tokens_seen += key.size(2)
        # --8<-- [start:append]
        if self.key is None or self.value is None:  # the first tokens
            self.key, self.value = key, value
        else:
            self.key = torch.cat([self.key, key], dim=2)  # (N, H_kv, S + L, D)
            self.value = torch.cat([self.value, value], dim=2)  # (N, H_kv, S + L, D)
        # --8<-- [end:append]
        key, value = self.key, self.value
        if self.window is not None and len(self) > self.sink_tokens + self.window:
            keep = torch.cat(  # the first sink_tokens entries and the last window
                [torch.arange(self.sink_tokens), torch.arange(-self.window, 0) + len(self)]
            ).to(key.device)
            self.key, self.value = key[:, :, keep], value[:, :, keep]  # (N, H_kv, s + W, D)
            self.held_positions = self.positions[keep]
        return key, value

    def visible(self, query_positions: Tensor) -> Tensor:
        """Which of the keys the last ``update`` returned each query may see.

        Key ``j`` (its position in ``cache.positions``) is visible to the query at position
        ``t`` when ``j <= t`` (causal) and, with a ``window`` ``W``, also ``j <
        sink_tokens`` or ``t - j < W``. Without a window this is the bottom-right-aligned
        causal mask.

        Args:
            query_positions: ``(..., L)`` absolute positions, usually those of the new
                tokens, ``cache.positions[-L:]``.

        Returns:
            A bool tensor ``(..., L, S)``, True where the query may attend (SDPA's
            convention).
        """
        keys = self.positions.to(query_positions.device)  # (S,)
        distance = query_positions[..., :, None] - keys  # (..., L, S): t - j
        allowed = distance >= 0  # causal
        if self.window is not None:
            allowed &= (keys < self.sink_tokens) | (distance < self.window)
        return allowed
