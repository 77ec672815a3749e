"""What the fleet page shows: a table of nodes with the slow ones first, the outliers in words,
heat maps of nodes against configurations (from :mod:`benchlib.fleet.outliers`), and each node's
state against the fleet's baselines (from :mod:`benchlib.fleet.health`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import benchlib.analysis.comparisons as comparisons
from benchlib import formatting
from benchlib.fleet import actions as fleet_actions
from benchlib.fleet import health as fleet_health
from benchlib.fleet import outliers as fleet
from benchlib.fleet import placing
from benchlib.publish.pages import present
from benchlib.publish.pages.summary import md_text
from benchlib.records import configuration, flags
from benchlib.vocabulary import NodeState

#: Configuration columns a fleet's node table is grouped by (nodes are compared within).
FLEET_GROUPS = ("gpu", "benchmark", "model")


#: Above this many rows the node table shows the outliers and the slowest nodes only.
NODE_ROWS = 40


SLOWEST = 10  #: slowest nodes per group shown in a long node table


def node_count(df: pd.DataFrame) -> int:
    """How many nodes the finished runs come from (:func:`fleet.node_column`)."""
    done = comparisons.ok(df)
    if done.empty:
        return 0
    column = fleet.node_column(done)
    return int(done[column].replace("", np.nan).nunique()) if column in done else 0


def fleet_groups(runs: pd.DataFrame) -> list[str]:
    """The :data:`FLEET_GROUPS` columns present in ``runs``."""
    return [c for c in FLEET_GROUPS if c in runs and runs[c].notna().any()]


def node_table(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`fleet.node_table` of the workload runs' throughput within each GPU, benchmark and
    model, sorted by speed relative to the group's median (slowest first)."""
    runs = comparisons.benchmarks(comparisons.ok(df)).dropna(subset=["throughput"])
    if runs.empty:
        return pd.DataFrame()
    groups = fleet_groups(runs)
    table = fleet.node_table(runs, "throughput", by=groups)
    if "unit" not in table:
        table["unit"] = ""
    return table.sort_values(["relative", "robust_z"], kind="stable").reset_index(drop=True)


def node_display(table: pd.DataFrame) -> present.Table:
    """The node table for people: outliers marked ⚠; a long one cut to the outliers and the
    slowest nodes of each group (the caption says so)."""
    node = next(c for c in table.columns if c in ("env_slurm_job_nodelist", "host"))
    groups = [c for c in FLEET_GROUPS if c in table]
    shown = table
    if len(table) > NODE_ROWS:
        slowest = table.groupby(groups, dropna=False, sort=False).head(SLOWEST).index \
            if groups else table.head(SLOWEST).index
        shown = table[table.index.isin(slowest) | table["outlier"]]
    cells = pd.DataFrame({"node": shown[node].astype(str)})
    for column in groups:
        if configuration.varies(table[column]):
            cells[formatting.column_label(column)] = shown[column].astype(str)
    cells["throughput"] = [f"{formatting.number(v)} {u}" for v, u in
                           zip(shown["throughput"], shown.get("unit", [""] * len(shown)),
                               strict=True)]
    cells["fleet median"] = [formatting.number(v) for v in shown["fleet_median"]]
    cells["of the median"] = shown["relative"].map(formatting.percent)
    cells["robust z"] = shown["robust_z"].map(lambda z: f"{z:+.1f}")
    cells["outlier"] = shown["outlier"].map(lambda o: "⚠ outlier" if o else "")
    cells["runs"] = shown["runs"].astype(str)
    if shown["flags"].astype(str).str.strip().any():
        cells["flags"] = shown["flags"].astype(str)
    said = present.describe_constant(table, [c for c in groups
                                             if not configuration.varies(table[c])])
    caption = (f"{len(table)} nodes, slowest first relative to the median of their group"
               + (f" (every row: {said})" if said else ""))
    if len(shown) < len(table):
        caption += (f"; shown: the outliers and the {SLOWEST} slowest nodes of each group, "
                    f"{len(table) - len(shown)} nodes within the usual spread left out")
    return present.Table(cells.reset_index(drop=True), caption + ".",
                         {"throughput", "fleet median", "of the median", "robust z"})


def outlier_text(table: pd.DataFrame) -> str:
    """Markdown: what an outlier is, and each outlier node with its speed and z-score."""
    node = next(c for c in table.columns if c in ("env_slurm_job_nodelist", "host"))
    rule = (f"A node is an **outlier** (⚠) when its robust z-score, (x − median) / (1.4826 × "
            f"MAD) of the throughput within its group ({', '.join(fleet_groups(table)) or 'all'}"
            f"), is beyond ±{fleet.OUTLIER_Z:g} (Iglewicz and Hoaglin's cut-off): median and "
            "MAD do not move with a few bad nodes, as a mean and standard deviation would.")
    found = table[table["outlier"]]
    if found.empty:
        return f"{rule}\n\n**No outlier** among {len(table)} nodes."
    items = [f"- **{md_text(r[node])} ⚠** "
             f"({md_text(' '.join(str(r[c]) for c in fleet_groups(table)))}): "
             f"{formatting.percent(r['relative'])} of the median, robust z {r['robust_z']:+.1f}"
             + (f"; flags: {md_text(r['flags'])}" if flags.of(r.get("flags")) else "")
             for r in found.head(20).to_dict("records")]
    more = f"\n- and {len(found) - 20} more (table below)" if len(found) > 20 else ""
    return (f"{rule}\n\n**{len(found)} outlier node{'s' if len(found) != 1 else ''}** among "
            f"{len(table)}:\n" + "\n".join(items) + more)


def heat_frame(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The finished runs with one column per workload (``train resnet50``: its throughput)
    beside the probe columns, and the columns the heat map shows."""
    done = comparisons.ok(df)
    probes = [c for c in fleet.PROBE_COLUMNS if c in done and done[c].notna().any()]
    runs = comparisons.benchmarks(done).dropna(subset=["throughput"])
    keys = [c for c in ("benchmark", "model") if c in runs]
    label = pd.Series([" ".join(str(v) for v in row if not formatting.missing(v)) or "throughput"
                       for row in runs[keys].itertuples(index=False)] if keys
                      else "throughput", index=runs.index, dtype=object)
    wide = done.copy()
    workloads = sorted(label.unique())
    for name in workloads:
        wide[name] = np.where(wide.index.isin(label[label == name].index),
                              wide["throughput"], np.nan)
    return wide, [*probes, *workloads]


def heatmaps(df: pd.DataFrame) -> list[tuple[object, str]]:
    """One heat map per GPU model (nodes x probes and workloads, each over the fleet median),
    with its alt text."""
    wide, columns = heat_frame(df)
    if not columns:
        return []
    out = []
    groups = wide.groupby("gpu", dropna=False, sort=True) if "gpu" in wide else [("", wide)]
    for gpu, rows in groups:
        if not configuration.varies(rows[fleet.node_column(rows)]):
            continue
        shown = [c for c in columns if c in rows and rows[c].notna().any()]
        if not shown:
            continue
        figure = fleet.heatmap(rows, shown)
        figure.axes[0].set_xlabel("probe or workload")
        title = figure.axes[0].get_title().split("\n")
        if not formatting.missing(gpu):
            figure.axes[0].set_title(formatting.literal(f"GPU {gpu}: ") + "\n".join(title),
                                     fontsize="medium")
        marked = [t.get_text() for t in figure.axes[0].get_yticklabels() if "⚠" in t.get_text()]
        alt = (f"Heat map of {rows[fleet.node_column(rows)].nunique()} nodes"
               + (f" with GPU {gpu}" if not formatting.missing(gpu) else "")
               + f" by {len(shown)} probes and workloads, each relative to the fleet median "
               f"(1.0); outliers marked: {', '.join(marked) if marked else 'none'}")
        out.append((figure, alt))
    return out


def node_states(df: pd.DataFrame) -> fleet_health.FleetStates | None:
    """:func:`fleet_health.node_states` of every run (failed ones included), at the time of the
    latest run: a report shows the fleet as it stood when its runs ended (None: no run says
    when it started)."""
    times = placing.run_started(df)
    if times.isna().all():
        return None
    return fleet_health.node_states(df, now=times.max())


def states_text(states: fleet_health.FleetStates) -> str:
    """Markdown: what the node states say, the counts, and the rules behind them."""
    summary = fleet_actions.node_summary(states)
    counts = summary["state"].value_counts()
    said = ", ".join(f"**{counts[s]} {s}**" if s in fleet_actions.FAILING else f"{counts[s]} {s}"
                     for s in NodeState if s in counts)
    return (f"### Node states\n\nAt the latest run ({states.now:%Y-%m-%d %H:%M} UTC): {said} "
            f"of {len(summary)} nodes. The **baseline** of each GPU model and configuration is "
            f"the median of the healthy nodes' recent runs (their {fleet_health.RECENT_RUNS} "
            f"latest in the {states.window_days:g}-day validity window; at least "
            f"{fleet_health.MIN_BASELINE_NODES} healthy nodes). A node is **slow** when the 95 % "
            f"interval of its speed over the other healthy nodes' lies wholly more than "
            f"{states.threshold * 100:g} % below; **failed** when its latest run failed; **stale** "
            f"without a run in the window; **missing** when it never ran a configuration the "
            f"others ran; **unknown** when nothing decides (no baseline, one run, or only "
            f"contended or throttled runs, which never make a node slow). Over many nights: "
            f"`benchlib fleet outputs/nightly --drain-list` (docs/acceptance.md).")


def _why(group: pd.DataFrame, worst: str) -> str:
    """Why a node has its state: each configuration of that state, ok ones by their ratio."""
    parts = []
    for row in group[group["state"] == worst].itertuples():
        if worst == NodeState.OK and not pd.isna(row.ratio):
            parts.append(f"{row.configuration}: {row.ratio:.2f}x ({row.low:.2f}-{row.high:.2f})")
        else:
            parts.append(f"{row.configuration}: {row.reason}")
    return "; ".join(parts)


def _state_cell(group: pd.DataFrame, worst: str) -> str:
    """``⚠ slow`` for a failing state, ``stale`` else; ``(1 of 2)`` when only some of the node's
    configurations are in it."""
    mark = "⚠ " if worst in fleet_actions.FAILING else ""
    count = int((group["state"] == worst).sum())
    return f"{mark}{worst}" + (f" ({count} of {len(group)})" if count < len(group) else "")


def states_display(found: fleet_health.FleetStates) -> present.Table:
    """One row per node, the most severe first (failed and slow marked ⚠; ``(1 of 2)`` when
    only some of its configurations are), the GPU model only when nodes differ in it; beyond
    :data:`NODE_ROWS` nodes, the ok ones are counted in the caption instead of listed."""
    states = found.table
    summary = fleet_actions.node_summary(found)
    shown = summary if len(summary) <= NODE_ROWS else summary[summary["state"] != NodeState.OK]
    by_node = dict(tuple(states.groupby("node")))
    cells = pd.DataFrame({"node": shown["node"].astype(str)})
    gpus = sorted(set(summary["gpu"].astype(str)) - {""})
    if len(gpus) > 1:
        cells["GPU"] = shown["gpu"].astype(str)
    pairs = list(zip(shown["node"], shown["state"], strict=True))
    cells["state"] = [_state_cell(by_node[n], s) for n, s in pairs]
    cells["why (speed over the baseline, 95 % interval)"] = [_why(by_node[n], s) for n, s in pairs]
    caption = (f"{len(summary)} nodes{f' (every one: GPU {gpus[0]})' if len(gpus) == 1 else ''}"
               ", the most severe state first; a node's state is the most severe of its "
               "configurations'")
    if len(shown) < len(summary):
        caption += f"; {len(summary) - len(shown)} ok nodes not listed"
    return present.Table(cells.reset_index(drop=True), caption + ".")
