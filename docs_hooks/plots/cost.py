"""Figures of the cost page: the benchmark's measurements, drawn from its committed JSON
(docs/bench-results/<device>.json, read by measured.py), with the machine and the library
versions in a caption line on each figure.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from . import measured

_LABELS = {
    "en": {
        "reference": "plain reference",
        "chunked": "chunked_attention",
        "sdpa": "PyTorch SDPA",
        "local": "sliding window (w={window})",
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
        "sparse_title": "Empty tiles skipped, n={n}, N={batch}, h={heads}, d_k={head_dim}, "
        "{dtype}, tiles {b_q}×{b_k}",
        "sparse_y": "time / time with every tile",
        "forward": "forward",
        "train": "forward + backward",
        "causal": "causal",
        "window": "causal window\n{window} keys",
        "documents": "causal documents\nof {document}",
        "skipping": "chunked_attention, empty tiles skipped",
        "dense": "PyTorch SDPA, dense mask",
        "target": "target",
    },
    "zh": {
        "reference": "朴素参考实现",
        "chunked": "chunked_attention（分块）",
        "sdpa": "PyTorch SDPA",
        "local": "滑动窗口（w={window}）",
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
        "sparse_title": "跳过全空的分数块，n={n}，N={batch}，h={heads}，d_k={head_dim}，{dtype}，"
        "块 {b_q}×{b_k}",
        "sparse_y": "耗时与计算全部块的耗时之比",
        "forward": "前向",
        "train": "前向加反向",
        "causal": "因果",
        "window": "因果窗口\n{window} 个键",
        "documents": "因果文档\n每篇 {document}",
        "skipping": "chunked_attention，跳过空块",
        "dense": "PyTorch SDPA，稠密掩码",
        "target": "目标",
    },
}


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
    measured.check_lang(lang, _LABELS)
    labels, config = _LABELS[lang], results["config"]
    part = (
        measured.results_part(results, "train", "forward + backward measurements", "train")
        if train
        else results
    )
    fig = Figure(figsize=(7.5, 4.8), layout="constrained")
    ax = fig.add_subplot()
    slopes = part["slopes"]["time" if field == "time_s" else "memory"]
    for name, row in part["results"].items():
        points = [(n, y) for n, y in zip(row["n"], row[field], strict=True) if y]
        if not points:
            continue
        slope = slopes.get(name)
        name_label = labels.get(name, name).format(**config)
        label = _with_slope(name_label, slope, lang) if slope else name_label
        ax.plot(*zip(*points, strict=True), marker="o", label=label)
    measured.log_log_over_lengths(ax, config["sizes"])
    ax.set_xlabel(labels["n"])
    ax.set_ylabel(labels["time" if field == "time_s" else "memory"])
    title = ("train_" if train else "") + ("time_title" if field == "time_s" else "memory_title")
    title = labels[title].format(device=results["device"].upper(), **config)
    ax.set_title(title, fontsize=10)
    if ax.get_lines():
        ax.legend()
    measured.add_caption(fig, results, lang, gemm_gflops=results["gemm_gflops"])
    return fig


def plot_time(results: dict[str, Any], lang: str = "en") -> Figure:
    """Time per call against n, log-log, one line per implementation, from saved results.

    Args:
        results: The dict saved by the benchmark (``json.load`` of ``<device>.json``).
        lang: ``"en"`` or ``"zh"``, the language of the labels.

    Returns:
        A matplotlib ``Figure`` (not shown, not saved), with the machine and library
        versions in a caption line.
    """
    return _plot(results, lang, "time_s")


def plot_memory(results: dict[str, Any], lang: str = "en") -> Figure:
    """Extra peak memory against n, log-log, one line per implementation, from saved results.

    Args:
        results: The dict saved by the benchmark (``json.load`` of ``<device>.json``).
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


def plot_block_sparse(results: dict[str, Any], lang: str = "en") -> Figure:
    """Time of ``chunked_attention`` with each mask function over its time with every tile,
    forward and forward + backward, beside SDPA with the dense mask and the targets.

    Raises:
        KeyError: If the results hold no block-sparse measurements.
    """
    measured.check_lang(lang, _LABELS)
    part = measured.results_part(
        results, "block_sparse", "block-sparse measurements", "block-sparse"
    )
    labels, config = _LABELS[lang], part["config"]
    b_q, b_k = config["block_size"]
    fig = Figure(figsize=(7.5, 4.4), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    masks = list(part["ratios"]["forward"])
    for ax, phase in zip(axes, ("forward", "train"), strict=True):
        times = part[phase]["time_s"]
        xs = range(len(masks))
        ours = [part["ratios"][phase][name] for name in masks]
        dense = [
            times[f"sdpa_{name}"] / times["all"] if f"sdpa_{name}" in times else 0.0
            for name in masks
        ]
        ax.bar([x - 0.2 for x in xs], ours, width=0.4, label=labels["skipping"])
        ax.bar([x + 0.2 for x in xs], dense, width=0.4, label=labels["dense"], color="0.6")
        for x, name in zip(xs, masks, strict=True):
            goal = part["targets"][f"{phase}_{name}_over_all"]["target"].split()[-1]
            ax.hlines(float(goal), x - 0.4, x, colors="black", linestyles="--", linewidth=1.2)
        ax.plot([], [], "k--", linewidth=1.2, label=labels["target"])
        names = [labels[name].format(**config) for name in masks]
        ax.set_xticks(list(xs), labels=names, fontsize=8)
        ax.set_title(labels[phase], fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel(labels["sparse_y"])
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside upper center", ncols=3, fontsize=8, frameon=False)
    title = labels["sparse_title"].format(b_q=b_q, b_k=b_k, **config)
    fig.suptitle(title, fontsize=10)
    measured.add_caption(fig, part, lang, gemm_gflops=results.get("gemm_gflops"))
    return fig


def fig_cost_block_sparse(lang: str) -> Figure:
    """Skipping the tiles a mask function leaves empty, measured on CPU (block_sparse part)."""
    return plot_block_sparse(measured.load_results("cpu"), lang)


def fig_cost_time(lang: str) -> Figure:
    """Time per call against n, log-log, measured on CPU (docs/bench-results/cpu.json)."""
    return plot_time(measured.load_results("cpu"), lang)


def fig_cost_memory(lang: str) -> Figure:
    """Extra peak memory against n, log-log, measured on CPU (docs/bench-results/cpu.json)."""
    return plot_memory(measured.load_results("cpu"), lang)


def fig_cost_train_time(lang: str) -> Figure:
    """Forward + backward time against n, measured on CPU (the JSON's "train" part)."""
    return plot_train_time(measured.load_results("cpu"), lang)


def fig_cost_train_memory(lang: str) -> Figure:
    """Forward + backward extra peak memory against n, measured on CPU."""
    return plot_train_memory(measured.load_results("cpu"), lang)


if (measured.RESULTS / "cuda.json").is_file():  # only where a GPU run was committed

    def fig_cost_time_cuda(lang: str) -> Figure:
        """Time per call against n, measured on a GPU (docs/bench-results/cuda.json)."""
        return plot_time(measured.load_results("cuda"), lang)

    def fig_cost_memory_cuda(lang: str) -> Figure:
        """Extra peak memory against n, measured on a GPU (docs/bench-results/cuda.json)."""
        return plot_memory(measured.load_results("cuda"), lang)
