"""Benchmark: time and peak memory of each attention implementation as n grows.

Run ``python -m attention_ref.bench`` (or ``nox -s bench``); ``--help`` lists the options.
It measures, at n = 512 … 8192 with N = 1, H = 4, E = 64 and float32:

* time: each implementation in turn, round after round, in this process (a round is one
  call, or the mean of enough calls to last 50 ms); the fastest round is kept, the least
  disturbed by other work on the machine;
* extra peak memory: one fresh process per (implementation, n), which builds the inputs,
  runs a tiny warm-up, resets the peak and makes one call. On CPU the peak is Linux's
  ``VmHWM`` (reset by writing 5 to ``/proc/self/clear_refs``) minus the ``VmRSS`` before the
  call; on CUDA ``torch.cuda.max_memory_allocated`` minus the memory allocated before;
* this machine's float32 GEMM throughput (GFLOP/s of a 2048 × 2048 matmul), the yardstick for
  attention's 4·N·H·n²·E FLOPs ([`attention_flops`][attention_ref.attention_flops]);
* training: the forward pass with gradients on, then the backward pass of ``out.sum()``, for
  the plain reference, ``chunked_attention`` and PyTorch's SDPA: time (measured as above) and
  extra peak memory (a fresh process each, as above), in ``"train"``;
* low precision: each function's largest error in float16 and bfloat16 against float64 math,
  beside PyTorch's ([`attention_ref.accuracy`][attention_ref.accuracy]), in ``"low_precision"``;
* decoding (CPU): time per generated token with and without the KV cache as the sequence
  grows (``attention_ref.bench_decode``), in ``"decode"``. ``--only decode`` measures only
  this and adds it to the saved ``<device>.json``, leaving the rest as it is.

It writes ``docs/bench-results/<device>.json`` (small, committed) and PNG/SVG plots in
``bench-out/`` (not committed), prints a table, the log-log slopes of time against n, and
the target ratios at n = 8192. `plot_time` and `plot_memory` draw the figures from
the JSON alone; the docs build calls them and never benchmarks.

Shape legend: N batch, H heads, n = L = S sequence length, E per-head width.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import Tensor

from .accuracy import low_precision_errors
from .attention import scaled_dot_product_attention
from .bench_decode import DECODE_LENGTHS, plot_decode, run_decode
from .chunked import DEFAULT_BLOCK_SIZE, chunked_attention
from .cost import attention_flops
from .linear import linear_attention
from .local import sliding_window_attention

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "IMPLEMENTATIONS",
    "TRAIN_IMPLEMENTATIONS",
    "main",
    "plot_memory",
    "plot_time",
    "plot_train_memory",
    "plot_train_time",
]

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
    "low_precision_worst_over_torch": ("<=", 1.5),
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

_LABELS = {
    "en": {
        "reference": "plain reference",
        "chunked": "chunked_attention",
        "sdpa": "PyTorch SDPA",
        "local": f"sliding window (w={WINDOW})",
        "linear": "linear attention",
        "n": "sequence length n",
        "time": "time per call (s)",
        "memory": "extra peak memory (MiB)",
        "time_title": "Attention forward, N={batch}, h={heads}, d_k={head_dim}, {dtype}, {device}",
        "memory_title": "Extra peak memory, N={batch}, h={heads}, d_k={head_dim}, {dtype}, "
        "{device}",
        "train_time_title": "Forward + backward, N={batch}, h={heads}, d_k={head_dim}, {dtype}, "
        "{device}",
        "train_memory_title": "Extra peak memory, forward + backward, N={batch}, h={heads}, "
        "d_k={head_dim}, {dtype}, {device}",
        "slope": "slope",
        "gemm": "GEMM {gemm:.0f} GFLOP/s",
    },
    "zh": {
        "reference": "朴素参考实现",
        "chunked": "chunked_attention（分块）",
        "sdpa": "PyTorch SDPA",
        "local": f"滑动窗口（w={WINDOW}）",
        "linear": "线性注意力",
        "n": "序列长度 n",
        "time": "每次调用耗时（秒）",
        "memory": "额外峰值内存（MiB）",
        "time_title": "注意力前向耗时，N={batch}，h={heads}，d_k={head_dim}，{dtype}，{device}",
        "memory_title": "额外峰值内存，N={batch}，h={heads}，d_k={head_dim}，{dtype}，{device}",
        "train_time_title": "前向加反向耗时，N={batch}，h={heads}，d_k={head_dim}，"
        "{dtype}，{device}",
        "train_memory_title": "前向加反向的额外峰值内存，N={batch}，h={heads}，d_k={head_dim}，"
        "{dtype}，{device}",
        "slope": "斜率",
        "gemm": "GEMM {gemm:.0f} GFLOP/s",
    },
}


# ---------------------------------------------------------------- measuring


def _inputs(n: int, device: str, seed: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    gen = torch.Generator().manual_seed(seed)
    shape = (BATCH, HEADS, n, HEAD_DIM)  # (N, H, n, E)
    return tuple(torch.randn(shape, generator=gen).to(device) for _ in range(3))


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _time_once(fn: Callable[[], Any], device: str, calls: int = 1) -> float:
    """Seconds per call, averaged over ``calls`` back-to-back calls."""
    _sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    _sync(device)
    return (time.perf_counter() - start) / calls


def _calls_per_round(seconds_per_call: float, at_least: float = 0.05) -> int:
    """Enough calls for a timed round of ``at_least`` seconds: fast calls are averaged."""
    return max(1, min(1000, math.ceil(at_least / max(seconds_per_call, 1e-7))))


def gemm_gflops(device: str, size: int = GEMM_SIZE, repeat: int = 10) -> float:
    """Best float32 GFLOP/s of a ``size`` × ``size`` matmul: this machine's yardstick."""
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(size, size, generator=gen).to(device) for _ in range(2))
    out = torch.empty(size, size, device=device)
    for _ in range(3):
        torch.matmul(a, b, out=out)
    best = min(_time_once(lambda: torch.matmul(a, b, out=out), device) for _ in range(repeat))
    return 2 * size**3 / best / 1e9


def _proc_status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _train_step(fn: Callable[[Tensor, Tensor, Tensor], Tensor], *qkv: Tensor) -> Any:
    """Forward with gradients on, then backward of ``out.sum()``: the gradients of q, k, v."""
    leaves = [x.detach().requires_grad_() for x in qkv]
    with torch.enable_grad():
        return torch.autograd.grad(fn(*leaves).sum(), leaves)


def _measure_memory_here(name: str, n: int, device: str, train: bool = False) -> dict[str, Any]:
    """One call of one implementation in this (fresh) process: its extra peak, in bytes.
    ``train``: the forward and backward pass (`_train_step`), the gradients included."""
    fn = IMPLEMENTATIONS[name][0]
    call = functools.partial(_train_step, fn) if train else fn
    with torch.no_grad():
        call(*_inputs(64, device))  # warm-up: load kernels, start threads, at a tiny size
        query, key, value = _inputs(n, device)
        gc.collect()
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            out = call(query, key, value)
            torch.cuda.synchronize()
            extra = torch.cuda.max_memory_allocated() - before
            method = "torch.cuda.max_memory_allocated - memory_allocated before"
        else:
            Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
            before = _proc_status_kib("VmRSS")
            out = call(query, key, value)
            extra = (_proc_status_kib("VmHWM") - before) * 1024
            method = "VmHWM after - VmRSS before (after clear_refs 5)"
    del out
    return {"name": name, "n": n, "train": train, "bytes": extra, "method": method}


def measure_memory(name: str, n: int, device: str, train: bool = False) -> int | None:
    """Run `_measure_memory_here` in a fresh Python process; None if it failed."""
    cmd = [sys.executable, "-m", "attention_ref.bench", "--device", device]
    cmd += ["--measure-memory", name, str(n)] + (["--train"] if train else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"  memory of {name} at n={n} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])["bytes"]


def _fits(name: str, n: int, device: str, train: bool = False) -> bool:
    """The plain reference materializes (N, H, n, n) several times: skip it if it cannot fit."""
    if name != "reference":
        return True
    # float32 n × n matrices alive at the peak: measured 3 forward, 6 forward + backward
    need = (7 if train else 4) * BATCH * HEADS * n * n * 4
    if device == "cuda":
        return need < 0.8 * torch.cuda.get_device_properties(0).total_memory
    return need < 0.5 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def _fit_slope(ns: Sequence[int], values: Sequence[float | None]) -> float | None:
    """Least-squares slope of log(value) against log(n): the exponent p in value ∝ n^p."""
    points = [(math.log(n), math.log(v)) for n, v in zip(ns, values, strict=True) if v]
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx


def _sig(x: float | None, digits: int = 4) -> float | None:
    """Round to ``digits`` significant digits, for a small and stable JSON."""
    return None if x is None or x == 0 else round(x, digits - 1 - math.floor(math.log10(abs(x))))


def _machine(device: str) -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    machine = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "os": platform.platform(terse=True),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if device == "cuda":
        machine["gpu"] = torch.cuda.get_device_name(0)
        machine["cuda"] = torch.version.cuda
        machine["tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32
    return machine


def _versions() -> dict[str, str]:
    import numpy

    from . import __version__

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "attention_ref": __version__,
    }


def _slopes(sizes: Sequence[int], results: dict[str, dict[str, list]]) -> dict[str, Any]:
    """Log-log slopes of time and memory against n, from n = 1024 up where there are two."""
    fit_from = [n for n in sizes if n >= 1024] if sum(n >= 1024 for n in sizes) >= 2 else sizes
    select = [i for i, n in enumerate(sizes) if n in fit_from]
    return {
        "fit_sizes": list(fit_from),
        "time": {
            name: _sig(_fit_slope(fit_from, [r["time_s"][i] for i in select]), 3)
            for name, r in results.items()
        },
        "memory": {
            name: _sig(_fit_slope(fit_from, [r["peak_mib"][i] for i in select]), 3)
            for name, r in results.items()
        },
    }


def run_train(
    device: str, sizes: Sequence[int], repeat: int, names: Sequence[str], memory: bool
) -> dict[str, Any]:
    """Forward + backward: time and extra peak memory of each implementation against n."""
    results: dict[str, dict[str, list]] = {
        name: {"n": [], "time_s": [], "time_median_s": [], "peak_mib": []} for name in names
    }
    for n in sizes:
        query, key, value = _inputs(n, device)
        fns = {
            name: functools.partial(_train_step, IMPLEMENTATIONS[name][0], query, key, value)
            for name in names
            if _fits(name, n, device, train=True)
        }
        times: dict[str, list[float]] = {name: [] for name in fns}
        calls = {name: _calls_per_round(_time_once(fn, device)) for name, fn in fns.items()}
        for _ in range(repeat):  # round-robin, as for the forward pass
            for name, fn in fns.items():
                times[name].append(_time_once(fn, device, calls[name]))
        del query, key, value
        for name in names:
            best = min(times[name]) if name in times else None
            peak = measure_memory(name, n, device, train=True) if memory and name in fns else None
            row = results[name]
            row["n"].append(n)
            row["time_s"].append(_sig(best))
            row["time_median_s"].append(_sig(statistics.median(times[name])) if best else None)
            row["peak_mib"].append(_sig(peak / 2**20, 3) if peak else None)
        print(
            f"train n={n}: " + ", ".join(f"{k} {min(v):.4g}s" for k, v in times.items()),
            flush=True,
        )
    return {"results": results, "slopes": _slopes(sizes, results)}


def run(
    device: str = "cpu",
    sizes: Sequence[int] = SIZES,
    repeat: int = 5,
    names: Sequence[str] = tuple(IMPLEMENTATIONS),
    memory: bool = True,
    train: bool = True,
    accuracy: bool = True,
) -> dict[str, Any]:
    """Measure everything and return the results as the JSON-ready dict that is saved."""
    machine = _machine(device)
    if machine["load_average"][0] > 0.25 * (os.cpu_count() or 1):
        print(
            f"warning: load average {machine['load_average']}: other work is running, the "
            "timings will be noisy (the load is saved with the results)",
            file=sys.stderr,
        )
    gemm = [gemm_gflops(device)]
    results: dict[str, dict[str, list]] = {
        name: {"n": [], "time_s": [], "time_median_s": [], "gflops": [], "peak_mib": []}
        | {"max_abs_diff_vs_sdpa": []}
        for name in names
    }
    for n in sizes:
        query, key, value = _inputs(n, device)
        fns = {
            name: functools.partial(IMPLEMENTATIONS[name][0], query, key, value)
            for name in names
            if _fits(name, n, device)
        }
        times: dict[str, list[float]] = {name: [] for name in fns}
        with torch.no_grad():
            exact = F.scaled_dot_product_attention(query, key, value)
            diffs = {name: (fn() - exact).abs().max().item() for name, fn in fns.items()}
            calls = {name: _calls_per_round(_time_once(fn, device)) for name, fn in fns.items()}
            for _ in range(repeat):  # round-robin: a disturbance hits every implementation
                for name, fn in fns.items():
                    times[name].append(_time_once(fn, device, calls[name]))
        del query, key, value, exact
        for name in names:
            kind = IMPLEMENTATIONS[name][1]
            window = WINDOW if kind == "local" else None
            flops = attention_flops(
                n, d_k=HEAD_DIM, batch=BATCH, heads=HEADS, kind=kind, window=window
            )
            best = min(times[name]) if name in times else None
            peak = measure_memory(name, n, device) if memory and name in fns else None
            row = results[name]
            row["n"].append(n)
            row["time_s"].append(_sig(best))
            row["time_median_s"].append(_sig(statistics.median(times[name])) if best else None)
            row["gflops"].append(round(flops / best / 1e9, 1) if best else None)
            row["peak_mib"].append(_sig(peak / 2**20, 3) if peak else None)
            row["max_abs_diff_vs_sdpa"].append(_sig(diffs.get(name), 2))
        print(f"n={n}: " + ", ".join(f"{k} {min(v):.4g}s" for k, v in times.items()), flush=True)
    gemm.append(gemm_gflops(device))  # again at the end: keep the better of the two

    flops_ratio = {}
    for name in names:
        kind = IMPLEMENTATIONS[name][1]
        window = WINDOW if kind == "local" else None
        f = [attention_flops(n, d_k=HEAD_DIM, kind=kind, window=window) for n in sizes]
        flops_ratio[name] = _sig(_fit_slope(sizes, f), 3)
    slopes = _slopes(sizes, results) | {"flops_formula": flops_ratio}
    train_names = [name for name in TRAIN_IMPLEMENTATIONS if name in names]
    train_results = run_train(device, sizes, repeat, train_names, memory) if train else None
    machine["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    out = {
        "device": device,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine,
        "versions": _versions(),
        "config": {
            "batch": BATCH,
            "heads": HEADS,
            "head_dim": HEAD_DIM,
            "dtype": "float32",
            "window": WINDOW,
            "block_size": list(DEFAULT_BLOCK_SIZE),
            "repeat": repeat,
            "sizes": list(sizes),
            "time": "fastest of `repeat` round-robin rounds (a round: one call, or the mean of"
            " enough calls to last 50 ms), after a warm-up call, under no_grad",
            "memory": "extra peak of one call in a fresh process (see attention_ref.bench)",
            "flops": "attention_flops: 2 per multiply-add of the matrix products",
        },
        "gemm_gflops": round(max(gemm), 1),
        "results": results,
        "slopes": slopes,
    }
    if train_results is not None:
        out["train"] = train_results | {
            "what": "forward with gradients on, then backward of out.sum(): the gradients of "
            "query, key and value; time and memory measured as for the forward pass"
        }
    if accuracy:
        out["low_precision"] = low_precision_errors()
    out["targets"] = targets(out)
    return out


def targets(results: dict[str, Any]) -> dict[str, Any]:
    """The issue's target ratios at the largest n (8192 by default), with pass/fail."""
    res = results["results"]
    needed = ("chunked", "sdpa", "reference")
    if not all(name in res for name in needed):
        return {}
    n = max(res["chunked"]["n"])

    def at(name: str, field: str) -> float | None:
        row = res[name]
        return row[field][row["n"].index(n)]

    def ratio(a: float | None, b: float | None) -> float | None:
        return _sig(a / b, 3) if a and b else None

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
        op, bound = TARGETS[key]
        ok = None if value is None else (value <= bound if op == "<=" else value >= bound)
        out[key] = {"value": value, "target": f"{op} {bound:g}", "pass": ok}
    return out


# ---------------------------------------------------------------- reporting


def summary(results: dict[str, Any]) -> str:
    """A plain-text table of the results, the slopes and the targets."""
    res, lines = results["results"], []
    names = list(res)
    m = results["machine"]
    lines.append(
        f"{m.get('gpu') or m['cpu']} · torch {results['versions']['torch']} · "
        f"GEMM {results['gemm_gflops']:.1f} GFLOP/s · {results['device']}"
    )
    lines.append(f"{'n':>6} | " + " | ".join(f"{name:>21}" for name in names))
    lines.append(f"{'':>6} | " + " | ".join(f"{'ms':>6} {'GF/s':>6} {'MiB':>7}" for _ in names))
    for i, n in enumerate(results["config"]["sizes"]):
        cells = []
        for name in names:
            t, g, p = (res[name][f][i] for f in ("time_s", "gflops", "peak_mib"))
            cells.append(
                f"{t * 1e3 if t else float('nan'):6.1f} {g or float('nan'):6.1f} "
                f"{p if p is not None else float('nan'):7.1f}"
            )
        lines.append(f"{n:>6} | " + " | ".join(cells))
    slopes = results["slopes"]
    lines.append(f"log-log slope of time vs n over n = {slopes['fit_sizes']}:")
    for name in names:
        lines.append(
            f"  {name:>10}: time {slopes['time'][name]}, memory {slopes['memory'][name]}, "
            f"FLOPs formula {slopes['flops_formula'][name]}"
        )
    train = results.get("train")
    if train:
        names = list(train["results"])
        lines.append("forward + backward:")
        lines.append(f"{'n':>6} | " + " | ".join(f"{name:>14}" for name in names))
        lines.append(f"{'':>6} | " + " | ".join(f"{'ms':>6} {'MiB':>7}" for _ in names))
        for i, n in enumerate(results["config"]["sizes"]):
            cells = []
            for name in names:
                t, p = (train["results"][name][f][i] for f in ("time_s", "peak_mib"))
                cells.append(
                    f"{t * 1e3 if t else float('nan'):6.1f} "
                    f"{p if p is not None else float('nan'):7.1f}"
                )
            lines.append(f"{n:>6} | " + " | ".join(cells))
    accuracy = results.get("low_precision")
    if accuracy:
        lines.append("low precision, max abs error vs float64 math (attention_ref / PyTorch):")
        for dtype, rows in accuracy["max_abs_error"].items():
            for name, row in rows.items():
                lines.append(
                    f"  {dtype:>8} {name:>28}: {row['ours']:.3g} / {row['torch']:.3g} "
                    f"= {row['ratio']:.3g}"
                )
    tg = results.get("targets") or {}
    if tg:
        lines.append(f"targets at n = {tg['n']}:")
        for key, item in tg.items():
            if key == "n":
                continue
            verdict = {True: "PASS", False: "FAIL", None: "n/a"}[item["pass"]]
            lines.append(f"  {key:>30}: {item['value']} (target {item['target']}) {verdict}")
    return "\n".join(lines)


def _caption(results: dict[str, Any], lang: str = "en") -> str:
    m, v = results["machine"], results["versions"]
    cores = {"en": "{cpu}, {cores} cores", "zh": "{cpu}，{cores} 核"}[lang]
    where = m.get("gpu") or cores.format(**m)
    return (
        f"{where} · GEMM {results['gemm_gflops']:.0f} GFLOP/s · torch {v['torch']} · "
        f"numpy {v['numpy']} · Python {v['python']} · {results['date']}"
    )


@functools.cache
def _cjk_font() -> str | None:
    """A font family with Chinese glyphs (mplfonts' bundled one or a system font), if any."""
    from matplotlib import font_manager

    try:
        import mplfonts

        fonts = Path(mplfonts.__file__).parent / "fonts"
        for path in sorted(fonts.glob("NotoSansCJK*.otf")):
            font_manager.fontManager.addfont(str(path))
    except ImportError:
        pass
    available = {f.name for f in font_manager.fontManager.ttflist}
    for family in ("Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "SimHei"):
        if family in available:
            return family
    return None


def _with_slope(label: str, slope: float, lang: str) -> str:
    """A legend entry with its fitted slope: "chunked_attention (slope 1.93)"; in Chinese,
    full-width parentheses, one pair: "chunked_attention（分块，斜率 1.93）"."""
    word = _LABELS[lang]["slope"]
    if lang != "zh":
        return f"{label} ({word} {slope:.2f})"
    if label.endswith("）"):
        return f"{label[:-1]}，{word} {slope:.2f}）"
    return f"{label}（{word} {slope:.2f}）"


def _plot(results: dict[str, Any], lang: str, field: str, train: bool = False) -> Figure:
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    if lang not in _LABELS:
        raise ValueError(f"lang: expected one of {tuple(_LABELS)}, got {lang!r}")
    labels, config = _LABELS[lang], results["config"]
    if train and "train" not in results:
        raise KeyError(
            "train: these results have no forward + backward measurements; rerun the "
            "benchmark (`nox -s bench`) with this version of attention_ref"
        )
    measured = results["train"] if train else results
    font = {"family": ["DejaVu Sans", _cjk_font()]} if lang == "zh" and _cjk_font() else {}
    fig = Figure(figsize=(7.5, 4.8), layout="constrained")
    ax = fig.add_subplot()
    slopes = measured["slopes"]["time" if field == "time_s" else "memory"]
    for name, row in measured["results"].items():
        points = [(n, y) for n, y in zip(row["n"], row[field], strict=True) if y]
        if not points:
            continue
        slope = slopes.get(name)
        label = (
            _with_slope(labels.get(name, name), slope, lang) if slope else labels.get(name, name)
        )
        ax.plot(*zip(*points, strict=True), marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(config["sizes"], labels=[str(n) for n in config["sizes"]])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_yscale("log")
    ax.set_xlabel(labels["n"], fontdict=font)
    ax.set_ylabel(labels["time" if field == "time_s" else "memory"], fontdict=font)
    title = ("train_" if train else "") + ("time_title" if field == "time_s" else "memory_title")
    title = labels[title].format(device=results["device"].upper(), **config)
    ax.set_title(title, fontdict=font, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_lines():
        ax.legend(prop=font and {"family": font["family"]}, fontsize=8)
    fig.text(
        0.5,
        0.0,
        _caption(results, lang),
        ha="center",
        va="bottom",
        fontsize=7,
        color="0.35",
        fontdict=font,
    )
    fig.get_layout_engine().set(h_pad=0.25)
    return fig


def plot_time(results: dict[str, Any], lang: str = "en") -> Figure:
    """Time per call against n, log-log, one line per implementation, from saved results.

    Args:
        results: The dict saved by the bench (``json.load`` of ``<device>.json``).
        lang: ``"en"`` or ``"zh"``, the language of the labels.

    Returns:
        A matplotlib ``Figure`` (not shown, not saved), with the machine and library
        versions in a caption line.
    """
    return _plot(results, lang, "time_s")


def plot_memory(results: dict[str, Any], lang: str = "en") -> Figure:
    """Extra peak memory against n, log-log, one line per implementation, from saved results.

    Args:
        results: The dict saved by the bench (``json.load`` of ``<device>.json``).
        lang: ``"en"`` or ``"zh"``.

    Returns:
        A matplotlib ``Figure`` with the machine and library versions in a caption line.
    """
    return _plot(results, lang, "peak_mib")


def plot_train_time(results: dict[str, Any], lang: str = "en") -> Figure:
    """Forward + backward time against n, log-log, from saved results (their ``"train"``).

    Raises:
        KeyError: If the results hold no forward + backward measurements.
    """
    return _plot(results, lang, "time_s", train=True)


def plot_train_memory(results: dict[str, Any], lang: str = "en") -> Figure:
    """Forward + backward extra peak memory against n, log-log, from saved results.

    Raises:
        KeyError: If the results hold no forward + backward measurements.
    """
    return _plot(results, lang, "peak_mib", train=True)


# ---------------------------------------------------------------- command line


def _sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(int(s) for s in text.split(","))
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected positive sizes like 512,1024, got {text!r}")
    return sizes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attention_ref.bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--sizes", type=_sizes, default=None, help="e.g. 512,1024,2048")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds per size")
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}, 2 rounds")
    parser.add_argument(
        "--out", type=Path, default=Path("docs/bench-results"), help="directory for <device>.json"
    )
    parser.add_argument(
        "--plots", type=Path, default=Path("bench-out"), help="directory for the PNG/SVG plots"
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the memory processes")
    parser.add_argument("--no-train", action="store_true", help="skip forward + backward")
    parser.add_argument(
        "--no-accuracy", action="store_true", help="skip the low-precision accuracy table"
    )
    parser.add_argument(
        "--only",
        default=",".join(IMPLEMENTATIONS),
        help="implementations, comma-separated; 'decode' alone measures only generation "
        "with and without the KV cache and adds it to the existing <device>.json",
    )
    parser.add_argument("--no-decode", action="store_true", help="skip the decoding benchmark")
    parser.add_argument("--measure-memory", nargs=2, metavar=("NAME", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--train", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch.cuda.is_available() is False on this machine")
    if args.measure_memory:
        name, n = args.measure_memory
        print(json.dumps(_measure_memory_here(name, int(n), args.device, train=args.train)))
        return 0
    names = [name for name in args.only.split(",") if name]
    if names == ["decode"]:
        return _main_decode(args)
    unknown = sorted(set(names) - set(IMPLEMENTATIONS))
    if unknown:
        parser.error(f"--only: unknown {unknown}, expected some of {list(IMPLEMENTATIONS)}")
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    repeat = 2 if args.quick and args.repeat == 5 else args.repeat

    results = run(
        args.device,
        sizes,
        repeat,
        names,
        memory=not args.no_memory,
        train=not args.no_train,
        accuracy=not args.no_accuracy,
    )
    if not args.no_decode and args.device == "cpu":
        results["decode"] = run_decode(DECODE_LENGTHS[:3] if args.quick else DECODE_LENGTHS, repeat)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / f"{args.device}.json"
    json_path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(summary(results))
    print(f"wrote {json_path}")
    args.plots.mkdir(parents=True, exist_ok=True)
    for lang in _LABELS:
        plots = [("time", plot_time), ("memory", plot_memory)]
        if "train" in results:
            plots += [("train-time", plot_train_time), ("train-memory", plot_train_memory)]
        if "decode" in results:
            plots += [("decode", plot_decode)]
        for what, plot in plots:
            fig = plot(results, lang)
            for ext in ("png", "svg"):
                fig.savefig(args.plots / f"{args.device}-{what}.{lang}.{ext}", dpi=150)
    print(f"wrote plots in {args.plots}/")
    return 0


def _main_decode(args: argparse.Namespace) -> int:
    """``--only decode``: measure generation and merge it into the saved results."""
    if args.device != "cpu":
        raise SystemExit("--only decode: measured on CPU only (--device cpu)")
    json_path = args.out / f"{args.device}.json"
    if not json_path.is_file():
        raise SystemExit(f"--only decode: {json_path} is missing; run the full benchmark first")
    results = json.loads(json_path.read_text(encoding="utf-8"))
    repeat = 2 if args.quick and args.repeat == 5 else args.repeat
    lengths = args.sizes or (DECODE_LENGTHS[:3] if args.quick else DECODE_LENGTHS)
    results["decode"] = run_decode(lengths, repeat)
    json_path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(f'wrote the "decode" part of {json_path}; the rest is unchanged')
    args.plots.mkdir(parents=True, exist_ok=True)
    for lang in _LABELS:
        fig = plot_decode(results, lang)
        for ext in ("png", "svg"):
            fig.savefig(args.plots / f"{args.device}-decode.{lang}.{ext}", dpi=150)
    print(f"wrote plots in {args.plots}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
