"""from_hf for GPT-NeoX, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks (``query_key_value`` laid out per head, split at load): the
parts it builds (RoPE on a quarter of each head; biases) and the layer's wiring (parallel with
two LayerNorms with ``use_parallel_residual``, pre-norm without it)."""

import pytest

from attention_ref import from_hf
from attention_ref.residual import Parallel, PreNorm

from ._tiny_configs import gpt_neox_config

neox = pytest.importorskip("transformers.models.gpt_neox.modeling_gpt_neox")


def test_the_attention_parts():
    config = gpt_neox_config()
    D = config.hidden_size // config.num_attention_heads  # 16
    ours = from_hf(neox.GPTNeoXAttention(config, layer_idx=0))
    assert ours.qk_parts[0].rotary_dim == D // 4 and ours.out_proj.bias is not None


@pytest.mark.parametrize(("parallel", "wiring"), [(True, Parallel), (False, PreNorm)])
def test_the_wiring(parallel, wiring):
    ours = from_hf(neox.GPTNeoXLayer(gpt_neox_config(parallel), layer_idx=0))
    assert type(ours.wiring) is wiring
