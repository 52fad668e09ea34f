"""from_hf for Qwen3 and Qwen3-Next's full-attention layer: attention modules (and Qwen3's
decoder layer) equal Hugging Face's, on tiny configs with every weight random, at two position
offsets, on full and sliding layers; decoding through a cache equals the full forward."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.qk_parts import QKNorm, Rotary

from ._hf import (
    cached_equals_full,
    eager_config,
    llama_like_call,
    llama_like_layer_call,
    ours_call,
    randomize,
)

transformers = pytest.importorskip("transformers")
qwen3 = pytest.importorskip("transformers.models.qwen3.modeling_qwen3")
qwen3_next = pytest.importorskip("transformers.models.qwen3_next.modeling_qwen3_next")

E, H, KV, D, W = 32, 4, 2, 8, 3  # width, heads, key/value heads, head width, window
SMALL = {"num_hidden_layers": 2, "intermediate_size": 16, "vocab_size": 16}
NEXT_SMALL = {  # Qwen3-Next: layer 3 of 4 is a full-attention layer; tiny MoE and linear sizes
    "num_hidden_layers": 4,
    "intermediate_size": 16,
    "vocab_size": 16,
    "num_experts": 2,
    "num_experts_per_tok": 1,
    "moe_intermediate_size": 8,
    "shared_expert_intermediate_size": 8,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 8,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 2,
}


def qwen3_config(bias=True):
    """Qwen3 with a window on the upper layer (layer 1), biases on all four projections."""
    more = {"use_sliding_window": True, "sliding_window": W, "max_window_layers": 1}
    return eager_config(transformers.Qwen3Config, E, H, KV, bias, head_dim=D, **SMALL, **more)


def qwen3_next_config(bias=True):
    return eager_config(transformers.Qwen3NextConfig, E, H, KV, bias, head_dim=D, **NEXT_SMALL)


@pytest.mark.parametrize("layer_idx", [0, 1])
@pytest.mark.parametrize("offset", [0, 5])
def test_qwen3_attention_equals_theirs(layer_idx, offset):
    config = qwen3_config()
    theirs = randomize(qwen3.Qwen3Attention(config, layer_idx=layer_idx), seed=layer_idx)
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, config.layer_types[layer_idx], offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


@pytest.mark.parametrize("layer_idx", [0, 1])
@pytest.mark.parametrize("offset", [0, 5])
def test_qwen3_decoder_layer_equals_theirs(layer_idx, offset):
    config = qwen3_config(bias=False)
    theirs = randomize(qwen3.Qwen3DecoderLayer(config, layer_idx=layer_idx), seed=1)
    x = torch.randn(2, 7, E)
    expected = llama_like_layer_call(theirs, config, x, config.layer_types[layer_idx], offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("offset", [0, 5])
def test_qwen3_next_attention_equals_theirs(bias, offset):
    config = qwen3_next_config(bias)
    theirs = randomize(qwen3_next.Qwen3NextAttention(config, layer_idx=3), seed=3)
    x = torch.randn(2, 7, E)
    expected = llama_like_call(theirs, config, x, "full_attention", offset)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), expected)


def test_decoding_with_a_cache_equals_the_full_forward():
    x = torch.randn(2, 7, E)
    config = qwen3_config()
    cached_equals_full(from_hf(randomize(qwen3.Qwen3Attention(config, layer_idx=1))), x)
    cached_equals_full(from_hf(randomize(qwen3.Qwen3DecoderLayer(config, layer_idx=1))), x)
    next_attention = qwen3_next.Qwen3NextAttention(qwen3_next_config(), layer_idx=3)
    cached_equals_full(from_hf(randomize(next_attention)), x)


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
