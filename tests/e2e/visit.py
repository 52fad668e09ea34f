"""Visit a page as a reader does and write down what the tests check.

Each page is opened once, in a fresh browser context (no cache, no stored palette), at desktop
width (1280 px). In this order: every request and its size, console errors, the page's facts
(math, figures, code blocks, language), a screenshot, axe-core's findings; the window narrowed
to phone width (390 px): horizontal overflow and a screenshot; the copy buttons' clipboard; the
dark palette's colours, axe-core's contrast check and a screenshot; the language menu.

Requests to any host other than the test server are recorded, then refused: the site must work
offline, so a reference to a CDN fails the tests whether or not the machine is online.
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, BrowserContext
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page as BrowserPage

from docs_hooks.doctest_copy import standalone
from docs_hooks.hooks import doctest_blocks
from docs_hooks.page_examples import doctests
from docs_hooks.source_code import include_lines, source_block

from .site_pages import SCREENSHOTS, Page, site_file

JS = {
    path.stem: path.read_text(encoding="utf-8")
    for path in (Path(__file__).parent / "js").glob("*.js")
}
DESKTOP = {"width": 1280, "height": 900}
MOBILE = {"width": 390, "height": 844}
LOCALES = {"en": "en-US", "zh": "zh-CN"}
# axe-core as axe-playwright-python bundles it: every rule, then (dark palette) contrast only.
AXE_ALL = {"resultTypes": ["violations"]}
AXE_CONTRAST = {
    "runOnly": {"type": "rule", "values": ["color-contrast"]},
    "resultTypes": ["violations"],
}
WEIGHT_KINDS = ("html", "css", "js", "img", "font", "data")
QUIET = 0.3  # seconds without a request after which a page counts as loaded


@dataclass
class Request:
    url: str
    kind: str  # one of WEIGHT_KINDS
    status: int | None = None
    size: int = 0  # response headers + body, as transferred (text is gzip-compressed)
    raw: int = 0  # the file's own size in site/
    failure: str | None = None


@dataclass
class Desktop:
    """What one desktop visit saw."""

    status: int
    requests: list[Request]
    errors: list[str]  # console errors and uncaught exceptions
    facts: dict
    axe: list[dict]
    copies: list[dict]  # {"target", "expected", "copied"} per copy button
    dark: dict
    dark_axe: list[dict]
    switch: tuple[str, int | None, str | None]  # (path, status, lang) the language menu leads to
    mobile: dict  # at phone width

    def weight(self) -> dict[str, int]:
        """Bytes transferred by kind, and ``raw``: the same files uncompressed."""
        totals = dict.fromkeys(WEIGHT_KINDS, 0)
        for request in self.requests:
            totals[request.kind] += request.size
        totals["raw"] = sum(request.raw for request in self.requests)
        return totals

    def transferred(self) -> int:
        return sum(request.size for request in self.requests)


@dataclass
class Report:
    """What the session prints at the end."""

    weights: dict[str, dict[str, int]] = field(default_factory=dict)
    axe: list[str] = field(default_factory=list)


REPORT = Report()


def _kind(resource_type: str, url: str) -> str:
    path = urlsplit(url).path
    if resource_type == "document" or path.endswith((".html", "/")):
        return "html"
    if resource_type == "stylesheet" or path.endswith(".css"):
        return "css"
    if resource_type == "script" or path.endswith(".js"):
        return "js"
    if resource_type == "image" or path.endswith((".svg", ".png", ".jpg", ".webp", ".ico")):
        return "img"
    if resource_type == "font" or path.endswith((".woff", ".woff2", ".ttf", ".otf")):
        return "font"
    return "data"


@functools.cache
def _source_copies(page: Page) -> list[str]:
    """What each package-code block of the page copies: a self-contained program, worked out
    from the page's Markdown (not from the built HTML) by docs_hooks/source_code.py."""
    markdown = page.markdown.read_text(encoding="utf-8")
    return [source_block(lines, page.lang).copy.rstrip() for lines in include_lines(markdown)]


# A highlighted block of the built page: the hook's pattern, with the data-copy it added
_BUILT_CODE = re.compile(
    doctest_blocks.CODE.pattern.replace(")<code>(", ')<code(?: data-copy="[^"]*")?>('),
    re.DOTALL,
)


@functools.cache
def _doctest_copies(page: Page) -> list[str]:
    """What each doctest block of the page copies, worked out from the page's Markdown; on the
    API reference, whose examples come from docstrings, from the examples the built page shows
    (read as the build's hook reads them)."""
    markdown = page.markdown.read_text(encoding="utf-8")
    transcripts = [block.transcript for block in doctests(markdown)]
    if not transcripts:
        built = page.file.read_text(encoding="utf-8")
        found = (doctest_blocks.doctest_text(m) for m in _BUILT_CODE.finditer(built))
        transcripts = [t for t in found if t is not None]
    return standalone(transcripts, page.lang)


def expected_copy(
    code_text: str, include: int | None = None, page: Page | None = None, doctest: int = 0
) -> str:
    """The clipboard after clicking a block's copy button: the code alone, or for package code
    a program that runs on its own.

    A doctest block (the page's ``doctest``-th) copies its examples' source as Python's own
    doctest parser reads it, a raising line commented out, after the earlier lines of the
    page it needs (docs_hooks/doctest_copy.py, which the site's build uses too).
    """
    if include is not None and page is not None:
        return _source_copies(page)[include]
    if code_text.lstrip().startswith(">>>") and page is not None:
        return _doctest_copies(page)[doctest]
    return code_text.rstrip()


class Visits:
    """Each page's desktop and mobile visit, made on first use and kept."""

    def __init__(self, browser: Browser, base_url: str) -> None:
        self.browser = browser
        self.base_url = base_url
        self.axe = Axe()
        self._done: dict[tuple[str, Page], object] = {}

    def url(self, page: Page) -> str:
        return self.base_url + page.path

    def local(self, url: str) -> bool:
        return url.startswith(self.base_url + "/") or url.startswith(("data:", "blob:"))

    def desktop(self, page: Page) -> Desktop:
        return self._once("desktop", page, self._desktop)

    def _once(self, view: str, page: Page, make):
        key = (view, page)
        if key not in self._done:
            try:
                self._done[key] = make(page)
            except Exception as error:  # kept, and raised again for each test
                self._done[key] = error
        result = self._done[key]
        if isinstance(result, Exception):
            raise RuntimeError(f"the {view} visit of {page.path} failed: {result}") from result
        return result

    def context(self, page: Page, viewport: dict, **options) -> BrowserContext:
        context = self.browser.new_context(
            viewport=viewport,
            locale=LOCALES[page.lang],
            color_scheme="light",
            reduced_motion="reduce",
            **options,
        )
        # Offline: a request to another host is recorded by the caller, then refused here.
        context.route(lambda url: not self.local(url), lambda route: route.abort("blockedbyclient"))
        return context

    @staticmethod
    def track(context: BrowserContext) -> tuple[list, set]:
        """Every request of the context (workers' too), and those still under way."""
        requests: list = []
        inflight: set = set()

        def started(request) -> None:
            requests.append(request)
            inflight.add(request)

        context.on("request", started)
        context.on("requestfinished", lambda request: inflight.discard(request))
        context.on("requestfailed", lambda request: inflight.discard(request))
        return requests, inflight

    def screenshot(self, browser_page: BrowserPage, page: Page, view: str) -> None:
        path = SCREENSHOTS / page.lang / f"{page.name}.{view}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        # The API page at phone width is a very tall image: on a busy 2-core machine it can
        # take longer than Playwright's default 30 s.
        browser_page.screenshot(path=path, full_page=True, animations="disabled", timeout=120_000)

    def _load(self, browser_page: BrowserPage, url: str, inflight: set | None = None) -> int:
        """Open the page; with ``inflight``, wait until the network has been quiet for QUIET s.

        Material fetches the search index, the search worker's scripts and the sitemaps after
        the page's load event; all of them count in the page's requests and weight.
        """
        response = browser_page.goto(url, wait_until="load")
        browser_page.evaluate("document.fonts.ready.then(() => true)")
        quiet_since = time.monotonic()
        deadline = quiet_since + 15
        while inflight is not None and time.monotonic() < deadline:
            browser_page.wait_for_timeout(50)  # lets Playwright deliver the request events
            if inflight:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= QUIET:
                break
        browser_page.wait_for_function("[...document.images].every(img => img.complete)")
        return response.status if response else 0

    def _desktop(self, page: Page) -> Desktop:
        context = self.context(page, DESKTOP)
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=self.base_url)
        requests, inflight = self.track(context)
        errors: list[str] = []
        browser_page = context.new_page()
        browser_page.on(
            "console", lambda m: m.type == "error" and errors.append(f"console: {m.text}")
        )
        browser_page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
        try:
            status = self._load(browser_page, self.url(page), inflight)
            recorded = [self._request(r) for r in requests]
            facts = browser_page.evaluate(JS["facts"])
            self.screenshot(browser_page, page, "desktop")
            axe = self._axe(browser_page, AXE_ALL)
            mobile = self._phone_width(browser_page, page)
            copies = self._copy_buttons(browser_page, page)
            dark = self._dark(browser_page, page)
            dark_axe = self._axe(browser_page, AXE_CONTRAST)
            switch = self._switch_language(browser_page, page)
        finally:
            context.close()
        desktop = Desktop(
            status, recorded, errors, facts, axe, copies, dark, dark_axe, switch, mobile
        )
        REPORT.weights[page.path] = desktop.weight()
        for palette, found in (("light", axe), ("dark", dark_axe)):
            for v in found:
                REPORT.axe.append(
                    f"{page.path} [{palette}] {v['impact']}: {v['id']} ({v['help']}): "
                    + "; ".join(v["targets"][:5])
                    + (f" … and {len(v['targets']) - 5} more" if len(v["targets"]) > 5 else "")
                )
        return desktop

    def _axe(self, browser_page: BrowserPage, options: dict) -> list[dict]:
        """axe-core's violations on the page as it is now: rule, impact, help, where."""
        found = self.axe.run(browser_page, options=options).response["violations"]
        return [
            {
                "id": v["id"],
                "impact": v["impact"],
                "help": v["help"],
                "targets": [" ".join(map(str, n["target"])) for n in v["nodes"]],
            }
            for v in found
        ]

    def _request(self, request) -> Request:
        recorded = Request(request.url, _kind(request.resource_type, request.url))
        if not self.local(request.url) or request.url.startswith(("data:", "blob:")):
            recorded.failure = request.failure or "not requested from this site"
            return recorded
        response = request.response()
        if response is None:
            recorded.failure = request.failure or "no response"
            return recorded
        recorded.status = response.status
        file = site_file(unquote(urlsplit(request.url).path))
        recorded.raw = file.stat().st_size if file.is_file() else 0
        try:
            sizes = request.sizes()
            recorded.size = sizes["responseBodySize"] + sizes["responseHeadersSize"]
        except PlaywrightError:
            recorded.size = len(response.body())
        return recorded

    def _copy_buttons(self, browser_page: BrowserPage, page: Page) -> list[dict]:
        """Click every copy button, as a reader does, and read the clipboard."""
        copies = []
        doctest = 0  # how many doctest blocks came before
        for i in range(browser_page.locator("[data-clipboard-target]").count()):
            button = browser_page.evaluate(JS["copy"], i)
            browser_page.mouse.move(button["x"], button["y"])
            browser_page.mouse.click(button["x"], button["y"])
            copied = ""
            for _ in range(20):
                copied = browser_page.evaluate("navigator.clipboard.readText()")
                if copied:
                    break
                browser_page.wait_for_timeout(25)
            copies.append(
                {
                    "target": button["target"],
                    "expected": expected_copy(button["text"], button["include"], page, doctest),
                    "include": button["include"],
                    "copied": copied,
                }
            )
            doctest += button["text"].lstrip().startswith(">>>")
        browser_page.keyboard.press("Escape")
        return copies

    def _dark(self, browser_page: BrowserPage, page: Page) -> dict:
        """Switch to the dark palette with the header's toggle; read colours; screenshot."""
        browser_page.evaluate("window.scrollTo(0, 0)")
        browser_page.locator("form[data-md-component=palette] label:visible").first.click()
        browser_page.wait_for_function(
            "document.body.getAttribute('data-md-color-scheme') === 'slate'"
        )
        # As the reader left it before the copy buttons: details closed, no "Copied" toast.
        browser_page.evaluate(
            """() => {
                document.querySelectorAll("details[open]").forEach(d => d.open = false)
                document.querySelectorAll(".md-dialog").forEach(d => d.remove())
            }"""
        )
        facts = browser_page.evaluate(JS["dark"])
        self.screenshot(browser_page, page, "dark")
        return facts

    def _switch_language(self, browser_page: BrowserPage, page: Page) -> tuple:
        """Pick the other language in the header's menu: where does it lead?

        The twin page's own visit picks this page's language: together, there and back.
        """
        lang = page.twin().lang
        browser_page.evaluate("window.scrollTo(0, 0)")
        browser_page.hover(".md-header .md-select")
        link = browser_page.locator(f".md-header .md-select__link[hreflang={lang}]")
        with browser_page.expect_navigation(wait_until="domcontentloaded") as navigation:
            link.click()
        response = navigation.value
        return (
            urlsplit(browser_page.url).path,
            response.status if response else None,
            browser_page.evaluate("document.documentElement.lang"),
        )

    def _phone_width(self, browser_page: BrowserPage, page: Page) -> dict:
        """The page at phone width (the window narrowed to 390 px): overflow; screenshot."""
        browser_page.set_viewport_size(MOBILE)
        browser_page.evaluate("new Promise(done => requestAnimationFrame(() => done()))")
        facts = browser_page.evaluate(JS["mobile"])
        self.screenshot(browser_page, page, "mobile")
        browser_page.set_viewport_size(DESKTOP)
        browser_page.evaluate("new Promise(done => requestAnimationFrame(() => done()))")
        return facts


def weight_table(weights: dict[str, dict[str, int]]) -> str:
    """A Markdown table of the pages' weights in kB, heaviest first."""

    def total(kinds: dict[str, int]) -> int:
        return sum(kinds[k] for k in WEIGHT_KINDS)

    rows = sorted(weights.items(), key=lambda item: -total(item[1]))
    header = ["page", *WEIGHT_KINDS, "total", "uncompressed"]
    lines = [
        "| " + " | ".join(header) + " |",
        "| --- |" + " ---: |" * (len(header) - 1),
    ]
    for path, kinds in rows:
        cells = [f"{kinds[k] / 1000:.1f}" for k in WEIGHT_KINDS]
        cells += [f"**{total(kinds) / 1000:.1f}**", f"{kinds['raw'] / 1000:.1f}"]
        lines.append(f"| {path} | " + " | ".join(cells) + " |")
    heaviest = ", ".join(f"{p} ({total(k) / 1e6:.2f} MB)" for p, k in rows[:3])
    lines += [
        "",
        "kB = 1000 bytes transferred on a first visit (no cache), headers included, text",
        "gzip-compressed as static hosts serve it; data = search index and sitemaps.",
        f"Heaviest: {heaviest}.",
    ]
    return "\n".join(lines)


def has_cjk(text: str) -> bool:
    return bool(re.search(r"[\u3400-\u9fff\uf900-\ufaff]", text or ""))
