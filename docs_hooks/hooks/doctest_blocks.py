"""MkDocs hook: the pages' examples as a reader takes them away, made at build time.

1. **Copy buttons.** Material's copy button copies the ``data-copy`` attribute of a block's
   ``<code>`` when it has one. Every ```pycon doctest block gets one here: its code without
   prompts or output, a raising line commented out with the error named, after the earlier
   lines of the page it needs, so that it runs alone (docs_hooks/doctest_copy.py). The
   browser runs no script for it, and the built HTML says exactly what the button copies.
2. **Downloads.** Every page with doctests gets its examples as a notebook and a script,
   ``downloads/<page>.<lang>.ipynb`` and ``downloads/<page>.<lang>.py`` (one downloads/ for
   both languages, at the site's root, as figures/ is), generated from the
   page's Markdown by docs_hooks/page_examples.py, and a line under its title that links them
   in the page's language.
"""

from __future__ import annotations

import html
import posixpath
import re

import nbformat
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from docs_hooks import doctest_copy, page_examples
from docs_hooks.constants import build_language as _language

DOWNLOADS = "downloads"
LINKS = {  # the line under the page's title; `{ download }` saves rather than opens the file
    "en": "Download the examples: [notebook]({notebook}){{ download }} · "
    "[script]({script}){{ download }}",
    "zh": "下载本页示例：[Jupyter 笔记本]({notebook}){{ download }} · "
    "[脚本]({script}){{ download }}",
}
CODE = re.compile(
    r'(?P<before><div class="[^"]*\bhighlight\b[^"]*">(?:<span class="filename">.*?</span>)?'
    r"<pre>(?:<span></span>)?)<code>(?P<code>.*?)</code>",
    re.DOTALL,
)
TAG = re.compile(r"<[^>]+>")
H1 = re.compile(r"^# .*$", re.M)


def _downloads(src_uri: str, lang: str) -> dict[str, str]:
    """``{"notebook": "downloads/masks.en.ipynb", "script": "downloads/masks.en.py"}``."""
    return {
        kind: f"{DOWNLOADS}/{page_examples.download_name(src_uri, lang, suffix)}"
        for kind, suffix in (("notebook", ".ipynb"), ("script", ".py"))
    }


@event_priority(-200)  # after mkdocs-static-i18n (-100) has picked this language's pages
def on_files(files, config):
    """Add each page's notebook and script, made from its Markdown, to the site."""
    lang = _language(config)
    for page in list(files.documentation_pages()):
        markdown = page.content_string
        if not page_examples.has_examples(markdown):
            continue
        kwargs = {"site_url": config.site_url or "", "src_uri": page.src_uri, "lang": lang}
        paths = _downloads(page.src_uri, lang)
        try:
            notebook = page_examples.notebook(markdown, **kwargs)
            script = page_examples.script(markdown, **kwargs)
        except Exception as error:  # name the page, not just the traceback
            raise PluginError(f"examples: {page.src_uri}: {error!r}") from error
        text = nbformat.writes(notebook) + "\n"
        files.append(File.generated(config, paths["notebook"], content=text))
        files.append(File.generated(config, paths["script"], content=script))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Link the page's notebook and script under its title, in the page's language."""
    if not page_examples.has_examples(markdown):
        return markdown
    lang = _language(config)
    here = posixpath.dirname(page.file.src_uri)
    targets = {
        kind: posixpath.relpath(path, here or ".")
        for kind, path in _downloads(page.file.src_uri, lang).items()
    }
    line = LINKS.get(lang, LINKS["en"]).format(**targets) + "\n{ .downloads }"
    title = H1.search(markdown)
    if title is None:
        return f"{line}\n\n{markdown}"
    return f"{markdown[: title.end()]}\n\n{line}\n{markdown[title.end() :]}"


def doctest_text(match: re.Match[str]) -> str | None:
    """The transcript a highlighted block shows, if it is a doctest block."""
    text = html.unescape(TAG.sub("", match["code"]))
    return text if text.lstrip().startswith(">>>") else None


def on_page_content(html_text: str, page, config, files) -> str:
    """Give every doctest block's ``<code>`` the ``data-copy`` its copy button copies.

    The copy runs alone: it starts with the earlier lines of the page the block needs
    (docs_hooks/doctest_copy.standalone), the blocks of hidden tabs and closed boxes included.
    """
    transcripts = [t for m in CODE.finditer(html_text) if (t := doctest_text(m)) is not None]
    copies = iter(doctest_copy.standalone(transcripts, _language(config)))

    def with_copy(match: re.Match[str]) -> str:
        if doctest_text(match) is None:
            return match[0]
        copy = html.escape(next(copies), quote=True)
        return f'{match["before"]}<code data-copy="{copy}">{match["code"]}</code>'

    return CODE.sub(with_copy, html_text)
