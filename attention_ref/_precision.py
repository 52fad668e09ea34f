"""Low precision: float16 and bfloat16 inputs are computed in float32, as PyTorch's kernels do.

Rounding every intermediate to 8 (bfloat16) or 11 (float16) significant bits makes a softmax,
a sum over a thousand keys or a variance several times less accurate than PyTorch's own
kernels, which accumulate in float32 and round once, at the end (the repository's
benchmarks/low_precision.py measures both, in its ``naive`` and ``torch`` columns). The
functions of attention_ref do the same as PyTorch: ``upcast`` the inputs, compute, and return
``.to(input dtype)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

#: dtypes computed in float32: softmax, sums and normalization statistics are accumulated there
LOW_PRECISION = (torch.float16, torch.bfloat16)


def upcast(x: Tensor) -> Tensor:
    """``x`` as float32 if it is float16 or bfloat16; float32 and float64 stay as they are."""
    return x.float() if x.dtype in LOW_PRECISION else x
