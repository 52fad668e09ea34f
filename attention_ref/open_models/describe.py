"""What a module built by ``from_hf`` is made of, read from the module itself.

``describe(ours)`` lists the parts of one attention module or decoder layer: which
projections have a bias, the parts on the queries and keys in order (a norm, rotary
positions with their fraction and pairing, a temperature), the scale, a score function bound
into the kernel, an output gate, sink logits, the layer's own rule and, for a layer, its
wiring. The page "Attention in open models" builds its table from these descriptions, so a
cell cannot say something the module does not do.
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any

from torch import nn

from ..latent import MultiHeadLatentAttention
from ..multihead import MultiHeadAttention
from ..norms import LayerNorm, RMSNorm
from ..qk_parts import HeadLayerNorm, QKNorm, QueryTemperature, Rotary

__all__ = ["describe", "describe_part", "describe_rule"]


def _norm(norm: nn.Module) -> str:
    """``"rms"``, ``"rms_no_weight"`` (Llama 4's "L2Norm" is one), ``"layernorm"``; else the class
    name."""
    if isinstance(norm, RMSNorm):
        return "rms" if norm.weight is not None else "rms_no_weight"
    if isinstance(norm, (LayerNorm, HeadLayerNorm)):
        return "layernorm"
    return type(norm).__name__


def describe_part(part: nn.Module, head_dim: int) -> dict[str, Any]:
    """One part of ``qk_parts`` as a dict: its kind and what it is set to.

    ``{"part": "rope", "fraction", "pairing", "base"}`` for ``Rotary`` (``fraction`` is D_rot /
    D, the rotated share of each head, D being ``head_dim``; ``pairing`` ``"half"`` or
    ``"interleaved"``), ``{"part": "qk_norm", "norm", "over"}`` for ``QKNorm`` (``over``
    ``"head"`` or ``"whole"``), ``{"part": "temperature", "floor_scale", "attn_scale"}`` for
    ``QueryTemperature``; for any other part, ``{"part": its class name}``.
    """
    if isinstance(part, Rotary):
        rotated = head_dim if part.rotary_dim is None else part.rotary_dim
        pairing = "interleaved" if part.interleaved else "half"
        return {
            "part": "rope",
            "fraction": rotated / head_dim,
            "pairing": pairing,
            "base": part.base,
        }
    if isinstance(part, QKNorm):
        return {
            "part": "qk_norm",
            "norm": _norm(part.q_norm),
            "over": "whole" if part.whole else "head",
        }
    if isinstance(part, QueryTemperature):
        return {
            "part": "temperature",
            "floor_scale": part.floor_scale,
            "attn_scale": part.attn_scale,
        }
    return {"part": type(part).__name__}


def describe_rule(rule: Any) -> dict[str, Any] | None:
    """The layer's own rule (``sliding_window`` or ``chunked`` of ``attention_ref.mask_mods``):
    ``{"rule": its function's name, "size": the window or chunk size}``, read from the
    closure; None for a full-attention layer."""
    if rule is None:
        return None
    kind = rule.__qualname__.split(".")[0]
    values = inspect.getclosurevars(rule).nonlocals
    size = values.get("window", values.get("chunk_size"))
    return {"rule": kind, "size": size}


def _score_function(attention_fn: Any) -> dict[str, Any] | None:
    """A score function bound into the kernel (``partial(kernel, score_mod=f)``): its name
    (``softcap``, ``alibi``...) and, for a soft cap, the cap."""
    if not isinstance(attention_fn, functools.partial) or "score_mod" not in attention_fn.keywords:
        return None
    score_mod = attention_fn.keywords["score_mod"]
    name = score_mod.__qualname__.split(".")[0]
    values = inspect.getclosurevars(score_mod).nonlocals
    return {"score": name} | ({"cap": values["cap"]} if "cap" in values else {})


def _latent(attn: MultiHeadLatentAttention) -> dict[str, Any]:
    """MLA: its decoupled rotary part (the fraction of each query/key head it covers), its
    scale and its biased projections (``q`` and ``kv`` into the latents, ``o``)."""
    rotated, width = attn.qk_rope_head_dim, attn.qk_nope_head_dim + attn.qk_rope_head_dim
    q_in = attn.q_proj if attn.q_lora_rank is None else attn.q_a_proj
    biased = ("q", q_in), ("kv", attn.kv_a_proj_with_mqa), ("o", attn.o_proj)
    return {
        "attention": "latent",
        "heads": attn.num_heads,
        "bias": "".join(name for name, linear in biased if linear.bias is not None),
        "rope": {
            "part": "rope",
            "fraction": rotated / width,
            "pairing": "interleaved" if attn.rope_interleaved else "half",
            "base": attn.rope_base,
        },
        "scale": None if math.isclose(attn.scale, width**-0.5) else attn.scale,
    }


def _attention(attn: nn.Module) -> dict[str, Any]:
    if isinstance(attn, MultiHeadLatentAttention):
        return _latent(attn)
    if not isinstance(attn, MultiHeadAttention):
        return {"attention": type(attn).__name__}
    projections = zip("qkvo", (attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj), strict=True)
    D = attn.head_dim
    scale = attn.scale
    return {
        "attention": "multi-head",
        "heads": attn.num_heads,
        "kv_heads": attn.num_kv_heads,
        "bias": "".join(name for name, linear in projections if linear.bias is not None),
        "qk_parts": [describe_part(p, D) for p in attn.qk_parts],
        "scale": None if scale is None or math.isclose(scale, D**-0.5) else scale,
        "score_function": _score_function(attn.attention_fn),
        "output_gate": attn.output_gate is not None,
        "sinks": attn.sinks is not None,
        "rule": describe_rule(attn.mask_mod),
    }


def describe(module: nn.Module) -> dict[str, Any]:
    r"""The parts of an attention module or decoder layer built by ``from_hf``.

    Returns:
        A dict:

        - for a ``MultiHeadAttention``: ``"attention"`` (``"multi-head"``), ``"heads"``,
          ``"kv_heads"``, ``"bias"`` (the biased projections' letters out of ``"qkvo"``),
          ``"qk_parts"`` (``describe_part`` of each, in order), ``"scale"`` (None for the
          default $1/\sqrt{D}$), ``"score_function"`` (None, or ``{"score": name}``, plus
          ``"cap"`` for a soft cap), ``"output_gate"`` and ``"sinks"`` (bools), ``"rule"``
          (``describe_rule``);
        - for a ``MultiHeadLatentAttention``: ``"attention"`` (``"latent"``), ``"heads"``,
          ``"bias"`` (out of ``"q"``, ``"kv"``, ``"o"``), ``"rope"`` (a ``describe_part``
          dict), ``"scale"`` (None for the default);
        - for another module: ``{"attention": its class name}``.

        For a layer (a module with a ``wiring``): its ``self_attn``'s dict, plus ``"wiring"``,
        ``{"kind": the wiring's class name, "norms": [...], "residual_multiplier": m}``, each
        norm ``"rms"``, ``"rms_no_weight"``, ``"layernorm"`` or its class name; ``m`` is 1.0
        except in Granite and MiniCPM3.

    Examples:
        >>> from attention_ref import MultiHeadAttention
        >>> from attention_ref.open_models.describe import describe
        >>> row = describe(MultiHeadAttention(8, 2, bias=False, rope_base=10000.0))
        >>> row["bias"], row["qk_parts"][0]["part"], row["qk_parts"][0]["fraction"]
        ('', 'rope', 1.0)
    """
    attn = getattr(module, "self_attn", module)
    row = _attention(attn)
    wiring = getattr(module, "wiring", None)
    if wiring is not None:
        norms = [c for name, c in wiring.named_children() if name.startswith("norm")]
        row["wiring"] = {
            "kind": type(wiring).__name__,
            "norms": [_norm(n) for n in norms],
            "residual_multiplier": getattr(wiring, "residual_multiplier", 1.0),
        }
    return row
