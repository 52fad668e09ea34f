"""The cheat sheet (docs/cheat-sheet.md, docs/cheat-sheet.zh.md) says what the teaching pages say:
each formula, with the same symbols, is on the page its row links to, and its mask-conventions
rows are rows of the Masks page's table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
LANGS = {"en": "", "zh": ".zh"}
INLINE_MATH = re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$")
LINK = re.compile(r"\]\(([\w-]+)\.md(?:#[\w-]+)?\)")


def _markdown(name: str, lang: str) -> str:
    return (DOCS / f"{name}{LANGS[lang]}.md").read_text(encoding="utf-8")


def _section(markdown: str, anchor: str) -> str:
    start = re.search(rf"^## .*\{{ *#{anchor} *\}}", markdown, re.M)
    assert start, f"no section #{anchor}"
    end = re.search(r"^## ", markdown[start.end() :], re.M)
    return markdown[start.end() : start.end() + end.start() if end else None]


def _rows(table_text: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in table_text.splitlines()
        if line.startswith("|") and not set(line) <= set("|-: ")
    ][1:]  # without the header


def _tex(text: str) -> str:
    """TeX as written, with the layout that varies between a display and a table cell dropped:
    alignment marks, line breaks, aligned environments, runs of spaces."""
    text = re.sub(r"\\(begin|end)\{aligned\}|&|\\\\", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def _parts(formula: str) -> list[str]:
    """The pieces of a cheat-sheet formula that must each be on the page: split at \\qquad,
    '=' and ';', trailing punctuation dropped."""
    pieces = re.split(r"\\qquad|(?<![\\<>!])=|;", _tex(formula))
    return [p.strip(" ,.") for p in pieces if p.strip(" ,.")]


@pytest.mark.parametrize("lang", LANGS)
def test_every_formula_is_the_teaching_page_s(lang: str) -> None:
    rows = _rows(_section(_markdown("cheat-sheet", lang), "formulas"))
    assert len(rows) >= 15
    missing = []
    for what, formula, taught in rows:
        page = LINK.search(taught)
        assert page, f"{what}: no link to the page that teaches it"
        source = _tex(_markdown(page[1], lang))
        for tex in INLINE_MATH.findall(formula):
            missing += [
                f"{what}: {part!r} not on {page[1]}" for part in _parts(tex) if part not in source
            ]
    assert missing == [], "\n".join(missing)


@pytest.mark.parametrize("lang", LANGS)
def test_mask_conventions_are_the_masks_page_s(lang: str) -> None:
    ours = _rows(_section(_markdown("cheat-sheet", lang), "mask-conventions"))
    theirs = _rows(_section(_markdown("masks", lang), "conventions"))
    assert ours
    for row in ours:
        same = [r for r in theirs if r[:-1] == row[:-1] and r[-1].startswith(row[-1])]
        assert same, f"not a row of the Masks page's table: {row}"


def test_parts() -> None:
    assert _parts(r"h &= x + F(x), \qquad \hat{x} = g(x).") == ["h", "x + F(x)", r"\hat{x}", "g(x)"]
    assert _parts(r"j \le i + (m - n)") == [r"j \le i + (m - n)"]
