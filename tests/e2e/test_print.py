"""The cheat sheet prints on two A4 pages, in both languages: Chromium prints it to PDF with the
site's print styles (docs/stylesheets/extra.css: no header, tabs, sidebars or footer)."""

from __future__ import annotations

import re

import pytest

from docs_hooks.constants import LANGUAGES

from .site_pages import SCREENSHOTS, Page
from .visit import Visits

MAX_PAGES = 2
# A page object of the PDF (not the /Pages tree above them); Chromium writes them uncompressed.
PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_cheat_sheet_prints_on_two_pages(lang: str, visits: Visits) -> None:
    page = Page(lang, "cheat-sheet")
    context = visits.context(page, {"width": 1280, "height": 900})
    try:
        browser_page = context.new_page()
        browser_page.goto(visits.url(page), wait_until="networkidle")
        pdf = browser_page.pdf(format="A4", print_background=True)
    finally:
        context.close()
    path = SCREENSHOTS / lang / "cheat-sheet.pdf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pdf)
    printed = len(PDF_PAGE.findall(pdf))
    assert 1 <= printed <= MAX_PAGES, f"{page.path} prints on {printed} A4 pages ({path})"
