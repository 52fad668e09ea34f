"""The ``apis`` part's logic: every form is the same layer, and the part merges alone."""

import pytest
import torch

from benchmarks import apis, report

from ._run import run_alone

TINY = {"batch": 2, "embed_dim": 16, "num_heads": 2}


@pytest.mark.parametrize("n", [5, 8])
def test_every_form_computes_the_same_layer(n):
    mha = apis.layer(TINY)
    x = apis.inputs(n, TINY)
    with torch.no_grad():
        exact = mha(x, is_causal=True)[0]
        for name, (_, build) in apis.FORMS.items():
            out = build(mha, n)(x)
            torch.testing.assert_close(out, exact, msg=lambda m, name=name: f"{name}: {m}")


def test_the_differentiable_forms_have_the_same_gradients():
    mha = apis.layer(TINY)
    x = apis.inputs(6, TINY).requires_grad_()
    weights = list(mha.parameters())  # W^Q, W^K, W^V, W^O
    probe = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(2))
    expected = torch.autograd.grad((mha(x, is_causal=True)[0] * probe).sum(), [x, *weights])
    for name in apis.DIFFERENTIABLE:
        form = apis.FORMS[name][1](mha, 6)
        leaves = [x] if name == "torch_mha" else [x, *weights]  # to_torch copies the weights
        grads = torch.autograd.grad((form(x) * probe).sum(), leaves)
        for ours, theirs in zip(grads, expected, strict=False):
            torch.testing.assert_close(ours, theirs, msg=lambda m, name=name: f"{name}: {m}")
    assert set(apis.FORMS) - set(apis.DIFFERENTIABLE) == {"flex"}


def test_flex_attention_has_no_backward_on_a_cpu():
    """torch 2.13 refuses it; when a release allows it, the page and DIFFERENTIABLE change."""
    mha = apis.layer(TINY)
    x = apis.inputs(4, TINY).requires_grad_()
    with pytest.raises(NotImplementedError, match="does not support backward on CPU"):
        apis.FORMS["flex"][1](mha, 4)(x)


def test_the_apis_part_merges_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(apis, "APIS_CONFIG", TINY)
    saved = {"device": "cpu", "other_part": {"kept": True}}
    argv = ["--parts", "apis", "--sizes", "8,16", "--repeat", "1", "--no-memory"]
    results = run_alone(tmp_path, saved, "apis", *argv)
    part = results["apis"]
    assert part["sizes"] == [8, 16] and list(part["results"]) == list(apis.FORMS)
    for row in part["results"].values():
        assert len(row["time_s"]) == 2 and min(row["time_s"]) > 0
        assert row["peak_mib"] == [None, None]
        assert max(d or 0.0 for d in row["max_abs_diff"]) < 1e-5
    assert part["config"]["embed_dim"] == 16 and part["config"]["mask"] == "causal"
    assert "fused QKV + SDPA" in report.summary(results)


def test_memory_is_measured_in_a_fresh_process():
    assert apis.measure_memory("matmul", 256, TINY) > 0
