"""from_hf for DeepSeek-V3 and MiniCPM3, both multi-head latent attention, beyond the
equalities with Hugging Face's modules that test_from_hf_llama_like.py checks (interleaved and
Llama's rotary pairing; with and without a query latent; the dense decoder layers; decoding
through a latent cache): the latent attention and its scale, MiniCPM3's branch scale, what is
refused, and the quirk shown by a test."""

import pytest
import torch

from attention_ref import MultiHeadLatentAttention, from_hf

from ._hf import llama_like_call, ours_call, randomize
from ._tiny_configs import E, deepseek_v3_config, minicpm3_config

deepseek = pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
minicpm3 = pytest.importorskip("transformers.models.minicpm3.modeling_minicpm3")


def _family(name, **fields):
    """(config, their attention class, their layer class)."""
    if name == "minicpm3":
        return minicpm3_config(**fields), minicpm3.MiniCPM3Attention, minicpm3.MiniCPM3DecoderLayer
    config = deepseek_v3_config(interleaved=name == "deepseek-interleaved", **fields)
    return config, deepseek.DeepseekV3Attention, deepseek.DeepseekV3DecoderLayer


FAMILIES = ["deepseek-interleaved", "deepseek-half", "minicpm3"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("q_lora_rank", [12, None])
def test_the_attention_is_latent_with_their_scale(family, q_lora_rank):
    config, attention, _ = _family(family, q_lora_rank=q_lora_rank)
    theirs = attention(config, layer_idx=0)
    ours = from_hf(theirs)
    assert isinstance(ours, MultiHeadLatentAttention)
    assert ours.scale == theirs.scaling == (8 + 4) ** -0.5  # no YaRN: no mscale


def test_minicpm3_scales_both_branches():
    """scale_depth / sqrt(num_hidden_layers), on both branches."""
    config, _, layer = _family("minicpm3")
    ours = from_hf(layer(config, layer_idx=0))
    assert ours.wiring.residual_multiplier == pytest.approx(1.4 / 2**0.5)


def test_a_mixture_of_experts_layer_is_refused():
    config, _, layer = _family("deepseek-interleaved")
    with pytest.raises(ValueError, match="has a mixture of experts"):
        from_hf(layer(config, layer_idx=1))


def test_yarn_is_refused():
    config, attention, _ = _family("deepseek-interleaved")
    config.rope_parameters = {
        "rope_type": "yarn",
        "rope_theta": 10000.0,
        "factor": 4.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 64,
    }
    with pytest.raises(ValueError, match="rope_type 'yarn' is not supported"):
        from_hf(attention(config, layer_idx=0))


@pytest.mark.parametrize("family", ["deepseek-interleaved", "minicpm3"])
def test_quirk_latent_norms_ignore_rms_norm_eps(family):
    """DeepSeek-V3's and MiniCPM3's latent RMSNorms use eps 1e-6 whatever ``rms_norm_eps``
    says (the layer's own norms follow it); ours reads the latent norms' own eps."""
    config, _, layer = _family(family, rms_norm_eps=0.5)
    theirs = randomize(layer(config, layer_idx=0))
    assert theirs.self_attn.kv_a_layernorm.variance_epsilon == 1e-6
    assert theirs.input_layernorm.variance_epsilon == 0.5
    ours = from_hf(theirs)
    assert ours.self_attn.kv_a_layernorm.eps == ours.self_attn.q_a_layernorm.eps == 1e-6
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs.self_attn, config, x, "full_attention")
    torch.testing.assert_close(ours_call(ours.self_attn, x), expected)
