"""MkDocs hook: a notice under the title of a Chinese page whose English twin changed since its
translation was last brought in line (docs_hooks/translations.py keeps the record)."""

from __future__ import annotations

from pathlib import Path

from docs_hooks.translations import H1, SUFFIX, blob_id, notice, recorded


def on_page_markdown(markdown: str, page, config, files) -> str:
    """A stale Chinese page gets the notice under its title, linking to the English page."""
    src_uri = page.file.src_uri
    if not src_uri.endswith(SUFFIX):
        return markdown
    english = Path(config.docs_dir) / (src_uri.removesuffix(SUFFIX) + ".md")
    if not english.is_file():
        return markdown
    if recorded(page.file.content_string) == blob_id(english.read_bytes()):
        return markdown
    block = notice(page.url, SUFFIX.split(".")[1])
    title = H1.search(markdown)
    if title is None:
        return f"{block}\n\n{markdown}"
    return f"{markdown[: title.end()]}\n\n{block}\n\n{markdown[title.end() :].lstrip(chr(10))}"
