"""Heatmaps of attention weights, with the tokens on the axes.

Needs matplotlib (``pip install -e ".[plot]"`` in a checkout, or ``pip install matplotlib``),
imported only when a function is called. The colour scale is fixed from 0 (palest) to 1
(darkest blue) whatever the weights, so that any two heatmaps compare.

Shape legend: H heads, L query length, S key length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from torch import Tensor

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_attention", "plot_heads"]


def plot_attention(
    weights: Tensor,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    annotate: bool = True,
) -> Axes:
    """Draw one ``(L, S)`` attention matrix: row = query, column = key.

    Args:
        weights: ``(L, S)`` weights, e.g. one head of
            [`attention_weights`][attention_ref.attention_weights].
        query_tokens: L labels for the rows.
        key_tokens: S labels for the columns; defaults to ``query_tokens``.
        ax: Draw into this matplotlib ``Axes`` (a new figure otherwise).
        title: Title above the heatmap.
        annotate: Write each weight in its cell.

    Returns:
        The ``Axes`` drawn into.

    Raises:
        ValueError: If ``weights`` is not 2-D or the labels do not match its shape.

    Examples:
        >>> import torch
        >>> from attention_ref.plotting import plot_attention
        >>> from attention_ref import attention_weights
        >>> w = attention_weights(torch.eye(3), torch.eye(3))
        >>> ax = plot_attention(w, ["The", "cat", "sat"])
        >>> [t.get_text() for t in ax.get_xticklabels()]
        ['The', 'cat', 'sat']
    """
    import matplotlib.pyplot as plt

    key_tokens = query_tokens if key_tokens is None else key_tokens
    if weights.dim() != 2 or tuple(weights.shape) != (len(query_tokens), len(key_tokens)):
        raise ValueError(
            f"weights: expected shape (L, S) = ({len(query_tokens)}, {len(key_tokens)}) "
            f"to match the tokens, got {tuple(weights.shape)}"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * len(key_tokens) + 1.5, 0.6 * len(query_tokens) + 1))
    data = weights.detach().cpu().float().numpy()
    ax.imshow(data, cmap="Blues", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(key_tokens)), labels=list(key_tokens), rotation=45, ha="right")
    ax.set_yticks(range(len(query_tokens)), labels=list(query_tokens))
    if annotate:
        for i, row in enumerate(data):
            for j, value in enumerate(row):
                color = "white" if value > 0.6 else "black"
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8, color=color)
    if title:
        ax.set_title(title)
    return ax


def plot_heads(
    weights: Tensor,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    *,
    titles: Sequence[str] | None = None,
    annotate: bool = True,
) -> Figure:
    """One heatmap per head, side by side, at most 4 to a row.

    Args:
        weights: ``(H, L, S)``, e.g. one batch element of ``MultiHeadAttention``'s weights.
        query_tokens: L labels for the rows.
        key_tokens: S labels for the columns; defaults to ``query_tokens``.
        titles: One title per head; defaults to "head 1", "head 2", ...
        annotate: Write each weight in its cell.

    Returns:
        The matplotlib ``Figure``.

    Raises:
        ValueError: If ``weights`` is not 3-D, ``titles`` has the wrong length, or the
            labels do not match its shape.

    Examples:
        >>> import torch
        >>> from attention_ref.plotting import plot_heads
        >>> w = torch.full((2, 3, 3), 1 / 3)
        >>> fig = plot_heads(w, ["a", "b", "c"])
        >>> len(fig.axes)
        2
    """
    import matplotlib.pyplot as plt

    if weights.dim() != 3:
        raise ValueError(f"weights: expected (H, L, S), got shape {tuple(weights.shape)}")
    heads = weights.size(0)
    titles = [f"head {h + 1}" for h in range(heads)] if titles is None else list(titles)
    if len(titles) != heads:
        raise ValueError(f"titles: expected {heads} titles, got {len(titles)}")
    cols = min(heads, 4)
    rows = math.ceil(heads / cols)
    size = 0.55 * weights.size(-1) + 1.2
    fig, axes = plt.subplots(rows, cols, figsize=(cols * size, rows * size), squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h < heads:
            plot_attention(
                weights[h], query_tokens, key_tokens, ax=ax, title=titles[h], annotate=annotate
            )
        else:
            ax.axis("off")
    fig.tight_layout()
    return fig
