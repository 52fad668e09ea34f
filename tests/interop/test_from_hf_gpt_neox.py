"""from_hf for GPT-NeoX: the attention module (``query_key_value`` laid out per head, split at
load; RoPE on a quarter of each head; biases) and the layer, parallel with two LayerNorms
(``use_parallel_residual``) and pre-norm without it, equal Hugging Face's, on tiny configs with
every weight random, at two position offsets; decoding through a cache equals the full
forward."""

import functools

import pytest
import torch

from attention_ref import from_hf
from attention_ref.residual import Parallel, PreNorm

from ._hf import cached_equals_full, ours_call, randomize, their_call

transformers = pytest.importorskip("transformers")
neox = pytest.importorskip("transformers.models.gpt_neox.modeling_gpt_neox")

E, H, D = 32, 2, 16  # width, heads, head width: a quarter of a head is 4 features


@functools.cache
def _config(parallel=True):
    config = transformers.GPTNeoXConfig(
        hidden_size=E,
        num_attention_heads=H,
        num_hidden_layers=1,
        intermediate_size=16,
        vocab_size=16,
        attention_dropout=0.0,
        hidden_dropout=0.0,
        use_parallel_residual=parallel,
    )
    config._attn_implementation = "eager"
    return config


def _expected(theirs, x, offset=0, parallel=True):
    config = _config(parallel)
    return their_call(theirs, config, x, offset, neox.GPTNeoXRotaryEmbedding(config))


@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(offset):
    theirs = randomize(neox.GPTNeoXAttention(_config(), layer_idx=0))
    x = torch.randn(2, 7, E)
    ours = from_hf(theirs)
    assert ours.qk_parts[0].rotary_dim == D // 4 and ours.out_proj.bias is not None
    torch.testing.assert_close(ours_call(ours, x, offset), _expected(theirs, x, offset))


@pytest.mark.parametrize(("parallel", "wiring"), [(True, Parallel), (False, PreNorm)])
def test_layer_equals_theirs(parallel, wiring):
    theirs = randomize(neox.GPTNeoXLayer(_config(parallel), layer_idx=0), seed=1)
    x = torch.randn(2, 7, E)
    ours = from_hf(theirs)
    assert type(ours.wiring) is wiring
    torch.testing.assert_close(ours_call(ours, x), _expected(theirs, x, parallel=parallel))


def test_decoding_with_a_cache_equals_the_full_forward():
    x = torch.randn(2, 7, E)
    cached_equals_full(from_hf(randomize(neox.GPTNeoXAttention(_config(), layer_idx=0))), x)
    cached_equals_full(from_hf(randomize(neox.GPTNeoXLayer(_config(), layer_idx=0))), x)
