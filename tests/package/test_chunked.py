import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from attention_ref import scaled_dot_product_attention
from attention_ref.chunked import DEFAULT_BLOCK_SIZE, chunked_attention

from ._bad_input import BAD_MASKS, assert_names_the_argument
from ._compare import assert_close_scaled, grads
from ._memory import AllocationRecorder
from .strategies import attention_cases

# Sizes up to 9 (the strategies' L and S) against blocks of 1..10: some divide, some do not,
# some are larger than the whole sequence.
block_sizes = st.one_of(st.integers(1, 10), st.tuples(st.integers(1, 10), st.integers(1, 10)))


def _kwargs(case):
    return {"attn_mask": case.attn_mask, "is_causal": case.is_causal, "scale": case.scale}


@given(attention_cases(allow_gqa=False), block_sizes)
def test_output_matches_reference_and_torch(case, block_size):
    kwargs = _kwargs(case)
    ours = chunked_attention(case.query, case.key, case.value, **kwargs, block_size=block_size)
    reference = scaled_dot_product_attention(case.query, case.key, case.value, **kwargs)
    torch_sdpa = F.scaled_dot_product_attention(case.query, case.key, case.value, **kwargs)
    assert_close_scaled(ours, reference, what="vs attention_ref")
    assert_close_scaled(ours, torch_sdpa, what="vs torch")


@given(attention_cases(allow_gqa=False), block_sizes)
def test_gradients_match_reference_and_torch(case, block_size):
    kwargs = _kwargs(case)
    inputs = [case.query, case.key, case.value]
    ours = grads(
        lambda q, k, v: chunked_attention(q, k, v, **kwargs, block_size=block_size), inputs
    )
    reference = grads(lambda q, k, v: scaled_dot_product_attention(q, k, v, **kwargs), inputs)
    torch_sdpa = grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs), inputs)
    for name, a, b, c in zip("qkv", ours, reference, torch_sdpa, strict=True):
        assert_close_scaled(a, b, what=f"grad of {name} vs attention_ref")
        assert_close_scaled(a, c, what=f"grad of {name} vs torch")


@given(attention_cases(allow_gqa=False), block_sizes)
def test_in_place_and_autograd_paths_agree(case, block_size):
    kwargs = _kwargs(case)
    with torch.no_grad():
        fast = chunked_attention(case.query, case.key, case.value, **kwargs, block_size=block_size)
    query = case.query.clone().requires_grad_()
    plain = chunked_attention(query, case.key, case.value, **kwargs, block_size=block_size)
    assert plain.requires_grad
    assert_close_scaled(fast, plain.detach())


def test_gradient_of_a_float_mask_matches_the_reference():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, n, 3, dtype=torch.float64, generator=gen) for n in (5, 7, 7))
    bias = torch.randn(5, 7, dtype=torch.float64, generator=gen)
    bias[1, 2:] = float("-inf")
    ours = grads(lambda b: chunked_attention(q, k, v, attn_mask=b, block_size=(2, 3)), [bias])
    theirs = grads(lambda b: scaled_dot_product_attention(q, k, v, attn_mask=b), [bias])
    assert_close_scaled(ours[0], theirs[0], what="grad of attn_mask")


@pytest.mark.parametrize("block_size", [1, (3, 2), 100])
def test_gradcheck_float64(block_size):
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, n, 3, dtype=torch.float64, generator=gen) for n in (4, 5, 5))
    mask = torch.rand(4, 5, generator=gen) > 0.3
    mask[0] = False  # a fully masked row
    inputs = [t.requires_grad_() for t in (q, k, v)]
    for kwargs in ({"attn_mask": mask}, {"is_causal": True}, {}):
        assert torch.autograd.gradcheck(
            lambda q, k, v, kw=kwargs: chunked_attention(q, k, v, **kw, block_size=block_size),
            inputs,
        )


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("dtype", [torch.bool, torch.float32])
def test_fully_masked_rows_give_zeros_and_finite_gradients(grad, dtype):
    q, k, v = torch.randn(1, 6, 4), torch.randn(1, 9, 4), torch.randn(1, 9, 2)
    keep = torch.rand(6, 9) > 0.5
    keep[[0, 3]] = False
    mask = keep if dtype == torch.bool else torch.zeros(6, 9).masked_fill(~keep, float("-inf"))
    q.requires_grad_(grad)
    out = chunked_attention(q, k, v, attn_mask=mask, block_size=(4, 2))
    assert torch.equal(out[0, [0, 3]].detach(), torch.zeros(2, 2))
    assert not out.isnan().any()
    if grad:
        out.sum().backward()
        assert q.grad.isfinite().all()
        assert torch.equal(q.grad[0, [0, 3]], torch.zeros(2, 4))


def test_longer_than_the_default_blocks():
    b_q, b_k = DEFAULT_BLOCK_SIZE
    L, S = b_q + 37, 2 * b_k + 5  # several tiles and blocks, the last ones partial
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, n, 8, generator=gen) for n in (L, S, S))
    for kwargs in ({}, {"is_causal": True}):
        assert_close_scaled(
            chunked_attention(q, k, v, **kwargs), F.scaled_dot_product_attention(q, k, v, **kwargs)
        )


def test_never_allocates_the_attention_matrix():
    N, H, L, S, E = 2, 2, 64, 64, 4
    q, k, v = (torch.randn(N, H, n, E) for n in (L, S, S))
    masks = [torch.rand(L, S) > 0.3, torch.randn(N, 1, L, S), None]
    for mask in masks:
        for requires_grad in (False, True):
            with AllocationRecorder() as rec:
                query = q.clone().requires_grad_(requires_grad)
                out = chunked_attention(query, k, v, mask, block_size=(8, 16))
                if requires_grad:  # the backward pass too
                    out.sum().backward()
            # One (N·H, 8, 16) block is 2 KiB, the output 4 KiB, one L×S matrix 64 KiB.
            assert rec.largest_bytes <= max(
                N * H * L * E * 4, 0 if mask is None else mask.untyped_storage().nbytes()
            )


def _saved_bytes(fn, n: int) -> int:
    """Bytes of the tensors autograd keeps for the backward pass of ``fn`` at length n."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, n, 8, generator=gen, requires_grad=True) for _ in range(3))
    storages = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(q, k, v)
    return sum(storages.values())


@pytest.mark.parametrize("is_causal", [False, True])
def test_backward_memory_grows_linearly_in_n(is_causal):
    def chunked(q, k, v):
        return chunked_attention(q, k, v, is_causal=is_causal, block_size=32)

    def reference(q, k, v):
        return scaled_dot_product_attention(q, k, v, is_causal=is_causal)

    small, large = 128, 512  # 4 times longer
    assert _saved_bytes(chunked, large) == 4 * _saved_bytes(chunked, small)  # Q, K, V, O, lse
    assert _saved_bytes(reference, large) > 12 * _saved_bytes(reference, small)  # n²: weights


def test_a_second_derivative_is_refused_clearly():
    q, k, v = (torch.randn(1, 4, 3, dtype=torch.float64, requires_grad=True) for _ in range(3))
    out = chunked_attention(q, k, v)
    with pytest.raises(RuntimeError, match=r"chunked_attention: a second derivative"):
        torch.autograd.grad(out.sum(), q, create_graph=True)


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (3, 1, 7), (1, 7), (5, 1)])
def test_gradient_of_a_broadcast_float_mask(shape):
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, n, 4, dtype=torch.float64, generator=gen) for n in (5, 7, 7))
    bias = torch.randn(shape, dtype=torch.float64, generator=gen)
    ours = grads(lambda b: chunked_attention(q, k, v, attn_mask=b, block_size=(2, 3)), [bias])
    theirs = grads(lambda b: F.scaled_dot_product_attention(q, k, v, attn_mask=b), [bias])
    assert_close_scaled(ours[0], theirs[0], what="grad of attn_mask")


def test_causal_skips_the_key_blocks_above_the_diagonal():
    q = k = v = torch.randn(1, 64, 4)
    with AllocationRecorder() as rec:
        chunked_attention(q, k, v, is_causal=True, block_size=16)
    assert rec.calls["baddbmm"] == 4 * 5 // 2  # 10 of the 16 blocks


def test_any_batch_dimensions_broadcast():
    q, k, v = torch.randn(3, 2, 5, 4), torch.randn(2, 7, 4), torch.randn(1, 1, 7, 6)
    mask = torch.rand(3, 1, 5, 7) > 0.4
    assert_close_scaled(
        chunked_attention(q, k, v, attn_mask=mask, block_size=(2, 3)),
        scaled_dot_product_attention(q, k, v, attn_mask=mask),
    )
    unbatched = chunked_attention(q[0, 0], k[0], v[0, 0], block_size=3)
    assert unbatched.shape == (5, 6)


# --- bad input: a clear error naming the argument, raised by attention_ref itself ---


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"block_size": 0}, ValueError, r"block_size: expected a positive size, got 0"),
        ({"block_size": (4, 0)}, ValueError, r"block_size: expected a positive size"),
        ({"block_size": 2.0}, TypeError, r"block_size: expected an int, got float"),
        ({"block_size": (4,)}, TypeError, r"block_size: expected an int or a pair"),
        ({"block_size": True}, TypeError, r"block_size: expected an int, got bool"),
        *BAD_MASKS,
        (
            {"key": torch.randn(1, 3, 5, 4), "value": torch.randn(1, 3, 5, 2)},
            ValueError,
            r"query, key and value: batch dimensions do not broadcast",
        ),
        (
            {"value": torch.randn(1, 2, 6, 2)},
            ValueError,
            r"key and value: expected the same length S",
        ),
        ({"query": torch.ones(1, 2, 3, 4, dtype=torch.int64)}, TypeError, r"query: expected a"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, message):
    assert_names_the_argument(chunked_attention, kwargs, error, message)
