"""Benchmark of generation: time per generated token with and without the KV cache.

A small GPT-style decoder (Pre-LN layers of
[`TransformerEncoderLayer`][attention_ref.TransformerEncoderLayer] with a causal mask)
generates the token at position t, for t = 64 … 2048:

* without a cache, it runs the whole causal forward over the t tokens and keeps the last
  output: every step recomputes every earlier token's keys and values, so a step costs
  about t times the work of one token and generating t tokens costs O(t²);
* with a [`KVCache`][attention_ref.KVCache] per layer already holding t - 1 tokens, it runs
  one token: a step costs about the same at every t (plus attention over t cached keys),
  and generating t tokens costs O(t).

Each timing is the fastest of several rounds, as in the main benchmark. Run only this part
with ``python -m attention_ref.bench --only decode`` (``nox -s bench -- --only decode``): it
adds the key ``"decode"`` to ``docs/bench-results/<device>.json`` and leaves the rest as it
is. Shape legend: N batch (1), t tokens so far, E d_model.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from .encoder import TransformerEncoderLayer
from .kv_cache import KVCache

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DECODE_CONFIG", "DECODE_LENGTHS", "decode_results", "plot_decode", "run_decode"]

DECODE_LENGTHS = (64, 128, 256, 512, 1024, 2048)
DECODE_CONFIG = {"layers": 4, "d_model": 256, "nhead": 4, "dim_feedforward": 1024}
RERUN = "rerun `nox -s bench -- --only decode` (python -m attention_ref.bench --only decode)"
_LABELS = {
    "en": {
        "cached": "with the KV cache",
        "uncached": "without a cache (full forward)",
        "t": "tokens so far, t",
        "time": "time per generated token (s)",
        "legend": "{name} (slope {slope:.2f})",
        "caption": "{cpu}, {cores} cores, {threads} threads",
        "title": "Generating one token, CPU: {layers} layers, d_model = {d_model}, "
        "{nhead} heads, float32",
    },
    "zh": {
        "cached": "使用 KV 缓存",
        "uncached": "不用缓存，完整前向传播",
        "t": "已有词元数 t",
        "time": "生成一个词元的时间（秒）",
        "legend": "{name}（斜率 {slope:.2f}）",
        "caption": "{cpu}，{cores} 核，{threads} 线程",
        "title": "生成一个词元（CPU）：{layers} 层，d_model = {d_model}，{nhead} 个头，float32",
    },
}


def _model(config: dict[str, int]) -> list[TransformerEncoderLayer]:
    torch.manual_seed(0)
    return [
        TransformerEncoderLayer(
            config["d_model"], config["nhead"], config["dim_feedforward"], dropout=0.0,
            activation="gelu_tanh", norm_first=True,
        ).eval()
        for _ in range(config["layers"])
    ]  # fmt: skip


def _forward(layers, x, caches=None):
    for i, layer in enumerate(layers):
        x = layer(x, is_causal=True, kv_cache=None if caches is None else caches[i])
    return x


def _fastest(fn, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


@torch.no_grad()
def run_decode(
    lengths: Sequence[int] = DECODE_LENGTHS, repeat: int = 5, config: dict[str, int] | None = None
) -> dict[str, Any]:
    """Time one generation step at each length t, with and without the cache (CPU).

    Returns:
        ``{"config", "lengths", "cached_s", "uncached_s", "slopes", "machine", "versions",
        "date"}``: seconds per generated token, the fastest of ``repeat`` rounds.
    """
    from .bench import _fit_slope, _machine, _versions

    config = dict(DECODE_CONFIG if config is None else config)
    layers = _model(config)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, max(lengths), config["d_model"], generator=gen)  # (N, t, E)
    cached, uncached = [], []
    for t in lengths:
        uncached.append(_fastest(lambda t=t: _forward(layers, x[:, :t])[:, -1], repeat))
        caches = [KVCache() for _ in layers]
        _forward(layers, x[:, : t - 1], caches)  # the prompt: t - 1 tokens cached
        saved = [(c.key, c.value) for c in caches]

        def step(t=t, caches=caches, saved=saved):
            for cache, (key, value) in zip(caches, saved, strict=True):
                cache.key, cache.value = key, value  # back to t - 1 tokens
            return _forward(layers, x[:, t - 1 : t], caches)

        cached.append(_fastest(step, repeat))
        print(f"t={t:5d}: cached {cached[-1] * 1e3:8.2f} ms, full {uncached[-1] * 1e3:8.2f} ms")
    return {
        "config": {**config, "threads": torch.get_num_threads(), "repeat": repeat},
        "lengths": list(lengths),
        "cached_s": [float(f"{s:.4g}") for s in cached],
        "uncached_s": [float(f"{s:.4g}") for s in uncached],
        "slopes": {
            "cached": round(_fit_slope(lengths, cached), 2),  # log-log least squares
            "uncached": round(_fit_slope(lengths, uncached), 2),
        },
        "machine": _machine("cpu"),
        "versions": _versions(),
        "date": datetime.date.today().isoformat(),
    }


def decode_results(results: dict[str, Any]) -> dict[str, Any]:
    """The ``"decode"`` part of saved results (``json.load`` of ``<device>.json``).

    Raises:
        KeyError: If the results have no decoding measurements, naming the command to run.
    """
    if "decode" not in results:
        raise KeyError(f"decode: these results have no decoding measurements; {RERUN}")
    return results["decode"]


def plot_decode(results: dict[str, Any], lang: str = "en") -> Figure:
    """Time per generated token against t, log-log, with and without the cache.

    Raises:
        KeyError: If the results have no decoding measurements.
        ValueError: On an unknown ``lang``.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    from .bench import _cjk_font

    if lang not in _LABELS:
        raise ValueError(f"lang: expected one of {tuple(_LABELS)}, got {lang!r}")
    labels, decode = _LABELS[lang], decode_results(results)
    font = {"family": ["DejaVu Sans", _cjk_font()]} if lang == "zh" and _cjk_font() else {}
    fig = Figure(figsize=(7.5, 4.6), layout="constrained")
    ax = fig.add_subplot()
    for key in ("uncached", "cached"):
        label = labels["legend"].format(name=labels[key], slope=decode["slopes"][key])
        ax.plot(decode["lengths"], decode[f"{key}_s"], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(decode["lengths"], labels=[str(t) for t in decode["lengths"]])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_yscale("log")
    ax.set_xlabel(labels["t"], fontdict=font)
    ax.set_ylabel(labels["time"], fontdict=font)
    ax.set_title(labels["title"].format(**decode["config"]), fontdict=font, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(prop=font and {"family": font["family"]}, fontsize=8)
    m, v = decode["machine"], decode["versions"]
    where = labels["caption"].format(threads=decode["config"]["threads"], **m)
    caption = f"{where} · torch {v['torch']} · Python {v['python']} · {decode['date']}"
    fig.text(0.5, 0.0, caption, ha="center", va="bottom", fontsize=7, color="0.35", **font)
    fig.get_layout_engine().set(h_pad=0.25)
    return fig
