"""Cached decoding equals the full causal forward; the cache's size and its errors."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_ref import (
    KVCache,
    MultiHeadAttention,
    apply_rope,
    kv_cache_numel,
)

from ._compare import assert_close_scaled


def _decode(step, x, prompt):
    """Run ``step`` on the prompt, then on one token at a time; concatenate the outputs."""
    outs = [step(x[:, :prompt])] if prompt else []
    outs += [step(x[:, i : i + 1]) for i in range(prompt, x.size(1))]
    return torch.cat(outs, dim=1)


@given(
    kv_heads=st.sampled_from([1, 2, 4]),
    head_dim=st.sampled_from([2, 4, 6]),
    rope=st.booleans(),
    L=st.integers(1, 7),
    prompt=st.integers(0, 3),
    N=st.integers(1, 2),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=40)
def test_cached_multihead_equals_causal_forward(kv_heads, head_dim, rope, L, prompt, N, seed):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(
        8, 4, num_kv_heads=kv_heads, head_dim=head_dim, rope_base=10000.0 if rope else None,
        dtype=torch.float64,
    )  # fmt: skip
    x = torch.randn(N, L, 8, dtype=torch.float64)
    full, _ = mha(x, is_causal=True)
    cache = KVCache()
    cached = _decode(lambda t: mha(t, is_causal=True, kv_cache=cache)[0], x, min(prompt, L))
    assert_close_scaled(cached, full)
    assert len(cache) == L
    if L == 1:
        return
    # The weights returned with a cache are the full matrix's last rows.
    cache = KVCache()
    mha(x[:, :-1], is_causal=True, kv_cache=cache)
    _, last = mha(x[:, -1:], is_causal=True, kv_cache=cache)
    _, weights = mha(x, is_causal=True)
    assert_close_scaled(last, weights[:, :, -1:])


def test_cache_holds_rotated_keys():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, rope_base=100.0, dtype=torch.float64)
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    cache = KVCache()
    mha(x, kv_cache=cache)
    k = mha.k_proj(x).view(1, 5, 2, 4).transpose(1, 2)  # (N, H, S, D) before rotation
    assert_close_scaled(cache.key, apply_rope(k, base=100.0))
    assert_close_scaled(cache.value, mha.v_proj(x).view(1, 5, 2, 4).transpose(1, 2))


def test_bottom_right_mask_and_explicit_positions():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, rope_base=10000.0, dtype=torch.float64)
    x = torch.randn(1, 6, 8, dtype=torch.float64)
    full, _ = mha(x, is_causal=True)
    cache = KVCache()
    mha(x[:, :4], is_causal=True, kv_cache=cache)
    _, weights = mha(x[:, 4:], is_causal=True, kv_cache=cache, positions=torch.arange(4, 6))
    assert weights[0, :, 0, 5].eq(0).all() and weights[0, :, 1, :].gt(0).all()
    cache = KVCache()
    mha(x[:, :4], is_causal=True, kv_cache=cache)
    out, _ = mha(x[:, 4:], is_causal=True, kv_cache=cache, positions=torch.tensor([[4, 5]]))
    assert_close_scaled(out, full[:, 4:])


def test_head_dim_and_scale():
    torch.manual_seed(0)
    mha = MultiHeadAttention(6, 3, num_kv_heads=1, head_dim=5, scale=0.5, dtype=torch.float64)
    assert mha.q_proj.weight.shape == (15, 6) and mha.k_proj.weight.shape == (5, 6)
    assert mha.out_proj.weight.shape == (6, 15)
    x = torch.randn(2, 4, 6, dtype=torch.float64)
    q = mha.q_proj(x).view(2, 4, 3, 5).transpose(1, 2)
    k = mha.k_proj(x).view(2, 4, 1, 5).transpose(1, 2)
    v = mha.v_proj(x).view(2, 4, 1, 5).transpose(1, 2)
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5, enable_gqa=True)
    expected = mha.out_proj(heads.transpose(1, 2).reshape(2, 4, 15))
    for need_weights in (True, False):
        out, _ = mha(x, is_causal=True, need_weights=need_weights)
        assert_close_scaled(out, expected)
    default = MultiHeadAttention(6, 3, head_dim=5)
    assert default.scale is None and math.isclose(default.head_dim, 5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="head_dim: expected a positive int, got"):
        MultiHeadAttention(8, 2, head_dim=0)
    mha = MultiHeadAttention(8, 2, num_kv_heads=1)
    x = torch.randn(2, 3, 8)
    cache = KVCache()
    mha(x, kv_cache=cache)
    with pytest.raises(ValueError, match=r"kv_cache: expected N=1 and H_kv=1, got a cache"):
        mha(x[:1], kv_cache=cache)
    with pytest.raises(ValueError, match="kv_cache: only for self-attention"):
        mha(x, torch.randn(2, 4, 8), kv_cache=cache)
    with pytest.raises(TypeError, match="kv_cache: expected a KVCache, got dict"):
        mha(x, kv_cache={})
    with pytest.raises(ValueError, match=r"kv_cache: expected N=2 and H_kv=4, got a cache"):
        MultiHeadAttention(8, 4)(x, kv_cache=cache)
    with pytest.raises(ValueError, match=r"kv_cache: expected new tokens with the cached"):
        cache.update(torch.ones(2, 1, 1, 3), torch.ones(2, 1, 1, 3))
    rope = MultiHeadAttention(8, 2, rope_base=10000.0)
    cache = KVCache()
    rope(x, kv_cache=cache)
    with pytest.raises(ValueError, match=r"positions: with a cache of 3 tokens, expected"):
        rope(x[:, :1], kv_cache=cache, positions=torch.tensor([0]))
    with pytest.raises(ValueError, match="layers: expected a positive int"):
        kv_cache_numel(layers=0, batch=1, kv_heads=1, tokens=1, head_dim=1)


def test_generate_with_and_without_the_cache():
    from attention_ref import TinyDecoder, generate

    torch.manual_seed(0)
    model = TinyDecoder(vocab_size=11, num_kv_heads=2).double().eval()
    prompt = torch.randint(0, 11, (3, 4))
    cached = generate(model, prompt, 8)
    assert cached.shape == (3, 12) and torch.equal(cached[:, :4], prompt)
    assert torch.equal(cached, generate(model, prompt, 8, use_cache=False))
    # each generated token is the argmax of the full forward over the tokens before it
    logits = model(cached[:, :-1])
    assert torch.equal(logits[:, 3:].argmax(-1), cached[:, 4:])
