"""from_hf for gpt-oss, beyond the equalities with Hugging Face's GptOssAttention that
test_from_hf_llama_like.py checks (a sink logit per head; the sliding layers' window the
layer's own rule): the output projection's bias, the decoder layer refused (its MLP is a
mixture of experts: only the attention is taken), and the quirk shown by a test."""

import pytest
import torch

from attention_ref import from_hf

from ._hf import llama_like_call, ours_call, randomize
from ._tiny_configs import E, W, gpt_oss_config

gpt_oss = pytest.importorskip("transformers.models.gpt_oss.modeling_gpt_oss")


@pytest.mark.parametrize("bias", [False, True])
def test_the_output_projection_is_biased_as_the_config_says(bias):
    ours = from_hf(gpt_oss.GptOssAttention(gpt_oss_config(bias), layer_idx=0))
    assert (ours.out_proj.bias is not None) == bias


def test_the_decoder_layer_is_refused():
    with pytest.raises(ValueError, match="GptOssDecoderLayer is not supported"):
        from_hf(gpt_oss.GptOssDecoderLayer(gpt_oss_config(), layer_idx=0))


def test_quirk_gpt_oss_window_lives_in_the_mask():
    """With the eager (or sdpa) kernel, gpt-oss's window lives only in the mask the model
    builds, as in every Hugging Face family: GptOssAttention passes ``sliding_window`` to the
    kernel, but only flash-attention kernels apply it. Given a plain causal mask, a sliding
    layer attends to every earlier key; ours owns its window."""
    config = gpt_oss_config()
    theirs = randomize(gpt_oss.GptOssAttention(config, layer_idx=0))
    assert theirs.sliding_window == W
    x = torch.randn(2, 9, E)
    unwindowed = llama_like_call(theirs, config, x, "full_attention")
    windowed = llama_like_call(theirs, config, x, "sliding_attention")
    assert not torch.allclose(unwindowed, windowed)
    torch.testing.assert_close(ours_call(from_hf(theirs), x), windowed)
