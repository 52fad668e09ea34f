"""from_hf for BLOOM: BloomAttention (ALiBi as a score function in the kernel, its fused
``query_key_value`` split per head) and BloomBlock equal Hugging Face's, for a power of two
heads and for six; decoding through a cache equals the full forward."""

import pytest
import torch

from attention_ref import from_hf
from attention_ref.positions import alibi_slopes

from ._hf import cached_equals_full, hf_mask, ours_call, randomize

transformers = pytest.importorskip("transformers")
bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")

E = 48  # divisible by 4 and by 6 heads


def _config(heads, **more):
    config = transformers.BloomConfig(
        hidden_size=E,
        n_head=heads,
        n_layer=2,
        vocab_size=16,
        attention_dropout=0.0,
        hidden_dropout=0.0,
        **more,
    )
    config._attn_implementation = "eager"
    return config


def _call(theirs, config, x, residual=None):
    """Their output for ``x`` with the ALiBi bias and causal mask their model builds (the
    attention module is handed a zero residual unless ``residual`` is given)."""
    N, L = x.shape[:2]
    alibi = bloom.build_alibi_tensor(torch.ones(N, L), config.n_head, x.dtype)  # (N * H, 1, S)
    mask = hf_mask(config, "full_attention", x)
    with torch.no_grad():
        if isinstance(theirs, bloom.BloomBlock):
            return theirs(x, alibi, mask)[0]
        residual = torch.zeros_like(x) if residual is None else residual
        return theirs(x, residual, alibi, mask)[0]


@pytest.mark.parametrize("module", ["BloomAttention", "BloomBlock"])
@pytest.mark.parametrize("heads", [4, 6])
@pytest.mark.parametrize("offset", [0, 5])
def test_equals_theirs(module, heads, offset):
    """The offset moves queries and keys together: ALiBi, a function of ``j - i``, and the
    outputs do not change."""
    config = _config(heads)
    theirs = randomize(getattr(bloom, module)(config, layer_idx=0))
    x = torch.randn(2, 7, E)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, offset), _call(theirs, config, x))


def test_alibi_slopes_for_six_heads_are_theirs():
    """Six heads, not a power of two: four slopes of 2^(-8/4), then every other slope of
    2^(-8/8): Press et al.'s rule, in BLOOM's code as in ours."""
    theirs = bloom._get_alibi_slopes(6, torch.device("cpu"))
    assert theirs.tolist() == alibi_slopes(6) == [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3]


def test_decoding_with_a_cache_equals_the_full_forward():
    config = _config(6)
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(bloom.BloomBlock(config, layer_idx=0))), x)


def test_post_layernorm_residual_is_refused():
    theirs = bloom.BloomBlock(_config(4, apply_residual_connection_post_layernorm=True), 0)
    with pytest.raises(ValueError, match="apply_residual_connection_post_layernorm"):
        from_hf(theirs)


def test_quirk_bloom_attention_adds_the_residual():
    """BloomAttention returns its output plus the residual it is handed; ours returns the
    attention alone, so theirs(x, residual=r) is ours(x) + r."""
    config = _config(4)
    theirs = randomize(bloom.BloomAttention(config, layer_idx=0))
    x, r = torch.randn(2, 7, E), torch.randn(2, 7, E)
    expected = _call(theirs, config, x, residual=r)
    torch.testing.assert_close(ours_call(from_hf(theirs), x) + r, expected)


def test_quirk_bloom_alibi_is_slope_times_key_position():
    """BLOOM adds ``m_h * j`` (the key's position alone), not ``m_h * (j - i)``: each query's
    row is shifted by a constant, which the softmax ignores, so the weights are ours."""
    config = _config(4)
    alibi = bloom.build_alibi_tensor(torch.ones(1, 5), 4, torch.float32)  # (H, 1, S)
    slopes = torch.tensor(alibi_slopes(4))
    torch.testing.assert_close(alibi, slopes[:, None, None] * torch.arange(5.0))
    theirs = randomize(bloom.BloomAttention(config, layer_idx=0))
    x = torch.randn(1, 5, E)
    with torch.no_grad():
        mask = hf_mask(config, "full_attention", x)
        _, their_weights = theirs(x, torch.zeros_like(x), alibi, mask)
        ours = from_hf(theirs)
        ours.attention_fn = None  # the default path, which returns the weights: add ALiBi
        _, weights = ours(x, attn_mask=_relative_alibi(4, 5), is_causal=True)
    torch.testing.assert_close(weights, their_weights)


def _relative_alibi(heads, length):
    """``m_h * (j - i)``, ``(H, L, S)``: the bias as Press et al. write it."""
    offsets = torch.arange(length)[None, :] - torch.arange(length)[:, None]  # j - i
    return torch.tensor(alibi_slopes(heads))[:, None, None] * offsets


def test_quirk_bloom_softmax_in_float32():
    """BLOOM takes the softmax in float32 even in a float64 model, so a float64 BLOOM
    differs from float64 arithmetic (ours) by float32 rounding."""
    config = _config(4)
    theirs = randomize(bloom.BloomAttention(config, layer_idx=0).double())
    x = torch.randn(2, 7, E, dtype=torch.float64)
    error = (ours_call(from_hf(theirs), x) - _call(theirs, config, x)).abs().max()
    assert 1e-10 < error < 1e-5  # float32's rounding, not float64's (about 1e-16)
