"""Which tiles of the scores a mask function leaves empty, full or partly masked.

``chunked_attention`` computes the (L, S) scores one ``(b_q, b_k)`` tile at a time. Given a
mask as a function of indices, ``mask_mod(b, h, q_idx, kv_idx) -> bool`` (see
``attention_ref.mask_mods``), a tile where the function allows nothing need not be computed at
all, in the forward or the backward pass; a tile where it allows everything is computed
without a mask; only the others, partly masked, call the function on their own indices and
mask inside. ``plan_tiles`` sorts the tiles into these three kinds, like the ``BlockMask`` of
PyTorch's ``create_block_mask``, but with one grid for the whole batch and all heads, which are
computed together (a ``BlockMask`` sorts the tiles of each sequence and head).

Sorting the tiles is exact: it evaluates ``mask_mod`` on every (query, key) pair, a row of
tiles (or part of one) per call, with ``b`` and ``h`` as broadcastable index tensors (a rule that
ignores them is evaluated once per pair, not once per batch element and head). That is an
elementwise pass over all L·S pairs, which can take as long as the masked forward pass it
speeds up (the cost page's "Skipping masked tiles" reports each plan's time). So build the
plan once, ``plan = plan_tiles(...)``, and pass ``chunked_attention(q, k, v, mask_mod=plan)`` to
every call with the same mask, sizes, block size and ``q_offset`` (every layer of one forward
pass), as FlexAttention users build one ``BlockMask``.

All the masks of one ``chunked_attention`` call, boolean tensors and mask functions, are
combined into one plan (a floating mask is not: it is added to the scores). Every plan has two
parts: ``tiles``, each block of queries (a row of tiles) with the blocks of keys it visits, and
``keep(rows, cols)``, what one tile keeps (``None``: all of it). ``plan_tiles`` plans a rule by
evaluating it, ``plan_causal`` the causal triangle by arithmetic, ``DensePlan`` a boolean tensor
(every tile, sliced), and ``AndPlan`` both a rule's plan and a tensor: the tile loop never asks
which kind it has.

Queries stand at positions ``q_offset + i`` (``L`` new queries after ``q_offset`` cached keys),
as in ``attention_ref.mask_mods.create_mask``.

Shape legend: N batch, H (query) heads, L query length, S key length, b_q and b_k the tile's
query and key sizes, B the batch dimensions flattened into one (N·H for 4-D inputs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from ._checks import check_block_size, check_positive_int
from ._mods import MaskMod, allowed_on, check_callable, indices, walk_tiles
from .mask_mods import causal

__all__ = [
    "AndPlan",
    "DensePlan",
    "Plan",
    "TilePlan",
    "every_tile",
    "mask_block",
    "plan_causal",
    "plan_tiles",
]

Tiles = tuple[tuple[slice, tuple[slice, ...]], ...]  # per row of tiles: its blocks of keys


class Plan(Protocol):
    """What ``chunked_attention``'s tile loop asks of a mask: which tiles, and what each keeps."""

    @property
    def tiles(self) -> Tiles:
        """Each block of query rows (a row of tiles) with the blocks of keys visited in it."""
        ...

    def keep(self, rows: slice, cols: slice, device: torch.device | None = None) -> Tensor | None:
        """What one tile keeps.

        Args:
            rows: The tile's block of query rows.
            cols: The tile's block of keys.
            device: Where to make the result (that of the inputs).

        Returns:
            A bool tensor broadcastable to (B, b_q, b_k), True = may attend; None where the
            whole tile is kept.
        """
        ...


@dataclass(frozen=True, eq=False)
class TilePlan:
    """A rule's plan: the tiles it computes, those it masks partly, and how many it skips.

    Made by ``plan_tiles`` (or ``plan_causal``).

    Attributes:
        mask_mod: The mask function.
        shape: ``(N, H, L, S)``.
        block_size: ``(b_q, b_k)``.
        tiles: For each block of query rows (a row of tiles), its non-empty blocks of key
            columns (slices).
        partial: ``(row start, column start)`` of the non-empty tiles the mask covers partly.
        skipped: The number of tiles left empty, never computed.
        q_offset: The position of the first query.
    """

    mask_mod: MaskMod
    shape: tuple[int, int, int, int]
    block_size: tuple[int, int]
    tiles: Tiles
    partial: frozenset[tuple[int, int]]
    skipped: int
    q_offset: int = 0

    @property
    def total(self) -> int:
        """The number of tiles, ``ceil(L / b_q) · ceil(S / b_k)``, empty ones included."""
        (_, _, L, S), (b_q, b_k) = self.shape, self.block_size
        return -(-L // b_q) * -(-S // b_k)

    def keep(self, rows: slice, cols: slice, device: torch.device | None = None) -> Tensor | None:
        """What one non-empty tile keeps: the rule evaluated on its indices, if it is partial.

        Args:
            rows: The tile's block of query rows.
            cols: The tile's block of keys.
            device: Where to evaluate the rule (that of the inputs).

        Returns:
            A bool tensor broadcastable to (B, b_q, b_k), True = may attend; None for a tile
            the mask allows entirely.
        """
        if (rows.start, cols.start) not in self.partial:
            return None
        N, H = self.shape[:2]
        grid = indices((N, H), self.q_offset, device, rows, cols)
        allowed = allowed_on(self.mask_mod, grid, self.shape)  # (N|1, H|1, b_q|1, b_k|1)
        if allowed.shape[:2] == (1, 1):
            return allowed[0]  # (1, b_q or 1, b_k or 1)
        allowed = allowed.expand(N, H, *allowed.shape[2:])
        return allowed.reshape(N * H, *allowed.shape[2:])  # (B, b_q or 1, b_k or 1)


@dataclass(frozen=True, eq=False)
class DensePlan:
    """Every tile, each masked by its slice of a boolean tensor (or not at all: ``mask`` None).

    Attributes:
        mask: Broadcastable to ``(*batch, L, S)``, True = may attend; or None.
        batch: The batch dimensions that are flattened into B.
        tiles: Every block of query rows with every block of keys.
    """

    mask: Tensor | None
    batch: torch.Size
    tiles: Tiles

    def keep(self, rows: slice, cols: slice, device: torch.device | None = None) -> Tensor | None:
        """The mask's block for one tile, ``mask_block(mask, batch, rows, cols)``.

        Args:
            rows: The tile's block of query rows.
            cols: The tile's block of keys.
            device: Unused: the block is on the mask's device.

        Returns:
            ``(B, b_q or 1, b_k or 1)``, True = may attend; None when ``mask`` is None.
        """
        return None if self.mask is None else mask_block(self.mask, self.batch, rows, cols)


@dataclass(frozen=True, eq=False)
class AndPlan:
    """A rule's plan and a tensor's together: the rule's tiles, and what both keep.

    Attributes:
        sparse: The rule's plan (a ``TilePlan``), which decides the tiles visited.
        dense: The boolean tensor's plan (a ``DensePlan``), consulted inside each tile.
    """

    sparse: Plan
    dense: Plan

    @property
    def tiles(self) -> Tiles:
        """The rule's tiles: those of ``sparse``."""
        return self.sparse.tiles

    def keep(self, rows: slice, cols: slice, device: torch.device | None = None) -> Tensor | None:
        """What both plans keep of one tile (see ``Plan.keep``); None if both keep all of it."""
        kept = [p.keep(rows, cols, device) for p in (self.sparse, self.dense)]
        present = [k for k in kept if k is not None]
        return present[0] & present[1] if len(present) == 2 else next(iter(present), None)


def mask_block(mask: Tensor, batch: torch.Size, rows: slice, cols: slice) -> Tensor:
    """The part of a mask that covers one tile, its batch dimensions flattened into B.

    Only this block is ever expanded, never the mask to (..., L, S): it is a view where the
    mask broadcasts over all of ``batch`` or over none of it, and a block-sized copy where it
    broadcasts over some of it.

    Args:
        mask: Broadcastable to ``(*batch, L, S)``.
        batch: The batch dimensions, flattened into B.
        rows: The tile's block of query rows.
        cols: The tile's block of keys.

    Returns:
        ``(B, b_q or 1, b_k or 1)``: a dimension of size 1 in ``mask`` stays 1.
    """
    rows = rows if mask.size(-2) > 1 else slice(None)
    cols = cols if mask.size(-1) > 1 else slice(None)
    block = mask[..., rows, cols]
    block = block.expand(*batch, *block.shape[-2:])  # (..., b_q, b_k), a view
    return block.reshape(-1, *block.shape[-2:])  # (B, b_q or 1, b_k or 1)


def every_tile(L: int, S: int, block_size: tuple[int, int]) -> Tiles:
    """Each block of query rows with every block of keys: what a plan without a rule visits.

    Args:
        L: The number of queries.
        S: The number of keys.
        block_size: ``(b_q, b_k)``; the last block of each may be shorter.

    Returns:
        For each block of query rows, a slice, with the slices of every block of keys.
    """
    b_q, b_k = block_size
    blocks = tuple(slice(j, min(j + b_k, S)) for j in range(0, S, b_k))
    return tuple((slice(i, min(i + b_q, L)), blocks) for i in range(0, L, b_q))


def _checked(N: int, H: int, L: int, S: int, q_offset: int) -> tuple[int, ...]:
    return (
        check_positive_int("N", N, "size"),
        check_positive_int("H", H, "number of heads"),
        check_positive_int("L", L, "length"),
        check_positive_int("S", S, "length"),
        check_positive_int("q_offset", q_offset, "position", minimum=0),
    )


def plan_tiles(
    mask_mod: MaskMod,
    N: int,
    H: int,
    L: int,
    S: int,
    block_size: int | tuple[int, int],
    *,
    q_offset: int = 0,
    device: torch.device | str | None = None,
) -> TilePlan:
    """Sort the ``(b_q, b_k)`` tiles of the (L, S) scores into empty, full and partly masked.

    A tile counts as empty only if the mask allows nothing in it for every batch element and
    head (they are computed together), and as full only if it allows everything for all.

    Args:
        mask_mod: ``mask_mod(b, h, q_idx, kv_idx) -> bool``, True where a query may attend.
        N: The batch size.
        H: The number of (query) heads; ``h`` indexes them.
        L: The number of queries.
        S: The number of keys.
        block_size: ``(b_q, b_k)``, or one int for both.
        q_offset: The position of the first query (``q_idx`` of row i is ``q_offset + i``).
        device: Where to evaluate the mask (that of the inputs).

    Returns:
        The plan; pass it as ``chunked_attention(..., mask_mod=plan)``.

    Raises:
        TypeError: If ``mask_mod`` is not a function or does not return a bool tensor, a size
            or ``q_offset`` is not an int, or ``block_size`` is neither an int nor a pair.
        ValueError: If a size or the block size is below 1, ``q_offset`` below 0, the mask
            does not broadcast to (N, H, L, S), or ``mask_mod`` indexes a tensor it captured
            out of range.

    Examples:
        >>> from attention_ref.mask_mods import causal
        >>> from attention_ref.tile_plan import plan_tiles
        >>> plan = plan_tiles(causal(), 1, 1, 6, 6, block_size=2)  # 3 × 3 tiles
        >>> plan.skipped, plan.total, sorted(plan.partial)  # above / on the diagonal
        (3, 9, [(0, 0), (2, 2), (4, 4)])
    """
    check_callable("mask_mod", mask_mod)
    N, H, L, S, q_offset = _checked(N, H, L, S, q_offset)
    block = check_block_size(block_size)
    device = None if device is None else torch.device(device)
    tiles, partial, skipped = [], set(), 0
    for rows, some, every in walk_tiles(mask_mod, (N, H, L, S), block, q_offset, device):
        blocks = []
        for col, (allows_some, allows_all) in enumerate(
            zip(some.any(dim=(0, 1)).tolist(), every.all(dim=(0, 1)).tolist(), strict=True)
        ):
            if not allows_some:
                skipped += 1
                continue
            cols = slice(col * block[1], min((col + 1) * block[1], S))
            blocks.append(cols)
            if not allows_all:
                partial.add((rows.start, cols.start))
        tiles.append((rows, tuple(blocks)))
    shape = (N, H, L, S)
    return TilePlan(mask_mod, shape, block, tuple(tiles), frozenset(partial), skipped, q_offset)


def plan_causal(
    N: int, H: int, L: int, S: int, block_size: int | tuple[int, int], *, q_offset: int = 0
) -> TilePlan:
    """``plan_tiles(causal(), ...)`` worked out by arithmetic, without evaluating the rule.

    Query ``i`` (at position ``q_offset + i``) sees keys ``0 .. q_offset + i``: the blocks
    entirely after a tile's last query are empty, those whose last key is at or before its first
    query are full.

    Args:
        N: The batch size.
        H: The number of (query) heads.
        L: The number of queries.
        S: The number of keys.
        block_size: ``(b_q, b_k)``, or one int for both.
        q_offset: The position of the first query (``L`` new queries after ``q_offset``
            cached keys).

    Returns:
        The plan, with ``causal()`` as its rule; ``chunked_attention(..., is_causal=True)``
        without a mask function makes it itself.

    Raises:
        TypeError: If a size or ``q_offset`` is not an int, or ``block_size`` is neither an
            int nor a pair.
        ValueError: If a size is below 1 or ``q_offset`` below 0.

    Examples:
        >>> from attention_ref.mask_mods import causal
        >>> from attention_ref.tile_plan import plan_causal, plan_tiles
        >>> fast = plan_causal(1, 1, 5, 9, block_size=2, q_offset=4)
        >>> slow = plan_tiles(causal(), 1, 1, 5, 9, block_size=2, q_offset=4)
        >>> (fast.tiles, fast.partial, fast.skipped) == (slow.tiles, slow.partial, slow.skipped)
        True
    """
    N, H, L, S, q_offset = _checked(N, H, L, S, q_offset)
    block = check_block_size(block_size)
    tiles, partial, skipped = [], set(), 0
    for rows, blocks in every_tile(L, S, block):
        first, last = q_offset + rows.start, q_offset + rows.stop - 1  # the tile's positions
        kept = tuple(cols for cols in blocks if cols.start <= last)  # some key at or before
        partial |= {(rows.start, cols.start) for cols in kept if cols.stop - 1 > first}
        skipped += len(blocks) - len(kept)
        tiles.append((rows, kept))
    return TilePlan(
        causal(), (N, H, L, S), block, tuple(tiles), frozenset(partial), skipped, q_offset
    )
