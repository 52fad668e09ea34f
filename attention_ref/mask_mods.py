"""Masks as functions of indices: ``mask_mod(b, h, q_idx, kv_idx) -> bool``, True = may attend.

This is how PyTorch's FlexAttention (``torch.nn.attention.flex_attention``) and Hugging Face's
``masking_utils`` describe a mask: not as an (L, S) tensor but as a rule that says, for batch
``b``, head ``h``, query ``q_idx`` and key ``kv_idx``, whether the query may attend to the key.
Each function here returns such a rule. The rules use tensor operations only (no Python ``if``
on a value, no ``.item()``), so they work on index tensors of any broadcastable shape and
PyTorch's own ``create_mask`` and ``create_block_mask`` accept them unchanged (PyTorch's
``flex_attention`` takes ``block_mask=create_block_mask(rule, ...)``).

A rule sees indices only, so it is aligned top-left: query 0 is position 0. For queries that
come after cached keys, ``create_mask(..., q_offset=...)`` passes ``q_idx + q_offset``.

- masks: ``causal``, ``sliding_window``, ``prefix_lm``, ``document``, ``chunked``,
  ``dilated_sliding_window``, ``padding``;
- combinators: ``and_masks``, ``or_masks``, ``not_mask``;
- ``create_mask``: the rule as a bool (N, H, L, S) tensor;
- ``block_sparsity``: the percentage of (b_q × b_k) tiles the rule leaves empty;
- defined in ``attention_ref.flex`` and importable from here: the score functions ``alibi``,
  ``softcap``, ``relative_bias``
  (each returns a ``score_mod(score, b, h, q_idx, kv_idx)``, the new score) and
  ``flex_reference``, FlexAttention's semantics in plain PyTorch.

Shape legend: N batch, H heads, L query length, S key length.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ._checks import check_block_size, check_positive_int
from ._mods import MaskMod, check_callable, mask_values, walk_tiles
from .flex import alibi, flex_reference, relative_bias, softcap

__all__ = [
    "alibi",
    "and_masks",
    "block_sparsity",
    "causal",
    "chunked",
    "create_mask",
    "dilated_sliding_window",
    "document",
    "flex_reference",
    "not_mask",
    "or_masks",
    "padding",
    "prefix_lm",
    "relative_bias",
    "sliding_window",
    "softcap",
]


def _int_tensor(name: str, values: Tensor | Sequence[int], dims: tuple[int, ...]) -> Tensor:
    """``values`` as an integer tensor with one of ``dims`` dimensions and no negative entry."""
    values = torch.as_tensor(values)
    if values.is_floating_point() or values.is_complex() or values.dtype == torch.bool:
        raise TypeError(f"{name}: expected an integer tensor, got dtype {values.dtype}")
    if values.dim() not in dims:
        wanted = " or ".join(f"{d}-D" for d in dims)
        raise ValueError(f"{name}: expected a {wanted} tensor, got shape {tuple(values.shape)}")
    if values.numel() and bool((values < 0).any()):
        raise ValueError(f"{name}: expected non-negative values, got {values.tolist()}")
    return values


def causal() -> MaskMod:
    """Causal attention: query ``q`` may attend to the keys up to its own position, ``kv <= q``.

    Returns:
        A ``mask_mod(b, h, q_idx, kv_idx)``.

    Examples:
        >>> from attention_ref.mask_mods import causal, create_mask
        >>> create_mask(causal(), 1, 1, 3, 4)[0, 0].int()
        tensor([[1, 0, 0, 0],
                [1, 1, 0, 0],
                [1, 1, 1, 0]], dtype=torch.int32)
    """

    def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return q_idx >= kv_idx

    return mask_mod


def sliding_window(window: int, sink_tokens: int = 0) -> MaskMod:
    """Causal local attention: query ``q`` sees key ``kv`` when ``0 <= q - kv < window``.

    The same rule as [`sliding_window_mask`][attention_ref.sliding_window_mask] with
    ``causal=True`` (its default): the query itself and the ``window - 1`` keys before it, and
    with ``sink_tokens`` also the first ``sink_tokens`` keys (sink tokens, StreamingLLM's
    "attention sinks"). A rolling ``KVCache`` keeps these keys, and its ``rule()`` is this
    function, so a module decoding with a rolling cache masks with it.

    Args:
        window: How many keys a query sees at most, besides the sink tokens; at least 1.
        sink_tokens: How many first keys every later query sees as well; at least 0.

    Returns:
        A ``mask_mod(b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If ``window`` or ``sink_tokens`` is not an int.
        ValueError: If ``window`` is below 1 or ``sink_tokens`` below 0.

    Examples:
        >>> from attention_ref.mask_mods import create_mask, sliding_window
        >>> create_mask(sliding_window(2), 1, 1, 4, 4)[0, 0].int()
        tensor([[1, 0, 0, 0],
                [1, 1, 0, 0],
                [0, 1, 1, 0],
                [0, 0, 1, 1]], dtype=torch.int32)
        >>> create_mask(sliding_window(2, sink_tokens=1), 1, 1, 4, 4)[0, 0].int()
        tensor([[1, 0, 0, 0],
                [1, 1, 0, 0],
                [1, 1, 1, 0],
                [1, 0, 1, 1]], dtype=torch.int32)
    """
    window = check_positive_int("window", window, "length")
    sink_tokens = check_positive_int("sink_tokens", sink_tokens, "count", minimum=0)

    def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        distance = q_idx - kv_idx  # how far back the key is
        return (distance >= 0) & ((distance < window) | (kv_idx < sink_tokens))

    return mask_mod


def prefix_lm(prefix_length: int | Tensor) -> MaskMod:
    """Prefix language model: every query sees the first ``prefix_length`` keys, then causal.

    The prefix (a prompt, an image's tokens) is read in both directions; what follows is
    generated left to right: query ``q`` sees key ``kv`` when ``kv < prefix_length`` or
    ``kv <= q``.

    Args:
        prefix_length: One length for the whole batch (an int >= 0), or one per sequence,
            an integer tensor ``(N,)``.

    Returns:
        A ``mask_mod(b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If ``prefix_length`` is neither an int nor an integer tensor.
        ValueError: If it is negative or a tensor that is not 1-D.

    Examples:
        >>> import torch
        >>> from attention_ref.mask_mods import create_mask, prefix_lm
        >>> create_mask(prefix_lm(2), 1, 1, 4, 4)[0, 0].int()
        tensor([[1, 1, 0, 0],
                [1, 1, 0, 0],
                [1, 1, 1, 0],
                [1, 1, 1, 1]], dtype=torch.int32)
        >>> create_mask(prefix_lm(torch.tensor([0, 3])), 2, 1, 3, 3)[:, 0].int()
        tensor([[[1, 0, 0],
                 [1, 1, 0],
                 [1, 1, 1]],
        <BLANKLINE>
                [[1, 1, 1],
                 [1, 1, 1],
                 [1, 1, 1]]], dtype=torch.int32)
    """
    if isinstance(prefix_length, Tensor):
        lengths = _int_tensor("prefix_length", prefix_length, dims=(1,))

        def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
            return (kv_idx < lengths[b]) | (q_idx >= kv_idx)  # sequence b's prefix

    else:
        length = check_positive_int("prefix_length", prefix_length, "length", minimum=0)

        def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
            return (kv_idx < length) | (q_idx >= kv_idx)  # one prefix for every sequence

    return mask_mod


def document(document_ids: Tensor | Sequence[int]) -> MaskMod:
    """Packed sequences: a query attends only to the keys of its own document.

    Several documents are packed into one sequence, and ``document_ids[kv]`` says which
    document position ``kv`` belongs to. The rule is bidirectional; a decoder combines it with
    causality, ``and_masks(causal(), document(ids))``, as Hugging Face combines its
    ``packed_sequence_mask_function`` with the causal one. Query ``q`` is looked up at
    position ``q`` of the same ids, so the queries must be positions of the packed sequence.

    Args:
        document_ids: The document of each position, an integer tensor or list: ``(S,)``
            for the whole batch or ``(N, S)`` for one packing per sequence.

    Returns:
        A ``mask_mod(b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If ``document_ids`` is not an integer tensor or list of ints.
        ValueError: If it is not 1-D or 2-D, or has a negative id.

    Examples:
        >>> import torch
        >>> from attention_ref.mask_mods import and_masks, causal, create_mask, document
        >>> ids = torch.tensor([0, 0, 1, 1, 1])  # two documents, of 2 and 3 tokens
        >>> create_mask(and_masks(causal(), document(ids)), 1, 1, 5, 5)[0, 0].int()
        tensor([[1, 0, 0, 0, 0],
                [1, 1, 0, 0, 0],
                [0, 0, 1, 0, 0],
                [0, 0, 1, 1, 0],
                [0, 0, 1, 1, 1]], dtype=torch.int32)
    """
    ids = _int_tensor("document_ids", document_ids, dims=(1, 2))
    if ids.dim() == 1:

        def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
            return ids[q_idx] == ids[kv_idx]  # one packing for every sequence

    else:

        def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
            return ids[b, q_idx] == ids[b, kv_idx]  # sequence b's packing

    return mask_mod


def chunked(chunk_size: int) -> MaskMod:
    """Llama 4's chunked attention mask: causal inside fixed chunks of ``chunk_size`` positions.

    Not ``chunked_attention``, which computes any mask block by block.

    The sequence is cut into chunks ``0..C-1``, ``C..2C-1``, ...; a query sees the keys of its
    own chunk up to itself: ``q // C == kv // C`` and ``kv <= q``. Unlike a sliding window,
    the first query of each chunk sees only itself.

    Args:
        chunk_size: C, the positions per chunk; at least 1.

    Returns:
        A ``mask_mod(b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If ``chunk_size`` is not an int.
        ValueError: If ``chunk_size`` is below 1.

    Examples:
        >>> from attention_ref.mask_mods import chunked, create_mask
        >>> create_mask(chunked(2), 1, 1, 4, 4)[0, 0].int()
        tensor([[1, 0, 0, 0],
                [1, 1, 0, 0],
                [0, 0, 1, 0],
                [0, 0, 1, 1]], dtype=torch.int32)
    """
    chunk_size = check_positive_int("chunk_size", chunk_size, "size")

    def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        same_chunk = q_idx // chunk_size == kv_idx // chunk_size
        return same_chunk & (q_idx >= kv_idx)

    return mask_mod


def dilated_sliding_window(window: int, dilation: int) -> MaskMod:
    """A causal window of ``window`` keys spaced ``dilation`` apart.

    Query ``q`` sees key ``kv`` when ``d = q - kv`` satisfies ``d >= 0``,
    ``d % dilation == 0`` and ``d // dilation < window``: itself, ``q - dilation``, ...,
    ``q - (window - 1) · dilation``. With ``dilation=1`` it is ``sliding_window(window)``.

    Args:
        window: How many keys a query sees at most; at least 1.
        dilation: The step between them; at least 1.

    Returns:
        A ``mask_mod(b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If ``window`` or ``dilation`` is not an int.
        ValueError: If one of them is below 1.

    Examples:
        >>> from attention_ref.mask_mods import create_mask, dilated_sliding_window
        >>> create_mask(dilated_sliding_window(2, dilation=2), 1, 1, 5, 5)[0, 0].int()
        tensor([[1, 0, 0, 0, 0],
                [0, 1, 0, 0, 0],
                [1, 0, 1, 0, 0],
                [0, 1, 0, 1, 0],
                [0, 0, 1, 0, 1]], dtype=torch.int32)
    """
    window = check_positive_int("window", window, "length")
    dilation = check_positive_int("dilation", dilation, "step")

    def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        distance = q_idx - kv_idx
        on_grid = distance % dilation == 0
        return (distance >= 0) & on_grid & (distance // dilation < window)

    return mask_mod


def padding(lengths: Tensor | Sequence[int]) -> MaskMod:
    """Right padding: the keys at or past each sequence's length are masked, ``kv < lengths[b]``.

    [`padding_mask`][attention_ref.padding_mask] as a mask function. A query that is itself
    padding still sees the real keys; its output is ignored downstream.

    Args:
        lengths: ``(N,)``, the true length of each sequence (an integer tensor or a list).

    Returns:
        A ``mask_mod(b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If ``lengths`` is not an integer tensor or list of ints.
        ValueError: If it is not 1-D or has a negative length.

    Examples:
        >>> from attention_ref.mask_mods import create_mask, padding
        >>> create_mask(padding([3, 1]), 2, 1, 1, 4)[:, 0, 0].int()
        tensor([[1, 1, 1, 0],
                [1, 0, 0, 0]], dtype=torch.int32)
    """
    lengths = _int_tensor("lengths", lengths, dims=(1,))

    def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return kv_idx < lengths[b]

    return mask_mod


def _check_mods(mods: tuple[MaskMod, ...]) -> None:
    for i, mod in enumerate(mods):
        check_callable(f"mods[{i}]", mod)


def and_masks(*mods: MaskMod) -> MaskMod:
    """Attend where **every** rule allows it (the intersection).

    With no rules, every pair is allowed.

    Args:
        *mods: ``mask_mod`` functions.

    Returns:
        A ``mask_mod(b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If one of ``mods`` is not a function.

    Examples:
        >>> from attention_ref.mask_mods import and_masks, causal, create_mask, padding
        >>> create_mask(and_masks(causal(), padding([2])), 1, 1, 3, 3)[0, 0].int()
        tensor([[1, 0, 0],
                [1, 1, 0],
                [1, 1, 0]], dtype=torch.int32)
    """
    _check_mods(mods)

    def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        allowed = torch.ones((), dtype=torch.bool, device=q_idx.device)
        for mod in mods:
            allowed = allowed & mod(b, h, q_idx, kv_idx)
        return allowed

    return mask_mod


def or_masks(*mods: MaskMod) -> MaskMod:
    """Attend where **any** rule allows it (the union).

    With no rules, nothing is allowed.

    Args:
        *mods: ``mask_mod`` functions.

    Returns:
        A ``mask_mod(b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If one of ``mods`` is not a function.

    Examples:
        >>> from attention_ref.mask_mods import create_mask, or_masks, sliding_window
        >>> def first_key(b, h, q_idx, kv_idx):  # every query also sees key 0
        ...     return kv_idx == 0
        >>> create_mask(or_masks(sliding_window(2), first_key), 1, 1, 4, 4)[0, 0].int()
        tensor([[1, 0, 0, 0],
                [1, 1, 0, 0],
                [1, 1, 1, 0],
                [1, 0, 1, 1]], dtype=torch.int32)
    """
    _check_mods(mods)

    def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        allowed = torch.zeros((), dtype=torch.bool, device=q_idx.device)
        for mod in mods:
            allowed = allowed | mod(b, h, q_idx, kv_idx)
        return allowed

    return mask_mod


def not_mask(mod: MaskMod) -> MaskMod:
    """Attend where the rule does **not** allow it (the complement).

    Args:
        mod: A ``mask_mod`` function.

    Returns:
        A ``mask_mod(b, h, q_idx, kv_idx)``.

    Raises:
        TypeError: If ``mod`` is not a function.

    Examples:
        >>> from attention_ref.mask_mods import causal, create_mask, not_mask
        >>> create_mask(not_mask(causal()), 1, 1, 3, 3)[0, 0].int()  # strictly the future
        tensor([[0, 1, 1],
                [0, 0, 1],
                [0, 0, 0]], dtype=torch.int32)
    """
    check_callable("mod", mod)

    def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return ~mod(b, h, q_idx, kv_idx)

    return mask_mod


def _check_sizes(N: int, H: int, L: int, S: int) -> tuple[int, int, int, int]:
    return (
        check_positive_int("N", N, "size"),
        check_positive_int("H", H, "number of heads"),
        check_positive_int("L", L, "length"),
        check_positive_int("S", S, "length"),
    )


def create_mask(
    mask_mod: MaskMod,
    N: int,
    H: int,
    L: int,
    S: int,
    *,
    q_offset: int = 0,
    device: torch.device | str | None = None,
) -> Tensor:
    """The rule as a tensor: ``mask_mod`` called once on index tensors that broadcast.

    ``mask_mod(b, h, q_idx, kv_idx)`` gets ``b`` of shape (N, 1, 1, 1), ``h`` (1, H, 1, 1),
    ``q_idx`` (1, 1, L, 1) and ``kv_idx`` (1, 1, 1, S): no loop over positions, no ``vmap``.
    The query indices start at ``q_offset``: ``L`` new queries after ``S - L`` cached keys
    pass ``q_offset=S - L``, as Hugging Face's ``add_offsets_to_mask_function`` does.

    Args:
        mask_mod: The rule, ``mask_mod(b, h, q_idx, kv_idx) -> bool``.
        N: The batch size.
        H: The number of (query) heads.
        L: The number of queries.
        S: The number of keys.
        q_offset: The position of the first query; >= 0.
        device: Where to create the indices (and so the mask).

    Returns:
        A bool tensor ``(N, H, L, S)``, True where attention is allowed: SDPA's convention.

    Raises:
        TypeError: If ``mask_mod`` is not a function or does not return a bool tensor, or a
            size or ``q_offset`` is not an int.
        ValueError: If a size is below 1, ``q_offset`` is negative, the result does not
            broadcast to (N, H, L, S), or ``mask_mod`` indexes a tensor it captured out of
            range (document ids shorter than the positions asked for, say).

    Examples:
        >>> from attention_ref.mask_mods import causal, create_mask
        >>> create_mask(causal(), 1, 1, 2, 4, q_offset=2)[0, 0].int()  # 2 new after 2 cached
        tensor([[1, 1, 1, 0],
                [1, 1, 1, 1]], dtype=torch.int32)
    """
    shape = _check_sizes(N, H, L, S)
    q_offset = check_positive_int("q_offset", q_offset, "position", minimum=0)
    allowed = mask_values(mask_mod, shape, q_offset, device)  # broadcasts to (N, H, L, S)
    return allowed.expand(shape).contiguous()  # (N, H, L, S)


def block_sparsity(
    mask_mod: MaskMod, N: int, H: int, L: int, S: int, *, block_size: int | tuple[int, int] = 128
) -> float:
    """The percentage of the tiles (b_q × b_k, from ``block_size``) that the mask leaves empty.

    The scores of each batch element and head are cut into ``ceil(L / b_q)`` by
    ``ceil(S / b_k)`` tiles (the last ones partial); a tile where the rule allows nothing need
    not be computed at all. Each batch element's and head's tiles are counted, as PyTorch does;
    ``attention_ref.tile_plan.plan_tiles`` walks the same tiles but skips one only where it is
    empty for the whole batch and every head, since ``chunked_attention`` computes all heads of
    a tile together.
    This is what ``BlockMask.sparsity()`` of PyTorch's ``create_block_mask`` reports when
    ``L`` and ``S`` are multiples of the block size. Otherwise PyTorch counts each computed tile
    at its full block area, partial ones too, divides by ``N·H·L·S``, and can report a
    negative percentage.

    Args:
        mask_mod: The rule, ``mask_mod(b, h, q_idx, kv_idx) -> bool``.
        N: The batch size.
        H: The number of heads.
        L: The number of queries.
        S: The number of keys.
        block_size: The tile's side (b_q = b_k), or a pair ``(b_q, b_k)``.

    Returns:
        A float from 0 (every tile computed) to 100 (none).

    Raises:
        TypeError: If ``mask_mod`` is not a function or does not return a bool tensor, a size
            is not an int, or ``block_size`` is neither an int nor a pair.
        ValueError: If a size or block size is below 1, the result does not broadcast to
            (N, H, L, S), or ``mask_mod`` indexes a tensor it captured out of range.

    Examples:
        >>> from attention_ref.mask_mods import block_sparsity, causal
        >>> block_sparsity(causal(), 1, 1, 256, 256)  # 1 of the 2 × 2 tiles is empty
        25.0
        >>> block_sparsity(causal(), 1, 1, 100, 100)  # one partial tile, computed
        0.0
    """
    check_callable("mask_mod", mask_mod)
    shape = _check_sizes(N, H, L, S)
    block = check_block_size(block_size)
    computed = 0  # tiles, per batch element and head, with at least one allowed score
    for _, some, _ in walk_tiles(mask_mod, shape, block):  # the walk the tile planner makes
        computed += int(some.expand(N, H, -1).sum())
    total = N * H * -(-L // block[0]) * -(-S // block[1])
    return 100.0 * (1.0 - computed / total)
