"""Figures of the self-attention page (docs/self-attention.md)."""

from __future__ import annotations

from matplotlib.figure import Figure

TOKENS = ["The", "cat", "sat"]  # the worked example's sentence, in both languages


def _worked_example():
    """X, W^Q, W^K, W^V of the page's worked example: the same numbers as its doctests."""
    import torch

    x = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    w_q = torch.tensor(
        [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
    )
    w_k = torch.tensor(
        [[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0]]
    )
    w_v = torch.tensor(
        [[0.0, 1.0, 0.0, 2.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0], [1.0, 1.0, 0.0, 0.0]]
    )
    return x, w_q, w_k, w_v


def fig_selfattn_weights(lang: str) -> Figure:
    """Heat map of the worked example's weights, ``attention_weights(X W^Q, X W^K)``."""
    from attention_ref import attention_weights
    from attention_ref.plotting import plot_attention

    text = {
        "en": {"title": "Weights of “The cat sat”", "x": "key", "y": "query"},
        "zh": {"title": "“The cat sat”的注意力权重", "x": "键", "y": "查询"},
    }[lang]
    x, w_q, w_k, _ = _worked_example()
    weights = attention_weights(x @ w_q, x @ w_k)  # (L, S) = (3, 3)

    fig = Figure(figsize=(3.8, 3.2), layout="constrained")
    ax = plot_attention(weights, TOKENS, ax=fig.subplots(), title=text["title"])
    ax.set(xlabel=text["x"], ylabel=text["y"])
    fig.colorbar(ax.images[0], ax=ax, shrink=0.8)
    return fig
