"""The compare page (``summary_compare``, built by ``benchlib report DIR --baseline BASE``):
this campaign's runs against the baseline's, a verdict per configuration."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import benchlib.analysis.comparisons as comparisons
from benchlib.compare import tables as compare_tables
from benchlib.publish.pages import Call, Page, carried, note, plots, show, summary
from benchlib.vocabulary import DEFAULT_THRESHOLD


def verdicts(df: pd.DataFrame, baseline_dir: str | Path, threshold: float,
             history_db: str = "") -> None:
    """Runs paired with the baseline's by configuration: warnings, the headline, and where any
    pair exists the table of new over base speed with its interval and verdict, the energy
    efficiency new / base beside it, and a plot."""
    base_dir = summary.resolve_results_dir(baseline_dir)
    base = summary.load_results(base_dir)
    compared = compare_tables.compare_runs(base, df, threshold=threshold,
                                           history_db=history_db or None)
    if compare_tables.warnings_text(compared):
        note(compare_tables.warnings_text(compared))
    note(compare_tables.compare_headline(compared, base_dir.name))
    carried.carry("compared", compare_tables.index_item(compared.table), "")  # for the index
    if not len(compared.table):
        return
    units = comparisons.ok(df)["unit"].dropna().unique()
    energy = compare_tables.compare_energy(base, df, threshold=threshold)
    show(compare_tables.compare_display(compared, units[0] if len(units) == 1 else "", energy))
    plots.show(compare_tables.compare_plot(compared.table, base_dir.name))


PAGE = Page(
    "Compared with the baseline campaign",
    "Runs of this campaign paired with the baseline's by configuration (repeats pooled): the new "
    "speed over the base speed with its 95 % interval (the campaign the unit of noise: with one "
    "campaign each and no history of the configuration in the catalog `$BENCHLIB_DB` names, "
    "judged only beyond a 15 % floor), and a verdict per "
    "configuration: **regression** (the whole interval more than `threshold` below 1), "
    "**improvement** (the mirror image), **no change**, **unknown** (fewer than two runs a "
    "side) or **unreliable** (contended or throttled runs). Beside the speed, the energy "
    "efficiency (images/J, ...) new / base with the same interval, unknown where energy was "
    "not measured. Built by `benchlib report DIR "
    "--baseline BASE_DIR`.",
    (
        "## Verdict per configuration",
        Call(verdicts, "df, baseline_dir, threshold, history_db"),
    ),
    {"baseline_dir": "outputs/demo-base", "threshold": DEFAULT_THRESHOLD, "history_db": ""},
)
