"""The timed loop every workload shares: warm-up (untimed), then counted iterations."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from benchlib.contention import Contention, ContentionSampler
from benchlib.telemetry import DEFAULT_INTERVAL_S, Telemetry, TelemetrySampler
from benchlib.timing import PhaseTimer, WallClock


class Progress:
    """Iterations finished in this process (warm-up included): a heartbeat for the launcher's
    hang detection. One integer increment per iteration."""

    def __init__(self) -> None:
        self.iterations = 0

    def tick(self) -> None:
        self.iterations += 1


progress = Progress()


class NoTimer:
    """Stands in for :class:`PhaseTimer` during warm-up."""

    def start(self) -> None: ...
    def lap(self, phase: str, host: bool = False) -> None: ...
    def stop(self) -> None: ...


Step = Callable[[Iterator, "PhaseTimer | NoTimer"], "int | None"]


def next_batch(iterator: Iterator, timer: PhaseTimer | NoTimer, phase: str = "data") -> object:
    """Start the iteration and take the next batch (``phase`` is the host-side wait); None at
    the end of the data."""
    timer.start()
    try:
        batch = next(iterator)
    except StopIteration:
        return None
    timer.lap(phase, host=True)
    return batch


def backward_and_step(loss: torch.Tensor, scaler: torch.amp.GradScaler,
                      optimizer: torch.optim.Optimizer, timer: PhaseTimer | NoTimer) -> None:
    """Backward (lap ``backward``), then the (scaled) optimizer step and zero_grad (lap
    ``optimizer``): the tail every training step shares."""
    scaler.scale(loss).backward()
    timer.lap("backward")
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    timer.lap("optimizer")


@dataclass
class LoopResult:
    """What :func:`timed_loop` measured."""

    timer: PhaseTimer
    warmup: int
    samples: int
    wall_time_s: float
    telemetry: Telemetry
    contention: Contention | None = None


def timed_loop(step: Step, iterator: Iterator, device: torch.device, warmup: int,
               iterations: int | None, breakdown: bool = True,
               finish: Callable[[], None] | None = None,
               telemetry_interval_s: float = DEFAULT_INTERVAL_S) -> LoopResult:
    """Run ``warmup`` untimed steps, then steps until ``iterations`` (None: until the data ends).

    ``step(iterator, timer)`` returns the samples it processed or None at the end of the data.
    ``finish`` runs inside the wall clock after the last step (e.g. draining a writer).
    NVML telemetry is sampled every ``telemetry_interval_s`` over the timed part (0: off), and
    what else used the node meanwhile is measured (:mod:`benchlib.contention`).
    """
    warm = 0
    for _ in range(warmup):
        if step(iterator, NoTimer()) is None:
            break
        warm += 1
        progress.tick()
    timer = PhaseTimer(device, breakdown=breakdown)
    samples = 0
    with ContentionSampler(device) as watch, TelemetrySampler(device, telemetry_interval_s) as \
            sampler, WallClock(device) as clock:
        while iterations is None or len(timer) < iterations:
            counted = step(iterator, timer)
            if counted is None:
                break
            samples += counted
            progress.tick()
        if finish is not None:
            finish()
    if len(timer) == 0:
        raise RuntimeError(
            f"no timed iteration ran: the data gave out during the {warm} warm-up iterations; "
            "lower warmup or use more data")
    return LoopResult(timer, warm, samples, clock.seconds, sampler.telemetry, watch.contention)
