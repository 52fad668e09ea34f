"""MkDocs hook: mend what Material and mkdocs-static-i18n get wrong together.

mkdocs-static-i18n builds English (the default, at ``/``) first and then Chinese (``/zh/``)
into the same site directory, from its own ``on_post_build``. Two things follow:

1. The Chinese build overwrites the site-wide files written at the root, ``404.html`` and
   mkdocstrings' ``objects.inv``, with Chinese ones. The English ones are put back.
2. Material's script reads ``sitemap.xml`` under each ``<link rel="alternate">`` of a page,
   to keep the reader on the same page when the language changes. The plugin points those
   links at the page's translations (``/zh/reference/``), where no sitemap exists, and writes
   none under ``/zh/`` either: 404s on every page. Here the links point at the language roots
   (``/``, ``/zh/``), as Material expects, and ``/zh/sitemap.xml`` is a copy of the root one,
   which lists every page in both languages. The language menu itself keeps the plugin's
   links to the translated page.

Also: jieba, which Material's search uses to split Chinese text into words, is told to keep
its progress messages to itself.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from urllib.parse import urlsplit

from mkdocs.plugins import event_priority

ROOT_FILES = ("404.html", "objects.inv")
HEAD_ALTERNATE = re.compile(
    r'(?P<start><link rel="alternate" href=")(?P<href>[^"]*)(?P<end>" hreflang="(?P<lang>[\w-]+)">)'
)

_english_root_files: dict[str, bytes] = {}


def on_startup(command: str, dirty: bool) -> None:
    """Silence jieba's "Building prefix dict ..." chatter on stderr."""
    logging.getLogger("jieba").setLevel(logging.WARNING)


def _language_roots(config) -> dict[str, str]:
    """``{"en": "/", "zh": "/zh/"}``, under the path of ``site_url``."""
    base = urlsplit(config.site_url or "").path.rstrip("/")
    return {lang.locale: base + lang.link for lang in config.plugins["i18n"].config.languages}


def on_post_page(output: str, page, config) -> str:
    """Point the head's ``<link rel="alternate" hreflang>`` at the language roots."""
    roots = _language_roots(config)

    def root_link(match: re.Match[str]) -> str:
        return match["start"] + roots.get(match["lang"], match["href"]) + match["end"]

    return HEAD_ALTERNATE.sub(root_link, output)


@event_priority(-50)  # after the site is written, before mkdocs-static-i18n builds /zh/
def on_post_build(config) -> None:
    """Keep the English root files; give every other language its own sitemap.xml."""
    i18n = config.plugins["i18n"]
    site = Path(config.site_dir)
    if i18n.current_language == i18n.default_language:
        _english_root_files.update({name: (site / name).read_bytes() for name in ROOT_FILES})
        return
    for name, content in _english_root_files.items():
        (site / name).write_bytes(content)
    (site / i18n.current_language / "sitemap.xml").write_bytes((site / "sitemap.xml").read_bytes())
