"""Input checks shared by the attention functions: clear errors instead of deep stack traces."""

from __future__ import annotations

import torch
from torch import Tensor


def _shape(x: Tensor) -> tuple[int, ...]:
    return tuple(x.shape)


def check_tensor(name: str, x: object, *, min_dim: int = 0, floating: bool = True) -> None:
    """Raise TypeError/ValueError naming ``name`` unless ``x`` is a suitable tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if floating and not x.is_floating_point():
        raise TypeError(f"{name}: expected a floating-point tensor, got dtype {x.dtype}")
    if x.dim() < min_dim:
        raise ValueError(f"{name}: expected at least {min_dim} dimensions, got shape {_shape(x)}")


def check_qkv(query: Tensor, key: Tensor, value: Tensor | None = None) -> None:
    """Check ranks, dtypes and the E and S sizes of query, key and (optionally) value."""
    check_tensor("query", query, min_dim=2)
    check_tensor("key", key, min_dim=2)
    if query.size(-1) != key.size(-1):
        raise ValueError(
            "query and key: expected the same last dimension E, got query "
            f"{_shape(query)} and key {_shape(key)}"
        )
    if key.dtype != query.dtype:
        raise TypeError(
            f"query and key: expected the same dtype, got {query.dtype} and {key.dtype}"
        )
    if value is None:
        return
    check_tensor("value", value, min_dim=2)
    if value.size(-2) != key.size(-2):
        raise ValueError(
            "key and value: expected the same length S (dimension -2), got key "
            f"{_shape(key)} and value {_shape(value)}"
        )
    if value.dtype != query.dtype:
        raise TypeError(
            f"query and value: expected the same dtype, got {query.dtype} and {value.dtype}"
        )


def check_positive_int(name: str, value: object, what: str = "int") -> int:
    """``value`` if it is an int >= 1 (not a bool); otherwise an error naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name}: expected a positive {what}, got {value}")
    return value


def check_dropout(dropout_p: float, name: str = "dropout_p") -> None:
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"{name}: expected a probability in [0, 1), got {dropout_p}")


def check_mask(attn_mask: Tensor, scores_shape: torch.Size) -> None:
    """A mask must be bool or floating and broadcast to the scores' shape (..., L, S)."""
    if not isinstance(attn_mask, Tensor):
        raise TypeError(f"attn_mask: expected a torch.Tensor, got {type(attn_mask).__name__}")
    if attn_mask.dtype != torch.bool and not attn_mask.is_floating_point():
        raise TypeError(
            "attn_mask: expected a bool (True = may attend) or floating (added to the scores) "
            f"dtype, got {attn_mask.dtype}"
        )
    try:
        broadcast = torch.broadcast_shapes(attn_mask.shape, scores_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != scores_shape:
        raise ValueError(
            f"attn_mask: expected a shape broadcastable to {tuple(scores_shape)}, "
            f"got {_shape(attn_mask)}"
        )


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``; otherwise a ValueError naming ``name``."""
    if value not in choices:
        raise ValueError(f"{name}: expected one of {list(choices)}, got {value!r}")
    return str(value)
