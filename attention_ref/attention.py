"""Scaled dot-product attention, with its weights available on their own.

Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + M) V

Shape legend (batch-first, as ``torch.nn.functional.scaled_dot_product_attention``):
    N: batch size (any number of leading batch dimensions ``...`` is allowed)
    H: number of heads (just another batch dimension here)
    L: query length          S: key/value length
    D: query/key width (d_k) Dv: value width (d_v)

Masks follow PyTorch SDPA: a **boolean** mask is True where a query **may attend**; a
**floating** mask is **added** to the scores (0 keeps, -inf removes).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from ._checks import check_dropout, check_mask, check_qkv, check_sinks
from ._precision import upcast
from .heads import expand_kv_heads

__all__ = ["attention_weights", "scaled_dot_product_attention"]


def _scores_shape(query: Tensor, key: Tensor) -> torch.Size:
    try:
        batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2])
    except RuntimeError:
        raise ValueError(
            "query and key: batch dimensions do not broadcast, got query "
            f"{tuple(query.shape)} and key {tuple(key.shape)}"
            + (" (pass enable_gqa=True for fewer key/value heads)" if query.dim() >= 3 else "")
        ) from None
    return torch.Size((*batch, query.size(-2), key.size(-2)))


def _softmax_with_sinks(scores: Tensor, sinks: Tensor) -> Tensor:
    """Softmax over each row's scores and its head's sink logit, with the sink's share dropped."""
    sink = sinks.to(scores.dtype)[..., None, None]  # (..., H, 1, 1): one logit per head
    row_max = torch.maximum(scores.amax(dim=-1, keepdim=True), sink).detach()  # (..., L, 1)
    row_max = row_max.masked_fill(row_max == float("-inf"), 0.0)
    exp = (scores - row_max).exp()  # (..., L, S); masked entries: 0
    total = exp.sum(dim=-1, keepdim=True) + (sink - row_max).exp()  # the sink counts here only
    return exp / total.masked_fill(total == 0, 1.0)  # rows sum to less than 1


def attention_weights(
    query: Tensor,
    key: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    *,
    sinks: Tensor | None = None,
) -> Tensor:
    r"""The attention matrix ``softmax(query @ key^T * scale + mask)``.

    $$A = \operatorname{softmax}\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)$$

    This is the matrix that
    [`scaled_dot_product_attention`][attention_ref.scaled_dot_product_attention] multiplies by
    ``value``; it is separate so it can be inspected and plotted.

    Args:
        query: ``(..., L, D)``.
        key: ``(..., S, D)``; its batch dimensions broadcast against ``query``'s.
        attn_mask: Broadcastable to ``(..., L, S)``. Boolean: True where a query **may
            attend**. Floating: added to the scores. (``nn.MultiheadAttention`` uses the
            opposite boolean convention: there True means *masked*.)
        is_causal: Query ``i`` sees keys ``0..i`` (the triangle is aligned to the top-left
            corner, as in PyTorch, also when ``L != S``). Not allowed with ``attn_mask``.
        scale: Multiplies the scores; defaults to ``1 / sqrt(D)``.
        enable_gqa: Let ``key`` have fewer heads (dimension -3) than ``query``; each key head
            then serves ``H / H_kv`` consecutive query heads.
        sinks: Learned sink logits (gpt-oss): one per head, broadcastable to ``(..., H)``,
            usually ``(H,)``. Each row's softmax runs over its scores and its head's sink
            $z_{\text{sink}}$, whose share is then dropped:
            $A_{ij} = e^{z_{ij}} / (e^{z_{\text{sink}}} + \sum_{j'} e^{z_{ij'}})$, with
            $z_{ij}$ the scaled (and masked) scores. Not the sink tokens of a rolling
            ``KVCache`` (``sink_tokens``), which are kept keys.

    Returns:
        ``(..., L, S)``: each row sums to 1 (less than 1 with ``sinks``), or is all zeros
        when every key is masked. float16 and bfloat16 inputs are computed in float32 and
        returned in their dtype.

    Raises:
        ValueError: On mismatched shapes, an unbroadcastable mask or ``sinks``,
            ``is_causal`` together with ``attn_mask``, or key heads that do not divide query
            heads.
        TypeError: On non-tensor or non-floating inputs or ``sinks``, mixed dtypes, or a
            mask that is not a tensor or is an integer one.

    Examples:
        >>> import torch
        >>> from attention_ref import attention_weights
        >>> q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> k = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> attention_weights(q, k)
        tensor([[0.4011, 0.1978, 0.4011],
                [0.1978, 0.4011, 0.4011]])
        >>> attention_weights(q, k, is_causal=True)
        tensor([[1.0000, 0.0000, 0.0000],
                [0.3302, 0.6698, 0.0000]])
        >>> attention_weights(q, k, is_causal=True, sinks=torch.tensor(0.0))  # logit 0, all heads
        tensor([[0.6698, 0.0000, 0.0000],
                [0.2483, 0.5035, 0.0000]])
    """
    check_qkv(query, key)
    if enable_gqa:
        key = expand_kv_heads(query, key, "key")
    scores_shape = _scores_shape(query, key)
    if is_causal and attn_mask is not None:
        raise ValueError("is_causal: cannot be combined with attn_mask; put both in attn_mask")
    if attn_mask is not None:
        check_mask(attn_mask, scores_shape)
    if sinks is not None:
        check_sinks(sinks, scores_shape)
    L, S = query.size(-2), key.size(-2)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    dtype = query.dtype  # float16/bfloat16: softmax in float32, returned in the input dtype
    query, key = upcast(query), upcast(key)

    scores = query @ key.transpose(-2, -1) * scale  # (..., L, S)
    # --8<-- [start:masking]
    if is_causal:
        attn_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attn_mask, float("-inf"))  # a new tensor, never in place
    elif attn_mask is not None:
        scores = scores + attn_mask
    # --8<-- [end:masking]
    if sinks is not None:  # one more logit per row, its weight dropped
        return _softmax_with_sinks(scores, sinks).to(dtype)

    # --8<-- [start:safe_softmax]
    # Softmax that gives a zero row, not NaN, where every key is masked (max is -inf).
    row_max = scores.amax(dim=-1, keepdim=True).detach()  # (..., L, 1)
    row_max = row_max.masked_fill(row_max == float("-inf"), 0.0)
    exp = (scores - row_max).exp()  # masked entries: exp(-inf) = 0
    total = exp.sum(dim=-1, keepdim=True)  # (..., L, 1); 0 for a fully masked row
    weights = exp / total.masked_fill(total == 0, 1.0)
    # --8<-- [end:safe_softmax]
    return weights.to(dtype)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    *,
    sinks: Tensor | None = None,
) -> Tensor:
    r"""Attention as in "Attention Is All You Need", with PyTorch's arguments and semantics.

    $$\operatorname{Attention}(Q, K, V) =
      \operatorname{softmax}\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V$$

    A drop-in for ``torch.nn.functional.scaled_dot_product_attention``: the same arguments,
    defaults, broadcasting and mask conventions, and zeros (never NaN) for a query whose
    keys are all masked.

    Args:
        query: ``(..., L, D)``.
        key: ``(..., S, D)``.
        value: ``(..., S, Dv)``.
        attn_mask: Broadcastable to ``(..., L, S)``. Boolean: True where a query **may
            attend**. Floating: added to the scores.
        dropout_p: Probability of dropping an attention weight (applied whenever > 0, as in
            PyTorch's functional form; pass 0.0 at inference).
        is_causal: Apply a top-left-aligned causal mask; not allowed with ``attn_mask``.
        scale: Multiplies the scores; defaults to ``1 / sqrt(D)``.
        enable_gqa: Let key and value have fewer heads than query (grouped-query attention).
        sinks: One learned sink logit per head, broadcastable to ``(..., H)`` (gpt-oss):
            each row's softmax also counts it, so the weights sum to less than 1 and a
            query may give almost all its weight to the sink; as in
            [`attention_weights`][attention_ref.attention_weights]. PyTorch's SDPA has no
            ``sinks``.

    Returns:
        ``(..., L, Dv)``. float16 and bfloat16 inputs are computed in float32 (softmax and
        sums, as PyTorch's kernels do) and returned in their dtype.

    Raises:
        ValueError: On mismatched shapes, masks or ``sinks``, ``dropout_p`` outside
            [0, 1), ``is_causal`` together with ``attn_mask``, or key/value heads that do not
            divide query heads.
        TypeError: On non-floating inputs or ``sinks``, mixed dtypes, or a mask that is not a
            tensor or is an integer one.

    Examples:
        >>> import torch
        >>> from attention_ref import scaled_dot_product_attention
        >>> q = k = torch.eye(3).reshape(1, 1, 3, 3)  # (N, H, L, D)
        >>> v = torch.arange(6.0).reshape(1, 1, 3, 2)
        >>> out = scaled_dot_product_attention(q, k, v)
        >>> out.shape
        torch.Size([1, 1, 3, 2])
        >>> out[0, 0]
        tensor([[1.5868, 2.5868],
                [2.0000, 3.0000],
                [2.4132, 3.4132]])
        >>> torch.allclose(out, torch.nn.functional.scaled_dot_product_attention(q, k, v))
        True
    """
    check_qkv(query, key, value)
    check_dropout(dropout_p)
    dtype = query.dtype  # float16/bfloat16: computed in float32, returned in the input dtype
    query, key, value = upcast(query), upcast(key), upcast(value)
    weights = attention_weights(  # (..., L, S)
        query, key, attn_mask, is_causal, scale, enable_gqa, sinks=sinks
    )
    if enable_gqa:
        value = expand_kv_heads(query, value, "value")  # (..., H, S, Dv)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return (weights @ value).to(dtype)  # (..., L, Dv)
