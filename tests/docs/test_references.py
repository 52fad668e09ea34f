"""The References page lists every work the other pages cite or name, in both languages.

Three kinds of mention count as citing a work:

- a reference link to a paper, ``[text][vaswani2017]``, whose target is in
  docs/includes/links.md: the References section that lists the page must carry the same link;
- an author citation, "Xiong et al." or "Zhang and Sennrich" (「Xiong 等」 on a Chinese page):
  the References page must name the author;
- a work named without a link ("GPT-2", "SwiGLU", "YaRN", "Hugging Face's conversion script"),
  found by the patterns of ``NAMED`` below: the References page must carry that work's link.

Every page of the nav has a section on the References page: a "Page:"/"Pages:" line
(「对应页面：」 in Chinese) that links to it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs_hooks.glossary import load_terms

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LANGS = {"en": "", "zh": ".zh"}

LINK_TARGET = re.compile(r"^\[(?P<id>[\w-]+)\]: (?P<url>\S+)", re.MULTILINE)
LINKS = dict(LINK_TARGET.findall((DOCS / "includes" / "links.md").read_text(encoding="utf-8")))
# Tools and library documentation: the References page lists the PyTorch pages too, but a
# page that links one is not citing a work the page rests on.
NOT_WORKS = {"nox"}
DOCUMENTATION = {i for i in LINKS if i.startswith(("torch-", "hf-attention"))}

REFERENCE_LINK = re.compile(r"\]\[(?P<id>[\w-]+)\]")
AUTHORS_EN = re.compile(
    r"(?<![\w-])(?P<name>[A-Z][a-z]+(?:[A-Z][a-z]+)?)(?: and [A-Z][a-z]+)?,? et al\."
    r"|(?<![\w-])(?P<first>[A-Z][a-z]+) and (?P<second>[A-Z][a-z]+)(?:'s)? (?:\(?\d{4}|\[)"
)
AUTHORS_ZH = re.compile(r"(?<![\w-])(?P<name>[A-Z][a-z]+) ?等(?:人)?[（(\s\d]")
PAGE_LINE = re.compile(r"^(?:Pages?:|对应页面：)(?P<body>.*?)(?:\n\n|\Z)", re.MULTILINE | re.DOTALL)
PAGE_LINK = re.compile(r"\]\((?P<page>[\w-]+)(?:\.zh)?\.md(?:#[\w-]+)?\)")


def _word(pattern: str) -> str:
    """The pattern as a whole word: no Latin letter or digit either side (Han characters may be)."""
    return rf"(?<![A-Za-z0-9_-])(?:{pattern})(?![A-Za-z0-9_])"


# Works the pages name without a link, and the link the References page carries for each.
NAMED: list[tuple[str, str]] = [
    (_word(pattern), link)
    for pattern, link in {
        r"BERT(?:-base|-large)?": "devlin2019",
        r"GPT(?!-)": "radford2018",
        r"GPT-2": "radford2019",
        r"GPT-J": "gpt-j",
        r"GPT-NeoX": "black2022",
        r"LLaMA|Llama(?! [23])": "touvron2023",
        r"Llama 2": "touvron2023b",
        r"Llama 3": "grattafiori2024",
        r"Mistral": "jiang2023",
        r"Qwen": "bai2023",
        r"ViT": "dosovitskiy2021",
        r"RoFormer|RoPE": "su2021",
        r"ALiBi": "press2022",
        r"GELU": "hendrycks2016",
        r"SwiGLU": "shazeer2020",
        r"[Pp]osition interpolation|位置插值": "chen2023",
        r"NTK": "ntk-aware",
        r"YaRN": "peng2023",
        r"NoPE": "haviv2022",
        r"script that converts|conversion script|转换[^。]{0,20}Llama": "hf-llama-convert",
        r"RMSNorm": "zhang2019",
        r"Pre-LN": "xiong2020",
        r"FlashAttention": "dao2022",
        r"FlashAttention-2": "dao2023",
        r"Longformer": "beltagy2020",
        r"Linformer": "wang2020",
        r"Performers?": "choromanski2021",
        r"Big ?Bird": "zaheer2020",
        r"Sparse Transformers?": "child2019",
        r"GQA|[Gg]rouped-query|分组查询": "ainslie2023",
        r"MQA|[Mm]ulti-query|多查询": "shazeer2019",
        r"[Oo]nline softmax|在线 ?softmax": "milakov2018",
        r"vLLM|PagedAttention": "kwon2023",
        r"T5": "raffel2020",
        r"DeepSeek-V2": "deepseek2024",
        r"DeepSeek-V3": "deepseek2024v3",
        r"gpt-oss(?:-\d+b)?": "gpt-oss",
        r"StreamingLLM": "xiao2024",
        r"attention-gym": "attention-gym",
    }.items()
]


def nav_pages() -> list[str]:
    """The nav's pages, as file stems ('index', 'self-attention', ...), References excluded."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    nav = nav.split("\n\n", 1)[0]
    stems = re.findall(r"^\s+- (?:[^:\n]+: )?([\w-]+)\.md$", nav, re.MULTILINE)
    return [s for s in stems if s != "references"]


def page_text(stem: str, lang: str) -> str:
    """What a page says: its Markdown, and for the glossary the glossary's terms."""
    text = (DOCS / f"{stem}{LANGS[lang]}.md").read_text(encoding="utf-8")
    if stem == "glossary":
        for term in load_terms():
            text += f"\n{term['term'][lang]}: {term['definition'][lang]}"
    return text


def sections(references: str) -> dict[str, str]:
    """The References page cut at its level-2 headings: {page stem: the section listing it}."""
    found: dict[str, str] = {}
    for section in re.split(r"^## ", references, flags=re.MULTILINE)[1:]:
        for line in PAGE_LINE.finditer(section):
            for stem in PAGE_LINK.findall(line["body"]):
                found[stem] = found.get(stem, "") + section
    return found


def missing(pages: dict[str, str], references: str, lang: str) -> list[str]:
    """Every work a page cites or names that the References page lacks, as readable lines."""
    problems = []
    listed = sections(references)
    on_page = set(REFERENCE_LINK.findall(references))
    for stem, text in pages.items():
        if stem not in listed:
            problems.append(f"{stem}: no section of the References page lists this page")
        section_links = set(REFERENCE_LINK.findall(listed.get(stem, "")))
        for link in sorted(set(REFERENCE_LINK.findall(text)) & set(LINKS)):
            if link in NOT_WORKS:
                continue
            if link in DOCUMENTATION:
                if link not in on_page:
                    problems.append(f"{stem}: links [{link}], not on the References page")
            elif link not in section_links:
                problems.append(f"{stem}: cites [{link}], not in the page's References section")
        authors = AUTHORS_ZH if lang == "zh" else AUTHORS_EN
        for match in authors.finditer(text):
            for name in filter(None, match.groupdict().values()):
                if name not in references:
                    problems.append(f"{stem}: cites {name}, not named on the References page")
        for pattern, link in NAMED:
            named = re.search(pattern, text)
            if named and link not in on_page:
                problems.append(
                    f"{stem}: names {named[0]!r} ([{link}]), not on the References page"
                )
    return problems


@pytest.mark.parametrize("lang", LANGS)
def test_references_list_every_work_the_pages_cite(lang):
    references = (DOCS / f"references{LANGS[lang]}.md").read_text(encoding="utf-8")
    pages = {stem: page_text(stem, lang) for stem in nav_pages()}
    assert not missing(pages, references, lang)


def test_nav_pages_are_found():
    stems = nav_pages()
    assert {"index", "positions", "decoding", "cost", "glossary", "reference"} <= set(stems)
    assert "references" not in stems


@pytest.mark.parametrize("lang", LANGS)
def test_every_link_on_the_references_page_exists(lang):
    references = (DOCS / f"references{LANGS[lang]}.md").read_text(encoding="utf-8")
    assert set(REFERENCE_LINK.findall(references)) <= set(LINKS)


def test_both_languages_list_the_same_works():
    en, zh = ((DOCS / f"references{s}.md").read_text(encoding="utf-8") for s in LANGS.values())
    assert set(REFERENCE_LINK.findall(en)) == set(REFERENCE_LINK.findall(zh))
    assert sections(en).keys() == sections(zh).keys()


@pytest.mark.parametrize("lang", LANGS)
def test_the_check_catches_a_missing_work(lang):
    """Take ALiBi's paper off the References page, or the author of Pre-LN, or a section."""
    references = (DOCS / f"references{LANGS[lang]}.md").read_text(encoding="utf-8")
    positions = page_text("positions", lang)
    without_alibi = "\n".join(l for l in references.splitlines() if "[press2022]" not in l)
    problems = missing({"positions": positions}, without_alibi, lang)
    assert "positions: cites [press2022], not in the page's References section" in problems
    assert any("'ALiBi' ([press2022]), not on the References page" in p for p in problems)

    named = {"decoding": page_text("decoding", lang) + "\nYaRN\n"}
    without_yarn = "\n".join(l for l in references.splitlines() if "[peng2023]" not in l)
    assert "decoding: names 'YaRN' ([peng2023]), not on the References page" in missing(
        named, without_yarn, lang
    )

    cited = {
        "exercises": "Shaw et al. 2018 and Nobody et al. 2030"
        if lang == "en"
        else "Nobody 等（2030）"
    }
    assert any("cites Nobody" in p for p in missing(cited, references, lang))

    unlisted = {"positions": positions}
    no_section = references.replace("positions.md", "elsewhere.md")
    assert "positions: no section of the References page lists this page" in missing(
        unlisted, no_section, lang
    )
