"""from_hf for HunYuan dense (v1), beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks: the quirks, each shown by a test."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.qk_parts import QKNorm, Rotary

from ._hf import llama_like_call, ours_call, randomize
from ._tiny_configs import D, E, hunyuan_config

hunyuan = pytest.importorskip("transformers.models.hunyuan_v1_dense.modeling_hunyuan_v1_dense")


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
