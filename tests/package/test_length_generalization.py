"""The positions experiment: seeded, and the ordering of the results that the page states.

Measured on seeds 0-9 before it was asserted here on seed 0 (the page's seed): past the
trained length RoPE > sinusoidal > learned > none held at every length on every seed. The
exact accuracies vary from seed to seed (RoPE at 4x the trained length: 0.63 to 0.82) and
are not asserted.
"""

import pytest
import torch

from attention_ref.lab.length_generalization import (
    ENCODINGS,
    PositionalToyModel,
    length_generalization,
    train_with_positions,
)

LENGTHS = (8, 12, 16, 24, 32)


@pytest.fixture(scope="module")
def results() -> dict[str, list[float]]:
    return length_generalization(LENGTHS, seed=0)


def test_every_encoding_but_none_learns_the_task_at_the_trained_length(results):
    for encoding in ("sinusoidal", "learned", "rope"):
        assert results[encoding][0] > 0.95, encoding
    assert 1 / 32 < results["none"][0] < 0.5  # above chance: the causal mask leaks a little


@pytest.mark.parametrize("i", range(1, len(LENGTHS)))
def test_past_the_trained_length_rope_beats_sinusoidal_beats_learned_beats_none(results, i):
    order = sorted(ENCODINGS, key=lambda name: results[name][i], reverse=True)
    assert order == ["rope", "sinusoidal", "learned", "none"], (LENGTHS[i], results)


def test_learned_positions_are_right_only_within_the_trained_length(results):
    """Past row 7 the learned table was never trained: about 7 of the L - 1 positions count."""
    for length, accuracy in zip(LENGTHS, results["learned"], strict=True):
        assert accuracy == pytest.approx(7 / (length - 1), abs=0.03), length


def test_rope_keeps_most_of_its_accuracy_at_twice_the_trained_length(results):
    assert results["rope"][LENGTHS.index(16)] > 0.9
    assert results["rope"][-1] < results["rope"][0]  # but not all of it at 4x


def test_seeded_and_leaves_the_global_rng_and_threads_alone():
    state, threads = torch.get_rng_state(), torch.get_num_threads()
    a = train_with_positions("learned", steps=3, seed=5)
    b = train_with_positions("learned", steps=3, seed=5)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.get_num_threads() == threads
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"encoding: expected one of \('none', "):
        PositionalToyModel("alibi")
    with pytest.raises(
        ValueError, match=r"tokens: expected shape \(N, L\) with L <= 32, got \(1, 33\)"
    ):
        PositionalToyModel("none")(torch.zeros(1, 33, dtype=torch.long))
