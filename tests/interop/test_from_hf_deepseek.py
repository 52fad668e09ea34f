"""from_hf for DeepSeek-V3 and MiniCPM3, both multi-head latent attention: the attention
modules (interleaved and Llama's rotary pairing; with and without a query latent) and the
dense decoder layers (MiniCPM3's with its branch scale) equal Hugging Face's at two
position offsets; decoding through a latent cache equals the full forward."""

import pytest
import torch

from attention_ref import MultiHeadLatentAttention, from_hf

from ._hf import (
    cached_equals_full,
    eager_config,
    hf_mask,
    llama_like_call,
    ours_call,
    randomize,
    rotary_for,
)

transformers = pytest.importorskip("transformers")
deepseek = pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
minicpm3 = pytest.importorskip("transformers.models.minicpm3.modeling_minicpm3")

E, H = 32, 4
SIZES = {"kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6}
SMALL = {"num_hidden_layers": 2, "intermediate_size": 16, "vocab_size": 16}


def _family(name, q_lora_rank=12, **more):
    """(config, their attention class, their layer class)."""
    if name == "minicpm3":
        config = eager_config(
            transformers.MiniCPM3Config,
            E,
            H,
            H,
            False,
            q_lora_rank=q_lora_rank,
            **SIZES,
            **SMALL,
            **more,
        )
        return config, minicpm3.MiniCPM3Attention, minicpm3.MiniCPM3DecoderLayer
    config = eager_config(
        transformers.DeepseekV3Config,
        E,
        H,
        H,
        True,
        q_lora_rank=q_lora_rank,
        rope_interleave=name == "deepseek-interleaved",
        first_k_dense_replace=1,
        moe_intermediate_size=8,
        n_routed_experts=2,
        num_experts_per_tok=1,
        **SIZES,
        **SMALL,
        **more,
    )  # layer 0 dense, layer 1 a mixture of experts
    return config, deepseek.DeepseekV3Attention, deepseek.DeepseekV3DecoderLayer


FAMILIES = ["deepseek-interleaved", "deepseek-half", "minicpm3"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("q_lora_rank", "offset"), [(12, 0), (None, 5)])
def test_attention_equals_theirs(family, q_lora_rank, offset):
    config, attention, _ = _family(family, q_lora_rank)
    theirs = randomize(attention(config, layer_idx=0))
    x = torch.randn(2, 7, E)
    ours = from_hf(theirs)
    assert isinstance(ours, MultiHeadLatentAttention)
    assert ours.scale == theirs.scaling == (8 + 4) ** -0.5  # no YaRN: no mscale
    expected = llama_like_call(theirs, config, x, "full_attention", offset)
    torch.testing.assert_close(ours_call(ours, x, offset), expected)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("offset", [0, 5])
def test_decoder_layer_equals_theirs(family, offset):
    config, _, layer = _family(family)
    theirs = randomize(layer(config, layer_idx=0))
    x = torch.randn(2, 7, E)
    position_ids = torch.arange(offset, offset + 7).expand(2, 7)
    with torch.no_grad():
        expected = theirs(
            x,
            attention_mask=hf_mask(config, "full_attention", x, offset),
            position_embeddings=rotary_for(theirs.self_attn, config)(x, position_ids),
        )
    ours = from_hf(theirs)
    if family == "minicpm3":  # scale_depth / sqrt(num_hidden_layers), on both branches
        assert ours.wiring.residual_multiplier == pytest.approx(1.4 / 2**0.5)
    torch.testing.assert_close(ours_call(ours, x, offset), expected)


@pytest.mark.parametrize("family", ["deepseek-interleaved", "minicpm3"])
def test_decoding_with_a_cache_equals_the_full_forward(family):
    config, attention, layer = _family(family)
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(attention(config, layer_idx=0))), x)
    cached_equals_full(from_hf(randomize(layer(config, layer_idx=0))), x)


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
