"""One attention through every API: time and peak memory of the same layer, seven ways (CPU).

One causal multi-head self-attention layer (``attention_ref.MultiHeadAttention``, d_model 256,
4 heads of width 64, no biases, float32, seeded) is computed from the same weights as:

* ``module``: ``MultiHeadAttention`` itself, ``is_causal=True`` (its default attention
  materializes the weights);
* ``matmul``: the projections, ``q @ kᵀ``, a masked ``softmax`` and ``@ v``, by hand;
* ``einsum``: the same with ``torch.einsum``, heads split by viewing the weights;
* ``fused_sdpa``: one fused QKV projection (``W^Q``, ``W^K``, ``W^V`` stacked into one
  ``(3E, E)`` weight), then ``F.scaled_dot_product_attention(..., is_causal=True)``;
* ``torch_mha``: ``nn.MultiheadAttention`` from ``MultiHeadAttention.to_torch()``, with a
  boolean mask where True means masked and ``need_weights=False``, in eval mode;
* ``flex``: the fused projection, then ``flex_attention`` (eager: not compiled) with the
  ``BlockMask`` of ``attention_ref.mask_mods.causal()``;
* ``flex_reference``: the fused projection, then ``attention_ref.flex_reference`` with
  ``mask_mod=causal()``.

Every form takes ``x`` ``(N, n, E)`` and returns ``(N, n, E)``; what does not depend on the
input (a mask, a ``BlockMask``) is built once for the length, as a layer would keep it. At
n = 1024 and 4096 (N = 1) it measures:

* time: the `benchmarks.protocol` rounds, every form in turn, under ``no_grad``;
* extra peak memory: one call in a fresh process per (form, n), as `benchmarks.protocol`
  measures it (Linux's ``VmHWM`` after a reset, minus ``VmRSS`` before the call);
* each form's largest difference from ``module``'s output.

The part ``apis`` of ``<device>.json`` (every list runs along ``sizes``)::

    {
      "config": {"batch", "embed_dim", "num_heads", "head_dim", "bias", "dtype", "mask",
                 "threads", "repeat", "time", "memory"},
      "sizes": [1024, 4096],
      "results": {                                   # in the order of FORMS
        name: {"label": str, "time_s": [float, ...], "peak_mib": [float | None, ...],
               "max_abs_diff": [float | None, ...]}
      },
      "machine": {...}, "versions": {...}, "date": "YYYY-MM-DD"
    }

Shape legend: N batch, n = L = S sequence length, E d_model, H heads, D per-head width.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from attention_ref import MultiHeadAttention, causal_mask
from attention_ref.mask_mods import causal, flex_reference

from . import protocol
from .protocol import sig

APIS_SIZES = (1024, 4096)
APIS_CONFIG = {"batch": 1, "embed_dim": 256, "num_heads": 4}
EAGER = "flex_attention called without torch.compile"  # the eager path's UserWarning

Form = Callable[[Tensor], Tensor]  # x (N, n, E) -> (N, n, E)


def layer(config: dict[str, int]) -> MultiHeadAttention:
    """The layer every form computes: seeded, no biases, in eval mode."""
    torch.manual_seed(0)
    return MultiHeadAttention(config["embed_dim"], config["num_heads"], bias=False).eval()


def _fused_heads(mha: MultiHeadAttention, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """One projection by the stacked ``(3E, E)`` weight, split into q, k, v ``(N, H, n, D)``."""
    N, L, _ = x.shape
    H, D = mha.num_heads, mha.head_dim
    w_qkv = torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight])  # (3E, E)
    qkv = (x @ w_qkv.T).view(N, L, 3, H, D)  # (N, L, 3, H, D)
    q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (N, H, L, D)
    return q, k, v


def _merge(mha: MultiHeadAttention, heads: Tensor) -> Tensor:
    """``(N, H, n, D)`` heads, concatenated and projected by ``W^O``: ``(N, n, E)``."""
    N, H, L, D = heads.shape
    return heads.transpose(1, 2).reshape(N, L, H * D) @ mha.out_proj.weight.T


def _module(mha: MultiHeadAttention, n: int) -> Form:
    return lambda x: mha(x, is_causal=True, need_weights=False)[0]


def _matmul(mha: MultiHeadAttention, n: int) -> Form:
    allowed = causal_mask(n, n)  # (n, n), True = may attend

    def form(x: Tensor) -> Tensor:
        N, L, _ = x.shape
        H, D = mha.num_heads, mha.head_dim
        q = (x @ mha.q_proj.weight.T).view(N, L, H, D).transpose(1, 2)  # (N, H, L, D)
        k = (x @ mha.k_proj.weight.T).view(N, L, H, D).transpose(1, 2)
        v = (x @ mha.v_proj.weight.T).view(N, L, H, D).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / D**0.5  # (N, H, L, L)
        weights = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
        return _merge(mha, weights @ v)  # (N, L, E)

    return form


def _einsum(mha: MultiHeadAttention, n: int) -> Form:
    allowed = causal_mask(n, n)

    def form(x: Tensor) -> Tensor:
        E, H, D = mha.embed_dim, mha.num_heads, mha.head_dim
        q = torch.einsum("nle,hde->nhld", x, mha.q_proj.weight.view(H, D, E))
        k = torch.einsum("nse,hde->nhsd", x, mha.k_proj.weight.view(H, D, E))
        v = torch.einsum("nse,hde->nhsd", x, mha.v_proj.weight.view(H, D, E))
        scores = torch.einsum("nhld,nhsd->nhls", q, k) / D**0.5
        weights = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
        heads = torch.einsum("nhls,nhsd->nhld", weights, v)
        return torch.einsum("nhld,ehd->nle", heads, mha.out_proj.weight.view(E, H, D))

    return form


def _fused_sdpa(mha: MultiHeadAttention, n: int) -> Form:
    def form(x: Tensor) -> Tensor:
        q, k, v = _fused_heads(mha, x)
        return _merge(mha, F.scaled_dot_product_attention(q, k, v, is_causal=True))

    return form


def _torch_mha(mha: MultiHeadAttention, n: int) -> Form:
    theirs = mha.to_torch().eval()
    masked = ~causal_mask(n, n)  # nn.MultiheadAttention: True = masked

    def form(x: Tensor) -> Tensor:
        return theirs(x, x, x, attn_mask=masked, need_weights=False)[0]

    return form


def _flex(mha: MultiHeadAttention, n: int) -> Form:
    block_mask = create_block_mask(causal(), None, None, n, n, device="cpu")

    def form(x: Tensor) -> Tensor:
        q, k, v = _fused_heads(mha, x)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", EAGER, UserWarning)
            heads = flex_attention(q, k, v, block_mask=block_mask)  # (N, H, L, D)
        return _merge(mha, heads)

    return form


def _flex_reference(mha: MultiHeadAttention, n: int) -> Form:
    def form(x: Tensor) -> Tensor:
        q, k, v = _fused_heads(mha, x)
        heads = flex_reference(q, k, v, mask_mod=causal())  # (N, H, L, D)
        return _merge(mha, heads)

    return form


#: name -> (label, builder of the form for a layer and a length)
FORMS: dict[str, tuple[str, Callable[[MultiHeadAttention, int], Form]]] = {
    "module": ("MultiHeadAttention", _module),
    "matmul": ("matmul + softmax", _matmul),
    "einsum": ("torch.einsum", _einsum),
    "fused_sdpa": ("fused QKV + SDPA", _fused_sdpa),
    "torch_mha": ("nn.MultiheadAttention", _torch_mha),
    "flex": ("flex_attention (eager)", _flex),
    "flex_reference": ("flex_reference", _flex_reference),
}
#: the forms whose backward pass runs on a CPU (torch 2.13 refuses flex_attention's)
DIFFERENTIABLE = tuple(name for name in FORMS if name != "flex")


def inputs(n: int, config: dict[str, int], seed: int = 1) -> Tensor:
    """Seeded ``x`` ``(N, n, E)``."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(config["batch"], n, config["embed_dim"], generator=gen)


def measure_memory_here(name: str, n: int, config: dict[str, int]) -> dict[str, Any]:
    """One call of one form in this (fresh) process: its extra peak, in bytes (Linux)."""
    mha = layer(config)
    with torch.no_grad():
        FORMS[name][1](mha, 64)(inputs(64, config))  # warm-up at a tiny size
        form, x = FORMS[name][1](mha, n), inputs(n, config)
        extra = protocol.peak_bytes(functools.partial(form, x))
    return {"name": name, "n": n, "bytes": extra}


def measure_memory(name: str, n: int, config: dict[str, int]) -> int | None:
    """Run `measure_memory_here` in a fresh Python process; None if it failed."""
    args = (name, str(n), json.dumps(config))
    found = protocol.in_fresh_process("benchmarks.apis", *args, what=f"memory of {name} at n={n}")
    return found["bytes"] if found else None


def run_apis(
    sizes: Sequence[int] = APIS_SIZES,
    repeat: int = 5,
    memory: bool = True,
    config: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Time every form at each n, and measure its extra peak memory (CPU).

    Returns:
        The part ``apis`` of the results (see the module's docstring).
    """
    config = dict(APIS_CONFIG if config is None else config)
    mha = layer(config)
    results: dict[str, dict[str, Any]] = {
        name: {"label": label, "time_s": [], "peak_mib": [], "max_abs_diff": []}
        for name, (label, _) in FORMS.items()
    }
    with torch.no_grad(), protocol.progress(len(sizes) * repeat * len(FORMS), "apis") as bar:
        for n in sizes:
            x = inputs(n, config)
            forms = {name: build(mha, n) for name, (_, build) in FORMS.items()}
            exact = forms["module"](x)
            diffs = {name: (form(x) - exact).abs().max().item() for name, form in forms.items()}
            fns = {name: functools.partial(form, x) for name, form in forms.items()}
            times = protocol.round_robin(fns, repeat, "cpu", bar, label=f"n={n}")
            del x, forms, fns, exact
            for name, row in results.items():
                peak = measure_memory(name, n, config) if memory else None
                row["time_s"].append(sig(min(times[name])))
                row["peak_mib"].append(sig(peak / 2**20, 3) if peak else None)
                row["max_abs_diff"].append(sig(diffs[name], 2))
            bar.write(f"apis n={n}: " + ", ".join(f"{k} {min(v):.4g}s" for k, v in times.items()))
    return {
        "config": {
            **config,
            "head_dim": config["embed_dim"] // config["num_heads"],
            "bias": False,
            "dtype": "float32",
            "mask": "causal",
            "threads": torch.get_num_threads(),
            "repeat": repeat,
            "time": protocol.PROTOCOL + ", under no_grad",
            "memory": "extra peak of one call in a fresh process (see benchmarks.apis)",
        },
        "sizes": list(sizes),
        "results": results,
        "machine": protocol.machine("cpu"),
        "versions": protocol.versions(),
        "date": protocol.now()[:10],
    }


if __name__ == "__main__":  # the child process of measure_memory: NAME N CONFIG
    name, n, config = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    print(json.dumps(measure_memory_here(name, n, config)))
