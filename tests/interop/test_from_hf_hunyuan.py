"""from_hf for HunYuan dense (v1): the attention module and the decoder layer equal Hugging
Face's, on tiny configs with every weight random, at two position offsets; decoding through a
cache equals the full forward."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.qk_parts import QKNorm, Rotary

from ._hf import (
    cached_equals_full,
    eager_config,
    llama_like_call,
    llama_like_layer_call,
    ours_call,
    randomize,
)

transformers = pytest.importorskip("transformers")
hunyuan = pytest.importorskip("transformers.models.hunyuan_v1_dense.modeling_hunyuan_v1_dense")

E, H, KV, D = 32, 4, 2, 8  # width, heads, key/value heads, head width
SMALL = {"num_hidden_layers": 1, "intermediate_size": 16, "vocab_size": 16}


def hunyuan_config(bias=True):
    return eager_config(transformers.HunYuanDenseV1Config, E, H, KV, bias, head_dim=D, **SMALL)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(bias, offset):
    config = hunyuan_config(bias)
    theirs = randomize(hunyuan.HunYuanDenseV1Attention(config, layer_idx=0))
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, "full_attention", offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


@pytest.mark.parametrize("offset", [0, 5])
def test_decoder_layer_equals_theirs(offset):
    config = hunyuan_config()
    theirs = randomize(hunyuan.HunYuanDenseV1DecoderLayer(config, layer_idx=0), seed=1)
    x = torch.randn(2, 7, E)
    expected = llama_like_layer_call(theirs, config, x, "full_attention", offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


def test_decoding_with_a_cache_equals_the_full_forward():
    config, x = hunyuan_config(), torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(hunyuan.HunYuanDenseV1Attention(config, 0))), x)
    cached_equals_full(from_hf(randomize(hunyuan.HunYuanDenseV1DecoderLayer(config, 0))), x)


def test_quirk_hunyuan_normalizes_after_rope():
    """HunYuan applies its per-head q/k RMSNorm after the rotary positions, where Qwen3 and
    most others apply it before; in the other order the output is not theirs."""
    config = hunyuan_config()
    theirs = randomize(hunyuan.HunYuanDenseV1Attention(config, layer_idx=0))
    ours, x = from_hf(theirs), torch.randn(1, 7, E)
    rope, norms = ours.qk_parts
    assert isinstance(rope, Rotary) and isinstance(norms, QKNorm) and not norms.whole
    expected = llama_like_call(theirs, config, x, "full_attention", offset=5)
    ours.qk_parts = torch.nn.ModuleList([norms, rope])  # Qwen3's order
    with pytest.raises(AssertionError):
        torch.testing.assert_close(ours_call(ours, x, offset=5), expected)


def test_quirk_hunyuan_dynamic_rope_is_a_fixed_base():
    """HunYuan's checkpoints call their rotary type "dynamic" with an alpha, which Hugging
    Face reads as plain RoPE with the base rope_theta * alpha ** (D / (D - 2)), whatever the
    length."""
    config = hunyuan_config()
    config.rope_parameters = {"rope_type": "dynamic", "rope_theta": 1e4, "alpha": 10.0}
    config.rope_parameters["factor"] = 1.0
    theirs = randomize(hunyuan.HunYuanDenseV1Attention(config, layer_idx=0))
    ours, x = from_hf(theirs), torch.randn(1, 7, E)
    assert ours.qk_parts[0].base == pytest.approx(1e4 * 10.0 ** (D / (D - 2)))
    expected = llama_like_call(theirs, config, x, "full_attention", offset=5)
    torch.testing.assert_close(ours_call(ours, x, offset=5), expected)
