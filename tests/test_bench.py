import io
import json

import pytest
import torch

from attention_ref import bench, bench_decode


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
    results["train"] = {
        "results": {
            name: {
                "n": sizes,
                "time_s": [t0 * (n / 512) ** 2 for n in sizes],
                "time_median_s": [t0 * (n / 512) ** 2 for n in sizes],
                "peak_mib": [m0 * (n / 512) ** (2 if name == "reference" else 1) for n in sizes],
            }
            for name, t0, m0 in [
                ("reference", 0.03, 40.0),
                ("chunked", 0.02, 3.0),
                ("sdpa", 0.01, 2.0),
            ]
        },
        "slopes": {
            "fit_sizes": sizes,
            "time": {"reference": 2.0, "chunked": 2.0, "sdpa": 2.0},
            "memory": {"reference": 2.0, "chunked": 1.0, "sdpa": 1.0},
        },
    }
    results["low_precision"] = {
        "config": {},
        "max_abs_error": {
            "bfloat16": {"chunked_attention": {"ours": 0.016, "torch": 0.016, "ratio": 1.0}},
            "float16": {"LayerNorm": {"ours": 0.004, "torch": 0.002, "ratio": 2.0}},
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
    assert targets["chunked_over_sdpa_train_time"] == {
        "value": 2.0,
        "target": "<= 1.5",
        "pass": False,
    }
    assert targets["chunked_over_sdpa_train_memory"]["value"] == 1.5
    assert targets["low_precision_worst_over_torch"] == {
        "value": 2.0,
        "target": "<= 1.5",
        "pass": False,
    }
    assert "PASS" in bench.summary(_results()) and "FAIL" in bench.summary(_results())


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize(
    ("plot", "lines"),
    [
        (bench.plot_time, 5),
        (bench.plot_memory, 5),
        (bench.plot_train_time, 3),
        (bench.plot_train_memory, 3),
    ],
)
def test_plots_draw_from_saved_results_alone(plot, lines, lang):
    fig = plot(json.loads(json.dumps(_results())), lang)
    texts = [t.get_text() for t in fig.texts]
    assert any("Test CPU" in t and "torch 2.x" in t for t in texts)  # the caption line
    ax = fig.axes[0]
    assert len(ax.get_lines()) == lines
    assert ("序列长度" in ax.get_xlabel()) == (lang == "zh")
    fig.savefig(io.BytesIO(), format="png")  # no missing-glyph warning (warnings are errors)


def test_training_plots_fail_loudly_on_results_without_training():
    results = _results()
    del results["train"]
    with pytest.raises(KeyError, match=r"no forward \+ backward measurements; rerun"):
        bench.plot_train_time(results)


def test_plot_rejects_an_unknown_language():
    with pytest.raises(ValueError, match=r"lang: expected one of \('en', 'zh'\), got 'fr'"):
        bench.plot_time(_results(), "fr")


def test_command_line_writes_json_and_plots(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "gemm_gflops", lambda device: 100.0)  # keep the test short
    table = {"config": {}, "max_abs_error": {"float16": {"x": {"ours": 1, "torch": 1, "ratio": 1}}}}
    monkeypatch.setattr(bench, "low_precision_errors", lambda: table)
    out, plots = tmp_path / "results", tmp_path / "plots"
    argv = ["--sizes", "32,64", "--repeat", "1", "--only", "reference,chunked,sdpa"]
    argv += ["--out", str(out), "--plots", str(plots), "--no-memory", "--no-decode"]
    assert bench.main(argv) == 0
    results = json.loads((out / "cpu.json").read_text())
    assert results["results"]["chunked"]["n"] == [32, 64]
    assert results["results"]["chunked"]["max_abs_diff_vs_sdpa"][0] < 1e-5
    assert results["targets"]["n"] == 64
    assert results["train"]["results"]["chunked"]["n"] == [32, 64]
    assert results["train"]["results"]["sdpa"]["time_s"][1] > 0
    assert results["targets"]["low_precision_worst_over_torch"]["pass"] is True
    assert (plots / "cpu-time.zh.svg").exists() and (plots / "cpu-memory.en.png").exists()
    assert (plots / "cpu-train-time.en.svg").exists()


def test_memory_is_measured_in_a_fresh_process():
    assert bench.measure_memory("chunked", 256, "cpu") > 0
    assert bench.measure_memory("chunked", 256, "cpu", train=True) > 0


def test_the_train_step_returns_the_gradients_of_query_key_and_value():
    q, k, v = bench._inputs(16, "cpu")
    grads = bench._train_step(bench.IMPLEMENTATIONS["chunked"][0], q, k, v)
    expected = bench._train_step(bench.IMPLEMENTATIONS["sdpa"][0], q, k, v)
    for ours, theirs in zip(grads, expected, strict=True):
        torch.testing.assert_close(ours, theirs)


def test_low_precision_table_shows_every_function_in_both_dtypes():
    from attention_ref import accuracy

    table = accuracy.low_precision_errors()["max_abs_error"]
    assert set(table) == {"bfloat16", "float16"}
    for rows in table.values():
        assert set(rows) == {
            "scaled_dot_product_attention",
            "chunked_attention",
            "sliding_window_attention",
            "linear_attention",
            "LayerNorm",
            "RMSNorm",
            "MultiHeadAttention",
            "TransformerEncoderLayer",
        }
        assert all(row["ratio"] <= 1.5 for row in rows.values())


def test_only_decode_adds_its_part_to_the_saved_results(tmp_path):
    out, plots = tmp_path / "results", tmp_path / "plots"
    out.mkdir()
    saved = _results()
    (out / "cpu.json").write_text(json.dumps(saved))
    argv = ["--only", "decode", "--sizes", "4,8", "--repeat", "1"]
    assert bench.main([*argv, "--out", str(out), "--plots", str(plots)]) == 0
    results = json.loads((out / "cpu.json").read_text())
    assert {k: v for k, v in results.items() if k != "decode"} == saved  # the rest unchanged
    decode = results["decode"]
    assert decode["lengths"] == [4, 8] and len(decode["cached_s"]) == 2
    assert min(decode["cached_s"] + decode["uncached_s"]) > 0
    assert set(decode["slopes"]) == {"cached", "uncached"}
    assert (plots / "cpu-decode.zh.svg").exists() and (plots / "cpu-decode.en.png").exists()
    for lang in ("en", "zh"):
        assert len(bench_decode.plot_decode(results, lang).axes[0].get_lines()) == 2


def test_decode_plot_and_results_fail_loudly_without_decoding():
    with pytest.raises(KeyError, match=r"decode: .*--only decode"):
        bench_decode.plot_decode(_results())
    with pytest.raises(KeyError, match=r"nox -s bench -- --only decode"):
        bench_decode.decode_results(_results())


def test_only_decode_needs_the_saved_results(tmp_path):
    with pytest.raises(SystemExit, match="run the full benchmark first"):
        bench.main(["--only", "decode", "--out", str(tmp_path)])
