"""from_hf for OLMo 2, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks: the q/k norm it builds, and the quirk shown by a test."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.qk_parts import QKNorm

from ._tiny_configs import KV, E, H, olmo2_config

olmo2 = pytest.importorskip("transformers.models.olmo2.modeling_olmo2")


def test_the_qk_norm_is_one_over_all_heads():
    ours = from_hf(olmo2.Olmo2Attention(olmo2_config(), layer_idx=0))
    assert isinstance(ours.qk_parts[0], QKNorm) and ours.qk_parts[0].whole


def test_quirk_olmo2_normalizes_all_heads_of_a_token_together():
    """OLMo 2's q_norm is one RMSNorm over all H * D query features of a token (weight of
    H * D), not one per head: each token's whole query has RMS 1, its heads do not."""
    theirs = olmo2.Olmo2Attention(olmo2_config(), layer_idx=0)  # norm weights 1
    assert theirs.q_norm.weight.shape == (H * 8,) and theirs.k_norm.weight.shape == (KV * 8,)
    with torch.no_grad():
        q = theirs.q_norm(theirs.q_proj(torch.randn(2, 7, E)))  # (N, L, H * D)
    rms = q.pow(2).mean(-1).sqrt()
    per_head = q.unflatten(-1, (H, 8)).pow(2).mean(-1).sqrt()  # (N, L, H)
    torch.testing.assert_close(rms, torch.ones_like(rms), atol=1e-3, rtol=0)  # eps aside
    assert (per_head - 1).abs().max() > 0.05
