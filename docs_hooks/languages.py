"""MkDocs hook: what a Chinese page needs besides translated text.

- The API page's labels (Parameters, Returns, Raises, Examples; Name, Type, Description,
  Default) come from mkdocstrings-python's own Chinese strings. mkdocstrings picks its locale
  from the theme's language once, in ``on_config``, which mkdocs-static-i18n does not run again
  for the Chinese build; the locale is set here for each page instead.
- The headings' permalink anchors say "永久链接", not "Permanent link" (Python-Markdown's toc
  extension has one title for every language).
"""

from __future__ import annotations

from mkdocs.exceptions import PluginError

PERMALINK_TITLE = {"zh": "永久链接"}


def _lang(page, config) -> str:
    return getattr(page.file, "locale", None) or config.theme["language"] or "en"


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
    """The permalink anchors' title in the page's language."""
    title = PERMALINK_TITLE.get(_lang(page, config))
    if title:
        html = html.replace('title="Permanent link"', f'title="{title}"')
    return html
