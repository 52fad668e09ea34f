"""attention_ref.flex: flex_reference against PyTorch's flex_attention and SDPA.

PyTorch 2.13 on a CPU runs ``flex_attention`` eagerly (forward only: it warns that it
materializes the scores, and refuses inputs that require grad, with a NotImplementedError).
So the values are compared with eager ``flex_attention`` for every mask and score function,
and values and gradients with SDPA given the same mask (bool) or bias (float ``attn_mask``).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.attention import flex_attention as fa

import attention_ref
from attention_ref import alibi_bias
from attention_ref import mask_mods as mm
from attention_ref.flex import alibi, flex_reference, relative_bias, softcap
from tests.package._compare import assert_close_scaled, grads
from tests.package.strategies import mask_functions, score_functions

EAGER = "ignore:flex_attention called without torch.compile:UserWarning"


def masks(N: int, S: int, seed: int = 0) -> dict:
    """Every mask function, with its tensors for N sequences of S keys; ``None``: no mask."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 3, (N, S), generator=gen).sort(dim=-1).values  # (N, S)
    lengths = torch.randint(0, S + 1, (N,), generator=gen)  # some may be 0: empty rows
    return {
        "none": None,
        "causal": mm.causal(),
        "sliding_window": mm.sliding_window(3),
        "prefix_lm": mm.prefix_lm(torch.randint(0, S + 1, (N,), generator=gen)),
        "document": mm.document(ids),
        "causal documents": mm.and_masks(mm.causal(), mm.document(ids)),
        "chunked": mm.chunked(4),
        "dilated": mm.dilated_sliding_window(3, 2),
        "padding": mm.padding(lengths),
        "causal + padding": mm.and_masks(mm.causal(), mm.padding(lengths)),
        "window or first key": mm.or_masks(mm.sliding_window(2), lambda b, h, q, kv: kv == 0),
        "not causal": mm.not_mask(mm.causal()),  # the last query sees nothing when L = S
    }


def score_mods(H: int, dtype: torch.dtype, seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    table = torch.randn(H, 7, generator=gen, dtype=dtype)  # M = 3
    return {
        "none": None,
        "alibi": alibi(H),
        "softcap": softcap(0.7),
        "relative_bias": relative_bias(table),
        "alibi then softcap": lambda s, b, h, q, kv: softcap(2.0)(
            alibi(H)(s, b, h, q, kv), b, h, q, kv
        ),
    }


def flex_attention(query, key, value, *, score_mod=None, mask_mod=None, **kwargs):
    """PyTorch's flex_attention, eager on the CPU, given the mask as a BlockMask."""
    (N, H, L, _), S = query.shape, key.size(2)
    block_mask = None
    if mask_mod is not None:
        block_mask = fa.create_block_mask(mask_mod, N, H, L, S, device="cpu")
    out, aux = fa.flex_attention(
        query,
        key,
        value,
        score_mod=score_mod,
        block_mask=block_mask,
        return_aux=fa.AuxRequest(lse=True),
        **kwargs,
    )
    return out, aux.lse


def qkv(N, H, H_kv, L, S, E=8, Ev=6, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (
        torch.randn(N, H, L, E, generator=gen, dtype=dtype),
        torch.randn(N, H_kv, S, E, generator=gen, dtype=dtype),
        torch.randn(N, H_kv, S, Ev, generator=gen, dtype=dtype),
    )


def assert_lse_equal(actual, expected):
    assert torch.equal(actual.isneginf(), expected.isneginf()), "lse: -inf in other rows"
    finite = ~expected.isneginf()
    assert_close_scaled(actual[finite], expected[finite], what="lse")


# (N, H, H_kv, L, S): L = S, L != S both ways, grouped-query attention, one query
SIZES = [(2, 4, 4, 13, 13), (1, 4, 2, 9, 21), (2, 3, 1, 17, 6), (1, 2, 2, 1, 5)]


@pytest.mark.filterwarnings(EAGER)
@pytest.mark.parametrize(
    ("dtype", "N", "H", "H_kv", "L", "S"),
    [(torch.float64, *size) for size in SIZES] + [(torch.float32, *SIZES[1])],
)
def test_equals_flex_attention_for_every_mask_and_score_function(dtype, N, H, H_kv, L, S):
    """Each mask alone and with a score function, each score function alone and with causal
    (all pairs: test_equals_flex_attention_on_random_sizes)."""
    query, key, value = qkv(N, H, H_kv, L, S, dtype=dtype)
    all_masks, all_scores = masks(N, S), score_mods(H, dtype)
    if L > S:  # the packed ids are given for the S positions, the queries among them
        del all_masks["document"], all_masks["causal documents"]
    score_names = list(all_scores)
    pairs = [
        *[(m, s) for i, m in enumerate(all_masks) for s in ("none", score_names[i % 4 + 1])],
        *[(m, s) for s in score_names[1:] for m in ("none", "causal")],
    ]
    for mask_name, score_name in pairs:
        kwargs = {
            "score_mod": all_scores[score_name],
            "mask_mod": all_masks[mask_name],
            "enable_gqa": H_kv != H,
        }
        out, lse = flex_reference(query, key, value, return_lse=True, **kwargs)
        expected_out, expected_lse = flex_attention(query, key, value, **kwargs)
        what = f"{mask_name}, {score_name}"
        assert out.dtype == dtype, what
        assert lse.dtype == dtype, what
        assert_close_scaled(out, expected_out, what=what)
        assert_lse_equal(lse, expected_lse)


@pytest.mark.filterwarnings(EAGER)
@pytest.mark.parametrize("scale", [0.3, 2.0])
def test_scale_equals_flex_attention(scale):
    query, key, value = qkv(2, 2, 2, 5, 7)
    out, lse = flex_reference(
        query,
        key,
        value,
        scale=scale,
        mask_mod=mm.causal(),
        score_mod=softcap(3.0),
        return_lse=True,
    )
    expected_out, expected_lse = flex_attention(
        query, key, value, scale=scale, mask_mod=mm.causal(), score_mod=softcap(3.0)
    )
    assert_close_scaled(out, expected_out)
    assert_lse_equal(lse, expected_lse)


@pytest.mark.filterwarnings(EAGER)
@settings(max_examples=25)  # eager flex_attention is slow: a vmap over four index dimensions
@given(data=st.data(), N=st.integers(1, 2), H_kv=st.integers(1, 2), group=st.integers(1, 2))
def test_equals_flex_attention_on_random_sizes(data, N, H_kv, group):
    H, L, S = H_kv * group, data.draw(st.integers(1, 12)), data.draw(st.integers(1, 12))
    mask_name, mask_mod = data.draw(mask_functions(N, L, S), label="mask_mod")
    score_name, score_mod = data.draw(score_functions(H, torch.float64), label="score_mod")
    query, key, value = qkv(N, H, H_kv, L, S, E=4, Ev=3, seed=data.draw(st.integers(0, 99)))
    kwargs = {"mask_mod": mask_mod, "score_mod": score_mod, "enable_gqa": group > 1}
    out, lse = flex_reference(query, key, value, return_lse=True, **kwargs)
    expected_out, expected_lse = flex_attention(query, key, value, **kwargs)
    assert_close_scaled(out, expected_out, what=f"{mask_name}, {score_name}")
    assert_lse_equal(lse, expected_lse)


def dense_bias(score_mod, N, H, L, S, dtype=torch.float64):
    """An additive score function as the (N, H, L, S) bias it adds (differentiable)."""
    b, h = torch.arange(N).view(N, 1, 1, 1), torch.arange(H).view(1, H, 1, 1)
    q, kv = torch.arange(L).view(1, 1, L, 1), torch.arange(S).view(1, 1, 1, S)
    return score_mod(torch.zeros(N, H, L, S, dtype=dtype), b, h, q, kv)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(("N", "H", "H_kv", "L", "S"), SIZES)
def test_equals_sdpa_with_the_dense_mask_values_and_gradients(dtype, N, H, H_kv, L, S):
    """The mask as a bool attn_mask (SDPA gives fully masked rows zeros, as we do)."""
    inputs = list(qkv(N, H, H_kv, L, S, dtype=dtype))
    gqa = H_kv != H
    for name, mask_mod in masks(N, S).items():
        if mask_mod is None or (name in ("document", "causal documents") and L > S):
            continue
        dense = mm.create_mask(mask_mod, N, H, L, S)  # (N, H, L, S)

        def ours(q, k, v, mask_mod=mask_mod):
            return flex_reference(q, k, v, mask_mod=mask_mod, enable_gqa=gqa)

        def sdpa(q, k, v, dense=dense):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=dense, enable_gqa=gqa)

        assert_close_scaled(ours(*inputs), sdpa(*inputs), what=name)
        for mine, theirs, what in zip(grads(ours, inputs), grads(sdpa, inputs), "qkv", strict=True):
            assert not mine.isnan().any(), f"{name}: NaN in d{what}"
            assert_close_scaled(mine, theirs, what=f"{name}: d{what}")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("mask_name", ["causal", "sliding_window", "chunked", "prefix_lm"])
@pytest.mark.parametrize(("N", "H", "H_kv", "L", "S"), SIZES)
def test_additive_score_functions_equal_sdpa_with_a_bias(dtype, mask_name, N, H, H_kv, L, S):
    """alibi and relative_bias are a bias: SDPA with it (and the mask, as -inf) as a float
    attn_mask gives the same values and gradients, the table's gradient included. PyTorch 2.13's
    SDPA gives a row of -inf zeros, as flex_reference does."""
    mask_mod = masks(N, S)[mask_name]
    allowed = mm.create_mask(mask_mod, N, H, L, S)  # some rows empty when L > S: SDPA gives zeros
    table = torch.randn(H, 5, dtype=dtype, generator=torch.Generator().manual_seed(1))
    inputs = [*qkv(N, H, H_kv, L, S, dtype=dtype), table]
    gqa = H_kv != H

    for make in (lambda t: alibi(H), relative_bias):

        def ours(q, k, v, t, make=make):
            return flex_reference(q, k, v, score_mod=make(t), mask_mod=mask_mod, enable_gqa=gqa)

        def sdpa(q, k, v, t, make=make):
            bias = dense_bias(make(t), N, H, L, S, dtype).masked_fill(~allowed, -math.inf)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, enable_gqa=gqa)

        assert_close_scaled(ours(*inputs), sdpa(*inputs))
        for mine, theirs in zip(grads(ours, inputs), grads(sdpa, inputs), strict=True):
            assert_close_scaled(mine, theirs, what="gradient")


def test_softcap_equals_the_formula_values_and_gradients():
    """cap · tanh(s / cap) on the scaled scores, then the causal softmax: by hand."""
    inputs = list(qkv(2, 2, 2, 6, 6))
    cap = 0.5

    def ours(q, k, v):
        return flex_reference(q, k, v, score_mod=softcap(cap), mask_mod=mm.causal())

    def by_hand(q, k, v):
        scores = cap * torch.tanh(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) / cap)
        scores = scores.masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), -math.inf)
        return scores.softmax(-1) @ v

    assert_close_scaled(ours(*inputs), by_hand(*inputs))
    for mine, theirs in zip(grads(ours, inputs), grads(by_hand, inputs), strict=True):
        assert_close_scaled(mine, theirs, what="gradient")


def test_gradcheck_through_a_captured_table():
    """Gradients reach the tensors a score function captures: gradcheck in float64."""
    query, key, value = qkv(1, 2, 1, 4, 6, E=3, Ev=2)
    table = torch.randn(2, 5, dtype=torch.float64)
    leaves = [x.requires_grad_() for x in (query, key, value, table)]

    def fn(q, k, v, t):
        out, lse = flex_reference(
            q,
            k,
            v,
            score_mod=relative_bias(t),
            mask_mod=mm.and_masks(mm.causal(), mm.padding([6])),
            enable_gqa=True,
            return_lse=True,
        )
        return out, lse

    assert torch.autograd.gradcheck(fn, leaves)


def test_alibi_as_a_score_function_equals_adding_alibi_bias():
    """Equal outputs; with L != S the log-sum-exp differs by slope_h · (S - L) in each row.

    alibi_bias is aligned bottom-right (the queries are the last L positions), the score
    function sees indices and is aligned top-left: the two biases differ by that constant.
    """
    N, H, L, S = 2, 3, 5, 9
    query, key, value = qkv(N, H, H, L, S)
    bias = alibi_bias(H, L, S).double()  # (H, L, S), slopes in float32 as alibi's

    def add_bias(score, b, h, q_idx, kv_idx):
        return score + bias[h, q_idx, kv_idx]

    for mask_mod in (None, mm.padding([7, 9])):
        out, lse = flex_reference(
            query, key, value, score_mod=alibi(H), mask_mod=mask_mod, return_lse=True
        )
        expected, expected_lse = flex_reference(
            query, key, value, score_mod=add_bias, mask_mod=mask_mod, return_lse=True
        )
        assert_close_scaled(out, expected)
        slopes = -alibi_bias(H, 2)[:, 1, 0].double()  # (H,): the bias one key back
        shift = (slopes * (S - L))[None, :, None]  # (1, H, 1)
        assert_close_scaled(lse - expected_lse, shift.expand_as(lse), what="lse difference")
        attn_mask = bias[None].expand(N, H, L, S)
        if mask_mod is not None:
            attn_mask = attn_mask.masked_fill(~mm.create_mask(mask_mod, N, H, L, S), -math.inf)
        sdpa = F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask)
        assert_close_scaled(out, sdpa)


def test_a_fully_masked_row_gives_zeros_and_minus_infinity():
    query, key, value = (x.requires_grad_() for x in qkv(2, 1, 1, 3, 4))
    out, lse = flex_reference(query, key, value, mask_mod=mm.padding([0, 4]), return_lse=True)
    assert torch.equal(out[0], torch.zeros_like(out[0]))
    assert lse[0].isneginf().all() and lse[1].isfinite().all()
    (out.sum() + lse[1].sum()).backward()
    for x in (query, key, value):
        assert not x.grad.isnan().any()
    assert torch.equal(query.grad[0], torch.zeros_like(query.grad[0]))


def test_lse_is_the_natural_log_sum_exp_of_the_scores():
    query, key, value = qkv(1, 2, 2, 4, 5)
    _, lse = flex_reference(query, key, value, mask_mod=mm.causal(), return_lse=True)
    scores = query @ key.transpose(-2, -1) / math.sqrt(8)
    scores = scores.masked_fill(~torch.ones(4, 5, dtype=torch.bool).tril(), -math.inf)
    assert_close_scaled(lse, torch.log(torch.exp(scores).sum(-1)))


@pytest.mark.filterwarnings(EAGER)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_computes_in_float32(dtype):
    """float16 and bfloat16: the scores and the softmax in float32, the lse in float32, the
    output rounded once. PyTorch's eager flex_attention rounds the weights to the input dtype
    before multiplying by V: the outputs agree within two units in the last place, and ours is
    at least as close to the float32 result."""
    kwargs = {"mask_mod": mm.causal(), "score_mod": alibi(2)}
    inputs = [x.to(dtype) for x in qkv(1, 2, 2, 7, 7, dtype=torch.float32)]
    out, lse = flex_reference(*inputs, return_lse=True, **kwargs)
    expected_out, expected_lse = flex_attention(*inputs, **kwargs)
    exact, exact_lse = flex_reference(*(x.float() for x in inputs), return_lse=True, **kwargs)
    assert out.dtype == dtype
    assert lse.dtype == torch.float32
    assert expected_lse.dtype == torch.float32
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(out, expected_out, atol=2 * eps, rtol=2 * eps)
    torch.testing.assert_close(lse, expected_lse)
    torch.testing.assert_close(lse, exact_lse)
    ours, theirs = (out.float() - exact).abs().max(), (expected_out.float() - exact).abs().max()
    assert ours <= theirs


@pytest.mark.filterwarnings(EAGER)
def test_torch_flex_attention_has_no_backward_on_cpu():
    """What the pages say: PyTorch 2.13 refuses a CPU input that requires grad."""
    query, key, value = qkv(1, 1, 1, 4, 4)
    with pytest.raises(NotImplementedError, match="does not support backward on CPU"):
        fa.flex_attention(query.requires_grad_(), key, value)


def test_the_package_exports_flex_reference():
    assert attention_ref.flex_reference is flex_reference


# bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: alibi(0), ValueError, "num_heads: expected a positive number of heads, got 0"),
        (lambda: alibi(2.0), TypeError, "num_heads: expected an int, got float"),
        (lambda: softcap(0), ValueError, "cap: expected a positive number, got 0"),
        (lambda: softcap(-1.0), ValueError, "cap: expected a positive number, got -1.0"),
        (lambda: softcap(math.inf), ValueError, "cap: expected a positive number, got inf"),
        (lambda: softcap("50"), TypeError, "cap: expected a number, got str"),
        (lambda: relative_bias([[0.0]]), TypeError, "table: expected a torch.Tensor, got list"),
        (
            lambda: relative_bias(torch.zeros(2, 3, dtype=torch.long)),
            TypeError,
            "table: expected a floating",
        ),
        (
            lambda: relative_bias(torch.zeros(5)),
            ValueError,
            r"table: expected a shape \(H, 2R \+ 1\).*got \(5,\)",
        ),
        (
            lambda: relative_bias(torch.zeros(2, 4)),
            ValueError,
            r"an odd number of offsets, got \(2, 4\)",
        ),
    ],
)
def test_bad_score_function_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def zeros(*shape: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.zeros(shape, dtype=dtype)


def call_with(**kwargs):
    query, key, value = qkv(2, 4, 2, 3, 5)
    arguments = {"query": query, "key": key, "value": value, "enable_gqa": True, **kwargs}
    return lambda: flex_reference(
        arguments.pop("query"), arguments.pop("key"), arguments.pop("value"), **arguments
    )


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (call_with(query=zeros(4, 3, 8)), ValueError, "query: expected 4 dimensions"),
        (
            call_with(key=zeros(2, 2, 5, 3)),
            ValueError,
            "query and key: expected the same last dimension",
        ),
        (
            call_with(value=zeros(2, 2, 4, 6)),
            ValueError,
            "key and value: expected the same length S",
        ),
        (
            call_with(value=zeros(2, 2, 5, 6, dtype=torch.float32)),
            TypeError,
            "query and value: expected the same dtype",
        ),
        (call_with(key=zeros(1, 2, 5, 8)), ValueError, "expected the same batch size N"),
        (
            call_with(enable_gqa=False),
            ValueError,
            "enable_gqa: expected H_kv == H, or enable_gqa=True",
        ),
        (call_with(key=zeros(2, 3, 5, 8), value=zeros(2, 3, 5, 6)), ValueError, "H=4, H_kv=3"),
        (call_with(mask_mod="causal"), TypeError, "mask_mod: expected a function, got str"),
        (call_with(score_mod=3), TypeError, "score_mod: expected a function, got int"),
        (
            call_with(mask_mod=lambda b, h, q, kv: q - kv),
            TypeError,
            "mask_mod: expected a function that returns a bool tensor",
        ),
        (
            call_with(mask_mod=lambda b, h, q, kv: (q >= kv)[..., None]),
            ValueError,
            r"mask_mod: expected a result broadcastable to \(N, H, L, S\) = \(2, 4, 3, 5\)",
        ),
        (
            call_with(score_mod=lambda s, b, h, q, kv: s > 0),
            TypeError,
            "score_mod: expected a floating-point tensor, got dtype torch.bool",
        ),
        (
            call_with(score_mod=lambda s, b, h, q, kv: s[..., :2]),
            ValueError,
            r"score_mod: expected a result broadcastable to .* got shape \(2, 4, 3, 2\)",
        ),
        (
            call_with(score_mod=lambda s, b, h, q, kv: 1.0),
            TypeError,
            "score_mod: expected a function that returns a tensor, got float",
        ),
        (
            call_with(score_mod=relative_bias(zeros(2, 3))),
            ValueError,
            "score_mod: expected a function defined for every index",
        ),
        (
            call_with(mask_mod=mm.document(torch.tensor([0, 0, 1]))),
            ValueError,
            "mask_mod: expected a function defined for every index",
        ),
    ],
)
def test_bad_calls_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_compiled_flex_attention_accepts_them_on_cpu():
    """torch.compile(flex_attention) runs on a CPU (forward only) with our functions, their
    captured tensors included. ``dynamic=False``: in PyTorch 2.13 a recompilation for a second
    score function marks values dynamic, and the CPU kernel then fails to lower."""
    N, H, L, S = 2, 2, 128, 128
    query, key, value = qkv(N, H, H, L, S, E=16, Ev=16, dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 3, (N, S), generator=gen).sort(dim=-1).values
    mask_mod = mm.and_masks(mm.causal(), mm.document(ids), mm.padding(torch.tensor([100, 128])))
    bias, cap = relative_bias(torch.randn(H, 9, generator=gen)), softcap(20.0)

    def score_mod(score, b, h, q_idx, kv_idx):
        return cap(bias(score, b, h, q_idx, kv_idx), b, h, q_idx, kv_idx)

    block_mask = fa.create_block_mask(mask_mod, N, H, L, S, device="cpu")
    compiled = torch.compile(fa.flex_attention, dynamic=False)
    out = compiled(query, key, value, score_mod=score_mod, block_mask=block_mask)
    expected = flex_reference(query, key, value, score_mod=score_mod, mask_mod=mask_mod)
    torch.testing.assert_close(out, expected)


@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_a_second_captured_number_fails_to_compile_on_cpu_unless_dynamic_is_false():
    """What the mask-functions page says: compiled without ``dynamic=False``, a second score
    function that differs only in a captured Python number (softcap 7 after softcap 5) is
    recompiled with that number dynamic, and in torch 2.13 the CPU kernel fails to lower it.
    With ``dynamic=False`` both compile. A torch release that lifts the failure fails this
    test, so that the page can drop its warning."""
    query, key, value = qkv(1, 2, 2, 16, 16, E=8, Ev=8, dtype=torch.float32)
    torch._dynamo.reset()
    compiled = torch.compile(fa.flex_attention)
    compiled(query, key, value, score_mod=softcap(5.0))
    with pytest.raises(Exception, match="LoweringException"):  # torch._inductor InductorError
        compiled(query, key, value, score_mod=softcap(7.0))
    torch._dynamo.reset()
    static = torch.compile(fa.flex_attention, dynamic=False)
    for cap in (5.0, 7.0):
        expected = flex_reference(query, key, value, score_mod=softcap(cap))
        torch.testing.assert_close(static(query, key, value, score_mod=softcap(cap)), expected)


def test_alibi_is_exact_in_float64():
    """The slopes follow the scores' dtype: float64 scores get the float64 bias, 2^(-8i/H)."""
    H, L = 6, 5  # 6 heads: not a power of two, Press et al.'s interleaved rule
    h, q, kv = torch.arange(H)[:, None, None], torch.arange(L)[:, None], torch.arange(L)
    got = alibi(H)(torch.zeros(H, L, L, dtype=torch.float64), 0, h, q, kv)
    slopes = torch.tensor(attention_ref.positions.alibi_slopes(H), dtype=torch.float64)
    assert got.dtype == torch.float64
    assert torch.equal(got, slopes[:, None, None] * (kv - q))


@pytest.mark.filterwarnings(EAGER)
def test_a_table_of_another_dtype_works_as_in_torch():
    """relative_bias over a float64 table on float32 queries: torch's flex_attention computes
    it (the scores stay float32); so do flex_reference and chunked_attention."""
    q, k, v = qkv(1, 2, 2, 5, 7, dtype=torch.float32)
    table = torch.randn(2, 5, dtype=torch.float64)
    expected, _ = flex_attention(q, k, v, score_mod=relative_bias(table))
    got = flex_reference(q, k, v, score_mod=relative_bias(table))
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected)
    tiles = attention_ref.chunked_attention(q, k, v, block_size=2, score_mod=relative_bias(table))
    torch.testing.assert_close(tiles, expected)
