"""The built site's pages: each ``index.html`` in site/; English at ``/``, Chinese at ``/zh/``.

Both under the path of the address the site was built for (``site_url``: ``/attention-ref/``
for ``https://example.github.io/attention-ref/``), which is where the tests serve it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

from docs_hooks.constants import LANGUAGES

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("E2E_SITE", ROOT / "site")).resolve()
SCREENSHOTS = Path(os.environ.get("E2E_SCREENSHOTS", ROOT / "screenshots")).resolve()
NOT_PAGES = {"assets", "search", "stylesheets", "javascripts", "figures"}


@cache
def site_url() -> str:
    """The address the site was built for: its home page's canonical link (``site_url``)."""
    home = (SITE / "index.html").read_text(encoding="utf-8")
    found = re.search(r'<link rel="canonical" href="([^"]+)"', home)
    return found[1] if found else "/"


def base_path() -> str:
    """Where the site lives on its host: ``/attention-ref/``, or ``/``."""
    return urlsplit(site_url()).path or "/"


def site_file(url_path: str) -> Path:
    """The file in site/ that a path on the test server names (a folder: its index.html)."""
    inside = url_path.removeprefix(base_path()) if url_path.startswith(base_path()) else url_path
    file = SITE / inside.lstrip("/")
    return file / "index.html" if file.is_dir() else file


@dataclass(frozen=True)
class Page:
    """One page in one language: ``/masks/`` (en) or ``/zh/masks/`` (zh); slug ``masks``."""

    lang: str
    slug: str  # "" for the home page

    @property
    def relative(self) -> str:
        """The page's path inside the site: ``masks/``, ``zh/masks/``, ``""`` for the home page."""
        prefix = "" if self.lang == "en" else f"{self.lang}/"
        return prefix + (f"{self.slug}/" if self.slug else "")

    @property
    def path(self) -> str:
        return base_path() + self.relative

    @property
    def file(self) -> Path:
        return SITE / self.relative / "index.html"

    @property
    def html_lang(self) -> str:
        """The ``lang`` attribute of the page's ``<html>``: ``zh-Hans`` names the script, so that
        browsers draw Simplified Chinese glyphs (docs_hooks/hooks/languages.py)."""
        return {"zh": "zh-Hans"}.get(self.lang, self.lang)

    @property
    def id(self) -> str:
        return f"{self.lang}:{self.slug or 'home'}"

    @property
    def name(self) -> str:
        return self.slug or "home"

    @property
    def markdown(self) -> Path:
        """The page's source: docs/masks.md, docs/masks.zh.md, docs/index.md."""
        name = self.slug or "index"
        return ROOT / "docs" / (f"{name}.md" if self.lang == "en" else f"{name}.{self.lang}.md")

    def twin(self) -> Page:
        """The same page in the other language."""
        return Page("zh" if self.lang == "en" else "en", self.slug)


@cache
def pages() -> tuple[Page, ...]:
    """Every page of the built site, English first, in path order."""
    found = []
    for index in sorted(SITE.rglob("index.html")):
        parts = index.parent.relative_to(SITE).parts
        lang = parts[0] if parts and parts[0] in LANGUAGES[1:] else "en"
        parts = parts[1:] if lang != "en" else parts
        if parts and parts[0] in NOT_PAGES:
            continue
        found.append(Page(lang, "/".join(parts)))
    return tuple(sorted(found, key=lambda p: (LANGUAGES.index(p.lang), p.slug)))
