"""plain_attention, the formula alone, against PyTorch's SDPA: values and gradients."""

import torch
import torch.nn.functional as F
from hypothesis import given

from attention_ref import plain_attention

from ._compare import assert_close_scaled, grads
from .strategies import attention_cases


@given(attention_cases(allow_gqa=False))
def test_matches_torch_sdpa_without_a_mask(case):
    q, k, v = case.query, case.key, case.value
    assert_close_scaled(plain_attention(q, k, v), F.scaled_dot_product_attention(q, k, v))


@given(attention_cases(allow_gqa=False))
def test_gradients_match_torch_sdpa(case):
    inputs = [case.query, case.key, case.value]
    ours = grads(plain_attention, inputs)
    theirs = grads(F.scaled_dot_product_attention, inputs)
    for name, a, b in zip("qkv", ours, theirs, strict=True):
        assert_close_scaled(a, b, what=f"grad of {name}")


def test_gradcheck_float64():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 4, dtype=torch.float64, generator=g) for _ in range(3))
    for x in (q, k, v):
        x.requires_grad_(True)
    assert torch.autograd.gradcheck(plain_attention, (q, k, v))
