"""No line of a Chinese page starts with closing punctuation or ends with opening punctuation,
on a desktop and on a phone.

Chinese typesetting keeps 。，、；：？！）」』 at the end of a line and （「『“《 at the start of
one. Browsers do so within text, but not beside an inline formula (an SVG box), which
docs_hooks/hooks/formulas.py therefore binds to the punctuation that follows it and to the
opening mark before it.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser

from docs_hooks.constants import CLOSING_FULL_WIDTH, OPENING_FULL_WIDTH
from docs_hooks.hooks.formulas import bind_punctuation

from .site_pages import Page
from .visit import DESKTOP, JS, MOBILE, Visits


def _stranded(browser_page) -> dict[str, list[str]]:
    return {
        "line starts with closing punctuation": browser_page.evaluate(
            JS["stranded_punctuation"], {"marks": CLOSING_FULL_WIDTH, "edge": "start"}
        ),
        "line ends with opening punctuation": browser_page.evaluate(
            JS["stranded_punctuation"], {"marks": OPENING_FULL_WIDTH, "edge": "end"}
        ),
    }


@pytest.mark.parametrize("viewport", [DESKTOP, MOBILE], ids=["desktop", "phone"])
def test_no_line_starts_with_closing_or_ends_with_opening_punctuation(
    page: Page, visits: Visits, viewport
) -> None:
    if page.lang != "zh":
        pytest.skip("Chinese pages only")
    context = visits.context(page, viewport)
    try:
        browser_page = context.new_page()
        browser_page.goto(visits.url(page), wait_until="load")
        browser_page.evaluate("document.fonts.ready.then(() => true)")
        stranded = _stranded(browser_page)
        assert stranded == {key: [] for key in stranded}
    finally:
        context.close()


# A line exactly ten characters wide, then a formula: unbound, the browser breaks after "（".
SAMPLE = (
    '<div class="md-content"><article lang="zh-Hans" style="width: 10em; font: 20px/1.6 '
    "'Noto Sans CJK SC', sans-serif\"><p>一二三四五六七八九（"
    '<span class="arithmatex"><svg width="3em" height="1em" viewBox="0 0 30 10" role="img">'
    '<rect width="30" height="10"/></svg></span>）</p></article></div>'
)
NOBREAK = "<style>.nobreak { white-space: nowrap; }</style>"  # as docs/stylesheets/extra.css


@pytest.mark.parametrize("bound", [False, True], ids=["as-written", "bound-by-the-hook"])
def test_the_check_finds_an_opening_bracket_left_before_a_formula(browser: Browser, bound):
    html = NOBREAK + (bind_punctuation(SAMPLE) if bound else SAMPLE)
    assert ('class="nobreak"' in html) == bound
    browser_page = browser.new_page()
    try:
        browser_page.set_content(html)
        found = browser_page.evaluate(
            JS["stranded_punctuation"], {"marks": OPENING_FULL_WIDTH, "edge": "end"}
        )
        assert bool(found) != bound, found
    finally:
        browser_page.close()
