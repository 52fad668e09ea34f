import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attention_ref import softmax

from ._compare import assert_close_scaled


@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    dim=st.integers(-1, 0),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    spread=st.sampled_from([1.0, 30.0, 1e4]),
    seed=st.integers(0, 2**16),
)
def test_matches_torch_softmax(shape, dim, dtype, spread, seed):
    x = torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed)) * spread
    assert_close_scaled(softmax(x, dim), torch.softmax(x, dim))


def test_large_inputs_do_not_overflow():
    x = torch.tensor([1000.0, 1001.0, 1002.0])
    assert torch.isfinite(softmax(x)).all()
    torch.testing.assert_close(softmax(x), torch.softmax(x, -1))


def test_gradient_matches_torch():
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(softmax, (x,))
    g = torch.randn(3, 5, dtype=torch.float64)
    (ours,) = torch.autograd.grad(softmax(x), x, g)
    (theirs,) = torch.autograd.grad(torch.softmax(x, -1), x, g)
    assert_close_scaled(ours, theirs, what="grad")


def test_all_minus_inf_row_is_nan_like_torch():
    x = torch.full((3,), float("-inf"))
    assert softmax(x).isnan().all() and torch.softmax(x, -1).isnan().all()


@pytest.mark.parametrize("bad", [torch.arange(3), [1.0, 2.0]])
def test_rejects_non_float(bad):
    with pytest.raises(TypeError, match="x: expected a floating-point tensor"):
        softmax(bad)
