"""The one reader of the pages' Markdown structure: fenced code blocks, headings, containers
(admonitions, collapsible blocks, content tabs) and the prose that is left when code, math, link
targets and markup are taken out. The hooks and the tests read pages with it.

Fences open with three or more backticks or tildes (indented ones too: inside a tab or an
admonition) and close with a bare fence of the same kind, at least as long. A heading may end
in attributes, ``## Title { #id }``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n]*)$")
CONTAINER = re.compile(  # !!! warning "Title", ??? note, ???+ tip "Title", === "Tab"
    r'^(?P<indent>[ \t]*)(?:(?:!!!|\?\?\?\+?)[ \t]+[\w-]+|===)(?:[ \t]+"(?P<title>.*)")?[ \t]*$'
)
HEADING = re.compile(r"^(?P<hashes>#{1,6})[ \t]+(?P<text>.*?)(?:[ \t]*\{[^}]*\})?[ \t]*$")
HEADING_ID = re.compile(r"^#{1,6}[ \t].*\{[^}]*#(?P<id>[\w-]+)[^}]*\}[ \t]*$", re.M)


def fence_language(info: str) -> str:
    """A fence's language: ``pycon title="x"`` -> pycon; ``{ .pycon .annotate }`` -> pycon."""
    info = info.strip()
    if info.startswith("{"):
        found = re.search(r"\.([\w+-]+)", info)
        return found[1].lower() if found else ""
    return re.split(r"[\s{]", info, maxsplit=1)[0].lower()


def closes(line: str, opening: re.Match[str]) -> bool:
    """Whether ``line`` closes the fence ``opening`` (a FENCE match)."""
    found = FENCE.match(line)
    return bool(found and not found["info"] and found["fence"].startswith(opening["fence"]))


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, info string, indentation, lines (without the fence's
    indentation) and the lines of its opening and closing fences (1-based)."""

    language: str
    info: str
    indent: str
    lines: list[str]
    line: int
    end: int


def code_blocks(markdown: str) -> list[Block]:
    """The fenced code blocks of a page, indented ones (tabs, admonitions) included."""
    found: list[Block] = []
    opening: re.Match[str] | None = None
    start, lines = 0, []
    for number, line in enumerate(markdown.splitlines(), start=1):
        if opening is None:
            opening = FENCE.match(line)
            start, lines = number, []
        elif closes(line, opening):
            info = opening["info"]
            block = Block(fence_language(info), info, opening["indent"], lines, start, number)
            found.append(block)
            opening = None
        else:
            lines.append(line[len(opening["indent"]) :])
    return found


def flatten(lines: list[str]) -> Iterator[tuple[int, str]]:
    """Lines with admonitions, collapsible blocks and content tabs opened up.

    A container's first line becomes its bold title (nothing for an untitled one); its
    indented body loses the container's indentation. Yields (line number, line).
    """
    stack: list[int] = []  # the indentation of each open container's body
    fence: re.Match[str] | None = None
    for number, line in enumerate(lines, start=1):
        indent = len(line) - len(line.lstrip(" "))
        if fence is None and line.strip():
            while stack and indent < stack[-1]:
                stack.pop()
        cut = stack[-1] if stack else 0
        text = line[cut:] if line[:cut].strip() == "" else line.lstrip(" ")
        if fence is not None:
            if closes(text, fence):
                fence = None
            yield number, text
            continue
        if found := FENCE.match(text):
            fence = found
            yield number, text
            continue
        container = CONTAINER.match(text)
        if container:
            stack.append(cut + len(container["indent"]) + 4)
            title = container["title"]
            yield number, f"**{title}**" if title else ""
            continue
        yield number, text


def headings(text: str) -> Iterator[tuple[str, re.Match[str] | None]]:
    """Each line of some Markdown, with its heading match (None in code blocks and other
    lines)."""
    fence: re.Match[str] | None = None
    for line in text.splitlines():
        found = FENCE.match(line)
        if fence is None and found:
            fence = found
        elif fence is not None and closes(line, fence):
            fence, found = None, fence
        yield line, HEADING.match(line) if fence is None and not found else None


def heading_ids(markdown: str) -> list[str]:
    """The ``{ #id }`` of every heading, in order."""
    return HEADING_ID.findall(markdown)


NOT_PROSE = [  # what ``prose`` takes out besides fenced code blocks
    re.compile(r"\$\$.*?\$\$", re.S),  # display math
    re.compile(r"(?<![\\$])\$(?!\$)[^$\n]+?\$"),  # inline math
    re.compile(r"`[^`\n]+`"),  # inline code
    re.compile(r"<!--.*?-->", re.S),  # HTML comments
    re.compile(r"(?<=\])\([^)\s]*\)"),  # link targets (the link text's "]" stays)
    re.compile(r"^\s*\[[^\]]+\]:\s*\S+.*$", re.M),  # link definitions
    re.compile(r"\{[^}\n]*#[\w-]+[^}\n]*\}"),  # heading ids and attributes
    re.compile(r"^\s*--8<--.*$", re.M),  # snippet includes
    re.compile(r"<[^>\n]+>"),  # HTML tags (their attributes)
]


def prose(markdown: str, fill: str = " ") -> str:
    """The page's prose: what is not code, math, a link target or markup is kept, and what is
    removed becomes ``fill`` (fenced blocks: blanks), so that every character keeps its offset
    and its line."""
    fenced = {n for block in code_blocks(markdown) for n in range(block.line, block.end + 1)}
    lines = [
        " " * len(line) if number in fenced else line
        for number, line in enumerate(markdown.splitlines(), start=1)
    ]
    kept = "\n".join(lines) + ("\n" if markdown.endswith("\n") else "")
    for pattern in NOT_PROSE:
        kept = pattern.sub(lambda m: re.sub(r"[^\n]", fill, m[0]), kept)
    return kept
