"""Input checks shared by the attention functions: clear errors instead of deep stack traces."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence

import torch
from torch import Tensor


def _shape(x: Tensor) -> tuple[int, ...]:
    return tuple(x.shape)


def check_tensor(name: str, x: object, *, min_dim: int = 0, floating: bool = True) -> None:
    """Raise TypeError/ValueError naming ``name`` unless ``x`` is a suitable tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if floating and not x.is_floating_point():
        raise TypeError(f"{name}: expected a floating-point tensor, got dtype {x.dtype}")
    if x.dim() < min_dim:
        raise ValueError(f"{name}: expected at least {min_dim} dimensions, got shape {_shape(x)}")


def check_qkv(query: Tensor, key: Tensor, value: Tensor | None = None) -> None:
    """Check ranks, dtypes and the D and S sizes of query, key and (optionally) value."""
    check_tensor("query", query, min_dim=2)
    check_tensor("key", key, min_dim=2)
    _check_same_size(-1, "last dimension D", ("query", query), ("key", key))
    _check_same_dtype(query, "key", key)
    if value is None:
        return
    check_tensor("value", value, min_dim=2)
    _check_same_size(-2, "length S (dimension -2)", ("key", key), ("value", value))
    _check_same_dtype(query, "value", value)


def _check_same_size(dim: int, what: str, *named: tuple[str, Tensor]) -> None:
    (a, x), (b, y) = named
    if x.size(dim) != y.size(dim):
        raise ValueError(
            f"{a} and {b}: expected the same {what}, got {a} {_shape(x)} and {b} {_shape(y)}"
        )


def _check_same_dtype(query: Tensor, name: str, x: Tensor) -> None:
    if x.dtype != query.dtype:
        raise TypeError(
            f"query and {name}: expected the same dtype, got {query.dtype} and {x.dtype}"
        )


def broadcasts_to(shape: Sequence[int], target: torch.Size) -> bool:
    """Whether a tensor of ``shape`` broadcasts to ``target`` without growing it."""
    try:
        return torch.broadcast_shapes(shape, target) == target
    except RuntimeError:
        return False


def check_positive_int(name: str, value: object, what: str = "int", minimum: int = 1) -> int:
    """``value`` if it is an int >= ``minimum`` (1 unless given; not a bool), else an error."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < minimum:
        expected = f"a positive {what}" if minimum == 1 else f"a {what} >= {minimum}"
        raise ValueError(f"{name}: expected {expected}, got {value}")
    return value


def check_block_size(block_size: object) -> tuple[int, int]:
    """``(b_q, b_k)`` from one int or a pair of positive ints."""
    sizes = block_size if isinstance(block_size, tuple) else (block_size, block_size)
    if len(sizes) != 2:
        raise TypeError(f"block_size: expected an int or a pair (b_q, b_k), got {block_size!r}")
    return check_positive_int("block_size", sizes[0], "size"), check_positive_int(
        "block_size", sizes[1], "size"
    )


def check_dropout(dropout_p: float, name: str = "dropout_p") -> None:
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"{name}: expected a probability in [0, 1), got {dropout_p}")


def check_mask(attn_mask: Tensor, scores_shape: torch.Size) -> None:
    """A mask must be bool or floating and broadcast to the scores' shape (..., L, S)."""
    if not isinstance(attn_mask, Tensor):
        raise TypeError(f"attn_mask: expected a torch.Tensor, got {type(attn_mask).__name__}")
    if attn_mask.dtype != torch.bool and not attn_mask.is_floating_point():
        raise TypeError(
            "attn_mask: expected a bool (True = may attend) or floating (added to the scores) "
            f"dtype, got {attn_mask.dtype}"
        )
    if not broadcasts_to(attn_mask.shape, scores_shape):
        raise ValueError(
            f"attn_mask: expected a shape broadcastable to {tuple(scores_shape)}, "
            f"got {_shape(attn_mask)}"
        )


def check_sinks(sinks: Tensor, scores_shape: torch.Size) -> None:
    """Sink logits must be floating and broadcast, one per head, to the scores' ``(..., H)``."""
    check_tensor("sinks", sinks)
    if not broadcasts_to((*sinks.shape, 1, 1), scores_shape):
        raise ValueError(
            f"sinks: expected one logit per head, a shape broadcastable to "
            f"{tuple(scores_shape[:-2])} (the scores {tuple(scores_shape)} without L and S), "
            f"got {_shape(sinks)}"
        )


def check_attention_fn_sinks(
    attention_fn: Callable[..., Tensor] | None, sinks: bool, dropout: float = 0.0
) -> None:
    """A custom ``attention_fn`` gets no dropout, and with ``sinks=True`` must take ``sinks=``
    (or ``**kwargs``)."""
    if attention_fn is not None and dropout > 0.0:
        raise ValueError(f"dropout: expected 0 with attention_fn, got {dropout}")
    if attention_fn is None or not sinks:
        return
    try:
        params = inspect.signature(attention_fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature, e.g. torch's SDPA
        params = None
    name = getattr(attention_fn, "__name__", type(attention_fn).__name__)
    if params is None or not any(
        p.name == "sinks" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params
    ):
        got = "has no signature to read" if params is None else "takes no sinks argument"
        raise ValueError(
            f"attention_fn: sinks=True passes sinks= to the attention function, but {name} "
            f"{got} (wrap it in a function that takes sinks, or use the default)"
        )


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``; otherwise a ValueError naming ``name``."""
    if value not in choices:
        raise ValueError(f"{name}: expected one of {list(choices)}, got {value!r}")
    return str(value)


def check_heads(
    embed_dim: int,
    num_heads: int,
    head_dim: int | None,
    num_kv_heads: int | None,
    rope_base: float | None = None,
) -> tuple[int, int]:
    """``(head_dim, num_kv_heads)``, their defaults ``E // H`` and ``H`` filled in, all checked.

    Rotary positions need a positive ``rope_base`` and an even head width (features in pairs).
    """
    check_positive_int("embed_dim", embed_dim, "width")
    check_positive_int("num_heads", num_heads, "number of heads")
    width = "embed_dim / num_heads" if head_dim is None else "head_dim"
    if head_dim is None and embed_dim % num_heads:
        raise ValueError(
            f"embed_dim: expected a positive multiple of num_heads, got embed_dim={embed_dim}"
            f" and num_heads={num_heads}"
        )
    head_dim = check_positive_int(
        "head_dim", embed_dim // num_heads if head_dim is None else head_dim
    )
    kv_heads = check_positive_int(
        "num_kv_heads", num_heads if num_kv_heads is None else num_kv_heads
    )
    if num_heads % kv_heads:
        raise ValueError(
            f"num_kv_heads: expected a divisor of num_heads={num_heads}, got {kv_heads}"
        )
    if rope_base is not None and (not rope_base > 0 or head_dim % 2 != 0):
        raise ValueError(
            f"rope_base: expected a positive base and an even head width {width}, got "
            f"rope_base={rope_base} and head width {head_dim}"
        )
    return head_dim, kv_heads


def check_attention_inputs(
    query: Tensor, key: Tensor, value: Tensor, widths: tuple[int, int, int]
) -> None:
    """Batch-first ``(N, L, E)``, ``(N, S, kdim)``, ``(N, S, vdim)`` with the same N and S."""
    for name, x, width in zip(("query", "key", "value"), (query, key, value), widths, strict=True):
        check_tensor(name, x)
        if x.dim() != 3 or x.size(-1) != width:
            raise ValueError(
                f"{name}: expected a batch-first tensor (N, length, {width}), got shape {_shape(x)}"
            )
    if not query.size(0) == key.size(0) == value.size(0):
        raise ValueError(
            "query, key and value: expected the same batch size N, got "
            f"{_shape(query)}, {_shape(key)} and {_shape(value)}"
        )
    if key.size(1) != value.size(1):
        raise ValueError(
            f"key and value: expected the same length S, got {_shape(key)} and {_shape(value)}"
        )


def check_rope_and_cache(
    query: Tensor,
    key: Tensor | None,
    parts: bool | Iterable[object],
    cache: object,
    cache_type: type,
) -> None:
    """Parts that read positions (``reads_positions``, as rotary positions do; ``True``: all)
    and a cache only for self-attention (``key`` None or ``key is query``); a cache of
    ``cache_type``."""
    if isinstance(parts, bool):
        positional = parts
    else:  # a part without the attribute is taken to read positions
        positional = any(getattr(p, "reads_positions", True) for p in parts)
    if positional and key is not None and key is not query:
        raise ValueError(
            "key: rotary positions need self-attention (no separate key), got "
            f"{key.size(1)} keys for {query.size(1)} queries"
        )
    if cache is None:
        return
    if not isinstance(cache, cache_type):
        raise TypeError(f"kv_cache: expected a {cache_type.__name__}, got {type(cache).__name__}")
    if key is not None and key is not query:
        raise ValueError(
            "kv_cache: only for self-attention (key=None or key=query); cross-attention's "
            "keys come from the encoder's memory, which does not grow"
        )


def check_number(name: str, value: object, *, positive: bool) -> float:
    """``value`` as a float if it is a real number, > 0 (``positive``) or >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__}")
    if not (value > 0 if positive else value >= 0):
        raise ValueError(
            f"{name}: expected a {'positive' if positive else 'non-negative'} number, got {value}"
        )
    return float(value)
