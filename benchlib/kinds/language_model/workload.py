"""Training and inference benchmarks of a GPT-2-style language model, in tokens per second."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import torch
from torch import nn

from benchlib.kinds.language_model.config import LanguageModelBenchmark, LanguageModelConfig
from benchlib.kinds.language_model.data import file_batch, open_tokens, synthetic_batch
from benchlib.kinds.language_model.model import TransformerLM, TransformerShape, language_model_loss
from benchlib.kinds.language_model.model_shapes import shape_for
from benchlib.workloads import distributed, step
from benchlib.workloads.result import RunResult


def model_shape(config: LanguageModelConfig) -> TransformerShape:
    """The transformer's shape: the named size, or the custom layers / heads / width; the
    vocabulary and the longest sequence as configured."""
    return shape_for(config.size, config.layers, config.heads, config.width,
                     config.vocab_size, config.sequence_length)


def build_model(config: LanguageModelConfig) -> nn.Module:
    """A randomly initialised model of the configured shape."""
    return TransformerLM(model_shape(config))


def batches(config: LanguageModelConfig, device: torch.device) -> Iterator:
    """This rank's (inputs, targets) batches: one synthetic batch made once on the device, or
    random windows of the token file made on the host (each rank its own seed), each batch's
    ids checked against the vocabulary (an InputError naming ``token_file`` and the offset,
    not the embedding's "index out of range" or a device-side assert)."""
    seed = distributed.current().seed(config.seed)
    vocab = model_shape(config).vocab_size
    if config.dataset == "synthetic":
        batch = synthetic_batch(config.device_batch_size, config.sequence_length, vocab, device,
                                seed=seed)
        while True:
            yield batch
    tokens = open_tokens(config.token_file, config.sequence_length, vocab)
    generator = np.random.default_rng(seed)
    pin = device.type == "cuda"
    while True:
        inputs, targets = file_batch(tokens, config.device_batch_size, config.sequence_length,
                                     generator, vocab_size=vocab)
        yield (inputs.pin_memory(), targets.pin_memory()) if pin else (inputs, targets)


class TokenStep(step.Step):
    """A step on language-model batches: (inputs, targets) token ids, counted in tokens."""

    def count(self, inputs: torch.Tensor) -> int:
        return inputs.numel()


class TrainStep(TokenStep, step.TrainStep):
    """One AdamW step: data, h2d, forward (+loss), backward, optimizer; returns tokens."""

    def make_optimizer(self, parameters: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.AdamW(parameters, lr=self.config.learning_rate, weight_decay=0.1,
                                 betas=(0.9, 0.95), fused=step.fused(self.device))

    def loss_of(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return language_model_loss(logits, targets)


class InferenceStep(TokenStep, step.InferenceStep):
    """One eval-mode forward pass over a batch of sequences, no gradients; returns tokens."""


#: The step of each benchmark: the one place the workload tells its benchmarks apart.
STEPS: dict[LanguageModelBenchmark, type[TokenStep]] = {
    "lm_train": TrainStep, "lm_inference": InferenceStep}


def run(config: LanguageModelConfig) -> RunResult:
    """Run the configured benchmark and return its timings (samples counted in tokens)."""
    return step.timed_run(config, lambda: build_model(config), STEPS[config.benchmark],
                          lambda device: batches(config, device), "tokens/s")
