"""from_hf for Helium, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks: the quirks, each shown by a test."""

import pytest
import torch

from attention_ref import from_hf

from ._hf import llama_like_call, ours_call, randomize
from ._tiny_configs import D, E, helium_config

helium = pytest.importorskip("transformers.models.helium.modeling_helium")


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
