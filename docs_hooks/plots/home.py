"""Figures of the home page."""

from __future__ import annotations

from matplotlib.figure import Figure


def _tiny_input():
    """Three tokens, width 4, from a seeded generator: the same numbers on every machine."""
    import torch

    generator = torch.Generator().manual_seed(0)
    return torch.randn(3, 4, generator=generator, dtype=torch.float64)


def fig_attention_heatmap(lang: str) -> Figure:
    """Heat map of ``attention_weights(x, x)`` for a three-token sentence."""
    from attention_ref import attention_weights
    from attention_ref.plotting import plot_attention

    tokens = {"en": ["The", "cat", "sat"], "zh": ["猫", "坐", "了"]}[lang]
    text = {
        "en": {"title": "Attention weights", "x": "key", "y": "query"},
        "zh": {"title": "注意力权重", "x": "键 (key)", "y": "查询 (query)"},
    }[lang]
    x = _tiny_input()  # (L, E) = (3, 4)
    weights = attention_weights(x, x)  # (L, S) = (3, 3); query = key = x

    fig = Figure(figsize=(3.6, 3.0), layout="constrained")
    ax = plot_attention(weights, tokens, ax=fig.subplots(), title=text["title"])
    ax.set(xlabel=text["x"], ylabel=text["y"])
    fig.colorbar(ax.images[0], ax=ax, shrink=0.8)
    return fig
