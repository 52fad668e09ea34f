"""float16 and bfloat16: every function is as accurate as PyTorch's own kernels.

Each function gets inputs rounded to the low-precision dtype; its result is compared with the
same math in float64 on the same rounded inputs. PyTorch computes softmax, sums and
normalization statistics in float32 and rounds once; so must attention_ref: its maximum error
may be at most 1.5 times PyTorch's on the same inputs (for linear attention, which PyTorch
does not have, 1.5 times the error of rounding the exact result to the dtype).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import attention_ref as ar

DTYPES = [torch.float16, torch.bfloat16]
N, H, L, E = 1, 2, 200, 32


def _qkv(dtype):
    gen = torch.Generator().manual_seed(0)
    return [(2 * torch.randn(N, H, L, E, generator=gen)).to(dtype) for _ in range(3)]


def _error(ours, exact):
    return (ours.double() - exact).abs().max().item()


def _torch_sdpa_error(q, k, v, **kwargs):
    exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), **kwargs)
    return _error(F.scaled_dot_product_attention(q, k, v, **kwargs), exact), exact


ATTENTION = {
    "scaled_dot_product_attention": lambda q, k, v: ar.scaled_dot_product_attention(
        q, k, v, is_causal=True
    ),
    "chunked_attention": lambda q, k, v: ar.chunked_attention(
        q, k, v, is_causal=True, block_size=(48, 64)
    ),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_attention_is_as_accurate_as_torch(name, dtype):
    q, k, v = _qkv(dtype)
    torch_error, exact = _torch_sdpa_error(q, k, v, is_causal=True)
    out = ATTENTION[name](q, k, v)
    assert out.dtype == dtype
    assert _error(out, exact) <= 1.5 * torch_error


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_weights_are_as_accurate_as_torch_softmax(dtype):
    q, k, _ = _qkv(dtype)
    scores = (q.double() @ k.double().transpose(-2, -1)) / E**0.5
    exact = torch.softmax(scores, dim=-1)
    theirs = torch.softmax((q.float() @ k.float().transpose(-2, -1) / E**0.5), -1).to(dtype)
    ours = ar.attention_weights(q, k)
    assert ours.dtype == dtype
    assert _error(ours, exact) <= 1.5 * _error(theirs, exact)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sliding_window_is_as_accurate_as_torch(dtype):
    q, k, v = _qkv(dtype)
    band = ar.sliding_window_mask(L, window=16, causal=False)
    torch_error, exact = _torch_sdpa_error(q, k, v, attn_mask=band)
    out = ar.sliding_window_attention(q, k, v, window=16, block_size=32)
    assert out.dtype == dtype
    assert _error(out, exact) <= 1.5 * torch_error


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("is_causal", [False, True])
def test_linear_attention_errs_no_more_than_rounding(dtype, is_causal):
    q, k, v = _qkv(dtype)
    exact = ar.linear_attention(q.double(), k.double(), v.double(), is_causal=is_causal)
    rounding = _error(exact.to(dtype), exact)  # the least any dtype-valued result can err
    out = ar.linear_attention(q, k, v, is_causal=is_causal, chunk_size=48)
    assert out.dtype == dtype
    assert _error(out, exact) <= 1.5 * rounding
    weights = ar.linear_attention_weights(q, k, is_causal=is_causal)
    exact_weights = ar.linear_attention_weights(q.double(), k.double(), is_causal=is_causal)
    assert _error(weights, exact_weights) <= 1.5 * _error(exact_weights.to(dtype), exact_weights)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["LayerNorm", "RMSNorm"])
def test_norms_are_as_accurate_as_torch(name, dtype):
    gen = torch.Generator().manual_seed(0)
    x = (3 * torch.randn(8, 50, 64, generator=gen) + 2).to(dtype)
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(64)
    with torch.no_grad():  # a non-trivial scale (and shift) to apply in float32 too
        for p in theirs.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    ours = getattr(ar, name)(64)
    ours.load_state_dict(theirs.state_dict())
    exact = theirs.double()(x.double())
    torch_error = _error(theirs.to(dtype)(x), exact)
    out = ours.to(dtype)(x)
    assert out.dtype == dtype
    assert _error(out, exact) <= 1.5 * torch_error


def _torch_modules(dtype):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(64, 4, batch_first=True)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    return {
        "MultiHeadAttention": (mha, ar.MultiHeadAttention.from_torch(mha)),
        "TransformerEncoderLayer": (layer, ar.TransformerEncoderLayer.from_torch(layer)),
    }


def _call(module, x):
    if isinstance(module, torch.nn.MultiheadAttention):
        return module(x, x, x, need_weights=False)[0]
    out = module(x)
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["MultiHeadAttention", "TransformerEncoderLayer"])
def test_modules_are_as_accurate_as_torch(name, dtype):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 100, 64, generator=gen).to(dtype)
    theirs, ours = _torch_modules(dtype)[name]
    exact = _call(theirs.double().eval(), x.double())
    theirs, ours = theirs.to(dtype).eval(), ours.to(dtype).eval()
    with torch.no_grad():
        torch_error = _error(_call(theirs, x), exact)
        out = _call(ours, x)
    assert out.dtype == dtype
    assert _error(out, exact) <= 1.5 * torch_error


@pytest.mark.parametrize("dtype", DTYPES)
def test_multihead_weights_are_returned_in_the_input_dtype(dtype):
    mha = ar.MultiHeadAttention(16, 2).to(dtype)
    out, weights = mha(torch.randn(1, 5, 16).to(dtype))
    assert out.dtype == weights.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_chunked_gradients_are_as_accurate_as_torch(dtype):
    q, k, v = _qkv(dtype)
    g = torch.randn(N, H, L, E, generator=torch.Generator().manual_seed(1)).to(dtype)

    def gradients(fn, inputs):
        leaves = [x.detach().clone().requires_grad_() for x in inputs]
        torch.autograd.backward(fn(*leaves), g.to(leaves[0].dtype))
        return [x.grad for x in leaves]

    kwargs = {"is_causal": True}
    exact = gradients(
        lambda *a: F.scaled_dot_product_attention(*a, **kwargs),
        [q.double(), k.double(), v.double()],
    )
    theirs = gradients(lambda *a: F.scaled_dot_product_attention(*a, **kwargs), [q, k, v])
    ours = gradients(lambda *a: ar.chunked_attention(*a, **kwargs, block_size=64), [q, k, v])
    for name, a, b, c in zip("qkv", ours, theirs, exact, strict=True):
        assert a.dtype == dtype, name
        assert _error(a, c) <= 1.5 * _error(b, c), f"grad of {name}"
