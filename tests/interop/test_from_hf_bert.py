"""from_hf for BERT: BertSelfAttention and BertLayer (post-LN, "Add & Norm") equal Hugging
Face's in float64, where their eager path computes in float64: bidirectional, with a padding
mask given as ``attn_mask`` (bool ``(N, 1, 1, S)``, True = may attend) and
``is_causal=False``; a decoder BERT (``is_decoder``) is causal, and decoding it through a
cache equals its full forward."""

import pytest
import torch

from attention_ref import from_hf

from ._hf import cached_equals_full, hf_mask, ours_call, randomize

transformers = pytest.importorskip("transformers")
bert = pytest.importorskip("transformers.models.bert.modeling_bert")
mu = pytest.importorskip("transformers.masking_utils")

E, H = 32, 4
EXACT = {"atol": 1e-12, "rtol": 1e-12}  # float64: equal up to the order of the operations
PADDING = torch.tensor([[True] * 7, [True] * 5 + [False] * 2])  # (N, S): True = a real token


def _config(**more):
    config = transformers.BertConfig(
        hidden_size=E,
        num_attention_heads=H,
        num_hidden_layers=2,
        intermediate_size=16,
        vocab_size=16,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        **more,
    )
    config._attn_implementation = "eager"
    return config


def _theirs(module, config):
    return randomize(getattr(bert, module)(config, layer_idx=0).double())


@pytest.mark.parametrize("module", ["BertSelfAttention", "BertLayer"])
@pytest.mark.parametrize("offset", [0, 5])
def test_bidirectional_with_padding_equals_theirs(module, offset):
    """Positions are accepted and ignored: BERT's layers have none."""
    config = _config()
    theirs = _theirs(module, config)
    x = torch.randn(2, 7, E, dtype=torch.float64)
    mask = mu.create_bidirectional_mask(
        config=config, inputs_embeds=x, attention_mask=PADDING.long()
    )  # (N, 1, L, S): 0, or the dtype's minimum on the padding
    with torch.no_grad():
        expected = theirs(x, attention_mask=mask)
        actual = from_hf(theirs)(
            x,
            attn_mask=PADDING[:, None, None],  # (N, 1, 1, S)
            is_causal=False,
            positions=torch.arange(offset, offset + 7),
        )
    expected, actual = (y[0] if isinstance(y, tuple) else y for y in (expected, actual))
    torch.testing.assert_close(actual, expected, **EXACT)


@pytest.mark.parametrize("module", ["BertSelfAttention", "BertLayer"])
def test_decoder_bert_is_causal_and_decodes_with_a_cache(module):
    config = _config(is_decoder=True)
    theirs = _theirs(module, config)
    x = torch.randn(2, 7, E, dtype=torch.float64)
    with torch.no_grad():
        expected = theirs(x, attention_mask=hf_mask(config, "full_attention", x))
    expected = expected[0] if isinstance(expected, tuple) else expected
    ours = from_hf(theirs)
    torch.testing.assert_close(ours_call(ours, x), expected, **EXACT)
    cached_equals_full(ours, x, atol=1e-12)


def test_half_a_layer_and_cross_attention_are_refused():
    config = _config(is_decoder=True, add_cross_attention=True)
    with pytest.raises(ValueError, match="BertAttention is not supported"):
        from_hf(bert.BertAttention(config))
    with pytest.raises(ValueError, match="BertLayer with cross-attention is not supported"):
        from_hf(bert.BertLayer(config))


def test_quirk_bert_self_attention_has_no_output_projection():
    """BertSelfAttention ends at the merged heads: its output projection W^O sits in
    BertSelfOutput, with the residual and the LayerNorm, so ours has none (an Identity)."""
    theirs = _theirs("BertSelfAttention", _config())
    assert not any("dense" in name for name, _ in theirs.named_parameters())
    assert isinstance(from_hf(theirs).out_proj, torch.nn.Identity)
    layer = from_hf(_theirs("BertLayer", _config()))
    assert isinstance(layer.self_attn.out_proj, torch.nn.Linear)  # the layer's is dense
