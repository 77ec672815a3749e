"""The change of a measurement that may be negative (an overhead, a difference: the schema's
:func:`benchlib.records.schema.signed`), NEW against BASE.

A logarithm of such values does not exist, so a speed ratio does not either: the change is the
difference of the sides' means, stated relative to the base's magnitude so that it reads as the
other comparisons do (above 1 is better): ``1 + (base - new) / |base|`` where lower is better,
``1 + (new - base) / |base|`` where higher is. Its 95 % interval is a Welch t interval over the
campaigns' means where each side has several campaigns, else over the runs (judged only beyond
:data:`~benchlib.analysis.campaign_noise.UNKNOWN_FLOOR`, as a comparison of one campaign each).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from benchlib.analysis import intervals
from benchlib.analysis.campaign_noise import UNKNOWN_FLOOR, UNKNOWN_SAID


def values(groups: Sequence[object]) -> list[np.ndarray]:
    """The finite values of each campaign (NaN and infinities cannot be used), empty
    campaigns left out."""
    out = []
    for found in groups:
        kept = np.asarray(found, dtype=float)
        kept = kept[np.isfinite(kept)]
        if kept.size:
            out.append(kept)
    return out


def _welch(a: np.ndarray, b: np.ndarray, level: float) -> tuple[float, float] | None:
    """The difference of means a - b and its half width (None under two values a side)."""
    if a.size < intervals.MIN_RUNS or b.size < intervals.MIN_RUNS:
        return None
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    if se == 0:
        return float(a.mean() - b.mean()), 0.0
    dof = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    return float(a.mean() - b.mean()), intervals.t_quantile(level, dof) * se


def effect(new: Sequence[object], base: Sequence[object], higher_is_better: bool,
           level: float = 0.95) -> dict[str, object]:
    """The change NEW against BASE of a signed measurement (``new`` / ``base``: one array of
    values per campaign) with the keys of :func:`benchlib.analysis.campaign_noise.effect`: the
    :data:`~benchlib.analysis.intervals.HEADLINE` is ``1 + change / |base mean|`` (above 1 is
    better), ``low`` / ``high`` its 95 % interval, ``floor`` where campaigns are not the unit."""
    a, b = values(new), values(base)
    runs = (sum(g.size for g in a), sum(g.size for g in b))
    counts = {"campaigns_a": len(a), "campaigns_b": len(b)}
    if not a or not b:
        return {**intervals.repeats_effect([], []), **counts}
    every_a, every_b = np.concatenate(a), np.concatenate(b)
    scale = abs(float(every_b.mean()))
    sign = 1.0 if higher_is_better else -1.0
    several = len(a) > 1 and len(b) > 1
    found = (_welch(np.array([g.mean() for g in a]), np.array([g.mean() for g in b]), level)
             if several else _welch(every_a, every_b, level))
    center = float(every_a.mean() - every_b.mean()) if found is None else found[0]
    headline = 1 + sign * center / scale if scale > 0 else float("nan")
    said = (f"difference of means on the values (they may be negative), relative to the base's "
            f"|mean| {scale:.4g}; ")
    if found is None or scale == 0:
        why = ("the base's mean is 0: no relative change" if scale == 0 else
               f"{runs[0]} run(s) against {runs[1]}: {intervals.REPEAT_ADVICE}")
        return {intervals.HEADLINE: headline, "low": float("nan"), "high": float("nan"),
                "pairs": 1, "significant": False, "known": False, "runs_a": runs[0],
                "runs_b": runs[1], "method": said + why, **counts}
    half = found[1]
    low, high = sorted((1 + sign * (center - half) / scale, 1 + sign * (center + half) / scale))
    out = {intervals.HEADLINE: headline, "low": low, "high": high, "pairs": 1,
           "significant": bool(low > 1.0 or high < 1.0), "known": True, "runs_a": runs[0],
           "runs_b": runs[1], **counts}
    if several:
        return {**out, "method": said + f"Welch t interval over {len(b)} + {len(a)} campaigns' "
                                        "means (base + new)"}
    return {**out, "floor": UNKNOWN_FLOOR,
            "method": said + f"Welch t interval over {runs[1]} + {runs[0]} runs (base + new); "
                             f"{UNKNOWN_SAID}"}
