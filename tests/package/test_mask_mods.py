"""attention_ref.mask_mods: every mask function against PyTorch's create_mask and a Python loop.

Each mask function is checked three ways on the same sizes: our ``create_mask`` (index tensors
that broadcast), PyTorch's ``torch.nn.attention.flex_attention.create_mask`` (``vmap`` over
scalar indices: our functions must work there unchanged) and a brute-force loop over every
(b, h, q, kv) with a plain-Python rule. Then ``block_sparsity`` against ``create_block_mask``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.nn.attention import flex_attention as fa

import attention_ref
from attention_ref.mask_mods import (
    and_masks,
    block_sparsity,
    causal,
    chunked,
    create_mask,
    dilated_sliding_window,
    document,
    not_mask,
    or_masks,
    padding,
    prefix_lm,
    sliding_window,
)
from tests.package.strategies import mask_functions


@dataclass
class Case:
    """A mask function and the rule it should follow, for sizes N and S."""

    name: str
    mask_mod: Callable
    rule: Callable[[int, int, int, int], bool]  # (b, h, q, kv) -> may attend
    needs_q_below_S: bool = False  # the rule reads a per-position tensor at q


def cases(N: int, S: int, seed: int = 0) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    prefixes = torch.randint(0, S + 2, (N,), generator=gen)
    lengths = torch.randint(0, S + 1, (N,), generator=gen)
    ids_1d = torch.randint(0, 3, (S,), generator=gen).sort().values  # (S,)
    ids_2d = torch.randint(0, 4, (N, S), generator=gen)  # (N, S), not sorted: any labels
    return [
        Case("causal", causal(), lambda b, h, q, kv: kv <= q),
        *[
            Case(
                f"sliding_window({w})", sliding_window(w), lambda b, h, q, kv, w=w: 0 <= q - kv < w
            )
            for w in (1, 3)
        ],
        Case("prefix_lm(2)", prefix_lm(2), lambda b, h, q, kv: kv < 2 or kv <= q),
        Case(
            "prefix_lm(tensor)",
            prefix_lm(prefixes),
            lambda b, h, q, kv: kv < prefixes[b] or kv <= q,
        ),
        Case(
            "document(S,)",
            document(ids_1d),
            lambda b, h, q, kv: ids_1d[q] == ids_1d[kv],
            needs_q_below_S=True,
        ),
        Case(
            "document(N, S)",
            document(ids_2d),
            lambda b, h, q, kv: ids_2d[b, q] == ids_2d[b, kv],
            needs_q_below_S=True,
        ),
        *[
            Case(
                f"chunked({c})", chunked(c), lambda b, h, q, kv, c=c: q // c == kv // c and kv <= q
            )
            for c in (1, 3)
        ],
        *[
            Case(
                f"dilated_sliding_window({w}, {d})",
                dilated_sliding_window(w, d),
                lambda b, h, q, kv, w=w, d=d: q >= kv and (q - kv) % d == 0 and (q - kv) // d < w,
            )
            for w, d in ((2, 2), (3, 1), (1, 3))
        ],
        Case("padding", padding(lengths), lambda b, h, q, kv: kv < lengths[b]),
        Case(
            "and(causal, padding)",
            and_masks(causal(), padding(lengths)),
            lambda b, h, q, kv: kv <= q and kv < lengths[b],
        ),
        Case(
            "or(sliding_window(2), prefix_lm(1))",
            or_masks(sliding_window(2), prefix_lm(1)),
            lambda b, h, q, kv: 0 <= q - kv < 2 or kv < 1 or kv <= q,
        ),
        Case("not(causal)", not_mask(causal()), lambda b, h, q, kv: kv > q),
        Case(
            "head-dependent",  # a custom rule: head h sees the keys h, h + 2, h + 4, ...
            lambda b, h, q, kv: (kv - h) % 2 == 0,
            lambda b, h, q, kv: (kv - h) % 2 == 0,
        ),
        Case("and()", and_masks(), lambda b, h, q, kv: True),
        Case("or()", or_masks(), lambda b, h, q, kv: False),
    ]


def cases_for(N: int, L: int, S: int, q_offset: int = 0, seed: int = 0) -> list[Case]:
    """The cases that are defined for these sizes (document ids cover the S positions only)."""
    return [c for c in cases(N, S, seed) if not (c.needs_q_below_S and L + q_offset > S)]


def brute_force(rule, N: int, H: int, L: int, S: int, q_offset: int = 0) -> torch.Tensor:
    """The mask by a loop over every index, one Python call each."""
    mask = torch.zeros(N, H, L, S, dtype=torch.bool)
    for b in range(N):
        for h in range(H):
            for q in range(L):
                for kv in range(S):
                    mask[b, h, q, kv] = bool(rule(b, h, q + q_offset, kv))
    return mask


def torch_create_mask(mask_mod, N: int, H: int, L: int, S: int, q_offset: int = 0):
    """PyTorch's create_mask (vmap over scalar indices), the queries shifted by q_offset."""

    def shifted(b, h, q_idx, kv_idx):
        return mask_mod(b, h, q_idx + q_offset, kv_idx)

    return fa.create_mask(shifted, N, H, L, S, device="cpu")


# (N, H, L, S, q_offset): square, L != S both ways, one query, offsets as in decoding
SIZES = [
    (1, 1, 1, 1, 0),
    (2, 3, 5, 5, 0),
    (1, 2, 7, 11, 0),
    (3, 1, 9, 4, 0),
    (2, 2, 16, 16, 0),
    (2, 1, 3, 10, 7),  # 3 new queries after 7 cached keys (bottom-right)
    (1, 2, 1, 6, 5),
    (2, 2, 4, 9, 2),
]


@pytest.mark.parametrize(("N", "H", "L", "S", "q_offset"), SIZES)
def test_every_mask_equals_torch_create_mask_and_a_loop(N, H, L, S, q_offset):
    for case in cases_for(N, L, S, q_offset, seed=N * 100 + L):
        expected = brute_force(case.rule, N, H, L, S, q_offset)
        mine = create_mask(case.mask_mod, N, H, L, S, q_offset=q_offset)
        assert mine.dtype == torch.bool and mine.shape == (N, H, L, S), case.name
        assert torch.equal(mine, expected), case.name
        theirs = torch_create_mask(case.mask_mod, N, H, L, S, q_offset)
        assert torch.equal(theirs, expected), case.name


@given(
    window=st.integers(1, 12),
    dilation=st.integers(1, 5),
    chunk=st.integers(1, 12),
    prefix=st.integers(0, 14),
    N=st.integers(1, 3),
    H=st.integers(1, 3),
    L=st.integers(1, 12),
    S=st.integers(1, 12),
    q_offset=st.integers(0, 5),
)
def test_parametrized_masks_equal_a_loop(window, dilation, chunk, prefix, N, H, L, S, q_offset):
    rules = {
        "sliding": (sliding_window(window), lambda b, h, q, kv: 0 <= q - kv < window),
        "dilated": (
            dilated_sliding_window(window, dilation),
            lambda b, h, q, kv: (
                q >= kv and (q - kv) % dilation == 0 and (q - kv) < window * dilation
            ),
        ),
        "chunked": (chunked(chunk), lambda b, h, q, kv: q // chunk == kv // chunk and kv <= q),
        "prefix": (prefix_lm(prefix), lambda b, h, q, kv: kv < prefix or kv <= q),
    }
    for name, (mask_mod, rule) in rules.items():
        expected = brute_force(rule, N, H, L, S, q_offset)
        assert torch.equal(create_mask(mask_mod, N, H, L, S, q_offset=q_offset), expected), name
        assert torch.equal(torch_create_mask(mask_mod, N, H, L, S, q_offset), expected), name


@given(data=st.data(), N=st.integers(1, 3), H=st.integers(1, 3), q_offset=st.integers(0, 4))
def test_random_combinations_equal_torch_create_mask(data, N, H, q_offset):
    L, S = data.draw(st.integers(1, 10)), data.draw(st.integers(1, 14))
    S = max(S, L + q_offset)  # document ids are drawn for S positions: queries among them
    name, mask_mod = data.draw(mask_functions(N, L, S), label="mask_mod")
    expected = torch_create_mask(mask_mod, N, H, L, S, q_offset)
    assert torch.equal(create_mask(mask_mod, N, H, L, S, q_offset=q_offset), expected), name


def test_dilation_one_is_the_sliding_window():
    for window in (1, 2, 5):
        assert torch.equal(
            create_mask(dilated_sliding_window(window, 1), 2, 1, 9, 12),
            create_mask(sliding_window(window), 2, 1, 9, 12),
        )


def test_the_tensor_masks_agree():
    """sliding_window, causal and padding say what sliding_window_mask, causal_mask and
    padding_mask say."""
    L, S = 6, 9
    assert torch.equal(
        create_mask(sliding_window(3), 1, 1, L, S)[0, 0],
        attention_ref.sliding_window_mask(L, 3, S),
    )
    assert torch.equal(
        create_mask(causal(), 1, 1, L, S, q_offset=S - L)[0, 0],
        attention_ref.causal_mask(L, S, align="bottom_right"),
    )
    lengths = torch.tensor([4, 0, 9])
    assert torch.equal(
        create_mask(padding(lengths), 3, 1, 1, S),
        attention_ref.padding_mask(lengths, max_len=S),
    )


@pytest.mark.parametrize("shape", ["scalars", "vectors", "(L, S)", "(N, H, L, S) full"])
def test_masks_work_on_index_tensors_of_any_broadcastable_shape(shape):
    """The same values for scalar indices, 1-D ones and full grids as for create_mask's."""
    N, H, L, S = 2, 2, 5, 5
    for case in cases(N, S):
        expected = create_mask(case.mask_mod, N, H, L, S)
        if shape == "scalars":
            for b, h, q, kv in [(0, 0, 0, 0), (1, 1, 4, 2), (1, 0, 2, 4)]:
                got = case.mask_mod(*map(torch.tensor, (b, h, q, kv)))
                assert bool(got) == bool(expected[b, h, q, kv]), case.name
        elif shape == "vectors":  # a list of (b, h, q, kv) quadruples, all (4,)
            b, h, q, kv = (
                torch.tensor(x) for x in ([0, 1, 1, 0], [0, 1, 0, 1], [0, 4, 2, 3], [0, 2, 4, 3])
            )
            got = torch.broadcast_to(case.mask_mod(b, h, q, kv), (4,))
            assert torch.equal(got, expected[b, h, q, kv]), case.name
        elif shape == "(L, S)":
            b, h = torch.tensor(1), torch.tensor(0)
            q, kv = torch.arange(L)[:, None], torch.arange(S)
            got = torch.broadcast_to(case.mask_mod(b, h, q, kv), (L, S))
            assert torch.equal(got, expected[1, 0]), case.name
        else:
            grid = torch.meshgrid(
                torch.arange(N), torch.arange(H), torch.arange(L), torch.arange(S), indexing="ij"
            )
            got = torch.broadcast_to(case.mask_mod(*grid), (N, H, L, S))
            assert torch.equal(got, expected), case.name


def test_create_mask_is_contiguous_and_on_the_device():
    mask = create_mask(causal(), 2, 3, 4, 5, device="cpu")
    assert mask.is_contiguous() and mask.device.type == "cpu"
    assert mask.shape == (2, 3, 4, 5)


def test_torch_create_block_mask_accepts_them():
    """PyTorch's create_block_mask takes every mask function unchanged."""
    N, H, L, S = 2, 2, 256, 256
    for case in cases(N, S):
        block_mask = fa.create_block_mask(case.mask_mod, N, H, L, S, device="cpu")
        assert block_mask.shape == (N, H, L, S), case.name


# block_sparsity -----------------------------------------------------------------------------


def tiles_by_loop(mask: torch.Tensor, b_q: int, b_k: int) -> float:
    """The percentage of empty tiles, one tile at a time."""
    N, H, L, S = mask.shape
    empty = total = 0
    for i in range(0, L, b_q):
        for j in range(0, S, b_k):
            tile = mask[:, :, i : i + b_q, j : j + b_k]  # (N, H, <= b_q, <= b_k)
            empty += int((~tile.flatten(2).any(-1)).sum())
            total += N * H
    return 100.0 * empty / total


@pytest.mark.parametrize(
    ("N", "H", "L", "S", "block_size"),
    [(1, 1, 256, 256, 128), (2, 3, 128, 384, 64), (1, 2, 96, 64, 32), (2, 1, 64, 64, 16)],
)
def test_block_sparsity_equals_torch_for_multiples_of_the_block(N, H, L, S, block_size):
    for case in cases_for(N, L, S):
        mine = block_sparsity(case.mask_mod, N, H, L, S, block_size=block_size)
        block_mask = fa.create_block_mask(
            case.mask_mod, N, H, L, S, device="cpu", BLOCK_SIZE=block_size
        )
        assert math.isclose(mine, block_mask.sparsity(), abs_tol=1e-9), case.name
        mask = create_mask(case.mask_mod, N, H, L, S)
        assert math.isclose(mine, tiles_by_loop(mask, block_size, block_size)), case.name


@pytest.mark.parametrize(
    ("L", "S", "block_size"), [(100, 100, 128), (130, 70, 32), (5, 9, (2, 4)), (1, 1, 3)]
)
def test_block_sparsity_counts_partial_tiles(L, S, block_size):
    b_q, b_k = block_size if isinstance(block_size, tuple) else (block_size, block_size)
    for case in cases_for(2, L, S):
        mine = block_sparsity(case.mask_mod, 2, 2, L, S, block_size=block_size)
        mask = create_mask(case.mask_mod, 2, 2, L, S)
        assert math.isclose(mine, tiles_by_loop(mask, b_q, b_k)), case.name


def test_torch_sparsity_goes_negative_when_the_length_is_not_a_multiple():
    """PyTorch 2.13 divides the area of whole tiles by N·H·L·S: causal on 100 tokens, one
    128 × 128 tile, reports 1 - 128² / 100² = -63.84 %. Nothing is empty: ours says 0."""
    block_mask = fa.create_block_mask(causal(), 1, 1, 100, 100, device="cpu")
    assert math.isclose(block_mask.sparsity(), -63.84)
    assert block_sparsity(causal(), 1, 1, 100, 100) == 0.0


def test_a_short_window_skips_no_more_tiles_than_causal_with_large_blocks():
    """On 256 tokens, 128-blocks: a 32-token window touches the same 3 of 4 tiles as causal
    (each diagonal tile, and the one below it for the window's first 31 rows)."""
    assert block_sparsity(sliding_window(32), 1, 1, 256, 256) == 25.0
    assert block_sparsity(causal(), 1, 1, 256, 256) == 25.0
    torch_window = fa.create_block_mask(sliding_window(32), 1, 1, 256, 256, device="cpu")
    assert torch_window.sparsity() == 25.0
    assert block_sparsity(sliding_window(32), 1, 1, 256, 256, block_size=32) > 70


# bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: sliding_window(0), ValueError, "window: expected a positive length, got 0"),
        (lambda: sliding_window(2.0), TypeError, "window: expected an int, got float"),
        (lambda: chunked(0), ValueError, "chunk_size: expected a positive size"),
        (lambda: chunked(True), TypeError, "chunk_size: expected an int, got bool"),
        (lambda: dilated_sliding_window(0, 1), ValueError, "window: expected a positive length"),
        (lambda: dilated_sliding_window(2, 0), ValueError, "dilation: expected a positive step"),
        (lambda: dilated_sliding_window(2, 1.5), TypeError, "dilation: expected an int"),
        (lambda: prefix_lm(-1), ValueError, "prefix_length: expected a length >= 0, got -1"),
        (lambda: prefix_lm(1.5), TypeError, "prefix_length: expected an int, got float"),
        (lambda: prefix_lm(torch.tensor([1.0])), TypeError, "prefix_length: expected an integer"),
        (
            lambda: prefix_lm(torch.tensor([[1]])),
            ValueError,
            r"prefix_length: expected a 1-D .*\(1, 1\)",
        ),
        (
            lambda: prefix_lm(torch.tensor([2, -1])),
            ValueError,
            "prefix_length: expected non-negative",
        ),
        (
            lambda: document(torch.zeros(2, 2, 2, dtype=torch.long)),
            ValueError,
            "document_ids: expected a 1-D or 2-D",
        ),
        (
            lambda: document(torch.zeros(3)),
            TypeError,
            "document_ids: expected an integer tensor, got dtype torch.float32",
        ),
        (
            lambda: document(torch.tensor([0, -1])),
            ValueError,
            "document_ids: expected non-negative",
        ),
        (
            lambda: padding([[1, 2]]),
            ValueError,
            r"lengths: expected a 1-D tensor, got shape \(1, 2\)",
        ),
        (lambda: padding(torch.tensor([True])), TypeError, "lengths: expected an integer tensor"),
        (lambda: padding([3, -1]), ValueError, "lengths: expected non-negative values"),
        (lambda: and_masks(causal(), 3), TypeError, r"mods\[1\]: expected a function, got int"),
        (lambda: or_masks(None), TypeError, r"mods\[0\]: expected a function, got NoneType"),
        (lambda: not_mask("causal"), TypeError, "mod: expected a function, got str"),
    ],
)
def test_bad_arguments_name_themselves(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: create_mask("causal", 1, 1, 2, 2),
            TypeError,
            "mask_mod: expected a function, got str",
        ),
        (
            lambda: create_mask(causal(), 0, 1, 2, 2),
            ValueError,
            "N: expected a positive size, got 0",
        ),
        (lambda: create_mask(causal(), 1, 1.0, 2, 2), TypeError, "H: expected an int, got float"),
        (lambda: create_mask(causal(), 1, 1, 0, 2), ValueError, "L: expected a positive length"),
        (lambda: create_mask(causal(), 1, 1, 2, -3), ValueError, "S: expected a positive length"),
        (
            lambda: create_mask(causal(), 1, 1, 2, 2, q_offset=-1),
            ValueError,
            "q_offset: expected a position >= 0, got -1",
        ),
        (
            lambda: create_mask(lambda b, h, q, kv: (q - kv).float(), 1, 1, 2, 2),
            TypeError,
            "mask_mod: expected a function that returns a bool tensor, got dtype torch.float32",
        ),
        (
            lambda: create_mask(lambda b, h, q, kv: True, 1, 1, 2, 2),
            TypeError,
            "mask_mod: expected a function that returns a tensor, got bool",
        ),
        (
            lambda: create_mask(lambda b, h, q, kv: torch.ones(3, 2, dtype=torch.bool), 1, 1, 2, 2),
            ValueError,
            r"mask_mod: expected a result broadcastable to \(N, H, L, S\) = \(1, 1, 2, 2\), "
            r"got shape \(3, 2\)",
        ),
        (
            lambda: create_mask(
                lambda b, h, q, kv: torch.ones(1, 1, 1, 1, 1, dtype=torch.bool), 1, 1, 2, 2
            ),
            ValueError,
            r"mask_mod: expected a result broadcastable .* got shape \(1, 1, 1, 1, 1\)",
        ),
        (
            lambda: create_mask(document(torch.tensor([0, 0, 1])), 1, 1, 4, 4),
            ValueError,
            r"mask_mod: expected a function defined for every index of \(N, H, L, S\) = "
            r"\(1, 1, 4, 4\), got IndexError",
        ),
        (
            lambda: create_mask(padding([2, 3]), 3, 1, 2, 2),
            ValueError,
            r"mask_mod: expected a function defined for every index .*\(3, 1, 2, 2\)",
        ),
        (
            lambda: block_sparsity(causal(), 1, 1, 4, 4, block_size=0),
            ValueError,
            "block_size: expected a positive size",
        ),
        (
            lambda: block_sparsity(causal(), 1, 1, 4, 4, block_size=(2, 2, 2)),
            TypeError,
            "block_size: expected an int or a pair",
        ),
        (
            lambda: block_sparsity(causal(), 1, 0, 4, 4),
            ValueError,
            "H: expected a positive number of heads",
        ),
        (
            lambda: block_sparsity(causal(), 1, 1, 0, 4),
            ValueError,
            "L: expected a positive length, got 0",
        ),
        (
            lambda: block_sparsity("causal", 1, 1, 4, 4),
            TypeError,
            "mask_mod: expected a function, got str",
        ),
    ],
)
def test_bad_calls_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_package_exports_them():
    assert attention_ref.create_mask is create_mask
    assert attention_ref.block_sparsity is block_sparsity
    from attention_ref import mask_mods

    assert set(mask_mods.__all__) >= {
        "causal",
        "sliding_window",
        "prefix_lm",
        "document",
        "chunked",
        "dilated_sliding_window",
        "padding",
        "and_masks",
        "or_masks",
        "not_mask",
        "create_mask",
        "alibi",
        "softcap",
        "relative_bias",
        "flex_reference",
        "block_sparsity",
    }
    for name in mask_mods.__all__:
        assert callable(getattr(mask_mods, name)), name
