"""MultiHeadAttention.to_torch: from_torch's inverse, an nn.MultiheadAttention with the same
weights (batch-first), and a clear error for what PyTorch's module cannot express."""

import math

import pytest
import torch
from hypothesis import given
from torch import nn

from attention_ref import MultiHeadAttention, chunked_attention

from ._compare import assert_close_scaled
from .strategies import torch_mha_arguments, torch_mha_masks


@given(**torch_mha_arguments(max_len=6))
def test_to_torch_computes_the_same(heads, head_dim, L, S, N, kdim, vdim, bias, mask, dtype, seed):
    torch.manual_seed(seed)
    E = heads * head_dim
    ours = MultiHeadAttention(E, heads, bias=bias, kdim=kdim, vdim=vdim, dtype=dtype)
    theirs = ours.to_torch()
    assert isinstance(theirs, nn.MultiheadAttention) and theirs.batch_first
    if mask == "causal":
        S = L
    query = torch.randn(N, L, E, dtype=dtype)
    key = torch.randn(N, S, kdim or E, dtype=dtype)
    value = torch.randn(N, S, vdim or E, dtype=dtype)
    our_kwargs, their_kwargs = torch_mha_masks(mask, N, L, S, dtype)
    out, weights = ours(query, key, value, **our_kwargs)
    their_out, their_weights = theirs(query, key, value, **their_kwargs, average_attn_weights=False)
    assert_close_scaled(out, their_out)
    assert_close_scaled(weights, their_weights, what="weights")


@pytest.mark.parametrize(
    "theirs",
    [
        nn.MultiheadAttention(8, 2, batch_first=True),
        nn.MultiheadAttention(6, 3, bias=False, kdim=4, vdim=5),
        nn.MultiheadAttention(4, 1, dropout=0.1, dtype=torch.float64),
    ],
)
def test_to_torch_of_from_torch_round_trips(theirs):
    back = MultiHeadAttention.from_torch(theirs).to_torch()
    assert back.batch_first  # ours is batch-first, whatever the original was
    assert (back.embed_dim, back.num_heads, back.kdim, back.vdim, back.dropout) == (
        theirs.embed_dim,
        theirs.num_heads,
        theirs.kdim,
        theirs.vdim,
        theirs.dropout,
    )
    assert back.state_dict().keys() == theirs.state_dict().keys()
    for name, tensor in theirs.state_dict().items():
        assert torch.equal(back.state_dict()[name], tensor), name
    assert back.training == theirs.training


def test_from_torch_of_to_torch_round_trips():
    ours = MultiHeadAttention(8, 4, dtype=torch.float64).eval()
    again = MultiHeadAttention.from_torch(ours.to_torch())
    assert again.state_dict().keys() == ours.state_dict().keys()
    for name, tensor in ours.state_dict().items():
        assert torch.equal(again.state_dict()[name], tensor), name


def test_a_default_scale_written_out_is_accepted():
    ours = MultiHeadAttention(8, 2, scale=1 / math.sqrt(4))
    x = torch.randn(2, 3, 8)
    torch.testing.assert_close(ours.to_torch()(x, x, x)[0], ours(x)[0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_kv_heads": 1}, r"num_kv_heads: expected 2 for nn.MultiheadAttention, got 1"),
        (
            {"rope_base": 10000.0},
            r"rope_base: expected None for nn.MultiheadAttention, got 10000.0",
        ),
        ({"head_dim": 3}, r"head_dim: expected 4 for nn.MultiheadAttention, got 3"),
        ({"scale": 0.3}, r"scale: expected None for nn.MultiheadAttention, got 0.3"),
        (
            {"attention_fn": chunked_attention},
            r"attention_fn: expected None for nn.MultiheadAttention, got chunked_attention",
        ),
        ({"sinks": True}, r"sinks: expected False for nn.MultiheadAttention, got True"),
    ],
)
def test_what_nn_multihead_attention_cannot_express_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(8, 2, **kwargs).to_torch()
