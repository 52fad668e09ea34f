"""attention_ref.lab.cache_positions: decoding with StreamingLLM's positions within the cache.

With a one-layer model the held inputs are the held tokens' embeddings, so each step equals
the model run on the kept tokens alone (positions 0 .. S); with nothing evicted the places in
the cache are the positions, and the result equals the plain causal forward.
"""

import pytest
import torch

from attention_ref import TinyDecoder, generate
from attention_ref.lab.cache_positions import generate_with_cache_positions, next_token_log_probs


def model(num_layers: int, seed: int = 0) -> TinyDecoder:
    torch.manual_seed(seed)
    return TinyDecoder(vocab_size=11, d_model=16, nhead=4, num_layers=num_layers).double().eval()


@pytest.mark.parametrize("num_layers", [1, 2])
def test_nothing_evicted_equals_the_causal_forward(num_layers):
    m = model(num_layers)
    tokens = torch.randint(0, 11, (2, 9))
    expected = m(tokens).log_softmax(dim=-1)
    got = next_token_log_probs(m, tokens, window=9)
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize(("window", "sink_tokens"), [(1, 0), (3, 0), (3, 1), (2, 4), (5, 2)])
def test_one_layer_equals_the_model_on_the_kept_tokens(window, sink_tokens):
    m = model(1, seed=window + sink_tokens)
    tokens = torch.randint(0, 11, (2, 12))
    got = next_token_log_probs(m, tokens, window=window, sink_tokens=sink_tokens)
    for t in range(tokens.size(1)):
        before = list(range(t))
        kept = sorted(set(before[:sink_tokens]) | set(before[max(t - window + 1, 0) :]))
        seen = tokens[:, [*kept, t]]  # positions 0 .. S: their places, not their positions
        expected = m(seen)[:, -1].log_softmax(dim=-1)
        torch.testing.assert_close(got[:, t], expected)


def test_generate_without_eviction_equals_generate():
    m = model(2)
    prompt = torch.randint(0, 11, (1, 3))
    assert torch.equal(
        generate_with_cache_positions(m, prompt, 4, window=8), generate(m, prompt, 4)
    )


def test_bad_arguments():
    m, tokens = model(1), torch.zeros(1, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="window"):
        next_token_log_probs(m, tokens, window=0)
    with pytest.raises(ValueError, match="sink_tokens"):
        next_token_log_probs(m, tokens, window=2, sink_tokens=-1)
    with pytest.raises(TypeError, match="window"):
        next_token_log_probs(m, tokens, window=2.0)
