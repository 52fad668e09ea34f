"""Hypothesis strategies for attention inputs: shapes, dtypes and every kind of mask."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from hypothesis import strategies as st
from torch import Tensor

from attention_ref import padding_mask


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


@st.composite
def mask_functions(draw, N: int, L: int, S: int, combine: bool = True) -> tuple[str, Callable]:
    """``(description, mask_mod)``: one of attention_ref.mask_mods' functions, its parameters
    and tensors drawn for N sequences of L queries and S keys, or two of them combined."""
    from attention_ref import mask_mods as mm

    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
    kinds = ["causal", "sliding_window", "prefix_lm", "chunked", "dilated", "padding"]
    kinds += ["document"] if L <= S else []  # the packed ids cover the S positions only
    kind = draw(st.sampled_from(kinds))
    if kind == "causal":
        found: tuple[str, Callable] = ("causal()", mm.causal())
    elif kind == "sliding_window":
        window = draw(st.integers(1, S + 1))
        found = (f"sliding_window({window})", mm.sliding_window(window))
    elif kind == "prefix_lm":
        if draw(st.booleans()):
            length = draw(st.integers(0, S))
            found = (f"prefix_lm({length})", mm.prefix_lm(length))
        else:
            lengths = torch.randint(0, S + 1, (N,), generator=gen)
            found = (f"prefix_lm({lengths.tolist()})", mm.prefix_lm(lengths))
    elif kind == "chunked":
        size = draw(st.integers(1, S + 1))
        found = (f"chunked({size})", mm.chunked(size))
    elif kind == "dilated":
        window, dilation = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        found = (
            f"dilated_sliding_window({window}, {dilation})",
            mm.dilated_sliding_window(window, dilation),
        )
    elif kind == "padding":
        lengths = torch.randint(0, S + 1, (N,), generator=gen)  # 0: a sequence with no key
        found = (f"padding({lengths.tolist()})", mm.padding(lengths))
    else:
        ids = torch.randint(0, 3, (N, S), generator=gen).sort(dim=-1).values
        found = (f"document({ids.tolist()})", mm.document(ids))
    if not combine or draw(st.booleans()):
        return found
    (name, mod), (other_name, other) = found, draw(mask_functions(N, L, S, combine=False))
    how = draw(st.sampled_from(["and", "or", "not"]))
    if how == "and":
        return f"and_masks({name}, {other_name})", mm.and_masks(mod, other)
    if how == "or":
        return f"or_masks({name}, {other_name})", mm.or_masks(mod, other)
    return f"not_mask({name})", mm.not_mask(mod)


@st.composite
def score_functions(draw, H: int, dtype: torch.dtype) -> tuple[str, Callable | None]:
    """``(description, score_mod)``: None, or one of attention_ref.mask_mods' score functions
    for H heads (a relative_bias table of that dtype), or alibi then softcap."""
    from attention_ref import mask_mods as mm

    kind = draw(st.sampled_from(["none", "alibi", "softcap", "relative_bias", "alibi, softcap"]))
    cap = draw(st.sampled_from([0.5, 2.0, 30.0]))
    if kind == "none":
        return "none", None
    if kind == "alibi":
        return f"alibi({H})", mm.alibi(H)
    if kind == "softcap":
        return f"softcap({cap})", mm.softcap(cap)
    if kind == "relative_bias":
        M = draw(st.integers(0, 4))
        gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
        table = torch.randn(H, 2 * M + 1, generator=gen, dtype=dtype)
        return f"relative_bias(M={M})", mm.relative_bias(table)
    alibi, softcap = mm.alibi(H), mm.softcap(cap)

    def score_mod(score, b, h, q_idx, kv_idx):
        return softcap(alibi(score, b, h, q_idx, kv_idx), b, h, q_idx, kv_idx)

    return f"alibi({H}) then softcap({cap})", score_mod


def torch_mha_arguments(max_len: int) -> dict:
    """Strategies for a test against ``nn.MultiheadAttention``: sizes, options and a mask."""
    return {
        "heads": st.integers(1, 4),
        "head_dim": st.integers(1, 4),
        "L": st.integers(1, max_len),
        "S": st.integers(1, max_len),
        "N": st.integers(1, 3),
        "kdim": st.sampled_from([None, 3, 5]),
        "vdim": st.sampled_from([None, 2, 6]),
        "bias": st.booleans(),
        "mask": st.sampled_from(["none", "causal", "bool", "padding", "float"]),
        "dtype": st.sampled_from([torch.float32, torch.float64]),
        "seed": st.integers(0, 2**16),
    }


def torch_mha_masks(mask: str, N: int, L: int, S: int, dtype: torch.dtype) -> tuple[dict, dict]:
    """The mask ``mask`` (of `torch_mha_arguments`) as ours takes it (True = may attend) and as
    ``nn.MultiheadAttention`` does (True = masked): two dicts of keyword arguments."""
    if mask == "causal":  # self-attention: S = L
        allowed = torch.ones(L, L, dtype=torch.bool).tril()
        return {"is_causal": True}, {"attn_mask": ~allowed}
    if mask == "bool":
        allowed = torch.rand(L, S) < 0.7
        allowed[:, 0] = True  # nn.MultiheadAttention gives NaN on fully masked rows
        return {"attn_mask": allowed}, {"attn_mask": ~allowed}
    if mask == "padding":
        keep = padding_mask(torch.randint(1, S + 1, (N,)), S)  # (N, 1, 1, S), True = a token
        return {"attn_mask": keep}, {"key_padding_mask": ~keep[:, 0, 0]}
    if mask == "float":
        bias = torch.randn(L, S, dtype=dtype)
        return {"attn_mask": bias}, {"attn_mask": bias}
    return {}, {}


def torch_layer_arguments(masks: list[str]) -> dict:
    """Strategies for a test of a layer against PyTorch's (encoder or decoder): sizes,
    options and one of ``masks``."""
    return {
        "heads": st.integers(1, 3),
        "head_dim": st.integers(2, 4),  # LayerNorm over E = 1 feature is degenerate
        "ff": st.integers(1, 12),
        "N": st.integers(1, 3),
        "activation": st.sampled_from(["relu", "gelu"]),
        "norm_first": st.booleans(),
        "bias": st.booleans(),
        "mask": st.sampled_from(masks),
        "dtype": st.sampled_from([torch.float32, torch.float64]),
        "seed": st.integers(0, 2**16),
    }
