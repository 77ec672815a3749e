"""Change points of one series, by Apache Otava's method: candidates from binary segmentation,
then Otava's merge step, which drops the weakest candidate (Student's t-test between the
segments on either side) until every one left has p below ``max_pvalue`` (default 0.001) and
changes the mean by at least ``min_magnitude`` (Otava's ``min_magnitude``, default 0).

Otava (formerly Hunter; Fleming et al., "Hunter: Using Change Point Detection to Hunt for
Performance Regressions", ICPE 2023) splits with E-divisive and a t-test at ten times the final
level (its "weak" change points), then merges. ``apache-otava`` itself does not install
cleanly beside benchlib (0.8.0 pins numpy 2.2.0 and scipy below 1.17 and brings BigQuery,
Slack and PostgreSQL clients), nor does MongoDB's ``signal-processing-algorithms`` (numpy
below 2), so:

- **values as given**: the series is tested on its own values, as Otava does (zero and negative
  values are values like any other); a NaN or infinite value is refused (``ValueError`` naming
  its position), never dropped. Every index is a position in the series given.
- **outliers**: a single odd point (or two in a row) lies more than :data:`OUTLIER_Z` noise
  standard deviations beyond both the median of the three points before it and that of the
  three after it, on the same side, where those two agree (a two-sided Hampel filter, which a
  step does not trip: around a step the two sides differ). It is named in
  :attr:`Detection.outliers` and left out of the segmentation and the tests, so it can neither
  make nor move a change point. The newest ``min_size - 1`` points are never outliers: what they
  start may be a change ("too early to tell").
- **candidates**: binary segmentation with the l2 cost (a shift of the mean) from cumulative
  sums, each segment's every split at once: a segment is split where the gain exceeds
  ``z^2 * sigma^2``, with z the two-sided normal quantile of the first-pass level (Otava's ten
  times ``max_pvalue``) and sigma the series' noise estimated from its successive differences
  (median absolute deviation, robust to steps; where most differences are 0, as in a series of
  constant stretches, their mean absolute deviation): a split's gain is ``sigma^2`` times the
  squared z statistic of the two sides' means, so each candidate passes a z-test at the first
  -pass level, as Otava's weak change points pass a t-test there;
- **merge**: Otava's ``merge``: while the candidate with the largest p-value (a two-sided Student
  t-test of its left segment against its right one, each bounded by the neighbouring candidates;
  two constant segments of different means: p = 0) has p of at least ``max_pvalue``, or else the
  one with the smallest relative change is under ``min_magnitude``, it is removed and only its
  two neighbours are tested again (a heap: the merge grows as k log k in the candidates).

Segments hold at least ``min_size`` points (3). The parameters are calibrated by
``benchmarks/calibrate_history.py``; the conformance with Otava's and MongoDB's own test series
is ``tests/test_change_conformance.py`` (docs/acceptance.md).
"""

from __future__ import annotations

import heapq
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

#: Otava's default significance of a change point.
MAX_PVALUE = 0.001
#: Otava's first pass tests candidates at this many times ``max_pvalue``.
FIRST_PASS_FACTOR = 10
#: The fewest points a segment holds: a change is called from its third point on (two a side
#: make a Welch interval, but one on about one degree of freedom, too wide to judge;
#: ``benchmarks/calibrate_history.py``).
MIN_SIZE = 3
#: Median absolute deviation to the standard deviation of a normal distribution.
MAD_TO_SD = 1.4826
#: Mean absolute deviation to the standard deviation of a normal distribution.
MEAN_AD_TO_SD = math.sqrt(math.pi / 2)
#: A point this many noise standard deviations from the median of its neighbourhood is an outlier.
OUTLIER_Z = 6.0
#: Points each side of the Hampel filter's window.
OUTLIER_WINDOW = 3


@dataclass(frozen=True)
class ChangePoint:
    """A change point: ``index`` is the first point of the new segment; ``start`` / ``stop``
    bound the segments on either side (``series[start:index]``, ``series[index:stop]``, less
    :attr:`Detection.outliers`); ``pvalue`` is the t-test between them, ``before`` / ``after``
    the segments' means and ``magnitude`` the relative change ``after / before - 1``."""

    index: int
    start: int
    stop: int
    pvalue: float
    before: float = float("nan")
    after: float = float("nan")

    @property
    def magnitude(self) -> float:
        return relative_change(self.before, self.after)


@dataclass(frozen=True)
class Detection:
    """What :func:`detect` found: ``points`` (each significant and at least ``min_magnitude``),
    ``small`` (significant at ``max_pvalue`` but under ``min_magnitude``: counted, not listed),
    ``outliers`` (positions left out) and ``noise`` (the standard deviation used)."""

    points: list[ChangePoint]
    small: list[ChangePoint] = field(default_factory=list)
    outliers: list[int] = field(default_factory=list)
    noise: float = 0.0


def relative_change(before: float, after: float) -> float:
    """``after / before - 1``, by the size of ``before`` (infinite from 0 to anything else)."""
    if before == 0:
        return 0.0 if after == 0 else math.copysign(math.inf, after)
    return (after - before) / abs(before)


def as_series(values: object, name: str = "change_points") -> np.ndarray:
    """``values`` as a float array in the order given; a NaN or infinite value is a
    ``ValueError`` naming its position (nothing is dropped)."""
    given = np.asarray(values)
    if given.ndim != 1:
        raise ValueError(f"{name}: give one series (a sequence of numbers), not an array of "
                         f"{given.ndim} dimensions")
    if given.dtype.kind not in "biuf" and not (given.dtype.kind == "O" and all(
            (isinstance(v, int | float | np.number) and not isinstance(v, bool)) or v is None
            for v in given)):
        raise ValueError(f"{name}: the values must be numbers, not {given.dtype} values")
    try:
        series = given.astype(float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}: the values must be numbers ({error})") from None
    bad = np.flatnonzero(~np.isfinite(series))
    if bad.size:
        shown = ", ".join(f"{int(i)} ({series[i]})" for i in bad[:5])
        raise ValueError(f"{name}: {bad.size} value{'' if bad.size == 1 else 's'} not a finite "
                         f"number, at position{'' if bad.size == 1 else 's'} {shown}"
                         f"{' ...' if bad.size > 5 else ''}: leave failed runs out (or mark "
                         "them failed) before looking for change points")
    return series


def noise(series: np.ndarray) -> float:
    """The series' noise (standard deviation) from its successive differences, which are 0 on
    average where the series holds still: their median absolute size over sqrt(2), which a few
    steps do not move (and which values that alternate do: there every difference is large);
    where more than half the differences are 0 (constant stretches), their mean absolute size;
    0 when all are."""
    steps = np.abs(np.diff(np.asarray(series, dtype=float)))
    if steps.size < 2:
        return 0.0
    mad = float(np.median(steps))
    if mad > 0:
        return MAD_TO_SD * mad / math.sqrt(2)
    return MEAN_AD_TO_SD * float(steps.mean()) / math.sqrt(2)


def outliers(series: np.ndarray, sigma: float, min_size: int = MIN_SIZE,
             z: float = OUTLIER_Z) -> list[int]:
    """Positions more than ``z * sigma`` beyond both the median of the :data:`OUTLIER_WINDOW`
    points before them and that of the points after them, on the same side, where those two
    medians agree within ``z * sigma`` (one level around an odd point; a step departs from one
    side only), the first point and the newest ``min_size - 1`` excepted; and only where fewer
    than ``min_size`` points in a row lie beyond that level (three make a segment)."""
    n, w = series.size, OUTLIER_WINDOW
    if sigma <= 0 or n < 3:
        return []
    padded = np.concatenate((np.full(w, np.nan), series, np.full(w, np.nan)))
    with warnings.catch_warnings():  # an all-NaN side (the ends) is "no neighbours": no outlier
        warnings.simplefilter("ignore", RuntimeWarning)
        before = np.nanmedian(np.lib.stride_tricks.sliding_window_view(padded[:n + w - 1], w),
                              axis=1)[:n]
        after = np.nanmedian(np.lib.stride_tricks.sliding_window_view(padded[w + 1:], w),
                             axis=1)[:n]
    margin = z * sigma
    odd = ((series > np.fmax(before, after) + margin)
           | (series < np.fmin(before, after) - margin))
    odd &= np.abs(before - after) <= margin  # both sides one level (NaN at the ends: False)
    odd[max(0, n - (min_size - 1)):] = False
    found = set()
    for i in np.flatnonzero(odd):  # points beyond the level in a row: fewer than min_size odd,
        level = (before[i] + after[i]) / 2  # min_size or more a segment (change points)
        side = np.sign(series[i] - level)
        away = np.sign(series - level) * side * np.abs(series - level) > margin
        start = stop = int(i)
        while start > 0 and away[start - 1]:
            start -= 1
        while stop < n - 1 and away[stop + 1]:
            stop += 1
        if stop - start + 1 < min_size:
            found.update(j for j in range(start, stop + 1) if odd[j] or j == i)
    return sorted(int(i) for i in found)


class _Sums:
    """Cumulative sums of a (centred) series: any segment's mean and squared deviations in
    constant time."""

    def __init__(self, series: np.ndarray) -> None:
        centred = series - (series.mean() if series.size else 0.0)
        self.sums = np.concatenate(([0.0], np.cumsum(centred)))
        self.squares = np.concatenate(([0.0], np.cumsum(centred ** 2)))
        self.offset = float(series.mean()) if series.size else 0.0
        scale = float(np.abs(centred).max()) if series.size else 0.0
        self.tiny = (1e-9 * scale) ** 2  # a variance this small is rounding, not noise

    def mean(self, start: int, stop: int) -> float:
        return float((self.sums[stop] - self.sums[start]) / (stop - start))

    def deviations(self, start: int, stop: int) -> float:
        total = self.sums[stop] - self.sums[start]
        return max(0.0, float(self.squares[stop] - self.squares[start]
                              - total * total / (stop - start)))

    def pvalue(self, start: int, index: int, stop: int) -> float:
        """Student's two-sided t-test of ``[start, index)`` against ``[index, stop)`` (Otava's
        ``TTestSignificanceTester``): 0 for two constant segments of different means, 1 when
        nothing can be said."""
        from scipy import stats

        left, right = index - start, stop - index
        if left < 1 or right < 1 or left + right <= 2:
            return 1.0
        difference = self.mean(index, stop) - self.mean(start, index)
        pooled = (self.deviations(start, index) + self.deviations(index, stop)) / (left + right - 2)
        if pooled <= self.tiny:
            return 0.0 if difference * difference > self.tiny else 1.0
        t = difference / math.sqrt(pooled * (1 / left + 1 / right))
        return float(2 * stats.t.sf(abs(t), left + right - 2))

    def point(self, start: int, index: int, stop: int) -> ChangePoint:
        return ChangePoint(index, start, stop, self.pvalue(start, index, stop),
                           self.mean(start, index) + self.offset,
                           self.mean(index, stop) + self.offset)


def candidates(series: np.ndarray, first_pass: float, min_size: int = MIN_SIZE) -> list[int]:
    """Otava's weak change points: binary segmentation (l2 cost) with the penalty that makes
    each split a z-test at level ``first_pass`` (see the module docstring)."""
    from scipy import stats

    n = series.size
    if n < 2 * min_size:
        return []
    sigma = noise(series)
    sums = _Sums(series)
    penalty = (stats.norm.isf(first_pass / 2) * sigma) ** 2 if sigma > 0 else sums.tiny * n
    found, stack = [], [(0, n)]
    while stack:
        start, stop = stack.pop()
        if stop - start < 2 * min_size:
            continue
        splits = np.arange(start + min_size, stop - min_size + 1)
        left, right = splits - start, stop - splits
        left_sum = sums.sums[splits] - sums.sums[start]
        total = sums.sums[stop] - sums.sums[start]
        gain = (left_sum ** 2 / left + (total - left_sum) ** 2 / right
                - total * total / (stop - start))
        best = int(np.argmax(gain))
        if gain[best] > penalty:
            split = int(splits[best])
            found.append(split)
            stack += [(start, split), (split, stop)]
    return sorted(found)


def merge(series: np.ndarray, indexes: list[int], max_pvalue: float = MAX_PVALUE,
          min_magnitude: float = 0.0) -> list[ChangePoint]:
    """Otava's merge step: drop the candidate with the largest p-value while it is at least
    ``max_pvalue`` (then the one with the smallest relative change while it is under
    ``min_magnitude``), testing its two neighbours again against their new segments."""
    sums = _Sums(series)
    cuts = [0, *sorted(indexes), series.size]
    alive = [True] * len(cuts)
    before = list(range(-1, len(cuts) - 1))
    after = list(range(1, len(cuts) + 1))
    version = [0] * len(cuts)

    def tested(k: int) -> ChangePoint:
        return sums.point(cuts[before[k]], cuts[k], cuts[after[k]])

    def weakness(point: ChangePoint) -> tuple[int, float] | None:
        if point.pvalue >= max_pvalue:
            return (0, -point.pvalue)
        size = abs(point.magnitude)
        if size < min_magnitude:
            return (1, size)
        return None

    heap: list[tuple[tuple[int, float], int, int]] = []
    points: dict[int, ChangePoint] = {}

    def push(k: int) -> None:
        version[k] += 1
        points[k] = tested(k)
        weak = weakness(points[k])
        if weak is not None:
            heapq.heappush(heap, (weak, k, version[k]))

    for k in range(1, len(cuts) - 1):
        push(k)
    while heap:
        _, k, seen = heapq.heappop(heap)
        if not alive[k] or seen != version[k]:
            continue
        alive[k] = False
        left, right = before[k], after[k]
        after[left], before[right] = right, left
        for neighbour in (left, right):
            if 0 < neighbour < len(cuts) - 1:
                push(neighbour)
    return [points[k] for k in range(1, len(cuts) - 1) if alive[k]]


def detect(values: object, max_pvalue: float = MAX_PVALUE, min_size: int = MIN_SIZE,
           min_magnitude: float = 0.0, first_pass_factor: float = FIRST_PASS_FACTOR
           ) -> Detection:
    """The change points of ``values`` (numbers in time order, compared as given), its changes
    under ``min_magnitude`` (counted) and its outliers (left out); see the module docstring.
    Every index is a position in ``values``."""
    _check_parameters(max_pvalue, min_size, min_magnitude, first_pass_factor)
    given = as_series(values)
    scale = float(np.abs(given).max()) if given.size else 0.0
    scale = scale if scale > 0 else 1.0
    series = given / scale  # tested in units of its largest value: no overflow at 1e200
    sigma = noise(series)
    odd = outliers(series, sigma, min_size)
    kept = np.setdiff1d(np.arange(series.size), odd) if odd else np.arange(series.size)
    values_kept = series[kept]
    first_pass = min(0.5, max_pvalue * first_pass_factor)
    found = candidates(values_kept, first_pass, min_size)
    significant = merge(values_kept, found, max_pvalue)
    listed = (merge(values_kept, [p.index for p in significant], max_pvalue, min_magnitude)
              if min_magnitude > 0 else significant)
    chosen = {p.index for p in listed}
    small = [p for p in significant if p.index not in chosen]

    def position(i: int) -> int:
        return int(kept[i]) if i < kept.size else int(series.size)

    def placed(point: ChangePoint) -> ChangePoint:
        return ChangePoint(position(point.index), position(point.start) if point.start else 0,
                           position(point.stop), point.pvalue, point.before * scale,
                           point.after * scale)

    return Detection([placed(p) for p in listed], [placed(p) for p in small], odd,
                     sigma * scale)


def _check_parameters(max_pvalue: float, min_size: int, min_magnitude: float,
                      first_pass_factor: float) -> None:
    """ValueError naming the parameter and what it may be."""
    if not (isinstance(max_pvalue, int | float) and 0 < max_pvalue < 1):
        raise ValueError(f"max_pvalue {max_pvalue!r}: give a probability between 0 and 1 "
                         f"(default {MAX_PVALUE})")
    if not (isinstance(min_size, int) and not isinstance(min_size, bool) and min_size >= 1):
        raise ValueError(f"min_size {min_size!r}: give a whole number of points, 1 or more "
                         f"(default {MIN_SIZE})")
    if not (isinstance(min_magnitude, int | float) and 0 <= min_magnitude < math.inf):
        raise ValueError(f"min_magnitude {min_magnitude!r}: give a relative change, 0 or more "
                         "(0.05 = 5 %)")
    if not (isinstance(first_pass_factor, int | float) and 1 <= first_pass_factor < math.inf):
        raise ValueError(f"first_pass_factor {first_pass_factor!r}: give 1 or more (default "
                         f"{FIRST_PASS_FACTOR})")


def change_points(values: object, max_pvalue: float = MAX_PVALUE, min_size: int = MIN_SIZE,
                  first_pass_factor: float = FIRST_PASS_FACTOR, min_magnitude: float = 0.0
                  ) -> list[ChangePoint]:
    """The change points of ``values`` (:func:`detect`'s ``points``): binary-segmentation
    candidates at ``first_pass_factor * max_pvalue``, merged at ``max_pvalue`` and
    ``min_magnitude``, outliers left out. Indexes are positions in ``values``."""
    return detect(values, max_pvalue, min_size, min_magnitude, first_pass_factor).points
