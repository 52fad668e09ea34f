"""The timing protocol of every benchmark, and what is saved beside each result.

Each function to compare is called once (a warm-up that also sizes its round: one call, or
enough calls to last 50 ms, averaged), then all are timed in turn, round after round
(round-robin: a disturbance on the machine hits every function, not one); the fastest round
is kept, the least disturbed by other work. A progress line (tqdm, on stderr) names what is
being timed and the time left.

Extra peak memory is one call in a fresh process (`in_fresh_process`), so that nothing freed
earlier hides in the peak: the process builds its inputs, makes a tiny warm-up call, then
`peak_bytes` resets the peak and makes the call.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]  # the repository: `python -m benchmarks` runs here
ROUND_SECONDS = 0.05
PROTOCOL = (
    "fastest of `repeat` round-robin rounds (a round: one call, or the mean of enough calls to"
    " last 50 ms), after a warm-up call"
)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_calls(fn: Callable[[], Any], device: str, calls: int = 1) -> float:
    """Seconds per call, averaged over ``calls`` back-to-back calls."""
    sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(device)
    return (time.perf_counter() - start) / calls


def calls_per_round(seconds_per_call: float, at_least: float = ROUND_SECONDS) -> int:
    """Enough calls for a timed round of ``at_least`` seconds: fast calls are averaged."""
    return max(1, min(1000, math.ceil(at_least / max(seconds_per_call, 1e-7))))


def progress(total: int, desc: str) -> Any:
    """A progress line on stderr: which part, how far, the time left (tqdm)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="round", leave=False, dynamic_ncols=True)


def round_robin(
    fns: Mapping[str, Callable[[], Any]],
    repeat: int,
    device: str,
    bar: Any = None,
    label: str = "",
) -> dict[str, list[float]]:
    """Time every function of ``fns`` ``repeat`` times, in turn: seconds per call, per name.

    Each function is first called once (warm-up, and the size of its round); ``bar``, a
    `progress` line, advances by one per timed round and shows ``label`` and the name.
    """
    calls = {name: calls_per_round(time_calls(fn, device)) for name, fn in fns.items()}
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            if bar is not None:
                bar.set_postfix_str(f"{label} {name}".strip(), refresh=False)
            times[name].append(time_calls(fn, device, calls[name]))
            if bar is not None:
                bar.update(1)
    return times


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


#: how `peak_bytes` measures, per device
PEAK_METHOD = {
    "cpu": "VmHWM after - VmRSS before (after clear_refs 5)",
    "cuda": "torch.cuda.max_memory_allocated - memory_allocated before",
}


def peak_bytes(call: Callable[[], Any], device: str = "cpu", trim: bool = False) -> int:
    """The extra peak memory of ``call()`` in this process, in bytes.

    Garbage is collected first (``trim``: and the freed memory given back to the OS, glibc's
    ``malloc_trim``, so that the call raises the resident size again instead of reusing it
    unseen by the peak); then the peak is reset and the call made. On CPU the peak is Linux's
    ``VmHWM`` (reset by writing 5 to ``/proc/self/clear_refs``) minus the ``VmRSS`` before the
    call; on CUDA ``torch.cuda.max_memory_allocated`` minus the memory allocated before.
    """
    gc.collect()
    if trim:
        with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to give back
            ctypes.CDLL("libc.so.6").malloc_trim(0)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = call()
        torch.cuda.synchronize()
        extra = torch.cuda.max_memory_allocated() - before
    else:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
        before = _status_kib("VmRSS")
        out = call()
        extra = (_status_kib("VmHWM") - before) * 1024
    del out
    return extra


def in_fresh_process(module: str, *args: str, what: str) -> dict[str, Any] | None:
    """Run ``python -m module args...`` from the repository root in a fresh process: the JSON
    object its last line prints, or None if it failed (its error, as ``what``, on stderr)."""
    cmd = [sys.executable, "-m", module, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    if proc.returncode != 0:
        print(f"  {what} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    found: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


def fit_slope(ns: Sequence[int], values: Sequence[float | None]) -> float | None:
    """Least-squares slope of log(value) against log(n): the exponent p in value ∝ n^p."""
    points = [(math.log(n), math.log(v)) for n, v in zip(ns, values, strict=True) if v]
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx


def sig(x: float | None, digits: int = 4) -> float | None:
    """Round to ``digits`` significant digits, for a small and stable JSON."""
    return None if x is None or x == 0 else round(x, digits - 1 - math.floor(math.log10(abs(x))))


def machine(device: str) -> dict[str, Any]:
    """The CPU (and GPU), cores, torch threads, OS and load average, saved with the results."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    found = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "os": platform.platform(terse=True),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if device == "cuda":
        found["gpu"] = torch.cuda.get_device_name(0)
        found["cuda"] = torch.version.cuda
        found["tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32
    return found


def versions() -> dict[str, str]:
    import numpy

    import attention_ref

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "attention_ref": attention_ref.__version__,
    }


def now() -> str:
    """The date and time of a run, as saved: ``2026-01-01 12:00 UTC``."""
    import datetime

    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
