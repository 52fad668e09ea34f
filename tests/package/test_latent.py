"""MultiHeadLatentAttention against the DeepSeek-V2 paper's equations (§2.1, eqs. 9-19).

The reference below is written from the equations, one token and one head at a time, in
float64, with the module's own weights: c^KV = W^DKV h, k^C = W^UK c^KV, v^C = W^UV c^KV,
k^R = RoPE(W^KR h), q^C = W^UQ c^Q, q^R = RoPE(W^QR c^Q), then softmax over
[q^C; q^R] . [k^C; k^R]. As in DeepSeek-V3's checkpoints, both latents are RMS-normalized.
"""

import itertools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attention_ref import (
    KVCache,
    LatentCache,
    MultiHeadAttention,
    MultiHeadLatentAttention,
    apply_rope,
    sliding_window_mask,
)

from ._compare import assert_close_scaled, grads

F64 = torch.float64
SIZES = {"kv_lora_rank": 5, "qk_nope_head_dim": 4, "qk_rope_head_dim": 6, "v_head_dim": 3}
E, H = 12, 3


def _mla(q_lora_rank=None, rope_interleaved=True, bias=False, seed=0, dtype=F64, **sizes):
    """A module with every parameter random (the RMSNorm weights too), so none is trivial."""
    torch.manual_seed(seed)
    module = MultiHeadLatentAttention(
        E,
        H,
        **(SIZES | sizes),
        q_lora_rank=q_lora_rank,
        rope_interleaved=rope_interleaved,
        bias=bias,
        dtype=dtype,
    )
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    return module


# ---------------------------------------------------------------- the paper's equations


def _rope_vector(x, position, base, interleaved):
    """Rotate each feature pair of one vector x (d,) by position * base^(-2i/d)."""
    d, out = x.numel(), x.clone()
    for i in range(d // 2):
        a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + d // 2)
        angle = float(position) * base ** (-2 * i / d)
        c, s = math.cos(angle), math.sin(angle)
        out[a], out[b] = x[a] * c - x[b] * s, x[a] * s + x[b] * c
    return out


def _rms(x, weight, eps):
    return x / torch.sqrt((x * x).mean() + eps) * weight


def _linear(layer, rows, x):
    """One row block of an nn.Linear applied to a vector: W[rows] x + b[rows]."""
    bias = 0.0 if layer.bias is None else layer.bias[rows]
    return layer.weight[rows] @ x + bias


def _paper_mla(m, h, positions, allowed):
    """DeepSeek-V2 eqs. 9-19 for one sequence h (L, E); allowed (L, S=L) bool."""
    H, dn, dr, dv, r = (
        m.num_heads,
        m.qk_nope_head_dim,
        m.qk_rope_head_dim,
        m.v_head_dim,
        m.kv_lora_rank,
    )
    eps, base, inter = m.kv_a_layernorm.eps, m.rope_base, m.rope_interleaved
    L = h.size(0)
    c_kv = [
        _rms(_linear(m.kv_a_proj_with_mqa, slice(0, r), h[t]), m.kv_a_layernorm.weight, eps)
        for t in range(L)
    ]  # (9)
    k_r = [
        _rope_vector(
            _linear(m.kv_a_proj_with_mqa, slice(r, r + dr), h[t]), positions[t], base, inter
        )
        for t in range(L)
    ]  # (15)
    if m.q_lora_rank is None:
        q_layer, c_q = m.q_proj, [h[t] for t in range(L)]
    else:
        q_layer = m.q_b_proj
        c_q = [
            _rms(_linear(m.q_a_proj, slice(None), h[t]), m.q_a_layernorm.weight, eps)
            for t in range(L)
        ]  # (12)
    w_kv = m.kv_b_proj.weight.view(H, dn + dv, r)
    w_q = q_layer.weight.view(H, dn + dr, -1)
    heads = torch.zeros(L, H, dv, dtype=h.dtype)
    for i in range(H):
        w_uk, w_uv, w_uq, w_qr = w_kv[i, :dn], w_kv[i, dn:], w_q[i, :dn], w_q[i, dn:]
        k = [torch.cat([w_uk @ c_kv[j], k_r[j]]) for j in range(L)]  # (10), (17)
        v = [w_uv @ c_kv[j] for j in range(L)]  # (11)
        for t in range(L):
            q = torch.cat(
                [w_uq @ c_q[t], _rope_vector(w_qr @ c_q[t], positions[t], base, inter)]
            )  # (13), (14), (16)
            seen = [j for j in range(L) if allowed[t, j]]
            if not seen:
                continue  # a fully masked query: zeros, as SDPA gives
            scores = torch.stack([q @ k[j] / math.sqrt(dn + dr) for j in seen])
            weights = torch.softmax(scores, dim=0)
            heads[t, i] = sum(w * v[j] for w, j in zip(weights, seen, strict=True))  # (18)
    return m.o_proj(heads.reshape(L, H * dv))  # (19): W^O [o_1; ...; o_H]


@pytest.mark.parametrize("q_lora_rank", [None, 7])
@pytest.mark.parametrize("rope_interleaved", [True, False])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("absorb", [False, True])
@pytest.mark.parametrize("is_causal", [False, True])
def test_matches_the_paper(q_lora_rank, rope_interleaved, bias, absorb, is_causal):
    m = _mla(q_lora_rank, rope_interleaved, bias)
    x = torch.randn(2, 5, E, dtype=F64)
    allowed = torch.ones(5, 5, dtype=torch.bool)
    allowed = allowed.tril() if is_causal else allowed
    out = m(x, is_causal=is_causal, absorb=absorb)
    with torch.no_grad():
        for n in range(2):
            assert_close_scaled(out[n].detach(), _paper_mla(m, x[n], range(5), allowed))


@pytest.mark.parametrize("absorb", [False, True])
def test_positions_and_combined_masks_match_the_paper(absorb):
    m = _mla(q_lora_rank=7, rope_interleaved=False)
    L = 6
    x = torch.randn(2, L, E, dtype=F64)
    positions = torch.tensor([[3, 4, 5, 6, 7, 8], [0, 2, 4, 6, 8, 10]])  # (N, L)
    padding = torch.tensor([[True] * 6, [False, False, True, True, True, True]])  # (N, S)
    out = m(x, positions=positions, attn_mask=padding[:, None, None], is_causal=True, absorb=absorb)
    with torch.no_grad():
        for n in range(2):
            allowed = torch.ones(L, L, dtype=torch.bool).tril() & padding[n]  # both apply
            expected = _paper_mla(m, x[n], positions[n].tolist(), allowed)
            assert_close_scaled(out[n].detach(), expected)


# ---------------------------------------------------------------- absorbed == expanded


def _named_params(m):
    return dict(m.named_parameters())


@pytest.mark.parametrize("q_lora_rank", [None, 7])
@pytest.mark.parametrize("mask", ["none", "causal", "padding+causal", "float"])
def test_absorbed_equals_expanded_values_and_gradients(q_lora_rank, mask):
    m = _mla(q_lora_rank, bias=True)
    N, L = 2, 5
    x = torch.randn(N, L, E, dtype=F64)
    kwargs = {}
    if mask == "causal":
        kwargs = {"is_causal": True}
    elif mask == "padding+causal":
        pad = torch.tensor([[True] * L, [False] + [True] * (L - 1)])[:, None, None]
        kwargs = {"attn_mask": pad, "is_causal": True}
    elif mask == "float":
        kwargs = {"attn_mask": torch.randn(N, H, L, L, dtype=F64)}
    names = list(_named_params(m))
    params = [p.detach() for p in m.parameters()]

    def run(absorb):
        def fn(x, *ps):
            out = torch.func.functional_call(
                m, dict(zip(names, ps, strict=True)), (x,), kwargs | {"absorb": absorb}
            )
            return out

        return fn

    expanded, absorbed = run(False)(x, *params), run(True)(x, *params)
    assert_close_scaled(absorbed, expanded)
    for name, g_abs, g_exp in zip(
        ["x", *names], grads(run(True), [x, *params]), grads(run(False), [x, *params]), strict=True
    ):
        assert_close_scaled(g_abs, g_exp, what=f"gradient of {name}")


@given(
    heads=st.integers(1, 3),
    sizes=st.fixed_dictionaries(  # the ranks and head widths, by the module's names
        {
            "kv_lora_rank": st.integers(1, 6),
            "qk_nope_head_dim": st.integers(1, 4),
            "qk_rope_head_dim": st.sampled_from([2, 4]),
            "v_head_dim": st.integers(1, 4),
        }
    ),
    q_rank=st.sampled_from([None, 3]),
    L=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_absorbed_equals_expanded_any_sizes(heads, sizes, q_rank, L, seed):
    torch.manual_seed(seed)
    m = MultiHeadLatentAttention(8, heads, **sizes, q_lora_rank=q_rank, dtype=F64)
    x = torch.randn(2, L, 8, dtype=F64)
    assert_close_scaled(m(x, is_causal=True, absorb=True), m(x, is_causal=True))


# ---------------------------------------------------------------- the cache


@pytest.mark.parametrize("q_lora_rank", [None, 7])
@pytest.mark.parametrize("rope_interleaved", [True, False])
@pytest.mark.parametrize("absorb", [False, True])
@pytest.mark.parametrize("chunks", [[1] * 7, [3, 1, 2, 1], [7], [2, 5]])
def test_cached_decoding_equals_the_full_forward(q_lora_rank, rope_interleaved, absorb, chunks):
    m = _mla(q_lora_rank, rope_interleaved)
    N, L = 2, sum(chunks)
    x = torch.randn(N, L, E, dtype=F64)
    full = m(x, is_causal=True, absorb=absorb)
    cache, outs, start = LatentCache(), [], 0
    for size in chunks:
        outs.append(m(x[:, start : start + size], is_causal=True, kv_cache=cache, absorb=absorb))
        start += size
    assert_close_scaled(torch.cat(outs, dim=1), full)
    # what is cached: the normalized latent and the rotated shared key, R + D_rope per token
    assert cache.latent.shape == (N, 1, L, SIZES["kv_lora_rank"])
    assert cache.rope_key.shape == (N, 1, L, SIZES["qk_rope_head_dim"])
    per_token = (cache.latent.numel() + cache.rope_key.numel()) / (N * L)
    assert per_token == SIZES["kv_lora_rank"] + SIZES["qk_rope_head_dim"]


@given(
    cuts=st.lists(st.integers(1, 8), min_size=1, max_size=4, unique=True),
    absorb=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_any_chunking_equals_the_full_forward(cuts, absorb, seed):
    m = _mla(seed=seed)
    x = torch.randn(1, 9, E, dtype=F64)
    bounds = [0, *sorted(cuts), 9]
    cache = LatentCache()
    outs = [
        m(x[:, a:b], is_causal=True, kv_cache=cache, absorb=absorb)
        for a, b in itertools.pairwise(bounds)
    ]
    assert_close_scaled(torch.cat(outs, dim=1), m(x, is_causal=True, absorb=absorb))


def test_the_cache_holds_the_normalized_latent_and_the_rotated_shared_key():
    m = _mla(q_lora_rank=7)
    x = torch.randn(2, 4, E, dtype=F64)
    cache = LatentCache()
    m(x, kv_cache=cache)
    latent, k_rope = m.kv_a_proj_with_mqa(x).split([5, 6], dim=-1)
    torch.testing.assert_close(cache.latent, m.kv_a_layernorm(latent)[:, None])
    torch.testing.assert_close(cache.rope_key, apply_rope(k_rope[:, None], interleaved=True))


def test_absorbed_form_never_expands_the_latent():
    """absorb=True reads kv_b_proj's weight but never applies it: no per-head keys or values."""
    m = _mla()
    x = torch.randn(1, 4, E, dtype=F64)
    expected = m(x, is_causal=True)

    def refuse(_):
        raise AssertionError("kv_b_proj applied")

    m.kv_b_proj.forward = refuse
    assert_close_scaled(m(x, is_causal=True, absorb=True), expected)
    with pytest.raises(AssertionError, match="kv_b_proj applied"):
        m(x, is_causal=True)


@pytest.mark.parametrize("absorb", [False, True])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_cache_with_padding_mask_equals_the_full_forward(absorb, kind):
    """A padding mask over every key, cached and new, together with is_causal."""
    m = _mla(q_lora_rank=7)
    N, L = 2, 6
    x = torch.randn(N, L, E, dtype=F64)
    pad = torch.tensor([[True] * L, [False, False] + [True] * (L - 2)])  # left padding
    if kind == "float":  # 0 keeps a score, -inf removes it, anything else shifts it
        pad = torch.zeros(N, L, dtype=F64).masked_fill(~pad, float("-inf"))
        pad[0, 1] = -0.7
    full = m(x, attn_mask=pad[:, None, None], is_causal=True, absorb=absorb)
    cache, outs = LatentCache(), []
    for start, stop in [(0, 3), (3, 4), (4, 6)]:
        mask = pad[:, None, None, :stop]  # (N, 1, 1, S): the keys so far
        outs.append(
            m(x[:, start:stop], attn_mask=mask, is_causal=True, kv_cache=cache, absorb=absorb)
        )
    assert_close_scaled(torch.cat(outs, dim=1), full)


@pytest.mark.parametrize("absorb", [False, True])
@pytest.mark.parametrize(("window", "sink_tokens"), [(3, 0), (2, 1), (4, 2)])
@pytest.mark.parametrize("chunks", [[1] * 9, [4, 1, 3, 1], [9]])
def test_rolling_cache_equals_the_masked_full_forward(absorb, window, sink_tokens, chunks):
    """LatentCache(window, sink_tokens): query t sees j <= t with j < sink_tokens or t - j < W."""
    m = _mla()
    N, L = 2, sum(chunks)
    x = torch.randn(N, L, E, dtype=F64)
    t, j = torch.arange(L)[:, None], torch.arange(L)
    allowed = (j <= t) & ((j < sink_tokens) | (t - j < window))  # (L, L)
    assert torch.equal(allowed, sliding_window_mask(L, window, sink_tokens=sink_tokens))
    full = m(x, attn_mask=allowed, absorb=absorb)
    cache, outs, start = LatentCache(window=window, sink_tokens=sink_tokens), [], 0
    for size in chunks:
        outs.append(m(x[:, start : start + size], is_causal=True, kv_cache=cache, absorb=absorb))
        start += size
        assert len(cache) <= sink_tokens + window
        assert cache.tokens_seen == start
    assert_close_scaled(torch.cat(outs, dim=1), full)


def test_rolling_cache_treats_mla_as_multi_head_attention_does():
    """The same rolling cache rule in both modules: each matches its own masked full forward."""
    mha, mla = MultiHeadAttention(E, H, rope_base=10000.0, dtype=F64), _mla()
    x = torch.randn(1, 6, E, dtype=F64)
    t, j = torch.arange(6)[:, None], torch.arange(6)
    allowed = (j <= t) & ((j < 1) | (t - j < 2))
    for call, kind in ((lambda x, **kw: mha(x, **kw)[0], KVCache), (mla, LatentCache)):
        cache = kind(window=2, sink_tokens=1)
        steps = [call(x[:, i : i + 1], kv_cache=cache) for i in range(6)]  # no is_causal
        torch.testing.assert_close(torch.cat(steps, dim=1), call(x, attn_mask=allowed))


# ---------------------------------------------------------------- names, dtypes, errors


@pytest.mark.parametrize("q_lora_rank", [None, 7])
@pytest.mark.parametrize("bias", [False, True])
def test_parameter_names_are_deepseeks(q_lora_rank, bias):
    m = _mla(q_lora_rank, bias=bias)
    dn, dr, dv, r = 4, 6, 3, 5
    q = (
        {"q_proj.weight": (H * (dn + dr), E)}
        if q_lora_rank is None
        else {
            "q_a_proj.weight": (7, E),
            "q_a_layernorm.weight": (7,),
            "q_b_proj.weight": (H * (dn + dr), 7),
        }
        | ({"q_a_proj.bias": (7,)} if bias else {})
    )
    expected = q | {
        "kv_a_proj_with_mqa.weight": (r + dr, E),
        "kv_a_layernorm.weight": (r,),
        "kv_b_proj.weight": (H * (dn + dv), r),
        "o_proj.weight": (E, H * dv),
    }
    if bias:
        expected |= {"kv_a_proj_with_mqa.bias": (r + dr,), "o_proj.bias": (E,)}
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == expected


def test_default_scale():
    m = _mla()
    assert m.scale == pytest.approx(1 / math.sqrt(4 + 6))
    scaled = MultiHeadLatentAttention(E, H, **SIZES, scale=0.5)
    assert scaled.scale == 0.5


@pytest.mark.parametrize("absorb", [False, True])
def test_bfloat16_is_close_to_float64(absorb):
    m64 = _mla()
    m16 = _mla(dtype=torch.bfloat16)
    m16.load_state_dict(m64.state_dict())
    x = torch.randn(1, 4, E, dtype=F64)
    out = m16(x.bfloat16(), is_causal=True, absorb=absorb)
    assert out.dtype == torch.bfloat16
    expected = m64(x, is_causal=True)
    err = (out.double() - expected).abs().max() / expected.abs().max()
    assert err < 0.05


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"qk_rope_head_dim": 5}, ValueError, "qk_rope_head_dim: expected an even"),
        ({"qk_rope_head_dim": 0}, ValueError, "qk_rope_head_dim: expected a positive"),
        ({"kv_lora_rank": 0}, ValueError, "kv_lora_rank: expected a positive"),
        ({"qk_nope_head_dim": -1}, ValueError, "qk_nope_head_dim: expected a positive"),
        ({"v_head_dim": 2.0}, TypeError, "v_head_dim: expected an int"),
        ({"q_lora_rank": 0}, ValueError, "q_lora_rank: expected a positive"),
        ({"rope_base": 0.0}, ValueError, "rope_base: expected a positive"),
        ({"rope_base": "big"}, TypeError, "rope_base: expected a number"),
        ({"scale": -1.0}, ValueError, "scale: expected a positive"),
        ({"eps": -1e-6}, ValueError, "eps: expected a non-negative"),
    ],
)
def test_bad_construction(kwargs, error, match):
    with pytest.raises(error, match=match):
        MultiHeadLatentAttention(E, H, **(SIZES | kwargs))


@pytest.mark.parametrize(("d_model", "num_heads", "name"), [(0, 2, "d_model"), (8, 0, "num_heads")])
def test_bad_model_sizes(d_model, num_heads, name):
    with pytest.raises(ValueError, match=f"{name}: expected a positive"):
        MultiHeadLatentAttention(d_model, num_heads, **SIZES)


def test_bad_inputs():
    m = _mla()
    x = torch.randn(2, 3, E, dtype=F64)
    with pytest.raises(
        ValueError, match=r"x: expected a batch-first tensor \(N, L, 12\), got shape \(2, 3, 8\)"
    ):
        m(torch.randn(2, 3, 8, dtype=F64))
    with pytest.raises(ValueError, match="x: expected a batch-first tensor"):
        m(torch.randn(3, E, dtype=F64))
    with pytest.raises(TypeError, match="x: expected a floating-point tensor"):
        m(torch.ones(2, 3, E, dtype=torch.long))
    with pytest.raises(TypeError, match="kv_cache: expected a LatentCache, got dict"):
        m(x, kv_cache={})
    with pytest.raises(ValueError, match="attn_mask: expected a shape broadcastable"):
        m(x, attn_mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="positions: expected a length of L=3"):
        m(x, positions=torch.arange(4))


def test_bad_caches():
    m = _mla()
    x = torch.randn(2, 3, E, dtype=F64)
    with pytest.raises(TypeError, match="kv_cache: expected a LatentCache, got KVCache"):
        m(x, kv_cache=KVCache())  # keys and values, not latents
    other = LatentCache()  # filled with other widths
    other.update(torch.zeros(2, 1, 3, 4, dtype=F64), torch.zeros(2, 1, 3, 4, dtype=F64))
    with pytest.raises(ValueError, match=r"kv_cache: expected new tokens with the cached"):
        m(x, kv_cache=other)
    cache = LatentCache()
    m(x, kv_cache=cache)
    with pytest.raises(ValueError, match="kv_cache: expected N=1"):
        m(x[:1], kv_cache=cache)
    with pytest.raises(ValueError, match="positions: with a cache"):
        m(x, kv_cache=cache, positions=torch.arange(3))
    m(x, kv_cache=cache, positions=torch.arange(3, 6))  # the positions that follow: fine
