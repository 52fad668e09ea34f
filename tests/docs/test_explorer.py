"""The attention explorer's JSON (docs_hooks/explorer.py) holds the package's numbers.

The file the site serves is parsed back and compared with a fresh computation from the same
seeds, done the plain way (each model's own forward pass, the masks and ALiBi's bias from
``attention_ref``), to float32 precision; and its shape, range and words are checked.
"""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
import torch

from attention_ref import alibi_bias, attention_weights, causal_mask, sliding_window_mask
from attention_ref.lab.attention_maps import (
    DECODER_TOKENS,
    GALLERY_TOKENS,
    POSITIONS_TOKENS,
    TOY_TOKENS,
    train_counting_decoder,
)
from attention_ref.lab.length_generalization import ENCODINGS, train_with_positions
from attention_ref.lab.toy_tasks import train_toy_model
from attention_ref.positions import sinusoidal_positions
from docs_hooks.constants import LANGUAGES
from docs_hooks.explorer import explorer_json


@cache
def data() -> dict:
    return json.loads(explorer_json())


def view(name: str) -> dict:
    return next(v for v in data()["views"] if v["id"] == name)


def weights(name: str) -> torch.Tensor:
    """A view's weights as float32 ``(layers, H, L, S)``, read from the JSON's numbers."""
    return torch.from_numpy(np.array(view(name)["layers"], dtype=np.float32))


def assert_float32(saved: torch.Tensor, fresh: torch.Tensor) -> None:
    torch.testing.assert_close(saved, fresh.float(), rtol=1.3e-6, atol=1e-6)


def test_toy_model_is_the_pages_model():
    model = train_toy_model()
    with torch.no_grad():
        _, fresh = model(torch.tensor([TOY_TOKENS]))  # (1, H, L, S)
    assert view("toy")["tokens"] == list("CAFJBE")
    assert_float32(weights("toy"), fresh)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_positions_models(encoding):
    model = train_with_positions(encoding)
    with torch.no_grad():
        x = model.token_embedding(torch.tensor([POSITIONS_TOKENS]))  # as the model's forward
        if encoding == "sinusoidal":
            x = x + sinusoidal_positions(8, x.size(-1))
        elif encoding == "learned":
            x = x + model.position_embedding(torch.arange(8))
        _, fresh = model.attn(x, is_causal=True)  # (1, H, L, S)
    assert view(encoding)["tokens"] == list("CAFJBEHD")
    assert_float32(weights(encoding), fresh)


def test_counting_decoder_every_layer():
    model = train_counting_decoder()
    fresh = []
    with torch.no_grad():
        x = model.embed(torch.tensor([DECODER_TOKENS]))
        for layer in model.layers:  # Pre-LN: the attention sees norm1(x)
            fresh.append(layer.self_attn(layer.norm1(x), is_causal=True)[1])
            x = layer(x, is_causal=True)
    assert view("decoder")["tokens"] == [str(t) for t in DECODER_TOKENS]
    assert_float32(weights("decoder"), torch.cat(fresh))  # (2, 4, 8, 8)


def test_gallery_is_alibi_under_each_mask():
    L = len(GALLERY_TOKENS)
    bias = alibi_bias(4, L)
    causal = causal_mask(L)
    same_document = torch.tensor([0] * 4 + [1] * 4)
    position = torch.arange(L)
    masks = {
        "causal": causal,
        "sliding_window_sink": sliding_window_mask(L, 3, sink_tokens=1),
        "document": causal & (same_document[:, None] == same_document[None, :]),
        "prefix_lm": causal | (position[None, :] < 3),
        "chunked": causal & (position[:, None] // 4 == position[None, :] // 4),
        "dilated": causal
        & (position[:, None] - position[None, :] < 4 * 2)
        & ((position[:, None] - position[None, :]) % 2 == 0),
        "causal_sink_logit": causal,
    }
    for name, mask in masks.items():
        found = view(name)
        assert found["tokens"] == GALLERY_TOKENS
        assert torch.equal(torch.tensor(found["mask"], dtype=torch.bool), mask), name
        scores = torch.zeros(4, L, L) + bias  # every q · k is 0
        sinks = torch.zeros(4) if name == "causal_sink_logit" else None
        fresh = attention_weights(
            torch.zeros(4, L, 1),
            torch.zeros(4, L, 1),
            scores.masked_fill(~mask, -torch.inf),
            sinks=sinks,
        )
        assert_float32(weights(name)[0], fresh)
    sums = weights("causal_sink_logit").sum(-1)
    assert (sums < 1).all() and (weights("causal").sum(-1) - 1).abs().max() < 1e-5


def test_every_view_is_plain_json_in_range():
    for found in data()["views"]:
        w = weights(found["id"])
        mask = torch.tensor(found["mask"], dtype=torch.bool)
        assert w.dim() == 4 and w.shape[-2:] == (len(found["tokens"]),) * 2
        assert all(isinstance(t, str) for t in found["tokens"])
        assert ((w >= 0) & (w <= 1)).all()
        assert (w[..., ~mask] == 0).all(), f"{found['id']}: masked keys must be 0"


def test_numbers_are_the_shortest_float32_decimals():
    for number in view("toy")["layers"][0][0][0]:
        assert str(np.float32(number)) == repr(number) or number == 0


def test_words_in_both_languages():
    text = data()["text"]
    assert sorted(text) == sorted(LANGUAGES)
    en, zh = text["en"], text["zh"]
    assert en.keys() == zh.keys()
    for group in ("views", "about", "encodings"):
        assert en[group].keys() == zh[group].keys()
    assert {v["id"] for v in data()["views"]} == set(en["views"])
    assert en["readout"].format(q="C", k="E", w="0.953") == "query C → key E: 0.953"


def test_chinese_sentences_join_without_a_space():
    """The about line joins two sentences with the language's separator: none after 。."""
    zh = data()["text"]["zh"]
    assert zh["sentence_sep"] == ""
    joined = zh["about"]["gallery"] + zh["sentence_sep"] + zh["about"]["sink"]
    assert "。 " not in joined
    assert "浏览器" not in json.dumps(zh, ensure_ascii=False), "the explorer is 查看器"
