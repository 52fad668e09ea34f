"""Hypothesis strategies for attention inputs: shapes, dtypes and every kind of mask."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from hypothesis import strategies as st
from torch import Tensor


@dataclass
class Case:
    query: Tensor  # (*batch, H, L, E)
    key: Tensor  # (*batch, H_kv, S, E)
    value: Tensor  # (*batch, H_kv, S, Ev)
    attn_mask: Tensor | None
    is_causal: bool
    scale: float | None
    enable_gqa: bool

    @property
    def kwargs(self) -> dict:
        return {
            "attn_mask": self.attn_mask,
            "is_causal": self.is_causal,
            "scale": self.scale,
            "enable_gqa": self.enable_gqa,
        }


@st.composite
def attention_cases(draw, dtypes=(torch.float32, torch.float64), allow_gqa=True) -> Case:
    """Random query/key/value with L != S, E != Ev, batch and head dims, masks, causal, GQA."""
    dtype = draw(st.sampled_from(dtypes))
    batch = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    heads = draw(st.integers(1, 4))
    gqa = allow_gqa and draw(st.booleans())
    kv_heads = (
        draw(st.sampled_from([d for d in range(1, heads + 1) if heads % d == 0])) if gqa else heads
    )
    L, S = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    E, Ev = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))

    def rand(*shape):
        return torch.randn(shape, dtype=dtype, generator=gen)

    query = rand(*batch, heads, L, E)
    key, value = rand(*batch, kv_heads, S, E), rand(*batch, kv_heads, S, Ev)
    mask_kind = draw(st.sampled_from(["none", "bool", "float", "causal", "padding"]))
    attn_mask, is_causal = None, False
    if mask_kind == "causal":
        is_causal = True
    elif mask_kind in ("bool", "float"):
        # A broadcastable shape: some leading/head/query dims may be 1 or dropped.
        full = [*batch, heads, L, S]
        shape = [d if draw(st.booleans()) else 1 for d in full[:-1]] + [S]
        shape = shape[draw(st.integers(0, len(shape) - 2)) :]
        keep = torch.rand(shape, generator=gen) < draw(st.sampled_from([0.3, 0.7, 1.0]))
        if draw(st.booleans()) and shape[-2] > 1:
            keep[..., 0, :] = False  # a fully masked query row
        if mask_kind == "bool":
            attn_mask = keep
        else:
            attn_mask = torch.where(keep, rand(*shape), torch.tensor(float("-inf"), dtype=dtype))
    elif mask_kind == "padding":
        lengths = torch.randint(0, S + 1, (batch[0] if batch else 1,), generator=gen)
        attn_mask = (torch.arange(S) < lengths[:, None]).reshape(-1, *[1] * (len(batch) + 1), S)
        if not batch:
            attn_mask = attn_mask[0]
    scale = draw(st.sampled_from([None, None, 0.5, 2.0]))
    return Case(query, key, value, attn_mask, is_causal, scale, gqa and kv_heads != heads)
