"""The attention weights the site's explorer shows: trained toy models and a mask gallery.

Everything here is seeded and small enough to compute when the site is built (a few seconds
on one CPU thread):

- ``attention_maps``: the weights of every ``MultiHeadAttention`` a model calls, layer by
  layer, as the model itself runs them;
- ``train_counting_decoder``: the ``TinyDecoder`` of the decoding page, which learns to count
  modulo 10;
- ``model_maps``: the visualizing page's toy model, the positions experiment's four models
  and the counting decoder, each on a fixed sentence;
- ``mask_gallery``: masks (causal, sliding window with a sink token, document, prefix-LM,
  chunked, dilated, and causal with a sink logit, fixed here, learned in gpt-oss) combined
  with ALiBi's bias.

Shape legend: H heads, L queries, S keys; ``calls`` and ``layers`` count the attention calls
of a model (one per layer in the models here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..attention import attention_weights
from ..decoding import TinyDecoder
from ..mask_mods import (
    and_masks,
    causal,
    chunked,
    create_mask,
    dilated_sliding_window,
    document,
    prefix_lm,
)
from ..masks import sliding_window_mask
from ..multihead import MultiHeadAttention
from ..positions import alibi_bias
from .length_generalization import ENCODINGS, train_with_positions
from .toy_tasks import train_toy_model
from .training import adam_steps

__all__ = [
    "GALLERY_TOKENS",
    "POSITIONS_TOKENS",
    "attention_maps",
    "mask_gallery",
    "model_maps",
    "train_counting_decoder",
]

TOY_TOKENS = [2, 0, 5, 9, 1, 4]  # C A F J B E: the visualizing page's sentence
POSITIONS_TOKENS = [2, 0, 5, 9, 1, 4, 7, 3]  # C A F J B E H D: 8 tokens, the trained length
DECODER_TOKENS = [7, 8, 9, 0, 1, 2, 3, 4]  # counting on from 7, modulo 10
GALLERY_TOKENS = ["The", "cat", "sat", ".", "A", "dog", "ran", "."]  # two documents


@torch.no_grad()
def attention_maps(model: nn.Module, tokens: Tensor) -> Tensor:
    """The weights of every ``MultiHeadAttention`` inside ``model``, in the order it calls them.

    The model runs once on ``tokens``; each attention module is then called again with the
    inputs it got (its query, key, value, mask and position arguments), asking for its
    weights. So the weights are those of the model's own forward pass, whatever its layers
    do around attention. The model must call attention without a KV cache (a replayed call
    would append its keys to the cache a second time), every call with the same H, L and S.

    Args:
        model: Any module that calls one or more ``MultiHeadAttention`` modules, none with a
            kernel (``attention_fn``); in eval mode.
        tokens: Its input, one sequence: ``(1, L)``.

    Returns:
        ``(calls, H, L, S)``: one ``(H, L, S)`` block per attention call.

    Raises:
        ValueError: If ``tokens`` is not one sequence, or the model calls no attention, calls
            one with a ``kv_cache``, with a kernel that gives no weights, or with another
            ``(H, L, S)`` than its first call.

    Examples:
        >>> import torch
        >>> from attention_ref.lab.attention_maps import attention_maps
        >>> from attention_ref.lab.toy_tasks import train_toy_model
        >>> model = train_toy_model(steps=0)
        >>> attention_maps(model, torch.tensor([[2, 0, 5, 9, 1, 4]])).shape
        torch.Size([1, 2, 6, 6])
    """
    if tokens.dim() != 2 or tokens.size(0) != 1:
        raise ValueError(f"tokens: expected one sequence (1, L), got shape {tuple(tokens.shape)}")
    calls: list[tuple[nn.Module, tuple[Any, ...], dict[str, Any]]] = []

    def remember(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if kwargs.get("kv_cache") is not None:
            raise ValueError(
                "model: calls MultiHeadAttention with a kv_cache, which attention_maps would "
                "fill twice when it replays the call; call it without kv_cache"
            )
        calls.append((module, args, kwargs))

    modules = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    handles = [m.register_forward_pre_hook(remember, with_kwargs=True) for m in modules]
    try:
        model(tokens)
    finally:
        for handle in handles:
            handle.remove()
    if not calls:
        raise ValueError("model: expected a model that calls MultiHeadAttention, found none")
    weights = [m(*args, **{**kwargs, "need_weights": True})[1] for m, args, kwargs in calls]
    return _stacked(weights)  # (calls, H, L, S)


def _stacked(weights: list[Tensor | None]) -> Tensor:
    """The weights ``(1, H, L, S)`` of each call, one after the other: ``(calls, H, L, S)``."""
    if any(w is None for w in weights):
        raise ValueError("model: a MultiHeadAttention with an attention_fn gives no weights")
    shapes = [tuple(w.shape[1:]) for w in weights if w is not None]
    if len(set(shapes)) > 1:
        raise ValueError(f"model: attention calls of different (H, L, S): {shapes}")
    return torch.cat([w for w in weights if w is not None])


def train_counting_decoder(*, steps: int = 60, seed: int = 0) -> TinyDecoder:
    """The decoding page's ``TinyDecoder``, trained to count modulo 10 exactly as shown there.

    ``torch.manual_seed(seed)``, then ``steps`` Adam steps (learning rate 0.01) on 16
    sequences of 9 counting tokens each, predicting token i + 1 at every position i. The
    random draws happen inside ``torch.random.fork_rng(devices=[])``: the caller's CPU random
    state is left untouched.

    Args:
        steps: Adam steps; 0 gives the untrained model.
        seed: The seed of the weights and of the batches.

    Returns:
        The model, in eval mode.

    Examples:
        >>> import torch
        >>> from attention_ref import generate
        >>> from attention_ref.lab.attention_maps import train_counting_decoder
        >>> model = train_counting_decoder()
        >>> generate(model, torch.tensor([[7, 8, 9]]), max_new_tokens=6)
        tensor([[7, 8, 9, 0, 1, 2, 3, 4, 5]])
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = TinyDecoder(vocab_size=10)

        def loss() -> Tensor:
            start = torch.randint(0, 10, (16, 1))
            tokens = (start + torch.arange(9)) % 10  # (N, 9): 7 8 9 0 1 2 ...
            logits = model(tokens[:, :-1])  # predict token i + 1 at every position i
            return F.cross_entropy(logits.reshape(-1, 10), tokens[:, 1:].reshape(-1))

        adam_steps(model, loss, steps, lr=1e-2)
    return model.eval()


def _letters(ids: list[int]) -> list[str]:
    return [chr(ord("A") + i) for i in ids]


def model_maps() -> dict[str, dict[str, Any]]:
    """The trained models of the site, each on its fixed sentence: tokens, weights and mask.

    - ``"toy"``: the visualizing page's model (``train_toy_model()``) on ``C A F J B E``;
    - ``"none"``, ``"sinusoidal"``, ``"learned"``, ``"rope"``: the positions experiment's
      models (``train_with_positions(encoding)``) on ``C A F J B E H D``;
    - ``"decoder"``: ``train_counting_decoder()`` on ``7 8 9 0 1 2 3 4``.

    Returns:
        ``{name: {"tokens": [str, ...], "weights": (layers, H, L, L), "mask": (L, L) bool}}``;
        ``mask`` is True where a query may attend (causal for all but ``"toy"``).

    Examples:
        >>> from attention_ref.lab.attention_maps import model_maps
        >>> maps = model_maps()  # trains six small models: a few seconds
        >>> {name: tuple(m["weights"].shape) for name, m in maps.items()}["decoder"]
        (2, 4, 8, 8)
    """
    toy = torch.tensor([TOY_TOKENS])
    maps: dict[str, dict[str, Any]] = {
        "toy": {
            "tokens": _letters(TOY_TOKENS),
            "weights": attention_maps(train_toy_model(), toy),
            "mask": torch.ones(len(TOY_TOKENS), len(TOY_TOKENS), dtype=torch.bool),
        }
    }
    ordered = torch.tensor([POSITIONS_TOKENS])
    causal_8 = torch.ones(8, 8, dtype=torch.bool).tril()
    for encoding in ENCODINGS:
        model = train_with_positions(encoding)
        maps[encoding] = {
            "tokens": _letters(POSITIONS_TOKENS),
            "weights": attention_maps(model, ordered),
            "mask": causal_8,
        }
    counting = torch.tensor([DECODER_TOKENS])
    maps["decoder"] = {
        "tokens": [str(t) for t in DECODER_TOKENS],
        "weights": attention_maps(train_counting_decoder(), counting),
        "mask": causal_8,
    }
    return maps


def _gallery_masks(length: int) -> dict[str, Tensor]:
    """The gallery's masks, ``(L, L)`` bool, True = may attend."""

    def rule(mask_mod: Callable[..., Tensor]) -> Tensor:
        return create_mask(mask_mod, 1, 1, length, length)[0, 0]  # (L, L)

    documents = [0] * (length // 2) + [1] * (length - length // 2)  # two sentences
    return {
        "causal": rule(causal()),
        "sliding_window_sink": sliding_window_mask(length, 3, sink_tokens=1),
        "document": rule(and_masks(causal(), document(documents))),
        "prefix_lm": rule(prefix_lm(3)),
        "chunked": rule(chunked(4)),
        "dilated": rule(dilated_sliding_window(4, 2)),
        "causal_sink_logit": rule(causal()),
    }


def mask_gallery(num_heads: int = 4) -> dict[str, dict[str, Tensor]]:
    """Masks combined with ALiBi's bias: the weights when every score ``q · k`` is 0.

    With equal scores, what decides the weights is only what the mask allows and ALiBi's
    bias: ``softmax(alibi_bias + mask)`` per head, the steepest slope first. ALiBi's bias is
    signed, made for causal attention: inside the prefix-LM's two-way prefix, keys after the
    query get a positive bias, so the prefix rows lean toward the prefix's last key.
    The gallery holds a causal mask, a sliding window of 3 with one sink token
    (``sliding_window_mask(..., sink_tokens=1)``), a document mask for the two sentences of
    ``GALLERY_TOKENS``, "The cat sat . A dog ran ." (with causal), a prefix-LM with a prefix of
    3, chunks of 4, a dilated window (4 keys, 2 apart), and a causal mask with a sink logit per
    head, fixed here at 0 (learned in gpt-oss), whose rows sum to less than 1.

    Args:
        num_heads: H: how many ALiBi slopes.

    Returns:
        ``{name: {"weights": (H, L, L), "mask": (L, L) bool}}``, L = len(GALLERY_TOKENS) = 8.

    Examples:
        >>> from attention_ref.lab.attention_maps import mask_gallery
        >>> gallery = mask_gallery()
        >>> gallery["causal"]["weights"][0, 1]  # query 1, the steepest slope (1/4)
        tensor([0.4378, 0.5622, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000])
        >>> gallery["causal_sink_logit"]["weights"][0, 0].sum() < 1  # the sink takes a share
        tensor(True)
    """
    length = len(GALLERY_TOKENS)
    bias = alibi_bias(num_heads, length)  # (H, L, L)
    zeros = torch.zeros(num_heads, length, 1)  # queries and keys of width 1, all scores 0
    gallery = {}
    for name, mask in _gallery_masks(length).items():
        scores_mask = bias.masked_fill(~mask, float("-inf"))  # (H, L, L): ALiBi, then the mask
        sinks = torch.zeros(num_heads) if name == "causal_sink_logit" else None
        weights = attention_weights(zeros, zeros, attn_mask=scores_mask, sinks=sinks)
        gallery[name] = {"weights": weights, "mask": mask}
    return gallery
