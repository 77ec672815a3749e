"""What a timed workload returns, before it becomes a flat result record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from benchlib.measure.timing import Stats, summarize

if TYPE_CHECKING:
    import torch

    from benchlib.measure.contention import Contention
    from benchlib.measure.telemetry import Telemetry


@dataclass
class RunResult:
    """Timings and counts of one workload run.

    ``per_iteration`` holds per-iteration seconds (``iteration`` and each phase);
    ``samples`` counts what ``unit`` counts (images, voxels) over the counted iterations.
    A run over several ranks is the merge of the ranks' results (:func:`benchlib.run.merge.merge`):
    samples of all ranks, the run's span (first start to last end), and per-rank figures in ``ranks``.
    ``env`` holds the environment capture (``env_*``) of rank 0.
    """

    device: torch.device
    iterations: int
    warmup: int
    samples: int
    wall_time_s: float
    unit: str
    per_iteration: pd.DataFrame
    peak_memory_bytes: int | None = None
    extras: dict[str, object] = field(default_factory=dict)
    num_devices: int = 1
    num_nodes: int = 1
    env: dict[str, object] = field(default_factory=dict)
    ranks: pd.DataFrame | None = None  #: one row per rank when several ran (see run.merge)
    rank_stats: dict[str, Stats] | None = None  #: per-phase stats over ranks (see run.merge)
    telemetry: Telemetry | None = None  #: NVML samples of the timed loop (rank 0's when merged)
    telemetry_columns: dict[str, object] | None = None  #: every rank's, merged (run.merge)
    contention: Contention | None = None  #: what else used the node (the worst rank's, merged)
    started_at: float | None = None  #: timed loop start, epoch s (merged: the earliest rank's)
    ended_at: float | None = None  #: timed loop end, epoch s (merged: the latest rank's)
    run_id: str = ""  #: made once per run by the launcher (benchlib.run.launch)

    def telemetry_record(self) -> dict[str, object]:
        """The record's telemetry columns: means, throttled share, energy, joules per sample."""
        if self.telemetry_columns is not None:
            return dict(self.telemetry_columns)
        if self.telemetry is None:
            return {"telemetry": "unavailable: not sampled"}
        return self.telemetry.summary(self.samples)

    def contention_record(self) -> dict[str, object]:
        """The record's contention columns (:mod:`benchlib.measure.contention`); {} when not measured."""
        return self.contention.columns() if self.contention is not None else {}

    @property
    def throughput(self) -> float:
        """Samples per second over the whole timed loop."""
        return self.samples / self.wall_time_s if self.wall_time_s > 0 else float("nan")

    def stats(self) -> dict[str, Stats]:
        """Median, p95, IQR per phase and for whole iterations (for several ranks: the median
        over ranks of each rank's figure)."""
        return self.rank_stats if self.rank_stats is not None else summarize(self.per_iteration)

    def breakdown(self) -> pd.DataFrame:
        """Median / p95 / spread seconds per phase, with each phase's share of the iteration."""
        stats = self.stats()
        iteration = stats["iteration"].median
        rows = [
            {"phase": name, "median_s": s.median, "p95_s": s.p95, "spread": s.spread,
             "share": s.median / iteration if iteration > 0 else float("nan")}
            for name, s in stats.items()
        ]
        return pd.DataFrame(rows).set_index("phase")
