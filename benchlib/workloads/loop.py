"""The timed loop every workload shares: warm-up (untimed), then counted iterations."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from benchlib.measure import rapl
from benchlib.measure.contention import Contention, ContentionSampler
from benchlib.measure.rapl import RaplMeter
from benchlib.measure.sync_watch import SyncWatch
from benchlib.measure.telemetry import DEFAULT_INTERVAL_S, Telemetry, TelemetrySampler
from benchlib.measure.timing import PhaseTimer, WallClock
from benchlib.workloads import distributed
from benchlib.workloads.runtime import reset_peak_memory


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


Timer = PhaseTimer | NoTimer  #: what a step laps its phases on
#: A step as :func:`timed_loop` calls it (:mod:`benchlib.workloads.step` for the workloads' own)
StepFunction = Callable[[Iterator, Timer], "int | None"]


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


@dataclass(frozen=True)
class TimeBudget:
    """``iterations: auto``: time until the mean iteration time is known within ``precision``
    (the 95 % interval's half-width over the mean) after ``min_s`` seconds, or until ``max_s``.
    Checked every ``check_s`` seconds (a device synchronisation on CUDA), as
    ``torch.utils.benchmark``'s adaptive timing does."""

    min_s: float
    max_s: float
    precision: float = 0.02
    check_s: float = 0.25
    min_iterations: int = 10

    @classmethod
    def of(cls, config: object) -> TimeBudget | None:
        """The budget of a config with ``iterations: auto`` (None otherwise)."""
        if getattr(config, "iterations", None) != "auto":
            return None
        return cls(float(config.min_time_s), float(config.max_time_s))  # type: ignore[attr-defined]

    def stable(self, seconds: np.ndarray) -> bool:
        """Whether ``seconds`` (per iteration) pin their mean down within ``precision``."""
        if seconds.size < self.min_iterations:
            return False
        mean = float(seconds.mean())
        half_width = 1.96 * float(seconds.std(ddof=1)) / math.sqrt(seconds.size)
        return mean > 0 and half_width / mean <= self.precision


@dataclass
class LoopResult:
    """What :func:`timed_loop` measured."""

    timer: PhaseTimer
    warmup: int
    samples: int
    wall_time_s: float
    telemetry: Telemetry
    contention: Contention | None = None
    stop: str = ""  #: why the loop stopped: count, end of data, stable, time budget
    started_at: float | None = None  #: when the timed part started (epoch seconds)
    ended_at: float | None = None  #: when it ended (epoch seconds)
    syncs: int | None = None  #: device synchronisations inside the timed steps (None: not watched)


def timed_loop(step: StepFunction, iterator: Iterator, device: torch.device, warmup: int,
               iterations: int | None, breakdown: bool = True,
               finish: Callable[[], None] | None = None,
               telemetry_interval_s: float = DEFAULT_INTERVAL_S,
               budget: TimeBudget | None = None, watch_syncs: bool = False) -> LoopResult:
    """Run ``warmup`` untimed steps, then (the peak memory window reset, every rank of a
    launch waiting for the others) steps until ``iterations`` (None: until the data ends).

    ``step(iterator, timer)`` returns the samples it processed or None at the end of the data.
    ``finish`` runs inside the wall clock after the last step (e.g. draining a writer).
    With ``budget`` (``iterations: auto``), steps run until it is spent or the timing is
    stable (:class:`TimeBudget`). NVML telemetry is sampled every ``telemetry_interval_s``
    over the timed part (0: off), and what else used the node meanwhile is measured
    (:mod:`benchlib.measure.contention`). With ``watch_syncs`` on CUDA, the synchronisations
    the steps make are counted (:mod:`benchlib.measure.sync_watch`; the budget's checks left out).
    """
    warm = 0
    for _ in range(warmup):
        if step(iterator, NoTimer()) is None:
            break
        warm += 1
        progress.tick()
    # the peak memory of the timed steps: not cuDNN's benchmark or autotune workspaces, which
    # warm-up allocated and freed (unet3d's predict resets here too)
    reset_peak_memory(device)
    distributed.barrier()  # every rank starts its timed part together (one span: run/merge.py)
    timer = PhaseTimer(device, breakdown=breakdown)
    samples, stop = 0, "count"
    with ContentionSampler(device) as watch, TelemetrySampler(device, telemetry_interval_s) as \
            sampler, package_meter(device) as packages, WallClock(device) as clock, \
            SyncWatch(device, watch_syncs) as syncs:
        start = checked = time.perf_counter()
        while iterations is None or len(timer) < iterations:
            counted = step(iterator, timer)
            if counted is None:
                stop = "end of data"
                break
            samples += counted
            progress.tick()
            if packages is not None:
                packages.poll()  # a file read every 5 s at most: no counter wraps twice unseen
            if budget is not None:
                now = time.perf_counter()
                if now - start >= budget.max_s:
                    stop = "time budget"
                    break
                if now - start >= budget.min_s and now - checked >= budget.check_s:
                    checked = now
                    with syncs.paused():
                        seconds = timer.iteration_seconds()
                    if budget.stable(seconds):
                        stop = "stable"
                        break
        if finish is not None:
            with syncs.paused():
                finish()
    if len(timer) == 0:
        raise RuntimeError(
            f"no timed iteration ran: the data gave out during the {warm} warm-up iterations; "
            "lower warmup or use more data")
    return LoopResult(timer, warm, samples, clock.seconds, with_packages(sampler.telemetry, packages),
                      watch.contention, stop, clock.started_at, clock.ended_at, syncs.count)


def package_meter(device: torch.device) -> contextlib.AbstractContextManager[RaplMeter | None]:
    """A CPU run's package energy meter (RAPL, :mod:`benchlib.measure.rapl`); nothing on a GPU,
    whose energy NVML gives."""
    return RaplMeter() if device.type == "cpu" else contextlib.nullcontext()


def with_packages(telemetry: Telemetry, packages: RaplMeter | None) -> Telemetry:
    """``telemetry`` with a CPU run's package energy, or why there is none."""
    if packages is None:
        return telemetry
    if packages.energy_j is None:
        return dataclasses.replace(telemetry, energy_source=f"none: {packages.reason}")
    return dataclasses.replace(telemetry, energy_j=packages.energy_j, energy_source=rapl.SOURCE)
