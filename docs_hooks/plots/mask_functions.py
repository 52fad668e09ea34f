"""Figures of the "Masks as functions" page: each mask function, windows, tiles, FlexAttention.

The masks are drawn from ``attention_ref.mask_mods`` through ``create_mask``; the measured
figures from docs/bench-results/cpu.json (its ``"flex_cpu"`` part), never measured here.
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

MASK_COLORS = ListedColormap(["#eceff1", "#3949ab"])  # False (masked), True (may attend)
TILE_EMPTY, TILE_PARTIAL, TILE_FULL = "#78909c", "#ffb300", "#d81b60"

TEXT = {
    "en": {
        "query": "query q",
        "key": "key kv",
        "legend": "dark = may attend (True); light = masked (False)",
        "gallery_title": "Mask functions on L = S = 12 positions (create_mask)",
        "documents": "documents [5, 4, 3]",
        "ours": "ours: dilated_sliding_window(3, 2)",
        "gym": "attention-gym: window_size=4, dilation=2",
        "dilated_title": "Dilated windows: causal, 3 keys vs two-sided, distance ≤ 4",
        "tiles_title": "Tiles of 4 × 4 on L = S = 16: which ones are computed",
        "empty": "empty: skipped",
        "partial": "partly masked: masked inside",
        "full": "full: no mask needed",
        "sparsity": "{value:.4g} % of tiles empty",
    },
    "zh": {
        "query": "查询 q",
        "key": "键 kv",
        "legend": "深色 = 可以关注（True）；浅色 = 被掩码（False）",
        "gallery_title": "L = S = 12 个位置上的掩码函数（create_mask）",
        "documents": "文档长度 [5, 4, 3]",
        "ours": "本库：dilated_sliding_window(3, 2)",
        "gym": "attention-gym：window_size=4，dilation=2",
        "dilated_title": "空洞窗口：因果、3 个键，与双向、距离 ≤ 4 的对比",
        "tiles_title": "L = S = 16 上 4×4 的分数块：哪些需要计算",
        "empty": "全空：跳过",
        "partial": "部分被掩码：块内再掩码",
        "full": "全满：无需掩码",
        "sparsity": "{value:.4g}% 的分数块为空",
    },
}


def _draw(ax: Axes, mask, title: str, text: dict, ticks: int = 4) -> None:
    """One (L, S) bool mask as a grid of cells, a tick every ``ticks`` positions."""
    L, S = mask.shape
    ax.imshow(mask.int().numpy(), cmap=MASK_COLORS, vmin=0, vmax=1)
    ax.set_xticks(range(0, S, ticks))
    ax.set_yticks(range(0, L, ticks))
    ax.set_xticks([x - 0.5 for x in range(1, S)], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, L)], minor=True)
    ax.grid(which="minor", color="white", linewidth=0.5)
    ax.tick_params(which="minor", length=0)
    ax.set_title(title, fontsize=9, family=["DejaVu Sans Mono", "Noto Sans CJK SC"])
    ax.set(xlabel=text["key"], ylabel=text["query"])


def _gallery_masks(text: dict) -> list[tuple[str, object]]:
    """(title, mask_mod) of each mask function, as the page introduces them."""
    import torch

    from attention_ref.mask_mods import (
        and_masks,
        causal,
        chunked,
        dilated_sliding_window,
        document,
        padding,
        prefix_lm,
        sliding_window,
    )

    ids = torch.tensor([0] * 5 + [1] * 4 + [2] * 3)  # three packed documents
    return [
        ("causal()", causal()),
        ("sliding_window(4)", sliding_window(4)),
        ("prefix_lm(4)", prefix_lm(4)),
        ("chunked(4)", chunked(4)),
        ("dilated_sliding_window(3, 2)", dilated_sliding_window(3, 2)),
        ("document(ids)", document(ids)),
        (
            f"and_masks(causal(), document(ids))\n{text['documents']}",
            and_masks(causal(), document(ids)),
        ),
        ("padding([9])", padding([9])),
    ]


def fig_mask_functions_gallery(lang: str) -> Figure:
    """Every mask function of attention_ref.mask_mods on 12 positions."""
    from attention_ref.mask_mods import create_mask

    text = TEXT[lang]
    fig = Figure(figsize=(9.0, 6.0), layout="constrained")
    fig.get_layout_engine().set(h_pad=0.1)
    for ax, (title, mod) in zip(fig.subplots(2, 4).flat, _gallery_masks(text), strict=True):
        _draw(ax, create_mask(mod, 1, 1, 12, 12)[0, 0], title, text)
    fig.suptitle(f"{text['gallery_title']}\n{text['legend']}", fontsize=10)
    return fig


def fig_mask_functions_dilated(lang: str) -> Figure:
    """Our causal dilated window against attention-gym's two-sided, inclusive one."""
    from attention_ref.mask_mods import create_mask, dilated_sliding_window

    def gym(b, h, q_idx, kv_idx):  # attention-gym's generate_dilated_sliding_window(4, 2)
        distance = (q_idx - kv_idx).abs()
        return (distance <= 4) & (distance % 2 == 0)

    text = TEXT[lang]
    fig = Figure(figsize=(7.2, 3.9), layout="constrained")
    panels = [(text["ours"], dilated_sliding_window(3, 2)), (text["gym"], gym)]
    for ax, (title, mod) in zip(fig.subplots(1, 2), panels, strict=True):
        _draw(ax, create_mask(mod, 1, 1, 12, 12)[0, 0], title, text)
    fig.suptitle(f"{text['dilated_title']}\n{text['legend']}", fontsize=10)
    return fig


def fig_mask_functions_tiles(lang: str) -> Figure:
    """Causal, a window and documents on 16 positions, cut into 4 × 4 tiles by what they hold."""
    import torch

    from attention_ref.mask_mods import (
        and_masks,
        block_sparsity,
        causal,
        create_mask,
        document,
        sliding_window,
    )

    text = TEXT[lang]
    n, b = 16, 4
    ids = torch.tensor([0] * 6 + [1] * 6 + [2] * 4)
    panels = [
        ("causal()", causal()),
        ("sliding_window(3)", sliding_window(3)),
        ("and_masks(causal(),\ndocument(ids))", and_masks(causal(), document(ids))),
    ]
    fig = Figure(figsize=(9.0, 4.4), layout="constrained")
    fig.get_layout_engine().set(h_pad=0.1)
    for ax, (title, mod) in zip(fig.subplots(1, 3), panels, strict=True):
        mask = create_mask(mod, 1, 1, n, n)[0, 0]  # (L, S)
        sparsity = block_sparsity(mod, 1, 1, n, n, block_size=b)
        _draw(ax, mask, f"{title}\n{text['sparsity'].format(value=sparsity)}", text, ticks=b)
        tiles = mask.view(n // b, b, n // b, b).sum(dim=(1, 3))  # allowed cells per tile
        for i in range(n // b):
            for j in range(n // b):
                count = int(tiles[i, j])
                color = TILE_EMPTY if count == 0 else TILE_FULL if count == b * b else TILE_PARTIAL
                style = {"linestyle": ":"} if count == 0 else {}
                ax.add_patch(
                    Rectangle(
                        (j * b - 0.35, i * b - 0.35),  # inset: neighbours' edges stay apart
                        b - 0.3,
                        b - 0.3,
                        fill=False,
                        edgecolor=color,
                        linewidth=2.2,
                        **style,
                    )
                )
    handles = [
        Rectangle((0, 0), 1, 1, fill=False, edgecolor=c, linewidth=2.2, **s)
        for c, s in [(TILE_EMPTY, {"linestyle": ":"}), (TILE_PARTIAL, {}), (TILE_FULL, {})]
    ]
    fig.legend(
        handles,
        [text["empty"], text["partial"], text["full"]],
        loc="outside lower center",
        ncols=3,
        fontsize=9,
    )
    fig.suptitle(f"{text['tiles_title']}\n{text['legend']}", fontsize=10)
    return fig
