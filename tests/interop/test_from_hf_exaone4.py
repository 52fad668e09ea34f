"""from_hf for EXAONE 4, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks (q/k RMSNorm per head, RoPE on the sliding layers only, the
post-norm decoder layer): the quirks, each shown by a test."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.qk_parts import Rotary

from ._hf import llama_like_call, ours_call, randomize
from ._tiny_configs import E, exaone4_config

transformers = pytest.importorskip("transformers")
exaone4 = pytest.importorskip("transformers.models.exaone4.modeling_exaone4")


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
    config = exaone4_config(sliding_window=None, layer_types=["full_attention"] * 4)
    theirs = randomize(exaone4.Exaone4Attention(config, layer_idx=3))
    ours = from_hf(theirs)
    assert isinstance(ours.qk_parts[-1], Rotary)
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, "full_attention", offset)
    torch.testing.assert_close(ours_call(ours, x, offset), expected)
