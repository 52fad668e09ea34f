"""Every example in a docstring of attention_ref runs alone, as a reader copies it.

pytest's own doctest collection runs examples with the module's globals, so an example can use
``torch`` or a private helper without importing it. Here each docstring's examples run in an
empty namespace instead: they must import what they use (``>>> import torch``,
``>>> from attention_ref import causal_mask``). Print options are PyTorch's defaults.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import torch

import attention_ref

MODULES = [  # every module, those of subpackages (attention_ref.lab) included
    importlib.import_module(info.name)
    for info in pkgutil.walk_packages(attention_ref.__path__, prefix="attention_ref.")
]
FINDER = doctest.DocTestFinder(exclude_empty=True)
EXAMPLES = [
    test
    for module in [attention_ref, *MODULES]
    for test in FINDER.find(module, globs={})
    if test.examples and test.name.startswith(module.__name__)
]


def test_the_api_has_examples():
    documented = {test.name.rsplit(".", 1)[-1] for test in EXAMPLES}
    assert set(attention_ref.__all__) - documented == set(), "public objects without examples"


@pytest.mark.parametrize("test", EXAMPLES, ids=lambda t: t.name)
def test_example_runs_alone(test: doctest.DocTest):
    test.globs = {"__name__": "__main__"}
    torch.set_printoptions(profile="default")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
