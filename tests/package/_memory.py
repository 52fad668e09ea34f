"""Record what a function allocates: proof that a blocked algorithm never builds L×S."""

from __future__ import annotations

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class AllocationRecorder(TorchDispatchMode):
    """Within ``with AllocationRecorder() as rec:``, the largest storage any op returned
    (views share their base's storage, so an ``expand`` costs nothing here) and how many
    times each op ran."""

    def __init__(self) -> None:
        super().__init__()
        self.largest_bytes = 0
        self.calls: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.calls[func.overloadpacket.__name__] += 1
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.largest_bytes = max(self.largest_bytes, t.untyped_storage().nbytes())
        return out
