"""Comparison helpers: agreement relative to the output's scale, per dtype."""

from __future__ import annotations

import functools

import torch
from torch import Tensor

TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-10}


def assert_close_scaled(
    actual: Tensor, expected: Tensor, *, what: str = "output", scale: float | None = None
) -> None:
    """max |actual - expected| <= tol * max(1, scale), with tol set by the dtype.

    ``scale`` defaults to max |expected|; pass the natural size of the quantity when it is
    known to be larger (a Jacobian's norm, say).
    """
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert not actual.isnan().any(), f"{what}: NaN in the result"
    if expected.numel() == 0:
        return
    scale = max(1.0, expected.abs().max().item(), scale or 0.0)
    error = (actual - expected).abs().max().item()
    tol = TOLERANCE[expected.dtype]
    assert error <= tol * scale, f"{what}: max error {error:.3g} > {tol:g} x scale {scale:.3g}"


def grads(fn, inputs: list[Tensor], seed: int = 0) -> list[Tensor]:
    """Gradients of <fn(*inputs), g> for a fixed random cotangent g."""
    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    out = fn(*leaves)
    g = torch.randn(out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(seed))
    (out * g).sum().backward()
    return [x.grad if x.grad is not None else torch.zeros_like(x) for x in leaves]


#: every activation the layers take by name, and any callable, with PyTorch's function
ACTIVATIONS = [
    ("relu", torch.relu),
    ("gelu", torch.nn.functional.gelu),
    ("gelu_tanh", lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
    ("silu", torch.nn.functional.silu),
    (torch.tanh, torch.tanh),  # any callable
]


def assert_same_values_and_grads(out: Tensor, expected: Tensor, x: Tensor) -> None:
    """``out`` equals ``expected``, and so do their gradients with respect to ``x`` (for a
    random cotangent)."""
    assert_close_scaled(out, expected)
    g = torch.randn_like(out)
    (ours,) = torch.autograd.grad((out * g).sum(), x)
    (theirs,) = torch.autograd.grad((expected * g).sum(), x)
    assert_close_scaled(ours, theirs, what="grad of x")


def gradcheck_causal_or_not(fn, L: int, S: int) -> None:
    """``torch.autograd.gradcheck`` of ``fn(q, k, v, is_causal=...)`` in float64, causal and
    not: q ``(2, L, 3)``, k and v ``(2, S, 3)``."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, n, 3, dtype=torch.float64, generator=gen) for n in (L, S, S))
    inputs = [t.requires_grad_() for t in (q, k, v)]
    for is_causal in (False, True):
        assert torch.autograd.gradcheck(functools.partial(fn, is_causal=is_causal), inputs)


def masked_scores(scores: Tensor, attn_mask: Tensor | None, is_causal: bool) -> Tensor:
    """SDPA's masks on ``scores`` ``(..., L, S)``, written plainly: ``is_causal`` the lower
    triangle; a bool mask hides with -inf where False, a float one is added."""
    if is_causal:
        attn_mask = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attn_mask, float("-inf"))
    elif attn_mask is not None:
        scores = scores + attn_mask
    return scores
