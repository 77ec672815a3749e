"""The scaling page (``summary_scaling``): throughput, speedup and efficiency against devices."""

from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from benchlib.analysis import comparisons
from benchlib.publish.pages import Call, Page, carried, catalog, note, plots, present, show, summary
from benchlib.publish.pages.scaling_sheet import Sheet
from benchlib.records import configuration


def sheet(done: pd.DataFrame) -> None:
    """The scaling sheet of the finished benchmark runs, or why there is none."""
    table = Sheet(comparisons.benchmarks(done))
    show(table if table else Markdown("No configuration ran on more than one device count: no "
                                      "scaling to show."))


def plot(done: pd.DataFrame) -> None:
    """Throughput, speedup and efficiency against devices, when more than one device count ran."""
    scalable = summary.scalable(comparisons.benchmarks(done))
    if configuration.varying(scalable, ["num_devices"]):
        plots.show(plots.scaling_plot(comparisons.scaling(scalable)))


def throughput(done: pd.DataFrame) -> None:
    """The throughput tables per configuration."""
    runs = comparisons.benchmarks(done)
    show(summary.throughput_tables(runs) if len(runs) else Markdown("No finished benchmark run."))


def distributed(done: pd.DataFrame) -> None:
    """The runs over several ranks: straggler spread and launcher overhead."""
    several = comparisons.distributed_runs(done)
    if len(several):
        show(present.by_unit(several, "Runs over several ranks", keep=("straggler_spread",)))
    else:
        note("No run used more than one device.")


def allreduce(done: pd.DataFrame) -> None:
    """The all-reduce probes' bus bandwidth per message size: a table and a plot."""
    curves = comparisons.allreduce_curves(done)
    if not len(curves):
        note("No all-reduce probe in these results.")
        return
    wide = curves.pivot_table(index=["size_bytes", "size"], columns="configuration",
                              values="busbw_GBps").reset_index()
    show(present.table(wide.drop(columns="size_bytes"), "Bus bandwidth (GB/s) per message size",
                       say_constant=False))
    plots.show(plots.busbw_plot(curves))


PAGE = Page(
    "Scaling: throughput, speedup and efficiency against devices",
    "Speedup is throughput over the median throughput at the fewest devices of the same "
    "configuration; efficiency is speedup x fewest devices / devices. Repeated runs are medians.",
    (
        *carried.cells(catalog.SCALING),
        "## The scaling sheet\n\nIn the reference campaigns' layout: one row per device count; "
        "blocks for throughput, speedup and efficiency per configuration, and for the speedup "
        "each factor gives, each with its median. ⚠ marks a configuration with a flagged run.",
        Call(sheet, "done"),
        Call(plot, "done"),
        "## Throughput per configuration",
        Call(throughput, "done"),
        "## Runs over several ranks\n\nThe slowest rank's wall time over the fastest's, and the "
        "launcher's seconds (process start, imports, rendezvous, model set-up, teardown) beyond "
        "the slowest rank's timed loop.",
        Call(distributed, "done"),
        "## All-reduce bus bandwidth\n\nFrom the `allreduce` probe notebook: nccl-tests' bus "
        "bandwidth, algbw x 2(n-1)/n, against message size.",
        Call(allreduce, "done"),
    ),
)
