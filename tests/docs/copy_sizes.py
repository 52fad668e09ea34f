"""How much the copy button of each package-code block copies, measured on a built site.

Usage: ``python tests/docs/copy_sizes.py SITE_DIR`` (a folder that ``mkdocs build`` wrote). For
every block that shows package code (``source-include-N``) on every page, both languages: the lines
shown, the lines its copy button copies (the ``data-copy`` of its ``<code>``), and the lines the
copy adds. Prints the median and maximum of both, each distinct block once, and the two blocks
the copy contract names: ``generate`` (docs/decoding.md) and the excerpt of
``TransformerEncoderLayer._attention`` (docs/transformer-layer.md, with ``forward`` and
``_feed_forward``). Reads HTML only: it measures
any build, before or after a change to docs_hooks.
"""

from __future__ import annotations

import html
import re
import statistics
import sys
from pathlib import Path

BLOCK = re.compile(
    r'<div class="[^"]*\bsource-include-\d+\b[^"]*">.*?<code[^>]*?data-copy="(?P<copy>[^"]*)"'
    r"[^>]*>(?P<code>.*?)</code>",
    re.S,
)
TAG = re.compile(r"<[^>]+>")


def _lines(text: str) -> int:
    return len(text.rstrip("\n").splitlines())


def blocks(site: Path) -> dict[tuple[str, str], tuple[int, int, str]]:
    """Each distinct (shown, copied) block -> (lines shown, lines copied, first page showing it)."""
    found: dict[tuple[str, str], tuple[int, int, str]] = {}
    for page in sorted(site.rglob("index.html")):
        for match in BLOCK.finditer(page.read_text(encoding="utf-8")):
            shown = html.unescape(TAG.sub("", match["code"]))
            copied = html.unescape(match["copy"])
            where = page.parent.relative_to(site).as_posix()
            found.setdefault((shown, copied), (_lines(shown), _lines(copied), where))
    return found


def main(site: Path) -> None:
    found = blocks(site)
    if not found:
        raise SystemExit(f"{site}: no package-code blocks (not a built site?)")
    sizes = [copied for _, copied, _ in found.values()]
    added = [copied - shown for shown, copied, _ in found.values()]
    print(f"{len(found)} distinct package-code blocks in {site}")
    print(f"copied lines: median {statistics.median(sizes)}, max {max(sizes)}")
    print(f"added lines:  median {statistics.median(added)}, max {max(added)}")
    for name, first_line in (
        ("generate", "def generate("),
        ("TransformerEncoderLayer._attention", "def _attention("),
    ):
        for (shown, _), (n_shown, n_copied, where) in found.items():
            if any(line.startswith(first_line) for line in shown.splitlines()):
                print(
                    f"{name} ({where}): shows {n_shown}, copies {n_copied}, "
                    f"adds {n_copied - n_shown}"
                )
                break


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "site"))
