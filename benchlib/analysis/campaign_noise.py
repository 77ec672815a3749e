"""The campaign as the unit of noise in comparisons (``benchlib compare``, the report's
comparisons page, :func:`benchlib.compare.regression.compare`).

Runs inside one campaign are not independent samples: the whole campaign moves together (the
node's clocks and thermal state, caches, what ran before). A speed ratio of NEW over BASE is
therefore known only as well as the noise *between campaigns* allows, and its interval is made
so (Kalibera and Jones, "Rigorous benchmarking in reasonable time", ISMM 2013):

- **each side several campaigns**: a hierarchical bootstrap (campaigns resampled, then the runs
  of each) gives the variance of each side's mean log speed; the interval is a t interval with
  the fewer campaigns less one degrees of freedom;
- **a side with one campaign**: its variance is the configuration's between-campaign noise
  (:class:`Noise`), from its own earlier campaigns on the same node (the catalog, or the other
  side's several campaigns): the standard deviation of successive campaigns' mean log speeds
  over the square root of 2, which a step between them barely moves. ``benchlib calibrate``
  runs a campaign several times to make such a history on purpose;
- **one campaign each and no history**: "one campaign each: the noise between campaigns is
  unknown"; the interval is made from the runs (Welch) and a verdict needs its whole interval
  beyond 1 -+ :data:`UNKNOWN_FLOOR` (or the threshold, where larger).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from benchlib.analysis import intervals
from benchlib.analysis.tables import ok
from benchlib.records import flags

#: Without a measure of the noise between campaigns, a verdict needs the whole interval beyond
#: 1 -+ this (docs/measurements.md: on the project's 2-core machine two campaigns of the same
#: params file minutes apart differed by up to 1.18x).
UNKNOWN_FLOOR = 0.15
#: Bootstrap resamples of the hierarchical bootstrap.
RESAMPLES = 2000
#: The fewest earlier campaigns that make a between-campaign noise.
MIN_CAMPAIGNS = 3
UNKNOWN_SAID = "one campaign each: the noise between campaigns is unknown"


@dataclass(frozen=True)
class Noise:
    """A configuration's noise between campaigns: ``sd`` (of a campaign's mean log speed),
    ``campaigns`` it was measured over, ``source`` in words."""

    sd: float
    campaigns: int
    source: str

    @property
    def dof(self) -> int:
        return max(1, self.campaigns - 1)


def between(campaign_means: Sequence[float], source: str) -> Noise | None:
    """The noise between campaigns from campaigns' mean speeds in time order: the root mean
    square of successive differences of their logs over sqrt(2) (von Neumann's estimator: a
    step between campaigns moves one difference only); ``None`` under :data:`MIN_CAMPAIGNS`."""
    logs = np.log(np.asarray(campaign_means, dtype=float))
    logs = logs[np.isfinite(logs)]
    if logs.size < MIN_CAMPAIGNS:
        return None
    return Noise(float(math.sqrt(np.mean(np.diff(logs) ** 2) / 2)), int(logs.size), source)


def _logs(groups: Sequence[object]) -> list[np.ndarray]:
    out = []
    for values in groups:
        logs = np.log(np.asarray(values, dtype=float))
        logs = logs[np.isfinite(logs)]
        if logs.size:
            out.append(logs)
    return out


def _mean(groups: list[np.ndarray]) -> float:
    """A side's mean log speed: the mean of its campaigns' means (each campaign one value)."""
    return float(np.mean([g.mean() for g in groups]))


#: The most random draws :func:`bootstrap_variance` holds at once (8 bytes each: 32 MiB), so
#: that its memory is bounded whatever the number of runs (campaigns of 50,000 runs included).
DRAWS_AT_ONCE = 1 << 22


def bootstrap_variance(groups: list[np.ndarray], seed: int = 0) -> float:
    """The hierarchical bootstrap variance of :func:`_mean`: campaigns drawn with replacement,
    then each drawn campaign's runs with replacement. Only the draws of the campaigns picked
    are made, in chunks of at most :data:`DRAWS_AT_ONCE` draws: memory stays bounded whatever
    the number of runs or campaigns."""
    rng = np.random.default_rng(seed)
    k = len(groups)
    picks = rng.integers(0, k, size=(RESAMPLES, k))
    means = np.empty((RESAMPLES, k))
    for c, logs in enumerate(groups):  # each draw of a campaign resamples its runs anew
        rows, cols = np.nonzero(picks == c)
        chunk = max(1, DRAWS_AT_ONCE // logs.size)
        for start in range(0, rows.size, chunk):
            count = min(chunk, rows.size - start)
            drawn = rng.integers(0, logs.size, size=(count, logs.size))
            means[rows[start:start + count], cols[start:start + count]] = logs[drawn].mean(axis=1)
    return float(means.mean(axis=1).var(ddof=1))


def effect(new: Sequence[object], base: Sequence[object], noise: Noise | None = None,
           level: float = 0.95) -> dict[str, object]:
    """The speed ratio NEW / BASE with campaigns as units: ``new`` and ``base`` hold one array
    of speeds per campaign; ``noise`` is the configuration's between-campaign noise where a side
    has one campaign. :func:`benchlib.analysis.intervals.repeats_effect`'s keys, with
    ``campaigns_a`` / ``campaigns_b``, and ``floor`` (the band a verdict must clear beyond the
    threshold) where the noise between campaigns is unknown."""
    a, b = _logs(new), _logs(base)
    counts = {"campaigns_a": len(a), "campaigns_b": len(b)}
    runs = [sum(g.size for g in a), sum(g.size for g in b)]
    if not a or not b:
        return {**intervals.repeats_effect([], []), **counts}
    if noise is None:  # one side's own several campaigns say how campaigns differ
        several = max((a, b), key=len)
        noise = between([math.exp(g.mean()) for g in several],
                        f"the {len(several)} campaigns of the {'new' if several is a else 'base'}"
                        " side")
    if (len(a) > 1 and len(b) > 1) or noise is not None:
        return {**_campaign_interval(a, b, noise, level, runs), **counts}
    found = intervals.repeats_effect(np.exp(np.concatenate(a)), np.exp(np.concatenate(b)), level)
    if found["known"]:
        unknown = UNKNOWN_SAID if len(a) == len(b) == 1 else (
            f"{len(b)} + {len(a)} campaigns (base + new), too few to know the noise between "
            "campaigns (3 on a side, or the catalog's history, measure it)")
        found["method"] = (f"Welch t interval over {runs[1]} + {runs[0]} runs (base + new); "
                           f"{unknown}")
    return {**found, **counts, "floor": UNKNOWN_FLOOR}


def _campaign_interval(a: list[np.ndarray], b: list[np.ndarray], noise: Noise | None,
                       level: float, runs: list[int]) -> dict[str, object]:
    geomean = math.exp(_mean(a) - _mean(b))
    variances, dofs, said = [], [], []
    for side in (a, b):
        if len(side) > 1:
            variances.append(bootstrap_variance(side))
            dofs.append(len(side) - 1)
        else:
            variances.append(noise.sd ** 2)  # type: ignore[union-attr]
            dofs.append(noise.dof)  # type: ignore[union-attr]
    said.append(f"campaigns as units: {len(b)} + {len(a)} campaigns ({runs[1]} + {runs[0]} "
                "runs, base + new)")
    said.append("hierarchical bootstrap" if len(a) > 1 and len(b) > 1 else
                f"between-campaign noise {noise.sd:.1%} from {noise.source}")  # type: ignore[union-attr]
    half = intervals.t_quantile(level, min(dofs)) * math.sqrt(sum(variances))
    low, high = geomean * math.exp(-half), geomean * math.exp(half)
    per_campaign = [v * len(side) for v, side in zip(variances, (a, b), strict=True)]
    return {intervals.HEADLINE: geomean, "low": low, "high": high, "pairs": 1,
            "significant": bool(low > 1.0 or high < 1.0), "known": True,
            "runs_a": runs[0], "runs_b": runs[1], "method": ", ".join(said),
            "noise_sd": math.sqrt(sum(per_campaign) / 2), "noise_dof": min(dofs)}


#: The most campaigns a side :func:`to_decide` names; beyond, it says the change is too small.
MAX_TO_DECIDE = 50


def more_campaigns(found: dict[str, object], threshold: float, level: float = 0.95
                   ) -> tuple[int | None, bool]:
    """How many more campaigns make an undecided comparison's 95 % interval at most half the
    threshold wide each way (``found``: :func:`effect`'s), and whether BASE needs them too
    (``(n, False)``: of NEW; ``(n, True)``: of each side); ``(None, True)`` where the noise
    between campaigns is unknown or more than :data:`MAX_TO_DECIDE` a side would be needed."""
    sd = found.get("noise_sd")
    if not isinstance(sd, float) or not math.isfinite(sd):
        return None, True
    base, new = int(found.get("campaigns_b", 1)), int(found.get("campaigns_a", 1))
    target = math.log1p(threshold / 2)

    def half(n_base: int, n_new: int) -> float:
        dof = max(int(found.get("noise_dof", 1)), min(n_base, n_new) - 1, 1)
        return intervals.t_quantile(level, dof) * sd * math.sqrt(1 / n_base + 1 / n_new)

    for each_side in (False, True):
        for more in range(1, MAX_TO_DECIDE + 1):
            if half(base + more * each_side, new + more) <= target:
                return more, each_side
    return None, True


def to_decide(found: dict[str, object], threshold: float, level: float = 0.95) -> str:
    """What would decide an undecided comparison, in words (:func:`more_campaigns`); where the
    noise between campaigns is unknown (one campaign each, no history), how to know it."""
    sd = found.get("noise_sd")
    if not isinstance(sd, float) or not math.isfinite(sd):
        return (f"{MIN_CAMPAIGNS} campaigns a side, or benchlib calibrate, measure the noise "
                "between campaigns and say how many would tell")
    more, each_side = more_campaigns(found, threshold, level)
    said = f" (noise between campaigns {sd:.1%})"
    if more is None:
        return (f"more than {MAX_TO_DECIDE} campaigns a side would be needed{said}: a change of "
                f"{threshold:.0%} is within this configuration's noise")
    return (f"{more} more campaign{'' if more == 1 else 's'} of "
            f"{'each side' if each_side else 'NEW'} would tell{said}")


def from_history(history: object, metric: str, nodes: Sequence[str], node_column: str = "host"
                 ) -> Noise | None:
    """The between-campaign noise of one configuration from its other runs (``history``: a
    frame of that configuration's runs, e.g. the catalog's) on ``nodes``: per node, its
    campaigns' (:func:`units`) geometric mean speeds in time order (:func:`between`), contended
    and throttled runs left out; pooled over the nodes (the root mean of their variances,
    weighted by campaigns). ``None`` with too few campaigns."""
    import pandas as pd

    frame = history if isinstance(history, pd.DataFrame) else pd.DataFrame(history)
    if frame.empty or metric not in frame:
        return None
    if node_column in frame and nodes:
        frame = frame[frame[node_column].astype(str).isin([str(n) for n in nodes])]
    if "flags" in frame:  # contended and throttled runs say nothing of the node's own noise
        frame = frame[pd.Series([not flags.disturbed([text]) for text in frame["flags"]],
                                index=frame.index, dtype=bool)]
    if frame.empty:  # (an empty list above would keep no column, not no row)
        return None
    frame = frame.assign(_unit=units(frame))
    values = pd.to_numeric(frame[metric], errors="coerce")
    when = (frame["time"] if "time" in frame else
            pd.to_datetime(frame.get("started_at", pd.Series(None, index=frame.index)), utc=True,
                           errors="coerce", format="ISO8601"))
    frame = frame.assign(_speed=values.where(values > 0), _time=when)
    found = []
    groups = frame.groupby(node_column, sort=False) if node_column in frame else [("", frame)]
    for node, runs in groups:
        means = (runs.dropna(subset=["_speed"]).groupby("_unit", sort=False)
                 .agg(time=("_time", "min"), speed=("_speed", intervals.geometric_mean))
                 .sort_values("time", kind="stable"))
        noise = between(means["speed"].to_numpy(), str(node))
        if noise is not None:
            found.append(noise)
    if not found:
        return None
    campaigns = sum(n.campaigns for n in found)
    pooled = math.sqrt(sum(n.sd ** 2 * n.dof for n in found) / sum(n.dof for n in found))
    return Noise(pooled, campaigns - len(found) + 1,
                 f"{campaigns} other campaigns of this configuration on "
                 f"{', '.join(n.source for n in found)}")


def units(runs: object) -> object:
    """The campaign each run of ``runs`` (a frame) belongs to, as a key: its ``campaign`` name
    and the folder its notebook was written in (``source``), so one name reused night after
    night (``campaign: fleet-nightly`` under ``outputs/nightly/<date>/``) is one campaign a
    night; a run with neither is one of its own."""
    import pandas as pd

    frame = runs if isinstance(runs, pd.DataFrame) else pd.DataFrame(runs)
    empty = pd.Series("", index=frame.index, dtype="string")
    name = (frame["campaign"].astype("string").fillna("") if "campaign" in frame else empty)
    folder = (frame["source"].astype("string").fillna("").map(
        lambda text: text.rsplit("/", 1)[0] if "/" in text else "") if "source" in frame
        else empty)
    key = name + "\x1f" + folder
    alone = (name == "") & (folder == "")
    own = pd.Series([f"\x1frun {i}" for i in range(len(frame))], index=frame.index,
                    dtype="string")
    return key.where(~alone, own)


def per_campaign(runs: object, speeds: Callable[..., np.ndarray], metric: str
                 ) -> list[np.ndarray]:
    """One array of ``speeds(runs, metric)`` per campaign of ``runs`` (a frame; :func:`units`)."""
    if not len(runs):  # type: ignore[arg-type]
        return [speeds(runs, metric)]
    return [speeds(group, metric) for _, group in runs.groupby(units(runs), sort=False)]  # type: ignore[attr-defined]


def earlier_runs(history: object, keys: list[str], new: object) -> dict[tuple, object]:
    """``history``'s finished runs per configuration (the ``keys`` values), less the new
    side's campaigns: where :func:`from_history` reads each configuration's noise."""
    if history is None or history.empty or any(k not in history for k in keys):  # type: ignore[attr-defined,operator]
        return {}
    earlier = ok(history)  # type: ignore[arg-type]
    earlier = earlier[~units(earlier).isin(set(units(new)))]  # type: ignore[attr-defined]
    if not keys:
        return {(): earlier}
    return {(k if isinstance(k, tuple) else (k,)): g
            for k, g in earlier.groupby(keys, dropna=False, sort=False)}


def _floored(said: object) -> int:
    import pandas as pd

    return int(pd.Series(said, dtype=object).astype(str).str.contains(UNKNOWN_SAID).sum())


def floor_note(said: object) -> str:
    """`` (15% for the 2 with one campaign each and no history)``: how far the comparisons
    (their ``interval`` texts) judged with an unknown noise between campaigns were judged."""
    floored = _floored(said)
    return (f" ({UNKNOWN_FLOOR:.0%} for the {floored} with one campaign each and no history)"
            if floored else "")


def floor_lines(said: object) -> list[str]:
    """One line counting the comparisons (their ``interval`` texts) judged beyond the floor
    because the noise between campaigns was unknown; none when there are none."""
    floored = _floored(said)
    if not floored:
        return []
    return [f"{floored} configuration{'' if floored == 1 else 's'} with {UNKNOWN_SAID}: judged "
            f"only beyond {UNKNOWN_FLOOR:.0%} (benchlib calibrate, or earlier campaigns in the "
            "catalog, say how much campaigns differ)"]
