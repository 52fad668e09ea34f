"""Positions: what tells attention where each token sits.

Attention itself ignores order: permute the keys and values and the output does not change.
Three ways of giving it positions, each a function here:

- ``sinusoidal_positions``: the fixed table of Vaswani et al. (section 3.5), added to the
  token embeddings before the first layer;
- ``apply_rope``: rotary position embedding (RoPE, Su et al.), which rotates each pair of
  query and key features by an angle proportional to the position, so that their dot
  product depends on the two positions only through their offset (the query's position minus
  the key's, with its sign);
- ``alibi_bias``: ALiBi (Press et al.), a penalty proportional to the distance, added to the
  scores of each head.

Learned positions are an ``nn.Embedding`` with one row per position and need no code here.

Shape legend (batch-first): N batch, H heads, L query length, S key length, D one head's
width (the features RoPE rotates).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._checks import broadcasts_to, check_positive_int, check_tensor

__all__ = ["alibi_bias", "apply_rope", "sinusoidal_positions"]


def _check_base(base: float) -> float:
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(f"base: expected a number, got {type(base).__name__}")
    if not base > 0:
        raise ValueError(f"base: expected a positive number, got {base}")
    return float(base)


def _check_even(name: str, value: int, what: str) -> None:
    if value % 2 != 0:
        raise ValueError(f"{name}: expected an even {what}, got {value}")


def sinusoidal_positions(
    length: int,
    dim: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> Tensor:
    r"""The sinusoidal position table of Vaswani et al. (section 3.5).

    $$P_{p,\,2i} = \sin\!\left(p / \mathrm{base}^{2i/d}\right),\qquad
      P_{p,\,2i+1} = \cos\!\left(p / \mathrm{base}^{2i/d}\right)$$

    Row ``p`` is added to the embedding of the token at position ``p``. Computed in float64,
    then cast to ``dtype``.

    Args:
        length: The number of positions, 0 to ``length - 1``.
        dim: d, the embedding width; must be even.
        base: The base of the wavelengths (10000 in the paper).
        dtype: The result's dtype; defaults to ``torch.get_default_dtype()``.
        device: Where to create the table.

    Returns:
        ``(length, dim)``.

    Raises:
        TypeError: If ``length`` or ``dim`` is not an int, or ``base`` is not a number.
        ValueError: If ``length`` or ``dim`` is not positive, ``dim`` is odd or ``base`` is
            not positive.

    Examples:
        >>> from attention_ref import sinusoidal_positions
        >>> P = sinusoidal_positions(3, 4)
        >>> P  # columns: sin and cos of p, then of p / 100
        tensor([[ 0.0000,  1.0000,  0.0000,  1.0000],
                [ 0.8415,  0.5403,  0.0100,  0.9999],
                [ 0.9093, -0.4161,  0.0200,  0.9998]])
    """
    length = check_positive_int("length", length, "length")
    dim = check_positive_int("dim", dim, "width")
    _check_even("dim", dim, "width")
    base = _check_base(base)
    p = torch.arange(length, dtype=torch.float64, device=device)[:, None]  # (length, 1)
    two_i = torch.arange(0, dim, 2, dtype=torch.float64, device=device)  # (dim / 2,)
    angle = p / base ** (two_i / dim)  # (length, dim / 2)
    table = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(-2)  # (length, dim)
    return table.to(torch.get_default_dtype() if dtype is None else dtype)


def _check_positions(positions: object, x: Tensor) -> Tensor:
    """``positions`` as a tensor that broadcasts to ``x.shape[:-1]`` = (..., L)."""
    if not isinstance(positions, Tensor):
        raise TypeError(f"positions: expected a torch.Tensor, got {type(positions).__name__}")
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(f"positions: expected an integer or float dtype, got {positions.dtype}")
    target = x.shape[:-1]  # (..., L)
    same_length = positions.dim() > 0 and positions.size(-1) == x.size(-2)
    if not same_length or not broadcasts_to(positions.shape, target):
        raise ValueError(
            f"positions: expected a length of L={x.size(-2)}, (L,) or a shape broadcastable "
            f"to {tuple(target)}, got {tuple(positions.shape)}"
        )
    return positions


def apply_rope(
    x: Tensor,
    positions: Tensor | None = None,
    *,
    base: float = 10000.0,
    interleaved: bool = False,
) -> Tensor:
    r"""Rotary position embedding (RoPE): rotate each feature pair by its position's angle.

    $$\begin{pmatrix} y_a \\ y_b \end{pmatrix} =
      \begin{pmatrix} \cos p\theta_i & -\sin p\theta_i \\ \sin p\theta_i & \cos p\theta_i
      \end{pmatrix} \begin{pmatrix} x_a \\ x_b \end{pmatrix},\qquad
      \theta_i = \mathrm{base}^{-2i/D}$$

    for each of the ``D / 2`` feature pairs $(a, b) = (i, i + D/2)$, or $(2i, 2i + 1)$ with
    ``interleaved=True``, with $p$ the row's position. Applied to queries and keys, the score
    $q_m \cdot k_n$ depends on their positions through $m - n$ only.

    Args:
        x: ``(..., L, D)``, floating, with an even ``D``: queries or keys, one head per slice.
        positions: The position of each of the ``L`` rows, ``(L,)`` or broadcastable to
            ``(..., L)``, integer or float; defaults to ``arange(L)``. For ``x``
            ``(N, H, L, D)`` pass per-sequence positions as ``(N, 1, L)``: an ``(N, L)``
            tensor would be matched to the heads.
        base: The base of the angles (10000 in RoFormer and Llama 2).
        interleaved: Pair features ``2i`` and ``2i + 1`` (RoFormer, GPT-J) instead of ``i``
            and ``i + D/2`` (Hugging Face's Llama ``rotate_half``, GPT-NeoX; the default).

    Returns:
        ``(..., L, D)``, the dtype of ``x``. The angles, sines and cosines are computed
            in float64 for a float64 ``x`` and in float32 otherwise.

    Raises:
        TypeError: If ``x`` is not a floating tensor or ``positions`` not a real tensor.
        ValueError: If ``D`` is odd, ``positions`` does not give one position per row or
            ``base`` is not positive.

    Examples:
        >>> import torch
        >>> from attention_ref import apply_rope
        >>> x = torch.tensor([[1.0, 0.0], [1.0, 0.0]])  # (L, D): two positions, one pair
        >>> apply_rope(x)  # position 1: rotated by 1 radian
        tensor([[1.0000, 0.0000],
                [0.5403, 0.8415]])
    """
    check_tensor("x", x, min_dim=2)
    length, dim = x.shape[-2:]
    _check_even("x", dim, "last dimension D")
    base = _check_base(base)
    dtype = x.dtype
    compute = torch.float64 if dtype == torch.float64 else torch.float32  # at least float32
    if positions is None:
        positions = torch.arange(length, device=x.device)
    positions = _check_positions(positions, x).to(device=x.device, dtype=compute)
    # --8<-- [start:rotate]
    theta = base ** -(torch.arange(0, dim, 2, device=x.device, dtype=compute) / dim)  # (D/2,)
    angle = positions[..., None] * theta  # (..., L, D/2)
    cos, sin = angle.cos(), angle.sin()  # (..., L, D/2)
    x = x.to(compute)
    if interleaved:
        x_a, x_b = x[..., 0::2], x[..., 1::2]  # pairs (2i, 2i + 1)
    else:
        x_a, x_b = x[..., : dim // 2], x[..., dim // 2 :]  # pairs (i, i + D/2)
    y_a = x_a * cos - x_b * sin  # (..., L, D/2)
    y_b = x_a * sin + x_b * cos
    # --8<-- [end:rotate]
    if interleaved:
        y = torch.stack((y_a, y_b), dim=-1).flatten(-2)  # (..., L, D)
    else:
        y = torch.cat((y_a, y_b), dim=-1)  # (..., L, D)
    return y.to(dtype)


def alibi_slopes(num_heads: int) -> list[float]:
    """Press et al.'s slopes: 2^(-8/H), 2^(-16/H), ..., 2^(-8) for a power of two H."""

    def geometric(n: int) -> list[float]:
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    lower = 2 ** int(math.log2(num_heads))  # the largest power of two <= H
    if lower == num_heads:
        return geometric(num_heads)
    # The slopes of the next lower power of two, then every other slope of the next higher.
    return geometric(lower) + geometric(2 * lower)[0::2][: num_heads - lower]


def alibi_bias(
    num_heads: int,
    q_len: int,
    k_len: int | None = None,
    *,
    device: torch.device | str | None = None,
) -> Tensor:
    r"""ALiBi (Press et al.): a per-head penalty proportional to how far back the key is.

    $$B_{h,i,j} = m_h \, \bigl(j - i - (S - L)\bigr),\qquad
      m_h = 2^{-8(h+1)/H}\quad (h = 0, \dots, H - 1)$$

    The bias is 0 on the bottom-right-aligned diagonal (the query's own position when the
    queries are the last ``L`` of the ``S`` keys, as in decoding with a KV cache) and more
    negative the further back the key. For an ``H`` that is not a power of two the slopes
    are those of the next lower power of two, then every other slope of the next higher,
    as in the authors' code. Keys *after* the query get a positive bias: mask them in the
    same float mask, aligned as the bias is,
    ``alibi_bias(H, L, S).masked_fill(~causal_mask(L, S, align="bottom_right"), float("-inf"))``
    (``is_causal`` cannot be combined with a mask, and is aligned top-left).

    Args:
        num_heads: H, the number of heads; each gets its own slope.
        q_len: L, the number of queries.
        k_len: S, the number of keys; defaults to ``q_len``.
        device: Where to create the bias.

    Returns:
        ``(H, L, S)`` in the default float dtype, to add to the scores (a float
            ``attn_mask``).

    Raises:
        TypeError: If ``num_heads``, ``q_len`` or ``k_len`` is not an int.
        ValueError: If one of them is below 1.

    Examples:
        >>> from attention_ref import alibi_bias
        >>> alibi_bias(2, 3)  # slopes 1/16 and 1/256
        tensor([[[ 0.0000,  0.0625,  0.1250],
                 [-0.0625,  0.0000,  0.0625],
                 [-0.1250, -0.0625,  0.0000]],
        <BLANKLINE>
                [[ 0.0000,  0.0039,  0.0078],
                 [-0.0039,  0.0000,  0.0039],
                 [-0.0078, -0.0039,  0.0000]]])
    """
    num_heads = check_positive_int("num_heads", num_heads, "number of heads")
    q_len = check_positive_int("q_len", q_len, "length")
    k_len = q_len if k_len is None else check_positive_int("k_len", k_len, "length")
    slopes = torch.tensor(alibi_slopes(num_heads), device=device)  # (H,)
    i = torch.arange(q_len, device=device)[:, None]  # (L, 1)
    j = torch.arange(k_len, device=device)  # (S,)
    distance = j - i - (k_len - q_len)  # (L, S): 0 on the diagonal, negative before it
    return slopes[:, None, None] * distance  # (H, L, S)
