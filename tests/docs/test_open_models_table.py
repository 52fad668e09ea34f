"""The open models' table (docs/includes/open-models.json, drawn by docs_hooks/open_models.py):
drawn in both languages, every row full, every link landing on a section; bad data fails the
build. No transformers needed: the interop test regenerates the data and compares."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from docs_hooks.constants import LANGUAGES
from docs_hooks.hooks import open_models as hook
from docs_hooks.markdown import heading_ids
from docs_hooks.open_models import (
    COLUMNS,
    DATA,
    MARKER,
    NONE,
    PAGE,
    TEXT,
    OpenModelsError,
    load,
    render_table,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
ATTRIBUTE_ID = re.compile(r"\{[^}\n]*#(?P<id>[\w-]+)[^}\n]*\}|\bid=\"(?P<html>[\w-]+)\"")
CJK = re.compile(r"[\u4e00-\u9fff]")
DATA_NOW = load()


def _files(page: str) -> list[Path]:
    """The page's file in each language: x.md, x.zh.md."""
    stem = page.removesuffix(".md")
    return [DOCS / (page if lang == LANGUAGES[0] else f"{stem}.{lang}.md") for lang in LANGUAGES]


def _anchors(page: str) -> set[str]:
    """The ids that every language's file of a page gives: headings' ``{ #id }``, other
    attribute lists, ``id=``."""
    found = []
    for path in _files(page):
        text = path.read_text(encoding="utf-8")
        ids = set(heading_ids(text)) | {m["id"] or m["html"] for m in ATTRIBUTE_ID.finditer(text)}
        found.append(ids)
    return set.intersection(*found)


def _written(page: str) -> bool:
    return all(path.exists() for path in _files(page))


def _rows(table: str) -> list[list[str]]:
    lines = [line for line in table.splitlines() if line.startswith("|")]
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in lines[2:]]


def _page(name: str = "open-models") -> SimpleNamespace:
    return SimpleNamespace(file=SimpleNamespace(src_uri=f"{name}.md", locale="en"))


CONFIG = SimpleNamespace(theme={"language": "en"})


def test_every_string_has_both_languages():
    for key, words in TEXT.items():
        assert set(words) == set(LANGUAGES), key
        assert not CJK.search(words["en"]), key


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_family_row_has_every_column(lang):
    rows = _rows(render_table(DATA_NOW, lang))
    assert len(rows) == len(DATA_NOW["families"]) > 0
    for family, cells in zip(DATA_NOW["families"], rows, strict=True):
        assert len(cells) == 1 + len(COLUMNS), (family["name"], cells)
        assert all(cells), (family["name"], cells)
        assert cells[0].startswith(family["name"])
        for cell in cells[1:]:  # a cell says none, or links each thing it says
            assert cell == NONE or "](" in cell or cell == TEXT["attention_only"][lang], cell


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_link_lands_on_a_section(lang):
    """``#x`` is a section of the page itself; ``page.md#x`` of that page, in both languages."""
    page_exists = _written(PAGE)
    missing = []
    for target in sorted({m["target"] for m in LINK.finditer(render_table(DATA_NOW, lang))}):
        page, _, anchor = target.partition("#")
        if not page and not page_exists:
            continue  # checked below, once the page is written
        if not _written(page or PAGE) or (anchor and anchor not in _anchors(page or PAGE)):
            missing.append(target)
    assert not missing, f"the table links to sections that do not exist: {missing}"
    if not page_exists:
        pytest.skip(f"docs/{PAGE} is not written in every language: its sections not checked")


def test_the_page_holds_the_marker_once_in_each_language():
    if not _written(PAGE):
        pytest.skip(f"docs/{PAGE} is not written in every language yet")
    for path in _files(PAGE):
        assert len(MARKER.findall(path.read_text(encoding="utf-8"))) == 1, path.name


def test_the_hook_replaces_the_marker():
    markdown = "Before.\n\n<!-- open-models-table -->\n\nAfter.\n"
    out = hook.on_page_markdown(markdown, _page(), CONFIG, None)
    assert "<!-- open-models-table -->" not in out
    assert "| " + TEXT["model"]["en"] + " |" in out and out.endswith("After.\n")
    zh = SimpleNamespace(file=SimpleNamespace(src_uri="open-models.zh.md", locale="zh"))
    assert "| " + TEXT["model"]["zh"] + " |" in hook.on_page_markdown(markdown, zh, CONFIG, None)


def test_malformed_data_fails_the_build_naming_the_page(tmp_path, monkeypatch):
    bad = tmp_path / "open-models.json"
    bad.write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(hook, "load", lambda: load(bad))
    with pytest.raises(PluginError, match=r"^open-models\.md: open-models\.json"):
        hook.on_page_markdown("<!-- open-models-table -->\n", _page(), CONFIG, None)


@pytest.mark.parametrize(
    "change",
    [
        lambda layer: layer.update(score_function={"score": "mystery"}),
        lambda layer: layer.update(wiring={"kind": "Tangle", "norms": ["rms"]}),
        lambda layer: layer["qk_parts"].append({"part": "qk_norm", "norm": "odd", "over": "head"}),
        lambda layer: layer.update(rule={"rule": "dilated", "size": 2}),
        lambda layer: layer.pop("attention"),
    ],
    ids=["score function", "wiring", "norm", "rule", "no attention"],
)
def test_an_unknown_part_fails(change):
    data = json.loads(DATA.read_text(encoding="utf-8"))
    layer = data["families"][0]["layers"][0]
    layer.setdefault("qk_parts", [])
    change(layer)
    with pytest.raises(OpenModelsError, match=data["families"][0]["name"] + "|no words"):
        render_table(data, "en")


@pytest.mark.parametrize(
    "data", [[], {"families": [{"layers": [{}]}]}, {"families": [{"name": "X", "layers": []}]}]
)
def test_malformed_data_is_refused(tmp_path, data):
    path = tmp_path / "open-models.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(OpenModelsError):
        load(path)
