"""MkDocs hook: the glossary and shape-legend tables, from docs/includes/glossary.yml, in the
language of the marker that asks for them (docs_hooks/glossary.py draws them)."""

from __future__ import annotations

from mkdocs.exceptions import PluginError

from docs_hooks.glossary import (
    MARKER,
    SHAPES_MARKER,
    GlossaryError,
    load_shapes,
    load_terms,
    render_shapes,
    render_table,
)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace the glossary markers of a page with the tables in the markers' language."""
    try:
        if MARKER.search(markdown):
            terms = load_terms()
            markdown = MARKER.sub(lambda match: render_table(terms, match["lang"]), markdown)
        if SHAPES_MARKER.search(markdown):
            shapes = load_shapes()
            markdown = SHAPES_MARKER.sub(lambda m: render_shapes(shapes, m["lang"]), markdown)
    except (GlossaryError, KeyError) as error:
        raise PluginError(f"{page.file.src_uri}: {error}") from error
    return markdown
