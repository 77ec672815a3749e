"""The basics every table over records needs: which rows finished, which columns make a
configuration (from :mod:`benchlib.records.schema`), and labels that join configuration values.

Shared by :mod:`benchlib.analysis.comparisons`, :mod:`benchlib.fleet.outliers` and
:mod:`benchlib.compare.regression`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from benchlib.records import configuration, derived, schema
from benchlib.vocabulary import RecordStatus

#: Columns that describe a configuration (:mod:`benchlib.records.schema`), in table order.
CONFIG_COLUMNS = schema.names(role="configuration")
#: Columns that say where or how a record was made, not what was measured or configured.
BOOKKEEPING = schema.names(role="bookkeeping")
#: Columns the analysis functions and pages add (:mod:`benchlib.records.derived`): never a
#: configuration.
DERIVED = tuple(c.name for c in derived.DERIVED)
#: Suffixes of the derived units (:func:`derived_units`): measurements, not configuration.
DERIVED_SUFFIXES = ("_per_s", "_per_minute", "_to_100k", "_per_teravoxel")


def _is_measurement(column: str) -> bool:
    known = schema.role(column)
    if known is not None:
        return known in ("measurement", "environment")
    return column.endswith(DERIVED_SUFFIXES)


def config_columns(df: pd.DataFrame, exclude: Sequence[str] = ()) -> list[str]:
    """Every non-metric, non-bookkeeping column of ``df`` (what makes a configuration)."""
    skip = set(BOOKKEEPING) | set(DERIVED) | set(exclude)
    return [c for c in df.columns if c not in skip and not _is_measurement(c)]


def labels(df: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    """One short text label per row from ``columns`` (``H100, 2 dev, batch 64``; missing
    values left out): :func:`benchlib.records.configuration.written` in its short style, the
    words of a configuration that tables and plots show."""
    return configuration.written(df, list(columns), short=True)


def ok(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of finished runs (all rows when there is no ``status`` column)."""
    return df[df["status"].fillna(RecordStatus.OK) == RecordStatus.OK] if "status" in df else df


def failed(df: pd.DataFrame) -> pd.DataFrame:
    """Failed runs with their configuration and error, for listing beside the tables."""
    if "status" not in df:
        return df.iloc[0:0]
    rows = df[df["status"].fillna(RecordStatus.OK) != RecordStatus.OK]
    keep = [c for c in (*CONFIG_COLUMNS, "error", "source") if c in rows]
    return rows[keep].reset_index(drop=True)
