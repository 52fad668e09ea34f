"""Code fits the column: on a 1280 px desktop window no code block scrolls sideways.

Every ``pre > code`` of every page, both languages: the included sources (at most 100
characters a line, ruff's limit) and the doctests. Collapsed blocks are opened and every
content tab is shown before measuring, so hidden code is measured too.
"""

from __future__ import annotations

from .site_pages import Page
from .visit import Visits

DESKTOP = {"width": 1280, "height": 900}

# Opens every <details> and shows every tab, then lists the code blocks wider than their box,
# each with the width it needs, the width it has and its longest line.
OVERFLOWING_CODE = """() => {
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  const style = document.createElement("style");
  style.textContent = ".tabbed-content > .tabbed-block { display: block !important; }";
  document.head.append(style);
  return [...document.querySelectorAll("pre > code")]
    .filter((code) => code.scrollWidth > code.clientWidth)
    .map((code) => {
      const lines = code.innerText.split("\\n");
      const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), "");
      return `${code.scrollWidth} > ${code.clientWidth} px, ${longest.length} chars: ${longest}`;
    });
}"""


def test_code_fits_the_column(page: Page, visits: Visits) -> None:
    context = visits.context(page, DESKTOP)
    try:
        browser_page = context.new_page()
        browser_page.goto(visits.url(page), wait_until="load")
        browser_page.evaluate("document.fonts.ready.then(() => true)")
        assert browser_page.evaluate(OVERFLOWING_CODE) == []
    finally:
        context.close()
