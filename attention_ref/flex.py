"""FlexAttention's semantics in plain PyTorch: score functions and ``flex_reference``.

PyTorch's ``flex_attention`` takes attention apart into two functions of indices: a
``score_mod(score, b, h, q_idx, kv_idx)`` that changes each score (a position bias, a cap)
and a ``mask_mod(b, h, q_idx, kv_idx)`` that says which scores are kept (see
``attention_ref.mask_mods``). ``flex_reference`` computes the same result in a few readable
lines: the scores, then ``score_mod``, then the mask, then the softmax.

Score functions (each returns a ``score_mod``): ``alibi`` (Press et al.), ``softcap``
(Gemma 2's logit soft-capping) and ``relative_bias`` (a learnable scalar bias per head and
offset, clipped as in Shaw et al.).

Shape legend (batch-first, as ``flex_attention``): N batch, H query heads, H_kv key/value
heads, L query length, S key/value length, D query/key width (one head's), Dv value width.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._checks import check_number, check_positive_int, check_qkv, check_tensor
from ._mods import MaskMod, ScoreMod, call, check_callable, indices, mask_values
from ._precision import upcast
from .positions import alibi_slopes

__all__ = ["alibi", "flex_reference", "relative_bias", "softcap"]


def alibi(num_heads: int, *, scale: float = 1.0) -> ScoreMod:
    r"""ALiBi as a score function: add ``scale · slope[h] · (kv - q)`` to each score.

    $$s'_{h,q,kv} = s_{h,q,kv} + c\, m_h \, (kv - q)$$

    with the slopes $m_h$ of [`alibi_bias`][attention_ref.alibi_bias] (Press et al.'s rule for
    any number of heads). ``alibi_bias`` is aligned bottom-right and this function, which sees
    indices only, top-left: when ``L != S``, ``alibi(H, scale=c)`` and ``c · alibi_bias`` differ
    by ``c m_h (S - L)``, the same for every key of a row, so the softmax and the outputs are
    equal and the log-sum-exp is shifted by that constant. Keys *after* the query get a positive
    bias: use it with a causal mask.

    Args:
        num_heads: H, the number of (query) heads; ``h`` indexes them.
        scale: c, multiplying every slope; default 1, as in BLOOM. Falcon adds ALiBi to
            ``q·k`` before the scale ``1/sqrt(D)``, the same as slopes times ``1/sqrt(D)``:
            ``scale=D**-0.5``.

    Returns:
        A ``score_mod(score, b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If ``num_heads`` is not an int, or ``scale`` not a number.
        ValueError: If ``num_heads`` is below 1, or ``scale`` not positive.

    Examples:
        >>> import torch
        >>> from attention_ref import alibi_bias
        >>> from attention_ref.mask_mods import alibi
        >>> score_mod = alibi(2)
        >>> h, q, kv = torch.arange(2)[:, None, None], torch.arange(3)[:, None], torch.arange(3)
        >>> bias = score_mod(torch.zeros(2, 3, 3), 0, h, q, kv)  # (H, L, S), scores of zero
        >>> torch.equal(bias, alibi_bias(2, 3))
        True
    """
    num_heads = check_positive_int("num_heads", num_heads, "number of heads")
    c = check_number("scale", scale, positive=True)
    slopes = torch.tensor(alibi_slopes(num_heads), dtype=torch.float64) * c  # (H,): cast per use

    def score_mod(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        slope = slopes.to(device=score.device, dtype=score.dtype)[h]
        return score + slope * (kv_idx - q_idx)

    return score_mod


def softcap(cap: float) -> ScoreMod:
    r"""Logit soft-capping (Gemma 2): squash each score smoothly into ``(-cap, cap)``.

    $$s' = \mathrm{cap} \cdot \tanh(s / \mathrm{cap})$$

    Near zero the scores are unchanged; large ones approach ``±cap``: the logits stay bounded
    (what keeps them finite in low precision), but a gap of up to ``2·cap`` between two scores
    remains, so at Gemma 2's cap of 50 one key can still take nearly all the weight. The scale
    (``1/√D`` by default) is applied before.

    Args:
        cap: The bound; a positive, finite number (Gemma 2 uses 50 for attention).

    Returns:
        A ``score_mod(score, b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If ``cap`` is not a number.
        ValueError: If ``cap`` is not positive or not finite.

    Examples:
        >>> import torch
        >>> from attention_ref.mask_mods import softcap
        >>> softcap(5.0)(torch.tensor([0.5, 5.0, 50.0]), 0, 0, 0, 0)
        tensor([0.4983, 3.8080, 5.0000])
    """
    if isinstance(cap, bool) or not isinstance(cap, (int, float)):
        raise TypeError(f"cap: expected a number, got {type(cap).__name__}")
    if not (cap > 0 and math.isfinite(cap)):
        finite = ", which is not finite" if cap == math.inf else ""
        raise ValueError(f"cap: expected a positive number, got {cap}{finite}")

    def score_mod(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return cap * torch.tanh(score / cap)

    return score_mod


def relative_bias(table: Tensor) -> ScoreMod:
    r"""A relative position bias: one scalar per head and offset, clipped as in Shaw et al.

    $$s'_{h,q,kv} = s_{h,q,kv} + T_{h,\ \mathrm{clip}(kv - q,\,-R,\,R) + R}$$

    ``table`` holds one bias per head for each offset ``-R .. R``; keys further than ``R``
    away share the bias of ``±R``. Shaw et al. learn a vector per clipped offset; this keeps
    their clipping with one number per head. The table is captured, not copied: gradients of the
    attention reach it, so it can be an ``nn.Parameter``.

    Args:
        table: ``(H, 2R + 1)``, floating; column ``R`` is offset 0.

    Returns:
        A ``score_mod(score, b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If ``table`` is not a floating tensor.
        ValueError: If it is not 2-D with an odd number of columns.

    Examples:
        >>> import torch
        >>> from attention_ref.mask_mods import relative_bias
        >>> table = torch.tensor([[-1.0, 0.0, 1.0]])  # H=1, R=1: offsets -1, 0, 1
        >>> q, kv = torch.arange(4)[:, None], torch.arange(4)
        >>> relative_bias(table)(torch.zeros(4, 4), 0, 0, q, kv)  # offsets clipped to ±1
        tensor([[ 0.,  1.,  1.,  1.],
                [-1.,  0.,  1.,  1.],
                [-1., -1.,  0.,  1.],
                [-1., -1., -1.,  0.]])
    """
    check_tensor("table", table)
    if table.dim() != 2 or table.size(1) % 2 == 0:
        raise ValueError(
            f"table: expected a shape (H, 2R + 1), an odd number of offsets, got "
            f"{tuple(table.shape)}"
        )
    R = table.size(1) // 2

    def score_mod(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        offset = torch.clamp(kv_idx - q_idx, -R, R) + R  # the column of kv - q
        return score + table[h, offset]

    return score_mod


def _check_heads(query: Tensor, key: Tensor, value: Tensor, enable_gqa: bool) -> None:
    """4-D inputs with the same N; H_kv == H, or a divisor of H under ``enable_gqa``."""
    for name, x in (("query", query), ("key", key), ("value", value)):
        if x.dim() != 4:
            raise ValueError(f"{name}: expected 4 dimensions (N, H, length, width), got {x.dim()}")
    (n, heads), (n_kv, kv_heads) = query.shape[:2], key.shape[:2]
    if n_kv != n or value.shape[:2] != key.shape[:2]:
        raise ValueError(
            "query, key and value: expected the same batch size N and key/value heads, got "
            f"{tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}"
        )
    if kv_heads != heads and not (enable_gqa and heads % kv_heads == 0):
        raise ValueError(
            f"enable_gqa: expected H_kv == H, or enable_gqa=True and H_kv dividing H, got "
            f"H={heads}, H_kv={kv_heads} and enable_gqa={enable_gqa}"
        )


def flex_reference(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    *,
    score_mod: ScoreMod | None = None,
    mask_mod: MaskMod | None = None,
    scale: float | None = None,
    enable_gqa: bool = False,
    return_lse: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    r"""What ``torch.nn.attention.flex_attention`` computes, in plain PyTorch.

    $$\begin{aligned}
      s_{b,h,q,kv} &= \mathrm{score\_mod}(\mathrm{scale}\; Q_{b,h,q} \cdot K_{b,h,kv},\,
      b, h, q, kv), \\
      O_{b,h,q} &= \sum_{kv\,:\ \mathrm{mask\_mod}(b,h,q,kv)}
      \frac{e^{s_{b,h,q,kv}}}{\sum_{kv'\,:\ \mathrm{mask\_mod}(b,h,q,kv')} e^{s_{b,h,q,kv'}}}\,
      V_{b,h,kv}
      \end{aligned}$$

    The scores, then ``score_mod``, then the mask, then the softmax over the keys the mask
    keeps (with ``enable_gqa``, K and V are indexed by the query head's key/value head). A
    query that the mask leaves no key gets zeros (as ``flex_attention`` and SDPA do) and a
    log-sum-exp of
    ``-inf``. Both functions are called once, on index tensors that broadcast to
    (N, H, L, S) (see [`create_mask`][attention_ref.create_mask]); ``h`` is the query head.
    Everything is differentiable, also the tensors a ``score_mod`` captures
    (``relative_bias``'s table). PyTorch's ``flex_attention`` takes the mask as a ``BlockMask``:
    ``block_mask=create_block_mask(mask_mod, N, H, L, S)``.

    Args:
        query: ``(N, H, L, D)``.
        key: ``(N, H_kv, S, D)``.
        value: ``(N, H_kv, S, Dv)``.
        score_mod: ``score_mod(score, b, h, q_idx, kv_idx)``, the new score; None keeps it.
        mask_mod: ``mask_mod(b, h, q_idx, kv_idx)``, True where a query may attend to a key;
            None allows everything.
        scale: Multiplies ``Q Kᵀ``; defaults to ``1 / √D``.
        enable_gqa: Allow ``H_kv`` key/value heads (a divisor of ``H``), each shared by
            ``H / H_kv`` query heads.
        return_lse: Also return each query's log-sum-exp of its (modified, masked) scores,
            in natural log, as ``flex_attention(..., return_aux=AuxRequest(lse=True))``.

    Returns:
        The output ``(N, H, L, Dv)`` in the dtype of ``query``, or ``(output, lse)`` with
            ``lse`` of shape ``(N, H, L)`` in float32 (float64 for float64 inputs).

    Raises:
        TypeError: If an input is not a floating tensor, the dtypes differ, or a function
            returns a non-tensor (or ``mask_mod`` a non-bool one).
        ValueError: If the shapes do not fit together, a function's result does not
            broadcast to (N, H, L, S), or a function indexes a tensor it captured out of
            range (a ``relative_bias`` table with fewer than H rows, say).

    Examples:
        >>> import torch
        >>> from attention_ref import scaled_dot_product_attention
        >>> from attention_ref.mask_mods import causal, flex_reference
        >>> q = k = v = torch.arange(12.0).view(1, 1, 3, 4) / 10  # (N, H, L, D)
        >>> out = flex_reference(q, k, v, mask_mod=causal())
        >>> torch.allclose(out, scaled_dot_product_attention(q, k, v, is_causal=True))
        True
        >>> out, lse = flex_reference(q, k, v, mask_mod=causal(), return_lse=True)
        >>> lse  # query 0 sees one key: its score, 0.14 · 1/√4
        tensor([[[0.0700, 1.1272, 2.3526]]])
    """
    check_qkv(query, key, value)
    _check_heads(query, key, value, enable_gqa)
    if score_mod is not None:
        check_callable("score_mod", score_mod)
    (N, H, L, D), S = query.shape, key.size(2)
    if key.size(1) != H:  # grouped-query attention: each key/value head serves H / H_kv
        key = key.repeat_interleave(H // key.size(1), dim=1)  # (N, H, S, D)
        value = value.repeat_interleave(H // value.size(1), dim=1)  # (N, H, S, Dv)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    dtype = query.dtype
    query, key, value = upcast(query), upcast(key), upcast(value)  # float16: softmax in float32
    b, h, q_idx, kv_idx = indices((N, H, L, S), device=query.device)

    scores = query @ key.transpose(-2, -1) * scale  # (N, H, L, S)
    if score_mod is not None:
        scores = call("score_mod", score_mod, scores, b, h, q_idx, kv_idx)
        check_tensor("score_mod", scores)  # a floating result
        scores = scores.expand(N, H, L, S).to(query.dtype)  # a table of another dtype: as torch
    if mask_mod is not None:
        allowed = mask_values(mask_mod, (N, H, L, S), device=query.device)  # (N, H, L, S)-able
        scores = scores.masked_fill(~allowed, float("-inf"))  # a new tensor
    lse = scores.logsumexp(dim=-1)  # (N, H, L): -inf where the mask leaves no key
    finite = lse.masked_fill(lse == float("-inf"), 0.0)  # those rows: exp(-inf - 0) = 0
    weights = torch.exp(scores - finite[..., None])  # (N, H, L, S), the softmax
    out = (weights @ value).to(dtype)  # (N, H, L, Dv)
    return (out, lse) if return_lse else out
