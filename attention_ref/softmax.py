"""A numerically stable softmax.

softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m), with m = max_j x_j.

Subtracting the maximum changes nothing mathematically (it cancels between numerator and
denominator) but keeps every exponent at or below zero, so ``exp`` never overflows.
"""

from __future__ import annotations

from torch import Tensor

from ._precision import upcast

__all__ = ["softmax"]


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    r"""Softmax along ``dim``, computed as ``exp(x - max) / sum(exp(x - max))``.

    $$\operatorname{softmax}(x)_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},\qquad m = \max_j x_j$$

    Behaves as ``torch.softmax``: a slice that is all ``-inf`` gives NaN, as PyTorch's does
    (its maximum is ``-inf``, and ``-inf - (-inf)`` is NaN). The attention functions handle
    fully masked rows themselves and return zeros there.

    Args:
        x: Any floating tensor.
        dim: The dimension that sums to one.

    Returns:
        A tensor of the same shape and dtype as ``x``, non-negative, summing to 1 along ``dim``
        (computed in float32 for float16 and bfloat16, as ``torch.softmax`` does).

    Raises:
        TypeError: If ``x`` is not a floating-point tensor.

    Examples:
        >>> import torch
        >>> from attention_ref import softmax
        >>> softmax(torch.tensor([1.0, 2.0, 3.0]))
        tensor([0.0900, 0.2447, 0.6652])
        >>> softmax(torch.tensor([1000.0, 1001.0]))  # naive exp(1000) would overflow to inf
        tensor([0.2689, 0.7311])
    """
    if not isinstance(x, Tensor) or not x.is_floating_point():
        got = x.dtype if isinstance(x, Tensor) else type(x).__name__
        raise TypeError(f"x: expected a floating-point tensor, got {got}")
    dtype, x = x.dtype, upcast(x)  # float16/bfloat16: computed in float32
    shifted = x - x.amax(dim=dim, keepdim=True).detach()  # largest entry becomes 0
    exp = shifted.exp()
    return (exp / exp.sum(dim=dim, keepdim=True)).to(dtype)
