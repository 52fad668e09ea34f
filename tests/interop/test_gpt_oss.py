"""MultiHeadAttention(sinks=True) == Hugging Face's GptOssAttention; sliding windows == theirs.

gpt-oss alternates a sliding-window layer (layer 0, 2, ...) and a full-attention layer. The
attention module is the same on both: the window lives in the mask the model builds for the
sliding layers (``masking_utils.create_sliding_window_causal_mask``), which ours receives as
``attn_mask=sliding_window_mask(L, W)``. Hugging Face's module runs eagerly, with plain RoPE
(the released checkpoints use YaRN, which changes the rotary angles and multiplies the
softmax scale; out of scope), which pairs each head's first half with its second half: ours
with ``rope_interleaved=False``. Its ``o_proj`` is our ``out_proj``; its ``sinks`` our
``sinks``, one logit per head.

Then the sliding-window conventions of ``masking_utils`` against ``sliding_window_mask``:
their causal window (``W`` keys, the query included) is ours; their bidirectional overlay
(``|i - j| <= W``: ``2W + 1`` keys) is ours with ``causal=False`` and ``window=W + 1``.
"""

import pytest
import torch

from attention_ref import KVCache, MultiHeadAttention, sliding_window_mask

from ._hf import eager_config, random_attention

transformers = pytest.importorskip("transformers")
modeling = pytest.importorskip("transformers.models.gpt_oss.modeling_gpt_oss")
mu = pytest.importorskip("transformers.masking_utils")

E, H, D, W = 32, 4, 8, 3  # d_model, heads, head width, the sliding layer's window
LAYERS = {"sliding_attention": 0, "full_attention": 1}  # gpt-oss: sliding first, then full


def _config(num_kv_heads, bias):
    config = eager_config(
        transformers.GptOssConfig,
        E,
        H,
        num_kv_heads,
        bias,
        head_dim=D,
        num_hidden_layers=2,
        sliding_window=W,
        intermediate_size=16,
        num_local_experts=2,
        num_experts_per_tok=1,
        vocab_size=16,
    )
    assert [config.layer_types[i] for i in LAYERS.values()] == list(LAYERS)
    return config


def _pair(layer_type, num_kv_heads=2, bias=True, seed=0):
    """Hugging Face's attention for that layer with random weights, and ours copied from it."""
    config = _config(num_kv_heads, bias)
    theirs = random_attention(
        modeling.GptOssAttention, config, layer_idx=LAYERS[layer_type], seed=seed
    )
    ours = MultiHeadAttention(
        E,
        H,
        num_kv_heads=num_kv_heads,
        head_dim=D,
        bias=bias,
        rope_base=10000.0,
        rope_interleaved=False,  # first half with second half, as their _apply_rotary_emb
        sinks=True,
    )
    state = {k.replace("o_proj.", "out_proj."): v for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state, strict=True)
    return theirs, ours, modeling.GptOssRotaryEmbedding(config), config


def _their_mask(config, layer_type, x, padding=None):
    """The mask Hugging Face's GptOssModel builds for a layer of that type (no cache)."""
    build = {
        "full_attention": mu.create_causal_mask,
        "sliding_attention": mu.create_sliding_window_causal_mask,
    }[layer_type]
    mask = build(config=config, inputs_embeds=x, attention_mask=padding, cache=None)
    assert mask is not None and mask.dtype == x.dtype  # eager: 0 or the dtype's minimum
    return mask  # (N, 1, L, S)


def _our_mask(layer_type, L):
    """What ours receives: the sliding window as a mask, or None (then is_causal=True)."""
    return sliding_window_mask(L, W) if layer_type == "sliding_attention" else None


@pytest.mark.parametrize("layer_type", list(LAYERS))
@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])  # MHA, GQA (gpt-oss: 64 and 8), MQA
@pytest.mark.parametrize("bias", [True, False])
def test_matches_gpt_oss_attention(layer_type, num_kv_heads, bias):
    theirs, ours, rotary, config = _pair(layer_type, num_kv_heads, bias)
    N, L = 2, 9  # L > W: the window cuts
    x = torch.randn(N, L, E)
    position_ids = torch.arange(L).expand(N, L)
    with torch.no_grad():
        expected, their_weights = theirs(
            x, rotary(x, position_ids), _their_mask(config, layer_type, x)
        )
        actual, weights = ours(x, attn_mask=_our_mask(layer_type, L), is_causal=True)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(weights, their_weights)  # (N, H, L, S), the sink's share dropped
    assert (weights.sum(-1) < 1).all()  # every row gives some weight to its sink


@pytest.mark.parametrize("layer_type", list(LAYERS))
def test_matches_with_right_padding(layer_type):
    theirs, ours, rotary, config = _pair(layer_type)
    N, L = 2, 8
    x = torch.randn(N, L, E)
    padding = torch.tensor([[True] * L, [True] * 5 + [False] * 3])  # (N, S): 1 = a real token
    position_ids = torch.arange(L).expand(N, L)
    mask = _our_mask(layer_type, L)
    attn_mask = padding[:, None, None] if mask is None else mask & padding[:, None, None]
    with torch.no_grad():
        expected, _ = theirs(
            x, rotary(x, position_ids), _their_mask(config, layer_type, x, padding.long())
        )
        actual, _ = ours(x, attn_mask=attn_mask, is_causal=True)
    torch.testing.assert_close(actual, expected)


def test_rolling_cache_decodes_as_their_sliding_layer():
    """Token by token with KVCache(window=W), which never holds more than W keys, equals their
    sliding layer over the whole sequence."""
    theirs, ours, rotary, config = _pair("sliding_attention")
    N, L = 2, 10
    x = torch.randn(N, L, E)
    cache = KVCache(window=W)
    with torch.no_grad():
        expected, _ = theirs(
            x,
            rotary(x, torch.arange(L).expand(N, L)),
            _their_mask(config, "sliding_attention", x),
        )
        steps = []
        for t in range(L):
            steps.append(ours(x[:, t : t + 1], kv_cache=cache, is_causal=True)[0])
            assert len(cache) == min(t + 1, W)
    torch.testing.assert_close(torch.cat(steps, dim=1), expected)


def test_their_sliding_layer_mask_is_ours():
    """The sliding layer's mask, as their model builds it, allows what ours allows."""
    config = _config(2, True)
    for L in (1, 2, 3, 4, 9, 17):
        x = torch.zeros(2, L, E)
        allowed = _their_mask(config, "sliding_attention", x) == 0  # (N, 1, L, S)
        assert torch.equal(allowed, sliding_window_mask(L, W).expand(2, 1, L, L))
        causal = _their_mask(config, "full_attention", x) == 0
        assert torch.equal(causal, torch.ones(L, L, dtype=torch.bool).tril().expand(2, 1, L, L))


def _hf(mask_function, L, S=None):
    """A mask function of ``masking_utils`` as the (L, S) bool mask ``sdpa_mask`` makes of it;
    with S > L the queries are the last L positions (a cache of S - L keys before them)."""
    S = L if S is None else S
    mask = mu.sdpa_mask(
        batch_size=1,
        q_length=L,
        kv_length=S,
        q_offset=S - L,
        mask_function=mask_function,
        allow_is_causal_skip=False,
    )
    return mask.expand(1, 1, L, S)[0, 0]


LENGTHS = [1, 2, 5, 16, 33]
WINDOWS = [1, 2, 3, 8, 40]


@pytest.mark.parametrize("L", LENGTHS)
@pytest.mark.parametrize("window", WINDOWS)
def test_sliding_window_mask_is_their_causal_window(L, window):
    """``sliding_window_causal_mask_function(W)``: ``0 <= i - j < W``, W keys with the query."""
    expected = _hf(mu.sliding_window_causal_mask_function(window), L)
    assert torch.equal(sliding_window_mask(L, window), expected)
    assert expected.sum(-1).max() == min(L, window)  # W keys, the query included


@pytest.mark.parametrize(("L", "S"), [(1, 7), (3, 11), (4, 4), (6, 40)])
@pytest.mark.parametrize("window", WINDOWS)
def test_sliding_window_mask_after_a_cache_is_theirs(L, S, window):
    """L new queries after S - L cached keys: ours aligned bottom-right, theirs offset."""
    expected = _hf(mu.sliding_window_causal_mask_function(window), L, S)
    assert torch.equal(sliding_window_mask(L, window, S, align="bottom_right"), expected)


@pytest.mark.parametrize("L", LENGTHS)
@pytest.mark.parametrize("window", WINDOWS)
def test_their_bidirectional_window_is_ours_one_wider(L, window):
    """Their bidirectional overlay keeps ``|i - j| <= W`` (2W + 1 keys); ours with
    ``causal=False`` keeps ``|i - j| < window`` (2·window - 1 keys): window = W + 1."""
    overlay = _hf(mu.sliding_window_bidirectional_overlay(window), L)
    assert torch.equal(sliding_window_mask(L, window + 1, causal=False), overlay)
    assert overlay.sum(-1).max() == min(L, 2 * window + 1)
    assert sliding_window_mask(L, window, causal=False).sum(-1).max() == min(L, 2 * window - 1)
    full = _hf(mu.sliding_window_bidirectional_mask_function(window), L)
    assert torch.equal(full, overlay)  # the overlay alone is their bidirectional window


@pytest.mark.parametrize("window", WINDOWS)
def test_their_overlay_on_causal_is_the_causal_window(window):
    """``sliding_window_overlay(W)`` (``j > i - W``) and causal: the causal window of W keys."""
    L = 12
    combined = _hf(mu.and_masks(mu.sliding_window_overlay(window), mu.causal_mask_function), L)
    assert torch.equal(combined, sliding_window_mask(L, window))
