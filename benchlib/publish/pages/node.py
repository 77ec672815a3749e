"""The node page (``summary_node``): the node probe's ceilings beside the datasheet, each run's
telemetry, and what held each run back."""

from __future__ import annotations

import pandas as pd

from benchlib.analysis import verdict
from benchlib.publish.pages import Call, Page, carried, catalog, note, plots, present, show, verdict_tables

DATASHEET_CAPTION = ("Dense TFLOP/s per precision, memory and host-link GB/s "
                     "(benchlib/reference/gpu_datasheets.csv)")


def ceilings(df: pd.DataFrame) -> None:
    """The measured ceilings against the datasheet (a table, and a plot where a datasheet
    figure exists), or how to get them."""
    found = verdict.ceilings(df)
    if not len(found):
        note("No node probe in these results: run `notebooks/node_probe.ipynb` "
             "(params/node.yaml).")
        return
    show(verdict_tables.ceilings_display(found))
    if found["of_datasheet"].notna().any():
        plots.show(plots.ceilings_plot(found))


def nodes(df: pd.DataFrame) -> None:
    """The probed nodes side by side on what each reaches (achievable matmul, memory triad),
    each against the median of the nodes with the same GPU; a sentence where one node was
    probed."""
    found = verdict.nodes_compared(df)
    hosts = found["host"].nunique() if "host" in found else 0
    if hosts < 2:
        note("One probed node: nothing to compare it with (probe every node with the same "
             "params file to see the spread between GPUs of one model).")
        return
    wide = found.pivot_table(index=[c for c in ("cluster", "host", "gpu") if c in found],
                             columns="figure", values="of_median").reset_index()
    show(present.table(wide, "Each node's achievable figures over the median of the nodes "
                             "with the same GPU (1.00: the median node; 0.95: 5 % below it)",
                       missing_reason="a GPU with one probed node, or not probed"))


def datasheets(df: pd.DataFrame) -> None:
    """The datasheet figures of the GPUs that ran these records."""
    sheets = verdict.datasheets_seen(df)
    if len(sheets):
        show(present.table(sheets, DATASHEET_CAPTION, missing_reason="not on the datasheet"))
    else:
        note("No listed GPU in these results (CPU runs, or a GPU not in the datasheet file).")


def loader(df: pd.DataFrame) -> None:
    """Images/s the loader delivered against its worker processes, per probed node."""
    curves = verdict.decode_curves(df)
    if not len(curves):
        note("No decode probe (the probe ran without data_dir).")
        return
    wide = curves.pivot_table(index="workers", columns="configuration",
                              values="images_per_s").reset_index()
    show(present.table(wide, "Images/s the loader delivered per worker count, one column per "
                       "probed node (named by its host, or cluster and host)", say_constant=False))
    plots.show(plots.decode_plot(curves))


def verdicts(df: pd.DataFrame) -> None:
    """Each finished run's verdict (throttled, data-bound, compute-bound): counts, the table,
    the reasons and a plot."""
    judged = verdict.verdicts(df)
    if not len(judged):
        note("No finished benchmark run.")
        return
    counts = judged.groupby("verdict").size().rename("runs").reset_index()
    show(present.table(counts, "Runs per verdict", keep=("verdict", "runs")),
         verdict_tables.verdict_display(judged))
    note(verdict_tables.reasons(judged))
    plots.show(plots.verdict_plot(judged))


def telemetry(df: pd.DataFrame) -> None:
    """NVML means over each run's timed loop."""
    show(verdict_tables.telemetry_display(df))


PAGE = Page(
    "The node: its ceilings, what each run got, and what held it back",
    "The node probe's ceilings (matrix multiply per precision, one shape and the best over a "
    "sweep of shapes; memory copy and triad; host links; read + JPEG decode from the data "
    "directory and decode from memory; the data directory's reads) beside datasheet figures; "
    "NVML telemetry of every run; and a verdict per "
    "run: **throttled** (clocks held down by power or heat in at least 10 % of the samples), "
    "**data-bound** (at least 10 % of each iteration spent waiting for the next batch, with the "
    "probe's loader capacity against what the model consumes) or **compute-bound** with its "
    "model FLOPs utilization (FLOPs per sample from torch.utils.flop_counter) against two "
    "ceilings in the run's precision: the datasheet's peak and what this node reaches (the "
    "probe's best matrix multiply over a sweep of shapes).",
    (
        *carried.cells(catalog.NODE),
        "## Ceilings against the datasheet",
        Call(ceilings, "df"),
        "## Nodes side by side\n\nWhat each node reaches (the best matmul over a sweep of "
        "shapes, the memory triad) against the other nodes with the same GPU: GPUs of one "
        "model differ by several percent, and a node well below its peers is a finding.",
        Call(nodes, "df"),
        "## Datasheet figures of the GPUs in these results",
        Call(datasheets, "df"),
        "## Loader capacity\n\nImages/s the training loader delivered against its worker "
        "processes, per probed node.",
        Call(loader, "df"),
        "## Verdict per run",
        Call(verdicts, "df"),
        "## Telemetry per run\n\nNVML means over each timed loop.",
        Call(telemetry, "df"),
    ),
)
