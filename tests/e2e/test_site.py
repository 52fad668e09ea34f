"""The whole site: each page has its twin, no link is broken, search favours the page's language."""

from __future__ import annotations

import re
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from .search import search_results
from .site_pages import SITE, Page, base_path, pages, site_url
from .visit import Visits, has_cjk

# --------------------------------------------------------------------------- twins


def test_twin_pages(slug: str, visits: Visits) -> None:
    """Every page exists in English and in Chinese, and the Chinese one is written in Chinese.

    mkdocs-static-i18n fills a missing ``x.zh.md`` with the English page, so ``/zh/x/`` exists
    either way: its text must differ from the English page's and contain Chinese.
    """
    en, zh = Page("en", slug), Page("zh", slug)
    assert en.file.is_file(), f"{en.path} is missing"
    assert zh.file.is_file(), f"{zh.path} is missing"
    en_text = visits.desktop(en).facts["prose"]
    zh_text = visits.desktop(zh).facts["prose"]
    assert has_cjk(visits.desktop(zh).facts["h1"] + zh_text), f"{zh.path} has no Chinese text"
    assert zh_text != en_text, (
        f"{zh.path} is the English page (docs/{slug or 'index'}.zh.md missing?)"
    )


# --------------------------------------------------------------------------- links


class _Html(HTMLParser):
    """The ids and the links of one HTML file."""

    LINKS: ClassVar[dict[str, str]] = {
        "a": "href",
        "link": "href",
        "area": "href",
        "script": "src",
        "img": "src",
        "source": "src",
        "iframe": "src",
        "audio": "src",
        "video": "src",
    }

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in ("id", "name") if tag in ("a", "map") else ("id",):
            if values.get(name):
                self.ids.add(values[name])
        if (attr := self.LINKS.get(tag)) and values.get(attr):
            self.links.append(values[attr])


@cache
def _parse(path: Path) -> _Html:
    parser = _Html()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _target(url: str) -> Path | None:
    """The file in site/ that a URL of this site points at; None for another site's URL."""
    if not url.startswith(site_url()):
        return None
    path = unquote(urlsplit(url).path)
    file = SITE / path.removeprefix(base_path())
    if path.endswith("/") or file.is_dir():
        file = file / "index.html"
    return file


def test_no_broken_links() -> None:
    """Every link, script, stylesheet and image of every built HTML file points at a file that
    exists, and every ``#anchor`` at an id in it: glossary and API anchors included."""
    files = sorted(SITE.rglob("*.html"))
    assert len(files) > 2
    broken: list[str] = []
    checked = 0
    for file in files:
        page_url = site_url() + file.relative_to(SITE).as_posix()
        for link in _parse(file).links:
            if link.startswith(("mailto:", "javascript:", "data:", "tel:")):
                continue
            url = urljoin(page_url, link)
            target = _target(url)
            if target is None:
                continue  # another site: not fetched, not checked offline
            where = f"{file.relative_to(SITE)}: {link}"
            checked += 1
            if not target.is_file():
                broken.append(f"{where} -> missing {target.relative_to(SITE)}")
                continue
            fragment = unquote(urlsplit(url).fragment)
            if fragment and target.suffix == ".html" and fragment not in _parse(target).ids:
                broken.append(f"{where} -> no id {fragment!r} in {target.relative_to(SITE)}")
    assert checked > 100
    assert broken == []


def test_sitemap_lists_existing_pages_with_twins() -> None:
    """The sitemap (which search engines read) lists every page, each with its twin."""
    sitemap = (SITE / "sitemap.xml").read_text(encoding="utf-8")
    locations = re.findall(r"<loc>([^<]+)</loc>", sitemap)
    alternates = re.findall(
        r'<xhtml:link rel="alternate" hreflang="[\w-]+" href="([^"]+)"', sitemap
    )
    missing = [u for u in locations + alternates if not (t := _target(u)) or not t.is_file()]
    assert missing == []
    listed = {urlsplit(u).path for u in locations}
    assert {p.path for p in pages()} <= listed


# --------------------------------------------------------------------------- search

SEARCHES = [
    ("zh", "注意力"),
    ("zh", "掩码"),
    ("zh", "层归一化"),
    ("en", "softmax"),
    ("en", "mask"),
    ("en", "LayerNorm"),
]


@pytest.mark.parametrize(("lang", "query"), SEARCHES, ids=[q for _, q in SEARCHES])
def test_search_lists_own_language_first(lang: str, query: str, visits: Visits) -> None:
    """Typed into the search box of a page, a query lists pages of that page's language first."""
    found = search_results(visits, lang, query)
    zh = [path.startswith(base_path() + "zh/") for path in found]
    own = [is_zh == (lang == "zh") for is_zh in zh]
    assert found, f"no result for {query!r}"
    assert own[0], f"first result {found[0]} is not a {lang} page: {found}"
    # The page's own language comes first: no other-language page before an own-language one.
    assert own == sorted(own, reverse=True), found
