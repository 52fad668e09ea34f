"""Typing a query into the search box of a language's home page, as a reader does."""

from __future__ import annotations

from .site_pages import Page
from .visit import Visits


def search_results(visits: Visits, lang: str, query: str) -> list[str]:
    """The paths of the pages search lists for ``query`` on ``lang``'s home, in order, one
    entry per page (a page's sections follow it)."""
    home = Page(lang, "")
    context = visits.context(home, {"width": 1280, "height": 900})
    try:
        browser_page = context.new_page()
        browser_page.goto(visits.url(home), wait_until="networkidle")
        browser_page.click(".md-search__input")
        browser_page.keyboard.type(query, delay=30)
        if not query.isascii():
            # Playwright enters characters off the keyboard as an IME commits them, without key
            # events; Material's search reads the box on keyup, which the IME's commit key sends.
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
