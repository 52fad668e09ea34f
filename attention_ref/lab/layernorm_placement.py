"""Pre-LN or Post-LN: each layer's gradient at initialization, and the loss over a few steps.

A small, seeded, CPU-fast version of the measurement in Xiong et al. 2020 ("On Layer
Normalization in the Transformer Architecture"). Two stacks of encoder layers share the same
initial weights and differ only in where the LayerNorm sits:

- Post-LN (``norm_first=False``): ``x = LayerNorm(x + Sublayer(x))``;
- Pre-LN (``norm_first=True``): ``x = x + Sublayer(LayerNorm(x))``, and a final LayerNorm.

The task reverses a sequence of random vectors (the target is ``x.flip(1)``, the loss the mean
squared error), so every position has to fetch another position's vector through attention.
`layer_grad_norms` takes one backward pass at initialization and returns the norm of
each layer's gradient; `train_losses` trains with Adam at a constant learning rate (no
warm-up) and returns the loss of every step.

Both run on one CPU thread (`attention_ref.lab.training`): the matrices are tiny.

Shape legend (batch-first): N batch, L length, E d_model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..encoder import TransformerEncoderLayer
from ..norms import LayerNorm
from .training import adam_steps, one_thread, seeded

__all__ = ["EncoderStack", "layer_grad_norms", "reverse_task", "train_losses"]


class EncoderStack(nn.Module):
    """``num_layers`` encoder layers (dropout 0), then a linear read-out of width ``d_model``.

    Pre-LN stacks end with one more LayerNorm before the read-out, as in Xiong et al. and
    GPT-2: without it the residual stream reaches the output unnormalized. Post-LN layers
    already end with a LayerNorm. The final LayerNorm holds no random numbers, so stacks built
    after the same ``torch.manual_seed`` have the same layers and read-out in both variants.

    Args:
        num_layers: How many
            [`TransformerEncoderLayer`][attention_ref.TransformerEncoderLayer] to stack.
        d_model: E, the model width.
        nhead: H, attention heads per layer.
        dim_feedforward: The hidden width of each feed-forward network.
        norm_first: Pre-LN (True) or Post-LN (False).

    Raises:
        ValueError: If ``num_layers`` is below 1.

    Examples:
        >>> import torch
        >>> from attention_ref.lab.layernorm_placement import EncoderStack
        >>> stack = EncoderStack(num_layers=2, norm_first=True)
        >>> stack(torch.zeros(1, 5, 32)).shape  # (N, L, E)
        torch.Size([1, 5, 32])
        >>> type(stack.final_norm).__name__, type(EncoderStack(2).final_norm).__name__
        ('LayerNorm', 'Identity')
    """

    def __init__(
        self,
        num_layers: int = 6,
        d_model: int = 32,
        nhead: int = 4,
        dim_feedforward: int = 64,
        *,
        norm_first: bool = False,
    ) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers: expected at least 1 layer, got {num_layers}")
        self.layers = nn.ModuleList(
            TransformerEncoderLayer(
                d_model, nhead, dim_feedforward, dropout=0.0, norm_first=norm_first
            )
            for _ in range(num_layers)
        )
        self.final_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.readout = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor) -> Tensor:
        """``(N, L, E)`` -> ``(N, L, E)``."""
        for layer in self.layers:
            x = layer(x)
        return self.readout(self.final_norm(x))


def reverse_task(
    batch_size: int = 8,
    length: int = 16,
    d_model: int = 32,
    *,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """Random sequences ``x`` ``(N, L, E)`` and their targets, the sequences reversed.

    Args:
        batch_size: N.
        length: L.
        d_model: E, the width of each vector.
        generator: Random generator, for the same batch every time.

    Returns:
        ``(x, x.flip(1))``, both ``(N, L, E)``: standard normal entries.

    Examples:
        >>> import torch
        >>> from attention_ref.lab.layernorm_placement import reverse_task
        >>> x, y = reverse_task(2, 3, 4, generator=torch.Generator().manual_seed(0))
        >>> x.shape, torch.equal(y[:, 0], x[:, 2])
        (torch.Size([2, 3, 4]), True)
    """
    x = torch.randn(batch_size, length, d_model, generator=generator)  # (N, L, E)
    return x, x.flip(1)


def _seeded_stack_and_data(
    norm_first: bool, seed: int, num_layers: int, d_model: int, nhead: int, dim_feedforward: int
) -> tuple[EncoderStack, Tensor, Tensor]:
    stack = seeded(
        lambda: EncoderStack(num_layers, d_model, nhead, dim_feedforward, norm_first=norm_first),
        seed,
    )
    x, y = reverse_task(d_model=d_model, generator=torch.Generator().manual_seed(seed))
    return stack, x, y


def layer_grad_norms(
    norm_first: bool,
    *,
    num_layers: int = 6,
    d_model: int = 32,
    nhead: int = 4,
    dim_feedforward: int = 64,
    seed: int = 0,
) -> Tensor:
    """The norm of each layer's gradient after one backward pass at initialization.

    Builds an `EncoderStack` (``seed`` fixes its weights and the batch of
    `reverse_task`), computes the mean squared error once and backpropagates.

    Args:
        norm_first: Pre-LN (True) or Post-LN (False).
        num_layers: How many encoder layers.
        d_model: E, the model width.
        nhead: H, attention heads per layer.
        dim_feedforward: The hidden width of each feed-forward network.
        seed: Fixes the weights and the batch (8 sequences of 16 vectors).

    Returns:
        ``(num_layers,)``: for each layer, first to last, the L2 norm of the gradient of all
        its parameters (attention, feed-forward network and both LayerNorms) together.

    Examples:
        >>> from attention_ref.lab.layernorm_placement import layer_grad_norms
        >>> post = layer_grad_norms(norm_first=False)
        >>> post.shape, bool(post[-1] > post[0])  # Post-LN: the last layer gets more
        (torch.Size([6]), True)
    """
    stack, x, y = _seeded_stack_and_data(
        norm_first, seed, num_layers, d_model, nhead, dim_feedforward
    )
    with one_thread():
        F.mse_loss(stack(x), y).backward()
    norms = [
        torch.linalg.vector_norm(
            torch.cat([p.grad.flatten() for p in layer.parameters() if p.grad is not None])
        )
        for layer in stack.layers
    ]
    return torch.stack(norms)  # (num_layers,)


def train_losses(
    norm_first: bool,
    *,
    steps: int = 30,
    lr: float = 1e-2,
    num_layers: int = 6,
    d_model: int = 32,
    nhead: int = 4,
    dim_feedforward: int = 64,
    seed: int = 0,
) -> list[float]:
    """Train an `EncoderStack` on one fixed batch with Adam, no warm-up; the losses.

    Args:
        norm_first: Pre-LN (True) or Post-LN (False).
        steps: How many Adam updates.
        lr: Adam's learning rate, from the first step.
        num_layers: How many encoder layers.
        d_model: E, the model width.
        nhead: H, attention heads per layer.
        dim_feedforward: The hidden width of each feed-forward network.
        seed: Fixes the weights and the batch, as in `layer_grad_norms`.

    Returns:
        ``steps`` floats: the loss before each update.

    Raises:
        ValueError: If ``steps`` is below 1.

    Examples:
        >>> from attention_ref.lab.layernorm_placement import train_losses
        >>> losses = train_losses(norm_first=True, steps=5)
        >>> len(losses), losses[-1] < losses[0]
        (5, True)
    """
    if steps < 1:
        raise ValueError(f"steps: expected at least 1 step, got {steps}")
    stack, x, y = _seeded_stack_and_data(
        norm_first, seed, num_layers, d_model, nhead, dim_feedforward
    )
    return adam_steps(stack, lambda: F.mse_loss(stack(x), y), steps, lr)
