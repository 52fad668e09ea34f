"""MkDocs hook: mend what Material and mkdocs-static-i18n get wrong together.

mkdocs-static-i18n builds English (the default, at ``/``) first and then Chinese (``/zh/``)
into the same site directory, from its own ``on_post_build``. Three things follow:

1. The Chinese build overwrites the site-wide files written at the root, ``404.html`` and
   mkdocstrings' ``objects.inv``, with Chinese ones. The English ones are put back (the 404
   page says everything in both languages, see overrides/404.html).
2. The head's ``<link rel="alternate" hreflang>`` of every page point at the language roots
   (Material's ``extra.alternate``). Search engines want the page's own twin in every language,
   as an absolute URL, and ``x-default``: here each page gets exactly that, from ``site_url``.
   The 404 page, which has no twin, gets none.
3. Material's script fetches ``sitemap.xml`` next to every ``link[rel=alternate]`` when the page
   loads (``<twin>/sitemap.xml``: a 404, or another host when the site is served elsewhere than
   ``site_url``), to steer its language menu. The menu does not need it (docs/javascripts/i18n.js
   follows the menu's own link to the twin), so a tiny script in the head hides the links from
   Material while its script starts: it renames their ``rel`` at DOMContentLoaded, before
   Material's listener runs, and i18n.js puts it back right after. The HTML as served, which is
   what crawlers read, is untouched. (With ``navigation.instant`` on, Material would look again
   on every navigation: keep that feature off, or revisit this.)

Also: jieba, which Material's search uses to split Chinese text into words, is told to keep
its progress messages to itself.
"""

from __future__ import annotations

import html
import logging
import re
from pathlib import Path

from mkdocs.plugins import event_priority

ROOT_FILES = ("404.html", "objects.inv")
HEAD_ALTERNATE = re.compile(r'[ \t]*<link rel="alternate" href="[^"]*" hreflang="[\w-]+">\n?')
HIDE_FROM_MATERIAL = (
    "<script>document.addEventListener('DOMContentLoaded',function(){"
    "document.querySelectorAll('link[rel=alternate][hreflang]').forEach(function(l){"
    "l.rel='x-hreflang-pending'})},{once:true})</script>"
)  # i18n.js turns 'x-hreflang-pending' back into 'alternate'

_english_root_files: dict[str, bytes] = {}


def on_startup(command: str, dirty: bool) -> None:
    """Silence jieba's "Building prefix dict ..." chatter on stderr."""
    logging.getLogger("jieba").setLevel(logging.WARNING)


def page_alternates(page_url: str, config) -> dict[str, str]:
    """``{"en": absolute URL, "zh": ..., "x-default": ...}`` of the page at ``page_url``.

    ``page_url`` is MkDocs' ``page.url`` in the language being built (``zh/masks/``).
    """
    i18n = config.plugins["i18n"]
    site = config.site_url or "/"
    site = site if site.endswith("/") else site + "/"
    prefixes = {
        lang.locale: lang.link.strip("/") + "/" if lang.link.strip("/") else ""
        for lang in i18n.config.languages
        if lang.build
    }
    own = prefixes.get(i18n.current_language, "")
    slug = page_url.removeprefix(own) if own else page_url
    urls = {locale: site + prefix + slug for locale, prefix in prefixes.items()}
    urls["x-default"] = urls[i18n.default_language]
    return urls


def on_post_page(output: str, page, config) -> str:
    """The head's language alternates: this page in every language, absolute, and x-default."""
    found = HEAD_ALTERNATE.search(output)
    if not found:
        return output
    links = "".join(
        f'    <link rel="alternate" hreflang="{lang}" href="{html.escape(url)}">\n'
        for lang, url in page_alternates(page.url, config).items()
    )
    rest = HEAD_ALTERNATE.sub("", output[found.end() :])
    return output[: found.start()] + links + f"    {HIDE_FROM_MATERIAL}\n" + rest


def on_post_template(output: str, template_name: str, config) -> str:
    """The 404 page is no language's version of anything: no hreflang alternates."""
    if template_name == "404.html":
        return HEAD_ALTERNATE.sub("", output)
    return output


@event_priority(-50)  # after the site is written, before mkdocs-static-i18n builds /zh/
def on_post_build(config) -> None:
    """Keep the English root files (404 page, objects.inv) when the other languages build."""
    i18n = config.plugins["i18n"]
    site = Path(config.site_dir)
    if i18n.current_language == i18n.default_language:
        _english_root_files.update({name: (site / name).read_bytes() for name in ROOT_FILES})
        return
    for name, content in _english_root_files.items():
        (site / name).write_bytes(content)
