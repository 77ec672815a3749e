"""The configuration of one language-model run (``lm_train`` / ``lm_inference``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import PositiveInt, model_validator

from benchlib.inputs import node_limits
from benchlib.inputs.benchmark import Benchmark
from benchlib.inputs.config import CompileMode, RunConfig
from benchlib.kinds.language_model.model_shapes import shape_for

LanguageModelBenchmark = Literal["lm_train", "lm_inference"]
#: The named model sizes of :mod:`benchlib.kinds.language_model.model_shapes` (kept here as a literal for the
#: parameters cell and the schema).
LanguageModelSize = Literal["tiny", "mini", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl",
                            "custom"]
#: Bytes per parameter a run holds: fp32 weights; training adds their gradients and AdamW's two
#: moments (4 + 4 + 8).
BYTES_PER_PARAMETER = {"lm_train": 16, "lm_inference": 4}
TOKEN_BYTES = 2  #: nanoGPT's token files: one uint16 per token


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
            self._check_token_file()
        return self

    def _check_token_file(self) -> None:
        """What a stat can tell of ``token_file``: a file, not empty, whole uint16 tokens, and
        enough of them for one window (:func:`benchlib.kinds.language_model.data.file_batch` picks a start
        among ``tokens - sequence_length - 1``)."""
        if not self.token_file:
            raise ValueError("token_file is empty: dataset 'tokens' needs a uint16 token "
                             "file (nanoGPT's .bin layout)")
        try:
            size = os.stat(self.token_file).st_size
        except FileNotFoundError:
            raise ValueError(f"token_file {self.token_file!r} does not exist") from None
        except OSError as error:
            raise ValueError(f"token_file {self.token_file!r} cannot be read "
                             f"({(error.strerror or str(error)).lower()})") from None
        if not Path(self.token_file).is_file():
            raise ValueError(f"token_file {self.token_file!r} is not a file")
        if size == 0:
            raise ValueError(f"token_file {self.token_file!r} is empty (0 bytes); give a "
                             "tokenized corpus")
        if size % TOKEN_BYTES:
            raise ValueError(f"token_file {self.token_file!r}: {size} bytes is not a whole "
                             "number of uint16 tokens (nanoGPT's .bin layout)")
        needed = self.sequence_length + 2
        if size // TOKEN_BYTES < needed:
            raise ValueError(f"token_file {self.token_file!r}: {size // TOKEN_BYTES} tokens, "
                             f"fewer than the {needed} one sequence needs (sequence_length "
                             f"{self.sequence_length} + 1 for the targets + 1 to choose a start)")

    def memory_estimate(self) -> tuple[int, int, str]:
        """(bytes one process holds for the model's parameters, those parameters, the field
        that contributes most: ``width`` / ``size``, ``vocab_size`` or ``sequence_length``).
        A lower bound: activations come on top."""
        shape = shape_for(self.size, self.layers, self.heads, self.width, self.vocab_size,
                          self.sequence_length)
        parts = {("layers and width" if self.size == "custom" else "size"):
                 12 * shape.layers * shape.width ** 2,
                 "vocab_size": shape.vocab_size * shape.width,
                 "sequence_length": shape.max_sequence * shape.width}
        field = max(parts, key=parts.__getitem__)
        return shape.parameters * BYTES_PER_PARAMETER[self.benchmark], shape.parameters, field

    @model_validator(mode="after")
    def _model_fits_the_memory(self) -> LanguageModelConfig:
        """Refuse a model whose parameters (and, training, their gradients and AdamW state)
        alone need more than the device's memory (the host's on a CPU, for every process
        there): it would fail in the allocator or be killed after minutes of start-up."""
        estimate, parameters, field = self.memory_estimate()
        processes = self.processes_here if self.device == "cpu" else 1
        bound, why = node_limits.memory_bound(self.device)
        if estimate * processes <= bound:
            return self
        named = " and ".join(f"{name} {getattr(self, name)}" for name in field.split(" and "))
        each = f" x {processes} processes" if processes > 1 else ""
        raise ValueError(
            f"{named}: this {self.size} model holds {parameters / 1e9:.2f} billion "
            f"parameters, about {node_limits.size_text(estimate)}{each} in {self.benchmark} "
            f"({BYTES_PER_PARAMETER[self.benchmark]} bytes per parameter, activations not "
            f"counted), more than {why} on device {self.device!r}; choose a smaller size, "
            "layers, width, vocab_size or sequence_length")

    def logits_bytes(self) -> int:
        """Bytes of one iteration's logits on one device (float32, batch x sequence x
        vocabulary; training keeps their gradient too): a lower bound of its activations."""
        shape = shape_for(self.size, self.layers, self.heads, self.width, self.vocab_size,
                          self.sequence_length)
        copies = 2 if self.benchmark == "lm_train" else 1
        return self.device_batch_size * self.sequence_length * shape.vocab_size * 4 * copies

    @model_validator(mode="after")
    def _batch_fits_the_memory(self) -> LanguageModelConfig:
        """Refuse a batch whose logits alone need more than the device's memory."""
        needed = self.logits_bytes()
        processes = self.processes_here if self.device == "cpu" else 1
        bound, why = node_limits.memory_bound(self.device)
        if needed * processes <= bound:
            return self
        raise ValueError(
            f"batch_size {self.batch_size}: its logits alone (batch x sequence_length "
            f"{self.sequence_length} x vocabulary, float32) take about "
            f"{node_limits.size_text(needed)} per device, more than {why} on device "
            f"{self.device!r}; choose a smaller batch_size or sequence_length")


#: The kind's variants: one notebook each (the registry reads them, :func:`benchlib.registry.shipped`).
VARIANTS = (
    Benchmark("lm_train", "lm_train", LanguageModelConfig, "language_model",
              "Language model training benchmark",
              "AdamW steps of a GPT-2-style decoder-only transformer (pre-norm blocks, causal "
              "`scaled_dot_product_attention`, tied head) on sequences of `sequence_length` "
              "tokens: random ids made once on the device (`dataset: synthetic`) or random "
              "windows of a uint16 token file (`dataset: tokens`, nanoGPT's `.bin` layout). "
              "Reported as tokens/s; MFU from the model FLOPs per token (6N plus attention).",
              activity="training", trains=True),
    Benchmark("lm_inference", "lm_inference", LanguageModelConfig, "language_model",
              "Language model inference benchmark",
              "Eval mode, no gradients: one forward pass of a GPT-2-style transformer over a "
              "batch of `sequence_length`-token sequences (the prefill of a whole prompt, no "
              "key-value cache). Reported as tokens/s.", activity="inference"),
)
