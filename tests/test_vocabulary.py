"""One vocabulary and one typography on the Chinese pages.

The glossary (docs/includes/glossary.yml) is the single source of each Chinese term: a term may
list ``aliases`` (names readers know from elsewhere, such as 《动手学深度学习》's 层规范化, shown in
the glossary) and ``rejects`` (variants the pages must not use). A Chinese page that uses
either in its prose fails here, with the term to use instead. Code, formulas, doctests, link
targets and HTML comments are not prose and are not checked.

The same prose is checked for the site's typographic conventions (below, ``CONVENTIONS``) and
for one form of the names of recurring headings.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs_hooks.glossary import SHAPE_COLUMNS, cell, load_shapes, load_terms

DOCS = Path(__file__).resolve().parents[1] / "docs"
TERMS = load_terms()
CJK = r"\u3400-\u9fff"
CJK_OR_PUNCT = CJK + r"，。、；：？！（）"

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
NOT_PROSE = [
    re.compile(r"\$\$.*?\$\$", re.S),  # display math
    re.compile(r"(?<![\\$])\$(?!\$)[^$\n]+?\$"),  # inline math
    re.compile(r"`[^`\n]+`"),  # inline code
    re.compile(r"<!--.*?-->", re.S),  # HTML comments
    re.compile(r"\]\([^)\s]*\)"),  # link targets
    re.compile(r"^\s*\[[^\]]+\]:\s*\S+.*$", re.M),  # link definitions
    re.compile(r"\{[^}\n]*#[\w-]+[^}\n]*\}"),  # heading ids and attributes
    re.compile(r"^\s*--8<--.*$", re.M),  # snippet includes
    re.compile(r"<[^>\n]+>"),  # HTML tags (their attributes)
]

# Typography, one convention each. (pattern, what to write instead)
CONVENTIONS = [
    (re.compile(r"\d[ \u00a0]+%"), "no space between a number and % (6.5%)"),
    (
        re.compile(rf"[{CJK}][ \u00a0]+/[ \u00a0]+[{CJK}]"),
        "no spaces around a slash between Chinese words (键/值)",
    ),
    (
        re.compile(rf"(?<=[{CJK_OR_PUNCT}])[ \u00a0]+“|”[ \u00a0]+(?=[{CJK_OR_PUNCT}])"),
        "no space outside full-width quotes (以“The cat sat”为例)",
    ),
    (
        re.compile(r"[A-Z][a-z]+ 等，(?:19|20)\d\d|[A-Za-z]+，(?:19|20)\d\d\b"),
        "citations as 作者 等（年份）: Vaswani 等（2017）",
    ),
    (
        re.compile(r"[A-Z][a-z]+、[A-Z][a-z]+、[A-Z][a-z]+（"),
        "three or more authors as 第一作者 等（年份）",
    ),
    (re.compile(r"\b[A-Z][a-z]+、[A-Z][a-z]+（"), "two authors as A 和 B（年份）"),
]

# Names of recurring headings and pages: one form each (variant -> the form to use).
NAMES = {
    "常见错误": "常见陷阱 (the page and every section { #pitfalls })",
    "计算代价": "开销 (the page 开销与高效注意力)",
    "与 PyTorch 对照的测试": "与 PyTorch 对照测试",
}
HEADINGS = {"pitfalls": "常见陷阱", "checked-against-pytorch": "与 PyTorch 对照测试"}


def chinese_pages() -> list[Path]:
    return sorted(DOCS.glob("*.zh.md"))


def prose(text: str) -> str:
    """The page's prose: what is not code, math, a link target or markup is kept, and what is
    removed becomes blanks, so that every character keeps its offset and its line."""
    lines, fence = [], None
    for line in text.splitlines():
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening[1]
            lines.append(" " * len(line))
        elif fence is not None:
            if opening and opening[1].startswith(fence[0]) and len(opening[1]) >= len(fence):
                fence = None
            lines.append(" " * len(line))
        else:
            lines.append(line)
    kept = "\n".join(lines) + ("\n" if text.endswith("\n") else "")
    for pattern in NOT_PROSE:
        kept = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), kept)
    return kept


def _line(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _forbidden() -> dict[str, str]:
    """Every alias and rejected variant of the glossary -> the term to use instead."""
    return {
        str(variant): f"{term['term']['zh']} (glossary.md#{term['id']})"
        for term in TERMS
        for variant in _variants(term)
    }


def test_prose_leaves_out_code_math_and_links():
    page = (
        "词元 $x_{\\text{token}}$ 与 `token` 的[链接](a.md#token)\n"
        "```pycon\n>>> token = 1\n```\n<!-- token -->\n$$\n\\text{token}\n$$\n"
    )
    kept = prose(page)
    assert "token" not in kept and "词元" in kept and "链接" in kept
    assert len(kept) == len(page) and kept.count("\n") == page.count("\n")


def _variants(term) -> list[str]:
    return [v for key in ("aliases", "rejects") for v in (term.get(key) or {}).get("zh") or []]


def test_every_variant_names_one_term():
    variants = [variant for term in TERMS for variant in _variants(term)]
    assert len(variants) == len(set(variants)), "a variant is listed under two terms"
    for term in TERMS:
        for variant in _variants(term):
            assert variant not in term["term"]["zh"], (term["id"], variant)


@pytest.mark.parametrize("page", chinese_pages(), ids=lambda p: p.name)
def test_chinese_page_uses_the_glossary_terms(page):
    text = prose(page.read_text(encoding="utf-8"))
    wrong = [
        f"{page.name}:{_line(text, m.start())}: {variant!r} -> {use}"
        for variant, use in {**_forbidden(), **NAMES}.items()
        for m in re.finditer(re.escape(variant), text)
    ]
    assert not wrong, "\n".join(wrong)


def test_glossary_definitions_use_the_glossary_terms():
    shapes = [cell(row[column], "zh") for row in load_shapes() for column in SHAPE_COLUMNS]
    texts = [(term["id"], term["definition"]["zh"]) for term in TERMS]
    texts += [("shape legend", text) for text in shapes]
    wrong = [
        f"{where}: {variant!r} -> {use}"
        for where, text in texts
        for variant, use in _forbidden().items()
        if variant in prose(text)
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("page", chinese_pages(), ids=lambda p: p.name)
def test_chinese_page_follows_the_typography(page):
    text = prose(page.read_text(encoding="utf-8"))
    wrong = [
        f"{page.name}:{_line(text, m.start())}: {m[0]!r}: {rule}"
        for pattern, rule in CONVENTIONS
        for m in pattern.finditer(text)
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("page", chinese_pages(), ids=lambda p: p.name)
def test_recurring_headings_have_one_name(page):
    text = page.read_text(encoding="utf-8")
    for anchor, name in HEADINGS.items():
        for heading in re.findall(rf"^#+ (.*?) *\{{ *#{anchor} *\}}", text, re.M):
            assert heading == name, f"{page.name}: {heading!r} {{ #{anchor} }}: write {name!r}"


FIGURE_SOURCES = [
    *sorted((DOCS.parent / "docs_hooks" / "plots").glob("*.py")),
    DOCS.parent / "attention_ref" / "bench.py",
]


@pytest.mark.parametrize("source", FIGURE_SOURCES, ids=lambda p: p.name)
def test_chinese_figure_text_uses_the_glossary_terms(source):
    """The Chinese labels, titles and legends of the figures (string literals with Chinese)."""
    import ast

    strings = [
        node
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if re.search(f"[{CJK}]", node.value)
    ]
    wrong = [
        f"{source.name}:{node.lineno}: {variant!r} -> {use}"
        for node in strings
        for variant, use in _forbidden().items()
        if variant in node.value
    ]
    assert not wrong, "\n".join(wrong)
