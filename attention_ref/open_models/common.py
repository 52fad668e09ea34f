"""What the families' builders share: reading a Hugging Face config, copying weights.

Duck typing only: nothing here imports transformers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn

from ..mask_mods import chunked, sliding_window
from ..norms import LayerNorm, RMSNorm
from ..qk_parts import Rotary

__all__ = [
    "MaskMod",
    "copy_weights",
    "drop_bias",
    "layer_norm",
    "layer_rule",
    "layer_type",
    "rms_norm",
    "rotary",
]

MaskMod = Any


def layer_type(config: Any, layer_idx: int) -> str:
    """``config.layer_types[layer_idx]`` (``"full_attention"``, ``"sliding_attention"``,
    ``"chunked_attention"``...); for a config without layer types (Mistral, Phi-3) every
    layer slides if ``sliding_window`` is set, else attends fully."""
    types = getattr(config, "layer_types", None)
    if types is not None:
        return types[layer_idx]
    sliding = getattr(config, "sliding_window", None) is not None
    return "sliding_attention" if sliding else "full_attention"


def layer_rule(config: Any, layer_idx: int) -> MaskMod | None:
    """The layer's own rule besides causality: its window or its chunks, else None."""
    kind = layer_type(config, layer_idx)
    if kind == "sliding_attention":
        return sliding_window(config.sliding_window)
    if kind == "chunked_attention":
        return chunked(config.attention_chunk_size)
    return None


def rotary(
    config: Any,
    layer_idx: int,
    head_dim: int,
    *,
    interleaved: bool = False,
    fraction: float | None = None,
) -> Rotary:
    """The layer's rotary positions from ``config.rope_parameters`` (per layer type where the
    config keeps one set per type): the base, and the fraction of each head that rotates
    (``partial_rotary_factor``, or ``fraction`` where the family keeps it elsewhere).

    Raises:
        ValueError: For a rotary type other than ``"default"`` (YaRN, longrope... are out of
            scope).
    """
    params: Mapping[str, Any] = config.rope_parameters
    if layer_type(config, layer_idx) in params:  # one set per layer type (Gemma 3)
        params = params[layer_type(config, layer_idx)]
    if params.get("rope_type", "default") != "default":
        raise ValueError(
            f"config: rope_type {params['rope_type']!r} is not supported, only 'default'"
        )
    if fraction is None:
        fraction = params.get(
            "partial_rotary_factor", getattr(config, "partial_rotary_factor", 1.0)
        )
    rotary_dim = int(head_dim * fraction)
    return Rotary(params["rope_theta"], interleaved=interleaved, rotary_dim=rotary_dim)


def rms_norm(theirs: Any, *, plus_one: bool = False) -> RMSNorm:
    """Our ``RMSNorm`` with their weight and eps; ``plus_one``: they scale by ``1 + w``
    (Gemma, Qwen3-Next), converted here to a plain weight."""
    weight: Tensor = theirs.weight
    eps = getattr(theirs, "variance_epsilon", getattr(theirs, "eps", None))
    ours = RMSNorm(weight.shape[-1], eps=eps, dtype=weight.dtype)
    with torch.no_grad():
        ours.weight.copy_(weight.float() + 1 if plus_one else weight)
    return ours


def layer_norm(theirs: Any, *, plus_one: bool = False) -> LayerNorm:
    """Our ``LayerNorm`` with their weight, bias (if any) and eps; ``plus_one`` as in
    ``rms_norm`` (Nemotron's LayerNorm1P)."""
    bias = getattr(theirs, "bias", None)
    weight = theirs.weight
    ours = LayerNorm(weight.shape[-1], eps=theirs.eps, bias=bias is not None, dtype=weight.dtype)
    state = {"weight": weight + 1 if plus_one else weight}
    ours.load_state_dict(state | ({} if bias is None else {"bias": bias}))
    return ours


def drop_bias(linear: nn.Linear) -> None:
    """Remove ``linear``'s bias (where a family biases some projections and not others)."""
    linear.register_parameter("bias", None)


def copy_weights(ours: nn.Module, state: Mapping[str, Tensor]) -> None:
    """Load ``state`` into ``ours`` strictly (every key, no other), as copies in ``ours``'
    dtype (build ``ours`` in their dtype to keep float64 weights exact)."""
    ours.load_state_dict({k: v.detach() for k, v in state.items()}, strict=True)
