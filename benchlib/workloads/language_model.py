"""Training and inference benchmarks of a GPT-2-style language model, in tokens per second."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import torch
from torch import nn

from benchlib.data.tokens import file_batch, open_tokens, synthetic_batch
from benchlib.inputs.lm_config import LanguageModelConfig
from benchlib.measure.timing import PhaseTimer
from benchlib.models.transformer import SIZES, TransformerLM, TransformerShape, language_model_loss
from benchlib.vocabulary import Precision
from benchlib.workloads import distributed
from benchlib.workloads.loop import NoTimer, TimeBudget, backward_and_step, next_batch, timed_loop
from benchlib.workloads.result import RunResult
from benchlib.workloads.runtime import autocast, peak_memory_bytes, reset_peak_memory, setup_run


def model_shape(config: LanguageModelConfig) -> TransformerShape:
    """The transformer's shape: the named size, or the custom layers / heads / width; the
    vocabulary and the longest sequence as configured."""
    if config.size == "custom":
        base = TransformerShape(layers=config.layers, heads=config.heads, width=config.width)
    else:
        base = SIZES[config.size]
    return dataclasses.replace(
        base, vocab_size=config.vocab_size or base.vocab_size,
        max_sequence=max(base.max_sequence, config.sequence_length))


def build_model(config: LanguageModelConfig) -> nn.Module:
    """A randomly initialised model of the configured shape."""
    return TransformerLM(model_shape(config))


def batches(config: LanguageModelConfig, device: torch.device) -> Iterator:
    """This rank's (inputs, targets) batches: one synthetic batch made once on the device, or
    random windows of the token file made on the host (each rank its own seed)."""
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
                                     generator)
        yield (inputs.pin_memory(), targets.pin_memory()) if pin else (inputs, targets)


def run(config: LanguageModelConfig) -> RunResult:
    """Run the configured benchmark and return its timings (samples counted in tokens)."""
    torch.manual_seed(config.seed)
    train = config.benchmark == "lm_train"
    device, model = setup_run(config, build_model(config), ddp=train)
    step = (TrainStep if train else InferenceStep)(model, config, device)
    reset_peak_memory(device)
    limit = config.iterations if isinstance(config.iterations, int) else None
    loop = timed_loop(step, batches(config, device), device, config.warmup, limit,
                      config.breakdown, telemetry_interval_s=config.telemetry_interval_s,
                      budget=TimeBudget.of(config))
    extras = {**step.finish(), "loop_stop": loop.stop}
    return RunResult(
        device=device, iterations=len(loop.timer), warmup=loop.warmup, samples=loop.samples,
        wall_time_s=loop.wall_time_s, unit="tokens/s", per_iteration=loop.timer.samples(),
        peak_memory_bytes=peak_memory_bytes(device), extras=extras, telemetry=loop.telemetry,
        contention=loop.contention,
    )


def _to_device(batch: tuple[torch.Tensor, torch.Tensor], device: torch.device,
               timer: PhaseTimer | NoTimer) -> tuple[torch.Tensor, torch.Tensor]:
    inputs, targets = (t.to(device, non_blocking=True) for t in batch)
    timer.lap("h2d")
    return inputs, targets


class TrainStep:
    """One AdamW step: data, h2d, forward (+loss), backward, optimizer; returns tokens."""

    def __init__(self, model: nn.Module, config: LanguageModelConfig, device: torch.device):
        self.model, self.config, self.device = model.train(), config, device
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate,
                                           weight_decay=0.1, betas=(0.9, 0.95))
        self.scaler = torch.amp.GradScaler(device.type, enabled=config.precision == Precision.AMP_FP16)
        self.loss: torch.Tensor | None = None

    def __call__(self, iterator: Iterator, timer: PhaseTimer | NoTimer) -> int | None:
        batch = next_batch(iterator, timer)
        if batch is None:
            return None
        inputs, targets = _to_device(batch, self.device, timer)
        with autocast(self.config.precision, self.device):
            loss = language_model_loss(self.model(inputs), targets)
        timer.lap("forward")
        backward_and_step(loss, self.scaler, self.optimizer, timer)
        timer.stop()
        self.loss = loss.detach()
        return inputs.numel()

    def finish(self) -> dict[str, object]:
        return {"final_loss": float(self.loss) if self.loss is not None else None}


class InferenceStep:
    """One eval-mode forward pass over a batch of sequences, no gradients; returns tokens."""

    def __init__(self, model: nn.Module, config: LanguageModelConfig, device: torch.device):
        self.model, self.config, self.device = model.eval(), config, device

    @torch.no_grad()
    def __call__(self, iterator: Iterator, timer: PhaseTimer | NoTimer) -> int | None:
        batch = next_batch(iterator, timer)
        if batch is None:
            return None
        inputs, _ = _to_device(batch, self.device, timer)
        with autocast(self.config.precision, self.device):
            self.model(inputs)
        timer.lap("forward")
        timer.stop()
        return inputs.numel()

    def finish(self) -> dict[str, object]:
        return {}
