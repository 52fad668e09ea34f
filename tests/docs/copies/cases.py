"""What docstrings cannot express: a call for each private helper a page shows whole.

Every public object a page shows is called through its own docstring examples, run against
the page's copy (tests/docs/test_source_copies.py). The private helpers below have no examples, so
each ``case_<name>(ns)`` calls the object ``<name>`` found in the namespace ``ns`` (the copy's
globals, or attention_ref's module globals) on a small seeded input and returns tensors or plain
values, which must be equal. This file imports only torch: it also runs where only torch and
numpy are installed. Keep it under a dozen cases.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch


class Tiling(NamedTuple):
    """The fields of attention_ref.chunked._Tiling, which a copy does not need to define."""

    batch: torch.Size
    scale: float
    b_q: int
    b_k: int
    plan: object  # what the tile loop visits and keeps (attention_ref.tile_plan)
    score_mod: object = None
    q_offset: int = 0


class DensePlan(NamedTuple):
    """A plan as the tile loop reads one: every tile, each kept where a bool (L, S) mask is."""

    tiles: tuple
    mask: torch.Tensor

    def keep(self, rows: slice, cols: slice, device=None) -> torch.Tensor:
        return self.mask[rows, cols][None]  # (1, b_q, b_k)


def _qkv(*shape_q: int, s: int = 5, ev: int | None = None, dtype=torch.float64):
    g = torch.Generator().manual_seed(0)
    *batch, length, e = shape_q
    q = torch.randn(*batch, length, e, generator=g, dtype=dtype)
    k = torch.randn(*batch, s, e, generator=g, dtype=dtype)
    v = torch.randn(*batch, s, ev or e, generator=g, dtype=dtype)
    return q, k, v


def _state(ns):
    g = torch.Generator().manual_seed(1)
    m = torch.full((2, 3, 1), float("-inf"), dtype=torch.float64)
    l, acc = torch.zeros(2, 3, 1, dtype=torch.float64), torch.zeros(2, 3, 4, dtype=torch.float64)
    scores = torch.randn(2, 3, 5, generator=g, dtype=torch.float64)
    value = torch.randn(2, 5, 4, generator=g, dtype=torch.float64)
    return (m, l, acc), scores, value


def case__online_softmax_step_(ns):
    return ns["_online_softmax_step_"](*_state(ns))


def _blocked(ns, is_causal: bool):
    q, k, v = _qkv(2, 7, 4, s=9)
    mask = None if is_causal else torch.rand(7, 9, generator=torch.Generator().manual_seed(2)) > 0.3
    keep = torch.ones(7, 9, dtype=torch.bool).tril() if is_causal else mask
    blocks = tuple(slice(j, min(j + 4, 9)) for j in range(0, 9, 4))
    tiles = tuple((slice(i, min(i + 3, 7)), blocks) for i in range(0, 7, 3))
    return q, k, v, mask, Tiling(torch.Size([2]), 0.5, 3, 4, DensePlan(tiles, keep))


def case__forward(ns):
    return [ns["_forward"](*_blocked(ns, c)) for c in (False, True)]


def case__backward(ns):
    results = []
    for is_causal in (False, True):
        q, k, v, mask, tiling = _blocked(ns, is_causal)
        keep = torch.ones(7, 9, dtype=torch.bool).tril() if is_causal else mask
        scores = (q @ k.transpose(1, 2) * 0.5).masked_fill(~keep, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        lse = torch.logsumexp(scores, dim=-1, keepdim=True) / math.log(2)  # base 2
        grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(3), dtype=out.dtype)
        results.append(ns["_backward"](grad, (q, k, v, mask, out, lse), tiling, False))
    return results


def case__FlashAttention(ns):
    q, k, v, mask, tiling = _blocked(ns, False)
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    out = ns["_FlashAttention"].apply(q, k, v, mask, tiling)
    return out.detach(), torch.autograd.grad(out.sum(), (q, k, v))


def case_DEFAULT_BLOCK_SIZE(ns):
    return ns["DEFAULT_BLOCK_SIZE"]


def _x(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(2))


def case_split_heads(ns):
    return ns["split_heads"](_x(2, 3, 8), 4)


def case_merge_heads(ns):
    return ns["merge_heads"](_x(2, 4, 3, 2))


def case_alibi_slopes(ns):
    return [ns["alibi_slopes"](h) for h in (1, 6, 8, 12)]
