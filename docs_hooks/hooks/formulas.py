r"""MkDocs hook: typeset the pages' math to static SVG at build time (MathJax 4 via quickjax).

pymdownx.arithmatex (``generic: true``) turns ``$...$`` into
``<span class="arithmatex">\(...\)</span>`` and ``$$...$$`` into
``<div class="arithmatex">\[...\]</div>``. This hook replaces each with MathJax's SVG, so the
browser runs no math JavaScript and fetches nothing. The SVG draws in ``currentColor`` (it
follows the light and dark palettes) and carries ``role="img"`` with the TeX as its label.

A browser may break a line between an inline formula (an SVG, an atomic box) and the
punctuation next to it, so that a line starts with "。" or "," after the formula, or ends with
"（" before it. The formula and the punctuation around it (closing marks after it, full-width
opening marks before it) are kept together in a ``<span class="nobreak">``.

MathJax does not raise on bad TeX: it draws an error box (``data-mjx-error``) or, for an
unknown command, the command's name in red. Both fail the build here, naming page and formula.
"""

from __future__ import annotations

import html
import itertools
import re
from functools import cache

from mkdocs.exceptions import PluginError

from docs_hooks.constants import CLOSING, OPENING_FULL_WIDTH

MATH = re.compile(r'<(?P<tag>span|div) class="arithmatex">(?P<tex>.*?)</(?P=tag)>', re.DOTALL)
DELIMITERS = {"span": (r"\(", r"\)"), "div": (r"\[", r"\]")}
ERROR = re.compile(r'data-mjx-error="(?P<why>[^"]*)"')
UNDEFINED = re.compile(r'data-mml-node="mtext" fill="red" stroke="red" data-latex="(?P<cs>\\\w+)"')
SVG_ID = re.compile(r"MJX-\d+-")
INLINE_WITH_PUNCTUATION = re.compile(
    rf"(?P<open>[{re.escape(OPENING_FULL_WIDTH)}]*)"
    r'(?P<math><span class="arithmatex"><svg (?:(?!</svg>).)*</svg></span>)'
    rf"(?P<punct>[{re.escape(CLOSING)}]*)",
    re.DOTALL,
)

_ids = itertools.count(1)


@cache
def _mathjax():
    """The MathJax renderer, started on first use (the punctuation binding needs none)."""
    import quickjax

    return quickjax.MathJaxRenderer()


@cache
def typeset(tex: str, display: bool) -> str:
    """MathJax's SVG for ``tex``; raises ValueError if MathJax reports an error."""
    svg = _mathjax().render(tex, display=display)
    if error := ERROR.search(svg):
        raise ValueError(html.unescape(error["why"]))
    if undefined := UNDEFINED.search(svg):
        raise ValueError(f"Undefined control sequence {undefined['cs']}")
    label = html.escape(" ".join(tex.split()), quote=True)
    return svg.replace("<svg ", f'<svg aria-label="{label}" ', 1)


def _replace(match: re.Match[str], where: str) -> str:
    tag = match["tag"]
    opening, closing = DELIMITERS[tag]
    tex = html.unescape(match["tex"]).strip()
    if not (tex.startswith(opening) and tex.endswith(closing)):
        raise PluginError(f"math: {where}: unexpected arithmatex output {match[0][:80]!r}")
    tex = tex[len(opening) : -len(closing)].strip()
    try:
        svg = typeset(tex, display=tag == "div")
    except ValueError as error:
        raise PluginError(f"math: {where}: MathJax cannot typeset {tex!r}: {error}") from None
    # Fresh ids for each copy, so a formula used twice on a page keeps its ids unique.
    svg = SVG_ID.sub(f"MJX-{next(_ids)}-", svg)
    return f'<{tag} class="arithmatex">{svg}</{tag}>'


def on_page_content(html_text: str, page, config, files) -> str:
    """Replace every arithmatex span/div on the page with its SVG."""
    html_text = MATH.sub(lambda m: _replace(m, page.file.src_uri), html_text)
    return bind_punctuation(html_text)


def bind_punctuation(html_text: str) -> str:
    """Keep each typeset inline formula on one line with the punctuation around it: the
    closing marks after it ("$x$。") and the full-width opening marks before it ("（$x$")."""

    def bind(match: re.Match[str]) -> str:
        if not (match["open"] or match["punct"]):
            return match[0]
        return f'<span class="nobreak">{match["open"]}{match["math"]}{match["punct"]}</span>'

    return INLINE_WITH_PUNCTUATION.sub(bind, html_text)
