"""MultiHeadLatentAttention == Hugging Face's DeepseekV3Attention, loaded with strict=True.

Hugging Face's module runs eagerly, without rope scaling (YaRN, which DeepSeek-V3's released
checkpoints use, also multiplies the softmax scale; ``scale=`` gives ours that number). Its
RMSNorm and softmax compute in float32 whatever the input dtype, and its interleaved RoPE
returns the rotated pairs de-interleaved (evens, then odds): the same dot products, so the
same output, though its cached rotary keys are laid out differently from ours.
"""

import pytest
import torch

from attention_ref import LatentCache, MultiHeadLatentAttention

from ._hf import eager_config, random_attention

transformers = pytest.importorskip("transformers")
modeling = pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")

SIZES = {"kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6}
E, H = 32, 4


def _pair(q_lora_rank, rope_interleave, bias, seed=0):
    """Hugging Face's attention with random weights, and ours loaded from it (strict)."""
    config = eager_config(
        transformers.DeepseekV3Config,
        E,
        H,
        H,
        bias,
        q_lora_rank=q_lora_rank,
        rope_interleave=rope_interleave,
        **SIZES,
    )
    theirs = random_attention(modeling.DeepseekV3Attention, config, layer_idx=0, seed=seed)
    ours = MultiHeadLatentAttention(
        E, H, **SIZES, q_lora_rank=q_lora_rank, rope_interleaved=rope_interleave, bias=bias
    )
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return theirs, ours, modeling.DeepseekV3RotaryEmbedding(config), config


def _additive(allowed):
    """Hugging Face's eager mask: 0 where allowed, the dtype's minimum elsewhere."""
    return torch.zeros(allowed.shape).masked_fill(~allowed, torch.finfo(torch.float32).min)


@pytest.mark.parametrize("q_lora_rank", [None, 12])
@pytest.mark.parametrize("rope_interleave", [True, False])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("absorb", [False, True])
def test_matches_deepseek_v3_attention(q_lora_rank, rope_interleave, bias, absorb):
    theirs, ours, rotary, _ = _pair(q_lora_rank, rope_interleave, bias)
    N, L = 2, 7
    x = torch.randn(N, L, E)
    position_ids = torch.arange(L).expand(N, L)
    causal = torch.ones(L, L, dtype=torch.bool).tril().expand(N, 1, L, L)
    with torch.no_grad():
        expected, _ = theirs(x, rotary(x, position_ids), _additive(causal))
        actual = ours(x, is_causal=True, absorb=absorb)
    torch.testing.assert_close(actual, expected)


@pytest.mark.parametrize("rope_interleave", [True, False])
def test_matches_with_padding_and_positions(rope_interleave):
    theirs, ours, rotary, _ = _pair(12, rope_interleave, bias=True)
    N, L = 2, 6
    x = torch.randn(N, L, E)
    position_ids = torch.tensor([[0, 1, 2, 3, 4, 5], [0, 0, 0, 1, 2, 3]])  # left padding
    padding = torch.tensor([[True] * L, [False, False] + [True] * (L - 2)])  # (N, S)
    allowed = torch.ones(L, L, dtype=torch.bool).tril() & padding[:, None, None]  # (N, 1, L, S)
    with torch.no_grad():
        expected, _ = theirs(x, rotary(x, position_ids), _additive(allowed))
        for absorb in (False, True):
            actual = ours(
                x,
                positions=position_ids,
                attn_mask=padding[:, None, None],
                is_causal=True,
                absorb=absorb,
            )
            # the second sequence's first two queries see nothing: Hugging Face's eager
            # softmax spreads them evenly over the padding, SDPA and ours give zeros
            torch.testing.assert_close(actual[0], expected[0])
            torch.testing.assert_close(actual[1, 2:], expected[1, 2:])


@pytest.mark.parametrize("rope_interleave", [True, False])
@pytest.mark.parametrize("absorb", [False, True])
def test_decoding_matches_their_cache(rope_interleave, absorb):
    """Prefill 4 tokens, then 3 one at a time: DynamicCache there, LatentCache here."""
    theirs, ours, rotary, config = _pair(None, rope_interleave, bias=False)
    N, L = 2, 7
    x = torch.randn(N, L, E)
    their_cache, our_cache = transformers.DynamicCache(config=config), LatentCache()
    with torch.no_grad():
        for start, stop in [(0, 4), (4, 5), (5, 6), (6, 7)]:
            chunk, S = x[:, start:stop], stop
            position_ids = torch.arange(start, stop).expand(N, -1)
            allowed = torch.ones(stop - start, S, dtype=torch.bool).tril(start)  # bottom-right
            expected, _ = theirs(
                chunk,
                rotary(chunk, position_ids),
                _additive(allowed.expand(N, 1, -1, -1)),
                cache=their_cache,
            )
            actual = ours(chunk, is_causal=True, kv_cache=our_cache, absorb=absorb)
            torch.testing.assert_close(actual, expected)
    assert our_cache.latent.shape == (N, 1, L, SIZES["kv_lora_rank"])  # the normalized latent
    torch.testing.assert_close(our_cache.latent, their_cache.layers[0].keys)
