"""Multi-head attention as an ``nn.Module``: project, split into heads, attend, merge, project.

MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

Shape legend (batch-first):
    N: batch size    L: query length    S: key/value length
    E: embed_dim (d_model)    H: num_heads    D: head_dim, by default E / H (d_k)
    H_kv: num_kv_heads (grouped-query attention: H_kv divides H; 1 is multi-query)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import (
    check_attention_fn_sinks,
    check_attention_inputs,
    check_dropout,
    check_heads,
    check_rope_and_cache,
)
from ._mods import MaskMod
from ._precision import upcast
from .attention import attention_weights
from .heads import head_positions, merge_heads, split_heads
from .interop import attention_from_torch, attention_to_torch
from .kv_cache import KVCache
from .mask_pipeline import Masks, call_kernel, dense, gather
from .qk_parts import Rotary

__all__ = ["MultiHeadAttention"]

_WithWeights = tuple[Tensor, Tensor | None]  # the output, and the weights (None from a kernel)


class MultiHeadAttention(nn.Module):
    r"""Multi-head attention, batch-first, with PyTorch's argument names.

    $$\operatorname{MultiHead}(Q, K, V) = \operatorname{Concat}(\mathrm{head}_1, \dots,
      \mathrm{head}_H) W^O,\quad \mathrm{head}_i = \operatorname{Attention}(QW_i^Q, KW_i^K,
      VW_i^V)$$

    The heads' $W_i^Q$ sit side by side in one ``q_proj``. Masks use SDPA's convention, boolean
    True = **may attend** (``nn.MultiheadAttention`` means the opposite). float16 and bfloat16
    run the projections in that dtype and, without an ``attention_fn``, attention in float32.

    Args:
        embed_dim: E, the model width (d_model).
        num_heads: H; must divide ``embed_dim`` unless ``head_dim`` is given.
        dropout: Dropout probability in [0, 1) on the attention weights, in training mode only.
        bias: Add biases to the four projections.
        kdim: Width of ``key`` if not ``embed_dim`` (cross-attention).
        vdim: Width of ``value`` if not ``embed_dim``.
        num_kv_heads: H_kv (grouped-query attention), dividing H; default H, 1 is multi-query.
        rope_base: Rotary positions, self-attention only, with this base (10000 in Llama 2).
        rope_interleaved: RoPE pairs ``2i, 2i + 1`` (GPT-J) if True, else ``i, i + D/2`` (GPT-NeoX).
        qk_parts: Modules ``part(q, k, positions) -> (q, k)`` run in order on each head's queries
            and keys, before ``rope_base`` (``attention_ref.qk_parts``: a norm, partial RoPE).
        output_gate: A module ``gate(heads, query) -> heads`` on the merged heads before
            ``out_proj`` (``attention_ref.output_gate.OutputGate``, Qwen3-Next).
        mask_mod: A mask function ``mask_mod(b, h, q_idx, kv_idx) -> bool``, the layer's own
            (a window, Llama 4's chunks), applied in every call.
        head_dim: D, each head's width (``q_proj``: E to H * D); default ``embed_dim // H``.
        scale: Multiplies the scores; ``None`` means ``1 / sqrt(head_dim)``.
        attention_fn: The kernel of the heads, with SDPA's arguments on ``(N, H, L, D)``
            (``chunked_attention``, SDPA or yours; one taking ``mask_mod`` and ``q_offset`` gets
            the masks as a rule). The layer then returns no weights, and ``dropout`` must be 0.
        sinks: If True, one learned sink logit per head (gpt-oss), 0 at first; not sink tokens.

    Raises:
        ValueError: On sizes that do not divide (E by H, H by H_kv), a bad ``rope_base``, a bad
            ``dropout``, or ``sinks=True`` with an ``attention_fn`` that takes no ``sinks``.

    Examples:
        >>> import torch
        >>> from attention_ref import MultiHeadAttention, chunked_attention
        >>> _ = torch.manual_seed(0)
        >>> mha = MultiHeadAttention(embed_dim=8, num_heads=2)
        >>> x = torch.randn(1, 3, 8)  # (N, L, E)
        >>> out, weights = mha(x)  # self-attention: key = value = x
        >>> out.shape, weights.shape  # weights per head: (N, H, L, S)
        (torch.Size([1, 3, 8]), torch.Size([1, 2, 3, 3]))
        >>> weights.sum(dim=-1).allclose(torch.ones(1, 2, 3))  # every row sums to 1
        True
        >>> sum(p.numel() for p in mha.parameters())  # 4 * E * E + 4 * E
        288
        >>> blocks = MultiHeadAttention(8, 2, attention_fn=chunked_attention)  # another kernel
        >>> _ = blocks.load_state_dict(mha.state_dict())
        >>> out2, none = blocks(x, is_causal=True)
        >>> torch.allclose(out2, mha(x, is_causal=True)[0], atol=1e-6), none
        (True, None)
        >>> MultiHeadAttention(8, 2, sinks=True)(x)[1].sum(dim=-1).lt(1).all()  # gpt-oss
        tensor(True)
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
        qk_parts: Sequence[nn.Module] = (),
        output_gate: nn.Module | None = None,
        mask_mod: MaskMod | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        D, H_kv = check_heads(embed_dim, num_heads, head_dim, num_kv_heads, rope_base)
        check_dropout(dropout, "dropout")
        check_attention_fn_sinks(attention_fn, sinks, dropout)
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, D
        self.num_kv_heads, self.scale, self.dropout = H_kv, scale, dropout
        self.rope_base, self.rope_interleaved = rope_base, rope_interleaved
        rope = [Rotary(rope_base, interleaved=rope_interleaved)] if rope_base is not None else []
        self.qk_parts = nn.ModuleList([*qk_parts, *rope])  # in order, on (q, k, positions)
        self.output_gate, self.mask_mod = output_gate, mask_mod
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
        mask_mod: MaskMod | None = None,
        need_weights: bool = True,
        positions: Tensor | None = None,
        kv_cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key``/``value``, with or without a KV cache.

        Every mask given (``attn_mask``, ``is_causal``, either ``mask_mod``, a rolling cache's
        rule) must allow a key; all are over token positions, so they stay right with a cache.

        Args:
            query: ``(N, L, E)``.
            key: ``(N, S, kdim)``; defaults to ``query`` (self-attention).
            value: ``(N, S, vdim)``; defaults to ``key``.
            attn_mask: Broadcastable to ``(N, H, L, S)``, bool or float as for SDPA; with a
                cache it covers the keys the cache returns, held and new.
            is_causal: Causal mask over positions: query ``t`` sees keys ``0..t`` (without a
                cache top-left-aligned, with one bottom-right).
            mask_mod: A mask function for this call only, as at construction.
            need_weights: Also return the attention weights (only without an ``attention_fn``).
            positions: The positions that ``rope_base`` and ``qk_parts`` read, ``(L,)`` or
                ``(N, L)``; default ``arange(L)``, after the cache's ``tokens_seen`` tokens.
            kv_cache: Self-attention only: the earlier tokens' keys and values, to which the new
                ones (after rotary positions) are appended.

        Returns:
            ``(output, weights)``: output ``(N, L, E)``; weights ``(N, H, L, S)`` per head, after
            dropout (PyTorch's with ``average_attn_weights=False``), or ``None``.

        Raises:
            ValueError: On mismatched shapes; a separate ``key`` with a cache or with rotary
                positions (``rope_base``, or a ``qk_parts`` part that reads positions); a cache
                holding another N or H_kv; or ``positions`` that do not continue the cache.
            TypeError: On non-floating inputs or a ``kv_cache`` that is not a ``KVCache``.
        """
        key = query if key is None else key
        value = key if value is None else value  # (N, S, vdim)
        check_attention_inputs(query, key, value, (self.embed_dim, self.kdim, self.vdim))
        check_rope_and_cache(query, key, self.qk_parts, kv_cache, KVCache)
        start = 0 if kv_cache is None else kv_cache.check(query, positions, self.num_kv_heads)
        # --8<-- [start:project]
        q = split_heads(self.q_proj(query), self.num_heads)  # (N, H, L, D)
        k = split_heads(self.k_proj(key), self.num_kv_heads)  # (N, H_kv, S, D)
        v = split_heads(self.v_proj(value), self.num_kv_heads)  # (N, H_kv, S, D)
        # --8<-- [end:project]
        at = head_positions(positions, start, q.size(2), q.device)  # (L,) or (N, 1, L)
        for part in self.qk_parts:  # rotary positions, a norm...: (N, H, L, D), (N, H_kv, S, D)
            q, k = part(q, k, at)
        # --8<-- [start:cache]
        if kv_cache is not None:
            k, v = kv_cache.update(k, v)  # (N, H_kv, S, D): the cached tokens, then the new
        # --8<-- [end:cache]
        # every mask as one: queries at start + i, keys at their positions (kv_cache.positions)
        shape = (q.size(0), self.num_heads, q.size(2), k.size(2))
        masks = gather(shape, attn_mask, is_causal, mask_mod, kv_cache, start, self.mask_mod)
        # --8<-- [start:attend]
        heads, weights = self._attend(q, k, v, masks)  # (N, H, L, D)
        merged = merge_heads(heads)  # (N, L, H * D): the heads side by side
        if self.output_gate is not None:  # Qwen3-Next: merged * sigmoid(query W^G)
            merged = self.output_gate(merged, query)
        out = self.out_proj(merged)  # (N, L, E): W^O
        # --8<-- [end:attend]
        return out, weights if need_weights else None

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, masks: Masks) -> _WithWeights:
        """Every head's output ``(N, H, L, D)``, and its weights ``(N, H, L, S)`` by default."""
        gqa = self.num_kv_heads != self.num_heads  # each key/value head serves H / H_kv
        if (fn := self.attention_fn) is not None:  # a kernel: the output only
            extra = {} if self.sinks is None else {"sinks": self.sinks}
            return call_kernel(fn, q, k, v, masks, scale=self.scale, enable_gqa=gqa, **extra), None
        dtype = q.dtype  # float16/bfloat16: attention in float32, then back to the input dtype
        q, k, v = upcast(q), upcast(k), upcast(v)
        attn_mask, is_causal = dense(masks, q.device)
        weights = attention_weights(q, k, attn_mask, is_causal, self.scale, gqa, sinks=self.sinks)
        if self.training and self.dropout > 0.0:
            weights = F.dropout(weights, p=self.dropout)
        v = v.repeat_interleave(self.num_heads // self.num_kv_heads, dim=1)  # (N, H, S, D)
        return (weights @ v).to(dtype), weights.to(dtype)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy an ``nn.MultiheadAttention``: ``attention_ref.interop.attention_from_torch``."""
        return attention_from_torch(cls, module)

    def to_torch(self) -> nn.MultiheadAttention:
        """A copy as an ``nn.MultiheadAttention``: ``attention_ref.interop.attention_to_torch``."""
        return attention_to_torch(self)
