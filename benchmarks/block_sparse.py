"""What skipping tiles buys: ``chunked_attention`` with a mask function, against the same call
with a mask that allows everything, and against SDPA given the mask as a dense tensor.

At n = 8192 with N = 1, H = 4, D = 64 and float32, forward and forward + backward:

* ``all``: ``chunked_attention(mask_mod=...)`` with a mask that allows every key, so every
  tile is computed (the same loop, the yardstick of the ratios);
* ``causal``, ``window`` (a causal sliding window of 512 keys) and ``documents`` (causal
  documents of 1024 tokens, packed): the tiles the mask leaves empty are skipped;
* ``sdpa_window``, ``sdpa_documents``: ``F.scaled_dot_product_attention`` with the same mask
  as a dense bool (n, n) tensor, which cannot skip anything; ``sdpa``: SDPA with no mask,
  every key (as ``all``), the yardstick of memory (as in `benchmarks.attention`'s targets).

Each mask's tile plan (``attention_ref.tile_plan.plan_tiles``) is built once, before the
timing, as FlexAttention's ``BlockMask`` is built once for every layer; the time it takes is
saved beside (``plan_s``). Time and extra peak memory (one call in a fresh process) follow
`benchmarks.protocol`; the plan and the dense mask are made before the peak is reset (they are
inputs), and the memory freed before is given back to the OS.
Shape legend: N batch, H heads, n = L = S, D head width.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from attention_ref import create_mask
from attention_ref.chunked import chunked_attention
from attention_ref.mask_mods import and_masks, causal, document, sliding_window
from attention_ref.tile_plan import plan_tiles

from . import protocol
from .attention import BATCH, HEAD_DIM, HEADS, inputs, train_step
from .protocol import sig

N_DEFAULT = 8192
BLOCK_SIZE = (512, 512)  # tiles of 512 × 512: a 512-key window touches 2 of 16 per row
WINDOW = 512
DOCUMENT = 1024
MASKS = ("all", "causal", "window", "documents")
DENSE = ("window", "documents")  # also run as SDPA with a dense mask
#: time with the mask over time with every tile, forward and forward + backward
TARGETS = {"causal": 0.65, "window": 0.2, "documents": 0.25}
MEMORY_TARGET = 3.0  # extra peak memory of chunked_attention with a mask over SDPA's


def _allow_all(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
    return kv_idx >= 0  # every key: every tile is full


def mask_mod(name: str, n: int) -> Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]:
    """The mask function called ``name`` for n tokens."""
    if name == "all":
        return _allow_all
    if name == "causal":
        return causal()
    if name == "window":
        return and_masks(causal(), sliding_window(WINDOW))
    if name == "documents":  # packed documents of DOCUMENT tokens, causal inside each
        return and_masks(causal(), document(torch.arange(n) // DOCUMENT))
    raise ValueError(f"name: expected one of {MASKS}, got {name!r}")


VARIANTS = (*MASKS, *(f"sdpa_{name}" for name in DENSE), "sdpa")


def variants(
    n: int, q: Tensor, names: tuple[str, ...] = VARIANTS
) -> dict[str, Callable[[Tensor, Tensor, Tensor], Tensor]]:
    """The functions of (query, key, value) called ``names``; their plans and dense masks
    made now."""
    fns: dict[str, Callable[[Tensor, Tensor, Tensor], Tensor]] = {}
    for name in names:
        if name in MASKS:
            plan = plan_tiles(mask_mod(name, n), BATCH, HEADS, n, n, BLOCK_SIZE, device=q.device)
            fns[name] = functools.partial(chunked_attention, mask_mod=plan)
        elif name == "sdpa":
            fns[name] = F.scaled_dot_product_attention  # no mask: every key, as "all"
        else:  # the mask as a dense bool tensor (1, 1, n, n)
            dense = create_mask(mask_mod(name.removeprefix("sdpa_"), n), 1, 1, n, n)
            fns[name] = functools.partial(F.scaled_dot_product_attention, attn_mask=dense)
    return fns


def plans(n: int) -> dict[str, dict[str, Any]]:
    """Each mask's tiles (skipped of total) and the time its plan takes to build."""
    found = {}
    for name in MASKS:
        start = time.perf_counter()
        plan = plan_tiles(mask_mod(name, n), BATCH, HEADS, n, n, BLOCK_SIZE)
        seconds = time.perf_counter() - start
        found[name] = {
            "tiles": plan.total,
            "skipped": plan.skipped,
            "partial": len(plan.partial),
            "plan_s": sig(seconds),
        }
    return found


def measure_memory_here(name: str, n: int, train: bool) -> dict[str, Any]:
    """One call of one variant in this (fresh) process: its extra peak (VmHWM), in bytes."""
    small = inputs(64, "cpu")
    warm_up = variants(64, small[0], (name,))[name]
    q, k, v = inputs(n, "cpu")
    fn = variants(n, q, (name,))[name]  # its plan or dense mask exists before the peak is reset
    if train:
        warm_up, fn = functools.partial(train_step, warm_up), functools.partial(train_step, fn)
    with torch.no_grad():
        warm_up(*small)  # load kernels, start threads, at a tiny size
        del warm_up
        extra = protocol.peak_bytes(functools.partial(fn, q, k, v), trim=True)
    return {"name": name, "n": n, "train": train, "bytes": extra}


def measure_memory(name: str, n: int, train: bool = False) -> int | None:
    """`measure_memory_here` in a fresh Python process; None if it failed."""
    args = [name, str(n)] + (["--train"] if train else [])
    what = f"memory of {name} at n={n}"
    found = protocol.in_fresh_process("benchmarks.block_sparse", *args, what=what)
    return found["bytes"] if found else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return sig(a / b, 3) if a and b else None


def targets(part: dict[str, Any]) -> dict[str, Any]:
    """Pass or fail of each goal, from the measured times and memories of ``part``."""
    out: dict[str, Any] = {}

    def goal(key: str, value: float | None, op: str, bound: float) -> None:
        ok = None if value is None else (value <= bound if op == "<=" else value < bound)
        out[key] = {"value": value, "target": f"{op} {bound:g}", "pass": ok}

    for phase in ("forward", "train"):
        time_s, peak = part[phase]["time_s"], part[phase]["peak_mib"]
        for name, bound in TARGETS.items():
            goal(
                f"{phase}_{name}_over_all", _ratio(time_s.get(name), time_s.get("all")), "<=", bound
            )
        for name in DENSE:
            ratio = _ratio(time_s.get(name), time_s.get(f"sdpa_{name}"))
            goal(f"{phase}_{name}_over_sdpa_dense", ratio, "<", 1.0)
        worst = [_ratio(peak.get(name), peak.get("sdpa")) for name in TARGETS]
        value = None if None in worst else max(w for w in worst if w is not None)
        goal(f"{phase}_memory_over_sdpa", value, "<=", MEMORY_TARGET)
    return out


def run_block_sparse(n: int = N_DEFAULT, repeat: int = 5, memory: bool = True) -> dict[str, Any]:
    """Time (and measure) every variant at ``n``, forward and forward + backward.

    Returns:
        The ``"block_sparse"`` part of the results: ``config``, ``masks``, ``forward`` and
        ``train`` (each ``time_s``, ``time_median_s``, ``peak_mib``: per variant),
        ``ratios`` (time over ``all``), ``targets``, ``machine``, ``versions``, ``date``.
    """
    found = protocol.machine("cpu")
    q, k, v = inputs(n, "cpu")
    fns = variants(n, q)
    part: dict[str, Any] = {}
    for phase in ("forward", "train"):
        train = phase == "train"
        calls = {
            name: functools.partial(train_step, fn, q, k, v)
            if train
            else functools.partial(fn, q, k, v)
            for name, fn in fns.items()
        }
        bar = protocol.progress(repeat * len(calls), f"block-sparse {phase}")
        with bar, torch.no_grad():
            times = protocol.round_robin(calls, repeat, "cpu", bar, label=f"n={n}")
        peaks = {name: measure_memory(name, n, train) if memory else None for name in fns}
        part[phase] = {
            "time_s": {name: sig(min(t)) for name, t in times.items()},
            "time_median_s": {name: sig(statistics.median(t)) for name, t in times.items()},
            "peak_mib": {name: sig(p / 2**20, 3) if p else None for name, p in peaks.items()},
        }
    del q, k, v, fns
    ratios = {
        phase: {
            name: _ratio(part[phase]["time_s"][name], part[phase]["time_s"]["all"])
            for name in MASKS[1:]
        }
        for phase in ("forward", "train")
    }
    found["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return {
        "config": {
            "batch": BATCH,
            "heads": HEADS,
            "head_dim": HEAD_DIM,
            "dtype": "float32",
            "n": n,
            "block_size": list(BLOCK_SIZE),
            "window": WINDOW,
            "document": DOCUMENT,
            "repeat": repeat,
            "time": protocol.PROTOCOL + "; forward under no_grad, train = forward with "
            "gradients, then backward of out.sum()",
            "plan": "each mask's tile plan built once before the timing (plan_tiles), as "
            "FlexAttention's BlockMask; its own time is masks.<name>.plan_s",
            "memory": "extra peak of one call in a fresh process; the plan and the dense mask "
            "are inputs, made before",
        },
        "masks": plans(n),
        **part,
        "ratios": ratios,
        "targets": targets(part),
        "machine": found,
        "versions": protocol.versions(),
        "date": protocol.now(),
    }


if __name__ == "__main__":  # the fresh process of measure_memory: NAME N [--train]
    print(json.dumps(measure_memory_here(sys.argv[1], int(sys.argv[2]), "--train" in sys.argv[3:])))
