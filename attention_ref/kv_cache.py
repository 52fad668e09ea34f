"""The key/value cache of causal decoding: the keys and values of every token seen so far.

Generating one token at a time, a decoder's new token attends to all earlier ones. Their
keys and values do not change (causal: an earlier token never sees a later one), so each
layer keeps them instead of recomputing them: the next step projects only the new token.

Shape legend (batch-first): N batch, H_kv key/value heads, S tokens cached, D head_dim.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["KVCache"]


class KVCache:
    r"""The keys and values one attention layer has seen, ``(N, H_kv, S, D)`` each.

    They are stored after the projections and after rotary positions, so a cached key
    never needs rotating again. ``len(cache)`` is ``S``, the number of tokens cached,
    which is also the position of the next token. A stack of layers needs one cache per
    layer: in all it holds $2 \cdot \text{layers} \cdot N \cdot H_{kv} \cdot S \cdot D$
    numbers.

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
    """

    def __init__(self) -> None:
        self.key: Tensor | None = None  # (N, H_kv, S, D)
        self.value: Tensor | None = None  # (N, H_kv, S, D)

    def __len__(self) -> int:
        return 0 if self.key is None else self.key.size(2)

    def update(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Append the new tokens' ``key`` and ``value``, ``(N, H_kv, L, D)``.

        Returns:
            The whole cache, ``(N, H_kv, S + L, D)`` each.

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
        # --8<-- [start:append]
        if self.key is None or self.value is None:  # the first tokens
            self.key, self.value = key, value
        else:
            self.key = torch.cat([self.key, key], dim=2)  # (N, H_kv, S + L, D)
            self.value = torch.cat([self.value, value], dim=2)  # (N, H_kv, S + L, D)
        # --8<-- [end:append]
        return self.key, self.value
