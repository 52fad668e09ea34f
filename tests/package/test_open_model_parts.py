"""The parts open models add to the textbook layer, each against PyTorch written out by hand
(values and gradients), and together: every part at once with GQA, a cache (full and
rolling), the layer's own rule, is_causal and the tile kernel, equal to the full forward."""

import functools

import pytest
import torch
import torch.nn.functional as F

from attention_ref import (
    DecoderBlock,
    KVCache,
    MultiHeadAttention,
    RMSNorm,
    apply_rope,
    chunked_attention,
)
from attention_ref.block import Block
from attention_ref.feed_forward import FeedForward
from attention_ref.flex import softcap
from attention_ref.mask_mods import chunked, sliding_window
from attention_ref.open_models.describe import describe
from attention_ref.output_gate import OutputGate
from attention_ref.qk_parts import HeadLayerNorm, QKNorm, QueryTemperature, Rotary
from attention_ref.residual import Parallel, PostNorm, PreNorm, Sandwich

from ._compare import assert_same_values_and_grads

F64 = torch.float64


def _x(*shape):
    return torch.randn(*shape, dtype=F64, requires_grad=True)


@pytest.mark.parametrize("interleaved", [False, True])
def test_partial_rotary_rotates_the_first_features_only(interleaved):
    torch.manual_seed(0)
    q, at = _x(2, 3, 5, 8), torch.arange(4, 9)
    rq, _ = Rotary(500.0, interleaved=interleaved, rotary_dim=4)(q, q, at)
    expected = torch.cat(
        (apply_rope(q[..., :4], at, base=500.0, interleaved=interleaved), q[..., 4:]), -1
    )
    assert_same_values_and_grads(rq, expected, q)


def test_rotary_wider_than_the_head_is_an_error():
    with pytest.raises(ValueError, match="rotary_dim: 10 is more than the head width 8"):
        Rotary(rotary_dim=10)(torch.zeros(1, 1, 2, 8), torch.zeros(1, 1, 2, 8), torch.arange(2))


def test_qk_norm_per_head_and_over_the_whole_projection():
    torch.manual_seed(0)
    q, k = _x(2, 4, 3, 6), _x(2, 2, 3, 6)
    per_head = QKNorm(RMSNorm(6, eps=1e-6), RMSNorm(6, eps=1e-6)).double()
    nq, _ = per_head(q, k, torch.arange(3))
    assert_same_values_and_grads(nq, F.rms_norm(q, (6,), eps=1e-6), q)
    whole = QKNorm(RMSNorm(24, eps=1e-6), RMSNorm(12, eps=1e-6), whole=True).double()
    with torch.no_grad():
        whole.q_norm.weight.uniform_()
    nq, _ = whole(q, k, torch.arange(3))
    merged = q.transpose(1, 2).reshape(2, 3, 24)  # (N, L, H * D): all heads of a token
    expected = F.rms_norm(merged, (24,), whole.q_norm.weight, eps=1e-6)
    assert_same_values_and_grads(nq, expected.view(2, 3, 4, 6).transpose(1, 2), q)


def test_head_layer_norm_is_a_layer_norm_per_head_with_its_own_weight():
    torch.manual_seed(0)
    x = _x(2, 3, 4, 5)
    norm = HeadLayerNorm(3, 5, eps=1e-5).double()
    with torch.no_grad():
        norm.weight.uniform_()
    expected = torch.stack(
        [F.layer_norm(x[:, h], (5,), norm.weight[h], eps=1e-5) for h in range(3)], dim=1
    )
    assert_same_values_and_grads(norm(x), expected, x)
    with pytest.raises(ValueError, match=r"x: expected \(N, 3, L, 5\), got \(2, 4, 4, 5\)"):
        norm(torch.zeros(2, 4, 4, 5))


def test_query_temperature_is_llama4s_formula():
    q = _x(1, 2, 4, 3)
    at = torch.tensor([0, 5, 8190, 20000])
    tq, _ = QueryTemperature(floor_scale=8192, attn_scale=0.1)(q, q, at)
    factor = torch.log1p(torch.floor((at.double() + 1) / 8192)) * 0.1 + 1
    assert_same_values_and_grads(tq, q * factor[:, None], q)


def test_output_gate_multiplies_by_a_sigmoid_of_the_input():
    torch.manual_seed(0)
    gate = OutputGate(4, 6, bias=True).double()
    heads, x = _x(2, 3, 6), torch.randn(2, 3, 4, dtype=F64)
    assert_same_values_and_grads(gate(heads, x), heads * torch.sigmoid(gate.proj(x)), heads)


def _norms(n, width=8):
    torch.manual_seed(1)
    norms = [RMSNorm(width).double() for _ in range(n)]
    for norm in norms:
        torch.nn.init.uniform_(norm.weight)
    return norms


@pytest.mark.parametrize("wiring", ["pre", "post", "sandwich", "parallel1", "parallel2"])
def test_each_wiring_is_its_formula(wiring):
    torch.manual_seed(0)
    n = _norms(4)
    A = torch.nn.Linear(8, 8, dtype=F64)
    Fn = FeedForward(8, 16).double()
    x = _x(2, 3, 8)
    made = {
        "pre": (PreNorm(n[0], n[1], 0.5), lambda: (h := x + 0.5 * A(n[0](x))) + 0.5 * Fn(n[1](h))),
        "post": (PostNorm(n[0], n[1]), lambda: (h := x + n[0](A(x))) + n[1](Fn(h))),
        "sandwich": (
            Sandwich(*n),
            lambda: (h := x + n[1](A(n[0](x)))) + n[3](Fn(n[2](h))),
        ),
        "parallel1": (Parallel(n[0]), lambda: x + A(n[0](x)) + Fn(n[0](x))),
        "parallel2": (Parallel(n[0], n[1]), lambda: x + A(n[0](x)) + Fn(n[1](x))),
    }
    module, formula = made[wiring]
    assert_same_values_and_grads(module(x, A, Fn), formula(), x)


def test_a_block_of_parts_is_the_decoder_block():
    """Block(MultiHeadAttention, FeedForward, PreNorm) with DecoderBlock's weights is it."""
    torch.manual_seed(0)
    ref = DecoderBlock(16, 4, 24, num_kv_heads=2, rope_base=10000.0).double()
    attn = MultiHeadAttention(16, 4, num_kv_heads=2, bias=False, rope_base=10000.0).double()
    ffn = FeedForward(16, 24).double()
    norms = (RMSNorm(16, eps=1e-5).double(), RMSNorm(16, eps=1e-5).double())
    block = Block(attn, ffn, PreNorm(*norms))
    state = {
        k.replace("norm", "wiring.norm").replace("linear", "mlp.linear"): v
        for k, v in ref.state_dict().items()
    }
    block.load_state_dict(state)
    x = _x(2, 5, 16)
    assert_same_values_and_grads(block(x, is_causal=True), ref(x, is_causal=True), x)


def _everything(rule, kernel):
    """Every part at once: q/k norm before partial RoPE, a temperature, a gate, GQA, a scale,
    the layer's own rule, and (with the kernel) a soft cap."""
    torch.manual_seed(0)
    fn = (
        None
        if kernel is None
        else functools.partial(kernel, block_size=(2, 3), score_mod=softcap(3.0))
    )
    parts = [
        QKNorm(RMSNorm(8), RMSNorm(8)),
        Rotary(100.0, rotary_dim=4),
        QueryTemperature(floor_scale=2, attn_scale=0.5),
    ]
    module = MultiHeadAttention(
        16, 4, num_kv_heads=2, head_dim=8, scale=0.3, bias=False, qk_parts=parts,
        output_gate=OutputGate(16, 32), mask_mod=rule, attention_fn=fn,
    ).double()  # fmt: skip
    for p in module.parameters():
        torch.nn.init.normal_(p, std=0.5)
    return module


@pytest.mark.parametrize(
    "rule", [None, sliding_window(3), chunked(3)], ids=["full", "window", "chunks"]
)
@pytest.mark.parametrize("kernel", [None, chunked_attention], ids=["default", "tiles"])
@pytest.mark.parametrize("rolling", [None, 3], ids=["cache", "rolling"])
def test_every_part_with_a_cache_equals_the_full_forward(rule, kernel, rolling):
    if rolling is not None and rule is None:
        rule = sliding_window(rolling)  # a rolling cache only for a layer that slides that far
    module = _everything(rule, kernel)
    x = torch.randn(2, 8, 16, dtype=F64)
    full, _ = module(x, is_causal=True)
    cache = KVCache() if rolling is None else KVCache(window=rolling)
    outs, start = [], 0
    for n in (3, 1, 2, 1, 1):
        outs.append(module(x[:, start : start + n], is_causal=True, kv_cache=cache)[0])
        start += n
    torch.testing.assert_close(torch.cat(outs, 1), full, atol=1e-10, rtol=1e-10)


def test_every_part_has_the_gradients_of_the_written_out_layer():
    """The whole module in float64 against its formula written out with torch alone."""
    module = _everything(sliding_window(3), None)
    x = _x(2, 5, 16)
    qn, kn = module.qk_parts[0].q_norm, module.qk_parts[0].k_norm
    q = module.q_proj(x).view(2, 5, 4, 8).transpose(1, 2)
    k = module.k_proj(x).view(2, 5, 2, 8).transpose(1, 2)
    v = module.v_proj(x).view(2, 5, 2, 8).transpose(1, 2)
    q, k = F.rms_norm(q, (8,), qn.weight), F.rms_norm(k, (8,), kn.weight)
    at = torch.arange(5)
    q = torch.cat((apply_rope(q[..., :4], at, base=100.0), q[..., 4:]), -1)
    k = torch.cat((apply_rope(k[..., :4], at, base=100.0), k[..., 4:]), -1)
    q = q * (torch.log1p(torch.floor((at.double() + 1) / 2)) * 0.5 + 1)[:, None]
    i, j = torch.arange(5)[:, None], torch.arange(5)
    allowed = (j <= i) & (i - j < 3)
    heads = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=0.3, enable_gqa=True)
    merged = heads.transpose(1, 2).reshape(2, 5, 32) * torch.sigmoid(module.output_gate.proj(x))
    assert_same_values_and_grads(module(x, is_causal=True)[0], module.out_proj(merged), x)


def test_qk_norm_parts_are_named_in_to_torchs_error():
    module = MultiHeadAttention(8, 2, qk_parts=[QKNorm(RMSNorm(4), RMSNorm(4))])
    with pytest.raises(ValueError, match="qk_parts: expected 0 for nn.MultiheadAttention, got 1"):
        module.to_torch()


def test_describe_reads_the_parts_back():
    module = _everything(chunked(3), chunked_attention)
    row = describe(module)
    assert [p["part"] for p in row["qk_parts"]] == ["qk_norm", "rope", "temperature"]
    assert row["qk_parts"][1]["fraction"] == 0.5 and row["qk_parts"][1]["pairing"] == "half"
    assert row["rule"] == {"rule": "chunked", "size": 3}
    assert row["score_function"] == {"score": "softcap", "cap": 3.0}
    assert row["scale"] == 0.3 and row["output_gate"] and row["bias"] == ""
