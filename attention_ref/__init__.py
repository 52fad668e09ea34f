"""attention_ref: the attention mechanism in small, readable PyTorch, tested against PyTorch."""

from .attention import attention_weights, scaled_dot_product_attention
from .chunked import chunked_attention
from .cost import attention_flops, attention_memory, kv_cache_numel
from .decoder import TransformerDecoderLayer
from .decoder_block import DecoderBlock
from .decoding import TinyDecoder, generate
from .encoder import TransformerEncoderLayer
from .kv_cache import KVCache, LatentCache
from .latent import MultiHeadLatentAttention
from .linear import linear_attention, linear_attention_weights
from .local import sliding_window_attention
from .mask_conventions import from_sdpa_mask, to_additive_mask, to_sdpa_mask
from .mask_mods import block_sparsity, create_mask, flex_reference
from .masks import causal_mask, padding_mask, sliding_window_mask
from .multihead import MultiHeadAttention
from .norms import LayerNorm, RMSNorm
from .open_models import from_hf
from .plain import plain_attention
from .positions import alibi_bias, apply_rope, sinusoidal_positions
from .softmax import softmax

__all__ = [
    "DecoderBlock",
    "KVCache",
    "LatentCache",
    "LayerNorm",
    "MultiHeadAttention",
    "MultiHeadLatentAttention",
    "RMSNorm",
    "TinyDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoderLayer",
    "alibi_bias",
    "apply_rope",
    "attention_flops",
    "attention_memory",
    "attention_weights",
    "block_sparsity",
    "causal_mask",
    "chunked_attention",
    "create_mask",
    "flex_reference",
    "from_hf",
    "from_sdpa_mask",
    "generate",
    "kv_cache_numel",
    "linear_attention",
    "linear_attention_weights",
    "padding_mask",
    "plain_attention",
    "scaled_dot_product_attention",
    "sinusoidal_positions",
    "sliding_window_attention",
    "sliding_window_mask",
    "softmax",
    "to_additive_mask",
    "to_sdpa_mask",
]

__version__ = "0.1.0"
