"""Figures of the cross-attention page (docs/cross-attention.md)."""

from __future__ import annotations

from matplotlib.figure import Figure

# Positions, not words: the layer is untrained, and words on the axes would read as an alignment.
SOURCE = {  # the encoder's positions, S = 5: three real tokens and two of padding
    "en": ["s1", "s2", "s3", "pad", "pad"],
    "zh": ["s1", "s2", "s3", "填充", "填充"],
}
TARGET = ["t1", "t2", "t3"]  # the decoder's positions, L = 3


def fig_cross_weights(lang: str) -> Figure:
    """Cross-attention weights of a seeded, untrained ``MultiHeadAttention`` (two heads).

    Queries: 3 decoder states; keys and values: 5 encoder outputs, the last two padding,
    masked with ``padding_mask``. The numbers show shapes and masking, not meaning.
    """
    import torch

    from attention_ref import MultiHeadAttention, padding_mask
    from attention_ref.plotting import plot_attention

    text = {
        "en": {
            "title": "head {}",
            "x": "source position (key, value), from the encoder",
            "y": "target position (query)\nfrom the decoder",
        },
        "zh": {
            "title": "头 {}",
            "x": "源序列位置（键、值），来自编码器",
            "y": "目标序列位置（查询）\n来自解码器",
        },
    }[lang]
    with torch.random.fork_rng():  # seeded weights, without touching the caller's generator
        torch.manual_seed(0)
        cross = MultiHeadAttention(embed_dim=8, num_heads=2).eval()
        decoder_states = torch.randn(1, len(TARGET), 8)  # (N, L, E)
        encoder_output = torch.randn(1, len(SOURCE[lang]), 8)  # (N, S, E)
    keep = padding_mask([3], max_len=len(SOURCE[lang]))  # (N, 1, 1, S): 3 real tokens, 2 pads
    with torch.no_grad():
        _, weights = cross(decoder_states, encoder_output, attn_mask=keep)  # (N, H, L, S)

    fig = Figure(figsize=(7.0, 3.0), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for head, ax in enumerate(axes):
        plot_attention(
            weights[0, head], TARGET, SOURCE[lang], ax=ax, title=text["title"].format(head + 1)
        )
    fig.supxlabel(text["x"], fontsize=10)
    axes[0].set_ylabel(text["y"])
    fig.colorbar(axes[1].images[0], ax=axes, shrink=0.8)
    return fig
