"""Figures of the masks page: each kind of mask, and the attention weights it produces."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

MASK_COLORS = ListedColormap(["#eceff1", "#3949ab"])  # False (masked), True (may attend)

TEXT = {
    "en": {
        "query": "query position",
        "key": "key position",
        "query_token": "query",
        "key_token": "key",
        "weights": "weights",
        "legend": "dark, 1 = may attend (True); light, 0 = masked (False)",
        "top_left": "top-left (is_causal)",
        "bottom_right": "bottom-right (KV cache)",
        "causal_title": "Causal masks for L = 4 queries, S = 6 keys",
        "seq": "sequence {n}: length {length}",
        "pad_both": "sequence 2, queries masked too",
        "padding_title": "Padding mask (N, 1, 1, S) for lengths [5, 3]",
        "window_causal": "causal, window 3",
        "window_both": "two-sided, window 3",
        "window_title": "Sliding-window masks, L = S = 8",
        "safe": "bool mask (attention_ref, SDPA):\nzeros",
        "inf": "-inf + plain softmax:\nNaN",
        "min": "finfo.min or -1e9:\nuniform",
        "full_title": "A fully masked row (the two padding queries) three ways",
    },
    "zh": {
        "query": "查询位置",
        "key": "键位置",
        "query_token": "查询",
        "key_token": "键",
        "weights": "权重",
        "legend": "深色、1 = 可以关注（True）；浅色、0 = 被掩码（False）",
        "top_left": "左上角对齐（is_causal）",
        "bottom_right": "右下角对齐（KV 缓存）",
        "causal_title": "L = 4 个查询、S = 6 个键的因果掩码",
        "seq": "序列 {n}：长度 {length}",
        "pad_both": "序列 2，查询也被掩码",
        "padding_title": "长度为 [5, 3] 的填充掩码 (N, 1, 1, S)",
        "window_causal": "因果，窗口 3",
        "window_both": "双向，窗口 3",
        "window_title": "滑动窗口掩码，L = S = 8",
        "safe": "布尔掩码（attention_ref、SDPA）：\n全零",
        "inf": "-inf + 普通 softmax：\nNaN",
        "min": "finfo.min 或 -1e9：\n均匀分布",
        "full_title": "全被掩码的行（两个填充查询）的三种结果",
    },
}

TOKENS = {
    "en": (["I", "like", "this", "black", "cat"], ["The", "cat", "sat", "<pad>", "<pad>"]),
    "zh": (["我", "喜欢", "这", "只", "猫"], ["猫", "坐", "了", "<pad>", "<pad>"]),
}


def _inputs(L: int, S: int, E: int = 8, seed: int = 0):
    """Seeded queries and keys, (L, E) and (S, E): the same numbers on every machine."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(L, E, generator=generator, dtype=torch.float64)
    key = torch.randn(S, E, generator=generator, dtype=torch.float64)
    return query, key


def _draw_mask(ax: Axes, mask, rows, cols, title: str, text: dict, digits: bool = True) -> None:
    """One (L, S) bool mask as a grid of coloured cells, with 1s and 0s in them."""
    data = mask.int().numpy()
    ax.imshow(data, cmap=MASK_COLORS, vmin=0, vmax=1)
    for i, row in enumerate(data):
        for j, value in enumerate(row if digits else []):
            color = "white" if value else "#90a4ae"
            label = ax.text(j, i, str(value), ha="center", va="center", fontsize=8, color=color)
            label.set_in_layout(False)  # inside the axes: the layout need not measure it
    ax.set_xticks(range(len(cols)), labels=[str(c) for c in cols])
    ax.set_yticks(range(len(rows)), labels=[str(r) for r in rows])
    ax.set(title=title, xlabel=text["key"], ylabel=text["query"])


def _draw_weights(ax: Axes, weights, rows, cols, text: dict, annotate: bool = True) -> None:
    from attention_ref.plotting import plot_attention

    rows, cols = [str(r) for r in rows], [str(c) for c in cols]
    plot_attention(weights, rows, cols, ax=ax, title=text["weights"], annotate=annotate)
    for label in ax.texts:
        label.set_in_layout(False)  # the weights written in the cells
    ax.tick_params(axis="x", labelrotation=0)
    ax.set(xlabel=text["key"], ylabel=text["query"])


def fig_masks_causal(lang: str) -> Figure:
    """Top-left vs bottom-right causal masks (L=4, S=6) and the weights they give."""
    from attention_ref import attention_weights, causal_mask

    text = TEXT[lang]
    L, S = 4, 6
    query, key = _inputs(L, S)
    fig = Figure(figsize=(7.2, 6.2), layout="constrained")
    axes = fig.subplots(2, 2)
    for col, align in enumerate(["top_left", "bottom_right"]):
        mask = causal_mask(L, S, align=align)  # (L, S)
        offset = 0 if align == "top_left" else S - L  # the position of query 0 among the keys
        rows = range(offset, offset + L)
        _draw_mask(axes[0, col], mask, rows, range(S), text[align], text)
        weights = attention_weights(query, key, attn_mask=mask)  # (L, S)
        _draw_weights(axes[1, col], weights, rows, range(S), text)
    fig.suptitle(f"{text['causal_title']}\n{text['legend']}", fontsize=10)
    return fig


def fig_masks_padding(lang: str) -> Figure:
    """A padding mask for lengths [5, 3], broadcast over the queries, and its weights."""
    from attention_ref import attention_weights, padding_mask

    text = TEXT[lang]
    lengths, S = [5, 3], 5
    keep = padding_mask(lengths).expand(2, 1, S, S)[:, 0]  # (N, L, S): broadcast over queries
    both = keep[1] & keep[1].T  # padding queries masked as well: rows 3 and 4 fully masked
    masks = [keep[0], keep[1], both]
    titles = [
        text["seq"].format(n=1, length=5),
        text["seq"].format(n=2, length=3),
        text["pad_both"],
    ]
    query, key = _inputs(S, S, seed=1)
    fig = Figure(figsize=(10.2, 6.6), layout="constrained")
    axes = fig.subplots(2, 3)
    for col, (mask, title) in enumerate(zip(masks, titles, strict=True)):
        tokens = TOKENS[lang][0 if col == 0 else 1]
        _draw_mask(axes[0, col], mask, tokens, tokens, title, text)
        weights = attention_weights(query, key, attn_mask=mask)  # (L, S)
        _draw_weights(axes[1, col], weights, tokens, tokens, text)
    for ax in axes.flat:
        ax.tick_params(axis="x", labelrotation=45)
        ax.set(xlabel=text["key_token"], ylabel=text["query_token"])
    fig.suptitle(f"{text['padding_title']}\n{text['legend']}", fontsize=10)
    return fig


def fig_masks_sliding_window(lang: str) -> Figure:
    """Causal and two-sided sliding-window masks (window 3) and their weights."""
    from attention_ref import attention_weights, sliding_window_mask

    text = TEXT[lang]
    L = 8
    query, key = _inputs(L, L, seed=2)
    fig = Figure(figsize=(7.2, 6.6), layout="constrained")
    axes = fig.subplots(2, 2)
    for col, causal in enumerate([True, False]):
        mask = sliding_window_mask(L, window=3, causal=causal)  # (L, S)
        title = text["window_causal" if causal else "window_both"]
        _draw_mask(axes[0, col], mask, range(L), range(L), title, text, digits=False)
        weights = attention_weights(query, key, attn_mask=mask)
        _draw_weights(axes[1, col], weights, range(L), range(L), text, annotate=False)
    fig.colorbar(axes[1, 1].images[0], ax=axes[1, :], shrink=0.8)
    fig.suptitle(f"{text['window_title']}\n{text['legend']}", fontsize=10)
    return fig


def fig_masks_fully_masked(lang: str) -> Figure:
    """A row with every key masked: zeros (safe softmax), NaN (-inf), uniform (finfo.min)."""
    import torch

    from attention_ref import attention_weights, padding_mask
    from attention_ref.mask_conventions import to_additive_mask

    text = TEXT[lang]
    S = 5
    keep = padding_mask([3], S)[0, 0, 0]  # (S,)
    both = keep[:, None] & keep[None, :]  # (L, S): padding queries see nothing
    query, key = _inputs(S, S, seed=1)
    scores = query @ key.T / query.size(-1) ** 0.5  # (L, S)
    panels = [
        (text["safe"], attention_weights(query, key, attn_mask=both)),
        (text["inf"], torch.softmax(scores.masked_fill(~both, float("-inf")), dim=-1)),
        (text["min"], torch.softmax(scores + to_additive_mask(both, scores.dtype), dim=-1)),
    ]
    tokens = TOKENS[lang][1]
    fig = Figure(figsize=(10.2, 3.9), layout="constrained")
    for ax, (title, weights) in zip(fig.subplots(1, 3), panels, strict=True):
        _draw_weights(ax, weights, tokens, tokens, text)
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="x", labelrotation=45)
        ax.set(xlabel=text["key_token"], ylabel=text["query_token"])
    fig.suptitle(text["full_title"], fontsize=10)
    return fig
