"""The block-sparse part's logic at tiny sizes: what it times is right, the targets, the merge."""

import pytest
import torch

from attention_ref.mask_mods import flex_reference
from benchmarks import attention, block_sparse

from ._run import run_alone


@pytest.fixture
def small_tiles(monkeypatch):
    """Tiles of 32 and documents of 64 tokens, so that n = 256 has tiles to skip."""
    monkeypatch.setattr(block_sparse, "BLOCK_SIZE", (32, 32))
    monkeypatch.setattr(block_sparse, "DOCUMENT", 64)
    monkeypatch.setattr(block_sparse, "WINDOW", 32)


def test_every_variant_computes_its_mask(small_tiles):
    n = 256
    q, k, v = attention.inputs(n, "cpu")
    fns = block_sparse.variants(n, q)
    assert tuple(fns) == block_sparse.VARIANTS
    assert set(block_sparse.variants(n, q, ("sdpa_window",))) == {"sdpa_window"}
    for name in block_sparse.MASKS:
        expected = flex_reference(q, k, v, mask_mod=block_sparse.mask_mod(name, n))
        torch.testing.assert_close(fns[name](q, k, v), expected, atol=1e-5, rtol=1e-5)
        if name in block_sparse.DENSE:
            torch.testing.assert_close(fns[f"sdpa_{name}"](q, k, v), expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fns["sdpa"](q, k, v), fns["all"](q, k, v), atol=1e-5, rtol=1e-5)


def test_plans_count_the_skipped_tiles(small_tiles):
    found = block_sparse.plans(256)  # 8 × 8 tiles of 32
    assert {name: row["skipped"] for name, row in found.items()} == {
        "all": 0,
        "causal": 28,  # above the diagonal
        "window": 64 - 15,  # the diagonal and the one below (window 32 = one tile)
        "documents": 64 - 4 * 3,  # 4 documents of 2 × 2 tiles, 3 of them causal
    }
    assert all(row["tiles"] == 64 and row["plan_s"] > 0 for row in found.values())


def _part(forward, train, peaks):
    return {
        phase: {"time_s": times, "peak_mib": peaks}
        for phase, times in (("forward", forward), ("train", train))
    }


def test_targets_compare_the_ratios():
    times = {"all": 1.0, "causal": 0.5, "window": 0.25, "documents": 0.1}
    times |= {"sdpa_window": 0.2, "sdpa_documents": 0.5, "sdpa": 0.5}
    peaks = {name: 10.0 for name in times} | {"window": 40.0}
    targets = block_sparse.targets(_part(times, times | {"causal": 0.7}, peaks))
    assert targets["forward_causal_over_all"] == {"value": 0.5, "target": "<= 0.65", "pass": True}
    assert targets["train_causal_over_all"]["pass"] is False
    assert targets["forward_window_over_all"] == {"value": 0.25, "target": "<= 0.2", "pass": False}
    assert targets["forward_window_over_sdpa_dense"] == {
        "value": 1.25,
        "target": "< 1",
        "pass": False,
    }
    assert targets["forward_documents_over_sdpa_dense"]["pass"] is True
    assert targets["forward_memory_over_sdpa"] == {"value": 4.0, "target": "<= 3", "pass": False}
    missing = block_sparse.targets(_part(times, times, {name: None for name in times}))
    assert missing["train_memory_over_sdpa"]["pass"] is None


def test_the_part_merges_alone(tmp_path, small_tiles):
    saved = {"device": "cpu", "another_part": {"lengths": [1]}}
    argv = ["--parts", "block-sparse", "--sizes", "64,128", "--repeat", "1", "--no-memory"]
    part = run_alone(tmp_path, saved, "block_sparse", *argv)["block_sparse"]
    assert part["config"]["n"] == 128 and part["config"]["block_size"] == [32, 32]
    assert set(part["forward"]["time_s"]) == set(part["train"]["time_s"])
    assert min(part["train"]["time_s"].values()) > 0
    assert set(part["ratios"]["forward"]) == {"causal", "window", "documents"}
    assert part["targets"]["forward_memory_over_sdpa"]["pass"] is None  # not measured
    assert part["masks"]["causal"]["skipped"] == 6  # 4 × 4 tiles of 32


def test_memory_is_measured_in_a_fresh_process():
    assert block_sparse.measure_memory("window", 256) > 0
    assert block_sparse.measure_memory("sdpa_documents", 256, train=True) > 0
