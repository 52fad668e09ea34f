"""How a module's masks reach its kernel: one rule over positions, then a rule or a tensor.

A module (``MultiHeadAttention``; ``MultiHeadLatentAttention`` and ``DecoderBlock`` take a subset)
can be given up to five masks at once (six with a rule bound into its kernel, below): the caller's
``attn_mask`` tensor, ``is_causal``, the caller's ``mask_mod`` (a rule of
``attention_ref.mask_mods``), the layer's own rule (``mask_mod=`` when a ``MultiHeadAttention`` is
built) and the rule of a rolling ``KVCache``. All rules speak positions: the queries of a call stand
at ``q_offset + i``, where ``q_offset = kv_cache.tokens_seen`` before the call (0 without a cache),
and each key at its own position, ``kv_cache.positions`` (which, in a rolling cache, is not the
key's slot). ``gather`` ANDs the rules into one, read per key slot, so that each call gives its
queries the same rows that one forward pass over the whole sequence would give under the same rules
(a rolling cache's window included).
``call_kernel`` then hands the kernel either that rule (a kernel whose signature takes
``mask_mod`` and ``q_offset``, such as ``chunked_attention``: it skips the tiles the rule leaves
empty) or, for any other kernel, one dense mask (``dense``), as the module's own attention
without an ``attention_fn`` also gets. Causal alone, without a cache, stays the flag
``is_causal`` (the kernels' fast path).

A rule bound into the kernel, ``partial(chunked_attention, mask_mod=R)``, is one more rule:
it is ANDed with the others and aligned the same way, never dropped; where it cannot be
aligned (a kernel that takes no ``q_offset``, under a cache) a ``ValueError`` says so. A bound
``TilePlan`` contributes its rule and its block size; the rule is planned again for each call.
A score function bound into the kernel, ``partial(chunked_attention, score_mod=alibi(H))``, is
read at the same positions: the queries at ``q_offset + i`` and, in a rolling cache, each key
at its position.

Shape legend: N batch, H query heads, L queries, S keys (cached and new), D one head's width.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ._checks import check_mask
from ._mods import MaskMod, ScoreMod, mask_values
from .mask_mods import and_masks, causal
from .tile_plan import TilePlan

__all__ = ["Masks", "call_kernel", "dense", "gather"]


@dataclass(frozen=True)
class Masks:
    """Every mask of one call, gathered.

    Attributes:
        shape: ``(N, H, L, S)``, the scores' shape.
        attn_mask: The caller's tensor, broadcastable to ``shape``, or None.
        is_causal: True only where causal is the whole story (no cache, no tensor, no rule):
            kernels have a fast path for it.
        rule: Every rule of the call ANDed (the caller's ``mask_mod``, ``is_causal``, the
            layer's and the cache's), ``rule(b, h, q_idx, kv_idx)`` with ``q_idx`` a position
            and ``kv_idx`` a key's slot; None if there is none, or if causal is the whole story.
        q_offset: The position of the first query.
        key_positions: ``(S,)``, each slot's position, for a rolling cache (where positions
            are not slots); None otherwise.
    """

    shape: tuple[int, int, int, int]
    attn_mask: Tensor | None
    is_causal: bool
    rule: MaskMod | None
    q_offset: int = 0
    key_positions: Tensor | None = None


def at_positions(rule: MaskMod, key_positions: Tensor | None) -> MaskMod:
    """Return ``rule`` read per key slot: ``kv_idx`` becomes ``key_positions[kv_idx]``."""
    if key_positions is None:
        return rule
    return lambda b, h, q_idx, kv_idx: rule(b, h, q_idx, key_positions[kv_idx])


def gather(
    shape: tuple[int, int, int, int],
    attn_mask: Tensor | None,
    is_causal: bool,
    mask_mod: MaskMod | None,
    kv_cache: Any = None,
    q_offset: int = 0,
    layer_rule: MaskMod | None = None,
) -> Masks:
    """The masks of a module's call after its cache ``update``: the caller's ``mask_mod``,
    ``is_causal`` (``causal()`` over positions), the cache's own ``rule()`` and the layer's
    own ``layer_rule`` (a sliding window, chunks), ANDed.

    Raises:
        TypeError: If ``attn_mask`` is neither a bool nor a floating tensor.
        ValueError: If ``attn_mask`` does not broadcast to ``shape``.

    Examples:
        >>> import torch
        >>> from attention_ref.mask_pipeline import gather
        >>> def last_three(b, h, q_idx, kv_idx):  # with causal: the query and the 2 keys before it
        ...     return q_idx - kv_idx < 3
        >>> masks = gather((1, 1, 2, 6), None, True, last_three, q_offset=4)  # 2 after 4
        >>> masks.is_causal, masks.q_offset  # causal is now part of the rule
        (False, 4)
        >>> masks.rule(0, 0, torch.arange(4, 6)[:, None], torch.arange(6)).int()
        tensor([[0, 0, 1, 1, 1, 0],
                [0, 0, 0, 1, 1, 1]], dtype=torch.int32)
    """
    if attn_mask is not None:
        check_mask(attn_mask, torch.Size(shape))
    cache_rule = None if kv_cache is None else kv_cache.rule()
    given = (mask_mod, causal() if is_causal else None, cache_rule, layer_rule)
    rules: list[MaskMod] = [r for r in given if r is not None]
    if kv_cache is None and mask_mod is None and layer_rule is None and attn_mask is None:
        return Masks(shape, None, is_causal, None)  # causal or nothing: the fast path
    positions = None if cache_rule is None else kv_cache.positions  # a rolling cache
    rule = None if not rules else at_positions(and_masks(*rules), positions)
    return Masks(shape, attn_mask, False, rule, q_offset, positions)


def dense(masks: Masks, device: torch.device | None = None) -> tuple[Tensor | None, bool]:
    """``(attn_mask, is_causal)`` for a kernel that takes tensors only: the rule evaluated and
    combined with the caller's tensor (AND for a boolean one; for a floating one, -inf where the
    rule hides a key)."""
    if masks.rule is None:
        return masks.attn_mask, masks.is_causal
    allowed = mask_values(masks.rule, masks.shape, masks.q_offset, device)  # (N, H, L, S)-able
    if masks.attn_mask is None:
        return allowed, False
    if masks.attn_mask.dtype == torch.bool:
        return masks.attn_mask & allowed, False
    return torch.where(allowed, masks.attn_mask, float("-inf")), False


def _parameters(fn: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # a builtin without a signature, e.g. torch's SDPA
        return set()


def _bound(fn: Callable[..., Any]) -> dict[str, Any]:
    """The keyword arguments bound into ``fn`` with ``functools.partial``."""
    return dict(fn.keywords) if isinstance(fn, functools.partial) else {}


def call_kernel(
    fn: Callable[..., Tensor], q: Tensor, k: Tensor, v: Tensor, masks: Masks, **kwargs: Any
) -> Tensor:
    """``fn(q, k, v, ...)`` with the masks in the form it takes: the rule, or one dense mask.

    A kernel whose signature takes ``mask_mod`` and ``q_offset`` gets the rule (with any rule
    bound into it, aligned); any other gets ``dense(masks)``. A ``score_mod`` bound into ``fn``
    reads each key at its position in a rolling cache.

    Raises:
        ValueError: If ``fn`` has a ``mask_mod`` bound into it, takes no ``q_offset``, and
            the call's queries or keys do not stand at their row and slot indices (a cache).
    """
    takes, bound = _parameters(fn), _bound(fn)
    own = bound.get("mask_mod")
    if isinstance(own, TilePlan):  # its rule, planned again for this call at its tile size
        if "block_size" in takes and "block_size" not in bound:
            kwargs["block_size"] = own.block_size
        own = own.mask_mod
    score_mod: ScoreMod | None = bound.get("score_mod")
    if score_mod is not None and masks.key_positions is not None:
        positions, inner = masks.key_positions, score_mod
        kwargs["score_mod"] = lambda s, b, h, q_idx, kv_idx: inner(
            s, b, h, q_idx, positions[kv_idx]
        )
    if {"mask_mod", "q_offset"} <= takes:  # a rule kernel: every rule, aligned, as one
        aligned = None if own is None else at_positions(own, masks.key_positions)
        # causal stays a flag only while it is the whole story: beside a bound rule it is a rule
        extra = [] if aligned is None else [aligned] + ([causal()] if masks.is_causal else [])
        rules: list[MaskMod] = [r for r in (masks.rule, *extra) if r is not None]
        kwargs["q_offset"] = masks.q_offset
        if rules:
            kwargs["mask_mod"] = rules[0] if len(rules) == 1 else and_masks(*rules)
            return fn(q, k, v, attn_mask=masks.attn_mask, is_causal=False, **kwargs)
        return fn(q, k, v, attn_mask=masks.attn_mask, is_causal=masks.is_causal, **kwargs)
    if own is not None and (masks.q_offset or masks.key_positions is not None):
        name = getattr(fn, "func", fn)
        raise ValueError(
            f"attention_fn: a mask_mod is bound into {getattr(name, '__name__', name)}, which "
            f"takes no q_offset, so its rule cannot be aligned with queries at positions "
            f"{masks.q_offset}.. of a cache; give the kernel a q_offset argument, or pass the "
            "rule as forward(mask_mod=...)"
        )
    attn_mask, is_causal = dense(masks, q.device)
    return fn(q, k, v, attn_mask=attn_mask, is_causal=is_causal, **kwargs)
