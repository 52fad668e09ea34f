"""Layer normalization and RMS normalization over the last dimensions.

LayerNorm(x) = (x - mean) / sqrt(var + eps) * weight + bias   (biased variance: divide by n)
RMSNorm(x)   = x / sqrt(mean(x^2) + eps) * weight

Both normalize each token's features on their own (the trailing ``normalized_shape``
dimensions), unlike BatchNorm, which normalizes each feature across the batch. Parameter
names and ``state_dict`` keys are PyTorch's, so ``load_state_dict`` works both ways.

Shape legend: N batch, L length, E features (d_model); ``normalized_shape`` is usually (E,).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from ._checks import check_positive_int
from ._precision import upcast

__all__ = ["LayerNorm", "RMSNorm"]


def _as_shape(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise ValueError("normalized_shape: expected at least one size, got ()")
    return tuple(check_positive_int("normalized_shape", s, "size") for s in shape)


def _check_input(name: str, x: Tensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    if not isinstance(x, Tensor) or not x.is_floating_point():
        got = x.dtype if isinstance(x, Tensor) else type(x).__name__
        raise TypeError(f"{name}: expected a floating-point tensor, got {got}")
    if tuple(x.shape[x.dim() - len(shape) :]) != shape or x.dim() < len(shape):
        raise ValueError(
            f"{name}: expected the last dimensions to be normalized_shape {shape}, "
            f"got shape {tuple(x.shape)}"
        )
    return tuple(range(-len(shape), 0))  # the dimensions to normalize over


class _Norm(nn.Module):
    """What both norms keep: the shape, ``eps``, and a learned scale ``weight`` (ones)."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None,
        elementwise_affine: bool,
        device: torch.device | str | None,
        dtype: torch.dtype | None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            ones = torch.ones(self.normalized_shape, device=device, dtype=dtype)
            self.weight = nn.Parameter(ones)
        else:
            self.register_parameter("weight", None)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class LayerNorm(_Norm):
    r"""Layer normalization, a drop-in for ``torch.nn.LayerNorm``.

    $$y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \cdot \gamma + \beta$$

    The variance is the *biased* one (divide by n, ``unbiased=False``), as in PyTorch; the
    default ``eps`` is PyTorch's 1e-5. float16 and bfloat16 inputs are normalized in float32
    and returned in their dtype, as PyTorch does.

    Args:
        normalized_shape: The trailing dimensions to normalize, e.g. ``E`` or ``(E,)``.
        eps: Added to the variance before the square root.
        elementwise_affine: Learn a per-feature scale ``weight`` (gamma, starts at 1).
        bias: Also learn a shift ``bias`` (beta, starts at 0); only with
            ``elementwise_affine=True``, as in PyTorch.

    Raises:
        ValueError: If the input's trailing shape is not ``normalized_shape``.

    Examples:
        >>> import torch
        >>> from attention_ref import LayerNorm
        >>> x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
        >>> y = LayerNorm(4)(x)
        >>> y
        tensor([[-1.3416, -0.4472,  0.4472,  1.3416]], grad_fn=<AddBackward0>)
        >>> y.mean().abs() < 1e-6, y.var(unbiased=False)
        (tensor(True), tensor(1.0000, grad_fn=<VarBackward0>))
    """

    eps: float

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(normalized_shape, eps, elementwise_affine, device, dtype)
        if elementwise_affine and bias:
            zeros = torch.zeros(self.normalized_shape, device=device, dtype=dtype)
            self.bias = nn.Parameter(zeros)
        else:
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        """Normalize ``x`` of shape ``(..., *normalized_shape)``; returns the same shape."""
        dims = _check_input("x", x, self.normalized_shape)
        dtype, x = x.dtype, upcast(x)  # float16/bfloat16: statistics in float32
        mean = x.mean(dim=dims, keepdim=True)  # (..., 1)
        var = x.var(dim=dims, unbiased=False, keepdim=True)  # biased: divide by n
        y = (x - mean) / torch.sqrt(var + self.eps)
        if self.weight is not None:
            y = y * self.weight
        if self.bias is not None:
            y = y + self.bias
        return y.to(dtype)


class RMSNorm(_Norm):
    r"""Root-mean-square normalization, a drop-in for ``torch.nn.RMSNorm``.

    $$y = \frac{x}{\sqrt{\frac{1}{n}\sum_i x_i^2 + \epsilon}} \cdot \gamma$$

    No mean is subtracted and there is no bias: cheaper than LayerNorm, and used by Llama,
    Mistral and most recent decoders. float16 and bfloat16 inputs are normalized in float32
    and returned in their dtype.

    Args:
        normalized_shape: The trailing dimensions to normalize.
        eps: Added inside the square root; ``None`` means ``torch.finfo(x.dtype).eps`` of
            the dtype it is computed in (float32 for float16 and bfloat16), as in PyTorch.
        elementwise_affine: Learn a per-feature scale ``weight`` (starts at 1).

    Raises:
        ValueError: If the input's trailing shape is not ``normalized_shape``.

    Examples:
        >>> import torch
        >>> from attention_ref import RMSNorm
        >>> RMSNorm(2)(torch.tensor([[3.0, 4.0]]))  # rms = sqrt((9 + 16) / 2)
        tensor([[0.8485, 1.1314]], grad_fn=<MulBackward0>)
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(normalized_shape, eps, elementwise_affine, device, dtype)

    def forward(self, x: Tensor) -> Tensor:
        """Normalize ``x`` of shape ``(..., *normalized_shape)``; returns the same shape."""
        dims = _check_input("x", x, self.normalized_shape)
        dtype, x = x.dtype, upcast(x)  # float16/bfloat16: statistics in float32
        eps = torch.finfo(x.dtype).eps if self.eps is None else self.eps
        rms = torch.sqrt(x.pow(2).mean(dim=dims, keepdim=True) + eps)  # (..., 1)
        y = x / rms
        return (y * self.weight if self.weight is not None else y).to(dtype)
