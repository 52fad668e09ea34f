"""The attention explorer's data: weights from attention_ref.lab.attention_maps, as plain JSON.

The hook (docs_hooks/hooks/explorer.py) writes ``explorer_json()`` into the site as
``explorer/attention.json``; docs/javascripts/explorer.js draws it on the visualizing page.
The file holds, for every view, the tokens (string arrays), the weights nested as
``layers[layer][head][query][key]`` (numbers in [0, 1], masked keys 0, each the shortest
decimal that reads back as the same float32) and the mask (1 = may attend), and the explorer's
words in both languages: the page picks its own by ``<html lang>``.

Shape legend: L queries, S keys.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

DATA_PATH = "explorer/attention.json"  # where the site serves it

# Where each view's code is shown: anchors on the visualizing page, another page's section, or
# the function's entry in the API reference.
CODE = "#explorer-code"
API = "../reference/#attention_ref.lab.attention_maps."
LINKS = {
    "toy": [("#toy-task", "train_toy_model"), (CODE, "attention_maps")],
    "positions": [("../positions/#experiment", "train_with_positions"), (CODE, "attention_maps")],
    "decoder": [
        ("../decoding/#next-token", "TinyDecoder"),
        (API + "train_counting_decoder", "train_counting_decoder"),
    ],
    "gallery": [(CODE, "mask_gallery"), ("../positions/#alibi", "alibi_bias")],
}

TEXT: dict[str, dict[str, Any]] = {
    "en": {
        "label": "Attention explorer",
        "view": "View",
        "layer": "Layer",
        "head": "Head",
        "scale": "Colour scale",
        "linear": "linear",
        "log": "log",
        "mask": "Show the mask",
        "table": "Show as table",
        "models": "Trained models",
        "gallery": "Mask gallery with ALiBi",
        "layer_n": "layer {n}",
        "head_n": "head {n}",
        "slope": "head {n}: slope 1/{d}",
        "query": "query",
        "key": "key",
        "queries": "queries",
        "keys": "keys",
        "readout": "query {q} → key {k}: {w}",
        "masked": "query {q} → key {k}: masked (0)",
        "row": "Row of query {q}: {weights}",
        "sum": "row sum",
        "code": "Code:",
        "then": "; ",  # between the readout and the row's sum
        "sentence_sep": " ",  # between two sentences of the about line
        "comma": ", ",  # between the items of a list
        "label_sep": ". ",  # between the heatmap's name and the selected cell, read aloud
        "help": "Hover over or tap a cell, or focus the heatmap with Tab and move with the "
        "arrow keys; Home and End go to the row's first and last key.",
        "heatmap": "heatmap",
        "grid": "Attention weights, queries down the side, keys along the top",
        "caption": "{view}, {layer}, {head}: weights of each query (row) over the keys (columns)",
        "views": {
            "toy": "Toy model: previous and mirrored token",
            "none": "Positions experiment: no positions",
            "sinusoidal": "Positions experiment: sinusoidal",
            "learned": "Positions experiment: learned",
            "rope": "Positions experiment: RoPE",
            "decoder": "Counting decoder, 2 layers",
            "causal": "Causal + ALiBi",
            "sliding_window_sink": "Sliding window 3, one sink token + ALiBi",
            "document": "Causal document mask (two sentences) + ALiBi",
            "prefix_lm": "Prefix-LM, prefix of 3 + ALiBi",
            "chunked": "Chunks of 4 + ALiBi",
            "dilated": "Dilated window, 4 keys 2 apart + ALiBi",
            "causal_sink_logit": "Causal + sink logit + ALiBi",
        },
        "about": {
            "toy": "The weights of the model this page trains (one attention layer, two heads, "
            "no mask), run on C A F J B E. One head reads the mirrored position, the other the "
            "previous one.",
            "positions": "One of the four models of the positions experiment: one causal "
            "attention layer trained to name the previous token, on 8 tokens, with {name}.",
            "decoder": "The decoding page's decoder (two Llama-style layers of four heads, "
            "RoPE, causal) after 60 training steps of counting modulo 10, on 7 8 9 0 1 2 3 4.",
            "gallery": "Every score q · k is 0, so only the mask and ALiBi's bias decide the "
            "weights: each head has its own slope, the steepest first.",
            "prefix": "ALiBi's bias is signed, made for causal attention: inside the two-way "
            "prefix, keys after the query get a positive bias, so the prefix rows lean toward "
            "the prefix's last key.",
            "sink": "A sink logit per head (fixed at 0 here; learned in gpt-oss) joins every "
            "row's softmax and its share is dropped: the rows sum to less than 1.",
        },
        "encodings": {
            "none": "no positions (only the causal mask tells the positions apart)",
            "sinusoidal": "sinusoidal positions added to the embeddings",
            "learned": "learned position embeddings",
            "rope": "RoPE inside the attention",
        },
    },
    "zh": {
        "label": "注意力查看器",
        "view": "视图",
        "layer": "层",
        "head": "头",
        "scale": "色标",
        "linear": "线性",
        "log": "对数",
        "mask": "显示掩码",
        "table": "以表格显示",
        "models": "训练好的模型",
        "gallery": "掩码示例（加 ALiBi）",
        "layer_n": "第 {n} 层",
        "head_n": "头 {n}",
        "slope": "头 {n}：斜率 1/{d}",
        "query": "查询",
        "key": "键",
        "queries": "查询",
        "keys": "键",
        "readout": "查询 {q} → 键 {k}：{w}",
        "masked": "查询 {q} → 键 {k}：被掩码（0）",
        "row": "查询 {q} 这一行：{weights}",
        "sum": "行之和",
        "code": "代码：",
        "then": "；",
        "sentence_sep": "",
        "comma": "，",
        "label_sep": "。",
        "help": "把指针移到格子上、轻触格子，或用 Tab 聚焦热力图后按方向键移动，即可查看各个权重；"
        "Home 和 End 跳到这一行的第一个和最后一个键。",
        "heatmap": "热力图",
        "grid": "注意力权重：查询在左侧，键在顶部",
        "caption": "{view}，{layer}，{head}：每个查询（行）在各个键（列）上的权重",
        "views": {
            "toy": "玩具模型：前一个词元与镜像位置的词元",
            "none": "位置实验：无位置信息",
            "sinusoidal": "位置实验：正弦位置编码",
            "learned": "位置实验：可学习的位置嵌入",
            "rope": "位置实验：RoPE",
            "decoder": "计数解码器（两层）",
            "causal": "因果掩码 + ALiBi",
            "sliding_window_sink": "窗口为 3 的滑动窗口，一个汇点词元 + ALiBi",
            "document": "因果文档掩码（两个句子）+ ALiBi",
            "prefix_lm": "前缀语言模型，前缀长 3 + ALiBi",
            "chunked": "每段 4 个位置的分段掩码 + ALiBi",
            "dilated": "空洞滑动窗口（4 个键，间隔 2）+ ALiBi",
            "causal_sink_logit": "因果掩码 + 汇点 logit + ALiBi",
        },
        "about": {
            "toy": "本页训练的模型（一层注意力、两个头、没有掩码）在 C A F J B E 上的权重。"
            "一个头看镜像位置，另一个头看前一个位置。",
            "positions": "位置实验的四个模型之一：一层因果注意力，在 8 个词元的序列上训练，"
            "任务是输出前一个词元；位置信息：{name}。",
            "decoder": "解码一页的计数解码器（两个 Llama 风格的层，每层四个头，RoPE，因果）"
            "训练 60 步、学会模 10 计数之后，在 7 8 9 0 1 2 3 4 上的权重。",
            "gallery": "所有分数 q · k 都是 0，权重只由掩码和 ALiBi 的偏置决定："
            "每个头有自己的斜率，最陡的在前。",
            "prefix": "ALiBi 的偏置带符号，本是为因果注意力设计的：在双向前缀里，"
            "查询之后的键反而得到正偏置，所以前缀各行的权重朝前缀的最后一个键递增。",
            "sink": "每个头有一个汇点 logit（这里固定为 0，gpt-oss 中是学出来的），"
            "它参与每一行的 softmax，分到的份额随后被丢弃，所以每行之和小于 1。",
        },
        "encodings": {
            "none": "无（只有因果掩码能区分位置）",
            "sinusoidal": "加到嵌入上的正弦位置编码",
            "learned": "可学习的位置嵌入",
            "rope": "注意力内部的 RoPE",
        },
    },
}


def _numbers(tensor) -> list:
    """A float tensor as nested lists of the shortest decimals that read back as its float32."""
    shortest = np.vectorize(lambda x: float(str(np.float32(x))), otypes=[object])
    return shortest(tensor.detach().float().numpy()).tolist()


def explorer_data() -> dict[str, Any]:
    """Every view of the explorer: computed from attention_ref now (seeded: a few seconds)."""
    from attention_ref.lab.attention_maps import GALLERY_TOKENS, mask_gallery, model_maps
    from attention_ref.positions import alibi_slopes

    views = []
    for name, found in model_maps().items():
        group = "positions" if name in ("none", "sinusoidal", "learned", "rope") else name
        views.append(
            {
                "id": name,
                "group": "models",
                "about": group,
                "links": LINKS[group],
                "tokens": found["tokens"],
                "layers": _numbers(found["weights"]),  # (layers, H, L, S)
                "mask": found["mask"].int().tolist(),
            }
        )
    gallery = mask_gallery()
    for name, found in gallery.items():
        weights = found["weights"]  # (H, L, S)
        views.append(
            {
                "id": name,
                "group": "gallery",
                "about": "gallery",
                "links": LINKS["gallery"],
                "tokens": list(GALLERY_TOKENS),
                "layers": [_numbers(weights)],
                "mask": found["mask"].int().tolist(),
                "slopes": [round(1 / s) for s in alibi_slopes(weights.size(0))],
            }
        )
    return {"views": views, "text": TEXT}


def explorer_json() -> str:
    """The file the site serves: ``explorer_data()`` as compact JSON."""
    return json.dumps(explorer_data(), ensure_ascii=False, separators=(",", ":"))
