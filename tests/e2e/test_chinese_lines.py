"""No line of a Chinese page starts with closing punctuation, on a desktop and on a phone.

Chinese typesetting keeps 。，、；：？！）」』 at the end of a line. Browsers do so within text,
but not after an inline formula (an SVG box), which docs_hooks/hooks/formulas.py therefore binds
to the punctuation that follows it.
"""

from __future__ import annotations

import pytest

from docs_hooks.constants import CLOSING_FULL_WIDTH

from .site_pages import Page
from .visit import DESKTOP, JS, MOBILE, Visits


@pytest.mark.parametrize("viewport", [DESKTOP, MOBILE], ids=["desktop", "phone"])
def test_no_line_starts_with_closing_punctuation(page: Page, visits: Visits, viewport) -> None:
    if page.lang != "zh":
        pytest.skip("Chinese pages only")
    context = visits.context(page, viewport)
    try:
        browser_page = context.new_page()
        browser_page.goto(visits.url(page), wait_until="load")
        browser_page.evaluate("document.fonts.ready.then(() => true)")
        assert browser_page.evaluate(JS["line_start_punctuation"], CLOSING_FULL_WIDTH) == []
    finally:
        context.close()
