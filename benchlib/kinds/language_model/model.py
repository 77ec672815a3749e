"""A decoder-only transformer language model in the GPT-2 layout, built from ``torch.nn``.

Pre-norm blocks (LayerNorm, causal self-attention through
``torch.nn.functional.scaled_dot_product_attention``, LayerNorm, GELU MLP of 4x width), learned
position embeddings and an output head tied to the token embedding, as in GPT-2 and nanoGPT.
Sizes are named (:data:`SIZES`: from a ``tiny`` one a CPU trains in seconds to GPT-2 XL) or
given as layers, heads and width.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchlib.kinds.language_model.model_loss import chunked_cross_entropy
from benchlib.kinds.language_model.model_shapes import (  # noqa: F401  (the shapes, as before, from here too)
    GPT2_VOCAB,
    PADDED_VOCAB,
    SIZES,
    TransformerShape,
)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention over earlier positions only."""

    def __init__(self, shape: TransformerShape) -> None:
        super().__init__()
        self.heads = shape.heads
        self.qkv = nn.Linear(shape.width, 3 * shape.width)
        self.out = nn.Linear(shape.width, shape.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, sequence, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=2)
        q, k, v = (t.view(batch, sequence, self.heads, width // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).contiguous().view(batch, sequence, width))


class Block(nn.Module):
    """Pre-norm transformer block: x + attention(norm(x)), then x + MLP(norm(x))."""

    def __init__(self, shape: TransformerShape) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(shape.width)
        self.attention = CausalSelfAttention(shape)
        self.norm2 = nn.LayerNorm(shape.width)
        self.mlp = nn.Sequential(nn.Linear(shape.width, 4 * shape.width), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * shape.width, shape.width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TransformerLM(nn.Module):
    """GPT-2-style language model: token ids (batch, sequence) to next-token logits."""

    def __init__(self, shape: TransformerShape) -> None:
        super().__init__()
        self.shape = shape
        self.tokens = nn.Embedding(shape.vocab_size, shape.width)
        self.positions = nn.Embedding(shape.max_sequence, shape.width)
        self.blocks = nn.ModuleList(Block(shape) for _ in range(shape.layers))
        self.norm = nn.LayerNorm(shape.width)
        self.head = nn.Linear(shape.width, shape.vocab_size, bias=False)
        self.head.weight = self.tokens.weight  # tied, as in GPT-2
        self.apply(self._init_weights)
        for name, parameter in self.named_parameters():  # GPT-2's scaled residual projections
            if name.endswith(("attention.out.weight", "mlp.2.weight")):
                nn.init.normal_(parameter, std=0.02 / math.sqrt(2 * shape.layers))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        sequence = ids.shape[1]
        if sequence > self.shape.max_sequence:
            raise ValueError(f"sequence of {sequence} tokens is longer than the model's "
                             f"{self.shape.max_sequence}")
        positions = torch.arange(sequence, device=ids.device)
        x = self.tokens(ids) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def language_model_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of next-token logits against the target ids, in fp32 a block of rows
    at a time (:func:`~benchlib.kinds.language_model.model_loss.chunked_cross_entropy`: no fp32 copy of
    all the logits, the value and gradient of ``F.cross_entropy`` on them in fp32)."""
    return chunked_cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
