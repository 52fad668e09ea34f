"""Time per generated token with and without the KV cache, as the sequence grows (CPU).

A small GPT-2-style decoder (``attention_ref.DecoderBlock`` with LayerNorm before each
sublayer, biases and a GELU feed-forward network of width 4·d_model, causal) generates the
token at position t, for t = 64 … 2048:

* without a cache, it runs the whole causal forward over the t tokens and keeps the last
  output: every step recomputes every earlier token's keys and values, so a step costs
  about t times the work of one token and generating t tokens costs O(t²);
* with a ``KVCache`` per layer already holding t - 1 tokens, it runs one token: a step costs
  about the same at every t (plus attention over t cached keys), and generating t tokens
  costs O(t).

Both are timed by the `benchmarks.protocol` rounds, in turn at each t. Shape legend: N batch
(1), t tokens so far, E d_model.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from attention_ref import DecoderBlock, KVCache

from . import protocol

DECODE_LENGTHS = (64, 128, 256, 512, 1024, 2048)
DECODE_CONFIG = {"layers": 4, "d_model": 256, "nhead": 4, "dim_feedforward": 1024}


def model(config: dict[str, int]) -> list[DecoderBlock]:
    """The decoder's blocks (GPT-2's choices), seeded, in eval mode."""
    torch.manual_seed(0)
    return [
        DecoderBlock(
            config["d_model"],
            config["nhead"],
            config["dim_feedforward"],
            activation="gelu_tanh",
            bias=True,
            norm="layernorm",
            ffn="mlp",
        ).eval()
        for _ in range(config["layers"])
    ]


def forward(layers: list[DecoderBlock], x: Tensor, caches: list[KVCache] | None = None) -> Tensor:
    """``(N, t, E)`` through every layer, causal, each with its cache if given."""
    for i, layer in enumerate(layers):
        x = layer(x, is_causal=True, kv_cache=None if caches is None else caches[i])
    return x


@torch.no_grad()
def run_decode(
    lengths: Sequence[int] = DECODE_LENGTHS, repeat: int = 5, config: dict[str, int] | None = None
) -> dict[str, Any]:
    """Time one generation step at each length t, with and without the cache (CPU).

    Returns:
        ``{"config", "lengths", "cached_s", "uncached_s", "slopes", "machine", "versions",
        "date"}``: seconds per generated token, the fastest of ``repeat`` rounds.
    """
    config = dict(DECODE_CONFIG if config is None else config)
    layers = model(config)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, max(lengths), config["d_model"], generator=gen)  # (N, t, E)
    cached, uncached = [], []
    with protocol.progress(len(lengths) * repeat * 2, "decode") as bar:
        for t in lengths:
            caches = [KVCache() for _ in layers]
            forward(layers, x[:, : t - 1], caches)  # the prompt: t - 1 tokens cached

            def step(t: int = t, caches: list[KVCache] = caches) -> Tensor:
                # a shallow copy per call: every call adds token t to the same t - 1 cached
                # (update replaces the copy's tensors and counters, never the saved ones')
                return forward(layers, x[:, t - 1 : t], [copy.copy(c) for c in caches])

            fns = {"uncached": lambda t=t: forward(layers, x[:, :t])[:, -1], "cached": step}
            times = protocol.round_robin(fns, repeat, "cpu", bar, label=f"t={t}")
            cached.append(min(times["cached"]))
            uncached.append(min(times["uncached"]))
            bar.write(
                f"t={t:5d}: cached {cached[-1] * 1e3:8.2f} ms, full {uncached[-1] * 1e3:8.2f} ms"
            )
    return {
        "config": {**config, "threads": torch.get_num_threads(), "repeat": repeat},
        "lengths": list(lengths),
        "cached_s": [float(f"{s:.4g}") for s in cached],
        "uncached_s": [float(f"{s:.4g}") for s in uncached],
        "slopes": {  # log-log least squares
            "cached": round(protocol.fit_slope(lengths, cached) or 0.0, 2),
            "uncached": round(protocol.fit_slope(lengths, uncached) or 0.0, 2),
        },
        "machine": protocol.machine("cpu"),
        "versions": protocol.versions(),
        "date": protocol.now()[:10],
    }
