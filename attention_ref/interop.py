"""From ``torch.nn`` to ``attention_ref``: PyTorch's modules copied, weights included.

``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer`` and ``nn.TransformerDecoderLayer``
have twins here with the same arguments; the classes' ``from_torch`` call these functions,
and ``MultiHeadAttention.to_torch`` goes back. Only the attention is stored differently:
PyTorch packs $W^Q, W^K, W^V$ into one ``in_proj_weight`` of shape ``(3E, E)``, which is cut
here into ``q_proj``, ``k_proj`` and ``v_proj`` (and concatenated again by ``to_torch``).
Everything else (``linear1``, ``linear2``, ``norm1``...) has PyTorch's ``state_dict`` keys
and loads as it is.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

__all__ = ["attention_from_torch", "attention_to_torch", "layer_from_torch"]


def _check_module(module: object, expected: type[nn.Module]) -> None:
    if not isinstance(module, expected):
        raise TypeError(
            f"module: expected a torch.nn.{expected.__name__}, got {type(module).__name__}"
        )


def attention_from_torch(cls: type[Any], module: nn.MultiheadAttention) -> Any:
    """A new ``cls`` (``MultiHeadAttention``) with ``module``'s sizes and weights.

    ``MultiHeadAttention.from_torch(module)`` calls it. PyTorch's ``in_proj_weight`` (or its
    ``q_proj_weight``, ``k_proj_weight`` and ``v_proj_weight`` when ``kdim`` or ``vdim``
    differs from ``embed_dim``) is cut into ``q_proj``, ``k_proj`` and ``v_proj``;
    ``out_proj``, the biases, ``dropout``, the device and the dtype are kept. The copy is
    batch-first whatever ``module.batch_first`` is, and in training mode, as any new module.

    It gives the same output for the same inputs (batch-first) with boolean masks inverted
    (``~mask``): in PyTorch's ``attn_mask`` and ``key_padding_mask`` True means *masked*.
    ``key_padding_mask`` has no argument here: pass
    ``to_sdpa_mask(key_padding_mask, "mha_key_padding_mask")`` as ``attn_mask``. PyTorch
    averages the weights over the heads unless ``average_attn_weights=False``; the copy
    returns them per head.

    Args:
        cls: The class to build: ``MultiHeadAttention`` or a subclass.
        module: The ``torch.nn.MultiheadAttention`` to copy.

    Returns:
        A new ``cls`` with ``module``'s weights.

    Raises:
        TypeError: If ``module`` is not an ``nn.MultiheadAttention``.
        ValueError: If it uses ``add_bias_kv`` or ``add_zero_attn``.

    Examples:
        >>> import torch
        >>> from attention_ref import MultiHeadAttention
        >>> _ = torch.manual_seed(0)
        >>> theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        >>> ours = MultiHeadAttention.from_torch(theirs)
        >>> x = torch.randn(2, 5, 8)
        >>> torch.allclose(ours(x)[0], theirs(x, x, x)[0], atol=1e-6)
        True
    """
    _check_module(module, nn.MultiheadAttention)
    if module.bias_k is not None or module.add_zero_attn:
        raise ValueError("module: add_bias_kv and add_zero_attn are not supported")
    weight, bias = module.out_proj.weight, module.in_proj_bias
    options = {"dropout": module.dropout, "kdim": module.kdim, "vdim": module.vdim}
    factory = {"device": weight.device, "dtype": weight.dtype}
    ours = cls(module.embed_dim, module.num_heads, bias=bias is not None, **options, **factory)
    if module._qkv_same_embed_dim:
        weights = module.in_proj_weight.chunk(3)  # (3E, E) -> W^Q, W^K, W^V, each (E, E)
    else:
        weights = (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight)
    state = {f"{r}_proj.weight": w for r, w in zip("qkv", weights, strict=True)}
    if bias is not None:
        state |= {f"{r}_proj.bias": b for r, b in zip("qkv", bias.chunk(3), strict=True)}
    state |= {f"out_proj.{name}": t for name, t in module.out_proj.state_dict().items()}
    ours.load_state_dict(state)
    return ours


def attention_to_torch(module: Any) -> nn.MultiheadAttention:
    """A new batch-first ``nn.MultiheadAttention`` with the sizes and weights of ``module``.

    ``MultiHeadAttention.to_torch()`` calls it. $W^Q, W^K, W^V$ are concatenated into
    ``in_proj_weight`` (or kept as ``q_proj_weight``, ``k_proj_weight`` and
    ``v_proj_weight`` when ``kdim`` or ``vdim`` differs from ``embed_dim``); ``out_proj``,
    the biases, ``dropout``, the device, the dtype and the training mode are kept. Invert
    boolean masks for it (``~mask``: True means *masked* there), and pass
    ``average_attn_weights=False`` to get its weights per head, as ``module`` returns them.

    Args:
        module: The ``MultiHeadAttention`` to copy.

    Returns:
        A new ``torch.nn.MultiheadAttention`` with ``batch_first=True``.

    Raises:
        ValueError: If ``module`` uses an option ``nn.MultiheadAttention`` cannot express:
            ``num_kv_heads``, ``rope_base``, ``head_dim``, ``scale``, ``attention_fn``,
            ``sinks``, ``qk_parts``, ``output_gate`` or ``mask_mod``, named in the message.

    Examples:
        >>> import torch
        >>> from attention_ref import MultiHeadAttention
        >>> _ = torch.manual_seed(0)
        >>> ours = MultiHeadAttention(8, 2)
        >>> x, mask = torch.randn(2, 5, 8), torch.ones(5, 5, dtype=torch.bool).tril()
        >>> out, _ = ours.to_torch()(x, x, x, attn_mask=~mask)  # True = masked there
        >>> torch.allclose(out, ours(x, attn_mask=mask)[0], atol=1e-6)
        True
        >>> MultiHeadAttention(8, 2, num_kv_heads=1).to_torch()
        Traceback (most recent call last):
        ...
        ValueError: num_kv_heads: expected 2 for nn.MultiheadAttention, got 1
    """
    D, fn, E, H = module.head_dim, module.attention_fn, module.embed_dim, module.num_heads
    options = {  # option: (ours, what nn.MultiheadAttention computes)
        "num_kv_heads": (module.num_kv_heads, H),
        "rope_base": (module.rope_base, None),
        "head_dim": (D, E // H),
        "scale": (None if module.scale == 1 / math.sqrt(D) else module.scale, None),
        "attention_fn": (fn if fn is None else getattr(fn, "__name__", type(fn).__name__), None),
        "sinks": (module.sinks is not None, False),
        "qk_parts": (len(module.qk_parts) - (module.rope_base is not None), 0),  # besides RoPE
        "output_gate": (module.output_gate is not None, False),
        "mask_mod": (module.mask_mod is not None, False),
    }
    for option, (ours, theirs) in options.items():
        if ours != theirs:
            raise ValueError(f"{option}: expected {theirs} for nn.MultiheadAttention, got {ours}")
    q, k, v, out = module.q_proj, module.k_proj, module.v_proj, module.out_proj
    kwargs = {"kdim": module.kdim, "vdim": module.vdim, "dropout": module.dropout}
    kwargs |= {"bias": out.bias is not None, "device": out.weight.device, "dtype": out.weight.dtype}
    theirs = nn.MultiheadAttention(E, H, batch_first=True, **kwargs)  # batch-first, as ours
    if theirs._qkv_same_embed_dim:  # W^Q, W^K, W^V, each (E, E) -> (3E, E)
        state = {"in_proj_weight": torch.cat([q.weight, k.weight, v.weight])}
    else:
        state = {"q_proj_weight": q.weight, "k_proj_weight": k.weight, "v_proj_weight": v.weight}
    if out.bias is not None:
        state["in_proj_bias"] = torch.cat([q.bias, k.bias, v.bias])
    theirs.load_state_dict(state | {f"out_proj.{n}": t for n, t in out.state_dict().items()})
    return theirs.train(module.training)


def layer_from_torch(cls: type[Any], module: Any, twin: type[nn.Module]) -> Any:
    """A new ``cls`` (the encoder or decoder layer) with the sizes and weights of ``module``.

    The ``from_torch`` of ``TransformerEncoderLayer`` and ``TransformerDecoderLayer`` call it.
    Every attention is copied by ``attention_from_torch``; ``linear1``, ``linear2`` and the
    norms load PyTorch's ``state_dict`` as it is, and PyTorch's activation function is used
    as it is. The copy is in training mode, as any new module;
    in eval mode it gives the same output for the same input, with boolean masks inverted
    (``~mask``).

    Args:
        cls: The class to build: ``TransformerEncoderLayer`` or ``TransformerDecoderLayer``.
        module: The PyTorch layer to copy, an instance of ``twin``, made with
            ``batch_first=True``.
        twin: ``nn.TransformerEncoderLayer`` or ``nn.TransformerDecoderLayer``.

    Returns:
        A new ``cls`` with ``module``'s weights.

    Raises:
        TypeError: If ``module`` is not a ``twin``.
        ValueError: If it is not batch-first.
    """
    _check_module(module, twin)
    if not module.self_attn.batch_first:
        raise ValueError("module: expected batch_first=True (ours is always batch-first)")
    weight = module.linear1.weight
    ours = cls(
        module.linear1.in_features,
        module.self_attn.num_heads,
        dim_feedforward=module.linear1.out_features,
        dropout=module.dropout.p,
        activation=module.activation,  # a function (or module) in PyTorch's layer: used as is
        layer_norm_eps=module.norm1.eps,
        norm_first=module.norm_first,
        bias=module.linear1.bias is not None,
    ).to(device=weight.device, dtype=weight.dtype)
    for name, child in list(ours.named_children()):
        theirs = getattr(module, name)
        if name in ("self_attn", "multihead_attn"):
            setattr(ours, name, attention_from_torch(type(child), theirs))
        elif any(True for _ in child.parameters()):  # linear1, linear2, norm1, norm2, norm3
            child.load_state_dict(theirs.state_dict())
    return ours
