"""from_hf for Phi-3: the attention module (fused ``qkv_proj`` split at load, RoPE on half of
each head as Phi-4-mini's configs allow) and the decoder layer (fused ``gate_up_proj``) equal
Hugging Face's, on tiny configs with every weight random, at two position offsets, with and
without a sliding window (which, when set, every layer uses); decoding through a cache equals
the full forward."""

import functools

import pytest
import torch

from attention_ref import from_hf

from ._hf import cached_equals_full, ours_call, randomize, their_call

transformers = pytest.importorskip("transformers")
phi3 = pytest.importorskip("transformers.models.phi3.modeling_phi3")

E, H, KV, D, W = 32, 4, 2, 8, 3  # width, heads, key/value heads, head width, window
WINDOWS = {"full_attention": None, "sliding_attention": W}


@functools.cache
def _config(layer_type):
    config = transformers.Phi3Config(
        hidden_size=E,
        num_attention_heads=H,
        num_key_value_heads=KV,
        num_hidden_layers=2,
        intermediate_size=16,
        vocab_size=16,
        pad_token_id=0,
        bos_token_id=0,
        eos_token_id=0,
        attention_dropout=0.0,
        sliding_window=WINDOWS[layer_type],
        rope_parameters={"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5},
    )
    config._attn_implementation = "eager"
    return config


def _expected(theirs, layer_type, x, offset=0):
    config = _config(layer_type)
    rotary = phi3.Phi3RotaryEmbedding(config)
    return their_call(theirs, config, x, offset, rotary, layer_type)


@pytest.mark.parametrize("layer_type", list(WINDOWS))
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(layer_type, offset):
    theirs = randomize(phi3.Phi3Attention(_config(layer_type), layer_idx=1))
    x = torch.randn(2, 7, E)
    ours = from_hf(theirs)
    assert ours.qk_parts[0].rotary_dim == D // 2
    torch.testing.assert_close(ours_call(ours, x, offset), _expected(theirs, layer_type, x, offset))


@pytest.mark.parametrize("layer_type", list(WINDOWS))
def test_decoder_layer_equals_theirs(layer_type):
    theirs = randomize(phi3.Phi3DecoderLayer(_config(layer_type), layer_idx=1), seed=1)
    x = torch.randn(2, 7, E)
    torch.testing.assert_close(ours_call(from_hf(theirs), x), _expected(theirs, layer_type, x))


def test_decoding_with_a_cache_equals_the_full_forward():
    x = torch.randn(2, 7, E)
    config = _config("sliding_attention")
    cached_equals_full(from_hf(randomize(phi3.Phi3Attention(config, layer_idx=0))), x)
    cached_equals_full(from_hf(randomize(phi3.Phi3DecoderLayer(config, layer_idx=0))), x)
