"""Bad input: a clear error that names the argument, raised by attention_ref itself."""

from __future__ import annotations

import pytest
import torch

#: a mask no kernel may take, for every kernel with SDPA's ``attn_mask`` and ``is_causal``
#: (query (1, 2, 3, 4), key (1, 2, 5, 4))
BAD_MASKS = [
    (
        {"attn_mask": torch.ones(3, 4, dtype=torch.bool)},
        ValueError,
        r"attn_mask: expected a shape broadcastable to \(1, 2, 3, 5\), got \(3, 4\)",
    ),
    (
        {"attn_mask": torch.ones(3, 5, dtype=torch.int64)},
        TypeError,
        r"attn_mask: expected a bool .* got torch.int64",
    ),
    (
        {"attn_mask": torch.ones(3, 5, dtype=torch.bool), "is_causal": True},
        ValueError,
        r"is_causal: cannot be combined with attn_mask",
    ),
]


def assert_names_the_argument(fn, kwargs, error, message, batch=(1, 2)):
    """``fn(query, key, value, **kwargs)`` raises ``error`` matching ``message`` from inside
    attention_ref, not deep in torch; query ``(*batch, 3, 4)``, key ``(*batch, 5, 4)`` and
    value ``(*batch, 5, 2)`` unless ``kwargs`` gives them."""
    args = {"query": torch.randn(*batch, 3, 4), "key": torch.randn(*batch, 5, 4)}
    args |= {"value": torch.randn(*batch, 5, 2), **kwargs}
    with pytest.raises(error, match=message) as info:
        fn(**args)
    assert info.traceback[-1].path.parent.name == "attention_ref"  # raised by us, not torch
