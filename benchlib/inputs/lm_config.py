"""The configuration of one language-model run (``lm_train`` / ``lm_inference``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import PositiveInt, model_validator

from benchlib.inputs.config import CompileMode, RunConfig

LanguageModelBenchmark = Literal["lm_train", "lm_inference"]
#: The named model sizes of :mod:`benchlib.models.transformer` (kept here as data: validating a
#: config does not import torch).
LanguageModelSize = Literal["tiny", "mini", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl",
                            "custom"]


class LanguageModelConfig(RunConfig):
    """One training or inference run of a GPT-2-style decoder-only transformer.

    ``size`` names a shape (``tiny`` for a CPU, ``gpt2`` is GPT-2 small, 124M parameters) or is
    ``custom`` with ``layers``, ``heads`` and ``width``. ``batch_size`` counts sequences of
    ``sequence_length`` tokens; throughput is tokens/s. ``dataset`` is ``synthetic`` (random
    ids made once on the device) or ``tokens`` (random windows of ``token_file``, nanoGPT's
    uint16 ``.bin`` layout, read on the host and copied each iteration).
    """

    benchmark: LanguageModelBenchmark = "lm_train"
    size: LanguageModelSize = "gpt2"
    layers: PositiveInt | None = None
    heads: PositiveInt | None = None
    width: PositiveInt | None = None
    vocab_size: PositiveInt | None = None
    sequence_length: PositiveInt = 1024
    batch_size: PositiveInt = 8
    dataset: Literal["synthetic", "tokens"] = "synthetic"
    token_file: str = ""
    compile: CompileMode = "none"
    learning_rate: float = 6e-4

    @model_validator(mode="after")
    def _shape_is_complete(self) -> LanguageModelConfig:
        custom = (self.layers, self.heads, self.width)
        if self.size == "custom" and None in custom:
            raise ValueError("size 'custom' needs layers, heads and width")
        if self.size != "custom" and any(v is not None for v in custom):
            raise ValueError(f"layers, heads and width apply to size 'custom' only, not "
                             f"{self.size!r}")
        if self.size == "custom" and self.width % self.heads:
            raise ValueError(f"width {self.width} is not a multiple of heads {self.heads}")
        if self.dataset == "tokens":
            if not self.token_file:
                raise ValueError("token_file is empty: dataset 'tokens' needs a uint16 token "
                                 "file (nanoGPT's .bin layout)")
            if not Path(self.token_file).is_file():
                raise ValueError(f"token_file {self.token_file!r} is not a file")
        return self
