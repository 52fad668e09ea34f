"""from_hf for every family whose modules Hugging Face calls as Llama's (the positions from the
family's rotary embedding, the mask of the layer's type): on tiny configs with every weight
random, the attention module and the decoder layer equal Hugging Face's at position offsets 0
and 5, on each kind of layer the family has (full, sliding, without positions); decoding
through a cache equals the full forward.

One table, ``FAMILIES``: a row a family under one config (``-nobias``, ``-parallel``...: the
same family under another), its attention and decoder-layer classes, the layers to test. Every
row runs in float32 at ``torch.testing.assert_close``'s float32 tolerances, and decoding
within ``cached_equals_full``'s 1e-5. What is particular to a family, its parts and its quirks
(``test_quirk_*``), stays in its own test_from_hf_<family>.py."""

import dataclasses
from collections.abc import Callable
from functools import partial

import pytest
import torch

from attention_ref import from_hf

from . import _tiny_configs as tiny
from ._hf import (
    cached_equals_full,
    layer_type_of,
    llama_like_call,
    llama_like_layer_call,
    ours_call,
    randomize,
)

cohere = pytest.importorskip("transformers.models.cohere.modeling_cohere")
cohere2 = pytest.importorskip("transformers.models.cohere2.modeling_cohere2")
deepseek = pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
exaone4 = pytest.importorskip("transformers.models.exaone4.modeling_exaone4")
gemma2 = pytest.importorskip("transformers.models.gemma2.modeling_gemma2")
gemma3 = pytest.importorskip("transformers.models.gemma3.modeling_gemma3")
glm = pytest.importorskip("transformers.models.glm.modeling_glm")
glm4 = pytest.importorskip("transformers.models.glm4.modeling_glm4")
gpt_neox = pytest.importorskip("transformers.models.gpt_neox.modeling_gpt_neox")
gpt_oss = pytest.importorskip("transformers.models.gpt_oss.modeling_gpt_oss")
granite = pytest.importorskip("transformers.models.granite.modeling_granite")
helium = pytest.importorskip("transformers.models.helium.modeling_helium")
hunyuan = pytest.importorskip("transformers.models.hunyuan_v1_dense.modeling_hunyuan_v1_dense")
llama = pytest.importorskip("transformers.models.llama.modeling_llama")
minicpm3 = pytest.importorskip("transformers.models.minicpm3.modeling_minicpm3")
mistral = pytest.importorskip("transformers.models.mistral.modeling_mistral")
nemotron = pytest.importorskip("transformers.models.nemotron.modeling_nemotron")
olmo2 = pytest.importorskip("transformers.models.olmo2.modeling_olmo2")
phi3 = pytest.importorskip("transformers.models.phi3.modeling_phi3")
qwen2 = pytest.importorskip("transformers.models.qwen2.modeling_qwen2")
qwen3 = pytest.importorskip("transformers.models.qwen3.modeling_qwen3")
qwen3_next = pytest.importorskip("transformers.models.qwen3_next.modeling_qwen3_next")
stablelm = pytest.importorskip("transformers.models.stablelm.modeling_stablelm")


@dataclasses.dataclass(frozen=True)
class Family:
    """A row of the table: a family under one config, and the layers to test in it."""

    id: str  # the tests' ids start with it
    config: Callable  # builds the tiny config
    attention: type  # their attention module
    layer: type | None  # their decoder layer; None where from_hf takes the attention only
    layers: tuple[int, ...] = (0,)  # a layer of each type the family has


FAMILIES = [  # id, config; their attention module and decoder layer; the layers to test
    Family("llama", tiny.llama_config,
           llama.LlamaAttention, llama.LlamaDecoderLayer, (0, 1)),
    Family("mistral", tiny.mistral_config,
           mistral.MistralAttention, mistral.MistralDecoderLayer, (0, 1)),
    Family("qwen2", tiny.qwen2_config,
           qwen2.Qwen2Attention, qwen2.Qwen2DecoderLayer, (0, 1)),
    Family("qwen3", tiny.qwen3_config,
           qwen3.Qwen3Attention, qwen3.Qwen3DecoderLayer, (0, 1)),
    Family("qwen3-nobias", partial(tiny.qwen3_config, bias=False),
           qwen3.Qwen3Attention, qwen3.Qwen3DecoderLayer, (0, 1)),
    Family("qwen3-next", tiny.qwen3_next_config,
           qwen3_next.Qwen3NextAttention, None, (3,)),
    Family("qwen3-next-nobias", partial(tiny.qwen3_next_config, bias=False),
           qwen3_next.Qwen3NextAttention, None, (3,)),
    Family("hunyuan", tiny.hunyuan_config,
           hunyuan.HunYuanDenseV1Attention, hunyuan.HunYuanDenseV1DecoderLayer),
    Family("hunyuan-nobias", partial(tiny.hunyuan_config, bias=False),
           hunyuan.HunYuanDenseV1Attention, hunyuan.HunYuanDenseV1DecoderLayer),
    Family("helium", partial(tiny.helium_config, mlp_bias=True),
           helium.HeliumAttention, helium.HeliumDecoderLayer),
    Family("helium-nobias", partial(tiny.helium_config, bias=False),
           helium.HeliumAttention, helium.HeliumDecoderLayer),
    Family("granite", partial(tiny.granite_config, mlp_bias=True, **tiny.GRANITE_MULTIPLIERS),
           granite.GraniteAttention, granite.GraniteDecoderLayer),
    Family("granite-nobias", partial(tiny.granite_config, bias=False, **tiny.GRANITE_MULTIPLIERS),
           granite.GraniteAttention, granite.GraniteDecoderLayer),
    Family("glm", tiny.glm_config,
           glm.GlmAttention, glm.GlmDecoderLayer),
    Family("glm4", tiny.glm4_config,
           glm4.Glm4Attention, glm4.Glm4DecoderLayer),
    Family("cohere", tiny.cohere_config,
           cohere.CohereAttention, cohere.CohereDecoderLayer),
    Family("cohere2", tiny.cohere2_config,
           cohere2.Cohere2Attention, cohere2.Cohere2DecoderLayer, (0, 3)),
    Family("olmo2", tiny.olmo2_config,
           olmo2.Olmo2Attention, olmo2.Olmo2DecoderLayer),
    Family("exaone4", partial(tiny.exaone4_config, sliding_window=tiny.W, sliding_window_pattern=4),
           exaone4.Exaone4Attention, exaone4.Exaone4DecoderLayer, (0, 3)),
    Family("gemma2", partial(tiny.gemma_config, 2),
           gemma2.Gemma2Attention, gemma2.Gemma2DecoderLayer, (0, 1)),
    Family("gemma3", partial(tiny.gemma_config, 3, cap=None),
           gemma3.Gemma3Attention, gemma3.Gemma3DecoderLayer, (0, 1)),
    Family("gpt-oss", tiny.gpt_oss_config,
           gpt_oss.GptOssAttention, None, (0, 1)),
    Family("gpt-oss-nobias", partial(tiny.gpt_oss_config, bias=False),
           gpt_oss.GptOssAttention, None, (0, 1)),
    Family("nemotron", tiny.nemotron_config,
           nemotron.NemotronAttention, nemotron.NemotronDecoderLayer),
    Family("phi3", tiny.phi3_config,
           phi3.Phi3Attention, phi3.Phi3DecoderLayer, (0, 1)),
    Family("phi3-sliding", partial(tiny.phi3_config, window=tiny.W),
           phi3.Phi3Attention, phi3.Phi3DecoderLayer, (0, 1)),
    Family("stablelm", tiny.stablelm_config,
           stablelm.StableLmAttention, stablelm.StableLmDecoderLayer),
    Family("stablelm-parallel", partial(tiny.stablelm_config, parallel=True),
           stablelm.StableLmAttention, stablelm.StableLmDecoderLayer),
    Family("stablelm-no-qk-norm", partial(tiny.stablelm_config, qk_layernorm=False),
           stablelm.StableLmAttention, stablelm.StableLmDecoderLayer),
    Family("gpt-neox", tiny.gpt_neox_config,
           gpt_neox.GPTNeoXAttention, gpt_neox.GPTNeoXLayer),
    Family("gpt-neox-sequential", partial(tiny.gpt_neox_config, parallel=False),
           gpt_neox.GPTNeoXAttention, gpt_neox.GPTNeoXLayer),
    Family("deepseek-interleaved", tiny.deepseek_v3_config,
           deepseek.DeepseekV3Attention, deepseek.DeepseekV3DecoderLayer),
    Family("deepseek-interleaved-no-q-latent", partial(tiny.deepseek_v3_config, q_lora_rank=None),
           deepseek.DeepseekV3Attention, deepseek.DeepseekV3DecoderLayer),
    Family("deepseek-half", partial(tiny.deepseek_v3_config, interleaved=False),
           deepseek.DeepseekV3Attention, deepseek.DeepseekV3DecoderLayer),
    Family("deepseek-half-no-q-latent",
           partial(tiny.deepseek_v3_config, interleaved=False, q_lora_rank=None),
           deepseek.DeepseekV3Attention, deepseek.DeepseekV3DecoderLayer),
    Family("minicpm3", tiny.minicpm3_config,
           minicpm3.MiniCPM3Attention, minicpm3.MiniCPM3DecoderLayer),
    Family("minicpm3-no-q-latent", partial(tiny.minicpm3_config, q_lora_rank=None),
           minicpm3.MiniCPM3Attention, minicpm3.MiniCPM3DecoderLayer),
]  # fmt: skip


def _layers(with_decoder_layer=False):
    """(family, layer index) for every layer of every row (with a decoder layer)."""
    return [
        pytest.param(family, layer_idx, id=f"{family.id}-layer{layer_idx}")
        for family in FAMILIES
        if family.layer is not None or not with_decoder_layer
        for layer_idx in family.layers
    ]


OFFSETS = pytest.mark.parametrize("offset", [0, 5], ids=lambda offset: f"offset{offset}")


@OFFSETS
@pytest.mark.parametrize(("family", "layer_idx"), _layers())
def test_attention_equals_theirs(family, layer_idx, offset):
    config = family.config()
    theirs = randomize(family.attention(config, layer_idx=layer_idx), seed=layer_idx)
    x = torch.randn(2, 7, config.hidden_size)
    expected = llama_like_call(theirs, config, x, layer_type_of(config, layer_idx), offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


@OFFSETS
@pytest.mark.parametrize(("family", "layer_idx"), _layers(with_decoder_layer=True))
def test_decoder_layer_equals_theirs(family, layer_idx, offset):
    config = family.config()
    theirs = randomize(family.layer(config, layer_idx=layer_idx), seed=1)
    x = torch.randn(2, 7, config.hidden_size)
    expected = llama_like_layer_call(theirs, config, x, layer_type_of(config, layer_idx), offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


@pytest.mark.parametrize(("family", "layer_idx"), _layers())
def test_decoding_with_a_cache_equals_the_full_forward(family, layer_idx):
    config = family.config()
    x = torch.randn(2, 7, config.hidden_size)
    for module in (family.attention, family.layer):
        if module is not None:
            cached_equals_full(from_hf(randomize(module(config, layer_idx=layer_idx))), x)
