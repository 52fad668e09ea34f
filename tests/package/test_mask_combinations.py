"""A mask and ``is_causal`` together: both apply, with and without a KV cache.

The rule (``MultiHeadAttention.forward``): a key is seen where ``attn_mask`` allows it and the
causal triangle does too: top-left-aligned without a cache (as torch 2.13's SDPA does with both
arguments), bottom-right with one. Cached decoding, token by token or in chunks, equals the
uncached forward over the whole sequence, for every combination of mask kind, grouped-query
attention and rotary positions, in the attention module and in the decoder layers built on it.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attention_ref import DecoderBlock, KVCache, MultiHeadAttention, TinyDecoder, causal_mask

from ._compare import assert_close_scaled

MASKS = ["none", "bool", "float", "padding"]


def _mask(kind: str, N: int, S: int, seed: int) -> torch.Tensor | None:
    """A mask over S keys that leaves every row some key: (S, S) or a left padding (N, 1, 1, S)."""
    g = torch.Generator().manual_seed(seed)
    if kind == "none":
        return None
    if kind == "padding":  # left padding, as in batched generation: sequence n starts at n
        return (torch.arange(S) >= torch.arange(N)[:, None]).view(N, 1, 1, S)
    keep = torch.rand(N, 1, S, S, generator=g) > 0.3
    keep |= torch.eye(S, dtype=torch.bool)  # every query may see itself
    if kind == "bool":
        return keep
    bias = torch.randn(N, 1, S, S, generator=g, dtype=torch.float64)
    return bias.masked_fill(~keep, float("-inf"))  # a float mask: added, -inf hides


def _rows(mask: torch.Tensor | None, rows: slice) -> torch.Tensor | None:
    """The mask for the new queries ``rows``: their rows over every key so far."""
    if mask is None:
        return None
    if mask.size(-2) == 1:  # a padding mask: the same for every query
        return mask[..., : rows.stop]
    return mask[..., rows, : rows.stop]


def _decode(step, x: torch.Tensor, mask: torch.Tensor | None, sizes: list[int]) -> torch.Tensor:
    """Run ``step(piece, mask)`` on consecutive pieces of ``x`` of the given sizes."""
    outs, start = [], 0
    for size in sizes:
        rows = slice(start, start + size)
        outs.append(step(x[:, rows], _rows(mask, rows)))
        start += size
    return torch.cat(outs, dim=1)


def _combined(mask: torch.Tensor | None, S: int) -> torch.Tensor:
    """The caller's mask AND the causal triangle, as one mask of the same kind."""
    causal = causal_mask(S)
    if mask is None:
        return causal
    if mask.dtype == torch.bool:
        return mask & causal
    return mask.masked_fill(~causal, float("-inf"))


CHUNKS = {"token by token": [1] * 7, "in chunks": [3, 1, 2, 1], "prompt then tokens": [4, 1, 1, 1]}


@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("chunks", list(CHUNKS))
@pytest.mark.parametrize("kv_heads", [4, 2, 1])
@pytest.mark.parametrize("rope", [False, True])
def test_multihead_cached_equals_uncached_with_the_combined_mask(mask_kind, chunks, kv_heads, rope):
    torch.manual_seed(0)
    mha = MultiHeadAttention(
        8, 4, num_kv_heads=kv_heads, rope_base=10000.0 if rope else None, dtype=torch.float64
    )
    N, S = 3, 7
    x = torch.randn(N, S, 8, dtype=torch.float64)
    mask = _mask(mask_kind, N, S, seed=1)
    full, weights = mha(x, attn_mask=mask, is_causal=True)
    # the same as one mask holding both, and as PyTorch's SDPA with both arguments
    one, one_weights = mha(x, attn_mask=_combined(mask, S))
    assert_close_scaled(full, one)
    assert_close_scaled(weights, one_weights)
    if mask is not None:
        q = mha.q_proj(x).view(N, S, 4, 2).transpose(1, 2)
        k = mha.k_proj(x).view(N, S, kv_heads, 2).transpose(1, 2)
        v = mha.v_proj(x).view(N, S, kv_heads, 2).transpose(1, 2)
        if rope:
            from attention_ref import apply_rope

            q, k = apply_rope(q), apply_rope(k)
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()  # some layouts: an error
        heads = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=True, enable_gqa=True
        )  # torch 2.13 applies both (its documentation promises an error instead)
        heads = heads.nan_to_num()  # fully masked rows: zeros in ours
        assert_close_scaled(full, mha.out_proj(heads.transpose(1, 2).reshape(N, S, 8)))
    # cached decoding: every piece sees the cache and itself, and what the mask allows
    cache = KVCache()
    step_weights = []

    def step(piece, piece_mask):
        out, w = mha(piece, attn_mask=piece_mask, is_causal=True, kv_cache=cache)
        step_weights.append(w)
        return out

    cached = _decode(step, x, mask, CHUNKS[chunks])
    assert_close_scaled(cached, full)
    last = step_weights[-1]  # the last rows of the full weights
    assert_close_scaled(last, weights[:, :, -last.size(2) :])


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_padded_key_gets_zero_weight_with_a_cache(kind):
    """The reported bug: with a cache, the padding mask was replaced by the causal one."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    pad = torch.tensor([False, True, True]).view(1, 1, 1, 3)  # key 0 is padding
    mask = pad if kind == "bool" else torch.zeros(pad.shape).masked_fill(~pad, float("-inf"))
    for cache in (KVCache(), None):
        _, weights = mha(x, attn_mask=mask, is_causal=True, kv_cache=cache)
        assert torch.equal(weights[..., 0], torch.zeros(1, 2, 3))  # exactly 0, every query
        assert torch.equal(weights[..., 1, 2], torch.zeros(1, 2))  # and causal still holds
    cache = KVCache()
    mha(x[:, :2], attn_mask=mask[..., :2], is_causal=True, kv_cache=cache)
    _, weights = mha(x[:, 2:], attn_mask=mask, is_causal=True, kv_cache=cache)
    assert torch.equal(weights[..., 0], torch.zeros(1, 2, 1))


def test_mask_for_new_tokens_only_is_refused_with_a_cache():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    cache = KVCache()
    mha(x, is_causal=True, kv_cache=cache)
    with pytest.raises(ValueError, match=r"attn_mask: expected a shape broadcastable to"):
        mha(x[:, :1], attn_mask=torch.ones(1, 1, 1, 2, dtype=torch.bool), kv_cache=cache)


def _decoder_layer(kv_heads: int, rope: bool, llama: bool) -> DecoderBlock:
    options = {"num_kv_heads": kv_heads, "rope_base": 10000.0 if rope else None}
    if not llama:  # GPT-2's block: LayerNorm, a GELU MLP, biases
        options |= {"norm": "layernorm", "ffn": "mlp", "activation": "gelu_tanh", "bias": True}
    return DecoderBlock(16, 4, 24, **options).double()


@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("chunks", ["token by token", "in chunks"])
@pytest.mark.parametrize(("kv_heads", "rope", "llama"), [(4, False, False), (2, True, True)])
def test_decoder_block_stack_cached_equals_uncached(mask_kind, chunks, kv_heads, rope, llama):
    torch.manual_seed(0)
    layers = [_decoder_layer(kv_heads, rope, llama) for _ in range(2)]
    N, S = 3, 7
    x = torch.randn(N, S, 16, dtype=torch.float64)
    mask = _mask(mask_kind, N, S, seed=2)
    full = one = x
    for layer in layers:
        full = layer(full, attn_mask=mask, is_causal=True)
        one = layer(one, attn_mask=_combined(mask, S))
    assert_close_scaled(full, one)
    caches = [KVCache() for _ in layers]

    def step(piece, piece_mask):
        for layer, cache in zip(layers, caches, strict=True):
            piece = layer(piece, attn_mask=piece_mask, is_causal=True, kv_cache=cache)
        return piece

    assert_close_scaled(_decode(step, x, mask, CHUNKS[chunks]), full)


@pytest.mark.parametrize("chunks", ["token by token", "prompt then tokens"])
def test_tiny_decoder_left_padded_batch(chunks):
    """Left-padded prompts in one batch give each prompt's own logits, cached or not."""
    torch.manual_seed(0)
    model = TinyDecoder(vocab_size=11, num_kv_heads=2).double().eval()
    tokens = torch.randint(1, 11, (2, 7))
    pad = (torch.arange(7) >= torch.tensor([[0], [3]])).view(2, 1, 1, 7)  # 3 pads in row 1
    full = model(tokens, attn_mask=pad)
    alone = model(tokens[1:, 3:])  # the second sequence without its padding
    assert_close_scaled(full[1, 3:], alone[0])  # rotary positions: only the offsets count
    caches = [KVCache() for _ in model.layers]
    cached = _decode(
        lambda piece, piece_mask: model(piece, caches, attn_mask=piece_mask),
        tokens,
        pad,
        CHUNKS[chunks],
    )
    assert_close_scaled(cached, full)


@pytest.mark.parametrize("mask_kind", ["bool", "float", "padding"])
def test_encoder_and_decoder_layers_apply_both(mask_kind):
    """The 2017 layers pass a mask and is_causal to the same rule: both apply."""
    from attention_ref import TransformerDecoderLayer, TransformerEncoderLayer

    torch.manual_seed(0)
    N, S = 3, 6
    mask = _mask(mask_kind, N, S, seed=3)
    x, memory = torch.randn(N, S, 8, dtype=torch.float64), torch.randn(N, 4, 8, dtype=torch.float64)
    for norm_first in (False, True):
        encoder = TransformerEncoderLayer(8, 2, 16, norm_first=norm_first).double().eval()
        both = encoder(x, attn_mask=mask, is_causal=True)
        assert_close_scaled(both, encoder(x, attn_mask=_combined(mask, S)))
        decoder = TransformerDecoderLayer(8, 2, 16, norm_first=norm_first).double().eval()
        both = decoder(x, memory, tgt_mask=mask, tgt_is_causal=True)
        assert_close_scaled(both, decoder(x, memory, tgt_mask=_combined(mask, S)))
