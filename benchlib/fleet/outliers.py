"""Fleet checks: which nodes are slower than their peers (robust z-scores), a table of nodes
sorted by a metric, and a nodes x probes heat map normalised to the fleet median.

The robust z-score of a node's value x within its group (``by``, e.g. the GPU model) is
``(x - median) / (1.4826 * MAD)``, MAD the median absolute deviation: 1.4826 makes the MAD
estimate the standard deviation of normal data, and neither the median nor the MAD moves with a
few bad nodes, as a mean and standard deviation would. When more than half the group holds the
same value (MAD 0), the mean absolute deviation scaled by 1.2533 stands in. A node is an
``outlier`` when ``|robust_z| > 3.5`` (:data:`OUTLIER_Z`, Iglewicz and Hoaglin's cut-off for
the modified z-score).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from benchlib import kinds, registry
from benchlib.analysis.metrics import require_columns, require_metric
from benchlib.analysis.tables import ok
from benchlib.formatting import literal
from benchlib.records import flags

#: |robust_z| above this marks an outlier.
OUTLIER_Z = 3.5
MAD_SCALE = 1.4826
MEAN_AD_SCALE = 1.2533
#: Columns of the node probe (and the all-reduce part) the heat map shows, when present: as
#: the node probe's kind declares them.
PROBE_COLUMNS = kinds.get(registry.node_probe().kind).fleet_columns  # type: ignore[attr-defined]


def node_column(df: pd.DataFrame) -> str:
    """Which column names a run's node: the Slurm job's node list where every run has one
    (a fleet run's job is pinned to one node; emulated nodes may share a host name), else
    ``host``."""
    nodelist = "env_slurm_job_nodelist"
    if nodelist in df and len(df) and df[nodelist].fillna("").astype(str).ne("").all():
        return nodelist
    return "host"


def robust_z(values: pd.Series) -> pd.Series:
    """Robust z-scores of ``values`` (see the module docstring); 0 where all agree, NaN for
    missing values."""
    numbers = pd.to_numeric(values, errors="coerce").astype(float)
    median = numbers.median()
    deviation = (numbers - median).abs()
    scale = MAD_SCALE * deviation.median()
    if not scale > 0:
        scale = MEAN_AD_SCALE * deviation.mean()
    if not scale > 0:
        return pd.Series(np.where(numbers.isna(), np.nan, 0.0), index=values.index)
    return (numbers - median) / scale


def outliers(df: pd.DataFrame, metric: str = "throughput",
             by: Sequence[str] | None = ("gpu",)) -> pd.DataFrame:
    """``df`` (finished runs) with ``robust_z`` of ``metric`` within each ``by`` group and
    ``outlier`` (``|robust_z| > 3.5``); ``by`` None or empty: the whole table is one group."""
    out = ok(df).copy()
    require_metric(out, metric, "outliers")
    by = [c for c in (by or ()) if c in out]
    if by:
        out["robust_z"] = out.groupby(by, dropna=False, sort=False)[metric].transform(robust_z)
    else:
        out["robust_z"] = robust_z(out[metric])
    out["outlier"] = out["robust_z"].abs() > OUTLIER_Z
    return out


def node_table(df: pd.DataFrame, metric: str = "throughput", node: str | None = None,
               by: Sequence[str] | None = ("gpu",)) -> pd.DataFrame:
    """One row per node and ``by`` group (``benchmark`` and ``unit`` too: never pooled) with
    its median ``metric``, ``fleet_median``, ``relative``, ``robust_z``, ``outlier``, ``runs``
    and ``flags``, slowest first; ``node`` defaults to :func:`node_column`."""
    runs = ok(df)
    require_metric(runs, metric, "node_table", rate=True)
    require_columns(runs, by, "node_table")
    node = node or node_column(runs)
    given = [c for c in (by or ()) if c in runs]
    by = [*given, *(c for c in ("benchmark", "unit") if c in runs and c not in given)]
    keys = [*given, node, *by[len(given):]]
    grouped = runs.groupby(keys, dropna=False, sort=False)
    table = grouped[metric].median().reset_index()
    table["runs"] = grouped.size().to_numpy()
    table["flags"] = grouped["flags"].agg(
        lambda texts: flags.join(n for t in texts for n in flags.of(t))).to_numpy() \
        if "flags" in runs else ""
    table = outliers(table, metric, by)
    medians = table.groupby(by, dropna=False, sort=False)[metric].transform("median") if by \
        else pd.Series(table[metric].median(), index=table.index)
    table["fleet_median"] = medians
    table["relative"] = table[metric] / medians
    return table.sort_values(["relative", metric, node], kind="stable").reset_index(drop=True)


def normalised(df: pd.DataFrame, columns: Sequence[str] | None = None,
               node: str | None = None) -> pd.DataFrame:
    """Nodes x probe columns: each node's median over the fleet's median (1.0 = the median
    node), slowest nodes (lowest minimum) first."""
    runs = ok(df)
    node = node or node_column(runs)
    columns = [c for c in (columns or PROBE_COLUMNS) if c in runs and runs[c].notna().any()]
    if not columns:
        raise KeyError("no probe columns to show (run the node probe: notebook node_probe)")
    per_node = runs.groupby(node, sort=False)[columns].median()
    relative = per_node / per_node.median()
    return relative.loc[relative.min(axis=1).sort_values(kind="stable").index]


def heatmap(df: pd.DataFrame, columns: Sequence[str] | None = None, node: str | None = None,
            outlier_rows: Sequence[str] = ()):
    """A seaborn heat map of :func:`normalised` (nodes down, probes across), diverging around
    1.0; nodes in ``outlier_rows`` (default: an outlier in any column) get a ``⚠`` label.
    Each node is labelled up to 60 nodes; above that seaborn thins the labels."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    node = node or node_column(ok(df))
    relative = normalised(df, columns, node)
    if not outlier_rows:
        z = relative.apply(robust_z)
        outlier_rows = list(relative.index[(z.abs() > OUTLIER_Z).any(axis=1)])
    flagged = set(outlier_rows)
    names = [literal(f"{n} ⚠" if n in flagged else str(n)) for n in relative.index]
    count = len(relative)
    height = min(max(3.0, 0.28 * count + 1.5), 24.0)
    figure, axes = plt.subplots(figsize=(max(8.0, 2 + 1.1 * len(relative.columns)), height))
    spread = float(np.nanmax(np.abs(relative.to_numpy() - 1.0))) if relative.size else 0.1
    spread = max(spread, 0.05)
    shown = relative.set_axis(names).set_axis(  # literal before seaborn draws: it measures labels
        [literal(c.replace("_", " ")) for c in relative.columns], axis=1)
    sns.heatmap(shown, ax=axes, cmap="RdBu", center=1.0,
                vmin=1 - spread, vmax=1 + spread, annot=count <= 30 and len(relative.columns) <= 10,
                fmt=".2f", yticklabels=True if count <= 60 else "auto",
                cbar_kws={"label": "node / fleet median"})
    axes.set_xticklabels(axes.get_xticklabels(), rotation=30, ha="right")
    axes.set_ylabel("node" if node == "env_slurm_job_nodelist" else node)
    axes.set_xlabel("probe")
    axes.set_title(f"{count} nodes relative to the fleet median (1.0 = median node)\n"
                   f"blue faster, red slower; {len(flagged)} outlier "
                   f"node{'' if len(flagged) == 1 else 's'} ⚠", fontsize="medium")
    figure.tight_layout()
    return figure
