import functools

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from attention_ref import scaled_dot_product_attention
from attention_ref.linear import elu_feature_map, linear_attention, linear_attention_weights

from ._bad_input import assert_names_the_argument
from ._compare import assert_close_scaled, gradcheck_causal_or_not, grads
from ._memory import AllocationRecorder


@st.composite
def linear_cases(draw):
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    batch = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    k_batch = batch[draw(st.integers(0, len(batch))) :]  # key/value may broadcast
    L, S = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    E, Ev = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
    q = torch.randn(*batch, L, E, dtype=dtype, generator=gen)
    k = torch.randn(*k_batch, S, E, dtype=dtype, generator=gen)
    v = torch.randn(*k_batch, S, Ev, dtype=dtype, generator=gen)
    return q, k, v, draw(st.booleans()), draw(st.integers(1, 8))


@given(linear_cases())
def test_linear_time_form_equals_the_explicit_weights(case):
    q, k, v, is_causal, chunk = case
    ours = linear_attention(q, k, v, is_causal=is_causal, chunk_size=chunk)
    assert_close_scaled(ours, linear_attention_weights(q, k, is_causal=is_causal) @ v)


@given(linear_cases())
def test_gradients_equal_the_explicit_form(case):
    q, k, v, is_causal, chunk = case
    ours = grads(lambda *t: linear_attention(*t, is_causal=is_causal, chunk_size=chunk), [q, k, v])
    quadratic = grads(lambda q, k, v: linear_attention_weights(q, k, is_causal) @ v, [q, k, v])
    for name, a, b in zip("qkv", ours, quadratic, strict=True):
        assert_close_scaled(a, b, what=f"grad of {name}")


def test_gradcheck_float64():
    gradcheck_causal_or_not(functools.partial(linear_attention, chunk_size=3), L=7, S=5)


def test_feature_map_is_elu_plus_one_and_positive():
    x = torch.linspace(-30, 30, 101, dtype=torch.float64)
    assert torch.equal(elu_feature_map(x), F.elu(x) + 1)
    assert (elu_feature_map(x) > 0).all()


def test_weights_are_a_distribution_up_to_eps():
    w = linear_attention_weights(torch.randn(2, 6, 4), torch.randn(2, 9, 4), is_causal=True)
    assert (w >= 0).all()
    assert torch.allclose(w.sum(-1), torch.ones(2, 6), atol=1e-5)
    assert (w.triu(1) == 0).all()


def test_differs_from_softmax_attention_except_when_keys_are_equal():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 4, 32, 16, generator=gen, dtype=torch.float64) for _ in range(3))
    difference = (linear_attention(q, k, v) - scaled_dot_product_attention(q, k, v)).abs()
    assert difference.max() > 0.1  # a different model, and the page says so
    # With identical keys both weigh every value equally: the same mean of the values.
    same_keys = k[:, :, :1].expand_as(k)
    assert_close_scaled(
        linear_attention(q, same_keys, v, eps=0.0),
        scaled_dot_product_attention(q, same_keys, v),
    )


def test_causal_never_builds_the_attention_matrix():
    L, E = 512, 4
    q = k = v = torch.randn(1, L, E)
    with AllocationRecorder() as rec:
        linear_attention(q, k, v, is_causal=True, chunk_size=16)
    assert rec.largest_bytes <= L * E * 4  # the output; one L×L matrix would be 1 MiB


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"chunk_size": 0}, ValueError, r"chunk_size: expected a positive int, got 0"),
        ({"chunk_size": None}, TypeError, r"chunk_size: expected an int, got NoneType"),
        ({"key": torch.randn(2, 5, 3)}, ValueError, r"query and key: expected the same last"),
        ({"value": torch.randn(2, 6, 2)}, ValueError, r"key and value: expected the same length"),
        (
            {"key": torch.randn(3, 5, 4), "value": torch.randn(3, 5, 2)},
            ValueError,
            r"batch dimensions do not broadcast",
        ),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, message):
    assert_names_the_argument(linear_attention, kwargs, error, message, batch=(2,))
