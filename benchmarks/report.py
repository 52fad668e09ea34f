"""The one report writer: merge measured parts into ``<device>.json``, and print a summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .attention import targets


def save(path: Path, parts: dict[str, Any]) -> dict[str, Any]:
    """Merge ``parts`` into the results saved at ``path`` (created if missing); the parts not
    measured this time stay as they are, and the targets are recomputed. Returns the results.

    ``parts`` maps a key of the file to its new value; the key ``""`` holds the forward
    measurements, which are the file's top-level keys.
    """
    results: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for key, value in parts.items():
        if key:
            results[key] = value
        else:
            results.update(value)
    if "results" in results:
        results["targets"] = targets(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return results


def _forward_table(results: dict[str, Any]) -> list[str]:
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
    return lines


def _train_table(results: dict[str, Any]) -> list[str]:
    train = results["train"]["results"]
    names = list(train)
    lines = ["forward + backward:"]
    lines.append(f"{'n':>6} | " + " | ".join(f"{name:>14}" for name in names))
    lines.append(f"{'':>6} | " + " | ".join(f"{'ms':>6} {'MiB':>7}" for _ in names))
    for i, n in enumerate(train[names[0]]["n"]):
        cells = []
        for name in names:
            t, p = (train[name][f][i] for f in ("time_s", "peak_mib"))
            cells.append(
                f"{t * 1e3 if t else float('nan'):6.1f} {p if p is not None else float('nan'):7.1f}"
            )
        lines.append(f"{n:>6} | " + " | ".join(cells))
    return lines


def _low_precision_table(results: dict[str, Any]) -> list[str]:
    lines = ["low precision, max abs error vs float64 math (attention_ref, PyTorch, naive; ratio):"]
    for dtype, rows in results["low_precision"]["max_abs_error"].items():
        for name, row in rows.items():
            lines.append(
                f"  {dtype:>8} {name:>28}: {row['ours']:.3g}, {row['torch']:.3g}, "
                f"{row.get('naive', float('nan')):.3g}; {row['ratio']:.3g}"
            )
    return lines


def _decode_table(results: dict[str, Any]) -> list[str]:
    decode = results["decode"]
    lines = ["decoding, time per generated token:"]
    for t, cached, full in zip(
        decode["lengths"], decode["cached_s"], decode["uncached_s"], strict=True
    ):
        lines.append(
            f"  t={t:5d}: {cached * 1e3:8.2f} ms with the cache, {full * 1e3:8.2f} without"
        )
    lines.append(f"  log-log slopes: {decode['slopes']}")
    return lines


def _latent_decode_table(results: dict[str, Any]) -> list[str]:
    part = results["latent_decode"]
    designs = part["designs"]
    lines = ["decoding with MHA, GQA and MLA, one layer: ms per generated token (cache per token)"]
    lines.append(f"{'t':>6} | " + " | ".join(f"{row['label']:>16}" for row in designs.values()))
    lines.append(
        f"{'':>6} | "
        + " | ".join(f"{row['cache_bytes_per_token']:>10} B/tok" for row in designs.values())
    )
    for i, t in enumerate(part["lengths"]):
        lines.append(
            f"{t:>6} | " + " | ".join(f"{row['time_s'][i] * 1e3:16.3f}" for row in designs.values())
        )
    lines.append(f"  log-log slopes: {part['slopes']}")
    return lines


def _flex_cpu_table(results: dict[str, Any]) -> list[str]:
    flex = results["flex_cpu"]
    lines = [f"FlexAttention on CPU, n = {flex['config']['n']}, causal:"]
    lines.append(f"  first compiled call: {flex['first_call_s']:.3g} s")
    for name, seconds in flex["steady_s"].items():
        lines.append(f"  {name:>10}: {seconds * 1e3:8.2f} ms per call")
    lines.append(f"  backward: {flex['backward'] or 'runs'}")
    return lines


def _apis_table(results: dict[str, Any]) -> list[str]:
    part = results["apis"]
    lines = ["one causal attention layer through seven APIs: ms per call, extra peak MiB"]
    lines.append(f"{'':>24} | " + " | ".join(f"{f'n={n}':>16}" for n in part["sizes"]))
    for row in part["results"].values():
        cells = [
            f"{t * 1e3:8.1f} {m if m is not None else float('nan'):7.1f}"
            for t, m in zip(row["time_s"], row["peak_mib"], strict=True)
        ]
        lines.append(f"{row['label']:>24} | " + " | ".join(cells))
    return lines


def _block_sparse_table(results: dict[str, Any]) -> list[str]:
    part = results["block_sparse"]
    lines = [f"block-sparse chunked_attention at n = {part['config']['n']} (s; MiB):"]
    for phase in ("forward", "train"):
        times, peaks = part[phase]["time_s"], part[phase]["peak_mib"]
        cells = [f"{name} {times[name]:.4g} s, {peaks[name]} MiB" for name in times]
        lines.append(f"  {phase}: " + "; ".join(cells))
    for key, item in part["targets"].items():
        verdict = {True: "PASS", False: "FAIL", None: "n/a"}[item["pass"]]
        lines.append(f"  {key:>36}: {item['value']} (target {item['target']}) {verdict}")
    return lines


def summary(results: dict[str, Any]) -> str:
    """A plain-text table of each part the results hold, the slopes and the targets."""
    lines: list[str] = []
    for key, table in (
        ("results", _forward_table),
        ("train", _train_table),
        ("low_precision", _low_precision_table),
        ("decode", _decode_table),
        ("latent_decode", _latent_decode_table),
        ("flex_cpu", _flex_cpu_table),
        ("apis", _apis_table),
        ("block_sparse", _block_sparse_table),
    ):
        if key in results:
            lines += table(results)
    tg = results.get("targets") or {}
    if tg:
        lines.append(f"targets at n = {tg['n']}:")
        for key, item in tg.items():
            if key == "n":
                continue
            verdict = {True: "PASS", False: "FAIL", None: "n/a"}[item["pass"]]
            lines.append(f"  {key:>30}: {item['value']} (target {item['target']}) {verdict}")
    return "\n".join(lines)
