"""Parts that act on every head's queries and keys between the projection and the scores.

Open models differ from the textbook layer mostly here: a norm on the queries and keys
(Qwen3, OLMo 2, Gemma 3), rotary positions on part of each head (GPT-NeoX, StableLM, GLM), a
temperature on the queries (Llama 4's layers without positions). Each part is a module
``part(q, k, positions) -> (q, k)`` on ``(N, H, L, D)`` queries and ``(N, H_kv, S, D)`` keys
(``HeadLayerNorm`` is not a part but a norm for ``QKNorm``);
``MultiHeadAttention(qk_parts=[...])`` applies them in order, so a norm listed before
``Rotary`` acts before it (Qwen3) and one listed after acts after it (Llama 4).

Shape legend: N batch, H query heads, H_kv key/value heads, L queries, S keys, D head width,
D_rot the rotated features of each head.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ._checks import check_number, check_positive_int
from .heads import merge_heads, split_heads
from .positions import apply_rope

__all__ = ["HeadLayerNorm", "QKNorm", "QueryTemperature", "Rotary"]


class Rotary(nn.Module):
    r"""Rotary positions (RoPE) on the first ``rotary_dim`` features of every head.

    The first $D_{\text{rot}}$ features of each query and key head are rotated by
    [`apply_rope`][attention_ref.apply_rope], the pair $i = 0, \dots, D_{\text{rot}}/2 - 1$ at
    position $t$ by the angle $t\,\mathrm{base}^{-2i/D_{\text{rot}}}$; the other $D -
    D_{\text{rot}}$ pass through unchanged. GPT-NeoX and StableLM rotate a quarter of each head
    by default, GLM and Nemotron half.

    Args:
        base: The base of the angles (10000 in Llama 2, 500000 in Llama 3).
        interleaved: Pair features ``2i`` and ``2i + 1`` (GPT-J, GLM, Cohere) instead of
            ``i`` and ``i + D_rot/2`` (Llama's ``rotate_half``; the default).
        rotary_dim: D_rot, how many leading features of each head rotate; even; ``None`` means
            all of them.

    Examples:
        >>> import torch
        >>> from attention_ref.qk_parts import Rotary
        >>> q, k = torch.randn(1, 2, 3, 8), torch.randn(1, 1, 3, 8)  # (N, H, L, D), (N, H_kv, S, D)
        >>> rq, rk = Rotary(10000.0, rotary_dim=4)(q, k, torch.arange(3))
        >>> # features past D_rot unchanged; position 0 not rotated
        >>> torch.equal(rq[..., 4:], q[..., 4:]), torch.equal(rq[..., 0, :], q[..., 0, :])
        (True, True)
    """

    reads_positions = True  # a query's and a key's output depend on their positions

    def __init__(
        self, base: float = 10000.0, *, interleaved: bool = False, rotary_dim: int | None = None
    ) -> None:
        super().__init__()
        self.base = check_number("base", base, positive=True)
        self.interleaved = interleaved
        self.rotary_dim = (
            None if rotary_dim is None else check_positive_int("rotary_dim", rotary_dim)
        )

    def rotate(self, x: Tensor, positions: Tensor) -> Tensor:
        """``x`` ``(..., L, D)`` with its first D_rot features rotated at ``positions``."""
        rot = x.size(-1) if self.rotary_dim is None else self.rotary_dim  # D_rot
        if x.size(-1) < rot:
            raise ValueError(f"rotary_dim: {rot} is more than the head width {x.size(-1)}")
        turned = apply_rope(x[..., :rot], positions, base=self.base, interleaved=self.interleaved)
        return torch.cat((turned, x[..., rot:]), dim=-1)  # (..., L, D)

    def forward(self, q: Tensor, k: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Rotate queries and keys, both at ``positions`` (self-attention)."""
        return self.rotate(q, positions), self.rotate(k, positions)

    def extra_repr(self) -> str:
        return f"base={self.base}, interleaved={self.interleaved}, rotary_dim={self.rotary_dim}"


class QKNorm(nn.Module):
    """A norm on the queries and one on the keys: per head, or over all heads at once.

    Per head (Qwen3, Gemma 3, HunYuan; ``whole=False``) each head's ``D`` features are
    normalized, so ``q_norm`` and ``k_norm`` are norms over ``D``. Over the whole projection
    (OLMo 2; ``whole=True``) the ``H * D`` query features of a token are normalized together
    (and the ``H_kv * D`` key features), as one vector: the norms are over those widths.

    Args:
        q_norm: The queries' norm, e.g. ``RMSNorm(D)``; any module over the last dimension.
        k_norm: The keys' norm.
        whole: Normalize the whole projection (all heads of a token) instead of each head.

    Examples:
        >>> import torch
        >>> from attention_ref import RMSNorm
        >>> from attention_ref.qk_parts import QKNorm
        >>> q, k = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
        >>> nq, nk = QKNorm(RMSNorm(4), RMSNorm(4))(q, k, torch.arange(3))
        >>> nq.pow(2).mean(-1).sub(1).abs().max() < 1e-4  # every head's row has RMS 1
        tensor(True)
    """

    reads_positions = False

    def __init__(self, q_norm: nn.Module, k_norm: nn.Module, *, whole: bool = False) -> None:
        super().__init__()
        self.q_norm, self.k_norm, self.whole = q_norm, k_norm, whole

    def _normalize(self, norm: nn.Module, x: Tensor) -> Tensor:
        if not self.whole:
            return norm(x)  # (N, H, L, D): each head's D features
        return split_heads(norm(merge_heads(x)), x.size(1))  # over (N, L, H * D), then back

    def forward(self, q: Tensor, k: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """The normalized queries and keys; ``positions`` are not used."""
        return self._normalize(self.q_norm, q), self._normalize(self.k_norm, k)


class HeadLayerNorm(nn.Module):
    r"""LayerNorm over each head's ``D`` features with a scale of its own per head, no bias.

    $$y_h = \frac{x_h - \mathrm{E}[x_h]}{\sqrt{\mathrm{Var}[x_h] + \epsilon}} \odot \gamma_h$$

    StableLM keeps one ``LayerNorm(D)`` per head, Cohere one ``LayerNorm`` with a weight of
    shape ``(H, D)``: the same thing. Computed in float32 for float16 and bfloat16.

    Not a part itself: use it as ``QKNorm``'s norms,
    ``QKNorm(HeadLayerNorm(H, D), HeadLayerNorm(H_kv, D))``.

    Args:
        num_heads: H (or H_kv for the keys).
        head_dim: D.
        eps: Added to the variance.

    Raises:
        ValueError: If ``num_heads`` or ``head_dim`` is below 1 or ``eps`` negative, or, in a
            call, ``x`` is not ``(N, num_heads, L, head_dim)``.
        TypeError: If ``num_heads`` or ``head_dim`` is not an int.

    Examples:
        >>> import torch
        >>> from attention_ref.qk_parts import HeadLayerNorm
        >>> norm = HeadLayerNorm(2, 4)
        >>> norm.weight.shape
        torch.Size([2, 4])
        >>> y = norm(torch.randn(1, 2, 3, 4))  # (N, H, L, D)
        >>> y.mean(-1).abs().max() < 1e-6
        tensor(True)
    """

    def __init__(self, num_heads: int, head_dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        shape = (
            check_positive_int("num_heads", num_heads),
            check_positive_int("head_dim", head_dim),
        )
        self.weight = nn.Parameter(torch.ones(shape))  # (H, D): gamma per head
        self.eps = check_number("eps", eps, positive=False)

    def forward(self, x: Tensor) -> Tensor:
        """Normalize ``x`` ``(N, H, L, D)``; returns the same shape and dtype."""
        if x.dim() != 4 or x.shape[1] != self.weight.size(0) or x.shape[3] != self.weight.size(1):
            raise ValueError(
                f"x: expected (N, {self.weight.size(0)}, L, {self.weight.size(1)}), "
                f"got {tuple(x.shape)}"
            )
        dtype = x.dtype
        x = x.float() if dtype in (torch.float16, torch.bfloat16) else x
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=False, keepdim=True)
        y = (x - mean) / torch.sqrt(var + self.eps) * self.weight[:, None, :]  # (N, H, L, D)
        return y.to(dtype)


class QueryTemperature(nn.Module):
    r"""Llama 4's attention temperature: queries scaled up the further they stand.

    $$q_t \leftarrow q_t \cdot \bigl(1 + \beta \log(1 + \lfloor (t + 1) / f \rfloor)\bigr)$$

    for the query at position $t$. Llama 4 uses it on its layers without rotary positions,
    where nothing else tells a query how far into a long text it stands; the keys are left
    as they are. Positions below ``floor_scale - 1`` keep a factor of 1.

    Args:
        floor_scale: f, how many positions share one step (8192 in Llama 4).
        attn_scale: $\beta$, the strength (0.1 in Llama 4).

    Examples:
        >>> import torch
        >>> from attention_ref.qk_parts import QueryTemperature
        >>> q, k = torch.ones(1, 1, 3, 2), torch.ones(1, 1, 3, 2)
        >>> tq, tk = QueryTemperature(floor_scale=2, attn_scale=1.0)(q, k, torch.arange(3))
        >>> tq[0, 0, :, 0], torch.equal(tk, k)  # 1, 1 + log 2, 1 + log 2
        (tensor([1.0000, 1.6931, 1.6931]), True)
    """

    reads_positions = True

    def __init__(self, floor_scale: float, attn_scale: float) -> None:
        super().__init__()
        self.floor_scale = check_number("floor_scale", floor_scale, positive=True)
        self.attn_scale = check_number("attn_scale", attn_scale, positive=False)

    def forward(self, q: Tensor, k: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """The queries times their temperature; the keys unchanged."""
        t = positions.to(
            device=q.device, dtype=torch.float64 if q.dtype == torch.float64 else torch.float32
        )
        factor = torch.log1p(torch.floor((t + 1.0) / self.floor_scale)) * self.attn_scale + 1.0
        return (q * factor[..., None]).to(q.dtype), k  # (..., L, 1) over each query row
