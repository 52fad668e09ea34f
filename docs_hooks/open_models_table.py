"""Write docs/includes/open-models.json: what ``from_hf`` builds for each open model family.

For each family in ``FAMILIES``, this builds Hugging Face's attention module (and decoder
layer, where ``from_hf`` takes it) for every layer of a tiny config that keeps the family's
default structure (bias flags, layer types, rotary fraction, soft caps, window and chunk
sizes; only widths, vocabularies and expert counts shrink), converts each with
``attention_ref.from_hf`` and records ``describe`` of ours, layer by layer, with their class
names and the transformers version. The page "Attention in open models" draws its table from
that file (docs_hooks/open_models.py), so a cell cannot say what ``from_hf`` does not build;
tests/interop/test_open_models_table.py regenerates it and fails if the committed file
differs. Families that ``from_hf`` does not support yet are left out.

Run in the interop environment (it needs transformers)::

    PYTHONPATH=. .nox/interop/bin/python -m docs_hooks.open_models_table          # the diff
    PYTHONPATH=. .nox/interop/bin/python -m docs_hooks.open_models_table --write  # write it

Adding a family is one ``Family(...)`` line in ``FAMILIES``.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docs_hooks.open_models import DATA

BUILT_TYPES = ("full_attention", "sliding_attention", "chunked_attention")
# Widths only: every family's structural fields keep their defaults.
TINY = {
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 32,
    "vocab_size": 32,
}


@dataclass(frozen=True)
class Family:
    """One row of the table.

    Args:
        name: As the page shows it.
        model: The folder under ``transformers.models`` (``"llama"``).
        config: The config class (``"LlamaConfig"``), a name in ``transformers``.
        attention: Their attention class in ``modeling_<model>``.
        layer: Their decoder layer class, or None where ``from_hf`` builds the attention only.
        layers: How many of the first layers to describe: enough to show the family's
            pattern of layer types once. The config keeps its default depth.
        config_kwargs: The tiny config's fields (widths; and what a default lacks).
        causal: False for a family whose layers see both directions (BERT).
        input_positions: ``"learned"`` where positions are added to the input embeddings
            (GPT-2, BERT): the layers then have none of their own.
    """

    name: str
    model: str
    config: str
    attention: str
    layer: str | None
    layers: int = 2
    config_kwargs: Mapping[str, Any] = field(default_factory=lambda: TINY)
    causal: bool = True
    input_positions: str | None = None


def tiny(**fields: Any) -> dict[str, Any]:
    """``TINY`` with ``fields`` added or replaced."""
    return TINY | fields


FAMILIES: tuple[Family, ...] = (
    Family("Llama", "llama", "LlamaConfig", "LlamaAttention", "LlamaDecoderLayer"),
    Family("Mistral", "mistral", "MistralConfig", "MistralAttention", "MistralDecoderLayer"),
    Family("Qwen2", "qwen2", "Qwen2Config", "Qwen2Attention", "Qwen2DecoderLayer"),
    Family("Qwen3", "qwen3", "Qwen3Config", "Qwen3Attention", "Qwen3DecoderLayer"),
    Family(
        "Qwen3-Next",
        "qwen3_next",
        "Qwen3NextConfig",
        "Qwen3NextAttention",
        None,
        4,
        tiny(num_experts=2, moe_intermediate_size=16, shared_expert_intermediate_size=16),
    ),
    Family("Gemma 2", "gemma2", "Gemma2Config", "Gemma2Attention", "Gemma2DecoderLayer"),
    Family("Gemma 3", "gemma3", "Gemma3TextConfig", "Gemma3Attention", "Gemma3DecoderLayer", 6),
    Family("OLMo 2", "olmo2", "Olmo2Config", "Olmo2Attention", "Olmo2DecoderLayer"),
    Family("Phi-3", "phi3", "Phi3Config", "Phi3Attention", "Phi3DecoderLayer"),
    Family("GPT-NeoX", "gpt_neox", "GPTNeoXConfig", "GPTNeoXAttention", "GPTNeoXLayer"),
    Family("StableLM", "stablelm", "StableLmConfig", "StableLmAttention", "StableLmDecoderLayer"),
    Family(
        "Falcon",
        "falcon",
        "FalconConfig",
        "FalconAttention",
        "FalconDecoderLayer",
        config_kwargs={"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 32},
    ),
    Family(
        "Llama 4",
        "llama4",
        "Llama4TextConfig",
        "Llama4TextAttention",
        "Llama4TextDecoderLayer",
        4,
        tiny(num_local_experts=2, intermediate_size_mlp=32, moe_layers=[]),  # dense FFNs
    ),
    Family("Cohere", "cohere", "CohereConfig", "CohereAttention", "CohereDecoderLayer"),
    Family("Cohere2", "cohere2", "Cohere2Config", "Cohere2Attention", "Cohere2DecoderLayer", 4),
    Family("GLM", "glm", "GlmConfig", "GlmAttention", "GlmDecoderLayer"),
    Family("GLM-4", "glm4", "Glm4Config", "Glm4Attention", "Glm4DecoderLayer"),
    Family(
        "Helium",
        "helium",
        "HeliumConfig",
        "HeliumAttention",
        "HeliumDecoderLayer",
        config_kwargs=tiny(head_dim=16),  # its o_proj is (E, E): H * D must be E
    ),
    Family("Granite", "granite", "GraniteConfig", "GraniteAttention", "GraniteDecoderLayer"),
    Family("Nemotron", "nemotron", "NemotronConfig", "NemotronAttention", "NemotronDecoderLayer"),
    Family("EXAONE 4", "exaone4", "Exaone4Config", "Exaone4Attention", "Exaone4DecoderLayer", 4),
    Family(
        "HunYuan",
        "hunyuan_v1_dense",
        "HunYuanDenseV1Config",
        "HunYuanDenseV1Attention",
        "HunYuanDenseV1DecoderLayer",
        config_kwargs=tiny(head_dim=16),  # its default, None, fails: E / H
    ),
    Family(
        "MiniCPM3",
        "minicpm3",
        "MiniCPM3Config",
        "MiniCPM3Attention",
        "MiniCPM3DecoderLayer",
        config_kwargs=tiny(num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32),
    ),
    Family(
        "DeepSeek-V3",
        "deepseek_v3",
        "DeepseekV3Config",
        "DeepseekV3Attention",
        "DeepseekV3DecoderLayer",  # its first 3 layers are dense
        config_kwargs=tiny(
            num_key_value_heads=4,
            q_lora_rank=32,
            kv_lora_rank=32,
            moe_intermediate_size=16,
            n_routed_experts=8,
        ),
    ),
    Family(
        "gpt-oss",
        "gpt_oss",
        "GptOssConfig",
        "GptOssAttention",
        "GptOssDecoderLayer",
        config_kwargs=tiny(
            num_local_experts=2,  # its YaRN scaling is out of from_hf's scope; its base kept
            rope_parameters={"rope_type": "default", "rope_theta": 150000.0},
        ),
    ),
    Family(
        "GPT-2",
        "gpt2",
        "GPT2Config",
        "GPT2Attention",
        "GPT2Block",
        config_kwargs={"n_embd": 64, "n_head": 4, "vocab_size": 32},
        input_positions="learned",
    ),
    Family(
        "GPT-J",
        "gptj",
        "GPTJConfig",
        "GPTJAttention",
        "GPTJBlock",
        config_kwargs={"n_embd": 512, "n_head": 2, "vocab_size": 32},  # D 256 as its default
    ),
    Family(
        "BLOOM",
        "bloom",
        "BloomConfig",
        "BloomAttention",
        "BloomBlock",
        config_kwargs={"hidden_size": 64, "n_head": 4, "vocab_size": 32},
    ),
    Family(
        "BERT",
        "bert",
        "BertConfig",
        "BertSelfAttention",
        "BertLayer",
        config_kwargs={
            "hidden_size": 64,
            "num_attention_heads": 4,
            "intermediate_size": 32,
            "vocab_size": 32,
        },
        causal=False,
        input_positions="learned",
    ),
)


def _module(family: Family) -> Any:
    return importlib.import_module(f"transformers.models.{family.model}.modeling_{family.model}")


def config_for(family: Family) -> Any:
    """The family's tiny config, computed eagerly."""
    import transformers

    config = getattr(transformers, family.config)(**family.config_kwargs)
    config._attn_implementation = "eager"
    return config


def describe_family(family: Family, supported: set[str]) -> dict[str, Any]:
    """The family's entry: its classes, its tiny config and ``describe`` of each layer."""
    from attention_ref import from_hf
    from attention_ref.open_models.describe import describe

    modeling, config = _module(family), config_for(family)
    with_layer = family.layer is not None and family.layer in supported
    built = getattr(modeling, family.layer if with_layer else family.attention)
    types = getattr(config, "layer_types", None)
    layers = []
    for i in range(family.layers):
        if types is not None and types[i] not in BUILT_TYPES:
            layers.append({"not_built": types[i]})
            continue
        layers.append(describe(from_hf(built(config, layer_idx=i))))
    return {
        "name": family.name,
        "config_class": family.config,
        "attention_class": family.attention,
        "layer_class": family.layer if with_layer else None,
        "config": dict(family.config_kwargs),
        "causal": family.causal,
        "input_positions": family.input_positions,
        "layers": layers,
    }


def generate() -> dict[str, Any]:
    """The table's data for every family in ``FAMILIES`` that ``from_hf`` supports now."""
    import torch
    import transformers

    from attention_ref.open_models import supported

    torch.manual_seed(0)
    transformers.logging.set_verbosity_error()  # tiny vocabularies: token ids out of range
    names = set(supported())
    families = [describe_family(f, names) for f in FAMILIES if f.attention in names]
    return {
        "generated_by": "python -m docs_hooks.open_models_table --write",
        "transformers": transformers.__version__,
        "families": families,
    }


def dumps(data: dict[str, Any]) -> str:
    """The file's text: sorted keys, two-space indent, a final newline."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def missing(data: dict[str, Any]) -> list[str]:
    """The attention classes ``from_hf`` supports that no family in ``FAMILIES`` names."""
    from attention_ref.open_models import supported

    named = {f.attention for f in FAMILIES} | {f.layer for f in FAMILIES}
    return [name for name in supported() if name not in named]


def main(argv: list[str] | None = None, path: Path = DATA) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {path.name}")
    args = parser.parse_args(argv)
    new = dumps(generate())
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    for name in missing(json.loads(new)):
        print(f"note: from_hf supports {name}, which no entry of FAMILIES names", file=sys.stderr)
    if args.write:
        path.write_text(new, encoding="utf-8")
        print(f"wrote {path}")
        return 0
    diff = difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(path), "generated")
    sys.stdout.writelines(diff)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
