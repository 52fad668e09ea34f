"""Each Chinese page records the English text it follows; a stale one says so (issue 22 §4).

docs_hooks/translations.py: ``translation_of:`` in a ``x.zh.md``'s front matter is the git blob
id of ``x.md``'s text when the translation was last brought in line with it. The cycle, in a
temporary copy: edit an English page → its twin is listed stale, with a diff of the English,
and its built page shows the ``stale-translation`` notice linking to the English page; record
it → clean, and no notice. And no page of this repository is stale.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docs_hooks import translations

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GIT = shutil.which("git")
NOTICE_CLASS = 'class="admonition warning stale-translation"'


def test_no_translation_is_stale() -> None:
    found = translations.translations(DOCS)
    assert len(found) == len(list(DOCS.glob("*.zh.md"))) > 0
    stale = [str(t.page.relative_to(ROOT)) for t in found if t.stale]
    assert not stale, (
        f"English changed since these translations: {stale}. Bring each in line "
        "(`python -m docs_hooks.translations` shows what changed), then record it "
        "(`python -m docs_hooks.translations --record docs/x.zh.md`)."
    )


@pytest.mark.skipif(GIT is None, reason="git computes the reference id")
def test_blob_id_is_gits(tmp_path: Path) -> None:
    page = tmp_path / "x.md"
    page.write_bytes("# 标题\n\ntext\n".encode())
    git = subprocess.run([GIT, "hash-object", str(page)], capture_output=True, text=True)
    assert translations.blob_id(page.read_bytes()) == git.stdout.strip()


def test_record_writes_and_replaces_the_front_matter() -> None:
    page = "# 标题\n\n正文。\n"
    first = translations.with_record(page, "a" * 40)
    assert first == f"---\ntranslation_of: {'a' * 40}\n---\n\n{page}"
    assert translations.recorded(first) == "a" * 40
    second = translations.with_record(first, "b" * 40)
    assert second == first.replace("a" * 40, "b" * 40)
    other = "---\ntitle: x\n---\n" + page  # other keys stay
    assert translations.with_record(other, "c" * 40).startswith(
        f"---\ntitle: x\ntranslation_of: {'c' * 40}\n---\n"
    )
    assert translations.recorded(page) is None


def test_notice_links_to_the_english_page() -> None:
    assert 'href="../../masks/"' in translations.notice("zh/masks/")
    assert 'href="../"' in translations.notice("zh/")
    assert 'href="../../../api/reference/"' in translations.notice("zh/api/reference/")


# --- the cycle, in a temporary copy ---------------------------------------------------------


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """docs/masks.md and its twin in a git repository of their own, the twin recorded."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("masks.md", "masks.zh.md"):
        shutil.copy(DOCS / name, docs / name)
    if GIT is not None:
        subprocess.run([GIT, "init", "-q", str(tmp_path)], check=True)
    translations.main(["--docs", str(docs), "--record-all"])
    return docs


def _edit_english(docs: Path) -> None:
    english = docs / "masks.md"
    english.write_text(english.read_text(encoding="utf-8") + "\nA new closing line.\n")


def test_cycle_on_the_command_line(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert translations.main(["--docs", str(copy)]) == 0
    _edit_english(copy)
    assert [t.page.name for t in translations.translations(copy) if t.stale] == ["masks.zh.md"]

    assert translations.main(["--docs", str(copy)]) == 1
    listed = capsys.readouterr().out
    assert "stale: " in listed and "masks.zh.md" in listed
    if GIT is not None:  # the diff of the English since the recorded version
        assert "+A new closing line." in listed
        assert "--- masks.md (recorded " in listed

    assert translations.main(["--docs", str(copy), "--record", str(copy / "masks.zh.md")]) == 0
    assert translations.main(["--docs", str(copy)]) == 0
    zh = (copy / "masks.zh.md").read_text(encoding="utf-8")
    assert translations.recorded(zh) == translations.blob_id((copy / "masks.md").read_bytes())
    assert zh.count("translation_of:") == 1


# A site of two small pages, built with the site's theme, its i18n plugin and this hook.
MKDOCS_YML = """\
site_name: t
site_url: https://example.org/t/
docs_dir: docs
theme:
  name: material
hooks:
  - {hook}
plugins:
  - i18n:
      docs_structure: suffix
      reconfigure_material: true
      languages:
        - locale: en
          name: English
          default: true
          build: true
        - locale: zh
          name: 中文
          build: true
"""


def _build(site: Path) -> tuple[str, str]:
    """Build the small site; the Chinese page's and the English page's HTML."""
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", "out"],
        cwd=site,
        check=True,
        # the hook imports docs_hooks from the checkout, as nox's docs sessions let it
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)},
    )
    zh = (site / "out" / "zh" / "page" / "index.html").read_text(encoding="utf-8")
    en = (site / "out" / "page" / "index.html").read_text(encoding="utf-8")
    return zh, en


def test_cycle_in_a_built_site(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs_static_i18n", reason="needs the docs dependency group")
    pytest.importorskip("material", reason="needs the docs dependency group")
    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "mkdocs.yml").write_text(
        MKDOCS_YML.format(hook=ROOT / "docs_hooks" / "hooks" / "translation_notice.py"),
        encoding="utf-8",
    )
    (docs / "index.md").write_text("# Home\n", encoding="utf-8")
    (docs / "index.zh.md").write_text("# 首页\n", encoding="utf-8")
    (docs / "page.md").write_text("# Page\n\nText.\n", encoding="utf-8")
    (docs / "page.zh.md").write_text("# 页面\n\n正文。\n", encoding="utf-8")
    translations.main(["--docs", str(docs), "--record-all"])

    zh, en = _build(tmp_path)
    assert "stale-translation" not in zh

    (docs / "page.md").write_text("# Page\n\nText, changed.\n", encoding="utf-8")
    zh, en = _build(tmp_path)
    assert "stale-translation" not in en
    assert zh.count(NOTICE_CLASS) == 1
    notice = zh[zh.index(NOTICE_CLASS) :]
    notice = notice[: notice.index("</div>")]
    assert "译文可能已过时" in notice and 'href="../../page/"' in notice
    assert zh.index("<h1") < zh.index(NOTICE_CLASS) < zh.index("正文。")  # under the title
    index_zh = (tmp_path / "out" / "zh" / "index.html").read_text(encoding="utf-8")
    assert "stale-translation" not in index_zh  # only the page whose English changed

    translations.main(["--docs", str(docs), "--record", str(docs / "page.zh.md")])
    zh, en = _build(tmp_path)
    assert "stale-translation" not in zh


def test_front_matter_stays_out_of_the_notebook_and_script() -> None:
    from docs_hooks import page_examples

    doc = DOCS / "masks.zh.md"
    markdown = doc.read_text(encoding="utf-8")
    assert translations.recorded(markdown)
    kwargs = {"site_url": "https://example.org/", "src_uri": doc.name, "lang": "zh"}
    notebook = page_examples.notebook(markdown, **kwargs)
    title = "".join(notebook["cells"][1]["source"])
    assert title.startswith("# 掩码\n"), title[:80]
    script = page_examples.script(markdown, **kwargs)
    assert "translation_of" not in repr(notebook) + script
    # doctest line numbers are the file's own
    first = page_examples.doctests(markdown)[0]
    assert markdown.splitlines()[first.line - 1].startswith("```pycon")
