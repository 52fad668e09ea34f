"""from_hf for Falcon: the attention module in each layout of ``query_key_value`` (grouped, as
the new decoder architecture; multi-query; per head), with RoPE or with ALiBi, and the decoder
layer (parallel with two LayerNorms or one, or pre-norm) equal Hugging Face's, on tiny configs
with every weight random, at two position offsets; decoding through a cache equals the full
forward. ALiBi is compared at float64, and counted once, as Hugging Face's sdpa path does."""

import functools

import pytest
import torch

from attention_ref import KVCache, from_hf
from attention_ref.residual import Parallel, PreNorm

from ._hf import cached_equals_full, ours_call, randomize, their_call

transformers = pytest.importorskip("transformers")
falcon = pytest.importorskip("transformers.models.falcon.modeling_falcon")

E, H, KV, D = 32, 4, 2, 8  # width, heads, key/value heads (new architecture), head width
KINDS = {  # the config's fields; the key/value heads ours has; the layer's wiring
    "grouped": ({"new_decoder_architecture": True, "num_kv_heads": KV, "bias": True}, KV),
    "grouped_one_norm": (
        {"new_decoder_architecture": True, "num_kv_heads": KV, "num_ln_in_parallel_attn": 1},
        KV,
    ),
    "multi_query": ({"multi_query": True, "bias": False}, 1),
    "per_head": ({"multi_query": False, "parallel_attn": False, "bias": True}, H),
    "alibi": ({"multi_query": False, "parallel_attn": False, "bias": True, "alibi": True}, H),
}
WIRINGS = {
    "grouped": (Parallel, 2),
    "grouped_one_norm": (Parallel, 1),
    "multi_query": (Parallel, 1),
    "per_head": (PreNorm, 2),
    "alibi": (PreNorm, 2),
}


@functools.cache
def _config(kind, layers=1):
    config = transformers.FalconConfig(
        hidden_size=E,
        num_attention_heads=H,
        num_hidden_layers=layers,
        vocab_size=16,
        ffn_hidden_size=16,
        bos_token_id=0,
        eos_token_id=0,
        **KINDS[kind][0],
    )
    config._attn_implementation = "eager"
    return config


def _pair(module_class, kind, seed=0):
    """Theirs with random weights (float64 for ALiBi, which is compared there), and ours."""
    theirs = randomize(module_class(_config(kind), layer_idx=0), seed=seed)
    theirs = theirs.to(torch.float64) if kind == "alibi" else theirs
    return theirs, from_hf(theirs)


def _expected(theirs, kind, x, offset=0, **extra):
    """Their eager output; with ALiBi, called with the plain causal mask (ALiBi once)."""
    config = _config(kind)
    if kind == "alibi":
        alibi = falcon.build_alibi_tensor(torch.ones(x.shape[:2], dtype=torch.long), H, x.dtype)
        return their_call(theirs, config, x, offset, alibi=alibi, **extra)
    rotary = falcon.FalconRotaryEmbedding(config)
    return their_call(theirs, config, x, offset, rotary, alibi=None, **extra)


def _input(kind):
    return torch.randn(2, 7, E, dtype=torch.float64 if kind == "alibi" else torch.float32)


def _assert_equal(ours, expected, kind):
    """Within float64's rounding for ALiBi, float32's (assert_close's defaults) elsewhere."""
    tight = {"atol": 1e-12, "rtol": 1e-12} if kind == "alibi" else {}
    torch.testing.assert_close(ours, expected, **tight)


@pytest.mark.parametrize("kind", ["grouped", "multi_query", "per_head", "alibi"])
@pytest.mark.parametrize("offset", [0, 5])
def test_attention_equals_theirs(kind, offset):
    theirs, ours = _pair(falcon.FalconAttention, kind)
    assert ours.num_kv_heads == KINDS[kind][1]
    x = _input(kind)
    _assert_equal(ours_call(ours, x, offset), _expected(theirs, kind, x, offset), kind)


@pytest.mark.parametrize("kind", list(KINDS))
def test_decoder_layer_equals_theirs(kind):
    theirs, ours = _pair(falcon.FalconDecoderLayer, kind, seed=1)
    wiring, norms = WIRINGS[kind]
    assert type(ours.wiring) is wiring
    assert sum(1 for name, _ in ours.wiring.named_children() if name.startswith("norm")) == norms
    x = _input(kind)
    _assert_equal(ours_call(ours, x), _expected(theirs, kind, x), kind)


@pytest.mark.parametrize("kind", ["grouped", "alibi"])
def test_decoding_with_a_cache_equals_the_full_forward(kind):
    x = _input(kind)
    cached_equals_full(_pair(falcon.FalconAttention, kind)[1], x)
    cached_equals_full(_pair(falcon.FalconDecoderLayer, kind)[1], x)


def test_quirk_falcon_eager_adds_alibi_twice():
    """In a whole Falcon model with ALiBi, the eager attention adds the ALiBi bias to the
    scores and again through the mask the model built with it, while the sdpa path adds it
    once: the two outputs differ, and ours (ALiBi once) equals sdpa's."""
    model = randomize(falcon.FalconModel(_config("alibi", layers=1))).to(torch.float64)
    ids = torch.randint(0, 16, (2, 7), generator=torch.Generator().manual_seed(0))
    outputs = {}
    for implementation in ("eager", "sdpa"):
        model.config._attn_implementation = implementation
        with torch.no_grad():
            outputs[implementation] = model(ids).last_hidden_state
    model.config._attn_implementation = "eager"
    with torch.no_grad():
        ours = model.ln_f(ours_call(from_hf(model.h[0]), model.word_embeddings(ids)))
    torch.testing.assert_close(ours, outputs["sdpa"], atol=1e-12, rtol=1e-12)
    assert (ours - outputs["eager"]).abs().max() > 1e-3


def test_quirk_falcon_rounds_alibi_to_bfloat16():
    """Falcon's ALiBi is not exact: build_alibi_tensor rounds the slopes to bfloat16 and, with
    the integer mask FalconModel gives it, multiplies them by the positions in bfloat16 (with
    16 heads, head 0, slope 2^-0.5, gets 212 at position 299 instead of 211.4); ours keeps
    exact slopes, equal to theirs where the rounding is exact (here: few heads, short texts)."""
    mask = torch.ones(1, 300, dtype=torch.long)  # FalconModel's, without a padding mask
    alibi = falcon.build_alibi_tensor(mask, 16, torch.float32)  # (N * H, 1, S)
    assert alibi[0, 0, 299].item() == 212.0 and abs(2**-0.5 * 299 - 211.42) < 0.01
    short = falcon.build_alibi_tensor(torch.ones(1, 7, dtype=torch.long), H, torch.float64)
    slopes = torch.tensor([2**-2, 2**-4, 2**-6, 2**-8], dtype=torch.float64)  # 2^(-8h/H), H = 4
    exact = slopes[:, None] * torch.arange(7)  # (H, S): slope times the key's position
    torch.testing.assert_close(short[:, 0], exact, atol=0, rtol=0)


def test_quirk_falcon_new_architecture_caches_every_query_head():
    """Falcon's new architecture has H_kv key/value heads but copies them out to all H query
    heads before its cache stores them, so the cache holds H heads, not H_kv: grouped-query
    attention without its memory saving; ours caches the H_kv heads, with equal outputs."""
    from transformers import DynamicCache

    theirs, ours = _pair(falcon.FalconAttention, "grouped")
    x, cache, kv_cache = _input("grouped"), DynamicCache(), KVCache()
    _expected(theirs, "grouped", x, layer_past=cache)
    with torch.no_grad():
        ours(x, is_causal=True, kv_cache=kv_cache)
    assert cache.layers[0].keys.shape == (2, H, 7, D) and kv_cache.key.shape == (2, KV, 7, D)
