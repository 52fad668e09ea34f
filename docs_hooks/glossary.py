"""MkDocs hook: the glossary tables, drawn from docs/includes/*.yml in the page's language.

The glossary pages hold a line ``<!-- glossary-terms en -->`` (glossary.md) or
``<!-- glossary-terms zh -->`` (glossary.zh.md); the hook replaces it with a Markdown table:
each row has the term's anchor (``glossary.md#causal-mask``), the term in the page's language
with its translation beside it, the definition in the page's language, and the symbol or code
name, and the other names readers know (``aliases``). One data file serves both languages,
so the two pages always list the same terms; tests/docs/test_glossary.py checks that every term
has both definitions and that every ``glossary.md#...`` link of the pages lands on one.

The shape legend (docs/includes/shape-legend.yml: the paper's symbol, the code's letter, what it
means) is drawn the same way where a page holds ``<!-- shape-legend en -->`` or ``... zh -->``.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import yaml

from docs_hooks.constants import LANGUAGES, html_lang

INCLUDES = Path(__file__).resolve().parents[1] / "docs" / "includes"
DATA = INCLUDES / "glossary.yml"
SHAPES = INCLUDES / "shape-legend.yml"
MARKER = re.compile(r"^<!-- glossary-terms (?P<lang>\w+) -->$", re.M)
SHAPES_MARKER = re.compile(r"^<!-- shape-legend (?P<lang>\w+) -->$", re.M)
ALIASES = {"en": "also called", "zh": "又称"}
HEADERS = {
    "en": ("Term", "Definition", "Symbol / in code"),
    "zh": ("术语", "定义", "符号/代码"),
}
SHAPE_COLUMNS = ("paper", "code", "meaning")
SHAPE_HEADERS = {"en": ("Paper", "Code", "Meaning"), "zh": ("论文", "代码", "含义")}


class GlossaryError(ValueError):
    """The glossary data is malformed, or a page asks for a language it does not have."""


def load_terms(path: Path = DATA) -> list[dict[str, Any]]:
    """The terms of the glossary, in the data file's order."""
    terms = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(terms, list):
        raise GlossaryError(f"{path}: expected a list of terms, got {type(terms).__name__}")
    return terms


def load_shapes(path: Path = SHAPES) -> list[dict[str, Any]]:
    """The rows of the shape legend, in the data file's order."""
    rows = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(rows, list):
        raise GlossaryError(f"{path}: expected a list of rows, got {type(rows).__name__}")
    return rows


def cell(value: str | dict[str, str], lang: str) -> str:
    """A cell of a data file: the same text in every language, or ``{en: ..., zh: ...}``."""
    text = value if isinstance(value, str) else value[lang]
    return " ".join(str(text).split())


def _other(lang: str) -> str:
    return LANGUAGES[1 - LANGUAGES.index(lang)]


def render_table(terms: list[dict[str, Any]], lang: str) -> str:
    """The glossary as a Markdown table in ``lang``: term, definition, symbol."""
    if lang not in LANGUAGES:
        raise GlossaryError(f"glossary: expected a language in {LANGUAGES}, got {lang!r}")
    other = _other(lang)
    rows = ["| " + " | ".join(HEADERS[lang]) + " |", "| --- | --- | --- |"]
    for term in terms:
        aliases = (term.get("aliases") or {}).get(lang) or []
        also = f"<br>{ALIASES[lang]}" + "、".join(aliases) if aliases else ""
        cells = (
            f'<a id="{html.escape(term["id"])}"></a>**{term["term"][lang]}**'
            f'<br><span lang="{html_lang(other)}">'
            f"{html.escape(term['term'][other])}</span>{also}",
            " ".join(term["definition"][lang].split()),
            term.get("symbol") or "",
        )
        if any("|" in cell for cell in cells):
            raise GlossaryError(f"glossary: {term['id']!r} holds a '|', which splits a table cell")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def render_shapes(rows: list[dict[str, Any]], lang: str) -> str:
    """The shape legend as a Markdown table in ``lang``: paper, code, meaning."""
    if lang not in LANGUAGES:
        raise GlossaryError(f"shape legend: expected a language in {LANGUAGES}, got {lang!r}")
    lines = ["| " + " | ".join(SHAPE_HEADERS[lang]) + " |", "| --- | --- | --- |"]
    for row in rows:
        cells = [cell(row[column], lang) for column in SHAPE_COLUMNS]
        if any("|" in text for text in cells):
            raise GlossaryError(f"shape legend: {cells[1]!r} holds a '|', which splits a cell")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
