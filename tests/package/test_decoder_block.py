"""DecoderBlock: the pre-norm decoder-only block (Llama, GPT-2), written out by hand and
against PyTorch's parts; cached decoding equals the causal forward."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attention_ref import DecoderBlock, KVCache, apply_rope, kv_cache_numel

from ._compare import ACTIVATIONS, assert_close_scaled, assert_same_values_and_grads

GPT2 = {"activation": "gelu_tanh", "bias": True, "norm": "layernorm", "ffn": "mlp"}


def test_llama_block():
    """RMSNorm, SwiGLU, GQA, RoPE, no biases, Pre-LN: a Llama block, written out by hand."""
    torch.manual_seed(0)
    block = DecoderBlock(16, 4, 24, num_kv_heads=2, head_dim=6, rope_base=10000.0).double()
    assert sum(p.numel() for p in block.parameters()) == (
        16 * 24 + 16 * 12 * 2 + 24 * 16  # q_proj, k_proj and v_proj, out_proj
        + 3 * 16 * 24  # gate, up, down
        + 2 * 16  # two RMSNorm weights
    )  # fmt: skip
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    attn = block.self_attn
    h = block.norm1(x)
    q = attn.q_proj(h).view(2, 5, 4, 6).transpose(1, 2)
    k = attn.k_proj(h).view(2, 5, 2, 6).transpose(1, 2)
    v = attn.v_proj(h).view(2, 5, 2, 6).transpose(1, 2)
    q, k = apply_rope(q), apply_rope(k)
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    x1 = x + attn.out_proj(heads.transpose(1, 2).reshape(2, 5, 24))
    h = block.norm2(x1)
    ffn = block.linear2(F.silu(block.linear1(h)) * block.linear3(h))
    assert_close_scaled(block(x, is_causal=True), x1 + ffn)


def test_gpt2_block():
    """LayerNorm with biases, a tanh-GELU MLP: GPT-2's block, against PyTorch's parts."""
    torch.manual_seed(0)
    block = DecoderBlock(8, 2, 32, **GPT2).double()
    assert block.linear3 is None
    ln1, ln2 = nn.LayerNorm(8, dtype=torch.float64), nn.LayerNorm(8, dtype=torch.float64)
    with torch.no_grad():
        for ours, theirs in ((block.norm1, ln1), (block.norm2, ln2)):
            ours.weight.uniform_()
            ours.bias.uniform_()
            theirs.load_state_dict(ours.state_dict())
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    x1 = x + block.self_attn(ln1(x), is_causal=True)[0]
    h = ln2(x1)
    expected = x1 + block.linear2(F.gelu(block.linear1(h), approximate="tanh"))
    assert_close_scaled(block(x, is_causal=True), expected)


def test_state_dict_keys_are_pytorchs_and_metas():
    keys = set(DecoderBlock(8, 2, 16).state_dict())
    assert keys == {
        "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
        "self_attn.out_proj.weight", "linear1.weight", "linear2.weight", "linear3.weight",
        "norm1.weight", "norm2.weight",
    }  # fmt: skip
    gpt2 = set(DecoderBlock(8, 2, 16, **GPT2).state_dict())
    torch_layer = set(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).state_dict())
    assert {k for k in gpt2 if not k.startswith("self_attn")} == {
        k for k in torch_layer if not k.startswith("self_attn")
    }


@pytest.mark.parametrize(("name", "reference"), ACTIVATIONS)
@pytest.mark.parametrize("ffn", ["mlp", "swiglu"])
def test_activations_and_feed_forward(name, reference, ffn):
    torch.manual_seed(0)
    block = DecoderBlock(8, 2, 12, activation=name, ffn=ffn).double().eval()
    with torch.no_grad():  # the attention sub-layer adds 0: only the FFN is left
        block.self_attn.out_proj.weight.zero_()
    x = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
    out = block(x) - x  # FFN(norm2(x))
    h = block.norm2(x)
    hidden = reference(block.linear1(h))
    if ffn == "swiglu":  # gate linear1, up linear3, down linear2
        hidden = hidden * block.linear3(h)
    assert_same_values_and_grads(out, block.linear2(hidden), x)


def test_rmsnorm_is_torchs_rmsnorm():
    torch.manual_seed(0)
    block = DecoderBlock(8, 2, 12, layer_norm_eps=1e-6).double()
    theirs = nn.RMSNorm(8, eps=1e-6, dtype=torch.float64)
    with torch.no_grad():
        block.norm1.weight.uniform_()
        theirs.weight.copy_(block.norm1.weight)
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    assert_close_scaled(block.norm1(x), theirs(x))
    assert not hasattr(block.norm1, "bias") or block.norm1.bias is None


@pytest.mark.parametrize("config", ["gpt2", "llama"])
def test_cached_stack_equals_causal_forward(config):
    torch.manual_seed(0)
    options = GPT2 if config == "gpt2" else {"num_kv_heads": 2, "rope_base": 10000.0}
    blocks = [DecoderBlock(16, 4, 24, **options).double() for _ in range(3)]
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    full = x
    for block in blocks:
        full = block(full, is_causal=True)
    caches = [KVCache() for _ in blocks]
    pieces = []
    for rows in [slice(0, 4)] + [slice(i, i + 1) for i in range(4, 9)]:
        t = x[:, rows]
        for block, cache in zip(blocks, caches, strict=True):
            t = block(t, is_causal=True, kv_cache=cache)
        pieces.append(t)
    assert_close_scaled(torch.cat(pieces, dim=1), full)
    # 2 · layers · N · H_kv · S · D numbers
    stored = sum(c.key.numel() + c.value.numel() for c in caches)
    kv_heads = options.get("num_kv_heads", 4)
    assert stored == kv_cache_numel(layers=3, batch=2, kv_heads=kv_heads, tokens=9, head_dim=4)


def test_bad_arguments():
    with pytest.raises(ValueError, match="norm: expected one of"):
        DecoderBlock(8, 2, norm="batchnorm")
    with pytest.raises(ValueError, match="ffn: expected one of"):
        DecoderBlock(8, 2, ffn="geglu")
    with pytest.raises(ValueError, match="activation: expected one of"):
        DecoderBlock(8, 2, activation="swish")
    with pytest.raises(ValueError, match=r"dropout: expected a probability"):
        DecoderBlock(8, 2, dropout=1.0)
