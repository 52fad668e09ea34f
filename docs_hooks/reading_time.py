"""How long the core path takes to read, measured on the built site as a browser shows it.

    python -m docs_hooks.reading_time SITE_DIR            # the core path's table, both languages
    python -m docs_hooks.reading_time SITE_DIR --all      # every page, core path first
    python -m docs_hooks.reading_time SITE_DIR --check    # exit 1 over the bars, naming the page
    python -m docs_hooks.reading_time SITE_DIR --write-home  # the home page's minutes from these

The core path is the home page and the pages of the nav's "Learn" section of mkdocs.yml, in
that order (the nav is the one place that lists it). Each page's built HTML (English at
SITE_DIR/x/index.html, Chinese at SITE_DIR/zh/x/index.html, the home page at index.html) is read
as a reader sees it with nothing expanded: only the article; a collapsed ``<details>`` (no
``open``) shows its summary line only; of a set of tabs only the selected one (the first)
counts; headerlink marks, hidden elements, scripts and the insides of SVGs (figures, formulas)
do not count. Then:

- prose: English words at 180 a minute; on Chinese pages, CJK characters at 400 a minute plus
  the Latin words between them at 180 a minute;
- code: the non-blank lines of each ``<pre>`` at 15 a minute (line-number columns are no lines);
- displayed formulas (``<div class="arithmatex">``, as docs_hooks/hooks/formulas.py writes
  display math): a quarter of a minute each; inline formulas and figures: nothing.

The bars (issue 31): the core path at most 120 minutes, no core page over 20, in each language.
`tests/e2e/test_reading_time.py` asserts them on the browser tests' build, and checks that the
words counted here agree with the article's ``innerText`` in Chromium.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
from collections.abc import Iterable
from html.parser import HTMLParser
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MKDOCS_YML = ROOT / "mkdocs.yml"
LANGUAGES = ("en", "zh")
CORE_SECTION = "Learn"

WORDS_PER_MINUTE = 180
CJK_PER_MINUTE = 400
CODE_LINES_PER_MINUTE = 15
MINUTES_PER_FORMULA = 0.25
CORE_PATH_MAX_MINUTES = 120
CORE_PAGE_MAX_MINUTES = 20

# Han ideographs (the unified block, extension A, compatibility ideographs): what "400 Chinese
# characters a minute" counts. Chinese punctuation is neither a character read nor a word.
CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
WORD = re.compile(r"\w", re.UNICODE)

VOID = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
    "source", "track", "wbr",
}  # fmt: skip
# Tags that do not break a word: text on both sides of them runs on.
INLINE = {
    "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "del", "dfn", "em", "i", "ins",
    "kbd", "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var",
}  # fmt: skip
NEVER_SHOWN = {"script", "style", "template", "noscript", "svg", "math", "head", "title"}


@dataclasses.dataclass
class Measure:
    """What one page shows a reader who expands nothing."""

    words: int = 0  # Latin words of prose (on Chinese pages, those between the characters)
    cjk: int = 0  # CJK characters of prose
    code_lines: int = 0  # non-blank lines of visible <pre> blocks
    formulas: int = 0  # displayed formulas
    prose: str = ""  # the visible prose, for checks against a browser
    code: str = ""  # the visible code

    @property
    def minutes(self) -> float:
        return (
            self.words / WORDS_PER_MINUTE
            + self.cjk / CJK_PER_MINUTE
            + self.code_lines / CODE_LINES_PER_MINUTE
            + self.formulas * MINUTES_PER_FORMULA
        )

    def __add__(self, other: Measure) -> Measure:
        return Measure(
            self.words + other.words,
            self.cjk + other.cjk,
            self.code_lines + other.code_lines,
            self.formulas + other.formulas,
        )


def count_words(text: str) -> tuple[int, int]:
    """(Latin words, CJK characters) in text: characters are counted one by one, and the
    whitespace-separated runs left between them that hold a letter or digit are words."""
    cjk = len(CJK.findall(text))
    words = sum(1 for token in CJK.sub(" ", text).split() if WORD.search(token))
    return words, cjk


class _Reader(HTMLParser):
    """Collects the visible text of the page's article (or of the whole fragment given when it
    has no article): prose and code apart, and counts displayed formulas."""

    def __init__(self, whole: bool) -> None:
        super().__init__(convert_charrefs=True)
        # open elements: (tag, hides what it holds, what it opened: "details", "tabs" or "")
        self.stack: list[tuple[str, bool, str]] = []
        self.in_article = 1 if whole else 0
        self.hidden = 0  # open elements that hide what they hold
        self.pre = 0
        self.prose: list[str] = []
        self.code: list[str] = []
        self.code_blocks: list[str] = []
        self.formulas = 0
        self.collapsed: list[bool] = []  # per open <details>: whether it is collapsed
        # per open tab set: its radio inputs' checked states, and the index of its next block
        self.tab_inputs: list[list[bool]] = []
        self.tab_next: list[int] = []

    def _hides(self, tag: str, attrs: dict[str, str | None], classes: list[str]) -> bool:
        style = (attrs.get("style") or "").replace(" ", "").lower()
        if tag in NEVER_SHOWN or "hidden" in attrs or "display:none" in style:
            return True
        if {"headerlink", "linenos", "linenodiv"} & set(classes):
            return True
        in_details = bool(self.stack) and self.stack[-1][0] == "details"
        if in_details and self.collapsed[-1] and tag != "summary":
            return True  # the body of a collapsed <details>: everything but its summary
        if "tabbed-block" in classes and self.tab_inputs:
            index = self.tab_next[-1]
            self.tab_next[-1] += 1
            checked = self.tab_inputs[-1]
            selected = checked.index(True) if True in checked else 0
            return index != selected
        return False

    def _shown(self) -> bool:
        return self.in_article > 0 and self.hidden == 0

    def handle_starttag(self, tag: str, attrs_list: list[tuple[str, str | None]]) -> None:
        attrs = dict(attrs_list)
        classes = (attrs.get("class") or "").split()
        if tag == "article" and "md-content__inner" in classes:
            self.in_article += 1
        if tag == "input" and attrs.get("type") == "radio" and self.tab_inputs:
            self.tab_inputs[-1].append("checked" in attrs)
        if tag in VOID:
            return
        hides = self._hides(tag, attrs, classes)
        opened = ""
        if tag == "details":
            opened = "details"
            self.collapsed.append("open" not in attrs)
        elif "tabbed-set" in classes:
            opened = "tabs"
            self.tab_inputs.append([])
            self.tab_next.append(0)
        self.stack.append((tag, hides, opened))
        self.hidden += hides
        if tag == "pre":
            self.pre += 1
        if not self._shown():
            return
        if tag == "div" and "arithmatex" in classes:
            self.formulas += 1
        if tag not in INLINE:
            self.prose.append(" ")

    def handle_startendtag(self, tag: str, attrs_list: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            self.handle_starttag(tag, attrs_list)
        # <path/> and the like in SVG: nothing to read

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or not any(open_tag == tag for open_tag, _, _ in self.stack):
            return
        while self.stack:
            open_tag, hides, opened = self.stack.pop()
            self._close(open_tag, hides, opened)
            if open_tag == tag:
                break

    def _close(self, tag: str, hides: bool, opened: str) -> None:
        shown = self._shown()
        if tag == "pre":
            self.pre -= 1
            if self.pre == 0 and shown:
                self.code_blocks.append("".join(self.code))
            if self.pre == 0:
                self.code = []
        self.hidden -= hides
        if opened == "details":
            self.collapsed.pop()
        elif opened == "tabs":
            self.tab_inputs.pop()
            self.tab_next.pop()
        if tag == "article" and self.in_article:
            self.in_article -= 1
        if tag not in INLINE and shown:
            self.prose.append(" ")

    def handle_data(self, data: str) -> None:
        if self._shown():
            (self.code if self.pre else self.prose).append(data)


def measure_html(html: str, *, whole: bool = False) -> Measure:
    """Measure a built page (its <article class="md-content__inner">), or, with whole=True, a
    fragment of HTML as it stands (for tests)."""
    reader = _Reader(whole)
    reader.feed(html)
    reader.close()
    prose = re.sub(r"\s+", " ", "".join(reader.prose)).strip()
    code = "\n".join(reader.code_blocks)
    words, cjk = count_words(prose)
    code_lines = sum(1 for line in code.splitlines() if line.strip())
    return Measure(words, cjk, code_lines, reader.formulas, prose, code)


# -- the core path ----------------------------------------------------------------------------


class _NavLoader(yaml.SafeLoader):
    """Reads mkdocs.yml, whose !ENV and !!python/name tags do not matter to the nav."""


_NavLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def _nav_file(entry: object) -> str | None:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and len(entry) == 1:
        (value,) = entry.values()
        return value if isinstance(value, str) else None
    return None


def core_path(mkdocs_yml: Path = MKDOCS_YML) -> list[str]:
    """The core path's pages (their Markdown names without .md), in order: the nav's first
    page (the home page), then the pages of its "Learn" section."""
    nav = yaml.load(mkdocs_yml.read_text(encoding="utf-8"), Loader=_NavLoader)["nav"]
    home = _nav_file(nav[0])
    learn = next(
        entry[CORE_SECTION] for entry in nav if isinstance(entry, dict) and CORE_SECTION in entry
    )
    pages = [home] + [_nav_file(entry) for entry in learn]
    return [page.removesuffix(".md") for page in pages if page]


def all_pages(mkdocs_yml: Path = MKDOCS_YML) -> list[str]:
    """Every page in the nav, in nav order."""
    nav = yaml.load(mkdocs_yml.read_text(encoding="utf-8"), Loader=_NavLoader)["nav"]

    def walk(entries: Iterable[object]) -> Iterable[str]:
        for entry in entries:
            name = _nav_file(entry)
            if name:
                yield name.removesuffix(".md")
            elif isinstance(entry, dict):
                for value in entry.values():
                    if isinstance(value, list):
                        yield from walk(value)

    return list(walk(nav))


def built_page(site: Path, page: str, lang: str) -> Path:
    """Where the page is in a built site: index.html, x/index.html, zh/x/index.html."""
    base = site if lang == "en" else site / lang
    return base / "index.html" if page == "index" else base / page / "index.html"


def measure_page(site: Path, page: str, lang: str) -> Measure:
    built = built_page(site, page, lang)
    if not built.is_file():
        raise SystemExit(f"{built} is missing: build the site (both languages) into {site} first")
    return measure_html(built.read_text(encoding="utf-8"))


def rounded(minutes: float) -> int:
    """Minutes as a page states them: rounded up."""
    return math.ceil(minutes - 1e-9)


def table(
    site: Path, pages: list[str], lang: str, total_name: str = "total"
) -> tuple[str, list[tuple[str, Measure]]]:
    rows = [(page, measure_page(site, page, lang)) for page in pages]
    text_unit = "chars + words" if lang == "zh" else "words"
    lines = [f"{lang}: {'page':<20} {text_unit:>15} {'code lines':>10} {'formulas':>8} {'min':>6}"]
    total = Measure()
    for page, m in rows:
        total = total + m
        text = f"{m.cjk} + {m.words}" if lang == "zh" else f"{m.words}"
        lines.append(
            f"    {page:<20} {text:>15} {m.code_lines:>10} {m.formulas:>8} {m.minutes:>6.1f}"
        )
    text = f"{total.cjk} + {total.words}" if lang == "zh" else f"{total.words}"
    lines.append(
        f"    {total_name:<20} {text:>15} {total.code_lines:>10} {total.formulas:>8}"
        f" {total.minutes:>6.1f}"
    )
    return "\n".join(lines), rows


def over_the_bars(rows: list[tuple[str, Measure]], lang: str) -> list[str]:
    """What is over the bars: each core page over 20 minutes, the path over 120."""
    problems = [
        f"{lang}: {page} reads in {m.minutes:.1f} min (at most {CORE_PAGE_MAX_MINUTES})"
        for page, m in rows
        if m.minutes > CORE_PAGE_MAX_MINUTES
    ]
    total = sum(m.minutes for _, m in rows)
    if total > CORE_PATH_MAX_MINUTES:
        problems.append(
            f"{lang}: the core path reads in {total:.1f} min (at most {CORE_PATH_MAX_MINUTES})"
        )
    return problems


# -- the home page's "Start here" table --------------------------------------------------------

DOCS = ROOT / "docs"
START_HERE = re.compile(r"^## .*\{ *#start-here *\} *$")
NUMBER_CELL = re.compile(r"^(\**)(\d+)(\**)$")
LINKED_PAGE = re.compile(r"\]\(([\w-]+)\.md[#)]")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _start_here_rows(markdown: str) -> list[tuple[int, list[str]]]:
    """The rows of the home page's "Start here" table that state minutes (its second column):
    (line number, cells), the page rows and then the total (both cells in bold)."""
    lines = markdown.splitlines()
    start = next((i for i, line in enumerate(lines) if START_HERE.match(line)), None)
    if start is None:
        raise ValueError("the home page has no section { #start-here }")
    rows = []
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("## "):
            break
        cells = _cells(lines[i]) if lines[i].startswith("|") else []
        if len(cells) > 1 and NUMBER_CELL.match(cells[1]):
            rows.append((i, cells))
    return rows


def _is_total(cells: list[str]) -> bool:
    return cells[0].startswith("**") and cells[1].startswith("**")


def stated_minutes(markdown: str) -> tuple[list[tuple[str | None, int]], int]:
    """What the home page states: per core page (the page it links, None for the home page
    itself) its minutes, and the total (-1 if none)."""
    pages, total = [], -1
    for _, cells in _start_here_rows(markdown):
        found = NUMBER_CELL.match(cells[1])
        assert found
        if _is_total(cells):
            total = int(found[2])
        else:
            linked = LINKED_PAGE.search(cells[0])
            pages.append((linked[1] if linked else None, int(found[2])))
    return pages, total


def with_minutes(markdown: str, minutes: list[int], total: int) -> str:
    """The home page with its "Start here" minutes set: one number per page row, then the
    total."""
    lines = markdown.splitlines(keepends=True)
    rows = _start_here_rows(markdown)
    if len(rows) != len(minutes) + 1 or not _is_total(rows[-1][1]):
        raise ValueError(f"{len(rows) - 1} page rows and a total for {len(minutes)} core pages")
    for (i, cells), value in zip(rows, [*minutes, total], strict=True):
        old = NUMBER_CELL.match(cells[1])
        assert old
        cells[1] = f"{old[1]}{value}{old[3]}"
        end = "\n" if lines[i].endswith("\n") else ""
        lines[i] = ("| " + " | ".join(cells) + " |").replace("|  |", "| |") + end
    return "".join(lines)


def home_page(lang: str) -> Path:
    return DOCS / ("index.md" if lang == "en" else f"index.{lang}.md")


def write_home(site: Path) -> None:
    """Set the home pages' "Start here" minutes to what is measured on the built site. The
    Chinese page, if it was in line with the English one, stays recorded as in line."""
    from docs_hooks import translations

    core = core_path()
    was_current = {
        lang: not translations.translation(home_page(lang)).stale for lang in LANGUAGES[1:]
    }
    for lang in LANGUAGES:
        measured = [measure_page(site, page, lang).minutes for page in core]
        page = home_page(lang)
        text = page.read_text(encoding="utf-8")
        updated = with_minutes(text, [rounded(m) for m in measured], rounded(sum(measured)))
        if updated != text:
            page.write_text(updated, encoding="utf-8")
            print(f"{page.relative_to(ROOT)}: minutes set")
    for lang, current in was_current.items():
        if current:
            translations.record(home_page(lang))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="a built site (mkdocs build --site-dir)")
    parser.add_argument("--check", action="store_true", help="exit 1 when over the bars")
    parser.add_argument("--all", action="store_true", help="also every page off the core path")
    parser.add_argument(
        "--write-home",
        action="store_true",
        help="set the minutes of the home page's Start here table (both languages) to these",
    )
    args = parser.parse_args(argv)
    core = core_path()
    problems: list[str] = []
    print(
        f"Reading time of the core path (open text; {WORDS_PER_MINUTE} words, "
        f"{CJK_PER_MINUTE} Chinese characters, {CODE_LINES_PER_MINUTE} code lines a minute, "
        f"{MINUTES_PER_FORMULA} min a displayed formula)"
    )
    for lang in LANGUAGES:
        text, rows = table(args.site, core, lang)
        print(text)
        problems += over_the_bars(rows, lang)
        if args.all:
            rest = [page for page in all_pages() if page not in core]
            print(table(args.site, rest, lang, "off the path")[0])
    if args.write_home:
        write_home(args.site)
    if args.check and problems:
        print("\n".join(["Over the reading-time bars:", *problems]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
