"""from_hf for Cohere and Cohere2: attention modules and decoder layers equal Hugging Face's,
on tiny configs with every weight random, at two position offsets, on sliding and full layers;
decoding through a cache equals the full forward; the quirks each shown by a test."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.qk_parts import HeadLayerNorm, QKNorm, Rotary

from ._hf import cached_equals_full, eager_config, llama_like_call, ours_call, randomize

transformers = pytest.importorskip("transformers")
cohere = pytest.importorskip("transformers.models.cohere.modeling_cohere")
cohere2 = pytest.importorskip("transformers.models.cohere2.modeling_cohere2")

E, H, KV, W = 32, 4, 2, 3  # width, heads, key/value heads, window; D = E / H = 8
SMALL = {"intermediate_size": 16, "vocab_size": 16}


def _family(name):
    """(config, their attention class, their layer class, the layers to test).
    Cohere: one full layer, q/k norm on; Cohere2: layer 0 slides, layer 3 attends fully."""
    if name == "cohere":
        config = eager_config(
            transformers.CohereConfig, E, H, KV, True, num_hidden_layers=1, use_qk_norm=True,
            **SMALL,
        )  # fmt: skip
        return config, cohere.CohereAttention, cohere.CohereDecoderLayer, [0]
    config = eager_config(
        transformers.Cohere2Config, E, H, KV, True, num_hidden_layers=4, sliding_window=W,
        **SMALL,
    )  # fmt: skip
    return config, cohere2.Cohere2Attention, cohere2.Cohere2DecoderLayer, [0, 3]


def _kind(config, layer_idx):
    types = getattr(config, "layer_types", None)
    return "full_attention" if types is None else types[layer_idx]


CASES = [("cohere", 0), ("cohere2", 0), ("cohere2", 3)]


@pytest.mark.parametrize(("family", "layer_idx"), CASES)
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(family, layer_idx, offset):
    config, attention, _, _ = _family(family)
    theirs = randomize(attention(config, layer_idx=layer_idx), seed=layer_idx)
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, _kind(config, layer_idx), offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


@pytest.mark.parametrize(("family", "layer_idx"), CASES)
def test_decoder_layer_equals_theirs(family, layer_idx):
    config, _, layer, _ = _family(family)
    theirs = randomize(layer(config, layer_idx=layer_idx), seed=1)
    x = torch.randn(2, 7, E)
    from ._hf import hf_mask, rotary_for

    position_ids = torch.arange(7).expand(2, 7)
    with torch.no_grad():
        expected = theirs(
            x,
            attention_mask=hf_mask(config, _kind(config, layer_idx), x),
            position_embeddings=rotary_for(theirs.self_attn, config)(x, position_ids),
        )
    expected = expected[0] if isinstance(expected, tuple) else expected
    torch.testing.assert_close(ours_call(from_hf(theirs), x), expected)


@pytest.mark.parametrize(("family", "layer_idx"), CASES)
def test_decoding_with_a_cache_equals_the_full_forward(family, layer_idx):
    config, attention, layer, _ = _family(family)
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(attention(config, layer_idx=layer_idx))), x)
    cached_equals_full(from_hf(randomize(layer(config, layer_idx=layer_idx))), x)


def test_cohere_parts_are_a_head_layer_norm_then_interleaved_rope():
    config, attention, layer, _ = _family("cohere")
    norm, rope = from_hf(randomize(attention(config, layer_idx=0))).qk_parts
    assert isinstance(norm, QKNorm) and isinstance(norm.q_norm, HeadLayerNorm)
    assert norm.q_norm.weight.shape == (H, E // H) and norm.k_norm.weight.shape == (KV, E // H)
    assert isinstance(rope, Rotary) and rope.interleaved
    wiring = from_hf(randomize(layer(config, layer_idx=0))).wiring
    assert wiring.norm2 is None and wiring.norm1.bias is None  # one LayerNorm, no bias


def test_quirk_cohere2_full_layers_have_no_positions():
    """Cohere2 rotates queries and keys only on its sliding layers: its full-attention layers
    have no positions at all (NoPE), so a query there cannot tell the order of the keys."""
    config, attention, _, _ = _family("cohere2")
    x = torch.randn(1, 7, E)
    swapped = x[:, [0, 1, 2, 3, 5, 4, 6]]  # two keys in the last query's window, swapped
    for layer_idx, rotates in ((0, True), (3, False)):
        theirs = randomize(attention(config, layer_idx=layer_idx), seed=2)
        kind = _kind(config, layer_idx)
        last = llama_like_call(theirs, config, x, kind)[:, -1]
        last_swapped = llama_like_call(theirs, config, swapped, kind)[:, -1]
        assert torch.allclose(last, last_swapped, atol=1e-6) != rotates
        parts = from_hf(theirs).qk_parts
        assert [type(p) for p in parts] == ([Rotary] if rotates else [])
