"""A node against the fleet campaign by campaign, and against its own past (``benchlib fleet``;
:mod:`benchlib.fleet.health` places the states): each campaign's median over the nodes cancels
what moved the whole fleet that night, a node's campaigns over those medians are the series
its own change points are found in (``benchlib history``'s method), and the medians' own
change points are the whole fleet's moves."""

from __future__ import annotations

import numpy as np
import pandas as pd

import benchlib.analysis.intervals as intervals
from benchlib.fleet import outliers as fleet
from benchlib.vocabulary import CompareVerdict, NodeState


def campaign_means(times: np.ndarray, values: np.ndarray, campaigns: np.ndarray
                    ) -> dict[object, tuple[np.datetime64, float, int]]:
    """A node's undisturbed runs per campaign: its first run's time, the geometric mean of its
    runs and how many (the campaign, not the run, is the unit of the fleet's judgement)."""
    out: dict[object, tuple[np.datetime64, float, int]] = {}
    if not len(values):
        return out
    frame = pd.DataFrame({"time": times, "log": np.log(values), "campaign": campaigns})
    for campaign, group in frame.groupby("campaign", sort=False):
        out[campaign] = (group["time"].min(), float(np.exp(group["log"].mean())), len(group))
    return out


def campaign_medians(rows: list[dict[str, object]], min_nodes: int) -> dict[object, float]:
    """The fleet's speed in each campaign of one configuration: the median over the nodes
    that ran it undisturbed of each node's campaign mean, where at least ``min_nodes`` did.
    A node's campaign against this median cancels whatever moved the whole fleet that night."""
    found: dict[object, list[float]] = {}
    for row in rows:
        for campaign, (_, mean, _) in row.get("_campaigns", {}).items():
            found.setdefault(campaign, []).append(mean)
    return {c: float(np.median(v)) for c, v in found.items() if len(v) >= min_nodes}


def relative_series(row: dict[str, object], medians: dict[object, float]) -> pd.DataFrame:
    """One node's campaigns in time order against the fleet's (:func:`campaign_medians`):
    ``campaign``, ``time`` (UTC), ``value`` (its campaign mean over the fleet's median) and
    ``runs``; the series :func:`benchlib.history.series.segment_changes` reads for the node's
    own past."""
    rows = [(c, pd.Timestamp(t, tz="UTC"), mean / medians[c], runs)
            for c, (t, mean, runs) in row.get("_campaigns", {}).items() if c in medians]
    frame = pd.DataFrame(rows, columns=["campaign", "time", "value", "runs"])
    return frame.sort_values(["time", "campaign"], kind="stable").reset_index(drop=True)


def fleet_moves(rows: list[dict[str, object]], medians: dict[object, float],
                threshold: float) -> str:
    """The changes of the whole fleet (the change points of its median campaign by campaign,
    as ``benchlib history`` finds a node's), in words ('' for none): a step every node took
    (a driver, a firmware) is no node's fault and makes none slow against the fleet, while
    ``history`` lists it on every node."""
    from benchlib.history.series import segment_changes

    first: dict[object, object] = {}
    for row in rows:
        for campaign, (time, _, _) in row.get("_campaigns", {}).items():
            if campaign in medians:
                first[campaign] = min(first.get(campaign, time), time)
    series = pd.DataFrame([(c, pd.Timestamp(first[c], tz="UTC"), m, 1)
                           for c, m in medians.items()],
                          columns=["campaign", "time", "value", "runs"])
    if len(series) < 2:
        return ""
    series = series.sort_values(["time", "campaign"], kind="stable").reset_index(drop=True)
    listed = segment_changes(series, threshold=threshold)["listed"]
    return "; ".join(f"{(p['ratio'] - 1) * 100:+.0f} % ({(p['low'] - 1) * 100:+.0f} % to "
                     f"{(p['high'] - 1) * 100:+.0f} %) from {p['time']:%Y-%m-%d}"
                     for p in listed)


def verdict(row: dict[str, object], medians: dict[object, float], baseline: float,
                    threshold: float, start: pd.Timestamp | None) -> list[object] | None:
    """[state, reason, baseline, ratio, low, high] of a node from its campaigns paired with
    the fleet's; None where fewer than two of its campaigns in the window are paired (the
    runs of one campaign are judged by :func:`_verdict`)."""
    from benchlib.history.series import segment_changes

    series = relative_series(row, medians)
    found = segment_changes(series, threshold=threshold) if len(series) else {}
    own, drifts = found.get("listed", []), found.get("drifts", [])
    latest = own[-1] if own else None
    since = latest["time"] if latest is not None else None
    recent = series
    for bound in (start, since):
        if bound is not None:
            recent = recent[recent["time"] >= bound]
    if len(recent) < 2:
        return None
    ratio, low, high = one_sample(np.log(recent["value"].to_numpy(dtype=float)))
    outlier = (f"; robust z {row['robust_z']:+.1f}, an outlier"
               if abs(row["robust_z"]) > fleet.OUTLIER_Z else "")
    disturbed = f"; {row['disturbed']}" if row["disturbed"] else ""
    begun = f" since {since:%Y-%m-%d}" if since is not None else ""
    against_fleet = high < 1 - threshold
    shown = (f"{ratio:.2f}x the fleet, campaign by campaign (95 % interval {low:.2f}-"
             f"{high:.2f} over its {len(recent)} campaigns{begun} in the window)")
    fell = latest is not None and latest["verdict"] == CompareVerdict.REGRESSION
    past = (f"{(latest['ratio'] - 1) * 100:+.0f} % ({(latest['low'] - 1) * 100:+.0f} % to "
            f"{(latest['high'] - 1) * 100:+.0f} %) against its own past from "
            f"{latest['time']:%Y-%m-%d}" if fell else "")
    slid = [d for d in drifts if d["verdict"] == CompareVerdict.REGRESSION]
    if slid:  # a slow drift whose change so far is known to pass the threshold
        drift = slid[0]
        past = "; ".join(filter(None, [past, (
            f"drifting {drift['per_week'] * 100:+.2f} % a week against its own past since "
            f"{drift['time']:%Y-%m-%d}, {drift['so_far'] * 100:+.0f} % so far")]))
        fell = True
    if against_fleet or fell:
        which = ("against the fleet and its own past" if against_fleet and fell else
                 "against the fleet" if against_fleet else "against its own past")
        return [NodeState.SLOW.value, f"slow {which}: {shown}"
                + (f"; {past}" if past else "")
                + f": more than {threshold * 100:g} % slower{outlier}{disturbed}",
                baseline, ratio, low, high]
    return [NodeState.OK.value, f"{shown}{outlier}{disturbed}", baseline, ratio, low, high]


def one_sample(logs: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """The geometric mean of a node's campaign ratios to the fleet and its t interval."""
    mean = float(logs.mean())
    half = (intervals.t_quantile(level, logs.size - 1) * float(logs.std(ddof=1))
            / np.sqrt(logs.size))
    return float(np.exp(mean)), float(np.exp(mean - half)), float(np.exp(mean + half))
