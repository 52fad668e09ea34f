"""from_hf for Cohere and Cohere2, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks: the parts Cohere builds, and the quirk shown by a test."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.qk_parts import HeadLayerNorm, QKNorm, Rotary

from ._hf import layer_type_of, llama_like_call, randomize
from ._tiny_configs import KV, E, H, cohere2_config, cohere_config

cohere = pytest.importorskip("transformers.models.cohere.modeling_cohere")
cohere2 = pytest.importorskip("transformers.models.cohere2.modeling_cohere2")


def test_cohere_parts_are_a_head_layer_norm_then_interleaved_rope():
    config = cohere_config()
    norm, rope = from_hf(randomize(cohere.CohereAttention(config, layer_idx=0))).qk_parts
    assert isinstance(norm, QKNorm) and isinstance(norm.q_norm, HeadLayerNorm)
    assert norm.q_norm.weight.shape == (H, E // H) and norm.k_norm.weight.shape == (KV, E // H)
    assert isinstance(rope, Rotary) and rope.interleaved
    wiring = from_hf(randomize(cohere.CohereDecoderLayer(config, layer_idx=0))).wiring
    assert wiring.norm2 is None and wiring.norm1.bias is None  # one LayerNorm, no bias


def test_quirk_cohere2_full_layers_have_no_positions():
    """Cohere2 rotates queries and keys only on its sliding layers: its full-attention layers
    have no positions at all (NoPE), so a query there cannot tell the order of the keys."""
    config = cohere2_config()
    x = torch.randn(1, 7, E)
    swapped = x[:, [0, 1, 2, 3, 5, 4, 6]]  # two keys in the last query's window, swapped
    for layer_idx, rotates in ((0, True), (3, False)):
        theirs = randomize(cohere2.Cohere2Attention(config, layer_idx=layer_idx), seed=2)
        kind = layer_type_of(config, layer_idx)
        last = llama_like_call(theirs, config, x, kind)[:, -1]
        last_swapped = llama_like_call(theirs, config, swapped, kind)[:, -1]
        assert torch.allclose(last, last_swapped, atol=1e-6) != rotates
        parts = from_hf(theirs).qk_parts
        assert [type(p) for p in parts] == ([Rotary] if rotates else [])
