"""Mask and score functions evaluated on broadcast index tensors, and the checks of what they give.

A ``mask_mod(b, h, q_idx, kv_idx)`` or ``score_mod(score, b, h, q_idx, kv_idx)`` is called once,
with the indices as four tensors that broadcast to (N, H, L, S):
``b`` (N, 1, 1, 1), ``h`` (1, H, 1, 1), ``q_idx`` (1, 1, L, 1) and ``kv_idx`` (1, 1, 1, S).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

#: mask_mod(b, h, q_idx, kv_idx) -> bool tensor, True where attention is allowed
MaskMod = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
#: score_mod(score, b, h, q_idx, kv_idx) -> the new score
ScoreMod = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]


def check_callable(name: str, fn: object) -> None:
    if not callable(fn):
        raise TypeError(f"{name}: expected a function, got {type(fn).__name__}")


def indices(
    shape: tuple[int, int, int, int], q_offset: int = 0, device: torch.device | str | None = None
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``b, h, q_idx, kv_idx``: each an ``arange`` along its own dimension of (N, H, L, S)."""
    N, H, L, S = shape
    b = torch.arange(N, device=device).view(N, 1, 1, 1)  # (N, 1, 1, 1)
    h = torch.arange(H, device=device).view(1, H, 1, 1)  # (1, H, 1, 1)
    q_idx = torch.arange(q_offset, q_offset + L, device=device).view(1, 1, L, 1)  # (1, 1, L, 1)
    kv_idx = torch.arange(S, device=device).view(1, 1, 1, S)  # (1, 1, 1, S)
    return b, h, q_idx, kv_idx


def call(name: str, fn: Callable[..., object], *args: Tensor) -> Tensor:
    """``fn(*args)``, its result checked to be a tensor that broadcasts to (N, H, L, S)."""
    shape = torch.Size([args[-4].size(0), args[-3].size(1), args[-2].size(2), args[-1].size(3)])
    try:
        result = fn(*args)
    except IndexError as error:  # a captured tensor that does not cover every index
        raise ValueError(
            f"{name}: expected a function defined for every index of (N, H, L, S) = "
            f"{tuple(shape)}, got IndexError: {error}"
        ) from error
    if not isinstance(result, Tensor):
        raise TypeError(
            f"{name}: expected a function that returns a tensor, got {type(result).__name__}"
        )
    try:
        broadcast = torch.broadcast_shapes(result.shape, shape)
    except RuntimeError:
        broadcast = None
    if broadcast != shape:
        raise ValueError(
            f"{name}: expected a result broadcastable to (N, H, L, S) = {tuple(shape)}, "
            f"got shape {tuple(result.shape)}"
        )
    return result


def mask_values(
    mask_mod: MaskMod,
    shape: tuple[int, int, int, int],
    q_offset: int = 0,
    device: torch.device | str | None = None,
) -> Tensor:
    """``mask_mod`` on every index of ``shape`` (N, H, L, S): a bool tensor broadcasting to it."""
    check_callable("mask_mod", mask_mod)
    allowed = call("mask_mod", mask_mod, *indices(shape, q_offset, device))
    if allowed.dtype != torch.bool:
        raise TypeError(
            f"mask_mod: expected a function that returns a bool tensor, got dtype {allowed.dtype}"
        )
    return allowed
