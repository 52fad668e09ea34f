import pytest
import torch
import torch.nn.functional as F
from hypothesis import given

from attention_ref import attention_weights, scaled_dot_product_attention

from ._bad_input import BAD_MASKS, assert_names_the_argument
from ._compare import assert_close_scaled, grads
from .strategies import attention_cases


@given(attention_cases())
def test_output_matches_torch_sdpa(case):
    ours = scaled_dot_product_attention(case.query, case.key, case.value, **case.kwargs)
    theirs = F.scaled_dot_product_attention(case.query, case.key, case.value, **case.kwargs)
    assert_close_scaled(ours, theirs)


@given(attention_cases())
def test_gradients_match_torch_sdpa(case):
    inputs = [case.query, case.key, case.value]
    ours = grads(lambda q, k, v: scaled_dot_product_attention(q, k, v, **case.kwargs), inputs)
    theirs = grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **case.kwargs), inputs)
    for name, a, b in zip("qkv", ours, theirs, strict=True):
        assert_close_scaled(a, b, what=f"grad of {name}")


@given(attention_cases(allow_gqa=False))
def test_weights_rows_sum_to_one_or_zero(case):
    w = attention_weights(case.query, case.key, **case.kwargs)
    sums = w.sum(-1)
    ones, zeros = (sums - 1).abs() < 1e-5, sums.abs() < 1e-12
    assert (ones | zeros).all()
    assert (w >= 0).all()


@given(attention_cases(allow_gqa=False))
def test_weights_times_value_is_the_output(case):
    w = attention_weights(case.query, case.key, **case.kwargs)
    out = scaled_dot_product_attention(case.query, case.key, case.value, **case.kwargs)
    assert_close_scaled(w @ case.value, out)


def test_fully_masked_row_gives_zeros_not_nan():
    q, k, v = torch.randn(1, 3, 4), torch.randn(1, 5, 4), torch.randn(1, 5, 2)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    out = scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(out[0, 1], torch.zeros(2))
    assert torch.equal(F.scaled_dot_product_attention(q, k, v, mask)[0, 1], torch.zeros(2))
    assert not out.isnan().any()


def test_gradcheck_float64():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, n, 3, dtype=torch.float64, generator=gen) for n in (4, 5, 5))
    mask = torch.rand(4, 5, generator=gen) > 0.3
    mask[0] = False
    inputs = [t.requires_grad_() for t in (q, k, v)]
    assert torch.autograd.gradcheck(
        lambda q, k, v: scaled_dot_product_attention(q, k, v, mask), inputs
    )
    assert torch.autograd.gradcheck(
        lambda q, k, v: scaled_dot_product_attention(q, k, v, is_causal=True), inputs
    )


def test_dropout_matches_torch_with_the_same_seed():
    q, k, v = (torch.randn(2, 3, 6, 4, dtype=torch.float64) for _ in range(3))
    torch.manual_seed(1)
    ours = scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    torch.manual_seed(1)
    theirs = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    assert_close_scaled(ours, theirs)
    assert not torch.allclose(ours, scaled_dot_product_attention(q, k, v))


def test_default_scale_is_one_over_sqrt_of_query_width():
    q, k, v = torch.randn(1, 4, 16), torch.randn(1, 6, 16), torch.randn(1, 6, 3)
    assert_close_scaled(
        scaled_dot_product_attention(q, k, v), scaled_dot_product_attention(q, k, v, scale=0.25)
    )


def test_causal_with_fewer_queries_is_top_left_like_torch():
    w = attention_weights(torch.randn(2, 4), torch.randn(5, 4), is_causal=True)
    assert (w[0, 1:] == 0).all() and (w[1, 2:] == 0).all()


# --- bad input: a clear error naming the argument, raised by attention_ref itself ---


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"query": torch.randn(4)},
            ValueError,
            r"query: expected at least 2 dimensions, got shape \(4,\)",
        ),
        (
            {"key": torch.randn(1, 2, 5, 3)},
            ValueError,
            r"query and key: expected the same last dimension D.*\(1, 2, 3, 4\).*\(1, 2, 5, 3\)",
        ),
        (
            {"value": torch.randn(1, 2, 6, 2)},
            ValueError,
            r"key and value: expected the same length S.*\(1, 2, 5, 4\).*\(1, 2, 6, 2\)",
        ),
        *BAD_MASKS,
        ({"dropout_p": 1.0}, ValueError, r"dropout_p: expected a probability in \[0, 1\), got 1.0"),
        ({"dropout_p": -0.1}, ValueError, r"dropout_p"),
        (
            {"key": torch.randn(1, 3, 5, 4), "value": torch.randn(1, 3, 5, 2), "enable_gqa": True},
            ValueError,
            r"enable_gqa: the 3 heads of key must divide the 2 heads of query",
        ),
        (
            {"key": torch.randn(1, 3, 5, 4), "value": torch.randn(1, 3, 5, 2)},
            ValueError,
            r"query and key: batch dimensions do not broadcast",
        ),
        (
            {"query": torch.ones(1, 2, 3, 4, dtype=torch.int64)},
            TypeError,
            r"query: expected a floating-point tensor, got dtype torch.int64",
        ),
        (
            {"key": torch.randn(1, 2, 5, 4, dtype=torch.float64)},
            TypeError,
            r"query and key: expected the same dtype",
        ),
        ({"value": [[1.0]]}, TypeError, r"value: expected a torch.Tensor, got list"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, message):
    assert_names_the_argument(scaled_dot_product_attention, kwargs, error, message)
