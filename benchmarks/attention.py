"""Time and peak memory of each attention implementation as n grows, forward and training.

At n = 512 … 8192 with N = 1, H = 4, D = 64 and float32 it measures:

* time: the `benchmarks.protocol` rounds, in this process, under ``no_grad``;
* extra peak memory: one call in a fresh process per (implementation, n), as
  `benchmarks.protocol` measures it (on CPU Linux's ``VmHWM`` minus the ``VmRSS`` before the
  call; on CUDA ``torch.cuda.max_memory_allocated`` minus the memory allocated before);
* this machine's float32 GEMM throughput (GFLOP/s of a 2048 × 2048 matmul), the yardstick for
  attention's 4·N·H·n²·D FLOPs (``attention_ref.attention_flops``);
* training: the forward pass with gradients on, then the backward pass of ``out.sum()``, for
  the plain reference, ``chunked_attention`` and PyTorch's SDPA, timed and measured the same
  way (``"train"``).

`targets` compares the ratios at the largest n with the goals they were built to.
Shape legend: N batch, H heads, n = L = S sequence length, D per-head width.
"""

from __future__ import annotations

import functools
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from attention_ref import (
    attention_flops,
    chunked_attention,
    linear_attention,
    scaled_dot_product_attention,
    sliding_window_attention,
)
from attention_ref.chunked import DEFAULT_BLOCK_SIZE

from . import protocol
from .low_precision import BOUND
from .protocol import sig

BATCH, HEADS, HEAD_DIM = 1, 4, 64
WINDOW = 256  # sliding-window attention: each query sees 2·256 - 1 keys
SIZES = (512, 1024, 2048, 4096, 8192)
QUICK_SIZES = (256, 512, 1024)
GEMM_SIZE = 2048
TARGETS = {  # at n = 8192, all from one run
    "chunked_over_sdpa_time": ("<=", 1.3),
    "chunked_fraction_of_gemm": (">=", 0.6),
    "chunked_over_sdpa_memory": ("<=", 3.0),
    "reference_over_chunked_memory": (">=", 20.0),
    "chunked_over_sdpa_train_time": ("<=", 1.5),
    "chunked_over_sdpa_train_memory": ("<=", 3.0),
    "low_precision_worst_over_torch": ("<=", BOUND),
}

#: name -> (function of (query, key, value), its kind in the cost model)
IMPLEMENTATIONS: dict[str, tuple[Callable[[Tensor, Tensor, Tensor], Tensor], str]] = {
    "reference": (scaled_dot_product_attention, "softmax"),
    "chunked": (chunked_attention, "softmax"),
    "sdpa": (F.scaled_dot_product_attention, "softmax"),
    "local": (lambda q, k, v: sliding_window_attention(q, k, v, window=WINDOW), "local"),
    "linear": (linear_attention, "linear"),
}
#: the implementations timed with gradients: forward, then backward of ``out.sum()``
TRAIN_IMPLEMENTATIONS = ("reference", "chunked", "sdpa")


def inputs(n: int, device: str, seed: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    gen = torch.Generator().manual_seed(seed)
    shape = (BATCH, HEADS, n, HEAD_DIM)  # (N, H, n, D)
    q, k, v = (torch.randn(shape, generator=gen).to(device) for _ in range(3))
    return q, k, v


def gemm_gflops(device: str, size: int = GEMM_SIZE, repeat: int = 10) -> float:
    """Best float32 GFLOP/s of a ``size`` × ``size`` matmul: this machine's yardstick."""
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(size, size, generator=gen).to(device) for _ in range(2))
    out = torch.empty(size, size, device=device)
    for _ in range(3):
        torch.matmul(a, b, out=out)
    best = min(
        protocol.time_calls(lambda: torch.matmul(a, b, out=out), device) for _ in range(repeat)
    )
    return 2 * size**3 / best / 1e9


def train_step(fn: Callable[[Tensor, Tensor, Tensor], Tensor], *qkv: Tensor) -> Any:
    """Forward with gradients on, then backward of ``out.sum()``: the gradients of q, k, v."""
    leaves = [x.detach().requires_grad_() for x in qkv]
    with torch.enable_grad():
        return torch.autograd.grad(fn(*leaves).sum(), leaves)


def measure_memory_here(name: str, n: int, device: str, train: bool = False) -> dict[str, Any]:
    """One call of one implementation in this (fresh) process: its extra peak, in bytes.
    ``train``: the forward and backward pass (`train_step`), the gradients included."""
    fn = IMPLEMENTATIONS[name][0]
    call = functools.partial(train_step, fn) if train else fn
    with torch.no_grad():
        call(*inputs(64, device))  # warm-up: load kernels, start threads, at a tiny size
        qkv = inputs(n, device)
        extra = protocol.peak_bytes(functools.partial(call, *qkv), device)
    method = protocol.PEAK_METHOD[device]
    return {"name": name, "n": n, "train": train, "bytes": extra, "method": method}


def measure_memory(name: str, n: int, device: str, train: bool = False) -> int | None:
    """Run `measure_memory_here` in a fresh Python process; None if it failed."""
    args = ["--device", device, "--measure-memory", name, str(n)] + (["--train"] if train else [])
    found = protocol.in_fresh_process("benchmarks", *args, what=f"memory of {name} at n={n}")
    return found["bytes"] if found else None


def _fits(name: str, n: int, device: str, train: bool = False) -> bool:
    """The plain reference materializes (N, H, n, n) several times: skip it if it cannot fit."""
    if name != "reference":
        return True
    # float32 n × n matrices alive at the peak: measured 3 forward, 6 forward + backward
    need = (7 if train else 4) * BATCH * HEADS * n * n * 4
    if device == "cuda":
        return need < 0.8 * torch.cuda.get_device_properties(0).total_memory
    return need < 0.5 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def _slopes(sizes: Sequence[int], results: dict[str, dict[str, list]]) -> dict[str, Any]:
    """Log-log slopes of time and memory against n, from n = 1024 up where there are two."""
    fit_from = [n for n in sizes if n >= 1024] if sum(n >= 1024 for n in sizes) >= 2 else sizes
    select = [i for i, n in enumerate(sizes) if n in fit_from]
    return {
        "fit_sizes": list(fit_from),
        "time": {
            name: sig(protocol.fit_slope(fit_from, [r["time_s"][i] for i in select]), 3)
            for name, r in results.items()
        },
        "memory": {
            name: sig(protocol.fit_slope(fit_from, [r["peak_mib"][i] for i in select]), 3)
            for name, r in results.items()
        },
    }


def _flops(name: str, n: int, batch: int = 1, heads: int = 1) -> int:
    kind = IMPLEMENTATIONS[name][1]
    window = WINDOW if kind == "local" else None
    return attention_flops(n, d_k=HEAD_DIM, batch=batch, heads=heads, kind=kind, window=window)


def run_forward(
    device: str,
    sizes: Sequence[int],
    repeat: int,
    names: Sequence[str],
    memory: bool,
) -> dict[str, Any]:
    """The forward pass: time, GFLOP/s, extra peak memory and error against SDPA, per n.

    Returns the top-level keys of the saved results (``device``, ``date``, ``machine``,
    ``versions``, ``config``, ``gemm_gflops``, ``results``, ``slopes``).
    """
    found = protocol.machine(device)
    if found["load_average"][0] > 0.25 * (os.cpu_count() or 1):
        print(
            f"warning: load average {found['load_average']}: other work is running, the "
            "timings will be noisy (the load is saved with the results)",
            file=sys.stderr,
        )
    gemm = [gemm_gflops(device)]
    results: dict[str, dict[str, list]] = {
        name: {"n": [], "time_s": [], "time_median_s": [], "gflops": [], "peak_mib": []}
        | {"max_abs_diff_vs_sdpa": []}
        for name in names
    }
    with protocol.progress(len(sizes) * repeat * len(names), "forward") as bar:
        for n in sizes:
            query, key, value = inputs(n, device)
            fns = {
                name: functools.partial(IMPLEMENTATIONS[name][0], query, key, value)
                for name in names
                if _fits(name, n, device)
            }
            bar.total -= repeat * (len(names) - len(fns))
            with torch.no_grad():
                exact = F.scaled_dot_product_attention(query, key, value)
                diffs = {name: (fn() - exact).abs().max().item() for name, fn in fns.items()}
                times = protocol.round_robin(fns, repeat, device, bar, label=f"n={n}")
            del query, key, value, exact
            for name in names:
                best = min(times[name]) if name in times else None
                peak = measure_memory(name, n, device) if memory and name in fns else None
                flops = _flops(name, n, batch=BATCH, heads=HEADS)
                row = results[name]
                row["n"].append(n)
                row["time_s"].append(sig(best))
                row["time_median_s"].append(sig(statistics.median(times[name])) if best else None)
                row["gflops"].append(round(flops / best / 1e9, 1) if best else None)
                row["peak_mib"].append(sig(peak / 2**20, 3) if peak else None)
                row["max_abs_diff_vs_sdpa"].append(sig(diffs.get(name), 2))
            bar.write(f"n={n}: " + ", ".join(f"{k} {min(v):.4g}s" for k, v in times.items()))
    gemm.append(gemm_gflops(device))  # again at the end: keep the better of the two
    flops_ratio = {
        name: sig(protocol.fit_slope(sizes, [_flops(name, n) for n in sizes]), 3) for name in names
    }
    found["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return {
        "device": device,
        "date": protocol.now(),
        "machine": found,
        "versions": protocol.versions(),
        "config": {
            "batch": BATCH,
            "heads": HEADS,
            "head_dim": HEAD_DIM,
            "dtype": "float32",
            "window": WINDOW,
            "block_size": list(DEFAULT_BLOCK_SIZE),
            "repeat": repeat,
            "sizes": list(sizes),
            "time": protocol.PROTOCOL + ", under no_grad",
            "memory": "extra peak of one call in a fresh process (see benchmarks.attention)",
            "flops": "attention_flops: 2 per multiply-add of the matrix products",
        },
        "gemm_gflops": round(max(gemm), 1),
        "results": results,
        "slopes": _slopes(sizes, results) | {"flops_formula": flops_ratio},
    }


def run_train(
    device: str, sizes: Sequence[int], repeat: int, names: Sequence[str], memory: bool
) -> dict[str, Any]:
    """Forward + backward: time and extra peak memory of each implementation against n."""
    results: dict[str, dict[str, list]] = {
        name: {"n": [], "time_s": [], "time_median_s": [], "peak_mib": []} for name in names
    }
    with protocol.progress(len(sizes) * repeat * len(names), "forward + backward") as bar:
        for n in sizes:
            query, key, value = inputs(n, device)
            fns = {
                name: functools.partial(train_step, IMPLEMENTATIONS[name][0], query, key, value)
                for name in names
                if _fits(name, n, device, train=True)
            }
            bar.total -= repeat * (len(names) - len(fns))
            times = protocol.round_robin(fns, repeat, device, bar, label=f"n={n}")
            del query, key, value
            for name in names:
                best = min(times[name]) if name in times else None
                peak = (
                    measure_memory(name, n, device, train=True) if memory and name in fns else None
                )
                row = results[name]
                row["n"].append(n)
                row["time_s"].append(sig(best))
                row["time_median_s"].append(sig(statistics.median(times[name])) if best else None)
                row["peak_mib"].append(sig(peak / 2**20, 3) if peak else None)
            bar.write(f"train n={n}: " + ", ".join(f"{k} {min(v):.4g}s" for k, v in times.items()))
    return {
        "results": results,
        "slopes": _slopes(sizes, results),
        "what": "forward with gradients on, then backward of out.sum(): the gradients of "
        "query, key and value; time and memory measured as for the forward pass",
    }


def targets(results: dict[str, Any]) -> dict[str, Any]:
    """The target ratios at the largest n (8192 by default), with pass/fail."""
    res = results.get("results", {})
    if not all(name in res for name in ("chunked", "sdpa", "reference")):
        return {}
    n = max(res["chunked"]["n"])

    def at(name: str, field: str) -> float | None:
        row = res[name]
        return row[field][row["n"].index(n)]

    def ratio(a: float | None, b: float | None) -> float | None:
        return sig(a / b, 3) if a and b else None

    def at_train(name: str, field: str) -> float | None:
        row = results.get("train", {}).get("results", {}).get(name)
        return row[field][row["n"].index(n)] if row and n in row["n"] else None

    accuracy = results.get("low_precision", {}).get("max_abs_error", {})
    worst = max((r["ratio"] for rows in accuracy.values() for r in rows.values()), default=None)
    values = {
        "chunked_over_sdpa_time": ratio(at("chunked", "time_s"), at("sdpa", "time_s")),
        "chunked_fraction_of_gemm": ratio(at("chunked", "gflops"), results["gemm_gflops"]),
        "chunked_over_sdpa_memory": ratio(at("chunked", "peak_mib"), at("sdpa", "peak_mib")),
        "reference_over_chunked_memory": ratio(
            at("reference", "peak_mib"), at("chunked", "peak_mib")
        ),
        "chunked_over_sdpa_train_time": ratio(
            at_train("chunked", "time_s"), at_train("sdpa", "time_s")
        ),
        "chunked_over_sdpa_train_memory": ratio(
            at_train("chunked", "peak_mib"), at_train("sdpa", "peak_mib")
        ),
        "low_precision_worst_over_torch": worst,
    }
    out: dict[str, Any] = {"n": n}
    for key, value in values.items():
        op, goal = TARGETS[key]
        ok = None if value is None else (value <= goal if op == "<=" else value >= goal)
        out[key] = {"value": value, "target": f"{op} {goal:g}", "pass": ok}
    return out
