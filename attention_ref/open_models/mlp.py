"""The feed-forward networks of the families whose MLP is not Llama's SwiGLU with SiLU.

Hugging Face names the activation in the config (``hidden_act``, Falcon's ``activation``) by
its ``ACT2FN`` key; ``activation_name`` maps it to ours (``attention_ref.feed_forward``).
``mlp`` builds our ``FeedForward`` from their weights: the plain MLP ``down(act(up(x)))``
(GPT-NeoX, Falcon, Nemotron's relu²) or, given a gate, ``down(act(gate(x)) * up(x))``
(StableLM, Phi-3 once its fused ``gate_up_proj`` is split).

Duck typing only: nothing here imports transformers.
"""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor

from ..feed_forward import FeedForward
from .common import copy_weights

__all__ = ["activation_name", "mlp"]

_HF_ACTIVATIONS = {
    "silu": "silu",
    "swish": "silu",
    "gelu": "gelu",  # exact, x * Phi(x)
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
    "relu2": "relu2",  # relu(x) ** 2 (Nemotron)
}


def activation_name(hf_name: str) -> str:
    """Our name (``attention_ref.feed_forward.ACTIVATIONS``) for Hugging Face's ``hf_name``.

    Raises:
        ValueError: For an activation we have no equal of, naming it.

    Examples:
        >>> from attention_ref.open_models.mlp import activation_name
        >>> activation_name("gelu_new"), activation_name("relu2")
        ('gelu_tanh', 'relu2')
    """
    if hf_name not in _HF_ACTIVATIONS:
        raise ValueError(
            f"config: activation {hf_name!r} is not supported; one of {sorted(_HF_ACTIVATIONS)}"
        )
    return _HF_ACTIVATIONS[hf_name]


def mlp(
    hf_activation: str,
    up: Mapping[str, Tensor],
    down: Mapping[str, Tensor],
    gate: Mapping[str, Tensor] | None = None,
) -> FeedForward:
    """Our ``FeedForward`` with their weights: ``down(act(up(x)))``, or with ``gate``
    ``down(act(gate(x)) * up(x))``.

    Args:
        hf_activation: Hugging Face's name of the activation (``config.hidden_act``).
        up: The first linear layer's ``{"weight": (F, E), "bias": (F,)}`` (bias if any).
        down: The last one's, ``(E, F)``.
        gate: The gate's, as ``up``; None for the plain MLP.

    Returns:
        ``FeedForward``: ``linear1`` the gate (or ``up`` when there is no gate), ``linear3``
        ``up`` when gated, ``linear2`` ``down``; biases where theirs have them.

    Examples:
        >>> import torch
        >>> from attention_ref.open_models.mlp import mlp
        >>> up, down = torch.nn.Linear(4, 8), torch.nn.Linear(8, 4)
        >>> ffn = mlp("relu2", up.state_dict(), down.state_dict())
        >>> x = torch.randn(2, 4)
        >>> torch.allclose(ffn(x), down(torch.relu(up(x)) ** 2))
        True
    """
    width, d_model = up["weight"].shape
    ffn = FeedForward(
        d_model,
        width,
        activation_name(hf_activation),
        gated=gate is not None,
        bias="bias" in up and up["bias"] is not None,
    )
    named = {"linear2": down} | (
        {"linear1": up} if gate is None else {"linear1": gate, "linear3": up}
    )
    copy_weights(
        ffn, {f"{ours}.{kind}": t for ours, state in named.items() for kind, t in state.items()}
    )
    return ffn
