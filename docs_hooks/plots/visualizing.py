"""Figures of the page "Visualizing attention": the heads of a toy model, trained at build time.

The model (attention_ref.lab.toy_tasks) is trained once per build, seeded, on one CPU thread
(about a second); both languages and all figures share it.
"""

from __future__ import annotations

from functools import cache

from matplotlib.figure import Figure

# The sequence the page's doctests use: token ids 2 0 5 9 1 4.
TOKEN_IDS = [2, 0, 5, 9, 1, 4]
VOCABULARY = list("ABCDEFGHIJ")  # both languages: the letters the code and its output use
TEXT = {
    "en": {
        "key": "key",
        "query": "query",
        "head": "head {h}",
        "previous": "head {h}: previous token",
        "mirror": "head {h}: mirrored token",
        "average": "average of the 2 heads",
    },
    "zh": {
        "key": "键",
        "query": "查询",
        "head": "头 {h}",
        "previous": "头 {h}：前一个词元",
        "mirror": "头 {h}：镜像位置的词元",
        "average": "两个头的平均",
    },
}


@cache
def _weights(steps: int):
    """Per-head weights ``(H, L, L)`` of the toy model after ``steps`` Adam steps (seed 0)."""
    import torch

    from attention_ref.lab.toy_tasks import train_toy_model

    model = train_toy_model(steps)  # steps=0: the initial weights
    with torch.no_grad():
        _, weights = model(torch.tensor([TOKEN_IDS]))  # (1, H, L, L)
    return weights[0]


def _title(weights, h: int, lang: str) -> str:
    """Name a head after the pattern its rows' maxima follow, if any."""
    import torch

    length = weights.size(-1)
    positions = torch.arange(length)
    argmax = weights[h].argmax(dim=-1)
    if torch.equal(argmax, (positions - 1).clamp(min=0)):
        kind = "previous"
    elif torch.equal(argmax, positions.flip(0)):
        kind = "mirror"
    else:
        kind = "head"
    return TEXT[lang][kind].format(h=h + 1)


def _heads_figure(weights, lang: str, titles: list[str]) -> Figure:
    """``plot_heads`` (the helper the page shows), with the axes named in ``lang``."""
    import matplotlib.pyplot as plt

    from attention_ref.plotting import plot_heads

    tokens = [VOCABULARY[i] for i in TOKEN_IDS]
    fig = plot_heads(weights, tokens, titles=titles)
    plt.close(fig)  # keep the figure, drop pyplot's reference to it
    for ax in fig.axes:
        ax.set_xlabel(TEXT[lang]["key"])
    fig.axes[0].set_ylabel(TEXT[lang]["query"])
    fig.tight_layout()
    return fig


def fig_vis_trained_heads(lang: str) -> Figure:
    """The two heads of the trained toy model: one looks back a step, one at the mirror."""
    weights = _weights(150)  # (H, L, L)
    titles = [_title(weights, h, lang) for h in range(weights.size(0))]
    return _heads_figure(weights, lang, titles)


def fig_vis_untrained_heads(lang: str) -> Figure:
    """The same model before training: nearly uniform rows."""
    weights = _weights(0)  # (H, L, L)
    titles = [TEXT[lang]["head"].format(h=h + 1) for h in range(weights.size(0))]
    return _heads_figure(weights, lang, titles)


def fig_vis_averaged(lang: str) -> Figure:
    """The trained heads averaged, as nn.MultiheadAttention returns them by default."""
    from attention_ref.plotting import plot_attention

    weights = _weights(150).mean(dim=0)  # (L, L): average_attn_weights=True
    tokens = [VOCABULARY[i] for i in TOKEN_IDS]
    fig = Figure(figsize=(4.2, 4.2), layout="constrained")
    ax = plot_attention(weights, tokens, ax=fig.subplots(), title=TEXT[lang]["average"])
    ax.set(xlabel=TEXT[lang]["key"], ylabel=TEXT[lang]["query"])
    return fig
