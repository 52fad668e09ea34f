"""Figures of the home page."""

from __future__ import annotations

from matplotlib.figure import Figure


def fig_home_example_weights(lang: str) -> Figure:
    """Heat map of the home page's worked example: two queries, three keys."""
    import torch

    from attention_ref import attention_weights
    from attention_ref.plotting import plot_attention

    text = {
        "en": {"title": "attention_weights(q, k)", "x": "key", "y": "query"},
        "zh": {"title": "attention_weights(q, k)", "x": "键", "y": "查询"},
    }[lang]
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # (L, E) = (2, 2), as in the doctest
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # (S, E) = (3, 2)
    weights = attention_weights(q, k)  # (L, S) = (2, 3); each row sums to 1

    fig = Figure(figsize=(3.6, 2.6), layout="constrained")
    ax = plot_attention(
        weights, ["q[0]", "q[1]"], ["k[0]", "k[1]", "k[2]"], ax=fig.subplots(), title=text["title"]
    )
    ax.set(xlabel=text["x"], ylabel=text["y"])
    fig.colorbar(ax.images[0], ax=ax, shrink=0.8)
    return fig
