"""One vocabulary and one typography on the Chinese pages.

The glossary (docs/includes/glossary.yml) is the single source of each Chinese term: a term may
list ``aliases`` (names readers know from elsewhere, such as 《动手学深度学习》's 层规范化, shown in
the glossary) and ``rejects`` (variants the pages must not use). A Chinese page that uses
either in its prose fails here, with the term to use instead. Code, formulas, doctests, link
targets and HTML comments are not prose and are not checked.

The same prose is checked for the site's typographic conventions (below, ``CONVENTIONS``: spaces,
punctuation, emphasis), for phrases that a glossary entry cannot express (``PHRASES``: an English
word left bare where the glossary has a Chinese term, a word one character from another term, a
direction word that reads backwards) and for one form of the names of recurring headings. Every
rule comes with a sample it must reject and one it must accept (``test_each_rule_*``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs_hooks.glossary import SHAPE_COLUMNS, cell, load_shapes, load_terms
from docs_hooks.markdown import prose

DOCS = Path(__file__).resolve().parents[2] / "docs"
TERMS = load_terms()
CJK = r"\u3400-\u9fff"
CJK_OR_PUNCT = CJK + r"，。、；：？！（）"
FULL_WIDTH = r"，。、；：？！（）“”《》"
MASK = "\u2592"  # what stands in prose for removed code and math: not a space, so that
# "词元 `x` 与" keeps its spaces apart from the characters


# Typography, one convention each. (pattern, what to write instead)
CONVENTIONS = [
    (r"\d[ \u00a0]+%", "no space between a number and % (6.5%)"),
    (
        rf"[{CJK}][ \u00a0]+/[ \u00a0]+[{CJK}]",
        "no spaces around a slash between Chinese words (键/值)",
    ),
    (
        rf"(?<=[{CJK_OR_PUNCT}])[ \u00a0]+“|”[ \u00a0]+(?=[{CJK_OR_PUNCT}])",
        "no space outside full-width quotes (以“The cat sat”为例)",
    ),
    (
        r"[A-Z][a-z]+ 等，(?:19|20)\d\d|[A-Za-z]+，(?:19|20)\d\d\b",
        "citations as 作者 等（年份）: Vaswani 等（2017）",
    ),
    (
        r"[A-Z][a-z]+、[A-Z][a-z]+、[A-Z][a-z]+（",
        "three or more authors as 第一作者 等（年份）",
    ),
    (r"\b[A-Z][a-z]+、[A-Z][a-z]+（", "two authors as A 和 B（年份）"),
    (
        rf"(?<=[{CJK}])(?:\*\*)?[ \u00a0]+(?:\*\*)?(?=[{CJK}])",
        "no space between Chinese characters, bold or not (在评估模式下)",
    ),
    (
        rf"(?<=[{FULL_WIDTH}])(?:\*\*[ \u00a0]+(?=\S)|[ \u00a0]+(?=[^\s|{MASK}]))",
        "no space after full-width punctuation, nor after a bold run-in head (**存什么：**之前)",
    ),
    (
        rf"(?<=[^\s|])[ \u00a0]+(?:\*\*)?[{FULL_WIDTH}]",
        "no space before full-width punctuation",
    ),
    (
        rf"(?<=[{CJK_OR_PUNCT}])\](?:\[[^\]\s]*\]|{MASK}+)[ \u00a0]+(?=[{CJK}])",
        "no space after a link whose text ends in Chinese ([Vaswani 等（2017）][vaswani2017]提出)",
    ),
    (
        rf"(?<=[{CJK_OR_PUNCT}])[ \u00a0]+\[(?=[{CJK}])",
        "no space before a link whose text starts with Chinese (见[掩码](masks.md))",
    ),
    (
        rf"(?<![*\\])\*(?![*\s])[^*\n]*?[{CJK}][^*\n]*?(?<![\s*])\*(?!\*)",
        "no Markdown italics on Chinese (a synthetic slant): **bold** or no emphasis",
    ),
    (
        rf"(?<![\w\\])_(?!_)[^_\n]*?[{CJK}][^_\n]*?(?<!_)_(?!\w)",
        "no Markdown italics on Chinese (a synthetic slant): **bold** or no emphasis",
    ),
    (
        rf"[{CJK}]–[{CJK}]",
        "a hyphen, not an en dash, between Chinese words (编码器-解码器)",
    ),
]

# Phrases a glossary entry cannot express: (pattern, what to write instead, the form in which
# the pattern may stand). The English of these terms stands only inside the term itself, as in
# 随机失活（dropout）: its Chinese word is used everywhere else.
GLOSSED = ["dropout", "doctest", "add-norm"]
PHRASES = [
    *(
        (
            rf"(?i)(?<![A-Za-z_]){re.escape(english)}(?![A-Za-z_])",
            f"{english!r} alone: write {zh_term} ({zh_term}（{english}） where it is introduced)",
            f"{zh_term}（{english}）",
        )
        for term in load_terms()
        if term["id"] in GLOSSED
        for zh_term, english in [re.fullmatch(r"(.+)（(.+)）", term["term"]["zh"]).groups()]
    ),
    (
        r"(?<!每)头维度",
        "头这一维 / 表示头的维度 (头维度 is one character from 每头维度, d_k)",
        "",
    ),
    (
        r"往前看",
        "往回看 for attending to earlier tokens (往前看 reads as 'look ahead')",
        "",
    ),
    (
        r"往后看",
        "看到后面（未来）的位置 for attending to later tokens (往后看 reads as 'look behind you')",
        "",
    ),
    (r"本包", "本库 for this package, one name on every page and figure", ""),
    (
        r"(?<!网页)(?<!无头)浏览器(?![中里])",
        "查看器 for the attention explorer (注意力查看器); 浏览器 is the web browser, written"
        " 网页浏览器 or 在浏览器中",
        "",
    ),
    (
        (
            r"(?:(?<![至不多])少|[小低]|减少|降低|缩小|减小|下降)了?\s*"
            r"(?:\d[\d.]*|[一二两三四五六七八九十百千]+)\s*倍"
        ),
        "a reduction as a share, not a multiple: 只有它的 1/80、为原来的四分之一"
        " (小 80 倍 reads as 1/81 or not at all)",
        "",
    ),
    (
        r"(?i)(?<![\w.`])(?:reshape|unsqueeze|randn|bugs?)(?![\w(])",
        "English left in Chinese prose: say it in Chinese (拆成多个头、错误) or as `code`",
        "",
    ),
    (
        r"(?<![\w.`])(?:nn|torch|F)\.[A-Za-z_]\w*",
        "code names as `code` (`nn.Linear`)",
        "",
    ),
    (
        r"(?<![A-Za-z])Softmax(?![A-Za-z])",
        "softmax, lower case as on every page",
        "Scalable-Softmax",
    ),
]

# Names of recurring headings and pages: one form each (variant -> the form to use).
NAMES = {
    "常见错误": "常见陷阱 (the page and every section { #pitfalls })",
    "计算代价": "开销 (the page 开销与高效注意力)",
    "与 PyTorch 对照的测试": "与 PyTorch 对照测试",
    "Flash 注意力": "FlashAttention (the glossary and the pages)",
}
HEADINGS = {"pitfalls": "常见陷阱", "checked-against-pytorch": "与 PyTorch 对照测试"}


def chinese_pages() -> list[Path]:
    return sorted(DOCS.glob("*.zh.md"))


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
    wrong += [
        f"{where}: {what!r} -> {use}"
        for where, text in texts
        for _, what, use in _phrases(prose(text))
    ]
    wrong += [
        f"{where}: {what!r}: {rule}"
        for where, text in texts
        for _, what, rule in _typography(prose(text, fill=MASK))
    ]
    assert not wrong, "\n".join(wrong)


def _typography(text: str) -> list[tuple[int, str, str]]:
    """(offset, what, rule) for each convention that the prose ``text`` breaks."""
    return [
        (m.start(), m[0], rule) for pattern, rule in CONVENTIONS for m in re.finditer(pattern, text)
    ]


def _phrases(text: str) -> list[tuple[int, str, str]]:
    """(offset, what, what to write) for each phrase of ``PHRASES`` in the prose ``text``."""
    found = []
    for pattern, use, allowed in PHRASES:
        seen = text.replace(allowed, " " * len(allowed)) if allowed else text
        found += [(m.start(), m[0], use) for m in re.finditer(pattern, seen)]
    return found


@pytest.mark.parametrize("page", chinese_pages(), ids=lambda p: p.name)
def test_chinese_page_follows_the_typography(page):
    text = prose(page.read_text(encoding="utf-8"), fill=MASK)
    wrong = [
        f"{page.name}:{_line(text, at)}: {what!r}: {rule}" for at, what, rule in _typography(text)
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("page", chinese_pages(), ids=lambda p: p.name)
def test_chinese_page_avoids_the_phrases(page):
    text = prose(page.read_text(encoding="utf-8"))
    wrong = [
        f"{page.name}:{_line(text, at)}: {what!r} -> {use}" for at, what, use in _phrases(text)
    ]
    assert not wrong, "\n".join(wrong)


# For every rule, a sample it must reject and one it must accept (the accepted one is the fix).
TYPOGRAPHY_SAMPLES = [
    ("误差为 6.5 %。", "误差为 6.5%。"),
    ("键 / 值", "键/值"),
    ("以 “The cat sat” 为例", "以“The cat sat”为例"),
    ("（Vaswani 等，2017）", "Vaswani 等（2017）"),
    ("Ba、Kiros、Hinton（2016）", "Ba 等（2016）"),
    ("Zhang、Sennrich（2019）", "Zhang 和 Sennrich（2019）"),
    ("在 评估模式下比较", "在评估模式下比较"),
    ("只做**注意力** 本身", "只做**注意力**本身"),
    ("- **存什么：** 之前每个词元的键", "- **存什么：**之前每个词元的键"),
    ("**正确做法。** `model.eval()` 会关掉", "**正确做法。**`model.eval()` 会关掉"),
    ("权重求和为 1 。", "权重求和为 1。"),
    ("[Vaswani 等（2017）][vaswani2017] 提出的", "[Vaswani 等（2017）][vaswani2017]提出的"),
    (
        "见[评估模式](glossary.md#evaluation-mode) 下的输出",
        "见[评估模式](glossary.md#evaluation-mode)下的输出",
    ),
    ("详见 [掩码](masks.md)。", "详见[掩码](masks.md)。"),
    ("它算出的是*精确*的注意力", "它算出的是**精确**的注意力"),
    ("它算出的是 _精确_ 的注意力", "它算出的是**精确**的注意力"),
    ("编码器–解码器注意力", "编码器-解码器注意力"),
]
PHRASE_SAMPLES = [
    ("推理时忘了关 dropout", "推理时忘了关随机失活，即[随机失活（dropout）](glossary.md#dropout)"),
    ("页面上的示例都是 doctest", "页面上的示例都是[文档测试（doctest）](glossary.md#doctest)"),
    ("每个子层之后做 Add & Norm", "每个子层之后做残差与归一化（Add & Norm）"),
    ("把掩码在头维度上复制", "把掩码沿头这一维复制，每头维度不变"),
    ("可以只往前看", "可以只往回看"),
    ("后者还会往后看", "后者还会看到后面（未来）的位置"),
    ("本包的 `sliding_window(w)` 是", "本库的 `sliding_window(w)` 是"),
    ("上面的浏览器一次显示一个头的权重", "上面的查看器一次显示一个头的权重"),
    ("正在加载注意力浏览器……", "正在加载注意力查看器……；测试在浏览器中打开页面，用网页浏览器"),
    ("潜在向量比键和值小 80 倍", "潜在向量只有键和值的 1/80"),
    ("缓存却减少了 6.4 倍", "缓存却只有后者的 1/6.4（约 16%）"),
    ("Llama 3 8B 低四倍", "Llama 3 8B 只有它的四分之一，至少 2 倍的差距，一个整数倍"),
    ("每个分数都会降低 1.87 倍", "每个分数都只有应有值的 1/1.87（约 53%）；速度快 2 倍"),
    ("先把输入 reshape 成多个头", "先把输入拆成多个头（`reshape`）"),
    ("这个 bug 藏得住", "这个错误藏得住"),
    ("输入为 2 倍的 randn", "输入为 2 倍的标准正态随机数（`torch.randn`）"),
    ("直接填进 nn.Linear", "直接填进 `nn.Linear`"),
    ("## Softmax", "## softmax"),
]


# Glossary variants that stand for two terms apart (a sample the glossary rejects, and its fix).
GLOSSARY_SAMPLES = [
    ("每块 4 个位置的分块掩码 + ALiBi", "每段 4 个位置的分段掩码 + ALiBi，用分块注意力计算"),
    ("所以分块计划只构建一次", "所以分数块计划只构建一次，按分块注意力计算"),
]


@pytest.mark.parametrize(("bad", "good"), GLOSSARY_SAMPLES, ids=lambda s: s)
def test_each_glossary_variant_rejects_its_sample(bad, good):
    forbidden = _forbidden()
    assert any(variant in prose(bad) for variant in forbidden), f"{bad!r} should be rejected"
    assert not any(variant in prose(good) for variant in forbidden), f"{good!r} should pass"


def test_each_rule_has_samples():
    rejected = {
        rule for bad, _ in TYPOGRAPHY_SAMPLES for _, _, rule in _typography(prose(bad, MASK))
    }
    assert rejected == {rule for _, rule in CONVENTIONS}, "a convention without a sample"
    rejected = {use for bad, _ in PHRASE_SAMPLES for _, _, use in _phrases(prose(bad))}
    assert rejected == {use for _, use, _ in PHRASES}, "a phrase without a sample"


@pytest.mark.parametrize(("bad", "good"), TYPOGRAPHY_SAMPLES, ids=lambda s: s)
def test_each_typography_rule_rejects_its_sample(bad, good):
    assert _typography(prose(bad, fill=MASK)), f"{bad!r} should be rejected"
    assert not _typography(prose(good, fill=MASK)), f"{good!r} should pass"


@pytest.mark.parametrize(("bad", "good"), PHRASE_SAMPLES, ids=lambda s: s)
def test_each_phrase_rule_rejects_its_sample(bad, good):
    assert _phrases(prose(bad)), f"{bad!r} should be rejected"
    assert not _phrases(prose(good)), f"{good!r} should pass"


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_formulas_write_subscript_words_upright(page):
    """$d_{\\text{ff}}$, not $d_{ff}$ (the italic reads as f·f), in both languages."""
    text = page.read_text(encoding="utf-8")
    wrong = [
        f"{page.name}:{_line(text, m.start())}: {m[0]!r} -> d_{{\\text{{{m[1]}}}}}"
        for m in re.finditer(r"d_\{(ff|model)\}", text)
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("page", chinese_pages(), ids=lambda p: p.name)
def test_recurring_headings_have_one_name(page):
    text = page.read_text(encoding="utf-8")
    for anchor, name in HEADINGS.items():
        for heading in re.findall(rf"^#+ (.*?) *\{{ *#{anchor} *\}}", text, re.M):
            assert heading == name, f"{page.name}: {heading!r} {{ #{anchor} }}: write {name!r}"


FIGURE_SOURCES = sorted(
    source
    for folder in ("docs_hooks", "attention_ref", "benchmarks", "overrides")
    for source in (DOCS.parent / folder).rglob("*.py")
    if re.search(f"[{CJK}]", source.read_text(encoding="utf-8"))
)


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
    wrong += [
        f"{source.name}:{node.lineno}: {what!r}: {rule}"
        for node in strings
        for _, what, rule in _phrases(node.value) + _typography(node.value)
    ]
    assert not wrong, "\n".join(wrong)
