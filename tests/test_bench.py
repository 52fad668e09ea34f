import io
import json

import pytest

from attention_ref import bench


def _results(device="cpu"):
    """A small results dict shaped like docs/bench-results/<device>.json."""
    sizes = [512, 1024, 2048]
    rows = {}
    for name, p, t0, m0 in [
        ("reference", 2, 0.01, 16.0),
        ("chunked", 2, 0.005, 1.0),
        ("sdpa", 2, 0.004, 0.5),
        ("local", 1, 0.003, 1.0),
        ("linear", 1, 0.001, 0.8),
    ]:
        rows[name] = {
            "n": sizes,
            "time_s": [t0 * (n / 512) ** p for n in sizes],
            "time_median_s": [t0 * (n / 512) ** p for n in sizes],
            "gflops": [60.0] * 3,
            "peak_mib": [m0 * (n / 512) ** (2 if name == "reference" else 1) for n in sizes],
            "max_abs_diff_vs_sdpa": [1e-7] * 3,
        }
    results = {
        "device": device,
        "date": "2025-01-01 00:00 UTC",
        "machine": {"cpu": "Test CPU", "cores": 2, "torch_threads": 2, "os": "Linux"},
        "versions": {"python": "3.11", "torch": "2.x", "numpy": "2.x", "attention_ref": "0.1"},
        "config": {"batch": 1, "heads": 4, "head_dim": 64, "dtype": "float32", "sizes": sizes},
        "gemm_gflops": 150.0,
        "results": rows,
        "slopes": {
            "fit_sizes": sizes,
            "time": {name: 2.0 for name in rows},
            "memory": {name: 1.0 for name in rows},
            "flops_formula": {name: 2.0 for name in rows},
        },
    }
    results["targets"] = bench.targets(results)
    return results


def test_slope_of_a_power_law_is_its_exponent():
    assert bench._fit_slope([512, 1024, 4096], [n**2 * 3.0 for n in (512, 1024, 4096)]) == (
        pytest.approx(2.0)
    )
    assert bench._fit_slope([512, 1024], [1.0, None]) is None


def test_targets_compare_the_ratios_at_the_largest_n():
    targets = _results()["targets"]
    assert targets["n"] == 2048
    assert targets["chunked_over_sdpa_time"]["value"] == 1.25
    assert targets["chunked_over_sdpa_time"]["pass"] is True
    assert targets["chunked_fraction_of_gemm"] == {"value": 0.4, "target": ">= 0.6", "pass": False}
    assert targets["chunked_over_sdpa_memory"]["pass"] is True  # 4 MiB vs 2 MiB
    assert targets["reference_over_chunked_memory"]["value"] == 64.0  # 256 MiB vs 4 MiB
    assert "PASS" in bench.summary(_results()) and "FAIL" in bench.summary(_results())


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("plot", [bench.plot_time, bench.plot_memory])
def test_plots_draw_from_saved_results_alone(plot, lang):
    fig = plot(json.loads(json.dumps(_results())), lang)
    texts = [t.get_text() for t in fig.texts]
    assert any("Test CPU" in t and "torch 2.x" in t for t in texts)  # the caption line
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 5
    assert ("序列长度" in ax.get_xlabel()) == (lang == "zh")
    fig.savefig(io.BytesIO(), format="png")  # no missing-glyph warning (warnings are errors)


def test_plot_rejects_an_unknown_language():
    with pytest.raises(ValueError, match=r"lang: expected one of \('en', 'zh'\), got 'fr'"):
        bench.plot_time(_results(), "fr")


def test_command_line_writes_json_and_plots(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "gemm_gflops", lambda device: 100.0)  # keep the test short
    out, plots = tmp_path / "results", tmp_path / "plots"
    argv = ["--sizes", "32,64", "--repeat", "1", "--only", "reference,chunked,sdpa"]
    argv += ["--out", str(out), "--plots", str(plots), "--no-memory"]
    assert bench.main(argv) == 0
    results = json.loads((out / "cpu.json").read_text())
    assert results["results"]["chunked"]["n"] == [32, 64]
    assert results["results"]["chunked"]["max_abs_diff_vs_sdpa"][0] < 1e-5
    assert results["targets"]["n"] == 64
    assert (plots / "cpu-time.zh.svg").exists() and (plots / "cpu-memory.en.png").exists()


def test_memory_is_measured_in_a_fresh_process():
    assert bench.measure_memory("chunked", 256, "cpu") > 0
