"""The attention explorer on the visualizing page, in the browser, in both languages.

The numbers it shows are the ones in the site's explorer/attention.json (whose numbers
tests/docs/test_explorer.py checks against attention_ref): pointing at a cell, focusing the
heat map and moving with the arrow keys, switching view, layer and head, the log scale and the
mask. Every page's own visit (test_pages.py) covers console errors, foreign requests, axe-core,
dark mode, 390 px and the page weight; here axe-core runs again with the table shown and in the
dark palette, and screenshots of the explorer go to screenshots/explorer/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache

import pytest
from playwright.sync_api import Page as BrowserPage

from .site_pages import SCREENSHOTS, SITE, Page
from .visit import DESKTOP, MOBILE, Visits

SERIOUS = {"serious", "critical"}


@cache
def data() -> dict:
    return json.loads((SITE / "explorer" / "attention.json").read_text(encoding="utf-8"))


def view_index(name: str) -> int:
    return next(i for i, v in enumerate(data()["views"]) if v["id"] == name)


@pytest.fixture(params=["en", "zh"])
def lang(request) -> str:
    return request.param


def open_explorer(visits: Visits, lang: str, viewport=DESKTOP, scheme="light") -> Iterator:
    page = Page(lang, "visualizing")
    context = visits.context(page, viewport)
    if scheme != "light":
        context.close()
        context = visits.browser.new_context(
            viewport=viewport, locale="en-US", color_scheme=scheme, reduced_motion="reduce"
        )
        context.route(
            lambda url: not visits.local(url), lambda route: route.abort("blockedbyclient")
        )
    foreign: list[str] = []
    errors: list[str] = []
    context.on("request", lambda r: visits.local(r.url) or foreign.append(r.url))
    browser_page = context.new_page()
    browser_page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    browser_page.on("pageerror", lambda e: errors.append(str(e)))
    browser_page.goto(visits.url(page), wait_until="load")
    browser_page.wait_for_selector(".attention-explorer.ae-ready .ae-cell")
    return context, browser_page, errors, foreign


@pytest.fixture
def explorer(visits: Visits, lang: str):
    context, browser_page, errors, foreign = open_explorer(visits, lang)
    yield browser_page
    context.close()
    assert errors == []
    assert foreign == []


def readout(browser_page: BrowserPage) -> dict:
    return browser_page.evaluate(
        """() => { const r = document.querySelector(".ae-readout")
          return {text: r.textContent, q: +r.dataset.q, k: +r.dataset.k, w: +r.dataset.weight} }"""
    )


def hover(browser_page: BrowserPage, q: int, k: int) -> dict:
    browser_page.locator(f'.ae-cell[data-q="{q}"][data-k="{k}"]').hover()
    return readout(browser_page)


def choose(browser_page: BrowserPage, control: str, value: int) -> None:
    browser_page.locator(f".attention-explorer select.ae-{control}").select_option(str(value))


def test_hover_shows_the_weight_in_the_json(explorer: BrowserPage, lang: str) -> None:
    toy = data()["views"][view_index("toy")]
    tokens = toy["tokens"]
    for q, k in [(0, 5), (2, 3), (4, 1), (5, 5)]:
        shown = hover(explorer, q, k)
        weight = toy["layers"][0][0][q][k]
        assert (shown["q"], shown["k"]) == (q, k)
        assert shown["w"] == pytest.approx(weight, abs=1e-12)
        assert f"{weight:.3f}" in shown["text"]
        query, key = ("query", "key") if lang == "en" else ("查询", "键")
        assert f"{query} {tokens[q]} → {key} {tokens[k]}" in shown["text"]
    assert hover(explorer, 0, 5)["text"].startswith(
        "query C → key E: 0.957" if lang == "en" else "查询 C → 键 E：0.957"
    )


def test_switching_view_layer_and_head(explorer: BrowserPage) -> None:
    decoder = data()["views"][view_index("decoder")]
    choose(explorer, "view", view_index("decoder"))
    assert not explorer.locator("select.ae-layer").is_disabled()
    for layer, head, q, k in [(0, 0, 3, 1), (1, 2, 6, 3), (1, 3, 7, 0)]:
        choose(explorer, "layer", layer)
        choose(explorer, "head", head)
        assert hover(explorer, q, k)["w"] == pytest.approx(decoder["layers"][layer][head][q][k])
        caption = explorer.locator(".ae-table caption").text_content()
        assert str(layer + 1) in caption and str(head + 1) in caption
    rope = data()["views"][view_index("rope")]
    choose(explorer, "view", view_index("rope"))
    assert explorer.locator("select.ae-layer").is_disabled()  # one layer: nothing to choose
    choose(explorer, "head", 1)
    assert hover(explorer, 4, 3)["w"] == pytest.approx(rope["layers"][0][1][4][3])
    cells = explorer.locator("table.ae-table tbody td").all_text_contents()
    assert cells[4 * 9 + 3] == f"{rope['layers'][0][1][4][3]:.3f}"  # 8 keys and the sum a row


def test_log_scale_and_mask(explorer: BrowserPage) -> None:
    choose(explorer, "view", view_index("causal"))
    cell = '.ae-cell[data-q="7"][data-k="0"]'  # the steepest slope: a small weight, not masked
    linear = explorer.locator(cell).get_attribute("fill")
    explorer.locator(".ae-scale input[value=log]").check()
    assert explorer.locator(cell).get_attribute("fill") != linear
    explorer.locator(".ae-scale input[value=linear]").check()
    assert explorer.locator(cell).get_attribute("fill") == linear
    masked = '.ae-cell[data-q="0"][data-k="7"]'
    assert "ae-cell--masked" in explorer.locator(masked).get_attribute("class")
    assert explorer.locator(masked).get_attribute("fill").startswith("url(#")
    assert explorer.locator(cell).get_attribute("fill") != explorer.locator(masked).get_attribute(
        "fill"
    )
    assert "masked" in hover(explorer, 0, 7)["text"] or "掩码" in readout(explorer)["text"]
    explorer.locator("input.ae-mask").uncheck()
    assert explorer.locator(".ae-cell--masked").count() == 0
    assert not explorer.locator(masked).get_attribute("fill").startswith("url(#")
    explorer.locator("input.ae-mask").check()
    assert explorer.locator(".ae-cell--masked").count() == 28  # the upper triangle of 8 × 8
    choose(explorer, "view", view_index("causal_sink_logit"))
    sums = explorer.locator(".ae-sum").all_text_contents()
    assert all(float(s) < 1 for s in sums)  # the sink logit takes a share of every row


def test_keyboard_reaches_every_control_and_moves_the_selection(explorer: BrowserPage) -> None:
    choose(explorer, "view", view_index("decoder"))  # every control applies
    explorer.locator("select.ae-view").focus()
    reached = []
    for _ in range(12):
        reached.append(
            explorer.evaluate(
                """() => { const a = document.activeElement
                  if (!a.closest('.attention-explorer')) return null
                  return (a.className || a.tagName) + '|' + (a.value || '') }"""
            )
        )
        explorer.keyboard.press("Tab")
    names = " ".join(r for r in reached if r)
    for control in (
        "ae-view",
        "ae-layer",
        "ae-head",
        "linear",
        "ae-mask",
        "ae-table-toggle",
        "ae-map",
    ):
        assert control in names, f"{control} not reached by Tab: {reached}"
    explorer.locator(".ae-map").focus()
    start = readout(explorer)
    explorer.keyboard.press("ArrowDown")
    explorer.keyboard.press("ArrowDown")
    explorer.keyboard.press("ArrowRight")
    moved = readout(explorer)
    assert (moved["q"], moved["k"]) == (min(start["q"] + 2, 7), min(start["k"] + 1, 7))
    decoder = data()["views"][view_index("decoder")]
    assert moved["w"] == pytest.approx(decoder["layers"][0][0][moved["q"]][moved["k"]])
    explorer.keyboard.press("End")
    assert readout(explorer)["k"] == 7
    assert explorer.locator(".ae-readout").get_attribute("aria-live") == "polite"


def test_table_toggle_and_accessibility(explorer: BrowserPage, visits: Visits) -> None:
    table = explorer.locator(".ae-table-box > div")
    assert "ae-visually-hidden" in table.get_attribute("class")  # there for screen readers
    explorer.locator("input.ae-table-toggle").check()
    assert table.is_visible()
    found = visits.axe.run(explorer, context=".attention-explorer").response["violations"]
    assert [v["id"] for v in found if v["impact"] in SERIOUS] == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_themes_and_phone(visits: Visits, lang: str, scheme: str, width: str) -> None:
    viewport = MOBILE if width == "phone" else DESKTOP
    context, browser_page, errors, foreign = open_explorer(visits, lang, viewport, scheme)
    try:
        body = browser_page.evaluate("document.body.getAttribute('data-md-color-scheme')")
        assert body == ("slate" if scheme == "dark" else "default")
        fits = browser_page.evaluate(
            """() => { const e = document.querySelector('.attention-explorer')
              const page = document.documentElement.scrollWidth
              return [e.scrollWidth, e.clientWidth, page, innerWidth] }"""
        )
        assert fits[0] <= fits[1] + 1 and fits[2] <= fits[3] + 1, fits
        low = browser_page.locator('.ae-cell[data-q="0"][data-k="3"]').get_attribute("fill")
        red = int(low.split("(")[1].split(",")[0])
        assert (red < 80) if scheme == "dark" else (red > 200)  # weight ~0: page-coloured
        if scheme == "dark":
            found = visits.axe.run(
                browser_page,
                context=".attention-explorer",
                options={"runOnly": {"type": "rule", "values": ["color-contrast"]}},
            ).response["violations"]
            assert [v["id"] for v in found if v["impact"] in SERIOUS] == []
        browser_page.locator('.ae-cell[data-q="2"][data-k="3"]').hover()
        path = SCREENSHOTS / "explorer" / f"{lang}.{scheme}.{width}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        box = browser_page.locator(".attention-explorer")
        box.evaluate("e => e.scrollIntoView({block: 'center'})")
        browser_page.screenshot(path=path, full_page=False, animations="disabled")
    finally:
        context.close()
    assert errors == []
    assert foreign == []


def test_without_javascript_the_figure_stays(visits: Visits, lang: str) -> None:
    page = Page(lang, "visualizing")
    context = visits.context(page, DESKTOP, java_script_enabled=False)
    try:
        browser_page = context.new_page()
        browser_page.goto(visits.url(page), wait_until="load")
        figure = browser_page.locator(".attention-explorer img")
        assert figure.is_visible()
        assert f"vis_trained_heads.{lang}.svg" in figure.get_attribute("src")
    finally:
        context.close()
