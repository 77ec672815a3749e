"""Change points of one series, by Apache Otava's method: candidates from binary segmentation,
then Otava's merge step, which drops the weakest candidate (Student's t-test between the
segments on either side) until every one left has p below ``max_pvalue`` (default 0.001).

Otava (formerly Hunter; Fleming et al., "Hunter: Using Change Point Detection to Hunt for
Performance Regressions", ICPE 2023) splits with E-divisive and a t-test at ten times the final
level (its "weak" change points), then merges. ``apache-otava`` itself does not install
cleanly beside benchlib (0.8.0 pins numpy 2.2.0 and scipy below 1.17 and brings BigQuery,
Slack and PostgreSQL clients), nor does MongoDB's ``signal-processing-algorithms`` (numpy
below 2), so the candidates come from ``ruptures``' binary segmentation (``Binseg``, the l2
cost: a shift of the mean log speed) and the merge's test from scipy:

- **candidates**: ``Binseg`` splits while a split's gain exceeds ``z^2 * sigma^2``, with z the
  two-sided normal quantile of the first-pass level (Otava's ten times ``max_pvalue``) and
  sigma the series' noise estimated from its successive differences (median absolute
  deviation, robust to the steps themselves): a split's l2 gain is ``sigma^2`` times the
  squared z statistic of the two sides' means, so each candidate passes a z-test at the first
  -pass level, as Otava's weak change points pass a t-test there;
- **merge**: Otava's ``merge`` (``otava.analysis.merge``): while the candidate with the largest
  p-value (a two-sided Student t-test of its left segment against its right one, each bounded
  by the neighbouring candidates) has p above ``max_pvalue``, it is removed and its
  neighbours' tests are made again.

The series is of log speeds (noise is multiplicative); segments hold at least ``min_size``
points (3; the between-runs interval needs two). The parameters are calibrated by
``benchmarks/calibrate_history.py`` (docs/acceptance.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Otava's default significance of a change point.
MAX_PVALUE = 0.001
#: Otava's first pass tests candidates at this many times ``max_pvalue``.
FIRST_PASS_FACTOR = 10
#: The fewest points a segment holds: a change is called from its third run on (two runs a side
#: make a Welch interval, but one on about one degree of freedom, too wide to judge;
#: ``benchmarks/calibrate_history.py``: 0.53 false change points per 1,000 stationary nights
#: with 3, 0.58 with 2).
MIN_SIZE = 3
#: Median absolute deviation to the standard deviation of a normal distribution.
MAD_TO_SD = 1.4826


@dataclass(frozen=True)
class ChangePoint:
    """A change point: ``index`` is the first point of the new segment; ``start`` / ``stop``
    bound the segments on either side (``series[start:index]``, ``series[index:stop]``);
    ``pvalue`` is the t-test between them."""

    index: int
    start: int
    stop: int
    pvalue: float


def noise(series: np.ndarray) -> float:
    """The series' noise (standard deviation) from its successive differences: their median
    absolute deviation over sqrt(2), which a few steps do not move."""
    steps = np.diff(series)
    if steps.size < 2:
        return 0.0
    return float(MAD_TO_SD * np.median(np.abs(steps - np.median(steps))) / np.sqrt(2))


def candidates(series: np.ndarray, first_pass: float, min_size: int = MIN_SIZE) -> list[int]:
    """Otava's weak change points, from ``ruptures.Binseg`` (l2 cost) with the penalty that
    makes each split a z-test at level ``first_pass`` (see the module docstring)."""
    import ruptures
    from scipy import stats

    if series.size < 2 * min_size:
        return []
    sigma = noise(series) or float(np.std(series))
    if sigma == 0:
        return []
    penalty = (stats.norm.isf(first_pass / 2) * sigma) ** 2
    binseg = ruptures.Binseg(custom_cost=_cumulative_l2(), min_size=min_size, jump=1)
    found = binseg.fit(series).predict(pen=penalty)
    return [int(i) for i in found if i < series.size]


def _cumulative_l2():
    """ruptures' ``l2`` cost (a segment's sum of squared deviations from its mean) from
    cumulative sums: each segment in constant time, where ``CostL2`` takes the segment's
    variance (10,000 points: 0.6 s instead of 4.9 s; docs/measurements.md)."""
    from ruptures.base import BaseCost
    from ruptures.exceptions import NotEnoughPoints

    class CumulativeL2(BaseCost):
        model = "l2"
        min_size = 1

        def fit(self, signal: np.ndarray) -> CumulativeL2:
            values = np.asarray(signal, dtype=float).reshape(-1)
            self.signal = values.reshape(-1, 1)  # ruptures reads its length
            self.sums = np.concatenate(([0.0], np.cumsum(values)))
            self.squares = np.concatenate(([0.0], np.cumsum(values ** 2)))
            return self

        def error(self, start: int, end: int) -> float:
            if end - start < self.min_size:
                raise NotEnoughPoints
            total = self.sums[end] - self.sums[start]
            return float(self.squares[end] - self.squares[start] - total * total / (end - start))

    return CumulativeL2()


def _test(series: np.ndarray, start: int, index: int, stop: int) -> float:
    """Student's two-sided t-test of ``series[start:index]`` against ``series[index:stop]``
    (Otava's ``TTestSignificanceTester``); 1.0 when it says nothing (NaN)."""
    from scipy import stats

    left, right = series[start:index], series[index:stop]
    if left.size + right.size <= 2:
        return 1.0
    p = float(stats.ttest_ind(left, right).pvalue)
    return 1.0 if np.isnan(p) else p


def _tested(series: np.ndarray, indexes: list[int]) -> list[ChangePoint]:
    bounds = [0, *indexes, series.size]
    return [ChangePoint(i, bounds[k], bounds[k + 2], _test(series, bounds[k], i, bounds[k + 2]))
            for k, i in enumerate(indexes)]


def merge(series: np.ndarray, indexes: list[int], max_pvalue: float = MAX_PVALUE
          ) -> list[ChangePoint]:
    """Otava's merge step: drop the candidate with the largest p-value while it is at least
    ``max_pvalue``, testing its neighbours again against their new segments."""
    points = _tested(series, sorted(indexes))
    while points:
        weakest = max(range(len(points)), key=lambda k: points[k].pvalue)
        if points[weakest].pvalue < max_pvalue:
            break
        points = _tested(series, [p.index for k, p in enumerate(points) if k != weakest])
    return points


def change_points(values: object, max_pvalue: float = MAX_PVALUE, min_size: int = MIN_SIZE,
                  first_pass_factor: float = FIRST_PASS_FACTOR) -> list[ChangePoint]:
    """The change points of ``values`` (positive numbers in time order; they are compared as
    logs): binary-segmentation candidates at ``first_pass_factor * max_pvalue``, merged at
    ``max_pvalue``. Indexes count the finite positive values only."""
    series = np.asarray(values, dtype=float)
    series = np.log(series[np.isfinite(series) & (series > 0)])
    first_pass = min(0.5, max_pvalue * first_pass_factor)
    return merge(series, candidates(series, first_pass, min_size), max_pvalue)
