"""A toy task that one attention layer can only solve by attending: its weights become readable.

Each sequence holds L distinct tokens out of a vocabulary of V. At every position i the model
outputs two tokens: the **previous** one, $x_{i-1}$ (the first position has none and outputs
itself), and the **mirrored** one, $x_{L-1-i}$. The model is token and position embeddings, one
``MultiHeadAttention`` and a linear read-out, with no residual path: whatever it outputs at
position i it must have fetched with attention. After 150 Adam steps (the default) one head looks
one step back (the sub-diagonal of its weights) and another at the mirror position (the
anti-diagonal); before training the weights are close to uniform.

Shape legend (batch-first): N batch, L length, V vocabulary size, E embed_dim, H num_heads.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..multihead import MultiHeadAttention
from .training import adam_steps, seeded

__all__ = ["ToyAttentionModel", "toy_accuracy", "toy_batch", "train_toy_model"]


def toy_batch(
    batch_size: int,
    length: int = 6,
    vocab_size: int = 10,
    *,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """Random sequences of distinct tokens, with their two targets per position.

    Args:
        batch_size: N, the number of sequences.
        length: L, tokens per sequence; at most ``vocab_size``.
        vocab_size: V, the number of different tokens.
        generator: Random generator, for the same batch every time.

    Returns:
        ``(tokens, targets)``: tokens ``(N, L)``; targets ``(N, L, 2)``, where
        ``targets[..., 0]`` is the previous token and ``targets[..., 1]`` the mirrored one.

    Raises:
        ValueError: If ``length`` is not between 1 and ``vocab_size``.

    Examples:
        >>> import torch
        >>> from attention_ref.lab.toy_tasks import toy_batch
        >>> tokens, targets = toy_batch(1, length=4, generator=torch.Generator().manual_seed(5))
        >>> tokens
        tensor([[8, 5, 1, 6]])
        >>> targets[..., 0]  # previous token; the first position repeats itself
        tensor([[8, 8, 5, 1]])
        >>> targets[..., 1]  # mirrored token
        tensor([[6, 1, 5, 8]])
    """
    if not 1 <= length <= vocab_size:
        raise ValueError(f"length: expected 1 <= length <= vocab_size={vocab_size}, got {length}")
    order = torch.rand(batch_size, vocab_size, generator=generator).argsort(dim=-1)  # (N, V)
    tokens = order[:, :length]  # (N, L): distinct tokens in random order
    positions = torch.arange(length)
    previous = tokens[:, (positions - 1).clamp(min=0)]  # (N, L): x_{i-1}, and x_0 at i = 0
    mirrored = tokens[:, positions.flip(0)]  # (N, L): x_{L-1-i}
    return tokens, torch.stack((previous, mirrored), dim=-1)  # (N, L), (N, L, 2)


class ToyAttentionModel(nn.Module):
    """Embeddings, one multi-head attention layer and a read-out of two tokens per position.

    Args:
        vocab_size: V, the number of different tokens.
        length: L, the (fixed) sequence length: one learned position embedding per position.
        embed_dim: E, the model width.
        num_heads: H; must divide ``embed_dim``.

    Raises:
        ValueError: In a call, if ``tokens`` is not ``(N, length)``.

    Examples:
        >>> import torch
        >>> from attention_ref.lab.toy_tasks import ToyAttentionModel
        >>> _ = torch.manual_seed(0)
        >>> model = ToyAttentionModel()
        >>> logits, weights = model(torch.tensor([[2, 0, 5, 9, 1, 4]]))
        >>> logits.shape, weights.shape  # (N, L, 2, V), (N, H, L, L)
        (torch.Size([1, 6, 2, 10]), torch.Size([1, 2, 6, 6]))
    """

    def __init__(
        self, vocab_size: int = 10, length: int = 6, embed_dim: int = 32, num_heads: int = 2
    ) -> None:
        super().__init__()
        self.vocab_size, self.length = vocab_size, length
        self.token_embedding = nn.Embedding(vocab_size, embed_dim)
        self.position_embedding = nn.Embedding(length, embed_dim)  # learned, one per position
        self.attn = MultiHeadAttention(embed_dim, num_heads)
        self.readout = nn.Linear(embed_dim, 2 * vocab_size)  # previous and mirrored token
        for embedding in (self.token_embedding, self.position_embedding):
            # Small embeddings give small scores: untrained weights start close to uniform.
            nn.init.normal_(embedding.weight, std=embed_dim**-0.5)

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """Logits ``(N, L, 2, V)`` of the two targets, and the weights ``(N, H, L, L)``."""
        if tokens.dim() != 2 or tokens.size(1) != self.length:
            raise ValueError(
                f"tokens: expected shape (N, {self.length}), got {tuple(tokens.shape)}"
            )
        positions = torch.arange(self.length, device=tokens.device)
        x = self.token_embedding(tokens) + self.position_embedding(positions)  # (N, L, E)
        out, weights = self.attn(x)  # (N, L, E), (N, H, L, L): the only path between tokens
        logits = self.readout(out).unflatten(-1, (2, self.vocab_size))  # (N, L, 2, V)
        return logits, weights


def train_toy_model(
    steps: int = 150,
    *,
    seed: int = 0,
    length: int = 6,
    vocab_size: int = 10,
    embed_dim: int = 32,
    num_heads: int = 2,
    batch_size: int = 64,
    lr: float = 1e-2,
) -> ToyAttentionModel:
    """Train a ``ToyAttentionModel`` on ``toy_batch`` with Adam; seeded, CPU-fast.

    Args:
        steps: Adam steps; 0 returns the untrained model (same seed, same initial weights).
        seed: Seeds the initial weights and the batches; the CPU's global RNG is left untouched.
        length: L, the sequence length.
        vocab_size: V, the number of different tokens.
        embed_dim: E, the model width.
        num_heads: H, the number of heads.
        batch_size: N, sequences per step.
        lr: Adam's learning rate.

    Returns:
        The model, in eval mode.

    Examples:
        >>> import torch
        >>> from attention_ref.lab.toy_tasks import train_toy_model, toy_batch, toy_accuracy
        >>> model = train_toy_model()
        >>> tokens, targets = toy_batch(1000, generator=torch.Generator().manual_seed(1))
        >>> toy_accuracy(model, tokens, targets) > 0.99
        True
    """
    model = seeded(lambda: ToyAttentionModel(vocab_size, length, embed_dim, num_heads), seed)
    generator = torch.Generator().manual_seed(seed)

    def loss() -> Tensor:
        tokens, targets = toy_batch(batch_size, length, vocab_size, generator=generator)
        logits, _ = model(tokens)  # (N, L, 2, V)
        return F.cross_entropy(logits.flatten(0, 2), targets.flatten())  # (N*L*2, V), (N*L*2,)

    adam_steps(model, loss, steps, lr)
    return model.eval()


def toy_accuracy(model: ToyAttentionModel, tokens: Tensor, targets: Tensor) -> float:
    """The fraction of the ``N * L * 2`` target tokens that ``model`` gets right.

    Args:
        model: A ``ToyAttentionModel``.
        tokens: ``(N, L)`` from ``toy_batch``.
        targets: ``(N, L, 2)`` from ``toy_batch``.

    Returns:
        A number between 0 and 1.

    Examples:
        >>> import torch
        >>> from attention_ref.lab.toy_tasks import toy_batch, toy_accuracy, train_toy_model
        >>> tokens, targets = toy_batch(100, generator=torch.Generator().manual_seed(0))
        >>> 0.0 <= toy_accuracy(train_toy_model(steps=0), tokens, targets) < 0.5  # untrained
        True
    """
    with torch.no_grad():
        logits, _ = model(tokens)  # (N, L, 2, V)
    return (logits.argmax(dim=-1) == targets).float().mean().item()
