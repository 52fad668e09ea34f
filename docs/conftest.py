"""pytest runs the ```pycon blocks of every page, English and Chinese, as doctests (Sybil).

Only ```pycon blocks are run. ```python blocks hold nothing but include lines
(``include: attention_ref.attention.attention_weights``), whose code is the package's own and is
tested there (tests/docs/test_source_copies.py runs what their copy buttons copy);
tests/docs/test_docs_code_blocks.py checks that no other code hides in a page.

Each page is one namespace, run top to bottom, as a reader runs it in a fresh interpreter: a
page imports what it uses in its first block, and sets there, visibly, any print option its
outputs need (``torch.set_printoptions(sci_mode=False)``). Nothing is set up behind the page's
back: each page starts from torch's default print options and ends by restoring them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import torch
from sybil import Document, Region, Sybil
from sybil.evaluators.doctest import DocTestEvaluator
from sybil.parsers.abstract import DocTestStringParser
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

# ```pycon, optionally followed by attributes: ```pycon title="Causal mask"
PYCON_FENCE = RawFencedCodeBlockLexer(info_pattern=re.compile(r"pycon(?:[ \t][^\n]*)?$\n", re.M))


class PyconDocTestParser:
    """Every ``>>>`` example inside a ```pycon fenced block is a doctest region."""

    def __init__(self) -> None:
        self.doctests = DocTestStringParser(DocTestEvaluator())

    def __call__(self, document: Document) -> Iterable[Region]:
        for block in PYCON_FENCE(document):
            source = block.lexemes["source"]
            for region in self.doctests(source, document.path):
                region.adjust(block, source)
                yield region


def _fresh_print_options(namespace: dict) -> None:
    """torch's default print options, as in a fresh interpreter (set_printoptions is global)."""
    torch.set_printoptions(profile="default", sci_mode=None)


pytest_collect_file = Sybil(
    parsers=[PyconDocTestParser()],
    patterns=["*.md"],  # x.md and x.zh.md alike
    excludes=["includes/*"],
    setup=_fresh_print_options,
    teardown=_fresh_print_options,
).pytest()
