"""The breakdown page (``summary_breakdown``): where each iteration's time goes, phase by phase,
beside the published reference breakdowns."""

from __future__ import annotations

import pandas as pd

from benchlib import reference
from benchlib.analysis import comparisons
from benchlib.publish.pages import Call, Page, phase_plots, plots, present, show, summary


def phases(done: pd.DataFrame) -> None:
    """Median milliseconds per iteration in each phase, per configuration."""
    show(summary.breakdown_table(comparisons.breakdown(done), "Median milliseconds per iteration in "
                                 "each phase, per configuration"))


def plot(done: pd.DataFrame) -> None:
    """The phases of each configuration as stacked bars."""
    table = comparisons.breakdown(done)
    plots.show(phase_plots.breakdown_plot(table, summary.varying(table)))


def published(include: bool = True) -> None:
    """The shipped reference breakdowns (ResNet-50 fp32 on TN and JADE2); nothing unless
    ``include``."""
    if not include:
        return
    table = comparisons.breakdown(reference.breakdown_records())
    show(summary.breakdown_table(table, "Published milliseconds per iteration in each phase"))
    plots.show(phase_plots.breakdown_plot(table, summary.varying(table), "Reference breakdown"))


def expected(include: bool = True) -> None:
    """How many times slower the reference systems ran than public benchmarks say they should
    (one-device runs); nothing unless ``include``."""
    if not include:
        return
    ref = reference.breakdown_records()
    one = ref[ref["num_devices"] == 1]
    gpus = comparisons.expected(one, "gpu", "V100", "A40", 0.943, metric="time_iteration_s",
                             on=["cluster", "dataset", "benchmark"])
    show(present.table(_in_ms(gpus), "1 x V100 vs 1 x A40 on TN (expected speed ratio 0.943)",
                       keep=("slowdown",), labels={"a": "V100 iteration (ms)",
                                                   "b": "A40 iteration (ms)"}))
    clusters = comparisons.expected(one[one["gpu"] == "V100"], "cluster", "JADE2", "TN", 0.67,
                                 metric="time_iteration_s", on=["dataset", "benchmark"])
    show(present.table(_in_ms(clusters), "JADE2 V100 vs TN V100 (expected speed ratio 0.67)",
                       keep=("slowdown",), labels={"a": "JADE2 iteration (ms)",
                                                   "b": "TN iteration (ms)"}))


def _in_ms(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs of seconds per iteration (``a``, ``b``) in milliseconds, as the tables above."""
    return pairs.assign(a=pairs["a"] * 1e3, b=pairs["b"] * 1e3)


PAGE = Page(
    "Where the time goes: per-phase breakdown and bottlenecks",
    "Median milliseconds per iteration in each phase (waiting for data, copying to the device, "
    "forward, backward, ...), the bottleneck phase and the share of time spent waiting for data.",
    (
        "## This campaign",
        Call(phases, "done"),
        Call(plot, "done"),
        "## Reference: ResNet-50 fp32 on the TN and JADE2 clusters\n\nPublished figures shipped "
        "with benchlib (iteration = sum of the published phases).",
        Call(published, "include_reference"),
        "## Reference: measured against expected speed\n\nHow many times slower the first system "
        "ran than a public benchmark says it should.",
        Call(expected, "include_reference"),
    ),
    {"include_reference": True},
)
