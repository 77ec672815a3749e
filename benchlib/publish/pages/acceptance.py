"""The acceptance page (``summary_acceptance``): each run against the reference it should
reach, and the nodes slower than their peers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from benchlib.analysis import references
from benchlib.analysis.references import Reference
from benchlib.fleet import tables as fleet_tables
from benchlib.publish.pages import Call, Page, carried, catalog, note, plots, show, summary
from benchlib.publish.pages import acceptance_tables as checks

SHIPPED = ("Shipped with benchlib: benchlib/reference/expectations.yaml (published figures) and "
           "the datasheet matmul ceilings.")
FLEET_NOTE = ("Each node's median over the fleet's median per probe and workload, per GPU model: "
              "1.0 is the median node.")


@dataclass(frozen=True)
class References:
    """The references runs are held against, and the file they came from (None: shipped)."""

    refs: list[Reference]
    given: Path | None = None


def load(references_file: str | Path = "") -> References:
    """The references in ``references_file`` (relative paths as for ``results_dir``), or the
    shipped ones when it is empty."""
    given = summary.resolve_results_dir(references_file) if references_file else None
    return References(references.load_references(given) if given else references.shipped(), given)


def check(df: pd.DataFrame, refs: References) -> None:
    """How many runs pass; where a reference matches, the table, the plot, the references'
    sources and the runs that matched none."""
    checked = checks.check(df, refs.refs)
    note(checks.headline(checked, df, given=bool(refs.given)))
    if not checked["verdict"].isin(checks.CHECKED).any():
        return
    show(checks.check_display(checked))
    plots.show(checks.check_plot(checked))
    note("**Sources of the references above**\n\n" + checks.sources_used(checked))
    if checks.unmatched_note(checked):
        note(checks.unmatched_note(checked))


def fleet(df: pd.DataFrame) -> None:
    """When the runs come from several nodes: the outliers, each node against the fleet's
    median, each node's state against the fleet's baselines, and heat maps per probe and
    workload. Nothing for one node."""
    count = fleet_tables.node_count(df)
    if count <= 1:
        return
    note(f"## Fleet: {count} nodes")
    nodes = fleet_tables.node_table(df)
    if len(nodes):
        note(fleet_tables.outlier_text(nodes))
        show(fleet_tables.node_display(nodes))
    states = fleet_tables.node_states(df)
    if states is not None and len(states.table):
        note(fleet_tables.states_text(states))
        show(fleet_tables.states_display(states))
    note(FLEET_NOTE)
    for figure, alt in fleet_tables.heatmaps(df):
        plots.show(figure, alt=alt)


def listing(refs: References) -> None:
    """Where the references come from, and every one of them."""
    note(f"From {summary.md_text(summary.shown_path(refs.given))}." if refs.given else SHIPPED)
    show(checks.references_display(refs.refs))


PAGE = Page(
    "Acceptance: each run against the published figure it should reach",
    "Each finished run is held against the most specific reference that matches it (GPU variant, "
    "benchmark, model, precision, batch, data, ... like for like): the shipped published figures "
    "and datasheet ceilings, or the references file given to the report (`benchlib report DIR "
    "--references FILE`). A run passes when its measurement lies within the reference's bounds. "
    "When the runs come from several nodes, the fleet section finds the nodes slower than their "
    "peers.",
    (
        *carried.cells(catalog.ACCEPTANCE, "df, refs.refs", (Call(load, "references_file", "refs"),)),
        "## Against the references",
        Call(check, "df, refs"),
        Call(fleet, "df"),
        "## The references",
        Call(listing, "refs"),
    ),
    {"references_file": ""},
)
