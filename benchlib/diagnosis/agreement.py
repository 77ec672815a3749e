"""A diagnosis names a cause only where the repeats agree on it.

A step of the waterfall whose 95 % interval says "loss" is named as a loss only when the loss
is at least :data:`~benchlib.vocabulary.DEFAULT_THRESHOLD` of the speed before it (the whole
interval beyond it) and it holds in each half of the repeats taken in time order (the first
runs of each rung against the first of the other, the later against the later: a disturbance
that came and went shows as halves that disagree). Otherwise the step says what it is:
``small loss`` (a loss known, under the threshold) or ``cannot tell`` (the halves disagree),
with the rungs to re-run. A diagnosis that is right one time in two is worse than "cannot tell".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import benchlib.analysis.intervals as intervals
from benchlib.vocabulary import DEFAULT_THRESHOLD

LOSS = "loss"
SMALL_LOSS = "small loss"
CANNOT_TELL = "cannot tell"


def halves(speeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A rung's runs (in the order they started) split into its earlier and later half (the
    middle run of an odd count in both)."""
    middle = speeds.size // 2
    return speeds[:middle + speeds.size % 2], speeds[middle:]


def confirmed(upper: np.ndarray, lower: np.ndarray, low: float,
              threshold: float = DEFAULT_THRESHOLD) -> tuple[str, str]:
    """The verdict of a step whose interval says loss (``low``: the low end of the ratio of
    speeds before / after), and why it is not a named loss ('' when it is)."""
    share_low = 1 - 1 / low
    if share_low < threshold:
        return SMALL_LOSS, (f"known to lose at least {share_low:.0%}, not {threshold:.0%}: "
                            "not named as a cause")
    if upper.size < 2 or lower.size < 2:
        return LOSS, ""
    shares = [1 - intervals.geometric_mean(b) / intervals.geometric_mean(a)
              for a, b in zip(halves(upper), halves(lower), strict=True)]
    if min(shares) >= threshold:
        return LOSS, ""
    return CANNOT_TELL, (f"the earlier half of the repeats loses {shares[0]:.0%}, the later "
                         f"{shares[1]:.0%}: the loss does not hold in both")


def doubtful(steps: pd.DataFrame) -> pd.DataFrame:
    """The steps that cannot tell (their halves disagree)."""
    if not len(steps) or "verdict" not in steps:
        return steps.iloc[0:0]
    return steps[steps["verdict"] == CANNOT_TELL]


def cannot_tell_text(steps: pd.DataFrame, biggest: pd.Series | None) -> str:
    """Why no cause is named where a step that cannot tell may lose as much as the biggest
    named loss (or none is named): the steps, their halves and the rungs to re-run; ''
    where no such step is."""
    unsure = doubtful(steps)
    if biggest is not None:
        unsure = unsure[unsure["loss"] >= float(biggest["loss"])]
    if not len(unsure):
        return ""
    named = "; ".join(f"{row['step']} ({row['doubt']})" for _, row in unsure.iterrows())
    rungs = sorted({str(r) for _, row in unsure.iterrows() for r in (row["upper"], row["lower"])})
    return (f"Cannot tell which step loses the most: {named}. Re-run the rungs "
            f"{', '.join(rungs)} on an idle node (the same command resumes the campaign).")
