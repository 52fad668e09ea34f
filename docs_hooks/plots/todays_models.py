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
        "sink_title": "Weight on token 0, the counting TinyDecoder (trained on inputs of 8 tokens)",
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
        "gym": "q − kv ≤ 4: 5 keys\n(attention-gym;\nMistral 7B's 2023 prefill)",
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
        "sink_title": "计数解码器 TinyDecoder（训练时输入 8 个词元）放在词元 0 上的权重",
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
        "gym": "q − kv ≤ 4：5 个键\n（attention-gym；\nMistral 7B 2023 年的预填充）",
        "sinks": "窗口 4，1 个汇点词元\n（滚动缓存，StreamingLLM）",
        "both": "本库 causal=False，窗口 4：\n|i − j| < 4，7 个键",
        "memory_title": "一条序列的 KV 缓存（所有层，每个数 2 字节）",
        "tokens": "上下文长度（词元）",
        "gib": "缓存（GiB）",
        "designs": ["MHA", "GQA", "GQA，窗口 4096", "GQA，每隔一层用 128 个词元的窗口", "MLA"],
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


def plot_latent_decode(results: dict[str, Any], lang: str = "en") -> Figure:
    """Time per generated token and the cache's memory against t, for MHA, GQA and MLA.

    Raises:
        KeyError: If the results have no ``latent_decode`` part, naming the command to run.
        ValueError: On an unknown ``lang``.
    """
    measured.check_lang(lang, DECODE_TEXT)
    text = DECODE_TEXT[lang]
    part = measured.results_part(results, "latent_decode", "MHA/GQA/MLA decoding", "latent-decode")
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


MLA_TEXT = {
    "en": {
        "title": "Multi-head latent attention, one token t (sizes of DeepSeek-V3)",
        "input": "input",
        "q_latent": "query latent",
        "kv_latent": "key/value latent",
        "rope_key": "rotary key,\none for all heads",
        "heads": "every head i\n({heads} heads)",
        "cache": "KV cache, per token and layer:\n{d_c} + {d_r} = {total} numbers",
        "wide": "{n} wide",
    },
    "zh": {
        "title": "多头潜在注意力，一个词元 t（DeepSeek-V3 的尺寸）",
        "input": "输入",
        "q_latent": "查询的潜在向量",
        "kv_latent": "键/值的潜在向量",
        "rope_key": "旋转键，\n所有头共用",
        "heads": "每个头 i\n（共 {heads} 个头）",
        "cache": "KV 缓存，每个词元每层：\n{d_c} + {d_r} = {total} 个数",
        "wide": "{n} 维",
    },
}

QUERY_COLOR, KV_COLOR, ROPE_COLOR = "#3949ab", "#e65100", "#2e7d32"


def mla_sizes() -> dict[str, int]:
    """DeepSeek-V3's attention sizes, read from a ``MultiHeadLatentAttention`` built on the
    meta device (no memory): every width the MLA diagram labels."""
    from attention_ref import MultiHeadLatentAttention

    heads = 128
    layer = MultiHeadLatentAttention(7168, heads, kv_lora_rank=512, qk_nope_head_dim=128,
                                     qk_rope_head_dim=64, v_head_dim=128, q_lora_rank=1536,
                                     device="meta")  # fmt: skip
    d_model = layer.kv_a_proj_with_mqa.weight.shape[1]
    d_c = layer.kv_a_layernorm.weight.shape[0]
    d_r = layer.kv_a_proj_with_mqa.weight.shape[0] - d_c
    d_q = layer.q_a_proj.weight.shape[0]
    d_h = layer.q_b_proj.weight.shape[0] // heads - d_r
    d_v = layer.kv_b_proj.weight.shape[0] // heads - d_h
    return dict(d=d_model, heads=heads, d_c=d_c, d_r=d_r, d_q=d_q, d_h=d_h, d_v=d_v)


def fig_todays_models_mla(lang: str) -> Figure:
    """MLA's data flow for one token: h_t to the query latent and every head's q^C, q^R; to
    the key/value latent and every head's k^C, v^C; to the one rotary key k^R. The cache
    holds c^KV and k^R. Module names (Hugging Face's) under each map."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    text, s = MLA_TEXT[lang], mla_sizes()
    fig = Figure(figsize=(7.8, 4.6), layout="constrained")
    ax = fig.add_subplot()
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.15, 6.35)
    ax.axis("off")

    def box(x, y, symbol, width, color, w=1.25, h=0.72, stack=False):
        """A vector: its symbol and its width under it."""
        if stack:  # one per head: two shadows behind
            for k in (2, 1):
                ax.add_patch(FancyBboxPatch((x - w / 2 + 0.07 * k, y - h / 2 + 0.07 * k), w, h,
                             boxstyle="round,pad=0.02", fc="white", ec=color, lw=0.8))  # fmt: skip
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02",
                                    fc="white", ec=color, lw=1.6))  # fmt: skip
        ax.text(x, y + 0.11, symbol, ha="center", va="center", fontsize=11)
        ax.text(x, y - 0.2, text["wide"].format(n=width), ha="center", va="center",
                fontsize=7.5, color="0.3")  # fmt: skip

    def arrow(start, end, color, label, at, code="", **place):
        """A linear map: an arrow, its formula at ``at`` and the module that holds it under."""
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10,
                                     color=color, lw=1.2, shrinkA=0, shrinkB=0))  # fmt: skip
        ax.text(*at, label, fontsize=8.5, color=color, **{"ha": "center", **place})
        if code:
            ax.text(at[0], at[1] - 0.3, code, fontsize=6.5, color="0.35", family="monospace",
                    ha=place.get("ha", "center"), va="top")  # fmt: skip

    def module(x, y, code):
        """The checkpoint module that holds the maps of a fork."""
        ax.text(x, y, code, ha="center", va="center", fontsize=6.5, color="0.35",
                family="monospace")  # fmt: skip

    # the input
    box(0.8, 3.1, "$h_t$", s["d"], "0.2", w=1.1, h=1.0)
    ax.text(0.8, 3.78, text["input"], ha="center", fontsize=8, color="0.2")
    # the query path
    box(4.1, 5.2, "$c^Q_t$", s["d_q"], QUERY_COLOR)
    ax.text(4.1, 5.72, text["q_latent"], ha="center", fontsize=8, color=QUERY_COLOR)
    arrow((1.35, 3.45), (3.45, 5.2), QUERY_COLOR, "RMSNorm$(W^{DQ} h_t)$", (2.1, 4.75),
          "q_a_proj,\nq_a_layernorm", ha="right", va="bottom")  # fmt: skip
    box(8.2, 5.75, "$q^C_{t,i}$", s["d_h"], QUERY_COLOR, stack=True)
    box(8.2, 4.6, "$q^R_{t,i}$", s["d_r"], ROPE_COLOR, stack=True)
    arrow((4.75, 5.3), (7.55, 5.75), QUERY_COLOR, "$W^{UQ}_i c^Q_t$", (6.0, 5.7), va="bottom")
    arrow((4.75, 5.05), (7.55, 4.6), ROPE_COLOR, "RoPE$(W^{QR}_i c^Q_t)$", (6.0, 4.68),
          va="top")  # fmt: skip
    module(6.9, 5.17, "q_b_proj")
    # the key/value path
    box(4.1, 2.75, "$c^{KV}_t$", s["d_c"], KV_COLOR)
    ax.text(4.1, 3.27, text["kv_latent"], ha="center", fontsize=8, color=KV_COLOR)
    arrow((1.35, 3.0), (3.45, 2.75), KV_COLOR, "RMSNorm$(W^{DKV} h_t)$", (2.4, 3.05),
          "kv_a_proj_with_mqa,\nkv_a_layernorm", va="bottom")  # fmt: skip
    box(8.2, 3.35, "$k^C_{t,i}$", s["d_h"], KV_COLOR, stack=True)
    box(8.2, 2.2, "$v^C_{t,i}$", s["d_v"], KV_COLOR, stack=True)
    arrow((4.75, 2.85), (7.55, 3.35), KV_COLOR, "$W^{UK}_i c^{KV}_t$", (6.0, 3.3), va="bottom")
    arrow((4.75, 2.6), (7.55, 2.2), KV_COLOR, "$W^{UV}_i c^{KV}_t$", (6.0, 2.28), va="top")
    module(6.9, 2.77, "kv_b_proj")
    ax.text(8.2, 1.45, text["heads"].format(heads=s["heads"]), ha="center", va="top",
            fontsize=8, color="0.2")  # fmt: skip
    # the shared rotary key
    box(4.1, 0.75, "$k^R_t$", s["d_r"], ROPE_COLOR)  # its note outside the cache's border
    ax.text(5.2, 0.75, text["rope_key"], ha="left", va="center", fontsize=7.5, color=ROPE_COLOR)
    arrow((1.0, 2.55), (3.45, 0.75), ROPE_COLOR, "RoPE$(W^{KR} h_t)$", (1.95, 1.45),
          "kv_a_proj_with_mqa", ha="right", va="top")  # fmt: skip
    # what the cache holds
    cache = text["cache"].format(d_c=s["d_c"], d_r=s["d_r"], total=s["d_c"] + s["d_r"])
    ax.add_patch(FancyBboxPatch((3.25, 0.2), 1.7, 3.35, boxstyle="round,pad=0.06", fc="none",
                                ec="0.45", lw=1.1, ls="--"))  # fmt: skip
    ax.text(4.1, -0.05, cache, ha="center", va="top", fontsize=7.5, color="0.3")
    fig.suptitle(text["title"], fontsize=10)
    return fig
