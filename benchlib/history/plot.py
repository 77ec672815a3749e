"""The History page's plot: one configuration's runs on one node over time, the mean of each
segment between change points, and each change point marked and labelled with its change and
what changed in the environment then (:mod:`benchlib.history.series`)."""

from __future__ import annotations

import itertools
import textwrap

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import benchlib.analysis.intervals as intervals
from benchlib.formatting import literal
from benchlib.publish.pages.plots import tidy
from benchlib.vocabulary import CompareVerdict

#: The colour of a change point by its verdict; the runs' own colour.
VERDICT_COLOURS = {CompareVerdict.REGRESSION: "#e15759", CompareVerdict.IMPROVEMENT: "#59a14f"}
OTHER_CHANGE = "#9c755f"
RUNS = "#4e79a7"
DISTURBED = "#bab0ac"
OUTLIER = "#f28e2b"
#: Characters a change point's label holds on one line.
LABEL_WIDTH = 34


def _label(point: dict[str, object]) -> str:
    """``-12 % from 2026-09-26`` and what changed (wrapped), as literal text."""
    change = f"{(float(point['ratio']) - 1) * 100:+.0f} % from {pd.Timestamp(point['time']):%Y-%m-%d}"
    changed = str(point.get("changed") or "nothing recorded changed")
    wrapped = textwrap.wrap(changed, LABEL_WIDTH, max_lines=3, placeholder=" ...")
    return literal("\n".join([change, *wrapped]))


def _segment_means(calm: pd.DataFrame, metric: str, times: list[pd.Timestamp]
                   ) -> list[tuple[pd.Timestamp, pd.Timestamp, float]]:
    """(first, last, geometric mean) of the calm runs between consecutive change points."""
    edges = [calm["time"].min(), *times, calm["time"].max() + pd.Timedelta(seconds=1)]
    out = []
    for start, stop in itertools.pairwise(edges):
        inside = calm[(calm["time"] >= start) & (calm["time"] < stop)]
        if len(inside):
            out.append((inside["time"].min(), inside["time"].max(),
                        intervals.geometric_mean(inside[metric])))
    return out


def _drifted(times: pd.Series, drift: dict[str, object] | None) -> np.ndarray:
    """What ``drift`` (a :attr:`~benchlib.history.series.ChangePoints.drifts` row) multiplies
    the level by at ``times``: 1 before it starts."""
    if drift is None:
        return np.ones(len(times))
    slope = np.log1p(float(drift["per_week"])) / 7  # per day
    days = (pd.to_datetime(times, utc=True) - pd.Timestamp(drift["time"])).dt.total_seconds()
    return np.exp(slope * np.maximum(0.0, days.to_numpy(dtype=float) / 86400))


def _segment_lines(calm: pd.DataFrame, metric: str, times: list[pd.Timestamp],
                   drift: dict[str, object] | None) -> list[tuple[pd.Series, np.ndarray]]:
    """Each segment between change points as a line: its mean, sloping with ``drift``."""
    if drift is None:
        return [(pd.Series([a, b]), np.array([m, m]))
                for a, b, m in _segment_means(calm, metric, times)]
    level = calm.assign(**{metric: calm[metric] / _drifted(calm["time"], drift)})
    out = []
    for first, last, mean in _segment_means(level, metric, times):
        inside = calm[(calm["time"] >= first) & (calm["time"] <= last)]["time"].sort_values()
        out.append((inside, mean * _drifted(inside, drift)))
    return out


def node_plot(runs: pd.DataFrame, points: pd.DataFrame, metric: str = "throughput",
              unit: str = "", title: str = "", outliers: tuple[str, ...] = (),
              early: pd.Timestamp | None = None, drift: dict[str, object] | None = None
              ) -> plt.Figure:
    """``runs`` (one configuration on one node, :func:`~benchlib.history.series.series`)
    over time: calm runs as dots, disturbed ones (left out) as grey crosses, the runs of
    ``outliers`` (campaigns left out) as open orange circles, each segment's geometric mean as
    a line (sloping with ``drift``, a :attr:`~benchlib.history.series.ChangePoints.drifts` row),
    ``points`` (its change points) as dashed lines labelled with the change and what
    changed then, and from ``early`` on the newest campaigns, too few to tell, shaded."""
    figure, axes = plt.subplots(figsize=(8, 3.8))
    odd = (runs["campaign"].isin(outliers) if "campaign" in runs and outliers
           else pd.Series(False, index=runs.index))
    calm, disturbed = runs[~runs["disturbed"] & ~odd], runs[runs["disturbed"]]
    axes.plot(calm["time"], calm[metric], "o", color=RUNS, markersize=4, label="runs")
    if odd.any():
        axes.plot(runs.loc[odd, "time"], runs.loc[odd, metric], "o", markerfacecolor="none",
                  color=OUTLIER, markersize=6, label="outlier campaign, left out")
    if early is not None:
        axes.axvspan(early - pd.Timedelta(hours=6), runs["time"].max() + pd.Timedelta(hours=6),
                     color=OUTLIER, alpha=0.12, label="too early to tell")
    if len(disturbed):
        axes.plot(disturbed["time"], disturbed[metric], "x", color=DISTURBED, markersize=6,
                  label=f"disturbed, left out ({len(disturbed)})")
    chosen = points.sort_values("time").to_dict("records")
    for x, y in _segment_lines(calm, metric, [p["time"] for p in chosen], drift):
        axes.plot(x, y, "-", color="black", linewidth=1.5)
    axes.plot([], [], "-", color="black", linewidth=1.5, label="mean between change points"
              + (f", drifting {float(drift['per_week']) * 100:+.2f} % a week from "
                 f"{pd.Timestamp(drift['time']):%Y-%m-%d}" if drift is not None else ""))
    top = float(np.nanmax(runs[metric])) if len(runs) else 1.0
    low = float(np.nanmin(runs[metric])) if len(runs) else 0.0
    axes.set_ylim(low - 0.15 * (top - low or top), top + 0.45 * (top - low or top))
    first, last = (runs["time"].min(), runs["time"].max()) if len(runs) else (None, None)
    for number, point in enumerate(chosen):
        colour = VERDICT_COLOURS.get(point["verdict"], OTHER_CHANGE)
        axes.axvline(point["time"], color=colour, linestyle="--", linewidth=1.5)
        # a change point in the right part of the plot is labelled on its left
        right = first is not None and last > first and (point["time"] - first) / (last - first) > 0.6
        axes.annotate(_label(point), (mdates.date2num(point["time"]), 1.0),
                      xycoords=("data", "axes fraction"),
                      xytext=(-4 if right else 4, -4 - 40 * (number % 2)),
                      ha="right" if right else "left",
                      textcoords="offset points", va="top", fontsize=8, color=colour,
                      bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "alpha": 0.85,
                            "edgecolor": colour})
    axes.set_ylabel(literal(f"{metric} ({unit})" if unit else metric))
    axes.set_xlabel("run started (UTC)")
    axes.xaxis.set_major_formatter(mdates.ConciseDateFormatter(axes.xaxis.get_major_locator()))
    axes.set_title(literal(title), fontsize=10)
    _around_one_time(axes, runs["time"])
    # below the axes, under the x label: a legend inside covered the runs it names
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2,
                frameon=False)
    axes.grid(alpha=0.3)
    return tidy(figure)


def _around_one_time(axes: plt.Axes, times: pd.Series) -> None:
    """Where every run began at one time, a day either side of it as the x axis (matplotlib
    spans years around a single date)."""
    known = pd.to_datetime(times, utc=True).dropna()
    if len(known) and known.min() == known.max():
        axes.set_xlim(known.min() - pd.Timedelta(days=1), known.max() + pd.Timedelta(days=1))
