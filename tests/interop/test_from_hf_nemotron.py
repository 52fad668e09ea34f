"""from_hf for Nemotron, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks: the parts it builds (RoPE on half of each head; the
LayerNorm1P, whose ``1 + w`` is converted at load; the relu² MLP)."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.feed_forward import relu_squared

from ._hf import randomize
from ._tiny_configs import D, nemotron_config

nemotron = pytest.importorskip("transformers.models.nemotron.modeling_nemotron")


def test_nemotron_parts():
    ours = from_hf(nemotron.NemotronAttention(nemotron_config(), layer_idx=0))
    assert ours.qk_parts[0].rotary_dim == D // 2
    theirs = randomize(nemotron.NemotronDecoderLayer(nemotron_config(), layer_idx=0), seed=1)
    ours = from_hf(theirs)
    assert ours.mlp.activation is relu_squared and ours.mlp.linear3 is None
    stored = theirs.input_layernorm.weight
    torch.testing.assert_close(ours.wiring.norm1.weight, stored + 1)  # 1 + w, at load
