"""The table of open models' attention, drawn from docs/includes/open-models.json.

The page "Attention in open models" (docs/open-models.md and .zh.md) holds the line
``<!-- open-models-table -->``; docs_hooks/hooks/open_models.py replaces it with the table
drawn here in the page's language. The JSON is what ``from_hf`` builds for each family
(``attention_ref.open_models.describe``, one description per layer), written by
``python -m docs_hooks.open_models_table --write`` in the interop environment; drawing it
needs no transformers.

A row is a family, a column a part. A cell lists the part's items (``RoPE ¼``, ``NoPE``); an
item that only some layers have says on how many of the layer pattern's layers
(``NoPE (1 of 4 layers)``). Each item links to the section that teaches it. Every string a
cell can show is in ``TEXT`` below, in both languages; anything the renderer does not know
(a part, a wiring, a score function) raises ``OpenModelsError``, which fails the build.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from docs_hooks.constants import LANGUAGES

DATA = Path(__file__).resolve().parents[1] / "docs" / "includes" / "open-models.json"
MARKER = re.compile(r"^<!-- open-models-table -->$", re.M)
PAGE = "open-models.md"  # the page whose sections the cells link to (``#bias``...)
NONE = "—"

# Every string a cell or a header can show, once, in both languages.
TEXT: dict[str, dict[str, str]] = {
    # headers
    "model": {"en": "Model", "zh": "模型"},
    "bias": {"en": "Bias", "zh": "偏置"},
    "qk_norm": {"en": "q/k norm", "zh": "QK 归一化"},
    "positions": {"en": "Positions", "zh": "位置"},
    "other": {"en": "Other parts", "zh": "其他部件"},
    "layers": {"en": "Layers", "zh": "各层注意力"},
    "block": {"en": "Block", "zh": "块结构"},
    # q/k norms: kind, over what, where
    "rms": {"en": "RMSNorm", "zh": "RMSNorm"},
    "rms_no_weight": {"en": "weightless RMSNorm", "zh": "无权重 RMSNorm"},
    "layernorm": {"en": "LayerNorm", "zh": "LayerNorm"},
    "norm_head": {"en": "{kind} per head", "zh": "{kind}（逐头）"},
    "norm_whole": {"en": "{kind} over all heads", "zh": "{kind}（各头合在一起）"},
    "before_rope": {"en": "{norm}, before RoPE", "zh": "{norm}，RoPE 之前"},
    "after_rope": {"en": "{norm}, after RoPE", "zh": "{norm}，RoPE 之后"},
    # positions
    "rope": {"en": "RoPE", "zh": "RoPE"},
    "rope_part": {"en": "RoPE {fraction}", "zh": "RoPE {fraction}"},
    "interleaved": {"en": "interleaved", "zh": "相邻配对"},
    "nope": {"en": "NoPE", "zh": "NoPE"},
    "learned": {"en": "learned embeddings, at the input", "zh": "可学习的位置嵌入（加在输入上）"},
    "alibi": {"en": "ALiBi", "zh": "ALiBi"},
    "mla": {"en": "MLA", "zh": "MLA"},
    # scale, scores, gate, sinks
    "scale_root": {"en": "scale 1/√{n}", "zh": "缩放系数 1/√{n}"},
    "scale_value": {"en": "scale {value}", "zh": "缩放系数 {value}"},
    "projections": {"en": "{names}", "zh": "{names}"},
    "temperature": {"en": "query temperature", "zh": "查询温度"},
    "softcap": {"en": "soft cap {cap}", "zh": "软截断 {cap}"},
    "sigmoid": {"en": "output gate", "zh": "输出门控"},
    "sink_logits": {"en": "sink logits", "zh": "汇点 logit"},
    # layers
    "full": {"en": "full", "zh": "全注意力"},
    "sliding": {"en": "sliding {size}", "zh": "滑动窗口 {size}"},
    "chunked": {"en": "chunked {size}", "zh": "分段 {size}"},
    "linear": {"en": "linear", "zh": "线性注意力"},
    "bidirectional": {"en": "both directions", "zh": "双向"},
    "all_layers": {"en": "all {kind}", "zh": "均为{kind}"},
    "count_layers": {"en": "{count} {kind}", "zh": "{count} 层{kind}"},
    "pattern": {"en": "{runs}", "zh": "每 {period} 层：{runs}"},
    "some_layers": {
        "en": "{item} ({count} of {period} layers)",
        "zh": "{item}（每 {period} 层中 {count} 层）",
    },
    # blocks
    "PreNorm": {"en": "pre-norm", "zh": "前归一化"},
    "PostNorm": {"en": "post-norm", "zh": "子层输出归一化"},
    "Sandwich": {"en": "sandwich", "zh": "三明治归一化"},
    "Parallel1": {"en": "parallel, one norm", "zh": "并行块，一个归一化"},
    "Parallel2": {"en": "parallel, two norms", "zh": "并行块，两个归一化"},
    "AddNorm": {"en": "add & norm", "zh": "后归一化"},
    "residual": {"en": "residual multiplier {m}", "zh": "残差系数 {m}"},
    "attention_only": {"en": "layer not converted (MoE)", "zh": "未转换整层（MoE）"},
    # under the table
    "note": {
        "en": "Read from what `from_hf` builds (Hugging Face transformers {version}) for each "
        "family's default configuration at tiny sizes, Llama 4's with dense layers. "
        "{none}: none; a scale not shown is the usual "
        "1/√D (Gemma's default query_pre_attn_scalar equals D). gpt-oss's YaRN is replaced "
        "by plain RoPE. Layer not converted: from_hf converts the attention but not the layer, "
        "whose feed-forward network is a mixture of experts (MoE); Qwen3-Next's "
        "linear-attention layers are not converted either.",
        "zh": "内容取自 `from_hf` 按各模型系列的默认配置（尺寸缩小；Llama 4 用稠密层）构建出的模块"
        "（Hugging Face transformers {version}）。{none} 表示没有该部件；未列出缩放的，"
        "缩放就是通常的 1/√D（Gemma 默认的 query_pre_attn_scalar 恰好等于 D）。"
        "gpt-oss 的 YaRN 换成了普通 RoPE。未转换整层：from_hf 只转换注意力，不转换整层，"
        "因为这些模型的前馈网络是混合专家（MoE）；Qwen3-Next 的线性注意力层也不转换。",
    },
}
FRACTIONS = {Fraction(1, 4): "¼", Fraction(1, 2): "½", Fraction(1, 3): "⅓", Fraction(3, 4): "¾"}

# Where each item's teaching is: a section of this page, or of another.
LINKS = {
    "bias": "#bias",
    "qk_norm": "#qk-norm",
    "rope": "positions.md#rope",
    "partial_rope": "#partial-rope",
    "pairing": "positions.md#rope-conventions",
    "nope": "#nope",
    "learned": "positions.md#learned",
    "alibi": "positions.md#alibi",
    "mla": "todays-models.md#mla",
    "scale": "#scale",
    "temperature": "#query-temperature",
    "softcap": "#softcap",
    "gate": "#output-gate",
    "sinks": "todays-models.md#sink-logits",
    "layers": "#layer-patterns",
    "padding": "masks.md#causal-mask",  # an encoder: both directions, no causal mask
    "sliding": "todays-models.md#sliding-windows",
    "chunked": "#chunked",
    "PreNorm": "transformer-layer.md#pre-ln",
    "PostNorm": "#post-norm",
    "Sandwich": "#sandwich",
    "Parallel": "#parallel",
    "AddNorm": "transformer-layer.md#post-ln",
    "residual": "#blocks",
}
# Scale, score function, output gate and sinks share one column: few families have any.
COLUMNS = ("bias", "qk_norm", "positions", "other", "layers", "block")


class OpenModelsError(ValueError):
    """The table's data is malformed, or holds a part the table has no words for."""


@dataclass(frozen=True)
class Item:
    """One thing a cell says: its text in each language and where it is taught."""

    text: dict[str, str]
    link: str | None
    key: str = ""  # items with one key are one thing (a q/k norm with or without its place)

    def markdown(self, lang: str) -> str:
        text = self.text[lang]
        return f"[{text}]({self.link})" if self.link else text


def say(key: str, link: str | None = None, **values: Any) -> Item:
    """The item ``TEXT[key]`` with ``values`` filled in, in both languages (a value that is a
    dict gives each language its own)."""
    if key not in TEXT:
        raise OpenModelsError(f"the table has no words for {key!r}")
    words = {}
    for lang in LANGUAGES:
        filled = {k: v[lang] if isinstance(v, dict) else v for k, v in values.items()}
        words[lang] = TEXT[key][lang].format(**filled)
    return Item(words, link)


def text(key: str, lang: str, **values: Any) -> str:
    """``TEXT[key]`` in ``lang`` with ``values`` filled in."""
    return say(key, **values).text[lang]


def load(path: Path = DATA) -> dict[str, Any]:
    """The table's data, checked: a ``families`` list, each with a name and its layers."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise OpenModelsError(f"{path.name}: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("families"), list):
        raise OpenModelsError(f"{path.name}: expected an object with a 'families' list")
    for family in data["families"]:
        layers = family.get("layers") if isinstance(family, dict) else None
        if not isinstance(family, dict) or not isinstance(family.get("name"), str):
            raise OpenModelsError(f"{path.name}: a family without a name: {family!r:.80}")
        if not layers or not all(isinstance(layer, dict) for layer in layers):
            raise OpenModelsError(f"{path.name}: {family['name']} has no layers described")
    return data


def fraction(value: float) -> str:
    """``0.25`` as ``¼``; a fraction without a glyph as a decimal."""
    exact = Fraction(value).limit_denominator(64)
    return FRACTIONS.get(exact, f"{value:.3g}")


def _number(value: float) -> str:
    return f"{value:g}"


# One function per column: the items of one layer's description.
def _bias(layer: dict[str, Any], family: dict[str, Any]) -> list[Item]:
    letters = layer.get("bias", "")
    if not letters:
        return []
    names = list(letters)
    listed = {"en": ", ".join(names), "zh": "、".join(names)}
    return [say("projections", LINKS["bias"], names=listed)]


def _rope_index(parts: list[dict[str, Any]]) -> int | None:
    return next((i for i, p in enumerate(parts) if p["part"] == "rope"), None)


def _qk_norm(layer: dict[str, Any], family: dict[str, Any]) -> list[Item]:
    parts = layer.get("qk_parts", [])
    rope = _rope_index(parts)
    items = []
    for i, part in enumerate(parts):
        if part["part"] != "qk_norm":
            continue
        if part["norm"] not in ("rms", "rms_no_weight", "layernorm") or part["over"] not in (
            "head",
            "whole",
        ):
            raise OpenModelsError(f"a q/k norm the table has no words for: {part}")
        kinds = {lang: TEXT[part["norm"]][lang] for lang in LANGUAGES}
        over = "norm_head" if part["over"] == "head" else "norm_whole"
        norm = {lang: TEXT[over][lang].format(kind=kinds[lang]) for lang in LANGUAGES}
        where = None if rope is None else "before_rope" if i < rope else "after_rope"
        words = norm if where is None else {n: TEXT[where][n].format(norm=norm[n]) for n in norm}
        key = f"qk_norm {part['norm']} {part['over']}"
        items.append(Item(words, LINKS["qk_norm"], key))
    return items


def _rope(part: dict[str, Any], latent: bool = False) -> list[Item]:
    share = part.get("fraction", 1.0)
    if math.isclose(share, 1.0):
        items = [say("rope", LINKS["rope"])]
    else:
        items = [
            say("rope_part", LINKS["mla" if latent else "partial_rope"], fraction=fraction(share))
        ]
    if part["pairing"] == "interleaved":
        items.append(say("interleaved", LINKS["pairing"]))
    elif part["pairing"] != "half":
        raise OpenModelsError(f"a RoPE pairing the table has no words for: {part['pairing']!r}")
    return items


def _positions(layer: dict[str, Any], family: dict[str, Any]) -> list[Item]:
    if family.get("input_positions") == "learned":  # GPT-2, BERT: none in the layer
        return [say("learned", LINKS["learned"])]
    if family.get("input_positions") is not None:
        raise OpenModelsError(f"input positions the table has no words for: {family}")
    if layer["attention"] == "latent":
        return _rope(layer["rope"], latent=True)
    score = layer.get("score_function") or {}
    if score.get("score") == "alibi":
        return [say("alibi", LINKS["alibi"])]
    parts = layer.get("qk_parts", [])
    rope = _rope_index(parts)
    if rope is None:
        return [say("nope", LINKS["nope"])]
    return _rope(parts[rope])


def _scale(layer: dict[str, Any], family: dict[str, Any]) -> list[Item]:
    scale = layer.get("scale")
    items = []  # 1/sqrt(D): the usual scale, not shown
    if scale is not None:
        root = 1 / scale**2
        if math.isclose(scale, 1.0):
            items = [say("scale_value", LINKS["scale"], value="1")]
        elif math.isclose(root, round(root), rel_tol=1e-6):
            items = [say("scale_root", LINKS["scale"], n=round(root))]
        else:
            items = [say("scale_value", LINKS["scale"], value=f"{scale:.3g}")]
    for part in layer.get("qk_parts", []):
        if part["part"] == "temperature":
            items.append(say("temperature", LINKS["temperature"]))
    return items


def _score(layer: dict[str, Any], family: dict[str, Any]) -> list[Item]:
    score = layer.get("score_function")
    if not score or score.get("score") == "alibi":  # ALiBi: in the positions column
        return []
    if score.get("score") == "softcap":
        return [say("softcap", LINKS["softcap"], cap=_number(score["cap"]))]
    raise OpenModelsError(f"a score function the table has no words for: {score}")


def _gate(layer: dict[str, Any], family: dict[str, Any]) -> list[Item]:
    return [say("sigmoid", LINKS["gate"])] if layer.get("output_gate") else []


def _sinks(layer: dict[str, Any], family: dict[str, Any]) -> list[Item]:
    return [say("sink_logits", LINKS["sinks"])] if layer.get("sinks") else []


def _block(layer: dict[str, Any], family: dict[str, Any]) -> list[Item]:
    wiring = layer.get("wiring")
    if wiring is None:
        return [say("attention_only")]
    kind, norms = wiring["kind"], wiring["norms"]
    if kind == "Parallel":
        items = [say(f"Parallel{len(norms)}", LINKS["Parallel"])]
    elif kind in ("PreNorm", "PostNorm", "Sandwich", "AddNorm"):
        items = [say(kind, LINKS[kind])]
    else:
        raise OpenModelsError(f"a block wiring the table has no words for: {kind!r}")
    for norm in norms:  # RMSNorm or LayerNorm: not shown, but nothing else unnoticed
        if norm not in ("rms", "layernorm"):
            raise OpenModelsError(f"a norm the table has no words for: {norm!r}")
    multiplier = wiring.get("residual_multiplier", 1.0)
    if not math.isclose(multiplier, 1.0):
        items.append(say("residual", LINKS["residual"], m=f"{multiplier:.3g}"))
    return items


ITEMS: dict[str, Callable[[dict[str, Any], dict[str, Any]], list[Item]]] = {
    "bias": _bias,
    "qk_norm": _qk_norm,
    "positions": _positions,
    "other": lambda layer, family: [
        *_scale(layer, family),
        *_score(layer, family),
        *_gate(layer, family),
        *_sinks(layer, family),
    ],
    "block": _block,
}


def _kind(layer: dict[str, Any]) -> Item:
    """The layer's kind: full, sliding W, chunked C, or a kind of layer not built (linear)."""
    if "not_built" in layer:
        kind = layer["not_built"].removesuffix("_attention")
        if kind not in TEXT:
            raise OpenModelsError(f"a layer type the table has no words for: {kind!r}")
        return say(kind)
    rule = layer.get("rule")
    if rule is None:
        return say("full")
    names = {"sliding_window": "sliding", "chunked": "chunked"}
    if rule.get("rule") not in names:
        raise OpenModelsError(f"a layer rule the table has no words for: {rule}")
    return say(names[rule["rule"]], size=rule["size"])


def _layers(family: dict[str, Any], period: int) -> list[Item]:
    """The pattern: ``all full``, ``5 sliding 4096 : 1 full``; the link goes to chunked
    attention where there is some, to sliding windows where every layer slides."""
    kinds = [_kind(layer) for layer in family["layers"][:period]]
    runs: list[tuple[Item, int]] = []
    for kind in kinds:
        if runs and runs[-1][0] == kind:
            runs[-1] = (kind, runs[-1][1] + 1)
        else:
            runs.append((kind, 1))
    rules = {(layer.get("rule") or {}).get("rule") for layer in family["layers"]}
    link = LINKS["chunked"] if "chunked" in rules else LINKS["layers"]
    if len(set(map(repr, kinds))) == 1:
        link = LINKS["sliding"] if rules == {"sliding_window"} else link
        words = {lang: text("all_layers", lang, kind=kinds[0].text[lang]) for lang in LANGUAGES}
    else:
        words = {
            lang: text(
                "pattern",
                lang,
                period=sum(n for _, n in runs),
                runs=("、" if lang == "zh" else " : ").join(
                    text("count_layers", lang, count=n, kind=k.text[lang]) for k, n in runs
                ),
            )
            for lang in LANGUAGES
        }
    items = [Item(words, link)]
    if family.get("causal") is False:
        items.append(say("bidirectional", LINKS["padding"]))
    return items


def period(layers: list[dict[str, Any]]) -> int:
    """The length of the layers' pattern: the smallest p with layer i described as layer
    i mod p (1 when all layers are alike)."""
    strip = [
        {k: v for k, v in layer.items() if k != "qk_parts"} | _no_base(layer) for layer in layers
    ]
    return next(
        p
        for p in range(1, len(strip) + 1)
        if all(strip[i] == strip[i % p] for i in range(len(strip)))
    )


def _no_base(layer: dict[str, Any]) -> dict[str, Any]:
    """The qk parts without the rope base (Gemma 3's bases differ by layer type, a pattern the
    rules already show)."""
    parts = [{k: v for k, v in p.items() if k != "base"} for p in layer.get("qk_parts", [])]
    return {"qk_parts": parts}


def merge(phrases: list[list[Item]], period: int, lang: str) -> str:
    """One cell from each built layer's items: items that the same layers have form a phrase;
    a phrase that not every built layer has says on how many of the pattern's layers."""
    layer_sets: dict[str, tuple[Item, set[int]]] = {}
    for i, items in enumerate(phrases):
        for item in items:
            key = item.key or repr(item)
            known, layers = layer_sets.setdefault(key, (item, set()))
            if len(item.text["en"]) > len(known.text["en"]):  # a NoPE layer's norm: no place
                layer_sets[key] = (item, layers)
            layers.add(i)
    groups: dict[frozenset[int], list[Item]] = {}
    for item, layers in layer_sets.values():
        groups.setdefault(frozenset(layers), []).append(item)
    comma = "，" if lang == "zh" else ", "
    lines = []
    for layers, items in groups.items():
        phrase = comma.join(item.markdown(lang) for item in items)
        if len(layers) < len(phrases):
            phrase = text("some_layers", lang, item=phrase, count=len(layers), period=period)
        lines.append(phrase)
    return "<br>".join(lines) or NONE


def row(family: dict[str, Any], lang: str) -> list[str]:
    """A family's cells in ``lang``: its name, then one per column of ``COLUMNS``."""
    p = period(family["layers"])
    built = [layer for layer in family["layers"][:p] if "not_built" not in layer]
    if not built:
        raise OpenModelsError(f"{family['name']}: no layer of its pattern is built")
    name = family["name"]
    if any(layer.get("attention") == "latent" for layer in built):
        name += "<br>" + say("mla", LINKS["mla"]).markdown(lang)
    cells = [name]
    for column in COLUMNS:
        if column == "layers":
            comma = "，" if lang == "zh" else ", "
            cells.append(comma.join(item.markdown(lang) for item in _layers(family, p)))
        else:
            cells.append(merge([ITEMS[column](layer, family) for layer in built], p, lang))
    return cells


def render_table(data: dict[str, Any], lang: str) -> str:
    """The table in ``lang``, Markdown, with a line under it saying where it comes from."""
    if lang not in LANGUAGES:
        raise OpenModelsError(f"open models: expected a language in {LANGUAGES}, got {lang!r}")
    header = [TEXT["model"][lang]] + [TEXT[column][lang] for column in COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for family in data["families"]:
        try:
            lines.append("| " + " | ".join(row(family, lang)) + " |")
        except (KeyError, TypeError, AttributeError) as error:
            raise OpenModelsError(f"{family['name']}: malformed description ({error!r})") from error
    note = text("note", lang, version=data.get("transformers", "?"), none=NONE)
    return "\n".join(lines) + "\n\n" + note
