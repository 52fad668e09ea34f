"""The tutorials this site grew from are named for readers, never by an internal number.

The References page lists them (## The tutorials this site grew from, one ### heading each, the
same ids in both languages); a page refers to one by a short name linking to its entry, or
makes its point without naming a source. No page, figure text or docstring calls a tutorial
"seed 000" / "种子 000", and every link to an entry lands on a heading that exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs_hooks.markdown import heading_ids

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TUTORIALS = (
    "tutorial-notebook",
    "tutorial-overview",
    "tutorial-maths",
    "tutorial-einsum",
    "tutorial-breakdown",
)
# "seed 004", "Seeds 000 and 002", "seeds 000, 002", "种子 003", "种子教程 000", "seed 003's".
TUTORIAL_AS_SEED = re.compile(r"\bseeds?\s+0\d\d\b|种子(?:教程)?\s*0\d\d", re.IGNORECASE)
TUTORIAL_LINK = re.compile(r"references\.md#(?P<id>[\w-]+)")


def _texts() -> list[Path]:
    pages = sorted(DOCS.rglob("*.md"))
    hooks = sorted((ROOT / "docs_hooks").rglob("*.py"))
    return pages + hooks + sorted((ROOT / "attention_ref").glob("*.py"))


@pytest.mark.parametrize("path", _texts(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_tutorial_is_called_a_seed(path):
    text = path.read_text(encoding="utf-8")
    found = [m[0] for m in TUTORIAL_AS_SEED.finditer(text)]
    assert not found, f"name the tutorial (references.md#tutorial-...), not {found}"


@pytest.mark.parametrize("page", ["references.md", "references.zh.md"])
def test_references_list_the_tutorials(page):
    ids = heading_ids((DOCS / page).read_text(encoding="utf-8"))
    assert "source-tutorials" in ids
    assert [i for i in ids if i.startswith("tutorial-")] == list(TUTORIALS)


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_links_to_the_references_land_on_a_heading(page):
    lang = ".zh" if page.name.endswith(".zh.md") else ""
    references = DOCS / f"references{lang}.md"
    ids = set(heading_ids(references.read_text(encoding="utf-8")))
    links = {m["id"] for m in TUTORIAL_LINK.finditer(page.read_text(encoding="utf-8"))}
    assert links <= ids, f"no such heading on {references.name}: {sorted(links - ids)}"
