"""Search answers a reader's question with a teaching page first, not the API reference, the
glossary or the references (issue 31): the API reference is boosted down in its front matter
(``search: boost``)."""

from __future__ import annotations

import pytest

from .search import search_results
from .site_pages import base_path
from .visit import Visits

NOT_TEACHING = ("reference/", "references/", "glossary/")
QUESTIONS = [
    ("en", "kv cache"),
    ("en", "why divide by sqrt"),
    ("en", "causal mask"),
    ("zh", "掩码"),
    ("zh", "KV 缓存"),
]


@pytest.mark.parametrize(("lang", "query"), QUESTIONS, ids=[q for _, q in QUESTIONS])
def test_a_teaching_page_comes_first(lang: str, query: str, visits: Visits) -> None:
    found = search_results(visits, lang, query)
    assert found, f"no result for {query!r}"
    first = found[0].removeprefix(base_path()).removeprefix(f"{lang}/" if lang != "en" else "")
    assert first and not first.startswith(NOT_TEACHING), f"{query!r}: first result {found}"
