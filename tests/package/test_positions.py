"""Positions: sinusoidal table, RoPE and ALiBi against their formulas written out longhand."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attention_ref import (
    MultiHeadAttention,
    alibi_bias,
    apply_rope,
    scaled_dot_product_attention,
    sinusoidal_positions,
)
from attention_ref.heads import merge_heads, split_heads

from ._compare import assert_close_scaled

DTYPES = [torch.float32, torch.float64]


# ---------------------------------------------------------------------------- sinusoidal


@pytest.mark.parametrize("base", [10000.0, 100.0])
@pytest.mark.parametrize(("length", "dim"), [(1, 2), (7, 4), (50, 16)])
def test_sinusoidal_equals_the_formula_with_loops(length, dim, base):
    expected = torch.empty(length, dim, dtype=torch.float64)
    for p in range(length):
        for i in range(dim // 2):
            expected[p, 2 * i] = math.sin(p / base ** (2 * i / dim))
            expected[p, 2 * i + 1] = math.cos(p / base ** (2 * i / dim))
    assert_close_scaled(sinusoidal_positions(length, dim, base=base, dtype=torch.float64), expected)
    assert sinusoidal_positions(length, dim, base=base).dtype == torch.get_default_dtype()


def test_sinusoidal_shift_is_a_rotation_of_each_pair():
    """P[p + k] = R_k P[p]: one 2x2 rotation per pair, the same for every p."""
    k, dim = 3, 8
    P = sinusoidal_positions(40, dim, dtype=torch.float64)
    blocks = []
    for i in range(dim // 2):
        w = k / 10000.0 ** (2 * i / dim)
        # (sin, cos) of (a + w) = [[cos w, sin w], [-sin w, cos w]] (sin a, cos a)
        rotation = [[math.cos(w), math.sin(w)], [-math.sin(w), math.cos(w)]]
        blocks.append(torch.tensor(rotation, dtype=torch.float64))
    R = torch.block_diag(*blocks)
    assert_close_scaled(P[:-k] @ R.T, P[k:])


# ---------------------------------------------------------------------------------- RoPE


def _rope_complex(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """Interleaved RoPE as complex numbers: (x_2i + i x_2i+1) * exp(i p theta_i)."""
    D = x.size(-1)
    theta = base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)  # (D/2,)
    angle = positions.double()[..., None] * theta  # (..., L, D/2)
    z = torch.view_as_complex(x.double().unflatten(-1, (D // 2, 2)).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(angle), angle)).flatten(-2)


def _interleave_to_half(D: int) -> torch.Tensor:
    """Feature order that turns interleaved pairs (2i, 2i+1) into half-split (i, i + D/2)."""
    return torch.cat([torch.arange(0, D, 2), torch.arange(1, D, 2)])


rope_cases = st.fixed_dictionaries(
    {
        "batch": st.lists(st.integers(1, 3), max_size=2),
        "L": st.integers(1, 9),
        "pairs": st.integers(1, 6),
        "dtype": st.sampled_from(DTYPES),
        "base": st.sampled_from([10000.0, 500.0, 1e6]),
        "positions": st.sampled_from(["default", "int", "float", "batched"]),
        "seed": st.integers(0, 2**16),
    }
)


def _rope_inputs(case):
    gen = torch.Generator().manual_seed(case["seed"])
    D, L = 2 * case["pairs"], case["L"]
    x = torch.randn(*case["batch"], L, D, dtype=case["dtype"], generator=gen)
    kind = case["positions"]
    if kind == "default":
        positions = None
    elif kind == "int":
        positions = torch.randint(0, 5000, (L,), generator=gen)
    elif kind == "float":
        positions = torch.rand(L, dtype=torch.float64, generator=gen) * 100
    else:
        positions = torch.randint(0, 100, (*case["batch"], L), generator=gen)
    return x, positions


@given(case=rope_cases)
def test_rope_equals_the_complex_number_form(case):
    x, positions = _rope_inputs(case)
    p = torch.arange(x.size(-2)) if positions is None else positions
    expected = _rope_complex(x, p, case["base"]).to(x.dtype)
    actual = apply_rope(x, positions, base=case["base"], interleaved=True)
    # A float32 angle p * theta is off by up to p * 6e-8 radians: the error grows with p.
    scale = expected.abs().max().item() * max(1.0, p.abs().max().item() / 20)
    assert_close_scaled(actual, expected, scale=scale if x.dtype == torch.float32 else None)


@given(case=rope_cases)
def test_interleaved_and_half_split_differ_by_a_feature_permutation(case):
    x, positions = _rope_inputs(case)
    perm = _interleave_to_half(x.size(-1))
    interleaved = apply_rope(x, positions, base=case["base"], interleaved=True)
    half = apply_rope(x[..., perm], positions, base=case["base"])
    assert_close_scaled(half, interleaved[..., perm])


@given(case=rope_cases)
def test_rope_keeps_norms_and_dtype(case):
    x, positions = _rope_inputs(case)
    for interleaved in (False, True):
        y = apply_rope(x, positions, base=case["base"], interleaved=interleaved)
        assert y.shape == x.shape and y.dtype == x.dtype
        assert_close_scaled(y.norm(dim=-1), x.norm(dim=-1), what="norms")


@given(
    m=st.integers(0, 2000),
    n=st.integers(0, 2000),
    shift=st.integers(-1000, 1000),
    interleaved=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_score_after_rope_depends_on_the_offset_only(m, n, shift, interleaved, seed):
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 16, dtype=torch.float64, generator=gen)

    def score(pos_q, pos_k):
        rq = apply_rope(q[None], torch.tensor([pos_q]), interleaved=interleaved)
        rk = apply_rope(k[None], torch.tensor([pos_k]), interleaved=interleaved)
        return (rq @ rk.T)[0, 0]

    moved = score(m + shift, n + shift) if min(m, n) + shift >= 0 else score(m - shift, n - shift)
    assert_close_scaled(moved, score(m, n), scale=16.0)


def test_rope_float64_stays_exact_at_large_positions():
    positions = torch.tensor([0, 1, 123_456, 987_654], dtype=torch.int64)
    x = torch.randn(4, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert_close_scaled(
        apply_rope(x, positions, interleaved=True), _rope_complex(x, positions, 1e4)
    )


def test_rope_low_precision_input_is_rotated_in_float32():
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(0))
    y16 = apply_rope(x.bfloat16(), torch.arange(1000, 1005))
    assert y16.dtype == torch.bfloat16
    y32 = apply_rope(x.bfloat16().float(), torch.arange(1000, 1005))
    torch.testing.assert_close(y16, y32.bfloat16())


def test_rope_gradcheck_float64():
    x = torch.randn(2, 3, 4, 6, dtype=torch.float64, requires_grad=True)
    positions = torch.tensor([0.0, 2.5, 7.0, 11.0])
    for interleaved in (False, True):
        assert torch.autograd.gradcheck(
            lambda x, i=interleaved: apply_rope(x, positions, interleaved=i), (x,)
        )


# --------------------------------------------------------------------------------- ALiBi


def test_alibi_slopes_for_8_heads():
    bias = alibi_bias(8, 2)
    slopes = -bias[:, 1, 0]  # one step back: -slope
    torch.testing.assert_close(slopes, torch.tensor([1 / 2**k for k in range(1, 9)]))


@pytest.mark.parametrize(
    ("heads", "expected"),
    [
        # 4 heads' slopes (2^-2, 2^-4, 2^-6, 2^-8), then every other of 8 heads' (2^-1, 2^-3)
        (6, [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3]),
        # 8 heads' slopes, then every other of 16 heads' (2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5)
        (12, [*(2.0**-k for k in range(1, 9)), 2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5]),
        (1, [2**-8]),
        (3, [2**-4, 2**-8, 2**-2]),
    ],
)
def test_alibi_slopes_for_other_head_counts(heads, expected):
    slopes = -alibi_bias(heads, 2)[:, 1, 0]
    torch.testing.assert_close(slopes, torch.tensor(expected))


@pytest.mark.parametrize(("L", "S"), [(4, 4), (2, 6), (1, 5), (3, 3)])
def test_alibi_is_the_slope_times_the_distance_from_the_bottom_right_diagonal(L, S):
    bias = alibi_bias(4, L, S)
    assert bias.shape == (4, L, S) and bias.dtype == torch.get_default_dtype()
    slopes = [2**-2, 2**-4, 2**-6, 2**-8]
    for h in range(4):
        for i in range(L):
            for j in range(S):
                assert bias[h, i, j].item() == pytest.approx(slopes[h] * (j - i - (S - L)))
    diagonal = torch.arange(L) + S - L
    assert torch.all(bias[:, torch.arange(L), diagonal] == 0)


def test_alibi_decode_step_matches_the_last_row_of_the_full_bias():
    """Decoding with a cache: one query after 5 keys sees the last row of the (6, 6) bias."""
    torch.testing.assert_close(alibi_bias(4, 1, 6), alibi_bias(4, 6)[:, -1:])


# --------------------------------------------------------------------- MultiHeadAttention


@pytest.mark.parametrize("num_kv_heads", [None, 2, 1])
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("positions", ["default", "shared", "batched"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_multihead_rope_equals_the_manual_composition(num_kv_heads, interleaved, positions, dtype):
    torch.manual_seed(0)
    E, H, N, L = 16, 4, 2, 5
    mha = MultiHeadAttention(
        E, H, num_kv_heads=num_kv_heads, rope_base=500.0, rope_interleaved=interleaved
    ).to(dtype)
    x = torch.randn(N, L, E, dtype=dtype)
    pos = {
        "default": None,
        "shared": torch.tensor([3, 4, 5, 6, 7]),
        "batched": torch.tensor([[0, 1, 2, 3, 4], [10, 11, 12, 13, 14]]),
    }[positions]
    kv_heads = num_kv_heads or H
    q = split_heads(mha.q_proj(x), H)  # (N, H, L, D)
    k = split_heads(mha.k_proj(x), kv_heads)  # (N, H_kv, L, D)
    v = split_heads(mha.v_proj(x), kv_heads)
    p = torch.arange(L) if pos is None else pos
    p = p[:, None, :] if p.dim() == 2 else p  # (N, 1, L) for every head
    q = apply_rope(q, p, base=500.0, interleaved=interleaved)
    k = apply_rope(k, p, base=500.0, interleaved=interleaved)
    heads = scaled_dot_product_attention(
        q, k, v, is_causal=True, enable_gqa=kv_heads != H
    )  # (N, H, L, D)
    expected = mha.out_proj(merge_heads(heads))
    for need_weights in (True, False):
        out, _ = mha(x, is_causal=True, positions=pos, need_weights=need_weights)
        assert_close_scaled(out, expected)
    assert_close_scaled(mha(x, x, x, is_causal=True, positions=pos)[0], expected)


def test_multihead_rope_shifted_positions_give_the_same_output():
    """Rotary attention is relative: adding the same offset to every position changes nothing."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, rope_base=10000.0).double()
    x = torch.randn(1, 6, 8, dtype=torch.float64)
    plain = MultiHeadAttention(8, 2).double()
    plain.load_state_dict(mha.state_dict())
    assert_close_scaled(mha(x, positions=torch.arange(100, 106))[0], mha(x)[0])
    assert not torch.allclose(mha(x)[0], plain(x)[0])


def test_multihead_rope_gradcheck_float64():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, num_kv_heads=1, rope_base=100.0).double()
    x = torch.randn(1, 4, 8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: mha(x, is_causal=True)[0], (x,))


# -------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: sinusoidal_positions(4, 5), ValueError, r"dim: expected an even width, got 5"),
        (lambda: sinusoidal_positions(0, 4), ValueError, r"length: expected a positive length"),
        (
            lambda: sinusoidal_positions(4, 4, base=0.0),
            ValueError,
            r"base: expected a positive number, got 0.0",
        ),
        (
            lambda: apply_rope(torch.zeros(3, 5)),
            ValueError,
            r"x: expected an even last dimension D, got 5",
        ),
        (
            lambda: apply_rope(torch.zeros(3, 4, dtype=torch.long)),
            TypeError,
            r"x: expected a floating-point tensor, got dtype torch.int64",
        ),
        (
            lambda: apply_rope(torch.zeros(2, 3, 4), torch.arange(4)),
            ValueError,
            r"positions: expected a length of L=3, \(L,\) or a shape broadcastable to "
            r"\(2, 3\), got \(4,\)",
        ),
        (
            lambda: apply_rope(torch.zeros(2, 3, 4), torch.zeros(5, 3)),
            ValueError,
            r"positions: expected a length of L=3, .* got \(5, 3\)",
        ),
        (
            lambda: apply_rope(torch.zeros(3, 4), [0, 1, 2]),
            TypeError,
            r"positions: expected a torch.Tensor, got list",
        ),
        (
            lambda: apply_rope(torch.zeros(3, 4), base=-1.0),
            ValueError,
            r"base: expected a positive number, got -1.0",
        ),
        (lambda: alibi_bias(0, 3), ValueError, r"num_heads: expected a positive number of heads"),
        (lambda: alibi_bias(2, 3, 0), ValueError, r"k_len: expected a positive length, got 0"),
        (lambda: alibi_bias(2.0, 3), TypeError, r"num_heads: expected an int, got float"),
        (
            lambda: MultiHeadAttention(6, 2, rope_base=10000.0),
            ValueError,
            r"rope_base: expected a positive base and an even head width embed_dim / "
            r"num_heads, got rope_base=10000.0 and head width 3",
        ),
        (
            lambda: MultiHeadAttention(8, 2, rope_base=0.0),
            ValueError,
            r"rope_base: expected a positive base",
        ),
        (
            lambda: MultiHeadAttention(8, 2, rope_base=1e4)(
                torch.zeros(1, 3, 8), torch.zeros(1, 5, 8)
            ),
            ValueError,
            r"key: rotary positions need self-attention \(no separate key\)",
        ),
        (
            lambda: MultiHeadAttention(8, 2, rope_base=1e4)(
                torch.zeros(1, 3, 8), positions=torch.arange(4)
            ),
            ValueError,
            r"positions: expected a length of L=3",
        ),
    ],
)
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_multihead_without_rope_ignores_positions():
    """Every layer takes positions; one without a part that reads them (GPT-2's, BERT's
    attention) gives the same output wherever the tokens stand."""
    torch.manual_seed(0)
    mha, x = MultiHeadAttention(8, 2), torch.randn(1, 3, 8)
    moved, _ = mha(x, positions=torch.arange(5, 8), is_causal=True)
    torch.testing.assert_close(moved, mha(x, is_causal=True)[0], atol=0, rtol=0)
