import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from attention_ref import causal_mask, padding_mask, sliding_window_mask

sizes = st.integers(1, 12)


@given(L=sizes, S=sizes)
def test_top_left_causal_mask_is_torch_is_causal(L, S):
    q, k, v = torch.randn(L, 4), torch.randn(S, 4), torch.randn(S, 3)
    torch.testing.assert_close(
        F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(L, S)),
        F.scaled_dot_product_attention(q, k, v, is_causal=True),
    )


@given(L=sizes, extra=st.integers(0, 6))
def test_bottom_right_lets_the_last_query_see_every_key(L, extra):
    S = L + extra
    mask = causal_mask(L, S, align="bottom_right")
    assert mask[-1].all()
    # Decoding L new tokens after `extra` cached ones = the last L rows of the full mask.
    assert torch.equal(mask, causal_mask(S)[extra:])


def test_causal_default_key_length():
    assert torch.equal(causal_mask(4), causal_mask(4, 4, align="bottom_right"))


@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=4), pad=st.integers(0, 3))
def test_padding_mask(lengths, pad):
    S = max(lengths) + pad
    mask = padding_mask(lengths, S)
    assert mask.shape == (len(lengths), 1, 1, S) and mask.dtype == torch.bool
    assert mask.sum(-1).flatten().tolist() == lengths
    assert padding_mask(torch.tensor(lengths)).shape[-1] == max(lengths)


@given(L=sizes, window=st.integers(1, 13), causal=st.booleans())
def test_sliding_window_matches_its_definition(L, window, causal):
    mask = sliding_window_mask(L, window, causal=causal)
    for i in range(L):
        for j in range(L):
            expected = 0 <= i - j < window if causal else abs(i - j) < window
            assert bool(mask[i, j]) == expected


@given(L=sizes)
def test_sliding_window_as_wide_as_the_sequence_is_causal(L):
    assert torch.equal(sliding_window_mask(L, window=L), causal_mask(L))


def test_masks_broadcast_over_batch_and_heads():
    scores = torch.zeros(2, 3, 4, 5)  # (N, H, L, S)
    combined = padding_mask([5, 2], 5) & causal_mask(4, 5)
    assert torch.broadcast_shapes(combined.shape, scores.shape) == scores.shape


def test_bad_arguments():
    with pytest.raises(ValueError, match="q_len: expected a positive length, got 0"):
        causal_mask(0)
    with pytest.raises(ValueError, match="align: expected one of"):
        causal_mask(3, align="top")
    with pytest.raises(TypeError, match="lengths: expected a 1-D integer tensor"):
        padding_mask(torch.tensor([1.5, 2.0]))
    with pytest.raises(ValueError, match="max_len: expected at least the longest length 4, got 3"):
        padding_mask([4, 2], max_len=3)
    with pytest.raises(ValueError, match="window: expected a positive length, got 0"):
        sliding_window_mask(4, 0)
    with pytest.raises(TypeError, match="k_len: expected an int, got float"):
        causal_mask(3, 4.0)


@given(
    L=sizes,
    S=sizes,
    window=st.integers(1, 13),
    sink_tokens=st.integers(0, 5),
    causal=st.booleans(),
    align=st.sampled_from(["top_left", "bottom_right"]),
)
def test_sliding_window_with_sink_tokens_matches_its_definition(
    L, S, window, sink_tokens, causal, align
):
    """Keys ``j < sink_tokens`` are seen as well (only up to the query's position when
    causal); ``sink_tokens=0`` is the plain window."""
    mask = sliding_window_mask(L, window, S, causal=causal, align=align, sink_tokens=sink_tokens)
    offset = 0 if align == "top_left" else S - L
    for i in range(L):
        for j in range(S):
            d = i + offset - j
            near = 0 <= d < window if causal else abs(d) < window
            sink = j < sink_tokens and (d >= 0 or not causal)
            assert bool(mask[i, j]) == (near or sink)
    plain = sliding_window_mask(L, window, S, causal=causal, align=align)
    assert torch.equal(
        sliding_window_mask(L, window, S, causal=causal, align=align, sink_tokens=0), plain
    )


def test_bad_sink_tokens():
    with pytest.raises(ValueError, match="sink_tokens: expected a count >= 0, got -1"):
        sliding_window_mask(4, 2, sink_tokens=-1)
    with pytest.raises(TypeError, match="sink_tokens: expected an int, got float"):
        sliding_window_mask(4, 2, sink_tokens=1.0)
