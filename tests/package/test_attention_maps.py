"""attention_maps replays each attention call of a model: the weights of its own forward pass.

A replayed call must not change anything the first one left behind: a model that attends with
a KV cache is refused (the replay would append its keys to the cache a second time and return
weights over twice the keys), as are calls that give no weights or of different shapes.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attention_ref import MultiHeadAttention, TinyDecoder
from attention_ref.lab.attention_maps import attention_maps
from attention_ref.lab.toy_tasks import train_toy_model

TOKENS = torch.tensor([[2, 0, 5, 9, 1, 4]])


class _Embedded(nn.Module):
    """Token embeddings, then each attention module in turn, on ``(N, L, E)``."""

    def __init__(self, *attentions: nn.Module, **options: object) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.attentions = nn.ModuleList(attentions)
        self.options = options

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.embed(tokens)
        for attention in self.attentions:
            x = attention(x, **self.options)[0]
        return x


class _Cached(nn.Module):
    """A ``TinyDecoder`` run over fresh KV caches, as a decoding loop's first step runs it."""

    def __init__(self) -> None:
        super().__init__()
        self.decoder = TinyDecoder(vocab_size=10)

    def forward(self, tokens: Tensor) -> Tensor:
        return self.decoder(tokens, self.decoder.new_caches())


def test_replayed_weights_are_the_models_own():
    model = train_toy_model(steps=0)
    _, weights = model(TOKENS)  # (1, H, L, L)
    torch.testing.assert_close(attention_maps(model, TOKENS), weights, rtol=0, atol=0)


def test_one_block_per_call_in_call_order():
    torch.manual_seed(0)
    first, second = MultiHeadAttention(8, 2), MultiHeadAttention(8, 2)
    model = _Embedded(first, second, first, is_causal=True).eval()
    x, expected = model.embed(TOKENS), []
    for attention in model.attentions:
        x, weights = attention(x, is_causal=True)
        expected.append(weights)
    torch.testing.assert_close(attention_maps(model, TOKENS), torch.cat(expected), rtol=0, atol=0)


def test_a_model_with_a_kv_cache_is_refused():
    """The replay would append every key a second time: S would read 2L, silently."""
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="kv_cache"):
        attention_maps(_Cached().eval(), TOKENS[:, :3])


def test_a_kernel_without_weights_is_refused():
    kernel = MultiHeadAttention(8, 2, attention_fn=F.scaled_dot_product_attention)
    with pytest.raises(ValueError, match="attention_fn"):
        attention_maps(_Embedded(kernel).eval(), TOKENS)


def test_calls_of_different_shapes_are_refused():
    model = _Embedded(MultiHeadAttention(8, 2), MultiHeadAttention(8, 4)).eval()
    with pytest.raises(ValueError, match=r"different \(H, L, S\)"):
        attention_maps(model, TOKENS)
