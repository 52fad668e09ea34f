"""from_hf for GPT-2: GPT2Attention (its fused, transposed ``c_attn`` split at load) and
GPT2Block equal Hugging Face's in float64, where their eager path computes in float64, with
each scale option; decoding through a cache equals the full forward."""

import pytest
import torch

from attention_ref import from_hf

from ._hf import cached_equals_full, ours_call, randomize, their_call

transformers = pytest.importorskip("transformers")
gpt2 = pytest.importorskip("transformers.models.gpt2.modeling_gpt2")

E, H = 32, 4
EXACT = {"atol": 1e-12, "rtol": 1e-12}  # float64: equal up to the order of the operations
SCALES = [
    {},  # 1/sqrt(D)
    {"scale_attn_by_inverse_layer_idx": True},  # 1/sqrt(D) / (layer_idx + 1)
    {"scale_attn_weights": False},  # 1
]


def _config(**options):
    config = transformers.GPT2Config(
        n_embd=E,
        n_head=H,
        n_layer=2,
        n_inner=16,
        vocab_size=16,
        bos_token_id=0,
        eos_token_id=0,
        attn_pdrop=0.0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        **options,
    )
    config._attn_implementation = "eager"
    return config


def _theirs(module_class, config, dtype=torch.float64):
    """Their module of layer 1 (so the inverse-layer scale is not 1), random, in ``dtype``."""
    return randomize(module_class(config, layer_idx=1).to(dtype), seed=1)


@pytest.mark.parametrize("options", SCALES)
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(options, offset):
    config = _config(**options)
    theirs = _theirs(gpt2.GPT2Attention, config)
    x = torch.randn(2, 7, E, dtype=torch.float64)
    ours = from_hf(theirs)
    assert ours.scale == theirs.scaling
    expected = their_call(theirs, config, x, offset)
    torch.testing.assert_close(ours_call(ours, x, offset), expected, **EXACT)


@pytest.mark.parametrize("options", SCALES[:2])
def test_block_equals_theirs(options):
    config = _config(**options)
    theirs = _theirs(gpt2.GPT2Block, config)
    x = torch.randn(2, 7, E, dtype=torch.float64)
    expected = their_call(theirs, config, x)
    torch.testing.assert_close(ours_call(from_hf(theirs), x, 5), expected, **EXACT)


def test_decoding_with_a_cache_equals_the_full_forward():
    config = _config()
    x = torch.randn(2, 7, E, dtype=torch.float64)
    cached_equals_full(from_hf(_theirs(gpt2.GPT2Attention, config)), x, atol=1e-12)
    cached_equals_full(from_hf(_theirs(gpt2.GPT2Block, config)), x, atol=1e-12)


def test_cross_attention_is_refused():
    theirs = gpt2.GPT2Attention(_config(), is_cross_attention=True, layer_idx=0)
    with pytest.raises(ValueError, match="is_cross_attention is not supported"):
        from_hf(theirs)


def test_quirk_gpt2_reorder_and_upcast_raises_in_float64():
    """GPT-2's ``reorder_and_upcast_attn`` path raises a RuntimeError in a float64 model (its
    float32 scores turn float64 when the mask is added); in float32 it equals ours."""
    config = _config(reorder_and_upcast_attn=True)
    theirs = _theirs(gpt2.GPT2Attention, config)
    x = torch.randn(2, 7, E, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="does not have dtype torch.float32"):
        their_call(theirs, config, x)
    theirs, x = theirs.float(), x.float()
    torch.testing.assert_close(ours_call(from_hf(theirs), x), their_call(theirs, config, x))
