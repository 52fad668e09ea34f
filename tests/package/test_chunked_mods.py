"""chunked_attention with mask and score functions (FlexAttention's mask_mod, score_mod):
equal to flex_reference, values and gradients (float64), the tiles a mask leaves empty skipped
in both passes, and the tile plan."""

import pytest
import torch

import attention_ref.chunked as chunked_module
from attention_ref import mask_mods as mm
from attention_ref import scaled_dot_product_attention
from attention_ref.chunked import chunked_attention
from attention_ref.flex import alibi, flex_reference, relative_bias, softcap
from attention_ref.tile_plan import TilePlan, plan_tiles

from ._compare import assert_close_scaled

N, H, H_KV, L, S, E, EV = 2, 4, 2, 13, 17, 5, 3


def _per_head(b, h, q_idx, kv_idx):  # heads 0, 1 causal; heads 2, 3 see the first 8 keys
    return torch.where(h < 2, kv_idx <= q_idx, kv_idx < 8)


def _per_batch(b, h, q_idx, kv_idx):  # batch 1 sees nothing at all: zeros
    return (b == 0) & (kv_idx <= q_idx + 2)


MASKS = {
    "none": None,
    "causal": mm.causal(),
    "causal window": mm.and_masks(mm.causal(), mm.sliding_window(4)),
    "window": mm.sliding_window(3),
    "documents": mm.and_masks(mm.causal(), mm.document(torch.tensor([0] * 5 + [1] * 8 + [2] * 4))),
    "padding": mm.padding(torch.tensor([3, 17])),
    "prefix_lm": mm.prefix_lm(5),
    "chunked": mm.chunked(4),
    "dilated": mm.dilated_sliding_window(3, 2),
    "or/not": mm.or_masks(mm.not_mask(mm.causal()), mm.sliding_window(2)),
    "per head": _per_head,
    "per batch": _per_batch,
}


def _inputs(dtype=torch.float64, kv_heads=H_KV, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(N, H, L, E, dtype=dtype, generator=gen)
    k = torch.randn(N, kv_heads, S, E, dtype=dtype, generator=gen)
    v = torch.randn(N, kv_heads, S, EV, dtype=dtype, generator=gen)
    table = torch.randn(H, 7, dtype=dtype, generator=gen)  # M = 3
    return q, k, v, table


def _score_mods(table):
    return {
        "none": None,
        "alibi": alibi(H),
        "softcap": softcap(1.5),
        "relative_bias": relative_bias(table),
        "bias * 2": _doubled_bias(table),
    }


def _doubled_bias(table):  # a score function written by hand, capturing `table`
    def score_mod(score, b, h, q_idx, kv_idx):
        return score + 2 * table[h, (kv_idx - q_idx).clamp(-3, 3) + 3]

    return score_mod


def _values_and_grads(fn, *inputs):
    leaves = [x.detach().clone().requires_grad_() for x in inputs]
    out = fn(*leaves)
    g = torch.randn(out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(1))
    grads = torch.autograd.grad(out, leaves, g, allow_unused=True)
    return out, [
        torch.zeros_like(x) if d is None else d for x, d in zip(leaves, grads, strict=True)
    ]


@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("score", ["none", "alibi", "softcap", "relative_bias", "bias * 2"])
@pytest.mark.parametrize("block_size", [(2, 3), 4, (5, 17), 100])
def test_equals_flex_reference_values_and_gradients(mask, score, block_size):
    q, k, v, table = _inputs()

    def ours(q, k, v, table):
        return chunked_attention(
            q,
            k,
            v,
            block_size=block_size,
            enable_gqa=True,
            mask_mod=MASKS[mask],
            score_mod=_score_mods(table)[score],
        )

    def reference(q, k, v, table):
        mod = _score_mods(table)[score]
        return flex_reference(q, k, v, mask_mod=MASKS[mask], score_mod=mod, enable_gqa=True)

    out, grads = _values_and_grads(ours, q, k, v, table)
    expected, expected_grads = _values_and_grads(reference, q, k, v, table)
    assert_close_scaled(out, expected)
    for name, a, b in zip(["query", "key", "value", "table"], grads, expected_grads, strict=True):
        assert_close_scaled(a, b, what=f"grad of {name}")


def test_float32_and_no_grad():
    q, k, v, table = _inputs(torch.float32, kv_heads=H)
    mods = {"mask_mod": MASKS["causal window"], "score_mod": relative_bias(table)}
    with torch.no_grad():
        out = chunked_attention(q, k, v, block_size=4, **mods)
    assert_close_scaled(out, flex_reference(q, k, v, **mods))


def test_gradients_reach_a_tensor_the_score_function_computes_from_a_parameter():
    q, k, v, _ = _inputs()
    weight = torch.randn(H, 7, dtype=torch.float64, requires_grad=True)
    table = weight.tanh()  # not a leaf: the gradient goes on to `weight`
    grads = {}
    for name, fn in (("ours", chunked_attention), ("reference", flex_reference)):
        kwargs = {"block_size": 4} if name == "ours" else {}
        out = fn(q, k, v, score_mod=relative_bias(table), enable_gqa=True, **kwargs)
        (grads[name],) = torch.autograd.grad(out.square().sum(), [weight], retain_graph=True)
    assert_close_scaled(grads["ours"], grads["reference"])


def _count_tiles(monkeypatch):
    """The number of tiles whose scores are computed, forward and backward together."""
    calls = []
    original = chunked_module._scores
    monkeypatch.setattr(
        chunked_module, "_scores", lambda *args, **kw: calls.append(1) or original(*args, **kw)
    )
    return calls


def test_empty_tiles_are_skipped_in_the_forward_and_the_backward(monkeypatch):
    calls = _count_tiles(monkeypatch)
    q, k, v = (torch.randn(1, 2, 64, 4, requires_grad=True) for _ in range(3))
    window = mm.and_masks(mm.causal(), mm.sliding_window(16))  # 8 × 8 tiles of 8: 3 diagonals
    out = chunked_attention(q, k, v, block_size=8, mask_mod=window)
    plan = plan_tiles(window, 1, 2, 64, 64, block_size=8)
    assert (plan.total, plan.skipped, len(plan.partial)) == (64, 43, 14)  # 8 + 7 + 6 computed
    assert len(calls) == 21
    out.sum().backward()
    assert len(calls) == 2 * 21  # the backward visits the same 21 tiles
    assert plan.skipped / plan.total * 100 == mm.block_sparsity(window, 1, 2, 64, 64, block_size=8)


def test_a_tile_is_skipped_only_if_every_batch_element_and_head_leaves_it_empty():
    plan = plan_tiles(_per_head, N, H, 12, 12, block_size=6)
    assert plan.skipped == 0  # tile (0, 6): empty for heads 0, 1 (causal), not for 2, 3
    assert plan.partial == {(0, 0), (0, 6), (6, 6)}  # (6, 0) is full for every head
    full = plan_tiles(lambda b, h, q, kv: kv >= 0, 1, 1, 12, 12, block_size=(5, 4))
    assert (full.skipped, full.partial, full.total) == (0, frozenset(), 9)


def test_a_plan_is_reused_and_checked(monkeypatch):
    q, k, v, _ = _inputs(kv_heads=H)
    plan = plan_tiles(mm.causal(), N, H, L, S, block_size=(4, 6))
    assert isinstance(plan, TilePlan)
    expected = flex_reference(q, k, v, mask_mod=mm.causal())
    assert_close_scaled(chunked_attention(q, k, v, mask_mod=plan), expected)  # its block size
    with pytest.raises(ValueError, match=r"mask_mod: expected a plan for \(N, H, L, S\)"):
        chunked_attention(q, k, v, mask_mod=plan, block_size=4)
    with pytest.raises(ValueError, match=r"mask_mod: expected a plan for"):
        chunked_attention(q[:, :, :5], k, v, mask_mod=plan)


def test_a_row_the_mask_leaves_empty_gives_zeros_and_finite_gradients():
    q, k, v, _ = _inputs(kv_heads=H)
    q.requires_grad_()
    out = chunked_attention(q, k, v, block_size=4, mask_mod=_per_batch)
    assert torch.equal(out[1], torch.zeros_like(out[1]))
    (grad,) = torch.autograd.grad(out.sum(), [q])
    assert grad.isfinite().all() and torch.equal(grad[1], torch.zeros_like(grad[1]))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"mask_mod": mm.causal(), "q_offset": -1},
            ValueError,
            r"q_offset: expected a position >= 0, got -1",
        ),
        (
            {
                "mask_mod": plan_tiles(mm.causal(), 1, 2, 3, 5, block_size=2),
                "block_size": 2,
                "q_offset": 3,
            },
            ValueError,
            r"mask_mod: expected a plan for \(N, H, L, S\) = \(1, 2, 3, 5\), block_size "
            r"\(2, 2\) and q_offset 3, got one for \(1, 2, 3, 5\), \(2, 2\) and 0",
        ),
        ({"mask_mod": "causal"}, TypeError, r"mask_mod: expected a function, got str"),
        ({"score_mod": 2.0}, TypeError, r"score_mod: expected a function, got float"),
        (
            {"mask_mod": lambda b, h, q, kv: (kv <= q).int()},
            TypeError,
            r"mask_mod: expected a function that returns a bool tensor, got dtype torch.int32",
        ),
        (
            {"mask_mod": lambda b, h, q, kv: torch.ones(3, 1, 1, 1, dtype=torch.bool)},
            ValueError,
            r"mask_mod: expected a result broadcastable to \(N, H, L, S\)",
        ),
        (
            {"score_mod": lambda s, b, h, q, kv: s[..., :1, :1].squeeze(-1)},
            ValueError,
            r"score_mod: expected a result broadcastable to \(N, H, L, S\)",
        ),
        (
            {"mask_mod": mm.causal(), "query": torch.randn(2, 3, 4)},
            ValueError,
            r"query: expected 4 dimensions \(N, H, length, width\), got 3",
        ),
        (
            {"score_mod": relative_bias(torch.zeros(1, 3)), "block_size": 2},
            ValueError,
            r"score_mod: expected a function defined for every index",
        ),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, message):
    args = {"query": torch.randn(1, 2, 3, 4), "key": torch.randn(1, 2, 5, 4)}
    args |= {"value": torch.randn(1, 2, 5, 2), **kwargs}
    with pytest.raises(error, match=message):
        chunked_attention(**args)


@pytest.mark.parametrize("q_offset", [0, 3])
@pytest.mark.parametrize("mask", ["none", "bool", "float"])
@pytest.mark.parametrize("is_causal", [False, True])
def test_a_rule_meets_a_tensor_is_causal_and_an_offset(q_offset, mask, is_causal):
    """mask_mod with attn_mask (both must allow; a float one is added), with is_causal (both
    apply), at q_offset: the rows of the full attention for queries q_offset.. ."""
    gen = torch.Generator().manual_seed(q_offset)
    q, k, v = (torch.randn(2, 3, n, 4, generator=gen, dtype=torch.float64) for n in (5, 8, 8))
    rule = mm.sliding_window(4, sink_tokens=1)
    tensor = {
        "none": None,
        "bool": torch.rand(2, 1, 5, 8, generator=gen) < 0.8,
        "float": torch.randn(2, 1, 5, 8, generator=gen, dtype=torch.float64),
    }[mask]
    if is_causal and tensor is not None:
        return  # is_causal with attn_mask is an error, as in attention_weights
    got = chunked_attention(
        q, k, v, tensor, is_causal, block_size=(2, 3), mask_mod=rule, q_offset=q_offset
    )
    allowed = mm.create_mask(
        mm.and_masks(rule, mm.causal()) if is_causal else rule, 2, 3, 5, 8, q_offset=q_offset
    )
    dense = allowed if tensor is None or tensor.dtype != torch.bool else allowed & tensor
    if tensor is not None and tensor.is_floating_point():
        dense = torch.where(allowed, tensor, float("-inf"))
    torch.testing.assert_close(got, scaled_dot_product_attention(q, k, v, dense))


def _written_out(q, k, v, mask, score_mod, rule, q_offset):
    """softmax(score_mod(scale · q kᵀ) + mask), -inf where the rule says no: plain autograd."""
    (N, H, L, D), S = q.shape, k.size(-2)
    b, h = torch.arange(N).view(-1, 1, 1, 1), torch.arange(H).view(1, -1, 1, 1)
    q_idx, kv_idx = q_offset + torch.arange(L).view(-1, 1), torch.arange(S)
    scores = q @ k.transpose(-2, -1) / D**0.5
    if score_mod is not None:
        scores = score_mod(scores, b, h, q_idx, kv_idx)
    scores = scores + mask  # after score_mod, as in chunked_attention
    if rule is not None:
        allowed = mm.create_mask(rule, N, H, L, S, q_offset=q_offset)
        scores = scores.masked_fill(allowed.logical_not(), float("-inf"))
    return scores.softmax(dim=-1) @ v


@pytest.mark.parametrize("q_offset", [0, 3])
@pytest.mark.parametrize("rule", ["none", "causal", "causal window"])
@pytest.mark.parametrize("score", ["none", "softcap", "relative_bias"])
def test_a_float_mask_with_a_score_function_gets_its_gradient(score, rule, q_offset):
    """score_mod × a float attn_mask that requires grad × a causal rule × q_offset: values and
    the gradients of query, key, value, the (broadcast) mask and the table, against the
    formula written out. The mask is added after score_mod: its gradient is dZ, not dS."""
    gen = torch.Generator().manual_seed(q_offset)
    q, k, v = (torch.randn(2, 3, n, 4, generator=gen, dtype=torch.float64) for n in (5, 8, 8))
    mask = torch.randn(2, 1, 5, 8, generator=gen, dtype=torch.float64)  # broadcast over H
    table = torch.randn(3, 7, generator=gen, dtype=torch.float64)
    rules = {
        "none": None,
        "causal": mm.causal(),
        "causal window": mm.and_masks(mm.causal(), mm.sliding_window(4, sink_tokens=1)),
    }

    def score_mod(table):
        mods = {"none": None, "softcap": softcap(1.5), "relative_bias": relative_bias(table)}
        return mods[score]

    def ours(q, k, v, mask, table):
        mods = {"mask_mod": rules[rule], "score_mod": score_mod(table), "q_offset": q_offset}
        return chunked_attention(q, k, v, mask, block_size=(2, 3), **mods)

    def reference(q, k, v, mask, table):
        return _written_out(q, k, v, mask, score_mod(table), rules[rule], q_offset)

    out, grads = _values_and_grads(ours, q, k, v, mask, table)
    expected, expected_grads = _values_and_grads(reference, q, k, v, mask, table)
    assert_close_scaled(out, expected)
    names = ["query", "key", "value", "attn_mask", "table"]
    for name, a, b in zip(names, grads, expected_grads, strict=True):
        assert_close_scaled(a, b, what=f"grad of {name}")
