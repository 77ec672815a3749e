"""The History page (``summary_history``, built by ``benchlib report DIR --history EARLIER...``):
the campaign's configurations over time on each node, with the change points Otava's method
finds (:mod:`benchlib.history.series`) and what changed in the environment then."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pandas as pd

import benchlib.analysis.run_order as run_order
import benchlib.analysis.selection as selection
import benchlib.analysis.tables as tables
from benchlib.history import plot as history_plot
from benchlib.history import said as history_said
from benchlib.history import series as node_history
from benchlib.publish.pages import Call, Page, note, plots, present, show, summary
from benchlib.vocabulary import DEFAULT_THRESHOLD

#: Plots shown at most: histories with a change point first, then the others.
MAX_PLOTS = 24


def runs(df: pd.DataFrame, history_dirs: str, history_db: str = "") -> pd.DataFrame:
    """The campaign's runs and the other runs of its configurations on its nodes under
    ``history_dirs`` (folders separated by ``os.pathsep``) and in catalog ``history_db``
    (``$BENCHLIB_DB``: the one that variable names), with what they hold in words: those
    begun before the campaign's first run as earlier, the rest (a catalog holds the nights
    after it too) as later."""
    folders = [folder for folder in history_dirs.split(os.pathsep) if folder]
    found = [selection.earlier(df, summary.load_results(folder)) for folder in folders]
    if history_db:
        found.append(selection.earlier_in_catalog(df, history_db, summary.as_read))
    others = pd.concat(found, ignore_index=True) if found else df.iloc[0:0]
    others = others[~selection.identity(others).duplicated()]
    both = pd.concat([df, others], ignore_index=True)
    where = [f"{len(folders)} folder{'' if len(folders) == 1 else 's'}"] if folders else []
    where += ["the catalog"] if history_db else []
    note(f"{len(df)} run{'' if len(df) == 1 else 's'} of this campaign"
         f"{before_and_after(df, others)} of its "
         f"configurations on its nodes, from {' and '.join(where) or 'nowhere'}; "
         f"{run_order.ordered_by(tables.ok(both))}.")
    return both


def before_and_after(campaign: pd.DataFrame, others: pd.DataFrame) -> str:
    """`` and 14 earlier runs``, or ``, 14 earlier runs and 16 later runs`` where some of
    ``others`` began at or after the campaign's first run (when each began:
    :func:`benchlib.analysis.run_order.run_times`; a run whose time is unknown, or a campaign
    whose start is, counts as earlier)."""
    start = run_order.run_times(campaign).min()
    later = 0
    if len(others) and not pd.isna(start):
        later = int((run_order.run_times(others) >= start).sum())
    earlier = f"{len(others) - later} earlier run{'' if len(others) - later == 1 else 's'}"
    if not later:
        return f" and {earlier}"
    return f", {earlier} and {later} later run{'' if later == 1 else 's'} (begun after this campaign began)"


def change_points(history: pd.DataFrame, threshold: float) -> node_history.ChangePoints:
    """One line per change point (as ``benchlib history`` prints), their table, and the table
    of every configuration's history on each node."""
    found = node_history.change_points(history, threshold=threshold)
    table = found.table
    said = history_said.lines(found)
    note("\n".join(f"- {summary.md_text(line)}" for line in said))
    if len(table):
        shown = pd.DataFrame({  # the change and its verdict first: a phone's first view
            "configuration": table["configuration"],
            "change": table.apply(history_said.change, axis=1), "verdict": table["verdict"],
            "node": table["node"], "from": table["time"].dt.strftime("%Y-%m-%d"),
            "before": table["before"], "after": table["after"],
            "campaigns": (table["campaigns_before"].astype(str) + " + "
                          + table["campaigns_after"].astype(str)),
            "changed then": table["changed"].replace("", "nothing recorded")})
        show(present.table(shown, f"Change points of {found.metric}: the geometric mean before and "
                           "after, the change (after / before) with its 95 % interval over the "
                           "campaigns on either side (each campaign one value: the geometric "
                           "mean of its runs), and what changed in the environment then",
                           keep=tuple(shown.columns)))
    every = node_history.histories(node_history.series(history), table)
    show(present.table(every.assign(first=every["first"].dt.strftime("%Y-%m-%d %H:%M"),
                                    last=every["last"].dt.strftime("%Y-%m-%d %H:%M")),
                       "Each configuration's history on each node: its runs (disturbed ones "
                       "left out), the first and last, and its change points",
                       keep=("node", "runs", "first", "last", "change points")))
    return found


def _of(rows: Sequence[dict], name: str, node: str) -> list[dict]:
    """The rows (outliers, too early) of one configuration on one node."""
    return [r for r in rows if (r["configuration"], r["node"]) == (name, node)]


def node_plots(history: pd.DataFrame, found: node_history.ChangePoints) -> None:
    """A plot per configuration and node (those with a change point or a drift first, at most
    :data:`MAX_PLOTS`), the change points marked and labelled, a drift drawn as its slope."""
    every = node_history.series(history)
    table, metric, unit = found.table, found.metric, found.unit
    marked = set(zip(table["configuration"], table["node"], strict=True))
    marked |= {(r["configuration"], r["node"]) for r in found.drifts}
    groups = sorted(every.groupby(["configuration", "node"], sort=False, dropna=False),
                    key=lambda item: item[0] not in marked)
    for (name, node), group in groups[:MAX_PLOTS]:
        points = table[(table["configuration"] == name) & (table["node"] == node)]
        early = [r["time"] for r in _of(found.early, name, node)]
        plots.show(history_plot.node_plot(
            group, points, metric, unit, f"{name} on {node}",
            outliers=tuple(r["campaign"] for r in _of(found.outliers, name, node)),
            early=early[0] if early else None,
            drift=next(iter(_of(found.drifts, name, node)), None)))
    if len(groups) > MAX_PLOTS:
        note(f"{len(groups) - MAX_PLOTS} more configuration x node histories are not drawn; "
             "`benchlib history` lists their change points.")


PAGE = Page(
    "History",
    "Each of this campaign's configurations on each of its nodes over time, with the earlier "
    "runs given to `benchlib report DIR --history EARLIER...` or, with a catalog configured "
    "(`$BENCHLIB_DB`), its runs before and after this campaign (counted apart), ordered by "
    "when each run started. Change points "
    "are found by Apache Otava's method (binary-segmentation "
    "candidates, then a Student t-test merge at p < 0.001) over one value per campaign (the "
    "geometric mean of its runs: runs of one campaign move together). Only changes that matter "
    "are listed: for each, the change of the geometric mean after / before with its 95 % "
    "interval over the campaigns on either side, its verdict (**regression** when the whole "
    "interval of the speed is more than `threshold` below 1, as `benchlib compare` says), and "
    "what changed in the node's environment then "
    "(driver, CUDA, cuDNN, NCCL, torch, container, kernel, ...). Smaller or uncertain shifts are "
    "counted, an odd campaign is named as an outlier (it makes and moves no change point), and "
    "the newest campaigns, too few to call, are \"too early to tell\" (shaded in the plots, "
    "outliers drawn as open orange circles). Contended and throttled runs are drawn as grey "
    "crosses and left out.",
    (
        Call(runs, "df, history_dirs, history_db", "runs_over_time"),
        "## Change points",
        Call(change_points, "runs_over_time, threshold", "change_points_found"),
        "## Each configuration on each node",
        Call(node_plots, "runs_over_time, change_points_found"),
    ),
    {"history_dirs": "", "history_db": "", "threshold": DEFAULT_THRESHOLD},
)
