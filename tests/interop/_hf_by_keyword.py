"""Calling a Hugging Face attention module or decoder layer whose arguments are not in
Llama's order (GPT-NeoX and StableLM take the mask second, Falcon ``alibi`` second): by
keyword, which every family accepts."""

import torch

from ._hf import hf_mask


def their_call(theirs, config, x, offset=0, rotary=None, layer_type="full_attention", **extra):
    """Their eager output for ``x`` at positions ``offset + arange(L)``: called with their
    layer type's mask as ``attention_mask``, ``rotary(x, position_ids)`` (their rotary
    embedding module, or None for a layer without RoPE) as ``position_embeddings``, and
    ``extra`` (Falcon's ``alibi``); the output alone, without the weights."""
    N, L = x.shape[:2]
    position_ids = torch.arange(offset, offset + L).expand(N, L)
    options = {} if rotary is None else {"position_embeddings": rotary(x, position_ids)}
    with torch.no_grad():
        out = theirs(x, attention_mask=hf_mask(config, layer_type, x, offset), **options, **extra)
    return out[0] if isinstance(out, tuple) else out
