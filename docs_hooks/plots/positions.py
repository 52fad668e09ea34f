"""Figures of the positions page (docs/positions.md): sinusoidal table, ALiBi, experiment."""

from __future__ import annotations

from functools import cache

from matplotlib.figure import Figure

TEXT = {
    "en": {
        "position": "position p",
        "feature": "feature (sin at even, cos at odd indices)",
        "sin_title": "sinusoidal_positions(64, 64): fast waves on the left, slow on the right",
        "query": "query position i",
        "key": "key position j",
        "head": "head {h}: slope 1/{d}",
        "alibi_title": "alibi_bias(8, 8) with a causal mask: blank = masked (future keys)",
        "length": "evaluation length (trained on 8 tokens)",
        "accuracy": "accuracy: previous token",
        "trained": "trained length",
        "exp_title": "One attention layer, trained on 8 tokens, evaluated on longer sequences",
        "names": {
            "none": "no positions",
            "sinusoidal": "sinusoidal",
            "learned": "learned",
            "rope": "RoPE",
        },
        "row_label": "length",
    },
    "zh": {
        "position": "位置 p",
        "feature": "特征（偶数下标为 sin，奇数下标为 cos）",
        "sin_title": "sinusoidal_positions(64, 64)：左侧波动快，右侧波动慢",
        "query": "查询位置 i",
        "key": "键位置 j",
        "head": "头 {h}：斜率 1/{d}",
        "alibi_title": "alibi_bias(8, 8) 加因果掩码：空白处被掩码（未来的键）",
        "length": "评估长度（训练长度为 8）",
        "accuracy": "准确率（说出前一个词元）",
        "trained": "训练长度",
        "exp_title": "单层注意力：在 8 个词元的序列上训练，在更长的序列上评估",
        "names": {
            "none": "无位置信息",
            "sinusoidal": "正弦位置",
            "learned": "可学习位置",
            "rope": "RoPE",
        },
        "row_label": "长度",
    },
}

COLORS = {"none": "#9e9e9e", "sinusoidal": "#1e88e5", "learned": "#fb8c00", "rope": "#43a047"}
MARKERS = {"none": "x", "sinusoidal": "o", "learned": "s", "rope": "^"}


def fig_sinusoidal_positions(lang: str) -> Figure:
    """The sinusoidal table as a heatmap: positions down, features across."""
    from attention_ref import sinusoidal_positions

    text = TEXT[lang]
    P = sinusoidal_positions(64, 64)  # (positions, features)
    fig = Figure(figsize=(7.2, 4.2), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(P.numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set(xlabel=text["feature"], ylabel=text["position"])
    ax.set_title(text["sin_title"], fontsize=10)
    return fig


def fig_alibi_bias(lang: str) -> Figure:
    """ALiBi's bias for three of eight heads, masked causally: steep, medium and flat."""
    import torch

    from attention_ref import alibi_bias, causal_mask

    text = TEXT[lang]
    L, heads = 8, (0, 3, 7)
    bias = alibi_bias(8, L).masked_fill(~causal_mask(L), float("nan"))  # (H, L, L)
    fig = Figure(figsize=(8.6, 3.2), layout="constrained")
    axes = fig.subplots(1, len(heads))
    vmin = float(torch.nan_to_num(bias[list(heads)], nan=0.0).min())
    for ax, h in zip(axes, heads, strict=True):
        image = ax.imshow(bias[h].numpy(), cmap="Blues_r", vmin=vmin, vmax=0.0)
        if h == heads[0]:  # room for the numbers only where they are large enough to read
            for i in range(L):
                for j in range(i + 1):
                    value = float(bias[h, i, j])
                    color = "white" if value < vmin / 2 else "black"
                    ax.text(j, i, f"{value:g}", ha="center", va="center", fontsize=6.5, color=color)
        ax.set_xticks(range(L))
        ax.set_yticks(range(L))
        ax.tick_params(labelsize=7)
        ax.set(xlabel=text["key"])
        ax.set_title(text["head"].format(h=h, d=2 ** (h + 1)), fontsize=9.5)
    axes[0].set_ylabel(text["query"])
    fig.colorbar(image, ax=list(axes), shrink=0.8)
    fig.suptitle(text["alibi_title"], fontsize=10)
    return fig


@cache
def _experiment(lengths: tuple[int, ...]) -> dict[str, list[float]]:
    """The experiment's results, computed once for both languages."""
    from attention_ref.lab.length_generalization import length_generalization

    return length_generalization(lengths, seed=0)


def fig_length_generalization(lang: str) -> Figure:
    """Accuracy against length for the four encodings (seed 0), and the same numbers as a table."""
    from attention_ref.lab.length_generalization import ENCODINGS

    text = TEXT[lang]
    lengths = (8, 12, 16, 24, 32)
    results = _experiment(lengths)
    fig = Figure(figsize=(8.6, 4.6), layout="constrained")
    plot, table = fig.subfigures(2, 1, height_ratios=[3.0, 1.3])
    ax = plot.subplots()
    for name in ENCODINGS:
        ax.plot(
            lengths,
            results[name],
            marker=MARKERS[name],
            color=COLORS[name],
            label=text["names"][name],
        )
    ax.axvline(8, color="black", linewidth=0.8, linestyle=":")
    ax.text(8.3, 0.05, text["trained"], fontsize=8)
    ax.set(xlabel=text["length"], ylabel=text["accuracy"], ylim=(0, 1.03), xticks=lengths)
    ax.grid(alpha=0.3)
    ax.legend(loc="center right", fontsize=8)
    ax.set_title(text["exp_title"], fontsize=10)
    tab_ax = table.subplots()
    tab_ax.axis("off")
    cells = [[f"{results[name][i]:.2f}" for i in range(len(lengths))] for name in ENCODINGS]
    grid = tab_ax.table(
        cellText=cells,
        rowLabels=[text["names"][name] for name in ENCODINGS],
        colLabels=[f"{text['row_label']} {n}" for n in lengths],
        loc="center",
        cellLoc="center",
    )
    grid.auto_set_font_size(False)
    grid.set_fontsize(8.5)
    grid.scale(1.0, 1.2)
    return fig
