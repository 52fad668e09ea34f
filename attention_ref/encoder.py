"""The Transformer encoder layer: self-attention and a feed-forward network, each wrapped
in a residual connection and LayerNorm ("Add & Norm").

Post-LN (the original paper, PyTorch's default):
    x = LayerNorm(x + SelfAttention(x));  x = LayerNorm(x + FeedForward(x))
Pre-LN (``norm_first=True``, most modern models):
    x = x + SelfAttention(LayerNorm(x));  x = x + FeedForward(LayerNorm(x))

With ``norm="rmsnorm"``, ``ffn="swiglu"``, ``activation="silu"``, ``bias=False``,
``norm_first=True`` and a causal mask, the same layer is a Llama decoder block; with
``activation="gelu_tanh"``, ``norm_first=True`` and a causal mask, a GPT-2 block.

Shape legend (batch-first): N batch, L length, E d_model, F dim_feedforward, H nhead.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_dropout
from .kv_cache import KVCache
from .multihead import MultiHeadAttention
from .norms import LayerNorm, RMSNorm

__all__ = ["TransformerEncoderLayer"]

_ACTIVATIONS = {
    "relu": F.relu,
    "gelu": F.gelu,  # exact: x * Phi(x)
    "gelu_tanh": partial(F.gelu, approximate="tanh"),  # GPT-2's gelu_new
    "silu": F.silu,  # x * sigmoid(x), also called swish
}
_NORMS = {"layernorm": LayerNorm, "rmsnorm": RMSNorm}
_FFNS = ("mlp", "swiglu")


def _activation(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """The activation function named ``activation``, or ``activation`` itself if callable."""
    if callable(activation):
        return activation
    if activation not in _ACTIVATIONS:
        raise ValueError(
            f"activation: expected one of {sorted(_ACTIVATIONS)} or a callable, got {activation!r}"
        )
    return _ACTIVATIONS[activation]


def _norm(norm: str, d_model: int, eps: float, bias: bool) -> nn.Module:
    """A LayerNorm or an RMSNorm (which has no bias) over the last dimension."""
    if norm == "rmsnorm":
        return RMSNorm(d_model, eps=eps)
    if norm == "layernorm":
        return LayerNorm(d_model, eps=eps, bias=bias)
    raise ValueError(f"norm: expected one of {sorted(_NORMS)}, got {norm!r}")


class TransformerEncoderLayer(nn.Module):
    r"""One encoder layer, batch-first, with the arguments of ``nn.TransformerEncoderLayer``.

    $$\begin{aligned} h &= \operatorname{LayerNorm}(x + \operatorname{MultiHead}(x, x, x)) \\
      y &= \operatorname{LayerNorm}(h + \sigma(h W_1 + b_1)\,W_2 + b_2) \end{aligned}$$

    The keyword-only arguments turn it into today's decoder blocks: RMSNorm, a gated
    feed-forward network ($(\sigma(x W_1) \odot x W_3)\,W_2$, SwiGLU with SiLU),
    grouped-query attention and rotary positions; with ``is_causal=True`` and a
    [`KVCache`][attention_ref.KVCache] it generates one token at a time.

    Args:
        d_model: E, the model width.
        nhead: H, the number of attention heads.
        dim_feedforward: F, the hidden width of the feed-forward network.
        dropout: Dropout after attention, inside and after the feed-forward network, and
            on the attention weights (training mode only).
        activation: ``"relu"``, ``"gelu"`` (exact), ``"gelu_tanh"`` (the tanh
            approximation, GPT-2's ``gelu_new``), ``"silu"``, or any callable.
        layer_norm_eps: ``eps`` of both norms (LayerNorm's or RMSNorm's).
        norm_first: Pre-LN (normalize before each sub-layer) instead of Post-LN.
        bias: Biases in the linear layers and LayerNorms.
        norm: ``"layernorm"`` or ``"rmsnorm"``.
        ffn: ``"mlp"``, ``linear2(dropout(act(linear1(x))))``, or ``"swiglu"``,
            ``linear2(dropout(act(linear1(x)) * linear3(x)))``: gate ``linear1``, up
            ``linear3``, down ``linear2``, as numbered in Meta's Llama code.
        num_kv_heads: Key/value heads of ``self_attn`` (grouped-query attention).
        head_dim: Each head's width in ``self_attn``; default ``d_model // nhead``.
        rope_base: Rotary positions in ``self_attn`` with this base.

    Raises:
        ValueError: On an unknown ``activation``, ``norm`` or ``ffn``, or invalid sizes.

    Examples:
        >>> import torch
        >>> from attention_ref import TransformerEncoderLayer
        >>> _ = torch.manual_seed(0)
        >>> layer = TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16).eval()
        >>> x = torch.randn(2, 5, 8)  # (N, L, E)
        >>> layer(x).shape
        torch.Size([2, 5, 8])
        >>> sum(p.numel() for p in layer.parameters())  # attention 288 + FFN 280 + norms 32
        600
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
        norm_first: bool = False,
        bias: bool = True,
        *,
        norm: str = "layernorm",
        ffn: str = "mlp",
        num_kv_heads: int | None = None,
        head_dim: int | None = None,
        rope_base: float | None = None,
    ) -> None:
        super().__init__()
        self.activation = _activation(activation)
        if ffn not in _FFNS:
            raise ValueError(f"ffn: expected one of {list(_FFNS)}, got {ffn!r}")
        check_dropout(dropout, "dropout")
        self.self_attn = MultiHeadAttention(
            d_model, nhead, dropout=dropout, bias=bias, num_kv_heads=num_kv_heads,
            head_dim=head_dim, rope_base=rope_base,
        )  # fmt: skip
        self.linear1 = nn.Linear(d_model, dim_feedforward, bias=bias)
        self.linear2 = nn.Linear(dim_feedforward, d_model, bias=bias)
        if ffn == "swiglu":
            self.linear3 = nn.Linear(d_model, dim_feedforward, bias=bias)  # "up"
        self.norm1 = _norm(norm, d_model, layer_norm_eps, bias)
        self.norm2 = _norm(norm, d_model, layer_norm_eps, bias)
        self.dropout = nn.Dropout(dropout)  # inside the feed-forward network
        self.dropout1 = nn.Dropout(dropout)  # after attention
        self.dropout2 = nn.Dropout(dropout)  # after the feed-forward network
        self.activation_name = activation if isinstance(activation, str) else None
        self.norm_first, self.ffn = norm_first, ffn

    def forward(
        self,
        src: Tensor,
        *,
        attn_mask: Tensor | None = None,
        is_causal: bool = False,
        positions: Tensor | None = None,
        kv_cache: KVCache | None = None,
    ) -> Tensor:
        """Apply the layer to ``src`` ``(N, L, E)``; returns ``(N, L, E)``.

        ``attn_mask`` follows the SDPA convention (boolean True = may attend), so a
        padding mask from [`padding_mask`][attention_ref.padding_mask] can be passed as it is.
        ``positions`` (with ``rope_base``) and ``kv_cache`` go to
        [`MultiHeadAttention`][attention_ref.MultiHeadAttention]'s ``forward``.
        """
        context = {"attn_mask": attn_mask, "is_causal": is_causal, "positions": positions,
                   "kv_cache": kv_cache}  # fmt: skip
        x = src
        if self.norm_first:  # Pre-LN
            x = x + self._attention(self.norm1(x), **context)
            x = x + self._feed_forward(self.norm2(x))
        else:  # Post-LN
            x = self.norm1(x + self._attention(x, **context))
            x = self.norm2(x + self._feed_forward(x))
        return x

    def _attention(self, x: Tensor, **context) -> Tensor:
        out, _ = self.self_attn(x, need_weights=False, **context)
        return self.dropout1(out)

    def _feed_forward(self, x: Tensor) -> Tensor:
        hidden = self.activation(self.linear1(x))  # (N, L, F)
        if self.ffn == "swiglu":
            hidden = hidden * self.linear3(x)  # the gate times the "up" projection
        return self.dropout2(self.linear2(self.dropout(hidden)))  # (N, L, E)

    @classmethod
    def from_torch(cls, module: nn.TransformerEncoderLayer) -> TransformerEncoderLayer:
        """Copy an ``nn.TransformerEncoderLayer`` made with ``batch_first=True``.

        In eval mode both give the same output for the same input.

        Raises:
            TypeError: If ``module`` is not an ``nn.TransformerEncoderLayer``.
            ValueError: If it is not batch-first or uses a custom activation.

        Examples:
            >>> import torch
            >>> from attention_ref import TransformerEncoderLayer
            >>> _ = torch.manual_seed(0)
            >>> theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
            >>> ours = TransformerEncoderLayer.from_torch(theirs).eval()
            >>> x = torch.randn(2, 5, 8)
            >>> torch.allclose(ours(x), theirs(x), atol=1e-5)
            True
        """
        if not isinstance(module, nn.TransformerEncoderLayer):
            raise TypeError(
                f"module: expected a torch.nn.TransformerEncoderLayer, got {type(module).__name__}"
            )
        if not module.self_attn.batch_first:
            raise ValueError("module: expected batch_first=True (ours is always batch-first)")
        activation = {1: "relu", 2: "gelu"}.get(module.activation_relu_or_gelu)
        if activation is None:
            raise ValueError("module: only the relu and gelu activations are supported")
        ours = cls(
            module.linear1.in_features,
            module.self_attn.num_heads,
            dim_feedforward=module.linear1.out_features,
            dropout=module.dropout.p,
            activation=activation,
            layer_norm_eps=module.norm1.eps,
            norm_first=module.norm_first,
            bias=module.linear1.bias is not None,
        ).to(device=module.linear1.weight.device, dtype=module.linear1.weight.dtype)
        ours.self_attn = MultiHeadAttention.from_torch(module.self_attn)
        for name in ("linear1", "linear2", "norm1", "norm2"):
            getattr(ours, name).load_state_dict(getattr(module, name).state_dict())
        return ours
