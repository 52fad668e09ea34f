"""Search answers a reader's question with a teaching page first, not the API reference, the
glossary or the references (issue 31): the API reference is boosted down in its front matter
(``search: boost``)."""

from __future__ import annotations

import pytest

from .site_pages import Page, base_path
from .visit import Visits

NOT_TEACHING = ("reference/", "references/", "glossary/")
QUESTIONS = [
    ("en", "kv cache"),
    ("en", "why divide by sqrt"),
    ("en", "causal mask"),
    ("zh", "掩码"),
    ("zh", "KV 缓存"),
]


def _results(visits: Visits, lang: str, query: str) -> list[str]:
    home = Page(lang, "")
    context = visits.context(home, {"width": 1280, "height": 900})
    try:
        browser_page = context.new_page()
        browser_page.goto(visits.url(home), wait_until="networkidle")
        browser_page.click(".md-search__input")
        browser_page.keyboard.type(query, delay=30)
        if not query.isascii():
            # Characters off the keyboard arrive as an IME commits them, without key events;
            # Material's search reads the box on keyup (as in test_site.py).
            browser_page.keyboard.up("Space")
        browser_page.wait_for_selector(".md-search-result__item", timeout=10_000)
        browser_page.wait_for_timeout(300)
        found = browser_page.eval_on_selector_all(
            ".md-search-result__item > .md-search-result__link",
            "links => links.map(a => new URL(a.href).pathname)",
        )
    finally:
        context.close()
    return list(dict.fromkeys(found))


@pytest.mark.parametrize(("lang", "query"), QUESTIONS, ids=[q for _, q in QUESTIONS])
def test_a_teaching_page_comes_first(lang: str, query: str, visits: Visits) -> None:
    found = _results(visits, lang, query)
    assert found, f"no result for {query!r}"
    first = found[0].removeprefix(base_path()).removeprefix(f"{lang}/" if lang != "en" else "")
    assert first and not first.startswith(NOT_TEACHING), f"{query!r}: first result {found}"
