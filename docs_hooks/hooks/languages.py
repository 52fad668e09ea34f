"""MkDocs hook: what a Chinese page needs besides translated text.

- The API page's labels (Parameters, Returns, Raises, Examples; Name, Type, Description,
  Default) come from mkdocstrings-python's own Chinese strings. mkdocstrings picks its locale
  from the theme's language once, in ``on_config``, which mkdocs-static-i18n does not run again
  for the Chinese build; the locale is set here for each page instead.
- The headings' permalink anchors say "永久链接", not "Permanent link" (Python-Markdown's toc
  extension has one title for every language).
- ``<html lang="zh-Hans">``: the script named, so that browsers pick Simplified Chinese glyphs.
- Inline code and the closing punctuation right after it stay on one line: Chromium may break
  between them (Material lets code wrap anywhere), and a Chinese line must not begin with
  。，）. Long code keeps only its last part (after the last ``.``, ``_`` or ``/``) with the
  punctuation, so it can still wrap before that (docs/stylesheets/extra.css, ``.nobreak``); in a
  link, the punctuation goes inside the link with that last part, so a long linked name still
  fits a phone screen.
"""

from __future__ import annotations

import re

from mkdocs.exceptions import PluginError

from docs_hooks.constants import CLOSING_FULL_WIDTH, HTML_LANG
from docs_hooks.constants import page_language as _lang

PERMALINK_TITLE = {"zh": "永久链接"}
CODE_THEN_PUNCTUATION = re.compile(
    r"(?P<open><a [^>]*>)?<code>(?P<text>[^<]*)</code>(?P<close></a>)?"
    rf"(?P<punct>[{re.escape(CLOSING_FULL_WIDTH)}]+)"
)
SHORT_CODE = 16  # characters of code kept whole with the punctuation after it


def on_page_markdown(markdown: str, page, config, files) -> str:
    """mkdocstrings renders this page's API blocks in the page's language."""
    plugin = config.plugins.get("mkdocstrings")
    handlers = getattr(plugin, "_handlers", None)
    if handlers is not None:
        if not hasattr(handlers, "_locale"):
            raise PluginError("languages: mkdocstrings' Handlers no longer has _locale; update")
        handlers._locale = _lang(page, config)
    return markdown


def on_page_content(html: str, page, config, files) -> str:
    """The permalink anchors' title in the page's language; code kept with its punctuation."""
    title = PERMALINK_TITLE.get(_lang(page, config))
    if title:
        html = html.replace('title="Permanent link"', f'title="{title}"')
    return CODE_THEN_PUNCTUATION.sub(_code_with_punctuation, html)


def on_post_page(output: str, page, config) -> str:
    """``<html lang="zh-Hans">`` on a Chinese page."""
    lang = _lang(page, config)
    if lang not in HTML_LANG:
        return output
    opening = f'<html lang="{lang}"'
    if opening not in output:
        raise PluginError(f"languages: {page.file.src_uri} has no {opening}>; update the hook")
    return output.replace(opening, f'<html lang="{HTML_LANG[lang]}"', 1)


def _code_with_punctuation(match: re.Match[str]) -> str:
    opening, closing = match["open"] or "", match["close"] or ""
    text, punct = match["text"], match["punct"]
    cut = max(text.rfind(c) for c in "._/ (") + 1
    if len(text) <= SHORT_CODE or cut <= 0:
        return f'<span class="nobreak">{opening}<code>{text}</code>{closing}{punct}</span>'
    # A linked name is split into two links to the same place, so the head can still wrap.
    head, tail = text[:cut], text[cut:]
    if opening:  # a link: one element, so the punctuation joins the tail inside it
        return (
            f'{opening}<code class="code-head">{head}</code>'
            f'<span class="nobreak"><code class="code-tail">{tail}</code>{punct}</span>{closing}'
        )
    return (
        f'{opening}<code class="code-head">{head}</code>{closing}'
        f'<span class="nobreak">{opening}<code class="code-tail">{tail}</code>{closing}'
        f"{punct}</span>"
    )
