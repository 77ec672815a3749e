"""History with change points (``benchlib history``, the report's History page): each
configuration's runs on each node (``host``) in the order they started (``started_at``; records
without it by their files' times, :func:`benchlib.analysis.regression.run_times`), their change
points by Otava's method (:mod:`benchlib.analysis.change_detection`), and for each the speed
before and after with a 95 % interval and what changed in the node's environment then
(:mod:`benchlib.analysis.env_changes`).

A configuration is the configuration columns less where and when a run was made
(:func:`benchlib.analysis.tables.config_columns` less :data:`~benchlib.analysis.comparable.WHERE`).
Disturbed runs (``contended``, ``throttled``: :data:`benchlib.records.flags.DISTURBED`) are
left out of the series and counted. The change at a change point is the ratio of the geometric
means of the runs after it and before it, each side bounded by the neighbouring change points,
with the between-runs Welch t interval of :func:`benchlib.analysis.intervals.repeats_effect`,
and its verdict is :func:`benchlib.analysis.regression.verdict`'s: ``regression`` when the whole
interval of the speed ratio is below 1 - ``threshold``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from benchlib.analysis import env_changes, intervals
from benchlib.analysis.change_detection import MAX_PVALUE, MIN_SIZE
from benchlib.analysis.change_detection import change_points as series_change_points
from benchlib.analysis.comparable import WHERE
from benchlib.analysis.regression import (
    DEFAULT_THRESHOLD,
    higher_is_better,
    ordered_by,
    run_times,
    verdict,
)
from benchlib.analysis.tables import config_columns, ok
from benchlib.errors import EXIT_FAILURE
from benchlib.records import flags, schema
from benchlib.records.values import one_line
from benchlib.vocabulary import CompareVerdict

#: The column that names the node a run was made on.
NODE = "host"
#: The node of runs whose records name none.
UNKNOWN_NODE = "an unnamed host"
#: The columns of :func:`change_points`' table, in order (the configuration columns follow).
COLUMNS = ("configuration", "node", "time", "before", "after", "ratio", "low", "high",
           "verdict", "pvalue", "runs_before", "runs_after", "changed", "interval")


def configuration_columns(df: pd.DataFrame, by: Sequence[str] | None = None) -> list[str]:
    """The columns that make a configuration: ``by``, else the configuration columns less
    where and when a run was made."""
    return list(by) if by is not None else config_columns(df, exclude=(*WHERE, NODE))


def label(table: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """``batch_size=64, precision=amp_bf16``: the configuration columns whose values vary in
    ``table`` (the record schema's describing order first), else its benchmark, model and GPU."""
    order = [c for c in schema.describing() if c in keys] + [c for c in keys
                                                             if c not in schema.describing()]
    varying = [c for c in order if table[c].astype(str).nunique() > 1]
    shown = varying or [c for c in ("benchmark", "model", "gpu") if c in keys]
    if not shown:
        return pd.Series("all runs", index=table.index)
    return table[shown].apply(
        lambda row: ", ".join(f"{c}={v}" for c, v in row.items() if not pd.isna(v) and v != ""),
        axis=1)


def _labels(runs: pd.DataFrame, keys: list[str]) -> pd.Series:
    """:func:`label` of each run, made once per configuration."""
    if not len(runs):
        return pd.Series(dtype=object, index=runs.index)
    if not keys:
        return label(runs, keys)
    text = runs[keys].astype(str)
    distinct = text.drop_duplicates()
    named = dict(zip(map(tuple, distinct.to_numpy()), label(runs.loc[distinct.index], keys),
                     strict=True))
    return pd.Series([named[k] for k in map(tuple, text.to_numpy())], index=runs.index)


def series(df: pd.DataFrame, metric: str = "throughput", by: Sequence[str] | None = None
           ) -> pd.DataFrame:
    """Every finished run with a ``metric`` value, in time order within each configuration and
    node: the configuration columns, ``configuration`` (:func:`label`), ``node``, ``time``
    (UTC), ``metric``, ``disturbed`` (contended or throttled: left out of the change points)
    and the environment columns. ``attrs["ordered_by"]`` says how the runs were ordered."""
    if metric not in df:
        raise KeyError(f"history: no column {metric!r} in the results")
    runs = ok(df)
    runs = runs[pd.to_numeric(runs[metric], errors="coerce") > 0]
    keys = configuration_columns(runs, by)
    keep = [*keys, *(c for c in (NODE, metric, "flags") if c in runs),
            *env_changes.columns(runs)]
    out = runs[list(dict.fromkeys(keep))].copy()
    out[metric] = pd.to_numeric(out[metric], errors="coerce")
    out["node"] = (runs[NODE].astype("string").fillna(UNKNOWN_NODE).replace("", UNKNOWN_NODE)
                   if NODE in runs else UNKNOWN_NODE)
    out["time"] = run_times(runs)
    out["disturbed"] = [bool(flags.disturbed([text]))
                        for text in out.get("flags", pd.Series("", index=out.index))]
    out["configuration"] = _labels(out, keys)
    out = out.sort_values(["configuration", "node", "time"], kind="stable").reset_index(drop=True)
    out.attrs.update(ordered_by=ordered_by(runs), keys=keys, metric=metric)
    return out


def _speed_effect(after: np.ndarray, before: np.ndarray, metric: str) -> tuple[dict, dict]:
    """The change of ``metric`` (after / before) and of the speed (inverted for ``time_*``)."""
    found = intervals.repeats_effect(after, before)
    if higher_is_better(metric):
        return found, found
    speed = intervals.repeats_effect(1.0 / after, 1.0 / before)
    return found, speed


def _series_points(runs: pd.DataFrame, metric: str, threshold: float, max_pvalue: float,
                   min_size: int) -> list[dict[str, object]]:
    """The change points of one configuration on one node (``runs`` in time order, disturbed
    runs already left out)."""
    values = runs[metric].to_numpy(dtype=float)
    rows = []
    for point in series_change_points(values, max_pvalue, min_size):
        before, after = values[point.start:point.index], values[point.index:point.stop]
        found, speed = _speed_effect(after, before, metric)
        rows.append({"time": runs["time"].iloc[point.index],
                     "before": intervals.geometric_mean(before),
                     "after": intervals.geometric_mean(after),
                     "ratio": found[intervals.HEADLINE], "low": found["low"],
                     "high": found["high"], "verdict": verdict(speed, threshold),
                     "pvalue": point.pvalue, "runs_before": len(before),
                     "runs_after": len(after),
                     "changed": "; ".join(env_changes.between(runs, point.index)),
                     "interval": found["method"]})
    return rows


def change_points(df: pd.DataFrame, metric: str = "throughput", by: Sequence[str] | None = None,
                  threshold: float = DEFAULT_THRESHOLD, max_pvalue: float = MAX_PVALUE,
                  min_size: int = MIN_SIZE, progress: bool = False) -> pd.DataFrame:
    """One row per change point of each configuration's runs on each node: ``configuration``,
    ``node``, ``time`` (the first run after it, UTC), ``before`` / ``after`` (geometric mean
    of ``metric`` over the runs on either side, up to the neighbouring change points),
    ``ratio`` = after / before with ``low`` / ``high`` (95 % Welch t interval over those runs),
    ``verdict`` (of the speed: regression, improvement, no change), ``pvalue`` (Otava's
    t-test), ``runs_before`` / ``runs_after``, ``changed`` (what changed in the environment
    then, ``; ``-separated), ``interval`` (what it is made from), and the configuration columns.

    ``attrs``: ``series`` (configurations x nodes looked at), ``runs``, ``disturbed`` (runs
    left out: contended or throttled), ``ordered_by`` (in words), ``metric``, ``threshold``.
    ``progress``: a progress bar over the histories (on stderr)."""
    from tqdm.auto import tqdm

    runs = series(df, metric, by)
    keys = runs.attrs["keys"]
    rows, count = [], 0
    calm = runs[~runs["disturbed"]]
    grouped = calm.groupby(["configuration", "node"], sort=False, dropna=False)
    for (name, node), group in tqdm(grouped, total=grouped.ngroups, desc="history",
                                    unit="history", disable=not progress):
        count += 1
        first = group.iloc[0]
        for row in _series_points(group.reset_index(drop=True), metric, threshold, max_pvalue,
                                  min_size):
            rows.append({"configuration": name, "node": node, **row,
                         **{k: first[k] for k in keys}})
    table = pd.DataFrame(rows, columns=[*COLUMNS, *(k for k in keys if k not in COLUMNS)])
    table.attrs.update(series=count, runs=len(runs), disturbed=int(runs["disturbed"].sum()),
                       ordered_by=runs.attrs["ordered_by"], metric=metric, threshold=threshold,
                       unit=_unit(df, metric))
    return table


def histories(runs: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration and node of ``runs`` (:func:`series`): ``runs`` (those in the
    history), ``disturbed`` (left out), ``first`` and ``last`` (when they started) and
    ``change points`` (of ``table``, :func:`change_points`'), those with one first."""
    counts = (table.groupby(["configuration", "node"]).size() if len(table)
              else pd.Series(dtype=int))
    rows = []
    for (name, node), group in runs.groupby(["configuration", "node"], sort=False, dropna=False):
        rows.append({"configuration": name, "node": node,
                     "runs": int((~group["disturbed"]).sum()),
                     "disturbed": int(group["disturbed"].sum()),
                     "first": group["time"].min(), "last": group["time"].max(),
                     "change points": int(counts.get((name, node), 0))})
    found = pd.DataFrame(rows, columns=["configuration", "node", "runs", "disturbed", "first",
                                        "last", "change points"])
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


def _percent(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f} %"


def change(row: dict[str, object]) -> str:
    """The change at a change point in words: ``-12 % (-14 % to -10 %)`` (after / before,
    its 95 % interval), ``(interval unknown)`` without one."""
    ratio, low, high = (float(row[k]) for k in ("ratio", "low", "high"))
    interval = (f" ({_percent(low)} to {_percent(high)})" if np.isfinite(low) and np.isfinite(high)
                else " (interval unknown)")
    return f"{_percent(ratio)}{interval}"


def line(row: dict[str, object], metric: str = "throughput", unit: str = "") -> str:
    """``throughput -12 % (-14 % to -10 %) on node017 from 2026-09-26: 812 -> 715 images/s
    (regression; batch_size=64); changed then: driver 580.65 -> 580.82``."""
    when = pd.Timestamp(row["time"]).strftime("%Y-%m-%d") if pd.notna(row["time"]) else "?"
    changed = row["changed"] or "nothing recorded"
    return one_line(
        f"{metric} {change(row)} on {row['node']} from {when}: "
        f"{float(row['before']):.4g} -> {float(row['after']):.4g}{' ' + unit if unit else ''} "
        f"({row['verdict']}; {row['configuration']}; {row['runs_before']} + "
        f"{row['runs_after']} runs, p = {float(row['pvalue']):.1g}); changed then: {changed}")


def lines(table: pd.DataFrame) -> list[str]:
    """One :func:`line` per change point, then what was looked at and left out."""
    metric, unit = table.attrs.get("metric", "throughput"), table.attrs.get("unit", "")
    out = [line(row, metric, unit) for row in table.to_dict("records")]
    disturbed = table.attrs.get("disturbed", 0)
    out.append(f"{len(table)} change point{'' if len(table) == 1 else 's'} "
               f"({int((table['verdict'] == CompareVerdict.REGRESSION).sum())} regression) in "
               f"{table.attrs.get('series', 0)} configuration x node histories of "
               f"{table.attrs.get('runs', 0)} runs; {disturbed} disturbed run"
               f"{'' if disturbed == 1 else 's'} (contended, throttled) left out; "
               f"{table.attrs.get('ordered_by', '')}")
    return out


def exit_code(table: pd.DataFrame) -> int:
    """1 when a change point is a regression (the speed's whole interval below 1 - threshold),
    else 0."""
    return EXIT_FAILURE if (table["verdict"] == CompareVerdict.REGRESSION).any() else 0
