"""Which positions a rolling cache gives its keys: their own, or their places in the cache.

A rolling cache (``KVCache(window=W, sink_tokens=s)``) keeps the first ``s`` tokens and the
last ``W``. ``MultiHeadAttention`` rotates a key before caching it, so a held key keeps the
position of its token, and the query at position ``t`` meets the sink tokens at distance
``t``, which grows without bound. StreamingLLM (Xiao et al. 2024) instead caches the keys
unrotated and rotates them at every step by their index in the cache, ``0 .. s + W - 1``:
every distance then stays below ``s + W``.

``generate_with_cache_positions`` decodes a ``TinyDecoder`` the second way, to set beside
``generate(..., cache_window=W, sink_tokens=s)``, the first way. Each layer holds the inputs
of its held tokens (the keys and values before rotation are computed from them token by token:
an RMSNorm, then a linear map) and runs itself over them and the new token, at positions
``0 .. S``.

Shape legend (batch-first): N batch, L tokens, S tokens held, E d_model, V vocabulary size.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .._checks import check_positive_int
from ..decoding import TinyDecoder

__all__ = ["generate_with_cache_positions", "next_token_log_probs"]


def _keep(x: Tensor, sink_tokens: int, recent: int) -> Tensor:
    """The first ``sink_tokens`` and the last ``recent`` of ``x``'s tokens, ``(N, S, E)``."""
    if x.size(1) <= sink_tokens + recent:
        return x
    return torch.cat([x[:, :sink_tokens], x[:, x.size(1) - recent :]], dim=1)


@torch.no_grad()
def next_token_log_probs(
    model: TinyDecoder, tokens: Tensor, *, window: int, sink_tokens: int = 0
) -> Tensor:
    """Feed ``tokens`` one at a time with positions within the cache; the log-probabilities.

    Each layer holds the inputs of the first ``sink_tokens`` and the last ``window - 1``
    tokens it saw; the new token attends to those and itself (``sink_tokens + window`` keys
    at most, the keys a rolling ``KVCache(window=window, sink_tokens=sink_tokens)`` lets it
    see), rotated by their places ``0 .. S`` in the cache instead of their positions.

    Args:
        model: A [`TinyDecoder`][attention_ref.TinyDecoder].
        tokens: ``(N, L)`` token ids.
        window: W, the recent tokens each query sees, itself included; at least 1.
        sink_tokens: How many first tokens every query sees as well.

    Returns:
        ``(N, L, V)``: after each token, the log-probabilities of the next one.

    Raises:
        ValueError: If ``window`` is below 1 or ``sink_tokens`` below 0.
        TypeError: If either is not an int.
    """
    window = check_positive_int("window", window, "length")
    sink_tokens = check_positive_int("sink_tokens", sink_tokens, "count", minimum=0)
    held: list[Tensor | None] = [None] * len(model.layers)  # per layer: (N, S, E)
    out = []
    # --8<-- [start:step]
    for t in range(tokens.size(1)):
        x = model.embed(tokens[:, t : t + 1])  # (N, 1, E)
        for i, layer in enumerate(model.layers):
            previous = held[i]
            seen = x if previous is None else torch.cat([previous, x], dim=1)  # (N, S + 1, E)
            # positions 0 .. S: each key at its place in the cache, the query last
            x = layer(seen, is_causal=True)[:, -1:]  # (N, 1, E): the new token's output
            held[i] = _keep(seen, sink_tokens, window - 1)
        out.append(model.head(model.norm(x)).log_softmax(dim=-1))  # (N, 1, V)
    # --8<-- [end:step]
    return torch.cat(out, dim=1)  # (N, L, V)


@torch.no_grad()
def generate_with_cache_positions(
    model: TinyDecoder, prompt: Tensor, max_new_tokens: int, *, window: int, sink_tokens: int = 0
) -> Tensor:
    """Greedy decoding with StreamingLLM's positions within a rolling cache.

    As ``generate(model, prompt, max_new_tokens, cache_window=window, sink_tokens=sink_tokens)``
    ([`generate`][attention_ref.generate]), each query sees the first
    ``sink_tokens`` tokens and the last ``window``, itself included; but the keys are
    rotated by their places in the cache, not by their tokens' positions.

    Args:
        model: A [`TinyDecoder`][attention_ref.TinyDecoder].
        prompt: ``(N, L)`` token ids.
        max_new_tokens: How many tokens to generate.
        window: W, the recent tokens each query sees, itself included.
        sink_tokens: How many first tokens every query sees as well.

    Returns:
        ``(N, L + max_new_tokens)``: the prompt and the generated tokens.

    Examples:
        >>> import torch
        >>> from attention_ref import generate
        >>> from attention_ref.lab.attention_maps import train_counting_decoder
        >>> from attention_ref.lab.cache_positions import generate_with_cache_positions
        >>> model = train_counting_decoder()
        >>> prompt = torch.tensor([[7, 8, 9]])
        >>> generate_with_cache_positions(model, prompt, 9, window=4, sink_tokens=1)
        tensor([[7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8]])
        >>> torch.equal(  # nothing evicted: the places are the positions
        ...     generate_with_cache_positions(model, prompt, 5, window=8),
        ...     generate(model, prompt, 5),
        ... )
        True
    """
    check_positive_int("max_new_tokens", max_new_tokens, "count", minimum=0)
    tokens = prompt
    for _ in range(max_new_tokens):  # the whole sequence again: a toy, not a fast decoder
        log_probs = next_token_log_probs(model, tokens, window=window, sink_tokens=sink_tokens)
        tokens = torch.cat([tokens, log_probs[:, -1:].argmax(dim=-1)], dim=1)
    return tokens
