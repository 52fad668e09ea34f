"""Learned sink logits (gpt-oss): one extra logit per head in every row's softmax, dropped after.

The reference appends the sink as a column of the scores, takes a plain softmax and drops that
column again, as Hugging Face's gpt-oss eager attention does.
"""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_ref import (
    DecoderBlock,
    KVCache,
    MultiHeadAttention,
    attention_weights,
    chunked_attention,
    scaled_dot_product_attention,
)

from ._compare import assert_close_scaled, grads, masked_scores
from .strategies import attention_cases


def _reference(query, key, value, sinks, attn_mask=None, is_causal=False, scale=None, gqa=False):
    """Concatenate the sink column to the masked scores, softmax, drop it: ``(..., L, Dv)``."""
    if gqa:
        group = query.size(-3) // key.size(-3)
        key, value = key.repeat_interleave(group, -3), value.repeat_interleave(group, -3)
    scale = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = masked_scores(query @ key.transpose(-2, -1) * scale, attn_mask, is_causal)
    sink = sinks[..., None, None].expand(*scores.shape[:-1], 1)  # (..., H, L, 1)
    weights = torch.cat([scores, sink], dim=-1).softmax(dim=-1)[..., :-1]  # (..., H, L, S)
    return weights @ value


@given(case=attention_cases(dtypes=(torch.float64,)), size=st.sampled_from([1.0, 3.0, 40.0]))
@settings(max_examples=80, deadline=None)
def test_sinks_equal_the_concatenated_column(case, size):
    """Values and gradients (query, key, value and the sinks) in float64, any mask, GQA, scale."""
    heads = case.query.size(-3)
    sinks = torch.randn(heads, dtype=torch.float64) * size
    kw = case.kwargs

    def ours(q, k, v, s):
        return scaled_dot_product_attention(q, k, v, **kw, sinks=s)

    def ref(q, k, v, s):
        return _reference(
            q, k, v, s, case.attn_mask, case.is_causal, case.scale, case.enable_gqa
        )  # fmt: skip

    inputs = [case.query, case.key, case.value, sinks]
    assert_close_scaled(ours(*inputs), ref(*inputs))
    for name, g_ours, g_ref in zip("qkvs", grads(ours, inputs), grads(ref, inputs), strict=True):
        assert_close_scaled(g_ours, g_ref, what=f"grad {name}")
    weights = attention_weights(case.query, case.key, **kw, sinks=sinks)
    assert (weights.sum(-1) <= 1 + 1e-12).all()  # < 1 unless the sink is far below the scores


def test_sinks_none_and_a_minus_infinite_sink_change_nothing():
    """``sinks=None`` is the function as it was; a sink of -inf never wins: the same bits."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, generator=gen) for _ in range(3))
    mask = torch.rand(5, 5, generator=gen) < 0.6
    mask[0] = False  # a fully masked row
    for kw in ({}, {"is_causal": True}, {"attn_mask": mask}):
        plain = scaled_dot_product_attention(q, k, v, **kw)
        assert torch.equal(scaled_dot_product_attention(q, k, v, **kw, sinks=None), plain)
        never = torch.full((3,), float("-inf"))
        assert torch.equal(scaled_dot_product_attention(q, k, v, **kw, sinks=never), plain)
        assert torch.equal(
            attention_weights(q, k, **kw, sinks=never), attention_weights(q, k, **kw)
        )  # fmt: skip


def test_a_fully_masked_row_gives_zeros():
    q = torch.randn(1, 2, 3, 4, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 2, 3, 4, dtype=torch.float64)
    sinks = torch.tensor([0.5, -2.0], dtype=torch.float64, requires_grad=True)
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[1] = False
    for attn_mask in (mask, torch.zeros(3, 3).masked_fill(~mask, float("-inf")).double()):
        weights = attention_weights(q, k, attn_mask, sinks=sinks)
        assert torch.equal(weights[:, :, 1], torch.zeros(1, 2, 3, dtype=torch.float64))
        out = scaled_dot_product_attention(q, k, k, attn_mask, sinks=sinks)
        assert torch.equal(out[:, :, 1], torch.zeros(1, 2, 4, dtype=torch.float64))
        out.sum().backward()
        assert q.grad is not None and sinks.grad is not None
        assert q.grad.isfinite().all() and sinks.grad.isfinite().all()


def test_the_sink_rescales_the_output_by_a_sigmoid():
    """Output with sinks = output without x sigmoid(lse - sink): a kernel can add sinks after."""
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 4, 6, 8, generator=gen, dtype=torch.float64) for _ in range(3))
    sinks = torch.randn(4, generator=gen, dtype=torch.float64)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(8)).masked_fill(
        ~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf")
    )
    lse = scores.logsumexp(-1, keepdim=True)  # (N, H, L, 1)
    without = scaled_dot_product_attention(q, k, v, is_causal=True)
    rescaled = without * torch.sigmoid(lse - sinks[:, None, None])
    assert_close_scaled(
        scaled_dot_product_attention(q, k, v, is_causal=True, sinks=sinks), rescaled
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_is_computed_in_float32(dtype):
    gen = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, 4, 5, 8, generator=gen).to(dtype) for _ in range(3))
    sinks = torch.randn(4, generator=gen).to(dtype)
    out = scaled_dot_product_attention(q, k, v, is_causal=True, sinks=sinks)
    assert out.dtype == dtype
    expected = _reference(q.float(), k.float(), v.float(), sinks.float(), is_causal=True)
    torch.testing.assert_close(out.float(), expected, atol=1e-2, rtol=1e-2)


def test_sinks_broadcast_over_the_batch():
    """A shape ``(N, H)`` gives each sequence its own logits; ``(H,)`` shares them."""
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 3, 4, 5, generator=gen, dtype=torch.float64) for _ in range(3))
    sinks = torch.randn(3, generator=gen, dtype=torch.float64)
    shared = scaled_dot_product_attention(q, k, v, sinks=sinks)
    per_batch = scaled_dot_product_attention(q, k, v, sinks=sinks.expand(2, 3))
    assert torch.equal(shared, per_batch)
    scalar = scaled_dot_product_attention(q, k, v, sinks=torch.tensor(0.3, dtype=torch.float64))
    assert_close_scaled(scalar, _reference(q, k, v, torch.full((3,), 0.3, dtype=torch.float64)))


def test_bad_sinks():
    q = torch.randn(2, 3, 4, 5)
    with pytest.raises(TypeError, match="sinks: expected a floating-point tensor, got dtype"):
        attention_weights(q, q, sinks=torch.zeros(3, dtype=torch.long))
    with pytest.raises(TypeError, match="sinks: expected a torch.Tensor, got list"):
        attention_weights(q, q, sinks=[0.0, 0.0, 0.0])
    with pytest.raises(
        ValueError, match=r"sinks: expected one logit per head, .*\(2, 3\).* got \(4,\)"
    ):
        scaled_dot_product_attention(q, q, q, sinks=torch.zeros(4))
    with pytest.raises(ValueError, match=r"sinks: .* got \(3, 1\)"):
        attention_weights(q, q, sinks=torch.zeros(3, 1))
    with pytest.raises(ValueError, match=r"sinks: .* got \(3,\)"):
        attention_weights(q[0, 0], q[0, 0], sinks=torch.zeros(3))  # no head dimension


def _sink_fn(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False,
             sinks=None):  # fmt: skip
    _sink_fn.seen = sinks
    return scaled_dot_product_attention(
        query, key, value, attn_mask, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa,
        sinks=sinks,
    )  # fmt: skip


def test_multihead_sinks_parameter_and_state_dict():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 4, num_kv_heads=2, sinks=True)
    assert isinstance(mha.sinks, torch.nn.Parameter) and mha.sinks.shape == (4,)
    assert "sinks" in dict(mha.named_parameters())
    assert MultiHeadAttention(8, 4).sinks is None
    assert "sinks" not in MultiHeadAttention(8, 4).state_dict()
    with torch.no_grad():
        mha.sinks.copy_(torch.randn(4))
    other = MultiHeadAttention(8, 4, num_kv_heads=2, sinks=True)
    other.load_state_dict(mha.state_dict())
    assert torch.equal(other.sinks, mha.sinks)
    with pytest.raises(RuntimeError, match="sinks"):
        MultiHeadAttention(8, 4, num_kv_heads=2).load_state_dict(mha.state_dict())
    block = DecoderBlock(8, 4, 16, sinks=True)
    assert block.self_attn.sinks is not None and "self_attn.sinks" in block.state_dict()


@pytest.mark.parametrize("rope", [False, True])
def test_multihead_sinks_equal_the_reference_and_reach_the_kernel(rope):
    torch.manual_seed(1)
    base = 10000.0 if rope else None
    mha = MultiHeadAttention(8, 4, num_kv_heads=2, sinks=True, rope_base=base, dtype=torch.float64)
    with torch.no_grad():
        mha.sinks.copy_(torch.randn(4) * 2)
    kernel = MultiHeadAttention(
        8, 4, num_kv_heads=2, sinks=True, rope_base=base, attention_fn=_sink_fn, dtype=torch.float64
    )  # fmt: skip
    kernel.load_state_dict(mha.state_dict())
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    out, weights = mha(x, is_causal=True)
    assert weights is not None and (weights.sum(-1) < 1).all()
    assert_close_scaled(kernel(x, is_causal=True)[0], out)
    assert _sink_fn.seen is kernel.sinks
    # the same computation by hand, with the reference
    q = mha.q_proj(x).view(2, 5, 4, 2).transpose(1, 2)
    k = mha.k_proj(x).view(2, 5, 2, 2).transpose(1, 2)
    v = mha.v_proj(x).view(2, 5, 2, 2).transpose(1, 2)
    if rope:
        from attention_ref import apply_rope

        q, k = apply_rope(q, torch.arange(5), base=base), apply_rope(k, torch.arange(5), base=base)
    heads = _reference(q, k, v, mha.sinks, is_causal=True, gqa=True)
    assert_close_scaled(out, mha.out_proj(heads.transpose(1, 2).reshape(2, 5, 8)))
    out.sum().backward()
    assert mha.sinks.grad is not None and (mha.sinks.grad != 0).all()


def test_multihead_sinks_need_an_attention_fn_that_takes_them():
    def no_sinks(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
        return F.scaled_dot_product_attention(query, key, value, attn_mask, 0.0, is_causal, scale)

    def any_kwargs(query, key, value, **kwargs):
        return scaled_dot_product_attention(query, key, value, **kwargs)

    for fn in (no_sinks, chunked_attention, F.scaled_dot_product_attention):
        with pytest.raises(ValueError, match=r"attention_fn: sinks=True passes sinks="):
            MultiHeadAttention(8, 2, sinks=True, attention_fn=fn)
        MultiHeadAttention(8, 2, attention_fn=fn)  # fine without sinks
    torch.manual_seed(2)
    mha = MultiHeadAttention(8, 2, sinks=True)
    with torch.no_grad():
        mha.sinks.fill_(1.5)
    kw = MultiHeadAttention(8, 2, sinks=True, attention_fn=any_kwargs)
    kw.load_state_dict(mha.state_dict())
    x = torch.randn(1, 4, 8)
    torch.testing.assert_close(kw(x)[0], mha(x)[0])


@given(
    chunks=st.lists(st.integers(1, 4), min_size=1, max_size=5),
    kv_heads=st.sampled_from([1, 2, 4]),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=25, deadline=None)
def test_multihead_sinks_with_a_cache_equal_the_full_forward(chunks, kv_heads, seed):
    """Sinks, GQA, rotary positions and a growing cache: decoding in chunks = one forward."""
    torch.manual_seed(seed)
    mha = MultiHeadAttention(
        8, 4, num_kv_heads=kv_heads, sinks=True, rope_base=10000.0, dtype=torch.float64
    )  # fmt: skip
    with torch.no_grad():
        mha.sinks.copy_(torch.randn(4))
    x = torch.randn(2, sum(chunks), 8, dtype=torch.float64)
    full, _ = mha(x, is_causal=True)
    cache, outs, t = KVCache(), [], 0
    for n in chunks:
        outs.append(mha(x[:, t : t + n], is_causal=True, kv_cache=cache)[0])
        t += n
    assert_close_scaled(torch.cat(outs, dim=1), full)
