"""from_hf for Granite: the attention module and the decoder layer equal Hugging Face's, on
tiny configs with every weight random and multipliers that are not 1, at two position offsets;
decoding through a cache equals the full forward."""

import math

import pytest
import torch

from attention_ref import from_hf

from ._hf import (
    cached_equals_full,
    eager_config,
    llama_like_call,
    llama_like_layer_call,
    ours_call,
    randomize,
)

transformers = pytest.importorskip("transformers")
granite = pytest.importorskip("transformers.models.granite.modeling_granite")

E, H, KV, D = 32, 4, 2, 8  # width, heads, key/value heads, head width (E / H: no head_dim)
SMALL = {"num_hidden_layers": 1, "intermediate_size": 16, "vocab_size": 16}
MULTIPLIERS = {"attention_multiplier": 0.2, "residual_multiplier": 0.3}


def granite_config(bias=True, **more):
    return eager_config(transformers.GraniteConfig, E, H, KV, bias, **SMALL, **more)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(bias, offset):
    config = granite_config(bias, **MULTIPLIERS)
    theirs = randomize(granite.GraniteAttention(config, layer_idx=0))
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, "full_attention", offset)
    ours = from_hf(theirs)
    assert ours.scale == 0.2
    torch.testing.assert_close(ours_call(ours, x, offset), expected)


@pytest.mark.parametrize("offset", [0, 5])
def test_decoder_layer_equals_theirs(offset):
    config = granite_config(mlp_bias=True, **MULTIPLIERS)
    theirs = randomize(granite.GraniteDecoderLayer(config, layer_idx=0), seed=1)
    x = torch.randn(2, 7, E)
    expected = llama_like_layer_call(theirs, config, x, "full_attention", offset)
    ours = from_hf(theirs)
    assert ours.wiring.residual_multiplier == 0.3
    torch.testing.assert_close(ours_call(ours, x, offset), expected)


def test_decoding_with_a_cache_equals_the_full_forward():
    config, x = granite_config(**MULTIPLIERS), torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(granite.GraniteAttention(config, 0))), x)
    cached_equals_full(from_hf(randomize(granite.GraniteDecoderLayer(config, 0))), x)


def test_quirk_granite_default_scale_is_one():
    """Granite multiplies the scores by attention_multiplier as it is, and the config's default
    is 1.0: a Granite config that does not set it gets no 1/sqrt(D) at all."""
    config = granite_config()  # attention_multiplier left at its default
    theirs = randomize(granite.GraniteAttention(config, layer_idx=0))
    ours, x = from_hf(theirs), torch.randn(1, 7, E)
    assert theirs.scaling == 1.0 and ours.scale == 1.0
    expected = llama_like_call(theirs, config, x, "full_attention")
    torch.testing.assert_close(ours_call(ours, x), expected)
    ours.scale = 1 / math.sqrt(D)  # the textbook scale is not theirs
    with pytest.raises(AssertionError):
        torch.testing.assert_close(ours_call(ours, x), expected)
