"""Figures of the Transformer layer page (docs/transformer-layer.md): the layer in its two
arrangements, the residual stream through a deep stack, and the 2017 decoder layer beside
Llama's block."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyBboxPatch

LAYER_TEXT = {
    "en": {
        "post": "Post-LN: normalize after each addition",
        "pre": "Pre-LN: normalize each sublayer's input",
        "attention": "multi-head attention",
        "ffn": "feed-forward network",
        "norm": "LayerNorm",
        "residual": "residual",
    },
    "zh": {
        "post": "后归一化：每次相加之后归一化",
        "pre": "前归一化：先归一化子层的输入",
        "attention": "多头注意力",
        "ffn": "前馈网络",
        "norm": "层归一化",
        "residual": "残差",
    },
}
BOX_COLORS = {"attention": "#ffe0b2", "ffn": "#bbdefb", "norm": "#fff59d"}  # after the paper
BOX_W, BOX_H, PLUS_R, RESIDUAL_X = 2.6, 0.5, 0.2, -2.0

# One encoder layer, from the bottom up: (kind, y). "in"/"out" are the tensors x, h, y; "+" adds
# the residual that branched off at the last "in"; the others are boxes.
POST_LN = [
    ("in", 0.0, "x"), ("attention", 1.0), ("+", 2.0), ("norm", 2.8),
    ("in", 3.7, "h"), ("ffn", 4.7), ("+", 5.7), ("norm", 6.5), ("out", 7.4, "y"),
]  # fmt: skip
PRE_LN = [
    ("in", 0.0, "x"), ("norm", 0.9), ("attention", 1.8), ("+", 2.8),
    ("in", 3.7, "h"), ("norm", 4.6), ("ffn", 5.5), ("+", 6.5), ("out", 7.4, "y"),
]  # fmt: skip


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float]) -> None:
    ax.annotate(
        "", xy=end, xytext=start, arrowprops={"arrowstyle": "-|>", "color": "#37474f", "lw": 1.2}
    )


def _draw_layer(ax: Axes, steps: list[tuple], title: str, text: dict[str, str]) -> None:
    """One arrangement of the layer: boxes, the main path and the residual paths around them.

    A box is ``(kind, y)`` or ``(kind, y, label)``: ``kind`` picks the colour, ``label`` the
    key of its text in ``text`` (default ``kind``).
    """
    ax.set(xlim=(-2.6, 1.8), ylim=(-0.4, steps[-1][1] + 0.4), aspect="equal", title=title)
    ax.axis("off")
    top = None  # where the main path leaves the previous element
    branch = None  # where the current residual path branched off
    for kind, y, *name in steps:
        if kind in ("in", "out"):
            ax.text(0, y, f"${name[0]}$", ha="center", va="center", fontsize=13)
            bottom, new_top = y - 0.2, y + 0.2
            if kind == "in":
                branch = y + 0.35
        elif kind == "+":
            ax.add_patch(Circle((0, y), PLUS_R, facecolor="white", edgecolor="#37474f"))
            ax.text(0, y, "+", ha="center", va="center", fontsize=12)
            bottom, new_top = y - PLUS_R, y + PLUS_R
            # the residual: off the main path at `branch`, round the boxes, into the "+"
            ax.plot([0, RESIDUAL_X, RESIDUAL_X], [branch, branch, y], color="#37474f", lw=1.2)
            ax.plot([0], [branch], marker="o", markersize=4, color="#37474f")
            _arrow(ax, (RESIDUAL_X, y), (-PLUS_R, y))
            label, rotation = text["residual"], 90
            if not label.isascii():  # Chinese reads top to bottom, one character under another
                label, rotation = "\n".join(label), 0
            ax.text(
                RESIDUAL_X - 0.12, (branch + y) / 2, label, rotation=rotation,
                ha="right", va="center", fontsize=8.5, color="#546e7a", linespacing=1.1,
            )  # fmt: skip
        else:
            box = FancyBboxPatch(
                (-BOX_W / 2, y - BOX_H / 2), BOX_W, BOX_H, boxstyle="round,pad=0.02",
                facecolor=BOX_COLORS[kind], edgecolor="#37474f", lw=1.0,
            )  # fmt: skip
            ax.add_patch(box)
            ax.text(0, y, text[name[0] if name else kind], ha="center", va="center", fontsize=9.5)
            bottom, new_top = y - BOX_H / 2, y + BOX_H / 2
        if top is not None:
            _arrow(ax, (0, top), (0, bottom))
        top = new_top


def _side_by_side(
    size: tuple[float, float], text: dict[str, str], *layers: tuple[list[tuple], str]
) -> tuple[Figure, list[Axes]]:
    """A figure of ``size`` with two ``(layer, title)`` drawn side by side: it, and its axes."""
    fig = Figure(figsize=size, layout="constrained")
    axes = list(fig.subplots(1, 2))
    for ax, (layer, title) in zip(axes, layers, strict=True):
        _draw_layer(ax, layer, title, text)
    return fig, axes


def fig_layer_diagram(lang: str) -> Figure:
    """The encoder layer in its two arrangements, Post-LN and Pre-LN, read from the bottom up."""
    text = LAYER_TEXT[lang]
    pairs = (POST_LN, text["post"]), (PRE_LN, text["pre"])
    return _side_by_side((7.0, 5.6), text, *pairs)[0]


DEPTH = 24  # layers in the stack
WIDTH, HEADS, FF, LENGTH = 64, 4, 256, 16  # d_model, h, d_ff, tokens


def _residual_stream(norm_first: bool) -> tuple[list[float], list[float]]:
    """Send seeded tokens through DEPTH freshly initialized (untrained) encoder layers.

    Returns, averaged over the tokens, the RMS of the residual stream after each layer (index
    0: the input) and its cosine similarity to the input after each layer.
    """
    import torch

    from attention_ref import TransformerEncoderLayer

    with torch.random.fork_rng():  # seeded weights, without touching the caller's generator
        torch.manual_seed(0)
        layers = [
            TransformerEncoderLayer(WIDTH, HEADS, FF, dropout=0.0, norm_first=norm_first).eval()
            for _ in range(DEPTH)
        ]
        x = torch.randn(1, LENGTH, WIDTH)  # (N, L, E), RMS about 1
    rms, similarity = [x.pow(2).mean(-1).sqrt().mean().item()], [1.0]
    stream = x
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: one thread is fastest, and safe on a busy machine
    try:
        with torch.no_grad():
            for layer in layers:
                stream = layer(stream)  # (N, L, E)
                rms.append(stream.pow(2).mean(-1).sqrt().mean().item())
                similarity.append(torch.cosine_similarity(stream, x, dim=-1).mean().item())
    finally:
        torch.set_num_threads(threads)
    return rms, similarity


def fig_layer_residual(lang: str) -> Figure:
    """Post-LN vs Pre-LN at initialization: the residual stream's size, how much input is left."""
    text = {
        "en": {
            "rms": "RMS of the residual stream",
            "similarity": "cosine similarity to the input",
            "x": "layer",
            "input": "input",
            "post": "Post-LN",
            "pre": "Pre-LN",
        },
        "zh": {
            "rms": "残差流的均方根（RMS）",
            "similarity": "与输入的余弦相似度",
            "x": "层",
            "input": "输入",
            "post": "后归一化",
            "pre": "前归一化",
        },
    }[lang]
    fig = Figure(figsize=(7.6, 3.0), layout="constrained")
    left, right = fig.subplots(1, 2)
    for norm_first, color in ((False, "tab:blue"), (True, "tab:red")):
        label = text["pre" if norm_first else "post"]
        rms, similarity = _residual_stream(norm_first)
        left.plot(range(DEPTH + 1), rms, marker=".", color=color, label=label)
        right.plot(range(DEPTH + 1), similarity, marker=".", color=color, label=label)
    left.set(title=text["rms"], ylim=(0.0, None))
    right.set(title=text["similarity"], ylim=(0.0, 1.05))
    for ax in (left, right):
        ax.set_xticks([0, 6, 12, 18, 24], labels=[text["input"], "6", "12", "18", "24"])
        ax.set_xlabel(text["x"])
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    return fig


BLOCK_TEXT = {
    "en": {
        "decoder": "2017 decoder layer (Post-LN)",
        "llama": "Llama block (Pre-RMSNorm)",
        "masked": "masked self-attention",
        "cross": "cross-attention",
        "attention": "GQA attention + RoPE",
        "ffn": "feed-forward network",
        "swiglu": "SwiGLU feed-forward",
        "norm": "LayerNorm",
        "rmsnorm": "RMSNorm",
        "residual": "residual",
        "memory": "encoder\noutput",
    },
    "zh": {
        "decoder": "2017 年的解码器层（后归一化）",
        "llama": "Llama 块（RMSNorm 前归一化）",
        "masked": "掩码自注意力",
        "cross": "交叉注意力",
        "attention": "分组查询注意力 + RoPE",
        "ffn": "前馈网络",
        "swiglu": "SwiGLU 前馈网络",
        "norm": "层归一化",
        "rmsnorm": "RMSNorm",
        "residual": "残差",
        "memory": "编码器\n输出",
    },
}

# From the bottom up, as the layer diagram: (kind, y[, label]).
DECODER_2017 = [
    ("in", 0.0, "x"), ("attention", 1.0, "masked"), ("+", 2.0), ("norm", 2.8),
    ("in", 3.7, "h_1"), ("attention", 4.7, "cross"), ("+", 5.7), ("norm", 6.5),
    ("in", 7.4, "h_2"), ("ffn", 8.4), ("+", 9.4), ("norm", 10.2), ("out", 11.1, "y"),
]  # fmt: skip
LLAMA = [
    ("in", 0.0, "x"), ("norm", 1.3, "rmsnorm"), ("attention", 2.8), ("+", 4.3),
    ("in", 5.6, "h"), ("norm", 6.9, "rmsnorm"), ("ffn", 8.4, "swiglu"), ("+", 9.8),
    ("out", 11.1, "y"),
]  # fmt: skip


def fig_layer_blocks(lang: str) -> Figure:
    """The 2017 decoder layer beside a Llama block, read from the bottom up."""
    text = BLOCK_TEXT[lang]
    pairs = (DECODER_2017, text["decoder"]), (LLAMA, text["llama"])
    fig, (old, new) = _side_by_side((7.4, 8.0), text, *pairs)
    new.set_ylim(old.get_ylim())  # the same scale in both panels
    # the encoder's output enters the cross-attention from the right
    old.text(1.75, 4.1, text["memory"], ha="center", va="center", fontsize=8.5, color="#546e7a")
    _arrow(old, (1.75, 4.4), (1.3, 4.7))
    return fig
