"""``python -m benchmarks``: measure, merge into docs/bench-results/<device>.json, summarize."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import torch

from . import (
    apis,
    attention,
    block_sparse,
    decode,
    flex_cpu,
    latent_decode,
    low_precision,
    protocol,
    report,
)

PARTS = ("forward", "train", "low-precision", "decode", "latent-decode", "flex-cpu", "apis")
PARTS += ("block-sparse",)
CPU_ONLY = ("decode", "latent-decode", "flex-cpu", "apis", "block-sparse")  # on a CPU only
DEFAULT_OUT = protocol.ROOT / "docs" / "bench-results"


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s) for s in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected positive sizes like 512,1024, got {text!r}")
    return sizes


def _names(text: str, known: Sequence[str], option: str) -> list[str]:
    names = [name for name in text.split(",") if name]
    unknown = sorted(set(names) - set(known))
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{option}: unknown {unknown}, expected some of {list(known)}"
        )
    return names


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time, peak memory and low-precision accuracy of attention_ref, merged into "
        "<out>/<device>.json (the parts not run stay as they were). The site draws its figures "
        "from that file.",
    )
    p.add_argument(
        "--parts",
        type=lambda s: _names(s, PARTS, "--parts"),
        default=None,
        help=f"what to measure, comma-separated, of {','.join(PARTS)} (default: all; "
        f"{', '.join(CPU_ONLY)} are measured on CPU only)",
    )
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument(
        "--implementations",
        type=lambda s: _names(s, list(attention.IMPLEMENTATIONS), "--implementations"),
        default=list(attention.IMPLEMENTATIONS),
        help=f"of {','.join(attention.IMPLEMENTATIONS)} (forward; train times those of "
        f"{','.join(attention.TRAIN_IMPLEMENTATIONS)} among them)",
    )
    p.add_argument("--sizes", type=_sizes, default=None, help="n (or t for decode), e.g. 512,1024")
    p.add_argument("--repeat", type=int, default=5, help="timed rounds per size")
    p.add_argument("--quick", action="store_true", help=f"sizes {attention.QUICK_SIZES}, 2 rounds")
    p.add_argument("--no-memory", action="store_true", help="skip the fresh memory processes")
    p.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="directory of <device>.json (default: the repository's docs/bench-results)",
    )
    p.add_argument("--measure-memory", nargs=2, metavar=("NAME", "N"), help=argparse.SUPPRESS)
    p.add_argument("--train", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: torch.cuda.is_available() is False on this machine")
    if args.measure_memory:  # the child process of attention.measure_memory
        name, n = args.measure_memory
        result = attention.measure_memory_here(name, int(n), args.device, train=args.train)
        print(json.dumps(result))
        return 0
    if args.parts is None:
        args.parts = [part for part in PARTS if args.device == "cpu" or part not in CPU_ONLY]
    if args.device != "cpu" and (cpu_only := [part for part in args.parts if part in CPU_ONLY]):
        p.error(f"--parts {','.join(cpu_only)}: measured on CPU only (--device cpu)")
    sizes = args.sizes or (attention.QUICK_SIZES if args.quick else attention.SIZES)
    repeat = 2 if args.quick and args.repeat == 5 else args.repeat
    memory = not args.no_memory
    parts = {}
    if "forward" in args.parts:
        parts[""] = attention.run_forward(args.device, sizes, repeat, args.implementations, memory)
    if "train" in args.parts:
        names = [n for n in attention.TRAIN_IMPLEMENTATIONS if n in args.implementations]
        parts["train"] = attention.run_train(args.device, sizes, repeat, names, memory)
    if "low-precision" in args.parts:
        parts["low_precision"] = low_precision.low_precision_errors()
    if "decode" in args.parts:
        lengths = args.sizes or (decode.DECODE_LENGTHS[:3] if args.quick else decode.DECODE_LENGTHS)
        parts["decode"] = decode.run_decode(lengths, repeat)
    if "latent-decode" in args.parts:
        lengths = args.sizes or latent_decode.LATENT_DECODE_LENGTHS[: 2 if args.quick else None]
        parts["latent_decode"] = latent_decode.run_latent_decode(lengths, repeat)
    if "flex-cpu" in args.parts:
        parts["flex_cpu"] = flex_cpu.run_flex_cpu(repeat)
    if "apis" in args.parts:
        lengths = args.sizes or apis.APIS_SIZES[: 1 if args.quick else None]
        parts["apis"] = apis.run_apis(lengths, repeat, memory)
    if "block-sparse" in args.parts:  # one n: the largest of --sizes
        n = max(args.sizes) if args.sizes else block_sparse.N_DEFAULT // (4 if args.quick else 1)
        parts["block_sparse"] = block_sparse.run_block_sparse(n, repeat, memory)
    path = args.out / f"{args.device}.json"
    results = report.save(path, parts)
    print(report.summary(results))
    print(f"wrote {', '.join(k or 'forward' for k in parts)} into {path}; the rest is unchanged")
    return 0
