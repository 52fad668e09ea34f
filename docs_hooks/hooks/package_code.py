"""MkDocs hook: package code on the pages, included by name, and what its copy button copies.

A page shows package code with a ```python block whose lines each name an object, optionally
followed by the part to show (docs_hooks/source_code.py lists the parts)::

    ```python
    include: attention_ref.masks.causal_mask
    ```

    ```python
    include: attention_ref.attention.attention_weights masking
    ```

The block shows that code; its title is the file, linked to the lines on the repository
(``repo_url`` in mkdocs.yml, at the commit the site was built from). What the copy button copies
(``data-copy`` on the ``<code>`` element, which Material's copy button prefers to the element's
text) follows docs_hooks/source_code.py's contract: an excerpt (a method, part of a body) copies
exactly what it shows, and its title says "excerpt of X" with X linked to X's whole source; a
block of whole module-level definitions copies a program that runs by itself with only torch
and numpy installed, and its title says what the copy adds. tests/docs/test_source_copies.py checks
every copy.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from mkdocs.exceptions import PluginError

from docs_hooks.constants import commit as _commit
from docs_hooks.constants import page_language as _lang
from docs_hooks.source_code import WORDS, SourceBlock, SourceError, include_blocks, source_block

BLOCK = re.compile(
    r'<div class="(?P<classes>[^"]*\bsource-include-(?P<n>\d+)\b[^"]*)">'
    r"(?P<head>.*?)<code(?P<attrs>[^>]*)>",
    re.S,
)
FILENAME = re.compile(r'<span class="filename">[^<]*</span>')


_blocks: dict[str, list[SourceBlock]] = {}  # page -> its blocks, in order


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace each block of ``include:`` lines with the code it names."""
    blocks: list[SourceBlock] = []
    lines = markdown.splitlines(keepends=True)  # the lines docs_hooks.markdown numbers
    out: list[str] = []
    done = 0  # lines of the page written out
    for found in include_blocks(markdown):
        indent = found.indent
        try:
            block = source_block([line.strip() for line in found.lines], _lang(page, config))
        except SourceError as error:
            raise PluginError(f"includes: {page.file.src_uri}: {error}") from None
        blocks.append(block)
        code = "".join(f"{indent}{line}\n" if line else "\n" for line in block.shown.splitlines())
        fence = f'{indent}```{{.python .source-include-{len(blocks) - 1} title="{block.path}"}}'
        closing = lines[found.end - 1]
        ending = closing[len(closing.rstrip("\r\n")) :]
        out += [*lines[done : found.line - 1], f"{fence}\n{code}{indent}```{ending}"]
        done = found.end
    _blocks[page.file.src_uri] = blocks
    return "".join([*out, *lines[done:]])


def on_page_content(html_text: str, page, config, files) -> str:
    """Give each included block its copy text and a title linked to the source lines."""
    blocks = _blocks.pop(page.file.src_uri, [])
    repo = (config.repo_url or "").rstrip("/")
    commit = _commit(Path(config.config_file_path).parent) or "main"  # links that stay right
    lang = _lang(page, config)
    found = 0

    def decorate(match: re.Match[str]) -> str:
        nonlocal found
        found += 1
        block = blocks[int(match["n"])]
        head = match["head"]
        words = WORDS.get(lang, WORDS["en"])

        def link(text: str, first: int, last: int, label: str) -> str:
            if not repo:
                return html.escape(text)
            url = f"{repo}/blob/{commit}/{block.path}#L{first}-L{last}"
            return (
                f'<a href="{html.escape(url)}" aria-label="{html.escape(label)}">'
                f"{html.escape(text)}</a>"
            )

        lines = {"path": block.path, "first": block.first, "last": block.last}
        title = link(block.path, block.first, block.last, words["link"].format(**lines))
        note = html.escape(block.note)
        if block.is_excerpt:  # "excerpt of X", X linked to its whole source
            note = " · ".join(
                words["excerpt"].format(
                    name=link(
                        of.name,
                        of.first,
                        of.last,
                        words["full"].format(
                            name=of.name, path=block.path, first=of.first, last=of.last
                        ),
                    )
                )
                for of in block.excerpt_of
            )
        if note:
            title += f' <span class="source-note">{note}</span>'
        head = FILENAME.sub(lambda _: f'<span class="filename">{title}</span>', head, count=1)
        copy = html.escape(block.copy.rstrip("\n"), quote=True)
        return f'<div class="{match["classes"]}">{head}<code{match["attrs"]} data-copy="{copy}">'

    html_text = BLOCK.sub(decorate, html_text)
    if found != len(blocks):
        raise PluginError(
            f"includes: {page.file.src_uri}: {len(blocks)} include blocks, {found} rendered"
        )
    return html_text
