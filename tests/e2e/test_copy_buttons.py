"""Package code copied from the site follows the copy contract (docs_hooks/source_code.py): the
clipboard of an excerpt is exactly the lines it shows; the clipboard of a block of whole
definitions is a program that, pasted into a Python that has only torch and numpy, runs and
passes the docstring examples of what the block shows (the same harness as
tests/docs/test_source_copies.py)."""

from __future__ import annotations

import pytest

from tests.docs import test_source_copies as source_copies

from .site_pages import pages
from .visit import Visits


@pytest.fixture(scope="module")
def clipboard_copies(visits: Visits) -> dict[str, tuple[str, list[str]]]:
    """Each distinct clipboard text of a package-code block -> the pages that copy it."""
    found: dict[str, tuple[str, list[str]]] = {}
    for page in pages():
        for copy in visits.desktop(page).copies:
            if copy["include"] is not None:
                found.setdefault(copy["copied"], (copy["target"], []))[1].append(page.id)
    return found


def test_source_blocks_copy_what_the_contract_says(clipboard_copies, tmp_path) -> None:
    known = {b.block.copy.rstrip(): key for key, b in source_copies.BLOCKS.items()}
    assert len(clipboard_copies) == len(known)
    programs = {}
    for text, (target, where) in clipboard_copies.items():
        key = known.get(text.rstrip())
        assert key is not None, f"{where[0]} {target}: the clipboard is no known copy"
        block = source_copies.BLOCKS[key]
        if block.block.is_excerpt:
            assert text.rstrip() == block.block.shown.rstrip(), f"{where[0]}: {key}"
        else:
            programs[key] = (text, block.names)
    results = source_copies.run_programs(programs, tmp_path)
    assert sorted(results) == sorted(programs)
    for key, result in results.items():
        assert result["examples"] > 0 or result["cases"], key
