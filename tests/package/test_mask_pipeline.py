"""Where the options meet: every mask, every cache, every kernel, one answer.

A module's call with a cache must compute the rows of the full forward for its queries, with
every mask applied (the caller's tensor, ``is_causal``, the caller's rule, the rolling cache's
rule, a rule bound into the kernel) and only the keys that exist at that call. Any kernel the
module accepts gives those numbers. Hypothesis draws the crossing: rule × cache chunking × a
rolling window with sink tokens × padding or float masks × MHA, GQA, RoPE, sinks, MLA in both
forms × the default, SDPA, ``chunked_attention`` (a rule kernel) and a plain user kernel.
"""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from attention_ref import (
    KVCache,
    LatentCache,
    MultiHeadAttention,
    MultiHeadLatentAttention,
    causal_mask,
    chunked_attention,
    scaled_dot_product_attention,
    sliding_window_attention,
    sliding_window_mask,
)
from attention_ref.mask_mods import (
    and_masks,
    causal,
    create_mask,
    flex_reference,
    padding,
    sliding_window,
)
from attention_ref.tile_plan import plan_tiles

from .strategies import mask_functions

E, H = 8, 4


def user_kernel(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """A kernel a user writes: SDPA's arguments, no rules."""
    return F.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attn_mask,
        is_causal=is_causal,
        scale=scale,
        enable_gqa=enable_gqa,
    )


def kernels(bound_rule):
    """Each kind of attention_fn, by name: none, SDPA, a rule kernel, one with a bound rule."""
    small = functools.partial(chunked_attention, block_size=(2, 3))  # several tiles
    found = {
        "default": None,
        "sdpa": scaled_dot_product_attention,
        "chunked": small,
        "user": user_kernel,
    }
    if bound_rule is not None:
        found["chunked+bound"] = functools.partial(small, mask_mod=bound_rule)
    return found


@st.composite
def chunkings(draw, T):
    """One shot, token by token, or uneven pieces: the lengths of the calls, summing to T."""
    kind = draw(st.sampled_from(["one", "tokens", "uneven"]))
    if kind == "one":
        return [T]
    if kind == "tokens":
        return [1] * T
    cuts = sorted(draw(st.sets(st.integers(1, T - 1), max_size=3))) if T > 1 else []
    return [b - a for a, b in zip([0, *cuts], [*cuts, T], strict=True)]


@st.composite
def crossings(draw):
    N, T = draw(st.integers(1, 2)), draw(st.integers(1, 7))
    rule = draw(st.none() | mask_functions(N, T, T))
    cache = draw(st.sampled_from(["none", "full", "rolling"]))
    window, sinks_kept = draw(st.integers(1, 4)), draw(st.integers(0, 2))
    return {
        "N": N,
        "T": T,
        "rule": rule,
        "is_causal": draw(st.booleans()),
        "cache": cache,
        "rolling": (window, sinks_kept) if cache == "rolling" else None,
        "chunks": draw(chunkings(T)) if cache != "none" else [T],
        "tensor": draw(st.sampled_from(["none", "padding", "float"])),
        "bound": draw(st.none() | mask_functions(N, T, T, combine=False)),
        "seed": draw(st.integers(0, 2**16)),
    }


def _tensor_mask(kind, N, T, gen):
    """The caller's tensor over all T keys: a padding mask (N, 1, 1, T) or a float bias."""
    if kind == "padding":
        lengths = torch.randint(1, T + 1, (N,), generator=gen)
        return torch.arange(T)[None, None, None, :] < lengths[:, None, None, None]
    if kind == "float":
        bias = torch.randn(N, 1, T, T, generator=gen, dtype=torch.float64)
        return bias.masked_fill(torch.rand(N, 1, T, T, generator=gen) < 0.2, float("-inf"))
    return None


def _columns(chunks, rolling):
    """For each call, the positions of the keys it attends over (held, then new)."""
    cache = KVCache() if rolling is None else KVCache(window=rolling[0], sink_tokens=rolling[1])
    columns, start = [], 0
    for length in chunks:
        held = cache.held_positions
        cache.update(torch.zeros(1, 1, length, 1), torch.zeros(1, 1, length, 1))
        columns.append(torch.cat([held, torch.arange(start, start + length)]))
        start += length
    return columns


def _expected_mask(case, tensor, columns):
    """The full forward's mask (N, 1 or H, T, T): every rule, the tensor, and the keys that
    exist at each query's call."""
    N, T = case["N"], case["T"]
    rules = [r for r in (case["rule"] and case["rule"][1], case["bound"] and case["bound"][1]) if r]
    rules += [causal()] if case["is_causal"] else []
    rules += [sliding_window(*case["rolling"])] if case["rolling"] else []
    allowed = torch.ones(N, 1, T, T, dtype=torch.bool)
    if rules:
        allowed = allowed & create_mask(and_masks(*rules), N, H, T, T)
    exists = torch.zeros(T, T, dtype=torch.bool)
    start = 0
    for length, cols in zip(case["chunks"], columns, strict=True):
        exists[start : start + length, cols] = True
        start += length
    allowed = allowed & exists
    if tensor is None:
        return allowed
    if tensor.dtype == torch.bool:
        return allowed & tensor
    return torch.where(allowed, tensor, float("-inf"))


def _calls(module, x, case, tensor, columns, **kwargs):
    """The module run over the chunks, each call with its part of the caller's mask."""
    rule = case["rule"] and case["rule"][1]
    if case["cache"] == "none":
        return module(x, attn_mask=tensor, is_causal=case["is_causal"], mask_mod=rule, **kwargs)
    rolling = case["rolling"]
    kind = LatentCache if isinstance(module, MultiHeadLatentAttention) else KVCache
    cache = kind() if rolling is None else kind(window=rolling[0], sink_tokens=rolling[1])
    outs, start = [], 0
    for length, cols in zip(case["chunks"], columns, strict=True):
        rows = slice(start, start + length)
        part = None if tensor is None else tensor[:, :, rows if tensor.size(2) > 1 else slice(None)]
        part = None if part is None else part[..., cols]
        outs.append(
            module(
                x[:, rows],
                attn_mask=part,
                is_causal=case["is_causal"],
                mask_mod=rule,
                kv_cache=cache,
                **kwargs,
            )
        )
        start += length
    if isinstance(outs[0], tuple):
        return torch.cat([o[0] for o in outs], dim=1), None
    return torch.cat(outs, dim=1)


@pytest.mark.parametrize("variant", ["mha", "gqa", "rope", "sinks"])
@given(case=crossings())
def test_mha_any_kernel_any_cache_equals_the_full_forward(variant, case):
    gen = torch.Generator().manual_seed(case["seed"])
    options = {
        "mha": {},
        "gqa": {"num_kv_heads": 2},
        "rope": {"num_kv_heads": 2, "rope_base": 100.0},
        "sinks": {"sinks": True},
    }[variant]
    torch.manual_seed(case["seed"])
    reference = MultiHeadAttention(E, H, dtype=torch.float64, **options)
    if reference.sinks is not None:
        torch.nn.init.normal_(reference.sinks)
    x = torch.randn(case["N"], case["T"], E, generator=gen, dtype=torch.float64)
    tensor = _tensor_mask(case["tensor"], case["N"], case["T"], gen)
    columns = _columns(case["chunks"], case["rolling"])
    expected, _ = reference(x, attn_mask=_expected_mask(case, tensor, columns))
    bound = case["bound"] and case["bound"][1]
    for name, fn in kernels(bound).items():
        if variant == "sinks" and name not in ("default", "sdpa"):
            continue  # kernels that take no sink logits
        if name != "chunked+bound" and bound is not None:
            continue  # the bound rule is in the expected mask: only its kernel applies it
        module = MultiHeadAttention(E, H, dtype=torch.float64, attention_fn=fn, **options)
        module.load_state_dict(reference.state_dict())
        got, _ = _calls(module, x, case, tensor, columns)
        torch.testing.assert_close(got, expected, atol=1e-10, rtol=1e-10, msg=f"{name}: {case}")


@pytest.mark.parametrize("absorb", [False, True])
@given(case=crossings())
def test_mla_any_cache_equals_the_full_forward(absorb, case):
    case["bound"] = None  # MLA takes no kernel
    gen = torch.Generator().manual_seed(case["seed"])
    torch.manual_seed(case["seed"])
    sizes = {"kv_lora_rank": 6, "qk_nope_head_dim": 4, "qk_rope_head_dim": 2, "v_head_dim": 3}
    mla = MultiHeadLatentAttention(E, H, dtype=torch.float64, **sizes)
    x = torch.randn(case["N"], case["T"], E, generator=gen, dtype=torch.float64)
    tensor = _tensor_mask(case["tensor"], case["N"], case["T"], gen)
    columns = _columns(case["chunks"], case["rolling"])
    expected = mla(x, attn_mask=_expected_mask(case, tensor, columns), absorb=absorb)
    got = _calls(mla, x, case, tensor, columns, absorb=absorb)
    torch.testing.assert_close(got, expected, atol=1e-10, rtol=1e-10, msg=str(case))


@given(case=crossings())
def test_gradients_without_a_cache_equal_the_dense_forward(case):
    """No cache: the rule kernel (tiles skipped, rules planned) has the dense mask's gradients."""
    case |= {"cache": "none", "chunks": [case["T"]], "rolling": None}
    gen = torch.Generator().manual_seed(case["seed"])
    torch.manual_seed(case["seed"])
    reference = MultiHeadAttention(E, H, num_kv_heads=2, rope_base=100.0, dtype=torch.float64)
    bound = case["bound"] and case["bound"][1]
    small = functools.partial(chunked_attention, block_size=(2, 3))
    fn = small if bound is None else functools.partial(small, mask_mod=bound)
    module = MultiHeadAttention(
        E, H, num_kv_heads=2, rope_base=100.0, dtype=torch.float64, attention_fn=fn
    )
    module.load_state_dict(reference.state_dict())
    x = torch.randn(case["N"], case["T"], E, generator=gen, dtype=torch.float64)
    tensor = _tensor_mask(case["tensor"], case["N"], case["T"], gen)
    columns = _columns(case["chunks"], None)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    expected, _ = reference(x1, attn_mask=_expected_mask(case, tensor, columns))
    got, _ = _calls(module, x2, case, tensor, columns)
    expected.square().sum().backward()
    got.square().sum().backward()
    torch.testing.assert_close(x2.grad, x1.grad, atol=1e-9, rtol=1e-9)
    for (name, a), b in zip(reference.named_parameters(), module.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, atol=1e-9, rtol=1e-9, msg=name)


def test_a_bound_causal_rule_with_a_cache_gives_the_full_forward():
    """The case that was silently wrong: partial(chunked_attention, mask_mod=causal()) in a
    module with a cache, 4 + 2 tokens, saw query rows 0..1 instead of positions 4..5."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    blocks = MultiHeadAttention(
        8, 2, attention_fn=functools.partial(chunked_attention, mask_mod=causal())
    )
    blocks.load_state_dict(mha.state_dict())
    x = torch.randn(1, 6, 8)
    cache = KVCache()
    prompt, _ = blocks(x[:, :4], kv_cache=cache)
    last, _ = blocks(x[:, 4:], kv_cache=cache)
    full, _ = mha(x, is_causal=True)
    torch.testing.assert_close(torch.cat([prompt, last], dim=1), full, atol=1e-6, rtol=1e-6)


def test_a_bound_rule_and_is_causal_without_a_cache_both_apply():
    """Silently wrong until hypothesis found it: with a rule bound into the kernel and no
    other mask, is_causal was dropped (the fast path kept causal as a flag, and the rule
    kernel was called with is_causal=False). Padding that hides nothing, so only causal
    should act."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    bound = functools.partial(chunked_attention, mask_mod=padding([2]))
    blocks = MultiHeadAttention(8, 2, attention_fn=bound)
    blocks.load_state_dict(mha.state_dict())
    x = torch.randn(1, 2, 8)
    torch.testing.assert_close(
        blocks(x, is_causal=True)[0], mha(x, is_causal=True)[0], atol=1e-6, rtol=1e-6
    )


def test_a_bound_plan_is_planned_again_at_its_own_tile_size():
    """A plan bound into a module's kernel gives its rule and its block size to every call;
    before, the rule was planned again at the default (768, 512) tiles, losing the plan's."""
    seen = []

    @functools.wraps(chunked_attention)  # the same signature, so a rule kernel
    def kernel(*args, **kwargs):
        seen.append(kwargs.get("block_size"))
        return chunked_attention(*args, **kwargs)

    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    plan = plan_tiles(sliding_window(2), 1, 2, 6, 6, block_size=(2, 3))
    blocks = MultiHeadAttention(8, 2, attention_fn=functools.partial(kernel, mask_mod=plan))
    blocks.load_state_dict(mha.state_dict())
    x = torch.randn(1, 6, 8)
    out, _ = blocks(x, is_causal=True)
    full, _ = mha(x, mask_mod=sliding_window(2))
    torch.testing.assert_close(out, full, atol=1e-6, rtol=1e-6)
    assert seen == [(2, 3)]
    fixed = functools.partial(kernel, mask_mod=plan, block_size=4)  # a bound size wins
    MultiHeadAttention(8, 2, attention_fn=fixed)(x)
    assert seen[-1] == 4


def test_a_bound_rule_that_cannot_be_aligned_is_an_error():
    def kernel(
        query,
        key,
        value,
        attn_mask=None,
        is_causal=False,
        scale=None,
        enable_gqa=False,
        mask_mod=None,
    ):  # takes a rule, but no q_offset
        return scaled_dot_product_attention(query, key, value, attn_mask, is_causal=is_causal)

    mha = MultiHeadAttention(8, 2, attention_fn=functools.partial(kernel, mask_mod=causal()))
    cache, x = KVCache(), torch.randn(1, 3, 8)
    mha(x[:, :2], kv_cache=cache)  # at position 0 the rule is aligned
    with pytest.raises(ValueError, match="attention_fn: a mask_mod is bound into kernel"):
        mha(x[:, 2:], kv_cache=cache)


# The tensor masks the pages teach keep their own code; each equals its rule.


@pytest.mark.parametrize("align", ["top_left", "bottom_right"])
@pytest.mark.parametrize(("L", "S"), [(4, 4), (3, 7), (1, 5)])
def test_causal_mask_is_the_causal_rule(align, L, S):
    offset = 0 if align == "top_left" else S - L  # bottom-right: L new queries after S - L keys
    rule = create_mask(causal(), 1, 1, L, S, q_offset=offset)[0, 0]
    assert torch.equal(causal_mask(L, S, align=align), rule)


@pytest.mark.parametrize("sink_tokens", [0, 2])
@pytest.mark.parametrize("window", [1, 3])
@pytest.mark.parametrize("align", ["top_left", "bottom_right"])
def test_sliding_window_mask_is_the_sliding_window_rule(sink_tokens, window, align):
    L, S = 4, 9
    offset = 0 if align == "top_left" else S - L
    rule = create_mask(sliding_window(window, sink_tokens), 1, 1, L, S, q_offset=offset)[0, 0]
    taught = sliding_window_mask(L, window, S, align=align, sink_tokens=sink_tokens)
    assert torch.equal(taught, rule)


@pytest.mark.parametrize("window", [1, 2, 5])
def test_the_band_of_local_attention_is_the_sliding_window_rule(window):
    q, k, v = (torch.randn(2, 3, 11, 4, dtype=torch.float64) for _ in range(3))
    band = sliding_window_attention(q, k, v, window, is_causal=True, block_size=4)
    rule = flex_reference(q, k, v, mask_mod=sliding_window(window))
    torch.testing.assert_close(band, rule)


def test_the_rolling_cache_sees_what_its_rule_allows():
    cache = KVCache(window=3, sink_tokens=1)
    cache.update(torch.zeros(1, 1, 7, 2), torch.zeros(1, 1, 7, 2))
    cache.update(torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 2, 2))  # tokens 7 and 8
    queries = torch.tensor([7, 8])
    expected = create_mask(sliding_window(3, 1), 1, 1, 9, 9)[0, 0][queries][:, cache.positions]
    assert torch.equal(cache.visible(queries), expected)
