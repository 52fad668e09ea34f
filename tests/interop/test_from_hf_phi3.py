"""from_hf for Phi-3, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks (its fused ``qkv_proj`` and ``gate_up_proj`` split at load,
with and without a sliding window, which, when set, every layer uses): RoPE on half of each
head, as Phi-4-mini's configs allow."""

import pytest

from attention_ref import from_hf

from ._tiny_configs import D, W, phi3_config

phi3 = pytest.importorskip("transformers.models.phi3.modeling_phi3")


@pytest.mark.parametrize("window", [None, W])
def test_rope_turns_half_of_each_head(window):
    ours = from_hf(phi3.Phi3Attention(phi3_config(window), layer_idx=1))
    assert ours.qk_parts[0].rotary_dim == D // 2
