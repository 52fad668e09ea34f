"""Translations that say when they are stale: each Chinese page records the English it follows.

A Chinese page ``docs/x.zh.md`` begins with front matter naming the version of its English twin
``docs/x.md`` it was last brought in line with, as the git blob id of the English text (what
``git hash-object docs/x.md`` prints)::

    ---
    translation_of: 5f2b8c1e0d4a...
    ---

When the English text has another id, the translation is stale, and

- the build shows, under the Chinese page's title, a notice in Chinese (an element with class
  ``stale-translation``) linking to the English page (docs_hooks/hooks/translation_notice.py);
- ``python -m docs_hooks.translations`` (``nox -s translations``) lists the stale pages, each
  with a diff of the English since the recorded version (``git cat-file -p <id>`` gives that
  text), and exits with status 1;
- once the translation is brought in line, ``python -m docs_hooks.translations --record
  docs/x.zh.md`` records the English as it is now; ``--record-all`` records every page.

A Chinese page without a record counts as stale. The ids are computed here, without git, so the
check and the notice work in a shallow clone; only the diff needs the old text from git.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SUFFIX = ".zh.md"  # the translated pages; docs/x.zh.md translates docs/x.md
KEY = "translation_of"
FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?P<body>(?:.*\n)*?)---[ \t]*\n")
RECORD = re.compile(rf"^{KEY}:[ \t]*(?P<id>\S*)[ \t]*$", re.M)
H1 = re.compile(r"^# .*$", re.M)
NOTICE = (
    '<div class="admonition warning stale-translation">\n'
    '<p class="admonition-title">译文可能已过时</p>\n'
    "<p>英文原文在此译文之后有过修改，请对照"
    '<a href="{href}" hreflang="en">英文原文</a>阅读。</p>\n'
    "</div>"
)


def blob_id(text: bytes) -> str:
    """The git blob id of a file's bytes: what ``git hash-object`` prints for it."""
    return hashlib.sha1(b"blob %d\0" % len(text) + text).hexdigest()


def recorded(markdown: str) -> str | None:
    """The English version a translation records (``translation_of:``), or None."""
    front = FRONT_MATTER.match(markdown)
    found = RECORD.search(front["body"]) if front else None
    return found["id"] if found else None


def with_record(markdown: str, english_id: str) -> str:
    """The translation's text with ``translation_of: english_id`` in its front matter."""
    line = f"{KEY}: {english_id}\n"
    front = FRONT_MATTER.match(markdown)
    if front is None:
        return f"---\n{line}---\n\n{markdown}"
    body = front["body"]
    body = RECORD.sub(line.rstrip("\n"), body) if RECORD.search(body) else body + line
    return f"---\n{body}---\n{markdown[front.end() :]}"


def english_of(page: Path) -> Path:
    """``docs/x.zh.md`` -> ``docs/x.md``."""
    return page.with_name(page.name.removesuffix(SUFFIX) + ".md")


@dataclass(frozen=True)
class Translation:
    page: Path  # docs/x.zh.md
    english: Path  # docs/x.md
    recorded: str | None  # the English version the page follows
    current: str  # the English version now

    @property
    def stale(self) -> bool:
        return self.recorded != self.current


def translation(page: Path) -> Translation:
    english = english_of(page)
    return Translation(
        page=page,
        english=english,
        recorded=recorded(page.read_text(encoding="utf-8")),
        current=blob_id(english.read_bytes()),
    )


def translations(docs: Path = DOCS) -> list[Translation]:
    """Every translated page under ``docs`` whose English twin exists, in name order."""
    pages = sorted(docs.rglob(f"*{SUFFIX}"))
    return [translation(page) for page in pages if english_of(page).is_file()]


def record(page: Path) -> bool:
    """Record the English as it is now as the version ``page`` follows; True if it changed."""
    english = english_of(page)
    text = english.read_bytes()
    _store(english)
    markdown = page.read_text(encoding="utf-8")
    updated = with_record(markdown, blob_id(text))
    if updated != markdown:
        page.write_text(updated, encoding="utf-8")
    return updated != markdown


def _store(path: Path) -> None:
    """Keep the recorded English in git's objects (if in a repository) for later diffs."""
    subprocess.run(
        ["git", "hash-object", "-w", "--", path.name],
        cwd=path.parent,
        capture_output=True,
        check=False,
    )


def _old_text(translation: Translation) -> str | None:
    if translation.recorded is None:
        return None
    found = subprocess.run(
        ["git", "cat-file", "-p", translation.recorded],
        cwd=translation.english.parent,
        capture_output=True,
        check=False,
    )
    return found.stdout.decode("utf-8") if found.returncode == 0 else None


def english_diff(translation: Translation) -> str:
    """A unified diff of the English since the version the translation records."""
    name = translation.english.name
    old = _old_text(translation)
    if old is None:
        if translation.recorded is None:
            return f"(no {KEY} recorded: the whole of {name} is new to the translation)\n"
        return f"(English version {translation.recorded} is not in this repository's objects)\n"
    new = translation.english.read_text(encoding="utf-8")
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"{name} (recorded {translation.recorded[:10]})",
            tofile=f"{name} (now)",
        )
    )


# --- the MkDocs hook --------------------------------------------------------------------------


def notice(page_url: str, lang: str = "zh") -> str:
    """The stale-translation notice for the page at ``page_url`` (e.g. ``zh/masks/``)."""
    english_url = page_url.removeprefix(f"{lang}/")
    href = "../" * page_url.count("/") + english_url
    return NOTICE.format(href=href or "./")


# --- the command line -------------------------------------------------------------------------


def _name(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m docs_hooks.translations",
        description="List the Chinese pages whose English changed since their translation "
        "(with a diff of the English since), or record the English they now follow.",
    )
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs folder (docs/)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--record", nargs="+", type=Path, metavar="PAGE", help="x.zh.md files")
    group.add_argument("--record-all", action="store_true", help="record every page")
    args = parser.parse_args(argv)

    if args.record or args.record_all:
        pages = args.record or [t.page for t in translations(args.docs)]
        for page in pages:
            if not page.name.endswith(SUFFIX) or not english_of(page).is_file():
                parser.error(f"{page}: not a {SUFFIX} page with an English twin")
            if record(page):
                print(f"recorded {_name(english_of(page))} for {_name(page)}")
        return 0

    stale = [t for t in translations(args.docs) if t.stale]
    for found in stale:
        why = "changed since its translation" if found.recorded else "was never recorded"
        print(f"stale: {_name(found.page)}: {_name(found.english)} {why}")
        print(english_diff(found))
    if stale:
        print(
            f"{len(stale)} stale translation(s). Bring each in line with its English page, then "
            "`python -m docs_hooks.translations --record PAGE`."
        )
        return 1
    print(f"all {len(translations(args.docs))} translations follow their English pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
