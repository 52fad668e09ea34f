"""Every page, both languages, as a reader's browser gets it (visits in visit.py)."""

from __future__ import annotations

from .site_pages import Page
from .visit import Visits, has_cjk

MAX_PAGE_BYTES = 1_500_000
MIN_CONTRAST = 4.5  # WCAG AA for text: formulas are text
SERIOUS = {"serious", "critical"}


def test_loads_without_errors(page: Page, visits: Visits) -> None:
    """HTTP 200, no console error, no uncaught exception, no failed or refused request."""
    seen = visits.desktop(page)
    assert seen.status == 200
    assert seen.errors == []
    failed = [
        f"{r.url}: {r.failure or r.status}"
        for r in seen.requests
        if r.failure or (r.status or 0) >= 400
    ]
    assert failed == []


def test_requests_only_this_site(page: Page, visits: Visits) -> None:
    """Nothing is fetched from another host: no CDN, no web font, no analytics."""
    seen = visits.desktop(page)
    assert seen.requests, "no request recorded"
    assert [r.url for r in seen.requests if not visits.local(r.url)] == []


def test_lang_attribute(page: Page, visits: Visits) -> None:
    assert visits.desktop(page).facts["lang"] == page.html_lang


def test_math_typeset(page: Page, visits: Visits) -> None:
    """No raw TeX in the text; every formula is an SVG of non-zero size."""
    facts = visits.desktop(page).facts
    assert facts["rawTex"] == []
    assert facts["mathProblems"] == []


def test_figures(page: Page, visits: Visits) -> None:
    """Every image loads and has alt text; figures are drawn and described in the page language."""
    problems = []
    for img in visits.desktop(page).facts["images"]:
        src, alt = img["src"], (img["alt"] or "").strip()
        if not (img["complete"] and img["naturalWidth"] > 0):
            problems.append(f"{src}: did not load")
        if not alt:
            problems.append(f"{src}: no alt text")
        elif page.lang == "zh" and not has_cjk(alt):
            problems.append(f"{src}: alt text is not Chinese: {alt!r}")
        elif page.lang == "en" and has_cjk(alt):
            problems.append(f"{src}: alt text is not English: {alt!r}")
        if "figures/" in src and not src.endswith(f".{page.lang}.svg"):
            problems.append(f"{src}: not the {page.lang} drawing of the figure")
    assert problems == []


def test_language_switcher(page: Page, visits: Visits) -> None:
    """The header's language menu leads to this page in the other language.

    The same test of the twin page (``en:x`` and ``zh:x``) checks the way back.
    """
    twin = page.twin()
    assert visits.desktop(page).switch == (twin.path, 200, twin.html_lang)


def test_copy_buttons(page: Page, visits: Visits) -> None:
    """Every code block has a copy button; it copies the code alone.

    A snippet block copies its code (no `--8<--` include line); a doctest block copies the
    examples' source without prompts or output, ready to paste into Python.
    """
    seen = visits.desktop(page)
    assert [c["text"][:60] for c in seen.facts["code"] if not c["hasButton"]] == []
    assert len(seen.copies) >= len(seen.facts["code"])
    for copy in seen.copies:
        assert "--8<--" not in copy["copied"], copy["target"]
        assert not any(line.startswith((">>> ", "... ")) for line in copy["copied"].splitlines())
        assert copy["copied"] == copy["expected"], copy["target"]


def test_dark_mode_legible(page: Page, visits: Visits) -> None:
    """In the dark palette, formulas follow the text colour and figures sit on a light panel."""
    dark = visits.desktop(page).dark
    assert dark["scheme"] == "slate"
    assert dark["pageLuminance"] < 0.1, "the page did not turn dark"
    faint = [
        f"{m['label']}: {m['contrast']:.1f}" for m in dark["math"] if m["contrast"] < MIN_CONTRAST
    ]
    assert faint == []
    unpanelled = [f["src"] for f in dark["figures"] if f["luminance"] < 0.9]
    assert unpanelled == []


def test_mobile_width(page: Page, visits: Visits) -> None:
    """At 390 px the page does not scroll sideways; wide tables, code, math scroll in their box."""
    facts = visits.desktop(page).mobile
    assert facts["scrollWidth"] <= facts["innerWidth"] + 1
    assert facts["problems"] == []


def test_accessibility(page: Page, visits: Visits) -> None:
    """axe-core: no serious or critical violation in light mode, nor (contrast) in dark mode."""
    seen = visits.desktop(page)
    serious = [
        f"{v['impact']} {v['id']}: {v['help']} at {v['targets'][:3]}"
        for v in seen.axe + seen.dark_axe
        if v["impact"] in SERIOUS
    ]
    assert serious == []


def test_page_weight(page: Page, visits: Visits) -> None:
    """A first visit, with no cache, transfers less than 1.5 MB."""
    seen = visits.desktop(page)
    assert seen.transferred() < MAX_PAGE_BYTES, seen.weight()
