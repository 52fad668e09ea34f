"""The Transformer encoder layer: self-attention and a feed-forward network, each wrapped
in a residual connection and LayerNorm ("Add & Norm").

Post-LN (the original paper, PyTorch's default):
    x = LayerNorm(x + SelfAttention(x));  x = LayerNorm(x + FeedForward(x))
Pre-LN (``norm_first=True``, most modern models):
    x = x + SelfAttention(LayerNorm(x));  x = x + FeedForward(LayerNorm(x))

Shape legend (batch-first): N batch, L length, E d_model, F dim_feedforward, H nhead.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_dropout
from .multihead import MultiHeadAttention
from .norms import LayerNorm

__all__ = ["TransformerEncoderLayer"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(nn.Module):
    r"""One encoder layer, batch-first, with the arguments of ``nn.TransformerEncoderLayer``.

    $$\begin{aligned} h &= \operatorname{LayerNorm}(x + \operatorname{MultiHead}(x, x, x)) \\
      y &= \operatorname{LayerNorm}(h + W_2\,\sigma(W_1 h + b_1) + b_2) \end{aligned}$$

    Args:
        d_model: E, the model width.
        nhead: H, the number of attention heads.
        dim_feedforward: F, the hidden width of the feed-forward network.
        dropout: Dropout after attention, inside and after the feed-forward network, and
            on the attention weights (training mode only).
        activation: ``"relu"`` or ``"gelu"``.
        layer_norm_eps: ``eps`` of both LayerNorms.
        norm_first: Pre-LN (normalize before each sub-layer) instead of Post-LN.
        bias: Biases in the linear layers and LayerNorms.

    Raises:
        ValueError: On an unknown ``activation`` or invalid sizes.

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
    ) -> None:
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(
                f"activation: expected one of {sorted(_ACTIVATIONS)}, got {activation!r}"
            )
        check_dropout(dropout, "dropout")
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.linear1 = nn.Linear(d_model, dim_feedforward, bias=bias)
        self.linear2 = nn.Linear(dim_feedforward, d_model, bias=bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout = nn.Dropout(dropout)  # inside the feed-forward network
        self.dropout1 = nn.Dropout(dropout)  # after attention
        self.dropout2 = nn.Dropout(dropout)  # after the feed-forward network
        self.activation_name = activation
        self.activation = _ACTIVATIONS[activation]
        self.norm_first = norm_first

    def forward(
        self, src: Tensor, *, attn_mask: Tensor | None = None, is_causal: bool = False
    ) -> Tensor:
        """Apply the layer to ``src`` ``(N, L, E)``; returns ``(N, L, E)``.

        ``attn_mask`` follows the SDPA convention (boolean True = may attend), so a
        padding mask from [`padding_mask`][attention_ref.padding_mask] can be passed as it is.
        """
        x = src
        if self.norm_first:  # Pre-LN
            x = x + self._attention(self.norm1(x), attn_mask, is_causal)
            x = x + self._feed_forward(self.norm2(x))
        else:  # Post-LN
            x = self.norm1(x + self._attention(x, attn_mask, is_causal))
            x = self.norm2(x + self._feed_forward(x))
        return x

    def _attention(self, x: Tensor, attn_mask: Tensor | None, is_causal: bool) -> Tensor:
        out, _ = self.self_attn(x, attn_mask=attn_mask, is_causal=is_causal, need_weights=False)
        return self.dropout1(out)

    def _feed_forward(self, x: Tensor) -> Tensor:
        hidden = self.dropout(self.activation(self.linear1(x)))  # (N, L, F)
        return self.dropout2(self.linear2(hidden))  # (N, L, E)

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
