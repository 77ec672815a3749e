"""The within-run interval of a record: what one run's own iterations say about its speed.

A percentile bootstrap of the mean iteration time over the run's timed iterations, made once,
when the record is made (``throughput_low`` / ``throughput_high``). It never decides a
verdict between runs: see :mod:`benchlib.analysis.intervals`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from benchlib.records.flags import SHORT_ITERATIONS

if TYPE_CHECKING:
    from benchlib.workloads.result import RunResult

RESAMPLES = 2000
SEED = 20261122

def mean_interval(values: np.ndarray, level: float = 0.95,
                  resamples: int = RESAMPLES) -> tuple[float, float]:
    """Percentile-bootstrap interval of the mean of ``values`` (NaN, NaN for fewer than 2)."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if values.size < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(SEED)
    means = rng.choice(values, size=(resamples, values.size), replace=True).mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def throughput_interval(result: RunResult, level: float = 0.95) -> dict[str, float | None]:
    """``throughput_low`` / ``throughput_high``: the run's throughput at the bounds of the mean
    iteration time's interval (None with fewer than ``SHORT_ITERATIONS`` timed iterations: a
    bootstrap of 2 or 3 values states a precision they do not have)."""
    seconds = result.per_iteration["iteration"].to_numpy(dtype=float) \
        if "iteration" in result.per_iteration else np.array([])
    if np.count_nonzero(~np.isnan(seconds)) < SHORT_ITERATIONS:
        return {"throughput_low": None, "throughput_high": None}
    low_s, high_s = mean_interval(seconds, level)
    mean = float(np.nanmean(seconds)) if seconds.size else float("nan")
    if math.isnan(low_s) or low_s <= 0 or math.isnan(result.throughput):
        return {"throughput_low": None, "throughput_high": None}
    return {"throughput_low": result.throughput * mean / high_s,
            "throughput_high": result.throughput * mean / low_s}
