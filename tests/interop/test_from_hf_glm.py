"""from_hf for GLM and GLM-4, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks: the parts each builds, and the quirk shown by a test."""

import pytest

from attention_ref import from_hf

from ._hf import randomize
from ._tiny_configs import D, glm4_config, glm_config

glm = pytest.importorskip("transformers.models.glm.modeling_glm")
glm4 = pytest.importorskip("transformers.models.glm4.modeling_glm4")


def test_rope_is_interleaved_on_the_first_half_of_each_head():
    (rope,) = from_hf(randomize(glm.GlmAttention(glm_config(), layer_idx=0))).qk_parts
    assert rope.interleaved and rope.rotary_dim == D // 2
    layer = from_hf(randomize(glm.GlmDecoderLayer(glm_config(), layer_idx=0)))
    assert type(layer.wiring).__name__ == "PreNorm"
    layer = from_hf(randomize(glm4.Glm4DecoderLayer(glm4_config(), layer_idx=0)))
    assert type(layer.wiring).__name__ == "Sandwich"


def test_quirk_glm_output_projection_has_no_bias():
    """GLM and GLM-4 bias the query, key and value projections when ``attention_bias`` is
    set, but never the output projection: its bias is hard-coded off."""
    for config_of, attention in ((glm_config, glm.GlmAttention), (glm4_config, glm4.Glm4Attention)):
        config = config_of()
        theirs = attention(config, layer_idx=0)
        assert config.attention_bias and theirs.o_proj.bias is None
        ours = from_hf(theirs)
        assert all(proj.bias is not None for proj in (ours.q_proj, ours.k_proj, ours.v_proj))
        assert ours.out_proj.bias is None
