"""from_hf for Helium: the attention module and the decoder layer equal Hugging Face's, on tiny
configs with every weight random, at two position offsets; decoding through a cache equals the
full forward."""

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
helium = pytest.importorskip("transformers.models.helium.modeling_helium")

E, H, KV, D = 32, 4, 2, 8  # width, heads, key/value heads, head width: H * D == E
SMALL = {"num_hidden_layers": 1, "intermediate_size": 16, "vocab_size": 16}


def helium_config(bias=True, head_dim=D, **more):
    return eager_config(
        transformers.HeliumConfig, E, H, KV, bias, head_dim=head_dim, **SMALL, **more
    )


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(bias, offset):
    config = helium_config(bias)
    theirs = randomize(helium.HeliumAttention(config, layer_idx=0))
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, "full_attention", offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


@pytest.mark.parametrize("offset", [0, 5])
def test_decoder_layer_equals_theirs(offset):
    config = helium_config(mlp_bias=True)
    theirs = randomize(helium.HeliumDecoderLayer(config, layer_idx=0), seed=1)
    x = torch.randn(2, 7, E)
    expected = llama_like_layer_call(theirs, config, x, "full_attention", offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


def test_decoding_with_a_cache_equals_the_full_forward():
    config, x = helium_config(), torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(helium.HeliumAttention(config, 0))), x)
    cached_equals_full(from_hf(randomize(helium.HeliumDecoderLayer(config, 0))), x)


def test_quirk_helium_pairs_neighbouring_features():
    """Helium's code reads like Llama's, but its rotate_half pairs features 2i and 2i + 1
    (interleaved, as GPT-J) instead of i and i + D/2; with Llama's pairing the output is not
    theirs."""
    config = helium_config()
    theirs = randomize(helium.HeliumAttention(config, layer_idx=0))
    ours, x = from_hf(theirs), torch.randn(1, 7, E)
    (rope,) = ours.qk_parts
    assert rope.interleaved and rope.rotary_dim == D
    expected = llama_like_call(theirs, config, x, "full_attention", offset=5)
    rope.interleaved = False
    with pytest.raises(AssertionError):
        torch.testing.assert_close(ours_call(ours, x, offset=5), expected)


def test_quirk_helium_output_projection_is_square_without_bias():
    """Helium's o_proj maps E features to E, never with a bias, whatever attention_bias
    says: heads narrower or wider than the model (H * D != E) break their module, and
    from_hf refuses them."""
    theirs = helium.HeliumAttention(helium_config(bias=True), layer_idx=0)
    assert theirs.q_proj.bias is not None and from_hf(theirs).out_proj.bias is None
    wide = helium.HeliumAttention(helium_config(head_dim=2 * D), layer_idx=0)
    with pytest.raises(RuntimeError):
        llama_like_call(wide, wide.config, torch.randn(1, 3, E), "full_attention")
    with pytest.raises(ValueError, match=r"HeliumAttention needs .* got 4 \* 16 != 32"):
        from_hf(wide)
