"""The built site shows no stale-translation notice: every Chinese page follows its English page.

docs_hooks/translations.py puts the notice (class ``stale-translation``) under the title of a
Chinese page whose English twin changed since the translation recorded it; a site ready to
publish has none (tests/docs/test_translations.py checks the same on the Markdown).
"""

from __future__ import annotations

from .site_pages import SITE


def test_no_page_shows_the_stale_translation_notice() -> None:
    pages = sorted(SITE.rglob("*.html"))
    stale = [
        str(path.relative_to(SITE))
        for path in pages
        if 'stale-translation"' in path.read_text(encoding="utf-8")
    ]
    assert pages and not stale, (
        f"stale translations: {stale}; `python -m docs_hooks.translations` lists what changed"
    )
