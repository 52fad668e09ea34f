"""float16 and bfloat16: every function is as accurate as PyTorch's own kernels.

The measurement is the benchmark's (benchmarks/low_precision.py, the table on the cost page):
inputs and weights rounded to the low-precision dtype, the exact answer in float64 on them,
attention_ref's largest error at most ``BOUND`` times PyTorch's on the same inputs. Here the
same table must hold, row by row; the checks below cover what the table does not show
(attention weights, gradients).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import attention_ref as ar
from benchmarks.low_precision import BOUND, DTYPES, low_precision_errors, max_error

ROWS = {
    "scaled_dot_product_attention",
    "chunked_attention",
    "sliding_window_attention",
    "linear_attention",
    "LayerNorm",
    "RMSNorm",
    "MultiHeadAttention",
    "TransformerEncoderLayer",
}
N, H, L, E = 1, 2, 200, 32


@pytest.fixture(scope="module")
def table():
    return low_precision_errors()["max_abs_error"]


def test_the_table_shows_every_function_in_both_dtypes(table):
    assert set(table) == {"bfloat16", "float16"}
    for rows in table.values():
        assert set(rows) == ROWS


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(ROWS))
def test_as_accurate_as_torch(table, name, dtype):
    row = table[dtype][name]
    assert row["ours"] <= BOUND * row["torch"], row
    assert row["naive"] > row["ours"], row  # computing in float32 is what helps


def _qkv(dtype):
    gen = torch.Generator().manual_seed(0)
    return [(2 * torch.randn(N, H, L, E, generator=gen)).to(dtype) for _ in range(3)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_weights_are_as_accurate_as_torch_softmax(dtype):
    q, k, _ = _qkv(dtype)
    scores = (q.double() @ k.double().transpose(-2, -1)) / E**0.5
    exact = torch.softmax(scores, dim=-1)
    theirs = torch.softmax((q.float() @ k.float().transpose(-2, -1) / E**0.5), -1).to(dtype)
    ours = ar.attention_weights(q, k)
    assert max_error(ours, exact, dtype) <= BOUND * max_error(theirs, exact, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("is_causal", [False, True])
def test_linear_attention_weights_err_no_more_than_rounding(dtype, is_causal):
    q, k, _ = _qkv(dtype)
    weights = ar.linear_attention_weights(q, k, is_causal=is_causal)
    exact = ar.linear_attention_weights(q.double(), k.double(), is_causal=is_causal)
    assert max_error(weights, exact, dtype) <= BOUND * max_error(exact.to(dtype), exact, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_multihead_weights_are_returned_in_the_input_dtype(dtype):
    mha = ar.MultiHeadAttention(16, 2).to(dtype)
    out, weights = mha(torch.randn(1, 5, 16).to(dtype))
    assert out.dtype == weights.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_chunked_gradients_are_as_accurate_as_torch(dtype):
    q, k, v = _qkv(dtype)
    g = torch.randn(N, H, L, E, generator=torch.Generator().manual_seed(1)).to(dtype)

    def gradients(fn, inputs):
        leaves = [x.detach().clone().requires_grad_() for x in inputs]
        torch.autograd.backward(fn(*leaves), g.to(leaves[0].dtype))
        return [x.grad for x in leaves]

    kwargs = {"is_causal": True}
    exact = gradients(
        lambda *a: F.scaled_dot_product_attention(*a, **kwargs),
        [q.double(), k.double(), v.double()],
    )
    theirs = gradients(lambda *a: F.scaled_dot_product_attention(*a, **kwargs), [q, k, v])
    ours = gradients(lambda *a: ar.chunked_attention(*a, **kwargs, block_size=64), [q, k, v])
    for name, a, b, c in zip("qkv", ours, theirs, exact, strict=True):
        assert max_error(a, c, dtype) <= BOUND * max_error(b, c, dtype), f"grad of {name}"
