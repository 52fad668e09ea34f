"""from_hf for EXAONE 4: the attention module (q/k RMSNorm per head, RoPE on the sliding layers
only) and the post-norm decoder layer equal Hugging Face's, on a tiny config with every weight
random, at two position offsets, on a sliding and a global layer; decoding through a cache
equals the full forward."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.qk_parts import Rotary

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
exaone4 = pytest.importorskip("transformers.models.exaone4.modeling_exaone4")

E, H, KV, W = 32, 4, 2, 3  # width, heads, key/value heads, window; D = E / H = 8
SMALL = {"num_hidden_layers": 4, "intermediate_size": 16, "vocab_size": 16}


def _config(**more):
    return eager_config(transformers.Exaone4Config, E, H, KV, False, **SMALL, **more)


@pytest.fixture(scope="module")
def config():  # layers 0, 1, 2 slide (with RoPE), layer 3 attends to all (no positions)
    return _config(sliding_window=W, sliding_window_pattern=4)


@pytest.mark.parametrize("layer_idx", [0, 3])
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(config, layer_idx, offset):
    theirs = randomize(exaone4.Exaone4Attention(config, layer_idx=layer_idx), seed=layer_idx)
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, config.layer_types[layer_idx], offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


@pytest.mark.parametrize("layer_idx", [0, 3])
def test_decoder_layer_equals_theirs(config, layer_idx):
    theirs = randomize(exaone4.Exaone4DecoderLayer(config, layer_idx=layer_idx), seed=1)
    x = torch.randn(2, 7, E)
    position_ids = torch.arange(7).expand(2, 7)
    with torch.no_grad():
        expected = theirs(
            x,
            attention_mask=hf_mask(config, config.layer_types[layer_idx], x),
            position_embeddings=rotary_for(theirs.self_attn, config)(x, position_ids),
        )
    torch.testing.assert_close(ours_call(from_hf(theirs), x), expected)


@pytest.mark.parametrize("layer_idx", [0, 3])
def test_decoding_with_a_cache_equals_the_full_forward(config, layer_idx):
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(exaone4.Exaone4DecoderLayer(config, layer_idx))), x)


def test_quirk_exaone4_a_config_without_a_window_divides_by_zero():
    """Exaone4Config(sliding_window=None) raises ZeroDivisionError unless layer_types is given:
    it sets sliding_window_pattern to 0, then computes (i + 1) % 0 for the layer types."""
    with pytest.raises(ZeroDivisionError):
        transformers.Exaone4Config(sliding_window=None, num_hidden_layers=4)


@pytest.mark.parametrize("offset", [0, 5])
def test_quirk_exaone4_global_layers_rotate_when_the_config_has_no_window(offset):
    """Whether a global layer of EXAONE 4 uses RoPE depends on the config, not the layer: with a
    window its global layers have no positions, without one (sliding_window=None) every layer
    rotates."""
    config = _config(sliding_window=None, layer_types=["full_attention"] * 4)
    theirs = randomize(exaone4.Exaone4Attention(config, layer_idx=3))
    ours = from_hf(theirs)
    assert isinstance(ours.qk_parts[-1], Rotary)
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, "full_attention", offset)
    torch.testing.assert_close(ours_call(ours, x, offset), expected)
