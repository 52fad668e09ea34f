"""Low precision: each function's largest error in float16 and bfloat16, beside PyTorch's.

Inputs are drawn in float32 and rounded to the low-precision dtype; modules get weights
rounded to it too. The *exact* answer is the same math in float64 on those rounded inputs
and weights, so the error measured is the computation's own, not the rounding of its inputs.
Each function is shown next to:

* ``torch``: its PyTorch counterpart on the same inputs and weights (for linear attention,
  which PyTorch lacks, the error of rounding the exact result to the dtype: the least any
  result in that dtype can err);
* ``naive``: the same formula written with every intermediate tensor in the input's dtype
  (scores, exponentials, sums, means and variances rounded at each step), which is what
  computing without ``attention_ref._precision.upcast`` would give.

``ratio`` is attention_ref's error over PyTorch's; `BOUND` is the most it may be, checked by
tests/package/test_low_precision.py and by the benchmark's targets. Not a timing: any machine gives
the same table.

Config: causal attention over n = 1000 tokens, N = 1, H = 2, D = 32, inputs 2·randn
(sliding window: 64 keys back); the modules use d_model = 64, 2 heads, inputs randn.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attention_ref import (
    LayerNorm,
    MultiHeadAttention,
    RMSNorm,
    TransformerEncoderLayer,
    chunked_attention,
    linear_attention,
    scaled_dot_product_attention,
    sliding_window_attention,
    sliding_window_mask,
)
from attention_ref.linear import elu_feature_map

DTYPES = (torch.bfloat16, torch.float16)
BOUND = 1.5  # attention_ref's error may be at most this many times PyTorch's
N, H, LENGTH, D, WIDTH, WINDOW = 1, 2, 1000, 32, 64, 64
Row = tuple[float, float, float]  # attention_ref's error, PyTorch's, the naive formula's


def max_error(result: Tensor, exact: Tensor, dtype: torch.dtype) -> float:
    """The largest absolute difference; ``result`` must come back in ``dtype``."""
    if result.dtype != dtype:
        raise TypeError(f"result: expected {dtype}, the input's dtype, got {result.dtype}")
    return (result.double() - exact).abs().max().item()


# ---------------------------------------------------------------- the naive formulas


def _naive_softmax_attention(q: Tensor, k: Tensor, v: Tensor, allowed: Tensor | None) -> Tensor:
    """softmax(QKᵀ/√D) V, every step in the inputs' dtype. ``allowed``: bool, True = attend."""
    scores = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5  # (N, H, L, S)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    exp = (scores - scores.amax(-1, keepdim=True)).exp()
    return exp / exp.sum(-1, keepdim=True) @ v  # (N, H, L, D)


def _naive_linear_attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Causal linear attention, φ(q)·φ(k) normalized over the keys, in the inputs' dtype."""
    similarity = elu_feature_map(q) @ elu_feature_map(k).transpose(-2, -1)  # (N, H, L, S)
    similarity = similarity.tril()
    return similarity / similarity.sum(-1, keepdim=True) @ v


def _naive_layer_norm(x: Tensor, norm: nn.LayerNorm) -> Tensor:
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def _naive_rms_norm(x: Tensor, norm: nn.RMSNorm) -> Tensor:
    eps = norm.eps if norm.eps is not None else torch.finfo(x.dtype).eps
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * norm.weight


def _naive_mha(x: Tensor, mha: nn.MultiheadAttention) -> Tensor:
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)  # (N, L, E)
    q, k, v = (t.unflatten(-1, (mha.num_heads, -1)).transpose(1, 2) for t in (q, k, v))
    out = _naive_softmax_attention(q, k, v, allowed=None)  # (N, H, L, D)
    return mha.out_proj(out.transpose(1, 2).flatten(2))  # (N, L, E)


def _naive_encoder_layer(x: Tensor, layer: nn.TransformerEncoderLayer) -> Tensor:
    x = _naive_layer_norm(x + _naive_mha(x, layer.self_attn), layer.norm1)  # Post-LN
    ffn = layer.linear2(torch.relu(layer.linear1(x)))
    return _naive_layer_norm(x + ffn, layer.norm2)


# ---------------------------------------------------------------- the rows


def _attention_rows(dtype: torch.dtype, gen: torch.Generator) -> dict[str, Row]:
    q, k, v = ((2 * torch.randn(N, H, LENGTH, D, generator=gen)).to(dtype) for _ in range(3))
    q64, k64, v64 = q.double(), k.double(), v.double()
    causal = torch.ones(LENGTH, LENGTH, dtype=torch.bool).tril()
    band = sliding_window_mask(LENGTH, window=WINDOW)  # causal, w keys back

    def versus_torch(ours: Callable[..., Tensor], allowed: Tensor, **kwargs: Any) -> Row:
        exact = F.scaled_dot_product_attention(q64, k64, v64, **kwargs)
        theirs = F.scaled_dot_product_attention(q, k, v, **kwargs)
        naive = _naive_softmax_attention(q, k, v, allowed)
        ours_error = max_error(ours(q, k, v), exact, dtype)
        return ours_error, max_error(theirs, exact, dtype), max_error(naive, exact, dtype)

    exact_linear = linear_attention(q64, k64, v64, is_causal=True)
    return {
        "scaled_dot_product_attention": versus_torch(
            lambda q, k, v: scaled_dot_product_attention(q, k, v, is_causal=True),
            causal,
            is_causal=True,
        ),
        "chunked_attention": versus_torch(
            lambda q, k, v: chunked_attention(q, k, v, is_causal=True), causal, is_causal=True
        ),
        "sliding_window_attention": versus_torch(
            lambda q, k, v: sliding_window_attention(q, k, v, window=WINDOW, is_causal=True),
            band,
            attn_mask=band,
        ),
        "linear_attention": (
            max_error(linear_attention(q, k, v, is_causal=True), exact_linear, dtype),
            max_error(exact_linear.to(dtype), exact_linear, dtype),  # rounding the exact result
            max_error(_naive_linear_attention(q, k, v), exact_linear, dtype),
        ),
    }


def _call(module: nn.Module, x: Tensor) -> Tensor:
    if isinstance(module, nn.MultiheadAttention):
        return module(x, x, x, need_weights=False)[0]
    out = module(x)
    return out[0] if isinstance(out, tuple) else out


def _module_rows(dtype: torch.dtype, gen: torch.Generator) -> dict[str, Row]:
    x = torch.randn(N, LENGTH, WIDTH, generator=gen)
    torch.manual_seed(0)
    norms = {"LayerNorm": (nn.LayerNorm(WIDTH), LayerNorm), "RMSNorm": (nn.RMSNorm(WIDTH), RMSNorm)}
    pairs: dict[str, tuple[nn.Module, nn.Module, Callable[[Tensor, Any], Tensor]]] = {}
    naive: dict[str, Callable[[Tensor, Any], Tensor]] = {
        "LayerNorm": _naive_layer_norm,
        "RMSNorm": _naive_rms_norm,
    }
    for name, (theirs, cls) in norms.items():
        with torch.no_grad():  # a non-trivial scale and shift
            for p in theirs.parameters():
                p.copy_(torch.randn(p.shape, generator=gen))
        ours = cls(WIDTH)
        ours.load_state_dict(theirs.state_dict())
        pairs[name] = (theirs, ours, naive[name])
    mha = nn.MultiheadAttention(WIDTH, H, batch_first=True)
    pairs["MultiHeadAttention"] = (mha, MultiHeadAttention.from_torch(mha), _naive_mha)
    layer = nn.TransformerEncoderLayer(WIDTH, H, 2 * WIDTH, dropout=0.0, batch_first=True)
    pairs["TransformerEncoderLayer"] = (
        layer,
        TransformerEncoderLayer.from_torch(layer),
        _naive_encoder_layer,
    )

    rows = {}
    low = x.to(dtype)
    with torch.no_grad():
        for name, (theirs, ours, formula) in pairs.items():
            theirs, ours = theirs.to(dtype).eval(), ours.to(dtype).eval()  # rounded weights
            exact = _call(copy.deepcopy(theirs).double(), low.double())  # rounded, in float64
            rows[name] = (
                max_error(_call(ours, low), exact, dtype),
                max_error(_call(theirs, low), exact, dtype),
                max_error(formula(low, theirs), exact, dtype),
            )
    return rows


def low_precision_errors() -> dict[str, Any]:
    """The table: for each dtype and function, attention_ref's max error, PyTorch's, the
    naive formula's, and attention_ref's over PyTorch's (at most `BOUND`)."""
    table: dict[str, Any] = {}
    for dtype in DTYPES:
        gen = torch.Generator().manual_seed(0)
        rows = _attention_rows(dtype, gen) | _module_rows(dtype, gen)
        table[str(dtype).removeprefix("torch.")] = {
            name: {
                "ours": _sig(ours),
                "torch": _sig(theirs),
                "naive": _sig(naive),
                "ratio": _sig(ours / theirs),
            }
            for name, (ours, theirs, naive) in rows.items()
        }
    return {
        "config": {
            "attention": f"causal, n={LENGTH}, N={N}, H={H}, D={D}, inputs 2·randn",
            "window": WINDOW,
            "modules": f"d_model={WIDTH}, {H} heads, n={LENGTH}, inputs randn",
            "exact": "the same math in float64 on the same rounded inputs and weights",
            "linear_attention": "torch: rounding the exact result to the dtype (PyTorch has none)",
            "naive": "the same formula with every intermediate tensor in the input's dtype",
            "bound": BOUND,
        },
        "max_abs_error": table,
    }


def _sig(x: float, digits: int = 3) -> float:
    return float(f"{x:.{digits}g}")
