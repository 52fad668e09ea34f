"""The glossary (docs/includes/glossary.yml, drawn by docs_hooks/glossary.py) and its links."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs_hooks.glossary import (
    DATA,
    LANGUAGES,
    MARKER,
    SHAPE_COLUMNS,
    SHAPES_MARKER,
    GlossaryError,
    cell,
    load_shapes,
    load_terms,
    render_shapes,
    render_table,
)
from docs_hooks.markdown import heading_ids

DOCS = Path(__file__).resolve().parents[2] / "docs"
CJK = re.compile(r"[\u4e00-\u9fff]")
LINK = re.compile(r"glossary(?:\.zh)?\.md#(?P<anchor>[\w-]+)")
TERMS = load_terms()
SHAPES = load_shapes()


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.glob("*.md"))


@pytest.mark.parametrize("term", TERMS, ids=[str(t.get("id")) for t in TERMS])
def test_every_term_has_both_languages(term):
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", term["id"]), term
    assert set(term) <= {"id", "term", "symbol", "definition", "aliases", "rejects"}, term["id"]
    for lang in LANGUAGES:
        name, definition = term["term"][lang].strip(), term["definition"][lang].strip()
        assert name and definition, (term["id"], lang)
        assert "\n" not in " ".join(definition.split()), term["id"]
        assert definition[-1] in ".。", (term["id"], lang, "a definition is a sentence")
    assert CJK.search(term["term"]["zh"]) and CJK.search(term["definition"]["zh"]), term["id"]
    assert not CJK.search(term["definition"]["en"]), term["id"]
    # The symbol column is shared by both pages: formulas and code only, no words of one language.
    symbol = re.sub(r"`[^`]*`|\$[^$]*\$", "", term.get("symbol") or "")
    assert not CJK.search(symbol), term["id"]
    assert not re.search(r"[a-z]{3,}", symbol), (term["id"], symbol)


def test_ids_are_unique():
    ids = [term["id"] for term in TERMS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_every_glossary_link_lands_on_a_term(page):
    """``glossary.md#x`` from any page: x is a term or a heading of the glossary."""
    anchors = {term["id"] for term in TERMS}
    for glossary in ("glossary.md", "glossary.zh.md"):
        anchors |= set(heading_ids((DOCS / glossary).read_text(encoding="utf-8")))
    text = page.read_text(encoding="utf-8")
    if page.name.startswith("glossary."):
        text += "\n".join(re.findall(r"\]\(#[\w-]+\)", text)).replace("](#", "glossary.md#")
    missing = sorted({m["anchor"] for m in LINK.finditer(text)} - anchors)
    assert not missing, f"{page.name} links to glossary anchors that do not exist: {missing}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_glossary_page_draws_its_own_language(lang):
    page = DOCS / ("glossary.md" if lang == "en" else f"glossary.{lang}.md")
    text = page.read_text(encoding="utf-8")
    assert [m["lang"] for m in MARKER.finditer(text)] == [lang]
    assert [m["lang"] for m in SHAPES_MARKER.finditer(text)] == [lang]


@pytest.mark.parametrize("row", SHAPES, ids=[cell(row["code"], "en") for row in SHAPES])
def test_every_shape_row_has_both_languages(row):
    """A cell with words has one text per language; a shared cell has formulas and code only."""
    assert set(row) == set(SHAPE_COLUMNS), row
    for column in SHAPE_COLUMNS:
        value = row[column]
        if isinstance(value, str):
            bare = re.sub(r"`[^`]*`|\$[^$]*\$", "", value)
            assert not CJK.search(bare) and not re.search(r"[a-z]{3,}", bare), (column, value)
            continue
        assert set(value) == set(LANGUAGES), (column, value)
        assert CJK.search(cell(value, "zh")), (column, value)
        assert not CJK.search(cell(value, "en")), (column, value)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_shape_legend_has_a_row_per_shape(lang):
    table = render_shapes(SHAPES, lang).splitlines()
    assert len(table) == 2 + len(SHAPES)
    for row, line in zip(SHAPES, table[2:], strict=True):
        assert line == "| " + " | ".join(cell(row[c], lang) for c in SHAPE_COLUMNS) + " |"
    if lang != "zh":
        assert not CJK.search("\n".join(table))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_table_has_a_row_per_term(lang):
    table = render_table(TERMS, lang).splitlines()
    assert len(table) == 2 + len(TERMS)
    for term, row in zip(TERMS, table[2:], strict=True):
        assert row.startswith(f'| <a id="{term["id"]}"></a>**{term["term"][lang]}**')
        assert row.count(" | ") == 2, row
        assert " ".join(term["definition"][lang].split()) in row


def test_bad_data_is_refused(tmp_path):
    with pytest.raises(GlossaryError, match="expected a language in"):
        render_table(TERMS, "fr")
    bad = dict(TERMS[0], symbol="$a | b$")
    with pytest.raises(GlossaryError, match="holds a '|'"):
        render_table([bad], "en")
    not_a_list = tmp_path / "glossary.yml"
    not_a_list.write_text("id: attention\n", encoding="utf-8")
    with pytest.raises(GlossaryError, match="expected a list of terms, got dict"):
        load_terms(not_a_list)
    with pytest.raises(GlossaryError, match="expected a list of rows, got dict"):
        load_shapes(not_a_list)
    with pytest.raises(GlossaryError, match="holds a '|'"):
        render_shapes([dict(SHAPES[0], meaning="a | b")], "en")
    assert DATA.is_file()
