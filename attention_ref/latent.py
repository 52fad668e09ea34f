"""Multi-head latent attention (MLA, DeepSeek-V2 §2.1): keys and values from one small latent.

With the RMSNorm of DeepSeek-V2's §3.1.2 and the released checkpoints (§2.1 has none):

c^KV = RMSNorm(W^DKV h),  k^C_i = W^UK_i c^KV,  v^C_i = W^UV_i c^KV,  k^R = RoPE(W^KR h)
q_i = [q^C_i, RoPE(q^R_i)],  k_i = [k^C_i, k^R],  o_i = softmax(q_i k_i^T * scale) v^C_i

Each token is compressed to a latent c^KV of ``kv_lora_rank`` numbers; every head's key and
value are linear maps of it. Rotary positions go to a separate, narrow part of the query and
of ONE key shared by all heads (decoupled RoPE), so a cache holds per token only the latent
and that rotated key, and the key and value maps can be folded into the query and the output.

Shape legend (batch-first):
    N: batch size    L: query length    S: key/value length (with a cache: cached + new)
    E: d_model    H: num_heads    R: kv_lora_rank (the latent)
    D_nope: qk_nope_head_dim    D_rope: qk_rope_head_dim    D_v: v_head_dim
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

from ._checks import check_number, check_positive_int, check_rope_and_cache, check_tensor
from ._mods import MaskMod
from ._precision import upcast
from .attention import attention_weights
from .heads import head_positions, merge_heads, split_heads
from .kv_cache import LatentCache
from .mask_pipeline import dense, gather
from .norms import RMSNorm
from .positions import apply_rope

__all__ = ["MultiHeadLatentAttention"]


def _check_sizes(
    d_model: int, num_heads: int, sizes: tuple[int, int, int, int, int | None]
) -> None:
    """Every size a positive int, ``qk_rope_head_dim`` even (RoPE rotates feature pairs);
    ``sizes``: the ranks and head widths, as `MultiHeadLatentAttention` names them."""
    kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, q_lora_rank = sizes
    check_positive_int("d_model", d_model, "width")
    check_positive_int("num_heads", num_heads, "number of heads")
    check_positive_int("kv_lora_rank", kv_lora_rank, "rank")
    check_positive_int("qk_nope_head_dim", qk_nope_head_dim, "width")
    check_positive_int("qk_rope_head_dim", qk_rope_head_dim, "width")
    check_positive_int("v_head_dim", v_head_dim, "width")
    if q_lora_rank is not None:
        check_positive_int("q_lora_rank", q_lora_rank, "rank")
    if qk_rope_head_dim % 2 != 0:
        raise ValueError(
            f"qk_rope_head_dim: expected an even width (RoPE rotates pairs), got {qk_rope_head_dim}"
        )


class _Heads(NamedTuple):
    """What one call attends with: every head's query parts, and the latent and rotary key
    that stand for every head's keys and values."""

    q_nope: Tensor  # q^C: (N, H, L, D_nope)
    q_rope: Tensor  # RoPE(q^R): (N, H, L, D_rope)
    latent: Tensor  # c^KV: (N, 1, S, R)
    k_rope: Tensor  # k^R, shared by all heads: (N, 1, S, D_rope)


class MultiHeadLatentAttention(nn.Module):
    r"""Multi-head latent attention (DeepSeek-V2 §2.1, DeepSeek-V3), batch-first.

    $$c^{KV}_t = \operatorname{RMSNorm}(W^{DKV} h_t),\quad
      k^C_{t,i} = W^{UK}_i c^{KV}_t,\quad v^C_{t,i} = W^{UV}_i c^{KV}_t,\quad
      k^R_t = \operatorname{RoPE}(W^{KR} h_t)$$

    $$q_{t,i} = [q^C_{t,i};\ \operatorname{RoPE}(q^R_{t,i})],\quad
      k_{j,i} = [k^C_{j,i};\ k^R_j],\quad
      o_{t,i} = \sum_j \operatorname{softmax}_j\bigl(q_{t,i}^\top k_{j,i} \cdot
      \mathrm{scale}\bigr)\, v^C_{j,i},\quad u_t = W^O [o_{t,1}; \dots; o_{t,H}]$$

    Here $h_t$ is the layer's input at position $t$ (DeepSeek's notation) and $i$ the head. Every
    head's key and value come from one latent $c^{KV}$ of ``kv_lora_rank`` numbers per token;
    positions (RoPE) go to a separate ``qk_rope_head_dim``-wide part of the query and to one rotary
    key $k^R$ shared by all heads. Each query's parts $q^C_{t,i}$ and $q^R_{t,i}$ come from $h_t$
    (``q_proj``) or, with ``q_lora_rank``, from a latent ($W^{DQ}$, an RMSNorm, ``q_b_proj``).
    The RMSNorm after each latent is from DeepSeek-V2's §3.1.2 (its §2.1 equations omit it).
    Submodules are named as in DeepSeek's checkpoints and Hugging Face's ``DeepseekV3Attention``:
    ``q_proj`` or ``q_a_proj``, ``q_a_layernorm``, ``q_b_proj``; ``kv_a_proj_with_mqa`` ($W^{DKV}$
    and $W^{KR}$ stacked), ``kv_a_layernorm``, ``kv_b_proj`` ($W^{UK}_i$ and $W^{UV}_i$ of every
    head stacked), ``o_proj``. A checkpoint layer's attention weights load with
    ``load_state_dict(..., strict=True)``; the outputs match with rope scaling off (no YaRN).

    Masks use PyTorch SDPA's convention: boolean True = **may attend**
    (``nn.MultiheadAttention`` means the opposite). float16 and bfloat16 run the
    projections in that dtype and the attention in float32.

    Args:
        d_model: E, the model width.
        num_heads: H.
        kv_lora_rank: R, the width of the key/value latent $c^{KV}$ (512 in DeepSeek-V3).
        qk_nope_head_dim: D_nope, each head's query/key width without positions (128).
        qk_rope_head_dim: D_rope, the rotary part of each query and of the shared key; even (64).
        v_head_dim: D_v, each head's value width (128).
        q_lora_rank: The width of the query latent (1536 in DeepSeek-V3); ``None``: one
            full-rank ``q_proj``.
        rope_base: The base of the RoPE angles.
        rope_interleaved: RoPE's pairing, as in [`apply_rope`][attention_ref.apply_rope]:
            features ``2i`` and ``2i + 1`` (DeepSeek's checkpoints; the default) instead of
            ``i`` and ``i + D_rope/2``.
        scale: Multiplies the scores; ``None`` means ``1 / sqrt(D_nope + D_rope)``.
        eps: The epsilon of the RMSNorm on each latent (key/value; query with ``q_lora_rank``).
        bias: Add biases to ``q_a_proj``, ``kv_a_proj_with_mqa`` and ``o_proj`` (as
            ``attention_bias`` does in Hugging Face's model; the other maps have none).
        dtype: The parameters' dtype.
        device: Where to create the parameters.

    Raises:
        TypeError: If a size is not an int, or ``rope_base``, ``scale`` or ``eps`` not a number.
        ValueError: If a size is not positive, ``qk_rope_head_dim`` is odd, ``rope_base``
            or ``scale`` is not positive, or ``eps`` is negative.

    Examples:
        >>> import torch
        >>> from attention_ref import LatentCache, MultiHeadLatentAttention
        >>> _ = torch.manual_seed(0)
        >>> mla = MultiHeadLatentAttention(
        ...     16, 4, kv_lora_rank=8, qk_nope_head_dim=4, qk_rope_head_dim=2, v_head_dim=4
        ... )
        >>> x = torch.randn(1, 5, 16)  # (N, L, E)
        >>> out = mla(x, is_causal=True)
        >>> out.shape
        torch.Size([1, 5, 16])
        >>> torch.allclose(mla(x, is_causal=True, absorb=True), out, atol=1e-6)  # absorbed
        True
        >>> cache = LatentCache()
        >>> steps = [mla(x[:, t : t + 1], kv_cache=cache, absorb=True) for t in range(5)]
        >>> torch.allclose(torch.cat(steps, dim=1), out, atol=1e-6)  # decoding, token by token
        True
        >>> tuple(cache.latent.shape), tuple(cache.rope_key.shape)  # per token: R + D_rope
        ((1, 1, 5, 8), (1, 1, 5, 2))
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        *,
        kv_lora_rank: int,
        qk_nope_head_dim: int,
        qk_rope_head_dim: int,
        v_head_dim: int,
        q_lora_rank: int | None = None,
        rope_base: float = 10000.0,
        rope_interleaved: bool = True,
        scale: float | None = None,
        eps: float = 1e-6,
        bias: bool = False,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        sizes = (kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, q_lora_rank)
        _check_sizes(d_model, num_heads, sizes)
        self.d_model, self.num_heads, self.q_lora_rank = d_model, num_heads, q_lora_rank
        self.kv_lora_rank, self.v_head_dim = kv_lora_rank, v_head_dim
        self.qk_nope_head_dim, self.qk_rope_head_dim = qk_nope_head_dim, qk_rope_head_dim
        self.rope_base = check_number("rope_base", rope_base, positive=True)
        self.rope_interleaved = rope_interleaved
        qk_head_dim = qk_nope_head_dim + qk_rope_head_dim  # each head's query and key width
        self.scale = (
            1.0 / math.sqrt(qk_head_dim)
            if scale is None
            else check_number("scale", scale, positive=True)
        )
        eps = check_number("eps", eps, positive=False)
        factory = {"device": device, "dtype": dtype}
        # --8<-- [start:projections]
        if q_lora_rank is None:  # queries: one full-rank map, all H heads side by side
            self.q_proj = nn.Linear(d_model, num_heads * qk_head_dim, bias=False, **factory)
        else:  # queries through a latent of their own: W^DQ, RMSNorm, then W^UQ and W^QR
            self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=bias, **factory)
            self.q_a_layernorm = RMSNorm(q_lora_rank, eps=eps, device=device, dtype=dtype)
            self.q_b_proj = nn.Linear(q_lora_rank, num_heads * qk_head_dim, bias=False, **factory)
        # W^DKV (to the latent) and W^KR (to the shared rotary key), stacked
        self.kv_a_proj_with_mqa = nn.Linear(
            d_model, kv_lora_rank + qk_rope_head_dim, bias=bias, **factory
        )
        self.kv_a_layernorm = RMSNorm(kv_lora_rank, eps=eps, device=device, dtype=dtype)
        # every head's W^UK (latent -> key) and W^UV (latent -> value), stacked
        self.kv_b_proj = nn.Linear(
            kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False, **factory
        )
        self.o_proj = nn.Linear(num_heads * v_head_dim, d_model, bias=bias, **factory)  # W^O
        # --8<-- [end:projections]

    def forward(
        self,
        x: Tensor,
        *,
        positions: Tensor | None = None,
        attn_mask: Tensor | None = None,
        is_causal: bool = False,
        mask_mod: MaskMod | None = None,
        kv_cache: LatentCache | None = None,
        absorb: bool = False,
    ) -> Tensor:
        """Self-attention over ``x``, in the expanded or the absorbed form.

        Args:
            x: ``(N, L, E)``.
            positions: The tokens' positions for RoPE, ``(L,)`` or ``(N, L)``; default
                ``kv_cache.tokens_seen + arange(L)``.
            attn_mask: Broadcastable to ``(N, H, L, S)``, e.g. a padding mask
                ``(N, 1, 1, S)``. Boolean True = may attend; floating = added to the
                scores. With a cache it covers every key, cached and new.
            is_causal: Causal mask over positions, as in
                [`MultiHeadAttention`][attention_ref.MultiHeadAttention]; all masks apply.
            mask_mod: A rule of positions (``attention_ref.mask_mods``), ANDed with the rest.
            kv_cache: A [`LatentCache`][attention_ref.LatentCache] of the earlier tokens'
                normalized latents and rotated shared keys; the new tokens' are appended. A
                rolling cache adds its own rule, whatever ``is_causal`` says.
            absorb: Fold ``kv_b_proj``'s key half into the query and its value half into
                the output, so attention runs over the latent and the per-head keys k^C and
                values v^C are never formed (DeepSeek-V2 §2.1.2). The same result either way.

        Returns:
            ``(N, L, E)``.

        Raises:
            TypeError: On a wrong dtype (``x``, ``attn_mask``) or a cache not a ``LatentCache``.
            ValueError: If ``x`` is not ``(N, L, E)``, ``attn_mask`` does not broadcast, the
                cache holds another N or widths, or ``positions`` do not continue the cache.
        """
        check_tensor("x", x)
        if x.dim() != 3 or x.size(-1) != self.d_model:
            raise ValueError(
                f"x: expected a batch-first tensor (N, L, {self.d_model}), got shape "
                f"{tuple(x.shape)}"
            )
        check_rope_and_cache(x, None, True, kv_cache, LatentCache)
        start = 0 if kv_cache is None else kv_cache.check(x, positions, 1)  # the first new
        at = head_positions(positions, start, x.size(1), x.device)  # (L,) or (N, 1, L)
        q_nope, q_rope = self._queries(x, at)  # (N, H, L, D_nope), (N, H, L, D_rope)
        latent, k_rope = self._latent(x, at)  # (N, 1, L, R), (N, 1, L, D_rope)
        # --8<-- [start:cache]
        if kv_cache is not None:  # cache the latent and the rotated shared key: R + D_rope
            latent, k_rope = kv_cache.update(latent, k_rope)  # (N, 1, S, R), (N, 1, S, D_rope)
        # every mask as one: queries at start + i, keys at their positions (kv_cache.positions)
        shape = (x.size(0), self.num_heads, x.size(1), latent.size(2))
        masks = gather(shape, attn_mask, is_causal, mask_mod, kv_cache, start)
        attn_mask, is_causal = dense(masks, x.device)
        # --8<-- [end:cache]
        attend = self._attend_absorbed if absorb else self._attend_expanded
        heads = attend(_Heads(q_nope, q_rope, latent, k_rope), attn_mask, is_causal)
        # float16/bfloat16: attention in float32, then back to the input dtype
        return self.o_proj(merge_heads(heads.to(x.dtype)))  # (N, L, E): concatenate, then W^O

    def _rope(self, x: Tensor, positions: Tensor) -> Tensor:
        return apply_rope(x, positions, base=self.rope_base, interleaved=self.rope_interleaved)

    def _queries(self, x: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Every head's query: its content part q^C and its rotated part RoPE(q^R)."""
        if self.q_lora_rank is None:
            q = self.q_proj(x)  # (N, L, H * (D_nope + D_rope))
        else:  # compress, normalize, expand
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        q = split_heads(q, self.num_heads)  # (N, H, L, D_nope + D_rope)
        q_nope, q_rope = q.split([self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        return q_nope, self._rope(q_rope, positions)  # (N, H, L, D_nope), (N, H, L, D_rope)

    def _latent(self, x: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """What a token leaves for the others: the latent c^KV and the rotated key k^R."""
        latent, k_rope = self.kv_a_proj_with_mqa(x).split(
            [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1
        )  # (N, L, R), (N, L, D_rope)
        latent = self.kv_a_layernorm(latent)[:, None]  # (N, 1, L, R): c^KV, one for all heads
        return latent, self._rope(k_rope[:, None], positions)  # k^R: (N, 1, L, D_rope)

    def _attend_expanded(self, x: _Heads, attn_mask: Tensor | None, is_causal: bool) -> Tensor:
        """The paper's form: every head's key and value from the latent, then attention."""
        q_nope, q_rope, latent, k_rope = x
        # --8<-- [start:expanded]
        kv = split_heads(self.kv_b_proj(latent[:, 0]), self.num_heads)  # (N, H, S, D_nope + D_v)
        k_nope, v = kv.split([self.qk_nope_head_dim, self.v_head_dim], dim=-1)  # k^C, v^C
        k_rope = k_rope.expand(-1, self.num_heads, -1, -1)  # (N, H, S, D_rope): shared by all
        q = torch.cat([q_nope, q_rope], dim=-1)  # (N, H, L, D_nope + D_rope)
        k = torch.cat([k_nope, k_rope], dim=-1)  # (N, H, S, D_nope + D_rope)
        q, k, v = upcast(q), upcast(k), upcast(v)  # float16/bfloat16: attention in float32
        weights = attention_weights(q, k, attn_mask, is_causal, self.scale)  # (N, H, L, S)
        return weights @ v  # (N, H, L, D_v)
        # --8<-- [end:expanded]

    def _attend_absorbed(self, x: _Heads, attn_mask: Tensor | None, is_causal: bool) -> Tensor:
        """Weight absorption: q^C·k^C = (W^UK^T q^C)·c^KV, and W^UV applied after the sum."""
        # --8<-- [start:absorbed]
        w_uk, w_uv = self._up_projections()  # (H, D_nope, R), (H, D_v, R)
        q_nope, q_rope, latent, k_rope = map(upcast, x)  # float16/bfloat16: in float32
        q_latent = q_nope @ w_uk  # (N, H, L, R): W^UK folded into the query
        q = torch.cat([q_latent, q_rope], dim=-1)  # (N, H, L, R + D_rope)
        k = torch.cat([latent, k_rope], dim=-1)  # (N, 1, S, R + D_rope): one key for all heads
        weights = attention_weights(q, k, attn_mask, is_causal, self.scale, enable_gqa=True)
        context = weights @ latent  # (N, H, L, R): each head's weighted sum of latents
        return context @ w_uv.transpose(-2, -1)  # (N, H, L, D_v): W^UV folded into the output
        # --8<-- [end:absorbed]

    def _up_projections(self) -> tuple[Tensor, Tensor]:
        """``kv_b_proj``'s weight split per head: W^UK ``(H, D_nope, R)``, W^UV ``(H, D_v, R)``."""
        w = upcast(self.kv_b_proj.weight)  # (H * (D_nope + D_v), R)
        w = w.view(self.num_heads, self.qk_nope_head_dim + self.v_head_dim, self.kv_lora_rank)
        w_uk, w_uv = w.split([self.qk_nope_head_dim, self.v_head_dim], dim=1)
        return w_uk, w_uv

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, num_heads={self.num_heads}, "
            f"kv_lora_rank={self.kv_lora_rank}, q_lora_rank={self.q_lora_rank}, "
            f"scale={self.scale:.4g}"
        )
