"""from_hf for GPT-J: GPTJAttention (interleaved rotary positions on the first ``rotary_dim``
features of each head) and GPTJBlock (parallel, one LayerNorm) equal Hugging Face's at two
position offsets, with part and all of each head rotated; decoding through a cache equals
the full forward."""

import pytest
import torch

from attention_ref import from_hf

from ._hf import cached_equals_full, ours_call, randomize, their_call

transformers = pytest.importorskip("transformers")
gptj = pytest.importorskip("transformers.models.gptj.modeling_gptj")

E, H, D = 32, 4, 8


def _config(rotary_dim):
    config = transformers.GPTJConfig(
        n_embd=E,
        n_head=H,
        n_layer=2,
        n_inner=16,
        rotary_dim=rotary_dim,
        n_positions=32,
        vocab_size=16,
        bos_token_id=0,
        eos_token_id=0,
        attn_pdrop=0.0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
    )
    config._attn_implementation = "eager"
    return config


def _call(theirs, config, x, offset=0):
    """Their output for ``x`` at positions ``offset + arange(L)``, with their causal mask."""
    return their_call(theirs, config, x, offset, gptj.GPTJRotaryEmbedding(config).to(x.dtype))


@pytest.mark.parametrize("module", ["GPTJAttention", "GPTJBlock"])
@pytest.mark.parametrize("rotary_dim", [D // 2, D])
@pytest.mark.parametrize("offset", [0, 5])
def test_equals_theirs(module, rotary_dim, offset):
    config = _config(rotary_dim)
    theirs = randomize(getattr(gptj, module)(config, layer_idx=0))
    x = torch.randn(2, 7, E)
    torch.testing.assert_close(
        ours_call(from_hf(theirs), x, offset), _call(theirs, config, x, offset)
    )


def test_decoding_with_a_cache_equals_the_full_forward():
    config = _config(D // 2)
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(gptj.GPTJAttention(config, layer_idx=0))), x)
    cached_equals_full(from_hf(randomize(gptj.GPTJBlock(config, layer_idx=0))), x)


def test_quirk_gptj_scores_in_float32():
    """GPT-J's eager attention computes its scores in float32 even in a float64 model, so a
    float64 GPT-J differs from float64 arithmetic (ours) by float32 rounding."""
    config = _config(D // 2)
    theirs = randomize(gptj.GPTJAttention(config, layer_idx=0).double())
    x = torch.randn(2, 7, E, dtype=torch.float64)
    error = (ours_call(from_hf(theirs), x) - _call(theirs, config, x)).abs().max()
    assert 1e-9 < error < 1e-5  # float32's rounding, not float64's (about 1e-16)
