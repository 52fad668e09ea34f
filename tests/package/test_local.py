import functools

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from attention_ref import scaled_dot_product_attention, sliding_window_mask
from attention_ref.local import sliding_window_attention

from ._bad_input import assert_names_the_argument
from ._compare import assert_close_scaled, gradcheck_causal_or_not, grads
from ._memory import AllocationRecorder


@st.composite
def local_cases(draw):
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    batch = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    L, S = draw(st.integers(1, 20)), draw(st.integers(1, 20))
    E, Ev = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
    q, k, v = (
        torch.randn(*batch, n, e, dtype=dtype, generator=gen) for n, e in ((L, E), (S, E), (S, Ev))
    )
    kwargs = {
        "window": draw(st.integers(1, 8)),
        "is_causal": draw(st.booleans()),
        "scale": draw(st.sampled_from([None, 0.5])),
    }
    return q, k, v, kwargs, draw(st.integers(1, 9))


def _band(q, k, window, is_causal):
    return sliding_window_mask(q.size(-2), window, k.size(-2), causal=is_causal)


@given(local_cases())
def test_output_is_sdpa_with_the_sliding_window_mask(case):
    q, k, v, kw, block_size = case
    mask = _band(q, k, kw["window"], kw["is_causal"])
    ours = sliding_window_attention(q, k, v, **kw, block_size=block_size)
    assert_close_scaled(ours, F.scaled_dot_product_attention(q, k, v, mask, scale=kw["scale"]))
    assert_close_scaled(ours, scaled_dot_product_attention(q, k, v, mask, scale=kw["scale"]))


@given(local_cases())
def test_gradients_match_torch_with_the_mask(case):
    q, k, v, kw, block_size = case
    mask = _band(q, k, kw["window"], kw["is_causal"])
    ours = grads(lambda *t: sliding_window_attention(*t, **kw, block_size=block_size), [q, k, v])
    theirs = grads(
        lambda *t: F.scaled_dot_product_attention(*t, mask, scale=kw["scale"]), [q, k, v]
    )
    for name, a, b in zip("qkv", ours, theirs, strict=True):
        assert_close_scaled(a, b, what=f"grad of {name}")


def test_gradcheck_float64():
    attention = functools.partial(sliding_window_attention, window=2, block_size=4)
    gradcheck_causal_or_not(attention, L=9, S=7)


def test_a_window_as_long_as_the_sequence_is_full_attention():
    q, k, v = torch.randn(3, 12, 4), torch.randn(3, 12, 4), torch.randn(3, 12, 5)
    for is_causal in (False, True):
        assert_close_scaled(
            sliding_window_attention(q, k, v, window=12, is_causal=is_causal, block_size=5),
            F.scaled_dot_product_attention(q, k, v, is_causal=is_causal),
        )


def test_cost_grows_with_the_window_not_the_length():
    L, E, w, b = 512, 4, 4, 8
    q = k = v = torch.randn(1, L, E)
    with AllocationRecorder() as rec:
        sliding_window_attention(q, k, v, window=w, block_size=b)
    # A tile's scores: b × (b + 2w - 2) floats, far below one L×L matrix (1 MiB here).
    assert rec.largest_bytes <= L * E * 4
    assert rec.calls["bmm"] + rec.calls["matmul"] <= 2 * L // b


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"window": 0}, ValueError, r"window: expected a positive int, got 0"),
        ({"window": 2.0}, TypeError, r"window: expected an int, got float"),
        ({"window": 2, "block_size": 0}, ValueError, r"block_size: expected a positive int"),
        ({"window": 2, "key": torch.randn(2, 5, 3)}, ValueError, r"query and key: expected"),
        (
            {"window": 2, "key": torch.randn(3, 5, 4), "value": torch.randn(3, 5, 2)},
            ValueError,
            r"batch dimensions do not broadcast",
        ),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, message):
    assert_names_the_argument(sliding_window_attention, kwargs, error, message, batch=(2,))
