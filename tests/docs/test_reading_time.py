"""The reading-time measure (docs_hooks/reading_time.py) on small pieces of built HTML: what a
reader sees with nothing expanded counts, what is folded, hidden or in another tab does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_hooks import reading_time
from docs_hooks.reading_time import Measure, core_path, count_words, measure_html

ROOT = Path(__file__).resolve().parents[2]


def measure(html: str) -> Measure:
    return measure_html(html, whole=True)


def test_words_of_prose() -> None:
    m = measure("<p>Attention is <strong>all</strong> you need.</p><p>Two words</p>")
    assert (m.words, m.cjk, m.code_lines, m.formulas) == (7, 0, 0, 0)
    assert m.minutes == pytest.approx(7 / 180)


def test_only_the_article_of_a_built_page() -> None:
    page = (
        "<html><head><title>Nav words</title></head><body><nav>one two three</nav>"
        '<article class="md-content__inner md-typeset"><h1>Title here</h1><p>four</p></article>'
        "<footer>five six</footer></body></html>"
    )
    assert measure_html(page).words == 3


@pytest.mark.parametrize(
    ("html", "words", "code_lines"),
    [
        pytest.param(
            '<p>open text</p><details class="deeper"><summary>Deeper: porting</summary>'
            "<p>many words that stay folded away</p><pre><code>x = 1\ny = 2</code></pre></details>",
            2 + 2,
            0,
            id="a collapsed details shows its summary only",
        ),
        pytest.param(
            '<details class="note" open><summary>Note</summary><p>three more words</p>'
            "<pre><code>x = 1\ny = 2\n</code></pre></details>",
            4,
            2,
            id="an open details counts whole",
        ),
        pytest.param(
            '<div class="highlight"><table class="highlighttable"><tr>'
            '<td class="linenos"><div class="linenodiv"><pre><span>1</span>\n<span>2</span>\n'
            "<span>3</span></pre></div></td>"
            '<td class="code"><div><pre><span></span><code><a id="__codelineno-0-1"></a>'
            "def f(x):\n\n    return x\n</code></pre></div></td></tr></table></div>",
            0,
            2,
            id="code lines without line numbers or blank lines",
        ),
    ],
)
def test_words_and_code_lines(html: str, words: int, code_lines: int) -> None:
    m = measure(html)
    assert m.words == words
    assert m.code_lines == code_lines


def test_nested_details_inside_an_open_one() -> None:
    m = measure(
        "<details open><summary>A</summary><p>b c</p>"
        "<details><summary>D</summary><p>hidden words here</p></details><p>e</p></details>"
    )
    assert m.prose.split() == ["A", "b", "c", "D", "e"]


TABS = (
    '<div class="tabbed-set tabbed-alternate" data-tabs="1:2">'
    '<input {first} id="__tabbed_1_1" name="__tabbed_1" type="radio">'
    '<input {second} id="__tabbed_1_2" name="__tabbed_1" type="radio">'
    '<div class="tabbed-labels"><label for="__tabbed_1_1">Ours</label>'
    '<label for="__tabbed_1_2">PyTorch</label></div>'
    '<div class="tabbed-content">'
    '<div class="tabbed-block"><p>first tab words</p><pre><code>a\nb\n</code></pre></div>'
    '<div class="tabbed-block"><p>second tab has more words</p><pre><code>c\nd\ne\n</code></pre>'
    "</div></div></div><p>after</p>"
)


def test_only_the_first_tab_counts() -> None:
    m = measure(TABS.format(first='checked="checked"', second=""))
    assert m.prose.split() == ["Ours", "PyTorch", "first", "tab", "words", "after"]
    assert m.code_lines == 2


def test_the_selected_tab_counts() -> None:
    m = measure(TABS.format(first="", second='checked="checked"'))
    assert "second" in m.prose.split() and "first" not in m.prose.split()
    assert m.code_lines == 3


def test_two_tab_sets_each_show_their_first() -> None:
    one = TABS.format(first="checked", second="")
    m = measure(one + one.replace("__tabbed_1", "__tabbed_2"))
    assert m.code_lines == 4
    assert m.prose.split().count("second") == 0


def test_headerlinks_hidden_elements_and_scripts() -> None:
    m = measure(
        '<h2 id="a">Heading words<a class="headerlink" href="#a" title="Permanent link">¶</a></h2>'
        '<p hidden>not shown</p><div style="display: none">nor this</div>'
        "<script>var x = 1;</script><style>p { color: red }</style>"
    )
    assert m.prose.split() == ["Heading", "words"]


def test_displayed_formulas_count_inline_ones_do_not() -> None:
    svg = '<svg viewBox="0 0 10 10"><title>x</title><path d="M0 0"/><text>k</text></svg>'
    m = measure(
        f'<p>We divide by <span class="arithmatex">{svg}</span> here.</p>'
        f'<div class="arithmatex">{svg}</div><div class="arithmatex">{svg}</div>'
        f'<details><summary>More</summary><div class="arithmatex">{svg}</div></details>'
    )
    assert m.formulas == 2
    assert m.words == 4 + 1
    assert m.minutes == pytest.approx(5 / 180 + 2 * 0.25)


def test_figures_count_nothing_but_their_caption() -> None:
    m = measure(
        '<figure><img alt="a long alt text" src="x.svg"><figcaption>Cap</figcaption></figure>'
    )
    assert m.words == 1


def test_chinese_characters_and_latin_words() -> None:
    assert count_words("注意力机制用 softmax 归一化，再乘以 V。") == (2, 12)
    m = measure("<p>缩放点积注意力把 <code>attention_weights</code> 的结果乘以值。</p>")
    assert (m.cjk, m.words) == (14, 1)
    assert m.minutes == pytest.approx(14 / 400 + 1 / 180)


def test_words_run_on_across_inline_tags_and_break_at_blocks() -> None:
    m = measure("<p>multi<em>head</em></p><p>next</p><ul><li>one</li><li>two</li></ul>")
    assert m.prose.split() == ["multihead", "next", "one", "two"]


def test_the_core_path_comes_from_the_nav(tmp_path: Path) -> None:
    yml = tmp_path / "mkdocs.yml"
    yml.write_text(
        "site_url: !ENV [SITE_URL, 'x']\n"
        "nav:\n  - Home: index.md\n  - Learn:\n      - a.md\n      - Named: b.md\n"
        "  - Deeper:\n      - c.md\n",
        encoding="utf-8",
    )
    assert core_path(yml) == ["index", "a", "b"]
    assert reading_time.all_pages(yml) == ["index", "a", "b", "c"]


def test_the_site_s_core_path_starts_at_home() -> None:
    core = core_path(ROOT / "mkdocs.yml")
    assert core[0] == "index"
    assert all((ROOT / "docs" / f"{page}.md").is_file() for page in core)


def test_the_bars_name_the_page() -> None:
    rows = [("a", Measure(words=180 * 21)), ("b", Measure(words=180 * 10))]
    problems = reading_time.over_the_bars(rows, "zh")
    assert problems == ["zh: a reads in 21.0 min (at most 20)"]
    rows = [(f"p{i}", Measure(words=180 * 19)) for i in range(7)]
    assert reading_time.over_the_bars(rows, "en") == [
        "en: the core path reads in 133.0 min (at most 120)"
    ]


def test_rounded_up() -> None:
    assert reading_time.rounded(3.0) == 3
    assert reading_time.rounded(3.01) == 4


# -- the home page's "Start here" table and site map -------------------------------------------


@pytest.mark.parametrize("lang", reading_time.LANGUAGES)
def test_start_here_lists_the_core_path_in_order(lang: str) -> None:
    """One row per core page, in the nav's order: the home page first (no link), then each page
    linked; then the total."""
    stated, total = reading_time.stated_minutes(reading_time.home_page(lang).read_text("utf-8"))
    assert [page or "index" for page, _ in stated] == core_path()
    assert stated[0][0] is None
    assert total >= 0


@pytest.mark.parametrize("lang", reading_time.LANGUAGES)
def test_the_home_page_links_every_page(lang: str) -> None:
    text = reading_time.home_page(lang).read_text("utf-8")
    linked = set(reading_time.LINKED_PAGE.findall(text))
    missing = [page for page in reading_time.all_pages() if page != "index" and page not in linked]
    assert missing == [], f"not on the home page: {missing}"


def test_minutes_are_written_into_the_table() -> None:
    home = (
        "# Home\n\n## Start here { #start-here }\n\n"
        "| Page | Minutes | What |\n| --- | --: | --- |\n"
        "| This page | 0 | x |\n| [A](a.md) | 0 | y |\n| **In all** | **0** | |\n\n## Next\n\n"
        "| not | 5 | z |\n"
    )
    written = reading_time.with_minutes(home, [4, 13], 17)
    assert reading_time.stated_minutes(written) == ([(None, 4), ("a", 13)], 17)
    assert "| **In all** | **17** | |\n" in written
    assert written.endswith("| not | 5 | z |\n")
    with pytest.raises(ValueError, match="2 page rows and a total for 3 core pages"):
        reading_time.with_minutes(home, [1, 2, 3], 6)
