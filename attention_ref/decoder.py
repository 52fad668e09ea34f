"""The 2017 Transformer decoder layer: masked self-attention, cross-attention to the
encoder's output (the "memory"), and a feed-forward network, each with Add & Norm.

Post-LN (the original paper, PyTorch's default):
    x = LN(x + SelfAttn(x, causal));  x = LN(x + CrossAttn(x, memory));  x = LN(x + FFN(x))
Pre-LN (``norm_first=True``): x = x + SubLayer(LN(x)) for each of the three.

Shape legend (batch-first): N batch, T target length, S memory (source) length,
E d_model, F dim_feedforward, H nhead.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn

from ._checks import check_dropout, check_positive_int
from .feed_forward import activation_fn, feed_forward
from .interop import layer_from_torch
from .multihead import MultiHeadAttention
from .norms import LayerNorm

__all__ = ["TransformerDecoderLayer"]


class TransformerDecoderLayer(nn.Module):
    r"""One decoder layer, batch-first, with the arguments of ``nn.TransformerDecoderLayer``.

    $$\begin{aligned} h_1 &= \operatorname{LayerNorm}(x + \operatorname{MultiHead}(x, x, x;\ M)) \\
      h_2 &= \operatorname{LayerNorm}(h_1 + \operatorname{MultiHead}(h_1, m, m)) \\
      y &= \operatorname{LayerNorm}(h_2 + \operatorname{FFN}(h_2)) \end{aligned}$$

    with $M$ the target mask (``tgt_mask`` and/or the causal mask of ``tgt_is_causal=True``;
    none by default) and $m$ the encoder's output (memory); Post-LN, the default
    (``norm_first=True`` normalizes before each sub-layer instead).

    Args:
        d_model: E, the model width.
        nhead: H, the number of heads of both attentions.
        dim_feedforward: F, the hidden width of the feed-forward network.
        dropout: Dropout after each sub-layer, inside the feed-forward network and on the
            attention weights (training mode only).
        activation: ``"relu"``, ``"relu2"``, ``"gelu"``, ``"gelu_tanh"``, ``"silu"`` or a
            callable.
        layer_norm_eps: ``eps`` of the three LayerNorms.
        norm_first: Pre-LN instead of Post-LN.
        bias: Biases in the linear layers and LayerNorms.

    Raises:
        ValueError: On an unknown ``activation`` or invalid sizes.

    Examples:
        >>> import torch
        >>> from attention_ref import TransformerDecoderLayer
        >>> _ = torch.manual_seed(0)
        >>> layer = TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16).eval()
        >>> tgt, memory = torch.randn(2, 4, 8), torch.randn(2, 6, 8)  # (N, T, E), (N, S, E)
        >>> layer(tgt, memory, tgt_is_causal=True).shape
        torch.Size([2, 4, 8])
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
        self.multihead_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.linear1 = nn.Linear(d_model, dim_feedforward, bias=bias)
        self.linear2 = nn.Linear(dim_feedforward, d_model, bias=bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout = nn.Dropout(dropout)  # inside the feed-forward network
        self.dropout1 = nn.Dropout(dropout)  # after self-attention
        self.dropout2 = nn.Dropout(dropout)  # after cross-attention
        self.dropout3 = nn.Dropout(dropout)  # after the feed-forward network
        self.norm_first = norm_first

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        *,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
    ) -> Tensor:
        """Apply the layer to ``tgt`` ``(N, T, E)``, T target tokens, and ``memory`` ``(N, S, E)``.

        Masks follow the SDPA convention (boolean True = may attend; PyTorch's
        ``nn.TransformerDecoderLayer`` means the opposite): ``tgt_mask`` broadcastable to
        ``(N, H, T, T)``, ``memory_mask`` to ``(N, H, T, S)``. ``tgt_is_causal=True``
        applies the causal mask itself, with ``tgt_mask`` if given, unlike PyTorch, where it
        only hints that ``tgt_mask`` is causal. PyTorch's ``tgt_key_padding_mask`` and
        ``memory_key_padding_mask`` have no argument here: pass
        ``to_sdpa_mask(padding, "mha_key_padding_mask")`` in ``tgt_mask`` or ``memory_mask``
        (``&`` it with another boolean mask).

        Returns:
            ``(N, T, E)``.
        """
        x = tgt
        if self.norm_first:  # Pre-LN
            x = x + self._self_block(self.norm1(x), tgt_mask, tgt_is_causal)
            x = x + self._cross_block(self.norm2(x), memory, memory_mask)
            x = x + self._feed_forward(self.norm3(x))
        else:  # Post-LN
            x = self.norm1(x + self._self_block(x, tgt_mask, tgt_is_causal))
            x = self.norm2(x + self._cross_block(x, memory, memory_mask))
            x = self.norm3(x + self._feed_forward(x))
        return x

    def _self_block(self, x: Tensor, mask: Tensor | None, is_causal: bool) -> Tensor:
        out, _ = self.self_attn(x, attn_mask=mask, is_causal=is_causal, need_weights=False)
        return self.dropout1(out)  # (N, T, E)

    def _cross_block(self, x: Tensor, memory: Tensor, mask: Tensor | None) -> Tensor:
        out, _ = self.multihead_attn(x, memory, memory, attn_mask=mask, need_weights=False)
        return self.dropout2(out)  # (N, T, E): each target token reads the source

    def _feed_forward(self, x: Tensor) -> Tensor:
        out = feed_forward(x, self.linear1, self.linear2, self.activation, self.dropout)
        return self.dropout3(out)  # (N, T, E)

    @classmethod
    def from_torch(cls, module: nn.TransformerDecoderLayer) -> TransformerDecoderLayer:
        """Copy an ``nn.TransformerDecoderLayer`` made with ``batch_first=True``.

        In eval mode both give the same output for the same input (with boolean masks
        inverted: ``~mask``). The copy is in training mode, as any new module. Another module
        raises a TypeError, one that is not batch-first a ValueError.

        Examples:
            >>> import torch
            >>> from attention_ref import TransformerDecoderLayer
            >>> _ = torch.manual_seed(0)
            >>> theirs = torch.nn.TransformerDecoderLayer(8, 2, 16, batch_first=True).eval()
            >>> ours = TransformerDecoderLayer.from_torch(theirs).eval()
            >>> tgt, memory = torch.randn(2, 4, 8), torch.randn(2, 6, 8)
            >>> torch.allclose(ours(tgt, memory), theirs(tgt, memory), atol=1e-5)
            True
        """
        return layer_from_torch(cls, module, nn.TransformerDecoderLayer)
