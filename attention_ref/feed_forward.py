r"""The position-wise feed-forward network of a Transformer layer, and its activations.

- MLP (the 2017 paper, GPT-2): $\mathrm{FFN}(x) = \phi(x W_1 + b_1) W_2 + b_2$, with an
  activation $\phi$;
- SwiGLU (Llama, Mistral): $\mathrm{FFN}(x) = \bigl(\mathrm{SiLU}(x W_1) \odot x W_3\bigr) W_2$.

It acts on each token on its own. ``TransformerEncoderLayer``, ``DecoderBlock`` and
``FeedForward`` keep its weights under PyTorch's names (``linear1``, ``linear2``), so those
``state_dict`` keys are ``nn.TransformerEncoderLayer``'s; the gated form adds ``linear3``,
numbered as in Meta's Llama code (there ``w1`` the gate, ``w2`` down, ``w3`` up). This module
holds the computation they share.

Shape legend (batch-first): N batch, L length, E d_model, F dim_feedforward.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["ACTIVATIONS", "FeedForward", "activation_fn", "feed_forward", "relu_squared"]


def relu_squared(x: Tensor) -> Tensor:
    """``relu(x) ** 2`` (So et al.'s Primer; Nemotron's MLP, ``"relu2"``).

    Examples:
        >>> import torch
        >>> from attention_ref.feed_forward import relu_squared
        >>> relu_squared(torch.tensor([-1.0, 0.5, 3.0]))
        tensor([0.0000, 0.2500, 9.0000])
    """
    return F.relu(x).square()


ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": F.relu,
    "relu2": relu_squared,
    "gelu": F.gelu,  # exact: x * Phi(x)
    "gelu_tanh": partial(F.gelu, approximate="tanh"),  # GPT-2's gelu_new
    "silu": F.silu,  # x * sigmoid(x), also called swish
}


def activation_fn(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """The activation function named ``activation``, or ``activation`` itself if callable.

    The names: ``"relu"``; ``"relu2"``, relu squared (``relu_squared``); ``"gelu"``, the exact
    GELU; ``"gelu_tanh"``, its tanh approximation (GPT-2's ``gelu_new``); ``"silu"`` (swish).

    Raises:
        ValueError: If ``activation`` is a string but none of these names.

    Examples:
        >>> import torch
        >>> from attention_ref.feed_forward import activation_fn
        >>> activation_fn("relu2")(torch.tensor([-1.0, 3.0]))
        tensor([0., 9.])
        >>> activation_fn("swish")
        Traceback (most recent call last):
        ...
        ValueError: activation: expected one of ['gelu', ..., 'silu'] or a callable, got 'swish'
    """
    if callable(activation):
        return activation
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"activation: expected one of {sorted(ACTIVATIONS)} or a callable, got {activation!r}"
        )
    return ACTIVATIONS[activation]


def feed_forward(
    x: Tensor,
    linear1: nn.Module,
    linear2: nn.Module,
    activation: Callable[[Tensor], Tensor],
    dropout: nn.Module,
    linear3: nn.Module | None = None,
) -> Tensor:
    r"""``linear2(dropout(act(linear1(x))))``, or with ``linear3`` the gated form.

    $$\operatorname{FFN}(x) = \phi(x W_1) W_2 \quad\text{or}\quad
      \operatorname{FFN}(x) = \bigl(\phi(x W_1) \odot x W_3\bigr) W_2$$

    with $\phi$ the ``activation`` (biases omitted).

    With ``linear3`` (SwiGLU when ``activation`` is SiLU), ``linear1`` is the gate, ``linear3``
    the "up" projection and ``linear2`` the "down" one, as numbered in Meta's Llama code.

    Args:
        x: ``(..., E)``.
        linear1: E to F.
        linear2: F to E.
        activation: Applied to ``linear1(x)``.
        dropout: Applied to the hidden features ``(..., F)``.
        linear3: E to F, the gated form's second branch; ``None`` for the plain MLP.

    Returns:
        ``(..., E)``.

    Examples:
        >>> import torch
        >>> import torch.nn.functional as F
        >>> from attention_ref.feed_forward import feed_forward
        >>> _ = torch.manual_seed(0)
        >>> gate, down, up = torch.nn.Linear(4, 8), torch.nn.Linear(8, 4), torch.nn.Linear(4, 8)
        >>> x = torch.randn(2, 3, 4)  # (N, L, E)
        >>> out = feed_forward(x, gate, down, F.silu, torch.nn.Identity(), up)  # SwiGLU
        >>> torch.allclose(out, down(F.silu(gate(x)) * up(x)))
        True
    """
    hidden = activation(linear1(x))  # (..., F)
    if linear3 is not None:
        hidden = hidden * linear3(x)  # the gate times the "up" projection
    return linear2(dropout(hidden))  # (..., E)


class FeedForward(nn.Module):
    r"""The feed-forward network as a module with its own layers (``feed_forward``, no dropout).

    $$\operatorname{FFN}(x) = \phi(x W_1) W_2 \quad\text{or, gated,}\quad
      \bigl(\phi(x W_1) \odot x W_3\bigr) W_2$$

    with $\phi$ the ``activation`` (biases omitted).

    Args:
        d_model: E.
        dim_feedforward: F, the hidden width.
        activation: ``"relu"``, ``"relu2"``, ``"gelu"``, ``"gelu_tanh"`` or ``"silu"``
            (see ``activation_fn``), or a callable.
        gated: The gated form (SwiGLU with SiLU, GeGLU with GELU): ``linear1`` the gate,
            ``linear3`` "up", ``linear2`` "down"; otherwise the plain MLP (no ``linear3``).
        bias: Biases in the linear layers.

    Raises:
        ValueError: If ``activation`` is a string but not one of those names.

    Examples:
        >>> import torch
        >>> from attention_ref.feed_forward import FeedForward
        >>> ffn = FeedForward(4, 8, "silu")  # Llama's SwiGLU
        >>> ffn(torch.randn(2, 3, 4)).shape, sorted(ffn.state_dict())
        (torch.Size([2, 3, 4]), ['linear1.weight', 'linear2.weight', 'linear3.weight'])
    """

    def __init__(
        self,
        d_model: int,
        dim_feedforward: int,
        activation: str | Callable[[Tensor], Tensor] = "silu",
        *,
        gated: bool = True,
        bias: bool = False,
    ) -> None:
        super().__init__()
        self.activation = activation_fn(activation)
        self.linear1 = nn.Linear(d_model, dim_feedforward, bias=bias)  # the gate, when gated
        self.linear2 = nn.Linear(dim_feedforward, d_model, bias=bias)  # "down"
        self.linear3 = nn.Linear(d_model, dim_feedforward, bias=bias) if gated else None  # "up"

    def forward(self, x: Tensor) -> Tensor:
        """``(..., E)`` to ``(..., E)``."""
        return feed_forward(
            x, self.linear1, self.linear2, self.activation, nn.Identity(), self.linear3
        )
