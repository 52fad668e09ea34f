"""The core path's reading time on the built site (docs_hooks/reading_time.py): within the bars in
both languages, and measured on what a browser shows (the parser's words against Chromium's
``innerText`` of the article, with nothing expanded)."""

from __future__ import annotations

import re

import pytest

from docs_hooks.constants import LANGUAGES
from docs_hooks.reading_time import (
    CORE_PAGE_MAX_MINUTES,
    CORE_PATH_MAX_MINUTES,
    core_path,
    count_words,
    home_page,
    measure_page,
    over_the_bars,
    rounded,
    stated_minutes,
)

from .site_pages import SITE, Page
from .visit import Visits

CORE = core_path()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_core_path_within_the_bars(lang: str) -> None:
    """At most 120 minutes of open text in all, 20 on any core page (issue 31)."""
    rows = [(page, measure_page(SITE, page, lang)) for page in CORE]
    table = "\n".join(f"{page}: {m.minutes:.1f} min" for page, m in rows)
    assert over_the_bars(rows, lang) == [], (
        f"over {CORE_PATH_MAX_MINUTES} min in all or {CORE_PAGE_MAX_MINUTES} a page:\n{table}"
    )


# Pages with collapsed boxes, tabs, code and formulas, in each language.
COMPARED = [
    (lang, name) for lang in LANGUAGES for name in ("scaled-dot-product", "masks", "multi-head")
]


@pytest.mark.parametrize(("lang", "name"), COMPARED, ids=[f"{lang}:{n}" for lang, n in COMPARED])
def test_the_measure_is_what_the_browser_shows(lang: str, name: str, visits: Visits) -> None:
    """The words and characters counted from the HTML (prose and code) are those of the
    article's innerText in Chromium, within 3 %: folded boxes and other tabs left out alike."""
    page = Page(lang, name)
    context = visits.context(page, {"width": 1280, "height": 900})
    try:
        browser_page = context.new_page()
        browser_page.goto(visits.url(page), wait_until="load")
        shown = browser_page.eval_on_selector("article.md-content__inner", "a => a.innerText")
    finally:
        context.close()
    measured = measure_page(SITE, name, lang)
    # innerText keeps a headerlink's ¶ (drawn on hover): not a word either way.
    words, cjk = count_words(re.sub("¶", " ", shown))
    parsed_words, parsed_cjk = count_words(measured.prose + "\n" + measured.code)
    assert parsed_words == pytest.approx(words, rel=0.03), (parsed_words, words)
    assert parsed_cjk == pytest.approx(cjk, rel=0.03, abs=5), (parsed_cjk, cjk)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_home_page_states_the_measured_minutes(lang: str) -> None:
    """The "Start here" table's minutes are the measured ones, rounded up, and so is its total
    (`python -m docs_hooks.reading_time SITE --write-home` sets them)."""
    stated, total = stated_minutes(home_page(lang).read_text(encoding="utf-8"))
    measured = [measure_page(SITE, page, lang).minutes for page in CORE]
    assert [minutes for _, minutes in stated] == [rounded(m) for m in measured]
    assert total == rounded(sum(measured))
