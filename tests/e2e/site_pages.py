"""The built site's pages: each ``index.html`` in site/; English at ``/``, Chinese at ``/zh/``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("E2E_SITE", ROOT / "site")).resolve()
SCREENSHOTS = Path(os.environ.get("E2E_SCREENSHOTS", ROOT / "screenshots")).resolve()
LANGUAGES = ("en", "zh")
NOT_PAGES = {"assets", "search", "stylesheets", "javascripts", "figures"}


@dataclass(frozen=True)
class Page:
    """One page in one language: ``/masks/`` (en) or ``/zh/masks/`` (zh); slug ``masks``."""

    lang: str
    slug: str  # "" for the home page

    @property
    def path(self) -> str:
        prefix = "/" if self.lang == "en" else f"/{self.lang}/"
        return prefix + (f"{self.slug}/" if self.slug else "")

    @property
    def file(self) -> Path:
        return SITE / self.path.lstrip("/") / "index.html"

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
