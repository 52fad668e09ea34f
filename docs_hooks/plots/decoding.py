"""Figures of the decoding page (docs/decoding.md): the cache's mask and the measured time
per generated token."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from attention_ref import causal_mask

from . import measured

TEXT = {
    "en": {
        "top_left": "top-left (is_causal=True): wrong",
        "bottom_right": "bottom-right: right",
        "keys": "keys: 4 cached, then 2 new",
        "queries": "new queries",
        "cached": "cached",
        "new": "new",
    },
    "zh": {
        "top_left": "左上角对齐（is_causal=True）：错误",
        "bottom_right": "右下角对齐：正确",
        "keys": "键：4 个已缓存，2 个新增",
        "queries": "新查询",
        "cached": "已缓存",
        "new": "新增",
    },
}


def _mask_panel(ax, mask: np.ndarray, title: str, text: dict[str, str], cached: int) -> None:
    rows, cols = mask.shape
    ax.imshow(mask, cmap="Blues", vmin=-0.3, vmax=1.3)
    ax.axvline(cached - 0.5, color="#37474f", lw=1.5)
    ax.set_xticks(range(cols), labels=[text["cached"] if j < cached else text["new"] for j in
                                       range(cols)], fontsize=7.5, rotation=45)  # fmt: skip
    ax.set_yticks(range(rows), labels=[str(cached + i) for i in range(rows)])
    for i in range(rows):
        for j in range(cols):
            ax.text(j, i, "✓" if mask[i, j] else "", ha="center", va="center", color="white")
    ax.set_title(title, fontsize=9.5)
    ax.set_xlabel(text["keys"], fontsize=9)
    ax.set_ylabel(text["queries"], fontsize=9)


def fig_decoding_mask(lang: str) -> Figure:
    """Two new tokens after four cached ones: the top-left and the bottom-right causal mask."""
    text = TEXT[lang]
    fig = Figure(figsize=(7.4, 2.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    for ax, align in ((left, "top_left"), (right, "bottom_right")):
        mask = causal_mask(2, 6, align=align).numpy()
        _mask_panel(ax, mask, text[align], text, cached=4)
    return fig


TIME_TEXT = {
    "en": {
        "cached": "with the KV cache",
        "uncached": "without a cache (full forward)",
        "t": "tokens so far, t",
        "time": "time per generated token (s)",
        "legend": "{name} (slope {slope:.2f})",
        "title": "Generating one token, CPU: {layers} layers, d_model = {d_model}, "
        "{nhead} heads, float32",
    },
    "zh": {
        "cached": "使用 KV 缓存",
        "uncached": "不用缓存，完整前向传播",
        "t": "已有词元数 t",
        "time": "生成一个词元的时间（秒）",
        "legend": "{name}（斜率 {slope:.2f}）",
        "title": "生成一个词元（CPU）：{layers} 层，d_model = {d_model}，{nhead} 个头，float32",
    },
}


def plot_decode(results: dict[str, Any], lang: str = "en") -> Figure:
    """Time per generated token against t, log-log, with and without the cache.

    Raises:
        KeyError: If the results have no decoding measurements, naming the command to run.
        ValueError: On an unknown ``lang``.
    """
    measured.check_lang(lang, TIME_TEXT)
    labels = TIME_TEXT[lang]
    decode = measured.results_part(results, "decode", "decoding measurements", "decode")
    fig = Figure(figsize=(7.5, 4.6), layout="constrained")
    ax = fig.add_subplot()
    for key in ("uncached", "cached"):
        label = labels["legend"].format(name=labels[key], slope=decode["slopes"][key])
        ax.plot(decode["lengths"], decode[f"{key}_s"], marker="o", label=label)
    measured.log_log_over_lengths(ax, decode["lengths"])
    ax.set_xlabel(labels["t"])
    ax.set_ylabel(labels["time"])
    ax.set_title(labels["title"].format(**decode["config"]), fontsize=10)
    ax.legend()
    measured.add_caption(fig, decode, lang)
    return fig


def fig_decoding_time(lang: str) -> Figure:
    """Time per generated token with and without the cache, measured (the JSON's "decode")."""
    return plot_decode(measured.load_results("cpu"), lang)
