"""History with change points (``benchlib history``, the report's History page): each
configuration's runs on each node (``host``) in the order they started (``started_at``; records
without it by their files' times, :func:`benchlib.analysis.run_order.run_times`), their change
points by Otava's method (:mod:`benchlib.history.change_points`), and for each the speed
before and after with a 95 % interval and what changed in the node's environment then
(:mod:`benchlib.history.env_changes`).

A configuration is the configuration columns less where and when a run was made
(:func:`benchlib.analysis.tables.config_columns` less :data:`~benchlib.compare.comparable.WHERE`).
Disturbed runs (``contended``, ``throttled``: :data:`benchlib.records.flags.DISTURBED`) are
left out of the series and counted. The change at a change point is the ratio of the geometric
means of the runs after it and before it, each side bounded by the neighbouring change points,
with the between-runs Welch t interval of :func:`benchlib.analysis.intervals.repeats_effect`,
and its verdict is :func:`benchlib.compare.regression.verdict`'s: ``regression`` when the whole
interval of the speed ratio is below 1 - ``threshold``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

import benchlib.analysis.campaign_noise as campaign_noise
import benchlib.analysis.intervals as intervals
from benchlib.analysis.gate import DRIFT
from benchlib.analysis.metrics import require_columns, require_fraction, require_metric
from benchlib.analysis.run_order import ordered_by, run_times
from benchlib.analysis.tables import config_columns, ok
from benchlib.compare.comparable import WHERE
from benchlib.compare.regression import higher_is_better, verdict
from benchlib.errors import InputError
from benchlib.history import change_points as change_detection
from benchlib.history import drift as drift_model
from benchlib.history import env_changes
from benchlib.history.change_points import MAX_PVALUE, MIN_SIZE
from benchlib.records import configuration, flags, schema
from benchlib.vocabulary import DEFAULT_THRESHOLD, CompareVerdict

#: The column that names the node a run was made on.
NODE = "host"
#: The node of runs whose records name none.
UNKNOWN_NODE = "an unnamed host"
#: The largest ``min_size`` (campaigns either side of a change point): beyond any history.
MAX_MIN_SIZE = 100_000
#: The columns of :func:`change_points`' table, in order (the configuration columns follow).
COLUMNS = ("configuration", "node", "time", "before", "after", "ratio", "low", "high",
           "verdict", "pvalue", "campaigns_before", "campaigns_after", "runs_before",
           "runs_after", "changed", "interval")


@dataclass(frozen=True)
class ChangePoints:
    """What :func:`change_points` found: its ``table`` (one row per listed change point) and
    what was looked at and left out: the configuration x node histories (``series``), their
    ``runs`` and ``campaigns``, the ``disturbed`` and ``failed`` runs left out, the shifts not
    listed (``small``: under the threshold, ``uncertain``: an interval that does not clear it),
    the ``outliers`` campaigns and the newest ones too ``early`` to tell (one dict each), how the
    runs were ``ordered_by``, and the ``metric``, its ``unit``, ``threshold`` and ``min_size``.
    ``campaigns`` counts each campaign once (one campaign of 14 configurations is 1);
    ``points`` the values the method read, one per campaign in each history (14)."""

    table: pd.DataFrame
    metric: str = "throughput"
    unit: str = ""
    threshold: float = DEFAULT_THRESHOLD
    min_size: int = MIN_SIZE
    series: int = 0
    runs: int = 0
    campaigns: int = 0
    points: int = 0
    disturbed: int = 0
    failed: int = 0
    small: int = 0
    uncertain: int = 0
    outliers: tuple[dict, ...] = ()
    early: tuple[dict, ...] = ()
    ordered_by: str = ""
    #: runs dated after now (a wrong clock), left out: ``node``, ``time``, ``runs`` per node and day
    future: tuple[dict, ...] = ()
    #: histories long enough to hold a change point (``2 * min_size`` campaigns): 0 judged nothing
    judged: int = 0
    #: slow drifts, one per history at most (:mod:`benchlib.history.drift`): ``configuration``,
    #: ``node``, ``time`` (its start), ``per_week``, ``low``, ``high``, ``so_far``, ``verdict``, ...
    drifts: tuple[dict, ...] = ()


def configuration_columns(df: pd.DataFrame, by: Sequence[str] | None = None) -> list[str]:
    """The columns that make a configuration: ``by``, else the configuration columns less
    where and when a run was made."""
    return list(by) if by is not None else config_columns(df, exclude=(*WHERE, NODE))


def _labels(runs: pd.DataFrame, keys: list[str]) -> pd.Series:
    """:func:`~benchlib.records.configuration.label` of each run, made once per
    configuration."""
    if not len(runs):
        return pd.Series(dtype=object, index=runs.index)
    if not keys:
        return configuration.label(runs, keys)
    text = runs[keys].astype(str)
    distinct = text.drop_duplicates()
    named = dict(zip(map(tuple, distinct.to_numpy()), configuration.label(runs.loc[distinct.index], keys),
                     strict=True))
    return pd.Series([named[k] for k in map(tuple, text.to_numpy())], index=runs.index)


def series(df: pd.DataFrame, metric: str = "throughput", by: Sequence[str] | None = None,
           now: pd.Timestamp | None = None) -> pd.DataFrame:
    """Every finished run with a ``metric`` value, in time order within each configuration and
    node: the configuration columns, ``configuration`` (:func:`label`), ``node``, ``time``
    (UTC), ``metric``, ``disturbed`` (contended or throttled: left out of the change points),
    ``future`` (dated after ``now``, default the present: a node whose clock is wrong; left out
    too) and the environment columns (:func:`~benchlib.analysis.run_order.ordered_by` says how the
    runs were ordered)."""
    require_metric(df, metric, "change_points", judged=True)
    require_columns(df, by, "change_points")
    runs = ok(df)
    keys = configuration_columns(runs, by)
    keep = [*keys, *(c for c in (NODE, metric, "flags", "campaign", "source") if c in runs),
            *env_changes.columns(runs)]
    out = runs[list(dict.fromkeys(keep))].copy()
    out[metric] = pd.to_numeric(out[metric], errors="coerce")
    values = out[metric].to_numpy(dtype=float)
    out["failed"] = ~(np.isfinite(values) & (values > 0))
    out["node"] = (runs[NODE].astype("string").fillna(UNKNOWN_NODE).replace("", UNKNOWN_NODE)
                   if NODE in runs else UNKNOWN_NODE)
    out["time"] = run_times(runs)
    out["future"] = out["time"] > (now if now is not None else pd.Timestamp.now(tz="UTC"))
    out["disturbed"] = [bool(flags.disturbed([text]))
                        for text in out.get("flags", pd.Series("", index=out.index))]
    out["configuration"] = _labels(out, keys)
    out = out.sort_values(["configuration", "node", "time"], kind="stable").reset_index(drop=True)
    return out


def _speed_effect(after: np.ndarray, before: np.ndarray, metric: str) -> tuple[dict, dict]:
    """The change of ``metric`` (after / before) and of the speed (inverted for ``time_*``),
    from one value per campaign on either side."""
    found = intervals.repeats_effect(after, before, unit="campaign")
    if higher_is_better(metric):
        return found, found
    speed = intervals.repeats_effect(1.0 / after, 1.0 / before, unit="campaign")
    return found, speed


def campaigns(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per campaign of ``runs`` (one configuration on one node, in time order, ties by
    name; :func:`benchlib.analysis.campaign_noise.units`: a campaign name and the folder its runs
    were written in, so one name reused night after night is one campaign a night):
    ``campaign``, ``time`` (its first run), ``value``
    (the geometric mean of ``metric`` over its runs), ``runs``, ``spread`` (the standard
    deviation of its runs' log values, 0 for one run) and the environment columns of its first
    run. Runs of one campaign move together (the node's state, caches, clocks): the campaign,
    not the run, is the unit of the history's noise."""
    unit = campaign_noise.units(runs)
    logs = np.log(runs[metric].to_numpy(dtype=float))
    frame = runs.assign(_unit=unit.to_numpy(), _log=logs)
    grouped = frame.groupby("_unit", sort=False)
    first = grouped.head(1).set_index("_unit")
    named = (first["campaign"].astype("string").fillna("") if "campaign" in first
             else pd.Series("", index=first.index, dtype="string"))
    out = pd.DataFrame({
        "campaign": named.where(named != "", first.index.str.replace("\x1f", "")).to_numpy(),
        "time": grouped["time"].min().reindex(first.index).to_numpy(),
        "value": np.exp(grouped["_log"].mean().reindex(first.index).to_numpy()),
        "runs": grouped.size().reindex(first.index).to_numpy(),
        "spread": grouped["_log"].std(ddof=1).reindex(first.index).fillna(0.0).to_numpy()})
    for column in env_changes.columns(runs):
        out[column] = first[column].to_numpy()
    return out.sort_values(["time", "campaign"], kind="stable").reset_index(drop=True)


def _kept(nights: pd.DataFrame, start: int, stop: int, odd: set[int]) -> pd.DataFrame:
    return nights.iloc[[i for i in range(start, stop) if i not in odd]]


def _history_points(nights: pd.DataFrame, metric: str, threshold: float, max_pvalue: float,
                    min_size: int) -> dict[str, object]:
    """The change points of one configuration on one node (``nights``: :func:`campaigns`):
    ``listed`` (rows: a regression or an improvement beyond ``threshold``); counted, not
    listed: ``small`` (changes under the threshold) and ``uncertain`` (changes whose interval
    does not clear it); ``outliers`` (odd campaigns left out) and ``early`` (the newest
    campaigns, too few to call a change, that all lie beyond the threshold)."""
    drifts = _drift(nights, metric, threshold, max_pvalue, min_size)
    if drifts:  # the steps are found in what the slope leaves
        nights = nights.assign(value=nights["value"] / np.exp(drifts[0].pop("_trend")))
    values = nights["value"].to_numpy(dtype=float)
    found = change_detection.detect(values, max_pvalue, min_size, min_magnitude=threshold)
    odd = set(found.outliers)
    listed, changes, uncertain = [], [], []
    for point in found.points:
        before, after = (_kept(nights, point.start, point.index, odd),
                         _kept(nights, point.index, point.stop, odd))
        effect, speed = _speed_effect(after["value"].to_numpy(), before["value"].to_numpy(),
                                      metric)
        judged = verdict(speed, threshold)
        if judged not in (CompareVerdict.REGRESSION, CompareVerdict.IMPROVEMENT):
            uncertain.append(point.index)
            continue
        changes.append(point.index)
        listed.append({
            "time": nights["time"].iloc[point.index],
            "before": intervals.geometric_mean(before["value"]),
            "after": intervals.geometric_mean(after["value"]),
            "ratio": effect[intervals.HEADLINE], "low": effect["low"], "high": effect["high"],
            "verdict": judged, "pvalue": point.pvalue,
            "campaigns_before": len(before), "campaigns_after": len(after),
            "runs_before": int(before["runs"].sum()), "runs_after": int(after["runs"].sum()),
            "changed": "; ".join(env_changes.between(nights, point.index, unit="campaign")),
            "interval": effect["method"]})
    outliers = []
    for index in found.outliers:  # against the campaigns around it that are not odd
        around = _kept(nights, max(0, index - 4), min(len(nights), index + 5), odd)
        outliers.append({"time": nights["time"].iloc[index],
                         "campaign": nights["campaign"].iloc[index],
                         "ratio": values[index] / float(np.median(around["value"]))})
    early = _too_early(nights, changes, odd, threshold, min_size)
    if early:  # the uncertain shift into the newest campaigns is that one, said once
        uncertain = [i for i in uncertain if i < len(nights) - 2 * min_size + 1]
    return {"listed": listed, "small": len(found.small), "uncertain": len(uncertain),
            "outliers": outliers, "early": early, "drifts": drifts}


def _drift(nights: pd.DataFrame, metric: str, threshold: float, max_pvalue: float,
           min_size: int) -> list[dict[str, object]]:
    """The history's drift (:mod:`benchlib.history.drift`) as one finding: ``time`` (its start),
    ``per_week`` with ``low`` / ``high``, ``so_far`` with ``so_far_low`` / ``so_far_high``,
    ``campaigns``, ``pvalue``, ``verdict`` (``regression`` where the change so far is known to
    be worse than the threshold, else ``drift``) and ``_trend`` (the log values it adds)."""
    times = pd.to_datetime(nights["time"], utc=True)
    if times.isna().any() or len(nights) < 2:
        return []
    days = ((times - times.iloc[0]).dt.total_seconds() / 86400).to_numpy(dtype=float)
    found = drift_model.find(days, nights["value"].to_numpy(dtype=float), max_pvalue, min_size,
                             threshold)
    if found is None:
        return []
    so_far = [found.so_far(s) for s in (found.slope, found.low, found.high)]
    worse = [(-x if higher_is_better(metric) else x) for x in so_far[1:]]
    judged = CompareVerdict.REGRESSION.value if min(worse) > threshold else DRIFT
    return [{"time": times.iloc[found.start], "per_week": found.per_week(),
             "low": found.per_week(found.low), "high": found.per_week(found.high),
             "so_far": so_far[0], "so_far_low": min(so_far[1:]), "so_far_high": max(so_far[1:]),
             "campaigns": len(nights) - found.start, "pvalue": found.pvalue, "verdict": judged,
             "_trend": found.trend}]


def segment_changes(nights: pd.DataFrame, metric: str = "throughput",
                    threshold: float = DEFAULT_THRESHOLD, max_pvalue: float = MAX_PVALUE,
                    min_size: int = MIN_SIZE) -> dict[str, object]:
    """The change points of one series of campaigns (``nights``: ``campaign``, ``time``,
    ``value``, ``runs``, in time order), judged as ``benchlib history`` judges a node's:
    ``listed`` (regressions and improvements beyond ``threshold``, one dict each with
    ``time``, ``ratio``, ``low``, ``high``, ``verdict``, ...), ``small``, ``uncertain``,
    ``outliers`` and ``early`` (the fleet reads a node's own past through this)."""
    return _history_points(nights, metric, threshold, max_pvalue, min_size)


def _too_early(nights: pd.DataFrame, changes: list[int], odd: set[int], threshold: float,
               min_size: int) -> list[dict[str, object]]:
    """The newest campaigns (the newest ``min_size - 1``, else fewer, down to the newest one)
    when each lies beyond ``threshold`` on the same side of the segment before them (of at
    least ``min_size`` campaigns): a change that may be starting, too early to tell."""
    last = max(changes, default=0)
    for newest in range(min(min_size - 1, len(nights) - 1), 0, -1):  # the newest 2, else 1
        if len(nights) - newest - last < min_size:
            continue
        base = intervals.geometric_mean(_kept(nights, last, len(nights) - newest, odd)["value"])
        ratios = nights["value"].to_numpy(dtype=float)[-newest:] / base
        if (ratios < 1 - threshold).all() or (ratios > 1 + threshold).all():
            return [{"time": nights["time"].iloc[-newest], "campaigns": newest,
                     "ratio": intervals.geometric_mean(ratios)}]
    return []


def change_points(df: pd.DataFrame, metric: str = "throughput", by: Sequence[str] | None = None,
                  threshold: float = DEFAULT_THRESHOLD, max_pvalue: float = MAX_PVALUE,
                  min_size: int = MIN_SIZE, progress: bool = False,
                  now: pd.Timestamp | None = None) -> ChangePoints:
    """:class:`ChangePoints`; its table has one row per listed change point (a regression or an
    improvement) of each configuration's campaigns on each node: ``configuration``, ``node``,
    ``time`` (the first campaign after it), ``before`` / ``after`` (geometric means over the
    campaigns either side, each campaign the geometric mean of its runs), ``ratio`` = after /
    before with ``low`` / ``high`` (95 % Welch t interval over those campaigns), ``verdict``,
    ``pvalue``, ``campaigns_before`` / ``campaigns_after``, ``runs_before`` / ``runs_after``,
    ``changed`` (the environment), ``interval``, and the configuration columns. Smaller or
    uncertain shifts are counted, odd campaigns named, the newest too few to call "too early"
    (docs/acceptance.md). Runs dated after ``now`` (default: the present; a node whose clock
    is wrong) are left out and named (``future``). ``progress``: a progress bar (on stderr)."""
    from tqdm.auto import tqdm

    require_fraction(threshold, "change_points")
    min_size = require_min_size(min_size)
    runs = series(df, metric, by, now)
    done = ok(df)
    keys = configuration_columns(done, by)
    rows, count, nights_seen, small, uncertain, judged = [], 0, 0, 0, 0, 0
    odd, early, drifts = [], [], []
    calm = runs[~runs["disturbed"] & ~runs["failed"] & ~runs["future"]]
    grouped = calm.groupby(["configuration", "node"], sort=False, dropna=False)
    for (name, node), group in tqdm(grouped, total=grouped.ngroups, desc="history",
                                    unit="history", disable=not progress):
        count += 1
        first = group.iloc[0]
        nights = campaigns(group, metric)
        nights_seen += len(nights)
        judged += len(nights) >= 2 * min_size
        found = _history_points(nights, metric, threshold, max_pvalue, min_size)
        small += found["small"]
        uncertain += found["uncertain"]
        where = {"configuration": name, "node": node}
        odd += [{**where, **row} for row in found["outliers"]]
        drifts += [{**where, **row} for row in found["drifts"]]
        early += [{**where, **row} for row in found["early"]]
        for row in found["listed"]:
            rows.append({**where, **row, **{k: first[k] for k in keys}})
    table = pd.DataFrame(rows, columns=[*COLUMNS, *(k for k in keys if k not in COLUMNS)])
    unfinished = len(df) - len(done)  # failed runs: no speed, but not dropped unsaid
    return ChangePoints(
        table, metric, _unit(df, metric), threshold, min_size, series=count,
        runs=len(runs) + unfinished, campaigns=int(campaign_noise.units(calm).nunique()),
        points=nights_seen, disturbed=int(runs["disturbed"].sum()),
        failed=int((runs["failed"] & ~runs["disturbed"]).sum()) + unfinished, small=small,
        uncertain=uncertain, outliers=tuple(odd), early=tuple(early),
        ordered_by=ordered_by(done), future=future_runs(runs), judged=judged, drifts=tuple(drifts))


def future_runs(runs: pd.DataFrame) -> tuple[dict, ...]:
    """The runs of ``runs`` (:func:`series`) dated after now, one dict per node and day:
    ``node``, ``time`` (the day's first), ``runs``."""
    later = runs[runs["future"]]
    if not len(later):
        return ()
    days = later.assign(_day=later["time"].dt.strftime("%Y-%m-%d"))
    return tuple({"node": node, "time": group["time"].min(), "runs": len(group)}
                 for (node, _), group in days.groupby(["node", "_day"], sort=True))


def require_min_size(min_size: object) -> int:
    """``min_size`` as a whole number from 1 to :data:`MAX_MIN_SIZE`; InputError naming the
    allowed range otherwise (a history of campaigns is never longer)."""
    if isinstance(min_size, bool) or not isinstance(min_size, int | np.integer):
        raise InputError(f"change_points: min_size {min_size!r}: give a whole number of "
                         f"campaigns from 1 to {MAX_MIN_SIZE:,}")
    if not 1 <= int(min_size) <= MAX_MIN_SIZE:
        raise InputError(f"change_points: min_size {min_size}: give a whole number of campaigns "
                         f"from 1 to {MAX_MIN_SIZE:,} (campaigns on each side of a change point)")
    return int(min_size)


def histories(runs: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration and node of ``runs`` (:func:`series`): ``runs`` (those in the
    history), ``disturbed`` and ``failed`` (left out), ``first`` and ``last`` (when they started) and
    ``change points`` (of ``table``, :func:`change_points`'), those with one first."""
    counts = (table.groupby(["configuration", "node"]).size() if len(table)
              else pd.Series(dtype=int))
    rows = []
    for (name, node), group in runs.groupby(["configuration", "node"], sort=False, dropna=False):
        rows.append({"configuration": name, "node": node,
                     "runs": int((~group["disturbed"] & ~group["failed"]).sum()),
                     "disturbed": int(group["disturbed"].sum()),
                     "failed": int((group["failed"] & ~group["disturbed"]).sum()),
                     "first": group["time"].min(), "last": group["time"].max(),
                     "change points": int(counts.get((name, node), 0))})
    found = pd.DataFrame(rows, columns=["configuration", "node", "runs", "disturbed", "failed",
                                        "first", "last", "change points"])
    return found.sort_values("change points", ascending=False, kind="stable").reset_index(
        drop=True)


def _unit(df: pd.DataFrame, metric: str) -> str:
    """The unit of ``metric``: the schema's, where it says ``unit`` the records' ``unit`` (one
    for all), for the per-joule columns the kind's per-joule unit is not known here: none."""
    column = schema.column(metric)
    unit = column.unit if column is not None else ""
    if unit != "unit":
        return "" if "unit" in unit else unit
    units = df["unit"].dropna().unique() if "unit" in df else []
    return str(units[0]) if len(units) == 1 else ""
