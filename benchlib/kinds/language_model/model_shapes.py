"""The shapes of the GPT-2-style language model as plain data (no torch), so that a config can
be checked against the node's memory before anything is built: :mod:`benchlib.kinds.language_model.model`
builds the network from them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

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


def shape_for(size: str, layers: int | None, heads: int | None, width: int | None,
              vocab_size: int | None, sequence_length: int) -> TransformerShape:
    """The shape a run builds: the named ``size`` (or ``custom`` layers / heads / width), the
    vocabulary given (else the size's) and room for ``sequence_length`` positions."""
    if size == "custom":
        base = TransformerShape(layers=layers or 1, heads=heads or 1, width=width or 1)
    else:
        base = SIZES[size]
    return dataclasses.replace(base, vocab_size=vocab_size or base.vocab_size,
                               max_sequence=max(base.max_sequence, sequence_length))
