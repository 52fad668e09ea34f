"""A page's examples to take away: its ```pycon doctests as a script and as a Jupyter notebook.

Both are made from the page's Markdown alone (no site build), by the functions here; the MkDocs
hook docs_hooks/hooks/doctest_blocks.py calls the same functions and adds the results to the site as
``downloads/<page>.<lang>.py`` and ``downloads/<page>.<lang>.ipynb``.

- The **script** is every doctest block's code (docs_hooks/doctest_copy.py), in page order, with
  the page's headings as comments, and every value the page shows printed: it prints what the
  page shows. A read of the benchmark's results file (``docs/bench-results/cpu.json``, which
  only a clone of the repository has) becomes the measured data it reads, in the script, the
  notebook and the copies alike, so that they run with nothing but the package installed.
- The **notebook** (nbformat 4.5) keeps the page's prose as Markdown cells in the page's
  language and turns the doctests into code cells without prompts. A cell ends after each
  example that prints something, and carries as its output what the doctest expects: the
  output the tests verified. MkDocs-only syntax is cleaned up: heading ``{ #id }`` attributes
  go, admonitions and content tabs become a bold title and their text, relative links and
  figures point at the site (``site_url``), API links (``[x][attention_ref.y]``) at the API
  page and shared link targets (docs/includes/links.md) are written out. Math stays as it is.
  The first cell installs ``attention_ref`` from the repository when it is missing.
"""

from __future__ import annotations

import ast
import doctest
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import v4

from docs_hooks.doctest_copy import examples, join, page_copies, raised
from docs_hooks.markdown import FENCE, HEADING_ID, fence_language
from docs_hooks.markdown import flatten as _flatten
from docs_hooks.markdown import headings as _headings
from docs_hooks.source_code import Include, resolve

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "https://github.com/attention-ref/attention-ref"
INSTALL = f"attention-ref @ git+{REPOSITORY}"
API_PAGE = "reference/"

WORDS = {
    "en": {
        "install": "# attention_ref, installed from its repository if it is missing",
        "from_page": "The examples of [this page of attention-ref]({url}), to run in order.",
        "source": "*The code of {names} is shown [on the page]({url}).*",
        "script": "The examples of {url}, in order: run with `python {name}`.",
        "needs": 'Needs torch and attention_ref: pip install "{install}"',
    },
    "zh": {
        "install": "# 若尚未安装 attention_ref，则从代码仓库安装",
        "from_page": "[attention-ref 网站上本页]({url})的示例，请按顺序运行。",
        "source": "{names} 的代码见[网页]({url})。",
        "script": "{url} 的示例，按页面顺序排列：用 `python {name}` 运行。",
        "needs": '需要 torch 和 attention_ref：pip install "{install}"',
    },
}

SNIPPET = re.compile(r'^[ \t]*--8<--[ \t]+"(?P<path>[^"]+)"[ \t]*$')
LINK_DEFINITION = re.compile(r"^\[(?P<id>[^\]]+)\]:[ \t]+(?P<url>\S+)", re.M)
INLINE_LINK = re.compile(r'\]\((?P<target>[^)\s]+)(?P<title>[ \t]+"[^"]*")?\)')
REFERENCE_LINK = re.compile(r"\]\[(?P<id>[^\]]+)\]")
COMMENT = re.compile(r"<!--.*?-->", re.S)
# YAML front matter (a Chinese page's ``translation_of:``, docs_hooks/translations.py)
FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?:.*\n)*?---[ \t]*\n")


# --- the page's parts -----------------------------------------------------------------------


@dataclass(frozen=True)
class Prose:
    """Markdown between code blocks, containers (admonitions, tabs) already flattened."""

    text: str


@dataclass(frozen=True)
class Doctest:
    """A ```pycon block: its transcript, dedented, and the line its fence opens on."""

    transcript: str
    line: int


@dataclass(frozen=True)
class Source:
    """A ```python block that shows the package's code: the objects its include: lines name."""

    names: tuple[str, ...]  # MultiHeadAttention.forward, as the package's module defines it


def _without_front_matter(markdown: str) -> str:
    """The page without its front matter, blank lines in its place (line numbers stay)."""
    found = FRONT_MATTER.match(markdown)
    return "\n" * found[0].count("\n") + markdown[found.end() :] if found else markdown


def parts(markdown: str) -> list[Prose | Doctest | Source]:
    """The page in order (its front matter left out): prose, doctest and package-source blocks."""
    found: list[Prose | Doctest | Source] = []
    prose: list[str] = []
    block: list[str] | None = None
    opening = None

    def end_prose() -> None:
        if "".join(prose).strip():
            found.append(Prose("\n".join(prose).strip("\n")))
        prose.clear()

    for number, line in _flatten(_without_front_matter(markdown).splitlines()):
        fence = FENCE.match(line)
        if block is None:
            if fence and fence["info"] and fence_language(fence["info"]) in ("pycon", "python"):
                block, opening = [], (fence, number)
            else:
                prose.append(line)
            continue
        if fence and not fence["info"] and fence["fence"].startswith(opening[0]["fence"]):
            end_prose()
            info, indent = opening[0]["info"], len(opening[0]["indent"])
            lines = [text[indent:] if text[:indent].strip() == "" else text for text in block]
            if fence_language(info) == "pycon":
                found.append(Doctest("\n".join(lines) + "\n", opening[1]))
            else:
                found.append(Source(_included(lines)))
            block = None
        else:
            block.append(line)
    end_prose()
    return found


def _included(lines: list[str]) -> tuple[str, ...]:
    """The objects a block's ``include:`` lines name, as their module defines them."""
    names = []
    for line in lines:
        if line.strip().startswith("include:"):
            obj = resolve(Include.parse(line.split("include:", 1)[1]).dotted).obj
            names.append(obj.path.removeprefix(obj.module.path + "."))
    return tuple(dict.fromkeys(names))


def doctests(markdown: str) -> list[Doctest]:
    """The page's ```pycon blocks, in order."""
    return [part for part in parts(markdown) if isinstance(part, Doctest)]


def has_examples(markdown: str) -> bool:
    return any(examples(block.transcript) for block in doctests(markdown))


def _copies(markdown: str, lang: str) -> list[list[str]]:
    """Each doctest block's examples as copied, a read of the results file made portable."""
    return page_copies([block.transcript for block in doctests(markdown)], lang)


def page_copy(markdown: str, lang: str = "en") -> str:
    """Every doctest block of the page, its examples as copied, one block after another."""
    return "\n\n".join(join(block) for block in _copies(markdown, lang))


def printing(example: doctest.Example, copy: str) -> str:
    """An example's copy for a script: a value the doctest shows is printed.

    ``weights.sum(-1)`` becomes ``print(weights.sum(-1))`` (``print(repr(...))`` when the page
    shows a string's quotes), so that the script prints what the page shows.
    """
    if not example.want or raised(example) is not None or not _displays(example):
        return copy
    tree = ast.parse(copy)
    value = tree.body[-1].value
    lines = [line.encode() for line in copy.split("\n")]
    first, last = value.lineno - 1, value.end_lineno - 1
    start, end = value.col_offset, value.end_col_offset
    shown = example.want.lstrip()[:1] in ("'", '"')
    opening, closing = (b"print(repr(", b"))") if shown else (b"print(", b")")
    if isinstance(value, ast.Tuple):  # a, b: print((a, b)), one value as the page shows it
        opening, closing = opening + b"(", b")" + closing
    lines[last] = lines[last][:end] + closing + lines[last][end:]
    lines[first] = lines[first][:start] + opening + lines[first][start:]
    return "\n".join(line.decode() for line in lines)


# --- addresses ------------------------------------------------------------------------------


def page_path(src_uri: str) -> str:
    """``masks.zh.md`` -> ``masks/``; ``index.md`` -> ``""`` (directory URLs, no language)."""
    stem = src_uri.removesuffix(".md")
    stem = re.sub(r"\.[a-z]{2}$", "", stem)
    if stem == "index" or stem.endswith("/index"):
        return stem.removesuffix("index")
    return stem + "/"


def language_root(site_url: str, lang: str) -> str:
    """``https://x/`` (English, the default) or ``https://x/zh/``."""
    site_url = site_url if site_url.endswith("/") else site_url + "/"
    return site_url if lang == "en" else f"{site_url}{lang}/"


def page_url(site_url: str, src_uri: str, lang: str) -> str:
    return language_root(site_url, lang) + page_path(src_uri)


def download_name(src_uri: str, lang: str, suffix: str) -> str:
    """``masks.zh.md`` -> ``masks.zh.ipynb``: the file's name under ``downloads/``."""
    return f"{page_path(src_uri).rstrip('/') or 'index'}.{lang}{suffix}"


# --- Markdown for a notebook ----------------------------------------------------------------


def _link_definitions(root: Path) -> dict[str, str]:
    text = (root / "docs" / "includes" / "links.md").read_text(encoding="utf-8")
    return {m["id"].lower(): m["url"] for m in LINK_DEFINITION.finditer(text)}


class _Links:
    """Turns a page's links into absolute ones on the site."""

    def __init__(self, site_url: str, src_uri: str, lang: str, root: Path) -> None:
        self.site_url, self.src_uri, self.lang = site_url, src_uri, lang
        self.definitions = _link_definitions(root)

    def target(self, target: str) -> str:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("/"):
            return target  # https:, mailto:, or already absolute
        path, _, anchor = target.partition("#")
        anchor = f"#{anchor}" if anchor else ""
        if not path:
            return page_url(self.site_url, self.src_uri, self.lang) + anchor
        path = posixpath.normpath(posixpath.join(posixpath.dirname(self.src_uri), path))
        if path.endswith(".md"):
            return page_url(self.site_url, path, self.lang) + anchor
        return language_root(self.site_url, "en") + path + anchor  # one figures/ for both

    def inline(self, match: re.Match[str]) -> str:
        return f"]({self.target(match['target'])}{match['title'] or ''})"

    def reference(self, match: re.Match[str]) -> str:
        name = match["id"]
        if name.lower() in self.definitions:
            return f"]({self.definitions[name.lower()]})"
        if name.startswith("attention_ref."):  # mkdocstrings' autorefs: the API page
            return f"]({language_root(self.site_url, self.lang)}{API_PAGE}#{name})"
        return match[0]

    def __call__(self, text: str) -> str:
        return REFERENCE_LINK.sub(self.reference, INLINE_LINK.sub(self.inline, text))


def _expand_snippets(markdown: str, root: Path) -> str:
    """Prose snippet lines (``--8<-- "docs/includes/x.md"``) replaced by the file they name."""

    def include(line: str) -> str:
        found = SNIPPET.match(line)
        if not found:
            return line
        return COMMENT.sub("", (root / found["path"]).read_text(encoding="utf-8")).strip("\n")

    return "\n".join(include(line) for line in markdown.splitlines())


def _clean_prose(text: str, links: _Links) -> str:
    text = COMMENT.sub("", text)
    lines = [
        f"{heading['hashes']} {heading['text']}" if heading else line
        for line, heading in _headings(text)
    ]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
    return links(text)


# --- the notebook ---------------------------------------------------------------------------


def _displays(example: doctest.Example) -> bool:
    """Whether Jupyter shows the example's output as its value (else it is printed)."""
    try:
        body = ast.parse(example.source).body
    except SyntaxError:
        return False
    if not body or not isinstance(body[-1], ast.Expr):
        return False
    value = body[-1].value
    printed = isinstance(value, ast.Call) and getattr(value.func, "id", None) == "print"
    return not printed


def _want(example: doctest.Example) -> str:
    """The output a doctest expects, as Python prints it (``<BLANKLINE>`` is a blank line)."""
    return re.sub(r"(?m)^<BLANKLINE>$", "", example.want)


def _lines(text: str) -> list[str]:
    """A notebook's multi-line string: a list of lines, each but the last with its newline."""
    return text.splitlines(keepends=True)


def _markdown_cell(text: str) -> nbformat.NotebookNode:
    return v4.new_markdown_cell(_lines(text))


def _code_cell(
    source: str, outputs: list[nbformat.NotebookNode] | None = None, count: int | None = None
) -> nbformat.NotebookNode:
    return v4.new_code_cell(_lines(source), execution_count=count, outputs=outputs or [])


def _output(example: doctest.Example, count: int) -> nbformat.NotebookNode:
    text = _want(example)
    if _displays(example):
        data = {"text/plain": _lines(text.rstrip("\n"))}
        return v4.new_output("execute_result", data, execution_count=count)
    return v4.new_output("stream", name="stdout", text=_lines(text))


def _merge_markdown(cells: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """Markdown cells that follow each other become one (prose around a source block)."""
    merged: list[nbformat.NotebookNode] = []
    for cell in cells:
        if merged and cell["cell_type"] == merged[-1]["cell_type"] == "markdown":
            text = "".join(merged[-1]["source"]) + "\n\n" + "".join(cell["source"])
            merged[-1] = _markdown_cell(text)
        else:
            merged.append(cell)
    return merged


def code_cells(
    transcript: str, copies: list[str] | None = None
) -> list[tuple[list[doctest.Example], str]]:
    """A doctest block as cells: (its examples, the cell's code). A cell ends after an output.

    ``copies`` are the examples' copies (``page_copies``); by default, each one's own.
    """
    found = examples(transcript)
    copies = copies if copies is not None else page_copies([transcript])[0]
    cells, current = [], []
    for example, copy in zip(found, copies, strict=True):
        current.append((example, copy))
        if example.want and raised(example) is None:
            cells.append(current)
            current = []
    if current:
        cells.append(current)
    return [([e for e, _ in cell], join([c for _, c in cell])) for cell in cells]


def install_cell(lang: str) -> str:
    """The notebook's first cell: install attention_ref only when it cannot be imported."""
    return (
        f"{WORDS[lang]['install']}\n"
        "try:\n"
        "    import attention_ref\n"
        "except ImportError:\n"
        f'    %pip install "{INSTALL}"'
    )


def notebook(
    markdown: str, *, site_url: str, src_uri: str, lang: str, root: Path = ROOT
) -> nbformat.NotebookNode:
    """The page's notebook (nbformat 4.5, made with nbformat's builders and validated)."""
    links = _Links(site_url, src_uri, lang, root)
    url = page_url(site_url, src_uri, lang)
    words = WORDS[lang]
    cells = [_code_cell(install_cell(lang))]
    count = 0
    title_done = False
    section = ""  # the id of the last heading: where a source block sits on the page
    copies = iter(_copies(markdown, lang))
    for part in parts(markdown):
        if isinstance(part, Prose):
            ids = HEADING_ID.findall(part.text)
            section = f"#{ids[-1]}" if ids else section
            text = _clean_prose(_expand_snippets(part.text, root), links)
            if not title_done:  # the page's title, then where the examples come from
                title, _, rest = text.partition("\n")
                if title.startswith("# "):
                    text = f"{title}\n\n{words['from_page'].format(url=url)}\n{rest}".rstrip()
                title_done = True
            if text.strip():
                cells.append(_markdown_cell(text))
        elif isinstance(part, Source):
            names = (", " if lang == "en" else "、").join(f"`{name}`" for name in part.names)
            note = words["source"].format(names=names, url=url + section)
            cells.append(_markdown_cell(note))
        else:
            for cell_examples, source in code_cells(part.transcript, next(copies)):
                count += 1
                outputs = [_output(e, count) for e in cell_examples if e.want and raised(e) is None]
                cells.append(_code_cell(source, outputs, count))
    cells = _merge_markdown(cells)
    for number, cell in enumerate(cells):
        cell["id"] = f"cell-{number}"  # fixed ids: the same page gives the same file
    made = v4.new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
    )
    nbformat.validate(made)  # a notebook Jupyter opens, or the build fails here
    return made


def script(markdown: str, *, site_url: str, src_uri: str, lang: str) -> str:
    """The page's examples as one Python script: the copies in order, headings as comments.

    A value the page shows is printed (``printing``). A heading is written only above code:
    the headings of sections without examples go.
    """
    url = page_url(site_url, src_uri, lang)
    words = WORDS[lang]
    name = download_name(src_uri, lang, ".py")
    out = [
        f"# {words['script'].format(url=url, name=name)}",
        f"# {words['needs'].format(install=INSTALL)}",
    ]
    pending: list[re.Match[str]] = []  # headings since the last code, outermost first
    copies = iter(_copies(markdown, lang))
    for part in parts(markdown):
        if isinstance(part, Prose):
            for _, heading in _headings(part.text):
                if heading:
                    level = len(heading["hashes"])
                    pending = [h for h in pending if len(h["hashes"]) < level] + [heading]
        elif isinstance(part, Doctest):
            found = zip(examples(part.transcript), next(copies), strict=True)
            copy = join([printing(example, copy) for example, copy in found])
            if copy:
                if pending:
                    out += ["", "", *(f"# {h['hashes']} {h['text']}" for h in pending)]
                    pending = []
                out += ["", copy]
    return "\n".join(out) + "\n"
