"""The pages' code: included from the package or run as doctests, the same in both languages.

Every fenced block with a Python-like language on a page under docs/ is either
- a ```python block of include lines only, ``include: attention_ref.masks.causal_mask [part]``
  (docs_hooks/hooks/package_code.py shows that code; tests/docs/test_source_copies.py runs its
  copy), or
- a ```pycon block of ``>>>`` doctests, which docs/conftest.py (Sybil) runs.
Every page ``x.md`` has its Chinese twin ``x.zh.md``, which includes the same sections, runs the
same doctests (comments may be translated), draws the same figures and keeps the same heading ids.
"""

from __future__ import annotations

import doctest
import io
import re
import tokenize
from pathlib import Path

import pytest

from docs_hooks.markdown import Block, heading_ids
from docs_hooks.markdown import code_blocks as blocks
from docs_hooks.source_code import Include, SourceError, shown

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PYTHON_LIKE = {"python", "python3", "py", "py3", "pycon", "ipython", "ipython3"}
INCLUDE = re.compile(r"^include:\s+(?P<spec>\S.*)$")
FIGURE = re.compile(r"\(figures/(?P<name>[\w-]+)\.(?P<lang>[a-z]{2})\.svg[)\s]")


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "includes" not in p.relative_to(DOCS).parts)


def english_pages() -> list[Path]:
    return [p for p in pages() if not p.name.endswith(".zh.md")]


def twin(page: Path) -> Path:
    if page.name.endswith(".zh.md"):
        return page.with_name(page.name.removesuffix(".zh.md") + ".md")
    return page.with_name(page.name.removesuffix(".md") + ".zh.md")


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(DOCS)) for p in paths]


def _without_comments(source: str) -> str:
    """The doctest's code with its comments dropped: comments may be translated."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        source = tokenize.untokenize(t for t in tokens if t.type != tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError):
        pass
    return "\n".join(line.rstrip() for line in source.splitlines())


def code_of(page: Path) -> dict[str, list]:
    """What must match across languages: included sections, doctest sources, figures, ids."""
    text = page.read_text(encoding="utf-8")
    python = [b for b in blocks(text) if b.language in PYTHON_LIKE]
    parser = doctest.DocTestParser()
    return {
        "included sections": [
            line.strip() for b in python if b.language != "pycon" for line in b.lines
        ],
        "doctest sources": [
            _without_comments(example.source)
            for b in python
            if b.language == "pycon"
            for example in parser.get_examples("\n".join(b.lines))
        ],
        "figures": [m["name"] for m in FIGURE.finditer(text)],
        "heading ids": heading_ids(text),
    }


def problems_of(block: Block) -> list[str]:
    """Why a Python-like block is neither package includes nor a pycon doctest."""
    code = [line.strip() for line in block.lines if line.strip()]
    if block.language == "pycon":
        return [] if any(line.startswith(">>>") for line in code) else ["no >>> example"]
    if block.language != "python":
        return ["write ```python (include: lines) or ```pycon (doctests)"]
    if not code:
        return ["empty block"]
    problems = []
    for line in code:
        match = INCLUDE.match(line)
        if not match:
            problems.append(
                f"{line!r} is not an include: name the package's code "
                "(include: attention_ref.masks.causal_mask) or write a ```pycon doctest"
            )
            continue
        try:
            include = Include.parse(match["spec"])
            shown(include.target, include.part)
        except SourceError as error:
            problems.append(str(error))
    return problems


@pytest.mark.parametrize("page", pages(), ids=_ids(pages()))
def test_python_blocks_are_includes_or_doctests(page: Path) -> None:
    problems = [
        f"{page.relative_to(ROOT)}:{block.line}: ```{block.info}: {problem}"
        for block in blocks(page.read_text(encoding="utf-8"))
        if block.language in PYTHON_LIKE
        for problem in problems_of(block)
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", pages(), ids=_ids(pages()))
def test_every_page_has_its_twin(page: Path) -> None:
    assert twin(page).is_file(), f"{page.relative_to(ROOT)} has no twin {twin(page).name}"


@pytest.mark.parametrize("page", english_pages(), ids=_ids(english_pages()))
def test_twins_show_the_same_code(page: Path) -> None:
    if not twin(page).is_file():
        pytest.skip(f"{page.name} has no twin (test_every_page_has_its_twin fails)")
    english, chinese = code_of(page), code_of(twin(page))
    problems = [
        f"{what} differ:\n  {page.name}: {english[what]}\n  {twin(page).name}: {chinese[what]}"
        for what in english
        if english[what] != chinese[what]
    ]
    for path, lang in ((page, "en"), (twin(page), "zh")):
        for match in FIGURE.finditer(path.read_text(encoding="utf-8")):
            if match["lang"] != lang:
                problems.append(f"{path.name} shows {match[0]}: use figures/<name>.{lang}.svg")
    assert not problems, "\n".join(problems)


def test_blocks_parser() -> None:
    text = (
        "```python\n"
        "include: attention_ref.softmax.softmax\n"
        "```\n\n"
        '=== "Tab"\n\n'
        '    ```{ .pycon title="x" }\n'
        "    >>> 1 + 1\n"
        "    2\n"
        "    ```\n"
        "````markdown\n"
        "```python\n"
        "not run: an example of Markdown\n"
        "```\n"
        "````\n"
    )
    found = blocks(text)
    assert [(b.language, b.line) for b in found] == [("python", 1), ("pycon", 7), ("markdown", 11)]
    assert found[1].lines == [">>> 1 + 1", "2"]


BROKEN_ZH_PAGE = """\
# 示例

```pycon
>>> import torch
>>> torch.ones(2).sum()
tensor(3.)
```
"""

GOOD_PAGE = BROKEN_ZH_PAGE.replace("示例", "Example").replace("tensor(3.)", "tensor(2.)")


def test_a_broken_doctest_in_a_chinese_page_fails(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((DOCS / "conftest.py").read_text(encoding="utf-8"))
    (pytester.path / "page.md").write_text(GOOD_PAGE, encoding="utf-8")
    (pytester.path / "page.zh.md").write_text(BROKEN_ZH_PAGE, encoding="utf-8")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["FAILED page.zh.md::line:5,column:1*"])
