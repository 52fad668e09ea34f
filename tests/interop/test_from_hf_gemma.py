"""from_hf for Gemma 2 and Gemma 3: attention modules and decoder layers equal Hugging Face's,
on tiny configs with every weight random, at two position offsets, on sliding and full layers;
decoding through a cache equals the full forward; the quirks each shown by a test."""

import functools

import pytest
import torch

from attention_ref import chunked_attention, from_hf
from attention_ref.flex import softcap

from ._hf import cached_equals_full, ours_call, randomize, rotary_for, their_call

transformers = pytest.importorskip("transformers")
gemma2 = pytest.importorskip("transformers.models.gemma2.modeling_gemma2")
gemma3 = pytest.importorskip("transformers.models.gemma3.modeling_gemma3")

E, H, KV, D, W = 32, 4, 2, 8, 3  # width, heads, key/value heads, head width, window
SMALL = {"num_hidden_layers": 2, "intermediate_size": 16, "vocab_size": 16}
SCALAR = 16  # query_pre_attn_scalar: the scale is 16 ** -0.5, not D ** -0.5
ROPE3 = {  # Gemma 3 keeps one rotary set per layer type
    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
    "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
}


def _family(name, cap=2.0):
    """(config, their attention class, their layer class); layer 0 slides, layer 1 does not.
    ``cap``: the attention soft cap, small so that the tanh bites."""
    sizes = {"hidden_size": E, "num_attention_heads": H, "num_key_value_heads": KV}
    common = sizes | SMALL | {"head_dim": D, "sliding_window": W, "attention_bias": True}
    common |= {"query_pre_attn_scalar": SCALAR, "attn_logit_softcapping": cap}
    if name == "gemma2":
        config = transformers.Gemma2Config(**common)
        classes = gemma2.Gemma2Attention, gemma2.Gemma2DecoderLayer
    else:
        types = ["sliding_attention", "full_attention"]
        config = transformers.Gemma3TextConfig(**common, layer_types=types, rope_parameters=ROPE3)
        classes = gemma3.Gemma3Attention, gemma3.Gemma3DecoderLayer
    config._attn_implementation = "eager"
    return config, *classes


def _theirs(theirs, config, x, layer_idx, offset=0):
    """Their eager output for ``x`` at ``offset + arange(L)``: the module (attention or decoder
    layer) called with its layer type's rotary positions and mask."""
    kind = config.layer_types[layer_idx]
    rotary = rotary_for(getattr(theirs, "self_attn", theirs), config)
    if isinstance(rotary.rope_type, dict):  # Gemma 3: one rotary set per layer type
        rotary = functools.partial(rotary, layer_type=kind)
    return their_call(theirs, config, x, offset, rotary, kind)


@pytest.mark.parametrize("family", ["gemma2", "gemma3"])
@pytest.mark.parametrize("layer_idx", [0, 1])
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(family, layer_idx, offset):
    config, attention, _ = _family(family, cap=2.0 if family == "gemma2" else None)
    theirs = randomize(attention(config, layer_idx=layer_idx), seed=layer_idx)
    x = torch.randn(2, 7, E)
    expected = _theirs(theirs, config, x, layer_idx, offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


@pytest.mark.parametrize("family", ["gemma2", "gemma3"])
@pytest.mark.parametrize("layer_idx", [0, 1])
def test_decoder_layer_equals_theirs(family, layer_idx):
    config, _, layer = _family(family, cap=2.0 if family == "gemma2" else None)
    theirs = randomize(layer(config, layer_idx=layer_idx), seed=1)
    x = torch.randn(2, 7, E)
    expected = _theirs(theirs, config, x, layer_idx)
    torch.testing.assert_close(ours_call(from_hf(theirs), x), expected)


@pytest.mark.parametrize("family", ["gemma2", "gemma3"])
def test_decoding_with_a_cache_equals_the_full_forward(family):
    config, attention, layer = _family(family)
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(attention(config, layer_idx=0))), x)
    cached_equals_full(from_hf(randomize(layer(config, layer_idx=1))), x)


def test_the_soft_cap_is_a_score_function_bound_into_the_kernel():
    config, attention, _ = _family("gemma2", cap=2.0)
    ours = from_hf(randomize(attention(config, layer_idx=1)))
    assert ours.attention_fn.func is chunked_attention
    assert ours.attention_fn.keywords["score_mod"].__qualname__.startswith("softcap")
    config, attention, _ = _family("gemma2", cap=None)  # no cap: the default kernel
    assert from_hf(randomize(attention(config, layer_idx=1))).attention_fn is None


def test_quirk_gemma3_stores_a_softcap_it_never_applies():
    """Gemma 3's attention keeps the config's ``attn_logit_softcapping`` but never passes it
    to the kernel: its scores are not capped, whatever the config says."""
    config, attention, _ = _family("gemma3", cap=2.0)
    theirs = randomize(attention(config, layer_idx=1), seed=3)
    assert theirs.attn_logit_softcapping == 2.0
    x = torch.randn(2, 7, E) * 3
    expected = _theirs(theirs, config, x, 1)
    ours = from_hf(theirs)
    torch.testing.assert_close(ours_call(ours, x), expected)
    ours.attention_fn = functools.partial(chunked_attention, score_mod=softcap(2.0))
    assert not torch.allclose(ours_call(ours, x), expected, atol=1e-2)  # a cap would show


def test_quirk_gemma_scales_by_query_pre_attn_scalar_not_head_dim():
    """Gemma 2 and 3 multiply the scores by ``query_pre_attn_scalar ** -0.5``, a config
    field of its own, not by ``1 / sqrt(head_dim)`` (Gemma 2 27B: 144 ** -0.5 with D = 128)."""
    for family in ("gemma2", "gemma3"):
        config, attention, _ = _family(family)
        ours = from_hf(randomize(attention(config, layer_idx=1)))
        assert ours.scale == SCALAR**-0.5 != D**-0.5


def test_quirk_gemma2_slides_the_even_layers():
    """Gemma 2's default layer types slide a window on the even layers (0, 2, ...) and attend
    fully on the odd ones: the first layer is a sliding one."""
    config = transformers.Gemma2Config(
        hidden_size=E, num_attention_heads=H, num_key_value_heads=KV, head_dim=D,
        num_hidden_layers=3, sliding_window=W, intermediate_size=16, vocab_size=16,
    )  # fmt: skip
    rules = [from_hf(gemma2.Gemma2Attention(config, i)).mask_mod for i in range(3)]
    assert [rule is not None for rule in rules] == [True, False, True]


def test_a_bidirectional_gemma3_is_refused():
    config, attention, _ = _family("gemma3")
    config.use_bidirectional_attention = True  # EmbeddingGemma: its own symmetric window
    with pytest.raises(ValueError, match="Gemma3Attention with use_bidirectional_attention"):
        from_hf(attention(config, layer_idx=0))
