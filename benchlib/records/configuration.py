"""What tells one configuration from another, asked one way everywhere: whether a column's
values differ between rows (:func:`varies`) and which of some columns do (:func:`varying`).
Numbers are compared as numbers (1 and 1.0 are one value), other values as the text a table
shows (lists by their text); missing values (None, NaN, NA, '') are left aside: a run that
failed before it wrote its settings, or a probe without a batch size, does not make a column
vary."""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import pandas as pd

from benchlib.formatting import missing


def varies(values: pd.Series, missing_too: bool = False) -> bool:
    """Whether ``values`` hold more than one value (see the module's rule); with
    ``missing_too`` a missing value is one value of its own, for a column where a blank says
    something (``flags`` empty: no flag), so that set in some rows only it varies."""
    if len(values) < 2:
        return False
    if values.dtype.kind in "biufcmM":  # numbers and times: NaN / NaT is the missing value
        return values.nunique(dropna=not missing_too) > 1
    keys = values.map(_key)
    return (keys if missing_too else keys[keys != ""]).nunique() > 1


def _key(value: object) -> object:
    """What one value is compared by: '' when missing (left aside), a number as a float, else
    its text."""
    if missing(value):
        return ""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return str(value)


def varying(frame: pd.DataFrame, columns: Iterable[str], missing_too: bool = False) -> list[str]:
    """Those of ``columns`` that ``frame`` has and whose values vary between its rows, in the
    order given (``missing_too``: as :func:`varies`)."""
    return [c for c in columns if c in frame and varies(frame[c], missing_too)]
