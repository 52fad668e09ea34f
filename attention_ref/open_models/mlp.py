"""The open models' feed-forward networks, as our ``FeedForward`` with their weights.

Hugging Face names the activation in the config by its ``ACT2FN`` key (``hidden_act``; GPT-2's
and GPT-J's ``activation_function``, Falcon's ``activation``, Gemma's ``hidden_activation``);
``activation_name`` maps it to ours (``attention_ref.feed_forward.ACTIVATIONS``).
``feed_forward`` builds our ``FeedForward`` from their weights and biases in ``nn.Linear``'s
layout: the plain MLP ``down(act(up(x)))`` (GPT-2, GPT-J, BLOOM, BERT, GPT-NeoX, Falcon,
Nemotron's relu²) or, given a gate, ``down(act(gate(x)) * up(x))`` (SwiGLU with SiLU, GeGLU
with a GELU). ``gated_mlp`` reads the gated MLP most families keep as ``gate_proj``,
``up_proj`` and ``down_proj`` (Llama's and the layers built like it, Gemma's, Cohere's,
StableLM's); the others split theirs (GLM's and Phi-3's fused ``gate_up_proj``) or transpose
them (GPT-2's ``Conv1D``) and call ``feed_forward``.

Duck typing only: nothing here imports transformers.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from ..feed_forward import FeedForward
from .common import copy_weights

__all__ = ["WeightAndBias", "activation_name", "feed_forward", "gated_mlp"]

WeightAndBias = tuple[Tensor, Tensor | None]
"""An ``nn.Linear``'s weight ``(out, in)`` and its bias ``(out,)``, or None without one."""

_HF_ACTIVATIONS = {  # Hugging Face's ACT2FN keys to ours
    "silu": "silu",
    "swish": "silu",
    "gelu": "gelu",  # exact, x * Phi(x)
    "gelu_new": "gelu_tanh",  # the tanh approximation (GPT-2's)
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
    "relu2": "relu2",  # relu(x) ** 2 (Nemotron)
}


def activation_name(hf_name: Any) -> str:
    """Our name (``attention_ref.feed_forward.ACTIVATIONS``) for Hugging Face's ``hf_name``.

    Args:
        hf_name: A key of their ``ACT2FN``, as the config names it (``"gelu_new"`` is the tanh
            GELU).

    Returns:
        Ours: ``"silu"``, ``"gelu"``, ``"gelu_tanh"``, ``"relu"`` or ``"relu2"``.

    Raises:
        ValueError: For an activation we have no equal of (or a callable), naming it.

    Examples:
        >>> from attention_ref.open_models.mlp import activation_name
        >>> activation_name("gelu_new"), activation_name("swish"), activation_name("relu2")
        ('gelu_tanh', 'silu', 'relu2')
        >>> activation_name("quick_gelu")
        Traceback (most recent call last):
        ...
        ValueError: config: activation 'quick_gelu' is not supported; one of ['gelu', ...]
    """
    if not isinstance(hf_name, str) or hf_name not in _HF_ACTIVATIONS:
        raise ValueError(
            f"config: activation {hf_name!r} is not supported; one of {sorted(_HF_ACTIVATIONS)}"
        )
    return _HF_ACTIVATIONS[hf_name]


def _check(up: WeightAndBias, down: WeightAndBias, gate: WeightAndBias | None) -> None:
    """Raise unless the shapes chain, ``up`` (and ``gate``) ``(F, E)``, ``down`` ``(E, F)``,
    and either every layer has a bias or none has."""
    F, E = up[0].shape
    shapes = {"up": (up[0], (F, E)), "down": (down[0], (E, F))}
    if gate is not None:
        shapes["gate"] = (gate[0], (F, E))
    for name, (weight, expected) in shapes.items():
        if tuple(weight.shape) != expected:
            raise ValueError(
                f"{name}: weight of shape {tuple(weight.shape)}, expected {expected} "
                f"for up's (F, E) = {(F, E)}"
            )
    pairs = (up, down) if gate is None else (up, down, gate)
    if len({bias is None for _, bias in pairs}) > 1:
        biased = [name for name, (_, bias) in zip(shapes, pairs, strict=True) if bias is not None]
        raise ValueError(f"biases: all layers or none, got one on {', '.join(biased)} only")


def feed_forward(
    up: WeightAndBias,
    down: WeightAndBias,
    hf_activation: str,
    gate: WeightAndBias | None = None,
) -> FeedForward:
    """Our ``FeedForward`` with copies of their weights, in their dtype: ``down(act(up(x)))``,
    or with ``gate`` ``down(act(gate(x)) * up(x))``.

    Args:
        up: The first linear layer's ``(weight, bias)``, ``(F, E)`` and ``(F,)`` (or None).
        down: The last one's, ``(E, F)`` and ``(E,)``.
        hf_activation: Hugging Face's name of the activation (``activation_name``).
        gate: The gate's, as ``up``; None for the plain MLP.

    Returns:
        ``FeedForward``: ``linear1`` the gate (``up`` when there is no gate), ``linear3``
        ``up`` when gated, ``linear2`` ``down``; with biases if theirs have them.

    Raises:
        ValueError: For an unsupported activation, shapes that do not chain, or biases on
            some layers only.

    Examples:
        >>> import torch
        >>> from attention_ref.open_models.mlp import feed_forward
        >>> up, down = torch.nn.Linear(4, 8), torch.nn.Linear(8, 4)  # E = 4, F = 8
        >>> ffn = feed_forward((up.weight, up.bias), (down.weight, down.bias), "relu2")
        >>> x = torch.randn(2, 4)
        >>> torch.allclose(ffn(x), down(torch.relu(up(x)) ** 2))
        True
        >>> gate = torch.randn(8, 4, dtype=torch.float64)  # no biases: SwiGLU
        >>> up_w, down_w = torch.randn(8, 4).double(), torch.randn(4, 8).double()
        >>> ffn = feed_forward((up_w, None), (down_w, None), "silu", gate=(gate, None))
        >>> ffn.linear1.weight.dtype, torch.equal(ffn.linear3.weight, up_w)
        (torch.float64, True)
    """
    _check(up, down, gate)
    F, E = up[0].shape
    biased = up[1] is not None
    ffn = FeedForward(E, F, activation_name(hf_activation), gated=gate is not None, bias=biased)
    layers = {"linear2": down} | (
        {"linear1": up} if gate is None else {"linear1": gate, "linear3": up}
    )
    state: dict[str, Tensor] = {}
    for ours, (weight, bias) in layers.items():
        state[f"{ours}.weight"] = weight
        if bias is not None:
            state[f"{ours}.bias"] = bias
    copy_weights(ffn.to(up[0].dtype), state)
    return ffn


def gated_mlp(module: Any, hf_activation: str = "silu") -> FeedForward:
    """Our gated ``FeedForward`` for their MLP ``down_proj(act(gate_proj(x)) * up_proj(x))``
    (Llama's ``LlamaMLP`` and most families' alike), with its weights (and biases, if any).

    Args:
        module: Their MLP, with the ``nn.Linear`` layers ``gate_proj``, ``up_proj`` and
            ``down_proj``.
        hf_activation: Hugging Face's name of the activation (the config's ``hidden_act``):
            ``"silu"`` makes SwiGLU, a GELU GeGLU.

    Returns:
        ``FeedForward``: ``linear1`` the gate, ``linear3`` "up", ``linear2`` "down".

    Raises:
        ValueError: As ``feed_forward``.

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> from attention_ref.open_models.mlp import gated_mlp
        >>> theirs = nn.Module()  # E = 4, F = 8, no biases
        >>> theirs.gate_proj, theirs.up_proj = nn.Linear(4, 8, False), nn.Linear(4, 8, False)
        >>> theirs.down_proj = nn.Linear(8, 4, False)
        >>> ffn, x = gated_mlp(theirs), torch.randn(2, 4)
        >>> gated = nn.functional.silu(theirs.gate_proj(x)) * theirs.up_proj(x)
        >>> torch.allclose(ffn(x), theirs.down_proj(gated))
        True
    """
    gate, up, down = module.gate_proj, module.up_proj, module.down_proj
    return feed_forward(
        (up.weight, up.bias), (down.weight, down.bias), hf_activation, (gate.weight, gate.bias)
    )
