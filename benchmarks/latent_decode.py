"""Decoding with MHA, GQA and MLA: time per generated token and cache memory per token (CPU).

One attention layer of each design, of comparable size (d_model 512, 8 query heads, float32,
RoPE, no biases; `LATENT_DECODE_CONFIG`), generates the token at position t with a
``KVCache`` that already holds the t - 1 tokens before it, for t = 256 … 4096:

* ``mha``: ``MultiHeadAttention``, 8 key/value heads of width 64: the cache holds a key and a
  value per head, 2 · 8 · 64 = 1024 numbers a token;
* ``gqa``: the same with 2 key/value heads (grouped-query attention): 2 · 2 · 64 = 256;
* ``mla_expanded``, ``mla_absorbed``: ``MultiHeadLatentAttention`` (kv_lora_rank 128, per
  head 64 + 32 rotary query/key features and 64 value features) in its two forms. The cache
  holds the latent and the shared rotary key, 128 + 32 = 160 numbers a token, the same for
  both forms. The expanded form rebuilds every head's keys and values from all t cached
  latents at each step; the absorbed form attends over the latents directly.

A step is timed by the `benchmarks.protocol` rounds, the four designs in turn at each t; each
call starts from a shallow copy of the prefilled cache, so every call adds the same token to
t - 1 held ones. The cache's memory is measured on its tensors after the prefill (their bytes
over the tokens held): per token it is a constant, equal to `attention_ref.kv_cache_numel`
times 4 bytes. Shape legend: N batch (1), t tokens so far, E d_model.

The part ``latent_decode`` of ``<device>.json`` (figure-ready: every list runs along
``lengths``)::

    {
      "config": {"d_model", "num_heads", "head_dim", "gqa_kv_heads", "kv_lora_rank",
                 "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "batch", "layers",
                 "dtype", "threads", "repeat"},
      "lengths": [256, 512, 1024, 2048, 4096],          # t, the generated token's position + 1
      "designs": {                                       # in this order
        "mha" | "gqa" | "mla_expanded" | "mla_absorbed": {
          "label": "MHA" | "GQA (2 kv heads)" | "MLA, expanded" | "MLA, absorbed",
          "cache_numbers_per_token": int,                # per layer
          "cache_bytes_per_token": int,                  # per layer, float32
          "cache_mib": [float, ...],                     # the cache at t - 1 tokens, measured
          "time_s": [float, ...],                        # seconds per generated token
          "parameters": int                              # the layer's weights
        }
      },
      "slopes": {name: float},                           # log-log slope of time_s against t
      "protocol": str, "machine": {...}, "versions": {...}, "date": "YYYY-MM-DD"
    }
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from attention_ref import KVCache, LatentCache, MultiHeadAttention, MultiHeadLatentAttention

from . import protocol

LATENT_DECODE_LENGTHS = (256, 512, 1024, 2048, 4096)
LATENT_DECODE_CONFIG = {
    "d_model": 512,
    "num_heads": 8,
    "head_dim": 64,  # MHA and GQA: each head's query, key and value width
    "gqa_kv_heads": 2,  # GQA: 4 query heads share each key/value head
    "kv_lora_rank": 128,  # MLA: the latent, 2 head widths
    "qk_nope_head_dim": 64,  # MLA: each head's query/key features without positions
    "qk_rope_head_dim": 32,  # MLA: the rotary features, half a head (as DeepSeek-V2)
    "v_head_dim": 64,
}
DESIGNS = {  # name: label
    "mha": "MHA",
    "gqa": "GQA (2 kv heads)",
    "mla_expanded": "MLA, expanded",
    "mla_absorbed": "MLA, absorbed",
}
PREFILL_CHUNK = 256  # the prompt enters the cache in chunks: scores stay (H, 256, t)

Cache = KVCache | LatentCache  # keys and values, or MLA's latents and rotated keys
Step = Callable[[Tensor, Cache], Tensor]  # (token (N, 1, E), cache) -> (N, 1, E)


def layers(config: dict[str, int]) -> dict[str, tuple[nn.Module, Step, type[Cache]]]:
    """Each design's attention layer (seeded, eval mode), its step with a cache, and the
    cache it keeps."""
    torch.manual_seed(0)
    E, H, D = config["d_model"], config["num_heads"], config["head_dim"]
    mha = MultiHeadAttention(E, H, head_dim=D, bias=False, rope_base=10000.0).eval()
    gqa = MultiHeadAttention(
        E, H, head_dim=D, num_kv_heads=config["gqa_kv_heads"], bias=False, rope_base=10000.0
    ).eval()
    mla = MultiHeadLatentAttention(
        E,
        H,
        kv_lora_rank=config["kv_lora_rank"],
        qk_nope_head_dim=config["qk_nope_head_dim"],
        qk_rope_head_dim=config["qk_rope_head_dim"],
        v_head_dim=config["v_head_dim"],
    ).eval()

    def heads(module: nn.Module) -> Step:
        return lambda x, cache: module(x, is_causal=True, kv_cache=cache, need_weights=False)[0]

    def latent(absorb: bool) -> Step:
        return lambda x, cache: mla(x, is_causal=True, kv_cache=cache, absorb=absorb)

    return {
        "mha": (mha, heads(mha), KVCache),
        "gqa": (gqa, heads(gqa), KVCache),
        "mla_expanded": (mla, latent(False), LatentCache),
        "mla_absorbed": (mla, latent(True), LatentCache),
    }


def prefill(
    step: Step, x: Tensor, chunk: int = PREFILL_CHUNK, kind: type[Cache] = KVCache
) -> Cache:
    """A cache holding the tokens of ``x`` ``(N, t, E)``, filled ``chunk`` tokens at a time."""
    cache = kind()
    for start in range(0, x.size(1), chunk):
        step(x[:, start : start + chunk], cache)
    return cache


def cache_bytes(cache: Cache) -> int:
    """The bytes of the tensors a cache holds."""
    return sum(t.numel() * t.element_size() for t in cache.held)


@torch.no_grad()
def run_latent_decode(
    lengths: Sequence[int] = LATENT_DECODE_LENGTHS,
    repeat: int = 5,
    config: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Time one generation step of each design at each length t, and measure its cache (CPU).

    Returns:
        The ``latent_decode`` part (the module docstring shows its keys): seconds per
        generated token, the fastest of ``repeat`` rounds, and the cache's size.
    """
    if not lengths or min(lengths) < 2:
        raise ValueError(f"lengths: expected t >= 2 (a cache of t - 1 tokens), got {lengths}")
    config = dict(LATENT_DECODE_CONFIG if config is None else config)
    designs = layers(config)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, max(lengths), config["d_model"], generator=gen)  # (N, t, E)
    times: dict[str, list[float]] = {name: [] for name in designs}
    mib: dict[str, list[float]] = {name: [] for name in designs}
    per_token: dict[str, int] = {}
    with protocol.progress(len(lengths) * repeat * len(designs), "latent-decode") as bar:
        for t in lengths:
            fns = {}
            for name, (_, step, kind) in designs.items():
                cache = prefill(step, x[:, : t - 1], kind=kind)  # the prompt: t - 1 tokens cached
                per_token[name] = cache_bytes(cache) // (t - 1)
                mib[name].append(protocol.sig(cache_bytes(cache) / 2**20) or 0.0)

                def generate(step: Step = step, cache: Cache = cache, t: int = t) -> Tensor:
                    return step(x[:, t - 1 : t], copy.copy(cache))  # the cache stays at t - 1

                fns[name] = generate
            measured = protocol.round_robin(fns, repeat, "cpu", bar, label=f"t={t}")
            for name in designs:
                times[name].append(min(measured[name]))
            bar.write(
                f"t={t:5d}: "
                + ", ".join(f"{name} {times[name][-1] * 1e3:.3f} ms" for name in designs)
            )
    return {
        "config": {
            **config,
            "batch": 1,
            "layers": 1,
            "dtype": "float32",
            "threads": torch.get_num_threads(),
            "repeat": repeat,
        },
        "lengths": list(lengths),
        "designs": {
            name: {
                "label": DESIGNS[name],
                "cache_numbers_per_token": per_token[name] // 4,  # float32
                "cache_bytes_per_token": per_token[name],
                "cache_mib": mib[name],
                "time_s": [float(f"{s:.4g}") for s in times[name]],
                "parameters": sum(p.numel() for p in module.parameters()),
            }
            for name, (module, _, _) in designs.items()
        },
        "slopes": {  # log-log least squares
            name: round(protocol.fit_slope(lengths, times[name]) or 0.0, 2) for name in designs
        },
        "protocol": protocol.PROTOCOL,
        "machine": protocol.machine("cpu"),
        "versions": protocol.versions(),
        "date": protocol.now()[:10],
    }
