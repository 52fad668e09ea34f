import pytest
import torch

from attention_ref.lab.toy_tasks import ToyAttentionModel, toy_accuracy, toy_batch, train_toy_model

LENGTH = 6


@pytest.fixture(scope="module")
def trained() -> ToyAttentionModel:
    return train_toy_model(seed=0)


def _held_out(batch_size: int = 500):
    return toy_batch(batch_size, LENGTH, generator=torch.Generator().manual_seed(123))


def test_batch_holds_distinct_tokens_and_both_targets():
    tokens, targets = toy_batch(50, LENGTH, vocab_size=10, generator=torch.Generator())
    assert tokens.shape == (50, LENGTH) and targets.shape == (50, LENGTH, 2)
    assert all(len(set(row.tolist())) == LENGTH for row in tokens)
    torch.testing.assert_close(targets[:, 1:, 0], tokens[:, :-1])  # previous token
    torch.testing.assert_close(targets[:, 0, 0], tokens[:, 0])  # the first repeats itself
    torch.testing.assert_close(targets[..., 1], tokens.flip(-1))  # mirrored token


def test_trained_model_solves_the_task(trained):
    assert toy_accuracy(trained, *_held_out()) > 0.99


def test_untrained_model_is_at_chance_and_its_weights_near_uniform():
    untrained = train_toy_model(steps=0, seed=0)
    tokens, targets = _held_out()
    assert toy_accuracy(untrained, tokens, targets) < 0.2  # chance is 1 / 10
    _, weights = untrained(tokens)
    assert weights.max() < 0.25  # uniform is 1 / 6


def test_one_head_looks_back_and_one_at_the_mirror(trained):
    tokens, _ = _held_out()
    with torch.no_grad():
        _, weights = trained(tokens)  # (N, H, L, L)
    positions = torch.arange(LENGTH)
    patterns = {
        "previous": (positions - 1).clamp(min=0),  # the sub-diagonal
        "mirror": positions.flip(0),  # the anti-diagonal
    }
    found = {}
    for name, expected in patterns.items():
        for head in range(weights.size(1)):
            w = weights[:, head]  # (N, L, L)
            if torch.equal(w.argmax(dim=-1), expected.expand_as(w[..., 0])):
                found[name] = head
                picked = w.gather(-1, expected.expand_as(w[..., 0]).unsqueeze(-1))  # (N, L, 1)
                assert picked.min() > 0.5, f"{name}: head {head} is not sharp enough"
    assert sorted(found) == ["mirror", "previous"]
    assert found["previous"] != found["mirror"]


def test_seeded_training_is_reproducible_and_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    threads = torch.get_num_threads()
    a, b = train_toy_model(steps=3, seed=7), train_toy_model(steps=3, seed=7)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.get_num_threads() == threads
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb)


def test_bad_arguments():
    with pytest.raises(ValueError, match="length: expected 1 <= length <= vocab_size=4, got 5"):
        toy_batch(1, length=5, vocab_size=4)
    with pytest.raises(ValueError, match=r"tokens: expected shape \(N, 6\), got \(2, 3\)"):
        ToyAttentionModel()(torch.zeros(2, 3, dtype=torch.long))
