import math
from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_ref import causal_mask, sliding_window_mask
from attention_ref.cost import attended_pairs, attention_flops, attention_memory, kv_cache_numel

sizes = st.integers(1, 40)


@given(L=sizes, S=sizes, window=st.integers(1, 12), is_causal=st.booleans())
def test_pairs_count_the_masks(L, S, window, is_causal):
    band = sliding_window_mask(L, window, S, causal=is_causal)
    assert attended_pairs(L, S, is_causal, window) == band.sum().item()
    assert attended_pairs(L, S, True) == causal_mask(L, S).sum().item()
    assert attended_pairs(L, S) == L * S


def _exponent(f, n):
    return math.log2(f(2 * n) / f(n))


@pytest.mark.parametrize("n", [512, 1024, 4096, 8192])
def test_softmax_flops_are_quadratic_and_linear_flops_linear(n):
    softmax = partial(attention_flops, d_k=64, heads=4)
    linear = partial(attention_flops, d_k=64, heads=4, kind="linear")
    assert _exponent(softmax, n) == 2.0
    assert _exponent(linear, n) == 1.0
    assert softmax(n) == 4 * 1 * 4 * n * n * 64  # the 4·B·H·n²·E


@pytest.mark.parametrize("is_causal", [False, True])
def test_local_flops_grow_linearly_once_n_exceeds_the_window(is_causal):
    f = partial(attention_flops, d_k=64, kind="local", window=256, is_causal=is_causal)
    for n in (256, 1024, 4096):
        assert f(4 * n) - f(2 * n) == 2 * (f(2 * n) - f(n))  # affine in n: slope exactly 1
    assert f(8192) < attention_flops(8192, d_k=64) / 8


def test_causal_flops_are_the_triangle():
    n, d = 1000, 8
    assert attention_flops(n, d_k=d, is_causal=True) == 2 * (n * (n + 1) // 2) * 2 * d
    assert attention_flops(n, 300, d_k=d, d_v=4) == 2 * n * 300 * (d + 4)


def test_memory_is_quadratic_dense_and_linear_blocked():
    dense = partial(attention_memory, d_k=64, heads=4)
    blocked = partial(attention_memory, d_k=64, heads=4, block_size=(768, 512))
    linear = partial(attention_memory, d_k=64, heads=4, kind="linear")
    local = partial(attention_memory, d_k=64, heads=4, kind="local", window=256)
    for f in (blocked, linear, local):
        n = 2048
        assert f(4 * n) - f(2 * n) == 2 * (f(2 * n) - f(n))
    assert dense(8192) == 4 * (8192 * 8192 + 8192 * 64) * 4
    assert dense(8192) / blocked(8192) > 60  # the issue asks for 20x, measured
    assert attention_memory(100, d_k=8, bytes_per_element=8) == 2 * attention_memory(100, d_k=8)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"kind": "sparse"}, ValueError, r"kind: expected one of"),
        ({"kind": "local"}, TypeError, r"window: kind='local' needs an int window, got None"),
        ({"kind": "local", "window": 0}, ValueError, r"window: expected a positive int"),
        ({"window": 4}, ValueError, r"window: only used with kind='local'"),
        ({"n": -1}, ValueError, r"n: expected a size >= 0, got -1"),
        ({"n": 2.5}, TypeError, r"n: expected an int, got float"),
        ({"heads": 0}, ValueError, r"heads: expected a positive int"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, message):
    args = {"n": 16, "d_k": 8} | kwargs
    with pytest.raises(error, match=message):
        attention_flops(**args)
    with pytest.raises(error, match=message):
        attention_memory(**args)


def test_bad_block_size():
    with pytest.raises(ValueError, match=r"block_size: expected a positive size"):
        attention_memory(16, d_k=8, block_size=(0, 4))


@given(
    layers=st.integers(1, 4),
    batch=st.integers(1, 3),
    tokens=st.integers(0, 50),
    window=st.one_of(st.none(), st.integers(1, 20)),
    sink_tokens=st.integers(0, 4),
)
def test_kv_cache_numel_for_each_kind_of_cache(layers, batch, tokens, window, sink_tokens):
    sink_tokens = 0 if window is None else sink_tokens
    held = tokens if window is None else min(tokens, sink_tokens + window)
    common = {"layers": layers, "batch": batch, "tokens": tokens, "window": window}
    common["sink_tokens"] = sink_tokens
    assert kv_cache_numel(**common, kv_heads=2, head_dim=8) == 2 * layers * batch * 2 * held * 8
    mla = kv_cache_numel(**common, kv_lora_rank=16, qk_rope_head_dim=4)
    assert mla == layers * batch * held * (16 + 4)


def test_kv_cache_numel_of_known_models():
    """Llama 2 7B (32 layers, 32 heads of 128) and DeepSeek-V3 (61 layers, latent 512 + 64)."""
    llama = kv_cache_numel(layers=32, batch=1, kv_heads=32, head_dim=128, tokens=4096)
    assert llama * 2 == 2 * 2**30  # 2 GiB in float16
    deepseek = kv_cache_numel(
        layers=61, batch=1, tokens=4096, kv_lora_rank=512, qk_rope_head_dim=64
    )
    assert deepseek == 61 * 4096 * 576
    rolling = kv_cache_numel(
        layers=32, batch=1, kv_heads=32, head_dim=128, tokens=10**6, window=4092, sink_tokens=4
    )
    assert rolling == llama  # it stops growing at sink_tokens + window


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"kv_heads": 2, "kv_lora_rank": 8},
            ValueError,
            r"kv_heads and kv_lora_rank: expected exactly one",
        ),
        ({}, ValueError, r"kv_heads and kv_lora_rank: expected exactly one"),
        ({"kv_lora_rank": 8}, ValueError, r"qk_rope_head_dim: expected an int with kv_lora_rank"),
        (
            {"kv_lora_rank": 8, "qk_rope_head_dim": 4, "head_dim": 2},
            ValueError,
            r"head_dim: not used with kv_lora_rank",
        ),
        ({"kv_heads": 2}, ValueError, r"head_dim: expected an int with kv_heads"),
        (
            {"kv_heads": 2, "head_dim": 4, "qk_rope_head_dim": 4},
            ValueError,
            r"qk_rope_head_dim: not used with kv_heads",
        ),
        (
            {"kv_heads": 2, "head_dim": 4, "sink_tokens": 4},
            ValueError,
            r"sink_tokens: only used with window",
        ),
        (
            {"kv_heads": 2, "head_dim": 4, "window": 0},
            ValueError,
            r"window: expected a positive int",
        ),
        (
            {"kv_heads": 2, "head_dim": 4, "window": 2, "sink_tokens": -1},
            ValueError,
            r"sink_tokens: expected",
        ),
        (
            {"kv_lora_rank": 0, "qk_rope_head_dim": 4},
            ValueError,
            r"kv_lora_rank: expected a positive int",
        ),
        ({"kv_heads": 2.0, "head_dim": 4}, TypeError, r"kv_heads: expected an int, got float"),
    ],
)
def test_kv_cache_numel_bad_input_names_the_argument(kwargs, error, message):
    with pytest.raises(error, match=message):
        kv_cache_numel(layers=2, batch=1, tokens=10, **kwargs)
