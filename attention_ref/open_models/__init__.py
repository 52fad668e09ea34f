"""Open models' attention layers as attention_ref modules: ``from_hf(module)``.

Given a Hugging Face attention module (``Qwen3Attention``, ...) or decoder layer
(``Qwen3DecoderLayer``, ...), ``from_hf`` returns the module built here from the parts the
course teaches (``attention_ref.qk_parts``, ``attention_ref.output_gate``,
``attention_ref.residual``...), with copies of the same weights in the same dtype. It reads
the module by duck typing, its ``config`` and ``layer_idx`` (or, for a class without a config,
its attributes): ``import attention_ref`` never imports transformers, and ``from_hf`` works
without it installed.

Each family's builders live in a module of this package, which lists them in a ``BUILDERS``
dict, class name to builder; ``from_hf`` looks the class up there.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

__all__ = ["from_hf", "supported"]


def _builders() -> dict[str, Callable[[Any], nn.Module]]:
    """Every family module's ``BUILDERS``, merged."""
    found: dict[str, Callable[[Any], nn.Module]] = {}
    for info in pkgutil.iter_modules(__path__):
        family = importlib.import_module(f"{__name__}.{info.name}")
        found |= getattr(family, "BUILDERS", {})
    return found


def supported() -> list[str]:
    """The Hugging Face class names ``from_hf`` takes, sorted."""
    return sorted(_builders())


def from_hf(module: Any) -> nn.Module:
    """The attention_ref module that computes what a Hugging Face attention module or layer does.

    Call a decoder's attention or layer as ``ours(x, positions=positions, is_causal=True)``:
    ``x`` ``(N, L, E)``; ``positions`` the absolute positions, ``(L,)`` or ``(N, L)``, by
    default ``0 … L-1`` (read by rotary positions and Llama 4's temperature, ignored by a layer
    without them). With ``is_causal=True`` it attends causally; a sliding or chunked layer (per
    the config) also keeps its window or chunk, whatever ``is_causal``. BERT
    (``BertSelfAttention``, ``BertLayer``) is bidirectional: call it with ``is_causal=False``
    and the padding as ``attn_mask`` (``is_causal=True`` if its config sets ``is_decoder``).

    An attention module returns what ``MultiHeadAttention`` returns, ``(output, weights)``; a
    ``MultiHeadLatentAttention`` (built for ``DeepseekV3Attention`` and ``MiniCPM3Attention``)
    returns the output only. A layer returns the output ``(N, L, E)``.

    Args:
        module: An instance of a supported class (``supported()``), with its weights.

    Returns:
        The attention_ref module, in ``module``'s dtype and on its device, in eval mode if it
        is. In float32 and float64 its output matches ``module``'s up to rounding; in float16
        and bfloat16 the roundings differ (Gemma's and Qwen3-Next's norms, for one, store their
        ``1 + w`` weights rounded to the dtype, where Hugging Face adds in float32).

    Raises:
        ValueError: If the class is not supported (named in the message), or the module or
            its config uses something out of scope (cross-attention, a rotary scaling such as
            YaRN, a mixture-of-experts feed-forward network...); the message says what.

    Examples:
        Which classes it takes, and the error for any other (this example runs without
        transformers). With transformers: ``ours = from_hf(model.model.layers[0].self_attn)``.

        >>> import torch
        >>> from attention_ref import from_hf
        >>> from attention_ref.open_models import supported
        >>> "Qwen3Attention" in supported(), "Qwen3DecoderLayer" in supported()
        (True, True)
        >>> from_hf(torch.nn.Linear(4, 4))
        Traceback (most recent call last):
        ...
        ValueError: module: Linear is not supported by from_hf; supported: ...
    """
    name = type(module).__name__
    builder = _builders().get(name)
    if builder is None:
        raise ValueError(
            f"module: {name} is not supported by from_hf; supported: {', '.join(supported())}"
        )
    weight = next(module.parameters())
    # Built in float64 for a float64 module, so that its weights are copied exactly; in float32
    # otherwise (float16 and bfloat16 weights are exact in float32), then cast to their dtype.
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64 if weight.dtype == torch.float64 else torch.float32)
    try:
        ours = builder(module)
    finally:
        torch.set_default_dtype(previous)
    return ours.to(device=weight.device, dtype=weight.dtype).train(module.training)
