"""from_hf for gpt-oss: GptOssAttention (a sink logit per head; the sliding layers' window
is the layer's own rule) equals Hugging Face's on a sliding and a full layer, at two
position offsets; decoding through a cache equals the full forward. (Its decoder layer's
MLP is a mixture of experts: only the attention is taken.)"""

import pytest
import torch

from attention_ref import from_hf

from ._hf import cached_equals_full, eager_config, llama_like_call, ours_call, randomize

transformers = pytest.importorskip("transformers")
gpt_oss = pytest.importorskip("transformers.models.gpt_oss.modeling_gpt_oss")

E, H, KV, D, W = 32, 4, 2, 8, 3  # width, heads, key/value heads, head width, window


def _config(bias=True):
    config = eager_config(
        transformers.GptOssConfig,
        E,
        H,
        KV,
        bias,
        head_dim=D,
        num_hidden_layers=2,
        sliding_window=W,
        intermediate_size=16,
        num_local_experts=2,
        num_experts_per_tok=1,
        vocab_size=16,
    )
    assert config.layer_types == ["sliding_attention", "full_attention"]
    return config


@pytest.mark.parametrize("layer_idx", [0, 1])  # sliding, full
@pytest.mark.parametrize(("bias", "offset"), [(True, 0), (False, 5)])
def test_attention_equals_theirs(layer_idx, bias, offset):
    config = _config(bias)
    theirs = randomize(gpt_oss.GptOssAttention(config, layer_idx=layer_idx), seed=layer_idx)
    x = torch.randn(2, 9, E)  # longer than the window
    expected = llama_like_call(theirs, config, x, config.layer_types[layer_idx], offset)
    ours = from_hf(theirs)
    assert (ours.out_proj.bias is not None) == bias
    torch.testing.assert_close(ours_call(ours, x, offset), expected)


@pytest.mark.parametrize("layer_idx", [0, 1])
def test_decoding_with_a_cache_equals_the_full_forward(layer_idx):
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(gpt_oss.GptOssAttention(_config(), layer_idx))), x)


def test_the_decoder_layer_is_refused():
    with pytest.raises(ValueError, match="GptOssDecoderLayer is not supported"):
        from_hf(gpt_oss.GptOssDecoderLayer(_config(), layer_idx=0))


def test_quirk_gpt_oss_window_lives_in_the_mask():
    """With the eager (or sdpa) kernel, gpt-oss's window lives only in the mask the model
    builds, as in every Hugging Face family: GptOssAttention passes ``sliding_window`` to the
    kernel, but only flash-attention kernels apply it. Given a plain causal mask, a sliding
    layer attends to every earlier key; ours owns its window."""
    config = _config()
    theirs = randomize(gpt_oss.GptOssAttention(config, layer_idx=0))
    assert theirs.sliding_window == W
    x = torch.randn(2, 9, E)
    unwindowed = llama_like_call(theirs, config, x, "full_attention")
    windowed = llama_like_call(theirs, config, x, "sliding_attention")
    assert not torch.allclose(unwindowed, windowed)
    torch.testing.assert_close(ours_call(from_hf(theirs), x), windowed)
