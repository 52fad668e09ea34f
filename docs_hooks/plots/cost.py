"""Figures of the cost page: the benchmark's measurements, drawn from its committed JSON.

The build never benchmarks: ``python -m attention_ref.bench`` (``nox -s bench``) writes
docs/bench-results/<device>.json, and these functions plot it with the bench's own
`plot_time` and `plot_memory`, which print the machine and the library versions on the figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from mkdocs.exceptions import PluginError

RESULTS = Path(__file__).parents[2] / "docs" / "bench-results"


def _results(device: str) -> dict[str, Any]:
    path = RESULTS / f"{device}.json"
    if not path.is_file():
        raise PluginError(
            f"figures: {path} is missing; run `python -m attention_ref.bench --device {device}` "
            "(or `nox -s bench`) to measure and write it, then build again"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def fig_cost_time(lang: str) -> Figure:
    """Time per call against n, log-log, measured on CPU (docs/bench-results/cpu.json)."""
    from attention_ref.bench import plot_time

    return plot_time(_results("cpu"), lang)


def fig_cost_memory(lang: str) -> Figure:
    """Extra peak memory against n, log-log, measured on CPU (docs/bench-results/cpu.json)."""
    from attention_ref.bench import plot_memory

    return plot_memory(_results("cpu"), lang)


def fig_cost_train_time(lang: str) -> Figure:
    """Forward + backward time against n, measured on CPU (the JSON's "train" part)."""
    from attention_ref.bench import plot_train_time

    return plot_train_time(_results("cpu"), lang)


def fig_cost_train_memory(lang: str) -> Figure:
    """Forward + backward extra peak memory against n, measured on CPU."""
    from attention_ref.bench import plot_train_memory

    return plot_train_memory(_results("cpu"), lang)


if (RESULTS / "cuda.json").is_file():  # only where a GPU run was committed

    def fig_cost_time_cuda(lang: str) -> Figure:
        """Time per call against n, measured on a GPU (docs/bench-results/cuda.json)."""
        from attention_ref.bench import plot_time

        return plot_time(_results("cuda"), lang)

    def fig_cost_memory_cuda(lang: str) -> Figure:
        """Extra peak memory against n, measured on a GPU (docs/bench-results/cuda.json)."""
        from attention_ref.bench import plot_memory

        return plot_memory(_results("cuda"), lang)
