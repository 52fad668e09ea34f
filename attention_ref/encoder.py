"""The Transformer encoder layer: self-attention and a feed-forward network, each wrapped
in a residual connection and LayerNorm ("Add & Norm").

Post-LN (the original paper, PyTorch's default):
    x = LayerNorm(x + SelfAttention(x));  x = LayerNorm(x + FeedForward(x))
Pre-LN (``norm_first=True``, most modern models):
    x = x + SelfAttention(LayerNorm(x));  x = x + FeedForward(LayerNorm(x))

The decoder-only blocks of GPT-2 and Llama are [`DecoderBlock`][attention_ref.DecoderBlock].

Shape legend (batch-first): N batch, L length, E d_model, F dim_feedforward, H nhead.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn

from ._checks import check_dropout, check_positive_int
from .feed_forward import activation_fn, feed_forward
from .interop import layer_from_torch
from .multihead import MultiHeadAttention
from .norms import LayerNorm

__all__ = ["TransformerEncoderLayer"]


class TransformerEncoderLayer(nn.Module):
    r"""One encoder layer, batch-first, with the arguments of ``nn.TransformerEncoderLayer``.

    $$\begin{aligned} h &= \operatorname{LayerNorm}(x + \operatorname{MultiHead}(x, x, x)) \\
      y &= \operatorname{LayerNorm}(h + \phi(h W_1 + b_1) W_2 + b_2) \end{aligned}$$

    with $\phi$ the activation; Post-LN, the default (``norm_first=True`` normalizes before
    each sub-layer instead).

    Args:
        d_model: E, the model width.
        nhead: H, the number of attention heads.
        dim_feedforward: F, the hidden width of the feed-forward network.
        dropout: Dropout after attention, inside and after the feed-forward network, and
            on the attention weights (training mode only).
        activation: ``"relu"``, ``"relu2"`` (relu squared), ``"gelu"`` (exact),
            ``"gelu_tanh"`` (the tanh approximation, GPT-2's ``gelu_new``), ``"silu"``, or any
            callable.
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
        activation: str | Callable[[Tensor], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        norm_first: bool = False,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.activation = activation_fn(activation)
        check_dropout(dropout, "dropout")
        check_positive_int("dim_feedforward", dim_feedforward)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.linear1 = nn.Linear(d_model, dim_feedforward, bias=bias)
        self.linear2 = nn.Linear(dim_feedforward, d_model, bias=bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout = nn.Dropout(dropout)  # inside the feed-forward network
        self.dropout1 = nn.Dropout(dropout)  # after attention
        self.dropout2 = nn.Dropout(dropout)  # after the feed-forward network
        self.norm_first = norm_first

    def forward(
        self, src: Tensor, *, attn_mask: Tensor | None = None, is_causal: bool = False
    ) -> Tensor:
        """Apply the layer to ``src`` ``(N, L, E)``; returns ``(N, L, E)``.

        ``attn_mask`` is PyTorch's ``src_mask`` in the SDPA convention (boolean True = may
        attend: invert PyTorch's), so a padding mask from
        [`padding_mask`][attention_ref.padding_mask] can be passed as it is. PyTorch's
        ``src_key_padding_mask`` has no argument here: pass
        ``to_sdpa_mask(src_key_padding_mask, "mha_key_padding_mask")`` as ``attn_mask`` (``&``
        it with another boolean mask). ``is_causal=True`` applies the causal mask, with
        ``attn_mask`` if given; in PyTorch it only hints that ``src_mask`` is causal.
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
        return self.dropout1(out)  # (N, L, E)

    def _feed_forward(self, x: Tensor) -> Tensor:
        out = feed_forward(x, self.linear1, self.linear2, self.activation, self.dropout)
        return self.dropout2(out)  # (N, L, E): linear2(dropout(act(linear1(x))))

    @classmethod
    def from_torch(cls, module: nn.TransformerEncoderLayer) -> TransformerEncoderLayer:
        """Copy an ``nn.TransformerEncoderLayer`` made with ``batch_first=True``.

        In eval mode both give the same output for the same input (with boolean masks
        inverted: ``~mask``). The copy is in training mode, as any new module. Another module
        raises a TypeError, one that is not batch-first a ValueError.

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
        return layer_from_torch(cls, module, nn.TransformerEncoderLayer)
