"""The node page's tables for people: one verdict per run with the figures behind it, the
probe's ceilings beside the datasheet, and the telemetry means (from :mod:`benchlib.analysis.verdict`)."""

from __future__ import annotations

import pandas as pd

from benchlib import formatting
from benchlib.analysis import verdict
from benchlib.publish.pages import present
from benchlib.publish.pages.summary import md_text, run_names
from benchlib.records import configuration, flags

FIGURES = ("data_wait_share", "mfu", "mfu_achievable", "throttled_share",
           "achieved_tflops_per_device", "peak_tflops", "achievable_tflops", "demand_per_device",
           "loader_capacity_per_device")


#: The columns a run's label is chosen from.
RUN_COLUMNS = ("cluster", "gpu", "benchmark", "model", "dataset", "synthetic_kind", "data_source",
               "num_workers", "batch_size", "precision", "num_devices")


def run_labels(judged: pd.DataFrame) -> pd.Series:
    """Each run's configuration in the short style (``batch 64, 2 dev``): the one label of
    :func:`benchlib.records.configuration.label` over the columns that tell runs apart."""
    return configuration.label(judged, RUN_COLUMNS, short=True)


def reasons(judged: pd.DataFrame) -> str:
    """One Markdown bullet per run: its label, verdict and the reason in full (record text
    escaped, :func:`benchlib.publish.pages.summary.md_text`)."""
    labels = run_labels(judged)
    return "\n".join(f"- **{md_text(label)}**: {md_text(row.verdict)}: {md_text(row.reason)}"
                     for label, row in zip(labels, judged.itertuples(), strict=True))


def ceilings_display(table: pd.DataFrame) -> object:
    """:func:`ceilings` for people: each figure measured and on the datasheet in its own unit
    (``52 GFLOP/s``, ``12.4 GB/s``), measured / datasheet as a multiple, and the probe's flags
    where it has any (a ``contended`` probe's ceilings are no denominator)."""
    def shown(value: object, unit: str) -> str:
        number = flags.number(value)
        if number is None:
            return formatting.DASH
        if unit == "TFLOP/s":
            return formatting.tflops(number)
        if unit in ("GB/s", "MB/s"):
            return formatting.si(number * (1e9 if unit == "GB/s" else 1e6), "B/s")
        return f"{formatting.number(number)} {unit}"

    frame = table.assign(
        measured=[shown(v, u) for v, u in zip(table["measured"], table["unit"], strict=True)],
        datasheet=[shown(v, u) for v, u in zip(table["datasheet"], table["unit"], strict=True)],
    ).drop(columns=["unit"])
    return present.table(frame, "What the node probe measured, beside the datasheet figure of "
                                "the GPU where it is listed",
                         keep=("figure", "measured", *(["flags"] if any(
                             table.get("flags", pd.Series(dtype=object)).fillna("")) else [])),
                         missing_reason="no datasheet figure")


def verdict_display(judged: pd.DataFrame) -> object:
    """The verdicts for people: the run, its verdict and the figures behind it (shares as
    percentages, FLOP rates with units); the reasons are in :func:`reasons`."""
    table = judged.assign(run=run_labels(judged))
    columns = ["run", "throughput", "unit", "verdict", *(["flags"] if "flags" in judged else []),
               *[c for c in FIGURES if c in judged]]
    return present.by_unit(table[columns], "One verdict per run and the figures behind it",
                           keep=("run", "verdict"),
                           missing_reason="does not apply (no probe, no telemetry or no data "
                                          "phase for that run)")


def telemetry_display(df: pd.DataFrame) -> object:
    """:func:`telemetry_table` for people; when no run has telemetry, one sentence saying why."""
    from IPython.display import Markdown

    table = verdict.telemetry_table(df)
    if table.empty:
        return Markdown("No finished benchmark run.")
    said = table.get("telemetry", pd.Series("", index=table.index)).fillna("").astype(str)
    missing = said.str.startswith("unavailable")
    why = "; ".join(dict.fromkeys(said[missing].str.removeprefix("unavailable: ")))
    if missing.all():
        return Markdown(f"Telemetry unavailable for all {len(table)} runs: {md_text(why)}.")
    shown = present.table(table[~missing].drop(columns=["telemetry", "source"], errors="ignore"),
                          "NVML means over each run's timed loop")
    if missing.any():
        from IPython.display import display

        named = run_names(table[missing])
        display(Markdown(f"Telemetry unavailable for {int(missing.sum())} of {len(table)} runs"
                         f"{f' ({named})' if named else ''}: {md_text(why)}."))
    return shown
