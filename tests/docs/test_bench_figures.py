"""The measured figures (cost, decoding, today's models), drawn from the saved results.

The benchmark (benchmarks/, `python -m benchmarks`) writes docs/bench-results/cpu.json; the
figures (docs_hooks/plots/cost.py, decoding.py, todays_models.py) are drawn from that file alone.
"""

import copy
import io
import json
from pathlib import Path

import matplotlib
import pytest

from docs_hooks.hooks import figures
from docs_hooks.plots import cost, decoding, todays_models

RESULTS = json.loads(
    (Path(__file__).parents[2] / "docs" / "bench-results" / "cpu.json").read_text(encoding="utf-8")
)


@pytest.fixture(autouse=True, scope="module")
def site_style():
    """Draw as the site's build does: its Chinese font and its matplotlib settings."""
    figures.register_cjk_font()
    with matplotlib.rc_context(figures.STYLE):
        yield


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize(
    ("plot", "lines"),
    [
        (cost.plot_time, 5),
        (cost.plot_memory, 5),
        (cost.plot_train_time, 3),
        (cost.plot_train_memory, 3),
        (decoding.plot_decode, 2),
        (todays_models.plot_latent_decode, 4),
    ],
)
def test_plots_draw_from_saved_results_alone(plot, lines, lang):
    fig = plot(copy.deepcopy(RESULTS), lang)
    texts = [t.get_text() for t in fig.texts]
    assert any("torch 2." in t for t in texts)  # the caption line: machine and versions
    ax = fig.axes[0]
    assert len(ax.get_lines()) == lines
    assert any("\u4e00" <= c <= "\u9fff" for c in ax.get_xlabel()) == (lang == "zh")
    fig.savefig(io.BytesIO(), format="png")  # no missing-glyph warning (warnings are errors)


def test_plots_fail_loudly_on_results_without_the_part():
    results = copy.deepcopy(RESULTS)
    del results["train"], results["decode"]
    with pytest.raises(KeyError, match=r"no forward \+ backward measurements; .*--parts train"):
        cost.plot_train_time(results)
    with pytest.raises(KeyError, match=r"decode: .*python -m benchmarks --parts decode"):
        decoding.plot_decode(results)
    del results["latent_decode"]
    with pytest.raises(KeyError, match=r"latent_decode: .*--parts latent-decode"):
        todays_models.plot_latent_decode(results)


def test_plot_rejects_an_unknown_language():
    with pytest.raises(ValueError, match=r"lang: expected one of \('en', 'zh'\), got 'fr'"):
        cost.plot_time(RESULTS, "fr")
    with pytest.raises(ValueError, match=r"lang: expected one of \('en', 'zh'\), got 'fr'"):
        decoding.plot_decode(RESULTS, "fr")
    with pytest.raises(ValueError, match=r"lang: expected one of \('en', 'zh'\), got 'fr'"):
        todays_models.plot_latent_decode(RESULTS, "fr")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_block_sparse_plot_draws_each_mask_against_its_target(lang):
    fig = cost.plot_block_sparse(copy.deepcopy(RESULTS), lang)
    assert len(fig.axes) == 2  # forward, forward + backward
    part = RESULTS["block_sparse"]
    for ax, phase in zip(fig.axes, ("forward", "train"), strict=True):
        heights = [round(bar.get_height(), 6) for bar in ax.patches]
        ours = [round(part["ratios"][phase][name], 6) for name in ("causal", "window", "documents")]
        assert heights[:3] == ours  # chunked_attention's bars, then SDPA's
        assert len(ax.collections) == 3  # one dashed target per mask
    assert any("torch 2." in t.get_text() for t in fig.texts)
    fig.savefig(io.BytesIO(), format="png")
    results = copy.deepcopy(RESULTS)
    del results["block_sparse"]
    with pytest.raises(KeyError, match=r"--parts block-sparse"):
        cost.plot_block_sparse(results, lang)
