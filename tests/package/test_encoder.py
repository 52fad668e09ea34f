import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from attention_ref import TransformerEncoderLayer, causal_mask, padding_mask

from ._compare import ACTIVATIONS, assert_close_scaled, assert_same_values_and_grads
from .strategies import torch_layer_arguments


@given(**torch_layer_arguments(["none", "causal", "padding"]), L=st.integers(1, 6))
def test_matches_torch_encoder_layer_in_eval(
    heads, head_dim, ff, L, N, activation, norm_first, bias, mask, dtype, seed
):
    torch.manual_seed(seed)
    E = heads * head_dim
    theirs = nn.TransformerEncoderLayer(
        E,
        heads,
        ff,
        dropout=0.1,
        activation=activation,
        batch_first=True,
        norm_first=norm_first,
        bias=bias,
        dtype=dtype,
    ).eval()
    ours = TransformerEncoderLayer.from_torch(theirs).eval()
    x = torch.randn(N, L, E, dtype=dtype, requires_grad=True)
    if mask == "causal":
        out = ours(x, is_causal=True)
        ref = theirs(x, src_mask=~causal_mask(L), is_causal=True)
    elif mask == "padding":
        lengths = torch.randint(1, L + 1, (N,))
        keep = padding_mask(lengths, L)
        out = ours(x, attn_mask=keep)
        ref = theirs(x, src_key_padding_mask=~keep[:, 0, 0])
        # PyTorch's fast path returns zeros at padded positions; compare the real tokens.
        real = keep[:, 0, 0, :, None]
        out, ref = out * real, ref * real
    else:
        out, ref = ours(x), theirs(x)
    assert_close_scaled(out, ref)
    if dtype == torch.float32:
        # Two LayerNorms amplify float32 rounding in the gradient by 1/std, which is unbounded
        # for nearly equal features; the components' float32 gradients are tested on their own.
        return
    g = torch.randn_like(out)
    (ours_grad,) = torch.autograd.grad((out * g).sum(), x)
    (theirs_grad,) = torch.autograd.grad((ref * g).sum(), x)
    assert_close_scaled(ours_grad, theirs_grad, what="grad of x")


def test_parameter_count():
    d, f = 512, 2048
    ours = TransformerEncoderLayer(d, 8, f)
    theirs = nn.TransformerEncoderLayer(d, 8, f)
    count = sum(p.numel() for p in ours.parameters())
    assert count == sum(p.numel() for p in theirs.parameters())
    assert count == (4 * d * d + 4 * d) + (2 * d * f + f + d) + 2 * (2 * d) == 3_152_384


def test_pre_ln_and_post_ln_differ():
    torch.manual_seed(0)
    post = TransformerEncoderLayer(8, 2, 16).eval()
    pre = TransformerEncoderLayer(8, 2, 16, norm_first=True).eval()
    pre.load_state_dict(post.state_dict())
    x = torch.randn(1, 4, 8)
    assert not torch.allclose(pre(x), post(x))
    # Post-LN output is normalized; Pre-LN output is not (the residual stream is raw).
    assert post(x).mean(-1).abs().max() < 1e-5


def test_bad_arguments():
    with pytest.raises(ValueError, match="activation: expected one of"):
        TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(
        TypeError, match="module: expected a torch.nn.TransformerEncoderLayer, got Linear"
    ):
        TransformerEncoderLayer.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="module: expected batch_first=True"):
        TransformerEncoderLayer.from_torch(nn.TransformerEncoderLayer(8, 2))
    with pytest.raises(ValueError, match="embed_dim: expected a positive multiple of num_heads"):
        TransformerEncoderLayer(10, 3)


@pytest.mark.parametrize(("name", "reference"), ACTIVATIONS)
def test_activations_and_feed_forward(name, reference):
    torch.manual_seed(0)
    layer = TransformerEncoderLayer(8, 2, 12, activation=name).double().eval()
    x = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
    expected = layer.linear2(reference(layer.linear1(x)))
    assert_same_values_and_grads(layer._feed_forward(x), expected, x)


def test_pytorchs_arguments_only():
    """The Llama options live in DecoderBlock: the encoder layer is PyTorch's."""
    with pytest.raises(TypeError, match="unexpected keyword argument 'norm'"):
        TransformerEncoderLayer(8, 2, norm="rmsnorm")
    with pytest.raises(TypeError, match="unexpected keyword argument 'kv_cache'"):
        TransformerEncoderLayer(8, 2)(torch.randn(1, 3, 8), kv_cache=None)
