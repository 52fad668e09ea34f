"""One small call for each object a page shows, run on the page's copy and on attention_ref.

Each ``case_<name>(ns)`` calls the object ``<name>`` found in the namespace ``ns`` (the copy's
globals, or attention_ref's module globals) on a small seeded input and returns tensors or
plain values to compare. This file imports only torch: it also runs where only torch and numpy
are installed. Modules are given the same weights on both sides through ``torch.manual_seed``.
"""

from __future__ import annotations

import math

import numpy as np
import torch


def _qkv(*shape_q: int, s: int = 5, ev: int | None = None, dtype=torch.float64):
    g = torch.Generator().manual_seed(0)
    *batch, length, e = shape_q
    q = torch.randn(*batch, length, e, generator=g, dtype=dtype)
    k = torch.randn(*batch, s, e, generator=g, dtype=dtype)
    v = torch.randn(*batch, s, ev or e, generator=g, dtype=dtype)
    return q, k, v


def case_attention_weights(ns):
    q, k, _ = _qkv(2, 4, 3)
    keep = torch.tensor([True, True, False, True, False])
    return ns["attention_weights"](q, k), ns["attention_weights"](q, k, keep, scale=0.3)


def case_scaled_dot_product_attention(ns):
    q, k, v = _qkv(2, 2, 4, 3, ev=2)
    sdpa = ns["scaled_dot_product_attention"]
    if "np" in ns:  # the NumPy reference
        return torch.from_numpy(sdpa(q.numpy(), k.numpy(), v.numpy(), is_causal=True))
    return sdpa(q, k, v), sdpa(q, k, v, is_causal=True)


def case_plain_attention(ns):
    q, k, v = _qkv(2, 4, 3)
    return ns["plain_attention"](q, k, v)


def case_softmax(ns):
    x = torch.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]], dtype=torch.float64)
    if "np" in ns:  # the NumPy reference
        return torch.from_numpy(ns["softmax"](x.numpy()))
    return ns["softmax"](x), ns["softmax"](x, dim=0)


def case_chunked_attention(ns):
    q, k, v = _qkv(1, 2, 9, 4, s=11)
    return ns["chunked_attention"](q, k, v, is_causal=True, block_size=(4, 3))


def _state(ns):
    g = torch.Generator().manual_seed(1)
    m = torch.full((2, 3, 1), float("-inf"), dtype=torch.float64)
    l, acc = torch.zeros(2, 3, 1, dtype=torch.float64), torch.zeros(2, 3, 4, dtype=torch.float64)
    scores = torch.randn(2, 3, 5, generator=g, dtype=torch.float64)
    value = torch.randn(2, 5, 4, generator=g, dtype=torch.float64)
    return (m, l, acc), scores, value


def case__online_softmax_step_(ns):
    return ns["_online_softmax_step_"](*_state(ns))


def _blocked(ns, is_causal: bool):
    q, k, v = _qkv(2, 7, 4, s=9)
    mask = None if is_causal else torch.rand(7, 9, generator=torch.Generator().manual_seed(2)) > 0.3
    return q, k, v, mask, ns["_Tiling"](torch.Size([2]), is_causal, 0.5, 3, 4)


def case__forward(ns):
    return [ns["_forward"](*_blocked(ns, c)) for c in (False, True)]


def case__backward(ns):
    results = []
    for is_causal in (False, True):
        q, k, v, mask, tiling = _blocked(ns, is_causal)
        keep = torch.ones(7, 9, dtype=torch.bool).tril() if is_causal else mask
        scores = (q @ k.transpose(1, 2) * 0.5).masked_fill(~keep, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        lse = torch.logsumexp(scores, dim=-1, keepdim=True) / math.log(2)  # base 2
        grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(3), dtype=out.dtype)
        results.append(ns["_backward"](grad, (q, k, v, mask, out, lse), tiling, False))
    return results


def case__FlashAttention(ns):
    q, k, v, mask, tiling = _blocked(ns, False)
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    out = ns["_FlashAttention"].apply(q, k, v, mask, tiling)
    return out.detach(), torch.autograd.grad(out.sum(), (q, k, v))


def case_DEFAULT_BLOCK_SIZE(ns):
    return ns["DEFAULT_BLOCK_SIZE"]


def case_attention_flops(ns):
    f = ns["attention_flops"]
    return f(128, d_k=64), f(64, 96, d_k=32, heads=4, is_causal=True), f(512, d_k=64, kind="linear")


def case_attention_memory(ns):
    f = ns["attention_memory"]
    return f(128, d_k=64), f(256, d_k=64, kind="local", window=16)


def case_sliding_window_attention(ns):
    q, k, v = _qkv(1, 7, 4, s=7)
    return ns["sliding_window_attention"](q, k, v, window=3, is_causal=True, block_size=2)


def case_linear_attention(ns):
    q, k, v = _qkv(1, 6, 4, s=6)
    f = ns["linear_attention"]
    return f(q, k, v), f(q, k, v, is_causal=True, chunk_size=4)


def case_causal_mask(ns):
    f = ns["causal_mask"]
    return f(3), f(2, 4, align="bottom_right")


def case_padding_mask(ns):
    return ns["padding_mask"]([3, 1]), ns["padding_mask"]([2, 0], max_len=4)


def case_sliding_window_mask(ns):
    f = ns["sliding_window_mask"]
    return f(5, 2), f(4, 2, causal=False)


def _mask():
    return torch.tensor([[True, True, False], [True, False, False]])


def case_to_sdpa_mask(ns):
    return ns["to_sdpa_mask"](_mask(), "huggingface"), ns["to_sdpa_mask"](~_mask(), "mha_attn_mask")


def case_from_sdpa_mask(ns):
    keep = _mask()[:, None, None, :]
    return ns["from_sdpa_mask"](keep, "huggingface"), ns["from_sdpa_mask"](keep, "sdpa")


def case_to_additive_mask(ns):
    return ns["to_additive_mask"](_mask()), ns["to_additive_mask"](_mask(), fill="-inf")


def _x(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(2))


def case__split_heads(ns):
    return ns["_split_heads"](_x(2, 3, 8), 4)


def case__merge_heads(ns):
    return ns["_merge_heads"](_x(2, 4, 3, 2))


def case_MultiHeadAttention(ns):
    torch.manual_seed(0)
    mha = ns["MultiHeadAttention"](8, 2, num_kv_heads=1).eval()
    x, memory = _x(2, 3, 8), _x(2, 5, 8)
    outputs = [mha(x, is_causal=True), mha(x, memory, memory, need_weights=False)]
    torch.manual_seed(0)
    narrow = ns["MultiHeadAttention"](8, 4, num_kv_heads=2, head_dim=3, scale=0.3).eval()
    return [*outputs, narrow(x, is_causal=True, need_weights=False)]


def case_KVCache(ns):
    cache, keys, values = ns["KVCache"](), _x(2, 3, 5, 4), _x(2, 3, 5, 4) + 1
    outputs = [len(cache), *cache.update(keys[:, :, :3], values[:, :, :3])]
    outputs += [*cache.update(keys[:, :, 3:], values[:, :, 3:]), len(cache)]
    if "MultiHeadAttention" in ns:  # the copy of MultiHeadAttention.forward
        torch.manual_seed(0)
        mha = ns["MultiHeadAttention"](8, 4, num_kv_heads=2, head_dim=4, rope_base=100.0)
        x, cache = _x(2, 5, 8), ns["KVCache"]()
        outputs += [mha(x[:, :3], is_causal=True, kv_cache=cache)[0]]
        outputs += [mha(x[:, i : i + 1], is_causal=True, kv_cache=cache)[0] for i in (3, 4)]
    return outputs


def case_TinyDecoder(ns):
    torch.manual_seed(0)
    model = ns["TinyDecoder"](vocab_size=7, d_model=8, nhead=2, num_kv_heads=1).eval()
    return model(torch.tensor([[1, 2, 3, 4]]))


def case_generate(ns):
    torch.manual_seed(0)
    model = ns["TinyDecoder"](vocab_size=7, d_model=8, nhead=2).eval()
    prompt = torch.tensor([[1, 2], [3, 4]])
    return ns["generate"](model, prompt, 4), ns["generate"](model, prompt, 4, use_cache=False)


def case_TransformerDecoderLayer(ns):
    outputs = []
    for norm_first in (False, True):
        torch.manual_seed(0)
        layer = ns["TransformerDecoderLayer"](8, 2, 16, dropout=0.0, norm_first=norm_first)
        outputs.append(layer(_x(2, 4, 8), _x(2, 5, 8), tgt_is_causal=True))
    return outputs


def case_kv_cache_numel(ns):
    return ns["kv_cache_numel"](layers=32, batch=1, kv_heads=8, tokens=4096, head_dim=128)


def case_LayerNorm(ns):
    torch.manual_seed(0)
    norm = ns["LayerNorm"](6)
    return norm(_x(2, 3, 6))


def case_RMSNorm(ns):
    torch.manual_seed(0)
    return ns["RMSNorm"](6)(_x(2, 3, 6))


def case_TransformerEncoderLayer(ns):
    outputs = []
    for norm_first in (False, True):
        torch.manual_seed(0)
        layer = ns["TransformerEncoderLayer"](8, 2, 16, dropout=0.0, norm_first=norm_first)
        outputs.append(layer(_x(2, 4, 8), is_causal=True))
    torch.manual_seed(0)
    llama = ns["TransformerEncoderLayer"](
        8, 2, 16, dropout=0.0, activation="silu", norm_first=True, bias=False,
        norm="rmsnorm", ffn="swiglu", num_kv_heads=1, rope_base=100.0,
    )  # fmt: skip
    outputs.append(llama(_x(2, 4, 8), is_causal=True))
    return outputs


def case_layer_grad_norms(ns):
    return ns["layer_grad_norms"](True, num_layers=2, d_model=8, nhead=2, dim_feedforward=16)


def case_toy_batch(ns):
    return ns["toy_batch"](4, generator=torch.Generator().manual_seed(0))


def case_ToyAttentionModel(ns):
    torch.manual_seed(0)
    model = ns["ToyAttentionModel"]()
    tokens = torch.randint(0, 10, (3, 6), generator=torch.Generator().manual_seed(0))
    return model(tokens)


def case_train_toy_model(ns):
    model = ns["train_toy_model"](steps=3, batch_size=8)
    return [p.detach() for p in model.parameters()]


def _plotted(figure_or_axes):
    axes = figure_or_axes.axes
    axes = axes if isinstance(axes, list) else [figure_or_axes]  # a Figure's, or one Axes
    return [
        (
            torch.as_tensor(np.asarray(ax.images[0].get_array())),
            [t.get_text() for t in ax.get_xticklabels()],
            [t.get_text() for t in ax.texts],
        )
        for ax in axes
        if ax.images
    ]


def case_plot_attention(ns):
    import matplotlib

    matplotlib.use("Agg")
    weights = torch.softmax(_x(3, 4), dim=-1)
    return _plotted(ns["plot_attention"](weights, list("abc"), list("wxyz")))


def case_plot_heads(ns):
    import matplotlib

    matplotlib.use("Agg")
    weights = torch.softmax(_x(2, 3, 3), dim=-1)
    return _plotted(ns["plot_heads"](weights, list("abc")))


NEEDS_MATPLOTLIB = {"plot_attention", "plot_heads"}


def case_sinusoidal_positions(ns):
    f = ns["sinusoidal_positions"]
    return f(7, 6), f(4, 8, base=100.0, dtype=torch.float64)


def case_apply_rope(ns):
    x = _x(2, 3, 5, 8)
    f = ns["apply_rope"]
    return f(x), f(x, interleaved=True), f(x, torch.tensor([3, 1, 4, 1, 5]), base=500.0)


def case__alibi_slopes(ns):
    return [ns["_alibi_slopes"](h) for h in (1, 6, 8, 12)]


def case_alibi_bias(ns):
    return ns["alibi_bias"](8, 4), ns["alibi_bias"](6, 3, 5)


def case_PositionalToyModel(ns):
    outputs = []
    tokens = torch.randint(0, 32, (3, 10), generator=torch.Generator().manual_seed(0))
    for encoding in ("none", "sinusoidal", "learned", "rope"):
        torch.manual_seed(0)
        outputs.append(ns["PositionalToyModel"](encoding)(tokens))
    return outputs
