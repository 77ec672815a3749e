"""The catalog's tables, generated from :mod:`benchlib.records.schema`, and a record to a row
and back.

``records``: one row per record; each exact schema column is a typed SQL column (text, whole
number, float, boolean; a shape as text), filled where the record's value has that type;
everything else (column families such as ``env_*`` and ``time_<phase>_s``, columns the schema
does not describe, values of another type, non-finite floats, lists) is kept as JSON in
``catalog_extra``, and ``catalog_keys`` keeps the record's keys in their order, so the record
comes back exactly as it was read. ``sources``: per point (its notebook path), the sizes and
modification times of its notebook and sidecar when it was last read, what it gave and why it
was skipped. ``catalog_meta``: the record schema version the layout follows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import cache

import sqlalchemy as sa

from benchlib.records import schema

#: Record columns a row is keyed by (every record has a source: its notebook path).
SOURCE = "source"
EXTRA, KEYS, ROW_ID = "catalog_extra", "catalog_keys", "catalog_id"
#: Columns indexed for selections.
INDEXED = ("run_id", "started_at", "campaign", "cluster", "gpu", "host", "benchmark", "model")
#: The longest text an indexed column holds typed: a longer value (a 9,000-character host) goes
#: to ``catalog_extra`` whole, where PostgreSQL's index would refuse it (8,191 bytes a row) and
#: fail the batch; the record still comes back as it was read.
INDEXED_TEXT_MAX = 1000
#: Whole numbers a BIGINT holds.
INT_RANGE = (-(2**63), 2**63 - 1)

_SQL_TYPES = {"text": sa.Text, "shape": sa.Text, "time": sa.Text, "count": sa.BigInteger,
              "int": sa.BigInteger, "float": sa.Double, "bool": sa.Boolean}


@cache
def typed_columns() -> dict[str, str]:
    """Every exact schema column (no family) and its schema dtype, in the schema's order."""
    return {c.name: c.dtype for c in schema.every_column() if "{" not in c.name}


def build_metadata(columns: Mapping[str, str] | None = None) -> sa.MetaData:
    """The catalog's tables for ``columns`` (name -> schema dtype; default: today's schema)."""
    columns = typed_columns() if columns is None else columns
    metadata = sa.MetaData()
    sa.Table("catalog_meta", metadata, sa.Column("name", sa.String(64), primary_key=True),
             sa.Column("value", sa.Text, nullable=False))
    sa.Table("sources", metadata,
             sa.Column("path", sa.Text, primary_key=True),
             sa.Column("notebook_size", sa.BigInteger), sa.Column("notebook_mtime_ns", sa.BigInteger),
             sa.Column("sidecar_size", sa.BigInteger), sa.Column("sidecar_mtime_ns", sa.BigInteger),
             sa.Column("state", sa.String(16), nullable=False),
             sa.Column("reason", sa.Text, nullable=False, default=""))
    record_columns = [sa.Column(ROW_ID, sa.Integer, primary_key=True, autoincrement=True)]
    for name, dtype in columns.items():
        if name == SOURCE:
            record_columns.append(sa.Column(name, sa.Text, nullable=False, unique=True))
        else:
            record_columns.append(sa.Column(name, _SQL_TYPES[dtype](), index=name in INDEXED))
    record_columns += [sa.Column(EXTRA, sa.Text, nullable=False, default="{}"),
                       sa.Column(KEYS, sa.Text, nullable=False, default="[]")]
    sa.Table("records", metadata, *record_columns)
    return metadata


METADATA = build_metadata()
RECORDS, SOURCES, META = (METADATA.tables[n] for n in ("records", "sources", "catalog_meta"))


def fits(dtype: str, value: object) -> bool:
    """Whether ``value`` goes into a typed column of ``dtype`` and comes back the same."""
    if dtype in ("text", "shape", "time"):
        return isinstance(value, str)
    if dtype in ("count", "int"):
        return type(value) is int and INT_RANGE[0] <= value <= INT_RANGE[1]
    if dtype == "float":
        return type(value) is float and math.isfinite(value)
    return type(value) is bool


def to_row(record: Mapping[str, object]) -> dict[str, object]:
    """The ``records`` row of ``record`` (it has a ``source``): every typed column (None where
    the record has no value of its type), the rest as JSON, and the record's keys in order."""
    typed = typed_columns()
    row: dict[str, object] = dict.fromkeys(typed)
    extra = {}
    for key, value in record.items():
        dtype = typed.get(key)
        too_long = key in INDEXED and isinstance(value, str) and len(value) > INDEXED_TEXT_MAX
        if dtype is not None and fits(dtype, value) and not too_long:
            row[key] = value
        else:
            extra[key] = value
    row[EXTRA] = json.dumps(extra, default=str)
    row[KEYS] = json.dumps(list(record))
    return row


def from_row(row: Mapping[str, object]) -> dict[str, object]:
    """The record a ``records`` row was made from (:func:`to_row`), keys in their order."""
    extra = json.loads(row[EXTRA])  # type: ignore[arg-type]
    return {key: extra[key] if key in extra else row[key]
            for key in json.loads(row[KEYS])}  # type: ignore[arg-type]
