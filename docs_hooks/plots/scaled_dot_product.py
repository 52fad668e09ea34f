"""Figures of the scaled dot-product attention page (docs/scaled-dot-product.md).

The scaling experiment draws queries and keys with independent N(0, 1) components, the
assumption of the variance argument, for head widths d_k = 1, 2, 4, ..., 1024. The vectors
are drawn once at the largest width; width d_k uses their first d_k components (a valid
sample for each d_k, and one draw keeps the figures fast).

Labels with Chinese text use Unicode (dₖ, ‖·‖), not matplotlib's $math$: mathtext draws the
text around the math in its own font, which has no Chinese glyphs.
"""

from __future__ import annotations

from matplotlib.figure import Figure

D_K = [2**i for i in range(11)]  # 1 ... 1024
NUM_KEYS = 32  # m, the keys each query attends to
PAIRS = 4000  # (q, k) pairs for the variance
QUERIES = 128  # queries for the softmax statistics, each with its own NUM_KEYS keys
SCALED, UNSCALED = "#1f4e9c", "#d1495b"  # blue: divided by sqrt(d_k); red: not


def _log2_axis(ax) -> None:
    """A log-2 x axis for d_k with plain tick labels (1, 4, 16, ...)."""
    ticks = D_K[::2]
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, labels=[str(t) for t in ticks])
    ax.minorticks_off()


def fig_sdpa_variance(lang: str) -> Figure:
    """Variance of q . k and of q . k / sqrt(d_k) against d_k, log-log."""
    import torch

    text = {
        "en": {
            "title": "Variance of the dot product",
            "x": "head width $d_k$",
            "y": f"variance over {PAIRS} pairs (q, k)",
            "raw": "$q \\cdot k$",
            "scaled": "$q \\cdot k / \\sqrt{d_k}$",
            "line": "$d_k$ (theory)",
            "one": "1 (theory)",
        },
        "zh": {
            "title": "点积的方差",
            "x": "每头维度 dₖ",
            "y": f"{PAIRS} 对 (q, k) 上的方差",
            "raw": "$q \\cdot k$",
            "scaled": "$q \\cdot k / \\sqrt{d_k}$",
            "line": "dₖ（理论值）",
            "one": "1（理论值）",
        },
    }[lang]
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(PAIRS, D_K[-1], generator=generator)
    k = torch.randn(PAIRS, D_K[-1], generator=generator)
    partial = (q * k).cumsum(dim=-1)  # (PAIRS, 1024): column d - 1 holds q[:d] . k[:d]
    raw, scaled = [], []
    for d_k in D_K:
        dots = partial[:, d_k - 1]  # (PAIRS,): one q . k per pair, at width d_k
        raw.append(dots.var().item())
        scaled.append((dots / d_k**0.5).var().item())

    fig = Figure(figsize=(5.2, 3.6), layout="constrained")
    ax = fig.subplots()
    ax.plot(D_K, D_K, color=UNSCALED, lw=1, ls="--", label=text["line"])
    ax.plot(D_K, raw, "o", color=UNSCALED, label=text["raw"])
    ax.plot(D_K, [1.0] * len(D_K), color=SCALED, lw=1, ls="--", label=text["one"])
    ax.plot(D_K, scaled, "s", color=SCALED, label=text["scaled"])
    ax.set(yscale="log", xlabel=text["x"], ylabel=text["y"], title=text["title"])
    _log2_axis(ax)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    return fig


def fig_sdpa_saturation(lang: str) -> Figure:
    """Largest weight and Jacobian norm of the softmax against d_k, with and without scaling."""
    import torch

    from attention_ref import attention_weights

    text = {
        "en": {
            "sat": "Saturation: largest weight",
            "sat_y": f"mean max weight over m = {NUM_KEYS} keys",
            "grad": "Gradient size",
            "grad_y": "mean $\\|\\mathrm{diag}(p) - pp^\\top\\|_F$",
            "x": "head width $d_k$",
            "scaled": "scaled by $1/\\sqrt{d_k}$",
            "unscaled": "not scaled",
            "uniform": f"uniform: 1/m = 1/{NUM_KEYS}",
        },
        "zh": {
            "sat": "饱和：最大权重",
            "sat_y": f"{NUM_KEYS} 个键中最大权重的均值",
            "grad": "梯度大小",
            "grad_y": "雅可比矩阵 diag(p) − ppᵀ 的 F 范数均值",
            "x": "每头维度 dₖ",
            "scaled": "乘以 1/√dₖ",
            "unscaled": "不缩放",
            "uniform": f"均匀分布：1/m = 1/{NUM_KEYS}",
        },
    }[lang]
    generator = torch.Generator().manual_seed(0)
    queries = torch.randn(QUERIES, 1, D_K[-1], generator=generator)  # (N, L, E): L = 1
    keys = torch.randn(QUERIES, NUM_KEYS, D_K[-1], generator=generator)  # (N, S, E)
    results = {"scaled": ([], []), "unscaled": ([], [])}
    for d_k in D_K:
        q, k = queries[..., :d_k], keys[..., :d_k]
        for name, scale in (("scaled", None), ("unscaled", 1.0)):  # None: 1 / sqrt(d_k)
            p = attention_weights(q, k, scale=scale)[:, 0]  # (N, S)
            jacobian = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # (N, S, S)
            top, norm = results[name]
            top.append(p.amax(dim=-1).mean().item())
            norm.append(torch.linalg.matrix_norm(jacobian).mean().item())

    fig = Figure(figsize=(8.4, 3.5), layout="constrained")
    sat, grad = fig.subplots(1, 2)
    for name, color, marker in (("unscaled", UNSCALED, "o"), ("scaled", SCALED, "s")):
        top, norm = results[name]
        sat.plot(D_K, top, marker=marker, color=color, label=text[name])
        grad.plot(D_K, norm, marker=marker, color=color, label=text[name])
    sat.axhline(1 / NUM_KEYS, color="grey", lw=0.8, ls=":")
    sat.annotate(
        text["uniform"],
        (D_K[-1], 1 / NUM_KEYS),
        xytext=(0, 3),
        textcoords="offset points",
        ha="right",
        va="bottom",
        fontsize=8,
        color="grey",
    )
    sat.set(ylim=(0, 1.05), title=text["sat"], ylabel=text["sat_y"])
    grad.set(ylim=(0, None), title=text["grad"], ylabel=text["grad_y"])
    for ax in (sat, grad):
        _log2_axis(ax)
        ax.set_xlabel(text["x"])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=9)
    return fig


def fig_sdpa_temperature(lang: str) -> Figure:
    """softmax(s / tau) of one score vector at several temperatures."""
    import torch

    from attention_ref import softmax

    text = {
        "en": {"title": "One score vector at several temperatures", "x": "key", "y": "weight"},
        "zh": {"title": "同一组分数在不同温度下的 softmax", "x": "键", "y": "权重"},
    }[lang]
    scores = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0])
    taus = [0.25, 0.5, 1.0, 2.0, 10.0]
    colors = ["#08306b", "#2171b5", "#6baed6", "#fd8d3c", "#d94801"]

    fig = Figure(figsize=(6.4, 3.4), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(taus)
    for i, (tau, color) in enumerate(zip(taus, colors, strict=True)):
        weights = softmax(scores / tau)
        positions = [j + (i - (len(taus) - 1) / 2) * width for j in range(len(scores))]
        ax.bar(positions, weights.tolist(), width=width, color=color, label=f"τ = {tau:g}")
    labels = [f"{s:g}".replace("-", "−") for s in scores.tolist()]
    ax.set_xticks(range(len(scores)), labels=[f"$s_{j + 1}$ = {s}" for j, s in enumerate(labels)])
    ax.set(ylim=(0, 1), xlabel=text["x"], ylabel=text["y"], title=text["title"])
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=9)
    return fig
