"""MkDocs hook: the site's figures, drawn at build time from attention_ref with matplotlib.

Each figure is a function ``fig_<name>(lang) -> Figure`` decorated with ``@figure``. It is
drawn once per language into ``.cache/figures/<name>.<lang>.svg`` (git-ignored) and added to
the site as ``figures/<name>.<lang>.svg``; nothing is written into docs/. Pages link to their
own language's file::

    ![Attention weights of "The cat sat"](figures/attention_heatmap.en.svg)   <!-- x.md -->
    ![“猫坐了”的注意力权重](figures/attention_heatmap.zh.svg)                  <!-- x.zh.md -->

Figures are deterministic (seeded inputs, fixed SVG ids, no date), so an unchanged figure is
the same file from build to build. Chinese text uses Noto Sans CJK SC from mplfonts; text is
stored as paths, so readers need no fonts. Figures sit on a white panel (docs/stylesheets)
in both palettes.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from importlib.resources import files as package_files
from pathlib import Path

import matplotlib
from matplotlib import font_manager
from matplotlib.figure import Figure
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

LANGUAGES = ("en", "zh")
CJK_FONT = package_files("mplfonts") / "fonts" / "NotoSansCJKsc-Regular.otf"
STYLE = {
    "font.family": ["DejaVu Sans", "Noto Sans CJK SC"],  # Latin first, CJK as fallback
    "font.size": 10,
    "svg.hashsalt": "attention-ref",  # fixed ids inside the SVG
    "svg.fonttype": "path",
}

FIGURES: dict[str, Callable[[str], Figure]] = {}


def figure(function: Callable[[str], Figure]) -> Callable[[str], Figure]:
    """Register ``fig_<name>`` as the figure ``<name>``."""
    FIGURES[function.__name__.removeprefix("fig_")] = function
    return function


def _tiny_input():
    """Three tokens, width 4, from a seeded generator: the same numbers on every machine."""
    import torch

    generator = torch.Generator().manual_seed(0)
    return torch.randn(3, 4, generator=generator, dtype=torch.float64)


@figure
def fig_attention_heatmap(lang: str) -> Figure:
    """Heat map of ``attention_weights(x, x)`` for a three-token sentence."""
    from attention_ref import attention_weights
    from attention_ref.plotting import plot_attention

    tokens = {"en": ["The", "cat", "sat"], "zh": ["猫", "坐", "了"]}[lang]
    text = {
        "en": {"title": "Attention weights", "x": "key", "y": "query"},
        "zh": {"title": "注意力权重", "x": "键 (key)", "y": "查询 (query)"},
    }[lang]
    x = _tiny_input()  # (L, E) = (3, 4)
    weights = attention_weights(x, x)  # (L, S) = (3, 3); query = key = x

    fig = Figure(figsize=(3.6, 3.0), layout="constrained")
    ax = plot_attention(weights, tokens, ax=fig.subplots(), title=text["title"])
    ax.set(xlabel=text["x"], ylabel=text["y"])
    fig.colorbar(ax.images[0], ax=ax, shrink=0.8)
    return fig


def render(name: str, lang: str) -> bytes:
    """The SVG bytes of one figure in one language."""
    with matplotlib.rc_context(STYLE):
        fig = FIGURES[name](lang)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def _register_cjk_font() -> None:
    if not CJK_FONT.is_file():
        raise PluginError(f"figures: the Chinese font is missing: {CJK_FONT} (install mplfonts)")
    font_manager.fontManager.addfont(str(CJK_FONT))


def _fingerprint(root: Path) -> tuple[int, ...]:
    """Changes whenever a source file of attention_ref changes (for `mkdocs serve`)."""
    return tuple(p.stat().st_mtime_ns for p in sorted((root / "attention_ref").rglob("*.py")))


_drawn: dict[tuple[int, ...], list[Path]] = {}


def on_config(config):
    """Draw from the attention_ref of this checkout, as mkdocstrings' `paths: [.]` does."""
    root = str(Path(config.config_file_path).parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    matplotlib.use("Agg")
    _register_cjk_font()


def on_files(files, config):
    """Draw every figure (once per change of attention_ref) and add it to the site's files."""
    root = Path(config.config_file_path).parent
    key = _fingerprint(root)
    if key not in _drawn:
        cache = root / ".cache" / "figures"
        cache.mkdir(parents=True, exist_ok=True)
        paths = []
        for name in FIGURES:
            for lang in LANGUAGES:
                path = cache / f"{name}.{lang}.svg"
                svg = render(name, lang)
                if not path.is_file() or path.read_bytes() != svg:
                    path.write_bytes(svg)
                paths.append(path)
        _drawn.clear()
        _drawn[key] = paths
    for path in _drawn[key]:
        files.append(File.generated(config, f"figures/{path.name}", abs_src_path=str(path)))
    return files
