import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attention_ref import (
    MultiHeadAttention,
    attention_weights,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
)
from attention_ref.mask_conventions import (
    CONVENTIONS,
    from_sdpa_mask,
    to_additive_mask,
    to_sdpa_mask,
)

from ._compare import assert_close_scaled

small = st.integers(1, 4)


def _bools(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.rand(shape, generator=gen) < 0.6


def _masked_fill_attention(query, key, value, mask):
    """Tutorial attention (Annotated Transformer): masked_fill(mask == 0, -1e9), plain softmax."""
    scores = query @ key.transpose(-2, -1) / query.size(-1) ** 0.5
    scores = scores.masked_fill(mask == 0, -1e9)
    return torch.softmax(scores, dim=-1) @ value


@given(
    convention=st.sampled_from(CONVENTIONS),
    N=small,
    H=small,
    L=small,
    S=small,
    per_head=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_sdpa_mask_survives_a_round_trip(convention, N, H, L, S, per_head, seed):
    gen = torch.Generator().manual_seed(seed)
    if convention in ("mha_key_padding_mask", "huggingface"):
        mask = _bools(gen, N, 1, 1, S)  # these conventions only hold padding masks
    elif per_head:
        mask = _bools(gen, N, H, L, S)
    else:
        mask = _bools(gen, N, 1, L, S) if convention != "sdpa" else _bools(gen, L, S)
    native = from_sdpa_mask(mask, convention, num_heads=H)
    back = to_sdpa_mask(native, convention, num_heads=H)
    assert back.dtype == torch.bool
    if convention == "mha_attn_mask":
        assert native.shape == (N * H, L, S)
        mask = mask.expand(N, H, L, S)  # nn.MultiheadAttention stores one mask per head
    assert torch.equal(back, mask)


@given(N=small, H=small, L=small, S=small, seed=st.integers(0, 2**16))
def test_native_masks_survive_a_round_trip(N, H, L, S, seed):
    gen = torch.Generator().manual_seed(seed)
    natives = {
        "sdpa": [_bools(gen, N, 1, L, S)],
        "mha_attn_mask": [_bools(gen, L, S), _bools(gen, N * H, L, S)],
        "mha_key_padding_mask": [_bools(gen, N, S)],
        "huggingface": [_bools(gen, N, S).long()],
        "masked_fill": [_bools(gen, L, S).long(), _bools(gen, N, H, L, S).long()],
    }
    for convention, masks in natives.items():
        for native in masks:
            sdpa = to_sdpa_mask(native, convention, num_heads=H)
            assert torch.equal(from_sdpa_mask(sdpa, convention, num_heads=H), native), convention


def test_shapes_broadcast_against_the_scores():
    scores = (2, 3, 4, 5)  # (N, H, L, S)
    cases = [
        (torch.ones(4, 5, dtype=torch.bool), "sdpa"),
        (torch.zeros(4, 5, dtype=torch.bool), "mha_attn_mask"),
        (torch.zeros(6, 4, 5, dtype=torch.bool), "mha_attn_mask"),
        (torch.zeros(2, 5, dtype=torch.bool), "mha_key_padding_mask"),
        (torch.ones(2, 5, dtype=torch.int64), "huggingface"),
        (torch.ones(2, 5, dtype=torch.bool), "huggingface"),
        (torch.ones(4, 5), "masked_fill"),
        (torch.ones(2, 4, 5), "masked_fill"),
        (torch.ones(2, 1, 4, 5, dtype=torch.int32), "masked_fill"),
    ]
    for mask, convention in cases:
        keep = to_sdpa_mask(mask, convention, num_heads=3)
        assert keep.dtype == torch.bool and keep.all(), convention
        assert torch.broadcast_shapes(keep.shape, scores) == scores, convention
    # masked_fill's (N, L, S) gets a head dimension; left as is it would broadcast as (H, L, S).
    assert to_sdpa_mask(torch.ones(2, 4, 5), "masked_fill").shape == (2, 1, 4, 5)


@settings(max_examples=30)  # each example builds an nn.MultiheadAttention
@given(
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    H=st.integers(1, 3),
    D=st.integers(1, 3),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_converted_masks_give_the_same_attention_everywhere(lengths, H, D, causal, seed):
    """One padding mask, written in every convention, gives one output in every library."""
    torch.manual_seed(seed)
    N, S, E = len(lengths), max(lengths), H * D
    hf = (torch.arange(S) < torch.tensor(lengths)[:, None]).long()  # (N, S), 1 = attend
    keep = to_sdpa_mask(hf, "huggingface")  # (N, 1, 1, S)
    if causal:  # query 0 always sees key 0: no fully masked row
        keep = keep & causal_mask(S)  # (N, 1, S, S)
    assert torch.equal(
        keep, padding_mask(lengths) & causal_mask(S) if causal else padding_mask(lengths)
    )

    # Functional attention, float64: attention_ref, torch SDPA (bool and additive), masked_fill.
    q, k, v = (torch.randn(N, H, S, D, dtype=torch.float64) for _ in range(3))
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    assert_close_scaled(scaled_dot_product_attention(q, k, v, attn_mask=keep), expected)
    for fill in ("min", "-inf"):
        additive = to_additive_mask(keep, torch.float64, fill=fill)
        assert_close_scaled(F.scaled_dot_product_attention(q, k, v, attn_mask=additive), expected)
        assert_close_scaled(scaled_dot_product_attention(q, k, v, attn_mask=additive), expected)
    filled = from_sdpa_mask(keep, "masked_fill")
    assert_close_scaled(_masked_fill_attention(q, k, v, filled), expected)

    # nn.MultiheadAttention (True = masked) against attention_ref's MultiHeadAttention.
    theirs = nn.MultiheadAttention(E, H, batch_first=True, dtype=torch.float64)
    ours = MultiHeadAttention.from_torch(theirs)
    x = torch.randn(N, S, E, dtype=torch.float64)
    if causal:
        kwargs = {"attn_mask": from_sdpa_mask(keep, "mha_attn_mask", num_heads=H)}
    else:
        kwargs = {"key_padding_mask": from_sdpa_mask(keep, "mha_key_padding_mask")}
    their_out, their_weights = theirs(x, x, x, average_attn_weights=False, **kwargs)
    our_out, our_weights = ours(x, attn_mask=keep)
    assert_close_scaled(our_out, their_out)
    assert_close_scaled(our_weights, their_weights)


def test_what_a_fully_masked_row_becomes():
    """The last column of the conventions table: zeros, NaN or a uniform row."""
    q = k = v = torch.eye(3).reshape(1, 1, 3, 3)  # (N, H, L, E)
    keep = padding_mask([0], max_len=3)  # a sequence with no real token: every key masked
    zeros = torch.zeros(1, 1, 3, 3)
    uniform = torch.full((1, 1, 3, 3), 1 / 3)

    # attention_ref and torch SDPA: zeros, with a bool mask or -inf added.
    for mask in (keep, to_additive_mask(keep, fill="-inf")):
        assert torch.equal(scaled_dot_product_attention(q, k, v, attn_mask=mask), zeros)
        assert torch.equal(F.scaled_dot_product_attention(q, k, v, attn_mask=mask), zeros)
    # -inf with a plain softmax: NaN.
    scores = (q @ k.transpose(-2, -1)).masked_fill(~keep, float("-inf"))
    assert torch.softmax(scores, dim=-1).isnan().all()
    # finfo.min (Hugging Face) or masked_fill's -1e9 in float32: all scores equal, uniform.
    additive = to_additive_mask(keep, torch.float32)
    torch.testing.assert_close(attention_weights(q, k, attn_mask=additive), uniform)
    filled = from_sdpa_mask(keep, "masked_fill")
    filled_weights = torch.softmax((q @ k.transpose(-2, -1)).masked_fill(filled == 0, -1e9), -1)
    torch.testing.assert_close(filled_weights, uniform)
    # -1e9 does not fit in float16.
    assert torch.tensor(-1e9, dtype=torch.float16).isneginf()
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.zeros(3, dtype=torch.float16).masked_fill(filled[0, 0, 0] == 0, -1e9)
    # nn.MultiheadAttention with a key_padding_mask that masks every key: NaN.
    mha = nn.MultiheadAttention(3, 1, batch_first=True)
    x = torch.randn(1, 3, 3)
    out, _ = mha(x, x, x, key_padding_mask=from_sdpa_mask(keep, "mha_key_padding_mask"))
    assert out.isnan().all()


def test_bad_arguments_name_what_was_wrong():
    hf = torch.tensor([[1, 1, 0]])
    with pytest.raises(ValueError, match=r"convention: expected one of \('sdpa'"):
        to_sdpa_mask(hf, "pytorch")
    for convert in (to_sdpa_mask, from_sdpa_mask):  # no old names: one list of conventions
        with pytest.raises(ValueError, match=r"convention: expected one of \('sdpa'"):
            convert(torch.ones(2, 3, dtype=torch.bool), "seeds")
    with pytest.raises(TypeError, match="mask: expected a torch.Tensor, got list"):
        to_sdpa_mask([[1, 0]], "huggingface")
    with pytest.raises(
        TypeError, match="'sdpa' convention expects a bool tensor, got torch.float32"
    ):
        to_sdpa_mask(torch.zeros(2, 3), "sdpa")
    with pytest.raises(TypeError, match="pass it on unchanged"):
        to_sdpa_mask(torch.zeros(2, 3), "mha_attn_mask")
    with pytest.raises(ValueError, match=r"expects shape \(N, S\), got \(1, 1, 1, 3\)"):
        to_sdpa_mask(hf[:, None, None], "huggingface")
    with pytest.raises(ValueError, match=r"0 \(padding\) and 1 \(attend\), got values \[0, 2\]"):
        to_sdpa_mask(torch.tensor([[2, 0]]), "huggingface")
    with pytest.raises(ValueError, match="num_heads: expected a positive int .* got None"):
        to_sdpa_mask(torch.zeros(6, 2, 2, dtype=torch.bool), "mha_attn_mask")
    with pytest.raises(ValueError, match="num_heads: expected a divisor of N\\*H = 6, got 4"):
        to_sdpa_mask(torch.zeros(6, 2, 2, dtype=torch.bool), "mha_attn_mask", num_heads=4)
    with pytest.raises(TypeError, match="mask: expected a bool SDPA mask .* got torch.int64"):
        from_sdpa_mask(hf, "huggingface")
    with pytest.raises(ValueError, match=r"expected shape \(N, 1, 1, S\), got \(2, 1, 3, 3\)"):
        from_sdpa_mask(padding_mask([1, 2], 3) & causal_mask(3), "huggingface")
    with pytest.raises(ValueError, match=r"made from \(L, S\) or \(N, H, L, S\), got \(3,\)"):
        from_sdpa_mask(torch.ones(3, dtype=torch.bool), "mha_attn_mask")
    with pytest.raises(ValueError, match=r"1 or num_heads = 2 heads .* got \(1, 3, 2, 2\)"):
        from_sdpa_mask(torch.ones(1, 3, 2, 2, dtype=torch.bool), "mha_attn_mask", num_heads=2)
    with pytest.raises(TypeError, match="dtype: expected a floating-point torch.dtype"):
        to_additive_mask(torch.ones(2, dtype=torch.bool), torch.int64)
    with pytest.raises(ValueError, match="fill: expected 'min' or '-inf', got -1000000000.0"):
        to_additive_mask(torch.ones(2, dtype=torch.bool), fill=-1e9)
