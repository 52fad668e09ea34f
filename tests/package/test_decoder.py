import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from attention_ref import TransformerDecoderLayer, causal_mask, padding_mask

from ._compare import assert_close_scaled
from .strategies import torch_layer_arguments


@given(
    **torch_layer_arguments(["none", "causal", "causal_hint", "memory"]),
    T=st.integers(1, 6),
    S=st.integers(1, 6),
)
def test_matches_torch_decoder_layer_in_eval(
    heads, head_dim, ff, T, S, N, activation, norm_first, bias, mask, dtype, seed
):
    torch.manual_seed(seed)
    E = heads * head_dim
    theirs = nn.TransformerDecoderLayer(
        E, heads, ff, dropout=0.1, activation=activation, batch_first=True,
        norm_first=norm_first, bias=bias, dtype=dtype,
    ).eval()  # fmt: skip
    ours = TransformerDecoderLayer.from_torch(theirs).eval()
    tgt = torch.randn(N, T, E, dtype=dtype, requires_grad=True)
    memory = torch.randn(N, S, E, dtype=dtype, requires_grad=True)
    if mask == "causal":  # a boolean mask, inverted for PyTorch (True = masked there)
        out = ours(tgt, memory, tgt_mask=causal_mask(T))
        ref = theirs(tgt, memory, tgt_mask=~causal_mask(T))
    elif mask == "causal_hint":
        out = ours(tgt, memory, tgt_is_causal=True)
        ref = theirs(tgt, memory, tgt_mask=~causal_mask(T), tgt_is_causal=True)
    elif mask == "memory":  # padding on the source, per batch row: a float mask for PyTorch
        keep = padding_mask(torch.randint(1, S + 1, (N,)), S)  # (N, 1, 1, S)
        out = ours(tgt, memory, memory_mask=keep)
        additive = torch.zeros(N, 1, 1, S, dtype=dtype).masked_fill(~keep, float("-inf"))
        ref = theirs(tgt, memory, memory_mask=additive.expand(N, heads, T, S).reshape(-1, T, S))
    else:
        out, ref = ours(tgt, memory), theirs(tgt, memory)
    assert_close_scaled(out, ref)
    if dtype == torch.float32:
        return  # three LayerNorms amplify float32 rounding in the gradient (see test_encoder)
    g = torch.randn_like(out)
    ours_grads = torch.autograd.grad((out * g).sum(), (tgt, memory))
    theirs_grads = torch.autograd.grad((ref * g).sum(), (tgt, memory))
    for name, a, b in zip(("tgt", "memory"), ours_grads, theirs_grads, strict=True):
        assert_close_scaled(a, b, what=f"grad of {name}")


def test_parameter_gradients_match():
    torch.manual_seed(0)
    theirs = nn.TransformerDecoderLayer(8, 2, 16, batch_first=True, dtype=torch.float64).eval()
    ours = TransformerDecoderLayer.from_torch(theirs).eval()
    tgt, memory = torch.randn(2, 4, 8, dtype=torch.float64), torch.randn(2, 5, 8).double()
    ours(tgt, memory, tgt_is_causal=True).square().sum().backward()
    theirs(tgt, memory, tgt_mask=~causal_mask(4), tgt_is_causal=True).square().sum().backward()
    for name in ("linear1.weight", "linear2.bias", "norm3.weight"):
        a, b = ours.get_parameter(name).grad, theirs.get_parameter(name).grad
        assert_close_scaled(a, b, what=name)
    in_proj = theirs.multihead_attn.in_proj_weight.grad
    assert_close_scaled(ours.multihead_attn.k_proj.weight.grad, in_proj[8:16], what="W^K")


def test_parameter_count():
    ours, theirs = TransformerDecoderLayer(64, 4, 128), nn.TransformerDecoderLayer(64, 4, 128)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())


def test_bad_arguments():
    with pytest.raises(ValueError, match="activation: expected one of"):
        TransformerDecoderLayer(8, 2, activation="tanh")
    with pytest.raises(TypeError, match="module: expected a torch.nn.TransformerDecoderLayer"):
        TransformerDecoderLayer.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="module: expected batch_first=True"):
        TransformerDecoderLayer.from_torch(nn.TransformerDecoderLayer(8, 2))
