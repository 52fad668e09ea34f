"""from_hf for Llama, Mistral and Qwen2: attention modules and decoder layers equal Hugging
Face's, on tiny configs with every weight random, at two position offsets, on full and
sliding layers; decoding through a cache equals the full forward."""

import pytest
import torch

from attention_ref import from_hf

from ._hf import cached_equals_full, eager_config, llama_like_call, ours_call, randomize

transformers = pytest.importorskip("transformers")
llama = pytest.importorskip("transformers.models.llama.modeling_llama")
mistral = pytest.importorskip("transformers.models.mistral.modeling_mistral")
qwen2 = pytest.importorskip("transformers.models.qwen2.modeling_qwen2")

E, H, KV, D, W = 32, 4, 2, 8, 3  # width, heads, key/value heads, head width, window
SMALL = {"num_hidden_layers": 2, "intermediate_size": 16, "vocab_size": 16}


def _family(name):
    """(config, their attention class, their layer class, the layer types of layers 0 and 1)."""
    if name == "llama":
        config = eager_config(transformers.LlamaConfig, E, H, KV, True, head_dim=D, **SMALL)
        return config, llama.LlamaAttention, llama.LlamaDecoderLayer, ["full_attention"] * 2
    if name == "mistral":
        config = eager_config(
            transformers.MistralConfig, E, H, KV, False, head_dim=D, sliding_window=W, **SMALL
        )
        return (
            config,
            mistral.MistralAttention,
            mistral.MistralDecoderLayer,
            ["sliding_attention"] * 2,
        )
    config = eager_config(  # Qwen2: the upper layers slide (layer 1 here); q, k, v biased, o not
        transformers.Qwen2Config,
        E,
        H,
        KV,
        False,
        use_sliding_window=True,
        sliding_window=W,
        max_window_layers=1,
        **SMALL,
    )
    return config, qwen2.Qwen2Attention, qwen2.Qwen2DecoderLayer, config.layer_types


@pytest.mark.parametrize("family", ["llama", "mistral", "qwen2"])
@pytest.mark.parametrize("layer_idx", [0, 1])
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(family, layer_idx, offset):
    config, attention, _, types = _family(family)
    theirs = randomize(attention(config, layer_idx=layer_idx), seed=layer_idx)
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, types[layer_idx], offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


@pytest.mark.parametrize("family", ["llama", "mistral", "qwen2"])
@pytest.mark.parametrize("layer_idx", [0, 1])
def test_decoder_layer_equals_theirs(family, layer_idx):
    config, _, layer, types = _family(family)
    theirs = randomize(layer(config, layer_idx=layer_idx), seed=1)
    x = torch.randn(2, 7, E)
    from ._hf import hf_mask, rotary_for

    position_ids = torch.arange(7).expand(2, 7)
    with torch.no_grad():
        expected = theirs(
            x,
            attention_mask=hf_mask(config, types[layer_idx], x),
            position_embeddings=rotary_for(theirs.self_attn, config)(x, position_ids),
        )
    expected = expected[0] if isinstance(expected, tuple) else expected
    torch.testing.assert_close(ours_call(from_hf(theirs), x), expected)


@pytest.mark.parametrize("family", ["llama", "mistral", "qwen2"])
def test_decoding_with_a_cache_equals_the_full_forward(family):
    config, attention, layer, _ = _family(family)
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(attention(config, layer_idx=1))), x)
    cached_equals_full(from_hf(randomize(layer(config, layer_idx=1))), x)


def test_weights_are_copied_in_their_dtype():
    config, attention, _, _ = _family("qwen2")
    theirs = randomize(attention(config, layer_idx=0)).to(torch.float64)
    ours = from_hf(theirs)
    assert ours.q_proj.weight.dtype == torch.float64
    assert ours.out_proj.bias is None and ours.q_proj.bias is not None  # Qwen2: q/k/v only
    torch.testing.assert_close(ours.q_proj.weight, theirs.q_proj.weight, atol=0, rtol=0)


def test_an_unsupported_module_is_named_in_the_error():
    with pytest.raises(ValueError, match="module: Linear is not supported by from_hf"):
        from_hf(torch.nn.Linear(2, 2))


def test_a_float64_module_is_copied_exactly():
    """Built in float64 (not float32, then cast): every weight equal to the last bit."""
    config, attention, _, _ = _family("llama")
    theirs = attention(config, layer_idx=0).to(torch.float64)
    randomize(theirs)
    with torch.no_grad():
        theirs.q_proj.weight.add_(1e-12)  # below float32's resolution near 0.3
    ours = from_hf(theirs)
    torch.testing.assert_close(ours.q_proj.weight, theirs.q_proj.weight, atol=0, rtol=0)
