"""The node page (``summary_node``): the node probe's ceilings beside the datasheet, each run's
telemetry, and what held each run back."""

from __future__ import annotations

import pandas as pd

from benchlib.analysis import verdict
from benchlib.publish.pages import Call, Page, note, plots, present, show, verdict_tables

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
    show(present.table(wide, "Images/s the loader delivered per worker count", say_constant=False))
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
    "The node probe's ceilings (matrix multiply per precision, memory, host links, JPEG decode, "
    "data directory) beside datasheet figures; NVML telemetry of every run; and a verdict per "
    "run: **throttled** (clocks held down by power or heat in at least 10 % of the samples), "
    "**data-bound** (at least 10 % of each iteration spent waiting for the next batch, with the "
    "probe's loader capacity against what the model consumes) or **compute-bound** with its "
    "model FLOPs utilization (FLOPs per sample from torch.utils.flop_counter against the "
    "measured matmul peak in the run's precision).",
    (
        "## Ceilings against the datasheet",
        Call(ceilings, "df"),
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
