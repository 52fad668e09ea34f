import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from attention_ref import (
    KVCache,
    MultiHeadAttention,
    chunked_attention,
    padding_mask,
    scaled_dot_product_attention,
)

from ._compare import assert_close_scaled, masked_scores
from .strategies import torch_mha_arguments, torch_mha_masks


def _torch_inputs(module, query, key, value):
    """nn.MultiheadAttention wants (L, N, E) unless batch_first."""
    if module.batch_first:
        return query, key, value
    return query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)


@given(**torch_mha_arguments(max_len=7), batch_first=st.booleans())
def test_matches_torch_multihead_attention(
    heads, head_dim, L, S, N, kdim, vdim, bias, batch_first, mask, dtype, seed
):
    torch.manual_seed(seed)
    E = heads * head_dim
    theirs = nn.MultiheadAttention(
        E, heads, bias=bias, kdim=kdim, vdim=vdim, batch_first=batch_first, dtype=dtype
    )
    ours = MultiHeadAttention.from_torch(theirs)
    if mask == "causal":
        S = L  # causal self-attention over one sequence
    query = torch.randn(N, L, E, dtype=dtype)
    key = torch.randn(N, S, kdim or E, dtype=dtype)
    value = torch.randn(N, S, vdim or E, dtype=dtype)
    our_kwargs, their_kwargs = torch_mha_masks(mask, N, L, S, dtype)

    out, weights = ours(query, key, value, **our_kwargs)
    ref_out, ref_weights = theirs(
        *_torch_inputs(theirs, query, key, value), average_attn_weights=False, **their_kwargs
    )
    if not batch_first:
        ref_out = ref_out.transpose(0, 1)
    assert_close_scaled(out, ref_out)
    assert_close_scaled(weights, ref_weights, what="weights")

    out_only, none = ours(query, key, value, need_weights=False, **our_kwargs)
    assert none is None
    assert_close_scaled(out_only, ref_out)

    g = torch.randn_like(out)
    ours_grads = torch.autograd.grad((out * g).sum(), list(ours.parameters()))
    theirs_grads = torch.autograd.grad((ref_out * g).sum(), list(theirs.parameters()))
    # Pair parameters by name: theirs packs q/k/v into in_proj_* when kdim = vdim = E.
    ours_by_name = dict(zip((n for n, _ in ours.named_parameters()), ours_grads, strict=True))
    theirs_by_name = dict(zip((n for n, _ in theirs.named_parameters()), theirs_grads, strict=True))
    if "in_proj_weight" in theirs_by_name:
        q, k, v = (ours_by_name[f"{p}_proj.weight"] for p in "qkv")
        assert_close_scaled(
            torch.cat([q, k, v]), theirs_by_name["in_proj_weight"], what="grad W_in"
        )
    else:
        for p in "qkv":
            assert_close_scaled(
                ours_by_name[f"{p}_proj.weight"],
                theirs_by_name[f"{p}_proj_weight"],
                what=f"grad W_{p}",
            )
    if bias:
        b = torch.cat([ours_by_name[f"{p}_proj.bias"] for p in "qkv"])
        assert_close_scaled(b, theirs_by_name["in_proj_bias"], what="grad b_in")
    assert_close_scaled(
        ours_by_name["out_proj.weight"], theirs_by_name["out_proj.weight"], what="grad W_out"
    )


def test_self_attention_defaults_key_and_value_to_query():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(mha(x)[0], mha(x, x, x)[0])


def test_cross_attention_with_a_different_key_length():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, kdim=6, vdim=6)
    out, weights = mha(torch.randn(2, 3, 8), torch.randn(2, 11, 6))
    assert out.shape == (2, 3, 8) and weights.shape == (2, 2, 3, 11)


def test_grouped_query_attention_equals_repeated_heads():
    """GQA with H_kv heads == standard MHA whose K/V projections repeat each group's head."""
    torch.manual_seed(0)
    E, H, H_kv, D = 12, 4, 2, 3
    gqa = MultiHeadAttention(E, H, num_kv_heads=H_kv).double()
    full = MultiHeadAttention(E, H).double()
    full.load_state_dict(
        {
            **gqa.state_dict(),
            **{
                f"{p}_proj.{t}": getattr(gqa, f"{p}_proj")
                .state_dict()[t]
                .reshape(H_kv, D, *(() if t == "bias" else (E,)))
                .repeat_interleave(H // H_kv, dim=0)
                .reshape(E, *(() if t == "bias" else (E,)))
                for p in "kv"
                for t in ("weight", "bias")
            },
        }
    )
    x = torch.randn(2, 5, E, dtype=torch.float64)
    assert_close_scaled(gqa(x)[0], full(x)[0])
    assert_close_scaled(gqa(x, need_weights=False)[0], full(x)[0])
    assert gqa.k_proj.weight.shape == (H_kv * D, E)


def test_parameter_count_for_d_model_512():
    def count(module):
        return sum(p.numel() for p in module.parameters())

    assert count(MultiHeadAttention(512, 8)) == 4 * 512 * 512 + 4 * 512 == 1_050_624
    assert count(nn.MultiheadAttention(512, 8)) == 1_050_624
    # The notebook tutorial's 1,049,088 = 4 * 512^2 + 512: W_Q, W_K, W_V without bias, W_O with one.
    seed_layout = MultiHeadAttention(512, 8, bias=False)
    assert count(seed_layout) + 512 == 1_049_088


def test_gradcheck_float64():
    torch.manual_seed(0)
    mha = MultiHeadAttention(6, 2, kdim=4, vdim=4).double()
    q = torch.randn(2, 3, 6, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(2, 4, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.rand(3, 4) > 0.4
    assert torch.autograd.gradcheck(lambda q, k: mha(q, k, k, attn_mask=mask)[0], (q, kv))


def test_dropout_only_in_training():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(1, 6, 8)
    assert not torch.equal(mha(x)[0], mha(x)[0])
    mha.eval()
    assert torch.equal(mha(x)[0], mha(x)[0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"embed_dim": 10, "num_heads": 3},
            r"embed_dim: expected a positive multiple of num_heads, "
            r"got embed_dim=10 and num_heads=3",
        ),
        (
            {"embed_dim": 8, "num_heads": 4, "num_kv_heads": 3},
            r"num_kv_heads: expected a divisor of num_heads=4, got 3",
        ),
        (
            {"embed_dim": 8, "num_heads": 2, "dropout": 1.5},
            r"dropout: expected a probability in \[0, 1\), got 1.5",
        ),
    ],
)
def test_bad_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(**kwargs)


def test_bad_forward_input():
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(
        ValueError,
        match=r"query: expected a batch-first tensor \(N, length, 8\), got shape \(3, 8\)",
    ):
        mha(torch.randn(3, 8))
    with pytest.raises(
        ValueError,
        match=r"key: expected a batch-first tensor \(N, length, 8\), got shape \(1, 4, 6\)",
    ):
        mha(torch.randn(1, 3, 8), torch.randn(1, 4, 6))
    with pytest.raises(ValueError, match=r"key and value: expected the same length S"):
        mha(torch.randn(1, 3, 8), torch.randn(1, 4, 8), torch.randn(1, 5, 8))
    with pytest.raises(
        ValueError,
        match=r"attn_mask: expected a shape broadcastable to \(1, 2, 3, 4\), got \(3, 3\)",
    ):
        mha(
            torch.randn(1, 3, 8), torch.randn(1, 4, 8), attn_mask=torch.ones(3, 3, dtype=torch.bool)
        )


def test_from_torch_rejects_other_modules():
    with pytest.raises(
        TypeError, match="module: expected a torch.nn.MultiheadAttention, got Linear"
    ):
        MultiHeadAttention.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="add_bias_kv and add_zero_attn are not supported"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(4, 2, add_bias_kv=True))


def _user_kernel(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """A kernel of one's own: softmax(QK^T * scale + M) V with the SDPA signature."""
    if enable_gqa:
        group = query.size(-3) // key.size(-3)
        key, value = (t.repeat_interleave(group, dim=-3) for t in (key, value))
    scores = query @ key.transpose(-2, -1) * (scale or query.size(-1) ** -0.5)
    scores = masked_scores(scores, attn_mask, is_causal)
    return torch.softmax(scores, dim=-1) @ value


@pytest.mark.parametrize(
    "attention_fn",
    [
        chunked_attention,
        nn.functional.scaled_dot_product_attention,
        scaled_dot_product_attention,
        _user_kernel,
    ],
    ids=["chunked_attention", "F.scaled_dot_product_attention", "ours", "user kernel"],
)
@pytest.mark.parametrize("kv_heads", [4, 2])
@pytest.mark.parametrize("mask", ["none", "causal", "padding and causal", "float"])
@pytest.mark.parametrize("cache", [False, True])
def test_attention_fn_gives_the_same_values_and_gradients(attention_fn, kv_heads, mask, cache):
    torch.manual_seed(0)
    options = {"num_kv_heads": kv_heads, "rope_base": 10000.0, "dtype": torch.float64}
    ours = MultiHeadAttention(8, 4, **options)
    kernel = MultiHeadAttention(8, 4, attention_fn=attention_fn, **options)
    kernel.load_state_dict(ours.state_dict())
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    is_causal = "causal" in mask
    attn_mask = None
    if mask == "padding and causal":
        attn_mask = padding_mask([5, 4], 5)  # (N, 1, 1, S); no row fully masked
    elif mask == "float":
        attn_mask = torch.randn(5, 5, dtype=torch.float64)

    def run(module):
        if not cache:
            out, weights = module(x, attn_mask=attn_mask, is_causal=is_causal)
            return out, weights
        kv = KVCache()  # the prompt, then one token
        rows = (slice(0, 3), slice(3, 5))
        masks = [None if attn_mask is None else attn_mask[..., r, : r.stop] for r in rows]
        if attn_mask is not None and attn_mask.size(-2) == 1:
            masks = [attn_mask[..., : r.stop] for r in rows]
        pieces = [
            module(x[:, r], attn_mask=m, is_causal=True, kv_cache=kv)
            for r, m in zip(rows, masks, strict=True)
        ]
        return torch.cat([p[0] for p in pieces], dim=1), pieces[-1][1]

    (expected, weights), (out, none) = run(ours), run(kernel)
    assert weights is not None and none is None  # weights only from the default path
    assert_close_scaled(out, expected)
    g = torch.randn_like(out)
    theirs = torch.autograd.grad((out * g).sum(), list(kernel.parameters()))
    mine = torch.autograd.grad((expected * g).sum(), list(ours.parameters()))
    for a, b in zip(theirs, mine, strict=True):
        assert_close_scaled(a, b, what="gradient")


def test_attention_fn_takes_no_dropout():
    with pytest.raises(ValueError, match=r"dropout: expected 0 with attention_fn, got 0.1"):
        MultiHeadAttention(8, 2, dropout=0.1, attention_fn=chunked_attention)
