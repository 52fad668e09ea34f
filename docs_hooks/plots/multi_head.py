"""Figures of the multi-head attention page (docs/multi-head.md)."""

from __future__ import annotations

from matplotlib.figure import Figure

HEAD_COLORS = ["tab:blue", "tab:orange", "tab:green"]


def fig_mha_split(lang: str) -> Figure:
    """The tensors of one forward pass of a small seeded ``MultiHeadAttention``, stage by stage.

    L = 4 tokens, E = 6 features, H = 3 heads of D = 2: each head's slice is framed in its colour.
    """
    import torch
    from matplotlib.patches import Rectangle

    from attention_ref import MultiHeadAttention, attention_weights
    from attention_ref.heads import merge_heads, split_heads

    titles = {
        "en": ["input", "project", "split heads", "weights", "weighted sum", "concat", "output"],
        "zh": ["输入", "投影", "拆分成头", "注意力权重", "加权求和", "拼接", "输出"],
    }[lang]
    shapes = ["(L, E)", "(L, E)", "(H, L, D)", "(H, L, S)", "(H, L, D)", "(L, E)", "(L, E)"]
    formulas = [  # the same in both languages: mathtext has no Chinese glyphs
        "$x$",
        "$xW^Q$",
        "$Q_i$",
        "$\\mathrm{softmax}(Q_iK_i^\\top/\\sqrt{D})$",
        "$A_iV_i$",
        "$[A_1V_1, A_2V_2, A_3V_3]$",
        "$[\\ldots]\\,W^O$",
    ]
    head_label = {"en": "head {}", "zh": "头 {}"}[lang]
    L, E, H = 4, 6, 3
    D = E // H
    with torch.random.fork_rng():  # seeded weights, without touching the caller's generator
        torch.manual_seed(0)
        mha = MultiHeadAttention(E, H).eval()
        x = torch.randn(1, L, E)
    with torch.no_grad():
        q_full = mha.q_proj(x)  # (1, L, E)
        q = split_heads(q_full, H)  # (1, H, L, D)
        k = split_heads(mha.k_proj(x), H)
        v = split_heads(mha.v_proj(x), H)
        weights = attention_weights(q, k)  # (1, H, L, S)
        heads = weights @ v  # (1, H, L, D)
        merged = merge_heads(heads)  # (1, L, E)
        out = mha.out_proj(merged)  # (1, L, E)

    stages = ["x", "Q", "s", "a", "h", "c", "o"]
    mosaic = []
    for row in range(H):
        line = []
        for i, stage in enumerate(stages):
            line.append(f"{stage}{row}" if stage in "sah" else stage)
            if i < len(stages) - 1:
                line.append(f">{i}")
        mosaic.append(line)
    widths = [w for s in stages for w in ({"s": D, "a": L, "h": D}.get(s, E), 1.4)][:-1]
    fig = Figure(figsize=(8.4, 3.4), layout="constrained")
    axes = fig.subplot_mosaic(mosaic, width_ratios=widths)

    def show(ax, data, cmap="RdBu_r", vmin=None, vmax=None):
        """One matrix, its colour scale set by the whole stage it belongs to."""
        ax.imshow(data.numpy(), cmap=cmap, vmin=vmin, vmax=vmax)
        ax.set_xticks([])
        ax.set_yticks([])

    for name, data in (("x", x), ("Q", q_full), ("c", merged), ("o", out)):
        ax = axes[name]
        limit = float(data.abs().max())
        show(ax, data[0], vmin=-limit, vmax=limit)
        if name in "Qc":  # frame each head's columns in its colour
            for head, color in enumerate(HEAD_COLORS):
                ax.add_patch(
                    Rectangle(
                        (head * D - 0.45, -0.45),
                        D - 0.1,
                        L - 0.1,
                        fill=False,
                        edgecolor=color,
                        linewidth=2.0,
                    )
                )
    for head, color in enumerate(HEAD_COLORS):
        for stage, data, style in (
            ("s", q[0, head], {"vmin": -float(q.abs().max()), "vmax": float(q.abs().max())}),
            ("a", weights[0, head], {"cmap": "Blues", "vmin": 0.0, "vmax": float(weights.max())}),
            (
                "h",
                heads[0, head],
                {"vmin": -float(heads.abs().max()), "vmax": float(heads.abs().max())},
            ),
        ):
            ax = axes[f"{stage}{head}"]
            show(ax, data, **style)
            for spine in ax.spines.values():
                spine.set(edgecolor=color, linewidth=2.0)
        axes[f"s{head}"].set_ylabel(head_label.format(head + 1), color=color, fontsize=9)
    for i, stage in enumerate(stages):
        ax = axes[f"{stage}0" if stage in "sah" else stage]
        ax.set_title(f"{titles[i]}\n{shapes[i]}", fontsize=9)
        bottom = axes[f"{stage}{H - 1}" if stage in "sah" else stage]
        bottom.set_xlabel(formulas[i], fontsize=9)
        if i < len(stages) - 1:
            arrow = axes[f">{i}"]
            arrow.axis("off")
            arrow.text(0.5, 0.5, "→", ha="center", va="center", fontsize=16)
    return fig


def _kv_head_of_each_query_head(num_heads: int, num_kv_heads: int) -> list[int]:
    """g(i) for every query head i, read from attention_ref's own grouped-query attention.

    Each key/value head's value is its index; with one key, every query head's output is the
    value of the key/value head that ``enable_gqa`` gives it.
    """
    import torch

    from attention_ref import scaled_dot_product_attention

    query = torch.zeros(1, num_heads, 1, 1)  # (N, H, L, D): one query per head
    key = torch.zeros(1, num_kv_heads, 1, 1)  # (N, H_kv, S, D): one key per head
    value = torch.arange(float(num_kv_heads)).reshape(1, num_kv_heads, 1, 1)
    out = scaled_dot_product_attention(query, key, value, enable_gqa=True)  # (1, H, 1, 1)
    return [int(g) for g in out.flatten().tolist()]


def fig_gqa_groups(lang: str) -> Figure:
    """Which key/value head each of 8 query heads uses: multi-head, grouped-query, multi-query.

    The grouping comes from ``scaled_dot_product_attention(..., enable_gqa=True)``.
    """
    from matplotlib.patches import FancyBboxPatch

    text = {
        "en": {
            "rows": ["multi-head attention", "grouped-query attention", "multi-query attention"],
            "q": "query heads",
            "kv": "key/value heads",
            "cache": "KV cache: {} of 8 heads",
        },
        "zh": {
            "rows": ["多头注意力", "分组查询注意力", "多查询注意力"],
            "q": "查询头",
            "kv": "键/值头",
            "cache": "KV 缓存：8 个头中的 {} 个",
        },
    }[lang]
    num_heads = 8
    colors = [  # one per key/value head
        "tab:blue", "tab:orange", "tab:green", "tab:red",
        "tab:purple", "tab:brown", "tab:pink", "tab:olive",
    ]  # fmt: skip
    fig = Figure(figsize=(8.4, 4.3), layout="constrained")
    axes = fig.subplots(3, 1)
    for ax, name, num_kv in zip(axes, text["rows"], (8, 2, 1), strict=True):
        groups = _kv_head_of_each_query_head(num_heads, num_kv)
        size = num_heads // num_kv
        kv_x = [g * size + (size - 1) / 2 for g in range(num_kv)]  # under the middle of its group
        for i, g in enumerate(groups):
            color = colors[g]
            ax.plot([i, kv_x[g]], [0.78, 0.22], color=color, linewidth=1.6, zorder=1)
            ax.add_patch(
                FancyBboxPatch(
                    (i - 0.32, 0.78), 0.64, 0.3, boxstyle="round,pad=0.02", facecolor="white",
                    edgecolor=color, linewidth=1.8, zorder=2,
                )
            )  # fmt: skip
            ax.text(i, 0.93, f"$q_{{{i}}}$", ha="center", va="center", fontsize=10, zorder=3)
        for g, x in enumerate(kv_x):
            ax.add_patch(
                FancyBboxPatch(
                    (x - 0.42, -0.08), 0.84, 0.3, boxstyle="round,pad=0.02", facecolor=colors[g],
                    edgecolor=colors[g], alpha=0.85, zorder=2,
                )
            )  # fmt: skip
            ax.text(x, 0.07, f"$k_{{{g}}}, v_{{{g}}}$", ha="center", va="center", fontsize=10,
                    color="white", zorder=3)  # fmt: skip
        ax.text(-0.75, 0.93, text["q"], ha="right", va="center", fontsize=9)
        ax.text(-0.75, 0.07, text["kv"], ha="right", va="center", fontsize=9)
        # three titles: mathtext has no Chinese glyphs, so words and formulas stay apart
        ax.set_title(name, loc="left", fontsize=10, fontweight="bold")
        ax.set_title(f"$H = {num_heads},\\ H_{{kv}} = {num_kv}$", loc="center", fontsize=10)
        ax.set_title(text["cache"].format(num_kv), loc="right", fontsize=10)
        ax.set_xlim(-3.6, num_heads - 0.4)
        ax.set_ylim(-0.15, 1.15)
        ax.axis("off")
    return fig
