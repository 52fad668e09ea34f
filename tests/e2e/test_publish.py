"""What publishing the site needs: page-level language alternates, the 404 page at any path,
"edit this page" and "report a problem" on every page, and a footer that says what the page
was built with."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import pytest

from .site_pages import ROOT, SITE, Page, base_path, pages, site_url
from .visit import Visits, has_cjk

REPOSITORY = "https://github.com/attention-ref/attention-ref"


class _Head(HTMLParser):
    """The hreflang links, the links of the content's action buttons and the footer's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.alternates: dict[str, str] = {}
        self.actions: list[dict[str, str]] = []
        self.build_line = ""
        self._in_build = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "link" and values.get("rel") == "alternate" and "hreflang" in values:
            self.alternates[values["hreflang"]] = values["href"]
        if tag == "a" and "md-content__button" in values.get("class", ""):
            self.actions.append(values)
        if self._in_build:
            self._in_build += 1
        elif tag == "div" and "ar-build" in values.get("class", ""):
            self._in_build = 1

    def handle_endtag(self, tag: str) -> None:
        if self._in_build:
            self._in_build -= 1

    def handle_data(self, data: str) -> None:
        if self._in_build:
            self.build_line += data


def _head(page: Page) -> _Head:
    parser = _Head()
    parser.feed(page.file.read_text(encoding="utf-8"))
    return parser


def test_alternates_name_the_twin_pages(page: Page) -> None:
    """The head names this page in every language, absolute, and English as ``x-default``."""
    alternates = _head(page).alternates
    en, zh = Page("en", page.slug), Page("zh", page.slug)
    expected = {
        "en": site_url() + en.relative,
        "zh": site_url() + zh.relative,
        "x-default": site_url() + en.relative,
    }
    assert alternates == expected


def test_edit_view_and_report_links(page: Page) -> None:
    """Every page links its Markdown source (edit and view) and a new issue that names it."""
    head = _head(page)
    edit = [a["href"] for a in head.actions if a.get("rel") == "edit"]
    assert len(edit) == 1, head.actions
    source = edit[0].removeprefix(f"{REPOSITORY}/edit/main/")
    assert (ROOT / source).is_file(), edit[0]
    expected_suffix = ".zh.md" if page.lang == "zh" else ".md"
    assert source.endswith(expected_suffix) and not (
        page.lang == "en" and source.endswith(".zh.md")
    )
    assert f"{REPOSITORY}/raw/main/{source}" in [a["href"] for a in head.actions]
    report = [a for a in head.actions if "/issues/new?" in a["href"]]
    assert len(report) == 1
    query = parse_qs(urlsplit(report[0]["href"]).query)
    assert source in query["body"][0]
    assert site_url() + page.relative in query["body"][0]
    assert has_cjk(report[0]["title"]) == (page.lang == "zh")


def test_footer_says_what_the_page_was_built_with(page: Page) -> None:
    """Commit, date and torch version, in the page's language."""
    line = " ".join(_head(page).build_line.split())
    assert re.search(r"\b[0-9a-f]{7}\b", line), line
    assert re.search(r"\d{4}-\d{2}-\d{2}", line), line
    assert re.search(r"torch \d+\.\d+\.\d+", line), line
    assert has_cjk(line) == (page.lang == "zh"), line


def test_hreflang_links_stay_after_load(visits: Visits) -> None:
    """The head's hreflang links are back once the page has loaded (crawlers that run scripts
    read them too), and Material looked for no sitemap next to them."""
    page = Page("zh", "masks")
    context = visits.context(page, {"width": 1280, "height": 900})
    requested: list[str] = []
    context.on("request", lambda request: requested.append(request.url))
    try:
        browser_page = context.new_page()
        browser_page.goto(visits.url(page), wait_until="networkidle")
        found = browser_page.eval_on_selector_all(
            "link[rel=alternate][hreflang]", "links => links.map(l => l.hreflang)"
        )
    finally:
        context.close()
    assert sorted(found) == ["en", "x-default", "zh"]
    assert [url for url in requested if url.endswith("sitemap.xml")] == []


NOT_FOUND = ["no-such-page/", "zh/no-such-page/", "a/b/c/deep.html", "masks/missing/"]


@pytest.mark.parametrize("path", NOT_FOUND)
def test_404_page_anywhere(path: str, visits: Visits) -> None:
    """An unknown address gets the 404 page, styled, in both languages, with both homes."""
    home = Page("en", "")
    context = visits.context(home, {"width": 1280, "height": 900})
    errors: list[str] = []
    failed: list[str] = []

    def finished(request) -> None:
        response = request.response()
        if request.resource_type != "document" and response and response.status >= 400:
            failed.append(f"{request.url}: {response.status}")

    context.on("requestfinished", finished)
    context.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
    try:
        browser_page = context.new_page()
        browser_page.on(
            "console",
            lambda m: m.type == "error" and "status of 404" not in m.text and errors.append(m.text),
        )
        browser_page.on("pageerror", lambda e: errors.append(str(e)))
        response = browser_page.goto(visits.base_url + base_path() + path, wait_until="load")
        browser_page.wait_for_load_state("networkidle")
        facts = browser_page.evaluate(
            """() => ({
                h1: document.querySelector("h1").innerText,
                text: document.querySelector(".md-content").innerText,
                styled: getComputedStyle(document.querySelector(".md-header")).position,
                homes: [...document.querySelectorAll(".md-content a.md-button")]
                    .map(a => new URL(a.href).pathname),
                search: !!document.querySelector("label[for=__search]"),
            })"""
        )
        browser_page.click(".md-content label[for=__search]")
        browser_page.keyboard.type("softmax", delay=20)
        browser_page.wait_for_selector(".md-search-result__item", timeout=10_000)
        browser_page.goto(visits.base_url + facts["homes"][1], wait_until="load")
        zh_home = browser_page.evaluate("document.documentElement.lang")
    finally:
        context.close()
    assert response is not None and response.status == 404
    assert "not found" in facts["h1"].lower() and has_cjk(facts["h1"])
    assert "home" in facts["text"] and "首页" in facts["text"]
    assert facts["styled"] in ("sticky", "fixed"), "Material's stylesheet did not load"
    assert facts["homes"] == [base_path(), base_path() + "zh/"]
    assert facts["search"]
    assert zh_home == "zh-Hans"
    assert errors == []
    assert failed == []


def test_404_page_has_no_alternates() -> None:
    """The 404 page is nobody's twin: no hreflang links, and it names both homes."""
    parser = _Head()
    parser.feed((SITE / "404.html").read_text(encoding="utf-8"))
    assert parser.alternates == {}


def test_every_page_listed_with_twins_in_sitemap() -> None:
    """The sitemap keeps every page's alternates in both languages, at the site's address."""
    sitemap = (SITE / "sitemap.xml").read_text(encoding="utf-8")
    for page in pages():
        assert f"<loc>{site_url() + page.relative}</loc>" in sitemap, page.path
        twin = page.twin()
        assert f'hreflang="{twin.lang}" href="{site_url() + twin.relative}"' in sitemap, page.path


def test_root_404_page_is_the_english_build() -> None:
    """The Chinese build writes its own 404.html at the root; the English one is put back."""
    assert '<html lang="en"' in (SITE / "404.html").read_text(encoding="utf-8")
