"""from_hf for StableLM: the attention module (q, k, v biases; a LayerNorm per head on the
queries and keys before RoPE, or none; RoPE on a quarter of each head) and the decoder layer,
parallel with one LayerNorm (``use_parallel_residual``) and pre-norm without it, equal Hugging
Face's, on tiny configs with every weight random, at two position offsets; decoding through a
cache equals the full forward."""

import functools

import pytest
import torch

from attention_ref import from_hf
from attention_ref.qk_parts import HeadLayerNorm, QKNorm
from attention_ref.residual import Parallel, PreNorm

from ._hf import cached_equals_full, ours_call, randomize, their_call

transformers = pytest.importorskip("transformers")
stablelm = pytest.importorskip("transformers.models.stablelm.modeling_stablelm")

E, H, KV, D = 64, 4, 2, 16  # width, heads, key/value heads, head width (a quarter: 4)


@functools.cache
def _config(qk_layernorm=True, parallel=False):
    config = transformers.StableLmConfig(
        hidden_size=E,
        num_attention_heads=H,
        num_key_value_heads=KV,
        num_hidden_layers=1,
        intermediate_size=16,
        vocab_size=16,
        attention_dropout=0.0,
        hidden_dropout=0.0,
        use_qkv_bias=True,
        qk_layernorm=qk_layernorm,
        use_parallel_residual=parallel,
    )
    config._attn_implementation = "eager"
    return config


def _expected(theirs, config, x, offset=0):
    return their_call(theirs, config, x, offset, stablelm.StableLmRotaryEmbedding(config))


@pytest.mark.parametrize("qk_layernorm", [True, False])
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(qk_layernorm, offset):
    config = _config(qk_layernorm)
    theirs = randomize(stablelm.StableLmAttention(config, layer_idx=0))
    x = torch.randn(2, 7, E)
    ours = from_hf(theirs)
    first = ours.qk_parts[0]
    assert isinstance(first, QKNorm) == qk_layernorm and ours.out_proj.bias is None
    if qk_layernorm:
        assert isinstance(first.q_norm, HeadLayerNorm) and first.k_norm.weight.shape == (KV, D)
    assert ours.qk_parts[-1].rotary_dim == D // 4
    torch.testing.assert_close(ours_call(ours, x, offset), _expected(theirs, config, x, offset))


@pytest.mark.parametrize(("parallel", "wiring"), [(True, Parallel), (False, PreNorm)])
def test_decoder_layer_equals_theirs(parallel, wiring):
    config = _config(parallel=parallel)
    theirs = randomize(stablelm.StableLmDecoderLayer(config, layer_idx=0), seed=1)
    x = torch.randn(2, 7, E)
    ours = from_hf(theirs)
    assert type(ours.wiring) is wiring
    torch.testing.assert_close(ours_call(ours, x), _expected(theirs, config, x))


def test_decoding_with_a_cache_equals_the_full_forward():
    x = torch.randn(2, 7, E)
    config = _config(parallel=True)
    cached_equals_full(from_hf(randomize(stablelm.StableLmAttention(config, layer_idx=0))), x)
    cached_equals_full(from_hf(randomize(stablelm.StableLmDecoderLayer(config, layer_idx=0))), x)
