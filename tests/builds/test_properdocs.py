"""The site built by ProperDocs is the site built by MkDocs: same pages, search entries, figures.

`nox -s docs-properdocs` builds both (MKDOCS_SITE, PROPERDOCS_SITE) and runs this file; the
plain `pytest` run leaves it out. What may differ: the generator named in each page's head, the
build date in the footer, and files a build writes about itself (sitemap.xml.gz's timestamp).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _site(variable: str) -> Path:
    site = ROOT / os.environ.get(variable, "")
    if variable not in os.environ or not (site / "index.html").is_file():
        pytest.fail(f"{variable} names no built site ({site}): run `nox -s docs-properdocs`")
    return site


@pytest.fixture(scope="module")
def mkdocs_site() -> Path:
    return _site("MKDOCS_SITE")


@pytest.fixture(scope="module")
def properdocs_site() -> Path:
    return _site("PROPERDOCS_SITE")


def _files(site: Path, pattern: str) -> dict[str, Path]:
    return {path.relative_to(site).as_posix(): path for path in sorted(site.rglob(pattern))}


def test_same_pages(mkdocs_site: Path, properdocs_site: Path) -> None:
    assert _files(properdocs_site, "*.html").keys() == _files(mkdocs_site, "*.html").keys()


def _search_entries(site: Path) -> list[tuple[str, str, str]]:
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    return sorted((doc["location"], doc["title"], doc["text"]) for doc in index["docs"])


def test_same_search_entries(mkdocs_site: Path, properdocs_site: Path) -> None:
    mkdocs, properdocs = _search_entries(mkdocs_site), _search_entries(properdocs_site)
    assert len(mkdocs) > 100
    assert [entry[:2] for entry in properdocs] == [entry[:2] for entry in mkdocs]
    assert properdocs == mkdocs


def test_same_figures(mkdocs_site: Path, properdocs_site: Path) -> None:
    mkdocs, properdocs = (
        _files(mkdocs_site, "figures/*.svg"),
        _files(properdocs_site, "figures/*.svg"),
    )
    assert mkdocs, "no figures in the MkDocs build"
    assert properdocs.keys() == mkdocs.keys()
    differ = [name for name in mkdocs if mkdocs[name].read_bytes() != properdocs[name].read_bytes()]
    assert differ == []


VARYING = [
    re.compile(r'<meta name="generator" content="[^"]*">'),
    re.compile(r'<time datetime="[^"]*">[^<]*</time>'),  # the footer's build date
]


def test_same_page_contents(mkdocs_site: Path, properdocs_site: Path) -> None:
    """Every page's HTML is the same, but for the generator's name and the build date."""

    def normalized(path: Path) -> str:
        text = path.read_text(encoding="utf-8")
        for pattern in VARYING:
            text = pattern.sub("", text)
        return text

    mkdocs, properdocs = _files(mkdocs_site, "*.html"), _files(properdocs_site, "*.html")
    differ = [name for name in mkdocs if normalized(mkdocs[name]) != normalized(properdocs[name])]
    assert differ == []
