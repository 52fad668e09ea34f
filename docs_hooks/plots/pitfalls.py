"""Figures of the common pitfalls page (docs/pitfalls.md)."""

from __future__ import annotations

from matplotlib.figure import Figure

TEXT = {
    "en": {
        "title": "One query, 16 keys, d_model = 512 in 8 heads of dₖ = 64",
        "right": "scale 1/√dₖ (correct)",
        "wrong": "scale 1/√d_model (wrong)",
        "uniform": "uniform 1/16",
        "x": "key",
        "y": "attention weight",
    },
    "zh": {
        "title": "一个查询、16 个键；d_model = 512，分成 8 个头，每头 dₖ = 64",
        "right": "缩放 1/√dₖ（正确）",
        "wrong": "缩放 1/√d_model（错误）",
        "uniform": "均匀分布 1/16",
        "x": "键",
        "y": "注意力权重",
    },
}


def fig_pit_scale(lang: str) -> Figure:
    """The weights of one query with the right scale and with the wrong sqrt(d_model)."""
    import torch

    from attention_ref import attention_weights

    text = TEXT[lang]
    generator = torch.Generator().manual_seed(0)  # the same inputs as the page's doctest
    q = torch.randn(1, 8, 16, 64, generator=generator)  # (N, H, L, D)
    k = torch.randn(1, 8, 16, 64, generator=generator)
    right = attention_weights(q, k)[0, 0, 0]  # head 0, query 0: (S,)
    wrong = attention_weights(q, k, scale=512**-0.5)[0, 0, 0]

    fig = Figure(figsize=(6.8, 3.2), layout="constrained")
    ax = fig.subplots()
    keys = torch.arange(16)
    ax.bar((keys - 0.2).tolist(), right.tolist(), width=0.4, color="tab:blue", label=text["right"])
    ax.bar(
        (keys + 0.2).tolist(), wrong.tolist(), width=0.4, color="tab:orange", label=text["wrong"]
    )
    ax.axhline(1 / 16, color="black", linestyle="--", linewidth=1, label=text["uniform"])
    ax.set_xticks(keys.tolist())
    ax.set(xlabel=text["x"], ylabel=text["y"], title=text["title"], ylim=(0, None))
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=9)
    return fig
