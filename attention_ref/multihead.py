"""Multi-head attention as an ``nn.Module``: project, split into heads, attend, merge, project.

MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

Shape legend (batch-first):
    N: batch size    L: query length    S: key/value length
    E: embed_dim (d_model)    H: num_heads    D: head_dim, by default E / H (d_k)
    H_kv: num_kv_heads (grouped-query attention: H_kv divides H; 1 is multi-query)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import (
    check_attention_fn_sinks,
    check_attention_inputs,
    check_dropout,
    check_heads,
    check_kv_cache,
    check_mask,
)
from ._precision import upcast
from .attention import attention_weights
from .interop import attention_from_torch, attention_to_torch
from .kv_cache import KVCache
from .masks import causal_mask
from .positions import apply_rope

__all__ = ["MultiHeadAttention"]


def _split_heads(x: Tensor, num_heads: int) -> Tensor:
    """(N, L, H * D) -> (N, H, L, D): each head gets its own slice of the features."""
    n, length, width = x.shape
    return x.view(n, length, num_heads, width // num_heads).transpose(1, 2)  # (N, H, L, D)


def _merge_heads(x: Tensor) -> Tensor:
    """(N, H, L, D) -> (N, L, H * D): concatenate the heads again."""
    n, heads, length, head_dim = x.shape
    return x.transpose(1, 2).reshape(n, length, heads * head_dim)  # (N, L, E)


def _with_causal(
    attn_mask: Tensor | None, is_causal: bool, q: Tensor, k: Tensor, kv_cache: KVCache | None
) -> tuple[Tensor | None, bool]:
    """The caller's mask AND the causal one, as one ``attn_mask`` ``(N, H, L, S)``-broadcastable.

    Without a mask or a cache, ``is_causal`` stays as it is (kernels have a fast path for
    it). Otherwise the causal triangle (aligned to the bottom-right corner with a cache;
    a rolling cache's own ``visible`` mask, causal and windowed, always) is combined with
    ``attn_mask``: AND for a boolean mask, -inf where it hides for a floating one.
    """
    rolling = kv_cache is not None and kv_cache.window is not None
    if not rolling and (not is_causal or (attn_mask is None and kv_cache is None)):
        return attn_mask, is_causal
    L, S = q.size(-2), k.size(-2)
    if kv_cache is not None and rolling:  # the keys it keeps, and the window
        allowed = kv_cache.visible(kv_cache.positions[-L:])  # (L, S)
    else:
        align = "top_left" if kv_cache is None else "bottom_right"
        allowed = causal_mask(L, S, align=align, device=q.device)  # (L, S)
    if attn_mask is None:
        return allowed, False
    check_mask(attn_mask, torch.Size((q.size(0), q.size(1), L, S)))
    if attn_mask.dtype == torch.bool:
        return attn_mask & allowed, False  # (N, H, L, S) or broadcastable
    return torch.where(allowed, attn_mask, float("-inf")), False  # added to the scores


def _rope(
    q: Tensor, k: Tensor, positions: Tensor | None, start: int, base: float, interleaved: bool
) -> tuple[Tensor, Tensor]:
    """``apply_rope`` on the query and key heads, at ``start + arange(L)`` by default."""
    if positions is None:  # continue the cache, if any
        positions = torch.arange(start, start + q.size(2), device=q.device)
    elif positions.dim() == 2:
        positions = positions[:, None, :]  # (N, 1, L): the same for every head
    q = apply_rope(q, positions, base=base, interleaved=interleaved)  # (N, H, L, D)
    return q, apply_rope(k, positions, base=base, interleaved=interleaved)  # (N, H_kv, S, D)


class MultiHeadAttention(nn.Module):
    r"""Multi-head attention, batch-first, with PyTorch's argument names.

    $$\operatorname{MultiHead}(Q, K, V) = \operatorname{Concat}(\mathrm{head}_1, \dots,
      \mathrm{head}_h) W^O,\quad \mathrm{head}_i = \operatorname{Attention}(QW_i^Q, KW_i^K,
      VW_i^V)$$

    The per-head matrices $W_i^Q$ are stored side by side in one ``q_proj``; splitting its
    output into ``num_heads`` slices gives each head its own projection. Masks use PyTorch
    SDPA's convention: boolean True = **may attend** (``nn.MultiheadAttention`` means the
    opposite). float16 and bfloat16 run the projections in that dtype and the attention in
    float32.

    Args:
        embed_dim: E, the model width (d_model).
        num_heads: H; must divide ``embed_dim`` unless ``head_dim`` is given.
        dropout: Dropout probability on the attention weights, in training mode only.
        bias: Add biases to the four projections.
        kdim: Width of ``key`` if it differs from ``embed_dim`` (cross-attention).
        vdim: Width of ``value`` if it differs from ``embed_dim``.
        num_kv_heads: H_kv key/value heads (grouped-query attention); must divide
            ``num_heads``. ``None`` means ``num_heads``; 1 is multi-query.
        rope_base: If set, rotate each head's queries and keys with
            [`apply_rope`][attention_ref.apply_rope] and this ``base`` (10000 in Llama 2):
            rotary positions. Self-attention only.
        rope_interleaved: RoPE's pairing: features ``2i`` and ``2i + 1`` (RoFormer, GPT-J)
            instead of ``i`` and ``i + D/2`` (Hugging Face's Llama, GPT-NeoX; the default).
        head_dim: D, each head's width; ``None`` means ``embed_dim // num_heads``. Then
            ``q_proj`` maps E to ``H * D``, ``k_proj``/``v_proj`` to ``H_kv * D``.
        scale: Multiplies the scores; ``None`` means ``1 / sqrt(head_dim)``.
        attention_fn: Computes the heads instead of the default, with the arguments of
            ``scaled_dot_product_attention``: ``(query, key, value, attn_mask=None,
            is_causal=False, scale=None, enable_gqa=False)`` on ``(N, H, L, D)`` heads, e.g.
            [`chunked_attention`][attention_ref.chunked_attention],
            ``F.scaled_dot_product_attention`` or your kernel. Only the default returns the
            weights (otherwise ``None``); it gets no dropout, so ``dropout`` must be 0.
            With ``sinks=True`` it also gets ``sinks=``, so it must take that argument.
        sinks: Learn one sink logit per head (gpt-oss): a parameter ``sinks`` of shape
            ``(num_heads,)``, initialized to zeros, that joins every row's softmax (see
            [`attention_weights`][attention_ref.attention_weights]) so a head can attend
            to nothing.

    Raises:
        ValueError: On sizes that do not divide (E by H without ``head_dim``, H by H_kv),
            ``dropout`` outside [0, 1), ``rope_base`` <= 0 or with an odd head width, or
            ``sinks=True`` with an ``attention_fn`` that takes no ``sinks``.

    Examples:
        >>> import torch
        >>> from attention_ref import MultiHeadAttention, chunked_attention
        >>> _ = torch.manual_seed(0)
        >>> mha = MultiHeadAttention(embed_dim=8, num_heads=2)
        >>> x = torch.randn(1, 3, 8)  # (N, L, E)
        >>> out, weights = mha(x)  # self-attention: key = value = x
        >>> out.shape, weights.shape  # weights per head: (N, H, L, S)
        (torch.Size([1, 3, 8]), torch.Size([1, 2, 3, 3]))
        >>> weights.sum(dim=-1)
        tensor([[[1.0000, 1.0000, 1.0000],
                 [1.0000, 1.0000, 1.0000]]], grad_fn=<SumBackward1>)
        >>> sum(p.numel() for p in mha.parameters())  # 4 * E * E + 4 * E
        288
        >>> blocks = MultiHeadAttention(8, 2, attention_fn=chunked_attention)  # another kernel
        >>> _ = blocks.load_state_dict(mha.state_dict())
        >>> out2, none = blocks(x, is_causal=True)
        >>> torch.allclose(out2, mha(x, is_causal=True)[0], atol=1e-6), none
        (True, None)
        >>> gpt_oss = MultiHeadAttention(8, 2, sinks=True)  # one learned sink logit per head
        >>> gpt_oss.sinks.shape, gpt_oss(x)[1].sum(dim=-1).lt(1).all()  # rows sum below 1
        (torch.Size([2]), tensor(True))
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        *,
        dropout: float = 0.0,
        bias: bool = True,
        kdim: int | None = None,
        vdim: int | None = None,
        num_kv_heads: int | None = None,
        rope_base: float | None = None,
        rope_interleaved: bool = False,
        head_dim: int | None = None,
        scale: float | None = None,
        attention_fn: Callable[..., Tensor] | None = None,
        sinks: bool = False,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        D, H_kv = check_heads(embed_dim, num_heads, head_dim, num_kv_heads, rope_base)
        check_dropout(dropout, "dropout")
        if attention_fn is not None and dropout > 0.0:
            raise ValueError(f"dropout: expected 0 with attention_fn, got {dropout}")
        check_attention_fn_sinks(attention_fn, sinks)
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, D
        self.num_kv_heads, self.scale, self.dropout = H_kv, scale, dropout
        self.rope_base, self.rope_interleaved = rope_base, rope_interleaved
        self.kdim, self.vdim = (embed_dim if d is None else d for d in (kdim, vdim))
        self.attention_fn = attention_fn  # None: attention_weights, then weights @ values
        q_width, kv_width = num_heads * D, H_kv * D
        factory = {"device": device, "dtype": dtype}
        # --8<-- [start:projections]
        self.q_proj = nn.Linear(embed_dim, q_width, bias=bias, **factory)  # all H heads' W^Q
        self.k_proj = nn.Linear(self.kdim, kv_width, bias=bias, **factory)
        self.v_proj = nn.Linear(self.vdim, kv_width, bias=bias, **factory)
        self.out_proj = nn.Linear(q_width, embed_dim, bias=bias, **factory)  # W^O
        # --8<-- [end:projections]
        sink_logits = torch.zeros(num_heads, device=device, dtype=dtype)  # (H,): one per head
        self.sinks = nn.Parameter(sink_logits) if sinks else None

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        *,
        attn_mask: Tensor | None = None,
        is_causal: bool = False,
        need_weights: bool = True,
        positions: Tensor | None = None,
        kv_cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: ``(N, L, E)``.
            key: ``(N, S, kdim)``; defaults to ``query`` (self-attention).
            value: ``(N, S, vdim)``; defaults to ``key``.
            attn_mask: Broadcastable to ``(N, H, L, S)``, e.g. ``(L, S)`` or a padding
                mask ``(N, 1, 1, S)``. Boolean True = may attend; floating = added. With a
                cache it covers every key, cached and new.
            is_causal: Causal mask. Without a cache it is top-left-aligned, as in
                PyTorch; with ``kv_cache``, bottom-right: the new query ``i`` sees every
                cached key and the new keys ``0..i``. Given with ``attn_mask``, both apply
                (as torch 2.13's SDPA does): a key is seen only where both allow it.
            need_weights: Also return the attention weights (default ``attention_fn`` only).
            positions: With ``rope_base``: the query positions, ``(L,)`` or ``(N, L)``,
                default ``arange(L)``, or ``kv_cache.tokens_seen + arange(L)`` with a
                cache; the keys, the same tokens, get the same positions.
            kv_cache: Self-attention only: the keys and values of the earlier tokens. The
                new ones (after rotary positions) are appended to it, and the queries
                attend to the held and the new keys, ``S = len(kv_cache) + L``. A rolling
                cache (``KVCache(window=...)``) also applies its ``visible`` mask, causal
                and windowed, whatever ``is_causal`` says.

        Returns:
            ``(output, weights)``: output ``(N, L, E)``; weights ``(N, H, L, S)`` per head
            (after dropout, as PyTorch returns them), or ``None``.

        Raises:
            ValueError: On mismatched shapes, a cache with a separate ``key``, another N
                or H_kv, or ``positions`` other than ``kv_cache.tokens_seen + arange(L)``.
        """
        key = query if key is None else key
        value = key if value is None else value  # (N, S, vdim)
        check_attention_inputs(query, key, value, (self.embed_dim, self.kdim, self.vdim))
        start = check_kv_cache(  # kv_cache.tokens_seen, the position of the first new token
            kv_cache, positions, query, key, self.num_kv_heads, self.rope_base
        )
        # --8<-- [start:project]
        q = _split_heads(self.q_proj(query), self.num_heads)  # (N, H, L, D)
        k = _split_heads(self.k_proj(key), self.num_kv_heads)  # (N, H_kv, S, D)
        v = _split_heads(self.v_proj(value), self.num_kv_heads)  # (N, H_kv, S, D)
        # --8<-- [end:project]
        if self.rope_base is not None:  # rotary positions: rotate the queries and keys
            q, k = _rope(q, k, positions, start, self.rope_base, self.rope_interleaved)
        # --8<-- [start:cache]
        if kv_cache is not None:
            k, v = kv_cache.update(k, v)  # (N, H_kv, S, D): the cached tokens, then the new
        # causal with a cache: bottom-right, new query i sees the cache and new keys 0..i
        # (a rolling cache, KVCache(window=...), adds its window and sink tokens)
        attn_mask, is_causal = _with_causal(attn_mask, is_causal, q, k, kv_cache)
        # --8<-- [end:cache]
        # --8<-- [start:attend]
        heads, weights = self._attend(q, k, v, attn_mask, is_causal)  # (N, H, L, D)
        out = self.out_proj(_merge_heads(heads))  # (N, L, E): concatenate, then W^O
        # --8<-- [end:attend]
        return out, weights if need_weights else None

    def _attend(
        self, q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, is_causal: bool
    ) -> tuple[Tensor, Tensor | None]:
        """Every head's output ``(N, H, L, D)``, and its weights ``(N, H, L, S)`` by default."""
        gqa = self.num_kv_heads != self.num_heads  # each key/value head serves H / H_kv
        if self.attention_fn is not None:  # a kernel: the output only
            kwargs = {"attn_mask": attn_mask, "is_causal": is_causal, "scale": self.scale}
            if self.sinks is not None:
                kwargs["sinks"] = self.sinks
            return self.attention_fn(q, k, v, **kwargs, enable_gqa=gqa), None
        dtype = q.dtype  # float16/bfloat16: attention in float32, then back to the input dtype
        q, k, v = upcast(q), upcast(k), upcast(v)
        weights = attention_weights(  # (N, H, L, S)
            q, k, attn_mask, is_causal, self.scale, gqa, sinks=self.sinks
        )
        if self.training and self.dropout > 0.0:
            weights = F.dropout(weights, p=self.dropout)
        v = v.repeat_interleave(self.num_heads // self.num_kv_heads, dim=1)  # (N, H, S, D)
        return (weights @ v).to(dtype), weights.to(dtype)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy a ``torch.nn.MultiheadAttention`` (not ``add_bias_kv``, ``add_zero_attn``).

        The same output for the same batch-first inputs; invert boolean masks (``~mask``):
        in PyTorch's ``attn_mask`` and ``key_padding_mask`` True means *masked*.

        Examples:
            >>> import torch
            >>> from attention_ref import MultiHeadAttention
            >>> _ = torch.manual_seed(0)
            >>> theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True)
            >>> ours = MultiHeadAttention.from_torch(theirs)
            >>> x = torch.randn(2, 5, 8)
            >>> torch.allclose(ours(x)[0], theirs(x, x, x)[0], atol=1e-6)
            True
        """
        return attention_from_torch(cls, module)

    def to_torch(self) -> nn.MultiheadAttention:
        """A batch-first ``torch.nn.MultiheadAttention`` with these weights (``from_torch``'s
        inverse); invert boolean masks for it (``~mask``: True means *masked* there).

        Raises:
            ValueError: Naming the option ``nn.MultiheadAttention`` cannot express:
                ``num_kv_heads``, ``rope_base``, ``head_dim``, ``scale``, ``attention_fn``
                or ``sinks``.

        Examples:
            >>> import torch
            >>> from attention_ref import MultiHeadAttention
            >>> _ = torch.manual_seed(0)
            >>> ours = MultiHeadAttention(8, 2)
            >>> x, mask = torch.randn(2, 5, 8), torch.ones(5, 5, dtype=torch.bool).tril()
            >>> out, _ = ours.to_torch()(x, x, x, attn_mask=~mask)  # True = masked there
            >>> torch.allclose(out, ours(x, attn_mask=mask)[0], atol=1e-6)
            True
            >>> MultiHeadAttention(8, 2, num_kv_heads=1).to_torch()
            Traceback (most recent call last):
            ...
            ValueError: num_kv_heads: expected 2 for nn.MultiheadAttention, got 1
        """
        return attention_to_torch(self)
