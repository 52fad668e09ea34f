"""The benchmarks' logic, not their timings: slopes, targets, the report, the command line."""

import pytest
import torch

from attention_ref import KVCache
from benchmarks import attention, cli, decode, low_precision, protocol, report

from ._run import run, run_alone


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
            "bfloat16": {
                "chunked_attention": {"ours": 0.016, "torch": 0.016, "naive": 0.2, "ratio": 1.0}
            },
            "float16": {"LayerNorm": {"ours": 0.004, "torch": 0.002, "naive": 0.01, "ratio": 2.0}},
        },
    }
    results["targets"] = attention.targets(results)
    return results


def test_slope_of_a_power_law_is_its_exponent():
    ns = (512, 1024, 4096)
    assert protocol.fit_slope(ns, [n**2 * 3.0 for n in ns]) == pytest.approx(2.0)
    assert protocol.fit_slope([512, 1024], [1.0, None]) is None


def test_round_robin_times_every_function_each_round():
    calls = {"a": 0, "b": 0}

    def count(name):
        calls[name] += 1

    times = protocol.round_robin({n: (lambda n=n: count(n)) for n in calls}, 3, "cpu")
    assert {name: len(t) for name, t in times.items()} == {"a": 3, "b": 3}
    assert min(calls.values()) >= 4  # the warm-up, then at least one call per round
    assert protocol.calls_per_round(1.0) == 1 and protocol.calls_per_round(1e-9) == 1000


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
        "target": f"<= {low_precision.BOUND:g}",
        "pass": False,
    }
    text = report.summary(_results())
    assert "PASS" in text and "FAIL" in text and "0.2" in text  # the naive column


def test_command_line_merges_the_parts_it_measures(tmp_path, monkeypatch):
    monkeypatch.setattr(attention, "gemm_gflops", lambda device: 100.0)  # keep the test short
    saved = _results()
    argv = ["--parts", "forward,train", "--sizes", "32,64", "--repeat", "1"]
    argv += ["--implementations", "reference,chunked,sdpa", "--no-memory"]
    results = run(tmp_path, saved, *argv)
    assert results["results"]["chunked"]["n"] == [32, 64]
    assert results["results"]["chunked"]["max_abs_diff_vs_sdpa"][0] < 1e-5
    assert results["targets"]["n"] == 64
    assert results["train"]["results"]["chunked"]["n"] == [32, 64]
    assert results["train"]["results"]["sdpa"]["time_s"][1] > 0
    assert results["low_precision"] == saved["low_precision"]  # not measured: unchanged


def test_decode_part_alone_leaves_the_rest_unchanged(tmp_path):
    argv = ["--parts", "decode", "--sizes", "4,8", "--repeat", "1"]
    measured = run_alone(tmp_path, _results(), "decode", *argv)["decode"]
    assert measured["lengths"] == [4, 8] and len(measured["cached_s"]) == 2
    assert min(measured["cached_s"] + measured["uncached_s"]) > 0
    assert set(measured["slopes"]) == {"cached", "uncached"}


def test_cached_step_equals_the_full_forward():
    config = {"layers": 2, "d_model": 16, "nhead": 2, "dim_feedforward": 32}
    layers = decode.model(config)
    x = torch.randn(1, 6, 16, generator=torch.Generator().manual_seed(0))
    caches = [KVCache() for _ in layers]
    with torch.no_grad():
        decode.forward(layers, x[:, :5], caches)
        step = decode.forward(layers, x[:, 5:], caches)
        full = decode.forward(layers, x)
    torch.testing.assert_close(step[:, -1], full[:, -1], atol=1e-5, rtol=1e-5)


def test_bad_options_are_refused(capsys):
    for argv in (["--parts", "timing"], ["--implementations", "flash"], ["--sizes", "0"]):
        with pytest.raises(SystemExit):
            cli.main(argv)
    assert "--parts: unknown ['timing']" in capsys.readouterr().err


def test_memory_is_measured_in_a_fresh_process():
    assert attention.measure_memory("chunked", 256, "cpu") > 0
    assert attention.measure_memory("chunked", 256, "cpu", train=True) > 0


def test_the_train_step_returns_the_gradients_of_query_key_and_value():
    q, k, v = attention.inputs(16, "cpu")
    grads = attention.train_step(attention.IMPLEMENTATIONS["chunked"][0], q, k, v)
    expected = attention.train_step(attention.IMPLEMENTATIONS["sdpa"][0], q, k, v)
    for ours, theirs in zip(grads, expected, strict=True):
        torch.testing.assert_close(ours, theirs)
