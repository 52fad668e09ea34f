"""from_hf for Llama 4 (text): the attention module of a RoPE layer (interleaved RoPE, a
weightless q/k norm after it, chunks) and of a NoPE layer (query temperature), and the dense
decoder layer, equal Hugging Face's on a tiny config with every weight random; at an offset, as
Hugging Face computes them when it decodes there with its own cache; decoding through a cache
equals the full forward."""

import pytest
import torch

from attention_ref import KVCache, from_hf
from attention_ref.qk_parts import QKNorm, QueryTemperature, Rotary

from ._hf import (
    cached_equals_full,
    eager_config,
    llama_like_call,
    llama_like_layer_call,
    ours_call,
    randomize,
    rotary_for,
)

transformers = pytest.importorskip("transformers")
llama4 = pytest.importorskip("transformers.models.llama4.modeling_llama4")
masking_utils = pytest.importorskip("transformers.masking_utils")

E, H, KV, D, C, L = 32, 4, 2, 8, 3, 7  # width, heads, key/value heads, head width, chunk, length
ROPE, NOPE = 0, 3  # no_rope_layers == [1, 1, 1, 0]: layers 0-2 rotate (chunked), 3 does not
SMALL = {
    "num_hidden_layers": 4,
    "intermediate_size": 16,
    "intermediate_size_mlp": 16,
    "vocab_size": 16,
    "num_local_experts": 2,
    "moe_layers": [],  # every layer dense
}


@pytest.fixture(scope="module")
def config():  # floor_scale 2: the temperature steps every 2 positions, within the test's 12
    return eager_config(
        transformers.Llama4TextConfig,
        *(E, H, KV, True),
        head_dim=D,
        attention_chunk_size=C,
        floor_scale=2,
        attn_scale=0.5,
        **SMALL,
    )


def their_decoding(theirs, config, x, offset):
    """Their output for the tokens of ``x`` after the first ``offset``, as they compute it when
    they decode: the first ``offset`` tokens into their cache, then the rest, each call with
    the mask masking_utils builds from the cache for this layer's type."""
    cache = transformers.DynamicCache(config=config)
    build = {
        "chunked_attention": masking_utils.create_chunked_causal_mask,
        "full_attention": masking_utils.create_causal_mask,
    }[config.layer_types[theirs.layer_idx]]
    rotary = rotary_for(theirs, config)
    with torch.no_grad():
        for start, stop in ((0, offset), (offset, x.size(1))):
            part, position_ids = x[:, start:stop], torch.arange(start, stop).expand(2, -1)
            mask = build(
                config=config,
                inputs_embeds=part,
                attention_mask=None,
                cache=cache,
                position_ids=position_ids,
                layer_idx=theirs.layer_idx,
                allow_is_causal_skip=False,
            )
            out = theirs(part, rotary(part, position_ids), mask, cache=cache)[0]
    return out


def our_decoding(ours, x, offset):
    """Ours for the same tokens: the first ``offset`` into a ``KVCache``, then the rest."""
    cache = KVCache()
    with torch.no_grad():
        ours(x[:, :offset], is_causal=True, kv_cache=cache)
        return ours(x[:, offset:], is_causal=True, kv_cache=cache)[0]


@pytest.mark.parametrize("layer_idx", [ROPE, NOPE])
def test_attention_equals_theirs(config, layer_idx):
    theirs = randomize(llama4.Llama4TextAttention(config, layer_idx), seed=layer_idx)
    x = torch.randn(2, L, E)
    expected = llama_like_call(theirs, config, x, config.layer_types[layer_idx])
    torch.testing.assert_close(ours_call(from_hf(theirs), x), expected)


@pytest.mark.parametrize("layer_idx", [ROPE, NOPE])
def test_attention_equals_theirs_decoding_at_an_offset(config, layer_idx):
    """At offset 5 the chunks (3-5, 6-8, 9-11) and the temperature's steps are those of the
    absolute positions: ours with a cache, as theirs with theirs."""
    theirs = randomize(llama4.Llama4TextAttention(config, layer_idx), seed=layer_idx)
    x = torch.randn(2, 5 + L, E)
    expected = their_decoding(theirs, config, x, 5)
    torch.testing.assert_close(our_decoding(from_hf(theirs), x, 5), expected)


def test_the_parts_of_each_kind_of_layer(config):
    rope = from_hf(llama4.Llama4TextAttention(config, ROPE))
    nope = from_hf(llama4.Llama4TextAttention(config, NOPE))
    assert [type(p) for p in rope.qk_parts] == [Rotary, QKNorm]  # the norm after RoPE
    assert rope.qk_parts[0].interleaved and rope.mask_mod is not None  # chunks
    assert [type(p) for p in nope.qk_parts] == [QueryTemperature] and nope.mask_mod is None


@pytest.mark.parametrize("layer_idx", [ROPE, NOPE])
def test_decoder_layer_equals_theirs(config, layer_idx):
    theirs = randomize(llama4.Llama4TextDecoderLayer(config, layer_idx), seed=1)
    x = torch.randn(2, L, E)
    expected = llama_like_layer_call(theirs, config, x, config.layer_types[layer_idx])
    torch.testing.assert_close(ours_call(from_hf(theirs), x), expected)


def test_a_mixture_of_experts_layer_is_refused(config):
    moe = transformers.Llama4TextConfig(**{**config.to_dict(), "moe_layers": [0]})
    with pytest.raises(ValueError, match="mixture-of-experts"):
        from_hf(llama4.Llama4TextDecoderLayer(moe, 0))


@pytest.mark.parametrize("layer_idx", [ROPE, NOPE])
def test_decoding_with_a_cache_equals_the_full_forward(config, layer_idx):
    x = torch.randn(2, L, E)
    cached_equals_full(from_hf(randomize(llama4.Llama4TextDecoderLayer(config, layer_idx))), x)


def test_quirk_llama4_no_rope_layers_one_means_the_layer_uses_rope(config):
    """In Llama 4's config, no_rope_layers[i] == 1 means layer i *uses* RoPE (and 0 that it
    has none): the default list is [1, 1, 1, 0], a NoPE layer every fourth."""
    assert config.no_rope_layers == [1, 1, 1, 0]
    assert llama4.Llama4TextAttention(config, ROPE).use_rope
    assert isinstance(from_hf(llama4.Llama4TextAttention(config, ROPE)).qk_parts[0], Rotary)


def test_quirk_llama4_temperature_counts_from_the_cache_not_position_ids(config):
    """Llama 4's query temperature is taken at arange(L) + the cache's length, not at
    position_ids: without a cache, shifting position_ids leaves a NoPE layer's output as it
    was. Ours reads ``positions``, by default the cache's length + arange(L): the same."""
    theirs = randomize(llama4.Llama4TextAttention(config, NOPE))
    x = torch.randn(2, L, E)
    at_0 = llama_like_call(theirs, config, x, "full_attention", 0)
    torch.testing.assert_close(llama_like_call(theirs, config, x, "full_attention", 5), at_0)
    assert not torch.allclose(ours_call(from_hf(theirs), x, 5), at_0)


def test_quirk_llama4_softmax_in_the_input_dtype_changes_nothing():
    """Llama 4's eager attention drops Llama's float32 upcast before the softmax, yet
    PyTorch computes a bfloat16 softmax in float32 inside and rounds once: the weights and the
    output are the same bits as Llama's."""
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    module = torch.nn.Module().eval()
    module.num_key_value_groups = 1
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, 4, 33, 16, generator=gen) * 3).to(torch.bfloat16)
    mask = torch.zeros(33, 33).masked_fill(torch.ones(33, 33).triu(1).bool(), -3e38)
    mask = mask.to(torch.bfloat16)
    out4, weights4 = llama4.eager_attention_forward(module, q, k, v, mask, scaling=0.25)
    out, weights = llama.eager_attention_forward(module, q, k, v, mask, scaling=0.25)
    assert weights4.dtype == torch.bfloat16
    assert torch.equal(weights4, weights) and torch.equal(out4, out)


def test_quirk_llama4_the_norm_after_rope_could_come_before(config):
    """Llama 4 normalizes q and k after RoPE (Qwen3 before), but its norm has no weight and
    RoPE keeps each head's length, so the order does not change the result."""
    theirs = randomize(llama4.Llama4TextAttention(config, ROPE))
    ours = from_hf(theirs)
    x = torch.randn(2, L, E)
    expected = llama_like_call(theirs, config, x, "chunked_attention")
    ours.qk_parts = torch.nn.ModuleList(list(ours.qk_parts)[::-1])  # norm, then RoPE
    torch.testing.assert_close(ours_call(ours, x), expected)
