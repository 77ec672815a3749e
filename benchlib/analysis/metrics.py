"""Which record columns a comparison may use as its metric (``benchlib compare --metric``), and
the checks of a metric and of ``by`` columns that the Python API's functions make at their edge
(an :class:`~benchlib.errors.InputError` naming the argument and what the table has)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from benchlib.errors import InputError
from benchlib.records import schema


def metric_columns(frames: Mapping[str, pd.DataFrame]) -> list[str]:
    """The columns a metric may be: the record's measurements that are better higher or lower
    and hold numbers in every frame, in the first frame's order (a column the record schema
    does not know is not one: which way is better is unknown)."""
    first, *_ = frames.values()
    found = []
    for name in first.columns:
        entry = schema.column(str(name))
        if entry is None or entry.role != "measurement" or entry.dtype == "bool" \
                or not entry.better:
            continue
        values = [frame[name] for frame in frames.values() if name in frame]
        if len(values) == len(frames) and all(
                not pd.api.types.is_bool_dtype(v)
                and pd.to_numeric(v, errors="coerce").notna().any() for v in values):
            found.append(str(name))
    return found


def check_metric(metric: str, frames: Mapping[str, pd.DataFrame],
                 option: str = "--metric") -> None:
    """InputError unless ``metric`` is a numeric measurement column of every frame (keyed by
    where it was loaded from); the message lists the columns that are."""
    allowed = metric_columns(frames)
    if metric in allowed:
        return
    hint = (f"numeric measurement columns of these records: {', '.join(allowed[:8])}"
            f"{', ...' if len(allowed) > 8 else ''} (docs/record.md describes every column)")
    missing = [name for name, frame in frames.items() if metric not in frame]
    role = schema.role(metric)
    if missing:
        why = f"no such column in {missing[0]}"
    elif role and role != "measurement":
        why = f"{'an' if role[0] in 'aeiou' else 'a'} {role} column, not a measurement"
    elif role is None:
        why = "not a record column (docs/record.md), so which way is better is unknown"
    elif not schema.better(metric):
        why = ("a reading that is neither better higher nor lower, so no change in it is an "
               "improvement or a regression")
    else:
        why = "not a numeric column in every campaign"
    raise InputError(f"{option} {metric}: {why}; {hint}")


def require_metric(df: pd.DataFrame, metric: str, what: str, judged: bool = False,
                   table: str = "the table", rate: bool = False) -> None:
    """InputError unless ``metric`` is a column of ``df`` (``table``) that is not true/false
    (its values may all be missing: energy not measured, each row is then unknown); with
    ``judged`` (a comparison that calls a change an improvement or a regression), a measurement
    that is better higher or lower; with ``rate`` (a speedup, a slow node), one where higher is
    better. ``what`` names the function."""
    if not isinstance(metric, str):
        raise InputError(f"{what}: metric={metric!r}: give one column's name (throughput)")
    present = metric in df and not pd.api.types.is_bool_dtype(df[metric])
    if rate and present and schema.better(metric) == "lower":
        raise InputError(f"{what}: metric {metric}: lower is better, and {what} reads a rate, "
                         "where higher is better (throughput, samples_per_joule, memory_GBps, "
                         "...); compare and history judge a time or memory")
    if judged or rate:
        if not present or not schema.better(metric):
            check_metric(metric, {table: df}, option=f"{what}: metric")
        return
    given = df[metric].dropna() if present else None
    if present and (not len(given) or pd.to_numeric(given, errors="coerce").notna().any()):
        return  # (all missing: energy not measured, each row unknown)
    numeric = [str(c) for c in df.columns if not pd.api.types.is_bool_dtype(df[c])
               and pd.to_numeric(df[c], errors="coerce").notna().any()
               and schema.role(str(c)) in ("measurement", None)]
    why = (f"no such column in {table}" if metric not in df else "a true/false column"
           if not present else "a text column")
    raise InputError(f"{what}: metric {metric}: {why}; numeric measurement columns of "
                     f"{table}: {', '.join(numeric[:8])}{', ...' if len(numeric) > 8 else ''}")


def require_columns(df: pd.DataFrame, columns: Sequence[str] | None, what: str,
                    argument: str = "by") -> None:
    """InputError naming each of ``columns`` that ``df`` does not have (and a ``by`` given as
    one string, which would be read letter by letter)."""
    if columns is None:
        return
    if isinstance(columns, str):
        raise InputError(f"{what}: {argument}={columns!r}: give a list of column names, "
                         f"{argument}=[{columns!r}]")
    unknown = [str(c) for c in columns if c not in df]
    if unknown:
        raise InputError(f"{what}: {argument}: no column {', '.join(map(repr, unknown))} in the "
                         "table (df.columns lists them; docs/record.md describes each)")


def require_fraction(value: object, what: str, argument: str = "threshold") -> float:
    """``value`` as a fraction from 0 to 1 (a threshold: 0.05 = 5 %); InputError naming
    ``argument`` otherwise (text, a bool, 1 or more)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0 <= float(value) < 1:
        raise InputError(f"{what}: {argument}={value!r}: give a fraction from 0 to 1 (0.05 = 5 %)")
    return float(value)


def require_tables(what: str, **frames: object) -> None:
    """InputError naming each of ``frames`` that is not a table of runs (``history`` may be
    None: not given)."""
    for name, frame in frames.items():
        if not isinstance(frame, pd.DataFrame) and (name != "history" or frame is not None):
            raise InputError(f"{what}: {name}={frame!r:.60}: give a table of runs "
                             "(benchlib.load(folder))")

