"""Low-precision accuracy: each function's largest error in float16 and bfloat16, beside PyTorch's.

Inputs are drawn in float32 and rounded to the low-precision dtype; the *exact* answer is the
same math in float64 on those rounded inputs, so the error measured is the function's own, not
the inputs' rounding. Each function is shown next to its PyTorch counterpart on the same
inputs (for linear attention, which PyTorch lacks, next to the error of rounding the exact
result to the dtype: the least any result in that dtype can err). The benchmark saves the
table (``python -m attention_ref.bench``); tests/test_low_precision.py checks the same bound.

Config (as measured in the issue that introduced float32 accumulation): causal attention over
n = 1000 tokens, N = 1, H = 2, E = 32, inputs 2·randn; the modules use d_model = 64, 2 heads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import scaled_dot_product_attention
from .chunked import chunked_attention
from .encoder import TransformerEncoderLayer
from .linear import linear_attention
from .local import sliding_window_attention
from .masks import sliding_window_mask
from .multihead import MultiHeadAttention
from .norms import LayerNorm, RMSNorm

__all__ = ["DTYPES", "low_precision_errors"]

DTYPES = (torch.bfloat16, torch.float16)
N, H, LENGTH, E, WIDTH, WINDOW = 1, 2, 1000, 32, 64, 64


def _max_error(result: Tensor, exact: Tensor) -> float:
    return (result.double() - exact).abs().max().item()


def _attention_rows(dtype: torch.dtype, gen: torch.Generator) -> dict[str, tuple[float, float]]:
    q, k, v = ((2 * torch.randn(N, H, LENGTH, E, generator=gen)).to(dtype) for _ in range(3))
    q64, k64, v64 = q.double(), k.double(), v.double()
    band = sliding_window_mask(LENGTH, window=WINDOW)  # causal, w keys back

    def versus_torch(ours: Callable[..., Tensor], **kwargs: Any) -> tuple[float, float]:
        exact = F.scaled_dot_product_attention(q64, k64, v64, **kwargs)
        theirs = F.scaled_dot_product_attention(q, k, v, **kwargs)
        return _max_error(ours(q, k, v), exact), _max_error(theirs, exact)

    exact_linear = linear_attention(q64, k64, v64, is_causal=True)
    return {
        "scaled_dot_product_attention": versus_torch(
            lambda *a: scaled_dot_product_attention(*a, is_causal=True), is_causal=True
        ),
        "chunked_attention": versus_torch(
            lambda *a: chunked_attention(*a, is_causal=True), is_causal=True
        ),
        "sliding_window_attention": versus_torch(
            lambda *a: sliding_window_attention(*a, window=WINDOW, is_causal=True),
            attn_mask=band,
        ),
        "linear_attention": (
            _max_error(linear_attention(q, k, v, is_causal=True), exact_linear),
            _max_error(exact_linear.to(dtype), exact_linear),  # rounding the exact result
        ),
    }


def _module_rows(dtype: torch.dtype, gen: torch.Generator) -> dict[str, tuple[float, float]]:
    x = torch.randn(N, LENGTH, WIDTH, generator=gen)
    torch.manual_seed(0)
    norms = {"LayerNorm": (nn.LayerNorm(WIDTH), LayerNorm), "RMSNorm": (nn.RMSNorm(WIDTH), RMSNorm)}
    pairs: dict[str, tuple[nn.Module, nn.Module]] = {}
    for name, (theirs, cls) in norms.items():
        with torch.no_grad():  # a non-trivial scale and shift, applied in float32 too
            for p in theirs.parameters():
                p.copy_(torch.randn(p.shape, generator=gen))
        ours = cls(WIDTH)
        ours.load_state_dict(theirs.state_dict())
        pairs[name] = (theirs, ours)
    mha = nn.MultiheadAttention(WIDTH, H, batch_first=True)
    pairs["MultiHeadAttention"] = (mha, MultiHeadAttention.from_torch(mha))
    layer = nn.TransformerEncoderLayer(WIDTH, H, 2 * WIDTH, dropout=0.0, batch_first=True)
    pairs["TransformerEncoderLayer"] = (layer, TransformerEncoderLayer.from_torch(layer))

    def call(module: nn.Module, inputs: Tensor) -> Tensor:
        if isinstance(module, nn.MultiheadAttention):
            return module(inputs, inputs, inputs, need_weights=False)[0]
        out = module(inputs)
        return out[0] if isinstance(out, tuple) else out

    rows = {}
    with torch.no_grad():
        for name, (theirs, ours) in pairs.items():
            exact = call(theirs.double().eval(), x.double())
            low = x.to(dtype)
            rows[name] = (
                _max_error(call(ours.to(dtype).eval(), low), exact),
                _max_error(call(theirs.to(dtype).eval(), low), exact),
            )
    return rows


def low_precision_errors() -> dict[str, Any]:
    """The table: for each dtype and function, attention_ref's max error, PyTorch's, and
    their ratio (the target is at most 1.5)."""
    table: dict[str, Any] = {}
    for dtype in DTYPES:
        gen = torch.Generator().manual_seed(0)
        rows = _attention_rows(dtype, gen) | _module_rows(dtype, gen)
        table[str(dtype).removeprefix("torch.")] = {
            name: {"ours": _sig(ours), "torch": _sig(theirs), "ratio": _sig(ours / theirs)}
            for name, (ours, theirs) in rows.items()
        }
    return {
        "config": {
            "attention": f"causal, n={LENGTH}, N={N}, H={H}, E={E}, inputs 2·randn",
            "window": WINDOW,
            "modules": f"d_model={WIDTH}, {H} heads, n={LENGTH}, inputs randn",
            "exact": "the same math in float64 on the same rounded inputs",
            "linear_attention": "compared with rounding the exact result (PyTorch has none)",
        },
        "max_abs_error": table,
    }


def _sig(x: float, digits: int = 3) -> float:
    return float(f"{x:.{digits}g}")
