"""MkDocs hook: the table of open models' attention, from docs/includes/open-models.json, in
the page's language, where the page holds ``<!-- open-models-table -->``
(docs_hooks/open_models.py draws it)."""

from __future__ import annotations

from mkdocs.exceptions import PluginError

from docs_hooks.constants import page_language
from docs_hooks.open_models import MARKER, OpenModelsError, load, render_table


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace the marker line with the table in the page's language."""
    if not MARKER.search(markdown):
        return markdown
    try:
        table = render_table(load(), page_language(page, config))
    except OpenModelsError as error:
        raise PluginError(f"{page.file.src_uri}: {error}") from error
    return MARKER.sub(lambda _: table, markdown)
