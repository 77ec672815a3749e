"""Which record columns a comparison may use as its metric (``benchlib compare --metric``)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from benchlib.errors import InputError
from benchlib.records import schema


def metric_columns(frames: Mapping[str, pd.DataFrame]) -> list[str]:
    """The columns a metric may be: measurements (or columns the schema does not know) that
    hold numbers in every frame, in the first frame's order."""
    first, *_ = frames.values()
    found = []
    for name in first.columns:
        entry = schema.column(str(name))
        if entry is not None and (entry.role != "measurement" or entry.dtype == "bool"):
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
        why = f"the records under {missing[0]} have no such column"
    elif role and role != "measurement":
        why = f"{'an' if role[0] in 'aeiou' else 'a'} {role} column, not a measurement"
    else:
        why = "not a numeric column in every campaign"
    raise InputError(f"{option} {metric}: {why}; {hint}")
