"""What every figure of measurements shares: the results file, the part a figure draws, the
caption line naming the machine, and a log-log axis over lengths.

The build never benchmarks: ``python -m benchmarks`` (``nox -s bench``) writes
docs/bench-results/<device>.json, and the figures of the cost, decoding and today's-models pages
are drawn from that file alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

RESULTS = Path(__file__).parents[2] / "docs" / "bench-results"


def load_results(device: str) -> dict[str, Any]:
    """``docs/bench-results/<device>.json``, or an error that says how to write it."""
    path = RESULTS / f"{device}.json"
    if not path.is_file():
        from mkdocs.exceptions import PluginError  # the tests draw without MkDocs

        raise PluginError(
            f"figures: {path} is missing; run `python -m benchmarks --device {device}` "
            "(or `nox -s bench`) to measure and write it, then build again"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def results_part(results: dict[str, Any], key: str, what: str, part: str) -> dict[str, Any]:
    """``results[key]``; a ``KeyError`` naming the benchmark part to run when it is missing."""
    if key not in results:
        raise KeyError(
            f"{key}: these results have no {what}; rerun `python -m benchmarks --parts {part}` "
            f"(`nox -s bench -- --parts {part}`)"
        )
    return results[key]


def check_lang(lang: str, texts: dict[str, Any]) -> None:
    """A ``ValueError`` for a language the figure has no text in."""
    if lang not in texts:
        raise ValueError(f"lang: expected one of {tuple(texts)}, got {lang!r}")


_WHERE = {
    "en": ("{cpu}, {cores} cores", ", {torch_threads} threads"),
    "zh": ("{cpu}，{cores} 核", "，{torch_threads} 线程"),
}


def add_caption(
    fig: Figure, part: dict[str, Any], lang: str, *, gemm_gflops: float | None = None
) -> None:
    """A line under the figure's axes, in small grey type: the machine, its threads, its GEMM
    speed if given, the library versions and the date of the measurements in ``part``."""
    m, v = part["machine"], part["versions"]
    cores, threads = _WHERE[lang]
    if "torch_threads" in m:
        cores += threads
    items = [m.get("gpu") or cores.format(**m)]
    if gemm_gflops:
        items.append(f"GEMM {gemm_gflops:.0f} GFLOP/s")
    items += [f"{name} {v[name]}" for name in ("torch", "numpy") if name in v]
    items += [f"Python {v['python']}", part["date"]]
    fig.text(0.5, 0.0, " · ".join(items), ha="center", va="bottom", fontsize=7, color="0.35")
    fig.get_layout_engine().set(h_pad=0.25)


def log_log_over_lengths(ax: Axes, lengths: list[int]) -> None:
    """Both axes logarithmic, one labelled tick at each measured length."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, labels=[str(n) for n in lengths])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
