"""Comparison helpers: agreement relative to the output's scale, per dtype."""

from __future__ import annotations

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
