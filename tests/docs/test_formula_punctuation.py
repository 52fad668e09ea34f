"""An inline formula stays on one line with the punctuation around it (hooks/formulas.py).

A typeset formula is an SVG, an atomic box a browser may break beside: without the binding, a
Chinese line could start with the 。 after a formula or end with the （ before one. The browser
test (tests/e2e/test_chinese_lines.py) checks the built pages; these check the hook on samples.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from docs_hooks.hooks.formulas import bind_punctuation, on_page_content


def _math(tex: str) -> str:
    """A typeset inline formula as the hook leaves it (a stand-in SVG: MathJax is not needed)."""
    return f'<span class="arithmatex"><svg aria-label="{tex}"><path d="M0 0"/></svg></span>'


def _nobreak(html: str) -> list[str]:
    """The text (tags and the SVG dropped) of each ``nobreak`` span."""
    spans = re.findall(r'<span class="nobreak">(.*?</svg></span>[^<]*)</span>', html, re.S)
    return [re.sub(r"<svg .*?</svg>", "$", span, flags=re.S) for span in spans]


def test_an_opening_bracket_stays_with_the_formula_after_it():
    html = f"<p>D 是每头维度（{_math('d_k')} 个数）</p>"
    assert _nobreak(bind_punctuation(html)) == ['（<span class="arithmatex">$</span>']


def test_brackets_on_both_sides_make_one_group():
    root = _math(r"\sqrt{2}")
    html = f"<p>分母变成（{root}）倍，“{_math('x')}”。</p>"
    assert _nobreak(bind_punctuation(html)) == [
        '（<span class="arithmatex">$</span>）',
        '“<span class="arithmatex">$</span>”。',
    ]


def test_closing_punctuation_stays_with_the_formula_before_it():
    html = f"<p>权重求和为 {_math('1')}。</p>"
    assert _nobreak(bind_punctuation(html)) == ['<span class="arithmatex">$</span>。']


def test_a_formula_with_no_punctuation_beside_it_is_left_alone():
    html = f"<p>取 {_math('d_c = 512')} 与 {_math('h')} 个头（128 个）</p>"
    assert bind_punctuation(html) == html


def test_a_bracket_before_text_is_left_alone():
    html = f"<p>每头维度（默认 64）是 {_math('d_k')} 的值</p>"
    assert bind_punctuation(html) == html


def test_the_page_hook_binds_the_opening_bracket():
    pytest.importorskip("quickjax", reason="MathJax comes with the docs dependencies")
    page = SimpleNamespace(file=SimpleNamespace(src_uri="sample.zh.md"))
    html = on_page_content(
        '<p>它的注意力部分（<span class="arithmatex">\\(O(n^2)\\)</span>）</p>', page, None, None
    )
    assert html.startswith(
        '<p>它的注意力部分<span class="nobreak">（<span class="arithmatex"><svg '
    )
    assert html.endswith("</svg></span>）</span></p>")
