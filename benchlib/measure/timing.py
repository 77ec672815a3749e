"""Per-iteration phase timers: CUDA events on the current stream on GPUs, the host clock on CPUs.

A timed loop calls ``timer.start()`` at the top of each counted iteration, ``timer.lap(phase)``
at the end of each phase, and ``timer.stop()`` at the bottom. Nothing here synchronises the
device inside the loop: CUDA events are only recorded, and read once in :meth:`PhaseTimer.samples`
after the loop. The ``data`` phase is the host-side wait for the next batch (``host=True``),
which the device timeline cannot see when the host runs ahead of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # torch is imported where events are made, so reading results stays light
    import torch

PHASES = ("data", "read", "h2d", "preprocess", "forward", "backward", "optimizer", "d2h", "write")
NOISY_SPREAD = 0.10  #: a run whose iteration IQR / median exceeds this is flagged noisy


class PhaseTimer:
    """Collects phase durations of every counted iteration.

    With ``breakdown=False`` only whole iterations are timed (two events per iteration on CUDA),
    so the cost of the per-phase breakdown can be measured against it.
    """

    def __init__(self, device: torch.device, breakdown: bool = True) -> None:
        self.cuda = device.type == "cuda"
        self.breakdown = breakdown
        self._iterations: list[tuple[object, object, list[tuple[str, object, float | None]]]] = []
        self._laps: list[tuple[str, object, float | None]] = []
        self._start: object = None
        self._host_t = 0.0

    def _mark(self) -> object:
        if self.cuda:
            import torch

            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def start(self) -> None:
        """Mark the start of a counted iteration."""
        self._laps = []
        self._start = self._mark()
        self._host_t = time.perf_counter()

    def lap(self, phase: str, host: bool = False) -> None:
        """End ``phase`` now; ``host=True`` keeps the host-clock duration (the data wait)."""
        if not self.breakdown:
            return
        now = time.perf_counter()
        host_seconds = now - self._host_t if host else None
        self._laps.append((phase, self._mark(), host_seconds))
        self._host_t = time.perf_counter()

    def stop(self) -> None:
        """Mark the end of the iteration."""
        self._iterations.append((self._start, self._mark(), self._laps))

    def __len__(self) -> int:
        return len(self._iterations)

    def _seconds(self, a: object, b: object) -> float:
        if self.cuda:
            return a.elapsed_time(b) / 1e3  # type: ignore[attr-defined]
        return float(b) - float(a)  # type: ignore[arg-type]

    def iteration_seconds(self) -> np.ndarray:
        """Seconds of each counted iteration so far (synchronises the device on CUDA)."""
        if self.cuda and self._iterations:
            self._iterations[-1][1].synchronize()  # type: ignore[attr-defined]
        return np.array([self._seconds(start, end) for start, end, _ in self._iterations])

    def samples(self) -> pd.DataFrame:
        """One row per counted iteration: ``iteration`` seconds and seconds per phase.

        A phase lapped several times in one iteration (chunks) is summed; a phase never lapped
        is absent. Synchronises the device once.
        """
        if self.cuda:
            import torch

            torch.cuda.synchronize()
        rows = []
        for start, end, laps in self._iterations:
            row = {"iteration": self._seconds(start, end)}
            previous = start
            for phase, mark, host_seconds in laps:
                seconds = host_seconds if host_seconds is not None else self._seconds(previous, mark)
                row[phase] = row.get(phase, 0.0) + seconds
                previous = mark
            rows.append(row)
        columns = ["iteration"] + [p for p in PHASES if any(p in r for r in rows)]
        extra = sorted({k for r in rows for k in r} - set(columns))
        return pd.DataFrame(rows, columns=columns + extra)


@dataclass(frozen=True)
class Stats:
    """Robust summary of one series of per-iteration seconds."""

    median: float
    p95: float
    mean: float
    iqr: float
    count: int

    @property
    def spread(self) -> float:
        """Interquartile range over median (0 for a constant series)."""
        return self.iqr / self.median if self.median > 0 else 0.0

    @classmethod
    def of(cls, values: np.ndarray | pd.Series) -> Stats:
        """Summarise ``values`` (NaNs ignored)."""
        array = np.asarray(values, dtype=float)
        array = array[~np.isnan(array)]
        if array.size == 0:
            return cls(float("nan"), float("nan"), float("nan"), float("nan"), 0)
        q25, q50, q75, q95 = np.percentile(array, [25, 50, 75, 95])
        return cls(float(q50), float(q95), float(array.mean()), float(q75 - q25), int(array.size))


def summarize(samples: pd.DataFrame) -> dict[str, Stats]:
    """Stats per column of :meth:`PhaseTimer.samples` (``iteration`` and each phase)."""
    return {column: Stats.of(samples[column]) for column in samples.columns}


def is_noisy(stats: Stats) -> bool:
    """True when the iteration spread (IQR / median) exceeds :data:`NOISY_SPREAD`."""
    return stats.spread > NOISY_SPREAD


#: GPU clock cycles the device spins before a timed call (about 1 ms): the host queues the
#: call and its closing event meanwhile, so no launch gap falls inside the timed span
HOLD_CYCLES = 2_000_000


def device_seconds(fn: Callable[[], object], device: torch.device, calls: int = 1) -> float:
    """Seconds per call over ``calls`` back-to-back calls of ``fn``. On CUDA the device's own
    clock times them: two events around the calls, queued behind a short spin
    (:data:`HOLD_CYCLES`) so that the host's launches run ahead, as nccl-tests and
    ``triton.testing.do_bench`` time kernels; one synchronisation at the end. On a CPU the
    host clock."""
    if device.type != "cuda":
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls
    import torch

    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(HOLD_CYCLES)
    begin.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return begin.elapsed_time(end) / 1e3 / calls


class WallClock:
    """Whole-run wall time over the timed loop: one device synchronisation at each end."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.seconds = float("nan")
        self.started_at: float | None = None  #: when the timed loop started (epoch seconds)
        self.ended_at: float | None = None  #: when it ended (epoch seconds)
        self._t0 = 0.0

    def _sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    def __enter__(self) -> WallClock:
        self._sync()
        self.started_at = time.time()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sync()
        self.seconds = time.perf_counter() - self._t0
        self.ended_at = time.time()


def iso_utc(epoch_s: float | None = None) -> str:
    """``epoch_s`` (now when None) as ISO 8601 UTC text to the second
    (``2026-11-26T20:11:14+00:00``): a record's ``started_at`` / ``ended_at``."""
    from datetime import datetime, timezone

    moment = datetime.fromtimestamp(time.time() if epoch_s is None else epoch_s, timezone.utc)
    return moment.isoformat(timespec="seconds")


def new_run_id() -> str:
    """A fresh run id (32 hex digits, uuid4): a record's ``run_id``, made once per run."""
    import uuid

    return uuid.uuid4().hex
