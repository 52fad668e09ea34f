"""The FlexAttention-on-CPU part's logic at a tiny size, not its timings."""

import pytest
import torch

from benchmarks import flex_cpu, report

from ._run import run


@pytest.mark.filterwarnings(f"ignore:{flex_cpu.EAGER}:UserWarning")  # "compiled" runs eagerly
def test_flex_cpu_times_every_path_and_saves_the_backward_error(monkeypatch):
    monkeypatch.setattr(flex_cpu, "compiled_flex", lambda: flex_cpu.flex_attention)  # eager
    config = {**flex_cpu.FLEX_CONFIG, "heads": 1, "n": 16, "head_dim": 8}
    result = flex_cpu.run_flex_cpu(repeat=1, config=config)
    assert result["config"]["n"] == 16 and result["config"]["mask"] == "causal"
    assert set(result["steady_s"]) == {"compiled", "eager", "reference"}
    assert min(result["steady_s"].values()) > 0 and result["first_call_s"] > 0
    assert result["max_abs_diff"] is None or result["max_abs_diff"] < 1e-5  # None: exactly 0
    if torch.__version__.startswith("2.13"):  # the version the page describes
        assert result["backward"].startswith("NotImplementedError: FlexAttention does not")


def test_inputs_are_seeded():
    config = {**flex_cpu.FLEX_CONFIG, "n": 4, "head_dim": 2}
    first, second = flex_cpu.inputs(config), flex_cpu.inputs(config)
    assert first[0].shape == (1, 4, 4, 2)
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))


def test_the_part_merges_alone_and_is_summarized(tmp_path, monkeypatch):
    measured = {
        "config": {"n": 1024},
        "first_call_s": 9.5,
        "steady_s": {"compiled": 0.01, "eager": 0.2, "reference": 0.05},
        "backward": None,
    }
    monkeypatch.setattr(flex_cpu, "run_flex_cpu", lambda repeat: measured)
    results = run(tmp_path, {"elsewhere": {"kept": True}}, "--parts", "flex-cpu")
    assert results == {"elsewhere": {"kept": True}, "flex_cpu": measured}
    text = report.summary(results)
    assert "first compiled call: 9.5 s" in text and "backward: runs" in text
