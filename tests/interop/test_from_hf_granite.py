"""from_hf for Granite, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks (with multipliers that are not 1): the multipliers read,
and the quirk shown by a test."""

import math

import pytest
import torch

from attention_ref import from_hf

from ._hf import llama_like_call, ours_call, randomize
from ._tiny_configs import GRANITE_MULTIPLIERS, D, E, granite_config

granite = pytest.importorskip("transformers.models.granite.modeling_granite")


@pytest.mark.parametrize("bias", [False, True])
def test_the_multipliers_are_read(bias):
    """attention_multiplier (0.2) is our scale, residual_multiplier (0.3) our layer's."""
    config = granite_config(bias, mlp_bias=bias, **GRANITE_MULTIPLIERS)
    assert from_hf(granite.GraniteAttention(config, layer_idx=0)).scale == 0.2
    layer = from_hf(granite.GraniteDecoderLayer(config, layer_idx=0))
    assert layer.wiring.residual_multiplier == 0.3


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
