"""Mask and score functions evaluated on broadcast index tensors, and the checks of what they give.

A ``mask_mod(b, h, q_idx, kv_idx)`` or ``score_mod(score, b, h, q_idx, kv_idx)`` is called once,
with the indices as four tensors that broadcast to (N, H, L, S):
``b`` (N, 1, 1, 1), ``h`` (1, H, 1, 1), ``q_idx`` (1, 1, L, 1) and ``kv_idx`` (1, 1, 1, S).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from ._checks import broadcasts_to

#: mask_mod(b, h, q_idx, kv_idx) -> bool tensor, True where attention is allowed
MaskMod = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
#: score_mod(score, b, h, q_idx, kv_idx) -> the new score
ScoreMod = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]

_EVALUATED_AT_ONCE = 2**20  # indices per call of mask_mod while walking tiles: 8 MiB of int64


def check_callable(name: str, fn: object) -> None:
    if not callable(fn):
        raise TypeError(f"{name}: expected a function, got {type(fn).__name__}")


def indices(
    shape: Sequence[int],
    q_offset: int = 0,
    device: torch.device | str | None = None,
    rows: slice | None = None,
    cols: slice | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``b, h, q_idx, kv_idx``: each an ``arange`` along its own dimension of (N, H, L, S).

    The only index grid of the package: ``create_mask``, the tile planner and the score tiles
    of ``chunked_attention`` all call it. ``rows`` and ``cols`` pick one tile (then ``shape``
    needs only N and H); query row ``i`` stands at position ``q_offset + i``.
    """
    N, H = shape[0], shape[1]
    rows = slice(0, shape[2]) if rows is None else rows
    cols = slice(0, shape[3]) if cols is None else cols
    first, last = q_offset + rows.start, q_offset + rows.stop
    b = torch.arange(N, device=device).view(N, 1, 1, 1)  # (N, 1, 1, 1)
    h = torch.arange(H, device=device).view(1, H, 1, 1)  # (1, H, 1, 1)
    q_idx = torch.arange(first, last, device=device).view(1, 1, -1, 1)  # (1, 1, L, 1)
    kv_idx = torch.arange(cols.start, cols.stop, device=device).view(1, 1, 1, -1)  # (1,1,1,S)
    return b, h, q_idx, kv_idx


def _tile(shape: torch.Size, whole: tuple[int, ...], q_idx: Tensor, kv_idx: Tensor) -> str:
    """For an error message: the part of ``whole`` the indices cover; empty if all of it."""
    if whole == tuple(shape):
        return ""
    q, kv = q_idx.flatten().tolist(), kv_idx.flatten().tolist()
    return f" on queries q_idx {q[0]}..{q[-1]} and keys kv_idx {kv[0]}..{kv[-1]}"


def call(
    name: str, fn: Callable[..., object], *args: Tensor, whole: Sequence[int] | None = None
) -> Tensor:
    """``fn(*args)``, its result checked to be a tensor that broadcasts to the indices' shape.

    ``whole``: the (N, H, L, S) of the call when the indices cover one tile of it, so that an
    error message names the call's shape and the tile's indices.
    """
    shape = torch.Size([args[-4].size(0), args[-3].size(1), args[-2].size(2), args[-1].size(3)])
    full = tuple(shape) if whole is None else tuple(whole)
    try:
        result = fn(*args)
    except IndexError as error:  # a captured tensor that does not cover every index
        tile = _tile(shape, full, args[-2], args[-1])
        raise ValueError(
            f"{name}: expected a function defined for every index of (N, H, L, S) = "
            f"{full}, got IndexError{tile}: {error}"
        ) from error
    if not isinstance(result, Tensor):
        raise TypeError(
            f"{name}: expected a function that returns a tensor, got {type(result).__name__}"
        )
    if not broadcasts_to(result.shape, shape):
        tile = _tile(shape, full, args[-2], args[-1])
        target = f"to {tuple(shape)}, its indices' shape{tile} of" if tile else "to"
        raise ValueError(
            f"{name}: expected a result broadcastable {target} (N, H, L, S) = {full}, got "
            f"shape {tuple(result.shape)}"
        )
    return result


def allowed_on(
    mask_mod: MaskMod,
    grid: tuple[Tensor, Tensor, Tensor, Tensor],
    whole: Sequence[int] | None = None,
) -> Tensor:
    """``mask_mod`` on an index grid (a tile of ``whole``, if given): a bool tensor of 4
    dimensions, each 1 or the grid's."""
    allowed = call("mask_mod", mask_mod, *grid, whole=whole)
    if allowed.dtype != torch.bool:
        raise TypeError(
            f"mask_mod: expected a function that returns a bool tensor, got dtype {allowed.dtype}"
        )
    return allowed.view((1,) * (4 - allowed.dim()) + allowed.shape)  # 4-D, dims 1 or full


def mask_values(
    mask_mod: MaskMod,
    shape: tuple[int, int, int, int],
    q_offset: int = 0,
    device: torch.device | str | None = None,
) -> Tensor:
    """``mask_mod`` on every index of ``shape`` (N, H, L, S): a bool tensor broadcasting to it."""
    check_callable("mask_mod", mask_mod)
    return allowed_on(mask_mod, indices(shape, q_offset, device))


def walk_tiles(
    mask_mod: MaskMod,
    shape: tuple[int, int, int, int],
    block: tuple[int, int],
    q_offset: int = 0,
    device: torch.device | None = None,
) -> Iterator[tuple[slice, Tensor, Tensor]]:
    """Each row of ``(b_q, b_k)`` tiles with, per block of keys, whether the rule allows some
    and every score of the tile: two bool tensors (N or 1, H or 1, blocks). The one walk over
    a rule's values, shared by the tile planner and ``block_sparsity``; it evaluates a row of
    tiles at a time (about 2^20 indices a call), never all of (L, S) at once."""
    (N, H, L, S), (b_q, b_k) = shape, block
    width = b_k * max(1, _EVALUATED_AT_ONCE // (min(b_q, L) * b_k))  # whole blocks per call
    pad = -S % b_k  # the last block may be short: pad so that the rest decides
    for i in range(0, L, b_q):
        rows = slice(i, min(i + b_q, L))
        some, every = [], []  # per key: allowed for some / for every query of the tile
        for j in range(0, S, width):
            cols = slice(j, min(j + width, S))
            grid = indices((N, H), q_offset, device, rows, cols)
            allowed = allowed_on(mask_mod, grid, shape)
            keys = (*allowed.shape[:2], cols.stop - cols.start)
            some.append(allowed.any(dim=2).expand(keys))  # (N or 1, H or 1, keys)
            every.append(allowed.all(dim=2).expand(keys))
        any_ = F.pad(torch.cat(torch.broadcast_tensors(*some), -1), (0, pad), value=False)
        all_ = F.pad(torch.cat(torch.broadcast_tensors(*every), -1), (0, pad), value=True)
        blocks = (*any_.shape[:2], -1, b_k)
        yield rows, any_.view(blocks).any(dim=-1), all_.view(blocks).all(dim=-1)
