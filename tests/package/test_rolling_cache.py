"""A rolling KV cache with sink tokens (StreamingLLM): what it holds, and that decoding with it
equals the full forward under ``sliding_window_mask(..., sink_tokens=...)``, for any chunking."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_ref import (
    DecoderBlock,
    KVCache,
    MultiHeadAttention,
    TinyDecoder,
    causal_mask,
    generate,
    kv_cache_numel,
    sliding_window_mask,
)

from ._compare import assert_close_scaled

chunkings = st.lists(st.integers(1, 6), min_size=1, max_size=8)


def _feed(cache, chunks):
    """Update ``cache`` with tokens whose keys are their positions; yield after each chunk."""
    t = 0
    for n in chunks:
        pos = torch.arange(t, t + n, dtype=torch.float64)
        k = pos.view(1, 1, n, 1).expand(2, 3, n, 1)  # (N, H_kv, L, 1): key = position
        v = -pos.view(1, 1, n, 1).expand(2, 3, n, 2)  # values another width
        held_before = cache.held_positions.clone()
        keys, values = cache.update(k, v)
        t += n
        yield n, held_before, keys, values


@given(window=st.integers(1, 6), sink_tokens=st.integers(0, 3), chunks=chunkings)
@settings(max_examples=100, deadline=None)
def test_the_cache_holds_the_sinks_and_the_window(window, sink_tokens, chunks):
    cache = KVCache(window=window, sink_tokens=sink_tokens)
    seen = 0
    for n, held_before, keys, values in _feed(cache, chunks):
        seen += n
        new = torch.arange(seen - n, seen)
        # returned: what was held, then the new tokens, before trimming
        assert torch.equal(cache.positions, torch.cat([held_before, new]))
        assert torch.equal(keys[0, 0, :, 0], cache.positions.double())
        assert torch.equal(values[0, 0, :, 1], -cache.positions.double())
        # held: the first sink_tokens and the last window, never more
        assert len(cache) <= sink_tokens + window
        assert len(cache) == min(seen, sink_tokens + window)
        assert cache.tokens_seen == seen
        expected = [p for p in range(seen) if p < sink_tokens or p >= seen - window]
        assert cache.held_positions.tolist() == expected
        assert cache.key is not None and cache.key[0, 0, :, 0].tolist() == expected
        # visible = the full sliding-window mask's rows and columns for these tokens
        full = sliding_window_mask(seen, window, sink_tokens=sink_tokens)
        assert torch.equal(cache.visible(new), full[new][:, cache.positions])


@given(chunks=chunkings)
@settings(max_examples=30, deadline=None)
def test_without_a_window_the_cache_keeps_everything(chunks):
    cache = KVCache()
    seen = 0
    for n, _, keys, _ in _feed(cache, chunks):
        seen += n
        assert len(cache) == cache.tokens_seen == seen == keys.size(2)
        assert torch.equal(cache.positions, torch.arange(seen))
        assert torch.equal(
            cache.visible(torch.arange(seen - n, seen)), causal_mask(n, seen, align="bottom_right")
        )


def _left_padding(T, lengths):
    """``(N, 1, 1, T)``: False for the padding before each sequence's last ``lengths`` tokens."""
    return (torch.arange(T) >= (T - torch.tensor(lengths))[:, None])[:, None, None, :]


@given(
    window=st.integers(1, 5),
    sink_tokens=st.integers(0, 2),
    chunks=chunkings,
    kv_heads=st.sampled_from([1, 2, 4]),
    rope=st.booleans(),
    sinks=st.booleans(),
    padding=st.sampled_from([None, "bool", "float"]),
    is_causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=60, deadline=None)
def test_multihead_decoding_equals_the_masked_forward(
    window, sink_tokens, chunks, kv_heads, rope, sinks, padding, is_causal, seed
):
    """Any chunking (a prefill of any length, then chunks or single tokens), with rotary
    positions, GQA, sink logits and a left-padding mask, as the cache's mask always applies."""
    torch.manual_seed(seed)
    mha = MultiHeadAttention(
        8, 4, num_kv_heads=kv_heads, rope_base=10000.0 if rope else None, sinks=sinks,
        dtype=torch.float64,
    )  # fmt: skip
    if sinks:
        with torch.no_grad():
            mha.sinks.copy_(torch.randn(4))
    T = sum(chunks)
    x = torch.randn(2, T, 8, dtype=torch.float64)
    pad = None if padding is None else _left_padding(T, [T, int(torch.randint(1, T + 1, ()))])
    allowed = sliding_window_mask(T, window, sink_tokens=sink_tokens)  # (T, T)
    if pad is not None:
        allowed = allowed & pad  # (N, 1, T, T)

    def as_mask(m):  # the same mask, boolean or additive
        return (
            m
            if padding != "float"
            else torch.zeros(m.shape, dtype=torch.float64).masked_fill(~m, float("-inf"))
        )

    full, _ = mha(x, attn_mask=as_mask(allowed))
    cache, outs, t = KVCache(window=window, sink_tokens=sink_tokens), [], 0
    for n in chunks:
        mask = None
        if pad is not None:  # the padding mask over the keys this call returns
            keys = torch.cat([cache.held_positions, torch.arange(t, t + n)])
            mask = as_mask(pad[..., keys])  # (N, 1, 1, S)
        out, _ = mha(x[:, t : t + n], attn_mask=mask, is_causal=is_causal, kv_cache=cache)
        outs.append(out)
        t += n
        assert len(cache) <= sink_tokens + window
    assert_close_scaled(torch.cat(outs, dim=1), full)


@pytest.mark.parametrize(("window", "sink_tokens"), [(1, 0), (3, 1), (4, 2), (30, 0)])
def test_decoder_block_decodes_with_a_rolling_cache(window, sink_tokens):
    torch.manual_seed(0)
    block = DecoderBlock(
        16, 4, 32, num_kv_heads=2, rope_base=10000.0, sinks=True
    ).double()  # fmt: skip
    x = torch.randn(2, 12, 16, dtype=torch.float64)
    full = block(x, attn_mask=sliding_window_mask(12, window, sink_tokens=sink_tokens))
    cache = KVCache(window=window, sink_tokens=sink_tokens)
    prompt = block(x[:, :5], is_causal=True, kv_cache=cache)
    steps = [block(x[:, i : i + 1], is_causal=True, kv_cache=cache) for i in range(5, 12)]
    assert_close_scaled(torch.cat([prompt, *steps], dim=1), full)


@pytest.mark.parametrize(("window", "sink_tokens"), [(2, 0), (3, 1), (5, 4)])
def test_generate_with_rolling_caches(window, sink_tokens):
    """Greedy decoding with rolling caches = greedy decoding over the whole sequence under
    the sliding-window mask with sink tokens, and the caches stay small."""
    torch.manual_seed(0)
    model = TinyDecoder(vocab_size=11, num_kv_heads=2).double().eval()
    prompt = torch.randint(0, 11, (3, 4))
    tokens = generate(model, prompt, 12, cache_window=window, sink_tokens=sink_tokens)
    expected = prompt
    with torch.no_grad():
        for _ in range(12):
            mask = sliding_window_mask(expected.size(1), window, sink_tokens=sink_tokens)
            logits = model(expected, attn_mask=mask)
            expected = torch.cat([expected, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(tokens, expected)
    caches = [KVCache(window=window, sink_tokens=sink_tokens) for _ in model.layers]
    with torch.no_grad():
        model(tokens, caches)
    held = sum(c.key.numel() + c.value.numel() for c in caches)  # type: ignore[union-attr]
    assert held == kv_cache_numel(
        layers=2, batch=3, kv_heads=2, head_dim=8, tokens=tokens.size(1), window=window,
        sink_tokens=sink_tokens,
    )  # fmt: skip


def test_positions_continue_from_the_tokens_seen():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, rope_base=10000.0)
    cache = KVCache(window=2, sink_tokens=1)
    mha(torch.randn(1, 5, 8), kv_cache=cache)
    assert len(cache) == 3 and cache.tokens_seen == 5
    mha(torch.randn(1, 1, 8), kv_cache=cache, positions=torch.tensor([5]))  # fine
    with pytest.raises(
        ValueError, match=r"positions: with a cache of 6 tokens, expected positions 6..6"
    ):
        mha(torch.randn(1, 1, 8), kv_cache=cache, positions=torch.tensor([3]))


def test_bad_rolling_caches():
    with pytest.raises(ValueError, match="window: expected a positive length, got 0"):
        KVCache(window=0)
    with pytest.raises(ValueError, match="sink_tokens: expected 0 without a window, got 2"):
        KVCache(sink_tokens=2)
    with pytest.raises(ValueError, match="sink_tokens: expected a count >= 0, got -1"):
        KVCache(window=3, sink_tokens=-1)
    with pytest.raises(TypeError, match="window: expected an int, got float"):
        KVCache(window=2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="window: expected an int, got bool"):
        KVCache(window=True)
    with pytest.raises(TypeError, match="sink_tokens: expected an int, got NoneType"):
        KVCache(window=2, sink_tokens=None)  # type: ignore[arg-type]
    model = TinyDecoder(vocab_size=5)
    with pytest.raises(ValueError, match="cache_window: a rolling cache needs use_cache=True"):
        generate(model, torch.tensor([[1]]), 2, use_cache=False, cache_window=3)
    with pytest.raises(ValueError, match="sink_tokens: expected 0 without a window, got 1"):
        generate(model, torch.tensor([[1]]), 2, sink_tokens=1)
    cache = KVCache(window=2)
    cache.update(torch.ones(1, 2, 3, 4), torch.ones(1, 2, 3, 4))
    with pytest.raises(ValueError, match=r"kv_cache: expected new tokens with the cached"):
        cache.update(torch.ones(1, 1, 1, 4), torch.ones(1, 1, 1, 4))
