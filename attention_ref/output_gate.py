"""A gate on the heads' output: each feature of the merged heads times a sigmoid of the input.

Qwen3-Next's full-attention layers (and Qwen3.5's) compute, besides the queries, a gate from
the same input token and multiply the merged heads by its sigmoid before the output
projection: $o \\leftarrow o \\odot \\sigma(x W^G)$. A head can then switch itself off for a
token, instead of having to put its weight somewhere (on a sink, say).

Shape legend: N batch, L queries, E model width, H heads, D head width.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["OutputGate"]


class OutputGate(nn.Module):
    r"""$o \odot \sigma(x W^G + b^G)$: an elementwise sigmoid gate on the merged heads.

    Args:
        embed_dim: E, the width of the layer's input ``x``.
        width: H * D, the width of the merged heads.
        bias: Learn a bias $b^G$.
        device: Where to create the projection $W^G$ (``proj``).
        dtype: Its dtype.

    Examples:
        >>> import torch
        >>> from attention_ref.output_gate import OutputGate
        >>> gate = OutputGate(embed_dim=4, width=6, bias=False)
        >>> _ = torch.nn.init.zeros_(gate.proj.weight)  # sigmoid(0) = 1/2 everywhere
        >>> gate(torch.ones(1, 2, 6), torch.randn(1, 2, 4))[0, 0].tolist()  # heads, x
        [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    """

    def __init__(
        self,
        embed_dim: int,
        width: int,
        *,
        bias: bool = False,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.proj = nn.Linear(embed_dim, width, bias=bias, device=device, dtype=dtype)  # W^G

    def forward(self, heads: Tensor, x: Tensor) -> Tensor:
        """``heads`` ``(N, L, H * D)`` gated by ``x`` ``(N, L, E)``; returns ``(N, L, H * D)``."""
        return heads * torch.sigmoid(self.proj(x))
