"""Uncertainty: a 95 % interval for each run's throughput, and for the effect of a factor.

Both are percentile bootstraps with a fixed seed (the same data give the same interval):

- **A run**: the mean iteration time resampled over the run's timed iterations;
  ``throughput_low`` / ``throughput_high`` scale the throughput by mean / each bound.
- **An effect** (:func:`effect`, over the pairs of :func:`benchlib.analysis.comparisons.compare`): pairs are
  resampled, and each pair's log ratio is drawn within its runs' own intervals (normal in log
  space, the 95 % interval's half-width over 1.96), so that one pair of noisy runs gets a wide
  interval and many consistent pairs a narrow one. The effect is ``significant`` when its
  interval excludes 1.0.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from benchlib.workloads.result import RunResult

RESAMPLES = 2000
SEED = 20261122
Z95 = 1.959964
#: An interval whose high end is more than this multiple of its low end tells nothing either way.
INCONCLUSIVE_WIDTH = 1.5


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
    iteration time's interval (None with fewer than 2 timed iterations)."""
    seconds = result.per_iteration["iteration"].to_numpy(dtype=float) \
        if "iteration" in result.per_iteration else np.array([])
    low_s, high_s = mean_interval(seconds, level)
    mean = float(np.nanmean(seconds)) if seconds.size else float("nan")
    if math.isnan(low_s) or low_s <= 0 or math.isnan(result.throughput):
        return {"throughput_low": None, "throughput_high": None}
    return {"throughput_low": result.throughput * mean / high_s,
            "throughput_high": result.throughput * mean / low_s}


def _log_sd(low: object, high: object) -> float:
    """Standard deviation in log space implied by a 95 % interval (0 when unknown)."""
    try:
        low_f, high_f = float(low), float(high)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
    if not (low_f > 0 and high_f >= low_f):
        return 0.0
    return (math.log(high_f) - math.log(low_f)) / (2 * Z95)


def effect(pairs: pd.DataFrame, level: float = 0.95,
           resamples: int = RESAMPLES) -> dict[str, object]:
    """The median ratio a / b over ``pairs`` (from :func:`benchlib.analysis.comparisons.compare`) with its
    interval: ``median``, ``low``, ``high``, ``pairs`` (count), ``significant`` (the interval
    excludes 1.0), ``known`` (False when the interval could not be estimated: a single pair
    without run intervals)."""
    if pairs is None or len(pairs) == 0:
        nan = float("nan")
        return {"median": nan, "low": nan, "high": nan, "pairs": 0, "significant": False,
                "known": False}
    ratios = pairs["ratio"].to_numpy(dtype=float)
    logs = np.log(ratios)
    sds = np.zeros_like(logs)
    if {"a_low", "a_high", "b_low", "b_high"} <= set(pairs.columns):
        sds = np.array([math.hypot(_log_sd(r.a_low, r.a_high), _log_sd(r.b_low, r.b_high))
                        for r in pairs.itertuples()])
    median = float(np.exp(np.median(logs)))
    if len(logs) == 1 and sds[0] == 0:
        return {"median": median, "low": float("nan"), "high": float("nan"), "pairs": 1,
                "significant": False, "known": False}
    rng = np.random.default_rng(SEED)
    picks = rng.integers(0, len(logs), size=(resamples, len(logs)))
    draws = logs[picks] + rng.standard_normal(picks.shape) * sds[picks]
    tail = (1 - level) / 2 * 100
    low, high = np.exp(np.percentile(np.median(draws, axis=1), [tail, 100 - tail]))
    return {"median": median, "low": float(low), "high": float(high), "pairs": len(logs),
            "significant": bool(low > 1.0 or high < 1.0), "known": True}


def describe_effect(found: dict[str, object]) -> str:
    """``1.02x (0.99-1.05), no significant effect`` / ``1.93x (1.85-2.01), significant`` /
    ``1.09x (0.24-2.69), inconclusive (...)`` when the interval spans more than 1.5x."""
    median = found["median"]
    if not found["pairs"]:
        return "nothing paired"
    if not found["known"]:
        return f"{median:.2f}x (one pair, no interval: repeat the runs to know)"
    if found["significant"]:
        verdict = "significant"
    elif found["high"] / found["low"] > INCONCLUSIVE_WIDTH:
        verdict = "inconclusive (the interval is too wide to tell: repeat on a quiet node)"
    else:
        verdict = "no significant effect"
    return f"{median:.2f}x ({found['low']:.2f}-{found['high']:.2f}), {verdict}"
