"""attention_ref.mask_mods against Hugging Face's ``transformers.masking_utils``.

Each of our mask functions and its counterpart there, made into a bool (N, 1, L, S) mask by
``masking_utils.sdpa_mask`` (which adds ``q_offset`` with ``add_offsets_to_mask_function``) and by
our ``create_mask``: the same mask, with and without an offset, for L = S and L < S.
"""

from __future__ import annotations

import pytest
import torch

from attention_ref.mask_mods import (
    and_masks,
    causal,
    chunked,
    create_mask,
    document,
    padding,
    sliding_window,
)

mu = pytest.importorskip("transformers.masking_utils")

# (N, L, S, q_offset): prefill (L = S), and L new queries after S - L cached keys
SIZES = [(1, 1, 1, 0), (2, 7, 7, 0), (3, 16, 16, 0), (2, 3, 11, 8), (1, 1, 9, 8)]


def hf_mask(N: int, L: int, S: int, q_offset: int = 0, **how) -> torch.Tensor:
    """Hugging Face's bool mask from ``sdpa_mask``: ``how`` is its ``mask_function``, or its
    ``attention_mask`` (the 2-D padding mask, with the causal function by default)."""
    mask = mu.sdpa_mask(
        batch_size=N, q_length=L, kv_length=S, q_offset=q_offset, allow_is_causal_skip=False, **how
    )
    return mask.expand(N, 1, L, S)  # (N, 1, L, S)


def ours(mask_mod, N: int, L: int, S: int, q_offset: int) -> torch.Tensor:
    return create_mask(mask_mod, N, 1, L, S, q_offset=q_offset)  # (N, 1, L, S)


@pytest.mark.parametrize(("N", "L", "S", "q_offset"), SIZES)
def test_causal(N, L, S, q_offset):
    expected = hf_mask(N, L, S, q_offset, mask_function=mu.causal_mask_function)
    assert torch.equal(ours(causal(), N, L, S, q_offset), expected)


@pytest.mark.parametrize("window", [1, 2, 3, 8, 20])
@pytest.mark.parametrize(("N", "L", "S", "q_offset"), SIZES)
def test_sliding_window(window, N, L, S, q_offset):
    expected = hf_mask(
        N, L, S, q_offset, mask_function=mu.sliding_window_causal_mask_function(window)
    )
    assert torch.equal(ours(sliding_window(window), N, L, S, q_offset), expected)


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 5, 16])
@pytest.mark.parametrize(("N", "L", "S", "q_offset"), SIZES)
def test_chunked(chunk_size, N, L, S, q_offset):
    no_left_padding = torch.zeros(N, dtype=torch.long)
    function = mu.chunked_causal_mask_function(chunk_size, no_left_padding)
    expected = hf_mask(N, L, S, q_offset, mask_function=function)
    assert torch.equal(ours(chunked(chunk_size), N, L, S, q_offset), expected)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("N", "L", "S", "q_offset"), SIZES)
def test_document_with_causal(seed, N, L, S, q_offset):
    """Hugging Face combines ``packed_sequence_mask_function`` with its causal mask function."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 3, (N, S), generator=gen).sort(dim=-1).values  # (N, S)
    function = mu.and_masks(mu.causal_mask_function, mu.packed_sequence_mask_function(ids))
    expected = hf_mask(N, L, S, q_offset, mask_function=function)
    assert torch.equal(ours(and_masks(causal(), document(ids)), N, L, S, q_offset), expected)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("N", "L", "S", "q_offset"), SIZES)
def test_padding(seed, N, L, S, q_offset):
    """Hugging Face's takes the 2-D padding mask (N, S); ours the lengths."""
    lengths = torch.randint(0, S + 1, (N,), generator=torch.Generator().manual_seed(seed))
    keep = torch.arange(S) < lengths[:, None]  # (N, S): True for real tokens
    expected = hf_mask(N, L, S, q_offset, mask_function=mu.padding_mask_function(keep))
    assert torch.equal(ours(padding(lengths), N, L, S, q_offset), expected)


@pytest.mark.parametrize("seed", range(4))
def test_padding_as_sdpa_mask_attention_mask(seed):
    """The same through ``sdpa_mask(attention_mask=...)``, how Hugging Face models pad."""
    N, L, S = 3, 6, 6
    lengths = torch.randint(0, S + 1, (N,), generator=torch.Generator().manual_seed(seed))
    keep = torch.arange(S) < lengths[:, None]  # (N, S)
    expected = hf_mask(N, L, S, attention_mask=keep)
    assert torch.equal(ours(and_masks(causal(), padding(lengths)), N, L, S, 0), expected)
