"""from_hf for GLM and GLM-4: attention modules and decoder layers equal Hugging Face's, on
tiny configs with every weight random, at two position offsets; decoding through a cache
equals the full forward; the quirks each shown by a test."""

import pytest
import torch

from attention_ref import from_hf

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
glm = pytest.importorskip("transformers.models.glm.modeling_glm")
glm4 = pytest.importorskip("transformers.models.glm4.modeling_glm4")

E, H, KV, D = 32, 4, 2, 8  # width, heads, key/value heads, head width
SMALL = {"num_hidden_layers": 1, "intermediate_size": 16, "vocab_size": 16, "pad_token_id": 0}


def _family(name):
    """(config, their attention class, their layer class); q/k/v biased (the default)."""
    if name == "glm":
        config = eager_config(transformers.GlmConfig, E, H, KV, True, head_dim=D, **SMALL)
        return config, glm.GlmAttention, glm.GlmDecoderLayer
    config = eager_config(transformers.Glm4Config, E, H, KV, True, head_dim=D, **SMALL)
    return config, glm4.Glm4Attention, glm4.Glm4DecoderLayer


@pytest.mark.parametrize("family", ["glm", "glm4"])
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(family, offset):
    config, attention, _ = _family(family)
    theirs = randomize(attention(config, layer_idx=0))
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, "full_attention", offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


@pytest.mark.parametrize("family", ["glm", "glm4"])
def test_decoder_layer_equals_theirs(family):
    config, _, layer = _family(family)
    theirs = randomize(layer(config, layer_idx=0), seed=1)
    x = torch.randn(2, 7, E)
    position_ids = torch.arange(7).expand(2, 7)
    with torch.no_grad():
        expected = theirs(
            x,
            attention_mask=hf_mask(config, "full_attention", x),
            position_embeddings=rotary_for(theirs.self_attn, config)(x, position_ids),
        )
    expected = expected[0] if isinstance(expected, tuple) else expected
    torch.testing.assert_close(ours_call(from_hf(theirs), x), expected)


@pytest.mark.parametrize("family", ["glm", "glm4"])
def test_decoding_with_a_cache_equals_the_full_forward(family):
    config, attention, layer = _family(family)
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(attention(config, layer_idx=0))), x)
    cached_equals_full(from_hf(randomize(layer(config, layer_idx=0))), x)


def test_rope_is_interleaved_on_the_first_half_of_each_head():
    config, attention, layer = _family("glm")
    (rope,) = from_hf(randomize(attention(config, layer_idx=0))).qk_parts
    assert rope.interleaved and rope.rotary_dim == D // 2
    assert type(from_hf(randomize(layer(config, layer_idx=0))).wiring).__name__ == "PreNorm"
    config, _, layer = _family("glm4")
    assert type(from_hf(randomize(layer(config, layer_idx=0))).wiring).__name__ == "Sandwich"


def test_quirk_glm_output_projection_has_no_bias():
    """GLM and GLM-4 bias the query, key and value projections when ``attention_bias`` is
    set, but never the output projection: its bias is hard-coded off."""
    for family in ("glm", "glm4"):
        config, attention, _ = _family(family)
        theirs = attention(config, layer_idx=0)
        assert config.attention_bias and theirs.o_proj.bias is None
        ours = from_hf(theirs)
        assert all(proj.bias is not None for proj in (ours.q_proj, ours.k_proj, ours.v_proj))
        assert ours.out_proj.bias is None
