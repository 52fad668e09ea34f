"""What attention costs, counted from the formulas: FLOPs and the memory beyond the inputs.

FLOPs count the matrix products only, at 2 FLOPs per multiply-add (the usual convention,
which makes GEMM throughput comparable). The softmax's max, exp, sum and division, masks and
feature maps are left out: they are O(pairs) or O(n·d), a small constant fraction of the
products' 2·pairs·(d_k + d_v).

Memory counts the elements an algorithm must hold at its peak besides its inputs, times
``bytes_per_element``: the output, plus

- ``"softmax"`` without ``block_size``: the n × m weights (one materialized attention matrix);
- ``"softmax"`` with ``(b_q, b_k)``: one b_q × b_k block of scores and the running max, sum and
  output of one query tile (``chunked_attention``);
- ``"local"``: one tile of b queries against the b + 2w - 2 keys in its reach (b + w - 1
  causal), b = ``block_size`` (default 128);
- ``"linear"``: φ(Q), φ(K) and the d_k × (d_v + 1) summary, plus a C × C chunk of weights when
  causal, C = ``block_size`` (default 64);

all times batch·heads. Real implementations hold a few temporaries more (the plain reference
keeps the scores, their exp and the weights at once), so a measurement is a small multiple
of this count; what must match is how it grows with n.

Symbols, as on the pages: n queries, m keys (defaults to n), d_k query/key width, d_v value
width (defaults to d_k), w window; in code L = n, S = m, D = d_k, Dv = d_v.
"""

from __future__ import annotations

from ._checks import check_block_size, check_choice, check_positive_int

__all__ = ["attended_pairs", "attention_flops", "attention_memory", "kv_cache_numel"]

_KINDS = ("softmax", "local", "linear")


def _check_args(
    n: int, m: int, d_k: int, d_v: int, batch: int, heads: int, kind: str, window: int | None
) -> None:
    for name, value in (("n", n), ("m", m), ("d_k", d_k), ("d_v", d_v)):
        check_positive_int(name, value, "size", minimum=0)
    for name, value in (("batch", batch), ("heads", heads)):
        check_positive_int(name, value)
    check_choice("kind", kind, _KINDS)
    if kind == "local" and window is None:
        raise TypeError("window: kind='local' needs an int window, got None")
    if kind == "local":
        check_positive_int("window", window)
    elif window is not None:
        raise ValueError(f"window: only used with kind='local', got kind={kind!r}")


def attended_pairs(n: int, m: int, is_causal: bool = False, window: int | None = None) -> int:
    """How many (query i, key j) pairs are scored: n·m, the causal triangle, or the band.

    Positions are top-left aligned (query ``i`` and key ``i`` are the same position), as in
    PyTorch's ``is_causal`` and in [`sliding_window_mask`][attention_ref.sliding_window_mask].

    Examples:
        >>> from attention_ref.cost import attended_pairs
        >>> attended_pairs(4, 4), attended_pairs(4, 4, is_causal=True)
        (16, 10)
        >>> attended_pairs(10, 10, window=3), attended_pairs(10, 10, is_causal=True, window=3)
        (44, 27)
    """
    if window is None:
        if not is_causal:
            return n * m
        return sum(min(i + 1, m) for i in range(n))  # query i sees keys 0..i
    # Pairs with i - j = d, for each distance d the window allows: i in [max(0, d), min(n, m + d)).
    distances = range(0, window) if is_causal else range(1 - window, window)
    return sum(max(0, min(n, m + d) - max(0, d)) for d in distances)


def attention_flops(
    n: int,
    m: int | None = None,
    *,
    d_k: int,
    d_v: int | None = None,
    batch: int = 1,
    heads: int = 1,
    kind: str = "softmax",
    is_causal: bool = False,
    window: int | None = None,
) -> int:
    r"""FLOPs of attention's matrix products (2 per multiply-add), per the formulas.

    $$\text{softmax, local: } 2 \cdot P \cdot (d_k + d_v) \qquad
      \text{linear: } 2 \cdot (n + m) \cdot d_k \cdot (d_v + 1)$$

    ``P`` is the number of scored pairs ([`attended_pairs`][attention_ref.cost.attended_pairs]):
    ``n·m``, the causal triangle, or the band of ``window``. Softmax: ``Q K^T`` costs
    ``2·P·d_k`` and the weights times ``V`` ``2·P·d_v``, so ``4·n²·d`` for ``n = m``, ``d_k =
    d_v = d``: the quadratic term. Linear: ``φ(K)^T [V, 1]`` (the summary φ(K)ᵀV and its
    normalizer φ(K)ᵀ1) and φ(Q) times it; causal or not, each key is added to the summary once
    and each query reads it once (the recurrent form; the chunked form of
    [`linear_attention`][attention_ref.linear_attention] adds ``2·n·C·(d_k + d_v)``, with ``C =
    chunk_size``). Non-causal, ``chunked_attention`` has the softmax count: the same products,
    in blocks. Causal, it skips the blocks above the diagonal but computes the diagonal blocks
    whole, so a little more than the triangle. Local, this is the band's count; the tiles of
    ``sliding_window_attention`` compute each block of b queries against the b + 2w - 2 keys in
    its reach (b + w - 1 causal), more than the band when w is small next to b.

    Args:
        n: Queries (L).
        m: Keys and values (S); defaults to ``n``.
        d_k: Query/key width (D).
        d_v: Value width (Dv); defaults to ``d_k``.
        batch: N.
        heads: H.
        kind: ``"softmax"``, ``"local"`` or ``"linear"``.
        is_causal: Query ``i`` sees keys ``0..i`` (top-left).
        window: The window w, for ``kind="local"`` only.

    Returns:
        The FLOP count, an int.

    Raises:
        ValueError: On negative sizes, an unknown kind, or a window with the wrong kind.
        TypeError: On a non-int size or window.

    Examples:
        >>> from attention_ref import attention_flops
        >>> attention_flops(8192, d_k=64, heads=4)  # 4·batch·heads·n²·d_k
        68719476736
        >>> attention_flops(8192, d_k=64, heads=4) == 4 * 1 * 4 * 8192**2 * 64
        True
        >>> [attention_flops(n, d_k=64, kind="linear") for n in (1024, 2048)]  # linear in n
        [17039360, 34078720]
    """
    m = n if m is None else m
    d_v = d_k if d_v is None else d_v
    _check_args(n, m, d_k, d_v, batch, heads, kind, window)
    if kind == "linear":
        per_head = 2 * (n + m) * d_k * (d_v + 1)
    else:
        per_head = 2 * attended_pairs(n, m, is_causal, window) * (d_k + d_v)
    return batch * heads * per_head


def attention_memory(
    n: int,
    m: int | None = None,
    *,
    d_k: int,
    d_v: int | None = None,
    batch: int = 1,
    heads: int = 1,
    kind: str = "softmax",
    is_causal: bool = False,
    window: int | None = None,
    block_size: int | tuple[int, int] | None = None,
    bytes_per_element: int = 4,
) -> int:
    r"""Bytes an attention algorithm holds beyond its inputs, per the module's formulas.

    $$\text{softmax: } n m + n d_v \qquad
      \text{blocked: } b_q b_k + b_q (d_v + 2) + n d_v \qquad
      \text{local: } b (b + 2w - 2) + n d_v$$

    in elements per batch and head; the ``attention_ref.cost`` module lists every case, the
    linear form included. A materialized attention matrix grows as n²; the blocked, local and
    linear forms grow as n, their output.

    Args:
        n: Queries (L).
        m: Keys and values (S); defaults to ``n``.
        d_k: Query/key width (D).
        d_v: Value width (Dv); defaults to ``d_k``.
        batch: N.
        heads: H.
        kind: ``"softmax"``, ``"local"`` or ``"linear"``.
        is_causal: Query ``i`` sees keys ``0..i`` (top-left).
        window: The window w, for ``kind="local"`` only.
        block_size: ``"softmax"``: ``(b_q, b_k)`` (or one int) for the blocked form of
            [`chunked_attention`][attention_ref.chunked_attention], None for the materialized
            matrix.
            ``"local"``: queries per tile (default 128). ``"linear"``: the causal chunk
            (default 64).
        bytes_per_element: 2 for float16 and bfloat16, 4 for float32, 8 for float64.

    Returns:
        Bytes, an int.

    Raises:
        ValueError: As [`attention_flops`][attention_ref.attention_flops], or on a block size
            below 1.
        TypeError: As [`attention_flops`][attention_ref.attention_flops].

    Examples:
        >>> from attention_ref import attention_memory
        >>> mib = 2**20
        >>> attention_memory(8192, d_k=64, heads=4) / mib  # the weights + the output
        1032.0
        >>> attention_memory(8192, d_k=64, heads=4, block_size=(768, 512)) / mib
        14.7734375
    """
    m = n if m is None else m
    d_v = d_k if d_v is None else d_v
    _check_args(n, m, d_k, d_v, batch, heads, kind, window)
    if block_size is not None:
        block_size = check_block_size(block_size)
    output = n * d_v
    if kind == "softmax" and block_size is None:
        held = n * m  # the whole attention matrix
    elif kind == "softmax" and block_size is not None:
        b_q, b_k = min(block_size[0], n), min(block_size[1], m)
        held = b_q * b_k + b_q * (d_v + 2)  # one block of scores; max, sum, output of a tile
    elif kind == "local" and window is not None:  # _check_args: kind="local" has a window
        b = min(block_size[0] if block_size else 128, n)
        reach = b + window - 1 if is_causal else b + 2 * window - 2
        held = b * min(reach, m)  # one tile's scores
    else:
        held = n * d_k + m * d_k + d_k * (d_v + 1)  # φ(Q), φ(K), the summary
        if is_causal:
            c = min(block_size[0] if block_size else 64, n)
            held += c * c
    return batch * heads * (held + output) * bytes_per_element


def kv_cache_numel(
    *,
    layers: int,
    batch: int,
    tokens: int,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    kv_lora_rank: int | None = None,
    qk_rope_head_dim: int | None = None,
    window: int | None = None,
    sink_tokens: int = 0,
) -> int:
    r"""How many numbers a decoder's key/value cache holds.

    $$\text{MHA, GQA, MQA: } 2 \cdot \text{layers} \cdot N \cdot H_{kv} \cdot S \cdot D
      \qquad \text{MLA: } \text{layers} \cdot N \cdot S \cdot (d_c + d_h^R)$$

    With ``kv_heads`` and ``head_dim``: one key and one value per token, per key/value head and
    per layer, each ``head_dim`` wide. Compared with multi-head attention (``kv_heads =
    num_heads``), grouped-query attention divides it by ``num_heads / kv_heads`` and multi-query
    attention (``kv_heads=1``) by ``num_heads``. With ``kv_lora_rank`` (R, DeepSeek's $d_c$) and
    ``qk_rope_head_dim`` (D_rope, $d_h^R$): multi-head latent attention, which caches per token
    and layer only the compressed latent and the one rotary key that all heads share. A rolling
    cache (``window``, ``sink_tokens``, as in [`KVCache`][attention_ref.KVCache]) holds at most
    ``sink_tokens + window`` tokens: S, the tokens held, is ``tokens``, or ``min(tokens,
    sink_tokens + window)`` with a ``window``.
    Times 2 bytes in float16/bfloat16 it is the cache's memory.

    Args:
        layers: Attention layers, one cache each.
        batch: N.
        tokens: Tokens seen so far (0 or more).
        kv_heads: H_kv, with ``head_dim``; not with ``kv_lora_rank``.
        head_dim: D, each key's and value's width.
        kv_lora_rank: $d_c$, the width of MLA's latent; with ``qk_rope_head_dim``.
        qk_rope_head_dim: $d_h^R$, the width of MLA's shared rotary key.
        window: The recent tokens a rolling cache keeps (W in ``KVCache``); ``None`` keeps all.
        sink_tokens: The first tokens a rolling cache keeps as well; only with ``window``.

    Returns:
        The number of cached elements, an int.

    Raises:
        ValueError: If a size is below 1 (``tokens`` and ``sink_tokens`` may be 0), on
            ``kv_heads`` together with ``kv_lora_rank``, neither of them, a missing
            ``head_dim`` or ``qk_rope_head_dim``, ``head_dim`` with ``kv_lora_rank``,
            ``qk_rope_head_dim`` with ``kv_heads``, or ``sink_tokens`` without ``window``.
        TypeError: If a size is not an int.

    Examples:
        >>> from attention_ref import kv_cache_numel
        >>> numel = kv_cache_numel(layers=32, batch=1, kv_heads=32, tokens=4096, head_dim=128)
        >>> numel, numel * 2 / 2**30  # Llama 2 7B at 4096 tokens: GiB in float16
        (1073741824, 2.0)
        >>> kv_cache_numel(  # DeepSeek-V3's latent: 512 + 64 numbers a token and layer
        ...     layers=61, batch=1, tokens=4096, kv_lora_rank=512, qk_rope_head_dim=64
        ... ) * 2 / 2**30
        0.26806640625
        >>> gqa = {"layers": 32, "batch": 1, "kv_heads": 8, "head_dim": 128}
        >>> kv_cache_numel(**gqa, tokens=10**6, window=4092, sink_tokens=4) == kv_cache_numel(
        ...     **gqa, tokens=4096
        ... )  # a rolling cache stops growing at sink_tokens + window
        True
    """
    latent = kv_lora_rank is not None
    if latent == (kv_heads is not None):
        raise ValueError(
            "kv_heads and kv_lora_rank: expected exactly one (kv_heads with head_dim for "
            "MHA/GQA/MQA, kv_lora_rank with qk_rope_head_dim for MLA), got "
            f"kv_heads={kv_heads} and kv_lora_rank={kv_lora_rank}"
        )
    (first, a), (second, b), (stray, unused) = (
        (
            ("kv_lora_rank", kv_lora_rank),
            ("qk_rope_head_dim", qk_rope_head_dim),
            ("head_dim", head_dim),
        )
        if latent
        else (
            ("kv_heads", kv_heads),
            ("head_dim", head_dim),
            ("qk_rope_head_dim", qk_rope_head_dim),
        )
    )
    if b is None:
        raise ValueError(f"{second}: expected an int with {first}, got None")
    if unused is not None:
        raise ValueError(f"{stray}: not used with {first}, got {stray}={unused}")
    a, b = check_positive_int(first, a), check_positive_int(second, b)
    for name, value in (("layers", layers), ("batch", batch)):
        check_positive_int(name, value)
    for name, value in (("tokens", tokens), ("sink_tokens", sink_tokens)):
        check_positive_int(name, value, minimum=0)
    if window is None and sink_tokens:
        raise ValueError(
            f"sink_tokens: only used with window (a rolling cache), got sink_tokens={sink_tokens}"
        )
    if window is not None:  # a rolling cache: it stops growing
        tokens = min(tokens, sink_tokens + check_positive_int("window", window))
    per_token = a + b if latent else 2 * a * b  # MLA: latent + rotary key; else a key and a value
    return layers * batch * tokens * per_token
