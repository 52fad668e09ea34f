"""Multi-head attention as an ``nn.Module``: project, split into heads, attend, merge, project.

MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

Shape legend (batch-first):
    N: batch size    L: query length    S: key/value length
    E: embed_dim (d_model)    H: num_heads    D: head_dim, by default E / H (d_k)
    H_kv: num_kv_heads (grouped-query attention: H_kv divides H; 1 is multi-query)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_dropout, check_mask, check_tensor
from ._precision import upcast
from .attention import attention_weights, scaled_dot_product_attention
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
    attn_mask: Tensor | None, is_causal: bool, q: Tensor, k: Tensor, bottom_right: bool
) -> tuple[Tensor | None, bool]:
    """The caller's mask AND the causal one, as one ``attn_mask`` ``(N, H, L, S)``-broadcastable.

    Without a mask and top-left-aligned, ``is_causal`` stays as it is (kernels have a fast
    path for it). Otherwise the causal triangle (aligned to the bottom-right corner with a
    cache) is combined with ``attn_mask``: AND for a boolean mask, -inf where it hides for a
    floating one.
    """
    if not is_causal or (attn_mask is None and not bottom_right):
        return attn_mask, is_causal
    L, S = q.size(-2), k.size(-2)
    align = "bottom_right" if bottom_right else "top_left"
    causal = causal_mask(L, S, align=align, device=q.device)  # (L, S)
    if attn_mask is None:
        return causal, False
    check_mask(attn_mask, torch.Size((q.size(0), q.size(1), L, S)))
    if attn_mask.dtype == torch.bool:
        return attn_mask & causal, False  # (N, H, L, S) or broadcastable
    return torch.where(causal, attn_mask, float("-inf")), False  # added to the scores


class MultiHeadAttention(nn.Module):
    r"""Multi-head attention, batch-first, with PyTorch's argument names.

    $$\operatorname{MultiHead}(Q, K, V) = \operatorname{Concat}(\mathrm{head}_1, \dots,
      \mathrm{head}_h) W^O,\quad \mathrm{head}_i = \operatorname{Attention}(QW_i^Q, KW_i^K,
      VW_i^V)$$

    The per-head matrices $W_i^Q$ are stored side by side in one ``q_proj`` of width
    ``embed_dim``; splitting its output into ``num_heads`` slices gives each head its own
    projection. Masks use PyTorch SDPA's convention: boolean True = **may attend**
    (``nn.MultiheadAttention`` means the opposite: there True = masked). With float16 or
    bfloat16 weights and inputs, the projections run in that dtype and the attention
    (softmax and sums) in float32; outputs and weights come back in the input dtype.

    Args:
        embed_dim: E, the model width (d_model).
        num_heads: H; must divide ``embed_dim`` unless ``head_dim`` is given.
        dropout: Dropout probability on the attention weights, in training mode only.
        bias: Add biases to the four projections.
        kdim: Width of ``key`` if it differs from ``embed_dim`` (cross-attention).
        vdim: Width of ``value`` if it differs from ``embed_dim``.
        num_kv_heads: H_kv key/value heads (grouped-query attention); must divide
            ``num_heads``. ``None`` means ``num_heads`` (standard); 1 is multi-query.
        rope_base: If set, rotate each head's queries and keys with
            [`apply_rope`][attention_ref.apply_rope] and this ``base`` (10000 in Llama 2)
            after the projections, before the scores: rotary positions. Self-attention only.
        rope_interleaved: RoPE's pairing: features ``2i`` and ``2i + 1`` (RoFormer, GPT-J)
            instead of ``i`` and ``i + D/2`` (Hugging Face's Llama, GPT-NeoX; the default).
        head_dim: D, each head's width; ``None`` means ``embed_dim // num_heads``. When
            given, ``q_proj`` maps E to ``H * D``, ``k_proj``/``v_proj`` to ``H_kv * D``
            and ``out_proj`` maps ``H * D`` back to E.
        scale: Multiplies the scores; ``None`` means ``1 / sqrt(head_dim)``.

    Raises:
        ValueError: If ``embed_dim`` is not divisible by ``num_heads`` (without
            ``head_dim``), ``head_dim < 1``, ``num_kv_heads`` does not divide ``num_heads``,
            ``dropout`` is outside [0, 1), or ``rope_base`` is not positive or set with an
            odd head width.

    Examples:
        >>> import torch
        >>> from attention_ref import MultiHeadAttention
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
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if head_dim is None and (embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads):
            raise ValueError(
                f"embed_dim: expected a positive multiple of num_heads, got embed_dim={embed_dim}"
                f" and num_heads={num_heads}"
            )
        if embed_dim <= 0 or num_heads <= 0 or (head_dim is not None and head_dim < 1):
            raise ValueError(
                "embed_dim, num_heads and head_dim: expected positive sizes, got "
                f"embed_dim={embed_dim}, num_heads={num_heads} and head_dim={head_dim}"
            )
        width_name = "embed_dim / num_heads" if head_dim is None else "head_dim"
        head_dim = embed_dim // num_heads if head_dim is None else head_dim
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if num_kv_heads <= 0 or num_heads % num_kv_heads != 0:
            raise ValueError(
                f"num_kv_heads: expected a divisor of num_heads={num_heads}, got {num_kv_heads}"
            )
        check_dropout(dropout, "dropout")
        if rope_base is not None and (rope_base <= 0 or head_dim % 2 != 0):
            raise ValueError(
                f"rope_base: expected a positive base and an even head width {width_name}, "
                f"got rope_base={rope_base} and head width {head_dim}"
            )
        self.rope_base, self.rope_interleaved = rope_base, rope_interleaved
        self.embed_dim, self.num_heads, self.num_kv_heads = embed_dim, num_heads, num_kv_heads
        self.head_dim, self.scale = head_dim, scale
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.dropout = dropout
        q_width, kv_width = num_heads * head_dim, num_kv_heads * head_dim
        factory = {"device": device, "dtype": dtype}
        # --8<-- [start:projections]
        self.q_proj = nn.Linear(embed_dim, q_width, bias=bias, **factory)  # all H heads' W^Q
        self.k_proj = nn.Linear(self.kdim, kv_width, bias=bias, **factory)
        self.v_proj = nn.Linear(self.vdim, kv_width, bias=bias, **factory)
        self.out_proj = nn.Linear(q_width, embed_dim, bias=bias, **factory)  # W^O
        # --8<-- [end:projections]

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        for name, x, width in (
            ("query", query, self.embed_dim),
            ("key", key, self.kdim),
            ("value", value, self.vdim),
        ):
            check_tensor(name, x)
            if x.dim() != 3 or x.size(-1) != width:
                raise ValueError(
                    f"{name}: expected a batch-first tensor (N, length, {width}), "
                    f"got shape {tuple(x.shape)}"
                )
        if not query.size(0) == key.size(0) == value.size(0):
            raise ValueError(
                "query, key and value: expected the same batch size N, got "
                f"{tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}"
            )
        if key.size(1) != value.size(1):
            raise ValueError(
                "key and value: expected the same length S, got "
                f"{tuple(key.shape)} and {tuple(value.shape)}"
            )

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
                PyTorch; with ``kv_cache`` it is aligned to the bottom-right corner: the
                new query ``i`` sees every cached key and the new keys ``0..i``. Given
                with ``attn_mask``, both apply, as torch 2.13's SDPA does: a key is seen
                only where the mask allows it and the triangle too (boolean masks are
                ANDed; a floating mask gets -inf where the triangle hides).
            need_weights: Also return the attention weights.
            positions: With ``rope_base``: the query positions, ``(L,)`` or ``(N, L)``,
                default ``arange(L)``, or ``len(kv_cache) + arange(L)`` with a cache; the
                keys, the same tokens, get the same positions.
            kv_cache: Self-attention only: the keys and values of the earlier tokens. The
                new ones (after rotary positions) are appended to it, and the queries
                attend to the whole cache, ``S = len(kv_cache)`` after the update.

        Returns:
            ``(output, weights)``: output ``(N, L, E)``; weights ``(N, H, L, S)`` per head
            (after dropout, as PyTorch returns them), or ``None`` if not asked for.

        Raises:
            ValueError: On mismatched shapes, a ``kv_cache`` with a separate ``key`` or
                with another batch size or head count, or ``positions`` that do not
                continue the cache (``len(kv_cache) + arange(L)``).
        """
        self_attention = key is None or key is query
        key = query if key is None else key
        value = key if value is None else value
        self._check_inputs(query, key, value)
        start = self._check_cache(kv_cache, positions, query, self_attention)
        q = _split_heads(self.q_proj(query), self.num_heads)  # (N, H, L, D)
        k = _split_heads(self.k_proj(key), self.num_kv_heads)  # (N, H_kv, S, D)
        v = _split_heads(self.v_proj(value), self.num_kv_heads)  # (N, H_kv, S, D)
        if positions is None and start and self.rope_base is not None:  # continue the cache
            positions = torch.arange(start, start + query.size(1), device=query.device)
        q, k = self._rope(q, k, positions, self_attention)  # rotary positions, if rope_base
        # --8<-- [start:cache]
        if kv_cache is not None:
            k, v = kv_cache.update(k, v)  # (N, H_kv, S, D): the cached tokens, then the new
        bottom_right = kv_cache is not None  # new query i sees the cache and new keys 0..i
        attn_mask, is_causal = _with_causal(attn_mask, is_causal, q, k, bottom_right)
        # --8<-- [end:cache]
        dtype = q.dtype  # float16/bfloat16: attention in float32, then back to the input dtype
        q, k, v = upcast(q), upcast(k), upcast(v)
        gqa = self.num_kv_heads != self.num_heads
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            weights = attention_weights(q, k, attn_mask, is_causal, self.scale, gqa)  # (N,H,L,S)
            if dropout_p > 0.0:
                weights = F.dropout(weights, p=dropout_p)
            v = v.repeat_interleave(self.num_heads // self.num_kv_heads, dim=1)  # (N, H, S, D)
            heads = weights @ v  # (N, H, L, D)
            weights = weights.to(dtype)
        else:
            weights = None
            heads = scaled_dot_product_attention(
                q, k, v, attn_mask, dropout_p, is_causal, self.scale, gqa
            )  # (N, H, L, D)
        return self.out_proj(_merge_heads(heads).to(dtype)), weights  # (N, L, E)

    def _check_cache(
        self, cache: KVCache | None, positions: Tensor | None, query: Tensor, self_attention: bool
    ) -> int:
        """The position of the first new token: ``len(cache)``, or 0 without a cache."""
        if cache is None:
            return 0
        if not isinstance(cache, KVCache):
            raise TypeError(f"kv_cache: expected a KVCache, got {type(cache).__name__}")
        if not self_attention:
            raise ValueError(
                "kv_cache: only for self-attention (key=None or key=query); cross-attention's "
                "keys come from the encoder's memory, which does not grow"
            )
        start = len(cache)
        if cache.key is not None and (
            cache.key.size(0) != query.size(0) or cache.key.size(1) != self.num_kv_heads
        ):
            raise ValueError(
                f"kv_cache: expected N={query.size(0)} and H_kv={self.num_kv_heads}, got a "
                f"cache of shape {tuple(cache.key.shape)}"
            )
        if positions is not None:
            expected = torch.arange(start, start + query.size(1), device=positions.device)
            if positions.shape[-1:] != expected.shape or not (positions == expected).all():
                raise ValueError(
                    f"positions: with a cache of {start} tokens, expected positions "
                    f"{start}..{start + query.size(1) - 1}, got {positions.tolist()}"
                )
        return start

    def _rope(
        self, q: Tensor, k: Tensor, positions: Tensor | None, self_attention: bool
    ) -> tuple[Tensor, Tensor]:
        """``apply_rope`` on the query and key heads, at positions ``(L,)`` or ``(N, L)``."""
        if self.rope_base is None:
            if positions is not None:
                raise ValueError("positions: only used with rope_base, which is None")
            return q, k
        if not self_attention:
            raise ValueError(
                "key: rope_base needs self-attention (no separate key), got "
                f"{k.size(2)} keys for {q.size(2)} queries"
            )
        if isinstance(positions, Tensor) and positions.dim() == 2:
            positions = positions[:, None, :]  # (N, 1, L): the same for every head
        rope = {"base": self.rope_base, "interleaved": self.rope_interleaved}
        return apply_rope(q, positions, **rope), apply_rope(k, positions, **rope)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy the weights of a ``torch.nn.MultiheadAttention``.

        The copy gives the same output for the same (batch-first) inputs; for a module made
        with ``batch_first=False``, feed ours the inputs transposed to ``(N, L, E)``. Masks
        must be converted: PyTorch's boolean ``attn_mask`` and ``key_padding_mask`` mean True
        = *masked*, ours True = *may attend*, so pass ``~mask``.

        Args:
            module: The PyTorch module; ``add_bias_kv`` and ``add_zero_attn`` are not supported.

        Returns:
            A new ``MultiHeadAttention`` on the same device and dtype.

        Raises:
            TypeError: If ``module`` is not an ``nn.MultiheadAttention``.
            ValueError: If it uses ``add_bias_kv`` or ``add_zero_attn``.

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
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(
                f"module: expected a torch.nn.MultiheadAttention, got {type(module).__name__}"
            )
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("module: add_bias_kv and add_zero_attn are not supported")
        weight = module.out_proj.weight
        ours = cls(
            module.embed_dim,
            module.num_heads,
            dropout=module.dropout,
            bias=module.in_proj_bias is not None,
            kdim=module.kdim,
            vdim=module.vdim,
            device=weight.device,
            dtype=weight.dtype,
        )
        if module._qkv_same_embed_dim:
            q_w, k_w, v_w = module.in_proj_weight.chunk(3)
        else:
            q_w, k_w, v_w = module.q_proj_weight, module.k_proj_weight, module.v_proj_weight
        with torch.no_grad():
            for proj, w in ((ours.q_proj, q_w), (ours.k_proj, k_w), (ours.v_proj, v_w)):
                proj.weight.copy_(w)
            ours.out_proj.weight.copy_(weight)
            if module.in_proj_bias is not None:
                for proj, b in zip(
                    (ours.q_proj, ours.k_proj, ours.v_proj),
                    module.in_proj_bias.chunk(3),
                    strict=True,
                ):
                    proj.bias.copy_(b)
                ours.out_proj.bias.copy_(module.out_proj.bias)
        return ours
