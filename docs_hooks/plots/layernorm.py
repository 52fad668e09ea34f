"""Figures of the LayerNorm page: which cells share statistics, and the statistics themselves."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

TEXT = {
    "en": {
        "layer": "LayerNorm: one mean and variance\nper token (row), over its d_model features",
        "batch": "BatchNorm: one mean and variance\nper feature (column), over the batch",
        "features": "feature (d_model)",
        "tokens": "token (batch × sequence)",
        "seq": "seq {n}",
        "pad": "pad",
        "note": "hatched = padding: BatchNorm mixes it into every column's statistics",
        "mean": "mean of each token",
        "std": "standard deviation of each token",
        "before": "before",
        "after": "after LayerNorm",
        "token": "token",
        "stats_title": "Per-token statistics of x = randn(8, 16) · scale + shift",
    },
    "zh": {
        "layer": "LayerNorm：每个词元（行）一组均值和方差，\n在它的 d_model 个特征上计算",
        "batch": "BatchNorm：每个特征（列）一组均值和方差，\n在整个批上计算",
        "features": "特征（d_model）",
        "tokens": "词元（批 × 序列）",
        "seq": "序列 {n}",
        "pad": "填充",
        "note": "斜线 = 填充位置：BatchNorm 会把它们混进每一列的统计量",
        "mean": "每个词元的均值",
        "std": "每个词元的标准差",
        "before": "归一化前",
        "after": "LayerNorm 之后",
        "token": "词元",
        "stats_title": "x = randn(8, 16) · scale + shift 的逐词元统计量",
    },
}

# Two sequences of three tokens; the second has one real token and two padding positions.
ROWS = [(1, "t1"), (1, "t2"), (1, "t3"), (2, "t1"), (2, "pad"), (2, "pad")]
FEATURES = 8


def _grid(ax: Axes, by_row: bool, text: dict) -> None:
    """Colour the cells that share one mean and variance with the same colour."""
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    for i, (_seq, token) in enumerate(ROWS):
        for j in range(FEATURES):
            group = i if by_row else j
            ax.add_patch(
                Rectangle(
                    (j, i),
                    1,
                    1,
                    facecolor=palette(group % 10),
                    alpha=0.55,
                    edgecolor="white",
                    linewidth=1.5,
                    hatch="///" if token == "pad" else None,
                )
            )
    ax.set_xlim(0, FEATURES)
    ax.set_ylim(len(ROWS), 0)
    ax.set_aspect("equal")
    labels = [
        f"{text['seq'].format(n=seq)}: {text['pad'] if token == 'pad' else token}"
        for seq, token in ROWS
    ]
    ax.set_yticks([i + 0.5 for i in range(len(ROWS))], labels=labels)
    ax.set_xticks([j + 0.5 for j in range(FEATURES)], labels=[str(j + 1) for j in range(FEATURES)])
    ax.tick_params(length=0)
    ax.axhline(3, color="black", linewidth=1.5)  # between the two sequences
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set(xlabel=text["features"], ylabel=text["tokens"])
    ax.set_title(text["layer" if by_row else "batch"], fontsize=9.5)
    # One bracket per group: an arrow along the row (LayerNorm) or down the column (BatchNorm).
    if by_row:
        ax.annotate(
            "", xy=(FEATURES - 0.15, 0.5), xytext=(0.15, 0.5), arrowprops={"arrowstyle": "<->"}
        )
    else:
        ax.annotate(
            "", xy=(0.5, len(ROWS) - 0.15), xytext=(0.5, 0.15), arrowprops={"arrowstyle": "<->"}
        )


def fig_norm_axes(lang: str) -> Figure:
    """LayerNorm vs BatchNorm on a (tokens × features) grid: who shares statistics."""
    text = TEXT[lang]
    fig = Figure(figsize=(8.6, 3.9), layout="constrained")
    left, right = fig.subplots(1, 2)
    _grid(left, True, text)
    _grid(right, False, text)
    right.set_ylabel("")
    fig.text(0.5, 0.0, text["note"], ha="center", va="bottom", fontsize=9)
    return fig


def fig_norm_stats(lang: str) -> Figure:
    """Mean and standard deviation of each token before and after attention_ref's LayerNorm."""
    import torch

    from attention_ref import LayerNorm

    text = TEXT[lang]
    generator = torch.Generator().manual_seed(0)
    scale = torch.linspace(0.5, 8.0, 8)[:, None]  # (L, 1): every token on its own scale
    shift = torch.linspace(-6.0, 6.0, 8)[:, None]
    x = torch.randn(8, 16, generator=generator) * scale + shift  # (L, E)
    with torch.no_grad():
        y = LayerNorm(16)(x)
    tokens = range(1, 9)
    fig = Figure(figsize=(8.6, 3.2), layout="constrained")
    ax_mean, ax_std = fig.subplots(1, 2)
    for ax, stat, title in (
        (ax_mean, lambda t: t.mean(-1).tolist(), text["mean"]),
        (ax_std, lambda t: t.var(-1, unbiased=False).sqrt().tolist(), text["std"]),
    ):
        width = 0.38
        ax.bar(
            [t - width / 2 for t in tokens], stat(x), width, label=text["before"], color="#90a4ae"
        )
        ax.bar(
            [t + width / 2 for t in tokens], stat(y), width, label=text["after"], color="#3949ab"
        )
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(list(tokens))
        ax.set(title=title, xlabel=text["token"])
    ax_mean.legend(loc="upper left", fontsize=8)
    fig.suptitle(text["stats_title"], fontsize=10)
    return fig
