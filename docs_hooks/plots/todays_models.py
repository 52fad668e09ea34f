"""Figures of the page on today's models (docs/todays-models.md): how much weight the toy
decoder puts on its first token, sliding-window masks with a sink token, the KV cache of five
published designs against the context length, and MHA, GQA and MLA decoding as measured by
the benchmark (benchmarks/latent_decode.py, drawn from docs/bench-results/cpu.json alone)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from matplotlib.figure import Figure

from attention_ref import kv_cache_numel, sliding_window_mask
from attention_ref.lab.attention_maps import attention_maps, train_counting_decoder

from . import measured
from .masks import MASK_COLORS

TEXT = {
    "en": {
        "sink_title": "Weight on the first token, the counting TinyDecoder (trained on 8 tokens)",
        "linear": "linear scale",
        "log": "log scale",
        "query": "query position t",
        "weight": "weight on token 0",
        "layer": "layer {layer}, mean over heads",
        "heads": "one head",
        "uniform": "uniform, 1 / (t + 1)",
        "trained": "trained length",
        "key": "key j",
        "query_i": "query i",
        "ours": "ours, window 4: 4 keys\n(Hugging Face causal)",
        "gym": "q − kv ≤ 4: 5 keys\n(attention-gym, Mistral's prefill)",
        "sinks": "window 4, sink_tokens=1\n(rolling cache, StreamingLLM)",
        "both": "ours, causal=False, window 4:\n|i − j| < 4, 7 keys",
        "memory_title": "KV cache of one sequence, all layers, 2 bytes a number",
        "tokens": "context length (tokens)",
        "gib": "cache (GiB)",
        "designs": [
            "MHA",
            "GQA",
            "GQA, window 4096",
            "GQA, every other layer a window of 128",
            "MLA",
        ],
    },
    "zh": {
        "sink_title": "计数 TinyDecoder（在 8 个词元上训练）放在第一个词元上的权重",
        "linear": "线性坐标",
        "log": "对数坐标",
        "query": "查询位置 t",
        "weight": "词元 0 的权重",
        "layer": "第 {layer} 层，各头平均",
        "heads": "单个头",
        "uniform": "均匀分布，1 / (t + 1)",
        "trained": "训练长度",
        "key": "键 j",
        "query_i": "查询 i",
        "ours": "本库，窗口 4：4 个键\n（Hugging Face 因果）",
        "gym": "q − kv ≤ 4：5 个键\n（attention-gym、Mistral 预填充）",
        "sinks": "窗口 4，1 个汇点词元\n（滚动缓存，StreamingLLM）",
        "both": "本库 causal=False，窗口 4：\n|i − j| < 4，7 个键",
        "memory_title": "一条序列的 KV 缓存（所有层，每个数 2 字节）",
        "tokens": "上下文长度（词元）",
        "gib": "缓存（GiB）",
        "designs": ["MHA", "GQA", "GQA，窗口 4096", "GQA，每隔一层用 128 的窗口", "MLA"],
    },
}

SINK_LENGTH = 32  # four times the 8 tokens the counting decoder was trained on


def sink_weights() -> np.ndarray:
    """The counting decoder's weight on token 0, ``(layers, H, L)``, on 32 counting tokens."""
    model = train_counting_decoder()
    tokens = ((7 + torch.arange(SINK_LENGTH)) % 10)[None]  # 7 8 9 0 1 ...
    return attention_maps(model, tokens)[..., 0].numpy()  # (layers, H, L)


def fig_todays_models_sinks(lang: str) -> Figure:
    """Weight on token 0 against the query position, linear and log scale."""
    text = TEXT[lang]
    weights = sink_weights()  # (layers, H, L)
    t = np.arange(SINK_LENGTH)
    fig = Figure(figsize=(7.6, 3.3), layout="constrained")
    axes = fig.subplots(1, 2)
    colors = ["#3949ab", "#e65100"]
    for ax, scale in zip(axes, ("linear", "log"), strict=True):
        for layer, per_head in enumerate(weights):
            for head in per_head:
                ax.plot(t[1:], head[1:], color=colors[layer], lw=0.6, alpha=0.35)
            ax.plot(t[1:], per_head.mean(0)[1:], color=colors[layer], lw=2, marker="o", ms=2.5,
                    label=text["layer"].format(layer=layer + 1))  # fmt: skip
        ax.plot(t[1:], 1 / (t[1:] + 1), color="0.3", ls="--", lw=1, label=text["uniform"])
        ax.axvline(7, color="0.5", ls=":", lw=1)
        ax.text(7.4, 0.97, text["trained"], transform=ax.get_xaxis_transform(), fontsize=7.5,
                va="top", color="0.35")  # fmt: skip
        ax.set_yscale(scale)
        ax.set_title(text[scale], fontsize=9)
        ax.set_xlabel(text["query"], fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(text["weight"], fontsize=9)
    axes[0].legend(fontsize=7.5, loc="center right")
    fig.suptitle(text["sink_title"], fontsize=10)
    return fig


def fig_todays_models_windows(lang: str) -> Figure:
    """Four sliding-window masks on 8 tokens: the conventions, and a sink token."""
    text = TEXT[lang]
    i, j = torch.arange(8)[:, None], torch.arange(8)[None, :]
    masks = {
        "ours": sliding_window_mask(8, 4),
        "gym": (i >= j) & (i - j <= 4),
        "sinks": sliding_window_mask(8, 4, sink_tokens=1),
        "both": sliding_window_mask(8, 4, causal=False),
    }
    fig = Figure(figsize=(7.6, 2.6), layout="constrained")
    for ax, (name, mask) in zip(fig.subplots(1, 4), masks.items(), strict=True):
        ax.imshow(mask.numpy(), cmap=MASK_COLORS, vmin=0, vmax=1)
        ax.set_title(text[name], fontsize=7.5)
        ax.set_xticks(range(8))
        ax.set_yticks(range(8))
        ax.tick_params(labelsize=6.5)
        ax.set_xlabel(text["key"], fontsize=8)
    fig.axes[0].set_ylabel(text["query_i"], fontsize=8)
    return fig


# Published configurations (the References page cites each): keyword arguments of
# kv_cache_numel per group of layers, without the batch and the tokens.
MODELS = {
    "Llama 2 7B": [dict(layers=32, kv_heads=32, head_dim=128)],
    "Llama 3 8B": [dict(layers=32, kv_heads=8, head_dim=128)],
    "Mistral 7B v0.1": [dict(layers=32, kv_heads=8, head_dim=128, window=4096)],
    "gpt-oss-120b": [
        dict(layers=18, kv_heads=8, head_dim=64),
        dict(layers=18, kv_heads=8, head_dim=64, window=128),
    ],
    "DeepSeek-V3": [dict(layers=61, kv_lora_rank=512, qk_rope_head_dim=64)],
}


def cache_bytes(groups: list[dict], tokens: int) -> int:
    """The cache of one sequence at ``tokens`` tokens, in bytes (2 a number)."""
    return sum(kv_cache_numel(**g, batch=1, tokens=tokens) for g in groups) * 2


def fig_todays_models_memory(lang: str) -> Figure:
    """Cache size against context length for the five designs, log-log."""
    text = TEXT[lang]
    tokens = np.unique(np.logspace(8, 17, 37, base=2).astype(int))  # 256 ... 128k
    fig = Figure(figsize=(7.6, 4.2), layout="constrained")
    ax = fig.add_subplot()
    paren = "（{}）" if lang == "zh" else " ({})"
    for (name, groups), design in zip(MODELS.items(), text["designs"], strict=True):
        gib = [cache_bytes(groups, int(n)) / 2**30 for n in tokens]
        ax.plot(tokens, gib, lw=2, label=name + paren.format(design))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    sizes = [2.0**k for k in range(-6, 7, 2)]
    ax.set_yticks(sizes, labels=[f"1/{int(1 / v)}" if v < 1 else f"{v:.0f}" for v in sizes])
    ticks = [2**k for k in range(8, 18, 1)]
    ax.set_xticks(ticks, labels=[f"{n // 1024}k" if n >= 1024 else str(n) for n in ticks])
    ax.set_xlabel(text["tokens"], fontsize=9)
    ax.set_ylabel(text["gib"], fontsize=9)
    ax.set_title(text["memory_title"], fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7.5)
    return fig


DECODE_TEXT = {
    "en": {
        "labels": {
            "mha": "MHA",
            "gqa": "GQA ({kv} key/value heads)",
            "mla_expanded": "MLA, expanded",
            "mla_absorbed": "MLA, absorbed",
        },
        "t": "tokens so far, t",
        "time": "time per generated token (s)",
        "cache": "cache, measured (MiB)",
        "time_title": "Time per generated token",
        "cache_title": "Cache of one layer",
        "legend": "{name} (slope {slope:.2f})",
        "cache_legend": "{name}: {numbers} numbers a token",
        "title": "One attention layer decoding, CPU: d_model = {d_model}, {num_heads} heads, "
        "{dtype}",
    },
    "zh": {
        "labels": {
            "mha": "MHA",
            "gqa": "GQA（{kv} 个键/值头）",
            "mla_expanded": "MLA，展开形式",
            "mla_absorbed": "MLA，吸收形式",
        },
        "t": "已有词元数 t",
        "time": "生成一个词元的时间（秒）",
        "cache": "实测缓存（MiB）",
        "time_title": "生成一个词元的时间",
        "cache_title": "一层的缓存",
        "legend": "{name}（斜率 {slope:.2f}）",
        "cache_legend": "{name}：每个词元 {numbers} 个数",
        "title": "一个注意力层解码（CPU）：d_model = {d_model}，{num_heads} 个头，{dtype}",
    },
}


def latent_decode_results(results: dict[str, Any]) -> dict[str, Any]:
    """The ``"latent_decode"`` part of saved results (``json.load`` of ``<device>.json``).

    Raises:
        KeyError: If the results have no such measurements, naming the command to run.
    """
    return measured.results_part(results, "latent_decode", "MHA/GQA/MLA decoding", "latent-decode")


def plot_latent_decode(results: dict[str, Any], lang: str = "en") -> Figure:
    """Time per generated token and the cache's memory against t, for MHA, GQA and MLA.

    Raises:
        KeyError: If the results have no ``latent_decode`` part.
        ValueError: On an unknown ``lang``.
    """
    measured.check_lang(lang, DECODE_TEXT)
    text, part = DECODE_TEXT[lang], latent_decode_results(results)
    config, lengths = part["config"], part["lengths"]
    fig = Figure(figsize=(7.8, 4.0), layout="constrained")
    timing, memory = fig.subplots(1, 2)
    styles = {"mha": "-", "gqa": "-", "mla_expanded": "-", "mla_absorbed": "--"}
    for key, design in part["designs"].items():
        name = text["labels"][key].format(kv=config["gqa_kv_heads"])
        timing.plot(lengths, design["time_s"], marker="o", ms=3, ls=styles.get(key, "-"),
                    label=text["legend"].format(name=name, slope=part["slopes"][key]))  # fmt: skip
        numbers = design["cache_numbers_per_token"]
        memory.plot(lengths, design["cache_mib"], marker="o", ms=3, ls=styles.get(key, "-"),
                    label=text["cache_legend"].format(name=name, numbers=numbers))  # fmt: skip
    panels = (
        (timing, "time", "time_title", "upper left"),
        (memory, "cache", "cache_title", "lower right"),
    )
    for ax, ylabel, title, where in panels:
        measured.log_log_over_lengths(ax, lengths)
        ax.set_xlabel(text["t"], fontsize=9)
        ax.set_ylabel(text[ylabel], fontsize=9)
        ax.set_title(text[title], fontsize=9)
        ax.legend(fontsize=7, loc=where)
    fig.suptitle(text["title"].format(**config), fontsize=10)
    measured.add_caption(fig, part, lang)
    return fig


def fig_todays_models_decode(lang: str) -> Figure:
    """MHA, GQA and MLA decoding, measured (the JSON's "latent_decode")."""
    return plot_latent_decode(measured.load_results("cpu"), lang)
