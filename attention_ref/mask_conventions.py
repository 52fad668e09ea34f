"""Convert attention masks between the conventions of PyTorch, Hugging Face and tutorials.

attention_ref follows PyTorch SDPA: a **bool** mask is True where a query **may attend**, and
broadcasts against the scores ``(N, H, L, S)``. Other code means other things by "mask":

    "sdpa"                  F.scaled_dot_product_attention's attn_mask (and attention_ref's):
                            bool, True = may attend, broadcastable to (N, H, L, S)
    "mha_attn_mask"         nn.MultiheadAttention's attn_mask: bool, True = MASKED,
                            (L, S) or (N*H, L, S)
    "mha_key_padding_mask"  nn.MultiheadAttention's key_padding_mask: bool, True = PADDING, (N, S)
    "huggingface"           attention_mask of Hugging Face models: int, 1 = attend, 0 = padding,
                            (N, S)
    "masked_fill"           masked_fill(mask == 0, -1e9), as in the Annotated Transformer and
                            many tutorials: any dtype, 0 = masked, (L, S), (N, L, S) or
                            (N, 1 or H, L, S)

[`to_sdpa_mask`][attention_ref.to_sdpa_mask] turns any of them into an SDPA bool mask,
[`from_sdpa_mask`][attention_ref.from_sdpa_mask] goes back, and
[`to_additive_mask`][attention_ref.to_additive_mask] turns an SDPA bool mask into a float mask to
add to the scores.

Shape legend: N batch, H heads, L query length, S key/value length.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._checks import check_positive_int

__all__ = ["CONVENTIONS", "from_sdpa_mask", "to_additive_mask", "to_sdpa_mask"]

CONVENTIONS = ("sdpa", "mha_attn_mask", "mha_key_padding_mask", "huggingface", "masked_fill")

# What each convention accepts: dtype kinds and numbers of dimensions (None: any).
_KINDS = {
    "sdpa": ("bool",),
    "mha_attn_mask": ("bool",),
    "mha_key_padding_mask": ("bool",),
    "huggingface": ("bool", "int"),
    "masked_fill": ("bool", "int", "float"),
}
_DIMS = {
    "sdpa": None,
    "mha_attn_mask": (2, 3),
    "mha_key_padding_mask": (2,),
    "huggingface": (2,),
    "masked_fill": (2, 3, 4),
}
_SHAPES = {
    "mha_attn_mask": "(L, S) or (N*H, L, S)",
    "mha_key_padding_mask": "(N, S)",
    "huggingface": "(N, S)",
    "masked_fill": "(L, S), (N, L, S) or (N, 1 or H, L, S)",
}


def _kind(mask: Tensor) -> str:
    if mask.dtype == torch.bool:
        return "bool"
    return "float" if mask.is_floating_point() else "int"


def _check_convention(convention: object) -> str:
    if convention not in CONVENTIONS:
        raise ValueError(f"convention: expected one of {CONVENTIONS}, got {convention!r}")
    return convention


def _check_native(mask: object, convention: str) -> Tensor:
    """``mask`` as ``convention`` writes it: the right dtype, rank and values."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask: expected a torch.Tensor, got {type(mask).__name__}")
    kinds = _KINDS[convention]
    if _kind(mask) not in kinds:
        hint = " (a float mask is added to the scores: pass it on unchanged)" * (
            _kind(mask) == "float"
        )
        raise TypeError(
            f"mask: the {convention!r} convention expects a {' or '.join(kinds)} tensor, "
            f"got {mask.dtype}{hint}"
        )
    dims = _DIMS[convention]
    if dims is not None and mask.dim() not in dims:
        raise ValueError(
            f"mask: the {convention!r} convention expects shape {_SHAPES[convention]}, "
            f"got {tuple(mask.shape)}"
        )
    if convention == "huggingface" and mask.dtype != torch.bool:
        values = mask.unique().tolist()
        if not set(values) <= {0, 1}:
            raise ValueError(
                f"mask: a Hugging Face attention_mask holds 0 (padding) and 1 (attend), "
                f"got values {values}"
            )
    return mask


def _check_sdpa(mask: object) -> Tensor:
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask: expected a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(f"mask: expected a bool SDPA mask (True = may attend), got {mask.dtype}")
    return mask


def _check_heads(num_heads: object, what: str, total: int | None = None) -> int:
    """``num_heads`` as a positive int that divides ``total`` (the N*H rows of a 3-D mask)."""
    if num_heads is None:
        raise ValueError(f"num_heads: expected a positive int for {what}, got None")
    heads = check_positive_int("num_heads", num_heads, "number of heads")
    if total is not None and total % heads != 0:
        raise ValueError(f"num_heads: expected a divisor of N*H = {total}, got {heads}")
    return heads


def _per_head_shape(mask: Tensor, num_heads: object) -> tuple[int, int, int, int]:
    """(N, H, L, S) of a 4-D mask expanded to ``num_heads`` heads."""
    if mask.dim() != 4:
        raise ValueError(
            f"mask: an 'mha_attn_mask' is made from (L, S) or (N, H, L, S), got {tuple(mask.shape)}"
        )
    heads = _check_heads(num_heads, "an (N, H, L, S) mask")
    N, H, L, S = mask.shape
    if H not in (1, heads):
        raise ValueError(
            f"mask: expected 1 or num_heads = {heads} heads in dimension 1, got {tuple(mask.shape)}"
        )
    return N, heads, L, S


def _per_key(mask: Tensor) -> Tensor:
    """(N, 1, 1, S) -> (N, S): a padding mask must not depend on the head or the query."""
    if mask.dim() != 4 or mask.shape[1:3] != (1, 1):
        raise ValueError(
            "mask: a padding mask must not depend on the head or the query; expected shape "
            f"(N, 1, 1, S), got {tuple(mask.shape)}"
        )
    return mask[:, 0, 0, :]  # (N, S)


def to_sdpa_mask(mask: Tensor, convention: str, *, num_heads: int | None = None) -> Tensor:
    """Convert a mask written in ``convention`` into an SDPA bool mask (True = may attend).

    The result broadcasts against the scores ``(N, H, L, S)``: pass it as ``attn_mask`` to
    ``torch.nn.functional.scaled_dot_product_attention`` or to attention_ref's functions.

    Args:
        mask: The mask as ``convention`` writes it:

            - ``"sdpa"``: bool, True = may attend, any broadcastable shape;
            - ``"mha_attn_mask"``: bool ``(L, S)`` or ``(N*H, L, S)``, True = **masked**
              (``nn.MultiheadAttention``'s ``attn_mask``);
            - ``"mha_key_padding_mask"``: bool ``(N, S)``, True = **padding**
              (``nn.MultiheadAttention``'s ``key_padding_mask``);
            - ``"huggingface"``: int or bool ``(N, S)``, 1 = attend, 0 = padding;
            - ``"masked_fill"``: bool, int or float, 0 = masked
              (``masked_fill(mask == 0, ...)``), ``(L, S)``, ``(N, L, S)`` or
              ``(N, 1 or H, L, S)``.
        convention: ``"sdpa"``, ``"mha_attn_mask"``, ``"mha_key_padding_mask"``,
            ``"huggingface"`` or ``"masked_fill"``
            (``attention_ref.mask_conventions.CONVENTIONS``).
        num_heads: H, needed only to split a 3-D ``"mha_attn_mask"`` of ``N*H`` rows.

    Returns:
        A bool tensor, True where a query may attend: ``mask`` itself for ``"sdpa"``;
        ``mask``'s shape from a 2-D attention mask or a 4-D ``"masked_fill"`` mask;
        ``(N, 1, 1, S)`` from a padding mask; ``(N, H, L, S)`` from a 3-D
        ``"mha_attn_mask"``; ``(N, 1, L, S)`` from a 3-D ``"masked_fill"`` mask.

    Raises:
        ValueError: On an unknown ``convention`` (not in
            ``attention_ref.mask_conventions.CONVENTIONS``), a shape the convention does not
            use, a Hugging Face mask with values other than 0 and 1, or a missing
            ``num_heads``.
        TypeError: If ``mask`` is not a tensor of a dtype the convention uses (a float mask
            is additive in SDPA and ``nn.MultiheadAttention`` alike: it needs no conversion).

    Examples:
        >>> import torch
        >>> from attention_ref import to_sdpa_mask
        >>> hf = torch.tensor([[1, 1, 0], [1, 0, 0]])  # Hugging Face: 1 = attend
        >>> keep = to_sdpa_mask(hf, "huggingface")
        >>> keep.shape
        torch.Size([2, 1, 1, 3])
        >>> keep[:, 0, 0]
        tensor([[ True,  True, False],
                [ True, False, False]])
        >>> padding = torch.tensor([[False, False, True]])  # nn.MultiheadAttention: True = padding
        >>> to_sdpa_mask(padding, "mha_key_padding_mask")[:, 0, 0]
        tensor([[ True,  True, False]])
    """
    mask = _check_native(mask, _check_convention(convention))
    if convention == "sdpa":
        return mask  # already True = may attend
    if convention == "mha_attn_mask":
        keep = ~mask  # True meant "masked"
        if keep.dim() == 3:  # (N*H, L, S) -> (N, H, L, S)
            heads = _check_heads(num_heads, "a 3-D attn_mask", total=keep.size(0))
            keep = keep.reshape(-1, heads, *keep.shape[1:])
        return keep
    if convention == "mha_key_padding_mask":
        return ~mask[:, None, None, :]  # (N, 1, 1, S); True meant "padding"
    if convention == "huggingface":
        return (mask == 1)[:, None, None, :]  # (N, 1, 1, S); 1 = attend
    keep = mask != 0  # "masked_fill": masked_fill(mask == 0, ...) removes the zeros
    return keep[:, None] if keep.dim() == 3 else keep  # (N, L, S) -> (N, 1, L, S)


def from_sdpa_mask(mask: Tensor, convention: str, *, num_heads: int | None = None) -> Tensor:
    """Convert an SDPA bool mask (True = may attend) into the mask that ``convention`` expects.

    The inverse of [`to_sdpa_mask`][attention_ref.to_sdpa_mask]:
    ``to_sdpa_mask(from_sdpa_mask(m, c), c)`` gives ``m`` back, with two exceptions. Through
    a 4-D ``"mha_attn_mask"``, ``m`` comes back expanded to ``(N, H, L, S)``; pass the same
    ``num_heads`` both ways. Through ``"masked_fill"``, a 3-D ``m``, which SDPA reads as
    ``(H, L, S)``, comes back as ``(H, 1, L, S)``: that convention reads 3-D as ``(N, L, S)``,
    so its heads become the batch; give it a per-head mask in 4-D. Expand a 4-D mask with
    N = 1 to ``(N, H, L, S)`` before ``"mha_attn_mask"``: a 3-D ``attn_mask`` of
    ``nn.MultiheadAttention`` holds one mask per sequence and head.

    Args:
        mask: A bool SDPA mask. For ``"mha_key_padding_mask"`` and ``"huggingface"`` it must
            be a padding mask ``(N, 1, 1, S)``; for ``"mha_attn_mask"`` it is ``(L, S)`` or
            ``(N, H, L, S)`` (H may be 1, then it is repeated ``num_heads`` times).
        convention: ``"sdpa"``, ``"mha_attn_mask"``, ``"mha_key_padding_mask"``,
            ``"huggingface"`` or ``"masked_fill"``
            (``attention_ref.mask_conventions.CONVENTIONS``).
        num_heads: H, needed only to build a 3-D ``"mha_attn_mask"`` from a 4-D mask.

    Returns:
        ``"sdpa"``: ``mask`` itself; ``"mha_attn_mask"``: bool ``(L, S)`` or
        ``(N*H, L, S)``, True = masked; ``"mha_key_padding_mask"``: bool ``(N, S)``, True =
        padding; ``"huggingface"``: int64 ``(N, S)``, 1 = attend; ``"masked_fill"``: int64 of
        ``mask``'s shape, 0 = masked.

    Raises:
        ValueError: On an unknown ``convention`` (not in
            ``attention_ref.mask_conventions.CONVENTIONS``), a mask that depends on the head or
            the query where a padding mask is expected, a shape the convention does not use, or
            a missing ``num_heads``.
        TypeError: If ``mask`` is not a bool tensor.

    Examples:
        >>> from attention_ref import from_sdpa_mask
        >>> from attention_ref import padding_mask
        >>> keep = padding_mask([3, 1])  # (N, 1, 1, S), True = may attend
        >>> from_sdpa_mask(keep, "huggingface")
        tensor([[1, 1, 1],
                [1, 0, 0]])
        >>> from_sdpa_mask(keep, "mha_key_padding_mask")  # True = padding
        tensor([[False, False, False],
                [False,  True,  True]])
    """
    mask, convention = _check_sdpa(mask), _check_convention(convention)
    if convention == "sdpa":
        return mask
    if convention == "mha_key_padding_mask":
        return ~_per_key(mask)  # (N, S), True = padding
    if convention == "huggingface":
        return _per_key(mask).long()  # (N, S), 1 = attend
    if convention == "masked_fill":
        return mask.long()  # 1 = attend, 0 = masked
    if mask.dim() == 2:  # "mha_attn_mask" (L, S), True = masked
        return ~mask
    N, H, L, S = _per_head_shape(mask, num_heads)  # H = num_heads
    return ~mask.expand(N, H, L, S).reshape(N * H, L, S)  # (N*H, L, S), True = masked


def to_additive_mask(
    mask: Tensor, dtype: torch.dtype = torch.float32, *, fill: str = "min"
) -> Tensor:
    """Turn an SDPA bool mask into a float mask that is added to the scores.

    0 where ``mask`` is True (may attend); where it is False, ``torch.finfo(dtype).min`` (the
    most negative finite number, ``fill="min"``) or ``-inf`` (``fill="-inf"``). Both remove a
    key from a row that still has another one. They differ on a **fully masked row**: with
    ``-inf``, a plain softmax gives NaN (attention_ref and SDPA give zeros); with the finite
    minimum, in float32 and bfloat16, every score in the row rounds to that minimum, so the row
    becomes uniform. float16 is too coarse near its minimum (the spacing there is 32): the row
    keeps a trace of the scores, and a score of -16 or below plus the minimum overflows to -inf:
    that key drops out, and a row where every score does is NaN again; a bool mask with a safe
    softmax has no such edge. Never use a fixed number such as -1e9: it does not fit in float16,
    where ``masked_fill`` with it raises an overflow error and a tensor of it holds -inf.

    Args:
        mask: Bool, True = may attend, any shape.
        dtype: The floating dtype of the scores it will be added to.
        fill: ``"min"`` for ``torch.finfo(dtype).min``, ``"-inf"`` for ``float("-inf")``.

    Returns:
        A ``dtype`` tensor of ``mask``'s shape: 0 or the fill value.

    Raises:
        TypeError: If ``mask`` is not bool or ``dtype`` is not floating.
        ValueError: If ``fill`` is neither ``"min"`` nor ``"-inf"``.

    Examples:
        >>> import torch
        >>> from attention_ref import to_additive_mask
        >>> keep = torch.tensor([True, False])
        >>> to_additive_mask(keep, torch.float16)
        tensor([     0., -65504.], dtype=torch.float16)
        >>> to_additive_mask(keep, fill="-inf")
        tensor([0., -inf])
    """
    mask = _check_sdpa(mask)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype: expected a floating-point torch.dtype, got {dtype!r}")
    if fill not in ("min", "-inf"):
        raise ValueError(f"fill: expected 'min' or '-inf', got {fill!r}")
    masked = torch.finfo(dtype).min if fill == "min" else float("-inf")
    zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return zeros.masked_fill(~mask, masked)  # 0 = keep, very negative = remove
