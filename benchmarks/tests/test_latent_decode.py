"""The latent-decode benchmark's logic, not its timings: the step, the cache, the saved part."""

import pytest
import torch

from attention_ref import kv_cache_numel
from benchmarks import latent_decode, report

from ._run import run_alone

TINY = {
    "d_model": 32,
    "num_heads": 4,
    "head_dim": 8,
    "gqa_kv_heads": 2,
    "kv_lora_rank": 8,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 8,
}


@pytest.mark.parametrize("name", list(latent_decode.DESIGNS))
def test_a_step_with_the_prefilled_cache_equals_the_full_forward(name):
    _, step, kind = latent_decode.layers(TINY)[name]
    x = torch.randn(1, 7, TINY["d_model"], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        cache = latent_decode.prefill(step, x[:, :6], chunk=4, kind=kind)  # 4 and 2 tokens
        held = cache.held
        first = step(x[:, 6:], latent_decode.copy.copy(cache))
        again = step(x[:, 6:], latent_decode.copy.copy(cache))  # as each timed call does
        full = step(x, None)
    assert len(cache) == 6 and cache.tokens_seen == 6  # the copies left it at 6 tokens
    assert cache.held is held  # the timed calls' copies appended to their own
    torch.testing.assert_close(first[:, -1], full[:, -1], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(again, first)


def test_the_cache_holds_what_kv_cache_numel_counts():
    designs = latent_decode.layers(TINY)
    x = torch.randn(1, 5, TINY["d_model"])
    expected = {
        "mha": {"kv_heads": TINY["num_heads"], "head_dim": TINY["head_dim"]},
        "gqa": {"kv_heads": TINY["gqa_kv_heads"], "head_dim": TINY["head_dim"]},
        "mla_expanded": {"kv_lora_rank": 8, "qk_rope_head_dim": 4},
        "mla_absorbed": {"kv_lora_rank": 8, "qk_rope_head_dim": 4},
    }
    with torch.no_grad():
        for name, (_, step, kind) in designs.items():
            cache = latent_decode.prefill(step, x, kind=kind)
            numel = kv_cache_numel(layers=1, batch=1, tokens=5, **expected[name])
            assert latent_decode.cache_bytes(cache) == numel * 4  # float32


def test_latent_decode_part_alone_leaves_the_rest_unchanged(tmp_path, monkeypatch):
    monkeypatch.setattr(latent_decode, "LATENT_DECODE_CONFIG", TINY)
    saved = {"device": "cpu", "date": "2025-01-01 00:00 UTC", "other_part": {"kept": True}}
    argv = ["--parts", "latent-decode", "--sizes", "4,8", "--repeat", "1"]
    results = run_alone(tmp_path, saved, "latent_decode", *argv)
    part = results["latent_decode"]
    assert part["lengths"] == [4, 8]
    assert part["config"] == {
        **TINY,
        "batch": 1,
        "layers": 1,
        "dtype": "float32",
        "threads": torch.get_num_threads(),
        "repeat": 1,
    }
    assert list(part["designs"]) == ["mha", "gqa", "mla_expanded", "mla_absorbed"]
    per_token = {name: row["cache_numbers_per_token"] for name, row in part["designs"].items()}
    assert per_token == {"mha": 64, "gqa": 32, "mla_expanded": 12, "mla_absorbed": 12}
    for row in part["designs"].values():
        assert set(row) == {
            "label",
            "cache_numbers_per_token",
            "cache_bytes_per_token",
            "cache_mib",
            "time_s",
            "parameters",
        }
        assert row["cache_bytes_per_token"] == 4 * row["cache_numbers_per_token"]
        assert len(row["time_s"]) == 2 and min(row["time_s"]) > 0
        # the cache at t - 1 = 3 and 7 tokens
        assert row["cache_mib"] == pytest.approx(
            [3 * row["cache_bytes_per_token"] / 2**20, 7 * row["cache_bytes_per_token"] / 2**20],
            rel=1e-3,
        )
    assert set(part["slopes"]) == set(part["designs"])
    assert {"protocol", "machine", "versions", "date"} <= set(part)
    assert "MLA, absorbed" in report.summary(results)


def test_lengths_below_two_are_refused():
    with pytest.raises(ValueError, match=r"lengths: expected t >= 2"):
        latent_decode.run_latent_decode([1, 4], 1, TINY)
