"""The site's constants, once: its languages, how a page says its language, the punctuation that
must not begin a line, and the commit the site is built from.

The hooks (docs_hooks/*.py) and the tests import these; nothing else defines them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

LANGUAGES = ("en", "zh")  # the default first; each page is x.md and x.zh.md
# The <html lang> attribute: zh-Hans names the script, so that browsers draw Simplified Chinese
# glyphs (Material writes lang="zh"). The hreflang links keep the language code, zh.
HTML_LANG = {"zh": "zh-Hans"}
# Closing punctuation that must not begin a line. All of it is kept with the formula before it
# (docs_hooks/hooks/formulas.py: an inline SVG, after which the browser may break). After code, the
# full-width marks are (docs_hooks/hooks/languages.py: Chinese pages wrapped before them); English
# punctuation after code is left as it is, so that link text stays the name alone.
CLOSING_FULL_WIDTH = "。，、；：？！）」』”’"
CLOSING = CLOSING_FULL_WIDTH + ".,;:!?)"
# Opening punctuation that must not end a line: kept with the formula after it (formulas.py).
OPENING_FULL_WIDTH = "（「『“‘《"


def html_lang(lang: str) -> str:
    """The ``lang`` attribute of an element in ``lang``: ``zh-Hans`` for ``zh``."""
    return HTML_LANG.get(lang, lang)


def page_language(page, config) -> str:
    """The language of a page being built (mkdocs-static-i18n's locale of its file)."""
    return getattr(page.file, "locale", None) or config.theme["language"] or LANGUAGES[0]


def build_language(config) -> str:
    """The language mkdocs-static-i18n is building now (each language is a build of its own)."""
    i18n = config.plugins.get("i18n")
    return i18n.current_language if i18n else config.theme.get("language", LANGUAGES[0])


def commit(root: Path) -> str | None:
    """The commit the site is built from: ``GITHUB_SHA`` in GitHub Actions, else ``git rev-parse
    HEAD``; None outside a git checkout (the footer then names none, and source links point at
    the default branch)."""
    if sha := os.environ.get("GITHUB_SHA"):
        return sha
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip() or None
