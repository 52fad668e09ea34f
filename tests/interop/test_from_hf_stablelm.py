"""from_hf for StableLM, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks: the parts it builds (q, k, v biased, o not; a LayerNorm per
head on the queries and keys before RoPE, or none; RoPE on a quarter of each head) and the
decoder layer's wiring (parallel with one LayerNorm with ``use_parallel_residual``, pre-norm
without it)."""

import pytest

from attention_ref import from_hf
from attention_ref.qk_parts import HeadLayerNorm, QKNorm
from attention_ref.residual import Parallel, PreNorm

from ._tiny_configs import KV, stablelm_config

stablelm = pytest.importorskip("transformers.models.stablelm.modeling_stablelm")


@pytest.mark.parametrize("qk_layernorm", [True, False])
def test_the_attention_parts(qk_layernorm):
    config = stablelm_config(qk_layernorm)
    D = config.hidden_size // config.num_attention_heads  # 16
    ours = from_hf(stablelm.StableLmAttention(config, layer_idx=0))
    first = ours.qk_parts[0]
    assert isinstance(first, QKNorm) == qk_layernorm and ours.out_proj.bias is None
    if qk_layernorm:
        assert isinstance(first.q_norm, HeadLayerNorm) and first.k_norm.weight.shape == (KV, D)
    assert ours.qk_parts[-1].rotary_dim == D // 4


@pytest.mark.parametrize(("parallel", "wiring"), [(True, Parallel), (False, PreNorm)])
def test_the_wiring(parallel, wiring):
    ours = from_hf(stablelm.StableLmDecoderLayer(stablelm_config(parallel=parallel), 0))
    assert type(ours.wiring) is wiring
