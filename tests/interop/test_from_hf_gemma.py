"""from_hf for Gemma 2 and Gemma 3, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks: the soft cap as a score function, a bidirectional Gemma 3
refused, and the quirks each shown by a test."""

import functools

import pytest
import torch

from attention_ref import chunked_attention, from_hf
from attention_ref.flex import softcap

from ._hf import layer_type_of, llama_like_call, ours_call, randomize
from ._tiny_configs import GEMMA_QUERY_SCALAR, KV, D, E, H, W, gemma_config

transformers = pytest.importorskip("transformers")
gemma2 = pytest.importorskip("transformers.models.gemma2.modeling_gemma2")
gemma3 = pytest.importorskip("transformers.models.gemma3.modeling_gemma3")


def test_the_soft_cap_is_a_score_function_bound_into_the_kernel():
    ours = from_hf(randomize(gemma2.Gemma2Attention(gemma_config(2, cap=2.0), layer_idx=1)))
    assert ours.attention_fn.func is chunked_attention
    assert ours.attention_fn.keywords["score_mod"].__qualname__.startswith("softcap")
    uncapped = gemma2.Gemma2Attention(gemma_config(2, cap=None), layer_idx=1)
    assert from_hf(randomize(uncapped)).attention_fn is None  # no cap: the default kernel


def test_quirk_gemma3_stores_a_softcap_it_never_applies():
    """Gemma 3's attention keeps the config's ``attn_logit_softcapping`` but never passes it
    to the kernel: its scores are not capped, whatever the config says."""
    config = gemma_config(3, cap=2.0)
    theirs = randomize(gemma3.Gemma3Attention(config, layer_idx=1), seed=3)
    assert theirs.attn_logit_softcapping == 2.0
    x = torch.randn(2, 7, E) * 3
    expected = llama_like_call(theirs, config, x, layer_type_of(config, 1))
    ours = from_hf(theirs)
    torch.testing.assert_close(ours_call(ours, x), expected)
    ours.attention_fn = functools.partial(chunked_attention, score_mod=softcap(2.0))
    assert not torch.allclose(ours_call(ours, x), expected, atol=1e-2)  # a cap would show


def test_quirk_gemma_scales_by_query_pre_attn_scalar_not_head_dim():
    """Gemma 2 and 3 multiply the scores by ``query_pre_attn_scalar ** -0.5``, a config
    field of its own, not by ``1 / sqrt(head_dim)`` (Gemma 2 27B: 144 ** -0.5 with D = 128)."""
    for version, attention in ((2, gemma2.Gemma2Attention), (3, gemma3.Gemma3Attention)):
        config = gemma_config(version)
        ours = from_hf(randomize(attention(config, layer_idx=1)))
        assert ours.scale == GEMMA_QUERY_SCALAR**-0.5 != D**-0.5


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
    config = gemma_config(3)
    config.use_bidirectional_attention = True  # EmbeddingGemma: its own symmetric window
    with pytest.raises(ValueError, match="Gemma3Attention with use_bidirectional_attention"):
        from_hf(gemma3.Gemma3Attention(config, layer_idx=0))
