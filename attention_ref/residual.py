"""Where the norms and the residual additions sit around attention and the feed-forward network.

A Transformer layer is attention and a feed-forward network (FFN) on a residual stream ``x``;
models differ in where they normalize and add. Each wiring here owns its norms, ``norm1`` to
``norm4``, and is called as ``wiring(x, attend, ffn)``, where ``attend`` (the attention) and
``ffn`` map ``(N, L, E)`` to ``(N, L, E)``. It returns ``y``:

```text
PreNorm    h = x + attend(norm1(x))           y = h + ffn(norm2(h))
PostNorm   h = x + norm1(attend(x))           y = h + norm2(ffn(h))
Sandwich   h = x + norm2(attend(norm1(x)))    y = h + norm4(ffn(norm3(h)))
Parallel   y = x + attend(norm1(x)) + ffn(norm2(x)), or + ffn(norm1(x)) with one norm
AddNorm    h = norm1(x + attend(x))           y = norm2(h + ffn(h))
```

``PreNorm`` is GPT-2's and Llama's wiring, ``PostNorm`` OLMo 2's, ``Sandwich`` Gemma 2's,
Gemma 3's and GLM-4's, ``Parallel`` GPT-J's, GPT-NeoX's, Falcon's and Cohere's, ``AddNorm``
the 2017 paper's and BERT's (and that of
[`TransformerEncoderLayer`][attention_ref.TransformerEncoderLayer] with ``norm_first=False``).

Shape legend: N batch, L length, E model width.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn

__all__ = ["AddNorm", "Parallel", "PostNorm", "PreNorm", "Sandwich"]

Branch = Callable[[Tensor], Tensor]  # (N, L, E) -> (N, L, E)


class PreNorm(nn.Module):
    """Normalize, then add: ``h = x + m * attend(norm1(x))``, ``y = h + m * ffn(norm2(h))``.

    Args:
        norm1: Before attention (``input_layernorm`` in Hugging Face's Llama).
        norm2: Before the FFN (``post_attention_layernorm`` there, despite the name).
        residual_multiplier: m, scaling both branches before they are added (Granite);
            1 elsewhere.
    """

    def __init__(self, norm1: nn.Module, norm2: nn.Module, residual_multiplier: float = 1.0):
        super().__init__()
        self.norm1, self.norm2, self.residual_multiplier = norm1, norm2, residual_multiplier

    def forward(self, x: Tensor, attend: Branch, ffn: Branch) -> Tensor:
        m = self.residual_multiplier
        h = x + attend(self.norm1(x)) * m
        return h + ffn(self.norm2(h)) * m


class PostNorm(nn.Module):
    """Normalize each branch's output, then add (OLMo 2).

    ``h = x + norm1(attend(x))``, ``y = h + norm2(ffn(h))``.

    Args:
        norm1: On the attention output (``post_attention_layernorm``).
        norm2: On the FFN output (``post_feedforward_layernorm``).
    """

    def __init__(self, norm1: nn.Module, norm2: nn.Module):
        super().__init__()
        self.norm1, self.norm2 = norm1, norm2

    def forward(self, x: Tensor, attend: Branch, ffn: Branch) -> Tensor:
        h = x + self.norm1(attend(x))
        return h + self.norm2(ffn(h))


class Sandwich(nn.Module):
    """A norm before and after each branch (Gemma 2 and 3, GLM-4).

    ``h = x + norm2(attend(norm1(x)))``, ``y = h + norm4(ffn(norm3(h)))``.

    Args:
        norm1: Before attention (``input_layernorm``).
        norm2: After attention (``post_attention_layernorm``; GLM-4: ``post_self_attn_layernorm``).
        norm3: Before the FFN (``pre_feedforward_layernorm``; GLM-4: ``post_attention_layernorm``).
        norm4: After the FFN (``post_feedforward_layernorm``; GLM-4: ``post_mlp_layernorm``).
    """

    def __init__(self, norm1: nn.Module, norm2: nn.Module, norm3: nn.Module, norm4: nn.Module):
        super().__init__()
        self.norm1, self.norm2, self.norm3, self.norm4 = norm1, norm2, norm3, norm4

    def forward(self, x: Tensor, attend: Branch, ffn: Branch) -> Tensor:
        h = x + self.norm2(attend(self.norm1(x)))
        return h + self.norm4(ffn(self.norm3(h)))


class Parallel(nn.Module):
    """Attention and the FFN side by side on the same input.

    ``y = x + attend(norm1(x)) + ffn(norm2(x))``, or ``ffn(norm1(x))`` without ``norm2``.
    GPT-J, Falcon (7B) and Cohere normalize once (``norm2=None``); GPT-NeoX has a norm for
    each branch, and so has Falcon's new architecture (40B, 180B) unless its config sets
    ``num_ln_in_parallel_attn=1``.

    Args:
        norm1: Before attention (and before the FFN when ``norm2`` is None).
        norm2: Before the FFN, or None.
    """

    def __init__(self, norm1: nn.Module, norm2: nn.Module | None = None):
        super().__init__()
        self.norm1, self.norm2 = norm1, norm2

    def forward(self, x: Tensor, attend: Branch, ffn: Branch) -> Tensor:
        h = self.norm1(x)
        return x + attend(h) + ffn(h if self.norm2 is None else self.norm2(x))


class AddNorm(nn.Module):
    """Add, then normalize the sum ("Add & Norm", the 2017 paper's post-LN; BERT).

    ``h = norm1(x + attend(x))``, ``y = norm2(h + ffn(h))``: the residual stream itself is
    normalized after each branch, unlike ``PostNorm``, which normalizes only the branch's
    output.

    Args:
        norm1: After attention and its addition (BERT's ``attention.output.LayerNorm``).
        norm2: After the FFN and its addition (BERT's ``output.LayerNorm``).

    Examples:
        >>> import torch
        >>> from attention_ref import LayerNorm
        >>> from attention_ref.residual import AddNorm
        >>> wiring = AddNorm(LayerNorm(4), LayerNorm(4))
        >>> y = wiring(torch.randn(1, 3, 4), lambda h: 2 * h, torch.tanh)  # (N, L, E)
        >>> y.mean(-1).abs().max() < 1e-6  # every token leaves normalized
        tensor(True)
    """

    def __init__(self, norm1: nn.Module, norm2: nn.Module):
        super().__init__()
        self.norm1, self.norm2 = norm1, norm2

    def forward(self, x: Tensor, attend: Branch, ffn: Branch) -> Tensor:
        h = self.norm1(x + attend(x))
        return self.norm2(h + ffn(h))
