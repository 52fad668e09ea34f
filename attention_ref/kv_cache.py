"""The key/value cache of causal decoding: the keys and values of every token seen so far.

Generating one token at a time, a decoder's new token attends to all earlier ones. Their
keys and values do not change (causal: an earlier token never sees a later one), so each
layer keeps them instead of recomputing them: the next step projects only the new token.

A rolling cache (``window``, StreamingLLM's ``sink_tokens``) keeps only the first tokens and
the most recent ones, so its memory stops growing: what sliding-window attention needs.

Multi-head latent attention caches other tensors, a latent and one rotated key per token:
``LatentCache`` keeps them under their own names, with the same positions and rolling rule.

Shape legend (batch-first): N batch, H_kv key/value heads, S tokens cached, L new tokens,
D head_dim, R the latent's width (kv_lora_rank), D_rope the rotated key's width.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._checks import check_positive_int
from ._mods import MaskMod
from .mask_mods import sliding_window

__all__ = ["KVCache", "LatentCache"]


class _TokenCache:
    """What a cache of tokens keeps whatever it stores: positions, and the rolling rule."""

    def __init__(self, *, window: int | None = None, sink_tokens: int = 0) -> None:
        if window is not None:
            window = check_positive_int("window", window, "length")
        sink_tokens = check_positive_int("sink_tokens", sink_tokens, "count", minimum=0)
        if sink_tokens and window is None:  # sink tokens only make sense in a rolling cache
            raise ValueError(f"sink_tokens: expected 0 without a window, got {sink_tokens}")
        self.window, self.sink_tokens = window, sink_tokens
        self.held: tuple[Tensor, ...] = ()  # what is cached, (N, H_kv, S, width) each
        self.tokens_seen = 0  # tokens ever added: the position of the next one
        self.positions = torch.zeros(0, dtype=torch.long)  # (S,): keys the last update returned
        self.held_positions = self.positions  # (S,): the positions of the entries held now

    def __len__(self) -> int:
        return self.held[0].size(2) if self.held else 0

    def _append(self, *new: Tensor) -> tuple[Tensor, ...]:
        """Append one tensor per stored kind, ``(N, H_kv, L, width)``; return the held and new
        ones, then trim to the sink tokens and the window."""
        if self.held and any(
            x.shape[:2] != held.shape[:2] or x.size(3) != held.size(3)
            for x, held in zip(new, self.held, strict=True)
        ):
            got = [(x.size(0), x.size(1), x.size(3)) for x in new]
            want = [(x.size(0), x.size(1), x.size(3)) for x in self.held]
            raise ValueError(
                f"kv_cache: expected new tokens with the cached (N, H_kv, width) {want}, got {got}"
            )
        length, device = new[0].size(2), new[0].device
        fresh = torch.arange(self.tokens_seen, self.tokens_seen + length, device=device)
        self.positions = self.held_positions = torch.cat([self.held_positions.to(device), fresh])
        self.tokens_seen += length
        # --8<-- [start:append]
        if not self.held:  # the first tokens
            self.held = new
        else:  # (N, H_kv, S + L, width) each: the cached tokens, then the new
            self.held = tuple(torch.cat([x, y], dim=2) for x, y in zip(self.held, new, strict=True))
        # --8<-- [end:append]
        returned = self.held
        if self.window is not None and len(self) > self.sink_tokens + self.window:
            keep = torch.cat(  # the first sink_tokens entries and the last window
                [torch.arange(self.sink_tokens), torch.arange(-self.window, 0) + len(self)]
            ).to(device)
            self.held = tuple(x[:, :, keep] for x in returned)  # (N, H_kv, s + W, width)
            self.held_positions = self.positions[keep]
        return returned

    def rule(self) -> MaskMod | None:
        """The cache's own rule over positions: ``sliding_window(window, sink_tokens)``, which
        is causal too, for a rolling cache; None for a cache that keeps every token."""
        return None if self.window is None else sliding_window(self.window, self.sink_tokens)

    def visible(self, query_positions: Tensor) -> Tensor:
        """Which of the keys the last ``update`` returned each query may see.

        The key at position ``j`` (its entry in ``cache.positions``, not its slot) is visible
        to the query at position ``t`` when ``j <= t`` (causal) and, with a ``window`` ``W``,
        also ``j < sink_tokens`` or ``t - j < W``: ``rule()`` on those positions. Without a
        window this is the bottom-right-aligned causal mask.

        Args:
            query_positions: ``(..., L)`` absolute positions, usually those of the new
                tokens, ``cache.positions[-L:]``.

        Returns:
            A bool tensor ``(..., L, len(cache.positions))``, one column per key the last
            ``update`` returned, True where the query may attend (SDPA's convention).
        """
        keys = self.positions.to(query_positions.device)  # (S,)
        t, j = query_positions[..., :, None], keys  # (..., L, 1), (S,)
        rule = self.rule()
        return t >= j if rule is None else rule(t, t, t, j)  # b, h unused: any tensor

    def check(self, x: Tensor, positions: Tensor | None, heads: int) -> int:
        """Called by the modules before ``update``: returns ``tokens_seen``, the position of
        ``x``'s first token, after checking that ``x`` (N, L, ...) has the cached batch size,
        ``heads`` the cached head count, and ``positions`` (if given) continue the cache.

        Raises:
            ValueError: If ``x``'s batch size or ``heads`` differs from the cached tokens', or
                ``positions`` are not ``tokens_seen, tokens_seen + 1, ...``.
        """
        start, (n, length) = self.tokens_seen, x.shape[:2]
        if self.held and self.held[0].shape[:2] != (n, heads):
            raise ValueError(
                f"kv_cache: expected N={n} and H_kv={heads}, got a cache of shape "
                f"{tuple(self.held[0].shape)}"
            )
        new = torch.arange(start, start + length, device=x.device)  # (L,)
        if positions is not None and (
            positions.shape[-1:] != new.shape or (positions != new).any()
        ):
            raise ValueError(
                f"positions: with a cache of {start} tokens, expected positions "
                f"{start}..{start + length - 1}, got {positions.tolist()}"
            )
        return start


class KVCache(_TokenCache):
    r"""The keys and values one attention layer has seen, ``(N, H_kv, S, D)`` each.

    They are stored after the projections and after rotary positions, so a cached key
    never needs rotating again. ``cache.held`` is the pair ``(key, value)``, which
    ``cache.key`` and ``cache.value`` name. A stack of layers needs one cache per layer: in all it
    holds $2 \cdot \text{layers} \cdot N \cdot H_{kv} \cdot S \cdot D$ numbers.

    By default the cache keeps every token: ``len(cache)`` (the entries held) equals
    ``cache.tokens_seen`` (the tokens ever added, the position of the next token). With ``window=W``
    it is a rolling cache: it keeps the first ``sink_tokens`` entries (sink tokens, StreamingLLM's
    "attention sinks") and the ``W`` most recent ones, never more than ``sink_tokens + W``. A query
    at position ``t`` then sees the keys ``j <= t`` with ``j < sink_tokens`` or ``t - W < j``, as
    [`sliding_window_mask`][attention_ref.sliding_window_mask] with ``sink_tokens`` allows:
    ``rule()`` returns that rule over positions. ``visible(...)`` returns the mask it gives for
    the keys the last ``update`` returned (their positions are ``cache.positions``).
    ``cache.held_positions`` are those of the entries held now, which the next ``update``
    returns first (to pick the columns of a padding mask, say).

    Args:
        window: W, how many recent tokens to keep (each query counts itself); ``None``
            keeps every token. Keyword-only.
        sink_tokens: How many first tokens to keep as well; only with ``window``.
            Keyword-only.

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

    @property
    def key(self) -> Tensor | None:
        """The keys held, ``(N, H_kv, S, D)``, with RoPE applied; None before the first update."""
        return self.held[0] if self.held else None

    @property
    def value(self) -> Tensor | None:
        """The values held, ``(N, H_kv, S, D)``; None before the first update."""
        return self.held[1] if self.held else None

    def update(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Append the new tokens' keys and values.

        With a ``window``, it returns every held and new entry, then keeps only its first
        ``sink_tokens`` and last ``window`` entries for the next call: the new queries attend
        over the held keys and all ``L`` new ones, under ``visible``'s rule.

        Args:
            key: ``(N, H_kv, L, D)``, the new tokens' keys, rotated if the layer uses RoPE.
            value: ``(N, H_kv, L, D)``, their values.

        Returns:
            The held tokens, then the new ones: ``(N, H_kv, S + L, D)`` each, at the
            positions ``cache.positions``.

        Raises:
            ValueError: If the batch size, head count or head width differs from the
                cached tokens'.
        """
        key, value = self._append(key, value)
        return key, value


class LatentCache(_TokenCache):
    r"""What multi-head latent attention caches per token: its latent and its rotated key.

    ``latent`` is $c^{KV}$ ``(N, 1, S, R)``, R = ``kv_lora_rank``, and ``rope_key`` the rotated
    key $k^R$ shared by all heads, ``(N, 1, S, D_rope)``, D_rope = ``qk_rope_head_dim`` (see
    [`MultiHeadLatentAttention`][attention_ref.MultiHeadLatentAttention]): ``R + D_rope``
    numbers per token and layer, independent of H. The positions, ``window`` and ``sink_tokens``
    work as in [`KVCache`][attention_ref.KVCache]: ``LatentCache(window=W, sink_tokens=s)`` is a
    rolling cache.

    Args:
        window: W, how many recent tokens to keep; ``None`` keeps every token. Keyword-only.
        sink_tokens: How many first tokens to keep as well; only with ``window``.
            Keyword-only.

    Raises:
        ValueError: On ``window`` below 1, ``sink_tokens`` below 0, or ``sink_tokens``
            without ``window``.
        TypeError: On a non-int ``window`` or ``sink_tokens``.

    Examples:
        >>> import torch
        >>> from attention_ref import LatentCache
        >>> cache = LatentCache()
        >>> latent, rope_key = cache.update(torch.ones(1, 1, 3, 8), torch.ones(1, 1, 3, 2))
        >>> len(cache), tuple(cache.latent.shape), tuple(cache.rope_key.shape)
        (3, (1, 1, 3, 8), (1, 1, 3, 2))
    """

    @property
    def latent(self) -> Tensor | None:
        """The latents held, ``(N, 1, S, R)``; None before the first update."""
        return self.held[0] if self.held else None

    @property
    def rope_key(self) -> Tensor | None:
        """The rotated shared keys held, ``(N, 1, S, D_rope)``; None before the first update."""
        return self.held[1] if self.held else None

    def update(self, latent: Tensor, rope_key: Tensor) -> tuple[Tensor, Tensor]:
        """Append the new tokens' latents ``(N, 1, L, R)`` and rotated keys ``(N, 1, L, D_rope)``;
        return the held and the new ones, ``(N, 1, S + L, ·)``, as ``KVCache.update`` does."""
        latent, rope_key = self._append(latent, rope_key)
        return latent, rope_key
