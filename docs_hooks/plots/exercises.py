"""Figures of the exercises page (docs/exercises.md)."""

from __future__ import annotations

from functools import cache

from matplotlib.figure import Figure

WIDTH = 512  # d in the complexity exercise

TEXT = {
    "en": {
        "complexity_title": f"Attention products vs. a recurrent layer, d = {WIDTH}",
        "attention": "self-attention, 4n²d (attention_flops)",
        "rnn": "recurrent layer, 4nd²",
        "crossover": f"n = d = {WIDTH}",
        "n": "sequence length n",
        "flops": "FLOPs",
        "Post-LN": "Post-LN",
        "Pre-LN": "Pre-LN",
        "grad_title": "Gradient norm per layer at initialization",
        "layer": "layer",
        "grad": "gradient norm",
        "loss_title": "Training loss, Adam at lr 0.01, no warm-up",
        "step": "step",
        "loss": "loss (MSE)",
    },
    "zh": {
        "complexity_title": f"注意力的矩阵乘法与循环层对比，d = {WIDTH}",
        "attention": "自注意力，4n²d（attention_flops）",
        "rnn": "循环层，4nd²",
        "crossover": f"n = d = {WIDTH}",
        "n": "序列长度 n",
        "flops": "浮点运算次数（FLOPs）",
        "Post-LN": "后归一化",
        "Pre-LN": "前归一化",
        "grad_title": "初始化时每层的梯度范数",
        "layer": "层",
        "grad": "梯度范数",
        "loss_title": "训练损失：Adam，学习率 0.01，无预热",
        "step": "步数",
        "loss": "损失（MSE）",
    },
}


def fig_ex_complexity(lang: str) -> Figure:
    """Attention's 4n²d against a recurrent layer's 4nd², crossing at n = d."""
    from attention_ref.cost import attention_flops

    text = TEXT[lang]
    lengths = [2**i for i in range(5, 15)]  # 32 ... 16384
    attention = [attention_flops(n, d_k=WIDTH) for n in lengths]
    rnn = [n * 4 * WIDTH * WIDTH for n in lengths]  # two d x d products per token

    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.subplots()
    ax.loglog(lengths, attention, marker="o", color="tab:blue", label=text["attention"])
    ax.loglog(lengths, rnn, marker="s", color="tab:orange", label=text["rnn"])
    ax.axvline(WIDTH, color="gray", linestyle="--", linewidth=1)
    ax.annotate(
        text["crossover"],
        (WIDTH, rnn[lengths.index(WIDTH)]),
        xytext=(8, -22),
        textcoords="offset points",
        fontsize=9,
    )
    ax.set_xticks(lengths[::2], labels=[str(n) for n in lengths[::2]])
    ax.set(xlabel=text["n"], ylabel=text["flops"], title=text["complexity_title"])
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=9)
    return fig


@cache
def _ln_experiment() -> dict[str, tuple[list[float], list[float]]]:
    """Gradient norms at initialization and training losses, Post-LN and Pre-LN, seed 0.

    Cached: the English and the Chinese figure share one run.
    """
    from attention_ref.lab.layernorm_placement import layer_grad_norms, train_losses

    return {
        name: (layer_grad_norms(norm_first).tolist(), train_losses(norm_first))
        for name, norm_first in (("Post-LN", False), ("Pre-LN", True))
    }


def fig_ex_ln_gradients(lang: str) -> Figure:
    """Per-layer gradient norms at initialization and 30 training steps, Post-LN vs Pre-LN."""
    text = TEXT[lang]
    results = _ln_experiment()

    fig = Figure(figsize=(7.6, 3.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    for (name, (norms, losses)), color in zip(
        results.items(), ("tab:blue", "tab:red"), strict=True
    ):
        layers = range(1, len(norms) + 1)
        left.plot(layers, norms, marker="o", color=color, label=text[name])
        right.plot(range(1, len(losses) + 1), losses, color=color, label=text[name])
    left.set(title=text["grad_title"], xlabel=text["layer"], ylabel=text["grad"], ylim=(0, None))
    left.set_xticks(range(1, len(results["Post-LN"][0]) + 1))
    right.set(title=text["loss_title"], xlabel=text["step"], ylabel=text["loss"], ylim=(0, None))
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=9)
        ax.title.set_fontsize(10)
    return fig
