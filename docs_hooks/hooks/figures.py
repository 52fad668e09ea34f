"""MkDocs hook: the site's figures, drawn at build time from attention_ref with matplotlib.

Each figure is a function ``fig_<name>(lang) -> Figure`` in a module of docs_hooks/plots/
(one module per page, e.g. plots/masks.py). It is drawn once per language into
``.cache/figures/<name>.<lang>.svg`` (git-ignored; a later build reuses the files while the
package, the plot modules, the benchmark results and the drawing libraries are unchanged,
checked by a hash of their contents) and added to the site as
``figures/<name>.<lang>.svg``; nothing is written into docs/. Pages link to their
own language's file::

    ![Attention weights of "The cat sat"](figures/attention_heatmap.en.svg)   <!-- x.md -->
    ![“猫坐了”的注意力权重](figures/attention_heatmap.zh.svg)                  <!-- x.zh.md -->

Figures are deterministic (seeded inputs, fixed SVG ids, no date), so an unchanged figure is
the same file from build to build. Chinese text uses Noto Sans CJK SC from mplfonts; text is
stored as paths, so readers need no fonts. Figures sit on a white panel (docs/stylesheets)
in both palettes.
"""

from __future__ import annotations

import hashlib
import importlib
import io
from collections.abc import Callable
from importlib import metadata
from importlib.resources import files as package_files
from pathlib import Path

import matplotlib
from matplotlib import font_manager
from matplotlib.figure import Figure
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

from docs_hooks.constants import LANGUAGES

CJK_FONT = package_files("mplfonts") / "fonts" / "NotoSansCJKsc-Regular.otf"
STYLE = {
    "font.family": ["DejaVu Sans", "Noto Sans CJK SC"],  # Latin first, CJK as fallback
    "font.size": 10,
    "svg.hashsalt": "attention-ref",  # fixed ids inside the SVG
    "svg.fonttype": "path",
}

PLOTS = "docs_hooks.plots"  # one module per page; every `fig_<name>(lang)` in it is a figure


def collect_figures() -> dict[str, Callable[[str], Figure]]:
    """Every function ``fig_<name>`` of every module in docs_hooks/plots/, by ``<name>``."""
    folder = Path(__file__).parents[1] / "plots"
    figures: dict[str, Callable[[str], Figure]] = {}
    for path in sorted(folder.glob("[!_]*.py")):
        module = importlib.import_module(f"{PLOTS}.{path.stem}")
        module = importlib.reload(module)  # `mkdocs serve` picks up edits
        for attr, function in vars(module).items():
            if attr.startswith("fig_") and callable(function):
                name = attr.removeprefix("fig_")
                if name in figures:
                    raise PluginError(f"figures: two functions draw the figure {name!r}")
                figures[name] = function
    return figures


def render(draw: Callable[[str], Figure], lang: str) -> bytes:
    """The SVG bytes of one figure in one language."""
    with matplotlib.rc_context(STYLE):
        fig = draw(lang)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def register_cjk_font() -> None:
    """Make the Chinese font known to matplotlib (tests/docs call it too, to draw as the site)."""
    if not CJK_FONT.is_file():
        raise PluginError(f"figures: the Chinese font is missing: {CJK_FONT} (install mplfonts)")
    font_manager.fontManager.addfont(str(CJK_FONT))


def _sources(root: Path) -> list[Path]:
    """What a figure is drawn from: the package, the plot modules, the benchmark results."""
    return sorted(
        [
            *(root / "attention_ref").rglob("*.py"),
            *(root / "docs_hooks").rglob("*.py"),
            *(root / "docs" / "bench-results").glob("*.json"),
        ]
    )


def _fingerprint(root: Path) -> tuple[int, ...]:
    """Changes when attention_ref, a plot module or a benchmark result changes (`mkdocs serve`)."""
    return tuple(p.stat().st_mtime_ns for p in _sources(root))


def _content_key(root: Path) -> str:
    """A hash of what the figures are drawn from, and of the libraries that draw them: a build
    whose key matches the one the cached SVGs were drawn under reuses them (figures are
    deterministic), e.g. the docs build after the browser tests' build."""
    digest = hashlib.sha256()
    for path in _sources(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    for name in ("matplotlib", "numpy", "torch", "mplfonts"):
        digest.update(f"{name}={metadata.version(name)}".encode())
    return digest.hexdigest()


_drawn: dict[tuple[int, ...], list[Path]] = {}


def on_config(config):
    """Draw with the Agg backend and the CJK font."""
    matplotlib.use("Agg")
    register_cjk_font()


def on_files(files, config):
    """Draw every figure (once per change of attention_ref) and add it to the site's files."""
    root = Path(config.config_file_path).parent
    key = _fingerprint(root)
    if key not in _drawn:
        cache = root / ".cache" / "figures"
        cache.mkdir(parents=True, exist_ok=True)
        stamp, content = cache / "drawn-from.sha256", _content_key(root)
        figures = collect_figures()
        paths = [cache / f"{name}.{lang}.svg" for name in figures for lang in LANGUAGES]
        fresh = stamp.is_file() and stamp.read_text() == content
        if not (fresh and all(path.is_file() for path in paths)):
            stamp.unlink(missing_ok=True)
            for name, draw in figures.items():
                for lang in LANGUAGES:
                    path = cache / f"{name}.{lang}.svg"
                    svg = render(draw, lang)
                    if not path.is_file() or path.read_bytes() != svg:
                        path.write_bytes(svg)
            stamp.write_text(content)
        _drawn.clear()
        _drawn[key] = paths
    for path in _drawn[key]:
        files.append(File.generated(config, f"figures/{path.name}", abs_src_path=str(path)))
    return files
