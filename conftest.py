"""Shared pytest setup: doctests see ``torch`` and print tensors the same everywhere."""

import matplotlib
import pytest
import torch

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict) -> None:
    torch.set_printoptions(precision=4, sci_mode=False)
    doctest_namespace["torch"] = torch
    doctest_namespace["np"] = __import__("numpy")
