"""Which positions carry past the trained length: a small, seeded experiment on a CPU.

The task needs order: at every position i > 0 the model outputs the **previous** token,
$x_{i-1}$, of a sequence of distinct random tokens (``toy_batch``'s first target). The model
is a token embedding, a way of adding positions, one causal ``MultiHeadAttention`` and a
linear read-out, with no residual path, so whatever it outputs it fetched with attention.
The four ways of adding positions:

- ``"none"``: nothing; only the causal mask tells the positions apart;
- ``"sinusoidal"``: ``sinusoidal_positions`` added to the token embeddings;
- ``"learned"``: an ``nn.Embedding`` with one row per position up to ``max_length``, added
  to the token embeddings; rows past the training length are never trained;
- ``"rope"``: the attention rotates queries and keys (``rope_base=10000``).

Each model trains on sequences of ``train_length`` tokens and is then evaluated on longer
ones. Training runs on one CPU thread (`attention_ref.lab.training`): the tensors are tiny.

Shape legend (batch-first): N batch, L length, V vocabulary size, E embed_dim, H num_heads.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..multihead import MultiHeadAttention
from ..positions import sinusoidal_positions
from .toy_tasks import toy_batch
from .training import adam_steps, seeded

__all__ = ["ENCODINGS", "PositionalToyModel", "length_generalization", "train_with_positions"]

ENCODINGS = ("none", "sinusoidal", "learned", "rope")


class PositionalToyModel(nn.Module):
    """Token embedding, positions, one causal attention layer and a read-out of one token.

    Args:
        encoding: How positions enter: ``"none"``, ``"sinusoidal"``, ``"learned"`` or
            ``"rope"``.
        vocab_size: V, the number of different tokens.
        embed_dim: E, the model width.
        num_heads: H; must divide ``embed_dim``.
        max_length: The longest sequence the model accepts: rows of the learned table.

    Raises:
        ValueError: If ``encoding`` is not one of the four, or, in a call, ``tokens`` is not
            ``(N, L)`` with ``1 <= L <= max_length``.

    Examples:
        >>> import torch
        >>> from attention_ref.lab.length_generalization import PositionalToyModel
        >>> model = PositionalToyModel("rope")
        >>> model(torch.tensor([[3, 1, 4, 5]])).shape  # (N, L, V)
        torch.Size([1, 4, 32])
    """

    def __init__(
        self,
        encoding: str,
        vocab_size: int = 32,
        embed_dim: int = 32,
        num_heads: int = 2,
        max_length: int = 32,
    ) -> None:
        super().__init__()
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding: expected one of {ENCODINGS}, got {encoding!r}")
        self.encoding, self.max_length = encoding, max_length
        self.token_embedding = nn.Embedding(vocab_size, embed_dim)
        if encoding == "learned":
            self.position_embedding = nn.Embedding(max_length, embed_dim)  # one row per position
        rope_base = 10000.0 if encoding == "rope" else None
        self.attn = MultiHeadAttention(embed_dim, num_heads, rope_base=rope_base)
        self.readout = nn.Linear(embed_dim, vocab_size)

    def forward(self, tokens: Tensor) -> Tensor:
        """Logits ``(N, L, V)`` of the previous token at every position."""
        if tokens.dim() != 2 or not 1 <= tokens.size(1) <= self.max_length:
            raise ValueError(
                f"tokens: expected shape (N, L) with L <= {self.max_length}, "
                f"got {tuple(tokens.shape)}"
            )
        length, width = tokens.size(1), self.token_embedding.embedding_dim
        x = self.token_embedding(tokens)  # (N, L, E)
        if self.encoding == "sinusoidal":
            x = x + sinusoidal_positions(length, width, device=tokens.device)  # (L, E)
        elif self.encoding == "learned":
            x = x + self.position_embedding(torch.arange(length, device=tokens.device))
        out, _ = self.attn(x, is_causal=True, need_weights=False)  # RoPE, if any, is in here
        return self.readout(out)  # (N, L, V)


def _previous_token_batch(
    batch_size: int, length: int, vocab_size: int, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    """Tokens ``(N, L)`` and the previous token of positions 1..L-1, ``(N, L - 1)``."""
    tokens, targets = toy_batch(batch_size, length, vocab_size, generator=generator)
    return tokens, targets[:, 1:, 0]  # position 0 has no previous token: not scored


def train_with_positions(
    encoding: str,
    *,
    steps: int = 200,
    seed: int = 0,
    train_length: int = 8,
    vocab_size: int = 32,
    embed_dim: int = 32,
    num_heads: int = 2,
    max_length: int = 32,
    batch_size: int = 64,
    lr: float = 1e-2,
) -> PositionalToyModel:
    """Train a ``PositionalToyModel`` on sequences of ``train_length`` tokens with Adam.

    The loss is the cross-entropy of the previous token at positions 1 to L - 1.

    Args:
        encoding: One of ``ENCODINGS``: ``"none"``, ``"sinusoidal"``, ``"learned"``, ``"rope"``.
        steps: Adam steps; 0 returns the untrained model (same seed, same initial weights).
        seed: Seeds the initial weights and the batches; the CPU's global RNG is left untouched.
        train_length: L, the length of every training sequence.
        vocab_size: V, the number of different tokens.
        embed_dim: E, the model width.
        num_heads: H, the number of heads.
        max_length: The longest sequence the model will accept.
        batch_size: N, sequences per step.
        lr: Adam's learning rate.

    Returns:
        The model, in eval mode.

    Examples:
        >>> from attention_ref.lab.length_generalization import train_with_positions
        >>> model = train_with_positions("rope", steps=5)
        >>> model.encoding, model.training
        ('rope', False)
    """
    model = seeded(
        lambda: PositionalToyModel(encoding, vocab_size, embed_dim, num_heads, max_length), seed
    )
    generator = torch.Generator().manual_seed(seed)

    def loss() -> Tensor:
        tokens, targets = _previous_token_batch(batch_size, train_length, vocab_size, generator)
        logits = model(tokens)[:, 1:]  # (N, L - 1, V)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())

    adam_steps(model, loss, steps, lr)
    return model.eval()


def length_generalization(
    lengths: Sequence[int] = (8, 12, 16, 24, 32),
    *,
    encodings: Sequence[str] = ENCODINGS,
    seed: int = 0,
    steps: int = 200,
    train_length: int = 8,
    num_sequences: int = 500,
) -> dict[str, list[float]]:
    """Train one model per encoding on ``train_length`` tokens; accuracy at each length.

    Args:
        lengths: The evaluation lengths; at most 32 (the vocabulary and the learned table).
        encodings: Which of ``ENCODINGS`` to train.
        seed: Seeds the weights, the training batches and the evaluation sequences.
        steps: Adam steps per model.
        train_length: The length of every training sequence.
        num_sequences: Evaluation sequences per length.

    Returns:
        ``{encoding: [accuracy at each length]}``: the fraction of positions 1..L-1
            whose previous token the model names.

    Examples:
        >>> from attention_ref.lab.length_generalization import length_generalization
        >>> results = length_generalization([8], encodings=["none", "rope"], steps=100)
        >>> results["rope"][0] > 0.95 > results["none"][0]
        True
    """
    results = {}
    for encoding in encodings:
        model = train_with_positions(encoding, steps=steps, seed=seed, train_length=train_length)
        generator = torch.Generator().manual_seed(10_000 + seed)  # not a training batch
        accuracy = []
        for length in lengths:
            tokens, targets = _previous_token_batch(
                num_sequences, length, model.readout.out_features, generator
            )
            with torch.no_grad():
                predicted = model(tokens)[:, 1:].argmax(dim=-1)  # (N, L - 1)
            accuracy.append((predicted == targets).float().mean().item())
        results[encoding] = accuracy
    return results
