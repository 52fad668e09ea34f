"""Linear attention (Katharopoulos et al. 2020): a positive feature map instead of softmax.

Softmax attention weighs key ``j`` for query ``i`` by ``exp(q_i · k_j)``. Linear attention
uses ``φ(q_i) · φ(k_j)`` with ``φ(x) = elu(x) + 1 > 0``, so the sum over keys factors:

    O_i = φ(q_i) (Σ_j φ(k_j)^T v_j) / (φ(q_i) · Σ_j φ(k_j))

The sums are computed once (non-causal) or as running prefix sums (causal): O((L + S)·D·Dv) time
and O(D·Dv) state, linear in the sequence length. It is a *different* model, not an
approximation that converges to softmax attention: its output differs from softmax
attention's, and [`linear_attention_weights`][attention_ref.linear_attention_weights] shows by
how much.

Shape legend (batch-first, as ``torch.nn.functional.scaled_dot_product_attention``):
    N: batch size (any number of leading batch dimensions ``...`` is allowed)
    H: number of heads (just another batch dimension here)
    L: query length          S: key/value length
    D: query/key width (d_k) Dv: value width (d_v)
    C: the causal chunk size (``chunk_size``)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ._checks import check_positive_int, check_qkv
from ._precision import upcast
from .heads import batch_shape

__all__ = ["elu_feature_map", "linear_attention", "linear_attention_weights"]


def elu_feature_map(x: Tensor) -> Tensor:
    """φ(x) = elu(x) + 1: positive everywhere, ≈ x + 1 for x > 0 and ≈ e^x for x < 0.

    Examples:
        >>> import torch
        >>> from attention_ref.linear import elu_feature_map
        >>> elu_feature_map(torch.tensor([-2.0, 0.0, 3.0]))
        tensor([0.1353, 1.0000, 4.0000])
    """
    return F.elu(x) + 1


def linear_attention_weights(
    query: Tensor, key: Tensor, is_causal: bool = False, eps: float = 1e-6
) -> Tensor:
    r"""The (L, S) matrix that linear attention applies to ``value``, built explicitly.

    $$A_{ij} = \frac{\varphi(q_i) \cdot \varphi(k_j)}{\sum_{j'} \varphi(q_i) \cdot
      \varphi(k_{j'}) + \epsilon}$$

    Quadratic in L and S, like [`attention_weights`][attention_ref.attention_weights], for
    inspecting and testing; [`linear_attention`][attention_ref.linear_attention] never builds it.
    ``linear_attention(q, k, v)`` equals ``linear_attention_weights(q, k) @ v`` up to rounding.

    Args:
        query: ``(..., L, D)``.
        key: ``(..., S, D)``.
        is_causal: Query ``i`` sees keys ``0..i`` (top-left, as PyTorch's ``is_causal``).
        eps: Added to each row's normalizer $s_i = \sum_j \varphi(q_i) \cdot \varphi(k_j)$.

    Returns:
        ``(..., L, S)``: non-negative rows that sum to $s_i / (s_i + \epsilon)$, just under 1.

    Raises:
        ValueError: On mismatched shapes.
        TypeError: On non-floating inputs or mixed dtypes.

    Examples:
        >>> import torch
        >>> from attention_ref import linear_attention_weights
        >>> from attention_ref import attention_weights
        >>> q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> k = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> linear_attention_weights(q, k)  # flatter than softmax's
        tensor([[0.3333, 0.2667, 0.4000],
                [0.2667, 0.3333, 0.4000]])
        >>> attention_weights(q, k)
        tensor([[0.4011, 0.1978, 0.4011],
                [0.1978, 0.4011, 0.4011]])
    """
    check_qkv(query, key)
    dtype, query, key = query.dtype, upcast(query), upcast(key)  # float16/bfloat16: float32
    similarity = elu_feature_map(query) @ elu_feature_map(key).transpose(-2, -1)  # (..., L, S)
    if is_causal:
        L, S = similarity.shape[-2:]
        keep = torch.ones(L, S, dtype=torch.bool, device=similarity.device).tril()
        similarity = similarity.masked_fill(~keep, 0.0)
    return (similarity / (similarity.sum(dim=-1, keepdim=True) + eps)).to(dtype)


def linear_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    is_causal: bool = False,
    eps: float = 1e-6,
    chunk_size: int = 64,
) -> Tensor:
    r"""Linear attention with the feature map φ(x) = elu(x) + 1: O((L + S)·D·Dv), not O(L·S·D).

    $$O_i = \frac{\varphi(q_i)^\top \sum_j \varphi(k_j) v_j^\top}
      {\varphi(q_i)^\top \sum_j \varphi(k_j) + \epsilon}
      \qquad (j \le i \text{ when causal})$$

    Non-causal: the key/value summary ``φ(K)^T V`` (D × Dv) is computed once. Causal: the
    queries are taken ``chunk_size`` at a time; each chunk reads the summary of all earlier
    keys, adds its own keys with a small C × C triangle (C = ``chunk_size``), then folds them
    into the summary.

    There is no softmax and no ``scale``: the output is **not** softmax attention's (see
    [`linear_attention_weights`][attention_ref.linear_attention_weights] and the example below).

    Args:
        query: ``(..., L, D)``.
        key: ``(..., S, D)``; batch dimensions broadcast against ``query``'s.
        value: ``(..., S, Dv)``.
        is_causal: Query ``i`` sees keys ``0..i`` (top-left, as PyTorch's ``is_causal``).
        eps: Added to the normalizer (as in the authors' code).
        chunk_size: Queries per chunk when causal; any size gives the same result, up to
            rounding.

    Returns:
        ``(..., L, Dv)``; float16 and bfloat16 inputs are computed in float32 and returned in
        their dtype.

    Raises:
        ValueError: On mismatched shapes or a chunk size below 1.
        TypeError: On non-floating inputs, mixed dtypes or a non-int chunk size.

    Examples:
        >>> import torch
        >>> from attention_ref import linear_attention, linear_attention_weights
        >>> from attention_ref import scaled_dot_product_attention
        >>> gen = torch.Generator().manual_seed(0)
        >>> q, k, v = (torch.randn(2, 6, 4, generator=gen) for _ in range(3))
        >>> out = linear_attention(q, k, v, is_causal=True, chunk_size=4)
        >>> torch.allclose(out, linear_attention_weights(q, k, is_causal=True) @ v)
        True
        >>> exact = scaled_dot_product_attention(q, k, v, is_causal=True)
        >>> (out - exact).abs().max()  # a different model: not close to softmax attention
        tensor(0.8887)
    """
    check_qkv(query, key, value)
    chunk_size = check_positive_int("chunk_size", chunk_size)
    batch = batch_shape(query, key, value)
    dtype = query.dtype  # float16/bfloat16: sums in float32, returned in the input dtype
    query, key, value = upcast(query), upcast(key), upcast(value)
    phi_q, phi_k = elu_feature_map(query), elu_feature_map(key)  # (..., L, D), (..., S, D)
    if not is_causal:
        kv = phi_k.transpose(-2, -1) @ value  # (..., D, Dv): Σ_j φ(k_j) v_j^T
        z = phi_k.sum(dim=-2, keepdim=True)  # (..., 1, D): Σ_j φ(k_j)
        normalizer = (phi_q * z).sum(dim=-1, keepdim=True)  # (..., L, 1)
        return ((phi_q @ kv) / (normalizer + eps)).to(dtype)  # (..., L, Dv)

    L, S, D, Dv = query.size(-2), key.size(-2), query.size(-1), value.size(-1)
    kv = phi_q.new_zeros(*batch, D, Dv)  # summary of the keys before the chunk
    z = phi_q.new_zeros(*batch, 1, D)
    chunks = []
    for i in range(0, L, chunk_size):
        stop = min(i + chunk_size, L)
        q_c = phi_q[..., i:stop, :]  # (..., C, D)
        k_c, v_c = phi_k[..., min(i, S) : min(stop, S), :], value[..., min(i, S) : min(stop, S), :]
        rows = torch.arange(i, stop, device=query.device)[:, None]  # (C, 1)
        cols = torch.arange(min(i, S), min(stop, S), device=query.device)[None, :]  # (1, C)
        within = (q_c @ k_c.transpose(-2, -1)).masked_fill(cols > rows, 0.0)  # (..., C, C)
        numerator = q_c @ kv + within @ v_c  # (..., C, Dv)
        normalizer = (q_c * z).sum(dim=-1, keepdim=True) + within.sum(dim=-1, keepdim=True)
        chunks.append(numerator / (normalizer + eps))
        kv = kv + k_c.transpose(-2, -1) @ v_c  # (..., D, Dv): now includes this chunk
        z = z + k_c.sum(dim=-2, keepdim=True)
    if not chunks:
        return phi_q.new_zeros(*batch, 0, Dv, dtype=dtype)
    out = torch.cat([c.expand(*batch, *c.shape[-2:]) for c in chunks], dim=-2)  # (..., L, Dv)
    return out.to(dtype)
