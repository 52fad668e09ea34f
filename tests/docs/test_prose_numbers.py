"""Numbers the prose derives come from code the page runs.

A multiplier that a page's prose states ("80 times smaller", "56.9×", "6.4 倍", "1/6.4",
"四分之一", "a 4-fold cut", "7 of 12 tiles", "16 块中的 6 块") must be printed by a doctest on
the same page: some number in the output lines of the page's ```pycon blocks equals it, to the
digits the prose gives ("6.4" is met by 6.37, "80" by 79.6; "170", read to its last non-zero
digit, by 170.8), or equals its reciprocal (a doctest may print 1/80 = 0.0125 for "80
times smaller"). A count "N of M" needs both N and M printed, or the share N/M.

Prose is what docs_hooks.markdown.prose leaves: code blocks, inline code, formulas and link
targets are not prose, so a multiplier inside a formula is the formula's business.

What no doctest can compute, because it is true by definition (a multiplier that names a
formula, a scale, the square of a doubling), is listed in ``ALLOWED`` with the page, the phrase
as the prose says it and the reason. Every entry must still be needed: one that matches nothing
fails too.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from docs_hooks.markdown import code_blocks, prose

DOCS = Path(__file__).resolve().parents[2] / "docs"

WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "twenty": 20,
    "hundred": 100,
    "thousand": 1000,
}
HAN = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
NUMBER = r"(?:\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?|\d+(?:\.\d+)?)"  # 40,960 or 6.4
WORD = "|".join(WORDS)
HAN_NUMBER = rf"[{''.join(HAN)}十百千]+"
FORMULA = "\u2592"  # what stands for code and math in the prose read here: 2 × $d_k$ is a product
MULTIPLIER = re.compile(
    rf"""
    (?P<times>(?<![\w.])(?:{NUMBER}|(?i:{WORD}))(?:\s+times|-?fold)(?![\w-]))  # 80 times, 4-fold
  | (?P<sign>(?<![\w.]){NUMBER}\s?×(?!\s?[\d({FORMULA}])|(?<![\w.]){NUMBER}x(?!\w))  # 56.9×, 2x
  | (?P<bei>(?:{NUMBER}|{HAN_NUMBER})\s*倍)  # 6.4 倍, 四倍
  | (?P<frac>(?<![\w./])1\s?/\s?(?:√\s?)?(?:{NUMBER}|[^\W\d]\w*))  # 1/6.4, 1/√d_k
  | (?P<fen>(?:{NUMBER}|{HAN_NUMBER})\s*分之一)  # 四分之一, 6.4 分之一
  | (?P<of>(?<![\w.])(?P<part>\d+)\s+of\s+(?:the\s+|its\s+)?(?P<whole>\d+)(?![\w.]))  # 7 of 12
  | (?P<zhof>(?P<zwhole>\d+)\s*(?P<unit>[个块头项行])(?:中|之中|里)的?\s*(?:有\s*)?(?P<zpart>\d+))
    """,
    re.X,
)
OUTPUT_NUMBER = re.compile(rf"(?<![\w.])-?(?:{NUMBER})(?:\.(?!\d))?(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Allowed:
    """A multiplier no doctest computes: the page, the phrase around it as the prose says it
    (whitespace may differ), and why it is true by definition."""

    page: str
    phrase: str
    reason: str


SCALE = "names the scale by its formula (a symbol, no number to print)"
ALLOWED: list[Allowed] = [
    Allowed("pitfalls.md", "with the scale 1/√d_k", SCALE),
    Allowed("pitfalls.md", "with 1/√d_model it is", SCALE),
    Allowed("pitfalls.zh.md", "按 1/√d_k 缩放", SCALE),
    Allowed("pitfalls.zh.md", "按 1/√d_model 缩放", SCALE),
    Allowed(
        "index.zh.md",
        "四分之一分钟",
        "the reading-time convention (a displayed formula counts a quarter of a minute): a rule"
        " the site sets, not a measurement",
    ),
]


@dataclass(frozen=True)
class Found:
    """A multiplier in the prose: where, what it says, and the numbers it states."""

    start: int
    end: int
    line: int
    text: str
    numbers: tuple[str, ...]  # each as the prose writes it ("6.4", "80"); () if not a number


def _value(word: str) -> str | None:
    """A number as digits: '40,960' -> '40960', 'four' -> '4', '四' -> '4', '十' -> '10'."""
    word = word.strip()
    if re.fullmatch(NUMBER, word):
        return word.replace(",", "")
    if word.lower() in WORDS:
        return str(WORDS[word.lower()])
    if re.fullmatch(HAN_NUMBER, word):
        total, digit = 0, 0
        for char in word:
            if char in HAN:
                digit = HAN[char]
            else:
                total += (digit or 1) * {"十": 10, "百": 100, "千": 1000}[char]
                digit = 0
        return str(total + digit)
    return None


def multipliers(text: str) -> list[Found]:
    """The multipliers in a page's prose (``text`` is the whole page's Markdown)."""
    kept = prose(text, fill=FORMULA)
    found = []
    for match in MULTIPLIER.finditer(kept):
        if match["of"]:
            numbers = (match["part"], match["whole"])
        elif match["zhof"]:
            numbers = (match["zpart"], match["zwhole"])
        else:
            head = match[0]
            if match["frac"]:
                head = re.sub(r"^1\s?/\s?", "", head)
                if head.startswith("√"):
                    root = _value(head[1:].strip())
                    numbers = (f"{math.sqrt(float(root)):g}",) if root else ()
                    found.append(_found(kept, match, numbers))
                    continue
            head = re.sub(r"\s*(?:times|-?fold|×|x|倍|分之一)$", "", head, flags=re.I)
            value = _value(head)
            numbers = (value,) if value else ()
        found.append(_found(kept, match, numbers))
    return found


def _found(kept: str, match: re.Match[str], numbers: tuple[str, ...]) -> Found:
    line = kept.count("\n", 0, match.start()) + 1
    return Found(match.start(), match.end(), line, " ".join(match[0].split()), numbers)


def printed(text: str) -> list[float]:
    """Every number in the output lines of the page's doctests (not in their source lines)."""
    numbers = []
    for block in code_blocks(text):
        if block.language != "pycon":
            continue
        for line in block.lines:
            stripped = line.strip()
            if not stripped or stripped.startswith((">>>", "... ")) or stripped == "...":
                continue
            stripped = re.sub(r"torch\.Size\(\[[^\]]*\]\)", "", stripped)  # shapes state no ratio
            for number in OUTPUT_NUMBER.findall(stripped):
                numbers.append(float(number.replace(",", "").rstrip(".")))
    return numbers


def _meets(stated: str, value: float) -> bool:
    """Whether ``value`` (or its reciprocal) shows as ``stated`` at the digits ``stated`` has:
    "6.4" to a tenth, "80" to a unit, "170" and "2000" to their last non-zero digit."""
    whole, _, fraction = stated.partition(".")
    places = -len(fraction) if fraction else 0
    if not fraction and len(whole) > 2:  # 170, 2000: rounded to two significant figures or so
        places = len(whole) - len(whole.rstrip("0"))
    tolerance = 0.5 * 10.0**places + 1e-9
    target = float(stated)
    candidates = [value] + ([1 / value] if value else [])
    return any(abs(candidate - target) <= tolerance for candidate in candidates)


def computed(found: Found, outputs: list[float]) -> bool:
    """Whether every number the multiplier states is printed on the page; for a count "N of M",
    both N and M, or the share it states, N/M as a fraction or a percentage (6 of 16: 37.5)."""
    if len(found.numbers) == 2:
        part, whole = (float(number) for number in found.numbers)
        share = part / whole if whole else math.nan
        if any(abs(v - share) < 5e-4 or abs(v - 100 * share) < 0.05 for v in outputs):
            return True
    return bool(found.numbers) and all(
        any(_meets(number, value) for value in outputs) for number in found.numbers
    )


def _allowed_spans(name: str, kept: str, allowed: list[Allowed]) -> list[tuple[int, int, Allowed]]:
    spans = []
    for entry in allowed:
        if entry.page != name:
            continue
        pattern = r"\s+".join(re.escape(word) for word in entry.phrase.split())
        spans += [(m.start(), m.end(), entry) for m in re.finditer(pattern, kept)]
    return spans


def check(name: str, text: str, allowed: list[Allowed]) -> tuple[list[str], set[Allowed]]:
    """The multipliers of page ``name`` that no doctest prints and no entry allows, and the
    entries that allowed something."""
    kept = prose(text)
    outputs = printed(text)
    spans = _allowed_spans(name, kept, allowed)
    wrong, used = [], set()
    for found in multipliers(text):
        if computed(found, outputs):
            continue
        entries = [e for start, end, e in spans if start <= found.start and found.end <= end]
        if entries:
            used.update(entries)
            continue
        context = " ".join(kept[max(0, found.start - 50) : found.end + 30].split())
        wrong.append(f"{name}:{found.line}: {found.text!r} (…{context}…)")
    return wrong, used


PAGES = sorted(DOCS.glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_multipliers_in_prose_are_printed_by_a_doctest(page):
    wrong, _ = check(page.name, page.read_text(encoding="utf-8"), ALLOWED)
    assert not wrong, (
        "a multiplier that no doctest on the page prints: add a doctest line that computes it,"
        " or, if it is true by definition, an entry in ALLOWED with the reason\n" + "\n".join(wrong)
    )


def test_every_allowed_entry_is_needed():
    used: set[Allowed] = set()
    for page in PAGES:
        used |= check(page.name, page.read_text(encoding="utf-8"), ALLOWED)[1]
    unused = [f"{e.page}: {e.phrase!r}" for e in ALLOWED if e not in used]
    assert not unused, "ALLOWED entries that match nothing (remove them):\n" + "\n".join(unused)


def test_every_allowed_entry_names_a_page_and_a_reason():
    names = {page.name for page in PAGES}
    for entry in ALLOWED:
        assert entry.page in names and entry.phrase.strip() and entry.reason.strip(), entry


# Samples: what the test must reject and what it must accept.
DOCTEST_80 = "```pycon\n>>> 128 * (192 + 128) / 512\n80.0\n```\n"


def _wrong(text: str, allowed: list[Allowed] = ()) -> list[str]:
    return check("sample.md", text, list(allowed))[0]


def test_a_multiplier_nothing_prints_fails():
    assert _wrong("The latent is 80 times smaller than the keys.\n")
    assert _wrong("潜在向量只有键和值的 1/80。\n")
    assert _wrong("缓存小 6.4 倍。\n```pycon\n>>> 1 + 1\n2\n```\n")


def test_a_multiplier_a_doctest_prints_passes():
    assert not _wrong("The latent is 80 times smaller than the keys.\n\n" + DOCTEST_80)
    assert not _wrong("潜在向量只有键和值的 1/80。\n\n" + DOCTEST_80)
    assert not _wrong("about 79.6 of them\n\nIt is 80× smaller.\n\n" + DOCTEST_80)


def test_the_doctest_must_print_it_not_only_compute_it():
    source_only = "It is 80 times smaller.\n```pycon\n>>> ratio = 80\n>>> ratio > 1\nTrue\n```\n"
    assert _wrong(source_only)


def test_the_prose_rounding_is_allowed_and_no_more():
    doctest = "```pycon\n>>> round(40960 / 6400, 3)\n6.372\n```\n"
    assert not _wrong("a cache 6.4 times smaller\n" + doctest)
    assert _wrong("a cache 6.3 times smaller\n" + doctest)
    assert not _wrong("a cache 6.37 times smaller\n" + doctest)
    assert _wrong("a cache 6.38 times smaller\n" + doctest)


def test_trailing_zeros_round_to_the_last_digit_that_is_not_zero():
    assert not _wrong(
        "to 170 times (float16)\n```pycon\n>>> round(0.16566 / 0.00097, 1)\n170.8\n```\n"
    )
    assert _wrong("80 times smaller\n```pycon\n>>> round(40960 / 576, 1)\n71.1\n```\n")
    assert _wrong("64 times smaller\n```pycon\n>>> round(40960 / 576, 1)\n71.1\n```\n")


def test_a_reciprocal_is_printed_either_way():
    doctest = "```pycon\n>>> 512 / (128 * 320)\n0.0125\n```\n"
    assert not _wrong("the latent is 80 times smaller\n" + doctest)


def test_counts_need_both_numbers():
    assert _wrong("7 of 12 tiles are empty\n```pycon\n>>> plan.skipped\n7\n```\n")
    both = "7 of 12 tiles are empty\n```pycon\n>>> plan.skipped, plan.total\n(7, 12)\n```\n"
    assert not _wrong(both)
    assert not _wrong("12 块中的 7 块为空\n```pycon\n>>> plan.skipped, plan.total\n(7, 12)\n```\n")
    share = (
        "6 of 16 tiles empty\n```pycon\n>>> block_sparsity(causal(), 1, 1, 16, 16, 4)\n37.5\n```\n"
    )
    assert not _wrong(share)
    assert _wrong(share.replace("6 of 16", "7 of 16"))


def test_code_and_formulas_are_not_prose():
    assert not _wrong("The scale is $1/\\sqrt{d_k}$, and `x * 80` times nothing.\n")
    assert not _wrong("```python\ninclude: attention_ref.latent\n```\n\n$$ 2 \\times 80 $$\n")


def test_shapes_are_not_multipliers():
    assert not _wrong("A 3 × 4 grid of 512×512 tiles, 4×4 in all, and 2 × $d_k$ numbers.\n")
    assert _wrong("It takes 2× the memory.\n")


def test_an_allowed_multiplier_passes():
    text = "A cache holds keys and values: 2× the memory of one head.\n"
    entry = Allowed("sample.md", "2× the memory of one head", "keys and values: two tensors")
    assert _wrong(text)
    assert not _wrong(text, [entry])
    assert check("sample.md", text, [entry])[1] == {entry}
    assert _wrong(text, [Allowed("other.md", entry.phrase, entry.reason)])  # on its own page


def test_the_number_words():
    text = "four times, a fourfold cut; 内存变成四倍；十倍；两倍；只有它的四分之一；二十倍\n"
    assert [f.numbers for f in multipliers(text)] == [
        ("4",),
        ("4",),
        ("4",),
        ("10",),
        ("2",),
        ("4",),
        ("20",),
    ]
    assert [f.numbers for f in multipliers("1/√192 and 1/√d_k\n")] == [
        (f"{math.sqrt(192):g}",),
        (),
    ]
