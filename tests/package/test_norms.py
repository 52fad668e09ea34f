import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from attention_ref import LayerNorm, RMSNorm

from ._compare import assert_close_scaled

shapes = st.lists(st.integers(1, 5), min_size=0, max_size=3)
# Normalizing over one element is degenerate (variance 0): use at least two per dimension.
normalized = st.lists(st.integers(2, 6), min_size=1, max_size=2)


def _pair(ours_cls, theirs_cls, normalized_shape, dtype, **kwargs):
    theirs = theirs_cls(normalized_shape, dtype=dtype, **kwargs)
    with torch.no_grad():
        for p in theirs.parameters():
            p.normal_()
    ours = ours_cls(normalized_shape, dtype=dtype, **kwargs)
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


def _check(ours, theirs, x, inverse_std):
    """Values, then gradients; d(output)/dx is as large as 1/std, which sets their scale.

    The output's rounding error is that of x - mean (about ulp(|x|)) times 1/std: a row whose
    elements nearly agree (a tiny variance) is ill-conditioned, so its output is compared at
    that scale (the condition number), not at 1, and its gradients at 1/std times it.
    """
    x = x.requires_grad_()
    out, ref = ours(x), theirs(x)
    condition = max(1.0, (inverse_std.max() * x.abs().max()).item())
    assert_close_scaled(out, ref, scale=condition)
    g = torch.randn_like(ref)
    ours_grads = torch.autograd.grad((out * g).sum(), [x, *ours.parameters()])
    theirs_grads = torch.autograd.grad((ref * g).sum(), [x, *theirs.parameters()])
    jacobian_scale = (inverse_std.max() * g.abs().max()).item() * condition
    for a, b in zip(ours_grads, theirs_grads, strict=True):
        assert_close_scaled(a, b, what="grad", scale=jacobian_scale)


@given(
    batch=shapes,
    shape=normalized,
    affine=st.booleans(),
    bias=st.booleans(),
    eps=st.sampled_from([1e-5, 1e-6, 0.1]),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=st.integers(0, 2**16),
)
def test_layer_norm_matches_torch(batch, shape, affine, bias, eps, dtype, seed):
    torch.manual_seed(seed)
    shape = tuple(shape)
    kwargs = {"eps": eps, "elementwise_affine": affine, "bias": bias}
    ours, theirs = _pair(LayerNorm, nn.LayerNorm, shape, dtype, **kwargs)
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    x = torch.randn(*batch, *shape, dtype=dtype) * 3 + 1
    dims = tuple(range(-len(shape), 0))
    _check(ours, theirs, x, (x.var(dims, unbiased=False) + eps).rsqrt())


@given(
    batch=shapes,
    width=st.integers(2, 8),
    affine=st.booleans(),
    eps=st.sampled_from([None, 1e-6]),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=st.integers(0, 2**16),
)
def test_rms_norm_matches_torch(batch, width, affine, eps, dtype, seed):
    torch.manual_seed(seed)
    ours, theirs = _pair(RMSNorm, nn.RMSNorm, width, dtype, eps=eps, elementwise_affine=affine)
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    x = torch.randn(*batch, width, dtype=dtype)
    _check(ours, theirs, x, (x.pow(2).mean(-1) + (eps or torch.finfo(dtype).eps)).rsqrt())


@pytest.mark.parametrize(
    ("ours_cls", "theirs_cls"), [(LayerNorm, nn.LayerNorm), (RMSNorm, nn.RMSNorm)]
)
def test_state_dict_loads_into_torch_and_back(ours_cls, theirs_cls):
    """The same keys and shapes both ways, and the values arrive: equal weights, equal outputs."""
    x = torch.randn(3, 4, 6, dtype=torch.float64)
    ours = ours_cls(6, dtype=torch.float64)
    with torch.no_grad():
        for p in ours.parameters():
            p.normal_()  # not the initial ones and zeros, which any fresh module already has
    theirs = theirs_cls(6, dtype=torch.float64)
    theirs.load_state_dict(ours.state_dict())
    back = ours_cls(6, dtype=torch.float64)
    back.load_state_dict(theirs.state_dict())
    for state in (theirs.state_dict(), back.state_dict()):
        assert state.keys() == ours.state_dict().keys()
        for name, value in ours.state_dict().items():
            assert torch.equal(state[name], value), name
    torch.testing.assert_close(theirs(x), ours(x))
    assert torch.equal(back(x), ours(x))


def test_gradcheck_float64():
    x = torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True)
    layer = LayerNorm(5, dtype=torch.float64)
    rms = RMSNorm(5, dtype=torch.float64)
    with torch.no_grad():
        for p in [*layer.parameters(), *rms.parameters()]:
            p.normal_()
    assert torch.autograd.gradcheck(layer, (x,))
    assert torch.autograd.gradcheck(rms, (x,))


def test_unbiased_variance_would_not_match():
    """The common bug: torch.var's default is unbiased (divide by n - 1)."""
    x = torch.randn(4, 8, dtype=torch.float64)
    wrong = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + 1e-5)
    assert not torch.allclose(wrong, nn.LayerNorm(8, dtype=torch.float64)(x))
    assert torch.allclose(
        LayerNorm(8, dtype=torch.float64)(x), nn.LayerNorm(8, dtype=torch.float64)(x)
    )


def test_normalizes_each_token_over_its_features():
    y = LayerNorm(16, elementwise_affine=False)(torch.randn(3, 7, 16) * 5 + 2)
    torch.testing.assert_close(y.mean(-1), torch.zeros(3, 7), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.var(-1, unbiased=False), torch.ones(3, 7), atol=1e-3, rtol=0)


@pytest.mark.parametrize("cls", [LayerNorm, RMSNorm])
def test_shape_mismatch_is_a_clear_error(cls):
    with pytest.raises(
        ValueError,
        match=r"x: expected the last dimensions to be normalized_shape \(4,\), got shape \(2, 5\)",
    ):
        cls(4)(torch.randn(2, 5))
    with pytest.raises(TypeError, match="x: expected a floating-point tensor, got torch.int64"):
        cls(4)(torch.ones(2, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="normalized_shape: expected a positive size, got 0"):
        cls(0)
