"""Which tiles of the scores a mask function leaves empty, full or partly masked.

``chunked_attention`` computes the (L, S) scores one ``(b_q, b_k)`` tile at a time. Given a
mask as a function of indices, ``mask_mod(b, h, q_idx, kv_idx) -> bool`` (see
``attention_ref.mask_mods``), a tile where the function allows nothing need not be computed at
all, in the forward or the backward pass; a tile where it allows everything is computed
without a mask; only the others, partly masked, call the function on their own indices and
mask inside. ``plan_tiles`` sorts the tiles into these three kinds, like the ``BlockMask`` of
PyTorch's ``create_block_mask``.

Sorting the tiles is exact: it calls ``mask_mod`` on every index once (a row of tiles at a
time, never on all of (L, S) at once), an elementwise pass over L·S that costs a good part of
what the skipped tiles save. So build the plan once and pass it to every call with the same
mask and sizes (every layer of a model), as FlexAttention users build one ``BlockMask``:
``chunked_attention(q, k, v, mask_mod=plan_tiles(...))``.

Shape legend: N batch, H (query) heads, L query length, S key length, b_q and b_k the tile's
query and key sizes, B = N·H.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from ._checks import check_block_size, check_positive_int
from ._mods import MaskMod, call, check_callable

__all__ = ["TilePlan", "plan_tiles"]

_EVALUATED_AT_ONCE = 2**20  # indices per call of mask_mod while planning: 8 MiB of int64


def _tile_mask(
    mask_mod: MaskMod, N: int, H: int, rows: slice, cols: slice, device: torch.device | None
) -> Tensor:
    """``mask_mod`` on one tile's indices: a bool tensor of 4 dimensions that broadcasts to
    (N, H, b_q, b_k), where each dimension is 1 or full."""
    b = torch.arange(N, device=device).view(N, 1, 1, 1)  # (N, 1, 1, 1)
    h = torch.arange(H, device=device).view(1, H, 1, 1)  # (1, H, 1, 1)
    q_idx = torch.arange(rows.start, rows.stop, device=device).view(1, 1, -1, 1)  # (1, 1, b_q, 1)
    kv_idx = torch.arange(cols.start, cols.stop, device=device).view(1, 1, 1, -1)  # (1,1,1,b_k)
    allowed = call("mask_mod", mask_mod, b, h, q_idx, kv_idx)
    if allowed.dtype != torch.bool:
        raise TypeError(
            f"mask_mod: expected a function that returns a bool tensor, got dtype {allowed.dtype}"
        )
    return allowed.view((1,) * (4 - allowed.dim()) + allowed.shape)  # 4-D, dims 1 or full


@dataclass(frozen=True, eq=False)
class TilePlan:
    """The tiles a mask leaves non-empty, those of them it masks partly, and how many it
    leaves empty. Made by ``plan_tiles``.

    Attributes:
        mask_mod: The mask function.
        shape: ``(N, H, L, S)``.
        block_size: ``(b_q, b_k)``.
        tiles: For each tile of query rows, its non-empty blocks of key columns (slices).
        partial: ``(row start, column start)`` of the non-empty tiles the mask covers partly.
        skipped: The number of tiles left empty, never computed.
    """

    mask_mod: MaskMod
    shape: tuple[int, int, int, int]
    block_size: tuple[int, int]
    tiles: tuple[tuple[slice, tuple[slice, ...]], ...]
    partial: frozenset[tuple[int, int]]
    skipped: int

    @property
    def total(self) -> int:
        """The number of tiles, ``ceil(L / b_q) · ceil(S / b_k)``, empty ones included."""
        (_, _, L, S), (b_q, b_k) = self.shape, self.block_size
        return -(-L // b_q) * -(-S // b_k)

    def keep(self, rows: slice, cols: slice, device: torch.device | None = None) -> Tensor | None:
        """What a non-empty tile keeps, broadcastable to (B, b_q, b_k), True = may attend; None
        for a tile the mask allows entirely."""
        if (rows.start, cols.start) not in self.partial:
            return None
        N, H = self.shape[:2]
        allowed = _tile_mask(self.mask_mod, N, H, rows, cols, device)  # (N or 1, H or 1, ., .)
        if allowed.shape[:2] == (1, 1):
            return allowed[0]  # (1, b_q or 1, b_k or 1)
        allowed = allowed.expand(N, H, *allowed.shape[2:])
        return allowed.reshape(N * H, *allowed.shape[2:])  # (B, b_q or 1, b_k or 1)


def plan_tiles(
    mask_mod: MaskMod,
    N: int,
    H: int,
    L: int,
    S: int,
    block_size: int | tuple[int, int],
    *,
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
        device: Where to evaluate the mask (that of the inputs).

    Returns:
        The plan; pass it as ``chunked_attention(..., mask_mod=plan)``.

    Raises:
        TypeError: If ``mask_mod`` is not a function or does not return a bool tensor, or a
            size is not an int.
        ValueError: If a size is below 1, or the mask does not broadcast to (N, H, L, S).

    Examples:
        >>> from attention_ref.mask_mods import causal
        >>> from attention_ref.tile_plan import plan_tiles
        >>> plan = plan_tiles(causal(), 1, 1, 6, 6, block_size=2)  # 3 × 3 tiles
        >>> plan.skipped, plan.total, sorted(plan.partial)  # above / on the diagonal
        (3, 9, [(0, 0), (2, 2), (4, 4)])
    """
    check_callable("mask_mod", mask_mod)
    shape = (
        check_positive_int("N", N, "size"),
        check_positive_int("H", H, "number of heads"),
        check_positive_int("L", L, "length"),
        check_positive_int("S", S, "length"),
    )
    b_q, b_k = check_block_size(block_size)
    device = None if device is None else torch.device(device)
    # keys per call of mask_mod: whole blocks, about _EVALUATED_AT_ONCE indices in all
    width = b_k * max(1, _EVALUATED_AT_ONCE // (min(b_q, L) * b_k))
    tiles, partial, skipped = [], set(), 0
    for i in range(0, L, b_q):
        rows = slice(i, min(i + b_q, L))
        some, every = [], []  # per key: allowed for some / for every query, batch and head
        for j in range(0, S, width):
            allowed = _tile_mask(mask_mod, N, H, rows, slice(j, min(j + width, S)), device)
            keys = min(j + width, S) - j
            some.append(allowed.any(dim=(0, 1, 2)).expand(keys))  # (keys,)
            every.append(allowed.all(dim=(0, 1, 2)).expand(keys))
        pad = -S % b_k  # the last block may be short: pad so that the rest decides
        any_ = F.pad(torch.cat(some), (0, pad), value=False).view(-1, b_k).any(dim=1).tolist()
        all_ = F.pad(torch.cat(every), (0, pad), value=True).view(-1, b_k).all(dim=1).tolist()
        blocks = []
        for col, (allows_some, allows_all) in enumerate(zip(any_, all_, strict=True)):
            if not allows_some:
                skipped += 1
                continue
            cols = slice(col * b_k, min((col + 1) * b_k, S))
            blocks.append(cols)
            if not allows_all:
                partial.add((rows.start, cols.start))
        tiles.append((rows, tuple(blocks)))
    return TilePlan(mask_mod, shape, (b_q, b_k), tuple(tiles), frozenset(partial), skipped)
