"""Exact attention in blocks, with the online softmax: the L×S matrix never exists.

For each block of queries, the keys are visited one block at a time. A running row maximum
``m``, a running row sum ``l`` and a running output ``acc`` are kept; when a block raises the
maximum, what came before is rescaled by ``exp(m_old - m_new)``. After the last block
``acc / l`` is exactly ``softmax(Q K^T * scale + M) V`` (Milakov & Gimelshein 2018; the same
recurrence as FlashAttention, Dao et al. 2022).

Memory: one (N·H, b_q, b_k) block of scores plus the running state and the output, instead of
(N, H, L, S). Time: the same matmul FLOPs as the plain form, 4·N·H·L·S·D for D = Dv.

Gradients (FlashAttention-2, Dao 2023): a ``torch.autograd.Function`` saves Q, K, V, the output
O and each query row's log-sum-exp, never the weights. Backward visits the same blocks,
recomputes each block's weights P from the log-sum-exp and accumulates ``dV += Pᵀ dO``,
``dZ = P ∘ (dO Vᵀ - delta)`` with ``delta = rowsum(dO ∘ O)`` (the paper's D), ``dQ += dZ K``,
``dK += dZᵀ Q`` (times the scale): 5 block products instead of the forward's 2, and memory
linear in L and S.

Speed, without leaving PyTorch: the scores are kept in base 2 (``scale · log2 e`` folded into
the matmul, then ``exp2``, as in FlashAttention: the factor ``log2 e`` costs no pass of its
own); ``baddbmm`` computes ``scale · Q K^T`` (plus a float mask) in a single BLAS call, and
``acc · alpha + P V`` is one ``mul_`` and one ``baddbmm_``; and autograd never sees the loop,
so every block is updated in place (``sub_``, ``exp2_``, ``mul_``) in one reused buffer: no
new block-sized tensor is made per step, in the forward or the backward pass.

Shape legend (batch-first, as ``torch.nn.functional.scaled_dot_product_attention``):
    N: batch size (any number of leading batch dimensions ``...`` is allowed)
    H: number of heads (just another batch dimension here)
    L: query length          S: key/value length
    D: query/key width (d_k) Dv: value width (d_v)
    B: all batch dimensions flattened into one (N·H)
    b_q, b_k: query block and key block sizes (``block_size``)

Masks follow PyTorch SDPA: a **boolean** mask is True where a query **may attend**; a
**floating** mask is **added** to the scores (0 keeps, -inf removes).

Masks and score functions of indices (FlexAttention's ``mask_mod`` and ``score_mod``, see
``attention_ref.mask_mods``): the tiles a ``mask_mod`` leaves empty are skipped in both
passes and the partly masked ones masked inside (``attention_ref.tile_plan``). A
``score_mod`` changes each tile's scores before the mask; the backward pass calls it again
on each tile under autograd, which gives the gradient of the scores and that of every tensor
the function uses that requires one (``relative_bias``'s table): those tensors are found
once per call by following the autograd graph of the function's result on one score.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, cast

import torch
from torch import Tensor

from ._checks import check_block_size, check_mask, check_positive_int, check_qkv
from ._mods import MaskMod, ScoreMod, call, check_callable, indices
from ._precision import upcast
from .heads import batch_shape, expand_kv_heads
from .mask_mods import and_masks, causal
from .tile_plan import (
    AndPlan,
    DensePlan,
    Plan,
    TilePlan,
    every_tile,
    mask_block,
    plan_causal,
    plan_tiles,
)

__all__ = ["DEFAULT_BLOCK_SIZE", "chunked_attention"]

#: (query block b_q, key block b_k), chosen by measurement at N=1, H=4, D=64,
#: n=8192, float32 on a 2-core AVX-512 CPU, five interleaved runs against
#: PyTorch's SDPA. Time relative to SDPA: 768 × 512 1.06×, 512 × 512 1.12×,
#: 1024 × 512 1.10×, 256 × 512 1.16×, 2048 × 512 1.3×. The block is
#: 4 heads × 768 × 512 floats = 6 MiB of scores, in L3. Larger tiles mean
#: fewer, bigger BLAS calls and less Python per FLOP, until the elementwise
#: passes spill out of cache.
DEFAULT_BLOCK_SIZE = (768, 512)

_NEG_INF = float("-inf")
_LOG2_E = math.log2(math.e)  # e^x = 2^(x·log2 e): the scores are kept in base-2 units


class _Tiling(NamedTuple):
    """How the blocks are laid out: what the forward and the backward loop share."""

    batch: torch.Size  # the batch dimensions, flattened into B
    scale: float
    b_q: int  # queries per block
    b_k: int  # keys per block
    plan: Plan  # the tiles visited (the empty ones never are) and what each keeps
    score_mod: ScoreMod | None = None  # changes each tile's scores (natural units)
    q_offset: int = 0  # the position of query row 0, for the score function
    shape: tuple[int, ...] = ()  # (N, H, L, S), for the score function's error messages


def _score_mod_tile(scores: Tensor, rows: slice, cols: slice, tiling: _Tiling) -> Tensor:
    """``score_mod`` on one tile of scores (B, b_q, b_k), seen as (N, H, b_q, b_k) with the
    tile's indices; a new (B, b_q, b_k) tensor."""
    N, H = tiling.batch  # 4-D inputs: B = N·H
    grid = indices((N, H), tiling.q_offset, scores.device, rows, cols)  # the tile's indices
    tile = scores.view(N, H, *scores.shape[1:])  # (N, H, b_q, b_k)
    whole = tiling.shape or None
    changed = call("score_mod", cast(ScoreMod, tiling.score_mod), tile, *grid, whole=whole)
    return changed.expand(tile.shape).reshape(scores.shape)  # (B, b_q, b_k)


def _through_score_mod(
    dz: Tensor,
    q_tile: Tensor,
    k_t: Tensor,
    rows: slice,
    cols: slice,
    tiling: _Tiling,
    captured: list[Tensor],
    d_captured: list[Tensor | None],
) -> Tensor:
    """The chain rule through ``score_mod``: from dZ, the gradient of a tile's modified scores,
    to dX, that of ``x = scale · q kᵀ`` (B, b_q, b_k); the gradients of the tensors it
    captures are added to ``d_captured``.

    The tile's ``score_mod`` is computed again under autograd and differentiated with
    ``torch.autograd.grad``: any function of the scores and tensors works, with no formula.
    """
    s = torch.bmm(q_tile, k_t[:, :, cols]).mul_(tiling.scale).requires_grad_()  # (B, b_q, b_k)
    with torch.enable_grad():
        z = _score_mod_tile(s, rows, cols, tiling)
        ds, *found = torch.autograd.grad(
            z, (s, *captured), dz, retain_graph=bool(captured), allow_unused=True
        )
    for i, grad in enumerate(found):
        total = d_captured[i]
        if grad is not None:
            d_captured[i] = grad if total is None else total + grad
    return torch.zeros_like(dz) if ds is None else ds


def _captured(score_mod: ScoreMod, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, ...]:
    """The tensors that need a gradient and that ``score_mod`` uses: the leaves of the
    autograd graph of its result on one score of zero (nothing if gradients are off)."""
    if not torch.is_grad_enabled():
        return ()
    zero = torch.zeros((1, 1, 1, 1), dtype=torch.long, device=device)
    probe = score_mod(torch.zeros((1, 1, 1, 1), dtype=dtype, device=device), *(zero,) * 4)
    if not isinstance(probe, Tensor) or not probe.requires_grad:
        return ()
    if probe.grad_fn is None:  # the function returned a leaf itself
        return (probe,)
    leaves, seen, stack = [], set(), [probe.grad_fn]  # walk the graph back to its leaves
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # AccumulateGrad: a leaf
        if isinstance(variable, Tensor):
            leaves.append(variable)
        else:
            stack.extend(fn for fn, _ in node.next_functions if fn is not None)
    return tuple(leaves)


def _scores(
    q: Tensor,
    k_t: Tensor,
    attn_mask: Tensor | None,
    rows: slice,
    cols: slice,
    tiling: _Tiling,
    buffer: Tensor,
    lse: Tensor | None = None,
) -> Tensor:
    """One block of masked scores in base 2, ``(bias + scale · q kᵀ) · log2 e`` (B, b_q, b_k),
    minus each row's log-sum-exp ``lse`` (B, L, 1) when it is given: then 2^scores = P.

    One BLAS call (``baddbmm``, no scaled copy of q) writes it into ``buffer``'s memory, the
    same for every block: no block-sized tensor is allocated per step.
    """
    q_tile, k_block = q[:, rows], k_t[:, :, cols]  # (B, b_q, D), (B, D, b_k)
    shape = (q.size(0), q_tile.size(1), k_block.size(2))
    out = buffer[: math.prod(shape)].view(shape)  # the last blocks may be smaller
    bias = None  # a floating mask's block, added to the scores
    if attn_mask is not None and attn_mask.is_floating_point():
        bias = mask_block(attn_mask, tiling.batch, rows, cols)  # (B, b_q or 1, b_k or 1)
    alpha = tiling.scale * _LOG2_E
    if tiling.score_mod is not None:  # it sees scale · q kᵀ, natural units: convert after
        scores = torch.bmm(q_tile, k_block, out=out).mul_(tiling.scale)
        scores = out.copy_(_score_mod_tile(scores, rows, cols, tiling))
        scores = scores.add_(bias).mul_(_LOG2_E) if bias is not None else scores.mul_(_LOG2_E)
    elif bias is not None:  # (bias + scale · q kᵀ) · log2 e
        scores = torch.baddbmm(bias, q_tile, k_block, beta=_LOG2_E, alpha=alpha, out=out)
    elif lse is not None:  # scale · q kᵀ · log2 e - lse, already shifted
        scores = torch.baddbmm(lse[:, rows], q_tile, k_block, beta=-1.0, alpha=alpha, out=out)
        lse = None
    else:  # beta=0: baddbmm ignores the (empty) bias
        scores = torch.baddbmm(buffer.new_zeros(()), q_tile, k_block, beta=0, alpha=alpha, out=out)
    if lse is not None:
        scores.sub_(lse[:, rows])
    keep = tiling.plan.keep(rows, cols, q.device)  # (B or 1, b_q or 1, b_k or 1), or None
    if keep is not None:
        scores.masked_fill_(keep.logical_not(), _NEG_INF)
    return scores


def _online_softmax_step_(
    state: tuple[Tensor, Tensor, Tensor], scores: Tensor, value: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """Fold one block of scores (B, b_q, b_k) and values (B, b_k, Dv) into (m, l, acc).

    In place: ``scores`` becomes the block's weights ``p``, and ``l``, ``acc`` are updated;
    no new (B, b_q, b_k) tensor is made and ``acc = alpha · acc + p @ value`` is one ``mul_``
    and one BLAS call. Autograd never sees this step: the backward pass recomputes what it needs.
    """
    m, l, acc = state  # running max (B, b_q, 1), running sum (B, b_q, 1), output (B, b_q, Dv)
    # Scores are in base 2: 2^(s - m) here is e^(s·ln 2 - m·ln 2) of the math, same algebra.
    m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))  # (B, b_q, 1)
    shift = m_new.masked_fill(m_new == _NEG_INF, 0.0)  # no key seen yet: 2^(-inf - 0) = 0
    p = scores.sub_(shift).exp2_()  # (B, b_q, b_k): this block's unnormalized weights
    alpha = m.sub_(shift).exp2_()  # (B, b_q, 1): rescales the blocks already summed
    l.mul_(alpha).add_(p.sum(dim=-1, keepdim=True))  # l = alpha · l + Σ p
    acc.mul_(alpha).baddbmm_(p, value)  # acc = alpha · acc + p @ value: (B, b_q, Dv)
    return m_new, l, acc


def _forward(
    q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, tiling: _Tiling
) -> tuple[Tensor, Tensor]:
    """The output (B, L, Dv) and each query row's log-sum-exp of its scores, base 2 (B, L, 1)."""
    (B, L, _), S, Dv = q.shape, k.size(1), v.size(2)
    k_t = k.transpose(1, 2)  # (B, D, S)
    out, lse = q.new_empty(B, L, Dv), q.new_empty(B, L, 1)
    buffer = q.new_empty(B * min(tiling.b_q, L) * min(tiling.b_k, S))
    for rows, blocks in tiling.plan.tiles:
        b_q = rows.stop - rows.start
        state = (
            q.new_full((B, b_q, 1), _NEG_INF),  # m: running row max
            q.new_zeros(B, b_q, 1),  # l: running row sum of 2^(scores - m)
            q.new_zeros(B, b_q, Dv),  # acc: running sum of 2^(scores - m) @ V
        )
        for cols in blocks:
            scores = _scores(q, k_t, attn_mask, rows, cols, tiling, buffer)  # (B, b_q, b_k)
            state = _online_softmax_step_(state, scores, v[:, cols])
        m, l, acc = state
        empty = l == 0  # a query whose keys are all masked: output 0, never NaN
        out[:, rows] = acc / l.masked_fill(empty, 1.0)
        lse[:, rows] = (m + l.log2()).masked_fill(empty, 0.0)  # log2 Σ_j 2^(scores_j)
    return out, lse


def _backward(
    grad_out: Tensor, saved: tuple[Tensor, ...], tiling: _Tiling, mask_grad: bool
) -> tuple[Tensor, Tensor, Tensor, Tensor | None, list[Tensor | None]]:
    """FlashAttention-2's backward: each block's weights are recomputed from the log-sum-exp.

    Per block: ``P = 2^(scores - lse)``, ``dV += Pᵀ dO``, ``dP = dO Vᵀ``,
    ``dZ = P ∘ (dP - delta)`` with ``delta = rowsum(dO ∘ O)``, ``dQ += scale · dZ K`` and
    ``dK += scale · dZᵀ Q``. Two blocks are alive at a time, never the L×S matrix (unless a
    float mask wants a gradient: that gradient is as large as the mask).
    """
    q, k, v, attn_mask, out, lse, *captured = saved  # captured: tensors score_mod uses
    (B, L, _), S = q.shape, k.size(1)
    d_out = grad_out.contiguous()  # (B, L, Dv); the gradient of a sum() is an expanded view
    # --8<-- [start:delta]
    delta = (d_out * out).sum(dim=-1, keepdim=True)  # rowsum(dO ∘ O), the paper's D: (B, L, 1)
    # --8<-- [end:delta]
    dq, dk, dv = torch.empty_like(q), torch.zeros_like(k), torch.zeros_like(v)
    d_mask = q.new_zeros(B, L, S) if mask_grad else None
    d_captured: list[Tensor | None] = [None] * len(captured)
    k_t, v_t = k.transpose(1, 2), v.transpose(1, 2)  # (B, D, S), (B, Dv, S)
    size = B * min(tiling.b_q, L) * min(tiling.b_k, S)
    p_buffer, dp_buffer = q.new_empty(size), q.new_empty(size)
    for rows, blocks in tiling.plan.tiles:
        q_tile, do = q[:, rows], d_out[:, rows]  # (B, b_q, D), (B, b_q, Dv)
        dq_tile = torch.zeros_like(q_tile)  # this query block's dQ, summed over the key blocks
        for cols in blocks:
            # --8<-- [start:block]
            scores = _scores(q, k_t, attn_mask, rows, cols, tiling, p_buffer, lse)  # s - lse
            p = scores.exp2_()  # P, recomputed: 2^(s - lse), the softmax (B, b_q, b_k)
            dv[:, cols] += torch.bmm(p.transpose(1, 2), do)  # dV += Pᵀ dO
            dp = dp_buffer[: p.numel()].view(p.shape)
            torch.baddbmm(delta[:, rows], do, v_t[:, :, cols], beta=-1.0, out=dp)  # dO Vᵀ - delta
            dz = dp.mul_(p)  # dZ = P ∘ (dP - delta), Z the scores
            if tiling.score_mod is not None:  # Z = score_mod(X): dX, and its tensors' grads
                dz = _through_score_mod(dz, q_tile, k_t, rows, cols, tiling, captured, d_captured)
            dq_tile.baddbmm_(dz, k[:, cols], alpha=tiling.scale)  # dQ += scale · dZ K
            dk[:, cols] += torch.bmm(dz.transpose(1, 2), q_tile).mul_(tiling.scale)  # dK
            # --8<-- [end:block]
            if d_mask is not None:  # the float mask is added after score_mod: dM = dZ
                d_mask[:, rows, cols] = dp  # dZ (dp.mul_(p) made it); dz is dX with a score_mod
        dq[:, rows] = dq_tile
    if d_mask is not None:
        d_mask = d_mask.reshape(*tiling.batch, L, S).sum_to_size(attn_mask.shape)
    return dq, dk, dv, d_mask, d_captured


class _FlashAttention(torch.autograd.Function):
    """Autograd for the blocked loop. It saves Q, K, V, O and each row's log-sum-exp, O(L + S)
    memory, instead of every block's weights, O(L·S); the backward recomputes the weights."""

    @staticmethod
    def forward(
        ctx: Any,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        attn_mask: Tensor | None,
        tiling: _Tiling,
        *captured: Tensor,  # the tensors a score_mod uses that need a gradient
    ) -> Tensor:
        out, lse = _forward(q, k, v, attn_mask, tiling)
        ctx.save_for_backward(q, k, v, attn_mask, out, lse, *captured)
        ctx.tiling = tiling
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, ...]:
        if torch.is_grad_enabled():  # backward(create_graph=True): a second derivative
            raise RuntimeError(
                "chunked_attention: a second derivative (create_graph=True) is not supported; "
                "use scaled_dot_product_attention for higher-order gradients"
            )
        mask_grad = ctx.needs_input_grad[3]
        dq, dk, dv, d_mask, d_captured = _backward(
            grad_out, ctx.saved_tensors, ctx.tiling, mask_grad
        )
        return dq, dk, dv, d_mask, None, *d_captured


def chunked_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_size: int | tuple[int, int] | None = None,
    enable_gqa: bool = False,
    *,
    mask_mod: MaskMod | TilePlan | None = None,
    score_mod: ScoreMod | None = None,
    q_offset: int = 0,
) -> Tensor:
    r"""Exact scaled dot-product attention, computed block by block with the online softmax.

    $$O = \operatorname{softmax}\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V,
      \quad\text{one } b_q \times b_k \text{ block of } QK^\top \text{ at a time}$$

    Gives the same values and gradients as
    [`scaled_dot_product_attention`][attention_ref.scaled_dot_product_attention] and
    ``torch.nn.functional.scaled_dot_product_attention``, up to rounding. The forward
    pass holds one block of scores at a time and keeps, for the backward pass, only the
    inputs, the output and each query's log-sum-exp: memory grows as L + S, not L·S. The
    backward pass recomputes each block's weights (FlashAttention-2's backward). A second
    derivative is not supported. float16 and bfloat16 inputs are computed in float32 and the
    result is returned in the input dtype, as PyTorch's kernels do.

    Args:
        query: ``(..., L, D)``.
        key: ``(..., S, D)``; batch dimensions broadcast against ``query``'s.
        value: ``(..., S, Dv)``.
        attn_mask: Broadcastable to ``(..., L, S)``. Boolean: True where a query **may
            attend**. Floating: added to the scores. Sliced block by block, never expanded.
        is_causal: Query ``i`` sees keys ``0..i`` (top-left, as in PyTorch; with
            ``q_offset``, keys ``0..q_offset + i``); key blocks entirely above the diagonal are
            skipped. Not allowed with ``attn_mask``; allowed with ``mask_mod`` (both apply).
        scale: Multiplies the scores; defaults to ``1 / sqrt(D)``.
        block_size: ``(b_q, b_k)``, the query block and key block sizes, or one int for
            both. Any positive sizes give the same result up to rounding; they need not divide
            L or S. Default: a plan's, else ``attention_ref.chunked.DEFAULT_BLOCK_SIZE``,
            (768, 512). Smaller tiles fit a local mask better.
        enable_gqa: Let key and value have ``H_kv`` heads, a divisor of query's ``H``, each
            shared by ``H / H_kv`` query heads (grouped-query attention).
        mask_mod: A mask function ``mask_mod(b, h, q_idx, kv_idx) -> bool``, True where a
            query may attend (see ``attention_ref.mask_mods``), or its ``TilePlan`` for
            these sizes. The tiles it leaves empty are skipped in both passes. 4-D inputs
            ``(N, H, L, D)``: ``b`` and ``h`` index N and the query heads. Build the plan
            once with ``attention_ref.tile_plan.plan_tiles`` and pass it to every call:
            planning calls the function on every index. A plan passed with ``is_causal=True``
            is not reused (its rule is ANDed with causal and planned again); for a causal
            plan, build it from ``and_masks(causal(), rule)``. With ``attn_mask``, a key must
            pass both.
        score_mod: ``score_mod(score, b, h, q_idx, kv_idx)``, the new score, applied to
            ``scale · q kᵀ`` before the masks (4-D inputs). Gradients also reach the tensors
            it uses that require them (``relative_bias``'s table).
        q_offset: The position of query row 0: row ``i`` is ``q_idx = q_offset + i`` for
            ``mask_mod``, ``score_mod`` and ``is_causal`` (``L`` new queries after
            ``q_offset`` cached keys), as in ``attention_ref.mask_mods.create_mask``.

    Returns:
        ``(..., L, Dv)``; zeros (never NaN) for a query whose keys are all masked.

    Raises:
        ValueError: On mismatched shapes, an unbroadcastable mask, ``is_causal`` together
            with ``attn_mask``, inputs that are not 4-D with ``mask_mod`` or ``score_mod``, a
            plan made for other sizes, block size or ``q_offset``, a block size below 1, a
            negative ``q_offset``, or a ``mask_mod`` or ``score_mod`` whose result does not
            broadcast to (N, H, L, S) or that indexes a tensor it captured out of range.
        TypeError: On non-floating inputs, mixed dtypes, an integer mask, a non-int block size
            or ``q_offset``, a ``mask_mod`` or ``score_mod`` that is not a function or returns
            no tensor, or a ``mask_mod`` that returns no bool tensor.
        RuntimeError: In the backward pass, if a second derivative is asked for
            (``create_graph=True``).

    Examples:
        >>> import torch
        >>> from attention_ref import chunked_attention
        >>> from attention_ref import scaled_dot_product_attention
        >>> gen = torch.Generator().manual_seed(0)
        >>> q, k, v = (torch.randn(2, 3, n, 4, generator=gen) for n in (5, 7, 7))
        >>> out = chunked_attention(q, k, v, block_size=(2, 3))  # 3 query blocks × 3 key blocks
        >>> out.shape
        torch.Size([2, 3, 5, 4])
        >>> torch.allclose(out, scaled_dot_product_attention(q, k, v), atol=1e-6)
        True
        >>> causal = chunked_attention(q, k, v, is_causal=True, block_size=2)
        >>> torch.allclose(causal, scaled_dot_product_attention(q, k, v, is_causal=True))
        True
        >>> from attention_ref.mask_mods import flex_reference, sliding_window
        >>> window = sliding_window(2)  # a mask function: tiles it leaves empty are skipped
        >>> from attention_ref.tile_plan import plan_tiles
        >>> plan = plan_tiles(window, 2, 3, 5, 7, block_size=2)  # 3 × 4 tiles of up to 2 × 2
        >>> plan.skipped, plan.total
        (7, 12)
        >>> out = chunked_attention(q, k, v, mask_mod=plan)  # the plan's block size
        >>> torch.allclose(out, flex_reference(q, k, v, mask_mod=window), atol=1e-6)
        True
    """
    check_qkv(query, key, value)
    if mask_mod is not None or score_mod is not None:
        _check_functions((query, key, value), mask_mod, score_mod)
    q_offset = check_positive_int("q_offset", q_offset, "position", minimum=0)
    if enable_gqa:  # each key/value head serves a group of query heads
        key, value = expand_kv_heads(query, key, "key"), expand_kv_heads(query, value, "value")
    if block_size is None:
        block_size = mask_mod.block_size if isinstance(mask_mod, TilePlan) else DEFAULT_BLOCK_SIZE
    b_q, b_k = check_block_size(block_size)
    batch = batch_shape(query, key, value)
    L, S, D, Dv = query.size(-2), key.size(-2), query.size(-1), value.size(-1)
    if is_causal and attn_mask is not None:
        raise ValueError("is_causal: cannot be combined with attn_mask; put both in attn_mask")
    if attn_mask is not None:
        check_mask(attn_mask, torch.Size((*batch, L, S)))
    if scale is None:
        scale = 1.0 / math.sqrt(D)
    plan = _plan(mask_mod, is_causal, attn_mask, (batch, L, S), (b_q, b_k), q_offset, query.device)
    tiling = _Tiling(batch, scale, b_q, b_k, plan, score_mod, q_offset, (*batch, L, S))
    captured = () if score_mod is None else _captured(score_mod, upcast(query).dtype, query.device)

    dtype = query.dtype  # float16/bfloat16: computed in float32, returned in the input dtype
    query, key, value = upcast(query), upcast(key), upcast(value)
    if attn_mask is not None and attn_mask.is_floating_point():
        attn_mask = attn_mask.to(query.dtype)  # added to the scores by the same BLAS call
    # Flatten the batch dimensions into one, B = N·H, so each block is one batched matmul.
    q = query.expand(*batch, L, D).reshape(-1, L, D)  # (B, L, D), a view if nothing broadcasts
    k = key.expand(*batch, S, D).reshape(-1, S, D)  # (B, S, D)
    v = value.expand(*batch, S, Dv).reshape(-1, S, Dv)  # (B, S, Dv)
    out = _FlashAttention.apply(q, k, v, attn_mask, tiling, *captured)  # (B, L, Dv)
    return out.reshape(*batch, L, Dv).to(dtype)


def _check_functions(qkv: tuple[Tensor, ...], mask_mod: Any, score_mod: Any) -> None:
    """A mask or score function: callable (or a plan), and 4-D inputs (``b``, ``h`` index them)."""
    if score_mod is not None:
        check_callable("score_mod", score_mod)
    if mask_mod is not None and not isinstance(mask_mod, TilePlan):
        check_callable("mask_mod", mask_mod)
    for arg, x in zip(("query", "key", "value"), qkv, strict=True):
        if x.dim() != 4:  # b and h index N and H
            raise ValueError(f"{arg}: expected 4 dimensions (N, H, length, width), got {x.dim()}")


def _plan(
    mask_mod: Any,
    is_causal: bool,
    attn_mask: Tensor | None,
    sizes: tuple[torch.Size, int, int],
    block: tuple[int, int],
    q_offset: int,
    device: torch.device,
) -> Plan:
    """The one plan of a call: the rule's tiles (a mask function with ``is_causal``, planned
    now; a plan given, checked; causal alone, by arithmetic) and a boolean tensor's blocks."""
    batch, L, S = sizes
    N, H = tuple(batch) if len(batch) == 2 else (1, 1)  # causal alone needs no b, h
    rule = None
    if isinstance(mask_mod, TilePlan) and not is_causal:
        rule = mask_mod
        if (rule.shape, rule.block_size, rule.q_offset) != ((N, H, L, S), block, q_offset):
            raise ValueError(
                f"mask_mod: expected a plan for (N, H, L, S) = {(N, H, L, S)}, block_size "
                f"{block} and q_offset {q_offset}, got one for {rule.shape}, "
                f"{rule.block_size} and {rule.q_offset}"
            )
    elif mask_mod is not None:
        fn = getattr(mask_mod, "mask_mod", mask_mod)  # a plan's rule, with causal: again
        fn = and_masks(fn, causal()) if is_causal else fn
        rule = plan_tiles(fn, N, H, L, S, block, q_offset=q_offset, device=device)
    elif is_causal:
        rule = plan_causal(N, H, L, S, block, q_offset=q_offset)
    boolean = attn_mask if attn_mask is not None and attn_mask.dtype == torch.bool else None
    dense = DensePlan(boolean, batch, every_tile(L, S, block))
    if rule is None:
        return dense
    return rule if boolean is None else AndPlan(rule, dense)
