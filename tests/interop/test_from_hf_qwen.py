"""from_hf for Qwen3 and Qwen3-Next's full-attention layer, beyond the equalities with Hugging
Face's modules that test_from_hf_llama_like.py checks: the parts each builds, and the quirks
each shown by a test."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.qk_parts import QKNorm, Rotary

from ._hf import llama_like_call, ours_call, randomize
from ._tiny_configs import D, E, H, qwen3_config, qwen3_next_config

qwen3 = pytest.importorskip("transformers.models.qwen3.modeling_qwen3")
qwen3_next = pytest.importorskip("transformers.models.qwen3_next.modeling_qwen3_next")


def test_qwen3_parts():
    """Qwen3: the per-head norm comes before RoPE, which turns every feature of the head."""
    ours = from_hf(randomize(qwen3.Qwen3Attention(qwen3_config(), layer_idx=0)))
    norms, rope = ours.qk_parts
    assert isinstance(norms, QKNorm) and not norms.whole and norms.q_norm.weight.shape == (D,)
    assert isinstance(rope, Rotary) and rope.rotary_dim == D and not rope.interleaved


def test_quirk_qwen3_slides_the_upper_layers():
    """Qwen3, as Qwen2, slides its window over the layers from max_window_layers up and lets
    the layers below it attend to every earlier token."""
    config = qwen3_config()
    lower, upper = (from_hf(qwen3.Qwen3Attention(config, layer_idx=i)) for i in (0, 1))
    assert lower.mask_mod is None and upper.mask_mod is not None
    x, theirs = torch.randn(1, 7, E), randomize(qwen3.Qwen3Attention(config, layer_idx=1))
    ours = from_hf(theirs)
    ours.mask_mod = None  # without the window, layer 1 is no longer theirs
    with pytest.raises(AssertionError):
        torch.testing.assert_close(
            ours_call(ours, x), llama_like_call(theirs, config, x, "sliding_attention")
        )


def test_quirk_qwen3_next_packs_the_gate_with_each_head():
    """Qwen3-Next's q_proj holds each head's query rows followed by that head's gate rows
    ([q_0 | g_0 | q_1 | g_1 ...]), not all the queries and then all the gates."""
    config = qwen3_next_config(bias=False)
    theirs = randomize(qwen3_next.Qwen3NextAttention(config, layer_idx=3))
    ours = from_hf(theirs)
    packed = theirs.q_proj.weight.view(H, 2, D, E)  # (H, [query, gate], D, E)
    torch.testing.assert_close(ours.q_proj.weight, packed[:, 0].reshape(H * D, E))
    torch.testing.assert_close(ours.output_gate.proj.weight, packed[:, 1].reshape(H * D, E))
    halves = theirs.q_proj.weight[: H * D]  # the naive reading: the first half all queries
    assert not torch.equal(ours.q_proj.weight, halves)


def test_qwen3_next_parts():
    """Qwen3-Next: (1 + w) norms stored as plain weights, RoPE on a quarter of each head."""
    theirs = qwen3_next.Qwen3NextAttention(qwen3_next_config(), layer_idx=3)  # norms w = 0
    norms, rope = from_hf(theirs).qk_parts
    torch.testing.assert_close(norms.q_norm.weight, torch.ones(D))  # 1 + 0
    assert rope.rotary_dim == D // 4
