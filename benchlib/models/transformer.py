"""A decoder-only transformer language model in the GPT-2 layout, built from ``torch.nn``.

Pre-norm blocks (LayerNorm, causal self-attention through
``torch.nn.functional.scaled_dot_product_attention``, LayerNorm, GELU MLP of 4x width), learned
position embeddings and an output head tied to the token embedding, as in GPT-2 and nanoGPT.
Sizes are named (:data:`SIZES`: from a ``tiny`` one a CPU trains in seconds to GPT-2 XL) or
given as layers, heads and width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

GPT2_VOCAB = 50257  #: GPT-2's BPE vocabulary
PADDED_VOCAB = 50304  #: nanoGPT's vocabulary rounded up to a multiple of 64 (faster matmuls)


@dataclass(frozen=True)
class TransformerShape:
    """Layers, attention heads, model width, vocabulary and the longest sequence."""

    layers: int
    heads: int
    width: int
    vocab_size: int = PADDED_VOCAB
    max_sequence: int = 1024

    def __post_init__(self) -> None:
        for name in ("layers", "heads", "width", "vocab_size", "max_sequence"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not a multiple of heads {self.heads}")

    @property
    def parameters(self) -> int:
        """Trainable parameters (the head shares the token embedding's weights)."""
        per_block = 12 * self.width * self.width + 13 * self.width
        embeddings = (self.vocab_size + self.max_sequence) * self.width
        return self.layers * per_block + embeddings + 2 * self.width

    def flops_per_token(self, sequence: int, train: bool) -> float:
        """Model FLOPs per token: 2 per weight multiply-add of the non-embedding weights and
        the head, plus attention's scores and weighted sum over ``sequence`` positions (the
        PaLM / nanoGPT count, full causal matrix); training is 3x the forward pass."""
        matmul_weights = 12 * self.layers * self.width * self.width + self.vocab_size * self.width
        forward = 2 * matmul_weights + 4 * self.layers * sequence * self.width
        return float(3 * forward if train else forward)


#: Named sizes: GPT-2's four (Radford et al. 2019, as nanoGPT builds them) and small CPU ones.
SIZES: dict[str, TransformerShape] = {
    "tiny": TransformerShape(layers=2, heads=2, width=64, vocab_size=512, max_sequence=256),
    "mini": TransformerShape(layers=4, heads=4, width=256, vocab_size=8192, max_sequence=512),
    "gpt2": TransformerShape(layers=12, heads=12, width=768),
    "gpt2-medium": TransformerShape(layers=24, heads=16, width=1024),
    "gpt2-large": TransformerShape(layers=36, heads=20, width=1280),
    "gpt2-xl": TransformerShape(layers=48, heads=25, width=1600),
}


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
    """Mean cross-entropy of next-token logits against the target ids."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))
