"""Figures of the Transformer layer page (docs/transformer-layer.md)."""

from __future__ import annotations

from matplotlib.figure import Figure

DEPTH = 24  # layers in the stack
WIDTH, HEADS, FF, LENGTH = 64, 4, 256, 16  # d_model, h, d_ff, tokens


def _residual_stream(norm_first: bool) -> tuple[list[float], list[float]]:
    """Send seeded tokens through DEPTH freshly initialized (untrained) encoder layers.

    Returns, averaged over the tokens, the RMS of the residual stream after each layer (index
    0: the input) and its cosine similarity to the input after each layer.
    """
    import torch

    from attention_ref import TransformerEncoderLayer

    with torch.random.fork_rng():  # seeded weights, without touching the caller's generator
        torch.manual_seed(0)
        layers = [
            TransformerEncoderLayer(WIDTH, HEADS, FF, dropout=0.0, norm_first=norm_first).eval()
            for _ in range(DEPTH)
        ]
        x = torch.randn(1, LENGTH, WIDTH)  # (N, L, E), RMS about 1
    rms, similarity = [x.pow(2).mean(-1).sqrt().mean().item()], [1.0]
    stream = x
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: one thread is fastest, and safe on a busy machine
    try:
        with torch.no_grad():
            for layer in layers:
                stream = layer(stream)  # (N, L, E)
                rms.append(stream.pow(2).mean(-1).sqrt().mean().item())
                similarity.append(torch.cosine_similarity(stream, x, dim=-1).mean().item())
    finally:
        torch.set_num_threads(threads)
    return rms, similarity


def fig_layer_residual(lang: str) -> Figure:
    """Post-LN vs Pre-LN at initialization: the residual stream's size, how much input is left."""
    text = {
        "en": {
            "rms": "RMS of the residual stream",
            "similarity": "cosine similarity to the input",
            "x": "layer",
            "input": "input",
        },
        "zh": {
            "rms": "残差流的均方根（RMS）",
            "similarity": "与输入的余弦相似度",
            "x": "层",
            "input": "输入",
        },
    }[lang]
    fig = Figure(figsize=(7.6, 3.0), layout="constrained")
    left, right = fig.subplots(1, 2)
    for norm_first, label, color in ((False, "Post-LN", "tab:blue"), (True, "Pre-LN", "tab:red")):
        rms, similarity = _residual_stream(norm_first)
        left.plot(range(DEPTH + 1), rms, marker=".", color=color, label=label)
        right.plot(range(DEPTH + 1), similarity, marker=".", color=color, label=label)
    left.set(title=text["rms"], ylim=(0.0, None))
    right.set(title=text["similarity"], ylim=(0.0, 1.05))
    for ax in (left, right):
        ax.set_xticks([0, 6, 12, 18, 24], labels=[text["input"], "6", "12", "18", "24"])
        ax.set_xlabel(text["x"])
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    return fig
