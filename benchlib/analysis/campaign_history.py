"""Each configuration's campaigns in time order, each against the one before it (``analysis.history``,
:func:`history_plot`), judged as ``benchlib compare`` judges a campaign against another."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

import benchlib.analysis.intervals as intervals
from benchlib.analysis.metrics import require_columns, require_fraction, require_metric
from benchlib.analysis.run_order import run_times
from benchlib.analysis.tables import config_columns, ok
from benchlib.compare.comparable import WHERE
from benchlib.compare.regression import joined_flags, judge
from benchlib.formatting import literal
from benchlib.records import configuration
from benchlib.vocabulary import DEFAULT_THRESHOLD, CompareVerdict


def history(df: pd.DataFrame, metric: str = "throughput", by: Sequence[str] | None = None,
            threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """Each configuration's campaigns in time order: one row per (configuration, campaign)
    with ``time`` (its first run, :func:`run_times`), the median ``metric``, ``runs``, and
    against the previous campaign of the configuration ``ratio`` (speed), ``low`` / ``high``,
    ``verdict`` (as :func:`compare`'s) and ``regression`` (bool).

    ``by`` names the configuration columns (default: the configuration columns less
    campaign, cluster and host). Give each nightly run its own campaign name.
    :func:`ordered_by` says whether ``started_at`` ordered every run.
    Change points within each node's runs: :func:`benchlib.history.series.change_points`."""
    df = ok(df).copy()
    require_metric(df, metric, "history", judged=True)
    require_columns(df, by, "history")
    require_fraction(threshold, "history")
    df["time"] = run_times(df)
    by = list(by) if by is not None else config_columns(df, exclude=WHERE)
    rows = []
    grouped = df.groupby(by, dropna=False, sort=False) if by else [((), df)]
    for key, group in grouped:
        key = key if isinstance(key, tuple) else (key,)
        campaigns = (group.groupby("campaign", sort=False)["time"].min().sort_values(kind="stable")
                     if "campaign" in group else pd.Series({"": group["time"].min()}))
        previous = None
        for campaign, when in campaigns.items():
            runs = group[group["campaign"] == campaign] if "campaign" in group else group
            found, judged, _ = (judge(previous, runs, metric, threshold) if previous is not None
                                else (None, "", ""))
            rows.append({**dict(zip(by, key, strict=True)), "campaign": campaign, "time": when,
                         metric: runs[metric].median(), "runs": len(runs),
                         "ratio": found[intervals.HEADLINE] if found else np.nan,
                         "low": found["low"] if found else np.nan,
                         "high": found["high"] if found else np.nan,
                         "verdict": judged, "regression": judged == CompareVerdict.REGRESSION,
                         "flags": joined_flags(runs)})
            previous = runs
    table = pd.DataFrame(rows)
    if len(table):
        table.insert(0, "configuration", configuration.label(table, by))
    return table


def history_plot(hist: pd.DataFrame, metric: str = "throughput"):
    """One line per configuration over time, regressions marked with a red cross."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 4.5))
    for name, series in hist.groupby("configuration", sort=False):
        axes.plot(series["time"], series[metric], marker="o", label=literal(name))
        marked = series[series["regression"]]
        axes.scatter(marked["time"], marked[metric], marker="x", s=120, color="red", zorder=3)
    axes.set_xlabel("time of the campaign (UTC)")
    axes.set_ylabel(literal(metric))
    count = int(hist["regression"].sum()) if len(hist) else 0
    axes.set_title(f"{literal(metric)} per configuration over campaigns ({count} regression"
                   f"{'' if count == 1 else 's'} marked x)")
    if hist["configuration"].nunique() <= 12:
        axes.legend(fontsize="small")
    figure.autofmt_xdate()
    figure.tight_layout()
    return figure
