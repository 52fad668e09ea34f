"""Figures of the positions page (docs/positions.md): sinusoidal table, one RoPE rotation, ALiBi,
experiment."""

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
        "rope_panel": "query at m = {m}, key at n = {n}: m − n = {d}",
        "rope_query": "q at m = {m}",
        "rope_key": "k at n = {n}",
        "rope_start": "dashed: the same pairs at position 0",
        "rope_angle": "angle between them {a:.1f}°",
        "rope_score": "score of this pair {s:.3f}",
        "rope_title": (
            "RoPE turns the pair (x₂, x₃) of a D = 8 head by p·θ₁, θ₁ = 10000^(−2/8) = 0.1 rad:"
            "\nthe same offset m − n gives the same angle and the same score"
        ),
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
        "rope_panel": "查询在 m = {m}，键在 n = {n}：m − n = {d}",
        "rope_query": "q（m = {m}）",
        "rope_key": "k（n = {n}）",
        "rope_start": "虚线：同样的特征对在位置 0",
        "rope_angle": "两者夹角 {a:.1f}°",
        "rope_score": "这一对的分数 {s:.3f}",
        "rope_title": (
            "RoPE 把 D = 8 的头中的特征对 (x₂, x₃) 旋转 p·θ₁，θ₁ = 10000^(−2/8) = 0.1 弧度："
            "\n偏移 m − n 相同，夹角和分数就相同"
        ),
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


def _rope_pair(pair: tuple[float, float], position: int):
    """The pair (x_2, x_3) of a D = 8 vector, turned by apply_rope at one position."""
    import torch

    from attention_ref import apply_rope

    x = torch.zeros(1, 8, dtype=torch.float64)  # (L = 1, D = 8): only features 2 and 3 set
    x[0, 2:4] = torch.tensor(pair, dtype=torch.float64)
    y = apply_rope(x, torch.tensor([position]), interleaved=True)  # pairs (2i, 2i + 1)
    return y[0, 2:4]  # (2,)


def fig_rope_rotation(lang: str) -> Figure:
    """One RoPE rotation: a query pair at position m and a key pair at n, for three (m, n).

    The rotated vectors come from ``apply_rope`` (interleaved pairs, so pair 1 is features 2
    and 3, turned by 0.1 rad per position). The first two panels share the offset m - n = 3 and
    show the same angle and score; the third has another offset.
    """
    import math

    from matplotlib.patches import Arc

    text = TEXT[lang]
    q0, k0 = (0.95, 0.3), (0.2, 0.9)  # the query's and the key's pair at position 0
    cases = [(4, 1), (12, 9), (12, 6)]
    colors = {"q": "#1e88e5", "k": "#e53935"}
    fig = Figure(figsize=(9.6, 3.4), layout="constrained")
    axes = fig.subplots(1, len(cases))
    for ax, (m, n) in zip(axes, cases, strict=True):
        q, k = _rope_pair(q0, m), _rope_pair(k0, n)
        starts = {"q": _rope_pair(q0, 0), "k": _rope_pair(k0, 0)}
        ends = {"q": q, "k": k}
        labels = {"q": text["rope_query"].format(m=m), "k": text["rope_key"].format(n=n)}
        degrees = {}
        for name in ("q", "k"):
            start, end, color = starts[name], ends[name], colors[name]
            ax.annotate(
                "", xy=(float(start[0]), float(start[1])), xytext=(0, 0),
                arrowprops={"arrowstyle": "->", "color": color, "alpha": 0.35, "ls": "--"},
            )  # fmt: skip
            ax.annotate(
                "", xy=(float(end[0]), float(end[1])), xytext=(0, 0),
                arrowprops={"arrowstyle": "-|>", "color": color, "lw": 2},
            )  # fmt: skip
            a0 = math.degrees(math.atan2(float(start[1]), float(start[0])))
            a1 = math.degrees(math.atan2(float(end[1]), float(end[0])))
            degrees[name] = a1
            radius = 0.55 if name == "q" else 0.4
            ax.add_patch(
                Arc((0, 0), 2 * radius, 2 * radius, theta1=a0, theta2=a1, color=color, lw=1)
            )
        for name, other in (("q", "k"), ("k", "q")):
            end = ends[name]
            left_of_other = degrees[name] > degrees[other]  # the more counterclockwise one
            ax.text(
                1.06 * float(end[0]), 1.06 * float(end[1]), labels[name], color=colors[name],
                fontsize=8.5, ha="right" if left_of_other else "left", va="bottom",
            )  # fmt: skip
        low, high = sorted((degrees["q"], degrees["k"]))
        ax.add_patch(Arc((0, 0), 1.5, 1.5, theta1=low, theta2=high, color="black", lw=1.6))
        score = float(q @ k)
        ax.text(0.12, -0.3, text["rope_angle"].format(a=high - low), ha="center", fontsize=8.5)
        ax.text(0.12, -0.48, text["rope_score"].format(s=score), ha="center", fontsize=8.5)
        ax.text(0.12, -0.66, text["rope_start"], ha="center", fontsize=7.5, color="#757575")
        ax.set(xlim=(-1.35, 1.5), ylim=(-0.75, 1.3), aspect="equal", xticks=[], yticks=[])
        ax.axhline(0, color="#bdbdbd", lw=0.6)
        ax.axvline(0, color="#bdbdbd", lw=0.6)
        ax.set_title(text["rope_panel"].format(m=m, n=n, d=m - n), fontsize=9)
    fig.suptitle(text["rope_title"], fontsize=10)
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
