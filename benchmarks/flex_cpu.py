"""PyTorch's FlexAttention on a CPU: what the first compiled call costs, and what follows (CPU).

At one size (N = 1, H = 4, n = L = S = 1024, D = 64, float32, a causal ``mask_mod`` given as
a ``BlockMask``) it measures:

* the first call of ``torch.compile(flex_attention)``: tracing and compiling the kernel, then
  running it once, with Inductor's caches disabled so that an earlier run on the machine does
  not make it look cheap;
* the steady state, by the `benchmarks.protocol` rounds: the compiled kernel, the eager
  ``flex_attention`` (which materializes the scores and warns that it does) and
  ``attention_ref.flex_reference``, all under ``no_grad``;
* whether the backward pass runs: torch 2.13 refuses it on a CPU as soon as an input
  requires a gradient; the message it raises is saved (``"backward"``).

Shape legend: N batch, H heads, n = L = S sequence length, D per-head width.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from attention_ref.mask_mods import causal, flex_reference

from . import protocol
from .protocol import sig

FLEX_CONFIG = {"batch": 1, "heads": 4, "n": 1024, "head_dim": 64, "dtype": "float32"}
EAGER = "flex_attention called without torch.compile"  # the eager path's UserWarning


def inputs(config: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded query, key and value ``(N, H, n, D)``."""
    gen = torch.Generator().manual_seed(0)
    shape = (config["batch"], config["heads"], config["n"], config["head_dim"])
    dtype = getattr(torch, config["dtype"])
    q, k, v = (torch.randn(shape, generator=gen, dtype=dtype) for _ in range(3))
    return q, k, v


def compiled_flex() -> Any:
    """``torch.compile(flex_attention)``, the fused kernel (compiled at its first call)."""
    return torch.compile(flex_attention)


def backward_error(config: dict[str, Any]) -> str | None:
    """The error ``flex_attention`` raises for inputs that require a gradient, or None."""
    q, k, v = (x.requires_grad_() for x in inputs({**config, "n": 128}))
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", EAGER, UserWarning)
            flex_attention(q, k, v).sum().backward()
    except (NotImplementedError, RuntimeError) as error:
        return f"{type(error).__name__}: {error}"
    return None


def run_flex_cpu(repeat: int = 5, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Time the first compiled call and the steady state of FlexAttention at one size (CPU).

    Returns:
        ``{"config", "first_call_s", "steady_s", "backward", "max_abs_diff", "machine",
        "versions", "date"}``: ``steady_s`` maps ``compiled``, ``eager`` and ``reference``
        to seconds per call (the fastest of ``repeat`` rounds); ``max_abs_diff`` is the
        compiled kernel's largest difference from ``flex_reference``.
    """
    config = dict(FLEX_CONFIG if config is None else config)
    N, H, n = config["batch"], config["heads"], config["n"]
    q, k, v = inputs(config)
    block_mask = create_block_mask(causal(), N, H, n, n, device="cpu")
    torch._dynamo.reset()  # forget the kernels compiled earlier in this process
    compiled = compiled_flex()
    with (
        torch.no_grad(),
        torch._inductor.config.patch(force_disable_caches=True),
        warnings.catch_warnings(),
    ):
        warnings.filterwarnings("ignore", "dynamo_pgo force disabled", UserWarning)
        start = time.perf_counter()
        out = compiled(q, k, v, block_mask=block_mask)
        first_call = time.perf_counter() - start
        reference = flex_reference(q, k, v, mask_mod=causal())

    def eager() -> torch.Tensor:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", EAGER, UserWarning)
            return flex_attention(q, k, v, block_mask=block_mask)

    fns = {
        "compiled": lambda: compiled(q, k, v, block_mask=block_mask),
        "eager": eager,
        "reference": lambda: flex_reference(q, k, v, mask_mod=causal()),
    }
    with torch.no_grad(), protocol.progress(len(fns) * repeat, "flex-cpu") as bar:
        times = protocol.round_robin(fns, repeat, "cpu", bar, label=f"n={n}")
    steady = {name: sig(min(t)) for name, t in times.items()}
    return {
        "config": {
            **config,
            "mask": "causal",
            "threads": torch.get_num_threads(),
            "repeat": repeat,
        },
        "first_call_s": sig(first_call),
        "steady_s": steady,
        "backward": backward_error(config),
        "max_abs_diff": sig((out - reference).abs().max().item()),
        "machine": protocol.machine("cpu"),
        "versions": protocol.versions(),
        "date": protocol.now()[:10],
    }
