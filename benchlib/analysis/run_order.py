"""When each run was made: its ``started_at`` (or another time column), else its files'
modification times (records written before benchlib recorded the time), and how a set of runs
was ordered, in words (``benchlib history``, the fleet, selections by date)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchlib.compare.comparable import STARTED_AT, TIME_COLUMNS


def _file_time(source: object) -> pd.Timestamp:
    if not isinstance(source, str) or not source:
        return pd.NaT
    notebook = Path(source)
    for path in (notebook.with_suffix(".json"), notebook):
        try:
            return pd.Timestamp(path.stat().st_mtime, unit="s", tz="UTC")
        except OSError:
            continue
    return pd.NaT


def run_times(df: pd.DataFrame) -> pd.Series:
    """When each run was made (UTC): its ``started_at`` (or another :data:`TIME_COLUMNS`
    column), else, for records without one, the modification time of the run's sidecar
    (``<point>.json`` beside the ``source`` notebook, written when the point finished), else
    of its notebook. :func:`untimed` counts the runs that fell back."""
    times = pd.Series(pd.NaT, index=df.index, dtype="datetime64[ns, UTC]")
    for column in TIME_COLUMNS:
        if column in df and times.isna().any():
            given = (pd.to_datetime(df[column], utc=True, errors="coerce", format="ISO8601")
                     if column == STARTED_AT else pd.to_datetime(df[column], utc=True,
                                                                  errors="coerce"))
            times = times.fillna(given)
    missing = times.isna()
    if missing.any():
        sources = df.get("source", pd.Series(None, index=df.index))[missing]
        times[missing] = pd.Series([_file_time(s) for s in sources], index=sources.index,
                                   dtype="datetime64[ns, UTC]")
    return times


def untimed(df: pd.DataFrame) -> int:
    """How many runs of ``df`` have no ``started_at`` (records of older versions): they are
    ordered by their files' modification times (:func:`run_times`)."""
    if STARTED_AT not in df:
        return len(df)
    return int(pd.to_datetime(df[STARTED_AT], utc=True, errors="coerce",
                              format="ISO8601").isna().sum())


def ordered_by(df: pd.DataFrame) -> str:
    """How :func:`run_times` ordered ``df``'s runs, in words."""
    count = untimed(df)
    if not count:
        return "runs ordered by started_at"
    return (f"{count} of {len(df)} runs have no started_at (written before benchlib recorded "
            "it, or not a time: the load's notes name those): ordered by their sidecar's (else "
            "notebook's) modification time")
