"""from_hf for OLMo 2: the attention module (an RMSNorm over the whole query and key
projections, before RoPE) and the post-norm decoder layer equal Hugging Face's, on a tiny config
with every weight random, at two position offsets; decoding through a cache equals the full
forward."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.qk_parts import QKNorm

from ._hf import (
    cached_equals_full,
    eager_config,
    hf_mask,
    llama_like_call,
    ours_call,
    randomize,
    rotary_for,
)

transformers = pytest.importorskip("transformers")
olmo2 = pytest.importorskip("transformers.models.olmo2.modeling_olmo2")

E, H, KV = 32, 4, 2  # width, heads, key/value heads; D = E / H = 8 (OLMo 2 has no head_dim)
SMALL = {"num_hidden_layers": 1, "intermediate_size": 16, "vocab_size": 16}


@pytest.fixture(scope="module")
def config():
    return eager_config(transformers.Olmo2Config, E, H, KV, True, **SMALL)


@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(config, offset):
    theirs = randomize(olmo2.Olmo2Attention(config, layer_idx=0))
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, "full_attention", offset)
    ours = from_hf(theirs)
    assert isinstance(ours.qk_parts[0], QKNorm) and ours.qk_parts[0].whole
    torch.testing.assert_close(ours_call(ours, x, offset), expected)


def test_decoder_layer_equals_theirs(config):
    theirs = randomize(olmo2.Olmo2DecoderLayer(config, layer_idx=0), seed=1)
    x = torch.randn(2, 7, E)
    position_ids = torch.arange(7).expand(2, 7)
    with torch.no_grad():
        expected = theirs(
            x,
            attention_mask=hf_mask(config, "full_attention", x),
            position_embeddings=rotary_for(theirs.self_attn, config)(x, position_ids),
        )
    torch.testing.assert_close(ours_call(from_hf(theirs), x), expected)


def test_decoding_with_a_cache_equals_the_full_forward(config):
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(olmo2.Olmo2Attention(config, layer_idx=0))), x)
    cached_equals_full(from_hf(randomize(olmo2.Olmo2DecoderLayer(config, layer_idx=0))), x)


def test_quirk_olmo2_normalizes_all_heads_of_a_token_together(config):
    """OLMo 2's q_norm is one RMSNorm over all H * D query features of a token (weight of
    H * D), not one per head: each token's whole query has RMS 1, its heads do not."""
    theirs = olmo2.Olmo2Attention(config, layer_idx=0)  # norm weights 1
    assert theirs.q_norm.weight.shape == (H * 8,) and theirs.k_norm.weight.shape == (KV * 8,)
    with torch.no_grad():
        q = theirs.q_norm(theirs.q_proj(torch.randn(2, 7, E)))  # (N, L, H * D)
    rms = q.pow(2).mean(-1).sqrt()
    per_head = q.unflatten(-1, (H, 8)).pow(2).mean(-1).sqrt()  # (N, L, H)
    torch.testing.assert_close(rms, torch.ones_like(rms), atol=1e-3, rtol=0)  # eps aside
    assert (per_head - 1).abs().max() > 0.05
