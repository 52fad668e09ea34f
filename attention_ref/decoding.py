"""Greedy generation with a small decoder-only language model, with or without a KV cache.

The model is what GPT and Llama are, shrunk: token embeddings, a stack of causal layers
(Llama's: RMSNorm, SwiGLU, grouped-query attention, rotary positions), a final RMSNorm and
a read-out to one score (logit) per vocabulary token. Causal self-attention makes the output
at position i depend on tokens 0..i only, so it can be trained to predict token i + 1 at
every position at once, and generation repeats one step: predict, append, predict again.

Shape legend (batch-first): N batch, L tokens, V vocabulary size, E d_model.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from ._checks import check_positive_int
from .decoder_block import DecoderBlock
from .kv_cache import KVCache
from .norms import RMSNorm

__all__ = ["TinyDecoder", "generate"]


class TinyDecoder(nn.Module):
    """A decoder-only language model: a stack of Llama-style
    [`DecoderBlock`][attention_ref.DecoderBlock]s between an embedding and a final RMSNorm
    with a read-out.

    Each block has ``dim_feedforward = 4 * d_model`` and rotary positions of base 10000
    (``rope_base=10000.0``), and is called with ``is_causal=True``.

    Args:
        vocab_size: V, the number of different tokens.
        d_model: E, the model width.
        nhead: Query heads per layer.
        num_layers: How many layers.
        num_kv_heads: Key/value heads per layer (grouped-query attention); default ``nhead``.
        attention_fn: Every layer's attention kernel (e.g. ``chunked_attention``), as in
            [`MultiHeadAttention`][attention_ref.MultiHeadAttention]; default ``None``, the
            explicit weights of [`attention_weights`][attention_ref.attention_weights].

    Examples:
        >>> import torch
        >>> from attention_ref import TinyDecoder
        >>> _ = torch.manual_seed(0)
        >>> model = TinyDecoder(vocab_size=10).eval()
        >>> model(torch.tensor([[1, 2, 3]])).shape  # a score per token of the vocabulary
        torch.Size([1, 3, 10])
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 32,
        nhead: int = 4,
        num_layers: int = 2,
        num_kv_heads: int | None = None,
        attention_fn: Callable[..., Tensor] | None = None,
    ) -> None:
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("num_layers", num_layers)
        self.embed = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(
            DecoderBlock(
                d_model,
                nhead,
                4 * d_model,
                num_kv_heads=num_kv_heads,
                rope_base=10000.0,
                attention_fn=attention_fn,
            )
            for _ in range(num_layers)
        )  # Llama's blocks: RMSNorm, SwiGLU, no biases, rotary positions
        self.norm = RMSNorm(d_model, eps=1e-5)  # the layers' eps: one rms_norm_eps, as in Llama
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def new_caches(self, window: int | None = None, sink_tokens: int = 0) -> list[KVCache]:
        """One empty [`KVCache`][attention_ref.KVCache] per layer; with ``window``, rolling
        caches that keep the first ``sink_tokens`` and the last ``window`` tokens."""
        return [KVCache(window=window, sink_tokens=sink_tokens) for _ in self.layers]

    def forward(
        self,
        tokens: Tensor,
        caches: list[KVCache] | None = None,
        *,
        attn_mask: Tensor | None = None,
    ) -> Tensor:
        """Logits ``(N, L, V)`` for ``tokens`` ``(N, L)``; with ``caches`` (one per layer),
        ``tokens`` are the new ones and the earlier ones come from the caches. ``attn_mask``
        (e.g. a padding mask ``(N, 1, 1, S)``) applies together with the causal mask; it
        covers the keys the caches return: every token so far, or with rolling caches the
        ones held and the new ones."""
        x = self.embed(tokens)  # (N, L, E)
        for i, layer in enumerate(self.layers):
            cache = None if caches is None else caches[i]
            x = layer(x, attn_mask=attn_mask, is_causal=True, kv_cache=cache)
        return self.head(self.norm(x))  # (N, L, V)


@torch.no_grad()
def generate(
    model: TinyDecoder,
    prompt: Tensor,
    max_new_tokens: int,
    *,
    use_cache: bool = True,
    cache_window: int | None = None,
    sink_tokens: int = 0,
) -> Tensor:
    """Greedy decoding: append the most likely next token, ``max_new_tokens`` times.

    Without the cache every step runs the model over the whole sequence so far; with it, the
    first step runs the prompt and every later step only the one new token.

    Args:
        model: A [`TinyDecoder`][attention_ref.TinyDecoder], or any model with its
            ``forward(tokens, caches=None)`` and, with ``use_cache``,
            ``new_caches(window, sink_tokens)``. No ``attn_mask`` is passed.
        prompt: ``(N, L)`` token ids.
        max_new_tokens: How many tokens to generate.
        use_cache: Keep a [`KVCache`][attention_ref.KVCache] per layer (``model.new_caches``).
        cache_window: Rolling caches, ``KVCache(window=cache_window,
            sink_tokens=sink_tokens)``: each holds the first ``sink_tokens`` and the last
            ``cache_window`` tokens, never more, and every query attends to those only
            (sliding-window attention with StreamingLLM's attention sinks), as the full
            forward with the mask
            [`sliding_window_mask`][attention_ref.sliding_window_mask]
            ``(L, window=cache_window, sink_tokens=sink_tokens)`` does. ``None``: keep every
            token.
        sink_tokens: How many first tokens the rolling caches keep as well; only with
            ``cache_window``, and ignored with ``use_cache=False``.

    Returns:
        ``(N, L + max_new_tokens)``: the prompt and the generated tokens.

    Raises:
        ValueError: On ``cache_window`` without ``use_cache``, or as
            [`KVCache`][attention_ref.KVCache] on a bad window or ``sink_tokens``.

    Examples:
        >>> import torch
        >>> from attention_ref import TinyDecoder, generate
        >>> _ = torch.manual_seed(0)
        >>> model = TinyDecoder(vocab_size=10).eval()  # untrained: arbitrary, repeatable tokens
        >>> prompt = torch.tensor([[1, 2, 3]])
        >>> tokens = generate(model, prompt, max_new_tokens=4)
        >>> tokens.shape
        torch.Size([1, 7])
        >>> torch.equal(tokens, generate(model, prompt, 4, use_cache=False))
        True
        >>> generate(model, prompt, 8, cache_window=3, sink_tokens=1).shape  # 4 tokens held
        torch.Size([1, 11])
    """
    if cache_window is not None and not use_cache:
        raise ValueError(f"cache_window: a rolling cache needs use_cache=True, got {cache_window}")
    tokens, new, caches = prompt, prompt, None
    if use_cache:  # with a cache_window, each holds sink_tokens + cache_window tokens at most
        caches = model.new_caches(cache_window, sink_tokens)
    # --8<-- [start:loop]
    for _ in range(max_new_tokens):
        logits = model(new, caches) if use_cache else model(tokens)  # (N, L or 1, V)
        next_token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (N, 1): the most likely
        tokens = torch.cat([tokens, next_token], dim=1)
        new = next_token  # with a cache, the next step runs only this token
    # --8<-- [end:loop]
    return tokens
