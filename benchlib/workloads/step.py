"""The step protocol of the supervised workloads (classification, language model, U-Net) and
the timed run they share.

A step is one timed iteration: ``step(iterator, timer)`` takes the next batch (lap ``data``),
runs it, laps its phases on ``timer``, stops it and returns the samples it counted (None at
the end of the data); once the loop is done ``finish()`` gives the run's extras. A workload
says what differs: how a batch reaches the device (:meth:`Step.to_device`, lap ``h2d`` and
maybe ``preprocess``), what a sample is (:meth:`Step.count`), and for training its optimizer
and loss. Each workload maps its ``benchmark`` values to step classes once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

import torch
from torch import nn

from benchlib.inputs.config import RunConfig
from benchlib.vocabulary import Precision
from benchlib.workloads.loop import TimeBudget, Timer, backward_and_step, next_batch, timed_loop
from benchlib.workloads.result import RunResult
from benchlib.workloads.runtime import autocast, peak_memory_bytes, setup_run


class Step(ABC):
    """One iteration of a workload on ``model`` (train mode, DDP-wrapped over several ranks,
    when :attr:`training`; eval mode otherwise)."""

    #: whether the step trains: the model in train mode and wrapped in DDP
    training: ClassVar[bool] = False

    def __init__(self, model: nn.Module, config: Any, device: torch.device) -> None:
        self.model = model.train() if self.training else model.eval()
        self.config, self.device = config, device

    @abstractmethod
    def __call__(self, iterator: Iterator, timer: Timer) -> int | None:
        """Run one iteration; the samples counted, None at the end of the data."""

    def to_device(self, batch: Any, timer: Timer) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets) of ``batch`` on the device (lap ``h2d``)."""
        inputs, targets = (t.to(self.device, non_blocking=True) for t in batch)
        timer.lap("h2d")
        return inputs, targets

    def count(self, inputs: torch.Tensor) -> int:
        """The samples in a batch of ``inputs`` (by default its first dimension)."""
        return inputs.shape[0]

    def finish(self) -> dict[str, object]:
        """The run's extras, once the loop is done."""
        return {}


def fused(device: torch.device) -> bool | None:
    """The optimizers' ``fused`` argument: the fused CUDA kernels on a GPU (one launch for all
    parameters, and GradScaler's inf check stays on the device: no ``.item()`` per step, as
    the published figures run), the default elsewhere."""
    return True if device.type == "cuda" else None


class TrainStep(Step):
    """One optimizer step: data, h2d (+ preprocess), forward (+ loss), backward, optimizer."""

    training = True

    def __init__(self, model: nn.Module, config: Any, device: torch.device) -> None:
        super().__init__(model, config, device)
        self.optimizer = self.make_optimizer(self.model.parameters())
        self.scaler = torch.amp.GradScaler(device.type,
                                           enabled=config.precision == Precision.AMP_FP16)
        self.loss: torch.Tensor | None = None

    @abstractmethod
    def make_optimizer(self, parameters: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        """The optimizer of the model's parameters."""

    @abstractmethod
    def loss_of(self, outputs: Any, targets: torch.Tensor) -> torch.Tensor:
        """The loss of the model's outputs (computed under autocast)."""

    def __call__(self, iterator: Iterator, timer: Timer) -> int | None:
        batch = next_batch(iterator, timer)
        if batch is None:
            return None
        inputs, targets = self.to_device(batch, timer)
        with autocast(self.config.precision, self.device):
            loss = self.loss_of(self.model(inputs), targets)
        timer.lap("forward")
        backward_and_step(loss, self.scaler, self.optimizer, timer)
        timer.stop()
        self.loss = loss.detach()
        return self.count(inputs)

    def finish(self) -> dict[str, object]:
        return {"final_loss": float(self.loss) if self.loss is not None else None}


class InferenceStep(Step):
    """One eval-mode forward pass without gradients: data, h2d (+ preprocess), forward."""

    @torch.no_grad()
    def __call__(self, iterator: Iterator, timer: Timer) -> int | None:
        batch = next_batch(iterator, timer)
        if batch is None:
            return None
        inputs, _ = self.to_device(batch, timer)
        with autocast(self.config.precision, self.device):
            self.model(inputs)
        timer.lap("forward")
        timer.stop()
        return self.count(inputs)


def timed_run(config: RunConfig, build_model: Callable[[], nn.Module], step: type[Step],
              batches: Callable[[torch.device], Iterable], unit: str,
              channels_last: bool = False) -> RunResult:
    """Seed, build and prepare the model, make the data and the step, run the timed loop
    (:func:`benchlib.workloads.loop.timed_loop`), and return what it measured; ``unit`` is
    what the samples count per second. Extras: the step's :meth:`Step.finish`, the data's own
    (an ``extras`` mapping on what ``batches`` returns: images a training epoch drops, ...),
    ``loop_stop``, ``syncs_in_timed_loop`` (with ``sync_debug``), ``epoch_boundaries_in_timed_loop``
    (data that passes over a data set again and again, :func:`epoch_extra`)."""
    torch.manual_seed(config.seed)
    device, model = setup_run(config, build_model(), channels_last, ddp=step.training)
    data = batches(device)
    runner = step(model, config, device)
    limit = config.iterations if isinstance(config.iterations, int) else None
    loop = timed_loop(runner, iter(data), device, config.warmup, limit, config.breakdown,
                      telemetry_interval_s=config.telemetry_interval_s,
                      budget=TimeBudget.of(config), watch_syncs=config.sync_debug)
    return RunResult(
        device=device, iterations=len(loop.timer), warmup=loop.warmup, samples=loop.samples,
        wall_time_s=loop.wall_time_s, unit=unit, per_iteration=loop.timer.samples(),
        started_at=loop.started_at, ended_at=loop.ended_at,
        peak_memory_bytes=peak_memory_bytes(device), telemetry=loop.telemetry,
        contention=loop.contention,
        extras={**runner.finish(), **getattr(data, "extras", {}), "loop_stop": loop.stop,
                **syncs_extra(loop.syncs), **epoch_extra(data, loop.warmup, len(loop.timer))})


def epoch_extra(data: object, warmup: int, iterations: int) -> dict[str, int]:
    """The record's ``result_epoch_boundaries_in_timed_loop`` where ``data`` counts its passes
    (``boundaries_within``: an image folder read again and again): how many new epochs began
    at a timed batch (0: the timed span lay inside one epoch)."""
    within = getattr(data, "boundaries_within", None)
    return {} if within is None else {"epoch_boundaries_in_timed_loop": within(warmup, iterations)}


def syncs_extra(syncs: int | None) -> dict[str, int]:
    """The record's ``result_syncs_in_timed_loop`` where the loop's syncs were counted."""
    return {} if syncs is None else {"syncs_in_timed_loop": syncs}
