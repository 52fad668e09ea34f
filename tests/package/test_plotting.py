import matplotlib.pyplot as plt
import pytest
import torch

from attention_ref import attention_weights
from attention_ref.plotting import plot_attention, plot_heads


def test_heatmap_shows_the_weights_and_tokens():
    w = attention_weights(
        torch.randn(3, 4, generator=torch.Generator().manual_seed(0)), torch.randn(5, 4)
    )
    ax = plot_attention(w, ["a", "b", "c"], ["p", "q", "r", "s", "t"])
    image = ax.get_images()[0].get_array()
    assert image.shape == (3, 5)
    torch.testing.assert_close(torch.as_tensor(image.data), w)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    plt.close("all")


def test_plot_heads_one_axes_per_head():
    fig = plot_heads(torch.full((5, 2, 2), 0.5), ["x", "y"])
    assert sum(ax.has_data() for ax in fig.axes) == 5
    plt.close(fig)


def test_label_mismatch_is_a_clear_error():
    with pytest.raises(
        ValueError,
        match=r"weights: expected shape \(L, S\) = \(2, 2\) to match the tokens, got \(3, 3\)",
    ):
        plot_attention(torch.eye(3), ["a", "b"])
    with pytest.raises(ValueError, match="titles: expected 2 titles, got 1"):
        plot_heads(torch.ones(2, 2, 2), ["a", "b"], titles=["one"])
