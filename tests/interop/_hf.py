"""What the tests against Hugging Face's attention modules and layers share: a config for one
attention layer, run eagerly; their module with random weights; a layer's type, its mask and
its rotary embeddings; their module called by keyword (``their_call``, any family) and ours;
cached decoding against the full forward."""

import functools

import torch


def eager_config(config_class, width: int, heads: int, kv_heads: int, bias: bool, **more):
    """``config_class`` (a Hugging Face config) for attention over ``width`` features in
    ``heads`` heads and ``kv_heads`` key/value heads, without dropout, with plain RoPE (no
    scaling such as YaRN), its attention computed eagerly; ``more``: the model's own fields."""
    config = config_class(
        hidden_size=width,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        attention_bias=bias,
        attention_dropout=0.0,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        **more,
    )
    config._attn_implementation = "eager"
    return config


def random_attention(attention_class, config, layer_idx: int, seed: int) -> torch.nn.Module:
    """Their attention module of layer ``layer_idx`` in eval mode, with every parameter random
    (norms' weights and sinks too, which they create as ones or empty: so none is trivial)."""
    torch.manual_seed(seed)
    theirs = attention_class(config, layer_idx=layer_idx).eval()
    with torch.no_grad():
        for p in theirs.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return theirs


def randomize(module: torch.nn.Module, seed: int = 0, std: float = 0.3) -> torch.nn.Module:
    """Every parameter of ``module`` random (biases and norm weights too, so that none is
    trivial), in eval mode; returns it."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.dtype) * std)
    return module.eval()


def hf_mask(config, layer_type: str, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """Hugging Face's own eager mask for a layer of ``layer_type`` (``masking_utils``), for the
    queries of ``x`` ``(N, L, E)`` standing at ``offset + arange(L)`` over keys at the same
    positions: ``(N, 1, L, L)``, 0 where allowed, the dtype's minimum elsewhere.

    Without a cache Hugging Face places queries and keys at ``position_ids``: the windows and
    chunks of a layer follow them."""
    from transformers import masking_utils as mu

    build = {
        "full_attention": mu.create_causal_mask,
        "sliding_attention": mu.create_sliding_window_causal_mask,
        "chunked_attention": mu.create_chunked_causal_mask,
    }[layer_type]
    N, L = x.shape[:2]
    positions = torch.arange(offset, offset + L).expand(N, L)
    mask = build(
        config=config,
        inputs_embeds=x,
        attention_mask=None,
        cache=None,
        position_ids=positions,
        allow_is_causal_skip=False,
    )
    return mask


def rotary_for(theirs: torch.nn.Module, config):
    """The rotary-embedding module of ``theirs``' family (``<Family>RotaryEmbedding``, from the
    modeling module that defines ``theirs``: its attention or its layer), built from
    ``config``, or None for a family without one."""
    import sys

    modeling = sys.modules[type(theirs).__module__]
    names = [n for n in dir(modeling) if n.endswith("RotaryEmbedding")]
    return getattr(modeling, names[0])(config) if names else None


def their_call(theirs, config, x, offset=0, rotary=None, layer_type="full_attention", **extra):
    """Their eager output for ``x`` at positions ``offset + arange(L)``, the output alone
    (without the weights): called by keyword, which every family accepts (GPT-NeoX and StableLM
    take the mask second, Falcon ``alibi``), with their layer type's mask as ``attention_mask``,
    ``rotary(x, position_ids)`` (their rotary embedding module, or None for a layer without
    RoPE) as ``position_embeddings``, and ``extra`` (Falcon's ``alibi``...)."""
    N, L = x.shape[:2]
    position_ids = torch.arange(offset, offset + L).expand(N, L)
    options = {} if rotary is None else {"position_embeddings": rotary(x, position_ids)}
    with torch.no_grad():
        out = theirs(x, attention_mask=hf_mask(config, layer_type, x, offset), **options, **extra)
    return out[0] if isinstance(out, tuple) else out


def layer_type_of(config, layer_idx: int) -> str:
    """The type of layer ``layer_idx``, which picks its mask as Hugging Face's model does: the
    config's ``layer_types`` where it has them, else ``"sliding_attention"`` where it sets a
    ``sliding_window`` (Mistral, Phi-3: every layer), else ``"full_attention"``."""
    types = getattr(config, "layer_types", None)
    if types is not None:
        return types[layer_idx]
    return "sliding_attention" if getattr(config, "sliding_window", None) else "full_attention"


def _layer_rotary(theirs, config, layer_type: str):
    """``rotary_for`` their module, bound to ``layer_type`` where the family keeps one rotary
    set per layer type (Gemma 3)."""
    rotary = rotary_for(theirs, config)
    if isinstance(getattr(rotary, "rope_type", None), dict):
        return functools.partial(rotary, layer_type=layer_type)
    return rotary


def llama_like_call(theirs, config, x, layer_type: str, offset: int = 0):
    """``their_call`` for a Llama-like attention module: its family's rotary embedding and its
    layer type's mask."""
    rotary = _layer_rotary(theirs, config, layer_type)
    return their_call(theirs, config, x, offset, rotary, layer_type)


def llama_like_layer_call(theirs, config, x, layer_type: str, offset: int = 0):
    """``their_call`` for a Llama-like decoder layer: its family's rotary embedding, its layer
    type's mask, and the ``position_ids`` too."""
    N, L = x.shape[:2]
    position_ids = torch.arange(offset, offset + L).expand(N, L)
    rotary = _layer_rotary(theirs, config, layer_type)
    return their_call(theirs, config, x, offset, rotary, layer_type, position_ids=position_ids)


def ours_call(ours, x, offset: int = 0):
    """Our module's output for ``x`` at positions ``offset + arange(L)`` under its own rule."""
    L = x.size(1)
    with torch.no_grad():
        out = ours(x, positions=torch.arange(offset, offset + L), is_causal=True)
    return out[0] if isinstance(out, tuple) else out


def cached_equals_full(ours, x, splits=(4, 1, 1, 1), atol=1e-5) -> None:
    """Decoding through a ``KVCache`` (a prompt, then a token at a time) gives the rows of
    the full causal forward."""
    from attention_ref import KVCache, LatentCache, MultiHeadLatentAttention

    attention = getattr(ours, "self_attn", ours)
    latent = isinstance(attention, MultiHeadLatentAttention)
    cache = LatentCache() if latent else KVCache()
    with torch.no_grad():
        full = ours(x, is_causal=True)
        full = full[0] if isinstance(full, tuple) else full
        outs, start = [], 0
        for n in splits:
            out = ours(x[:, start : start + n], is_causal=True, kv_cache=cache)
            outs.append(out[0] if isinstance(out, tuple) else out)
            start += n
    assert start == x.size(1), "splits must cover x"
    torch.testing.assert_close(torch.cat(outs, dim=1), full, atol=atol, rtol=atol)
