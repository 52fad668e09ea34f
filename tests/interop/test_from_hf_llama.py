"""from_hf for Llama, Mistral and Qwen2, beyond the equalities with Hugging Face's modules that
test_from_hf_llama_like.py checks: weights copied in their dtype, to the last bit; an
unsupported module named in the error."""

import pytest
import torch

from attention_ref import from_hf

from ._hf import randomize
from ._tiny_configs import llama_config, qwen2_config

llama = pytest.importorskip("transformers.models.llama.modeling_llama")
qwen2 = pytest.importorskip("transformers.models.qwen2.modeling_qwen2")


def test_weights_are_copied_in_their_dtype():
    theirs = randomize(qwen2.Qwen2Attention(qwen2_config(), layer_idx=0)).to(torch.float64)
    ours = from_hf(theirs)
    assert ours.q_proj.weight.dtype == torch.float64
    assert ours.out_proj.bias is None and ours.q_proj.bias is not None  # Qwen2: q/k/v only
    torch.testing.assert_close(ours.q_proj.weight, theirs.q_proj.weight, atol=0, rtol=0)


def test_an_unsupported_module_is_named_in_the_error():
    with pytest.raises(ValueError, match="module: Linear is not supported by from_hf"):
        from_hf(torch.nn.Linear(2, 2))


def test_a_float64_module_is_copied_exactly():
    """Built in float64 (not float32, then cast): every weight equal to the last bit."""
    theirs = llama.LlamaAttention(llama_config(), layer_idx=0).to(torch.float64)
    randomize(theirs)
    with torch.no_grad():
        theirs.q_proj.weight.add_(1e-12)  # below float32's resolution near 0.3
    ours = from_hf(theirs)
    torch.testing.assert_close(ours.q_proj.weight, theirs.q_proj.weight, atol=0, rtol=0)
