"""from_hf for Nemotron: the attention module (RoPE on half of each head, biases) and the
decoder layer (LayerNorm1P, whose ``1 + w`` is converted at load, and the relu² MLP) equal
Hugging Face's, on a tiny config with every weight random, at two position offsets; decoding
through a cache equals the full forward."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.feed_forward import relu_squared

from ._hf import cached_equals_full, ours_call, randomize, their_call

transformers = pytest.importorskip("transformers")
nemotron = pytest.importorskip("transformers.models.nemotron.modeling_nemotron")

E, H, KV, D = 32, 4, 2, 8  # width, heads, key/value heads, head width (half of it rotates)


@pytest.fixture(scope="module")
def config():
    config = transformers.NemotronConfig(
        hidden_size=E,
        num_attention_heads=H,
        num_key_value_heads=KV,
        head_dim=D,
        num_hidden_layers=1,
        intermediate_size=16,
        vocab_size=16,
        attention_bias=True,
        mlp_bias=True,
        attention_dropout=0.0,
        rope_parameters={"rope_type": "default", "rope_theta": 1e4},  # 0.5 of a head is its default
    )
    config._attn_implementation = "eager"
    return config


def _expected(theirs, config, x, offset=0):
    return their_call(theirs, config, x, offset, nemotron.NemotronRotaryEmbedding(config))


@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(config, offset):
    theirs = randomize(nemotron.NemotronAttention(config, layer_idx=0))
    x = torch.randn(2, 7, E)
    ours = from_hf(theirs)
    assert ours.qk_parts[0].rotary_dim == D // 2
    torch.testing.assert_close(ours_call(ours, x, offset), _expected(theirs, config, x, offset))


def test_decoder_layer_equals_theirs(config):
    theirs = randomize(nemotron.NemotronDecoderLayer(config, layer_idx=0), seed=1)
    x = torch.randn(2, 7, E)
    ours = from_hf(theirs)
    assert ours.mlp.activation is relu_squared and ours.mlp.linear3 is None
    stored = theirs.input_layernorm.weight
    torch.testing.assert_close(ours.wiring.norm1.weight, stored + 1)  # 1 + w, at load
    torch.testing.assert_close(ours_call(ours, x), _expected(theirs, config, x))


def test_decoding_with_a_cache_equals_the_full_forward(config):
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(nemotron.NemotronAttention(config, layer_idx=0))), x)
    cached_equals_full(from_hf(randomize(nemotron.NemotronDecoderLayer(config, layer_idx=0))), x)
