"""The decoder-only block of GPT-2, Llama, Mistral and Qwen2: pre-norm, no memory.

    x = x + SelfAttention(Norm(x));  x = x + FeedForward(Norm(x))

Unlike the 2017 decoder layer ([`TransformerDecoderLayer`][attention_ref.TransformerDecoderLayer])
it has no cross-attention: a language model has no encoder. Llama's choices are the defaults:
RMSNorm, a SwiGLU feed-forward network, no biases; grouped-query attention and rotary
positions are options. A language model calls it with ``is_causal=True`` (the default is no
mask). With a [`KVCache`][attention_ref.KVCache] it generates one token at a time.

Shape legend (batch-first): N batch, L length, E d_model, F dim_feedforward, H nhead.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn

from ._checks import check_choice, check_dropout, check_positive_int
from ._mods import MaskMod
from .feed_forward import activation_fn, feed_forward
from .kv_cache import KVCache
from .multihead import MultiHeadAttention
from .norms import LayerNorm, RMSNorm

__all__ = ["DecoderBlock"]


def _norm(norm: str, d_model: int, eps: float, bias: bool) -> nn.Module:
    """A LayerNorm or an RMSNorm (which has no bias) over the last dimension."""
    if check_choice("norm", norm, ("layernorm", "rmsnorm")) == "rmsnorm":
        return RMSNorm(d_model, eps=eps)
    return LayerNorm(d_model, eps=eps, bias=bias)


class DecoderBlock(nn.Module):
    r"""One pre-norm decoder-only block, batch-first, with PyTorch's argument names.

    $$\begin{aligned} h &= x + \operatorname{MultiHead}(\operatorname{Norm}(x);\ M) \\
      y &= h + \operatorname{FFN}(\operatorname{Norm}(h)) \end{aligned}$$

    with $M$ the masks given to ``forward``: the causal mask with ``is_causal=True``, none by
    default. The defaults make a Llama block without positions: add ``rope_base=10000.0``
    (Llama 2) for its rotary positions. GPT-2's is ``activation="gelu_tanh", bias=True,
    norm="layernorm", ffn="mlp"`` (its learned positions are added before the first block).

    Submodules are named as in ``nn.TransformerEncoderLayer`` (``self_attn``, ``linear1``,
    ``linear2``, ``norm1``, ``norm2``), plus ``linear3`` for SwiGLU; ``self_attn`` is a
    ``MultiHeadAttention``, with separate ``q_proj``, ``k_proj``, ``v_proj`` where PyTorch
    packs ``in_proj_weight``.

    Args:
        d_model: E, the model width.
        nhead: H, the number of query heads.
        dim_feedforward: F, the hidden width of the feed-forward network.
        dropout: Dropout after attention, inside and after the feed-forward network, and
            on the attention weights (training mode only).
        activation: ``"relu"``, ``"relu2"`` (relu squared), ``"gelu"`` (exact),
            ``"gelu_tanh"`` (the tanh approximation, GPT-2's ``gelu_new``), ``"silu"``, or any
            callable.
        layer_norm_eps: ``eps`` of both norms (Llama's ``rms_norm_eps``).
        bias: Biases in the linear layers and LayerNorms.
        norm: ``"rmsnorm"`` or ``"layernorm"``.
        ffn: ``"swiglu"``, ``linear2(dropout(act(linear1(x)) * linear3(x)))``: gate
            ``linear1``, up ``linear3``, down ``linear2``, as numbered in Meta's Llama code;
            or ``"mlp"``, ``linear2(dropout(act(linear1(x))))``.
        num_kv_heads: Key/value heads of ``self_attn`` (grouped-query attention).
        head_dim: Each head's width in ``self_attn``; default ``d_model // nhead``.
        rope_base: Rotary positions in ``self_attn`` with this base (10000 in Llama 2).
        rope_interleaved: RoPE's pairing, as in
            [`MultiHeadAttention`][attention_ref.MultiHeadAttention].
        sinks: A learned sink logit per head in ``self_attn`` (gpt-oss), as in
            [`MultiHeadAttention`][attention_ref.MultiHeadAttention].
        attention_fn: The kernel of ``self_attn`` (e.g. ``chunked_attention``), as in
            [`MultiHeadAttention`][attention_ref.MultiHeadAttention]; ``dropout`` must be 0.

    Raises:
        ValueError: On an unknown ``activation``, ``norm`` or ``ffn``, or invalid sizes.

    Examples:
        >>> import torch
        >>> from attention_ref import DecoderBlock, KVCache
        >>> _ = torch.manual_seed(0)
        >>> block = DecoderBlock(16, 4, 32, num_kv_heads=2, rope_base=10000.0)  # Llama-style
        >>> x = torch.randn(2, 5, 16)  # (N, L, E)
        >>> full = block(x, is_causal=True)
        >>> cache = KVCache()
        >>> prompt = block(x[:, :4], is_causal=True, kv_cache=cache)
        >>> last = block(x[:, 4:], is_causal=True, kv_cache=cache)  # one new token
        >>> torch.allclose(last, full[:, 4:], atol=1e-6)
        True
        >>> sorted(block.state_dict())[:5]
        ['linear1.weight', 'linear2.weight', 'linear3.weight', 'norm1.weight', 'norm2.weight']
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.0,
        activation: str | Callable[[Tensor], Tensor] = "silu",
        layer_norm_eps: float = 1e-5,
        bias: bool = False,
        *,
        norm: str = "rmsnorm",
        ffn: str = "swiglu",
        num_kv_heads: int | None = None,
        head_dim: int | None = None,
        rope_base: float | None = None,
        rope_interleaved: bool = False,
        sinks: bool = False,
        attention_fn: Callable[..., Tensor] | None = None,
    ) -> None:
        super().__init__()
        self.activation = activation_fn(activation)
        gated = check_choice("ffn", ffn, ("swiglu", "mlp")) == "swiglu"
        check_dropout(dropout, "dropout")
        check_positive_int("dim_feedforward", dim_feedforward)
        self.self_attn = MultiHeadAttention(
            d_model,
            nhead,
            dropout=dropout,
            bias=bias,
            num_kv_heads=num_kv_heads,
            head_dim=head_dim,
            rope_base=rope_base,
            rope_interleaved=rope_interleaved,
            sinks=sinks,
            attention_fn=attention_fn,
        )
        self.linear1 = nn.Linear(d_model, dim_feedforward, bias=bias)  # the gate, with SwiGLU
        self.linear2 = nn.Linear(dim_feedforward, d_model, bias=bias)  # "down"
        self.linear3 = nn.Linear(d_model, dim_feedforward, bias=bias) if gated else None  # "up"
        self.norm1 = _norm(norm, d_model, layer_norm_eps, bias)
        self.norm2 = _norm(norm, d_model, layer_norm_eps, bias)
        self.dropout = nn.Dropout(dropout)  # inside the feed-forward network
        self.dropout1 = nn.Dropout(dropout)  # after attention
        self.dropout2 = nn.Dropout(dropout)  # after the feed-forward network

    def forward(
        self,
        x: Tensor,
        *,
        positions: Tensor | None = None,
        attn_mask: Tensor | None = None,
        is_causal: bool = False,
        mask_mod: MaskMod | None = None,
        kv_cache: KVCache | None = None,
    ) -> Tensor:
        """Apply the block to ``x`` ``(N, L, E)``; returns ``(N, L, E)``.

        The arguments go to [`MultiHeadAttention`][attention_ref.MultiHeadAttention]'s
        ``forward``: ``attn_mask`` (SDPA's convention, boolean True = may attend),
        ``is_causal`` and the rule ``mask_mod`` all apply; with ``kv_cache``, ``x`` holds the
        new tokens only, and ``attn_mask`` covers the keys the cache returns, held and new;
        ``positions`` are the rotary positions (with ``rope_base``). ``is_causal`` defaults to
        False, so ``block(x)`` attends both ways: pass ``is_causal=True`` for a language model
        (as [`TinyDecoder`][attention_ref.TinyDecoder] does).
        """
        h = self.norm1(x)  # Pre-LN: normalize, attend, add
        out, _ = self.self_attn(
            h,
            attn_mask=attn_mask,
            is_causal=is_causal,
            mask_mod=mask_mod,
            need_weights=False,
            positions=positions,
            kv_cache=kv_cache,
        )
        x = x + self.dropout1(out)  # (N, L, E)
        h = self.norm2(x)
        ffn = feed_forward(
            h, self.linear1, self.linear2, self.activation, self.dropout, self.linear3
        )
        return x + self.dropout2(ffn)  # (N, L, E)
