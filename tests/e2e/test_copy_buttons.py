"""Package code copied from the site runs: the clipboard of every package-code block, pasted
into a Python that has only torch and numpy, defines what the block shows and gives
attention_ref's results (the same harness as tests/test_source_copies.py)."""

from __future__ import annotations

import pytest

from tests import test_source_copies as source_copies

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


def test_source_blocks_copy_programs_that_run(clipboard_copies, tmp_path) -> None:
    distinct = {text.rstrip() for text, _, _ in source_copies.BLOCKS.values()}
    assert len(clipboard_copies) == len(distinct)
    by_text = {text.rstrip(): key for key, (text, _, _) in source_copies.BLOCKS.items()}
    jobs = []
    for text, (target, where) in clipboard_copies.items():
        key = by_text.get(text.rstrip())
        assert key is not None, f"{where[0]} {target}: the clipboard is no known program"
        includes = source_copies.BLOCKS[key][1]
        names = source_copies._main_names(includes)
        jobs.append({"key": key, "copy": text, "names": names})
    for needs_matplotlib in (False, True):
        selected = [
            job
            for job in jobs
            if any(n in source_copies.cases.NEEDS_MATPLOTLIB for n in job["names"])
            == needs_matplotlib
        ]
        wanted = ["torch", "numpy", *(["matplotlib"] if needs_matplotlib else [])]
        folder = tmp_path / f"run-{needs_matplotlib}"
        folder.mkdir()
        environment = source_copies._environment(folder / "site", wanted)
        ran = source_copies._run(environment, selected, folder)
        assert "attention_ref" not in ran["modules"]
        assert sorted(ran["results"]) == sorted(job["key"] for job in selected)
