"""The training loop the experiments share: seeded weights, one CPU thread, Adam.

Every experiment in ``attention_ref.lab`` builds its model under a seed (leaving the caller's
CPU random state alone), then trains it with Adam at a constant learning rate on one CPU
thread: the tensors are tiny, and several threads only wait for each other, the more so on a
busy machine. The thread count is restored afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import torch
from torch import Tensor, nn

__all__ = ["adam_steps", "one_thread", "seeded"]

M = TypeVar("M", bound=nn.Module)


def seeded(build: Callable[[], M], seed: int) -> M:
    """``build()`` under ``torch.manual_seed(seed)``; the CPU random state is restored after.

    Only the CPU's: ``torch.manual_seed`` seeds the GPUs' generators too, and those stay seeded.

    Examples:
        >>> import torch
        >>> from attention_ref.lab.training import seeded
        >>> a = seeded(lambda: torch.nn.Linear(2, 2), seed=0)
        >>> b = seeded(lambda: torch.nn.Linear(2, 2), seed=0)
        >>> torch.equal(a.weight, b.weight)
        True
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


@contextmanager
def one_thread() -> Iterator[None]:
    """Run the block on one CPU thread, then restore the thread count.

    Examples:
        >>> import torch
        >>> from attention_ref.lab.training import one_thread
        >>> before = torch.get_num_threads()
        >>> with one_thread():
        ...     torch.get_num_threads()
        1
        >>> torch.get_num_threads() == before
        True
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def adam_steps(model: nn.Module, loss: Callable[[], Tensor], steps: int, lr: float) -> list[float]:
    """``steps`` Adam updates of ``model`` at a constant rate, on one thread; the losses.

    Args:
        model: The module whose parameters Adam updates.
        loss: Called once per step: draws the step's batch (if any), runs the model and
            returns the scalar loss.
        steps: How many updates; 0 leaves the model as it is.
        lr: Adam's learning rate, from the first step (no warm-up).

    Returns:
        ``steps`` floats: the loss before each update.

    Examples:
        >>> import torch
        >>> from attention_ref.lab.training import adam_steps
        >>> _ = torch.manual_seed(0)
        >>> model = torch.nn.Linear(1, 1)
        >>> x = torch.ones(4, 1)
        >>> losses = adam_steps(model, lambda: (model(x) - 3).pow(2).mean(), steps=50, lr=0.1)
        >>> len(losses), losses[-1] < losses[0]
        (50, True)
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    with one_thread():
        for _ in range(steps):
            value = loss()
            optimizer.zero_grad()
            value.backward()
            optimizer.step()
            losses.append(value.item())
    return losses
