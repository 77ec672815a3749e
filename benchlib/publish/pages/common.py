"""What every summary page starts and ends with: the campaign loaded and described; what the
data cannot show and the failed runs."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from benchlib import formatting
from benchlib.analysis import comparisons
from benchlib.publish.pages import Call, note, present, show, summary
from benchlib.publish.pages.flag_notes import flag_notes

#: pandas display options set to None: a table is never cut with "...".
UNCUT = ("display.max_columns", "display.max_rows", "display.max_colwidth")
RUN_BY = ("Run by `benchlib report outputs/<campaign>` or open it in JupyterLab and set "
          "`results_dir`.")


def load(results_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every record under ``results_dir`` and the finished ones, ``(df, done)``; shows what the
    campaign holds and its flags (the page's answers follow at once; the runs per benchmark
    are at its end, :func:`overview`)."""
    for option in UNCUT:
        pd.set_option(option, None)
    df = summary.load_results(results_dir)
    done = comparisons.ok(df)
    note(summary.describe(df, results_dir))
    note(flag_notes(df))
    return df, done


def overview(df: pd.DataFrame) -> None:
    """How many runs each benchmark has, by status."""
    show(summary.overview_table(df))


def missing(df: pd.DataFrame) -> None:
    """What these records cannot show (no multi-device runs, one GPU only, ...)."""
    note(summary.bullet_list(summary.missing(df), "Nothing missing."))


def failed(df: pd.DataFrame) -> None:
    """The failed runs and their errors, or a sentence saying there were none."""
    runs = comparisons.failed(df)
    if len(runs) and "source" in runs:  # notebooks named within the campaign folder
        runs = runs.assign(source=_within(runs["source"], df["source"]))
    if len(runs):
        show(present.table(runs, "Failed runs and their errors", keep=("error",)))
    else:
        note("No failed runs.")


def _within(sources: pd.Series, every: pd.Series) -> pd.Series:
    """``sources`` relative to the folder that holds every run's notebook (the campaign's)."""
    folders = [str(Path(s).parent) for s in every.dropna().astype(str)]
    base = Path(os.path.commonpath(folders)) if folders else None
    return sources.map(lambda s: s if formatting.missing(s) or base is None
                       else Path(str(s)).relative_to(base).as_posix()
                       if Path(str(s)).is_relative_to(base) else Path(str(s)).name)


HEAD = Call(load, "results_dir", "df, done")
TAIL = (
    "## What this data cannot show",
    Call(missing, "df"),
    "## Runs per benchmark",
    Call(overview, "df"),
    "## Failed runs\n\nLeft out of every table above.",
    Call(failed, "df"),
)
